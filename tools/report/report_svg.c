/* The SVG of `vkprof report --svg` (rpt_svg): time per token
 * as bars, and one token's timeline (host and GPU tracks on one time axis). */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "trace_reader.h"

#define W 1000.0
#define LABEL_X 200.0 /* right edge of labels */
#define PLOT_X 210.0
#define PLOT_W 640.0
#define STRIP_W 750.0
#define ROW_H 20.0
#define LANE_H 16.0
#define MAX_BAR_ROWS 24
#define MAX_TRACKS_DRAWN 16
#define MAX_LANES 8

static const char *const gpu_colors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                         "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                         "#9c755f", "#2f4b7c", "#a05195", "#665191"};
static const char *const host_colors[] = {"#a0cbe8", "#ffbe7d", "#8cd17d", "#f1ce63",
                                          "#86bcb6", "#ff9d9a", "#d4a6c8", "#fabfd2",
                                          "#d7b5a6", "#bab0ac", "#b6992d", "#499894"};
#define NCOLORS (sizeof gpu_colors / sizeof gpu_colors[0])

static const char *color_of(bool gpu, uint32_t g)
{
    return gpu ? gpu_colors[g % NCOLORS] : host_colors[g % NCOLORS];
}

/* Text for XML: the names are clean UTF-8 already (rpt_clean_string). */
static void xml_text(FILE *out, const char *s)
{
    for (; *s != '\0'; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default: fputc(*s, out);
        }
    }
}

static void xml_clean_text(FILE *out, const char *s)
{
    char *c = rpt_clean_string(s);
    xml_text(out, c != NULL ? c : "?");
    free(c);
}

static double ms_per(uint64_t ns, uint64_t div)
{
    return (double)ns / (double)div / 1e6;
}

/* A tick step of 1, 2 or 5 x 10^k ns giving 5 to 10 ticks. */
static int64_t tick_step(int64_t span)
{
    int64_t step = 1;
    for (;;) {
        if (span / step <= 10) {
            return step;
        }
        if (span / (step * 2) <= 10) {
            return step * 2;
        }
        if (span / (step * 5) <= 10) {
            return step * 5;
        }
        if (step > INT64_MAX / 100) {
            return step * 10;
        }
        step *= 10;
    }
}

static void fmt_time(char *buf, size_t size, int64_t ns, int64_t step)
{
    if (step >= 1000000) {
        snprintf(buf, size, "%.*f ms", step >= 100000000 ? 0 : (step >= 10000000 ? 1 : 2),
                 (double)ns / 1e6);
    } else if (step >= 1000) {
        snprintf(buf, size, "%.*f us", step >= 100000 ? 0 : (step >= 10000 ? 1 : 2),
                 (double)ns / 1e3);
    } else {
        snprintf(buf, size, "%" PRId64 " ns", ns);
    }
}

/* Bars of ms/token for one section; returns the next y. */
static double bars(FILE *out, double y, const char *title, const rpt_group *g, size_t n,
                   uint64_t busy, uint64_t tokens, bool gpu, double max_ms)
{
    fprintf(out,
            "<text x=\"16\" y=\"%.1f\" class=\"h2\">%s (ms per token; %% of %s busy time)</text>\n",
            y, title, gpu ? "GPU" : "host");
    y += 10;
    if (n == 0) {
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"note\">none in the trace</text>\n",
                PLOT_X, y + 14);
        return y + ROW_H + 8;
    }
    size_t shown = n > MAX_BAR_ROWS ? MAX_BAR_ROWS - 1 : n;
    for (size_t i = 0; i < shown; i++) {
        double ms = ms_per(g[i].total_ns, tokens);
        double w = max_ms > 0 ? ms / max_ms * PLOT_W : 0;
        if (w < 1 && g[i].total_ns > 0) {
            w = 1;
        }
        double pct = busy ? 100.0 * (double)g[i].total_ns / (double)busy : 0.0;
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"lbl\" text-anchor=\"end\">", LABEL_X,
                y + 14);
        xml_text(out, g[i].name);
        fprintf(out,
                "</text><rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"14\" fill=\"%s\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" class=\"val\">%.3f ms (%.1f%%)</text>\n",
                PLOT_X, y + 3, w, color_of(gpu, (uint32_t)i), PLOT_X + w + 6, y + 14, ms, pct);
        y += ROW_H;
    }
    if (shown < n) {
        uint64_t rest = 0;
        for (size_t i = shown; i < n; i++) {
            rest += g[i].total_ns;
        }
        fprintf(out,
                "<text x=\"%.1f\" y=\"%.1f\" class=\"note\" text-anchor=\"end\">%zu more</text>"
                "<text x=\"%.1f\" y=\"%.1f\" class=\"val\">%.3f ms together</text>\n",
                LABEL_X, y + 14, n - shown, PLOT_X, y + 14, ms_per(rest, tokens));
        y += ROW_H;
    }
    return y + 10;
}

typedef struct strip_track {
    uint32_t track;
    uint32_t lanes;
    size_t first, last; /* slice range of the track */
} strip_track;

/* Collective against skew per rank, the slowest rank, and the expert load
 * (merged traces; the expert load also without). Returns the next y. */
static double rank_bars(FILE *out, double y, const rpt_summary *s)
{
    rpt_rank_view v;
    if (rpt_rank_view_build(s, &v) != 0) {
        return y;
    }
    if (s->n_ranks > 0) {
        double max_ms = 0;
        for (size_t r = 0; r < v.n_ranks; r++) {
            double a = ms_per(v.rank[r].collective_ns, v.rank[r].tokens);
            double b = ms_per(v.rank[r].probe_ns, v.rank[r].tokens);
            max_ms = a > max_ms ? a : max_ms;
            max_ms = b > max_ms ? b : max_ms;
        }
        y += 10;
        fprintf(out,
                "<text x=\"16\" y=\"%.1f\" class=\"h2\">Ranks (ms per token): collective "
                "(allreduce_*) against arrival skew (rendezvous probes)</text>\n",
                y);
        y += 10;
        size_t shown = v.n_ranks > MAX_BAR_ROWS / 2 ? MAX_BAR_ROWS / 2 : v.n_ranks;
        for (size_t r = 0; r < shown; r++) {
            for (int kind = 0; kind < 2; kind++) {
                uint64_t ns = kind == 0 ? v.rank[r].collective_ns : v.rank[r].probe_ns;
                double ms = ms_per(ns, v.rank[r].tokens);
                double w = max_ms > 0 ? ms / max_ms * PLOT_W : 0;
                if (w < 1 && ns > 0) {
                    w = 1;
                }
                fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"lbl\" text-anchor=\"end\">",
                        LABEL_X, y + 14);
                xml_text(out, s->ranks[r].name);
                fprintf(out,
                        " %s</text><rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"14\" "
                        "fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\" class=\"val\">%.3f ms%s</text>\n",
                        kind == 0 ? "collective" : "skew", PLOT_X, y + 3, w,
                        kind == 0 ? "#4e79a7" : "#e15759", PLOT_X + w + 6, y + 14, ms,
                        kind == 1 && (int)r == v.slowest ? " (the slowest rank: least wait)" : "");
                y += ROW_H;
            }
        }
        if (shown < v.n_ranks) {
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"note\">%zu more ranks</text>\n",
                    PLOT_X, y + 14, v.n_ranks - shown);
            y += ROW_H;
        }
        y += 10;
    }
    if (v.n_experts > 0) {
        uint64_t max = 0;
        uint32_t used = 0;
        for (uint32_t e = 0; e < v.n_experts; e++) {
            uint64_t c = 0;
            for (size_t r = 0; r < v.n_ranks; r++) {
                c += v.counts[r * v.n_experts + e];
            }
            max = c > max ? c : max;
            used += c > 0;
        }
        y += 10;
        double worst = 0;
        for (uint32_t l = 0; l < v.n_moe_layers && v.layer_imbalance != NULL; l++) {
            double x = v.layer_imbalance[v.n_ranks * v.n_moe_layers + l];
            worst = x > worst ? x : worst;
        }
        fprintf(out,
                "<text x=\"16\" y=\"%.1f\" class=\"h2\">Expert load (tokens per expert id, all "
                "ranks, summed over %u MoE layer(s); max/mean of the worst layer %.2f, over %u "
                "experts)</text>\n",
                y, v.n_moe_layers, worst, v.n_experts);
        y += 10;
        uint32_t rows = 0;
        for (uint32_t e = 0; e < v.n_experts && rows < MAX_BAR_ROWS; e++) {
            uint64_t c = 0;
            for (size_t r = 0; r < v.n_ranks; r++) {
                c += v.counts[r * v.n_experts + e];
            }
            if (c == 0) {
                continue;
            }
            rows++;
            double w = max > 0 ? (double)c / (double)max * PLOT_W : 0;
            fprintf(out,
                    "<text x=\"%.1f\" y=\"%.1f\" class=\"lbl\" text-anchor=\"end\">expert %u</text>"
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"14\" fill=\"#59a14f\"/>"
                    "<text x=\"%.1f\" y=\"%.1f\" class=\"val\">%" PRIu64 "</text>\n",
                    LABEL_X, y + 14, e, PLOT_X, y + 3, w, PLOT_X + w + 6, y + 14, c);
            y += ROW_H;
        }
        if (used > rows) {
            fprintf(
                out,
                "<text x=\"%.1f\" y=\"%.1f\" class=\"note\">%u more experts with tokens</text>\n",
                PLOT_X, y + 14, used - rows);
            y += ROW_H;
        }
        y += 10;
    }
    rpt_rank_view_free(&v);
    return y;
}

static void track_label(FILE *out, const rpt_summary *s, const rpt_track *t)
{
    for (size_t r = 0; r < s->n_ranks; r++) {
        if (s->ranks[r].host_pid == t->pid || s->ranks[r].gpu_pid == t->pid) {
            xml_text(out, s->ranks[r].name);
            fputs(": ", out);
            break;
        }
    }
    if (t->name != NULL) {
        fputs(t->is_gpu ? "GPU " : "host ", out);
        xml_text(out, t->name);
    } else {
        fprintf(out, "%s pid %" PRId64 " tid %" PRId64, t->is_gpu ? "GPU" : "host", t->pid, t->tid);
    }
}

int rpt_svg(const rpt_summary *s, const char *title, FILE *out)
{
    /* The token window and the tracks that have slices in it. */
    int64_t t0, t1;
    long tok = rpt_pick_token(s, &t0, &t1);
    int64_t span = t1 - t0 > 0 ? t1 - t0 : 1;
    strip_track tr[MAX_TRACKS_DRAWN];
    size_t ntr = 0, tracks_left_out = 0;
    for (int pass = 0; pass < 2; pass++) { /* host tracks first, then GPU */
        size_t i = 0;
        while (i < s->n_slices) {
            size_t j = i;
            bool in = false;
            while (j < s->n_slices && s->slices[j].track == s->slices[i].track) {
                const rpt_slice *x = &s->slices[j];
                in = in || (x->ts_ns < t1 && x->ts_ns + x->dur_ns > t0) ||
                     (x->dur_ns == 0 && x->ts_ns >= t0 && x->ts_ns < t1);
                j++;
            }
            const rpt_track *t = &s->tracks[s->slices[i].track];
            if (in && (t->is_gpu != 0) == (pass == 1)) {
                if (ntr < MAX_TRACKS_DRAWN) {
                    uint32_t lanes = t->max_depth + 1;
                    tr[ntr++] = (strip_track){.track = s->slices[i].track,
                                              .lanes = lanes > MAX_LANES ? MAX_LANES : lanes,
                                              .first = i,
                                              .last = j};
                } else {
                    tracks_left_out++;
                }
            }
            i = j;
        }
    }

    /* Layout. */
    double max_ms = 0;
    for (size_t i = 0; i < s->n_gpu; i++) {
        double v = ms_per(s->gpu[i].total_ns, s->gpu_tokens);
        max_ms = v > max_ms ? v : max_ms;
    }
    for (size_t i = 0; i < s->n_host; i++) {
        double v = ms_per(s->host[i].total_ns, s->tokens);
        max_ms = v > max_ms ? v : max_ms;
    }
    FILE *final = out;
    char *body = NULL;
    size_t body_len = 0;
    out = open_memstream(&body, &body_len);
    if (out == NULL) {
        return -1;
    }
    double y = 28;
    char warn[512];
    if (rpt_loss_warning(s, warn, sizeof warn) > 0) {
        /* at the top, above the title: the GPU bars below are partial */
        fprintf(out, "<text x=\"16\" y=\"%.0f\" class=\"warn\">", y - 6);
        xml_text(out, warn);
        fputs("</text>\n", out);
        y += 22;
    }
    fprintf(out, "<text x=\"16\" y=\"%.0f\" class=\"h1\">vkprof report", y);
    if (title != NULL && *title != '\0') {
        fputs(": ", out);
        xml_clean_text(out, title);
    }
    fputs("</text>\n", out);
    y += 20;
    const char *dev = s->device != NULL ? s->device : s->process_name_gpu;
    fprintf(out, "<text x=\"16\" y=\"%.1f\" class=\"sub\">", y);
    xml_text(out, dev != NULL ? dev : "device not recorded");
    fprintf(out, " | %" PRIu64 " tokens | GPU busy %.3f ms/token | host busy %.3f ms/token",
            s->tokens, ms_per(s->gpu_busy_ns, s->gpu_tokens), ms_per(s->host_busy_ns, s->tokens));
    if (s->cal_method != NULL) {
        fputs(" | calibration ", out);
        xml_text(out, s->cal_method);
        if (s->has_error_bound) {
            fprintf(out, " (+/-%" PRIu64 " ns)", s->error_bound_ns);
        }
    }
    fputs("</text>\n", out);
    if (s->has_dropped && s->dropped_events > 0) {
        y += 18;
        fprintf(out,
                "<text x=\"16\" y=\"%.1f\" class=\"warn\">WARNING: %" PRIu64
                " events were dropped (event store full): the figures miss them</text>\n",
                y, s->dropped_events);
    }
    if (rpt_repeat_warning(s, warn, sizeof warn) > 0) {
        y += 18;
        fprintf(out, "<text x=\"16\" y=\"%.1f\" class=\"warn\">", y);
        xml_text(out, warn);
        fputs("</text>\n", out);
    }
    y += 34;
    y = bars(out, y, "GPU phases", s->gpu, s->n_gpu, s->gpu_busy_ns, s->gpu_tokens, true, max_ms);
    y += 10;
    y = bars(out, y, "Host buckets", s->host, s->n_host, s->host_busy_ns, s->tokens, false, max_ms);
    if (s->n_ranks > 0 || s->n_expert_ids > 0) {
        y = rank_bars(out, y, s);
    }

    /* The timeline strip. */
    y += 20;
    fprintf(out, "<text x=\"16\" y=\"%.1f\" class=\"h2\">", y);
    if (tok >= 0) {
        fprintf(out, "Timeline of token #%ld (%.3f ms", tok, (double)span / 1e6);
        if (s->n_token_events >= 3) {
            fputs(", the median token", out);
        }
        fputs(")", out);
    } else {
        fprintf(out, "Timeline of the whole trace (%.3f ms; no token events)", (double)span / 1e6);
    }
    fprintf(out, "</text>\n");
    y += 12;
    double axis_y = y + 14;
    int64_t step = tick_step(span);
    double strip_top = axis_y + 6;
    double lanes_h = 0;
    for (size_t k = 0; k < ntr; k++) {
        lanes_h += tr[k].lanes * LANE_H + 8;
    }
    double strip_bot = strip_top + (lanes_h > 0 ? lanes_h - 8 : LANE_H);
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>\n",
            PLOT_X, axis_y, PLOT_X + STRIP_W, axis_y);
    for (int64_t t = 0; t <= span; t += step) {
        double x = PLOT_X + (double)t / (double)span * STRIP_W;
        char lab[48];
        fmt_time(lab, sizeof lab, t, step);
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"%s\">%s</text>\n",
                x, axis_y, x, strip_bot, x, axis_y - 4,
                t == 0 ? "start" : (x > PLOT_X + STRIP_W - 30 ? "end" : "middle"), lab);
        if (t > INT64_MAX - step) {
            break;
        }
    }
    double ty = strip_top;
    for (size_t k = 0; k < ntr; k++) {
        const rpt_track *t = &s->tracks[tr[k].track];
        double h = tr[k].lanes * LANE_H;
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n",
                PLOT_X, ty, STRIP_W, h, t->is_gpu ? "#f4f4f8" : "#f8f8f4");
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"lbl\" text-anchor=\"end\">", LABEL_X,
                ty + 12);
        track_label(out, s, t);
        fputs("</text>\n", out);
        double lane_end[MAX_LANES];
        for (size_t l = 0; l < MAX_LANES; l++) {
            lane_end[l] = -1;
        }
        for (size_t i = tr[k].first; i < tr[k].last; i++) {
            const rpt_slice *x = &s->slices[i];
            if (x->depth >= MAX_LANES || x->ts_ns >= t1 || x->ts_ns + x->dur_ns < t0) {
                continue;
            }
            int64_t a = x->ts_ns > t0 ? x->ts_ns : t0;
            int64_t b = x->ts_ns + x->dur_ns < t1 ? x->ts_ns + x->dur_ns : t1;
            double xa = PLOT_X + (double)(a - t0) / (double)span * STRIP_W;
            double xb = PLOT_X + (double)(b - t0) / (double)span * STRIP_W;
            /* Sub-pixel slices: draw only what the lane does not show yet. */
            double *le = &lane_end[x->depth];
            if (xa < *le) {
                xa = *le;
            }
            if (xb - xa < 0.5) {
                if (xa > *le + 0.01 || *le < 0) {
                    xb = xa + 0.5;
                } else {
                    continue;
                }
            }
            *le = xb;
            const rpt_group *g = x->is_gpu ? &s->gpu[x->group] : &s->host[x->group];
            double ly = ty + x->depth * LANE_H;
            fprintf(out,
                    "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" "
                    "stroke=\"white\" stroke-width=\"0.5\"><title>",
                    xa, ly + 1, xb - xa, LANE_H - 2, color_of(x->is_gpu, x->group));
            xml_text(out, g->name);
            fprintf(out, " %.3f us</title></rect>\n", (double)x->dur_ns / 1e3);
            size_t chars = strlen(g->name);
            if ((xb - xa) > 6.2 * (double)chars + 6) {
                fprintf(out, "<text x=\"%.2f\" y=\"%.1f\" class=\"in\">", xa + 3, ly + 12);
                xml_text(out, g->name);
                fputs("</text>\n", out);
            }
        }
        ty += h + 8;
    }
    if (ntr == 0) {
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"note\">no slices in this window</text>\n",
                PLOT_X, strip_top + 12);
        ty += LANE_H + 8;
    }
    if (tracks_left_out > 0) {
        fprintf(out,
                "<text x=\"%.1f\" y=\"%.1f\" class=\"note\">%zu more tracks not drawn</text>\n",
                PLOT_X, ty + 10, tracks_left_out);
        ty += 16;
    }

    /* Legend. */
    ty += 22;
    fprintf(out, "<text x=\"16\" y=\"%.1f\" class=\"h2\">Legend</text>\n", ty);
    size_t col = 0;
    ty += 8;
    for (int pass = 0; pass < 2; pass++) {
        const rpt_group *g = pass == 0 ? s->gpu : s->host;
        size_t n = pass == 0 ? s->n_gpu : s->n_host;
        for (size_t i = 0; i < n && i < MAX_BAR_ROWS; i++) {
            double lx = 16 + (double)(col % 4) * 245;
            double ly = ty + (double)(col / 4) * 18;
            fprintf(out,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                    "<text x=\"%.1f\" y=\"%.1f\" class=\"lbl\">%s ",
                    lx, ly, color_of(pass == 0, (uint32_t)i), lx + 16, ly + 11,
                    pass == 0 ? "GPU" : "host");
            xml_text(out, g[i].name);
            fputs("</text>\n", out);
            col++;
        }
    }
    fputs("</svg>\n", out);
    double height = ty + (double)((col + 3) / 4) * 18 + 12;
    if (fclose(out) != 0 || body == NULL) {
        free(body);
        return -1;
    }
    out = NULL;
    fprintf(final,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
            "<style>.h1{font-size:18px;font-weight:bold}.h2{font-size:14px;font-weight:bold}"
            ".sub{font-size:12px;fill:#444}.lbl{font-size:12px}.val{font-size:11px;fill:#333}"
            ".note{font-size:11px;fill:#666}.warn{font-size:12px;fill:#c00;font-weight:bold}"
            ".tick{font-size:10px;fill:#555}.in{font-size:10px;fill:#000}</style>\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, height, W, height);

    fwrite(body, 1, body_len, final);
    free(body);
    fflush(final);
    return ferror(final) ? -1 : 0;
}
