/* Profiling mode "ring": vkprof's ring, the token recorded as unprofiled
 * (one command buffer, the same barriers), each phase call wrapped in
 * vkprof_cmd_begin/end after its barrier. The context is the caller's, with
 * its shared_boundaries and sample_every; VKPROF_DISABLED from a call is a
 * step that is not sampled. Every submit is told to the ring first (results
 * belong to executions); after the token's fence, vkprof_collect, and after
 * each segment's fence too (a token of several submits), so that every
 * segment's execution is folded before the buffer is recorded again. A new
 * segment is a new recording: its first scope has its own begin stamp even
 * with shared boundaries (calls + segments stamps per token). */
#include "decode_profile.h"

static int check(dec_prof *p, vkprof_context ctx)
{
    if (ctx == NULL) {
        return dec_prof_fail(
            p, "ring profiling needs a vkprof context (timing_mode VKPROF_TIMING_RING)");
    }
    return 0;
}

static int phase_begin(dec_prof *p, VkCommandBuffer cmd, uint32_t phase)
{
    vkprof_result pr = vkprof_cmd_begin(p->ctx, cmd, phase);
    if (pr != VKPROF_OK && pr != VKPROF_DISABLED) {
        return dec_prof_fail(p, "vkprof_cmd_begin: %s", vkprof_result_name(pr));
    }
    return 0;
}

static int phase_end(dec_prof *p, VkCommandBuffer cmd, uint32_t phase)
{
    vkprof_result pr = vkprof_cmd_end(p->ctx, cmd, phase);
    if (pr != VKPROF_OK && pr != VKPROF_DISABLED) {
        return dec_prof_fail(p, "vkprof_cmd_end: %s", vkprof_result_name(pr));
    }
    return 0;
}

static void pre_submit(dec_prof *p, VkCommandBuffer cmd)
{
    (void)vkprof_cmd_submit(p->ctx, p->dev->queue, 1, &cmd);
}

static int token_done(dec_prof *p)
{
    vkprof_result pr = vkprof_collect(p->ctx);
    if (pr != VKPROF_OK && pr != VKPROF_DISABLED) {
        return dec_prof_fail(p, "vkprof_collect: %s", vkprof_result_name(pr));
    }
    return 0;
}

const dec_prof_mode dec_mode_ring = {.id = DEC_PROFILE_RING,
                                     .name = "ring",
                                     .check = check,
                                     .phase_begin = phase_begin,
                                     .phase_end = phase_end,
                                     .pre_submit = pre_submit,
                                     .segment_done = token_done,
                                     .token_done = token_done};
