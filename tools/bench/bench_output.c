/* `vkprof bench`: the output. The text report on stdout and the JSON file
 * (written atomically through outfile.h). See bench.h and
 * docs/performance.md. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "outfile.h"

static void jnum(FILE *f, double v)
{
    if (isfinite(v)) {
        fprintf(f, "%.6g", v);
    } else {
        fputs("null", f);
    }
}

static void write_phase_obj(FILE *f, const double *ns)
{
    static const char *names[] = {
#define VKPROF_X_(id, name) name,
        VKPROF_DEFAULT_PHASES(VKPROF_X_)
#undef VKPROF_X_
    };
    double s = bench_sum_phases(ns);
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

int bench_write_json(const char *path, const summary *s)
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
        fprintf(f, "%s\n    {\"name\": \"%s\", \"what\": ", c ? "," : "", bench_cinfo[c].name);
        json_put_string(f, bench_cinfo[c].what);
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
