/* The host seam: buckets, spans, the rendezvous probe and the per-token
 * report. Calls base, clock and timeline; never gpu (a sibling) or above. */
#ifndef VKPROF_HOST_H
#define VKPROF_HOST_H

#include "context.h"

/* host.c */
vkprof_result vkprof__host_init(vkprof_context ctx);
/* The GPU loss figures of the report's last line. host never calls gpu (a
 * sibling): core, which calls both, passes vkprof_get_timing_stats. */
typedef vkprof_result (*vkprof_timing_stats_fn)(vkprof_context ctx, vkprof_timing_stats *out);
void vkprof__host_on_step(vkprof_context ctx, uint64_t step, uint64_t now_ns,
                          vkprof_timing_stats_fn timing_stats);

#endif
