/* The text summary of `vkprof report`: rpt_print, rpt_loss_warning. */
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "trace_reader.h"

/* a / b rounded to nearest (b > 0). */
static uint64_t div_round(uint64_t a, uint64_t b)
{
    uint64_t q = a / b, r = a % b;
    return q + (r >= b - r ? 1 : 0);
}

/* ns / div as milliseconds with three decimals, exactly rounded. */
static void fmt_ms(char *out, size_t size, uint64_t ns, uint64_t div)
{
    uint64_t us = div_round(ns, div * 1000u);
    snprintf(out, size, "%" PRIu64 ".%03" PRIu64, us / 1000u, us % 1000u);
}

static void print_group_table(FILE *out, const char *title, const rpt_group *g, size_t n,
                              uint64_t busy, uint64_t tokens, bool self_column)
{
    fprintf(out, "\n%-28s %12s %10s %7s %12s %10s", title, "total ms", "ms/token", "%",
            "calls/token", "us/call");
    fprintf(out, self_column ? " %14s\n" : "\n", "self ms/token");
    if (n == 0) {
        fprintf(out, "  (none)\n");
        return;
    }
    uint64_t calls = 0;
    for (size_t i = 0; i < n; i++) {
        char total[32], per[32], self[32];
        fmt_ms(total, sizeof total, g[i].total_ns, 1);
        fmt_ms(per, sizeof per, g[i].total_ns, tokens);
        fmt_ms(self, sizeof self, g[i].self_ns, tokens);
        double pct = busy ? 100.0 * (double)g[i].total_ns / (double)busy : 0.0;
        double cpt = (double)g[i].calls / (double)tokens;
        double us_call = g[i].calls ? (double)g[i].total_ns / (double)g[i].calls / 1000.0 : 0.0;
        fprintf(out, "  %-26s %12s %10s %6.1f%% %12.2f %10.3f", g[i].name, total, per, pct, cpt,
                us_call);
        fprintf(out, self_column ? " %14s\n" : "\n", self);
        calls += g[i].calls;
    }
    char total[32], per[32];
    fmt_ms(total, sizeof total, busy, 1);
    fmt_ms(per, sizeof per, busy, tokens);
    fprintf(out, "  %-26s %12s %10s %6.1f%% %12.2f\n", "busy (self times)", total, per,
            busy ? 100.0 : 0.0, (double)calls / (double)tokens);
}

/* Append text, then a number when `v` is not NULL, at *len: never past size,
 * counting what was needed (like snprintf). */
static void put(char *buf, size_t size, size_t *len, const char *text, const uint64_t *v)
{
    size_t room = *len < size ? size - *len : 0;
    int n = v != NULL ? snprintf(room ? buf + *len : NULL, room, "%s%" PRIu64, text, *v)
                      : snprintf(room ? buf + *len : NULL, room, "%s", text);
    if (n > 0) {
        *len += (size_t)n;
    }
}

size_t rpt_loss_warning(const rpt_summary *s, char *buf, size_t size)
{
    if (buf != NULL && size > 0) {
        buf[0] = '\0';
    } else {
        size = 0;
    }
    static const char *const why[VKPROF_TF_LOST_COUNT] = {
#define LOST_TEXT_(id, key, text) text " ",
        VKPROF_TF_LOST_REASONS(LOST_TEXT_)
#undef LOST_TEXT_
    };
    uint64_t sum = 0; /* each at most 2^53: no overflow */
    for (size_t i = 0; i < VKPROF_TF_LOST_COUNT; i++) {
        sum += s->lost[i];
    }
    if (s->samples_lost == 0 && sum == 0) {
        return 0;
    }
    size_t len = 0;
    put(buf, size, &len, "WARNING: ", &s->samples_lost);
    if (s->has_samples) {
        put(buf, size, &len, " of ", &s->samples);
    }
    put(buf, size, &len, " GPU samples lost", NULL);
    const char *sep = " (";
    for (size_t i = 0; i < VKPROF_TF_LOST_COUNT; i++) {
        if (s->lost[i] > 0) {
            put(buf, size, &len, sep, NULL);
            put(buf, size, &len, why[i], &s->lost[i]);
            sep = ", ";
        }
    }
    put(buf, size, &len, sep[0] == ',' ? ")" : "", NULL);
    put(buf, size, &len, "; the GPU split below covers the rest only", NULL);
    return len;
}

int rpt_print(const rpt_summary *s, const char *path, FILE *out)
{
    char warn[512];
    if (rpt_loss_warning(s, warn, sizeof warn) > 0) {
        fprintf(out, "%s\n", warn); /* first: the figures below are partial */
    }
    fprintf(out, "vkprof report: %s\n", path);
    const char *dev = s->device != NULL ? s->device : s->process_name_gpu;
    fprintf(out, "  device        %s", dev != NULL ? dev : "(not recorded)");
    if (s->driver != NULL) {
        fprintf(out, " (driver %s)", s->driver);
    }
    fprintf(out, "\n  calibration   %s", s->cal_method != NULL ? s->cal_method : "(not recorded)");
    if (s->has_error_bound) {
        fprintf(out, ", error bound %" PRIu64 " ns", s->error_bound_ns);
    }
    fprintf(out, "\n  gpu sampling  %s",
            s->sampling_mode != NULL ? s->sampling_mode : "(not recorded)");
    if (s->has_every_n) {
        fprintf(out, ", every %" PRIu64 " step(s)", s->every_n_steps);
    }
    if (s->has_samples) {
        /* "gpu samples   50 (20 collected, 30 lost, 0 pending, 5 submission(s))" */
        fprintf(out, "\n  gpu samples   %" PRIu64, s->samples);
        const struct {
            int has;
            uint64_t n;
            const char *what;
        } part[] = {{s->has_scopes_collected, s->scopes_collected, "collected"},
                    {s->has_scopes_dropped || s->has_lost, s->samples_lost, "lost"},
                    {s->has_scopes_pending, s->scopes_pending, "pending"},
                    {s->has_submissions, s->submissions, "submission(s)"}};
        const char *sep = " (";
        for (size_t i = 0; i < sizeof part / sizeof part[0]; i++) {
            if (part[i].has) {
                fprintf(out, "%s%" PRIu64 " %s", sep, part[i].n, part[i].what);
                sep = ", ";
            }
        }
        fputs(sep[0] == ',' ? ")" : "", out);
    }
    fprintf(out, "\n  tokens        %" PRIu64, s->tokens);
    switch (s->token_source) {
    case RPT_TOKENS_FROM_EVENTS: fprintf(out, " (token events)\n"); break;
    case RPT_TOKENS_FROM_METADATA: fprintf(out, " (metadata.steps; no token events)\n"); break;
    default: fprintf(out, " (no token events and no metadata.steps: figures are per trace)\n");
    }
    if (s->gpu_tokens != s->tokens) {
        fprintf(out,
                "  gpu tokens    %" PRIu64 " (sampled steps: GPU figures are per sampled token)\n",
                s->gpu_tokens);
    }
    fprintf(out,
            "  events        %" PRIu64 " (%" PRIu64 " flows, %" PRIu64 " counters, %" PRIu64
            " metadata)\n",
            s->n_events, s->n_flows, s->n_counters, s->n_meta_events);
    if (s->has_dropped && s->dropped_events > 0) {
        fprintf(out, "WARNING: %" PRIu64 " events were dropped (the event store was full",
                s->dropped_events);
        if (s->has_capacity) {
            fprintf(out, "; capacity %" PRIu64, s->event_capacity);
        }
        fprintf(out, "): the figures below miss them\n");
    } else if (!s->has_dropped) {
        fprintf(out, "note: metadata.dropped_events is missing: events may have been lost\n");
    }
    if (s->has_format && s->format > VKPROF_TF_VERSION) {
        fprintf(out,
                "note: the trace is of format %" PRIu64
                ", newer than this reader's %d: fields may be missed or misread\n",
                s->format, VKPROF_TF_VERSION);
    }
    if (s->samples_lost_mismatch) {
        fprintf(out,
                "note: metadata.gpu_sampling.scopes_dropped (%" PRIu64
                ") is not the sum of its lost counts\n",
                s->scopes_dropped);
    }
    if (s->samples_unbalanced) {
        fprintf(out,
                "note: metadata.gpu_sampling.samples (%" PRIu64
                ") is not collected + dropped + pending\n",
                s->samples);
    }
    if (s->has_scopes_pending && s->scopes_pending > 0) {
        fprintf(out,
                "note: %" PRIu64
                " GPU samples were still pending when the trace was written (not in it)\n",
                s->scopes_pending);
    }
    if (s->n_unknown_ph > 0) {
        fprintf(out,
                "note: skipped %" PRIu64
                " events of unknown ph (the first: \"%s\" at event #%" PRIu64 ")\n",
                s->n_unknown_ph, s->first_unknown_ph, s->first_unknown_index);
    }
    if (s->n_other_x > 0) {
        fprintf(out,
                "note: skipped %" PRIu64 " X events whose cat is neither \"gpu\" nor \"host\"\n",
                s->n_other_x);
    }
    if (s->n_dup_meta > 0) {
        fprintf(out,
                "note: %" PRIu64
                " duplicate track names differ from the first (the first is kept)\n",
                s->n_dup_meta);
    }
    char title[64];
    snprintf(title, sizeof title, "GPU phases");
    print_group_table(out, title, s->gpu, s->n_gpu, s->gpu_busy_ns, s->gpu_tokens, false);
    snprintf(title, sizeof title, "host buckets");
    print_group_table(out, title, s->host, s->n_host, s->host_busy_ns, s->tokens, true);
    fflush(out);
    return ferror(out) ? -1 : 0;
}
