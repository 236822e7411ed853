/* The trace exporter: the timeline store as Chrome Trace Event JSON
 * (docs/trace-format.md), GPU ticks mapped to host ns through the clock,
 * written atomically (atomic_file.c). */
#define _XOPEN_SOURCE 700
#include "internal.h"

#include "export/atomic_file.h"
#include "export/trace_format.h"

#include <errno.h>
#include <inttypes.h>
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

typedef struct out_event {
    uint64_t start, end; /* host ns */
    const vkprof_event *src;
} out_event;

static void put_json_string(vkprof_afile *f, const char *s)
{
    vkprof__afile_putc(f, '"');
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        switch (*c) {
        case '"': vkprof__afile_puts(f, "\\\""); break;
        case '\\': vkprof__afile_puts(f, "\\\\"); break;
        case '\n': vkprof__afile_puts(f, "\\n"); break;
        case '\r': vkprof__afile_puts(f, "\\r"); break;
        case '\t': vkprof__afile_puts(f, "\\t"); break;
        default:
            if (*c < 0x20) {
                vkprof__afile_printf(f, "\\u%04x", *c);
            } else {
                vkprof__afile_putc(f, *c);
            }
        }
    }
    vkprof__afile_putc(f, '"');
}

/* ns after the trace start, as microseconds with three decimals */
static void put_us(vkprof_afile *f, uint64_t ns)
{
    vkprof__afile_printf(f, "%" PRIu64 ".%03u", ns / 1000u, (unsigned)(ns % 1000u));
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

static int write_json(vkprof_context ctx, vkprof_afile *f)
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
        }
        if (o.start < t0) {
            t0 = o.start;
        }
        ev[kept++] = o;
    }
    if (kept > 1) {
        qsort(ev, kept, sizeof *ev, cmp_out);
    }

    vkprof__afile_printf(f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    /* track names and order; every later event starts with ",\n" */
    vkprof__afile_printf(f,
                         "{\"ph\":\"M\",\"name\":\"" VKPROF_TF_M_PROCESS_NAME
                         "\",\"pid\":%d,\"tid\":0,"
                         "\"args\":{\"" VKPROF_TF_M_ARG_NAME "\":\"vkprof host (pid %ld)\"}}",
                         VKPROF_TF_PID_HOST, (long)getpid());
    vkprof__afile_printf(f,
                         ",\n{\"ph\":\"M\",\"name\":\"" VKPROF_TF_M_PROCESS_SORT
                         "\",\"pid\":%d,\"tid\":0,"
                         "\"args\":{\"" VKPROF_TF_M_ARG_SORT "\":0}}",
                         VKPROF_TF_PID_HOST);
    vkprof__afile_printf(f,
                         ",\n{\"ph\":\"M\",\"name\":\"" VKPROF_TF_M_PROCESS_NAME
                         "\",\"pid\":%d,\"tid\":0,\"args\":{\"" VKPROF_TF_M_ARG_NAME "\":",
                         VKPROF_TF_PID_GPU);
    char gpu_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE + 8];
    snprintf(gpu_name, sizeof gpu_name, "GPU: %s", ctx->info.device_name);
    put_json_string(f, gpu_name);
    vkprof__afile_printf(f,
                         "}},\n{\"ph\":\"M\",\"name\":\"" VKPROF_TF_M_PROCESS_SORT
                         "\",\"pid\":%d,\"tid\":0,"
                         "\"args\":{\"" VKPROF_TF_M_ARG_SORT "\":1}}",
                         VKPROF_TF_PID_GPU);
    vkprof__afile_printf(
        f,
        ",\n{\"ph\":\"M\",\"name\":\"" VKPROF_TF_M_THREAD_NAME "\",\"pid\":%d,\"tid\":%u,"
        "\"args\":{\"" VKPROF_TF_M_ARG_NAME "\":\"queue family %u, queue %u\"}}",
        VKPROF_TF_PID_GPU, VKPROF_TF_GPU_TID(ctx->desc.queue_family_index, ctx->desc.queue_index),
        ctx->desc.queue_family_index, ctx->desc.queue_index);
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
        vkprof__afile_printf(f,
                             ",\n{\"ph\":\"M\",\"name\":\"" VKPROF_TF_M_THREAD_NAME
                             "\",\"pid\":%d,\"tid\":%u,\"args\":{\"" VKPROF_TF_M_ARG_NAME "\":",
                             VKPROF_TF_PID_HOST, tid);
        put_json_string(f, tn);
        vkprof__afile_printf(f,
                             "}},\n{\"ph\":\"M\",\"name\":\"" VKPROF_TF_M_THREAD_SORT
                             "\",\"pid\":%d,\"tid\":%u,"
                             "\"args\":{\"" VKPROF_TF_M_ARG_SORT "\":%u}}",
                             VKPROF_TF_PID_HOST, tid, tid);
    }
    free(used);

    uint64_t host_spans = 0, gpu_scopes = 0, flows = 0;
    for (uint64_t i = 0; i < kept && !vkprof__afile_failed(f); i++) {
        const vkprof_event *e = ev[i].src;
        uint64_t ts = ev[i].start - t0;
        uint64_t dur = ev[i].end >= ev[i].start ? ev[i].end - ev[i].start : 0;
        if (e->kind == VKPROF_EV_STEP) {
            vkprof__afile_printf(f,
                                 ",\n{\"ph\":\"i\",\"cat\":\"" VKPROF_TF_CAT_STEP
                                 "\",\"name\":\"" VKPROF_TF_STEP_NAME "\",\"s\":\"p\",\"pid\":%d,"
                                 "\"tid\":%u,\"ts\":",
                                 VKPROF_TF_PID_HOST, e->tid);
            put_us(f, ts);
            vkprof__afile_printf(f, ",\"args\":{\"" VKPROF_TF_ARG_STEP "\":%" PRIu64 "}}", e->step);
            continue;
        }
        bool gpu = e->kind == VKPROF_EV_GPU;
        const char *name = name_of(ctx, e);
        vkprof__afile_printf(f, ",\n{\"ph\":\"X\",\"cat\":\"%s\",\"name\":",
                             gpu ? VKPROF_TF_CAT_GPU : VKPROF_TF_CAT_HOST);
        put_json_string(f, name);
        vkprof__afile_printf(f, ",\"pid\":%d,\"tid\":%u,\"ts\":",
                             gpu ? VKPROF_TF_PID_GPU : VKPROF_TF_PID_HOST, e->tid);
        put_us(f, ts);
        vkprof__afile_printf(f, ",\"dur\":");
        put_us(f, dur);
        if (gpu) {
            gpu_scopes++;
            vkprof__afile_printf(f, ",\"args\":{\"" VKPROF_TF_ARG_PHASE "\":");
            put_json_string(f, name);
            vkprof__afile_printf(
                f, ",\"" VKPROF_TF_ARG_NS "\":%" PRIu64 ",\"" VKPROF_TF_ARG_STEP "\":%" PRIu64 "}}",
                dur, e->step);
        } else {
            host_spans++;
            vkprof__afile_printf(f, ",\"args\":{\"" VKPROF_TF_ARG_BUCKET "\":");
            put_json_string(f, name);
            vkprof__afile_printf(f,
                                 ",\"" VKPROF_TF_ARG_HOT "\":%s,\"" VKPROF_TF_ARG_SYNC
                                 "\":%s,\"" VKPROF_TF_ARG_STEP "\":%" PRIu64,
                                 (e->flags & VKPROF_EVF_HOT) ? "true" : "false",
                                 (e->flags & VKPROF_EVF_SYNC) ? "true" : "false", e->step);
            if (e->flags & VKPROF_EVF_PROBE) {
                vkprof__afile_printf(f, ",\"" VKPROF_TF_ARG_PROBE "\":true");
            }
            if (e->annot != 0) {
                const vkprof_annot *an = &t->annots[e->annot - 1];
                for (uint32_t k = 0; k < an->count; k++) {
                    vkprof__afile_putc(f, ',');
                    put_json_string(f, an->key[k]);
                    vkprof__afile_putc(f, ':');
                    put_json_string(f, an->value[k]);
                }
            }
            vkprof__afile_printf(f, "}}");
        }
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
            uint64_t j = i;
            for (; j >= gap && refs[j - gap].id > tmp.id; j -= gap) {
                refs[j] = refs[j - gap];
            }
            refs[j] = tmp;
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
        vkprof__afile_printf(f,
                             ",\n{\"ph\":\"s\",\"cat\":\"" VKPROF_TF_CAT_FLOW
                             "\",\"name\":\"" VKPROF_TF_FLOW_NAME "\",\"id\":%" PRIu64
                             ",\"pid\":%d,\"tid\":%u,\"ts\":",
                             flows, VKPROF_TF_PID_HOST, refs[lo].tid);
        put_us(f, refs[lo].start);
        vkprof__afile_printf(f,
                             "},\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"" VKPROF_TF_CAT_FLOW
                             "\",\"name\":\"" VKPROF_TF_FLOW_NAME "\","
                             "\"id\":%" PRIu64 ",\"pid\":%d,\"tid\":%u,\"ts\":",
                             flows, VKPROF_TF_PID_GPU, e->tid);
        put_us(f, ev[i].start - t0);
        vkprof__afile_printf(f, "}");
    }
    free(refs);
    free(ev);

    vkprof__afile_printf(f, "\n],\n");
    vkprof_calibration cal;
    vkprof_get_calibration(ctx, &cal);
    uint64_t aerr = 0;
    int64_t rt_off = vkprof__realtime_to_mono_offset(&aerr);
    uint64_t mono_now = vkprof_host_now_ns();
    static const char *const methods[] = {"none", "calibrated_timestamps", "bracket"};
    vkprof__afile_printf(f,
                         "\"" VKPROF_TF_META "\":{\"" VKPROF_TF_META_FORMAT
                         "\":%d,\"" VKPROF_TF_META_VERSION "\":%u,\"" VKPROF_TF_META_DEVICE "\":",
                         VKPROF_TF_VERSION, vkprof_version());
    put_json_string(f, ctx->info.device_name);
    vkprof__afile_printf(f, ",\"" VKPROF_TF_META_DRIVER "\":");
    put_json_string(f, ctx->driver_name);
    vkprof__afile_printf(f,
                         ",\"" VKPROF_TF_META_CALIBRATION "\":{\"" VKPROF_TF_CAL_METHOD
                         "\":\"%s\",\"" VKPROF_TF_CAL_EXTENSION
                         "\":\"%s\",\"" VKPROF_TF_CAL_HOST_DOMAIN
                         "\":\"%s\",\"" VKPROF_TF_CAL_ERROR_BOUND "\":%" PRIu64
                         ",\"" VKPROF_TF_CAL_POINTS "\":%u,\"" VKPROF_TF_CAL_RECALIBRATIONS
                         "\":%" PRIu64 ",\"" VKPROF_TF_CAL_DRIFT_PPM "\":%.4f},",
                         methods[cal.method], cal.extension ? cal.extension : "",
                         cal.host_domain ? cal.host_domain : "", cal.error_bound_ns, cal.points,
                         cal.recalibrations, cal.drift_ppm);
    vkprof__afile_printf(
        f,
        "\"" VKPROF_TF_META_DROPPED_EVENTS "\":%" PRIu64 ",\"" VKPROF_TF_META_DROPPED_ANNOTATIONS
        "\":%" PRIu64 ",\"" VKPROF_TF_META_UNMAPPED_GPU_SCOPES "\":%" PRIu64
        ",\"" VKPROF_TF_META_EVENT_CAPACITY "\":%u,\"" VKPROF_TF_META_HOST_SPANS "\":%" PRIu64
        ",\"" VKPROF_TF_META_GPU_SCOPES "\":%" PRIu64 ",\"" VKPROF_TF_META_FLOWS "\":%" PRIu64 ",",
        atomic_load(&t->dropped), atomic_load(&t->annot_dropped), unmapped, t->capacity, host_spans,
        gpu_scopes, flows);
    vkprof__afile_printf(f,
                         "\"" VKPROF_TF_META_CLOCK_ANCHOR "\":{\"" VKPROF_TF_ANCHOR_REALTIME
                         "\":%" PRIu64 ",\"" VKPROF_TF_ANCHOR_MONOTONIC "\":%" PRIu64
                         ",\"" VKPROF_TF_ANCHOR_ERROR "\":%" PRIu64 "},",
                         (uint64_t)((int64_t)mono_now - rt_off), mono_now, aerr);
    /* GPU sampling: only the public accounting (one source for every exporter) */
    vkprof_timing_stats ts;
    vkprof_get_timing_stats(ctx, &ts);
    vkprof__afile_printf(f,
                         "\"" VKPROF_TF_META_TRACE_START "\":%" PRIu64 ",\"" VKPROF_TF_META_STEPS
                         "\":%" PRIu64 ",\"" VKPROF_TF_META_TIMESTAMP_PERIOD
                         "\":%.9g,\"" VKPROF_TF_META_TIMESTAMP_BITS "\":%u,",
                         t0, atomic_load(&ctx->host.steps), (double)ctx->info.timestamp_period,
                         ctx->info.timestamp_valid_bits);
    vkprof__afile_printf(
        f,
        "\"" VKPROF_TF_META_SAMPLING "\":{\"" VKPROF_TF_SAMP_MODE
        "\":\"%s\",\"" VKPROF_TF_SAMP_EVERY_N "\":%u,\"" VKPROF_TF_SAMP_TIMED_STEPS "\":%" PRIu64
        ",\"" VKPROF_TF_SAMP_RECORDED "\":%" PRIu64 ",\"" VKPROF_TF_SAMP_SAMPLES "\":%" PRIu64
        ",\"" VKPROF_TF_SAMP_SUBMISSIONS "\":%" PRIu64 ",\"" VKPROF_TF_SAMP_COLLECTED "\":%" PRIu64
        ",\"" VKPROF_TF_SAMP_DROPPED "\":%" PRIu64 ",\"" VKPROF_TF_SAMP_PENDING "\":%" PRIu64
        ",\"" VKPROF_TF_SAMP_LOST "\":{",
        ts.mode == VKPROF_TIMING_RING ? VKPROF_TF_MODE_RING : VKPROF_TF_MODE_2SLOT,
        ts.sample_every > 1 ? ts.sample_every : 1u, ts.timed_steps, ts.scopes_recorded, ts.samples,
        ts.submissions, ts.scopes_collected, ts.scopes_dropped, ts.scopes_pending);
#define LOST_KV_(id, key, text)                                                                    \
    vkprof__afile_printf(f, "%s\"" key "\":%" PRIu64, VKPROF_TF_LOST_##id ? "," : "", ts.lost_##id);
    VKPROF_TF_LOST_REASONS(LOST_KV_)
#undef LOST_KV_
    vkprof__afile_printf(f, "}}}}\n");
    return 0;
}

vkprof_result vkprof_trace_write(vkprof_context ctx, const char *path)
{
    if (ctx == NULL || path == NULL || path[0] == '\0') {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT, "trace_write: no path");
    }
    if (ctx->trace.events == NULL) {
        return vkprof__fail(ctx, VKPROF_ERROR_NOT_TRACING,
                            "trace_write('%s'): tracing was never started", path);
    }
    vkprof_afile out;
    int err = vkprof__afile_open(&out, path);
    if (err == 0) {
        if (write_json(ctx, &out) != 0 && !vkprof__afile_failed(&out)) {
            out.err = errno ? errno : ENOMEM;
            out.step = "format the trace";
        }
        /* the first failure of any step; out.step and out.hint stay valid */
        err = vkprof__afile_commit(&out);
    }
    if (err != 0) {
        const bool in_place = out.in_place;
        return vkprof__fail(ctx, VKPROF_ERROR_IO, "trace_write('%s'): cannot %s: %s%s%s; %s", path,
                            out.step ? out.step : "write", strerror(err), out.hint ? ": " : "",
                            out.hint ? out.hint : "",
                            in_place ? "the trace is incomplete"
                                     : "the previous file, if any, is untouched");
    }
    return VKPROF_OK;
}

vkprof_result vkprof_flush(vkprof_context ctx)
{
    if (ctx == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    if (ctx->trace.path[0] == '\0') {
        return VKPROF_ERROR_NOT_TRACING;
    }
    return vkprof_trace_write(ctx, ctx->trace.path);
}
