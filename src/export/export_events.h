/* The one walk over the timeline store(s) that both exporters are written
 * over (trace_json.c, trace_pftrace.c): which events are kept, their host-ns
 * times (GPU ticks mapped through each context's clock, once, from one copy
 * of its points; host clock ticks through one copy of the host clock's),
 * their order, the tracks (host threads; one GPU queue per context), the
 * flow links from a host span to the GPU scopes it recorded, and the
 * metadata both formats write (vkprof_xmeta). A writer formats; it computes
 * nothing of its own.
 *
 * Sources: one context (vkprof_trace_write), or several (vkprof_trace_write_set:
 * a process's contexts on one timeline). With one, the walk reads the store
 * in place; with several, it copies the kept events once into one array
 * (48 bytes each) and remembers each one's context.
 *
 * Memory: 4 bytes per kept event in output order (and, only while it sorts,
 * as much again); when the trace has flows, 4 bytes per host span that has a
 * flow id, sorted by that id. An event's times are mapped when an iterator
 * reaches it, so for 1 M events of one context the walk holds at most
 * 12 MiB beside the store.
 *
 * Order: host spans, then GPU scopes, then steps; within each, by track
 * (tid), then by host-ns start, and of two with the same start the longer
 * (the parent) first; then the store's order.
 *
 * Use:
 *     vkprof_export x;
 *     if (vkprof__export_begin(&x, ctxs, n) != 0) fail (errno: ENOMEM);
 *     tracks: x.tracks / x.ntracks; metadata: x.meta
 *     vkprof_xiter it; vkprof_xevent e;
 *     vkprof__export_iter(&x, &it, VKPROF_XALL);          (or a kind, or a track's range)
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
#include "clock/clock.h"
#include "export/export.h"

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
    uint32_t index;            /* in the walk (x.order's values) */
    uint32_t src;              /* its context: an index into x.src */
    uint16_t tid;              /* host thread index, or the GPU queue's output tid */
    uint8_t kind;              /* VKPROF_EV_SPAN, VKPROF_EV_GPU, VKPROF_EV_STEP */
    uint8_t flags;             /* VKPROF_EVF_* */
} vkprof_xevent;

/* A flow: the host span that recorded a GPU scope, and that scope. */
typedef struct vkprof_xflow {
    uint64_t span_id;               /* the flow id of the span (= the GPU scope's id) */
    uint64_t span_start_ns;         /* host ns, absolute */
    uint64_t gpu_start_ns;          /* host ns, absolute */
    uint32_t span_index, gpu_index; /* in the walk */
    uint16_t span_tid, gpu_tid;
} vkprof_xflow;

/* What one context says of itself in the metadata. */
typedef struct vkprof_xctx_meta {
    const char *label;  /* desc.trace_label, "" none */
    const char *device; /* the device's name */
    const char *driver;
    uint32_t queue_family, queue_index;
    uint16_t gpu_tid;    /* its queue's track */
    uint32_t device_ord; /* which device of the trace (one VkDevice, one number) */
    uint64_t device_id;  /* the VkDevice handle's value */
    float period;        /* ns per tick */
    uint32_t valid_bits;
    vkprof_calibration cal;
    vkprof_timing_stats ts;
    uint64_t steps;
    /* the store */
    bool keep_last;
    uint64_t capacity, recorded; /* events claimed in all (next) */
    uint64_t dropped;            /* KEEP_FIRST: not kept, the store full */
    uint64_t overwritten;        /* KEEP_LAST: wrapped over */
    uint64_t full_at_ns;         /* KEEP_FIRST: when the first one was not kept; 0 */
    uint64_t dropped_annotations;
    /* what the walk kept of it */
    uint64_t host_spans, gpu_scopes, steps_kept, unmapped;
    uint64_t first_ns; /* its earliest start kept (0: none) */
} vkprof_xctx_meta;

/* The metadata, one struct for both formats: the contexts' own, and what
 * the trace as a whole says (the first context's for one; sums, maxima, and
 * "mixed" where they differ, as vkprof merge does, for several). */
typedef struct vkprof_xmeta {
    uint32_t n;
    vkprof_xctx_meta *ctx; /* [n] */
    /* the whole trace */
    const char *device, *driver; /* "mixed" when the contexts differ */
    vkprof_calibration cal;      /* the context's with the largest error bound */
    const char *cal_method;      /* "none", "calibrated_timestamps", "bracket" or "mixed" */
    vkprof_hclk_info hclk;       /* the first context's (spans are mapped through it) */
    vkprof_timing_stats ts;      /* sums; mode: the first's; every_n, rotate: the largest */
    const char *sampling_mode;   /* "ring", "2slot" or "mixed" */
    uint64_t steps;              /* the largest */
    uint32_t token_src;          /* several contexts: whose steps are the tokens */
    float period;
    uint32_t valid_bits;
    bool keep_last; /* any */
    uint64_t capacity, recorded, dropped, overwritten, dropped_annotations, unmapped;
    uint64_t host_spans, gpu_scopes, flows;
    /* the trace is whole from complete_from_ns (KEEP_LAST wrapped: the
     * earliest kept start of a context that wrapped; else 0) until
     * complete_until_ns (KEEP_FIRST full: the earliest full_at_ns; else 0) */
    uint64_t complete_from_ns, complete_until_ns;
    vkprof_xprocess proc;
} vkprof_xmeta;

/* One context of the walk. */
typedef struct vkprof_xsrc {
    vkprof_context ctx;
    const vkprof_event *ev; /* its store */
    uint32_t slots;
    uint64_t next, annot_next;
    vkprof_pl_snap gpu; /* its calibration's points, copied once */
    uint64_t gpu_ref;   /* the first point's ticks: the GPU rank's origin */
    uint16_t gpu_tid;   /* its queue's track */
} vkprof_xsrc;

/* A track of the trace: a host thread (its spans and steps) or a GPU queue. */
typedef struct vkprof_xtrack {
    uint8_t kind;   /* VKPROF_EV_SPAN: a host thread; VKPROF_EV_GPU: a queue */
    uint16_t tid;   /* the thread index, or the queue's output tid */
    uint32_t src;   /* a queue: its context */
    char name[512]; /* thread name, or "queue family F, queue Q" (with the device and label
                       when the trace has several contexts) */
    /* its events in x.order: spans (or GPU scopes) at [pos[kind], pos[kind] + n[kind]),
     * a thread's steps at [pos[VKPROF_EV_STEP], ...) */
    uint32_t pos[4], n[4];
} vkprof_xtrack;

typedef struct vkprof_export {
    uint32_t nsrc;
    vkprof_xsrc *src;
    const vkprof_event *ev; /* the events: the one store, or a copy of every kept one */
    vkprof_event *ev_copy;
    uint8_t *ev_src; /* several contexts: each copied event's context; NULL for one */
    uint32_t *order; /* kept events (indices into ev) in output order */
    uint32_t kept;
    uint32_t first[4], count[4]; /* per kind (1..3): where its events start in order[], how many */
    uint32_t *span_by_id;        /* spans with a flow id, by id; NULL when no flow can exist */
    uint32_t span_ids;
    uint64_t t0;         /* the trace's zero: the stores' start or the earliest event, host ns */
    vkprof_pl_snap hclk; /* the first context's host clock points, copied once */
    /* host threads (increasing index), then GPU queues (in context order) */
    vkprof_xtrack *tracks;
    uint32_t ntracks, nthreads;
    /* several contexts: the one whose steps are the trace's tokens (the
     * most steps, the first on a tie); the others' steps are the same
     * tokens again, and are left out */
    uint32_t token_src;
    vkprof_xmeta meta;
} vkprof_export;

enum { VKPROF_XALL = 0 };

typedef struct vkprof_xrun {
    uint32_t idx;
    uint64_t start, end;
} vkprof_xrun;

/* A position in the output order. */
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

/* Walk the stores of ctxs[0..n) (a host clock point is taken first in a
 * live context, so every span is interpolated). Returns 0, or -1 with errno
 * ENOMEM (x holds nothing then). */
int vkprof__export_begin(vkprof_export *x, const vkprof_context *ctxs, uint32_t n);
void vkprof__export_end(vkprof_export *x);

/* A GPU queue's busy time in one step (issue 26): the union of its GPU
 * scopes inside [start_ns, end_ns), two consecutive step events (host ns,
 * absolute). */
typedef struct vkprof_xbusy {
    uint64_t start_ns, end_ns;
    uint64_t busy_ns;
} vkprof_xbusy;

/* The steps of GPU track x->tracks[t] with their busy time, into *out
 * (malloc'd; the caller frees it): their number, 0 (*out NULL) when the
 * track has none to give (no scope; fewer than 2 step events; a context
 * that did not time every call of its steps: rotation, sample_every, calls
 * left out, desc.trace_gpu_busy DISABLED), or -1 (errno ENOMEM). Where the
 * busy time comes from outer scopes (rotation, desc.trace_gpu_busy
 * ENABLED), only their union counts, and only the steps that hold one are
 * given: an app may stamp them in some steps only. */
int vkprof__export_busy(vkprof_export *x, uint32_t t, vkprof_xbusy **out);
/* Its share of the step in thousandths of a percent (0..100000), as both
 * writers give it (JSON: 3 decimals; .pftrace: that over 1000). */
static inline uint64_t vkprof__busy_milli(const vkprof_xbusy *b)
{
    const uint64_t dur = b->end_ns - b->start_ns;
    const uint64_t busy = b->busy_ns < dur ? b->busy_ns : dur;
    return dur == 0 ? 0 : (uint64_t)((double)busy * 100000.0 / (double)dur + 0.5);
}

/* Over one kind (or VKPROF_XALL), or over [pos, pos + n) of the order. */
void vkprof__export_iter(const vkprof_export *x, vkprof_xiter *it, unsigned kind);
void vkprof__export_iter_range(vkprof_xiter *it, uint32_t pos, uint32_t n);
bool vkprof__export_next(vkprof_export *x, vkprof_xiter *it, vkprof_xevent *out);
/* The next GPU scope (of an iterator over VKPROF_EV_GPU) whose recording
 * span is in the trace; counts it in x->meta.flows. */
bool vkprof__export_next_flow(vkprof_export *x, vkprof_xiter *it, vkprof_xflow *out);
void vkprof__export_iter_free(vkprof_xiter *it);
/* The kind of the event at a position of the order (no mapping). */
static inline unsigned vkprof__export_kind_at(const vkprof_export *x, uint32_t pos)
{
    return x->ev[x->order[pos]].kind;
}

/* The metadata's one list of keys, for both formats: a writer gives its own
 * encoding of a key and a value (a JSON member; a debug annotation or a dict
 * entry of the .pftrace), and vkprof__export_meta() says every key in order.
 * key is NULL for an element of an array. */
typedef struct vkprof_meta_sink {
    void *w;
    void (*obj)(void *w, const char *key); /* an object opens */
    void (*arr)(void *w, const char *key); /* an array opens */
    void (*end)(void *w);                  /* the innermost one closes */
    void (*u64)(void *w, const char *key, uint64_t v);
    void (*str)(void *w, const char *key, const char *v);
    void (*f64)(void *w, const char *key, double v);
    void (*drift)(void *w, const char *key, double ppm); /* 4 decimals; NaN allowed */
    void (*boolean)(void *w, const char *key, bool v);
} vkprof_meta_sink;
/* Every key of the metadata (docs/trace-format.md, "Metadata"), in order,
 * the sink's writer having opened the metadata object; t0: the trace's zero. */
void vkprof__export_meta(const vkprof_export *x, const vkprof_meta_sink *k, uint64_t t0);

#endif
