/* `vkprof bench --layer`: what the Vulkan layer costs an app that was never
 * edited. The layer is loaded by the Vulkan loader at vkCreateInstance, so
 * each configuration is its own process: this runs `vkprof decode` (the same
 * executable) as a child, once per configuration per round, in interleaved
 * rounds whose order rotates, and compares within each round tokens/s and
 * the median token time (each child's p50 over its tokens):
 *
 *   none        decode --profile off, no layer: the reference
 *   loaded-off  the same under the layer with VKPROF_LAYER=off     vs none
 *   layer       the same under the layer, every dispatch stamped   vs ring-dispatch
 *   ring-dispatch decode --profile ring-shared --scope dispatch --trace F, no
 *               layer: the in-app ring with the layer's stamps (one scope per
 *               dispatch) and, as the layer, a trace of them
 *   sampled     under the layer, 1 submit in N stamped             vs none
 *   default     under the layer as `vkprof run` sets it by default:  vs none
 *               a rotating window of 2 dispatches a step, the command
 *               buffers' busy scopes in 1 step in 8
 *
 * and the per-phase split of `layer` (its summary, phases named by the
 * pipeline names the engine sets), and of `default` (its estimates),
 * against the in-app ring's. See
 * docs/performance.md. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "outfile.h"
#include "run_defaults.h"

extern char **environ;

enum { L_NONE, L_LOADED_OFF, L_LAYER, L_RING, L_SAMPLED, L_DEFAULT, L_COUNT };

static const char *const lname[L_COUNT] = {"none",          "loaded-off", "layer",
                                           "ring-dispatch", "sampled",    "default"};
static const char *const lwhat[L_COUNT] = {
    "decode --profile off, no layer",
    "the same under the layer, VKPROF_LAYER=off",
    "the same under the layer, every dispatch stamped",
    "decode --profile ring-shared --scope dispatch --trace, no layer (the in-app ring: the same "
    "stamps, traced)",
    "the same as layer, 1 submit in N stamped",
    "the same as layer, as vkprof run sets it by default: a window of " VKPROF_RUN_STR(
        VKPROF_RUN_DEFAULT_ROTATE) " dispatches a step, the busy scopes in 1 step "
                                   "in " VKPROF_RUN_STR(VKPROF_RUN_DEFAULT_BUSY_EVERY),
};
/* Each ratio is against this configuration of the same round; and its goal. */
static const int lagainst[L_COUNT] = {-1, L_NONE, L_RING, -1, L_NONE, L_NONE};
static const double lgoal[L_COUNT] = {0, 0.995, 0.98, 0, 0.99, 0.98};

#define LB_MAX_PHASES 64u

typedef struct lphase {
    char name[VKPROF_MAX_NAME + 1];
    uint64_t total_ns, count;
} lphase;

typedef struct lconf {
    double *tps, *ratio, *p50, *ratio50; /* per round; p50: the child's median token ms */
    double tps_med, ratio_med, ratio_min, ratio_max;
    double p50_med, ratio50_med, ratio50_min, ratio50_max;
    /* the last round's per-phase figures (layer: its summary; ring: the decode JSON) */
    lphase ph[LB_MAX_PHASES];
    uint32_t nph;
    uint64_t lost, samples;
} lconf;

typedef struct lbench {
    const bench_layer_opts *o;
    char exe[PATH_MAX], dir[PATH_MAX], tmp[PATH_MAX];
    char device[256];
    lconf c[L_COUNT];
    cJSON *ref_ids;
    uint32_t mismatches;
    double split_pp;
} lbench;

static int read_file(const char *path, char **out)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return -1;
    }
    size_t cap = 1u << 16, n = 0;
    char *b = malloc(cap);
    while (b != NULL) {
        if (n + 1 >= cap) {
            char *nb = cap < (64u << 20) ? realloc(b, cap * 2) : NULL;
            if (nb == NULL) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) {
            break;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (b == NULL || bad) {
        free(b);
        return -1;
    }
    b[n] = '\0';
    *out = b;
    return 0;
}

static cJSON *read_json(const char *path)
{
    char *text;
    if (read_file(path, &text) != 0) {
        return NULL;
    }
    cJSON *j = cJSON_Parse(text);
    free(text);
    return j;
}

/* Environment of a child: ours, less what the configurations set, plus theirs. */
static bool env_ours(const char *kv)
{
    static const char *const drop[] = {
        "VK_ADD_LAYER_PATH=",   "VK_INSTANCE_LAYERS=", "VKPROF_GPU_PROFILE=",
        "VKPROF_HOST_PROFILE=", "VKPROF_TRACE=",       "VKPROF_LAYER"};
    for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++) {
        if (strncmp(kv, drop[i], strlen(drop[i])) == 0) {
            return false;
        }
    }
    return true;
}

static int run_child(lbench *b, int cfg, const char *json, const char *outdir, const char *log)
{
    const bench_layer_opts *o = b->o;
    char tokens[16], sample[32], layer_path[PATH_MAX + 32], layers[4096], out[2 * PATH_MAX + 64];
    const bool layered =
        cfg == L_LOADED_OFF || cfg == L_LAYER || cfg == L_SAMPLED || cfg == L_DEFAULT;
    snprintf(tokens, sizeof tokens, "%u", o->tokens);
    snprintf(sample, sizeof sample, "VKPROF_LAYER_SAMPLE=%u", o->sample_every);
    snprintf(layer_path, sizeof layer_path, "VK_ADD_LAYER_PATH=%s", b->dir);
    snprintf(out, sizeof out, "VKPROF_LAYER_OUTPUT_DIR=%s", outdir);
    const char *user_layers = getenv("VK_INSTANCE_LAYERS");
    snprintf(layers, sizeof layers, "VK_INSTANCE_LAYERS=%s%sVK_LAYER_vkprof",
             user_layers != NULL ? user_layers : "",
             user_layers != NULL && user_layers[0] != '\0' ? ":" : "");
    if (user_layers != NULL && strlen(user_layers) > sizeof layers - 64) {
        fprintf(stderr, "vkprof bench: VK_INSTANCE_LAYERS is too long\n");
        return -1;
    }

    size_t n = 0;
    while (environ[n] != NULL) {
        n++;
    }
    char **envp = calloc(n + 10, sizeof *envp);
    if (envp == NULL) {
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (env_ours(environ[i]) ||
            (strncmp(environ[i], "VK_INSTANCE_LAYERS=", 19) == 0 && !layered)) {
            envp[k++] = environ[i];
        }
    }
    if (layered) {
        envp[k++] = layer_path;
        envp[k++] = layers;
        envp[k++] = out;
        envp[k++] = cfg == L_LOADED_OFF ? "VKPROF_LAYER=off" : "VKPROF_LAYER=on";
        envp[k++] = cfg == L_SAMPLED ? sample : "VKPROF_LAYER_SAMPLE=1";
    }
    if (cfg == L_DEFAULT) {
        envp[k++] = "VKPROF_LAYER_ROTATE=" VKPROF_RUN_STR(VKPROF_RUN_DEFAULT_ROTATE);
        envp[k++] = "VKPROF_LAYER_BUSY_EVERY=" VKPROF_RUN_STR(VKPROF_RUN_DEFAULT_BUSY_EVERY);
    }
    envp[k] = NULL;

    const char *argv[20];
    char trace[2 * PATH_MAX];
    snprintf(trace, sizeof trace, "%s/ring-trace.json", b->tmp);
    int a = 0;
    argv[a++] = b->exe;
    argv[a++] = "decode";
    argv[a++] = "--preset";
    argv[a++] = o->preset;
    argv[a++] = "--tokens";
    argv[a++] = tokens;
    argv[a++] = "--profile";
    argv[a++] = cfg == L_RING ? "ring-shared" : "off";
    if (cfg == L_RING) { /* the layer's stamps, and a trace as the layer writes one */
        argv[a++] = "--scope";
        argv[a++] = "dispatch";
        argv[a++] = "--trace";
        argv[a++] = trace;
    }
    argv[a++] = "--json";
    argv[a++] = json;
    if (o->device != NULL) {
        argv[a++] = "--device";
        argv[a++] = o->device;
    }
    argv[a] = NULL;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int e = posix_spawn(&pid, b->exe, &fa, NULL, (char *const *)argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    if (e != 0) {
        fprintf(stderr, "vkprof bench: cannot start %s: %s\n", b->exe, strerror(e));
        return -1;
    }
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            return -1;
        }
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "vkprof bench: the %s run failed (status %d); its output is in %s\n",
                lname[cfg], WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), log);
        return -1;
    }
    return 0;
}

static void add_phase(lconf *c, const char *name, uint64_t ns, uint64_t count)
{
    for (uint32_t i = 0; i < c->nph; i++) {
        if (strcmp(c->ph[i].name, name) == 0) {
            c->ph[i].total_ns += ns;
            c->ph[i].count += count;
            return;
        }
    }
    if (c->nph < LB_MAX_PHASES) {
        lphase *p = &c->ph[c->nph++];
        snprintf(p->name, sizeof p->name, "%s", name);
        p->total_ns = ns;
        p->count = count;
    }
}

static uint64_t jnum(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && v->valuedouble > 0 ? (uint64_t)v->valuedouble : 0;
}

/* Each timed phase of an array of {"name", "count", "total_ns"} (the
 * library's snapshot and the decode's JSON share the keys); est: each
 * one's estimate over all its calls (est_total_ns: a rotating window),
 * outer phases (the busy scopes) left out. */
static void add_phases(lconf *c, const cJSON *phases, bool est)
{
    const cJSON *ph;
    cJSON_ArrayForEach(ph, phases)
    {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(ph, "name");
        if (cJSON_IsString(nm) && jnum(ph, "count") > 0 &&
            !(est && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ph, "outer")))) {
            add_phase(c, nm->valuestring, jnum(ph, est ? "est_total_ns" : "total_ns"),
                      jnum(ph, "count"));
        }
    }
}

/* The phases and the accounting of one library snapshot document. */
static void take_snapshot(lconf *c, const cJSON *snap, bool est)
{
    add_phases(c, cJSON_GetObjectItemCaseSensitive(snap, "phases"), est);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(snap, "timing");
    c->samples += jnum(t, "samples");
    c->lost += jnum(t, "scopes_dropped");
}

/* The one summary the layer wrote into `outdir` (the decode is one process):
 * phases summed over its devices and contexts. */
static int take_layer_summary(lconf *c, const char *outdir, bool est)
{
    DIR *d = opendir(outdir);
    if (d == NULL) {
        return -1;
    }
    char path[2 * PATH_MAX + 512] = "";
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name), sl = strlen(".summary.json");
        if (len > sl && strcmp(e->d_name + len - sl, ".summary.json") == 0) {
            snprintf(path, sizeof path, "%s/%s", outdir, e->d_name);
            found++;
        }
    }
    closedir(d);
    if (found != 1) {
        fprintf(stderr, "vkprof bench: %d layer summaries in %s (expected 1)\n", found, outdir);
        return -1;
    }
    cJSON *j = read_json(path);
    if (j == NULL) {
        fprintf(stderr, "vkprof bench: cannot read %s\n", path);
        return -1;
    }
    c->nph = 0;
    c->samples = c->lost = 0;
    const cJSON *dev, *cx;
    cJSON_ArrayForEach(dev, cJSON_GetObjectItemCaseSensitive(j, "devices"))
    {
        cJSON_ArrayForEach(cx, cJSON_GetObjectItemCaseSensitive(dev, "contexts"))
        {
            take_snapshot(c, cJSON_GetObjectItemCaseSensitive(cx, "snapshot"), est);
        }
    }
    cJSON_Delete(j);
    remove(path);
    return 0;
}

static void clear_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        return;
    }
    struct dirent *e;
    char path[PATH_MAX + 512];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            remove(path);
        }
    }
    closedir(d);
}

/* tokens/s, the token ids (checked against the first run's), and for the
 * in-app ring its per-phase figures. */
static int take_decode_json(lbench *b, int cfg, uint32_t round, const char *path)
{
    cJSON *j = read_json(path);
    if (j == NULL) {
        fprintf(stderr, "vkprof bench: cannot read the %s run's %s\n", lname[cfg], path);
        return -1;
    }
    const cJSON *tps = cJSON_GetObjectItemCaseSensitive(j, "tokens_per_s");
    const cJSON *p50 = cJSON_GetObjectItemCaseSensitive(j, "token_ms_p50");
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(j, "token_ids");
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(j, "device");
    if (!cJSON_IsNumber(tps) || !cJSON_IsNumber(p50) || p50->valuedouble <= 0 ||
        !cJSON_IsArray(ids)) {
        fprintf(stderr, "vkprof bench: %s has no tokens_per_s, token_ms_p50 or token_ids\n", path);
        cJSON_Delete(j);
        return -1;
    }
    if (cJSON_IsString(dev)) {
        snprintf(b->device, sizeof b->device, "%s", dev->valuestring);
    }
    if (round != UINT32_MAX) {
        b->c[cfg].tps[round] = tps->valuedouble;
        b->c[cfg].p50[round] = p50->valuedouble;
    }
    if (b->ref_ids == NULL) {
        b->ref_ids = cJSON_Duplicate(ids, 1);
    } else if (!cJSON_Compare(b->ref_ids, ids, 1)) {
        b->mismatches++;
    }
    if (cfg == L_RING) {
        lconf *c = &b->c[cfg];
        c->nph = 0;
        c->samples = c->lost = 0;
        add_phases(c, cJSON_GetObjectItemCaseSensitive(j, "phases"), false);
        const cJSON *lib = cJSON_GetObjectItemCaseSensitive(j, "vkprof");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(lib, "timing");
        c->samples = jnum(t, "samples");
        c->lost = jnum(t, "scopes_dropped");
    }
    cJSON_Delete(j);
    return 0;
}

static int run_one(lbench *b, int cfg, uint32_t round)
{
    char json[2 * PATH_MAX], outdir[2 * PATH_MAX], log[2 * PATH_MAX];
    snprintf(json, sizeof json, "%s/decode.json", b->tmp);
    snprintf(outdir, sizeof outdir, "%s/layer", b->tmp);
    snprintf(log, sizeof log, "%s/children.log", b->tmp);
    clear_dir(outdir);
    if (run_child(b, cfg, json, outdir, log) != 0 || take_decode_json(b, cfg, round, json) != 0) {
        return -1;
    }
    if (cfg == L_LAYER || cfg == L_SAMPLED || cfg == L_DEFAULT) {
        return take_layer_summary(&b->c[cfg], outdir, cfg == L_DEFAULT);
    }
    return 0;
}

static bool has_phase(const lconf *c, const char *name)
{
    for (uint32_t k = 0; k < c->nph; k++) {
        if (strcmp(c->ph[k].name, name) == 0) {
            return true;
        }
    }
    return false;
}

/* The largest difference of per-phase shares, in percentage points, over the
 * ring's phases; the layer's total counts only those phases (it also times
 * what the in-app ring does not scope, such as weights_init at start).
 * *unmatched: ring phases the layer did not name. */
static double share_diff_pp(const lconf *a, const lconf *r, uint32_t *unmatched)
{
    double ta = 0, tr = 0, worst = 0;
    for (uint32_t i = 0; i < a->nph; i++) {
        if (has_phase(r, a->ph[i].name)) {
            ta += (double)a->ph[i].total_ns;
        }
    }
    for (uint32_t i = 0; i < r->nph; i++) {
        tr += (double)r->ph[i].total_ns;
    }
    *unmatched = 0;
    if (ta <= 0 || tr <= 0) {
        return NAN;
    }
    for (uint32_t i = 0; i < r->nph; i++) {
        double sa = 0;
        bool hit = false;
        for (uint32_t k = 0; k < a->nph; k++) {
            if (strcmp(a->ph[k].name, r->ph[i].name) == 0) {
                sa = (double)a->ph[k].total_ns / ta;
                hit = true;
            }
        }
        if (!hit) {
            (*unmatched)++;
        }
        double d = fabs(100.0 * (sa - (double)r->ph[i].total_ns / tr));
        worst = d > worst ? d : worst;
    }
    return worst;
}

/* Whether the layer timed each of the ring's phases as many times as the
 * ring did (both scope every dispatch: the same stamps). */
static bool counts_equal(const lconf *a, const lconf *r)
{
    for (uint32_t i = 0; i < r->nph; i++) {
        bool hit = false;
        for (uint32_t k = 0; k < a->nph; k++) {
            if (strcmp(a->ph[k].name, r->ph[i].name) == 0) {
                hit = a->ph[k].count == r->ph[i].count;
            }
        }
        if (!hit) {
            return false;
        }
    }
    return r->nph > 0;
}

/* The layer's GPU time in the ring's phases over the ring's, per mille, and
 * the layer's time in phases the ring has not. */
static void totals(const lconf *a, const lconf *r, double *ratio, double *extra_ms)
{
    double ta = 0, tr = 0, ex = 0;
    for (uint32_t i = 0; i < a->nph; i++) {
        if (has_phase(r, a->ph[i].name)) {
            ta += (double)a->ph[i].total_ns;
        } else {
            ex += (double)a->ph[i].total_ns;
        }
    }
    for (uint32_t i = 0; i < r->nph; i++) {
        tr += (double)r->ph[i].total_ns;
    }
    *ratio = tr > 0 ? ta / tr : NAN;
    *extra_ms = ex * 1e-6;
}

static int write_json(const char *path, const lbench *b, double split, double split_default,
                      uint32_t unmatched, double total_ratio, bool same)
{
    outfile o;
    if (outfile_open(&o, "vkprof bench", path) != 0) {
        return 1;
    }
    vkprof_json jw, *j = &jw;
    outfile_json(&o, j);
    vkprof__json_obj(j);
    vkprof__json_kv_str(j, "tool", "vkprof bench --layer");
    vkprof__json_kv_str(j, "preset", b->o->preset);
    vkprof__json_kv_str(j, "device", b->device);
    vkprof__json_kv_u64(j, "tokens", b->o->tokens);
    vkprof__json_kv_u64(j, "repeats", b->o->repeats);
    vkprof__json_kv_u64(j, "sample_every", b->o->sample_every);
    vkprof__json_kv_bool(j, "tokens_identical", b->mismatches == 0);
    vkprof__json_key(j, "configs");
    vkprof__json_arr(j);
    for (int i = 0; i < L_COUNT; i++) {
        const lconf *c = &b->c[i];
        vkprof__json_obj(j);
        vkprof__json_kv_str(j, "name", lname[i]);
        vkprof__json_kv_str(j, "what", lwhat[i]);
        vkprof__json_key(j, "tokens_per_s");
        vkprof__json_f64(j, c->tps_med);
        vkprof__json_key(j, "token_ms_p50");
        vkprof__json_f64(j, c->p50_med);
        if (lagainst[i] >= 0) {
            vkprof__json_kv_str(j, "against", lname[lagainst[i]]);
            vkprof__json_key(j, "ratio");
            vkprof__json_f64(j, c->ratio_med);
            vkprof__json_key(j, "ratio_min");
            vkprof__json_f64(j, c->ratio_min);
            vkprof__json_key(j, "ratio_max");
            vkprof__json_f64(j, c->ratio_max);
            vkprof__json_key(j, "ratio_p50");
            vkprof__json_f64(j, c->ratio50_med);
            vkprof__json_key(j, "ratio_p50_min");
            vkprof__json_f64(j, c->ratio50_min);
            vkprof__json_key(j, "ratio_p50_max");
            vkprof__json_f64(j, c->ratio50_max);
            vkprof__json_key(j, "goal");
            vkprof__json_f64(j, lgoal[i]);
        }
        if (i == L_LAYER || i == L_RING || i == L_SAMPLED || i == L_DEFAULT) {
            vkprof__json_kv_u64(j, "samples", c->samples);
            vkprof__json_kv_u64(j, "lost", c->lost);
        }
        vkprof__json_end(j);
    }
    vkprof__json_end(j);
    vkprof__json_key(j, "split_max_pp_layer_vs_ring");
    vkprof__json_f64(j, split);
    vkprof__json_key(j, "split_max_pp_default_vs_ring");
    vkprof__json_f64(j, split_default);
    vkprof__json_kv_u64(j, "ring_phases_missing_in_layer", unmatched);
    vkprof__json_kv_bool(j, "scopes_per_phase_equal", same);
    vkprof__json_key(j, "gpu_time_layer_over_ring");
    vkprof__json_f64(j, total_ratio);
    vkprof__json_end(j);
    vkprof__json_newline(j);
    return outfile_commit_json(&o, j);
}

/* Does `dir` hold the layer's manifest? */
static bool has_manifest(const char *dir)
{
    char manifest[2 * PATH_MAX];
    int w = snprintf(manifest, sizeof manifest, "%s/VkLayer_vkprof.json", dir);
    return w > 0 && (size_t)w < sizeof manifest && access(manifest, R_OK) == 0;
}

int bench_layer(const bench_layer_opts *o)
{
    lbench b;
    memset(&b, 0, sizeof b);
    b.o = o;
    int rc = 1;
    ssize_t n = readlink("/proc/self/exe", b.exe, sizeof b.exe - 1);
    if (n <= 0) {
        fprintf(stderr, "vkprof bench: cannot find its own executable\n");
        return 1;
    }
    b.exe[n] = '\0';
    /* where the layer is, as `vkprof run` looks: --layer-dir, else
     * VKPROF_LAYER_DIR, else beside the executable (a build tree's layer/),
     * else an installed prefix's share/vulkan/explicit_layer.d */
    const char *env_dir = getenv("VKPROF_LAYER_DIR");
    const char *given = o->layer_dir != NULL                    ? o->layer_dir
                        : env_dir != NULL && env_dir[0] != '\0' ? env_dir
                                                                : NULL;
    char cand[2][PATH_MAX];
    int ncand = 0;
    if (given != NULL) {
        snprintf(cand[ncand++], sizeof cand[0], "%s", given);
    } else {
        char exe_dir[PATH_MAX];
        snprintf(exe_dir, sizeof exe_dir, "%s", b.exe);
        char *slash = strrchr(exe_dir, '/');
        if (slash != NULL) {
            *slash = '\0';
        }
        snprintf(cand[ncand++], sizeof cand[0], "%.*s/layer", PATH_MAX - 8, exe_dir);
        snprintf(cand[ncand++], sizeof cand[0], "%.*s/../share/vulkan/explicit_layer.d",
                 PATH_MAX - 40, exe_dir);
    }
    b.dir[0] = '\0';
    for (int i = 0; i < ncand && b.dir[0] == '\0'; i++) {
        if (has_manifest(cand[i]) && strlen(cand[i]) < sizeof b.dir) {
            memcpy(b.dir, cand[i], strlen(cand[i]) + 1);
        }
    }
    if (b.dir[0] == '\0') {
        fprintf(stderr, "vkprof bench: no layer manifest (VkLayer_vkprof.json) in %s%s%s (%s)\n",
                cand[0], ncand > 1 ? " or " : "", ncand > 1 ? cand[1] : "",
                given == NULL          ? "give --layer-dir or VKPROF_LAYER_DIR"
                : o->layer_dir != NULL ? "--layer-dir"
                                       : "VKPROF_LAYER_DIR");
        return 2;
    }
    const char *tmpbase = getenv("TMPDIR");
    snprintf(b.tmp, sizeof b.tmp, "%s/vkprof-bench-XXXXXX",
             tmpbase != NULL && tmpbase[0] != '\0' ? tmpbase : "/tmp");
    if (mkdtemp(b.tmp) == NULL) {
        fprintf(stderr, "vkprof bench: cannot make a temporary directory: %s\n", strerror(errno));
        return 1;
    }
    char outdir[2 * PATH_MAX], path[2 * PATH_MAX];
    snprintf(outdir, sizeof outdir, "%s/layer", b.tmp);
    if (mkdir(outdir, 0700) != 0) {
        fprintf(stderr, "vkprof bench: cannot make %s: %s\n", outdir, strerror(errno));
        goto done;
    }
    for (int i = 0; i < L_COUNT; i++) {
        b.c[i].tps = calloc(o->repeats, sizeof(double));
        b.c[i].ratio = calloc(o->repeats, sizeof(double));
        b.c[i].p50 = calloc(o->repeats, sizeof(double));
        b.c[i].ratio50 = calloc(o->repeats, sizeof(double));
        if (b.c[i].tps == NULL || b.c[i].ratio == NULL || b.c[i].p50 == NULL ||
            b.c[i].ratio50 == NULL) {
            fprintf(stderr, "vkprof bench: out of memory\n");
            goto done;
        }
    }
    printf("vkprof bench --layer: the layer in %s\n", b.dir);
    printf("vkprof bench --layer: preset %s, %u tokens per run, %u rounds, sample every %u\n",
           o->preset, o->tokens, o->repeats, o->sample_every);
    fflush(stdout);
    /* one warm-up run of each (caches, the driver's shader cache), then rounds
     * whose order rotates so no configuration always runs first */
    for (int i = 0; i < L_COUNT; i++) {
        if (run_one(&b, i, UINT32_MAX) != 0) {
            goto done;
        }
    }
    for (uint32_t r = 0; r < o->repeats; r++) {
        for (int k = 0; k < L_COUNT; k++) {
            int i = (int)((k + r) % L_COUNT);
            if (run_one(&b, i, r) != 0) {
                goto done;
            }
        }
        printf("  round %u/%u done\n", r + 1, o->repeats);
        fflush(stdout);
    }
    for (int i = 0; i < L_COUNT; i++) {
        lconf *c = &b.c[i];
        c->tps_med = bench_median(c->tps, o->repeats);
        c->p50_med = bench_median(c->p50, o->repeats);
        if (lagainst[i] >= 0) {
            /* both as speeds: above 1 is faster than the run it is against */
            for (uint32_t r = 0; r < o->repeats; r++) {
                c->ratio[r] = c->tps[r] / b.c[lagainst[i]].tps[r];
                c->ratio50[r] = b.c[lagainst[i]].p50[r] / c->p50[r];
            }
            c->ratio_med = bench_median(c->ratio, o->repeats);
            bench_min_max(c->ratio, o->repeats, &c->ratio_min, &c->ratio_max);
            c->ratio50_med = bench_median(c->ratio50, o->repeats);
            bench_min_max(c->ratio50, o->repeats, &c->ratio50_min, &c->ratio50_max);
        }
    }
    uint32_t unmatched = 0;
    double split = share_diff_pp(&b.c[L_LAYER], &b.c[L_RING], &unmatched);
    uint32_t unmatched_default = 0;
    double split_default = share_diff_pp(&b.c[L_DEFAULT], &b.c[L_RING], &unmatched_default);
    double total_ratio, extra_ms;
    totals(&b.c[L_LAYER], &b.c[L_RING], &total_ratio, &extra_ms);

    printf("\non %s (medians over the rounds; each ratio is per round against the run "
           "named, as a speed, then the median [min, max]: of tokens/s, and of each run's "
           "median token time)\n",
           b.device);
    printf("  %-13s %10s %9s  %-26s %-26s %-13s %s\n", "config", "tokens/s", "p50 ms",
           "tokens/s ratio", "p50 token ratio", "against", "goal");
    for (int i = 0; i < L_COUNT; i++) {
        const lconf *c = &b.c[i];
        if (lagainst[i] >= 0) {
            char rat[64], rat50[64];
            snprintf(rat, sizeof rat, "%.4f [%.4f, %.4f]", c->ratio_med, c->ratio_min,
                     c->ratio_max);
            snprintf(rat50, sizeof rat50, "%.4f [%.4f, %.4f]", c->ratio50_med, c->ratio50_min,
                     c->ratio50_max);
            printf("  %-13s %10.2f %9.4f  %-26s %-26s %-13s >= %.3f %s (tokens/s), %s (p50)\n",
                   lname[i], c->tps_med, c->p50_med, rat, rat50, lname[lagainst[i]], lgoal[i],
                   c->ratio_med >= lgoal[i] ? "met" : "MISSED",
                   c->ratio50_med >= lgoal[i] ? "met" : "MISSED");
        } else {
            printf("  %-13s %10.2f %9.4f\n", lname[i], c->tps_med, c->p50_med);
        }
    }
    for (int i = 0; i < L_COUNT; i++) {
        printf("  %-13s %s\n", lname[i], lwhat[i]);
    }
    printf("per-phase split, layer vs the in-app ring (last round): max |share difference| "
           "%.2f pp over %u phases",
           split, b.c[L_RING].nph);
    if (unmatched > 0) {
        printf(", %u of the ring's phases not named by the layer", unmatched);
    }
    printf("\n  GPU time in those phases, layer / ring: %.4f; the layer also timed %.3f ms in "
           "phases the ring does not scope (weights_init at start), left out",
           total_ratio, extra_ms);
    bool same = counts_equal(&b.c[L_LAYER], &b.c[L_RING]);
    printf("\n  scopes per phase, layer = ring (the same stamps): %s", same ? "yes" : "NO");
    printf("\nper-phase split, default (its estimates) vs the in-app ring (last round): max "
           "|share difference| %.2f pp",
           split_default);
    if (unmatched_default > 0) {
        printf(", %u of the ring's phases not timed yet", unmatched_default);
    }
    printf("\nsamples (last round): layer %llu (lost %llu), ring %llu (lost %llu), sampled %llu "
           "(lost %llu), default %llu (lost %llu)\n",
           (unsigned long long)b.c[L_LAYER].samples, (unsigned long long)b.c[L_LAYER].lost,
           (unsigned long long)b.c[L_RING].samples, (unsigned long long)b.c[L_RING].lost,
           (unsigned long long)b.c[L_SAMPLED].samples, (unsigned long long)b.c[L_SAMPLED].lost,
           (unsigned long long)b.c[L_DEFAULT].samples, (unsigned long long)b.c[L_DEFAULT].lost);
    printf("tokens identical across all runs: %s\n", b.mismatches == 0 ? "yes" : "NO");
    rc = b.mismatches == 0 ? 0 : 1;
    if (o->json != NULL &&
        write_json(o->json, &b, split, split_default, unmatched, total_ratio, same) != 0) {
        rc = 1;
    }
done:
    clear_dir(outdir);
    rmdir(outdir);
    snprintf(path, sizeof path, "%s/decode.json", b.tmp);
    remove(path);
    snprintf(path, sizeof path, "%s/ring-trace.json", b.tmp);
    remove(path);
    snprintf(path, sizeof path, "%s/children.log", b.tmp);
    if (rc == 0) {
        remove(path);
        rmdir(b.tmp);
    }
    for (int i = 0; i < L_COUNT; i++) {
        free(b.c[i].tps);
        free(b.c[i].ratio);
        free(b.c[i].p50);
        free(b.c[i].ratio50);
    }
    cJSON_Delete(b.ref_ids);
    return rc;
}
