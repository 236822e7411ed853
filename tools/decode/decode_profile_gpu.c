/* Profiling mode "gpu": vkprof's 2-slot timing. One scope in flight, so each
 * phase call is its own command buffer, submitted and waited for before the
 * next (submit_per_call), then resolved and accumulated into its phase. */
#include "decode_profile.h"

static int check(dec_prof *p, vkprof_context ctx)
{
    if (!vkprof_active(ctx)) {
        return dec_prof_fail(p, "--profile gpu needs an active vkprof context (timestamps on the "
                                "compute queue)");
    }
    return 0;
}

static int phase_begin(dec_prof *p, VkCommandBuffer cmd, uint32_t phase)
{
    vkprof_result pr = vkprof_cmd_begin(p->ctx, cmd, phase);
    return pr != VKPROF_OK ? dec_prof_fail(p, "vkprof_cmd_begin: %s", vkprof_result_name(pr)) : 0;
}

static int phase_end(dec_prof *p, VkCommandBuffer cmd, uint32_t phase)
{
    vkprof_result pr = vkprof_cmd_end(p->ctx, cmd, phase);
    return pr != VKPROF_OK ? dec_prof_fail(p, "vkprof_cmd_end: %s", vkprof_result_name(pr)) : 0;
}

/* After the call's fence: the scope's two stamps into its phase. */
static int call_done(dec_prof *p, uint32_t phase)
{
    vkprof_result pr = vkprof_resolve(p->ctx, NULL);
    if (pr == VKPROF_OK) {
        pr = vkprof_accumulate(p->ctx, phase);
    }
    if (pr != VKPROF_OK) {
        const char *name = vkprof_phase_name(p->ctx, phase);
        return dec_prof_fail(p, "vkprof resolve/accumulate (%s): %s", name ? name : "?",
                             vkprof_result_name(pr));
    }
    return 0;
}

const dec_prof_mode dec_mode_gpu = {.id = DEC_PROFILE_GPU,
                                    .name = "gpu",
                                    .submit_per_call = true,
                                    .check = check,
                                    .phase_begin = phase_begin,
                                    .phase_end = phase_end,
                                    .call_done = call_done};
