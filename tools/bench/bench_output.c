/* `vkprof bench`: the output. The text report on stdout and the JSON file,
 * written with the project's JSON writer (src/base/json.h: doubles that
 * round-trip, NaN as null, exact integers) to an atomic file (outfile.h).
 * See bench.h and docs/performance.md. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "outfile.h"

/* {"<phase>": {"us_per_token": .., "percent": ..}, ...}: p's phases (an MoE
 * preset's moe_* too; a dense preset's are dec_phase_ids). */
static void write_phase_obj(vkprof_json *j, const dec_preset *p, const double *ns)
{
    static const char *names[] = {
#define VKPROF_X_(id, name) name,
        VKPROF_DEFAULT_PHASES(VKPROF_X_)
#undef VKPROF_X_
    };
    uint32_t ids[DEC_MAX_PHASES];
    uint32_t n = dec_preset_phases(p, ids);
    double s = bench_sum_phases(ns);
    vkprof__json_obj(j);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t id = ids[k];
        vkprof__json_key(j, names[id]);
        vkprof__json_obj(j);
        vkprof__json_kv_f64(j, "us_per_token", ns[id] * 1e-3);
        vkprof__json_kv_f64(j, "percent", s > 0 ? 100.0 * ns[id] / s : NAN);
        vkprof__json_end(j);
    }
    vkprof__json_end(j);
}

static void write_f64_array(vkprof_json *j, const char *key, const double *v, uint32_t n)
{
    vkprof__json_key(j, key);
    vkprof__json_arr(j);
    for (uint32_t r = 0; r < n; r++) {
        vkprof__json_f64(j, v[r]);
    }
    vkprof__json_end(j);
}

static void write_config(vkprof_json *j, const dec_preset *p, uint32_t c, const bconf *b,
                         uint32_t repeats)
{
    vkprof__json_obj(j);
    vkprof__json_kv_str(j, "name", bench_cinfo[c].name);
    vkprof__json_kv_str(j, "what", bench_cinfo[c].what);
    vkprof__json_kv_f64(j, "tokens_per_s_median", b->tps_med);
    vkprof__json_kv_f64(j, "ms_per_token_median", 1e3 / b->tps_med);
    vkprof__json_kv_f64(j, "ratio_median", b->ratio_med);
    vkprof__json_kv_f64(j, "ratio_min", b->ratio_min);
    vkprof__json_kv_f64(j, "ratio_max", b->ratio_max);
    vkprof__json_kv_f64(j, "stamps_per_token", b->stamps_per_token);
    vkprof__json_kv_f64(j, "gpu_cost_per_stamp_ns",
                        b->stamps_per_token > 0 ? b->cost_per_stamp_ns : NAN);
    write_f64_array(j, "tokens_per_s", b->tps, repeats);
    write_f64_array(j, "ratios", b->ratio, repeats);
    vkprof__json_kv_f64(j, "token_ms_p50", b->p50_ms);
    vkprof__json_kv_f64(j, "token_ms_p99", b->p99_ms);
    vkprof__json_kv_f64(j, "token_p50_ratio", b->p50_ratio);
    vkprof__json_kv_f64(j, "token_p99_ratio", b->p99_ratio);
    if (b->prof != NULL && b->mode != DEC_PROFILE_OFF) {
        vkprof__json_key(j, "timing");
        vkprof__json_obj(j);
        vkprof__json_kv_u64(j, "timed_steps", b->ts.timed_steps);
        vkprof__json_kv_u64(j, "scopes_recorded", b->ts.scopes_recorded);
        vkprof__json_kv_u64(j, "scopes_collected", b->ts.scopes_collected);
        vkprof__json_kv_u64(j, "scopes_dropped", b->ts.scopes_dropped);
        vkprof__json_kv_u64(j, "stamps_written", b->ts.stamps_written);
        vkprof__json_kv_u64(j, "shared_stamps", b->ts.shared_stamps);
        vkprof__json_kv_bool(j, "host_reset", b->ts.host_reset);
        vkprof__json_kv_u64(j, "vulkan_errors", b->ec.vulkan_errors);
        vkprof__json_kv_u64(j, "not_ready", b->ec.not_ready);
        if (b->ts.rotate_scopes > 0) {
            vkprof__json_kv_u64(j, "rotate_scopes", b->ts.rotate_scopes);
            vkprof__json_kv_u64(j, "calls_executed", b->ts.calls_executed);
            vkprof__json_kv_u64(j, "calls_unstamped", b->ts.calls_unstamped);
            vkprof__json_kv_u64(j, "rotate_cycles", b->ts.rotate_cycles);
            vkprof__json_kv_u64(j, "rotate_period", b->ts.rotate_period);
            vkprof__json_kv_u64(j, "rotate_changed_steps", b->ts.rotate_changed_steps);
        }
        vkprof__json_end(j);
    }
    if (b->has_phases) {
        vkprof__json_kv_u64(j, "timed_tokens", b->timed_tokens);
        vkprof__json_key(j, "phases");
        write_phase_obj(j, p, b->phase_ns_per_token);
    }
    vkprof__json_end(j);
}

/* The difference of two byte counts, or null when either is unknown. */
static void kv_bytes_diff(vkprof_json *j, const char *key, long long a, long long b)
{
    vkprof__json_key(j, key);
    if (a >= 0 && b >= 0) {
        vkprof__json_i64(j, a - b);
    } else {
        vkprof__json_null(j);
    }
}

int bench_write_json(const char *path, const summary *s)
{
    outfile o;
    if (outfile_open(&o, "vkprof bench", path) != 0) {
        return 1;
    }
    const host_costs *h = s->h;
    vkprof_json jw, *j = &jw;
    outfile_json(&o, j);
    vkprof__json_obj(j);
    vkprof__json_kv_str(j, "tool", "vkprof bench");
    vkprof__json_kv_str(j, "preset", s->p->name);
    vkprof__json_kv_str(j, "device", s->device);
    vkprof__json_kv_u64(j, "tokens_per_run", s->tokens);
    vkprof__json_kv_u64(j, "rounds", s->repeats);
    vkprof__json_kv_u64(j, "sample_every", s->sample_every);
    vkprof__json_kv_u64(j, "phase_calls_per_token", s->calls_per_token);
    vkprof__json_kv_bool(j, "tokens_identical", s->tokens_identical);
    vkprof__json_kv_str(j, "ratio_definition",
                        "tokens/s of the configuration over tokens/s of the unprofiled run of the "
                        "same round; median, min and max over rounds; > 1 is faster than "
                        "unprofiled (noise)");
    vkprof__json_kv_str(j, "token_time_definition",
                        "the time of each dec_step (record, submit, fence wait, collect) of every "
                        "token of every measured round, pooled (n = tokens x rounds); p50 and "
                        "p99 by nearest rank, the ceil(q n)-th smallest (with n < 100 the p99 is "
                        "the slowest token); ratios over the unprofiled configuration's p50/p99");
    if (s->rp != NULL && s->rp->ran) {
        const ring_path *rp = s->rp;
        vkprof__json_key(j, "ring_host_path");
        vkprof__json_obj(j);
        vkprof__json_kv_u64(j, "phase_calls_per_token", rp->calls);
        vkprof__json_kv_u64(j, "tokens_per_round", rp->tokens);
        vkprof__json_kv_u64(j, "rounds", rp->rounds);
        vkprof__json_kv_u64(j, "rotate_scopes", rp->rotate_scopes);
        vkprof__json_key(j, "configurations");
        vkprof__json_arr(j);
        for (uint32_t c = 0; c < RP_COUNT; c++) {
            vkprof__json_obj(j);
            vkprof__json_kv_str(j, "name", rp->c[c].name);
            vkprof__json_kv_str(j, "what", rp->c[c].what);
            vkprof__json_kv_f64(j, "p50_us", rp->c[c].p50_us);
            vkprof__json_kv_f64(j, "p99_us", rp->c[c].p99_us);
            vkprof__json_kv_f64(j, "mean_us", rp->c[c].mean_us);
            vkprof__json_kv_f64(j, "record_mean_us", rp->c[c].record_mean_us);
            vkprof__json_kv_f64(j, "rest_mean_us", rp->c[c].rest_mean_us);
            vkprof__json_kv_f64(j, "collect_mean_us", rp->c[c].collect_mean_us);
            vkprof__json_kv_f64(j, "stamps_per_token", rp->c[c].stamps_per_token);
            vkprof__json_end(j);
        }
        vkprof__json_end(j);
        vkprof__json_end(j);
    }
    vkprof__json_key(j, "configurations");
    vkprof__json_arr(j);
    for (uint32_t c = 0; c < C_COUNT; c++) {
        write_config(j, s->p, c, &s->c[c], s->repeats);
    }
    vkprof__json_end(j);

    vkprof__json_key(j, "library_over_floor");
    vkprof__json_obj(j);
    vkprof__json_kv_f64(j, "ring_vs_baseline_ratio_median", s->ring_vs_base_med);
    vkprof__json_kv_f64(j, "ring_vs_baseline_ratio_min", s->ring_vs_base_min);
    vkprof__json_kv_f64(j, "ring_vs_baseline_ratio_max", s->ring_vs_base_max);
    vkprof__json_kv_f64(j, "ring_shared_vs_baseline_shared_ratio_median", s->rings_vs_bases_med);
    vkprof__json_kv_f64(j, "ring_shared_vs_baseline_shared_ratio_min", s->rings_vs_bases_min);
    vkprof__json_kv_f64(j, "ring_shared_vs_baseline_shared_ratio_max", s->rings_vs_bases_max);
    vkprof__json_end(j);

    vkprof__json_key(j, "split_agreement_pp");
    vkprof__json_obj(j);
    vkprof__json_kv_f64(j, "ring_vs_ring_sampled", s->split_ring_sampled);
    vkprof__json_kv_f64(j, "ring_shared_vs_ring_sampled", s->split_rings_sampled);
    vkprof__json_kv_f64(j, "ring_vs_2slot", s->split_ring_2slot);
    vkprof__json_kv_f64(j, "ring_vs_baseline", s->split_ring_base);
    vkprof__json_kv_f64(j, "ring_shared_vs_baseline_shared", s->split_rings_bases);
    vkprof__json_kv_f64(j, "ring_over_baseline_phase_time", s->ring_over_base_time);
    vkprof__json_kv_f64(j, "ring_shared_over_baseline_shared_phase_time", s->rings_over_bases_time);
    vkprof__json_kv_f64(j, "ring_shared_vs_ring_rotating", s->split_rings_rotating);
    vkprof__json_end(j);

    const bconf *rot = &s->c[C_RING_ROTATING];
    vkprof__json_key(j, "convergence");
    vkprof__json_obj(j);
    vkprof__json_kv_str(j, "what",
                        "a fresh ring-rotating context, token by token over tokens x rounds "
                        "tokens (runs from position 0): the max share difference of its "
                        "per-phase estimates against ring-shared's split over the measured rounds");
    vkprof__json_kv_str(j, "reference", bench_cinfo[C_RING_SHARED].name);
    vkprof__json_kv_f64(j, "threshold_pp", 1.0);
    vkprof__json_kv_u64(j, "rotate_scopes", s->rotate_scopes);
    vkprof__json_kv_u64(j, "pass_tokens", rot->conv_period);
    vkprof__json_kv_u64(j, "tokens_run", rot->conv_n);
    vkprof__json_key(j, "tokens_to_within");
    if (rot->conv_tokens > 0) {
        vkprof__json_u64(j, rot->conv_tokens);
    } else {
        vkprof__json_null(j); /* not within by the end of the run */
    }
    vkprof__json_kv_f64(j, "final_pp", rot->conv_n ? rot->conv_pp[rot->conv_n - 1] : NAN);
    write_f64_array(j, "pp_after_tokens", rot->conv_pp, rot->conv_n);
    vkprof__json_end(j);

    vkprof__json_key(j, "host");
    vkprof__json_obj(j);
    vkprof__json_kv_f64(j, "off_call_site_ns", h->off_callsite_ns);
    vkprof__json_kv_f64(j, "empty_loop_ns", h->empty_loop_ns);
    vkprof__json_kv_u64(j, "off_call_site_iterations", h->off_iters);
    vkprof__json_kv_f64(j, "span_begin_end_ns", h->span_ns);
    vkprof__json_kv_u64(j, "span_iterations", h->span_iters);
    vkprof__json_kv_f64(j, "clock_gettime_ns", h->clock_ns);
    vkprof__json_kv_f64(j, "span_begin_end_monotonic_ns", h->span_monotonic_ns);
    vkprof__json_kv_str(j, "counter", h->counter_name[0] ? h->counter_name : NULL);
    vkprof__json_kv_f64(j, "counter_read_ns", h->counter_ns);
    vkprof__json_kv_f64(j, "span_begin_end_tracing_ns", h->fill_ns_per_span);
    vkprof__json_kv_f64(j, "left_out_sampled_ns", h->left_out_sampled_ns);
    vkprof__json_kv_f64(j, "left_out_rotating_ns", h->left_out_rotating_ns);
    vkprof__json_kv_f64(j, "left_out_leaf_ns", h->left_out_leaf_ns);
    vkprof__json_kv_u64(j, "left_out_calls_per_step", h->left_out_calls);
    vkprof__json_kv_u64(j, "left_out_steps", h->left_out_steps);
    vkprof__json_end(j);

    vkprof__json_key(j, "trace_export");
    vkprof__json_obj(j);
    vkprof__json_kv_u64(j, "capacity", h->trace_capacity);
    vkprof__json_kv_u64(j, "events", h->trace_recorded);
    vkprof__json_kv_u64(j, "dropped", h->trace_dropped);
    vkprof__json_kv_f64(j, "write_seconds", h->write_s);
    vkprof__json_kv_f64(j, "events_per_s", h->events_per_s);
    vkprof__json_kv_i64(j, "file_bytes", h->file_bytes);
    vkprof__json_kv_i64(j, "rss_before_bytes", h->rss_before);
    vkprof__json_kv_i64(j, "rss_after_fill_bytes", h->rss_after_fill);
    vkprof__json_kv_i64(j, "peak_rss_after_write_bytes", h->hwm_after_write);
    kv_bytes_diff(j, "store_bytes", h->rss_after_fill, h->rss_before);
    kv_bytes_diff(j, "peak_increase_bytes", h->hwm_after_write, h->rss_before);
    vkprof__json_end(j);

    vkprof__json_key(j, "off_vulkan_commands");
    vkprof__json_obj(j);
    vkprof__json_kv_u64(j, "commands", 0);
    vkprof__json_kv_str(j, "proof",
                        "test_sim counts every vkCmd* through an interposed table "
                        "while profiling is off: none");
    vkprof__json_end(j);
    vkprof__json_end(j);
    vkprof__json_newline(j);
    return outfile_commit_json(&o, j);
}

void bench_print_report(const summary *s)
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
        printf("  %-16s %11.2f %11.3f %21s %12.1f %13s\n", bench_cinfo[c].name, b->tps_med,
               1e3 / b->tps_med, range, b->stamps_per_token, cost);
    }
    printf("  ns/stamp(GPU): (token time - unprofiled token time) / stamps per token, median "
           "over rounds\n");
    uint32_t nt = s->tokens * s->repeats;
    printf("\nToken times (each token's dec_step: record, submit, fence wait, collect; the %u "
           "tokens of all rounds pooled;\np50/p99 by nearest rank, the ceil(q n)-th smallest "
           "of n = %u%s; ratio over unprofiled's):\n",
           nt, nt, nt < 100 ? ": with n < 100 the p99 is the slowest token" : "");
    printf("  %-16s %10s %10s %10s %10s\n", "config", "p50 ms", "p99 ms", "p50 ratio", "p99 ratio");
    for (uint32_t c = 0; c < C_COUNT; c++) {
        const bconf *b = &s->c[c];
        printf("  %-16s %10.3f %10.3f %10.3f %10.3f\n", bench_cinfo[c].name, b->p50_ms, b->p99_ms,
               b->p50_ratio, b->p99_ratio);
    }
    printf("\nWhat each configuration is:\n");
    for (uint32_t c = 0; c < C_COUNT; c++) {
        printf("  %-16s %s\n", bench_cinfo[c].name, bench_cinfo[c].what);
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
    printf("  ring-shared vs ring-rotating (every token vs %u calls a token, estimated)  %.2f pp\n",
           s->rotate_scopes, s->split_rings_rotating);
    printf("  ring vs 2slot                  %.2f pp\n", s->split_ring_2slot);
    printf("  ring vs baseline               %.2f pp (sum of phase times: ring / baseline = "
           "%.3f)\n",
           s->split_ring_base, s->ring_over_base_time);
    printf("  ring-shared vs baseline-shared %.2f pp (sum: %.3f)\n", s->split_rings_bases,
           s->rings_over_bases_time);
    printf("  %-12s %10s %10s %10s %10s %10s %12s %16s   (us per timed token)\n", "phase", "ring",
           "sampled", "rotating", "2slot", "baseline", "ring-shared", "baseline-shared");
    uint32_t ids[DEC_MAX_PHASES];
    uint32_t nids = dec_preset_phases(s->p, ids);
    for (uint32_t k = 0; k < nids; k++) {
        uint32_t id = ids[k];
        printf("  %-12s %10.1f %10.1f %10.1f %10.1f %10.1f %12.1f %16.1f\n",
               vkprof_phase_name(s->c[C_RING].prof, id), s->c[C_RING].phase_ns_per_token[id] * 1e-3,
               s->c[C_RING_SAMPLED].phase_ns_per_token[id] * 1e-3,
               s->c[C_RING_ROTATING].phase_ns_per_token[id] * 1e-3,
               s->c[C_2SLOT].phase_ns_per_token[id] * 1e-3,
               s->c[C_BASE].phase_ns_per_token[id] * 1e-3,
               s->c[C_RING_SHARED].phase_ns_per_token[id] * 1e-3,
               s->c[C_BASE_SHARED].phase_ns_per_token[id] * 1e-3);
    }
    const bconf *rot = &s->c[C_RING_ROTATING];
    if (rot->conv_n > 0) {
        printf(
            "\nConvergence of ring-rotating (%u phase calls of %u a token, a pass = %u tokens; a "
            "fresh context, %u tokens\nin runs of %u from position 0), against ring-shared's "
            "split over the rounds: ",
            s->rotate_scopes, s->calls_per_token, rot->conv_period, rot->conv_n, s->tokens);
        if (rot->conv_tokens > 0) {
            printf("within 1 pp after %u tokens, and to the end (final %.2f pp)\n",
                   rot->conv_tokens, rot->conv_pp[rot->conv_n - 1]);
        } else {
            printf("NOT within 1 pp by the end (final %.2f pp)\n", rot->conv_pp[rot->conv_n - 1]);
        }
        printf("  pp after");
        for (uint32_t m = 1; m <= rot->conv_n; m *= 2) {
            printf(" %u: %.2f%s", m, rot->conv_pp[m - 1], 2 * m <= rot->conv_n ? "," : "");
        }
        printf("\n");
    } else {
        printf("\nConvergence of ring-rotating: not measured (see the errors above)\n");
    }
    printf("\nHost costs:\n");
    printf("  off call site (VKPROF_BEGIN, inactive context)  %.2f ns per call (%llu calls; "
           "the loop alone %.2f ns)\n",
           h->off_callsite_ns, (unsigned long long)h->off_iters, h->empty_loop_ns);
    printf("  span begin + end (VKPROF_HOST_ALL)              %.1f ns\n", h->span_ns);
    printf("  span begin + end while tracing                  %.1f ns\n", h->fill_ns_per_span);
    printf("  span begin + end, VKPROF_HOST_CLOCK=monotonic   %.1f ns\n", h->span_monotonic_ns);
    printf("  clock_gettime(CLOCK_MONOTONIC) alone            %.1f ns\n", h->clock_ns);
    if (h->counter_name[0]) {
        char what[64];
        snprintf(what, sizeof what, "%s alone", h->counter_name);
        printf("  %-47s %.1f ns (a whole span = %.2fx one clock_gettime)\n", what, h->counter_ns,
               h->clock_ns > 0 ? h->span_ns / h->clock_ns : 0.0);
    }
    printf("  a call left out (begin + end, no stamp), %u a step, median of %u steps:\n"
           "    in a step sampling leaves untimed             %.1f ns\n"
           "    in a rotating step (K = 4: 5 stamps a step)    %.1f ns\n"
           "    the same through vkprof_cmd_begin_leaf         %.1f ns (%.2fx; the call counted by "
           "its caller)\n",
           h->left_out_calls, h->left_out_steps, h->left_out_sampled_ns, h->left_out_rotating_ns,
           h->left_out_leaf_ns,
           h->left_out_rotating_ns > 0 ? h->left_out_leaf_ns / h->left_out_rotating_ns : 0.0);
    const ring_path *rp = s->rp;
    if (rp != NULL && rp->ran) {
        printf("\nThe ring's host path per token, without the decode's GPU work (%u empty phase "
               "calls recorded,\nsubmitted, fence waited, collected, stepped; %u rounds x %u "
               "tokens, interleaved; us):\n",
               rp->calls, rp->rounds, rp->tokens);
        printf("  %-16s %9s %9s %9s %9s %9s %9s %9s %11s\n", "config", "p50", "p99", "mean",
               "record", "rest", "collect", "stamps", "mean - off");
        for (uint32_t c = 0; c < RP_COUNT; c++) {
            printf("  %-16s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %11.1f\n", rp->c[c].name,
                   rp->c[c].p50_us, rp->c[c].p99_us, rp->c[c].mean_us, rp->c[c].record_mean_us,
                   rp->c[c].rest_mean_us, rp->c[c].collect_mean_us, rp->c[c].stamps_per_token,
                   rp->c[c].mean_us - rp->c[RP_OFF].mean_us);
        }
        for (uint32_t c = 0; c < RP_COUNT; c++) {
            printf("  %-16s %s\n", rp->c[c].name, rp->c[c].what);
        }
        printf(
            "  record: vkBeginCommandBuffer .. vkEndCommandBuffer with every begin/end; rest: "
            "submit, fence wait (the stamps run there), collect, step; collect: vkprof_collect + "
            "vkprof_step alone\n");
    } else if (rp != NULL) {
        printf("\nThe ring's host path per token: not measured (%s)\n", rp->err);
    }
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

void bench_print_notes(const summary *s)
{
    for (uint32_t c = 0; c < C_COUNT; c++) {
        const bconf *k = &s->c[c];
        if (k->ts.scopes_dropped || k->ec.vulkan_errors || k->ec.not_ready) {
            printf("  note: %s: %llu scopes dropped, %llu Vulkan errors, %llu not ready\n",
                   bench_cinfo[c].name, (unsigned long long)k->ts.scopes_dropped,
                   (unsigned long long)k->ec.vulkan_errors, (unsigned long long)k->ec.not_ready);
        }
    }
}
