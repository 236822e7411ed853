/* The GPU timing seam: phases and their exact sums, the 2-slot cycle, the
 * ring (trackers, chunks, executions, collection) and the stamp itself.
 * Calls base, clock and timeline; never host (a sibling) or above. */
#ifndef VKPROF_GPU_H
#define VKPROF_GPU_H

#include "context.h"

/* phase.c */
vkprof_result vkprof__phases_init(vkprof_context ctx);
void vkprof__phases_free(vkprof_context ctx);
bool vkprof__phase_valid(vkprof_context ctx, vkprof_phase phase);
/* first: a phase's first call (desc.rotate_first_calls), counted apart too */
void vkprof__phase_fold(vkprof_context ctx, vkprof_phase phase, uint64_t ticks, bool first);
/* timing.c */
void vkprof__timing_shutdown(vkprof_context ctx);
/* vkprof_collect's work (core/context.c's vkprof_collect adds the spool's checkpoint) */
vkprof_result vkprof__collect(vkprof_context ctx);
void vkprof__twoslot_abandon(vkprof_context ctx);
/* ring.c */
bool vkprof__ring_mode(vkprof_context ctx);
vkprof_result vkprof__ring_create(vkprof_context ctx);
void vkprof__ring_on_disable(vkprof_context ctx);
/* destroy: collect what finished; *late folded now, *left counted as lost */
void vkprof__ring_destroy_collect(vkprof_context ctx, uint64_t *late, uint64_t *left);
/* left_out non-NULL: vkprof_cmd_begin_leaf (a call the window leaves out
 * is only numbered, *left_out set) */
vkprof_result vkprof__ring_begin(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase,
                                 bool *left_out);
/* args, count: the scope's args (vkprof_cmd_end_args; checked), NULL and 0: none */
vkprof_result vkprof__ring_end(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase,
                               const vkprof_arg *args, uint32_t count);
vkprof_result vkprof__ring_collect(vkprof_context ctx);
void vkprof__ring_shutdown(vkprof_context ctx);
/* called by vkprof_step with the index (0-based) of the step just finished */
void vkprof__timing_on_step(vkprof_context ctx, uint64_t finished);
bool vkprof__step_timed(vkprof_context ctx);
/* vkprof_reset: the ring's call counters (phase calls, unstamped, rotation) */
void vkprof__ring_reset_counts(vkprof_context ctx);
/* executed calls of a phase (ring mode); UINT64_MAX in 2-slot mode */
uint64_t vkprof__ring_phase_calls(vkprof_context ctx, vkprof_phase phase);
void vkprof__stamp(vkprof_context ctx, VkCommandBuffer cmd, VkQueryPool pool, uint32_t slot);
/* A stamp at the top of the pipe: it waits for nothing (an outer scope's
 * begin with desc.outer_begin_top) */
void vkprof__stamp_top(vkprof_context ctx, VkCommandBuffer cmd, VkQueryPool pool, uint32_t slot);
/* Hold off collection (and so folds and calibration points) while a
 * checkpoint copies them (export/spool.c): the ring's lock; nothing in
 * 2-slot mode, whose calls the app serialises. */
void vkprof__gpu_lock(vkprof_context ctx);
void vkprof__gpu_unlock(vkprof_context ctx);

#endif
