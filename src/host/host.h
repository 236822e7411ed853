/* The host seam: buckets, spans, the rendezvous probe and the per-token
 * report. Calls base and timeline; never gpu (a sibling) or above. */
#ifndef VKPROF_HOST_H
#define VKPROF_HOST_H

#include "context.h"

/* host.c */
vkprof_result vkprof__host_init(vkprof_context ctx);
void vkprof__host_on_step(vkprof_context ctx, uint64_t step, uint64_t now_ns);

#endif
