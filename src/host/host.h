/* The host seam: buckets, spans, the rendezvous probe and the per-token
 * report. Calls base, clock and timeline; never gpu (a sibling) or above. */
#ifndef VKPROF_HOST_H
#define VKPROF_HOST_H

#include "context.h"

/* host.c */
vkprof_result vkprof__host_init(vkprof_context ctx);
/* Frees what the threads' spans allocated in ctx (vkprof_destroy). */
void vkprof__host_shutdown(vkprof_context ctx);

/* A bucket's calls and exact tick sum: the slot's own counts and every
 * thread's accumulator (what the snapshot and the report read). */
static inline void vkprof__bucket_sums(vkprof_context ctx, uint32_t i, uint64_t *calls,
                                       uint64_t *ticks)
{
    const vkprof_bucket_slot *b = &ctx->host.buckets[i];
    uint64_t c = atomic_load_explicit(&b->calls, memory_order_relaxed);
    uint64_t t = atomic_load_explicit(&b->total_ticks, memory_order_relaxed);
    for (const vkprof_span_acc *a = atomic_load_explicit(&ctx->host.accs, memory_order_acquire);
         a != NULL; a = a->next) {
        c += atomic_load_explicit(&a->calls[i], memory_order_relaxed);
        t += atomic_load_explicit(&a->ticks[i], memory_order_relaxed);
    }
    *calls = c;
    *ticks = t;
}
/* The GPU loss figures of the report's last line. host never calls gpu (a
 * sibling): core, which calls both, passes vkprof_get_timing_stats. */
typedef vkprof_result (*vkprof_timing_stats_fn)(vkprof_context ctx, vkprof_timing_stats *out);
void vkprof__host_on_step(vkprof_context ctx, uint64_t step, uint64_t now_ns,
                          vkprof_timing_stats_fn timing_stats);

#endif
