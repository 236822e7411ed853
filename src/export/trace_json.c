/* The trace exporter: the timeline store as Chrome Trace Event JSON
 * (docs/trace-format.md), GPU ticks mapped to host ns through the clock,
 * written atomically (atomic_file.c). */
#define _XOPEN_SOURCE 700
#include "base/base.h"
#include "clock/clock.h"
#include "timeline/store.h"

#include "base/json.h"
#include "export/atomic_file.h"
#include "export/export.h"
#include "export/export_events.h"
#include "export/trace_format.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every lost_* field of vkprof_timing_stats is a reason of
 * VKPROF_TF_LOST_REASONS, in the same order, and nothing follows them: a new
 * reason in vkprof.h that the trace format does not list fails here. */
#define LOST_FIELD_AT_(id, key, text)                                                              \
    _Static_assert(offsetof(vkprof_timing_stats, lost_##id) ==                                     \
                       offsetof(vkprof_timing_stats, lost_ring_full) +                             \
                           VKPROF_TF_LOST_##id * sizeof(uint64_t),                                 \
                   "trace_format.h: lost reason " #id " out of order");
VKPROF_TF_LOST_REASONS(LOST_FIELD_AT_)
#undef LOST_FIELD_AT_
_Static_assert(sizeof(vkprof_timing_stats) - offsetof(vkprof_timing_stats, lost_ring_full) ==
                   VKPROF_TF_LOST_COUNT * sizeof(uint64_t),
               "vkprof_timing_stats has a lost_* field that trace_format.h does not list");

/* ---- export ----------------------------------------------------------- */

/* ns after the trace start, as microseconds with three decimals */
static void put_us(vkprof_json *j, const char *key, uint64_t ns)
{
    vkprof__json_key(j, key);
    vkprof__json_fixed(j, (int64_t)ns, 3);
}

/* The start of an event: its own line, then {"ph":ph,...} */
static void event_begin(vkprof_json *j, const char *ph)
{
    vkprof__json_newline(j);
    vkprof__json_obj(j);
    vkprof__json_kv_str(j, "ph", ph);
}

static void pid_tid(vkprof_json *j, uint64_t pid, uint64_t tid)
{
    vkprof__json_kv_u64(j, "pid", pid);
    vkprof__json_kv_u64(j, "tid", tid);
}

/* A track's name or sort index: {"ph":"M","name":what,"pid":..,"tid":..,"args":{..}} */
static void meta_name(vkprof_json *j, const char *what, uint64_t pid, uint64_t tid,
                      const char *name)
{
    event_begin(j, "M");
    vkprof__json_kv_str(j, "name", what);
    pid_tid(j, pid, tid);
    vkprof__json_key(j, "args");
    vkprof__json_obj(j);
    vkprof__json_kv_str(j, VKPROF_TF_M_ARG_NAME, name);
    vkprof__json_end(j);
    vkprof__json_end(j);
}

static void meta_sort(vkprof_json *j, const char *what, uint64_t pid, uint64_t tid, uint64_t index)
{
    event_begin(j, "M");
    vkprof__json_kv_str(j, "name", what);
    pid_tid(j, pid, tid);
    vkprof__json_key(j, "args");
    vkprof__json_obj(j);
    vkprof__json_kv_u64(j, VKPROF_TF_M_ARG_SORT, index);
    vkprof__json_end(j);
    vkprof__json_end(j);
}

/* One event through the JSON writer: what fmt_event() writes, for an event
 * whose names do not fit a block. */
static void write_event(vkprof_json *j, const vkprof_xevent *e, uint64_t t0)
{
    uint64_t ts = e->start_ns - t0;
    uint64_t dur = e->end_ns >= e->start_ns ? e->end_ns - e->start_ns : 0;
    if (e->kind == VKPROF_EV_STEP) {
        event_begin(j, "i");
        vkprof__json_kv_str(j, "cat", VKPROF_TF_CAT_STEP);
        vkprof__json_kv_str(j, "name", VKPROF_TF_STEP_NAME);
        vkprof__json_kv_str(j, "s", "p");
        pid_tid(j, VKPROF_TF_PID_HOST, e->tid);
        put_us(j, "ts", ts);
        vkprof__json_key(j, "args");
        vkprof__json_obj(j);
        vkprof__json_kv_u64(j, VKPROF_TF_ARG_STEP, e->step);
        vkprof__json_end(j);
        vkprof__json_end(j);
        return;
    }
    bool gpu = e->kind == VKPROF_EV_GPU;
    event_begin(j, "X");
    vkprof__json_kv_str(j, "cat", gpu ? VKPROF_TF_CAT_GPU : VKPROF_TF_CAT_HOST);
    vkprof__json_kv_str(j, "name", e->name);
    pid_tid(j, gpu ? VKPROF_TF_PID_GPU : VKPROF_TF_PID_HOST, e->tid);
    put_us(j, "ts", ts);
    put_us(j, "dur", dur);
    vkprof__json_key(j, "args");
    vkprof__json_obj(j);
    if (gpu) {
        vkprof__json_kv_str(j, VKPROF_TF_ARG_PHASE, e->name);
        vkprof__json_kv_u64(j, VKPROF_TF_ARG_NS, dur);
        vkprof__json_kv_u64(j, VKPROF_TF_ARG_STEP, e->step);
        if (e->annot != NULL) { /* the scope's args (vkprof_cmd_end_args) */
            for (uint32_t k = 0; k < e->annot->count; k++) {
                vkprof__json_kv_str(j, e->annot->key[k], e->annot->value[k]);
            }
        }
    } else {
        vkprof__json_kv_str(j, VKPROF_TF_ARG_BUCKET, e->name);
        vkprof__json_kv_bool(j, VKPROF_TF_ARG_HOT, (e->flags & VKPROF_EVF_HOT) != 0);
        vkprof__json_kv_bool(j, VKPROF_TF_ARG_SYNC, (e->flags & VKPROF_EVF_SYNC) != 0);
        vkprof__json_kv_u64(j, VKPROF_TF_ARG_STEP, e->step);
        if (e->flags & VKPROF_EVF_PROBE) {
            vkprof__json_kv_bool(j, VKPROF_TF_ARG_PROBE, true);
        }
        if (e->annot != NULL) {
            for (uint32_t k = 0; k < e->annot->count; k++) {
                vkprof__json_kv_str(j, e->annot->key[k], e->annot->value[k]);
            }
        }
    }
    vkprof__json_end(j); /* args */
    vkprof__json_end(j);
}

/* ---- the fast path: events formatted straight into the file's block ------
 *
 * What the writer above writes, byte for byte, without its per-value calls:
 * every event of the array is "\n,{...}" (the track names come first, so an
 * event is never the first element), numbers by digit pairs, strings escaped
 * as the writer escapes them (vkprof__json_escape). The writer's own state
 * stays right: it placed the array's first element. */

#define STR_(x) #x
#define STR(x) STR_(x)
#define PUT_LIT(p, s) (memcpy((p), (s), sizeof(s) - 1), (p) + (sizeof(s) - 1))

static const char k_digits2[201] = "00010203040506070809"
                                   "10111213141516171819"
                                   "20212223242526272829"
                                   "30313233343536373839"
                                   "40414243444546474849"
                                   "50515253545556575859"
                                   "60616263646566676869"
                                   "70717273747576777879"
                                   "80818283848586878889"
                                   "90919293949596979899";

static inline char *fmt_u64(char *p, uint64_t v)
{
    char tmp[20];
    char *end = tmp + sizeof tmp, *q = end;
    while (v >= 100u) {
        const unsigned r = (unsigned)(v % 100u);
        v /= 100u;
        q -= 2;
        memcpy(q, k_digits2 + 2 * r, 2);
    }
    if (v >= 10u) {
        q -= 2;
        memcpy(q, k_digits2 + 2 * v, 2);
    } else {
        *--q = (char)('0' + v);
    }
    const size_t n = (size_t)(end - q);
    memcpy(p, q, n);
    return p + n;
}

/* ns as microseconds with three decimals, as vkprof__json_fixed((int64_t)ns, 3) */
static inline char *fmt_us(char *p, uint64_t ns)
{
    if (ns > (uint64_t)INT64_MAX) {
        *p++ = '-';
        ns = (uint64_t)0 - ns;
    }
    p = fmt_u64(p, ns / 1000u);
    const unsigned f = (unsigned)(ns % 1000u);
    p[0] = '.';
    p[1] = (char)('0' + f / 100u);
    memcpy(p + 2, k_digits2 + 2 * (f % 100u), 2);
    return p + 4;
}

static inline char *fmt_str(char *p, const char *s)
{
    *p++ = '"';
    p = vkprof__json_escape(p, s);
    *p++ = '"';
    return p;
}

/* room for the escaped strings of an event: 6 bytes a byte at worst */
#define EVENT_FIXED_ROOM 320u
#define FLOW_ROOM 160u

/* Names of buckets and phases, quoted and escaped, by the address of the
 * name (the context's tables do not change while it is exported): a trace
 * repeats a few names a million times. */
#define NAME_SLOTS 256u
typedef struct name_slot {
    const char *src;
    uint32_t len;
    char text[60];
} name_slot;

static inline name_slot *slot_of(name_slot *cache, const char *s)
{
    return &cache[((uintptr_t)s >> 3) % NAME_SLOTS];
}

static inline char *fmt_name(name_slot *cache, char *p, const char *s)
{
    name_slot *c = slot_of(cache, s);
    if (c->src == s) {
        memcpy(p, c->text, c->len);
        return p + c->len;
    }
    char *q = fmt_str(p, s);
    const size_t n = (size_t)(q - p);
    if (n <= sizeof c->text) {
        c->src = s;
        c->len = (uint32_t)n;
        memcpy(c->text, p, n);
    }
    return q;
}

static size_t event_room(name_slot *cache, const vkprof_xevent *e)
{
    size_t n = EVENT_FIXED_ROOM;
    if (e->name != NULL) {
        const name_slot *c = slot_of(cache, e->name);
        n += c->src == e->name ? 2 * (size_t)c->len : 2 * (6 * strlen(e->name) + 2);
    }
    if (e->annot != NULL) {
        for (uint32_t k = 0; k < e->annot->count; k++) {
            n += 8 + 6 * (strlen(e->annot->key[k]) + strlen(e->annot->value[k]));
        }
    }
    return n;
}

/* a span's annotations or a GPU scope's args, each ,"key":"value" */
static char *fmt_annot(char *p, const vkprof_annot *a)
{
    for (uint32_t k = 0; k < a->count; k++) {
        *p++ = ',';
        p = fmt_str(p, a->key[k]);
        *p++ = ':';
        p = fmt_str(p, a->value[k]);
    }
    return p;
}

static char *fmt_event(name_slot *cache, char *p, const vkprof_xevent *e, uint64_t t0)
{
    const uint64_t ts = e->start_ns - t0;
    if (e->kind == VKPROF_EV_STEP) {
        p = PUT_LIT(p, "\n,{\"ph\":\"i\",\"cat\":\"" VKPROF_TF_CAT_STEP
                       "\",\"name\":\"" VKPROF_TF_STEP_NAME
                       "\",\"s\":\"p\",\"pid\":" STR(VKPROF_TF_PID_HOST) ",\"tid\":");
        p = fmt_u64(p, e->tid);
        p = PUT_LIT(p, ",\"ts\":");
        p = fmt_us(p, ts);
        p = PUT_LIT(p, ",\"args\":{\"" VKPROF_TF_ARG_STEP "\":");
        p = fmt_u64(p, e->step);
        return PUT_LIT(p, "}}");
    }
    const uint64_t dur = e->end_ns >= e->start_ns ? e->end_ns - e->start_ns : 0;
    const bool gpu = e->kind == VKPROF_EV_GPU;
    if (gpu) {
        p = PUT_LIT(p, "\n,{\"ph\":\"X\",\"cat\":\"" VKPROF_TF_CAT_GPU "\",\"name\":");
    } else {
        p = PUT_LIT(p, "\n,{\"ph\":\"X\",\"cat\":\"" VKPROF_TF_CAT_HOST "\",\"name\":");
    }
    char *name = p;
    p = fmt_name(cache, p, e->name);
    const size_t name_len = (size_t)(p - name);
    if (gpu) {
        p = PUT_LIT(p, ",\"pid\":" STR(VKPROF_TF_PID_GPU) ",\"tid\":");
    } else {
        p = PUT_LIT(p, ",\"pid\":" STR(VKPROF_TF_PID_HOST) ",\"tid\":");
    }
    p = fmt_u64(p, e->tid);
    p = PUT_LIT(p, ",\"ts\":");
    p = fmt_us(p, ts);
    p = PUT_LIT(p, ",\"dur\":");
    p = fmt_us(p, dur);
    if (gpu) {
        p = PUT_LIT(p, ",\"args\":{\"" VKPROF_TF_ARG_PHASE "\":");
        memmove(p, name, name_len);
        p += name_len;
        p = PUT_LIT(p, ",\"" VKPROF_TF_ARG_NS "\":");
        p = fmt_u64(p, dur);
        p = PUT_LIT(p, ",\"" VKPROF_TF_ARG_STEP "\":");
        p = fmt_u64(p, e->step);
        if (e->annot != NULL) {
            p = fmt_annot(p, e->annot);
        }
        return PUT_LIT(p, "}}");
    }
    p = PUT_LIT(p, ",\"args\":{\"" VKPROF_TF_ARG_BUCKET "\":");
    memmove(p, name, name_len);
    p += name_len;
    if (e->flags & VKPROF_EVF_HOT) {
        p = PUT_LIT(p, ",\"" VKPROF_TF_ARG_HOT "\":true");
    } else {
        p = PUT_LIT(p, ",\"" VKPROF_TF_ARG_HOT "\":false");
    }
    if (e->flags & VKPROF_EVF_SYNC) {
        p = PUT_LIT(p, ",\"" VKPROF_TF_ARG_SYNC "\":true");
    } else {
        p = PUT_LIT(p, ",\"" VKPROF_TF_ARG_SYNC "\":false");
    }
    p = PUT_LIT(p, ",\"" VKPROF_TF_ARG_STEP "\":");
    p = fmt_u64(p, e->step);
    if (e->flags & VKPROF_EVF_PROBE) {
        p = PUT_LIT(p, ",\"" VKPROF_TF_ARG_PROBE "\":true");
    }
    if (e->annot != NULL) {
        p = fmt_annot(p, e->annot);
    }
    return PUT_LIT(p, "}}");
}

/* A flow end, as flow() writes it. */
static char *fmt_flow(char *p, bool end, uint64_t id, uint64_t pid, uint64_t tid, uint64_t ts)
{
    if (end) {
        p = PUT_LIT(p, "\n,{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"" VKPROF_TF_CAT_FLOW
                       "\",\"name\":\"" VKPROF_TF_FLOW_NAME "\",\"id\":");
    } else {
        p = PUT_LIT(p, "\n,{\"ph\":\"s\",\"cat\":\"" VKPROF_TF_CAT_FLOW
                       "\",\"name\":\"" VKPROF_TF_FLOW_NAME "\",\"id\":");
    }
    p = fmt_u64(p, id);
    p = PUT_LIT(p, ",\"pid\":");
    p = fmt_u64(p, pid);
    p = PUT_LIT(p, ",\"tid\":");
    p = fmt_u64(p, tid);
    p = PUT_LIT(p, ",\"ts\":");
    p = fmt_us(p, ts);
    return PUT_LIT(p, "}");
}

/* ---- the metadata through the one key list ------------------------------ */

static void js_obj(void *w, const char *key)
{
    if (key != NULL) {
        vkprof__json_key(w, key);
    }
    vkprof__json_obj(w);
}

static void js_arr(void *w, const char *key)
{
    vkprof__json_key(w, key);
    vkprof__json_arr(w);
}

static void js_end(void *w)
{
    vkprof__json_end(w);
}

static void js_u64(void *w, const char *key, uint64_t v)
{
    vkprof__json_kv_u64(w, key, v);
}

static void js_str(void *w, const char *key, const char *v)
{
    if (key != NULL) {
        vkprof__json_key(w, key);
    }
    vkprof__json_str(w, v); /* an array's element: no key */
}

static void js_f64(void *w, const char *key, double v)
{
    vkprof__json_kv_f64(w, key, v);
}

static void js_drift(void *w, const char *key, double ppm)
{
    vkprof__json_key(w, key);
    if (isfinite(ppm) && fabs(ppm) < 1e12) {
        vkprof__json_fixed(w, (int64_t)llround(ppm * 1e4), VKPROF_TF_CAL_DRIFT_DECIMALS);
    } else {
        vkprof__json_f64(w, ppm); /* null when not finite */
    }
}

static void js_bool(void *w, const char *key, bool v)
{
    vkprof__json_kv_bool(w, key, v);
}

int vkprof__trace_write_json(vkprof_export *xp, vkprof_afile *f)
{
    vkprof_export x = *xp; /* the walk's state is shared; its cursors are hints */
    const uint64_t t0 = x.t0;

    vkprof_json js, *j = &js;
    vkprof__afile_json(j, f);
    vkprof__json_obj(j);
    vkprof__json_kv_str(j, "displayTimeUnit", "ns");
    vkprof__json_key(j, "traceEvents");
    vkprof__json_arr(j);
    /* track names and order; every event on its own line */
    char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE + 64];
    snprintf(name, sizeof name, "vkprof host (pid %lld)", (long long)x.meta.proc.pid);
    meta_name(j, VKPROF_TF_M_PROCESS_NAME, VKPROF_TF_PID_HOST, 0, name);
    meta_sort(j, VKPROF_TF_M_PROCESS_SORT, VKPROF_TF_PID_HOST, 0, 0);
    snprintf(name, sizeof name, "GPU: %s", x.meta.device);
    meta_name(j, VKPROF_TF_M_PROCESS_NAME, VKPROF_TF_PID_GPU, 0, name);
    meta_sort(j, VKPROF_TF_M_PROCESS_SORT, VKPROF_TF_PID_GPU, 0, 1);
    for (uint32_t t = x.nthreads; t < x.ntracks; t++) {
        meta_name(j, VKPROF_TF_M_THREAD_NAME, VKPROF_TF_PID_GPU, x.tracks[t].tid, x.tracks[t].name);
    }
    for (uint32_t t = 0; t < x.nthreads; t++) {
        const uint16_t tid = x.tracks[t].tid;
        meta_name(j, VKPROF_TF_M_THREAD_NAME, VKPROF_TF_PID_HOST, tid, x.tracks[t].name);
        meta_sort(j, VKPROF_TF_M_THREAD_SORT, VKPROF_TF_PID_HOST, tid, tid);
    }

    /* without its name cache (no memory), every event goes the writer's way */
    name_slot *cache = calloc(NAME_SLOTS, sizeof *cache);
    vkprof_xiter it;
    vkprof_xevent ev;
    vkprof__export_iter(&x, &it, VKPROF_XALL);
    while (!vkprof__afile_failed(f) && vkprof__export_next(&x, &it, &ev)) {
        const size_t need = cache != NULL ? event_room(cache, &ev) : SIZE_MAX;
        if (need <= VKPROF_AFILE_BLOCK) {
            char *p = vkprof__afile_room(f, need);
            vkprof__afile_wrote(f, fmt_event(cache, p, &ev, t0));
        } else {
            write_event(j, &ev, t0); /* names longer than a block */
        }
    }
    free(cache);
    bool failed = it.failed;
    vkprof__export_iter_free(&it);

    /* Flow arrows: each GPU scope from the span that recorded it. */
    vkprof_xflow fl;
    vkprof__export_iter(&x, &it, VKPROF_EV_GPU);
    while (!failed && !vkprof__afile_failed(f) && vkprof__export_next_flow(&x, &it, &fl)) {
        char *p = vkprof__afile_room(f, 2 * FLOW_ROOM);
        p = fmt_flow(p, false, x.meta.flows, VKPROF_TF_PID_HOST, fl.span_tid,
                     fl.span_start_ns - t0);
        p = fmt_flow(p, true, x.meta.flows, VKPROF_TF_PID_GPU, fl.gpu_tid, fl.gpu_start_ns - t0);
        vkprof__afile_wrote(f, p);
    }
    failed = failed || it.failed;
    vkprof__export_iter_free(&it);

    /* Each queue's GPU busy share of each step: a counter (issue 26) */
    for (uint32_t t = x.nthreads; !failed && t < x.ntracks && !vkprof__afile_failed(f); t++) {
        vkprof_xbusy *b = NULL;
        const int nb = vkprof__export_busy(&x, t, &b);
        failed = nb < 0;
        char cname[sizeof x.tracks[t].name + 16];
        snprintf(cname, sizeof cname, "%s%s", VKPROF_TF_BUSY_PREFIX, x.tracks[t].name);
        for (int k = 0; k < nb; k++) {
            event_begin(j, "C");
            vkprof__json_kv_str(j, "cat", VKPROF_TF_CAT_BUSY);
            vkprof__json_kv_str(j, "name", cname);
            pid_tid(j, VKPROF_TF_PID_GPU, x.tracks[t].tid);
            put_us(j, "ts", b[k].start_ns - t0);
            vkprof__json_key(j, "args");
            vkprof__json_obj(j);
            vkprof__json_key(j, VKPROF_TF_BUSY_ARG);
            vkprof__json_fixed(j, (int64_t)vkprof__busy_milli(&b[k]), 3);
            vkprof__json_end(j);
            vkprof__json_end(j);
        }
        free(b);
    }
    if (failed) {
        errno = ENOMEM;
        return -1;
    }
    if (vkprof__afile_failed(f)) {
        return 0; /* a write failed: the rest would be formatted for nothing */
    }
    vkprof__json_newline(j);
    vkprof__json_end(j); /* traceEvents */
    vkprof__json_newline(j);

    vkprof__json_key(j, VKPROF_TF_META);
    vkprof__json_obj(j);
    const vkprof_meta_sink sink = {j,      js_obj, js_arr,   js_end, js_u64,
                                   js_str, js_f64, js_drift, js_bool};
    vkprof__export_meta(&x, &sink, t0);
    vkprof__json_end(j); /* metadata */
    vkprof__json_end(j);
    vkprof__json_newline(j);
    if (!vkprof__json_ok(j)) {
        errno = EINVAL; /* a bug here: never a silently malformed trace */
        return -1;
    }
    return 0;
}
