/* `vkprof decode`: a Llama-shaped decode loop on Vulkan compute (random
 * weights), optionally timed per phase with the library's 2-slot cycle. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#endif

#include "cli.h"
#include "cli_opts.h"
#include "outfile.h"
#include "decode.h"
#include "decode_spans.h"
#include "decode_tp.h"
#include "merge.h"
#include "vkutil.h"

#define SHOW_TOKENS 16u

static void decode_usage(FILE *f)
{
    fprintf(f,
            "usage: vkprof decode [--preset P] [--tokens N] [--ctx N]\n"
            "                     [--device INDEX|NAME] [--profile off|gpu|host|all|ring|\n"
            "                     ring-shared|ring-sampled|ring-rotating] [--sample-every N]\n"
            "                     [--rotate K]\n"
            "                     [--json FILE] [--trace FILE] [--seed S] [--peak-gbps X]\n"
            "                     [--labels] [--scope call|dispatch]\n"
            "                     [--ranks R [--skew-rank K --skew-us N] [--no-rendezvous]]\n"
            "  Greedy decode of N tokens with a Llama-shaped model (random weights from\n"
            "  --seed, fp16 weights, fp32 activations) on Vulkan compute.\n"
            "  --profile gpu times every kernel family with vkprof (one submit+wait per\n"
            "  phase call: tokens/s is then serialised, not a serving figure).\n"
            "  --profile host times each section (token, layer, recording, submit+wait,\n"
            "  and in gpu mode each phase call) as a host span, with a per-token report\n"
            "  every 8 tokens; all = gpu + host.\n"
            "  --profile ring times every kernel family without stalling: stamps in the\n"
            "  token's one command buffer, collected after its fence; ring-shared stamps\n"
            "  once per boundary; ring-rotating stamps K phase calls a token (--rotate,\n"
            "  default %u; K+1 stamps), the next K the next token, and reports per phase\n"
            "  the mean of the timed calls times the calls executed;\n"
            "  ring-sampled times 1 token in N (--sample-every, default\n"
            "  %u). `vkprof bench` measures what each mode costs.\n"
            "  --scope dispatch (ring, ring-shared, ring-sampled; one rank) makes each\n"
            "  dispatch its own scope, stamped where the vkprof layer stamps it, instead\n"
            "  of each phase call (--scope call, the default).\n"
            "  --trace FILE writes GPU scopes and host spans on one timeline (Chrome Trace\n"
            "  Event JSON: open it in ui.perfetto.dev or chrome://tracing).\n"
            "  Where the instance offers VK_EXT_debug_utils it is enabled and every\n"
            "  pipeline is named by its phase (one pipeline per phase), so a debug-utils\n"
            "  consumer such as the vkprof layer (`vkprof run -- vkprof decode`) names\n"
            "  dispatches as --profile ring does. --labels also wraps each phase call in\n"
            "  a command-buffer label of its name and each token's submit in a queue\n"
            "  label \"token\" (needs VK_EXT_debug_utils).\n"
            "  --ranks R splits the model over R tensor-parallel ranks (a thread and a\n"
            "  VkDevice each, all-reducing on the host twice per layer; the tokens must\n"
            "  agree on every rank); with host spans each all-reduce is a rendezvous\n"
            "  probe, an enqueue and a sync span (--no-rendezvous drops the probe);\n"
            "  --skew-rank K --skew-us N sleeps rank K before each attention all-reduce.\n"
            "  VKPROF_HOST_PROFILE=1|2 sets the host span level (2: hot spans only);\n"
            "  VKPROF_DECODE_ROUTE_TRACE=1 logs one line per all-reduce (--ranks > 1).\n"
            "  Presets (P): %s.\n"
            "  Defaults: tiny, 32 tokens, the preset's context, seed 1, profile off.\n",
            VKPROF_DEFAULT_ROTATE_SCOPES, VKPROF_DEFAULT_SAMPLE_EVERY, dec_preset_names());
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The nearest-rank q-quantile of v[0..n) (sorted in place); 0 for n = 0. */
static double quantile_s(double *v, uint32_t n, double q)
{
    if (n == 0) {
        return 0.0;
    }
    qsort(v, n, sizeof *v, cmp_double);
    uint32_t k = (uint32_t)ceil(q * n);
    return v[k > 0 ? k - 1 : 0];
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct phase_row {
    uint32_t id;
    const char *name;
    double ms_per_token, pct, calls_per_token, us_per_call, gbps, gflops;
    double bytes_per_token, flops_per_token;
    uint64_t count, total_ns;
    uint64_t dispatches; /* vkCmdDispatch calls of the phase over the run */
} phase_row;

static int cmp_rows(const void *a, const void *b)
{
    const phase_row *x = a, *y = b;
    return x->total_ns < y->total_ns ? 1 : x->total_ns > y->total_ns ? -1 : 0;
}

typedef struct run_result {
    const dec_preset *p;
    const char *device;
    uint32_t ctx, seed, tokens, first_token;
    const char *profile;
    const char *scope; /* "call" or "dispatch" (--scope) */
    double seconds, init_seconds, tokens_per_s;
    double token_ms_p50, token_ms_p99; /* one rank: each token's own time; 0: not measured */
    uint32_t *ids;
    phase_row rows[DEC_MAX_PHASES];
    uint32_t nrows;
    double phase_total_ms_per_token;
    double bytes_per_token, flops_per_token;
    double peak_gbps;
    uint64_t device_bytes;
    const char *snapshot; /* vkprof_snapshot_json, or NULL */
    const dec_tp_run *tp; /* --ranks > 1: the ranks' figures, else NULL */
} run_result;

/* A figure with exactly `decimals` digits after the point, as the summary
 * has always written it ("%.*f", rounded to nearest), through the JSON
 * writer's fixed-point numbers; NaN and infinities as null, a value beyond
 * the int64 range at full precision. */
static void kv_fixed(vkprof_json *j, const char *key, double v, unsigned decimals)
{
    double scaled = v;
    for (unsigned i = 0; i < decimals; i++) {
        scaled *= 10.0;
    }
    vkprof__json_key(j, key);
    if (isfinite(scaled) && fabs(scaled) < 9.0e18) {
        vkprof__json_fixed(j, (int64_t)llround(scaled), decimals);
    } else {
        vkprof__json_f64(j, v);
    }
}

/* --ranks > 1: "ranks" and one "rank_reports" entry per rank (the
 * top-level figures are rank 0's, bytes and FLOPs the sum over ranks). */
static void write_ranks_json(vkprof_json *j, const dec_tp_run *tp)
{
    vkprof__json_kv_u64(j, "ranks", tp->cfg.ranks);
    vkprof__json_kv_bool(j, "rendezvous_probe", tp->r[0].probe);
    vkprof__json_key(j, "rank_reports");
    vkprof__json_arr(j);
    for (uint32_t k = 0; k < tp->cfg.ranks; k++) {
        const dec_tp_rank *rk = &tp->r[k];
        vkprof__json_obj(j);
        vkprof__json_kv_u64(j, "rank", k);
        vkprof__json_kv_u64(j, "device_bytes", dec_allocated_bytes(rk->eng));
        vkprof__json_kv_u64(j, "all_reduces", rk->collectives);
        vkprof__json_kv_u64(j, "rendezvous_wait_ns", rk->rendezvous_ns);
        vkprof__json_kv_u64(j, "skew_sleeps", rk->skew_sleeps);
        vkprof__json_kv_u64(j, "skew_slept_ns", rk->skew_slept_ns);
        vkprof__json_kv_u64(j, "routed_calls", rk->routed_calls);
        vkprof__json_key(j, "host_buckets");
        vkprof__json_arr(j);
        vkprof_bucket_stats bs[VKPROF_MAX_BUCKETS];
        uint32_t nb = 0;
        if (rk->prof != NULL) {
            vkprof_bucket_snapshot(rk->prof, bs, VKPROF_MAX_BUCKETS, &nb);
        }
        for (uint32_t b = 0; b < nb && b < VKPROF_MAX_BUCKETS; b++) {
            vkprof__json_obj(j);
            vkprof__json_kv_str(j, "name", bs[b].name);
            vkprof__json_kv_bool(j, "hot", bs[b].hot);
            vkprof__json_kv_u64(j, "calls", bs[b].calls);
            vkprof__json_kv_u64(j, "total_ns", bs[b].total_ns);
            vkprof__json_end(j);
        }
        vkprof__json_end(j);
        vkprof__json_end(j);
    }
    vkprof__json_end(j);
}

static int write_json(const char *path, const run_result *r)
{
    outfile o;
    if (outfile_open(&o, "vkprof decode", path) != 0) {
        return 1;
    }
    vkprof_json jw, *j = &jw;
    outfile_json(&o, j);
    vkprof__json_obj(j);
    vkprof__json_kv_str(j, "tool", "vkprof decode");
    vkprof__json_kv_str(j, "preset", r->p->name);
    vkprof__json_kv_str(j, "device", r->device);
    vkprof__json_kv_str(j, "precision", DEC_PRECISION);
    vkprof__json_key(j, "model");
    vkprof__json_obj(j);
    vkprof__json_kv_u64(j, "dim", r->p->dim);
    vkprof__json_kv_u64(j, "layers", r->p->n_layers);
    vkprof__json_kv_u64(j, "heads", r->p->n_heads);
    vkprof__json_kv_u64(j, "kv_heads", r->p->n_kv_heads);
    vkprof__json_kv_u64(j, "head_dim", r->p->head_dim);
    vkprof__json_kv_u64(j, "ffn", r->p->ffn);
    vkprof__json_kv_u64(j, "vocab", r->p->vocab);
    vkprof__json_kv_u64(j, "context", r->ctx);
    kv_fixed(j, "rope_theta", (double)r->p->rope_theta, 1);
    vkprof__json_kv_bool(j, "tied_embeddings", r->p->tie_embeddings);
    vkprof__json_kv_u64(j, "params", dec_param_count(r->p));
    vkprof__json_end(j);
    vkprof__json_kv_u64(j, "seed", r->seed);
    vkprof__json_kv_str(j, "profile", r->profile);
    vkprof__json_kv_str(j, "scope", r->scope != NULL ? r->scope : "call");
    vkprof__json_kv_bool(j, "serialised", strcmp(r->profile, "gpu") == 0);
    vkprof__json_kv_u64(j, "tokens", r->tokens);
    vkprof__json_kv_u64(j, "first_token", r->first_token);
    kv_fixed(j, "seconds", r->seconds, 6);
    kv_fixed(j, "init_seconds", r->init_seconds, 6);
    kv_fixed(j, "tokens_per_s", r->tokens_per_s, 6);
    if (r->token_ms_p50 > 0) {
        kv_fixed(j, "token_ms_p50", r->token_ms_p50, 6);
        kv_fixed(j, "token_ms_p99", r->token_ms_p99, 6);
    }
    vkprof__json_kv_u64(j, "device_bytes", r->device_bytes);
    kv_fixed(j, "bytes_per_token", r->bytes_per_token, 0);
    kv_fixed(j, "flops_per_token", r->flops_per_token, 0);
    vkprof__json_key(j, "token_ids");
    vkprof__json_arr(j);
    for (uint32_t i = 0; i < r->tokens; i++) {
        vkprof__json_u64(j, r->ids[i]);
    }
    vkprof__json_end(j);
    vkprof__json_key(j, "phases");
    vkprof__json_arr(j);
    for (uint32_t i = 0; i < r->nrows; i++) {
        const phase_row *w = &r->rows[i];
        vkprof__json_obj(j);
        vkprof__json_kv_str(j, "name", w->name);
        vkprof__json_kv_u64(j, "id", w->id);
        kv_fixed(j, "calls_per_token", w->calls_per_token, 3);
        vkprof__json_kv_u64(j, "dispatches", w->dispatches);
        kv_fixed(j, "bytes_per_token", w->bytes_per_token, 0);
        kv_fixed(j, "flops_per_token", w->flops_per_token, 0);
        if (r->snapshot != NULL) { /* timed (--profile gpu) */
            vkprof__json_kv_u64(j, "count", w->count);
            vkprof__json_kv_u64(j, "total_ns", w->total_ns);
            kv_fixed(j, "ms_per_token", w->ms_per_token, 6);
            kv_fixed(j, "percent", w->pct, 3);
            kv_fixed(j, "us_per_call", w->us_per_call, 3);
            kv_fixed(j, "gbps", w->gbps, 3);
            kv_fixed(j, "gflops", w->gflops, 3);
        }
        if (r->peak_gbps > 0 && r->snapshot != NULL) {
            kv_fixed(j, "percent_of_peak", 100.0 * w->gbps / r->peak_gbps, 3);
        }
        vkprof__json_end(j);
    }
    vkprof__json_end(j);
    if (r->peak_gbps > 0) {
        kv_fixed(j, "peak_gbps", r->peak_gbps, 3);
    }
    /* the library's own document, as vkprof_snapshot_json wrote it */
    vkprof__json_key(j, "vkprof");
    if (r->snapshot != NULL) {
        vkprof__json_raw(j, r->snapshot);
    } else {
        vkprof__json_null(j);
    }
    if (r->tp != NULL) {
        write_ranks_json(j, r->tp);
    }
    vkprof__json_end(j);
    vkprof__json_newline(j);
    return outfile_commit_json(&o, j);
}

/* ---- host spans and the trace, through the engine's hooks ---------------- */

/* Reports and warnings go to stderr; clear the progress line first. */
static void on_log(void *user, vkprof_log_level level, vkprof_result code, const char *msg)
{
    const bool *tty = user;
    if (*tty) {
        fputs("\r\033[K", stderr);
    }
    if (level == VKPROF_LOG_REPORT) {
        fputs(msg, stderr);
    } else {
        fprintf(stderr, "vkprof %s: %s (%s)\n",
                level == VKPROF_LOG_ERROR  ? "error"
                : level == VKPROF_LOG_WARN ? "warning"
                                           : "info",
                msg, vkprof_result_name(code));
    }
}

/* The per-phase table of a timed run (GPU time from vkprof, per timed
 * token) or the untimed per-phase traffic, into r->rows; the snapshot JSON
 * in *snap (the caller frees it). Returns 0, or 1 when the snapshot fails. */
static int phase_report(vkprof_context prof, const dec_engine *eng, dec_profile mode, bool timed,
                        uint32_t tokens, double peak, run_result *r, char **snap)
{
    /* the preset's own phases (an MoE preset's moe_router, moe_experts and
     * moe_combine too); a dense preset's are dec_phase_ids */
    uint32_t phases[DEC_MAX_PHASES];
    uint32_t nphases = dec_preset_phases(r->p, phases);
    if (timed) {
        /* ring-sampled: phase figures cover the timed tokens only */
        uint64_t timed_tokens = tokens;
        vkprof_timing_stats ts;
        bool est = false; /* rotating: each phase's mean x its calls (est_total_ns) */
        if (mode == DEC_PROFILE_RING && vkprof_get_timing_stats(prof, &ts) == VKPROF_OK) {
            timed_tokens = ts.timed_steps;
            est = ts.rotate_scopes > 0;
        }
        double per = timed_tokens ? (double)timed_tokens : 1.0;
        vkprof_phase_stats st[VKPROF_PHASE_DEFAULT_COUNT + 8];
        uint32_t count = 0;
        vkprof_error_counts ec;
        if (vkprof_snapshot(prof, st, VKPROF_PHASE_DEFAULT_COUNT + 8, &count, &ec) != VKPROF_OK) {
            fprintf(stderr, "vkprof decode: vkprof_snapshot failed\n");
            return 1;
        }
        bool per_dispatch = r->scope != NULL && strcmp(r->scope, "dispatch") == 0;
        uint64_t sum_ns = 0;
        for (uint32_t k = 0; k < nphases; k++) {
            sum_ns += est ? st[phases[k]].est_total_ns : st[phases[k]].total_ns;
        }
        for (uint32_t k = 0; k < nphases; k++) {
            const vkprof_phase_stats *s = &st[phases[k]];
            const dec_phase_cost *c = dec_costs(eng, phases[k]);
            phase_row *w = &r->rows[r->nrows++];
            w->id = s->id;
            w->name = vkprof_phase_name(prof, s->id);
            w->count = s->count;
            w->total_ns = s->total_ns;
            uint64_t ns = est ? s->est_total_ns : s->total_ns;
            w->ms_per_token = (double)ns * 1e-6 / per;
            w->pct = sum_ns ? 100.0 * (double)ns / (double)sum_ns : 0.0;
            /* a scope per dispatch: the calls are the engine's, the count its dispatches */
            w->calls_per_token = per_dispatch ? (double)c->calls / tokens
                                              : (double)(est ? s->calls : s->count) / per;
            w->us_per_call = s->count ? (double)s->total_ns * 1e-3 / (double)s->count : 0.0;
            w->bytes_per_token = c->bytes / tokens;
            w->flops_per_token = c->flops / tokens;
            w->dispatches = c->dispatches;
            /* per token over the GPU time of a timed token */
            w->gbps = ns ? w->bytes_per_token * per / (double)ns : 0.0;
            w->gflops = ns ? w->flops_per_token * per / (double)ns : 0.0;
        }
        qsort(r->rows, r->nrows, sizeof r->rows[0], cmp_rows);
        r->phase_total_ms_per_token = (double)sum_ns * 1e-6 / per;
        printf("\nGPU time per phase (vkprof %s, %llu %stokens; sum %.3f ms/token = %.0f%% of "
               "the %swall time):\n",
               mode == DEC_PROFILE_RING ? "ring" : "2-slot", (unsigned long long)timed_tokens,
               timed_tokens != tokens ? "timed " : "", r->phase_total_ms_per_token,
               100.0 * r->phase_total_ms_per_token / (1e3 * r->seconds / tokens),
               mode == DEC_PROFILE_GPU ? "serialised " : "");
        if (est) {
            printf("  rotating: %u phase calls stamped a token of %llu (a pass: %llu tokens, %llu "
                   "passes, %llu steps whose call count changed); ms/token = mean of the "
                   "timed calls x calls executed / tokens\n",
                   ts.rotate_scopes, (unsigned long long)ts.rotate_calls_per_step,
                   (unsigned long long)ts.rotate_period, (unsigned long long)ts.rotate_cycles,
                   (unsigned long long)ts.rotate_changed_steps);
        }
        if (per_dispatch) {
            printf("  a scope per dispatch (--scope dispatch): us/disp is per dispatch\n");
        }
        printf("  %-12s %10s %7s %8s %10s %10s %10s%s\n", "phase", "ms/token", "%", "calls/tk",
               per_dispatch ? "us/disp" : "us/call", "GB/s", "GFLOP/s", peak > 0 ? "  %peak" : "");
        for (uint32_t k = 0; k < r->nrows; k++) {
            const phase_row *w = &r->rows[k];
            printf("  %-12s %10.4f %7.2f %8.1f %10.2f %10.2f %10.2f", w->name, w->ms_per_token,
                   w->pct, w->calls_per_token, w->us_per_call, w->gbps, w->gflops);
            if (peak > 0) {
                printf("  %5.1f%%", 100.0 * w->gbps / peak);
            }
            printf("\n");
        }
        if (ec.vulkan_errors || ec.not_ready || ec.discarded) {
            printf("  (vkprof errors: vulkan %llu, not ready %llu, discarded %llu)\n",
                   (unsigned long long)ec.vulkan_errors, (unsigned long long)ec.not_ready,
                   (unsigned long long)ec.discarded);
        }
        size_t need = 0;
        vkprof_snapshot_json(prof, NULL, 0, &need);
        *snap = malloc(need ? need : 1);
        if (*snap != NULL && vkprof_snapshot_json(prof, *snap, need, &need) == VKPROF_OK) {
            r->snapshot = *snap;
        }
    } else {
        /* per-phase traffic without timing: still useful to read */
        for (uint32_t k = 0; k < nphases; k++) {
            const dec_phase_cost *c = dec_costs(eng, phases[k]);
            phase_row *w = &r->rows[r->nrows++];
            memset(w, 0, sizeof *w);
            w->id = phases[k];
            static const char *names[] = {
#define VKPROF_X_(id, name) name,
                VKPROF_DEFAULT_PHASES(VKPROF_X_)
#undef VKPROF_X_
            };
            w->name = names[phases[k]];
            w->calls_per_token = (double)c->calls / tokens;
            w->dispatches = c->dispatches;
            w->bytes_per_token = c->bytes / tokens;
            w->flops_per_token = c->flops / tokens;
        }
    }
    return 0;
}

/* The host-span report over the whole run (every bucket of `prof`). */
static void host_report(vkprof_context prof, uint32_t tokens, double wall_s)
{
    vkprof_bucket_stats bs[VKPROF_MAX_BUCKETS];
    vkprof_report_row rows[VKPROF_MAX_BUCKETS];
    uint32_t nb = 0;
    vkprof_bucket_snapshot(prof, bs, VKPROF_MAX_BUCKETS, &nb);
    for (uint32_t k = 0; k < nb && k < VKPROF_MAX_BUCKETS; k++) {
        rows[k].name = bs[k].name;
        rows[k].calls = bs[k].calls;
        rows[k].total_ns = bs[k].total_ns;
    }
    size_t need = vkprof_format_report(NULL, 0, 1, tokens, (uint64_t)(wall_s * 1e9), rows, nb);
    char *text = malloc(need + 1);
    if (text != NULL) {
        vkprof_format_report(text, need + 1, 1, tokens, (uint64_t)(wall_s * 1e9), rows, nb);
        printf("\nHost spans over the whole run (nested: token > layer > phase; a "
               "span's %% includes its children):\n%s",
               text);
        free(text);
    }
}

/* ---- --ranks R > 1: the tensor-parallel driver (decode_tp.c) ------------------ */

typedef struct ranks_args {
    const dec_preset *p;
    uint32_t ctx, seed, tokens;
    const char *profile;
    dec_profile mode;
    bool timed, ring_shared;
    uint32_t sample_every, rotate_scopes;
    vkprof_host_level host_level;
    const char *trace, *json;
    double peak;
    bool labels, debug_utils, tty;
    uint32_t ranks, skew_rank, skew_us;
    bool probe, route_trace;
} ranks_args;

/* The ranks' logger: route lines as they are, reports and messages named by
 * rank (one fprintf each, so lines of two ranks do not mix). */
static void ranks_log(void *user, uint32_t rank, vkprof_log_level level, vkprof_result code,
                      const char *msg)
{
    const bool *tty = user;
    if (*tty) {
        fputs("\r\033[K", stderr);
    }
    if (level == VKPROF_LOG_REPORT) {
        if (strncmp(msg, "route:", 6) == 0) {
            fputs(msg, stderr);
        } else {
            fprintf(stderr, "rank %u: %s", rank, msg);
        }
    } else {
        fprintf(stderr, "vkprof %s (rank %u): %s (%s)\n",
                level == VKPROF_LOG_ERROR  ? "error"
                : level == VKPROF_LOG_WARN ? "warning"
                                           : "info",
                rank, msg, vkprof_result_name(code));
    }
}

static int decode_ranks(const ranks_args *a, const vku_instance *inst, VkPhysicalDevice phys,
                        uint32_t fam)
{
    static bool log_tty;
    log_tty = a->tty;
    const dec_preset *p = a->p;
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(phys, &props);
    dec_mem_plan plan = dec_plan_memory(p, a->ctx);
    printf("device:    %s\n", props.deviceName);
    printf("preset:    %s (dim %u, %u layers, %u/%u heads, head dim %u, ffn %u, vocab %u, "
           "%.2fB params%s)\n",
           p->name, p->dim, p->n_layers, p->n_heads, p->n_kv_heads, p->head_dim, p->ffn, p->vocab,
           (double)dec_param_count(p) * 1e-9, p->tie_embeddings ? ", tied embeddings" : "");
    printf("precision: %s\n", DEC_PRECISION);
    printf("ranks:     %u (tensor parallel: a thread and a VkDevice each on this device; "
           "all-reduce on the host, %s)\n",
           a->ranks,
           a->host_level == VKPROF_HOST_OFF ? "not profiled"
           : a->probe                       ? "rendezvous probe + enqueue + sync spans"
                                            : "enqueue + sync spans, no rendezvous probe");
    if (a->skew_us > 0) {
        printf("skew:      rank %u sleeps %u us before each attention all-reduce\n", a->skew_rank,
               a->skew_us);
    }
    printf("memory:    %.1f MiB for the whole model (weights %.1f, KV cache %.1f for %u "
           "positions, activations %.1f), split over the ranks\n",
           (double)plan.total / 1048576.0, (double)plan.weights / 1048576.0,
           (double)plan.kv_cache / 1048576.0, a->ctx, (double)plan.activations / 1048576.0);
    fflush(stdout);

    dec_tp_config cfg = {.preset = p,
                         .ctx = a->ctx,
                         .seed = a->seed,
                         .tokens = a->tokens,
                         .first_token = 1,
                         .ranks = a->ranks,
                         .mode = a->mode,
                         .ring_shared = a->ring_shared,
                         .sample_every = a->sample_every,
                         .rotate_scopes = a->rotate_scopes,
                         .timed = a->timed,
                         .host_level = a->host_level,
                         .trace = a->trace != NULL,
                         .probe = a->probe,
                         .skew_rank = a->skew_rank,
                         .skew_us = a->skew_us,
                         .route_trace = a->route_trace,
                         .debug_utils = a->debug_utils,
                         .labels = a->labels,
                         .log = ranks_log,
                         .log_user = &log_tty};
    if (a->trace != NULL && !a->timed && a->host_level == VKPROF_HOST_OFF) {
        fprintf(stderr, "vkprof decode: note: --profile off: the trace holds only the "
                        "token marks (use --profile all)\n");
    }
    dec_tp_run run;
    char err[640] = "";
    char *snap = NULL;
    int rc = 1;
    if (a->tty) {
        fprintf(stderr, "generating weights on the GPU (%u ranks)...", a->ranks);
    }
    int dr = dec_tp_run_decode(&run, &cfg, inst, phys, fam, err, sizeof err);
    if (a->tty) {
        fprintf(stderr, "\r\033[K");
    }
    if (dr != 0) {
        fprintf(stderr, "vkprof decode: %s\n", err);
        goto done;
    }
    const dec_tp_rank *r0 = &run.r[0];
    uint64_t device_bytes = 0;
    for (uint32_t k = 0; k < a->ranks; k++) {
        device_bytes += dec_allocated_bytes(run.r[k].eng);
    }
    run_result r = {.p = p,
                    .device = props.deviceName,
                    .ctx = a->ctx,
                    .seed = a->seed,
                    .tokens = a->tokens,
                    .first_token = 1,
                    .profile = a->profile,
                    .seconds = run.seconds,
                    .init_seconds = run.init_seconds,
                    .tokens_per_s = a->tokens / run.seconds,
                    .ids = r0->ids,
                    .peak_gbps = a->peak,
                    .device_bytes = device_bytes,
                    .tp = &run};
    uint32_t phases[DEC_MAX_PHASES];
    uint32_t nphases = dec_preset_phases(p, phases);
    for (uint32_t k = 0; k < a->ranks; k++) {
        for (uint32_t f = 0; f < nphases; f++) {
            const dec_phase_cost *c = dec_costs(run.r[k].eng, phases[f]);
            r.bytes_per_token += c->bytes / a->tokens;
            r.flops_per_token += c->flops / a->tokens;
        }
    }
    printf("init:      %.2f s (pipelines, weights generated on the GPU, %.1f MiB allocated "
           "over %u ranks)\n",
           r.init_seconds, (double)device_bytes / 1048576.0, a->ranks);
    printf("tokens:    %u in %.3f s = %.2f tokens/s (%.3f ms/token, positions 0..%u; every "
           "rank chose the same token at every step)\n",
           a->tokens, r.seconds, r.tokens_per_s, 1e3 * r.seconds / a->tokens, a->tokens - 1);
    if (a->mode == DEC_PROFILE_GPU) {
        printf("           --profile gpu submits and waits once per phase call (2-slot mode): "
               "this throughput\n           is serialised and NOT a serving figure; run "
               "--profile off for that\n");
    } else {
        printf("effective: %.2f GB/s, %.2f GFLOP/s (bytes and FLOPs per token of all ranks / "
               "token time)\n",
               r.bytes_per_token * r.tokens_per_s * 1e-9,
               r.flops_per_token * r.tokens_per_s * 1e-9);
    }
    printf("token ids:");
    for (uint32_t i = 0; i < a->tokens && i < SHOW_TOKENS; i++) {
        printf(" %u", r0->ids[i]);
    }
    printf("%s\n", a->tokens > SHOW_TOKENS ? " ..." : "");
    for (uint32_t k = 0; k < a->ranks; k++) {
        const dec_tp_rank *rk = &run.r[k];
        printf("\n== rank %u: %llu all-reduces, ", k, (unsigned long long)rk->collectives);
        if (rk->probe) {
            printf("rendezvous wait %.3f ms", (double)rk->rendezvous_ns * 1e-6);
        } else {
            /* no probe ran (host spans off, no route trace, or --no-rendezvous):
             * the skew is inside the collective, not 0 */
            printf("no rendezvous probe (skew not measured)");
        }
        if (rk->skew_sleeps > 0) {
            printf(", %llu skew sleeps of %.3f ms in all", (unsigned long long)rk->skew_sleeps,
                   (double)rk->skew_slept_ns * 1e-6);
        }
        printf(" ==\n");
        /* the top-level rows and snapshot are rank 0's; the others print */
        run_result rr = r;
        rr.nrows = 0;
        char *rsnap = NULL;
        run_result *dst = k == 0 ? &r : &rr;
        char **sp = k == 0 ? &snap : &rsnap;
        if (a->timed || k == 0) {
            if (phase_report(rk->prof, rk->eng, a->mode, a->timed, a->tokens, a->peak, dst, sp) !=
                0) {
                free(rsnap);
                goto done;
            }
        }
        free(rsnap);
        if (a->host_level != VKPROF_HOST_OFF) {
            host_report(rk->prof, a->tokens, run.seconds);
        }
    }
    if (a->trace != NULL) {
        char(*paths)[1200] = calloc(a->ranks, sizeof *paths);
        const char **inputs = calloc(a->ranks, sizeof *inputs);
        bool written = paths != NULL && inputs != NULL;
        for (uint32_t k = 0; written && k < a->ranks; k++) {
            if (dec_tp_rank_path(paths[k], sizeof paths[k], a->trace, k) != 0 ||
                vkprof_trace_write(run.r[k].prof, paths[k]) != VKPROF_OK) {
                fprintf(stderr, "vkprof decode: rank %u's trace could not be written (%s)\n", k,
                        a->trace);
                written = false;
                break;
            }
            inputs[k] = paths[k];
            uint64_t kept = 0, dropped = 0;
            vkprof_trace_counts(run.r[k].prof, &kept, &dropped);
            printf("trace:     %s (rank %u: %llu events%s)\n", paths[k], k,
                   (unsigned long long)kept, dropped ? ", SOME DROPPED: see its metadata" : "");
        }
        /* and all of them on one timeline: one process per rank (vkprof
         * merge; one boot, so exact on the shared CLOCK_MONOTONIC) */
        int mr = RPT_MERGE_ERROR;
        char merr[512] = "";
        if (written) {
            rpt_merge_opts mo = {.inputs = inputs, .n_inputs = a->ranks, .output = a->trace};
            mr = rpt_merge(&mo, NULL, merr, sizeof merr);
            if (mr == RPT_MERGE_OK) {
                printf("trace:     %s (the %u ranks merged, one process each; open in "
                       "ui.perfetto.dev, or: vkprof report %s)\n",
                       a->trace, a->ranks, a->trace);
            } else {
                fprintf(stderr, "vkprof decode: the merged trace %s: %s\n", a->trace, merr);
            }
        }
        free(paths);
        free(inputs);
        if (mr != RPT_MERGE_OK) {
            goto done;
        }
    }
    if (a->json != NULL) {
        if (write_json(a->json, &r) != 0) {
            goto done;
        }
        printf("json:      %s\n", a->json);
    }
    rc = 0;
done:
    dec_tp_cleanup(&run);
    free(snap);
    return rc;
}

/* ---- the command: parse, run, report ----------------------------------------- */

/* What `vkprof decode` was asked for: its options, parsed and checked
 * against each other (decode_parse). */
typedef struct decode_opts {
    const dec_preset *p;
    const char *preset_name, *device, *profile, *json, *trace, *scope;
    uint32_t tokens, ctx, seed, sample_every, rotate;
    double peak;
    bool labels, no_rendezvous;
    uint32_t ranks, skew_rank, skew_us;
    /* from --profile and --scope */
    dec_profile mode;
    bool host_spans, ring_shared, ring_sampled, ring_rotating, timed, scope_dispatches;
    vkprof_host_level host_level;
    bool route_trace; /* --ranks > 1: each rank's trace goes to its own file */
} decode_opts;

/* What a run holds until the command ends (decode_close frees it). */
typedef struct decode_session {
    vku_instance inst;
    bool inst_ok, debug_utils, tty;
    vku_device dev;
    vkprof_context prof;
    dec_engine *eng;
    dec_hooks hooks;   /* the host spans' glue; the engine keeps a pointer to it */
    uint32_t *ids;     /* each generated token */
    double *token_s;   /* each token's time */
    char *snap;        /* the snapshot JSON of the phase report */
    double t0, t1, t2; /* before the weights, first token, after the last */
    bool ranks_done;   /* --ranks > 1 ran and reported in decode_ranks */
} decode_session;

#define DECODE_GO (-1) /* decode_parse: go on (else: exit with this status) */

static int decode_parse(int argc, char **argv, decode_opts *o)
{
    memset(o, 0, sizeof *o);
    o->preset_name = "tiny";
    o->profile = "off";
    o->scope = "call";
    o->tokens = 32;
    o->seed = 1;
    o->sample_every = VKPROF_DEFAULT_SAMPLE_EVERY;
    o->rotate = VKPROF_DEFAULT_ROTATE_SCOPES;
    o->ranks = 1;
    o->skew_rank = UINT32_MAX;
    const cli_opt opts[] = {
        {"--preset", CLI_STR, .str = &o->preset_name},
        {"--tokens", CLI_U32, .u32 = &o->tokens, .min = 1},
        {"--ctx", CLI_U32, .u32 = &o->ctx, .min = 1},
        {"--device", CLI_STR, .str = &o->device},
        {"--profile", CLI_STR, .str = &o->profile},
        {"--json", CLI_STR, .str = &o->json},
        {"--seed", CLI_U32, .u32 = &o->seed},
        {"--peak-gbps", CLI_F64, .f64 = &o->peak, .fmin = 0.0, .fmax = 1e12},
        {"--trace", CLI_STR, .str = &o->trace},
        {"--sample-every", CLI_U32, .u32 = &o->sample_every, .min = 1},
        {"--rotate", CLI_U32, .u32 = &o->rotate, .min = 1, .max = 1u << 24},
        {"--labels", CLI_FLAG, .flag = &o->labels},
        {"--scope", CLI_STR, .str = &o->scope},
        {"--ranks", CLI_U32, .u32 = &o->ranks, .min = 1, .max = 64},
        {"--skew-rank", CLI_U32, .u32 = &o->skew_rank, .max = 63},
        {"--skew-us", CLI_U32, .u32 = &o->skew_us, .min = 1, .max = 10000000},
        {"--no-rendezvous", CLI_FLAG, .flag = &o->no_rendezvous},
    };
    const cli_spec spec = {.tool = "vkprof decode",
                           .opts = opts,
                           .n_opts = sizeof opts / sizeof opts[0],
                           .usage = decode_usage};
    int parsed = cli_parse(&spec, argc, argv);
    if (parsed != CLI_OK) {
        return cli_exit_status(parsed);
    }
    o->p = dec_find_preset(o->preset_name);
    if (o->p == NULL) {
        fprintf(stderr, "vkprof decode: unknown preset '%s' (known: %s)\n", o->preset_name,
                dec_preset_names());
        return 2;
    }
    const char *profile = o->profile;
    if (strcmp(profile, "off") == 0) {
        o->mode = DEC_PROFILE_OFF;
    } else if (strcmp(profile, "gpu") == 0) {
        o->mode = DEC_PROFILE_GPU;
    } else if (strcmp(profile, "host") == 0) {
        o->mode = DEC_PROFILE_OFF;
        o->host_spans = true;
    } else if (strcmp(profile, "all") == 0) {
        o->mode = DEC_PROFILE_GPU;
        o->host_spans = true;
    } else if (strcmp(profile, "ring") == 0 || strcmp(profile, "ring-shared") == 0 ||
               strcmp(profile, "ring-sampled") == 0 || strcmp(profile, "ring-rotating") == 0) {
        o->mode = DEC_PROFILE_RING;
        o->ring_shared = strcmp(profile, "ring-shared") == 0;
        o->ring_sampled = strcmp(profile, "ring-sampled") == 0;
        /* rotating: K calls a token, with one stamp per boundary */
        o->ring_rotating = strcmp(profile, "ring-rotating") == 0;
        o->ring_shared = o->ring_shared || o->ring_rotating;
    } else {
        fprintf(stderr,
                "vkprof decode: unknown profile '%s' "
                "(off|gpu|host|all|ring|ring-shared|ring-sampled|ring-rotating)\n",
                profile);
        return 2;
    }
    o->timed = o->mode == DEC_PROFILE_GPU || o->mode == DEC_PROFILE_RING;
    o->scope_dispatches = strcmp(o->scope, "dispatch") == 0;
    if (!o->scope_dispatches && strcmp(o->scope, "call") != 0) {
        fprintf(stderr, "vkprof decode: unknown --scope '%s' (call|dispatch)\n", o->scope);
        return 2;
    }
    if (o->scope_dispatches && (o->mode != DEC_PROFILE_RING || o->ring_rotating || o->ranks > 1)) {
        fprintf(stderr, "vkprof decode: --scope dispatch goes with --profile ring, ring-shared "
                        "or ring-sampled at one rank\n");
        return 2;
    }
    /* the host span level: --profile's, unless VKPROF_HOST_PROFILE says 1 or 2 */
    o->host_level = o->host_spans ? VKPROF_HOST_ALL : VKPROF_HOST_OFF;
    const char *hp = getenv("VKPROF_HOST_PROFILE");
    if (hp != NULL && hp[0] != '\0') {
        if (strcmp(hp, "1") == 0) {
            o->host_level = VKPROF_HOST_ALL;
        } else if (strcmp(hp, "2") == 0) {
            o->host_level = VKPROF_HOST_HOT;
        } else {
            fprintf(stderr,
                    "vkprof decode: warning: VKPROF_HOST_PROFILE='%.32s' is neither 1 (every "
                    "span) nor 2 (hot spans only): ignored\n",
                    hp);
        }
    }
    o->host_spans = o->host_level != VKPROF_HOST_OFF;
    if (o->ranks == 1 && (o->skew_rank != UINT32_MAX || o->skew_us != 0 || o->no_rendezvous)) {
        fprintf(stderr, "vkprof decode: --skew-rank, --skew-us and --no-rendezvous need "
                        "--ranks 2 or more\n");
        return 2;
    }
    if ((o->skew_rank != UINT32_MAX) != (o->skew_us != 0)) {
        fprintf(stderr, "vkprof decode: --skew-rank and --skew-us go together\n");
        return 2;
    }
    if (o->skew_rank != UINT32_MAX && o->skew_rank >= o->ranks) {
        fprintf(stderr, "vkprof decode: --skew-rank %u: the ranks are 0..%u\n", o->skew_rank,
                o->ranks - 1);
        return 2;
    }
    o->route_trace = o->ranks > 1 && dec_tp_route_trace_env(NULL, NULL);
    if (o->ctx == 0) {
        o->ctx = o->p->default_ctx;
    }
    if (o->json != NULL) {
        /* an unwritable path fails now, not after the whole decode */
        outfile probe;
        if (outfile_open(&probe, "vkprof decode", o->json) != 0) {
            return 1;
        }
        outfile_abort(&probe);
    }
    if (o->tokens > o->ctx) {
        fprintf(stderr, "vkprof decode: --tokens %u exceeds the context (%u); raise --ctx\n",
                o->tokens, o->ctx);
        return 2;
    }
    return DECODE_GO;
}

/* The device, the profiler and the engine, then the tokens: 0, or 1 with the
 * reason on stderr. With --ranks > 1 the tensor-parallel driver runs and
 * reports by itself (s->ranks_done). */
static int decode_run(const decode_opts *o, decode_session *s)
{
    /* debug utils where offered: the pipelines are then named by phase */
    if (vku_instance_create_ex(&s->inst, false, "vkprof decode", true) != VK_SUCCESS) {
        return 1;
    }
    s->inst_ok = true;
    s->debug_utils = s->inst.debug_utils;
    s->tty = isatty(STDERR_FILENO) != 0;
    s->ids = calloc(o->tokens, sizeof *s->ids);
    s->token_s = calloc(o->tokens, sizeof *s->token_s);
    if (s->ids == NULL || s->token_s == NULL) {
        fprintf(stderr, "vkprof decode: out of memory\n");
        return 1;
    }
    if (o->labels && !s->debug_utils) {
        fprintf(stderr, "vkprof decode: --labels needs VK_EXT_debug_utils, which this Vulkan "
                        "instance does not offer\n");
        return 1;
    }
    VkPhysicalDevice phys;
    char err[512] = "";
    if (vku_pick_device(s->inst.instance, o->device, &phys, err, sizeof err) != VK_SUCCESS) {
        fprintf(stderr, "vkprof decode: %s\n", err);
        return 1;
    }
    uint32_t fam = vku_compute_family(phys);
    if (o->ranks > 1 && fam != UINT32_MAX) {
        ranks_args ra = {.p = o->p,
                         .ctx = o->ctx,
                         .seed = o->seed,
                         .tokens = o->tokens,
                         .profile = o->profile,
                         .mode = o->mode,
                         .timed = o->timed,
                         .ring_shared = o->ring_shared,
                         .sample_every = o->ring_sampled ? o->sample_every : 1,
                         .rotate_scopes = o->ring_rotating ? o->rotate : 0,
                         .host_level = o->host_level,
                         .trace = o->trace,
                         .json = o->json,
                         .peak = o->peak,
                         .labels = o->labels,
                         .debug_utils = s->debug_utils,
                         .tty = s->tty,
                         .ranks = o->ranks,
                         .skew_rank = o->skew_rank,
                         .skew_us = o->skew_us,
                         .probe = !o->no_rendezvous,
                         .route_trace = o->route_trace};
        s->ranks_done = true;
        return decode_ranks(&ra, &s->inst, phys, fam);
    }
    if (fam == UINT32_MAX || vku_device_create(&s->dev, phys, fam) != VK_SUCCESS) {
        fprintf(stderr, "vkprof decode: cannot create a device with a compute queue\n");
        return 1;
    }
    static dec_span_glue glue;
    static bool log_tty;
    log_tty = s->tty;
    if (o->timed || o->host_spans || o->trace != NULL) {
        vkprof_context_desc d = vku_vkprof_desc(&s->inst, &s->dev);
        d.enable = o->timed ? VKPROF_ENABLE_ON : VKPROF_ENABLE_OFF;
        if (o->mode == DEC_PROFILE_RING) {
            d.timing_mode = VKPROF_TIMING_RING;
            d.shared_boundaries = o->ring_shared;
            d.sample_every = o->ring_sampled ? o->sample_every : 1;
            d.rotate_scopes = o->ring_rotating ? o->rotate : 0;
        }
        d.host_level = o->host_level;
        d.queue = s->dev.queue; /* the bracket calibration fallback, where needed */
        d.trace_path = "";      /* written below, not from $VKPROF_TRACE */
        d.log = on_log;
        d.log_user = &log_tty;
        vkprof_result pr = vkprof_create(&d, &s->prof);
        if (pr != VKPROF_OK) {
            fprintf(stderr, "vkprof decode: vkprof_create: %s\n", vkprof_result_text(pr));
            return 1;
        }
        vkprof_set_thread_name(s->prof, "decode");
        if (o->trace != NULL && vkprof_trace_begin(s->prof, 0) != VKPROF_OK) {
            fprintf(stderr, "vkprof decode: cannot start the trace\n");
            return 1;
        }
        if (o->trace != NULL && !o->timed && !o->host_spans) {
            fprintf(stderr, "vkprof decode: note: --profile off: the trace holds only the "
                            "token marks (use --profile all)\n");
        }
    }
    if (o->timed && !vkprof_active(s->prof)) {
        fprintf(stderr,
                "vkprof decode: the compute queue of %s has no timestamps: --profile %s "
                "is not possible\n",
                s->dev.props.deviceName, o->profile);
        return 1;
    }
    const dec_preset *p = o->p;
    dec_mem_plan plan = dec_plan_memory(p, o->ctx);
    printf("device:    %s\n", s->dev.props.deviceName);
    printf("preset:    %s (dim %u, %u layers, %u/%u heads, head dim %u, ffn %u, vocab %u, "
           "%.2fB params%s)\n",
           p->name, p->dim, p->n_layers, p->n_heads, p->n_kv_heads, p->head_dim, p->ffn, p->vocab,
           (double)dec_param_count(p) * 1e-9, p->tie_embeddings ? ", tied embeddings" : "");
    printf("precision: %s\n", DEC_PRECISION);
    printf("names:     %s\n", !s->debug_utils ? "none (the instance offers no VK_EXT_debug_utils)"
                              : o->labels     ? "pipelines named by phase, phase calls labelled "
                                                "(VK_EXT_debug_utils)"
                                              : "pipelines named by phase (VK_EXT_debug_utils)");
    printf("memory:    %.1f MiB (weights %.1f, KV cache %.1f for %u positions, activations "
           "%.1f)\n",
           (double)plan.total / 1048576.0, (double)plan.weights / 1048576.0,
           (double)plan.kv_cache / 1048576.0, o->ctx, (double)plan.activations / 1048576.0);
    fflush(stdout);

    s->hooks = dec_span_hooks(&glue, s->prof, o->host_spans);
    dec_config cfg = {.preset = p,
                      .ctx = o->ctx,
                      .seed = o->seed,
                      .profile = o->mode,
                      .prof = s->prof,
                      .hooks = &s->hooks,
                      .debug_utils = s->debug_utils,
                      .labels = o->labels,
                      .scope_dispatches = o->scope_dispatches};
    s->t0 = now_s();
    if (s->tty) {
        fprintf(stderr, "generating weights on the GPU...");
    }
    int cr = dec_create(&s->dev, &cfg, &s->eng, err, sizeof err);
    if (s->tty) {
        fprintf(stderr, "\r\033[K");
    }
    if (cr != 0) {
        fprintf(stderr, "vkprof decode: %s\n", err);
        return 1;
    }
    s->t1 = now_s();
    double tprev = s->t1;
    uint32_t token = 1; /* a BOS-like start token */
    for (uint32_t i = 0; i < o->tokens; i++) {
        uint32_t next = 0;
        if (dec_step(s->eng, token, &next, err, sizeof err) != 0) {
            fprintf(stderr, "%svkprof decode: token %u: %s\n", s->tty ? "\n" : "", i, err);
            return 1;
        }
        s->ids[i] = next;
        token = next;
        double tnow = now_s();
        s->token_s[i] = tnow - tprev;
        tprev = tnow;
        if (s->tty) {
            double el = now_s() - s->t1;
            fprintf(stderr, "\rtoken %u/%u  %.2f tokens/s", i + 1, o->tokens, (i + 1) / el);
        }
    }
    s->t2 = now_s();
    if (s->tty) {
        fprintf(stderr, "\r\033[K");
    }
    return 0;
}

/* What the run gave: throughput, the phase table, the host spans, the trace
 * and the JSON summary. 0, or 1 with the reason on stderr. */
static int decode_report(const decode_opts *o, decode_session *s)
{
    uint32_t tokens = o->tokens;
    run_result r = {.p = o->p,
                    .device = s->dev.props.deviceName,
                    .ctx = o->ctx,
                    .seed = o->seed,
                    .tokens = tokens,
                    .first_token = 1,
                    .profile = o->profile,
                    .scope = o->scope,
                    .seconds = s->t2 - s->t1,
                    .token_ms_p50 = 1e3 * quantile_s(s->token_s, tokens, 0.50),
                    .token_ms_p99 = 1e3 * quantile_s(s->token_s, tokens, 0.99),
                    .init_seconds = s->t1 - s->t0,
                    .tokens_per_s = tokens / (s->t2 - s->t1),
                    .ids = s->ids,
                    .peak_gbps = o->peak,
                    .device_bytes = dec_allocated_bytes(s->eng)};
    uint32_t phases[DEC_MAX_PHASES];
    uint32_t nphases = dec_preset_phases(o->p, phases);
    for (uint32_t k = 0; k < nphases; k++) {
        const dec_phase_cost *c = dec_costs(s->eng, phases[k]);
        r.bytes_per_token += c->bytes / tokens;
        r.flops_per_token += c->flops / tokens;
    }
    printf("init:      %.2f s (pipelines, weights generated on the GPU, %.1f MiB allocated)\n",
           r.init_seconds, (double)r.device_bytes / 1048576.0);
    printf("tokens:    %u in %.3f s = %.2f tokens/s (%.3f ms/token, positions 0..%u)\n", tokens,
           r.seconds, r.tokens_per_s, 1e3 * r.seconds / tokens, tokens - 1);
    if (o->mode == DEC_PROFILE_GPU) {
        printf("           --profile gpu submits and waits once per phase call (2-slot mode): "
               "this throughput\n           is serialised and NOT a serving figure; run "
               "--profile off for that\n");
    } else {
        printf("effective: %.2f GB/s, %.2f GFLOP/s (bytes and FLOPs per token / token time)\n",
               r.bytes_per_token * r.tokens_per_s * 1e-9,
               r.flops_per_token * r.tokens_per_s * 1e-9);
    }
    printf("token ids:");
    for (uint32_t i = 0; i < tokens && i < SHOW_TOKENS; i++) {
        printf(" %u", s->ids[i]);
    }
    printf("%s\n", tokens > SHOW_TOKENS ? " ..." : "");

    if (phase_report(s->prof, s->eng, o->mode, o->timed, tokens, o->peak, &r, &s->snap) != 0) {
        return 1;
    }
    if (o->host_spans) {
        host_report(s->prof, tokens, s->t2 - s->t1);
    }
    if (o->trace != NULL) {
        if (vkprof_trace_write(s->prof, o->trace) != VKPROF_OK) {
            fprintf(stderr, "vkprof decode: the trace could not be written to %s\n", o->trace);
            return 1;
        }
        uint64_t kept = 0, dropped = 0;
        vkprof_trace_counts(s->prof, &kept, &dropped);
        printf("trace:     %s (%llu events%s; open in ui.perfetto.dev or chrome://tracing, "
               "or summarise with: vkprof report %s)\n",
               o->trace, (unsigned long long)kept,
               dropped ? ", SOME DROPPED: see its metadata" : "", o->trace);
    }
    if (o->json != NULL) {
        if (write_json(o->json, &r) != 0) {
            return 1;
        }
        printf("json:      %s\n", o->json);
    }
    return 0;
}

static void decode_close(decode_session *s)
{
    dec_destroy(s->eng);
    vkprof_destroy(s->prof);
    vku_device_destroy(&s->dev);
    if (s->inst_ok) {
        vku_instance_destroy(&s->inst);
    }
    free(s->ids);
    free(s->token_s);
    free(s->snap);
}

int vkprof_cmd_decode(int argc, char **argv)
{
    decode_opts o;
    int st = decode_parse(argc, argv, &o);
    if (st != DECODE_GO) {
        return st;
    }
    decode_session s;
    memset(&s, 0, sizeof s);
    int rc = decode_run(&o, &s);
    if (rc == 0 && !s.ranks_done) {
        rc = decode_report(&o, &s);
    }
    decode_close(&s);
    return rc;
}
