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
void vkprof__trace_gpu(vkprof_context ctx, vkprof_phase phase, uint64_t begin_ticks,
                       uint64_t end_ticks, uint64_t flow, uint64_t step);

/* timeline/store.c: a step marker on the timeline */
void vkprof__trace_step(vkprof_context ctx, uint64_t step, uint64_t now_ns);

#endif
