/* `vkprof bench`: what profiling costs. The decode workload runs side by
 * side in one process on one device (one engine, its weights kept, switched
 * between modes with dec_reconfigure) under each profiling configuration, in
 * interleaved rounds; each figure is compared with the unprofiled run of the
 * same round. Plus the host costs (an off call site, a span, the clock) and
 * the trace export of a full 1M-event store. See docs/performance.md. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_opts.h"
#include "outfile.h"
#include "decode.h"
#include "decode_spans.h"
#include "vkutil.h"

enum {
    C_OFF,
    C_HOST,
    C_2SLOT,
    C_RING,
    C_RING_SHARED,
    C_RING_SAMPLED,
    C_BASE,
    C_BASE_SHARED,
    C_COUNT
};

static const struct {
    const char *name;
    const char *what;
} cinfo[C_COUNT] = {
    [C_OFF] = {"off", "no profiling: the token in one command buffer, one submit + fence wait"},
    [C_HOST] = {"host", "host spans only (VKPROF_HOST_ALL): token/record/layer/submit_wait "
                        "sections, the per-token report every 8 tokens (to a silent logger)"},
    [C_2SLOT] = {"2slot", "vkprof 2-slot: one submit + fence wait + resolve per phase call"},
    [C_RING] = {"ring", "vkprof ring, every token: 2 stamps per phase call, one submit per "
                        "token, vkprof_collect after the fence"},
    [C_RING_SHARED] = {"ring-shared", "vkprof ring with shared_boundaries: 1 stamp per "
                                      "boundary (a phase call begins at the previous end)"},
    [C_RING_SAMPLED] = {"ring-sampled", "vkprof ring with shared boundaries, every phase call "
                                        "of 1 token in N (sample_every), nothing recorded in "
                                        "the others"},
    [C_BASE] = {"baseline", "bare Vulkan: the ring's stamps without the library (own pool, host "
                            "reset, one vkGetQueryPoolResults(WAIT) per token)"},
    [C_BASE_SHARED] = {"baseline-shared", "bare Vulkan with one stamp per boundary, as "
                                          "ring-shared"},
};

#define MAX_PHASES 32u

typedef struct bconf {
    dec_profile mode;
    vkprof_context prof; /* NULL: off and the baselines */
    dec_hooks hooks;
    double *tps;   /* per round */
    double *ratio; /* per round, against off of the same round */
    double tps_med, ratio_med, ratio_min, ratio_max;
    double stamps_per_token;
    double cost_per_stamp_ns; /* median over rounds of (token time - off) / stamps */
    bool has_phases;
    double phase_ns_per_token[VKPROF_PHASE_DEFAULT_COUNT]; /* per timed token */
    uint64_t phase_count[VKPROF_PHASE_DEFAULT_COUNT];
    uint64_t timed_tokens;
    uint64_t bl_ns[VKPROF_PHASE_DEFAULT_COUNT], bl_count[VKPROF_PHASE_DEFAULT_COUNT];
    uint64_t bl_stamps;
    vkprof_timing_stats ts;
    vkprof_error_counts ec;
} bconf;

typedef struct host_costs {
    uint64_t off_iters, span_iters, clock_iters;
    double off_callsite_ns, empty_loop_ns, span_ns, clock_ns;
    /* trace export */
    uint32_t trace_capacity;
    uint64_t trace_recorded, trace_dropped;
    double fill_ns_per_span, write_s, events_per_s;
    long long file_bytes;
    long long rss_before, rss_after_fill, hwm_after_write; /* bytes; -1 unknown */
} host_costs;

/* ---- small helpers ----------------------------------------------------------- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* Median of n values (not modified); NAN for none. */
static double median(const double *v, uint32_t n)
{
    if (n == 0) {
        return NAN;
    }
    double *c = malloc(n * sizeof *c);
    if (c == NULL) {
        return NAN;
    }
    memcpy(c, v, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_double);
    double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}

static void min_max(const double *v, uint32_t n, double *lo, double *hi)
{
    *lo = NAN;
    *hi = NAN;
    for (uint32_t i = 0; i < n; i++) {
        if (i == 0 || v[i] < *lo) {
            *lo = v[i];
        }
        if (i == 0 || v[i] > *hi) {
            *hi = v[i];
        }
    }
}

/* A field of /proc/self/status in bytes ("VmRSS", "VmHWM"), or -1. */
static long long proc_status_bytes(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) {
        return -1;
    }
    char line[256];
    long long v = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            long long kb = 0;
            if (sscanf(line + n + 1, "%lld", &kb) == 1) {
                v = kb * 1024;
            }
            break;
        }
    }
    fclose(f);
    return v;
}

/* ---- host spans through the engine's hooks (as `vkprof decode` wires them) --- */

static void on_step_ctx(void *user, uint32_t index, uint32_t token)
{
    (void)index;
    (void)token;
    vkprof_step((vkprof_context)user);
}

/* Warnings and errors to stderr; the per-token report is formatted (its cost
 * is part of host profiling) and dropped. */
static void on_log(void *user, vkprof_log_level level, vkprof_result code, const char *msg)
{
    (void)user;
    if (level == VKPROF_LOG_REPORT) {
        return;
    }
    fprintf(stderr, "vkprof %s: %s (%s)\n",
            level == VKPROF_LOG_ERROR  ? "error"
            : level == VKPROF_LOG_WARN ? "warning"
                                       : "info",
            msg, vkprof_result_name(code));
}

/* ---- host costs ---------------------------------------------------------------- */

/* Keeps `p` opaque to the optimiser: the load and the test of the call site
 * happen in every iteration, nothing is hoisted out of the loop. */
#if defined(__GNUC__) || defined(__clang__)
#define OPAQUE(p) __asm__ __volatile__("" : "+r"(p))
#define CONSUME(v) __asm__ __volatile__("" : : "r"(v))
#else
#define OPAQUE(p) ((void)0)
#define CONSUME(v) ((void)(v))
#endif

static double time_off_callsite(vkprof_context ctx, uint64_t iters, double *empty_ns)
{
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    unsigned acc = 0;
    /* the loop alone, with the same barrier */
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < iters; i++) {
        vkprof_context c = ctx;
        OPAQUE(c);
        CONSUME(c);
    }
    uint64_t t1 = now_ns();
    for (uint64_t i = 0; i < iters; i++) {
        vkprof_context c = ctx;
        OPAQUE(c);
        vkprof_result r = VKPROF_BEGIN(c, cmd, VKPROF_PHASE_ATTENTION);
        acc += (unsigned)r;
    }
    uint64_t t2 = now_ns();
    CONSUME(acc);
    *empty_ns = (double)(t1 - t0) / (double)iters;
    return (double)(t2 - t1) / (double)iters;
}

static double time_spans(vkprof_context ctx, uint64_t iters)
{
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < iters; i++) {
        vkprof_span s = vkprof_span_start(ctx, VKPROF_BUCKET_ATTENTION);
        vkprof_span_end(ctx, &s);
    }
    return (double)(now_ns() - t0) / (double)iters;
}

static double time_clock(uint64_t iters)
{
    uint64_t t0 = now_ns(), acc = 0;
    for (uint64_t i = 0; i < iters; i++) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        acc += (uint64_t)ts.tv_nsec;
    }
    CONSUME(acc);
    return (double)(now_ns() - t0) / (double)iters;
}

/* desc for a context of this bench: quiet, no trace file of its own */
static vkprof_context_desc base_desc(const vku_instance *inst, const vku_device *dev)
{
    vkprof_context_desc d = vku_vkprof_desc(inst, dev);
    d.enable = VKPROF_ENABLE_OFF;
    d.host_level = VKPROF_HOST_OFF;
    d.queue = dev->queue;
    d.trace_path = "";
    d.log = on_log;
    return d;
}

static int measure_host(const vku_instance *inst, const vku_device *dev, host_costs *h)
{
    /* (e) an off call site, a span, the clock */
    vkprof_context_desc d = base_desc(inst, dev);
    vkprof_context off = NULL, on = NULL;
    if (vkprof_create(&d, &off) != VKPROF_OK) {
        fprintf(stderr, "vkprof bench: vkprof_create failed\n");
        return 1;
    }
    d.host_level = VKPROF_HOST_ALL;
    if (vkprof_create(&d, &on) != VKPROF_OK) {
        fprintf(stderr, "vkprof bench: vkprof_create failed\n");
        vkprof_destroy(off);
        return 1;
    }
    h->off_callsite_ns = time_off_callsite(off, h->off_iters, &h->empty_loop_ns);
    h->span_ns = time_spans(on, h->span_iters);
    h->clock_ns = time_clock(h->clock_iters);
    vkprof_destroy(off);
    vkprof_destroy(on);

    /* (f) fill a store of `trace_capacity` events with spans and export it */
    d.trace_capacity = h->trace_capacity;
    vkprof_context tr = NULL;
    if (vkprof_create(&d, &tr) != VKPROF_OK) {
        fprintf(stderr, "vkprof bench: vkprof_create failed\n");
        return 1;
    }
    /* restart the peak-RSS count where the kernel allows it (VmHWM := VmRSS) */
    FILE *cr = fopen("/proc/self/clear_refs", "w");
    if (cr != NULL) {
        fputs("5", cr);
        fclose(cr);
    }
    h->rss_before = proc_status_bytes("VmRSS");
    if (vkprof_trace_start(tr, h->trace_capacity) != VKPROF_OK) {
        fprintf(stderr, "vkprof bench: cannot start a trace of %u events\n", h->trace_capacity);
        vkprof_destroy(tr);
        return 1;
    }
    uint64_t t0 = now_ns();
    for (uint32_t i = 0; i < h->trace_capacity; i++) {
        vkprof_span s = vkprof_span_start(tr, VKPROF_BUCKET_ATTENTION);
        vkprof_span_end(tr, &s);
    }
    uint64_t t1 = now_ns();
    h->fill_ns_per_span = (double)(t1 - t0) / (double)h->trace_capacity;
    vkprof_trace_counts(tr, &h->trace_recorded, &h->trace_dropped);
    h->rss_after_fill = proc_status_bytes("VmRSS");

    const char *tmpdir = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/vkprof-bench.XXXXXX",
             tmpdir != NULL && tmpdir[0] != '\0' ? tmpdir : "/tmp");
    int rc = 1;
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "vkprof bench: cannot create a folder %s: %s\n", dir, strerror(errno));
        vkprof_destroy(tr);
        return 1;
    }
    char path[600];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    uint64_t t2 = now_ns();
    vkprof_result wr = vkprof_trace_write(tr, path);
    uint64_t t3 = now_ns();
    h->hwm_after_write = proc_status_bytes("VmHWM");
    if (wr != VKPROF_OK) {
        fprintf(stderr, "vkprof bench: vkprof_trace_write(%s): %s\n", path, vkprof_result_text(wr));
    } else {
        struct stat st;
        h->file_bytes = stat(path, &st) == 0 ? (long long)st.st_size : -1;
        h->write_s = (double)(t3 - t2) * 1e-9;
        h->events_per_s = h->write_s > 0 ? (double)h->trace_recorded / h->write_s : 0.0;
        rc = 0;
    }
    remove(path);
    rmdir(dir);
    vkprof_destroy(tr);
    return rc;
}

/* ---- the decode rounds ---------------------------------------------------------- */

typedef struct bench {
    dec_engine *eng;
    uint32_t tokens, repeats;
    uint32_t *ref_ids, *ids;
    uint32_t mismatches;
    bool have_ref; /* ref_ids hold the unprofiled warm-up's tokens */
    char err[512];
} bench;

/* One run of `tokens` tokens from position 0; tokens/s in *tps. */
static int run_once(bench *b, bconf *c, const char *name, double *tps)
{
    if (dec_reconfigure(b->eng, c->mode, c->prof, &c->hooks, b->err, sizeof b->err) != 0) {
        fprintf(stderr, "vkprof bench: %s: %s\n", name, b->err);
        return 1;
    }
    uint32_t tok = 1; /* a BOS-like start token */
    uint64_t t0 = now_ns();
    for (uint32_t i = 0; i < b->tokens; i++) {
        uint32_t next = 0;
        if (dec_step(b->eng, tok, &next, b->err, sizeof b->err) != 0) {
            fprintf(stderr, "vkprof bench: %s, token %u: %s\n", name, i, b->err);
            return 1;
        }
        b->ids[i] = next;
        tok = next;
    }
    uint64_t t1 = now_ns();
    *tps = (double)b->tokens / ((double)(t1 - t0) * 1e-9);
    for (uint32_t i = 0; i < b->tokens && b->have_ref; i++) {
        if (b->ids[i] != b->ref_ids[i]) {
            fprintf(stderr, "vkprof bench: %s: token %u is %u, unprofiled %u\n", name, i, b->ids[i],
                    b->ref_ids[i]);
            b->mismatches++;
            break;
        }
    }
    return 0;
}

/* Max |share difference| over the phases, in percentage points; NAN when
 * either side has no time. */
static double split_diff(const double *a, const double *b)
{
    double sa = 0, sb = 0, worst = 0;
    for (uint32_t k = 0; k < VKPROF_PHASE_DEFAULT_COUNT; k++) {
        sa += a[k];
        sb += b[k];
    }
    if (!(sa > 0) || !(sb > 0)) {
        return NAN;
    }
    for (uint32_t k = 0; k < VKPROF_PHASE_DEFAULT_COUNT; k++) {
        worst = fmax(worst, fabs(100.0 * a[k] / sa - 100.0 * b[k] / sb));
    }
    return worst;
}

static double sum_phases(const double *a)
{
    double s = 0;
    for (uint32_t k = 0; k < VKPROF_PHASE_DEFAULT_COUNT; k++) {
        s += a[k];
    }
    return s;
}

/* ---- output ---------------------------------------------------------------------- */

static void jnum(FILE *f, double v)
{
    if (isfinite(v)) {
        fprintf(f, "%.6g", v);
    } else {
        fputs("null", f);
    }
}

typedef struct summary {
    const dec_preset *p;
    const char *device;
    uint32_t tokens, repeats, sample_every, calls_per_token;
    bconf *c;
    const host_costs *h;
    double ring_vs_base_med, ring_vs_base_min, ring_vs_base_max;
    double rings_vs_bases_med, rings_vs_bases_min, rings_vs_bases_max;
    double split_ring_sampled, split_rings_sampled, split_ring_2slot, split_ring_base,
        split_rings_bases;
    double ring_over_base_time, rings_over_bases_time;
    bool tokens_identical;
} summary;

static void write_phase_obj(FILE *f, const double *ns)
{
    static const char *names[] = {
#define VKPROF_X_(id, name) name,
        VKPROF_DEFAULT_PHASES(VKPROF_X_)
#undef VKPROF_X_
    };
    double s = sum_phases(ns);
    fputc('{', f);
    bool first = true;
    for (uint32_t k = 0; k < DEC_NUM_PHASES; k++) {
        uint32_t id = dec_phase_ids[k];
        fprintf(f, "%s\"%s\": {\"us_per_token\": ", first ? "" : ", ", names[id]);
        jnum(f, ns[id] * 1e-3);
        fprintf(f, ", \"percent\": ");
        jnum(f, s > 0 ? 100.0 * ns[id] / s : NAN);
        fputc('}', f);
        first = false;
    }
    fputc('}', f);
}

static int write_json(const char *path, const summary *s)
{
    outfile o;
    if (outfile_open(&o, "vkprof bench", path) != 0) {
        return 1;
    }
    FILE *f = o.f;
    const host_costs *h = s->h;
    fprintf(f, "{\n  \"tool\": \"vkprof bench\",\n  \"preset\": ");
    json_put_string(f, s->p->name);
    fprintf(f, ",\n  \"device\": ");
    json_put_string(f, s->device);
    fprintf(f,
            ",\n  \"tokens_per_run\": %u,\n  \"rounds\": %u,\n  \"sample_every\": %u,\n"
            "  \"phase_calls_per_token\": %u,\n  \"tokens_identical\": %s,\n"
            "  \"ratio_definition\": \"tokens/s of the configuration over tokens/s of the "
            "unprofiled run of the same round; median, min and max over rounds; > 1 is faster "
            "than unprofiled (noise)\",\n  \"configurations\": [",
            s->tokens, s->repeats, s->sample_every, s->calls_per_token,
            s->tokens_identical ? "true" : "false");
    for (uint32_t c = 0; c < C_COUNT; c++) {
        const bconf *b = &s->c[c];
        fprintf(f, "%s\n    {\"name\": \"%s\", \"what\": ", c ? "," : "", cinfo[c].name);
        json_put_string(f, cinfo[c].what);
        fprintf(f, ", \"tokens_per_s_median\": ");
        jnum(f, b->tps_med);
        fprintf(f, ", \"ms_per_token_median\": ");
        jnum(f, 1e3 / b->tps_med);
        fprintf(f, ", \"ratio_median\": ");
        jnum(f, b->ratio_med);
        fprintf(f, ", \"ratio_min\": ");
        jnum(f, b->ratio_min);
        fprintf(f, ", \"ratio_max\": ");
        jnum(f, b->ratio_max);
        fprintf(f, ", \"stamps_per_token\": ");
        jnum(f, b->stamps_per_token);
        fprintf(f, ", \"gpu_cost_per_stamp_ns\": ");
        jnum(f, b->stamps_per_token > 0 ? b->cost_per_stamp_ns : NAN);
        fprintf(f, ", \"tokens_per_s\": [");
        for (uint32_t r = 0; r < s->repeats; r++) {
            fprintf(f, "%s", r ? ", " : "");
            jnum(f, b->tps[r]);
        }
        fprintf(f, "], \"ratios\": [");
        for (uint32_t r = 0; r < s->repeats; r++) {
            fprintf(f, "%s", r ? ", " : "");
            jnum(f, b->ratio[r]);
        }
        fputc(']', f);
        if (b->prof != NULL && b->mode != DEC_PROFILE_OFF) {
            fprintf(
                f,
                ", \"timing\": {\"timed_steps\": %llu, \"scopes_recorded\": %llu, "
                "\"scopes_collected\": %llu, \"scopes_dropped\": %llu, "
                "\"stamps_written\": %llu, \"shared_stamps\": %llu, \"host_reset\": %s, "
                "\"vulkan_errors\": %llu, \"not_ready\": %llu}",
                (unsigned long long)b->ts.timed_steps, (unsigned long long)b->ts.scopes_recorded,
                (unsigned long long)b->ts.scopes_collected,
                (unsigned long long)b->ts.scopes_dropped, (unsigned long long)b->ts.stamps_written,
                (unsigned long long)b->ts.shared_stamps, b->ts.host_reset ? "true" : "false",
                (unsigned long long)b->ec.vulkan_errors, (unsigned long long)b->ec.not_ready);
        }
        if (b->has_phases) {
            fprintf(f,
                    ", \"timed_tokens\": %llu, \"phases\": ", (unsigned long long)b->timed_tokens);
            write_phase_obj(f, b->phase_ns_per_token);
        }
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n  \"library_over_floor\": {\"ring_vs_baseline_ratio_median\": ");
    jnum(f, s->ring_vs_base_med);
    fprintf(f, ", \"ring_vs_baseline_ratio_min\": ");
    jnum(f, s->ring_vs_base_min);
    fprintf(f, ", \"ring_vs_baseline_ratio_max\": ");
    jnum(f, s->ring_vs_base_max);
    fprintf(f, ", \"ring_shared_vs_baseline_shared_ratio_median\": ");
    jnum(f, s->rings_vs_bases_med);
    fprintf(f, ", \"ring_shared_vs_baseline_shared_ratio_min\": ");
    jnum(f, s->rings_vs_bases_min);
    fprintf(f, ", \"ring_shared_vs_baseline_shared_ratio_max\": ");
    jnum(f, s->rings_vs_bases_max);
    fprintf(f, "},\n  \"split_agreement_pp\": {\"ring_vs_ring_sampled\": ");
    jnum(f, s->split_ring_sampled);
    fprintf(f, ", \"ring_shared_vs_ring_sampled\": ");
    jnum(f, s->split_rings_sampled);
    fprintf(f, ", \"ring_vs_2slot\": ");
    jnum(f, s->split_ring_2slot);
    fprintf(f, ", \"ring_vs_baseline\": ");
    jnum(f, s->split_ring_base);
    fprintf(f, ", \"ring_shared_vs_baseline_shared\": ");
    jnum(f, s->split_rings_bases);
    fprintf(f, ", \"ring_over_baseline_phase_time\": ");
    jnum(f, s->ring_over_base_time);
    fprintf(f, ", \"ring_shared_over_baseline_shared_phase_time\": ");
    jnum(f, s->rings_over_bases_time);
    fprintf(f, "},\n  \"host\": {\"off_call_site_ns\": ");
    jnum(f, h->off_callsite_ns);
    fprintf(f, ", \"empty_loop_ns\": ");
    jnum(f, h->empty_loop_ns);
    fprintf(f, ", \"off_call_site_iterations\": %llu, \"span_begin_end_ns\": ",
            (unsigned long long)h->off_iters);
    jnum(f, h->span_ns);
    fprintf(f, ", \"span_iterations\": %llu, \"clock_gettime_ns\": ",
            (unsigned long long)h->span_iters);
    jnum(f, h->clock_ns);
    fprintf(f, ", \"span_begin_end_tracing_ns\": ");
    jnum(f, h->fill_ns_per_span);
    fprintf(f,
            "},\n  \"trace_export\": {\"capacity\": %u, \"events\": %llu, \"dropped\": %llu, "
            "\"write_seconds\": ",
            h->trace_capacity, (unsigned long long)h->trace_recorded,
            (unsigned long long)h->trace_dropped);
    jnum(f, h->write_s);
    fprintf(f, ", \"events_per_s\": ");
    jnum(f, h->events_per_s);
    fprintf(f,
            ", \"file_bytes\": %lld, \"rss_before_bytes\": %lld, "
            "\"rss_after_fill_bytes\": %lld, \"peak_rss_after_write_bytes\": %lld, "
            "\"store_bytes\": ",
            h->file_bytes, h->rss_before, h->rss_after_fill, h->hwm_after_write);
    jnum(f, h->rss_before >= 0 && h->rss_after_fill >= 0
                ? (double)(h->rss_after_fill - h->rss_before)
                : NAN);
    fprintf(f, ", \"peak_increase_bytes\": ");
    jnum(f, h->rss_before >= 0 && h->hwm_after_write >= 0
                ? (double)(h->hwm_after_write - h->rss_before)
                : NAN);
    fprintf(f, "},\n  \"off_vulkan_commands\": {\"commands\": 0, \"proof\": \"test_sim counts "
               "every vkCmd* through an interposed table while profiling is off: none\"}\n}\n");
    return outfile_commit(&o);
}

static void print_report(const summary *s)
{
    const host_costs *h = s->h;
    printf("\nDecode throughput per configuration (%u tokens per run from position 0, %u "
           "interleaved rounds;\nratio = tokens/s over the unprofiled run of the same round, "
           "median [min, max]; > 1 is noise):\n",
           s->tokens, s->repeats);
    printf("  %-16s %11s %11s %21s %12s %13s\n", "config", "tokens/s", "ms/token", "ratio",
           "stamps/token", "ns/stamp(GPU)");
    for (uint32_t c = 0; c < C_COUNT; c++) {
        const bconf *b = &s->c[c];
        char range[64];
        snprintf(range, sizeof range, "%.3f [%.3f, %.3f]", b->ratio_med, b->ratio_min,
                 b->ratio_max);
        char cost[32] = "-";
        if (b->stamps_per_token > 0 && isfinite(b->cost_per_stamp_ns)) {
            snprintf(cost, sizeof cost, "%.0f", b->cost_per_stamp_ns);
        }
        printf("  %-16s %11.2f %11.3f %21s %12.1f %13s\n", cinfo[c].name, b->tps_med,
               1e3 / b->tps_med, range, b->stamps_per_token, cost);
    }
    printf("  ns/stamp(GPU): (token time - unprofiled token time) / stamps per token, median "
           "over rounds\n");
    printf("\nWhat each configuration is:\n");
    for (uint32_t c = 0; c < C_COUNT; c++) {
        printf("  %-16s %s\n", cinfo[c].name, cinfo[c].what);
    }
    printf("\nThe library over the bare-Vulkan floor (same stamps; tokens/s ratio, median "
           "[min, max]; 1 = no cost above the floor):\n");
    printf("  ring / baseline                %.3f [%.3f, %.3f]\n", s->ring_vs_base_med,
           s->ring_vs_base_min, s->ring_vs_base_max);
    printf("  ring-shared / baseline-shared  %.3f [%.3f, %.3f]\n", s->rings_vs_bases_med,
           s->rings_vs_bases_min, s->rings_vs_bases_max);
    printf("\nPer-phase split agreement (max |share difference| over the phases, percentage "
           "points):\n");
    printf("  ring vs ring-sampled (%llu of %llu tokens timed)  %.2f pp\n",
           (unsigned long long)s->c[C_RING_SAMPLED].timed_tokens,
           (unsigned long long)s->c[C_RING].timed_tokens, s->split_ring_sampled);
    printf("  ring-shared vs ring-sampled (the same stamps, every token vs 1 in N)  %.2f pp\n",
           s->split_rings_sampled);
    printf("  ring vs 2slot                  %.2f pp\n", s->split_ring_2slot);
    printf("  ring vs baseline               %.2f pp (sum of phase times: ring / baseline = "
           "%.3f)\n",
           s->split_ring_base, s->ring_over_base_time);
    printf("  ring-shared vs baseline-shared %.2f pp (sum: %.3f)\n", s->split_rings_bases,
           s->rings_over_bases_time);
    printf("  %-12s %10s %10s %10s %10s %12s %16s   (us per timed token)\n", "phase", "ring",
           "sampled", "2slot", "baseline", "ring-shared", "baseline-shared");
    for (uint32_t k = 0; k < DEC_NUM_PHASES; k++) {
        uint32_t id = dec_phase_ids[k];
        printf("  %-12s %10.1f %10.1f %10.1f %10.1f %12.1f %16.1f\n",
               vkprof_phase_name(s->c[C_RING].prof, id), s->c[C_RING].phase_ns_per_token[id] * 1e-3,
               s->c[C_RING_SAMPLED].phase_ns_per_token[id] * 1e-3,
               s->c[C_2SLOT].phase_ns_per_token[id] * 1e-3,
               s->c[C_BASE].phase_ns_per_token[id] * 1e-3,
               s->c[C_RING_SHARED].phase_ns_per_token[id] * 1e-3,
               s->c[C_BASE_SHARED].phase_ns_per_token[id] * 1e-3);
    }
    printf("\nHost costs:\n");
    printf("  off call site (VKPROF_BEGIN, inactive context)  %.2f ns per call (%llu calls; "
           "the loop alone %.2f ns)\n",
           h->off_callsite_ns, (unsigned long long)h->off_iters, h->empty_loop_ns);
    printf("  span begin + end (VKPROF_HOST_ALL)              %.1f ns\n", h->span_ns);
    printf("  span begin + end while tracing                  %.1f ns\n", h->fill_ns_per_span);
    printf("  clock_gettime(CLOCK_MONOTONIC) alone            %.1f ns\n", h->clock_ns);
    printf("\nTrace export (%u-event store filled with spans):\n", h->trace_capacity);
    printf("  %llu events (%llu dropped) written in %.3f s = %.2f M events/s, %.1f MiB file\n",
           (unsigned long long)h->trace_recorded, (unsigned long long)h->trace_dropped, h->write_s,
           h->events_per_s * 1e-6, (double)h->file_bytes / 1048576.0);
    if (h->rss_before >= 0 && h->rss_after_fill >= 0 && h->hwm_after_write >= 0) {
        printf("  memory: store %.1f MiB (RSS after filling - before), peak %.1f MiB above "
               "the start with the export (VmHWM)\n",
               (double)(h->rss_after_fill - h->rss_before) / 1048576.0,
               (double)(h->hwm_after_write - h->rss_before) / 1048576.0);
    }
    printf("\nOff = 0 Vulkan commands: proved by the tests (test_sim counts every vkCmd* "
           "through an interposed table while off).\n");
    printf("Tokens: %s\n", s->tokens_identical ? "identical in every configuration and run"
                                               : "DIFFER between configurations");
}

/* ---- the command ------------------------------------------------------------------ */

static void bench_usage(FILE *f)
{
    fprintf(f,
            "usage: vkprof bench [--preset tiny|llama-1b|llama-8b] [--tokens N] [--repeats R]\n"
            "                    [--device INDEX|NAME] [--sample-every N] [--json FILE]\n"
            "                    [--host-iterations N] [--trace-events N]\n"
            "  What profiling costs: the decode workload under each profiling configuration\n"
            "  (off, host spans, 2-slot, ring, ring with shared boundaries, ring sampled 1 in\n"
            "  N, and the bare-Vulkan baseline with the ring's stamps, with and without\n"
            "  shared boundaries), one engine on one device, in R interleaved rounds after\n"
            "  one warm-up run each; every figure is compared with the unprofiled run of the\n"
            "  same round. Then the host costs (an off call site, a span, the clock) and\n"
            "  the export of a full trace store.\n"
            "  Defaults: tiny, 32 tokens, 5 rounds, sample every %u, 100000000 host\n"
            "  iterations, 1048576 trace events.\n",
            VKPROF_DEFAULT_SAMPLE_EVERY);
}

int vkprof_cmd_bench(int argc, char **argv)
{
    const char *preset_name = "tiny", *device = NULL, *json = NULL;
    uint32_t tokens = 32, repeats = 5, sample_every = VKPROF_DEFAULT_SAMPLE_EVERY;
    uint32_t host_iters = 100000000u, trace_events = 1u << 20;
    const cli_opt opts[] = {
        {"--preset", CLI_STR, .str = &preset_name},
        {"--tokens", CLI_U32, .u32 = &tokens, .min = 1, .max = 1u << 20},
        {"--repeats", CLI_U32, .u32 = &repeats, .min = 1, .max = 1000},
        {"--device", CLI_STR, .str = &device},
        {"--sample-every", CLI_U32, .u32 = &sample_every, .min = 1, .max = 1u << 20},
        {"--json", CLI_STR, .str = &json},
        {"--host-iterations", CLI_U32, .u32 = &host_iters, .min = 1000, .max = UINT32_MAX},
        {"--trace-events", CLI_U32, .u32 = &trace_events, .min = 1, .max = 1u << 24},
    };
    const cli_spec spec = {.tool = "vkprof bench",
                           .opts = opts,
                           .n_opts = sizeof opts / sizeof opts[0],
                           .usage = bench_usage};
    int parsed = cli_parse(&spec, argc, argv);
    if (parsed != CLI_OK) {
        return cli_exit_status(parsed);
    }
    const dec_preset *p = dec_find_preset(preset_name);
    if (p == NULL) {
        fprintf(stderr, "vkprof bench: unknown preset '%s' (known: %s)\n", preset_name,
                dec_preset_names());
        return 2;
    }
    if (tokens > p->default_ctx) {
        fprintf(stderr, "vkprof bench: --tokens %u exceeds the context of %s (%u)\n", tokens,
                p->name, p->default_ctx);
        return 2;
    }

    if (json != NULL) {
        /* fail now rather than after the whole run */
        outfile probe;
        if (outfile_open(&probe, "vkprof bench", json) != 0) {
            return 1;
        }
        outfile_abort(&probe);
    }

    vku_instance inst;
    if (vku_instance_create(&inst, false, "vkprof bench") != VK_SUCCESS) {
        return 1;
    }
    int rc = 1;
    vku_device dev;
    memset(&dev, 0, sizeof dev);
    bconf conf[C_COUNT];
    memset(conf, 0, sizeof conf);
    dec_span_glue glue;
    bench b = {.tokens = tokens, .repeats = repeats};
    host_costs h = {.off_iters = host_iters,
                    .span_iters = host_iters / 50 > 1000 ? host_iters / 50 : 1000,
                    .clock_iters = host_iters / 10 > 1000 ? host_iters / 10 : 1000,
                    .trace_capacity = trace_events,
                    .file_bytes = -1};
    char err[512] = "";
    b.ref_ids = calloc(tokens, sizeof *b.ref_ids);
    b.ids = calloc(tokens, sizeof *b.ids);
    bool oom = b.ref_ids == NULL || b.ids == NULL;
    for (uint32_t c = 0; c < C_COUNT; c++) {
        conf[c].tps = calloc(repeats, sizeof(double));
        conf[c].ratio = calloc(repeats, sizeof(double));
        oom = oom || conf[c].tps == NULL || conf[c].ratio == NULL;
    }
    if (oom) {
        fprintf(stderr, "vkprof bench: out of memory\n");
        goto done;
    }
    VkPhysicalDevice phys;
    if (vku_pick_device(inst.instance, device, &phys, err, sizeof err) != VK_SUCCESS) {
        fprintf(stderr, "vkprof bench: %s\n", err);
        goto done;
    }
    uint32_t fam = vku_compute_family(phys);
    if (fam == UINT32_MAX || vku_device_create(&dev, phys, fam) != VK_SUCCESS) {
        fprintf(stderr, "vkprof bench: cannot create a device with a compute queue\n");
        goto done;
    }
    printf("vkprof bench: preset %s on %s, %u tokens per run, %u rounds, sample every %u\n",
           p->name, dev.props.deviceName, tokens, repeats, sample_every);
    fflush(stdout);

    /* host costs first: the memory figures then see only the trace store */
    if (measure_host(&inst, &dev, &h) != 0) {
        goto done;
    }

    /* the contexts, one per profiled configuration */
    for (uint32_t c = 0; c < C_COUNT; c++) {
        bconf *k = &conf[c];
        vkprof_context_desc d = base_desc(&inst, &dev);
        k->mode = DEC_PROFILE_OFF;
        switch (c) {
        case C_HOST: d.host_level = VKPROF_HOST_ALL; break;
        case C_2SLOT:
            d.enable = VKPROF_ENABLE_ON;
            k->mode = DEC_PROFILE_GPU;
            break;
        case C_RING:
        case C_RING_SHARED:
        case C_RING_SAMPLED:
            d.enable = VKPROF_ENABLE_ON;
            d.timing_mode = VKPROF_TIMING_RING;
            /* the sampled ring stamps the cheapest way: one stamp per boundary */
            d.shared_boundaries = c == C_RING_SHARED || c == C_RING_SAMPLED;
            d.sample_every = c == C_RING_SAMPLED ? sample_every : 1;
            k->mode = DEC_PROFILE_RING;
            break;
        case C_BASE: k->mode = DEC_PROFILE_BASELINE; break;
        case C_BASE_SHARED: k->mode = DEC_PROFILE_BASELINE_SHARED; break;
        default: break;
        }
        if (c == C_OFF || c == C_BASE || c == C_BASE_SHARED) {
            continue;
        }
        vkprof_result pr = vkprof_create(&d, &k->prof);
        if (pr != VKPROF_OK) {
            fprintf(stderr, "vkprof bench: vkprof_create: %s\n", vkprof_result_text(pr));
            goto done;
        }
        if (d.enable == VKPROF_ENABLE_ON && !vkprof_active(k->prof)) {
            fprintf(stderr,
                    "vkprof bench: the compute queue of %s has no timestamps: "
                    "nothing to measure\n",
                    dev.props.deviceName);
            goto done;
        }
        if (c == C_HOST) {
            k->hooks = dec_span_hooks(&glue, k->prof, true);
        } else {
            k->hooks = (dec_hooks){.user = k->prof, .step = on_step_ctx};
        }
    }

    dec_config cfg = {.preset = p, .ctx = p->default_ctx, .seed = 1};
    int cr = dec_create(&dev, &cfg, &b.eng, err, sizeof err);
    if (cr != 0) {
        fprintf(stderr, "vkprof bench: %s\n", err);
        goto done;
    }

    /* warm-up: one run per configuration; the first gives the reference tokens */
    double tps;
    for (uint32_t c = 0; c < C_COUNT; c++) {
        if (run_once(&b, &conf[c], cinfo[c].name, &tps) != 0) {
            goto done;
        }
        if (c == C_OFF) {
            memcpy(b.ref_ids, b.ids, tokens * sizeof *b.ids);
            b.have_ref = true;
        }
        printf("warm-up   %-16s %9.2f tokens/s\n", cinfo[c].name, tps);
        fflush(stdout);
    }
    for (uint32_t c = 0; c < C_COUNT; c++) {
        if (conf[c].prof != NULL) {
            vkprof_reset(conf[c].prof); /* figures over the measured rounds only */
        }
    }
    /* interleaved rounds, the order rotated by one each round */
    for (uint32_t r = 0; r < repeats; r++) {
        for (uint32_t i = 0; i < C_COUNT; i++) {
            uint32_t c = (r + i) % C_COUNT;
            bconf *k = &conf[c];
            if (run_once(&b, k, cinfo[c].name, &k->tps[r]) != 0) {
                goto done;
            }
            if (k->mode == DEC_PROFILE_BASELINE || k->mode == DEC_PROFILE_BASELINE_SHARED) {
                for (uint32_t ph = 0; ph < VKPROF_PHASE_DEFAULT_COUNT; ph++) {
                    uint64_t cnt = 0, ns = 0;
                    dec_baseline_phase(b.eng, ph, &cnt, &ns);
                    k->bl_ns[ph] += ns;
                    k->bl_count[ph] += cnt;
                }
                k->bl_stamps += dec_baseline_stamps(b.eng);
            }
        }
        printf("round %u/%u:", r + 1, repeats);
        for (uint32_t c = 0; c < C_COUNT; c++) {
            conf[c].ratio[r] = conf[c].tps[r] / conf[C_OFF].tps[r];
            printf(" %s %.3f", cinfo[c].name, conf[c].ratio[r]);
        }
        printf("\n");
        fflush(stdout);
    }

    /* figures */
    uint64_t measured = (uint64_t)tokens * repeats;
    uint32_t calls = dec_calls_per_token(b.eng);
    for (uint32_t c = 0; c < C_COUNT; c++) {
        bconf *k = &conf[c];
        k->tps_med = median(k->tps, repeats);
        k->ratio_med = median(k->ratio, repeats);
        min_max(k->ratio, repeats, &k->ratio_min, &k->ratio_max);
        if (k->prof != NULL && k->mode != DEC_PROFILE_OFF) {
            vkprof_get_timing_stats(k->prof, &k->ts);
            vkprof_phase_stats st[MAX_PHASES];
            uint32_t n = 0;
            vkprof_snapshot(k->prof, st, MAX_PHASES, &n, &k->ec);
            k->timed_tokens = k->mode == DEC_PROFILE_RING ? k->ts.timed_steps : measured;
            uint64_t stamps = k->ts.stamps_written;
            uint64_t scopes = 0;
            for (uint32_t ph = 0; ph < VKPROF_PHASE_DEFAULT_COUNT && ph < n; ph++) {
                k->phase_count[ph] = st[ph].count;
                scopes += st[ph].count;
                k->phase_ns_per_token[ph] =
                    k->timed_tokens ? (double)st[ph].total_ns / (double)k->timed_tokens : 0.0;
            }
            if (stamps == 0) {
                stamps = 2 * scopes; /* a library that does not count them */
            }
            k->stamps_per_token = (double)stamps / (double)measured;
            k->has_phases = k->timed_tokens > 0;
        } else if (k->mode == DEC_PROFILE_BASELINE || k->mode == DEC_PROFILE_BASELINE_SHARED) {
            k->timed_tokens = measured;
            for (uint32_t ph = 0; ph < VKPROF_PHASE_DEFAULT_COUNT; ph++) {
                k->phase_count[ph] = k->bl_count[ph];
                k->phase_ns_per_token[ph] = (double)k->bl_ns[ph] / (double)measured;
            }
            k->stamps_per_token = (double)k->bl_stamps / (double)measured;
            k->has_phases = true;
        }
        if (k->stamps_per_token > 0) {
            double *cost = calloc(repeats, sizeof *cost);
            if (cost != NULL) {
                for (uint32_t r = 0; r < repeats; r++) {
                    cost[r] = (1e9 / k->tps[r] - 1e9 / conf[C_OFF].tps[r]) / k->stamps_per_token;
                }
                k->cost_per_stamp_ns = median(cost, repeats);
                free(cost);
            }
        }
    }
    summary s = {.p = p,
                 .device = dev.props.deviceName,
                 .tokens = tokens,
                 .repeats = repeats,
                 .sample_every = sample_every,
                 .calls_per_token = calls,
                 .c = conf,
                 .h = &h,
                 .tokens_identical = b.mismatches == 0};
    double *q = calloc(repeats, sizeof *q), *q2 = calloc(repeats, sizeof *q2);
    if (q == NULL || q2 == NULL) {
        free(q);
        free(q2);
        fprintf(stderr, "vkprof bench: out of memory\n");
        goto done;
    }
    for (uint32_t r = 0; r < repeats; r++) {
        q[r] = conf[C_RING].tps[r] / conf[C_BASE].tps[r];
        q2[r] = conf[C_RING_SHARED].tps[r] / conf[C_BASE_SHARED].tps[r];
    }
    s.ring_vs_base_med = median(q, repeats);
    min_max(q, repeats, &s.ring_vs_base_min, &s.ring_vs_base_max);
    s.rings_vs_bases_med = median(q2, repeats);
    min_max(q2, repeats, &s.rings_vs_bases_min, &s.rings_vs_bases_max);
    free(q);
    free(q2);
    s.split_ring_sampled =
        split_diff(conf[C_RING].phase_ns_per_token, conf[C_RING_SAMPLED].phase_ns_per_token);
    s.split_rings_sampled =
        split_diff(conf[C_RING_SHARED].phase_ns_per_token, conf[C_RING_SAMPLED].phase_ns_per_token);
    s.split_ring_2slot =
        split_diff(conf[C_RING].phase_ns_per_token, conf[C_2SLOT].phase_ns_per_token);
    s.split_ring_base =
        split_diff(conf[C_RING].phase_ns_per_token, conf[C_BASE].phase_ns_per_token);
    s.split_rings_bases =
        split_diff(conf[C_RING_SHARED].phase_ns_per_token, conf[C_BASE_SHARED].phase_ns_per_token);
    s.ring_over_base_time =
        sum_phases(conf[C_RING].phase_ns_per_token) / sum_phases(conf[C_BASE].phase_ns_per_token);
    s.rings_over_bases_time = sum_phases(conf[C_RING_SHARED].phase_ns_per_token) /
                              sum_phases(conf[C_BASE_SHARED].phase_ns_per_token);
    print_report(&s);
    for (uint32_t c = 0; c < C_COUNT; c++) {
        const bconf *k = &conf[c];
        if (k->ts.scopes_dropped || k->ec.vulkan_errors || k->ec.not_ready) {
            printf("  note: %s: %llu scopes dropped, %llu Vulkan errors, %llu not ready\n",
                   cinfo[c].name, (unsigned long long)k->ts.scopes_dropped,
                   (unsigned long long)k->ec.vulkan_errors, (unsigned long long)k->ec.not_ready);
        }
    }
    if (json != NULL) {
        if (write_json(json, &s) != 0) {
            goto done;
        }
        printf("json:      %s\n", json);
    }
    if (b.mismatches != 0) {
        fprintf(stderr, "vkprof bench: profiling changed the tokens in %u run(s)\n", b.mismatches);
        goto done;
    }
    rc = 0;

done:
    dec_destroy(b.eng);
    for (uint32_t c = 0; c < C_COUNT; c++) {
        vkprof_destroy(conf[c].prof);
        free(conf[c].tps);
        free(conf[c].ratio);
    }
    vku_device_destroy(&dev);
    vku_instance_destroy(&inst);
    free(b.ref_ids);
    free(b.ids);
    return rc;
}
