/* `vkprof bench`, inside: the pieces of tools/bench/cmd_bench.c (the command: its
 * options and the order of the steps). See docs/performance.md.
 *
 *   bench_run.c     the configurations (one vkprof context each), the warm-up
 *                   and the interleaved rounds through the decode engine, and
 *                   what the library counted in them;
 *   bench_host.c    the host costs: an off call site, a span, the clock, and
 *                   the export of a full trace store;
 *   bench_stats.c   medians, min/max, same-round ratios, cost per stamp, the
 *                   per-phase split agreement;
 *   bench_output.c  the text report and the JSON.
 *
 * Internal to the tool; not an API. */
#ifndef VKPROF_TOOLS_BENCH_H
#define VKPROF_TOOLS_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "decode.h"
#include "decode_spans.h"
#include "vkutil.h"

/* The configurations, in the order of the report. */
enum {
    C_OFF,
    C_HOST,
    C_2SLOT,
    C_RING,
    C_RING_SHARED,
    C_RING_SAMPLED,
    C_RING_ROTATING,
    C_BASE,
    C_BASE_SHARED,
    C_COUNT
};

typedef struct bench_info {
    const char *name; /* "ring-shared" */
    const char *what; /* one sentence: what is recorded */
} bench_info;

extern const bench_info bench_cinfo[C_COUNT];

#define BENCH_MAX_PHASES 32u

/* One configuration: its context and hooks, and its figures. */
typedef struct bconf {
    dec_profile mode;
    vkprof_context prof; /* NULL: off and the baselines */
    dec_hooks hooks;
    double *tps;    /* per round */
    double *ratio;  /* per round, against off of the same round */
    double *tok_ns; /* every measured token's time (dec_step), round after round */
    double p50_ms, p99_ms, p50_ratio, p99_ratio; /* ratios: over off's p50 / p99 */
    double tps_med, ratio_med, ratio_min, ratio_max;
    double stamps_per_token;
    double cost_per_stamp_ns; /* median over rounds of (token time - off) / stamps */
    bool has_phases;
    /* per timed token; rotating: each phase's estimate (mean x calls) per token */
    double phase_ns_per_token[VKPROF_PHASE_DEFAULT_COUNT];
    uint64_t phase_count[VKPROF_PHASE_DEFAULT_COUNT];
    uint64_t timed_tokens;
    uint64_t bl_ns[VKPROF_PHASE_DEFAULT_COUNT], bl_count[VKPROF_PHASE_DEFAULT_COUNT];
    uint64_t bl_stamps;
    vkprof_timing_stats ts;
    vkprof_error_counts ec;
    /* ring-rotating only: the convergence of its split (a fresh context,
     * after the rounds): conv_pp[i] = the split difference against
     * ring-shared's measured rounds after i + 1 tokens; conv_tokens = the
     * token count from which it stays within 1 pp to the end of the run (0:
     * never); conv_period = tokens a rotation pass takes */
    double *conv_pp;
    uint32_t conv_n, conv_tokens, conv_period;
} bconf;

typedef struct host_costs {
    uint64_t off_iters, span_iters, clock_iters;
    double off_callsite_ns, empty_loop_ns, span_ns, clock_ns;
    /* side by side in the same run (issue 12): the same span with the
     * clock_gettime fallback (VKPROF_HOST_CLOCK=monotonic), the CPU counter
     * read alone (0 when there is none), and which counter */
    double span_monotonic_ns, counter_ns;
    const char *counter_name;
    /* a call left out (issue 26): ns per VKPROF_BEGIN/END pair that writes
     * no stamp, in a step that sampling leaves untimed and outside the
     * rotating window (K = 4, first calls apart), left_out_calls such calls
     * a step as llama.cpp's 1B graph; the median step; NAN: not measured */
    uint32_t left_out_calls, left_out_steps;
    double left_out_sampled_ns, left_out_rotating_ns;
    double left_out_leaf_ns; /* rotating, through vkprof_cmd_begin_leaf (issue 26) */
    /* trace export */
    uint32_t trace_capacity;
    uint64_t trace_recorded, trace_dropped;
    double fill_ns_per_span, write_s, events_per_s;
    long long file_bytes;
    long long rss_before, rss_after_fill, hwm_after_write; /* bytes; -1 unknown */
} host_costs;

/* The ring's host path per token, without the decode's GPU work
 * (bench_measure_ring_path): a token of `calls` empty phase calls recorded in
 * one command buffer, submitted, its fence waited, collected and stepped,
 * under each configuration, in interleaved rounds. Per configuration the
 * whole token's host time (p50, p99, mean) and its two parts: recording
 * (begin .. end of the command buffer) and the rest (submit, fence wait,
 * collect, step), and of the rest collect + step alone. The stamps that a configuration writes run
 * on the device too, inside the fence wait. */
enum { RP_OFF, RP_SAMPLED_UNTIMED, RP_ROTATING, RP_SHARED, RP_COUNT };
typedef struct ring_path {
    uint32_t calls, tokens, rounds, rotate_scopes;
    bool ran; /* false: not measured (say why in err) */
    char err[160];
    struct {
        const char *name, *what;
        double p50_us, p99_us, mean_us, record_mean_us, rest_mean_us, collect_mean_us;
        double stamps_per_token;
    } c[RP_COUNT];
} ring_path;

/* The decode runs: one engine, the configurations, the reference tokens. */
typedef struct bench {
    dec_engine *eng;
    uint32_t tokens, repeats;
    uint32_t *ref_ids, *ids;
    uint32_t mismatches;
    bool have_ref; /* ref_ids hold the unprofiled warm-up's tokens */
    bconf conf[C_COUNT];
    dec_span_glue glue;           /* the host configuration's span hooks */
    vkprof_context_desc rot_desc; /* the rotating configuration's, for the convergence run */
    char err[512];
} bench;

/* What the report and the JSON show. */
typedef struct summary {
    const dec_preset *p;
    const char *device;
    uint32_t tokens, repeats, sample_every, calls_per_token;
    bconf *c;
    const host_costs *h;
    const ring_path *rp;
    double ring_vs_base_med, ring_vs_base_min, ring_vs_base_max;
    double rings_vs_bases_med, rings_vs_bases_min, rings_vs_bases_max;
    double split_ring_sampled, split_rings_sampled, split_ring_2slot, split_ring_base,
        split_rings_bases;
    double ring_over_base_time, rings_over_bases_time;
    double split_rings_rotating; /* ring-shared vs ring-rotating over the rounds */
    uint32_t rotate_scopes;
    bool tokens_identical;
} summary;

/* ---- bench_run.c ---- */
uint64_t bench_now_ns(void);
/* A context desc for this bench: off, quiet, no trace file of its own. */
vkprof_context_desc bench_base_desc(const vku_instance *inst, const vku_device *dev);
/* The per-round arrays and the token buffers; 1 (printed) when out of memory. */
int bench_alloc(bench *b, uint32_t tokens, uint32_t repeats);
/* One context per profiled configuration, and its hooks; 1 (printed) on failure. */
int bench_create_configs(bench *b, const vku_instance *inst, const vku_device *dev,
                         uint32_t sample_every);
/* One warm-up run per configuration (the first gives the reference tokens),
 * then `repeats` interleaved rounds; 1 (printed) on failure. */
int bench_run_rounds(bench *b);
/* What the library (or the baseline) counted over the measured rounds:
 * stamps, timed tokens, per-phase time; then the convergence run of the
 * rotating configuration (bench_convergence). */
void bench_gather(bench *b);
/* The rotating split against ring-shared's (after bench_gather), token by
 * token in a fresh context over tokens x repeats tokens; 1 (printed) on failure. */
int bench_convergence(bench *b);
void bench_free(bench *b);

/* ---- bench_host.c ---- */
int bench_measure_host(const vku_instance *inst, const vku_device *dev, host_costs *h);
/* rp->calls, tokens, rounds and rotate_scopes set by the caller. Not
 * measured (rp->ran false, rp->err) is no failure of the bench. */
void bench_measure_ring_path(const vku_instance *inst, const vku_device *dev, ring_path *rp);

/* ---- bench_stats.c ---- */
/* Median of n values (not modified); NAN for none. */
double bench_median(const double *v, uint32_t n);
void bench_min_max(const double *v, uint32_t n, double *lo, double *hi);
/* The q-quantile (0 < q <= 1) by nearest rank: the ceil(q n)-th smallest of
 * n values (with n < 100 the 0.99 one is the largest); NAN for none. */
double bench_quantile(const double *v, uint32_t n, double q);
/* Max |share difference| over the phases, in percentage points; NAN when
 * either side has no time. */
double bench_split_diff(const double *a, const double *b);
double bench_sum_phases(const double *a);
/* Medians, ranges and cost per stamp of every configuration (after
 * bench_gather). */
void bench_figures(bench *b);
/* The summary's figures across configurations (ring over baseline, split
 * agreement); 1 (printed) when out of memory. */
int bench_summarise(const bench *b, summary *s);

/* ---- bench_output.c ---- */
void bench_print_report(const summary *s);
/* The notes about dropped scopes and errors, after the report. */
void bench_print_notes(const summary *s);
int bench_write_json(const char *path, const summary *s);

/* ---- bench_layer.c: `vkprof bench --layer`, the layer's cost, process by
 * process (the loader loads a layer at vkCreateInstance) ---- */
typedef struct bench_layer_opts {
    const char *preset, *device, *json, *layer_dir; /* layer_dir NULL: <exe dir>/layer */
    uint32_t tokens, repeats, sample_every;
} bench_layer_opts;
/* 0 when every run worked and the tokens were identical; 2 without a layer. */
int bench_layer(const bench_layer_opts *o);

#endif
