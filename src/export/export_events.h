/* The walk over the timeline store that every exporter shares (trace_json.c,
 * trace_pftrace.c): which events are kept, their host-ns times (GPU ticks
 * mapped through the clock, unmapped ones counted), their order, the host
 * threads and the GPU queue that are tracks, the flow links from a host span
 * to the GPU scopes it recorded, and the counts the metadata reports.
 *
 * Memory: nothing is copied per event. vkprof__export_begin() keeps an index
 * of 4 bytes per kept event in output order (and, only while it sorts, as
 * much again); when the trace has flows, 4 bytes per host span that has a
 * flow id, sorted by that id. An event's times are mapped when an iterator
 * reaches it, so for 1 M events the walk holds at most 12 MiB (8 MiB without
 * GPU scopes), whatever the store holds.
 *
 * Order (what trace_json.c always wrote): host spans, then GPU scopes, then
 * steps; within each, by track (tid), then by host-ns start, and of two with
 * the same start the longer (the parent) first; then the store's order.
 *
 * Use:
 *     vkprof_export x;
 *     if (vkprof__export_begin(&x, ctx) != 0) fail (errno: ENOMEM);
 *     tracks: x.threads / x.thread_count, x.gpu_tid, ...
 *     vkprof_xiter it; vkprof_xevent e;
 *     vkprof__export_iter(&x, &it, VKPROF_XALL);
 *     while (vkprof__export_next(&x, &it, &e)) { ... }
 *     vkprof_xflow f;
 *     vkprof__export_iter(&x, &it, VKPROF_EV_GPU);
 *     while (vkprof__export_next_flow(&x, &it, &f)) { ... }
 *     vkprof__export_iter_free(&it);   (after each iteration)
 *     vkprof__export_end(&x);
 * An iterator fails only for memory (a run of events that share one start,
 * sorted in a buffer of its own); it then stops and sets it.failed. */
#ifndef VKPROF_EXPORT_EVENTS_H
#define VKPROF_EXPORT_EVENTS_H

#include "base/base.h"

#include <stdbool.h>
#include <stdint.h>

/* One event, ready to write. */
typedef struct vkprof_xevent {
    uint64_t start_ns, end_ns; /* host CLOCK_MONOTONIC ns (absolute: minus x.t0 for the trace) */
    uint64_t id;               /* span: its flow id; GPU: the recording span's; 0: none */
    uint64_t step;
    const char *name;          /* bucket (span) or phase (GPU) name, "?" unknown; step: NULL */
    const vkprof_annot *annot; /* a span's annotations, a GPU scope's args, or NULL */
    uint32_t name_id;          /* the vkprof_bucket or vkprof_phase */
    uint32_t index;            /* in the store */
    uint16_t tid;              /* host thread index, or the GPU queue track (x.gpu_tid) */
    uint8_t kind;              /* VKPROF_EV_SPAN, VKPROF_EV_GPU, VKPROF_EV_STEP */
    uint8_t flags;             /* VKPROF_EVF_* */
} vkprof_xevent;

/* A flow: the host span that recorded a GPU scope, and that scope. */
typedef struct vkprof_xflow {
    uint64_t span_id;               /* the flow id of the span (= the GPU scope's id) */
    uint64_t span_start_ns;         /* host ns, absolute */
    uint64_t gpu_start_ns;          /* host ns, absolute */
    uint32_t span_index, gpu_index; /* in the store */
    uint16_t span_tid, gpu_tid;
} vkprof_xflow;

typedef struct vkprof_export {
    vkprof_context ctx;
    uint32_t *order; /* kept events (store indices) in output order */
    uint32_t kept;
    uint32_t first[4], count[4]; /* per kind (1..3): where its events start in order[], how many */
    uint32_t *span_by_id;        /* spans with a flow id, by id; NULL when no flow can exist */
    uint32_t span_ids;
    uint64_t t0; /* the trace's zero: the store's start or the earliest event, host ns */
    /* the tracks: host threads that recorded spans or steps into this
     * context (the thread registry is process-wide, a trace is not), in
     * increasing index; the one GPU queue of the context */
    uint16_t *threads;
    uint32_t thread_count;
    uint32_t queue_family, queue_index;
    uint16_t gpu_tid;
    /* counts for the metadata */
    uint64_t host_spans, gpu_scopes, steps; /* kept */
    uint64_t unmapped; /* GPU scopes with no calibration to map them: not kept */
    uint64_t flows;    /* counted by vkprof__export_next_flow as it finds them */
} vkprof_export;

enum { VKPROF_XALL = 0 };

typedef struct vkprof_xrun {
    uint32_t idx;
    uint64_t start, end;
} vkprof_xrun;

/* A position in the output order, over one kind or all (VKPROF_XALL). */
typedef struct vkprof_xiter {
    uint32_t pos, stop;
    /* the next event's start, mapped ahead to find a shared start */
    bool have_peek;
    uint64_t peek_start;
    /* a run of events with one start, in output order */
    vkprof_xrun *run;
    uint32_t run_len, run_pos, run_cap;
    bool failed;
} vkprof_xiter;

/* Walk the store of ctx (a host clock point is taken first, so every span is
 * interpolated). Returns 0, or -1 with errno ENOMEM (x holds nothing then). */
int vkprof__export_begin(vkprof_export *x, vkprof_context ctx);
void vkprof__export_end(vkprof_export *x);

/* A host thread's name, or "thread <tid>" in `fallback`. */
const char *vkprof__export_thread_name(uint16_t tid, char fallback[32]);

void vkprof__export_iter(const vkprof_export *x, vkprof_xiter *it, unsigned kind);
bool vkprof__export_next(vkprof_export *x, vkprof_xiter *it, vkprof_xevent *out);
/* The next GPU scope (of an iterator over VKPROF_EV_GPU) whose recording
 * span is in the trace; counts it in x->flows. */
bool vkprof__export_next_flow(vkprof_export *x, vkprof_xiter *it, vkprof_xflow *out);
void vkprof__export_iter_free(vkprof_xiter *it);

#endif
