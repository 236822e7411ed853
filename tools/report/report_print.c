/* The text summary of `vkprof report`: rpt_print, rpt_loss_warning,
 * rpt_repeat_warning; and the per-rank figures it prints
 * (rpt_rank_view_build): collective time against arrival skew, the slowest
 * rank, the expert load. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "trace_reader.h"

/* ---- per-rank figures ---------------------------------------------------- */

static bool starts_with(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

static bool ends_with(const char *s, const char *p)
{
    size_t n = strlen(s), m = strlen(p);
    return n >= m && strcmp(s + n - m, p) == 0;
}

/* The rank of a pid: its index in s->ranks, or 0 for the pids of an unmerged
 * trace; -1: none. */
static int rank_of(const rpt_summary *s, int64_t pid)
{
    if (s->n_ranks == 0) {
        return (pid == VKPROF_TF_PID_HOST || pid == VKPROF_TF_PID_GPU) ? 0 : -1;
    }
    for (size_t r = 0; r < s->n_ranks; r++) {
        if (s->ranks[r].host_pid == pid || s->ranks[r].gpu_pid == pid) {
            return (int)r;
        }
    }
    return -1;
}

typedef struct wait_rec {
    int64_t step;
    uint32_t rank;
    uint64_t ns;
} wait_rec;

static int cmp_wait(const void *a, const void *b)
{
    const wait_rec *x = a, *y = b;
    if (x->step != y->step) {
        return x->step < y->step ? -1 : 1;
    }
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* One routed id: its rank, its MoE layer (the k-th moe_host_sync span of
 * the token on its track), the expert. */
typedef struct route_rec {
    uint32_t rank, layer, expert;
} route_rec;

static int cmp_route(const void *a, const void *b)
{
    const route_rec *x = a, *y = b;
    if (x->rank != y->rank) {
        return x->rank < y->rank ? -1 : 1;
    }
    if (x->layer != y->layer) {
        return x->layer < y->layer ? -1 : 1;
    }
    return (x->expert > y->expert) - (x->expert < y->expert);
}

/* max/mean of each run of one (rank, layer) in sorted records, into
 * imb[row * n_layers + layer], row = the rank (per_rank) or fixed_row (every
 * rank together: the records' ranks were all set to 0 and sorted again). */
static void layer_imbalance(const route_rec *rec, size_t n, uint32_t n_experts, uint32_t n_layers,
                            size_t fixed_row, bool per_rank, double *imb)
{
    size_t i = 0;
    while (i < n) {
        size_t j = i;
        uint64_t total = 0, max = 0;
        while (j < n && rec[j].rank == rec[i].rank && rec[j].layer == rec[i].layer) {
            size_t k = j;
            while (k < n && rec[k].rank == rec[j].rank && rec[k].layer == rec[j].layer &&
                   rec[k].expert == rec[j].expert) {
                k++;
            }
            uint64_t c = (uint64_t)(k - j);
            total += c;
            max = c > max ? c : max;
            j = k;
        }
        size_t row = per_rank ? rec[i].rank : fixed_row;
        imb[row * n_layers + rec[i].layer] = (double)max * n_experts / (double)total;
        i = j;
    }
}

void rpt_rank_view_free(rpt_rank_view *v)
{
    free(v->rank);
    free(v->steps);
    free(v->counts);
    free(v->layer_imbalance);
    memset(v, 0, sizeof *v);
}

int rpt_rank_view_build(const rpt_summary *s, rpt_rank_view *v)
{
    memset(v, 0, sizeof *v);
    v->slowest = -1;
    v->n_ranks = s->n_ranks > 0 ? s->n_ranks : 1;
    size_t ns = s->n_slices;
    v->rank = calloc(v->n_ranks, sizeof *v->rank);
    bool *is_coll = calloc(ns ? ns : 1, sizeof *is_coll);
    bool *in_coll = calloc(ns ? ns : 1, sizeof *in_coll);
    wait_rec *w = malloc((ns ? ns : 1) * sizeof *w);
    if (v->rank == NULL || is_coll == NULL || in_coll == NULL || w == NULL) {
        free(is_coll);
        free(in_coll);
        free(w);
        rpt_rank_view_free(v);
        return -1;
    }
    /* tokens per rank */
    for (size_t r = 0; r < v->n_ranks; r++) {
        uint64_t n = 0;
        int64_t pid = s->n_ranks > 0 ? s->ranks[r].host_pid : VKPROF_TF_PID_HOST;
        for (size_t i = 0; i < s->n_token_pids; i++) {
            n += s->token_pids[i] == pid;
        }
        v->rank[r].tokens = n > 0 ? n : s->tokens;
    }
    uint32_t max_id = 0;
    bool any_ids = false;
    for (size_t i = 0; i < s->n_expert_ids; i++) {
        any_ids = true;
        max_id = s->expert_ids[i] > max_id ? s->expert_ids[i] : max_id;
    }
    if (any_ids) {
        v->n_experts = max_id + 1;
        v->counts = calloc(v->n_ranks * v->n_experts, sizeof *v->counts);
        if (v->counts == NULL) {
            free(is_coll);
            free(in_coll);
            free(w);
            rpt_rank_view_free(v);
            return -1;
        }
    }
    route_rec *rec = malloc((s->n_expert_ids ? s->n_expert_ids : 1) * sizeof *rec);
    if (rec == NULL) {
        free(is_coll);
        free(in_coll);
        free(w);
        rpt_rank_view_free(v);
        return -1;
    }
    size_t nrec = 0;
    uint32_t layer = 0, last_track = UINT32_MAX;
    int64_t last_step = INT64_MIN;
    /* Slices are sorted by track, then start, parents first: a parent's flags
     * are known before its children's. */
    size_t nw = 0;
    for (size_t i = 0; i < ns; i++) {
        const rpt_slice *x = &s->slices[i];
        if (x->is_gpu) {
            continue;
        }
        int r = rank_of(s, s->tracks[x->track].pid);
        const char *b = s->host[x->group].name;
        is_coll[i] = !x->probe && starts_with(b, VKPROF_TF_COLLECTIVE_PREFIX) &&
                     !ends_with(b, VKPROF_TF_PROBE_SUFFIX);
        if (x->parent != RPT_NO_PARENT && x->parent < i) {
            in_coll[i] = is_coll[x->parent] || in_coll[x->parent];
        }
        if (r < 0) {
            continue;
        }
        rpt_rank_stats *rs = &v->rank[r];
        if (is_coll[i] && !in_coll[i]) {
            rs->collective_ns += (uint64_t)x->dur_ns;
            rs->collectives++;
        }
        if (x->probe) {
            rs->probe_ns += (uint64_t)x->dur_ns;
            rs->probes++;
            w[nw++] = (wait_rec){.step = x->step, .rank = (uint32_t)r, .ns = (uint64_t)x->dur_ns};
        }
        if (x->n_experts > 0) {
            rs->routing_spans++;
            /* the k-th routing span of a step on this track: MoE layer k */
            if (x->track != last_track || x->step != last_step) {
                layer = 0;
                last_track = x->track;
                last_step = x->step;
            } else if (layer < RPT_MAX_MOE_LAYERS) {
                layer++;
            }
            for (uint32_t k = 0; k < x->n_experts; k++) {
                uint32_t e = s->expert_ids[x->experts_at + k];
                v->counts[(size_t)r * v->n_experts + e]++;
                rs->routed++;
                if (layer < RPT_MAX_MOE_LAYERS) {
                    rec[nrec++] = (route_rec){(uint32_t)r, layer, e};
                    v->n_moe_layers = layer + 1 > v->n_moe_layers ? layer + 1 : v->n_moe_layers;
                } else {
                    v->layers_cut = 1;
                }
            }
        }
    }
    free(is_coll);
    free(in_coll);
    if (nrec > 0) {
        /* max/mean per (rank, MoE layer), then per layer over every rank */
        v->layer_imbalance = calloc((v->n_ranks + 1) * v->n_moe_layers, sizeof *v->layer_imbalance);
        if (v->layer_imbalance == NULL) {
            free(rec);
            free(w);
            rpt_rank_view_free(v);
            return -1;
        }
        qsort(rec, nrec, sizeof *rec, cmp_route);
        layer_imbalance(rec, nrec, v->n_experts, v->n_moe_layers, 0, true, v->layer_imbalance);
        for (size_t i = 0; i < nrec; i++) {
            rec[i].rank = 0;
        }
        qsort(rec, nrec, sizeof *rec, cmp_route);
        layer_imbalance(rec, nrec, v->n_experts, v->n_moe_layers, v->n_ranks, false,
                        v->layer_imbalance);
    }
    free(rec);
    for (size_t r = 0; r < v->n_ranks && v->counts != NULL; r++) {
        for (uint32_t e = 0; e < v->n_experts; e++) {
            uint64_t c = v->counts[r * v->n_experts + e];
            v->rank[r].max_expert = c > v->rank[r].max_expert ? c : v->rank[r].max_expert;
        }
    }
    /* Per step: each rank's probe wait; the slowest rank waited least. */
    if (nw > 0) {
        qsort(w, nw, sizeof *w, cmp_wait);
        /* sum the waits of one (step, rank) */
        size_t m = 0;
        for (size_t i = 0; i < nw; i++) {
            if (m > 0 && w[m - 1].step == w[i].step && w[m - 1].rank == w[i].rank) {
                w[m - 1].ns += w[i].ns;
            } else {
                w[m++] = w[i];
            }
        }
        size_t nsteps = 0;
        for (size_t i = 0; i < m; i++) {
            nsteps += i == 0 || w[i].step != w[i - 1].step;
        }
        v->steps = calloc(nsteps, sizeof *v->steps);
        if (v->steps == NULL) {
            free(w);
            rpt_rank_view_free(v);
            return -1;
        }
        for (size_t i = 0; i < m; i++) {
            if (i == 0 || w[i].step != w[i - 1].step) {
                v->steps[v->n_steps++] = (rpt_step_skew){.step = w[i].step,
                                                         .slowest = (int)w[i].rank,
                                                         .min_ns = w[i].ns,
                                                         .max_ns = w[i].ns,
                                                         .ranks = 1};
                continue;
            }
            rpt_step_skew *st = &v->steps[v->n_steps - 1];
            st->ranks++;
            if (w[i].ns < st->min_ns) {
                st->min_ns = w[i].ns;
                st->slowest = (int)w[i].rank;
            }
            if (w[i].ns > st->max_ns) {
                st->max_ns = w[i].ns;
            }
        }
        for (size_t i = 0; i < v->n_steps; i++) {
            if (v->steps[i].ranks > 1) {
                v->rank[v->steps[i].slowest].slowest_tokens++;
            }
        }
        /* overall: the least probe wait per token, among ranks with probes */
        double best = 0;
        for (size_t r = 0; r < v->n_ranks; r++) {
            if (v->rank[r].probes == 0) {
                continue;
            }
            double per = (double)v->rank[r].probe_ns / (double)v->rank[r].tokens;
            if (v->slowest < 0 || per < best) {
                best = per;
                v->slowest = (int)r;
            }
        }
    }
    free(w);
    return 0;
}

/* ---- metadata the summary does not keep (issue 25) -------------------------- */

static void put(char *buf, size_t size, size_t *len, const char *text, const uint64_t *v);

static bool json_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The end of the string that starts at b[i] ('"'). */
static size_t skip_string(const char *b, size_t len, size_t i)
{
    for (i++; i < len && b[i] != '"'; i++) {
        if (b[i] == '\\') {
            i++;
        }
    }
    return i < len ? i + 1 : len;
}

/* The end of the JSON value at b[i] (valid JSON: rpt_parse accepted it). */
static size_t skip_value(const char *b, size_t len, size_t i)
{
    if (i >= len) {
        return len;
    }
    if (b[i] == '"') {
        return skip_string(b, len, i);
    }
    if (b[i] != '{' && b[i] != '[') {
        while (i < len && b[i] != ',' && b[i] != '}' && b[i] != ']' && !json_ws(b[i])) {
            i++;
        }
        return i;
    }
    size_t depth = 0;
    while (i < len) {
        char c = b[i];
        if (c == '"') {
            i = skip_string(b, len, i);
            continue;
        }
        if (c == '{' || c == '[') {
            depth++;
        } else if ((c == '}' || c == ']') && --depth == 0) {
            return i + 1;
        }
        i++;
    }
    return len;
}

int rpt_meta_find(const char *buf, size_t len, const char **meta, size_t *meta_len)
{
    size_t i = len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
    while (i < len && json_ws(buf[i])) {
        i++;
    }
    if (i >= len || buf[i] != '{') {
        return -1; /* the JSON Array Format: no metadata */
    }
    i++;
    static const char key[] = "\"" VKPROF_TF_META "\"";
    while (i < len) {
        while (i < len && (json_ws(buf[i]) || buf[i] == ',')) {
            i++;
        }
        if (i >= len || buf[i] != '"') {
            return -1; /* '}': the end of the top-level object */
        }
        size_t k = i;
        i = skip_string(buf, len, i);
        bool is_meta = i - k == sizeof key - 1 && memcmp(buf + k, key, sizeof key - 1) == 0;
        while (i < len && (json_ws(buf[i]) || buf[i] == ':')) {
            i++;
        }
        size_t end = skip_value(buf, len, i);
        if (is_meta) {
            *meta = buf + i;
            *meta_len = end - i;
            return 0;
        }
        i = end;
    }
    return -1;
}

/* The label the vkprof layer gives each of its contexts (src/layer/layer.c):
 * "device N, queue family F", ", simultaneous use" after it for its second
 * context of a family. */
static bool layer_label(const cJSON *meta)
{
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(meta, VKPROF_TF_META_LABEL);
    if (!cJSON_IsString(l) || strncmp(l->valuestring, "device ", 7) != 0) {
        return false;
    }
    unsigned dev = 0, fam = 0;
    int n = -1;
    if (sscanf(l->valuestring, "device %u, queue family %u%n", &dev, &fam, &n) != 2 || n < 0) {
        return false;
    }
    return l->valuestring[n] == '\0' || strcmp(l->valuestring + n, ", simultaneous use") == 0;
}

int rpt_meta_layer_trace(const rpt_summary *s, const char *meta, size_t meta_len)
{
    /* the layer's own spans: its reading of results, its work at a submit */
    for (size_t i = 0; s != NULL && i < s->n_host; i++) {
        if (strcmp(s->host[i].name, "vkprof layer: collect") == 0 ||
            strcmp(s->host[i].name, "vkprof layer: submit") == 0) {
            return 1;
        }
    }
    if (meta == NULL || meta_len == 0) {
        return 0;
    }
    cJSON *m = cJSON_ParseWithLength(meta, meta_len);
    if (m == NULL) {
        return 0;
    }
    bool layer = layer_label(m);
    const cJSON *merge = cJSON_GetObjectItemCaseSensitive(m, VKPROF_TF_META_MERGE);
    const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(merge, VKPROF_TF_MERGE_INPUTS);
    if (!layer && cJSON_IsArray(inputs) && cJSON_GetArraySize(inputs) > 0) {
        /* a merged trace: every input's own metadata */
        layer = true;
        const cJSON *in;
        cJSON_ArrayForEach(in, inputs)
        {
            layer = layer &&
                    layer_label(cJSON_GetObjectItemCaseSensitive(in, VKPROF_TF_MERGE_INPUT_META));
        }
    }
    cJSON_Delete(m);
    return layer ? 1 : 0;
}

static bool meta_u64(const cJSON *o, const char *key, uint64_t *v)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble > 9007199254740992.0) {
        return false;
    }
    *v = (uint64_t)x->valuedouble;
    return true;
}

static const char *meta_cal_method(const cJSON *o)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, VKPROF_TF_META_CALIBRATION);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(c, VKPROF_TF_CAL_METHOD);
    return cJSON_IsString(m) ? m->valuestring : NULL;
}

/* Why a context's GPU scopes could not be mapped, from its calibration. */
static const char *unmapped_why(const char *method)
{
    if (method != NULL && strcmp(method, "none") == 0) {
        return "no calibration (calibration none: no calibrated timestamps and no queue for a "
               "bracket, so GPU times cannot be placed on the host clock)";
    }
    return "no calibration point to place them on the host clock";
}

size_t rpt_unmapped_note(const rpt_summary *s, const char *meta, size_t meta_len, char *buf,
                         size_t size)
{
    if (buf != NULL && size > 0) {
        buf[0] = '\0';
    } else {
        size = 0;
    }
    cJSON *m = meta != NULL && meta_len > 0 ? cJSON_ParseWithLength(meta, meta_len) : NULL;
    uint64_t n = 0;
    if (m == NULL || !meta_u64(m, VKPROF_TF_META_UNMAPPED_GPU_SCOPES, &n) || n == 0) {
        cJSON_Delete(m);
        return 0;
    }
    size_t len = 0;
    put(buf, size, &len, "", &n);
    put(buf, size, &len,
        n == 1 ? " GPU scope was timed but not mapped to the host clock"
               : " GPU scopes were timed but not mapped to the host clock",
        NULL);
    put(buf, size, &len,
        " (metadata." VKPROF_TF_META_UNMAPPED_GPU_SCOPES "; the trace does "
        "not name their phases), so they are in no figure here: ",
        NULL);
    /* a trace of several contexts: which ones, each with its calibration */
    const cJSON *ctxs = cJSON_GetObjectItemCaseSensitive(m, VKPROF_TF_META_CONTEXTS);
    const cJSON *list = cJSON_IsArray(ctxs) ? ctxs : NULL, *c;
    size_t listed = 0;
    cJSON_ArrayForEach(c, list)
    {
        uint64_t k = 0;
        if (!meta_u64(c, VKPROF_TF_META_UNMAPPED_GPU_SCOPES, &k) || k == 0) {
            continue;
        }
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(c, VKPROF_TF_META_LABEL);
        const char *method = meta_cal_method(c);
        put(buf, size, &len, listed++ ? "; " : "", NULL);
        put(buf, size, &len,
            cJSON_IsString(l) && l->valuestring[0] != '\0' ? l->valuestring : "a context", NULL);
        put(buf, size, &len, ": ", &k);
        put(buf, size, &len, ", ", NULL);
        put(buf, size, &len, unmapped_why(method), NULL);
    }
    if (listed == 0) {
        const char *method = meta_cal_method(m);
        put(buf, size, &len, unmapped_why(method != NULL ? method : s->cal_method), NULL);
    }
    cJSON_Delete(m);
    return len;
}

/* ---- the text ------------------------------------------------------------- */

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

/* A GPU phase's slices: the median and the largest, and its first call
 * (the earliest start) apart, where drivers compile a pipeline at its first
 * use. */
typedef struct phase_dist {
    int64_t p50_ns, max_ns, first_ns;
} phase_dist;

static int cmp_i64v(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* One per s->gpu group, or NULL (no memory). */
static phase_dist *gpu_dists(const rpt_summary *s)
{
    const size_t n = s->n_gpu;
    phase_dist *d = calloc(n ? n : 1, sizeof *d);
    size_t *at = calloc(n + 1, sizeof *at);
    int64_t *first_ts = malloc((n ? n : 1) * sizeof *first_ts);
    size_t total = 0;
    for (size_t i = 0; i < s->n_slices; i++) {
        total += s->slices[i].is_gpu != 0;
    }
    int64_t *v = malloc((total ? total : 1) * sizeof *v);
    if (d == NULL || at == NULL || first_ts == NULL || v == NULL) {
        free(d);
        free(at);
        free(first_ts);
        free(v);
        return NULL;
    }
    for (size_t i = 0; i < s->n_slices; i++) {
        if (s->slices[i].is_gpu && s->slices[i].group < n) {
            at[s->slices[i].group + 1]++;
        }
    }
    for (size_t g = 0; g < n; g++) {
        at[g + 1] += at[g];
        first_ts[g] = INT64_MAX;
    }
    size_t *put_at = calloc(n ? n : 1, sizeof *put_at);
    if (put_at == NULL) {
        free(d);
        free(at);
        free(first_ts);
        free(v);
        return NULL;
    }
    for (size_t i = 0; i < s->n_slices; i++) {
        const rpt_slice *x = &s->slices[i];
        if (!x->is_gpu || x->group >= n) {
            continue;
        }
        v[at[x->group] + put_at[x->group]++] = x->dur_ns;
        if (x->ts_ns < first_ts[x->group]) {
            first_ts[x->group] = x->ts_ns;
            d[x->group].first_ns = x->dur_ns;
        }
    }
    for (size_t g = 0; g < n; g++) {
        const size_t c = at[g + 1] - at[g];
        if (c == 0) {
            continue;
        }
        qsort(v + at[g], c, sizeof *v, cmp_i64v);
        d[g].p50_ns = v[at[g] + (c - 1) / 2];
        d[g].max_ns = v[at[g] + c - 1];
    }
    free(put_at);
    free(at);
    free(first_ts);
    free(v);
    return d;
}

static int cmp_estimate(const void *a, const void *b)
{
    const rpt_estimate *x = *(const rpt_estimate *const *)a, *y = *(const rpt_estimate *const *)b;
    if (x->est_ns != y->est_ns) {
        return x->est_ns > y->est_ns ? -1 : 1;
    }
    return strcmp(x->name, y->name);
}

/* Where the GPU slices are a sample (metadata.gpu_sampling.estimates):
 * each phase's estimate, its share of their sum, per step of the whole run;
 * the outer phases (exact) below. Issue 26: a rotated trace's slices read
 * as the whole, a third of each phase's time. */
static void print_estimates(const rpt_summary *s, FILE *out, const char *unit)
{
    size_t n = 0;
    uint64_t sum = 0, calls = 0, timed = 0;
    const rpt_estimate **row = calloc(s->n_estimates ? s->n_estimates : 1, sizeof *row);
    if (row == NULL) {
        fprintf(out, "\n(the estimates: out of memory)\n");
        return;
    }
    int w = 26;
    for (size_t i = 0; i < s->n_estimates; i++) {
        const rpt_estimate *e = &s->estimates[i];
        if (!e->outer && e->calls > 0) {
            row[n++] = e;
            sum += e->est_ns;
            calls += e->calls;
            timed += e->timed;
            size_t len = strlen(e->name);
            w = (int)len > w ? (len > 63 ? 63 : (int)len) : w;
        }
    }
    /* every step's calls, sampled or not: the steps of the whole trace */
    const uint64_t steps = s->tokens;
    if (n == 0 || steps == 0) {
        free(row);
        return;
    }
    qsort(row, n, sizeof *row, cmp_estimate);
    char per_h[32], calls_h[32];
    snprintf(per_h, sizeof per_h, "ms/%s~", unit);
    snprintf(calls_h, sizeof calls_h, "calls/%s", unit);
    fprintf(out,
            "\nGPU phases, estimated: the slices above are a sample (%" PRIu64 " of %" PRIu64
            " calls timed%s); each phase's mean times its calls, over %" PRIu64 " %s(s)\n",
            timed, calls,
            s->has_every_n && s->every_n_steps > 1 ? ", in sampled steps"
            : s->has_rotate && s->rotate_scopes > 0
                ? ", a rotating window"
                : ", the others left out before the library: a layer's --sample or cost probe",
            steps, unit);
    fprintf(out, "  %-*s %12s %10s %7s %12s %10s\n", w, "phase", "est. ms", per_h, "%~", calls_h,
            "timed");
    for (size_t i = 0; i < n; i++) {
        char total[32], per[32];
        fmt_ms(total, sizeof total, row[i]->est_ns, 1);
        fmt_ms(per, sizeof per, row[i]->est_ns, steps);
        fprintf(out, "  %-*.*s %12s %10s %6.1f%% %12.2f %10" PRIu64 "\n", w, w, row[i]->name, total,
                per, sum ? 100.0 * (double)row[i]->est_ns / (double)sum : 0.0,
                (double)row[i]->calls / (double)steps, row[i]->timed);
    }
    char total[32], per[32];
    fmt_ms(total, sizeof total, sum, 1);
    fmt_ms(per, sizeof per, sum, steps);
    fprintf(out, "  %-*s %12s %10s %6.1f%% %12.2f %10" PRIu64 "\n", w, "total", total, per, 100.0,
            (double)calls / (double)steps, timed);
    size_t untimed = 0;
    for (size_t i = 0; i < n; i++) {
        untimed += row[i]->timed == 0;
    }
    if (untimed > 0) {
        fprintf(out, "  not timed yet (no estimate; run more %ss):", unit);
        size_t shown = 0;
        for (size_t i = 0; i < n && shown < 8; i++) {
            if (row[i]->timed == 0) {
                fprintf(out, " %s (%" PRIu64 " calls)", row[i]->name, row[i]->calls);
                shown++;
            }
        }
        fprintf(out, untimed > shown ? " ...\n" : "\n");
    }
    for (size_t i = 0; i < s->n_estimates; i++) {
        const rpt_estimate *e = &s->estimates[i];
        if (e->outer && e->timed > 0) {
            /* exact where every call was stamped; the cost probe's blocks
             * leave some buffers unstamped, and those are estimated */
            char how[96];
            if (e->calls > e->timed) {
                snprintf(how, sizeof how, "%" PRIu64 " of %" PRIu64 " stamped, the rest estimated",
                         e->timed, e->calls);
            } else {
                snprintf(how, sizeof how, "exact");
            }
            fprintf(out,
                    "  %s (outer: stamped in every timed %s, %s): %.3f ms/%s%s over %" PRIu64
                    " slices; the phases' estimate is %.2fx it (each timed call ran without the "
                    "overlap it has in flow)\n",
                    e->name, unit, how, (double)e->est_ns / 1e6 / (double)steps, unit,
                    e->calls > e->timed ? "~" : "", e->timed,
                    e->est_ns ? (double)sum / (double)e->est_ns : 0.0);
        }
    }
    free(row);
}

/* unit: "token", or "step" for a layer trace; none: what to say after
 * "(none" when the table is empty ("" or NULL: nothing). */
static void print_group_table(FILE *out, const char *title, const rpt_group *g, size_t n,
                              uint64_t busy, uint64_t tokens, bool self_column,
                              const phase_dist *dist, const char *unit, const char *none)
{
    /* the name column fits the longest name (llama.cpp's pipelines run to
     * 40 characters), from 26 up to 63; longer ones are cut */
    int w = 26;
    for (size_t i = 0; i < n; i++) {
        const size_t len = strlen(g[i].name);
        if ((int)len > w) {
            w = len > 63 ? 63 : (int)len;
        }
    }
    char per_h[32], calls_h[32], self_h[32];
    snprintf(per_h, sizeof per_h, "ms/%s", unit);
    snprintf(calls_h, sizeof calls_h, "calls/%s", unit);
    snprintf(self_h, sizeof self_h, "self ms/%s", unit);
    fprintf(out, "\n%-*s %12s %10s %7s %12s %10s", w + 2, title, "total ms", per_h, "%", calls_h,
            "us/call");
    if (dist != NULL) {
        fprintf(out, " %10s %10s", "p50 us", "max us");
    }
    fprintf(out, self_column ? " %14s\n" : "\n", self_h);
    if (n == 0) {
        if (none != NULL && none[0] != '\0') {
            fprintf(out, "  (none: %s)\n", none);
        } else {
            fprintf(out, "  (none)\n");
        }
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
        fprintf(out, "  %-*.*s %12s %10s %6.1f%% %12.2f %10.3f", w, w, g[i].name, total, per, pct,
                cpt, us_call);
        if (dist != NULL) {
            fprintf(out, " %10.3f %10.3f", (double)dist[i].p50_ns / 1000.0,
                    (double)dist[i].max_ns / 1000.0);
        }
        fprintf(out, self_column ? " %14s\n" : "\n", self);
        calls += g[i].calls;
    }
    char total[32], per[32];
    fmt_ms(total, sizeof total, busy, 1);
    fmt_ms(per, sizeof per, busy, tokens);
    fprintf(out, "  %-*s %12s %10s %6.1f%% %12.2f\n", w, "busy (self times)", total, per,
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

size_t rpt_repeat_warning(const rpt_summary *s, char *buf, size_t size)
{
    if (buf != NULL && size > 0) {
        buf[0] = '\0';
    } else {
        size = 0;
    }
    if (s->n_dup_events == 0) {
        return 0;
    }
    int n = snprintf(buf, size,
                     "WARNING: %" PRIu64 " slice(s) repeat an earlier one exactly (the same pid, "
                     "tid, ts, dur, name, cat and args; the first: event #%" PRIu64
                     " repeats event #%" PRIu64 "): a trace written twice or a writer's bug, "
                     "unless GPU timestamps too coarse to tell empty scopes apart; each is "
                     "counted as written",
                     s->n_dup_events, s->first_dup_index, s->first_dup_of);
    return n > 0 ? (size_t)n : 0;
}

/* The most per-token rows and per-expert rows printed, and rank columns. */
#define MAX_STEP_ROWS 16
#define MAX_EXPERT_ROWS 64
#define MAX_RANK_COLS 8

static void print_ranks(const rpt_summary *s, const rpt_rank_view *v, FILE *out)
{
    fprintf(out, "\nranks: %zu (merged by vkprof merge, %s)\n", s->n_ranks,
            s->merge_method != NULL ? s->merge_method : "method not recorded");
    fprintf(out, "  %-26s %8s %16s %16s %12s %14s\n", "rank", "tokens", "collective ms/tok",
            "skew ms/token", "probes/token", "slowest tokens");
    bool any_probe = false;
    for (size_t r = 0; r < v->n_ranks; r++) {
        const rpt_rank_stats *x = &v->rank[r];
        char coll[32], skew[32];
        fmt_ms(coll, sizeof coll, x->collective_ns, x->tokens);
        fmt_ms(skew, sizeof skew, x->probe_ns, x->tokens);
        fprintf(out, "  %-26s %8" PRIu64 " %16s %16s %12.2f %14" PRIu64 "\n", s->ranks[r].name,
                x->tokens, coll, skew, (double)x->probes / (double)x->tokens, x->slowest_tokens);
        any_probe |= x->probes > 0;
    }
    fprintf(out,
            "  (collective: allreduce_* spans, outermost only; skew: the rendezvous probes'\n"
            "   wait, *_rendezvous buckets; slowest tokens: steps at which it waited least)\n");
    if (!any_probe || v->slowest < 0) {
        fprintf(out, "slowest rank: unknown (no rendezvous probes in the trace)\n");
        return;
    }
    char per[32];
    const rpt_rank_stats *sl = &v->rank[v->slowest];
    fmt_ms(per, sizeof per, sl->probe_ns, sl->tokens);
    fprintf(out,
            "slowest rank: %s (the least rendezvous wait, %s ms/token: the others wait for "
            "it)\n",
            s->ranks[v->slowest].name, per);
    fprintf(out, "\n  %-10s %-26s %14s %14s\n", "step", "slowest (waited least)", "skew ms",
            "least wait ms");
    for (size_t i = 0; i < v->n_steps && i < MAX_STEP_ROWS; i++) {
        const rpt_step_skew *st = &v->steps[i];
        char skew[32], least[32];
        fmt_ms(skew, sizeof skew, st->max_ns - st->min_ns, 1);
        fmt_ms(least, sizeof least, st->min_ns, 1);
        char step[24];
        if (st->step < 0) {
            snprintf(step, sizeof step, "?");
        } else {
            snprintf(step, sizeof step, "%" PRId64, st->step);
        }
        fprintf(out, "  %-10s %-26s %14s %14s%s\n", step,
                st->ranks > 1 ? s->ranks[st->slowest].name : "(one rank)", skew, least,
                st->ranks < v->n_ranks ? " (not every rank has probes here)" : "");
    }
    if (v->n_steps > MAX_STEP_ROWS) {
        fprintf(out, "  ... %zu more steps\n", v->n_steps - MAX_STEP_ROWS);
    }
    fprintf(out, "  (skew: the most minus the least probe wait of a rank in the step)\n");
}

static void fmt_ratio(char *buf, size_t size, uint64_t max, uint64_t total, uint64_t n)
{
    if (total == 0 || n == 0) {
        snprintf(buf, size, "-");
        return;
    }
    snprintf(buf, size, "%.2f", (double)max * (double)n / (double)total);
}

static void print_experts(const rpt_summary *s, const rpt_rank_view *v, FILE *out)
{
    size_t nr = v->n_ranks, cols = nr < MAX_RANK_COLS ? nr : MAX_RANK_COLS;
    uint32_t E = v->n_experts, L = v->n_moe_layers;
    fprintf(out,
            "\nexpert load (args.%s of %s spans: %u MoE layer(s) x %u experts, ids 0..%u, the "
            "largest id seen)\n",
            VKPROF_TF_ARG_EXPERTS, VKPROF_TF_EXPERTS_BUCKET, L, E, E - 1);
    fprintf(out, "  %-12s", "expert");
    for (size_t r = 0; r < cols; r++) {
        fprintf(out, " %12.12s", s->n_ranks > 0 ? s->ranks[r].name : "tokens");
    }
    if (nr > 1) {
        fprintf(out, " %12s", "all ranks");
    }
    fprintf(out, "   (tokens, summed over the MoE layers)\n");
    uint64_t all_total = 0;
    uint32_t rows = 0, used = 0;
    for (uint32_t e = 0; e < E; e++) {
        uint64_t sum = 0;
        for (size_t r = 0; r < nr; r++) {
            sum += v->counts[r * E + e];
        }
        all_total += sum;
        used += sum > 0;
        if (sum == 0 || rows >= MAX_EXPERT_ROWS) {
            continue;
        }
        rows++;
        fprintf(out, "  %-12u", e);
        for (size_t r = 0; r < cols; r++) {
            fprintf(out, " %12" PRIu64, v->counts[r * E + e]);
        }
        if (nr > 1) {
            fprintf(out, " %12" PRIu64, sum);
        }
        fputc('\n', out);
    }
    if (used > rows) {
        fprintf(out, "  ... %u more experts with tokens\n", used - rows);
    }
    if (E > used) {
        fprintf(out, "  (%u of the %u ids got no token in any layer)\n", E - used, E);
    }
    fprintf(out, "  %-12s", "routed");
    for (size_t r = 0; r < cols; r++) {
        fprintf(out, " %12" PRIu64, v->rank[r].routed);
    }
    if (nr > 1) {
        fprintf(out, " %12" PRIu64, all_total);
    }
    fputc('\n', out);
    /* unevenness, layer by layer: an id in two layers is two experts */
    fprintf(out, "  %-12s", "max/mean");
    for (size_t r = 0; r < cols; r++) {
        fprintf(out, " %12.12s", s->n_ranks > 0 ? s->ranks[r].name : "tokens");
    }
    if (nr > 1) {
        fprintf(out, " %12s", "all ranks");
    }
    fprintf(out, "   (per MoE layer: the busiest expert over the mean of %u; 1.00 is even)\n", E);
    size_t ncol = nr > 1 ? cols + 1 : cols;
    double worst[MAX_RANK_COLS + 1] = {0}, mean[MAX_RANK_COLS + 1] = {0};
    uint32_t nmean[MAX_RANK_COLS + 1] = {0};
    for (uint32_t l = 0; l < L; l++) {
        if (l < MAX_STEP_ROWS) {
            fprintf(out, "  layer #%-5u", l);
        }
        for (size_t c = 0; c < ncol; c++) {
            size_t row = c < cols ? c : nr; /* the last column: every rank */
            double x = v->layer_imbalance[row * L + l];
            if (x > 0) {
                worst[c] = x > worst[c] ? x : worst[c];
                mean[c] += x;
                nmean[c]++;
            }
            if (l < MAX_STEP_ROWS) {
                if (x > 0) {
                    fprintf(out, " %12.2f", x);
                } else {
                    fprintf(out, " %12s", "-");
                }
            }
        }
        if (l < MAX_STEP_ROWS) {
            fputc('\n', out);
        }
    }
    if (L > MAX_STEP_ROWS) {
        fprintf(out, "  ... %u more layers\n", L - MAX_STEP_ROWS);
    }
    if (L > 1) {
        for (int k = 0; k < 2; k++) {
            fprintf(out, "  %-12s", k == 0 ? "worst layer" : "mean");
            for (size_t c = 0; c < ncol; c++) {
                double x = k == 0 ? worst[c] : (nmean[c] ? mean[c] / nmean[c] : 0);
                if (x > 0) {
                    fprintf(out, " %12.2f", x);
                } else {
                    fprintf(out, " %12s", "-");
                }
            }
            fputc('\n', out);
        }
    }
    if (v->layers_cut) {
        fprintf(out, "  (routing spans past the %d-th of a token are not split by layer)\n",
                RPT_MAX_MOE_LAYERS);
    }
    if (nr > 1) {
        uint64_t rmax = 0;
        for (size_t r = 0; r < nr; r++) {
            rmax = v->rank[r].routed > rmax ? v->rank[r].routed : rmax;
        }
        char buf[32];
        fmt_ratio(buf, sizeof buf, rmax, all_total, nr);
        fprintf(out, "  across ranks: the busiest rank routed %s x the mean rank's tokens\n", buf);
    }
}

int rpt_print(const rpt_summary *s, const char *path, FILE *out)
{
    return rpt_print_meta(s, NULL, 0, path, out);
}

/* GPU busy and idle (issue 26): rpt_gpu_idle_of (trace_reader.h). */
static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Only part of each step's GPU work was timed, and no outer scopes hold
 * it all: busy and idle are not measured (issue 26) */
static bool busy_unmeasured(const rpt_summary *s)
{
    if (s->has_busy_measured) {
        return !s->busy_measured;
    }
    return s->has_whole_steps && !s->whole_steps;
}

/* Is `name` one of the outer phases (metadata, joined by ", ")? */
static bool outer_listed(const char *list, const char *name)
{
    const size_t n = strlen(name);
    for (const char *p = list; p != NULL && *p != '\0';) {
        const char *e = strstr(p, ", ");
        const size_t len = e != NULL ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) {
            return true;
        }
        p = e != NULL ? e + 2 : NULL;
    }
    return false;
}

int rpt_gpu_idle_of(const rpt_summary *s, size_t track, rpt_gpu_idle *out)
{
    memset(out, 0, sizeof *out);
    if (s->n_token_events < 2 || s->n_ranks > 0 || track >= s->n_tracks ||
        !s->tracks[track].is_gpu || busy_unmeasured(s)) {
        return 0; /* (not measured where only part of each step was timed) */
    }
    const int64_t *tk = s->token_ts_ns;
    const size_t nw = s->n_token_events - 1;
    int64_t *merged = malloc(2 * (s->n_slices + 1) * sizeof *merged);
    int64_t *idle_pm = malloc(nw * sizeof *idle_pm); /* per window: idle, per mille x 1000 */
    /* Where the busy time comes from outer scopes (a sampled split beside
     * them), only their slices count, and only in the steps that hold them
     * (vkprof run --busy N stamps them in 1 step in N; the others' sampled
     * slices would read as mostly idle) */
    const bool outer_only = s->outer_phases != NULL && !(s->has_whole_steps && s->whole_steps);
    unsigned char *outer = outer_only ? calloc(s->n_gpu + 1, 1) : NULL;
    if (merged == NULL || idle_pm == NULL || (outer_only && outer == NULL)) {
        free(merged);
        free(idle_pm);
        free(outer);
        return -1;
    }
    for (size_t g = 0; outer != NULL && g < s->n_gpu; g++) {
        outer[g] = outer_listed(s->outer_phases, s->gpu[g].name);
    }
    /* the track's slices as disjoint intervals, in order (slices are sorted
     * by track, then start) */
    size_t nm = 0;
    for (size_t i = 0; i < s->n_slices; i++) {
        const rpt_slice *sl = &s->slices[i];
        if (sl->track != track || sl->dur_ns <= 0 ||
            (outer != NULL && (sl->group >= s->n_gpu || !outer[sl->group]))) {
            continue;
        }
        const int64_t a = sl->ts_ns, b = sl->ts_ns + sl->dur_ns;
        if (nm > 0 && a <= merged[2 * nm - 1]) {
            if (b > merged[2 * nm - 1]) {
                merged[2 * nm - 1] = b;
            }
        } else {
            merged[2 * nm] = a;
            merged[2 * nm + 1] = b;
            nm++;
        }
    }
    size_t k = 0;
    for (size_t w = 0; nm > 0 && w < nw; w++) {
        const int64_t w0 = tk[w], w1 = tk[w + 1];
        while (k < nm && merged[2 * k + 1] <= w0) {
            k++;
        }
        int64_t busy = 0, gap = 0, first = -1, last = -1;
        size_t gaps = 0;
        for (size_t j = k; j < nm && merged[2 * j] < w1; j++) {
            const int64_t a = merged[2 * j] > w0 ? merged[2 * j] : w0;
            const int64_t b = merged[2 * j + 1] < w1 ? merged[2 * j + 1] : w1;
            if (b <= a) {
                continue;
            }
            busy += b - a;
            if (last >= 0 && a > last) {
                gap += a - last; /* idle between two stretches of work */
                gaps++;
            }
            if (first < 0) {
                first = a;
            }
            last = b;
        }
        if (w1 <= w0) {
            continue;
        }
        if (busy == 0) {
            out->empty++;
            continue;
        }
        out->gap_ns += gap;
        out->gaps += gaps;
        out->edge_ns += (first - w0) + (w1 - last);
        out->busy_ns += busy;
        out->window_ns += w1 - w0;
        idle_pm[out->windows++] =
            (int64_t)(1000000.0 * (double)(w1 - w0 - busy) / (double)(w1 - w0));
    }
    if (out->windows > 0) {
        qsort(idle_pm, out->windows, sizeof *idle_pm, cmp_i64);
        out->median_idle_pct = (double)idle_pm[out->windows / 2] / 1e4;
    }
    free(merged);
    free(idle_pm);
    free(outer);
    return out->windows > 0 ? 1 : 0;
}

/* Submit to GPU start: rpt_submit_latency (trace_reader.h). */

/* flows by id (the string tag, then the value), then time */
static int cmp_flow_id(const void *a, const void *b)
{
    const rpt_flow *x = a, *y = b;
    if (x->id_str != y->id_str) {
        return x->id_str < y->id_str ? -1 : 1;
    }
    if (x->id != y->id) {
        return x->id < y->id ? -1 : 1;
    }
    return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

/* flows by track, then time (the host span they start at) */
static int cmp_flow_at(const void *a, const void *b)
{
    const rpt_flow *x = a, *y = b;
    if (x->track != y->track) {
        return x->track < y->track ? -1 : 1;
    }
    return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

/* A host slice on the track that starts at ts and whose bucket is an app's
 * submit (the layer names its span after the call: vkQueueSubmit,
 * vkQueueSubmit2, vkQueueSubmit2KHR). The slices are sorted by track, then
 * ts: a binary search, then the slices that start there. */
static bool submit_span_at(const rpt_summary *s, uint32_t track, int64_t ts)
{
    size_t lo = 0, hi = s->n_slices;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const rpt_slice *x = &s->slices[mid];
        if (x->track < track || (x->track == track && x->ts_ns < ts)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    for (size_t i = lo; i < s->n_slices; i++) {
        const rpt_slice *x = &s->slices[i];
        if (x->track != track || x->ts_ns != ts) {
            break;
        }
        if (!x->is_gpu && x->group < s->n_host &&
            starts_with(s->host[x->group].name, "vkQueueSubmit")) {
            return true;
        }
    }
    return false;
}

/* The earliest "f" of an id among ends (sorted by cmp_flow_id), or NULL. */
static const rpt_flow *first_end(const rpt_flow *ends, size_t n, const rpt_flow *start)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const rpt_flow *x = &ends[mid];
        if (x->id_str < start->id_str || (x->id_str == start->id_str && x->id < start->id)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < n && ends[lo].id_str == start->id_str && ends[lo].id == start->id ? &ends[lo]
                                                                                  : NULL;
}

int rpt_submit_latency(const rpt_summary *s, rpt_submit_latency_out *out)
{
    memset(out, 0, sizeof *out);
    if (s->n_ranks > 0 || busy_unmeasured(s) || s->n_flows_read == 0) {
        return 0; /* (a submit's first timed slice need not be its first work) */
    }
    const size_t n = s->n_flows_read;
    rpt_flow *starts = malloc(n * sizeof *starts), *ends = malloc(n * sizeof *ends);
    int64_t *lat = malloc(n * sizeof *lat);
    if (starts == NULL || ends == NULL || lat == NULL) {
        free(starts);
        free(ends);
        free(lat);
        return -1;
    }
    size_t ns = 0, ne = 0;
    for (size_t i = 0; i < n; i++) {
        const rpt_flow *fl = &s->flows[i];
        if (fl->track >= s->n_tracks) {
            continue;
        }
        if (fl->start) {
            starts[ns++] = *fl;
        } else if (s->tracks[fl->track].is_gpu) {
            ends[ne++] = *fl; /* on a GPU slice's start */
        }
    }
    if (ns > 0) {
        qsort(starts, ns, sizeof *starts, cmp_flow_at);
    }
    if (ne > 0) {
        qsort(ends, ne, sizeof *ends, cmp_flow_id);
    }
    /* one submit: the "s" events at one host span's start (one id with
     * several "f", or an id for each "f" with its own "s") */
    size_t nl = 0;
    double sum = 0;
    for (size_t i = 0, j; i < ns; i = j) {
        for (j = i + 1;
             j < ns && starts[j].track == starts[i].track && starts[j].ts_ns == starts[i].ts_ns;
             j++) {
        }
        if (s->tracks[starts[i].track].is_gpu ||
            !submit_span_at(s, starts[i].track, starts[i].ts_ns)) {
            continue;
        }
        const rpt_flow *first = NULL;
        for (size_t k = i; k < j; k++) {
            const rpt_flow *e = first_end(ends, ne, &starts[k]);
            if (e != NULL && (first == NULL || e->ts_ns < first->ts_ns)) {
                first = e;
            }
        }
        if (first != NULL) {
            lat[nl] = first->ts_ns - starts[i].ts_ns;
            sum += (double)lat[nl];
            nl++;
        }
    }
    free(starts);
    free(ends);
    if (nl == 0) {
        free(lat);
        return 0;
    }
    qsort(lat, nl, sizeof *lat, cmp_i64);
    /* nearest rank: the ceil(p% of n)-th value, from 1 */
    out->count = nl;
    out->median_ns = lat[(nl * 50 + 99) / 100 - 1];
    out->p90_ns = lat[(nl * 90 + 99) / 100 - 1];
    out->mean_ns = (int64_t)llround(sum / (double)nl);
    free(lat);
    return 1;
}

static void print_gpu_idle(const rpt_summary *s, FILE *out, const char *unit)
{
    if (busy_unmeasured(s)) {
        /* issue 26: a rotated trace read 98.6 % idle here (its 4 stamped
         * dispatches a step of 261) */
        fprintf(out,
                "\nGPU busy and idle per %s: not measured (only part of each %s's GPU work was "
                "timed: a rotating window, sampling, the cost probe or label regions; work not "
                "timed would read as idle)\n",
                unit, unit);
        return;
    }
    bool header = false;
    for (size_t t = 0; t < s->n_tracks; t++) {
        rpt_gpu_idle g;
        if (rpt_gpu_idle_of(s, t, &g) != 1) {
            continue;
        }
        if (!header) {
            fprintf(out,
                    "\nGPU busy and idle per %s (each queue's timed GPU work, between "
                    "consecutive %s events; work not timed counts as idle)\n",
                    unit, unit);
            header = true;
        }
        const rpt_track *tr = &s->tracks[t];
        char name[160];
        if (tr->name != NULL) {
            snprintf(name, sizeof name, "%s", tr->name);
        } else {
            snprintf(name, sizeof name, "GPU pid %" PRId64 " tid %" PRId64, tr->pid, tr->tid);
        }
        fprintf(out,
                "  %s: busy %.3f ms/%s, idle %.3f ms/%s (%.1f%% idle) over %zu %s(s) with timed "
                "GPU work; the median "
                "%s %.1f%% idle",
                name, (double)g.busy_ns / 1e6 / (double)g.windows, unit,
                (double)(g.window_ns - g.busy_ns) / 1e6 / (double)g.windows, unit,
                100.0 * (double)(g.window_ns - g.busy_ns) / (double)g.window_ns, g.windows, unit,
                unit, g.median_idle_pct);
        if (g.empty > 0) {
            fprintf(out, "; %zu %s(s) with no timed GPU work left out", g.empty, unit);
        }
        fprintf(out, "\n");
        /* where the idle time lies: between the step's stretches of work
         * (the host late with the next buffer, or a wait), or at its ends */
        fprintf(out,
                "    idle between its timed work: %.3f ms/%s in %.1f gaps a %s (%.1f us each); "
                "before its first and after its last: %.3f ms/%s\n",
                (double)g.gap_ns / 1e6 / (double)g.windows, unit,
                (double)g.gaps / (double)g.windows, unit,
                g.gaps > 0 ? (double)g.gap_ns / 1e3 / (double)g.gaps : 0.0,
                (double)g.edge_ns / 1e6 / (double)g.windows, unit);
    }
    if (header && s->outer_phases != NULL && s->has_whole_steps && !s->whole_steps) {
        fprintf(out,
                "  (from the outer scopes around all of a %s's work, over the %ss that hold "
                "them: %s; the other slices are a sample and hold no more than these)\n",
                unit, unit, s->outer_phases);
    }
    rpt_submit_latency_out sl;
    if (header && rpt_submit_latency(s, &sl) == 1) {
        fprintf(out,
                "  submit to GPU start: median %.1f us, p90 %.1f us, mean %.1f us over %zu "
                "submit%s (from the app's vkQueueSubmit call to the start of the first GPU work "
                "it submitted: the driver's submit, and any wait behind earlier work)\n",
                (double)sl.median_ns / 1e3, (double)sl.p90_ns / 1e3, (double)sl.mean_ns / 1e3,
                sl.count, sl.count == 1 ? "" : "s");
    }
}

/* A vkprof layer trace: the app's host time per step in its calls'
 * spans, by what the thread was doing (self times: a wait inside a
 * recording counts once, as waiting), and the layer's own. */
static void print_layer_host(const rpt_summary *s, FILE *out)
{
    static const char *const waits[] = {"vkWaitForFences", "vkGetFenceStatus", "vkWaitSemaphores",
                                        "vkQueueWaitIdle", "vkDeviceWaitIdle"};
    uint64_t rec = 0, sub = 0, wait = 0, own = 0;
    bool any_rec = false;
    for (size_t i = 0; i < s->n_host; i++) {
        const rpt_group *g = &s->host[i];
        if (strcmp(g->name, "vkBeginCommandBuffer..vkEndCommandBuffer") == 0) {
            rec += g->self_ns;
            any_rec = true;
        } else if (strcmp(g->name, "vkQueueSubmit") == 0) {
            sub += g->self_ns;
        } else if (strncmp(g->name, "vkprof layer: ", 14) == 0) {
            own += g->self_ns;
        } else {
            for (size_t k = 0; k < sizeof waits / sizeof waits[0]; k++) {
                wait += strcmp(g->name, waits[k]) == 0 ? g->self_ns : 0;
            }
        }
    }
    if (s->tokens == 0) {
        return;
    }
    char r[32], b[32], w[32], o[32];
    fmt_ms(r, sizeof r, rec, s->tokens);
    fmt_ms(b, sizeof b, sub, s->tokens);
    fmt_ms(w, sizeof w, wait, s->tokens);
    fmt_ms(o, sizeof o, own, s->tokens);
    char recs[160];
    if (any_rec) {
        /* a recording interleaved with another on its thread, or ended on
         * another thread, has no span: then a lower bound */
        snprintf(recs, sizeof recs, "recording %s ms (the recordings' spans)", r);
    } else {
        snprintf(recs, sizeof recs,
                 "recording not in this trace (no recording span: a layer before them, or "
                 "every recording interleaved with another on its thread)");
    }
    fprintf(out,
            "host time per step, in the app's calls (self times): %s, submitting %s ms, waiting "
            "%s ms; the layer's own %s ms\n",
            recs, b, w, o);
}

int rpt_print_meta(const rpt_summary *s, const char *meta, size_t meta_len, const char *path,
                   FILE *out)
{
    /* a trace of the vkprof layer counts steps (app waits), not tokens */
    const bool layer = rpt_meta_layer_trace(s, meta, meta_len) != 0;
    const char *unit = layer ? "step" : "token";
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
    fprintf(out, "\n  %-13s %" PRIu64, layer ? "steps" : "tokens", s->tokens);
    switch (s->token_source) {
    case RPT_TOKENS_FROM_EVENTS:
        fprintf(out, layer ? " (token events, one per step)\n" : " (token events)\n");
        break;
    case RPT_TOKENS_FROM_METADATA:
        fprintf(out, " (metadata.steps; no %s events)\n", layer ? "step" : "token");
        break;
    default:
        fprintf(out, " (no %s events and no metadata.steps: figures are per trace)\n",
                layer ? "step" : "token");
    }
    if (layer) {
        fprintf(out, "  (a step: one app wait that retired GPU work (a fence, queue or device "
                     "wait), as the vkprof layer counts them; not a token: an app may wait "
                     "several times per token)\n");
    }
    if (s->gpu_tokens != s->tokens) {
        fprintf(out, "  gpu %-9s %" PRIu64 " (sampled steps: GPU figures are per sampled %s)\n",
                layer ? "steps" : "tokens", s->gpu_tokens, unit);
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
    if (rpt_repeat_warning(s, warn, sizeof warn) > 0) {
        fprintf(out, "%s\n", warn);
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
    char title[128];
    /* slices that are a sample say so; their estimates follow the table */
    const char *sampled = s->n_estimates > 0 ? ", the trace's slices: a sample" : "";
    if (s->n_ranks > 0) {
        snprintf(title, sizeof title, "GPU phases (%zu ranks%s)", s->n_ranks, sampled);
    } else if (sampled[0] != '\0') {
        snprintf(title, sizeof title, "GPU phases (%s)", sampled + 2);
    } else {
        snprintf(title, sizeof title, "GPU phases");
    }
    /* GPU scopes the trace could not place on the host clock: said where the
     * GPU table is, never a bare "(none)" */
    char unmapped[1024];
    rpt_unmapped_note(s, meta, meta_len, unmapped, sizeof unmapped);
    phase_dist *dist = gpu_dists(s);
    print_group_table(out, title, s->gpu, s->n_gpu, s->gpu_busy_ns, s->gpu_tokens, false, dist,
                      unit, unmapped);
    if (s->n_gpu > 0 && unmapped[0] != '\0') {
        fprintf(out, "  note: %s\n", unmapped);
    }
    /* a first call far above the phase's median: a pipeline compiled at its
     * first use, most likely; said, with its share of the phase's total */
    for (size_t i = 0; dist != NULL && i < s->n_gpu; i++) {
        const phase_dist *d = &dist[i];
        if (s->gpu[i].calls >= 3 && d->first_ns >= 1000000 && d->first_ns >= 10 * d->p50_ns &&
            s->gpu[i].total_ns > 0) {
            fprintf(out,
                    "  note: the first %s took %.3f ms, %.0fx its median: %.1f%% of its total "
                    "(a pipeline the driver compiled at its first use?)\n",
                    s->gpu[i].name, (double)d->first_ns / 1e6,
                    d->p50_ns > 0 ? (double)d->first_ns / (double)d->p50_ns : 0.0,
                    100.0 * (double)d->first_ns / (double)s->gpu[i].total_ns);
        }
    }
    free(dist);
    if (s->n_estimates > 0) {
        print_estimates(s, out, unit);
    }
    print_gpu_idle(s, out, unit);
    if (s->n_ranks > 0) {
        snprintf(title, sizeof title, "host buckets (%zu ranks)", s->n_ranks);
    } else {
        snprintf(title, sizeof title, "host buckets");
    }
    print_group_table(out, title, s->host, s->n_host, s->host_busy_ns, s->tokens, true, NULL, unit,
                      NULL);
    if (layer) {
        print_layer_host(s, out);
    }
    if (s->n_ranks > 0 || s->n_expert_ids > 0) {
        rpt_rank_view v;
        if (rpt_rank_view_build(s, &v) != 0) {
            fprintf(out, "\n(the per-rank tables: out of memory)\n");
        } else {
            if (s->n_ranks > 0) {
                print_ranks(s, &v, out);
            }
            if (v.n_experts > 0) {
                print_experts(s, &v, out);
            }
            rpt_rank_view_free(&v);
        }
    }
    fflush(out);
    return ferror(out) ? -1 : 0;
}
