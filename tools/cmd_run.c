/* `vkprof run [options] -- CMD ARGS...`: run an unmodified Vulkan app under
 * the vkprof layer (VK_LAYER_vkprof, src/layer/) and print, when it exits,
 * what the layer measured: per process and device the per-phase table, the
 * steps, the GPU time per step, what was lost and the trace files. The
 * layer's per-process summary JSON (<dir>/<exe>-<pid>.summary.json) is the
 * only input; the exit status is the child's (128+signal when a signal
 * killed it). */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "cli_opts.h"
#include "names.h"

#define TOOL "vkprof run"
#define LAYER_NAME "VK_LAYER_vkprof"
#define MANIFEST "VkLayer_vkprof.json"
#define RUN_MAX_SUMMARY (64u << 20) /* bytes per summary file */
#define RUN_MAX_FILES 4096u         /* summary files read */
#define RUN_PATH_MAX 4096

static void run_usage(FILE *f)
{
    fprintf(f, "usage: vkprof run [-o DIR] [--mode dispatch|label|cmdbuf] [--sample N]\n"
               "                  [--names FILE] [--layer-dir DIR] [--] CMD ARGS...\n"
               "  Run CMD with the vkprof layer (" LAYER_NAME ") on; when it exits, print per\n"
               "  process and device the GPU time of each phase, the steps (a host wait that\n"
               "  retires queue work closes one), the GPU time per step, the samples lost by\n"
               "  reason and the trace files. The report goes to stderr; CMD's own output is\n"
               "  left alone. The exit status is CMD's (128+N when signal N killed it).\n"
               "  -o DIR, --output DIR  where the layer writes <exe>-<pid>.summary.json and\n"
               "                        <exe>-<pid>[-d<N>].trace.json (default vkprof-run; its\n"
               "                        old summaries and traces are removed first)\n"
               "  --mode M        dispatch (every dispatch, the default), label (each debug\n"
               "                  label region) or cmdbuf (each command buffer)\n"
               "  --sample N      time 1 submit in N (default 1)\n"
               "  --names FILE    a name map (vkprof names) for pipelines without a name\n"
               "  --layer-dir DIR the folder of " MANIFEST " (default: $VKPROF_LAYER_DIR,\n"
               "                  else <vkprof's folder>/layer, else\n"
               "                  <vkprof's folder>/../share/vulkan/explicit_layer.d)\n"
               "  The layer is enabled the loader's way: VK_ADD_LAYER_PATH gets the folder,\n"
               "  VK_INSTANCE_LAYERS gets " LAYER_NAME " appended; VKPROF_LAYER=on and the\n"
               "  options above go to the layer as VKPROF_LAYER_* variables.\n");
}

/* ---- small helpers ------------------------------------------------------- */

static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* the folder of the running executable, from /proc/self/exe */
static bool exe_dir(char *out, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    if (n <= 0 || (size_t)n >= cap - 1) {
        return false;
    }
    out[n] = '\0';
    char *slash = strrchr(out, '/');
    if (slash == NULL) {
        return false;
    }
    *slash = '\0';
    return true;
}

/* bounded read of a whole file; NULL with the reason in err */
static char *read_file(const char *path, size_t max, size_t *len, char *err, size_t errcap)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errcap, "cannot open: %s", strerror(errno));
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf != NULL) {
        if (n == cap) {
            if (cap >= max) {
                snprintf(err, errcap, "larger than %zu bytes", max);
                free(buf);
                buf = NULL;
                break;
            }
            cap = cap * 2 > max ? max : cap * 2;
            char *nb = realloc(buf, cap + 1);
            if (nb == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                snprintf(err, errcap, "cannot read: %s", strerror(errno));
                free(buf);
                buf = NULL;
            }
            break;
        }
    }
    if (buf == NULL && err[0] == '\0') {
        snprintf(err, errcap, "out of memory");
    }
    fclose(f);
    if (buf != NULL) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* ---- the layer's manifest ------------------------------------------------ */

/* Is DIR/VkLayer_vkprof.json a manifest of our layer whose library exists?
 * false with the reason in why. */
/* A message into a fixed buffer; cut short when it does not fit (a message,
 * never a path that is used). */
static void msgf(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

/* Copy a path; false (and nothing usable) when it does not fit. */
static bool path_copy(char *out, size_t cap, const char *path)
{
    size_t n = strlen(path);
    if (n >= cap) {
        return false;
    }
    memcpy(out, path, n + 1);
    return true;
}

static bool check_manifest(const char *dir, char *why, size_t cap)
{
    char path[RUN_PATH_MAX];
    snprintf(path, sizeof path, "%s/" MANIFEST, dir);
    if (!is_file(path)) {
        snprintf(why, cap, "%s: no such file", path);
        return false;
    }
    char err[256] = "";
    size_t len = 0;
    char *text = read_file(path, 1u << 20, &len, err, sizeof err);
    if (text == NULL) {
        snprintf(why, cap, "%s: %s", path, err);
        return false;
    }
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *layer = cJSON_GetObjectItemCaseSensitive(root, "layer");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(layer, "name");
    const cJSON *lib = cJSON_GetObjectItemCaseSensitive(layer, "library_path");
    bool ok = false;
    if (root == NULL) {
        snprintf(why, cap, "%s: not JSON", path);
    } else if (!cJSON_IsString(name) || strcmp(name->valuestring, LAYER_NAME) != 0) {
        snprintf(why, cap, "%s: not the manifest of " LAYER_NAME " (layer.name)", path);
    } else if (!cJSON_IsString(lib) || lib->valuestring[0] == '\0') {
        snprintf(why, cap, "%s: no layer.library_path", path);
    } else if (strchr(lib->valuestring, '/') == NULL) {
        ok = true; /* a bare name: the loader searches the system's library path */
    } else {
        char libpath[RUN_PATH_MAX];
        if (lib->valuestring[0] == '/') {
            snprintf(libpath, sizeof libpath, "%s", lib->valuestring);
        } else {
            snprintf(libpath, sizeof libpath, "%s/%s", dir, lib->valuestring);
        }
        ok = is_file(libpath);
        if (!ok) {
            msgf(why, cap, "%s: its library %s does not exist", path, libpath);
        }
    }
    cJSON_Delete(root);
    return ok;
}

/* --layer-dir, $VKPROF_LAYER_DIR, <exe dir>/layer, <exe dir>/../share/...
 * The first place given or found decides; an explicit one that fails is an
 * error, not a reason to look further. */
static bool find_layer(const char *opt, char *out, size_t cap)
{
    char why[RUN_PATH_MAX + 256];
    const char *env = getenv("VKPROF_LAYER_DIR");
    const char *given = opt != NULL ? opt : (env != NULL && env[0] != '\0') ? env : NULL;
    if (given != NULL) {
        if (!check_manifest(given, why, sizeof why)) {
            fprintf(stderr, TOOL ": layer manifest not found (%s %s): %s\n",
                    opt != NULL ? "--layer-dir" : "VKPROF_LAYER_DIR", given, why);
            return false;
        }
        snprintf(out, cap, "%s", given);
        return true;
    }
    char dir[RUN_PATH_MAX];
    if (!exe_dir(dir, sizeof dir)) {
        fprintf(stderr, TOOL ": layer manifest not found: cannot tell vkprof's own folder "
                             "(give --layer-dir)\n");
        return false;
    }
    char cand[2][RUN_PATH_MAX + 64];
    snprintf(cand[0], sizeof cand[0], "%s/layer", dir);
    snprintf(cand[1], sizeof cand[1], "%s/../share/vulkan/explicit_layer.d", dir);
    char whys[2][RUN_PATH_MAX + 256];
    for (int i = 0; i < 2; i++) {
        if (check_manifest(cand[i], whys[i], sizeof whys[i])) {
            if (!path_copy(out, cap, cand[i])) {
                fprintf(stderr, TOOL ": the layer's folder is too long a path: %s\n", cand[i]);
                return false;
            }
            return true;
        }
    }
    fprintf(stderr,
            TOOL ": layer manifest not found; looked for:\n  %s\n  %s\n"
                 "  (build the layer, or give --layer-dir DIR or VKPROF_LAYER_DIR)\n",
            whys[0], whys[1]);
    return false;
}

/* ---- the output folder --------------------------------------------------- */

/* Create DIR (one level) and remove its old summaries and traces; its
 * absolute path in out. */
static bool prepare_dir(const char *dir, char *out, size_t cap)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, TOOL ": cannot create the output folder %s: %s\n", dir, strerror(errno));
        return false;
    }
    if (!is_dir(dir)) {
        fprintf(stderr, TOOL ": %s is not a folder\n", dir);
        return false;
    }
    char abs[PATH_MAX];
    if (realpath(dir, abs) == NULL || strlen(abs) >= cap) {
        fprintf(stderr, TOOL ": %s: %s\n", dir, strerror(errno));
        return false;
    }
    snprintf(out, cap, "%s", abs);
    DIR *d = opendir(abs);
    if (d == NULL) {
        fprintf(stderr, TOOL ": cannot read the output folder %s: %s\n", abs, strerror(errno));
        return false;
    }
    struct dirent *e;
    bool ok = true;
    while ((e = readdir(d)) != NULL) {
        if (ends_with(e->d_name, ".summary.json") || ends_with(e->d_name, ".trace.json")) {
            char p[RUN_PATH_MAX + 256];
            snprintf(p, sizeof p, "%s/%s", abs, e->d_name);
            if (unlink(p) != 0 && errno != ENOENT) {
                fprintf(stderr, TOOL ": cannot remove the old %s: %s\n", p, strerror(errno));
                ok = false;
            }
        }
    }
    closedir(d);
    return ok;
}

/* ---- the environment ----------------------------------------------------- */

static bool set_env(const char *k, const char *v)
{
    if (setenv(k, v, 1) != 0) {
        fprintf(stderr, TOOL ": cannot set %s: %s\n", k, strerror(errno));
        return false;
    }
    return true;
}

/* is `item` one of the ':'-separated elements of `list`? */
static bool list_has(const char *list, const char *item)
{
    size_t n = strlen(item);
    for (const char *p = list; p != NULL && *p != '\0';) {
        const char *end = strchr(p, ':');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, item, n) == 0) {
            return true;
        }
        p = end != NULL ? end + 1 : NULL;
    }
    return false;
}

static bool setup_env(const char *layer_dir, const char *out_dir, const char *mode,
                      const char *sample, const char *names)
{
    char buf[3 * RUN_PATH_MAX];
    const char *old = getenv("VK_ADD_LAYER_PATH");
    if (old != NULL && old[0] != '\0') {
        snprintf(buf, sizeof buf, "%s:%s", layer_dir, old);
    } else {
        snprintf(buf, sizeof buf, "%s", layer_dir);
    }
    if (!set_env("VK_ADD_LAYER_PATH", buf)) {
        return false;
    }
    old = getenv("VK_INSTANCE_LAYERS");
    if (old == NULL || old[0] == '\0') {
        snprintf(buf, sizeof buf, "%s", LAYER_NAME);
    } else if (list_has(old, LAYER_NAME)) {
        snprintf(buf, sizeof buf, "%s", old);
    } else {
        snprintf(buf, sizeof buf, "%s:%s", old, LAYER_NAME);
    }
    if (!set_env("VK_INSTANCE_LAYERS", buf) || !set_env("VKPROF_LAYER", "on") ||
        !set_env("VKPROF_LAYER_OUTPUT_DIR", out_dir)) {
        return false;
    }
    if (mode != NULL && !set_env("VKPROF_LAYER_MODE", mode)) {
        return false;
    }
    if (sample != NULL && !set_env("VKPROF_LAYER_SAMPLE", sample)) {
        return false;
    }
    if (names != NULL && !set_env("VKPROF_LAYER_NAMES", names)) {
        return false;
    }
    return true;
}

/* ---- the child ----------------------------------------------------------- */

/* Start cmd; its exit status in *status (shell style: 128+signal), or 126 /
 * 127 when it could not be started (the message printed). */
static int run_child(char **cmd, int *status, int *signo)
{
    int pipefd[2];
    if (pipe(pipefd) != 0) {
        fprintf(stderr, TOOL ": pipe: %s\n", strerror(errno));
        return -1;
    }
    fcntl(pipefd[1], F_SETFD, FD_CLOEXEC);
    fcntl(pipefd[0], F_SETFD, FD_CLOEXEC);
    /* like a shell: Ctrl-C and Ctrl-\ reach the child (same process group);
     * vkprof run waits on and prints the report */
    struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, TOOL ": fork: %s\n", strerror(errno));
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        close(pipefd[0]);
        close(pipefd[1]);
        return -1;
    }
    if (pid == 0) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        execvp(cmd[0], cmd);
        int e = errno;
        ssize_t w = write(pipefd[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close(pipefd[1]);
    int e = 0;
    ssize_t got;
    do {
        got = read(pipefd[0], &e, sizeof e);
    } while (got < 0 && errno == EINTR);
    close(pipefd[0]);
    int ws = 0;
    pid_t r;
    do {
        r = waitpid(pid, &ws, 0);
    } while (r < 0 && errno == EINTR);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    if (got == (ssize_t)sizeof e) {
        fprintf(stderr, TOOL ": %s: cannot start: %s\n", cmd[0], strerror(e));
        *status = e == ENOENT ? 127 : 126;
        return 1;
    }
    if (r < 0) {
        fprintf(stderr, TOOL ": waitpid: %s\n", strerror(errno));
        return -1;
    }
    if (WIFEXITED(ws)) {
        *status = WEXITSTATUS(ws);
    } else if (WIFSIGNALED(ws)) {
        *signo = WTERMSIG(ws);
        *status = 128 + *signo;
    } else {
        *status = 1;
    }
    return 0;
}

/* ---- the report ---------------------------------------------------------- */

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

static bool has_num(const cJSON *o, const char *key)
{
    return cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, key));
}

static const char *str(const cJSON *o, const char *key, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* A uint64 from JSON: cJSON keeps doubles, exact up to 2^53 (ns: 104 days). */
static uint64_t u64(const cJSON *o, const char *key)
{
    double d = num(o, key);
    return d > 0 ? (uint64_t)d : 0;
}

typedef struct report {
    FILE *out;
    unsigned processes, devices, devices_timed;
} report;

static const char *const lost_keys[] = {"ring_full", "overwritten", "never_submitted",
                                        "reset",     "misuse",      "backwards"};

/* One context (queue family) of one device: the per-phase table. */
static void print_context(report *r, const cJSON *ctxo, uint64_t steps, uint64_t sample_every,
                          bool several)
{
    FILE *o = r->out;
    const cJSON *snap = cJSON_GetObjectItemCaseSensitive(ctxo, "snapshot");
    const cJSON *phases = cJSON_GetObjectItemCaseSensitive(snap, "phases");
    const cJSON *timing = cJSON_GetObjectItemCaseSensitive(snap, "timing");
    if (several) {
        fprintf(o, "    queue family %llu:\n", (unsigned long long)u64(ctxo, "family"));
    }
    uint64_t total = 0;
    size_t rows = 0;
    int width = 24; /* the name column: the longest name shown, at most 63 */
    const cJSON *p;
    cJSON_ArrayForEach(p, phases)
    {
        if (u64(p, "count") > 0) {
            total += u64(p, "total_ns");
            rows++;
            size_t len = strlen(str(p, "name", "?"));
            if ((int)len > width) {
                width = len > 63 ? 63 : (int)len;
            }
        }
    }
    bool scaled = sample_every > 1;
    if (rows == 0) {
        fprintf(o, "    no GPU work timed\n");
    } else {
        fprintf(o, "    %-*s %10s %12s %8s %14s\n", width, "phase", "count", "total ms", "share %",
                scaled ? "per step us~" : "per step us");
        /* largest first */
        const cJSON **sorted = calloc(rows, sizeof *sorted);
        size_t n = 0;
        cJSON_ArrayForEach(p, phases)
        {
            if (sorted != NULL && u64(p, "count") > 0) {
                sorted[n++] = p;
            }
        }
        for (size_t i = 1; i < n; i++) {
            for (size_t k = i; k > 0 && u64(sorted[k], "total_ns") > u64(sorted[k - 1], "total_ns");
                 k--) {
                const cJSON *t = sorted[k];
                sorted[k] = sorted[k - 1];
                sorted[k - 1] = t;
            }
        }
        for (size_t i = 0; i < n; i++) {
            uint64_t t = u64(sorted[i], "total_ns");
            char per[32] = "-";
            if (steps > 0) {
                snprintf(per, sizeof per, "%.1f",
                         (double)t * (double)sample_every / (double)steps / 1e3);
            }
            fprintf(o, "    %-*.63s %10llu %12.3f %8.1f %14s\n", width, str(sorted[i], "name", "?"),
                    (unsigned long long)u64(sorted[i], "count"), (double)t / 1e6,
                    total > 0 ? 100.0 * (double)t / (double)total : 0.0, per);
        }
        free(sorted);
        char per[32] = "-";
        if (steps > 0) {
            snprintf(per, sizeof per, "%.1f",
                     (double)total * (double)sample_every / (double)steps / 1e3);
        }
        fprintf(o, "    %-*s %10s %12.3f %8.1f %14s\n", width, "total", "", (double)total / 1e6,
                100.0, per);
        if (steps > 0) {
            fprintf(o, "    GPU %.3f ms per step over %llu steps%s\n",
                    (double)total * (double)sample_every / (double)steps / 1e6,
                    (unsigned long long)steps,
                    scaled ? " (~: 1 submit in N timed, scaled by N: an estimate)" : "");
        }
    }
    const cJSON *lost = cJSON_GetObjectItemCaseSensitive(timing, "lost");
    uint64_t lost_total = 0;
    for (size_t i = 0; i < sizeof lost_keys / sizeof lost_keys[0]; i++) {
        lost_total += u64(lost, lost_keys[i]);
    }
    fprintf(o, "    samples %llu: collected %llu, dropped %llu, pending %llu; ",
            (unsigned long long)u64(timing, "samples"),
            (unsigned long long)u64(timing, "scopes_collected"),
            (unsigned long long)u64(timing, "scopes_dropped"),
            (unsigned long long)u64(timing, "scopes_pending"));
    if (lost_total == 0) {
        fprintf(o, "lost: none\n");
    } else {
        fprintf(o, "lost %llu:", (unsigned long long)lost_total);
        for (size_t i = 0; i < sizeof lost_keys / sizeof lost_keys[0]; i++) {
            if (u64(lost, lost_keys[i]) > 0) {
                fprintf(o, " %s %llu", lost_keys[i], (unsigned long long)u64(lost, lost_keys[i]));
            }
        }
        fprintf(o, "\n");
    }
}

static void print_device(report *r, const char *dir, const cJSON *dev, uint64_t sample_every)
{
    FILE *o = r->out;
    r->devices++;
    uint64_t steps = u64(dev, "steps");
    fprintf(o, "  device %llu: %s\n", (unsigned long long)u64(dev, "index"),
            str(dev, "name", "(unnamed)"));
    const cJSON *fams = cJSON_GetObjectItemCaseSensitive(dev, "queue_families");
    const cJSON *f;
    if (cJSON_GetArraySize(fams) > 0) {
        fprintf(o, "    queue families:");
        const char *sep = " ";
        cJSON_ArrayForEach(f, fams)
        {
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "timed"))) {
                fprintf(o, "%s%llu timed (%llu-bit stamps)", sep,
                        (unsigned long long)u64(f, "family"),
                        (unsigned long long)u64(f, "valid_bits"));
            } else {
                fprintf(o, "%s%llu untimed (%s)", sep, (unsigned long long)u64(f, "family"),
                        str(f, "reason", "no reason given"));
            }
            sep = ", ";
        }
        fprintf(o, "\n");
    }
    fprintf(o, "    steps: %llu%s\n", (unsigned long long)steps,
            has_num(dev, "steps") ? "" : " (not in the summary)");
    const cJSON *ctxs = cJSON_GetObjectItemCaseSensitive(dev, "contexts");
    int nctx = cJSON_GetArraySize(ctxs);
    const cJSON *c;
    bool any = false;
    cJSON_ArrayForEach(c, ctxs)
    {
        print_context(r, c, steps, sample_every, nctx > 1);
        any = true;
    }
    if (!any) {
        fprintf(o, "    no queue was timed\n");
    } else {
        r->devices_timed++;
    }
    const char *trace = str(dev, "trace", NULL);
    if (trace == NULL) {
        fprintf(o, "    trace: none written\n");
    } else {
        char p[RUN_PATH_MAX + 512];
        if (trace[0] == '/') {
            snprintf(p, sizeof p, "%s", trace);
        } else {
            snprintf(p, sizeof p, "%s/%s", dir, trace);
        }
        fprintf(o, "    trace: %s%s\n", p, is_file(p) ? "" : " (missing)");
    }
}

/* One summary file; false when it is not a layer summary (printed). */
static bool print_summary(report *r, const char *dir, const char *file)
{
    char path[RUN_PATH_MAX + 512], err[256] = "";
    snprintf(path, sizeof path, "%s/%s", dir, file);
    size_t len = 0;
    char *text = read_file(path, RUN_MAX_SUMMARY, &len, err, sizeof err);
    if (text == NULL) {
        fprintf(stderr, TOOL ": %s: %s\n", path, err);
        return false;
    }
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "vkprof_layer_summary");
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(root, "devices");
    if (root == NULL || !cJSON_IsNumber(ver) || ver->valuedouble != 1 || !cJSON_IsArray(devs)) {
        fprintf(stderr, TOOL ": %s: not a vkprof layer summary (version 1)\n", path);
        cJSON_Delete(root);
        return false;
    }
    r->processes++;
    uint64_t sample_every = u64(root, "sample_every");
    if (sample_every == 0) {
        sample_every = 1;
    }
    fprintf(r->out, "%s (pid %llu), mode %s, %s: %s\n", str(root, "exe", "?"),
            (unsigned long long)u64(root, "pid"), str(root, "mode", "?"),
            sample_every > 1 ? "sampled" : "every submit", path);
    if (sample_every > 1) {
        fprintf(r->out, "  1 submit in %llu timed\n", (unsigned long long)sample_every);
    }
    if (cJSON_GetArraySize(devs) == 0) {
        fprintf(r->out, "  no device created\n");
    }
    const cJSON *d;
    cJSON_ArrayForEach(d, devs)
    {
        print_device(r, dir, d, sample_every);
    }
    cJSON_Delete(root);
    return true;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Print every summary of dir. Returns the number of summaries found (read
 * or not); r gets the counts. */
static size_t print_all(report *r, const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, TOOL ": cannot read %s: %s\n", dir, strerror(errno));
        return 0;
    }
    char **names = calloc(RUN_MAX_FILES, sizeof *names);
    size_t n = 0;
    struct dirent *e;
    while (names != NULL && (e = readdir(d)) != NULL) {
        if (ends_with(e->d_name, ".summary.json") && e->d_name[0] != '.') {
            if (n == RUN_MAX_FILES) {
                fprintf(stderr, TOOL ": more than %u summaries in %s; the rest not read\n",
                        RUN_MAX_FILES, dir);
                break;
            }
            names[n] = strdup(e->d_name);
            if (names[n] != NULL) {
                n++;
            }
        }
    }
    closedir(d);
    if (names == NULL) {
        return 0;
    }
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        print_summary(r, dir, names[i]);
        free(names[i]);
    }
    free(names);
    return n;
}

/* ---- the command --------------------------------------------------------- */

/* Where the command begins: after "--", or at the first argument that is not
 * an option (or an option's value). 0: no command. */
static int command_start(int argc, char **argv)
{
    static const char *const valued[] = {"-o",       "--output", "--mode",
                                         "--sample", "--names",  "--layer-dir"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            return i + 1 < argc ? i + 1 : 0;
        }
        if (a[0] != '-' || a[1] == '\0') {
            return i;
        }
        for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) {
            if (strcmp(a, valued[k]) == 0) {
                i++; /* its value */
                break;
            }
        }
    }
    return 0;
}

int vkprof_cmd_run(int argc, char **argv)
{
    int start = command_start(argc, argv);
    int nopt = start > 0 ? start : argc;
    if (start > 0 && strcmp(argv[start - 1], "--") == 0) {
        nopt = start - 1;
    }
    const char *out = "vkprof-run", *mode = NULL, *names = NULL, *layer_dir = NULL;
    uint32_t sample = 0;
    const cli_opt opts[] = {
        {"--output", CLI_STR, .str = &out},
        {"--mode", CLI_STR, .str = &mode},
        {"--sample", CLI_U32, .u32 = &sample, .min = 1, .max = 1000000},
        {"--names", CLI_STR, .str = &names},
        {"--layer-dir", CLI_STR, .str = &layer_dir},
    };
    char **args = calloc((size_t)nopt + 1, sizeof *args);
    if (args == NULL) {
        fprintf(stderr, TOOL ": out of memory\n");
        return 2;
    }
    for (int i = 0; i < nopt; i++) {
        args[i] = strcmp(argv[i], "-o") == 0 && i > 0 ? "--output" : argv[i];
    }
    const cli_spec spec = {
        .tool = TOOL, .opts = opts, .n_opts = sizeof opts / sizeof opts[0], .usage = run_usage};
    int parsed = cli_parse(&spec, nopt, args);
    free(args);
    if (parsed != CLI_OK) {
        return cli_exit_status(parsed);
    }
    if (start == 0) {
        fprintf(stderr, TOOL ": no command to run (vkprof run [options] -- CMD ARGS...)\n");
        return 2;
    }
    if (mode != NULL && strcmp(mode, "dispatch") != 0 && strcmp(mode, "label") != 0 &&
        strcmp(mode, "cmdbuf") != 0) {
        fprintf(stderr, TOOL ": unknown --mode '%s' (dispatch|label|cmdbuf)\n", mode);
        return 2;
    }
    char names_abs[PATH_MAX];
    if (names != NULL) {
        char err[RUN_PATH_MAX + 128] = "";
        vkl_name_map *m = vkl_name_map_load(names, err, sizeof err);
        if (m == NULL) {
            fprintf(stderr, TOOL ": --names: %s\n", err);
            return 2;
        }
        vkl_name_map_free(m);
        if (realpath(names, names_abs) == NULL) {
            fprintf(stderr, TOOL ": --names %s: %s\n", names, strerror(errno));
            return 2;
        }
        names = names_abs;
    }
    char layer[RUN_PATH_MAX], out_abs[RUN_PATH_MAX];
    if (!find_layer(layer_dir, layer, sizeof layer)) {
        return 2;
    }
    char layer_abs[PATH_MAX];
    if (realpath(layer, layer_abs) == NULL) {
        fprintf(stderr, TOOL ": %s: %s\n", layer, strerror(errno));
        return 2;
    }
    if (!prepare_dir(out, out_abs, sizeof out_abs)) {
        return 2;
    }
    char sample_s[16];
    snprintf(sample_s, sizeof sample_s, "%u", sample);
    if (!setup_env(layer_abs, out_abs, mode, sample > 0 ? sample_s : NULL, names)) {
        return 2;
    }
    int status = 0, signo = 0;
    int started = run_child(argv + start, &status, &signo);
    if (started < 0) {
        return 2;
    }
    if (started > 0) {
        return status; /* 126 or 127, said why */
    }
    report r = {.out = stderr};
    if (signo != 0) {
        fprintf(stderr, "\n== vkprof run: %s was killed by signal %d (%s): status %d ==\n",
                argv[start], signo, strsignal(signo), status);
    } else {
        fprintf(stderr, "\n== vkprof run: %s exited with status %d ==\n", argv[start], status);
    }
    size_t files = print_all(&r, out_abs);
    if (files == 0) {
        fprintf(stderr, TOOL ": %s used no Vulkan: the layer wrote no summary in %s%s\n",
                argv[start], out_abs,
                signo != 0 ? " (a process killed by a signal writes none)"
                           : " (no instance was created with " LAYER_NAME ")");
        return status != 0 ? status : 2;
    }
    if (r.processes == 0) {
        fprintf(stderr, TOOL ": no summary in %s could be read\n", out_abs);
        return status != 0 ? status : 2;
    }
    if (r.devices == 0) {
        fprintf(stderr,
                TOOL ": %s created no Vulkan device (%u process%s created instances "
                     "only): nothing was timed\n",
                argv[start], r.processes, r.processes == 1 ? "" : "es");
        return status != 0 ? status : 2;
    }
    return status;
}
