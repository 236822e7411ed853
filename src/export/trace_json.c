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
#include "export/trace_format.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
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

/* The boot id (a UUID the kernel draws at boot: equal ids mean one
 * CLOCK_MONOTONIC) and the host name; each "" when it cannot be read. Only
 * [0-9A-Za-z._-] is kept, so neither needs escaping or can break a reader. */
static void keep_plain(char *s)
{
    char *w = s;
    for (const char *r = s; *r != '\0'; r++) {
        const char c = *r;
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            c == '.' || c == '_' || c == '-') {
            *w++ = c;
        }
    }
    *w = '\0';
}

static void process_identity(char *boot, size_t boot_size, char *host, size_t host_size)
{
    boot[0] = '\0';
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        if (fgets(boot, (int)boot_size, f) == NULL) {
            boot[0] = '\0';
        }
        fclose(f);
    }
    keep_plain(boot);
    if (gethostname(host, host_size) != 0) {
        host[0] = '\0';
    }
    host[host_size - 1] = '\0';
    keep_plain(host);
}

typedef struct out_event {
    uint64_t start, end; /* host ns */
    const vkprof_event *src;
} out_event;

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

/* A flow end: {"ph":"s"|"f",...,"cat":"flow","name":"recorded","id":..,pid,tid,ts} */
static void flow(vkprof_json *j, bool end, uint64_t id, uint64_t pid, uint64_t tid, uint64_t ts)
{
    event_begin(j, end ? "f" : "s");
    if (end) {
        vkprof__json_kv_str(j, "bp", "e");
    }
    vkprof__json_kv_str(j, "cat", VKPROF_TF_CAT_FLOW);
    vkprof__json_kv_str(j, "name", VKPROF_TF_FLOW_NAME);
    vkprof__json_kv_u64(j, "id", id);
    pid_tid(j, pid, tid);
    put_us(j, "ts", ts);
    vkprof__json_end(j);
}

static int cmp_out(const void *a, const void *b)
{
    const out_event *x = a, *y = b;
    if (x->src->kind != y->src->kind) {
        return x->src->kind < y->src->kind ? -1 : 1;
    }
    if (x->src->tid != y->src->tid) {
        return x->src->tid < y->src->tid ? -1 : 1;
    }
    if (x->start != y->start) {
        return x->start < y->start ? -1 : 1;
    }
    /* same start: the longer (the parent) first */
    if (x->end != y->end) {
        return x->end > y->end ? -1 : 1;
    }
    return 0;
}

static const char *name_of(vkprof_context ctx, const vkprof_event *e)
{
    const char *n = NULL;
    if (e->kind == VKPROF_EV_GPU) {
        n = vkprof_phase_name(ctx, e->name);
    } else if (e->kind == VKPROF_EV_SPAN) {
        n = vkprof_bucket_name(ctx, e->name);
    }
    return n ? n : "?";
}

int vkprof__trace_write_json(vkprof_context ctx, vkprof_afile *f)
{
    vkprof_trace *t = &ctx->trace;
    uint64_t n = atomic_load(&t->next);
    if (n > t->capacity) {
        n = t->capacity;
    }
    out_event *ev = n ? malloc(n * sizeof *ev) : NULL;
    if (n && ev == NULL) {
        errno = ENOMEM;
        return -1;
    }
    uint64_t kept = 0, unmapped = 0;
    uint64_t t0 = t->start_ns;
    /* a host clock point now: every span recorded so far is interpolated */
    vkprof__hclk_calibrate(&ctx->hclk);
    for (uint64_t i = 0; i < n; i++) {
        const vkprof_event *e = &t->events[i];
        if (!atomic_load_explicit(&((vkprof_event *)e)->ready, memory_order_acquire)) {
            continue; /* still being written by another thread */
        }
        out_event o = {e->start, e->end, e};
        if (e->kind == VKPROF_EV_GPU) {
            uint64_t hs, he;
            if (!vkprof__cal_map(ctx, e->start, &hs) || !vkprof__cal_map(ctx, e->end, &he)) {
                unmapped++;
                continue;
            }
            /* the duration is exact from the ticks; the start is mapped */
            o.start = hs;
            o.end = hs + vkprof_ticks_to_ns(
                             vkprof_tick_delta(e->start, e->end, ctx->info.timestamp_valid_bits),
                             ctx->info.timestamp_period);
            (void)he;
        } else if (e->kind == VKPROF_EV_SPAN) {
            /* both ends through the one map of the host clock (monotone, so
             * slices nest as their ticks do); steps are CLOCK_MONOTONIC ns */
            o.start = vkprof__hclk_ns(&ctx->hclk, e->start);
            o.end = vkprof__hclk_ns(&ctx->hclk, e->end);
        }
        if (o.start < t0) {
            t0 = o.start;
        }
        ev[kept++] = o;
    }
    if (kept > 1) {
        qsort(ev, kept, sizeof *ev, cmp_out);
    }

    vkprof_json js, *j = &js;
    vkprof__afile_json(j, f);
    vkprof__json_obj(j);
    vkprof__json_kv_str(j, "displayTimeUnit", "ns");
    vkprof__json_key(j, "traceEvents");
    vkprof__json_arr(j);
    /* track names and order; every event on its own line */
    char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE + 32];
    snprintf(name, sizeof name, "vkprof host (pid %ld)", (long)getpid());
    meta_name(j, VKPROF_TF_M_PROCESS_NAME, VKPROF_TF_PID_HOST, 0, name);
    meta_sort(j, VKPROF_TF_M_PROCESS_SORT, VKPROF_TF_PID_HOST, 0, 0);
    snprintf(name, sizeof name, "GPU: %s", ctx->info.device_name);
    meta_name(j, VKPROF_TF_M_PROCESS_NAME, VKPROF_TF_PID_GPU, 0, name);
    meta_sort(j, VKPROF_TF_M_PROCESS_SORT, VKPROF_TF_PID_GPU, 0, 1);
    snprintf(name, sizeof name, "queue family %u, queue %u", ctx->desc.queue_family_index,
             ctx->desc.queue_index);
    meta_name(j, VKPROF_TF_M_THREAD_NAME, VKPROF_TF_PID_GPU,
              VKPROF_TF_GPU_TID(ctx->desc.queue_family_index, ctx->desc.queue_index), name);
    /* Only the threads that recorded into this context: the thread registry
     * is process-wide, a trace is not. */
    uint32_t threads = vkprof__thread_count();
    unsigned char *used = calloc((size_t)threads + 1, 1);
    if (used == NULL) {
        free(ev);
        errno = ENOMEM;
        return -1;
    }
    for (uint64_t i = 0; i < kept; i++) {
        if (ev[i].src->kind != VKPROF_EV_GPU && ev[i].src->tid <= threads) {
            used[ev[i].src->tid] = 1;
        }
    }
    for (uint32_t tid = 1; tid <= threads; tid++) {
        if (!used[tid]) {
            continue;
        }
        const char *tn = vkprof__thread_name((uint16_t)tid);
        char fallback[32];
        if (tn == NULL) {
            snprintf(fallback, sizeof fallback, "thread %u", tid);
            tn = fallback;
        }
        meta_name(j, VKPROF_TF_M_THREAD_NAME, VKPROF_TF_PID_HOST, tid, tn);
        meta_sort(j, VKPROF_TF_M_THREAD_SORT, VKPROF_TF_PID_HOST, tid, tid);
    }
    free(used);

    uint64_t host_spans = 0, gpu_scopes = 0, flows = 0;
    for (uint64_t i = 0; i < kept && !vkprof__afile_failed(f); i++) {
        const vkprof_event *e = ev[i].src;
        uint64_t ts = ev[i].start - t0;
        uint64_t dur = ev[i].end >= ev[i].start ? ev[i].end - ev[i].start : 0;
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
            continue;
        }
        bool gpu = e->kind == VKPROF_EV_GPU;
        const char *ename = name_of(ctx, e);
        event_begin(j, "X");
        vkprof__json_kv_str(j, "cat", gpu ? VKPROF_TF_CAT_GPU : VKPROF_TF_CAT_HOST);
        vkprof__json_kv_str(j, "name", ename);
        pid_tid(j, gpu ? VKPROF_TF_PID_GPU : VKPROF_TF_PID_HOST, e->tid);
        put_us(j, "ts", ts);
        put_us(j, "dur", dur);
        vkprof__json_key(j, "args");
        vkprof__json_obj(j);
        if (gpu) {
            gpu_scopes++;
            vkprof__json_kv_str(j, VKPROF_TF_ARG_PHASE, ename);
            vkprof__json_kv_u64(j, VKPROF_TF_ARG_NS, dur);
            vkprof__json_kv_u64(j, VKPROF_TF_ARG_STEP, e->step);
        } else {
            host_spans++;
            vkprof__json_kv_str(j, VKPROF_TF_ARG_BUCKET, ename);
            vkprof__json_kv_bool(j, VKPROF_TF_ARG_HOT, (e->flags & VKPROF_EVF_HOT) != 0);
            vkprof__json_kv_bool(j, VKPROF_TF_ARG_SYNC, (e->flags & VKPROF_EVF_SYNC) != 0);
            vkprof__json_kv_u64(j, VKPROF_TF_ARG_STEP, e->step);
            if (e->flags & VKPROF_EVF_PROBE) {
                vkprof__json_kv_bool(j, VKPROF_TF_ARG_PROBE, true);
            }
            if (e->annot != 0) {
                const vkprof_annot *an = &t->annots[e->annot - 1];
                for (uint32_t k = 0; k < an->count; k++) {
                    vkprof__json_kv_str(j, an->key[k], an->value[k]);
                }
            }
        }
        vkprof__json_end(j); /* args */
        vkprof__json_end(j);
    }

    if (vkprof__afile_failed(f)) {
        free(ev); /* a write failed: the rest would be formatted for nothing */
        return 0;
    }

    /* Flow arrows: sort span ids, then look each GPU scope's parent up. */
    typedef struct {
        uint64_t id;
        uint64_t start;
        uint16_t tid;
    } span_ref;
    span_ref *refs = host_spans ? malloc(host_spans * sizeof *refs) : NULL;
    uint64_t nrefs = 0;
    for (uint64_t i = 0; refs != NULL && i < kept && nrefs < host_spans; i++) {
        const vkprof_event *e = ev[i].src;
        if (e->kind == VKPROF_EV_SPAN && e->id != 0) {
            refs[nrefs].id = e->id;
            refs[nrefs].start = ev[i].start - t0;
            refs[nrefs].tid = e->tid;
            nrefs++;
        }
    }
    /* ids are handed out increasing, but spans are recorded at their end:
     * sort by id (shell sort, in place) */
    for (uint64_t gap = nrefs / 2; gap > 0; gap /= 2) {
        for (uint64_t i = gap; i < nrefs; i++) {
            span_ref tmp = refs[i];
            uint64_t k = i;
            for (; k >= gap && refs[k - gap].id > tmp.id; k -= gap) {
                refs[k] = refs[k - gap];
            }
            refs[k] = tmp;
        }
    }
    for (uint64_t i = 0; i < kept && !vkprof__afile_failed(f); i++) {
        const vkprof_event *e = ev[i].src;
        if (e->kind != VKPROF_EV_GPU || e->id == 0 || nrefs == 0) {
            continue;
        }
        uint64_t lo = 0, hi = nrefs;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (refs[mid].id < e->id) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if (lo >= nrefs || refs[lo].id != e->id) {
            continue; /* the span is still open or was dropped */
        }
        flows++;
        flow(j, false, flows, VKPROF_TF_PID_HOST, refs[lo].tid, refs[lo].start);
        flow(j, true, flows, VKPROF_TF_PID_GPU, e->tid, ev[i].start - t0);
    }
    free(refs);
    free(ev);
    vkprof__json_newline(j);
    vkprof__json_end(j); /* traceEvents */
    vkprof__json_newline(j);

    vkprof_calibration cal;
    vkprof_get_calibration(ctx, &cal);
    uint64_t aerr = 0;
    int64_t rt_off = vkprof__realtime_to_mono_offset(&aerr);
    uint64_t mono_now = vkprof_host_now_ns();
    static const char *const methods[] = {"none", "calibrated_timestamps", "bracket"};
    vkprof__json_key(j, VKPROF_TF_META);
    vkprof__json_obj(j);
    vkprof__json_kv_u64(j, VKPROF_TF_META_FORMAT, VKPROF_TF_VERSION);
    vkprof__json_kv_u64(j, VKPROF_TF_META_VERSION, vkprof_version());
    vkprof__json_kv_str(j, VKPROF_TF_META_DEVICE, ctx->info.device_name);
    vkprof__json_kv_str(j, VKPROF_TF_META_DRIVER, ctx->driver_name);

    vkprof__json_key(j, VKPROF_TF_META_CALIBRATION);
    vkprof__json_obj(j);
    vkprof__json_kv_str(j, VKPROF_TF_CAL_METHOD, methods[cal.method]);
    vkprof__json_kv_str(j, VKPROF_TF_CAL_EXTENSION, cal.extension ? cal.extension : "");
    vkprof__json_kv_str(j, VKPROF_TF_CAL_HOST_DOMAIN, cal.host_domain ? cal.host_domain : "");
    vkprof__json_kv_u64(j, VKPROF_TF_CAL_ERROR_BOUND, cal.error_bound_ns);
    vkprof__json_kv_u64(j, VKPROF_TF_CAL_POINTS, cal.points);
    vkprof__json_kv_u64(j, VKPROF_TF_CAL_RECALIBRATIONS, cal.recalibrations);
    vkprof__json_key(j, VKPROF_TF_CAL_DRIFT_PPM);
    if (isfinite(cal.drift_ppm) && fabs(cal.drift_ppm) < 1e12) {
        vkprof__json_fixed(j, (int64_t)llround(cal.drift_ppm * 1e4), VKPROF_TF_CAL_DRIFT_DECIMALS);
    } else {
        vkprof__json_f64(j, cal.drift_ppm); /* null when not finite */
    }
    vkprof__json_end(j);

    /* which clock host spans were timed with, and how well it maps */
    vkprof_hclk_info hi;
    vkprof__hclk_info(&ctx->hclk, &hi);
    vkprof__json_key(j, VKPROF_TF_META_HOST_CLOCK);
    vkprof__json_obj(j);
    vkprof__json_kv_str(j, VKPROF_TF_HCLK_SOURCE, hi.source);
    vkprof__json_kv_str(j, VKPROF_TF_HCLK_REASON, hi.reason);
    vkprof__json_kv_u64(j, VKPROF_TF_HCLK_HZ, hi.hz);
    vkprof__json_kv_u64(j, VKPROF_TF_HCLK_RATE_NUM, hi.rate_num);
    vkprof__json_kv_u64(j, VKPROF_TF_HCLK_RATE_DEN, hi.rate_den);
    vkprof__json_kv_u64(j, VKPROF_TF_HCLK_ERROR_BOUND, hi.error_bound_ns);
    vkprof__json_kv_u64(j, VKPROF_TF_HCLK_RESIDUAL, hi.residual_ns);
    vkprof__json_kv_u64(j, VKPROF_TF_HCLK_POINTS, hi.points);
    vkprof__json_end(j);

    vkprof__json_kv_u64(j, VKPROF_TF_META_DROPPED_EVENTS, atomic_load(&t->dropped));
    vkprof__json_kv_u64(j, VKPROF_TF_META_DROPPED_ANNOTATIONS, atomic_load(&t->annot_dropped));
    vkprof__json_kv_u64(j, VKPROF_TF_META_UNMAPPED_GPU_SCOPES, unmapped);
    vkprof__json_kv_u64(j, VKPROF_TF_META_EVENT_CAPACITY, t->capacity);
    vkprof__json_kv_u64(j, VKPROF_TF_META_HOST_SPANS, host_spans);
    vkprof__json_kv_u64(j, VKPROF_TF_META_GPU_SCOPES, gpu_scopes);
    vkprof__json_kv_u64(j, VKPROF_TF_META_FLOWS, flows);

    vkprof__json_key(j, VKPROF_TF_META_CLOCK_ANCHOR);
    vkprof__json_obj(j);
    vkprof__json_kv_u64(j, VKPROF_TF_ANCHOR_REALTIME, (uint64_t)((int64_t)mono_now - rt_off));
    vkprof__json_kv_u64(j, VKPROF_TF_ANCHOR_MONOTONIC, mono_now);
    vkprof__json_kv_u64(j, VKPROF_TF_ANCHOR_ERROR, aerr);
    vkprof__json_end(j);

    char boot[64], host[256];
    process_identity(boot, sizeof boot, host, sizeof host);
    vkprof__json_key(j, VKPROF_TF_META_PROCESS);
    vkprof__json_obj(j);
    vkprof__json_kv_str(j, VKPROF_TF_PROC_BOOT_ID, boot);
    vkprof__json_kv_str(j, VKPROF_TF_PROC_HOST, host);
    vkprof__json_kv_u64(j, VKPROF_TF_PROC_PID, (uint64_t)getpid());
    vkprof__json_end(j);

    vkprof__json_kv_u64(j, VKPROF_TF_META_TRACE_START, t0);
    vkprof__json_kv_u64(j, VKPROF_TF_META_STEPS, atomic_load(&ctx->host.steps));
    vkprof__json_kv_f64(j, VKPROF_TF_META_TIMESTAMP_PERIOD, (double)ctx->info.timestamp_period);
    vkprof__json_kv_u64(j, VKPROF_TF_META_TIMESTAMP_BITS, ctx->info.timestamp_valid_bits);

    /* GPU sampling: only the public accounting (one source for every exporter) */
    vkprof_timing_stats ts;
    vkprof_get_timing_stats(ctx, &ts);
    vkprof__json_key(j, VKPROF_TF_META_SAMPLING);
    vkprof__json_obj(j);
    vkprof__json_kv_str(j, VKPROF_TF_SAMP_MODE,
                        ts.mode == VKPROF_TIMING_RING ? VKPROF_TF_MODE_RING : VKPROF_TF_MODE_2SLOT);
    vkprof__json_kv_u64(j, VKPROF_TF_SAMP_EVERY_N, ts.sample_every > 1 ? ts.sample_every : 1u);
    vkprof__json_kv_u64(j, VKPROF_TF_SAMP_TIMED_STEPS, ts.timed_steps);
    vkprof__json_kv_u64(j, VKPROF_TF_SAMP_RECORDED, ts.scopes_recorded);
    vkprof__json_kv_u64(j, VKPROF_TF_SAMP_SAMPLES, ts.samples);
    vkprof__json_kv_u64(j, VKPROF_TF_SAMP_SUBMISSIONS, ts.submissions);
    vkprof__json_kv_u64(j, VKPROF_TF_SAMP_COLLECTED, ts.scopes_collected);
    vkprof__json_kv_u64(j, VKPROF_TF_SAMP_DROPPED, ts.scopes_dropped);
    vkprof__json_kv_u64(j, VKPROF_TF_SAMP_PENDING, ts.scopes_pending);
    vkprof__json_key(j, VKPROF_TF_SAMP_LOST);
    vkprof__json_obj(j);
#define LOST_KV_(id, key, text) vkprof__json_kv_u64(j, key, ts.lost_##id);
    VKPROF_TF_LOST_REASONS(LOST_KV_)
#undef LOST_KV_
    vkprof__json_end(j); /* lost */
    vkprof__json_end(j); /* gpu_sampling */
    vkprof__json_end(j); /* metadata */
    vkprof__json_end(j);
    vkprof__json_newline(j);
    if (!vkprof__json_ok(j)) {
        errno = EINVAL; /* a bug here: never a silently malformed trace */
        return -1;
    }
    return 0;
}
