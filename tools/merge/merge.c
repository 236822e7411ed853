/* `vkprof merge` (rpt_merge): see merge.h and docs/trace-format.md, "Merging
 * traces".
 *
 * Two passes over each input, both through rpt_load_file and the bounded
 * walker of the report's reader (rpt_walk):
 *   1. check it (rpt_parse: everything `vkprof report` checks), then collect
 *      what the merge needs: its metadata (start, boot id, clock bounds), its
 *      rendezvous probes, its largest flow id; and check every event the
 *      second pass will rewrite (pids, ts, flow ids), so that pass cannot
 *      fail on the input's content;
 *   2. after the offsets are known, load it again (the same bytes: length and
 *      hash are compared), and write each event with its pid renumbered, its
 *      ts shifted onto the merged clock and its flow id moved into the
 *      input's own range.
 * Only one input is in memory at a time, and each event is parsed alone. */
#define _POSIX_C_SOURCE 200809L
#include "merge.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h"

#define RPT_MERGE_MAX_META_BYTES (1 << 20) /* kept for every input: vkprof's is a few KiB */
#define MAX_SAFE 9007199254740992.0        /* 2^53: larger integers are not exact as doubles */
#define MAX_TS_NS ((int64_t)(RPT_MAX_US * 1000.0))

typedef struct probe {
    char *bucket;
    int64_t step;
    int64_t start_ns, end_ns; /* ts and ts + dur: from the input's trace start */
    uint32_t k;               /* its rank among the probes of (bucket, step) */
} probe;

typedef struct input {
    const char *path;
    char *name;
    char *boot_id, *host, *device; /* cleaned; "" when absent */
    int64_t pid;
    int has_pid;
    int64_t start_ns;        /* metadata.trace_start_monotonic_ns, exact */
    uint64_t clock_bound_ns; /* metadata.host_clock.error_bound_ns (0 when absent) */
    char *meta_text;         /* its metadata as written */
    size_t meta_len;
    cJSON *meta;
    probe *probes;
    size_t n_probes, cap_probes;
    int64_t max_flow_id; /* -1: none */
    int64_t flow_base;
    size_t len;
    uint64_t hash;
    int format; /* RPT_FORMAT_JSON, or _PFTRACE: converted by the loader */
    uint64_t dup_events, first_dup_index, first_dup_of;
    /* the placement */
    int64_t offset_ns, shift_ns;
    uint64_t error_bound_ns, matched;
    int rendezvous;
} input;

typedef struct merger {
    const rpt_merge_opts *o;
    input *in;
    size_t n;
    char *err;
    size_t err_size;
    /* the input being walked */
    size_t cur;
    outfile out;
    bool first_event;
} merger;

static int fail(merger *m, const char *fmt, ...)
{
    if (m->err != NULL && m->err_size > 0 && m->err[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(m->err, m->err_size, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static uint64_t fnv1a(const char *buf, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ (unsigned char)buf[i]) * 1099511628211ull;
    }
    return h;
}

static char *dup_clean(const char *s)
{
    return rpt_clean_string(s != NULL ? s : "");
}

/* ---- pass 1: what the merge needs from each input ------------------------------- */

/* An integer member of an object, exactly (-1 absent, -2 wrong). */
static int get_int(const cJSON *obj, const char *key, double lo, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (v == NULL) {
        return -1;
    }
    double d = v->valuedouble;
    if (!cJSON_IsNumber(v) || !isfinite(d) || d < lo || d > MAX_SAFE || d != floor(d)) {
        return -2;
    }
    *out = (int64_t)d;
    return 0;
}

/* A time member of an event ("ts" or "dur"), microseconds -> ns as the
 * report's reader rounds it; -1 absent, -2 wrong. */
static int get_ns(const cJSON *ev, const char *key, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ev, key);
    if (v == NULL) {
        return -1;
    }
    double d = v->valuedouble;
    if (!cJSON_IsNumber(v) || !isfinite(d) || d < 0 || d > RPT_MAX_US) {
        return -2;
    }
    *out = (int64_t)(d * 1000.0 + 0.5);
    return 0;
}

/* The exact value of an unsigned integer member of the top-level object in
 * JSON text (cJSON's double rounds beyond 2^53, and CLOCK_MONOTONIC passes
 * 2^53 ns after 104 days of uptime). 0 found, -1 absent, -2 not an integer. */
static int raw_top_uint(const char *t, size_t len, const char *key, uint64_t *out)
{
    size_t klen = strlen(key), i = 0;
    int depth = 0;
    while (i < len) {
        char c = t[i++];
        if (c == '"') {
            size_t s = i;
            while (i < len && t[i] != '"') {
                i += t[i] == '\\' ? 2 : 1;
            }
            if (i >= len) {
                return -1;
            }
            size_t e = i++;
            if (depth != 1 || e - s != klen || memcmp(t + s, key, klen) != 0) {
                continue;
            }
            size_t j = i;
            while (j < len && (t[j] == ' ' || t[j] == '\t' || t[j] == '\n' || t[j] == '\r')) {
                j++;
            }
            if (j >= len || t[j] != ':') {
                continue; /* a value equal to the key's name */
            }
            j++;
            while (j < len && (t[j] == ' ' || t[j] == '\t' || t[j] == '\n' || t[j] == '\r')) {
                j++;
            }
            uint64_t v = 0;
            size_t digits = 0;
            while (j < len && t[j] >= '0' && t[j] <= '9') {
                unsigned d = (unsigned)(t[j++] - '0');
                if (v > (UINT64_MAX - d) / 10) {
                    return -2;
                }
                v = v * 10 + d;
                digits++;
            }
            if (digits == 0 || (j < len && (t[j] == '.' || t[j] == 'e' || t[j] == 'E'))) {
                return -2;
            }
            *out = v;
            return 0;
        }
        if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return -1;
}

static int scan_metadata(void *user, const cJSON *meta, const char *text, size_t len)
{
    merger *m = user;
    input *in = &m->in[m->cur];
    if (!cJSON_IsObject(meta)) {
        return fail(m, "%s: \"metadata\" is not an object", in->path);
    }
    if (cJSON_GetObjectItemCaseSensitive(meta, VKPROF_TF_META_MERGE) != NULL) {
        return fail(m, "%s is a merged trace already (metadata.merge); merge the original traces",
                    in->path);
    }
    int n_start = 0;
    for (const cJSON *c = meta->child; c != NULL; c = c->next) {
        n_start += c->string != NULL && strcmp(c->string, VKPROF_TF_META_TRACE_START) == 0;
    }
    uint64_t start = 0;
    const cJSON *sv = cJSON_GetObjectItemCaseSensitive(meta, VKPROF_TF_META_TRACE_START);
    int r = raw_top_uint(text, len, VKPROF_TF_META_TRACE_START, &start);
    if (n_start != 1 || sv == NULL || r != 0 || !cJSON_IsNumber(sv) ||
        start > (uint64_t)INT64_MAX / 2 ||
        fabs((double)start - sv->valuedouble) > 1e-12 * (double)start + 1.0) {
        return fail(m,
                    "%s: metadata." VKPROF_TF_META_TRACE_START
                    " is %s: the events cannot be placed on a clock",
                    in->path,
                    n_start > 1  ? "there twice"
                    : sv == NULL ? "missing"
                                 : "not a non-negative integer of at most 2^62");
    }
    in->start_ns = (int64_t)start;

    const cJSON *proc = cJSON_GetObjectItemCaseSensitive(meta, VKPROF_TF_META_PROCESS);
    const cJSON *boot = cJSON_GetObjectItemCaseSensitive(proc, VKPROF_TF_PROC_BOOT_ID);
    const cJSON *host = cJSON_GetObjectItemCaseSensitive(proc, VKPROF_TF_PROC_HOST);
    if ((proc != NULL && !cJSON_IsObject(proc)) || (boot != NULL && !cJSON_IsString(boot)) ||
        (host != NULL && !cJSON_IsString(host))) {
        return fail(m, "%s: metadata." VKPROF_TF_META_PROCESS " is not {\"boot_id\": string, ...}",
                    in->path);
    }
    int pr = get_int(proc, VKPROF_TF_PROC_PID, 0, &in->pid);
    if (pr == -2) {
        return fail(m,
                    "%s: metadata." VKPROF_TF_META_PROCESS "." VKPROF_TF_PROC_PID
                    " is not a non-negative integer",
                    in->path);
    }
    in->has_pid = pr == 0;
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(meta, VKPROF_TF_META_DEVICE);
    in->boot_id = dup_clean(cJSON_IsString(boot) ? boot->valuestring : "");
    in->host = dup_clean(cJSON_IsString(host) ? host->valuestring : "");
    in->device = dup_clean(cJSON_IsString(dev) ? dev->valuestring : "");
    const cJSON *hc = cJSON_GetObjectItemCaseSensitive(meta, VKPROF_TF_META_HOST_CLOCK);
    int64_t eb = 0;
    if (hc != NULL && get_int(hc, VKPROF_TF_HCLK_ERROR_BOUND, 0, &eb) == -2) {
        return fail(m,
                    "%s: metadata." VKPROF_TF_META_HOST_CLOCK "." VKPROF_TF_HCLK_ERROR_BOUND
                    " is not a non-negative integer",
                    in->path);
    }
    in->clock_bound_ns = (uint64_t)eb;
    in->meta = cJSON_Duplicate(meta, 1);
    in->meta_text = malloc(len + 1);
    if (in->boot_id == NULL || in->host == NULL || in->device == NULL || in->meta == NULL ||
        in->meta_text == NULL) {
        return fail(m, "out of memory");
    }
    if (len > RPT_MERGE_MAX_META_BYTES) {
        return fail(m, "%s: \"metadata\" is larger than %d bytes: not a vkprof trace's", in->path,
                    RPT_MERGE_MAX_META_BYTES);
    }
    memcpy(in->meta_text, text, len);
    in->meta_text[len] = '\0';
    in->meta_len = len;
    return 0;
}

/* Everything pass 2 rewrites, checked here: pid, ts, a flow's id. */
static int check_event(merger *m, const cJSON *ev, long idx, int64_t *flow_id)
{
    input *in = &m->in[m->cur];
    int64_t v;
    int r = get_int(ev, "pid", -MAX_SAFE, &v);
    if (r == -2 || (r == 0 && v != VKPROF_TF_PID_HOST && v != VKPROF_TF_PID_GPU)) {
        return fail(m,
                    "%s: the pid is not %d (host) or %d (GPU) (at event #%ld): only vkprof's "
                    "own traces are merged",
                    in->path, VKPROF_TF_PID_HOST, VKPROF_TF_PID_GPU, idx);
    }
    if (get_ns(ev, "ts", &v) == -2) {
        return fail(m, "%s: \"ts\" is not a time in 0..%g us (at event #%ld)", in->path, RPT_MAX_US,
                    idx);
    }
    *flow_id = -1;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(ev, "id");
    if (id != NULL) {
        if (cJSON_IsString(id)) {
            return 0;
        }
        if (get_int(ev, "id", 0, flow_id) != 0) {
            return fail(m,
                        "%s: \"id\" is neither a string nor an integer in 0..2^53 (at event #%ld)",
                        in->path, idx);
        }
    }
    return 0;
}

static int scan_event(void *user, const cJSON *ev, long idx)
{
    merger *m = user;
    input *in = &m->in[m->cur];
    int64_t fid;
    if (check_event(m, ev, idx, &fid) != 0) {
        return -1;
    }
    if (fid > in->max_flow_id) {
        in->max_flow_id = fid;
    }
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(ev, "ph");
    const cJSON *cat = cJSON_GetObjectItemCaseSensitive(ev, "cat");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
    if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X") != 0 || !cJSON_IsString(cat) ||
        strcmp(cat->valuestring, VKPROF_TF_CAT_HOST) != 0 ||
        !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args, VKPROF_TF_ARG_PROBE))) {
        return 0;
    }
    /* a rendezvous probe (rpt_parse checked its ts, dur, step and bucket) */
    int64_t ts = 0, dur = 0, step = -1;
    get_ns(ev, "ts", &ts);
    get_ns(ev, "dur", &dur);
    get_int(args, VKPROF_TF_ARG_STEP, 0, &step);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(args, VKPROF_TF_ARG_BUCKET);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(ev, "name");
    const char *bucket = cJSON_IsString(b)      ? b->valuestring
                         : cJSON_IsString(name) ? name->valuestring
                                                : "";
    if (in->n_probes == in->cap_probes) {
        size_t cap = in->cap_probes ? in->cap_probes * 2 : 256;
        probe *q = realloc(in->probes, cap * sizeof *q);
        if (q == NULL) {
            return fail(m, "out of memory");
        }
        in->probes = q;
        in->cap_probes = cap;
    }
    probe *p = &in->probes[in->n_probes];
    p->bucket = rpt_clean_string(bucket);
    if (p->bucket == NULL) {
        return fail(m, "out of memory");
    }
    p->step = step;
    p->start_ns = ts; /* relative: the metadata (the start) may come after the events */
    p->end_ns = ts + dur;
    p->k = 0;
    in->n_probes++;
    return 0;
}

static int load(merger *m, size_t k, char **buf, size_t *len)
{
    char e[512];
    if (rpt_load_trace(m->in[k].path, m->o->max_bytes, buf, len, &m->in[k].format, e, sizeof e) !=
        0) {
        return fail(m, "%s: %s", m->in[k].path, e);
    }
    return 0;
}

/* A reader's error on input k: said as one of a converted Perfetto trace
 * when it was one (its event numbers are those of the JSON text). */
static int fail_read(merger *m, size_t k, char *e, size_t size)
{
    if (m->in[k].format == RPT_FORMAT_PFTRACE) {
        rpt_pftrace_json_error(e, size);
    }
    return fail(m, "%s: %s", m->in[k].path, e);
}

static int scan_input(merger *m, size_t k)
{
    input *in = &m->in[k];
    char *buf = NULL, e[512];
    size_t len = 0;
    if (load(m, k, &buf, &len) != 0) {
        return -1;
    }
    rpt_summary *s = NULL;
    if (rpt_parse(buf, len, &s, e, sizeof e) != 0) {
        free(buf);
        return fail_read(m, k, e, sizeof e);
    }
    in->dup_events = s->n_dup_events;
    in->first_dup_index = s->first_dup_index;
    in->first_dup_of = s->first_dup_of;
    rpt_free(s);
    m->cur = k;
    in->max_flow_id = -1;
    rpt_walk_fns fns = {.event = scan_event, .metadata = scan_metadata, .user = m};
    int rc = rpt_walk(buf, len, &fns, e, sizeof e);
    if (rc != 0) {
        fail_read(m, k, e, sizeof e);
    } else if (in->meta == NULL) {
        rc = fail(m, "%s: no \"metadata\": the trace does not say when it started", in->path);
    }
    in->len = len;
    in->hash = fnv1a(buf, len);
    free(buf);
    return rc;
}

/* ---- the clocks ------------------------------------------------------------------ */

static int cmp_probe(const void *a, const void *b)
{
    const probe *x = a, *y = b;
    int c = strcmp(x->bucket, y->bucket);
    if (c != 0) {
        return c;
    }
    if (x->step != y->step) {
        return x->step < y->step ? -1 : 1;
    }
    if (x->start_ns != y->start_ns) {
        return x->start_ns < y->start_ns ? -1 : 1;
    }
    return (x->end_ns > y->end_ns) - (x->end_ns < y->end_ns);
}

/* Sort an input's probes by (bucket, step, start) and number them within
 * each (bucket, step): the k-th probe of a bucket in a step. */
static void number_probes(input *in)
{
    if (in->n_probes == 0) {
        return;
    }
    qsort(in->probes, in->n_probes, sizeof *in->probes, cmp_probe);
    for (size_t i = 1; i < in->n_probes; i++) {
        probe *p = &in->probes[i], *q = &in->probes[i - 1];
        p->k = (strcmp(p->bucket, q->bucket) == 0 && p->step == q->step) ? q->k + 1 : 0;
    }
}

static int key_cmp(const probe *x, const probe *y)
{
    int c = strcmp(x->bucket, y->bucket);
    if (c != 0) {
        return c;
    }
    if (x->step != y->step) {
        return x->step < y->step ? -1 : 1;
    }
    return (x->k > y->k) - (x->k < y->k);
}

/* Input k's offset against input 0 from causality at the rendezvous probes.
 * A probe's span opens before its rank enters the barrier and closes after
 * it leaves, and no rank leaves before the last one has entered. So for the
 * k-th probe of a bucket in a step, recorded on a's clock and on b's clock
 * (off = b's clock - a's clock):
 *     b's exit >= a's entry  =>  off <= b.end   - a.start
 *     a's exit >= b's entry  =>  off >= b.start - a.end
 * The offset lies in the intersection [lo, hi] of every probe's interval,
 * widened by both inputs' host clock bounds (what either trace's tick-to-ns
 * map may be off). The estimate is the middle of it and the bound half its
 * width: a bound that holds whichever rank leaves first or last, however
 * the ranks are scheduled (the exits' differences alone are biased by a rank
 * that always wakes last). An empty intersection means the probes are not
 * one barrier on a constant offset (clocks that drift apart, or spans that
 * do not cover the barrier): refused. */
static int estimate(merger *m, size_t k)
{
    input *a = &m->in[0], *b = &m->in[k];
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    const probe *lo_at = NULL, *hi_at = NULL; /* b's probe that set lo, hi */
    size_t n = 0, i = 0, j = 0;
    while (i < a->n_probes && j < b->n_probes) {
        int c = key_cmp(&a->probes[i], &b->probes[j]);
        if (c < 0) {
            i++;
        } else if (c > 0) {
            j++;
        } else {
            const probe *pa = &a->probes[i], *pb = &b->probes[j];
            /* each term at most 10^18 (the reader bounds ts, dur and start) */
            int64_t l = (b->start_ns + pb->start_ns) - (a->start_ns + pa->end_ns);
            int64_t h = (b->start_ns + pb->end_ns) - (a->start_ns + pa->start_ns);
            if (l > lo) {
                lo = l;
                lo_at = pb;
            }
            if (h < hi) {
                hi = h;
                hi_at = pb;
            }
            n++;
            i++;
            j++;
        }
    }
    if (n < RPT_MERGE_MIN_PROBES) {
        return fail(m,
                    "%s and %s: only %zu rendezvous probes match (%zu and %zu probes; at least "
                    "%d are needed): the clocks cannot be aligned (were they recorded with "
                    "vkprof_rendezvous, at host level 1 or 2, over the same steps?)",
                    a->path, b->path, n, a->n_probes, b->n_probes, RPT_MERGE_MIN_PROBES);
    }
    /* the clock bounds are each at most 10^18 (the reader's limit) */
    uint64_t cb = a->clock_bound_ns + b->clock_bound_ns;
    if (lo > hi && (uint64_t)(lo - hi) > 2 * cb) {
        return fail(m,
                    "%s and %s: the rendezvous probes contradict one constant clock offset: "
                    "%s step %" PRId64 " needs an offset of at least %" PRId64
                    " ns, %s step %" PRId64 " at most %" PRId64 " ns (host clock bounds %" PRIu64
                    " ns): the clocks drift apart, or the probes' spans do not cover one barrier",
                    a->path, b->path, lo_at->bucket, lo_at->step, lo, hi_at->bucket, hi_at->step,
                    hi, cb);
    }
    /* the middle, without overflow: lo and hi are within 2*10^18 of 0 */
    int64_t mid = lo + (hi - lo) / 2;
    uint64_t half = lo <= hi ? (uint64_t)(hi - mid) : (uint64_t)(mid - hi);
    b->offset_ns = mid;
    b->error_bound_ns = half + cb;
    b->matched = n;
    b->rendezvous = 1;
    return 0;
}

static int place(merger *m, int *refused)
{
    *refused = 0;
    bool same = true;
    size_t odd = 0;
    for (size_t k = 0; k < m->n; k++) {
        if (m->in[k].boot_id[0] == '\0' || strcmp(m->in[k].boot_id, m->in[0].boot_id) != 0) {
            same = false;
            odd = k;
            break;
        }
    }
    if (!same && !m->o->align_rendezvous) {
        *refused = 1;
        const input *a = &m->in[0], *b = &m->in[odd];
        if (a->boot_id[0] == '\0' || b->boot_id[0] == '\0') {
            const input *x = a->boot_id[0] == '\0' ? a : b;
            return fail(m,
                        "%s does not say which boot of which host wrote it (no "
                        "metadata.process.boot_id): its clock cannot be trusted to be the others' "
                        "CLOCK_MONOTONIC; --align rendezvous estimates the offsets from the "
                        "rendezvous probes",
                        x->path);
        }
        return fail(m,
                    "%s (boot %s, host %s) and %s (boot %s, host %s) were recorded on different "
                    "boots or hosts: their CLOCK_MONOTONIC differ; --align rendezvous estimates "
                    "the offsets from the rendezvous probes",
                    a->path, a->boot_id, a->host[0] ? a->host : "?", b->path, b->boot_id,
                    b->host[0] ? b->host : "?");
    }
    for (size_t k = 0; k < m->n; k++) {
        number_probes(&m->in[k]);
    }
    for (size_t k = 1; k < m->n; k++) {
        input *in = &m->in[k];
        if (in->boot_id[0] != '\0' && strcmp(in->boot_id, m->in[0].boot_id) == 0) {
            continue; /* the same boot as the reference: exact, offset 0 */
        }
        if (estimate(m, k) != 0) {
            *refused = 1;
            return -1;
        }
    }
    /* Merged start: the earliest input start on the reference clock. */
    int64_t t0 = INT64_MAX;
    for (size_t k = 0; k < m->n; k++) {
        int64_t s = m->in[k].start_ns - m->in[k].offset_ns;
        if (s < t0) {
            t0 = s;
        }
    }
    for (size_t k = 0; k < m->n; k++) {
        m->in[k].shift_ns = m->in[k].start_ns - m->in[k].offset_ns - t0;
        if (m->in[k].shift_ns > MAX_TS_NS) {
            return fail(m, "%s starts %" PRId64 " ns after the earliest input: too far to merge",
                        m->in[k].path, m->in[k].shift_ns);
        }
    }
    /* Flow ids: each input's in its own range. */
    int64_t base = 0;
    for (size_t k = 0; k < m->n; k++) {
        m->in[k].flow_base = base;
        if (m->in[k].max_flow_id >= 0) {
            base += m->in[k].max_flow_id + 1;
            if ((double)base > MAX_SAFE) {
                return fail(m, "the flow ids add up to more than 2^53");
            }
        }
    }
    return 0;
}

/* ---- pass 2: writing -------------------------------------------------------------- */

static int put_event(merger *m, cJSON *ev)
{
    char *text = cJSON_PrintUnformatted(ev);
    if (text == NULL) {
        return fail(m, "out of memory");
    }
    fputs(m->first_event ? "\n" : ",\n", m->out.f);
    fputs(text, m->out.f);
    cJSON_free(text);
    m->first_event = false;
    return 0;
}

static int set_raw(cJSON *obj, const char *key, const char *raw)
{
    cJSON *v = cJSON_CreateRaw(raw);
    if (v == NULL) {
        return -1;
    }
    if (cJSON_GetObjectItemCaseSensitive(obj, key) != NULL) {
        return cJSON_ReplaceItemInObjectCaseSensitive(obj, key, v) ? 0 : -1;
    }
    return cJSON_AddItemToObject(obj, key, v) ? 0 : -1;
}

static int set_i64(cJSON *obj, const char *key, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    return set_raw(obj, key, buf);
}

static int set_u64(cJSON *obj, const char *key, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    return set_raw(obj, key, buf);
}

static int track_meta(merger *m, const char *what, int64_t pid, const char *key, cJSON *value)
{
    cJSON *ev = cJSON_CreateObject(), *args = cJSON_CreateObject();
    int rc = -1;
    if (ev != NULL && args != NULL && value != NULL && cJSON_AddStringToObject(ev, "ph", "M") &&
        cJSON_AddStringToObject(ev, "name", what) && set_i64(ev, "pid", pid) == 0 &&
        cJSON_AddItemToObject(args, key, value)) {
        value = NULL;
        if (cJSON_AddItemToObject(ev, "args", args)) {
            args = NULL;
            rc = put_event(m, ev);
        }
    }
    cJSON_Delete(value);
    cJSON_Delete(args);
    cJSON_Delete(ev);
    return rc != 0 ? fail(m, "out of memory") : 0;
}

static int write_event(void *user, const cJSON *orig, long idx)
{
    merger *m = user;
    input *in = &m->in[m->cur];
    size_t k = m->cur;
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(orig, "ph");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(orig, "name");
    if (cJSON_IsString(ph) && strcmp(ph->valuestring, "M") == 0 && cJSON_IsString(name) &&
        (strcmp(name->valuestring, VKPROF_TF_M_PROCESS_NAME) == 0 ||
         strcmp(name->valuestring, VKPROF_TF_M_PROCESS_SORT) == 0)) {
        return 0; /* replaced by the merge's own */
    }
    int64_t fid = -1, pid = VKPROF_TF_PID_HOST, ts;
    if (check_event(m, orig, idx, &fid) != 0) {
        return -1; /* not after pass 1 (the same bytes) */
    }
    get_int(orig, "pid", -MAX_SAFE, &pid);
    cJSON *ev = cJSON_Duplicate(orig, 1);
    if (ev == NULL) {
        return fail(m, "out of memory");
    }
    int r = set_i64(ev, "pid",
                    pid == VKPROF_TF_PID_GPU ? VKPROF_TF_MERGE_GPU_PID((int64_t)k)
                                             : VKPROF_TF_MERGE_HOST_PID((int64_t)k));
    if (r == 0 && get_ns(orig, "ts", &ts) == 0) {
        int64_t t = ts + in->shift_ns; /* each at most 10^18: no overflow */
        if (t > MAX_TS_NS) {
            cJSON_Delete(ev);
            return fail(m,
                        "%s: an event would be at %" PRId64 " ns of the merged trace, past its "
                        "limit of 10^18 ns (at event #%ld)",
                        in->path, t, idx);
        }
        char buf[48];
        snprintf(buf, sizeof buf, "%" PRId64 ".%03" PRId64, t / 1000, t % 1000);
        r = set_raw(ev, "ts", buf);
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(orig, "id");
    if (r == 0 && fid >= 0) {
        r = set_i64(ev, "id", fid + in->flow_base);
    } else if (r == 0 && cJSON_IsString(id)) {
        size_t n = strlen(id->valuestring) + 24;
        char *s = malloc(n);
        if (s == NULL) {
            r = -1;
        } else {
            snprintf(s, n, "%zu:%s", k, id->valuestring);
            cJSON *v = cJSON_CreateString(s);
            free(s);
            r = v != NULL && cJSON_ReplaceItemInObjectCaseSensitive(ev, "id", v) ? 0 : -1;
        }
    }
    if (r != 0) {
        cJSON_Delete(ev);
        return fail(m, "out of memory");
    }
    r = put_event(m, ev);
    cJSON_Delete(ev);
    return r;
}

static int write_input(merger *m, size_t k)
{
    input *in = &m->in[k];
    char *buf = NULL, e[512];
    size_t len = 0;
    if (load(m, k, &buf, &len) != 0) {
        return -1;
    }
    if (len != in->len || fnv1a(buf, len) != in->hash) {
        free(buf);
        return fail(m, "%s changed while it was merged", in->path);
    }
    m->cur = k;
    rpt_walk_fns fns = {.event = write_event, .user = m};
    int rc = rpt_walk(buf, len, &fns, e, sizeof e);
    free(buf);
    if (rc != 0) {
        fail_read(m, k, e, sizeof e);
    }
    return rc;
}

/* Sum (or take the largest of) one integer key over the inputs' objects
 * `obj` (NULL: the metadata itself; else a member object of it, or of that:
 * obj2). Absent in every input: left out. */
static int merge_count(merger *m, cJSON *dst, const char *obj, const char *obj2, const char *key,
                       bool max)
{
    uint64_t acc = 0;
    bool any = false;
    for (size_t k = 0; k < m->n; k++) {
        const cJSON *o = m->in[k].meta;
        if (obj != NULL) {
            o = cJSON_GetObjectItemCaseSensitive(o, obj);
        }
        if (obj2 != NULL) {
            o = cJSON_GetObjectItemCaseSensitive(o, obj2);
        }
        int64_t v;
        if (o == NULL || get_int(o, key, 0, &v) != 0) {
            continue;
        }
        any = true;
        if (max) {
            acc = (uint64_t)v > acc ? (uint64_t)v : acc;
        } else {
            acc += (uint64_t)v; /* each at most 2^53, at most 256 of them */
        }
    }
    if (!any) {
        return 0;
    }
    if (obj != NULL) {
        cJSON *o = cJSON_GetObjectItemCaseSensitive(dst, obj);
        if (o == NULL) {
            o = cJSON_AddObjectToObject(dst, obj);
        }
        dst = o;
    }
    if (obj2 != NULL && dst != NULL) {
        cJSON *o = cJSON_GetObjectItemCaseSensitive(dst, obj2);
        if (o == NULL) {
            o = cJSON_AddObjectToObject(dst, obj2);
        }
        dst = o;
    }
    if (!cJSON_IsObject(dst) || set_u64(dst, key, acc) != 0) {
        return fail(m, "out of memory");
    }
    return 0;
}

/* The same string in every input that has it: kept; different: "mixed". */
static void merge_string(merger *m, cJSON *dst, const char *obj, const char *key)
{
    const char *first = NULL;
    bool mixed = false;
    for (size_t k = 0; k < m->n; k++) {
        const cJSON *o = m->in[k].meta;
        if (obj != NULL) {
            o = cJSON_GetObjectItemCaseSensitive(o, obj);
        }
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        if (!cJSON_IsString(v)) {
            continue;
        }
        if (first == NULL) {
            first = v->valuestring;
        } else if (strcmp(first, v->valuestring) != 0) {
            mixed = true;
        }
    }
    cJSON *o = obj != NULL ? cJSON_GetObjectItemCaseSensitive(dst, obj) : dst;
    if (mixed && cJSON_IsObject(o)) {
        cJSON *s = cJSON_CreateString("mixed");
        if (s != NULL && !cJSON_ReplaceItemInObjectCaseSensitive(o, key, s)) {
            cJSON_Delete(s);
        }
    }
}

static cJSON *merged_metadata(merger *m, int64_t t0)
{
    cJSON *meta = cJSON_Duplicate(m->in[0].meta, 1);
    if (meta == NULL) {
        return NULL;
    }
    /* What describes one process stays per input only. */
    cJSON_DeleteItemFromObjectCaseSensitive(meta, VKPROF_TF_META_PROCESS);
    cJSON_DeleteItemFromObjectCaseSensitive(meta, VKPROF_TF_META_CLOCK_ANCHOR);
    cJSON_DeleteItemFromObjectCaseSensitive(meta, VKPROF_TF_META_HOST_CLOCK);
    static const char *const sums[] = {VKPROF_TF_META_DROPPED_EVENTS,
                                       VKPROF_TF_META_DROPPED_ANNOTATIONS,
                                       VKPROF_TF_META_UNMAPPED_GPU_SCOPES,
                                       VKPROF_TF_META_EVENT_CAPACITY,
                                       VKPROF_TF_META_HOST_SPANS,
                                       VKPROF_TF_META_GPU_SCOPES,
                                       VKPROF_TF_META_FLOWS};
    static const char *const samp_sums[] = {
        VKPROF_TF_SAMP_RECORDED,       VKPROF_TF_SAMP_SAMPLES,
        VKPROF_TF_SAMP_SUBMISSIONS,    VKPROF_TF_SAMP_COLLECTED,
        VKPROF_TF_SAMP_DROPPED,        VKPROF_TF_SAMP_PENDING,
        VKPROF_TF_SAMP_CALLS_EXECUTED, VKPROF_TF_SAMP_CALLS_UNSTAMPED,
        VKPROF_TF_SAMP_ROTATE_CHANGED};
    /* settings, not counts: the largest (each input's own is in merge.inputs) */
    static const char *const samp_max[] = {VKPROF_TF_SAMP_ROTATE_SCOPES,
                                           VKPROF_TF_SAMP_ROTATE_PERIOD};
    static const char *const lost[VKPROF_TF_LOST_COUNT] = {
#define LOST_KEY_(id, key, text) key,
        VKPROF_TF_LOST_REASONS(LOST_KEY_)
#undef LOST_KEY_
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof sums / sizeof sums[0]; i++) {
        rc |= merge_count(m, meta, NULL, NULL, sums[i], false);
    }
    rc |= merge_count(m, meta, NULL, NULL, VKPROF_TF_META_STEPS, true);
    for (size_t i = 0; i < sizeof samp_sums / sizeof samp_sums[0]; i++) {
        rc |= merge_count(m, meta, VKPROF_TF_META_SAMPLING, NULL, samp_sums[i], false);
    }
    rc |= merge_count(m, meta, VKPROF_TF_META_SAMPLING, NULL, VKPROF_TF_SAMP_TIMED_STEPS, true);
    for (size_t i = 0; i < sizeof samp_max / sizeof samp_max[0]; i++) {
        rc |= merge_count(m, meta, VKPROF_TF_META_SAMPLING, NULL, samp_max[i], true);
    }
    for (size_t i = 0; i < VKPROF_TF_LOST_COUNT; i++) {
        rc |= merge_count(m, meta, VKPROF_TF_META_SAMPLING, VKPROF_TF_SAMP_LOST, lost[i], false);
    }
    rc |= merge_count(m, meta, VKPROF_TF_META_CALIBRATION, NULL, VKPROF_TF_CAL_ERROR_BOUND, true);
    merge_string(m, meta, VKPROF_TF_META_SAMPLING, VKPROF_TF_SAMP_MODE);
    merge_string(m, meta, VKPROF_TF_META_CALIBRATION, VKPROF_TF_CAL_METHOD);
    merge_string(m, meta, NULL, VKPROF_TF_META_DEVICE);
    merge_string(m, meta, NULL, VKPROF_TF_META_DRIVER);
    if (rc != 0 || set_i64(meta, VKPROF_TF_META_TRACE_START, t0) != 0) {
        cJSON_Delete(meta);
        return NULL;
    }

    bool any_rdv = false;
    for (size_t k = 0; k < m->n; k++) {
        any_rdv |= m->in[k].rendezvous != 0;
    }
    cJSON *mg = cJSON_AddObjectToObject(meta, VKPROF_TF_META_MERGE);
    cJSON *inputs = mg != NULL ? cJSON_AddArrayToObject(mg, VKPROF_TF_MERGE_INPUTS) : NULL;
    bool ok = inputs != NULL &&
              cJSON_AddStringToObject(mg, VKPROF_TF_MERGE_METHOD,
                                      any_rdv ? VKPROF_TF_MERGE_RENDEZVOUS
                                              : VKPROF_TF_MERGE_SAME_BOOT) != NULL &&
              cJSON_AddNumberToObject(mg, VKPROF_TF_MERGE_REFERENCE, 0) != NULL;
    for (size_t k = 0; ok && k < m->n; k++) {
        const input *in = &m->in[k];
        cJSON *o = cJSON_CreateObject();
        ok = o != NULL && cJSON_AddItemToArray(inputs, o);
        if (!ok) {
            cJSON_Delete(o);
            break;
        }
        ok = cJSON_AddStringToObject(o, VKPROF_TF_MERGE_FILE, in->path) != NULL &&
             cJSON_AddStringToObject(o, VKPROF_TF_MERGE_NAME, in->name) != NULL &&
             cJSON_AddStringToObject(o, VKPROF_TF_PROC_BOOT_ID, in->boot_id) != NULL &&
             cJSON_AddStringToObject(o, VKPROF_TF_PROC_HOST, in->host) != NULL &&
             (in->has_pid ? set_i64(o, VKPROF_TF_PROC_PID, in->pid) == 0
                          : cJSON_AddNullToObject(o, VKPROF_TF_PROC_PID) != NULL) &&
             set_i64(o, VKPROF_TF_MERGE_HOST_PID_KEY, VKPROF_TF_MERGE_HOST_PID((int64_t)k)) == 0 &&
             set_i64(o, VKPROF_TF_MERGE_GPU_PID_KEY, VKPROF_TF_MERGE_GPU_PID((int64_t)k)) == 0 &&
             set_i64(o, VKPROF_TF_MERGE_OFFSET, in->offset_ns) == 0 &&
             set_u64(o, VKPROF_TF_MERGE_ERROR_BOUND, in->error_bound_ns) == 0 &&
             cJSON_AddStringToObject(o, VKPROF_TF_MERGE_INPUT_METHOD,
                                     in->rendezvous ? VKPROF_TF_MERGE_RENDEZVOUS
                                                    : VKPROF_TF_MERGE_SAME_BOOT) != NULL &&
             set_u64(o, VKPROF_TF_MERGE_MATCHED, in->matched) == 0 &&
             set_i64(o, VKPROF_TF_MERGE_SHIFT, in->shift_ns) == 0 &&
             set_raw(o, VKPROF_TF_MERGE_INPUT_META, in->meta_text) == 0;
    }
    if (!ok) {
        cJSON_Delete(meta);
        return NULL;
    }
    return meta;
}

static int write_all(merger *m)
{
    int64_t t0 = m->in[0].start_ns - m->in[0].offset_ns - m->in[0].shift_ns;
    if (outfile_open_quiet(&m->out, m->o->output, m->err, m->err_size) != 0) {
        return -1;
    }
    m->first_event = true;
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", m->out.f);
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < m->n; k++) {
        const input *in = &m->in[k];
        size_t n = strlen(in->name) + strlen(in->device) + 16;
        char *gpu = malloc(n);
        if (gpu == NULL) {
            rc = fail(m, "out of memory");
            break;
        }
        snprintf(gpu, n, in->device[0] ? "%s GPU (%s)" : "%s GPU", in->name, in->device);
        int64_t hp = VKPROF_TF_MERGE_HOST_PID((int64_t)k), gp = VKPROF_TF_MERGE_GPU_PID((int64_t)k);
        rc = track_meta(m, VKPROF_TF_M_PROCESS_NAME, hp, VKPROF_TF_M_ARG_NAME,
                        cJSON_CreateString(in->name));
        rc = rc ? rc
                : track_meta(m, VKPROF_TF_M_PROCESS_NAME, gp, VKPROF_TF_M_ARG_NAME,
                             cJSON_CreateString(gpu));
        rc = rc ? rc
                : track_meta(m, VKPROF_TF_M_PROCESS_SORT, hp, VKPROF_TF_M_ARG_SORT,
                             cJSON_CreateNumber((double)(2 * k)));
        rc = rc ? rc
                : track_meta(m, VKPROF_TF_M_PROCESS_SORT, gp, VKPROF_TF_M_ARG_SORT,
                             cJSON_CreateNumber((double)(2 * k + 1)));
        free(gpu);
    }
    for (size_t k = 0; rc == 0 && k < m->n; k++) {
        rc = write_input(m, k);
    }
    cJSON *meta = rc == 0 ? merged_metadata(m, t0) : NULL;
    if (rc == 0 && meta == NULL) {
        rc = fail(m, "out of memory");
    }
    char *text = meta != NULL ? cJSON_PrintUnformatted(meta) : NULL;
    cJSON_Delete(meta);
    if (rc == 0 && text == NULL) {
        rc = fail(m, "out of memory");
    }
    if (rc != 0) {
        cJSON_free(text);
        outfile_abort(&m->out);
        return -1;
    }
    fprintf(m->out.f, "\n],\n\"%s\":%s}\n", VKPROF_TF_META, text);
    cJSON_free(text);
    if (outfile_commit(&m->out) != 0) {
        return -1; /* the message is in err */
    }
    return 0;
}

/* ---- public ------------------------------------------------------------------------- */

int rpt_merge_split_names(const char *list, size_t n, char ***names)
{
    *names = NULL;
    char *copy = strdup(list);
    char **v = calloc(n ? n : 1, sizeof *v);
    if (copy == NULL || v == NULL) {
        free(copy);
        free(v);
        return -1;
    }
    size_t k = 0;
    char *s = copy;
    for (;;) {
        char *c = strchr(s, ',');
        if (c != NULL) {
            *c = '\0';
        }
        if (*s == '\0' || k >= n) {
            free(copy);
            free(v);
            return -1;
        }
        v[k++] = s;
        if (c == NULL) {
            break;
        }
        s = c + 1;
    }
    if (k != n) {
        free(copy);
        free(v);
        return -1;
    }
    *names = v;
    return 0;
}

int rpt_merge(const rpt_merge_opts *o, rpt_merge_input *info, char *err, size_t err_size)
{
    if (err != NULL && err_size > 0) {
        err[0] = '\0';
    }
    merger m = {.o = o, .n = o->n_inputs, .err = err, .err_size = err_size};
    if (o->n_inputs < 1 || o->n_inputs > RPT_MAX_RANKS) {
        fail(&m, "%zu inputs: 1..%d are merged", o->n_inputs, RPT_MAX_RANKS);
        return RPT_MERGE_ERROR;
    }
    m.in = calloc(o->n_inputs, sizeof *m.in);
    if (m.in == NULL) {
        fail(&m, "out of memory");
        return RPT_MERGE_ERROR;
    }
    int status = RPT_MERGE_OK;
    for (size_t k = 0; k < m.n && status == RPT_MERGE_OK; k++) {
        input *in = &m.in[k];
        in->path = o->inputs[k];
        char dflt[32];
        snprintf(dflt, sizeof dflt, "rank %zu", k);
        in->name = rpt_clean_string(o->names != NULL ? o->names[k] : dflt);
        if (in->name == NULL) {
            fail(&m, "out of memory");
            status = RPT_MERGE_ERROR;
        } else if (strcmp(in->path, "-") == 0) {
            fail(&m, "\"-\": merge reads each input twice, so stdin cannot be one");
            status = RPT_MERGE_ERROR;
        } else if (scan_input(&m, k) != 0) {
            status = RPT_MERGE_ERROR;
        }
    }
    int refused = 0;
    if (status == RPT_MERGE_OK && place(&m, &refused) != 0) {
        status = refused ? RPT_MERGE_REFUSED : RPT_MERGE_ERROR;
    }
    if (status == RPT_MERGE_OK && write_all(&m) != 0) {
        status = RPT_MERGE_ERROR;
    }
    for (size_t k = 0; k < m.n; k++) {
        input *in = &m.in[k];
        if (status == RPT_MERGE_OK && info != NULL) {
            info[k] = (rpt_merge_input){.offset_ns = in->offset_ns,
                                        .error_bound_ns = in->error_bound_ns,
                                        .matched = in->matched,
                                        .rendezvous = in->rendezvous,
                                        .dup_events = in->dup_events,
                                        .first_dup_index = in->first_dup_index,
                                        .first_dup_of = in->first_dup_of};
        }
        for (size_t i = 0; i < in->n_probes; i++) {
            free(in->probes[i].bucket);
        }
        free(in->probes);
        free(in->name);
        free(in->boot_id);
        free(in->host);
        free(in->device);
        free(in->meta_text);
        cJSON_Delete(in->meta);
    }
    free(m.in);
    return status;
}
