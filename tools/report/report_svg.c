/* The SVG of `vkprof report --svg` (rpt_svg): time per token
 * as bars, and one token's timeline (host and GPU tracks on one time axis). */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "trace_reader.h"

/* Text is laid out from its estimated width: characters (UTF-8 code points)
 * x font size x FONT_W. 0.6 em is about the average advance of DejaVu Sans's
 * lowercase letters, digits and '_' (digits 0.64, '_' 0.5, 'm' 0.97, 'i'
 * 0.28), the font the SVG asks for first. */
#define FONT_W 0.6
#define LBL_PX 12.0 /* .lbl */
#define MARGIN 16.0
#define MIN_W 1000.0      /* the SVG's width, unless the label column needs more */
#define LABEL_MIN_W 184.0 /* the label column: at least this wide ... */
#define LABEL_MAX_CHARS                                                                            \
    48 /* ... and at most this many characters at LBL_PX: longer                                   \
          names are cut with an ellipsis (the whole name in a <title>) */
#define PLOT_W 640.0
#define STRIP_W 750.0
#define ROW_H 20.0
#define LANE_H 16.0
#define LEGEND_GAP 18.0
#define MAX_BAR_ROWS 24
#define MAX_TRACKS_DRAWN 16
#define MAX_LANES 8

/* One palette; a colour per name (colors_build): a phase and a bucket of the
 * same name get the same colour, in the bars, the timeline and the legend. */
static const char *const palette[] = {
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#2f4b7c", "#a05195", "#665191", "#a0cbe8", "#ffbe7d", "#8cd17d", "#f1ce63",
    "#86bcb6", "#ff9d9a", "#d4a6c8", "#fabfd2", "#d7b5a6", "#bab0ac", "#b6992d", "#499894"};
#define NCOLORS (sizeof palette / sizeof palette[0])

/* The page: its width and columns, the colours, the unit of the figures. */
typedef struct svg_page {
    double w;                         /* the SVG's width */
    double label_x;                   /* right edge of the label column */
    double plot_x;                    /* left edge of bars and timeline */
    double label_w;                   /* the label column's width */
    uint32_t *gpu_color, *host_color; /* per group: an index in palette, by name */
    const char *unit;                 /* "token", or "step" (a layer trace) */
} svg_page;

/* Colour indices by name: the GPU phases in order, then the host buckets;
 * a bucket named as a phase takes the phase's. -1 when out of memory. */
static int colors_build(const rpt_summary *s, svg_page *pg)
{
    pg->gpu_color = calloc(s->n_gpu ? s->n_gpu : 1, sizeof *pg->gpu_color);
    pg->host_color = calloc(s->n_host ? s->n_host : 1, sizeof *pg->host_color);
    if (pg->gpu_color == NULL || pg->host_color == NULL) {
        return -1;
    }
    uint32_t next = 0;
    for (size_t i = 0; i < s->n_gpu; i++) {
        pg->gpu_color[i] = next++;
    }
    for (size_t i = 0; i < s->n_host; i++) {
        size_t k = 0;
        while (k < s->n_gpu && strcmp(s->gpu[k].name, s->host[i].name) != 0) {
            k++;
        }
        pg->host_color[i] = k < s->n_gpu ? pg->gpu_color[k] : next++;
    }
    return 0;
}

/* The one colour of a group's name. */
static const char *color_of(const svg_page *pg, bool gpu, uint32_t g)
{
    return palette[(gpu ? pg->gpu_color[g] : pg->host_color[g]) % NCOLORS];
}

/* UTF-8 code points of the first n bytes (the names are valid UTF-8). */
static size_t chars_n(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        c += ((unsigned char)s[i] & 0xc0) != 0x80;
    }
    return c;
}

static double text_w(const char *s, double px)
{
    return (double)chars_n(s, strlen(s)) * px * FONT_W;
}

/* The byte length of the first k code points of s. */
static size_t bytes_of_chars(const char *s, size_t k)
{
    size_t i = 0;
    while (s[i] != '\0' && k > 0) {
        i++;
        while (((unsigned char)s[i] & 0xc0) == 0x80) {
            i++;
        }
        k--;
    }
    return i;
}

/* Text for XML: the names are clean UTF-8 already (rpt_clean_string). */
static void xml_text_n(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n && s[i] != '\0'; i++) {
        switch (s[i]) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default: fputc(s[i], out);
        }
    }
}

static void xml_text(FILE *out, const char *s)
{
    xml_text_n(out, s, strlen(s));
}

/* The content of a <text> of font px no wider than max_w: the text, or as
 * much of it as fits with an ellipsis, then the whole text in a <title>. */
static void fit_text(FILE *out, const char *s, double px, double max_w)
{
    if (text_w(s, px) <= max_w) {
        xml_text(out, s);
        return;
    }
    size_t k = (size_t)(max_w / (px * FONT_W));
    k = k > 1 ? k - 1 : 0;
    xml_text_n(out, s, bytes_of_chars(s, k));
    fputs("\xe2\x80\xa6<title>", out); /* U+2026 */
    xml_text(out, s);
    fputs("</title>", out);
}

/* A label of the left column, right-aligned at pg->label_x, baseline y. */
static void left_label(FILE *out, const svg_page *pg, double y, const char *s)
{
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"lbl\" text-anchor=\"end\">", pg->label_x, y);
    fit_text(out, s, LBL_PX, pg->label_w);
    fputs("</text>", out);
}

/* Text in lines of at most max_w (estimated) from x, class cls of font px,
 * broken at spaces (a word longer than a line at the line's end); the first
 * baseline at y, the next ones line_h below. Returns the last baseline. */
static double wrap_text(FILE *out, double x, double y, const char *cls, double px, double line_h,
                        const char *text, double max_w)
{
    size_t per_line = (size_t)(max_w / (px * FONT_W));
    per_line = per_line < 8 ? 8 : per_line;
    const char *p = text;
    bool first = true;
    while (*p != '\0') {
        const char *q = p, *space = NULL;
        size_t chars = 0;
        while (*q != '\0' && chars < per_line) {
            if (*q == ' ') {
                space = q;
            }
            q += bytes_of_chars(q, 1);
            chars++;
        }
        const char *end = q;
        if (*q != '\0' && *q != ' ' && space != NULL && space > p) {
            end = space;
        }
        if (!first) {
            y += line_h;
        }
        first = false;
        fprintf(out, "<text x=\"%.6g\" y=\"%.6g\" class=\"%s\">", x, y, cls);
        xml_text_n(out, p, (size_t)(end - p));
        fputs("</text>\n", out);
        p = end;
        while (*p == ' ') {
            p++;
        }
    }
    return y;
}

/* A value right of a bar that ends at bar_end, kept inside the page. */
static void value_text(FILE *out, const svg_page *pg, double bar_end, double y, const char *v)
{
    double x = bar_end + 6, w = text_w(v, 11.0);
    if (x + w > pg->w - MARGIN) {
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"val\" text-anchor=\"end\">",
                pg->w - MARGIN, y);
    } else {
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"val\">", x, y);
    }
    xml_text(out, v);
    fputs("</text>\n", out);
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

/* Bars of ms/token for one section; returns the next y. none: what to say
 * when the section is empty (NULL: "none in the trace"). colour: each row's
 * GPU group (its slices' colour), for rows that are not s->gpu's (the
 * estimates); NULL: row i is group i. */
static double bars(FILE *out, const svg_page *pg, double y, const char *title, const rpt_group *g,
                   size_t n, uint64_t busy, uint64_t tokens, bool gpu, double max_ms,
                   const char *none, const uint32_t *colour)
{
    if (colour != NULL) { /* estimates: shares of their sum */
        fprintf(out,
                "<text x=\"16\" y=\"%.1f\" class=\"h2\">%s (ms per %s~; %% of their sum)</text>\n",
                y, title, pg->unit);
    } else {
        fprintf(
            out,
            "<text x=\"16\" y=\"%.1f\" class=\"h2\">%s (ms per %s; %% of %s busy time)</text>\n", y,
            title, pg->unit, gpu ? "GPU" : "host");
    }
    y += 10;
    if (n == 0) {
        y = wrap_text(out, pg->plot_x, y + 14, "note", 11.0, 14.0,
                      none != NULL ? none : "none in the trace", pg->w - MARGIN - pg->plot_x);
        return y + 14;
    }
    size_t shown = n > MAX_BAR_ROWS ? MAX_BAR_ROWS - 1 : n;
    for (size_t i = 0; i < shown; i++) {
        double ms = ms_per(g[i].total_ns, tokens);
        double w = max_ms > 0 ? ms / max_ms * PLOT_W : 0;
        if (w < 1 && g[i].total_ns > 0) {
            w = 1;
        }
        double pct = busy ? 100.0 * (double)g[i].total_ns / (double)busy : 0.0;
        left_label(out, pg, y + 14, g[i].name);
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"14\" fill=\"%s\"><title>",
                pg->plot_x, y + 3, w, color_of(pg, gpu, colour != NULL ? colour[i] : (uint32_t)i));
        xml_text(out, g[i].name);
        fprintf(out, " (%s)</title></rect>", gpu ? "GPU" : "host");
        char v[64];
        snprintf(v, sizeof v, "%.3f ms (%.1f%%)", ms, pct);
        value_text(out, pg, pg->plot_x + w, y + 14, v);
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
                pg->label_x, y + 14, n - shown, pg->plot_x, y + 14, ms_per(rest, tokens));
        y += ROW_H;
    }
    return y + 10;
}

/* Where the trace's GPU slices are a sample (metadata.gpu_sampling.
 * estimates): each timed phase's estimate as a row, in the slices' order,
 * outer phases left out (the busy note says their time); colour[i]: the
 * row's group. NULL when there are none (or out of memory). */
static rpt_group *estimate_rows(const rpt_summary *s, uint32_t **colour, size_t *n, uint64_t *sum)
{
    *n = 0;
    *sum = 0;
    *colour = NULL;
    if (s->n_estimates == 0 || s->n_gpu == 0) {
        return NULL;
    }
    rpt_group *g = calloc(s->n_gpu, sizeof *g);
    *colour = calloc(s->n_gpu, sizeof **colour);
    if (g == NULL || *colour == NULL) {
        free(g);
        free(*colour);
        *colour = NULL;
        return NULL;
    }
    for (size_t i = 0; i < s->n_gpu; i++) {
        for (size_t k = 0; k < s->n_estimates; k++) {
            const rpt_estimate *e = &s->estimates[k];
            if (!e->outer && strcmp(e->name, s->gpu[i].name) == 0) {
                g[*n] = (rpt_group){s->gpu[i].name, e->est_ns, e->est_ns, e->calls};
                (*colour)[*n] = (uint32_t)i;
                (*n)++;
                *sum += e->est_ns;
                break;
            }
        }
    }
    return g;
}

typedef struct strip_track {
    uint32_t track;
    uint32_t lanes;
    size_t first, last; /* slice range of the track */
} strip_track;

/* Collective against skew per rank, the slowest rank, and the expert load
 * (merged traces; the expert load also without). Returns the next y. */
static double rank_bars(FILE *out, const svg_page *pg, double y, const rpt_summary *s)
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
        char head[256];
        snprintf(head, sizeof head,
                 "Ranks (ms per %s): collective (allreduce_*) against arrival skew (rendezvous "
                 "probes)",
                 pg->unit);
        y = wrap_text(out, 16, y, "h2", 14.0, 18.0, head, pg->w - 2 * MARGIN);
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
                char lab[RPT_MAX_NAME + 32], val[96];
                snprintf(lab, sizeof lab, "%s %s", s->ranks[r].name,
                         kind == 0 ? "collective" : "skew");
                left_label(out, pg, y + 14, lab);
                fprintf(out,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"14\" "
                        "fill=\"%s\"/>",
                        pg->plot_x, y + 3, w, kind == 0 ? "#4e79a7" : "#e15759");
                snprintf(val, sizeof val, "%.3f ms%s", ms,
                         kind == 1 && (int)r == v.slowest ? " (the slowest rank: least wait)" : "");
                value_text(out, pg, pg->plot_x + w, y + 14, val);
                y += ROW_H;
            }
        }
        if (shown < v.n_ranks) {
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"note\">%zu more ranks</text>\n",
                    pg->plot_x, y + 14, v.n_ranks - shown);
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
        char head[256];
        snprintf(head, sizeof head,
                 "Expert load (tokens per expert id, all ranks, summed over %u MoE layer(s); "
                 "max/mean of the worst layer %.2f, over %u experts)",
                 v.n_moe_layers, worst, v.n_experts);
        y = wrap_text(out, 16, y, "h2", 14.0, 18.0, head, pg->w - 2 * MARGIN);
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
                    pg->label_x, y + 14, e, pg->plot_x, y + 3, w, pg->plot_x + w + 6, y + 14, c);
            y += ROW_H;
        }
        if (used > rows) {
            fprintf(
                out,
                "<text x=\"%.1f\" y=\"%.1f\" class=\"note\">%u more experts with tokens</text>\n",
                pg->plot_x, y + 14, used - rows);
            y += ROW_H;
        }
        y += 10;
    }
    rpt_rank_view_free(&v);
    return y;
}

/* A track's label: its rank's name first on a merged trace. */
static void track_label(char *buf, size_t size, const rpt_summary *s, const rpt_track *t)
{
    const char *rank = "", *sep = "";
    for (size_t r = 0; r < s->n_ranks; r++) {
        if (s->ranks[r].host_pid == t->pid || s->ranks[r].gpu_pid == t->pid) {
            rank = s->ranks[r].name;
            sep = ": ";
            break;
        }
    }
    if (t->name != NULL) {
        snprintf(buf, size, "%s%s%s %s", rank, sep, t->is_gpu ? "GPU" : "host", t->name);
    } else {
        snprintf(buf, size, "%s%s%s pid %" PRId64 " tid %" PRId64, rank, sep,
                 t->is_gpu ? "GPU" : "host", t->pid, t->tid);
    }
}

/* A legend entry's text: the name and where it is timed. */
static void legend_text(char *buf, size_t size, const char *kind, const char *name)
{
    snprintf(buf, size, "%s %s", kind, name);
}

int rpt_svg(const rpt_summary *s, const char *title, FILE *out)
{
    return rpt_svg_meta(s, NULL, 0, title, out);
}

int rpt_svg_meta(const rpt_summary *s, const char *meta, size_t meta_len, const char *title,
                 FILE *out)
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

    /* The page: the label column as wide as its longest label (estimated,
     * at most LABEL_MAX_CHARS characters), the plot right of it, the page
     * as wide as both need. */
    svg_page pg = {.unit = rpt_meta_layer_trace(s, meta, meta_len) ? "step" : "token"};
    if (colors_build(s, &pg) != 0) {
        free(pg.gpu_color);
        free(pg.host_color);
        return -1;
    }
    double need = LABEL_MIN_W;
    for (int pass = 0; pass < 2; pass++) {
        const rpt_group *g = pass == 0 ? s->gpu : s->host;
        size_t n = pass == 0 ? s->n_gpu : s->n_host;
        for (size_t i = 0; i < n && i < MAX_BAR_ROWS; i++) {
            double w = text_w(g[i].name, LBL_PX);
            need = w > need ? w : need;
        }
    }
    for (size_t r = 0; r < s->n_ranks && r < MAX_BAR_ROWS / 2; r++) {
        double w = text_w(s->ranks[r].name, LBL_PX) + text_w(" collective", LBL_PX);
        need = w > need ? w : need;
    }
    char lab[3 * RPT_MAX_NAME + 64];
    for (size_t k = 0; k < ntr; k++) {
        track_label(lab, sizeof lab, s, &s->tracks[tr[k].track]);
        double w = text_w(lab, LBL_PX);
        need = w > need ? w : need;
    }
    const double most = LABEL_MAX_CHARS * LBL_PX * FONT_W;
    pg.label_w = need < most ? need : most;
    pg.label_x = MARGIN + pg.label_w;
    pg.plot_x = pg.label_x + 10;
    pg.w = pg.plot_x + STRIP_W + 40;
    pg.w = pg.w < MIN_W ? MIN_W : pg.w;
    const double text_room = pg.w - 2 * MARGIN; /* for lines that start at the margin */

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
        free(pg.gpu_color);
        free(pg.host_color);
        return -1;
    }
    double y = 28;
    char warn[1024];
    if (rpt_loss_warning(s, warn, sizeof warn) > 0) {
        /* at the top, above the title: the GPU bars below are partial */
        y = wrap_text(out, 16, y - 6, "warn", 12.0, 16.0, warn, text_room) + 6 + 22;
    }
    {
        char *t = title != NULL && *title != '\0' ? rpt_clean_string(title) : NULL;
        char h1[RPT_MAX_NAME + 32];
        snprintf(h1, sizeof h1, "vkprof report%s%s", t != NULL ? ": " : "", t != NULL ? t : "");
        free(t);
        y = wrap_text(out, 16, y, "h1", 18.0, 22.0, h1, text_room);
    }
    y += 20;
    {
        const char *dev = s->device != NULL ? s->device : s->process_name_gpu;
        char sub[1024];
        size_t n = (size_t)snprintf(
            sub, sizeof sub, "%s | %" PRIu64 " %ss | GPU busy %.3f ms/%s | host busy %.3f ms/%s",
            dev != NULL ? dev : "device not recorded", s->tokens, pg.unit,
            ms_per(s->gpu_busy_ns, s->gpu_tokens), pg.unit, ms_per(s->host_busy_ns, s->tokens),
            pg.unit);
        if (s->cal_method != NULL && n < sizeof sub) {
            n += (size_t)snprintf(sub + n, sizeof sub - n, " | calibration %s", s->cal_method);
            if (s->has_error_bound && n < sizeof sub) {
                snprintf(sub + n, sizeof sub - n, " (+/-%" PRIu64 " ns)", s->error_bound_ns);
            }
        }
        y = wrap_text(out, 16, y, "sub", 12.0, 16.0, sub, text_room);
    }
    if (strcmp(pg.unit, "step") == 0) {
        y = wrap_text(out, 16, y + 16, "note", 11.0, 14.0,
                      "a step: one app wait that retired GPU work (a fence, queue or device "
                      "wait), as the vkprof layer counts them; not a token: an app may wait "
                      "several times per token",
                      text_room);
    }
    /* GPU busy and idle per step (issue 26), as the text summary says it:
     * when the GPU waits for the host, the bars below are not the step */
    for (size_t t = 0; t < s->n_tracks; t++) {
        rpt_gpu_idle g;
        if (rpt_gpu_idle_of(s, t, &g) != 1) {
            continue;
        }
        char name[RPT_MAX_NAME + 64], line[RPT_MAX_NAME + 256];
        track_label(name, sizeof name, s, &s->tracks[t]);
        int n = snprintf(line, sizeof line,
                         "%s: busy %.3f ms/%s, idle %.3f ms/%s (%.1f%% idle, the median %s "
                         "%.1f%%) over %zu %s(s) with timed GPU work",
                         name, (double)g.busy_ns / 1e6 / (double)g.windows, pg.unit,
                         (double)(g.window_ns - g.busy_ns) / 1e6 / (double)g.windows, pg.unit,
                         100.0 * (double)(g.window_ns - g.busy_ns) / (double)g.window_ns, pg.unit,
                         g.median_idle_pct, g.windows, pg.unit);
        if (g.empty > 0 && n > 0 && (size_t)n < sizeof line) {
            snprintf(line + n, sizeof line - (size_t)n, "; %zu %s(s) with none left out", g.empty,
                     pg.unit);
        }
        y = wrap_text(out, 16, y + 16, "note", 11.0, 14.0, line, text_room);
    }
    if (s->has_dropped && s->dropped_events > 0) {
        snprintf(warn, sizeof warn,
                 "WARNING: %" PRIu64
                 " events were dropped (event store full): the figures miss them",
                 s->dropped_events);
        y = wrap_text(out, 16, y + 18, "warn", 12.0, 16.0, warn, text_room);
    }
    if (rpt_repeat_warning(s, warn, sizeof warn) > 0) {
        y = wrap_text(out, 16, y + 18, "warn", 12.0, 16.0, warn, text_room);
    }
    char unmapped[1024];
    rpt_unmapped_note(s, meta, meta_len, unmapped, sizeof unmapped);
    if (unmapped[0] != '\0' && s->n_gpu > 0) {
        y = wrap_text(out, 16, y + 18, "warn", 12.0, 16.0, unmapped, text_room);
    }
    y += 34;
    /* slices that are a sample: each phase's estimate instead (issue 26) */
    size_t n_est;
    uint64_t est_sum;
    uint32_t *est_colour;
    rpt_group *est = estimate_rows(s, &est_colour, &n_est, &est_sum);
    if (est != NULL && n_est > 0) {
        for (size_t i = 0; i < n_est; i++) {
            double v = ms_per(est[i].total_ns, s->tokens);
            max_ms = v > max_ms ? v : max_ms;
        }
        y = bars(out, &pg, y, "GPU phases, estimated (the trace's slices are a sample)", est, n_est,
                 est_sum, s->tokens, true, max_ms, NULL, est_colour);
    } else {
        y = bars(out, &pg, y, "GPU phases", s->gpu, s->n_gpu, s->gpu_busy_ns, s->gpu_tokens, true,
                 max_ms, unmapped[0] != '\0' ? unmapped : NULL, NULL);
    }
    free(est);
    free(est_colour);
    y += 10;
    y = bars(out, &pg, y, "Host buckets", s->host, s->n_host, s->host_busy_ns, s->tokens, false,
             max_ms, NULL, NULL);
    if (s->n_ranks > 0 || s->n_expert_ids > 0) {
        y = rank_bars(out, &pg, y, s);
    }

    /* The timeline strip. */
    y += 20;
    if (tok >= 0) {
        snprintf(warn, sizeof warn, "Timeline of %s #%ld (%.3f ms%s%s)", pg.unit, tok,
                 (double)span / 1e6, s->n_token_events >= 3 ? ", the median " : "",
                 s->n_token_events >= 3 ? pg.unit : "");
    } else {
        snprintf(warn, sizeof warn, "Timeline of the whole trace (%.3f ms; no %s events)",
                 (double)span / 1e6, pg.unit);
    }
    y = wrap_text(out, 16, y, "h2", 14.0, 18.0, warn, text_room);
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
            pg.plot_x, axis_y, pg.plot_x + STRIP_W, axis_y);
    for (int64_t t = 0; t <= span; t += step) {
        double x = pg.plot_x + (double)t / (double)span * STRIP_W;
        char tl[48];
        fmt_time(tl, sizeof tl, t, step);
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"%s\">%s</text>\n",
                x, axis_y, x, strip_bot, x, axis_y - 4,
                t == 0 ? "start" : (x > pg.plot_x + STRIP_W - 30 ? "end" : "middle"), tl);
        if (t > INT64_MAX - step) {
            break;
        }
    }
    double ty = strip_top;
    for (size_t k = 0; k < ntr; k++) {
        const rpt_track *t = &s->tracks[tr[k].track];
        double h = tr[k].lanes * LANE_H;
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n",
                pg.plot_x, ty, STRIP_W, h, t->is_gpu ? "#f4f4f8" : "#f8f8f4");
        track_label(lab, sizeof lab, s, t);
        left_label(out, &pg, ty + 12, lab);
        fputs("\n", out);
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
            double xa = pg.plot_x + (double)(a - t0) / (double)span * STRIP_W;
            double xb = pg.plot_x + (double)(b - t0) / (double)span * STRIP_W;
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
                    xa, ly + 1, xb - xa, LANE_H - 2, color_of(&pg, x->is_gpu, x->group));
            xml_text(out, g->name);
            fprintf(out, " %.3f us</title></rect>\n", (double)x->dur_ns / 1e3);
            if (xb - xa > text_w(g->name, 10.0) + 6) {
                fprintf(out, "<text x=\"%.2f\" y=\"%.1f\" class=\"in\">", xa + 3, ly + 12);
                xml_text(out, g->name);
                fputs("</text>\n", out);
            }
        }
        ty += h + 8;
    }
    if (ntr == 0) {
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"note\">no slices in this window</text>\n",
                pg.plot_x, strip_top + 12);
        ty += LANE_H + 8;
    }
    if (tracks_left_out > 0) {
        fprintf(out,
                "<text x=\"%.1f\" y=\"%.1f\" class=\"note\">%zu more tracks not drawn</text>\n",
                pg.plot_x, ty + 10, tracks_left_out);
        ty += 16;
    }

    /* Legend: one entry per name (a phase and a bucket of one name share
     * it), as wide as its text (estimated), in rows that wrap at the page's
     * width. */
    ty += 22;
    fprintf(out, "<text x=\"16\" y=\"%.1f\" class=\"h2\">Legend</text>\n", ty);
    ty += 8;
    double lx = MARGIN, ly = ty;
    bool any = false;
    for (int pass = 0; pass < 2; pass++) {
        const rpt_group *g = pass == 0 ? s->gpu : s->host;
        size_t n = pass == 0 ? s->n_gpu : s->n_host;
        for (size_t i = 0; i < n && i < MAX_BAR_ROWS; i++) {
            const char *kind = pass == 0 ? "GPU" : "host";
            if (pass == 0) {
                for (size_t k = 0; k < s->n_host && k < MAX_BAR_ROWS; k++) {
                    if (strcmp(s->host[k].name, g[i].name) == 0) {
                        kind = "GPU+host";
                        break;
                    }
                }
            } else {
                size_t k = 0;
                while (k < s->n_gpu && k < MAX_BAR_ROWS && strcmp(s->gpu[k].name, g[i].name) != 0) {
                    k++;
                }
                if (k < s->n_gpu && k < MAX_BAR_ROWS) {
                    continue; /* listed with the GPU phase of its name */
                }
            }
            legend_text(lab, sizeof lab, kind, g[i].name);
            double tw = text_w(lab, LBL_PX);
            double max_tw = pg.w - 2 * MARGIN - 16;
            tw = tw > max_tw ? max_tw : tw;
            if (any && lx + 16 + tw > pg.w - MARGIN) {
                lx = MARGIN;
                ly += 18;
            }
            fprintf(out,
                    "<g class=\"legend\"><rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" "
                    "fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\" class=\"lbl\">",
                    lx, ly, color_of(&pg, pass == 0, (uint32_t)i), lx + 16, ly + 11);
            fit_text(out, lab, LBL_PX, max_tw);
            fputs("</text></g>\n", out);
            lx += 16 + tw + LEGEND_GAP;
            any = true;
        }
    }
    fputs("</svg>\n", out);
    double height = (any ? ly + 18 : ty) + 12;
    free(pg.gpu_color);
    free(pg.host_color);
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
            ceil(pg.w), height, ceil(pg.w), height);

    fwrite(body, 1, body_len, final);
    free(body);
    fflush(final);
    return ferror(final) ? -1 : 0;
}
