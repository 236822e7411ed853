/* The timeline seam: the lock-free event store (raw GPU ticks, raw host clock ticks of spans),
 * annotations, step markers. Calls base. The exporters read it. */
#ifndef VKPROF_TIMELINE_H
#define VKPROF_TIMELINE_H

#include "context.h"

/* store.c (export/trace_json.c writes it) */
vkprof_result vkprof__trace_init(vkprof_context ctx);
void vkprof__trace_shutdown(vkprof_context ctx);
/* flags: the frame's, plus VKPROF_EVF_SYNC for a span closed after a sync;
 * the span's start and end are raw host clock ticks (ctx->hclk) */
void vkprof__trace_span(vkprof_context ctx, const vkprof_span_frame *span, uint32_t flags,
                        uint64_t end_ticks);
/* annot: the scope's args (vkprof__trace_args), 0: none */
void vkprof__trace_gpu(vkprof_context ctx, vkprof_phase phase, uint64_t begin_ticks,
                       uint64_t end_ticks, uint64_t flow, uint64_t step, uint32_t annot);
/* A GPU scope's args into the annotation store while tracing: 1 + their
 * index (an equal recent record's, else a new one), or 0 when not tracing
 * (one load), for count 0, or when they cannot be kept (more than
 * VKPROF_GPU_MAX_ARGS, the store full: counted in annot_dropped). Keys and
 * values must not be NULL (the caller checks). Any thread. */
uint32_t vkprof__trace_args(vkprof_context ctx, const vkprof_arg *args, uint32_t count);

/* The annotation store's size for `capacity` events. */
uint32_t vkprof__trace_annot_capacity(uint32_t capacity);
/* The store in memory the caller owns (a spool's mapping: export/spool.c),
 * before tracing starts; the context never frees it. */
vkprof_result vkprof__trace_attach(vkprof_context ctx, vkprof_event *events, uint32_t capacity,
                                   vkprof_annot *annots, uint32_t annot_capacity);
/* The `ready` value of the event that `slot` holds when `next` events were
 * claimed (1, or in KEEP_LAST the slot's lap + 1): a slot whose ready differs
 * holds no event of the store (not written yet, being written, or an older
 * lap's in a store that moved on). */
uint32_t vkprof__trace_expect(const vkprof_trace *t, uint64_t next, uint32_t slot);
/* The annotation record an event names (its `annot`, 0: none), or NULL when
 * it is none, out of range or (KEEP_LAST) overwritten since; annot_next: the
 * store's annot_next when read. */
const vkprof_annot *vkprof__trace_annot(const vkprof_trace *t, uint64_t annot_next, uint32_t ref);

/* timeline/store.c: a step marker on the timeline */
void vkprof__trace_step(vkprof_context ctx, uint64_t step, uint64_t now_ns);

#endif
