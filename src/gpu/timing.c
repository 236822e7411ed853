/* The 2-slot timing cycle: begin/end stamps, resolve, accumulate. */
#include "base/base.h"
#include "clock/clock.h"
#include "timeline/store.h"
#include "gpu/gpu.h"

#include <string.h>

/* Issue 8. A scope ended but never resolved, then discarded by the next
 * begin, can have run: its finished pair sits in the pool, never read. Until
 * the GPU executes the new begin's vkCmdResetQueryPool, a resolve would read
 * that pair and fold the old scope's value into the new phase. So a begin that
 * discards an ended scope first reads the two slots (64-bit,
 * WITH_AVAILABILITY, never WAIT) and, when both are available, remembers the
 * pair as the last pair: resolve's equal-pair check then reports NOT_READY
 * (counted, logged) until the new scope's own stamps are there. (A scope
 * discarded after its resolve needs nothing: its pair was read, remembered,
 * and host-reset where the host resets.)
 *
 * Both paths need it. Without host reset the slots keep every old result
 * until the GPU runs the new begin's reset. With host reset, resolve resets
 * the slots only after a pair it read; a discarded scope's pair was never
 * read, so it is still available. The read never host-resets what it finds:
 * vkResetQueryPool is valid only once every submitted command that touches the
 * two queries has completed, and a complete pair proves only that the two
 * stamps that wrote it have; the command buffer of a discarded or abandoned
 * scope (its reset, its stamps) may still be pending, which the library cannot
 * know. Remembering the pair is enough and is valid in every case.
 *
 * Without host reset the queries are uninitialised until a recorded reset has
 * run; when the discarded scope was the first and was never submitted, the
 * read touches them anyway (as resolve does): outside the valid usage then
 * (newer layers: VUID-vkGetQueryPoolResults-None-09401), harmless in practice.
 *
 * What this cannot catch:
 *  - A scope dropped by vkprof_set_active(false) after it ran: the next
 *    begin finds the state idle, as after an accumulate, and does not read.
 *    (context.c would have to do the same read. Reading at every begin would
 *    catch it too, but the simulated device of tests/device/test_sim.c reports each
 *    scope's fake pair as available before the scope is even recorded, and
 *    an idle begin cannot tell that from an unread pair.)
 *  - A discarded scope whose stamps have not run when the new begin reads
 *    the pool (its command buffer not submitted yet, or still in flight): its
 *    pair lands after the read and is not the remembered one.
 *    If its command buffer runs before the new scope's (same queue, submitted
 *    first), query commands on one query run in submission order, so once the
 *    new scope's command buffer has completed (its fence) the pool holds the
 *    new scope's pair and resolve is exact; a resolve before that, after the
 *    old pair landed, takes the old pair for the new scope's. If it runs after
 *    the new scope's, the old pair replaces the new one, and a resolve after
 *    that returns the old scope's value; with host reset, a resolve while the
 *    old command buffer is still pending would also host-reset queries in use.
 *    Both leave the 2-slot contract (one scope at a time: submit, wait,
 *    resolve). Telling them apart needs state the context does not keep
 *    (which command buffer the discarded scope was recorded in, whether its
 *    pair was seen).
 * A scope discarded in the same command buffer as the new begin is harmless
 * once that buffer has completed: its stamps run before the new scope's reset.
 */
static vkprof_result remember_unread_pair(vkprof_context ctx)
{
    uint64_t data[4] = {0, 0, 0, 0};
    VkResult vr = ctx->vk.GetQueryPoolResults(
        ctx->desc.device, ctx->gpu.pool, 0, 2, sizeof data, data, 2 * sizeof(uint64_t),
        VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
    if (vr != VK_SUCCESS && vr != VK_NOT_READY) {
        return vkprof__fail(ctx, VKPROF_ERROR_VULKAN,
                            "begin: vkGetQueryPoolResults failed (VkResult %d); nothing recorded",
                            (int)vr);
    }
    if (vr == VK_SUCCESS && data[1] != 0 && data[3] != 0) {
        ctx->gpu.last_pair[0] = data[0];
        ctx->gpu.last_pair[1] = data[2];
        ctx->gpu.have_last_pair = true;
    }
    return VKPROF_OK;
}

/* Profiling turned off (or the context destroyed) with a scope that can no
 * longer be completed: give it up, counted, and remember a pair it may have
 * left unread, as a discarding begin does. */
void vkprof__twoslot_abandon(vkprof_context ctx)
{
    if (ctx->gpu.state == VKPROF_SCOPE_IDLE) {
        return;
    }
    if (ctx->gpu.state == VKPROF_SCOPE_ENDED && ctx->gpu.pool != VK_NULL_HANDLE) {
        (void)remember_unread_pair(ctx);
    }
    ctx->errors.discarded++;
    ctx->gpu.lost_misuse++;
    ctx->gpu.state = VKPROF_SCOPE_IDLE;
}

static vkprof_result ensure_pool(vkprof_context ctx)
{
    if (ctx->gpu.pool != VK_NULL_HANDLE) {
        return VKPROF_OK;
    }
    VkQueryPoolCreateInfo ci;
    memset(&ci, 0, sizeof ci);
    ci.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    ci.queryCount = 2;
    VkResult vr =
        ctx->vk.CreateQueryPool(ctx->desc.device, &ci, ctx->desc.vk_allocator, &ctx->gpu.pool);
    if (vr != VK_SUCCESS) {
        ctx->gpu.pool = VK_NULL_HANDLE;
        return vkprof__fail(ctx, VKPROF_ERROR_VULKAN, "vkCreateQueryPool failed (VkResult %d)",
                            (int)vr);
    }
    if (ctx->gpu.host_reset) {
        ctx->vk.ResetQueryPool(ctx->desc.device, ctx->gpu.pool, 0, 2);
    }
    ctx->gpu.have_last_pair = false;
    return VKPROF_OK;
}

void vkprof__timing_shutdown(vkprof_context ctx)
{
    vkprof__ring_shutdown(ctx);
    if (ctx->gpu.pool != VK_NULL_HANDLE) {
        ctx->vk.DestroyQueryPool(ctx->desc.device, ctx->gpu.pool, ctx->desc.vk_allocator);
        ctx->gpu.pool = VK_NULL_HANDLE;
    }
}

/* A stamp at a stage: all earlier work (ALL_COMMANDS; BOTTOM_OF_PIPE in the
 * core API) or none (TOP_OF_PIPE, an outer scope's begin with
 * desc.outer_begin_top) */
static void stamp_at(vkprof_context ctx, VkCommandBuffer cmd, VkQueryPool pool, uint32_t slot,
                     bool top)
{
    ctx->gpu.stamps_written++;
    if (ctx->info.timestamp2) {
        /* ALL_COMMANDS: the stamp waits for every earlier command to finish. */
        ctx->vk.CmdWriteTimestamp2(
            cmd, top ? VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT : VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
            pool, slot);
    } else {
        ctx->vk.CmdWriteTimestamp(
            cmd, top ? VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT : VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
            pool, slot);
    }
}

void vkprof__stamp(vkprof_context ctx, VkCommandBuffer cmd, VkQueryPool pool, uint32_t slot)
{
    stamp_at(ctx, cmd, pool, slot, false);
}

void vkprof__stamp_top(vkprof_context ctx, VkCommandBuffer cmd, VkQueryPool pool, uint32_t slot)
{
    stamp_at(ctx, cmd, pool, slot, true);
}

static void stamp(vkprof_context ctx, VkCommandBuffer cmd, uint32_t slot)
{
    vkprof__stamp(ctx, cmd, ctx->gpu.pool, slot);
}

vkprof_result vkprof_cmd_begin_leaf(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase,
                                    bool *left_out)
{
    if (left_out == NULL) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT, "begin_leaf: left_out is NULL");
    }
    *left_out = false;
    if (!vkprof_active(ctx)) {
        return VKPROF_DISABLED;
    }
    if (cmd == VK_NULL_HANDLE) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT,
                            "begin_leaf: command buffer is NULL");
    }
    if (!vkprof__phase_valid(ctx, phase)) {
        return vkprof__fail(ctx, VKPROF_ERROR_UNKNOWN_PHASE, "begin_leaf: unknown phase id %u",
                            phase);
    }
    if (vkprof__ring_mode(ctx)) {
        return vkprof__ring_begin(ctx, cmd, phase, left_out);
    }
    return vkprof_cmd_begin(ctx, cmd, phase);
}

vkprof_result vkprof_cmd_begin(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase)
{
    if (!vkprof_active(ctx)) {
        return VKPROF_DISABLED;
    }
    if (cmd == VK_NULL_HANDLE) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT, "begin: command buffer is NULL");
    }
    if (!vkprof__phase_valid(ctx, phase)) {
        return vkprof__fail(ctx, VKPROF_ERROR_UNKNOWN_PHASE, "begin: unknown phase id %u", phase);
    }
    if (vkprof__ring_mode(ctx)) {
        return vkprof__ring_begin(ctx, cmd, phase, NULL);
    }
    if (ctx->gpu.state == VKPROF_SCOPE_BEGUN) {
        /* Not re-entrant: abandon the open scope, so neither folds. */
        vkprof_phase open = ctx->gpu.scope_phase;
        ctx->gpu.state = VKPROF_SCOPE_IDLE;
        ctx->gpu.lost_misuse++; /* the open scope; the new one is not recorded */
        return vkprof__fail(ctx, VKPROF_ERROR_BEGIN_TWICE,
                            "begin('%s') while '%s' is open; both scopes are dropped",
                            ctx->gpu.phases[phase].name, ctx->gpu.phases[open].name);
    }
    /* ended, never resolved: its pair may be in the pool, unread */
    bool unread = ctx->gpu.state == VKPROF_SCOPE_ENDED;
    if (ctx->gpu.state == VKPROF_SCOPE_ENDED || ctx->gpu.state == VKPROF_SCOPE_RESOLVED) {
        ctx->errors.discarded++;
        ctx->gpu.lost_misuse++;
        vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_OK,
                    "begin('%s'): the previous '%s' scope was never accumulated; discarded",
                    ctx->gpu.phases[phase].name, ctx->gpu.phases[ctx->gpu.scope_phase].name);
        ctx->gpu.state = VKPROF_SCOPE_IDLE;
    }
    vkprof_result r = ensure_pool(ctx);
    if (r == VKPROF_OK && unread) {
        r = remember_unread_pair(ctx); /* before this scope's reset is recorded */
    }
    if (r != VKPROF_OK) {
        return r;
    }
    ctx->vk.CmdResetQueryPool(cmd, ctx->gpu.pool, 0, 2);
    stamp(ctx, cmd, 0);
    ctx->gpu.state = VKPROF_SCOPE_BEGUN;
    ctx->gpu.scope_phase = phase;
    ctx->gpu.scope_flow = vkprof__current_span();
    ctx->gpu.scope_annot = 0;
    ctx->gpu.scopes_recorded++;
    return VKPROF_OK;
}

static vkprof_result cmd_end(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase,
                             const vkprof_arg *args, uint32_t count)
{
    if (cmd == VK_NULL_HANDLE) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT, "end: command buffer is NULL");
    }
    if (!vkprof__phase_valid(ctx, phase)) {
        return vkprof__fail(ctx, VKPROF_ERROR_UNKNOWN_PHASE, "end: unknown phase id %u", phase);
    }
    if (vkprof__ring_mode(ctx)) {
        return vkprof__ring_end(ctx, cmd, phase, args, count);
    }
    if (ctx->gpu.state != VKPROF_SCOPE_BEGUN) {
        return vkprof__fail(ctx, VKPROF_ERROR_END_WITHOUT_BEGIN, "end('%s') without begin",
                            ctx->gpu.phases[phase].name);
    }
    if (phase != ctx->gpu.scope_phase) {
        ctx->gpu.state = VKPROF_SCOPE_IDLE;
        ctx->gpu.lost_misuse++;
        return vkprof__fail(
            ctx, VKPROF_ERROR_PHASE_MISMATCH, "end('%s') but begin was '%s'; the scope is dropped",
            ctx->gpu.phases[phase].name, ctx->gpu.phases[ctx->gpu.scope_phase].name);
    }
    stamp(ctx, cmd, 1);
    ctx->gpu.state = VKPROF_SCOPE_ENDED;
    ctx->gpu.scope_annot = count > 0 ? vkprof__trace_args(ctx, args, count) : 0;
    return VKPROF_OK;
}

vkprof_result vkprof_cmd_end(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase)
{
    if (!vkprof_active(ctx)) {
        return VKPROF_DISABLED;
    }
    return cmd_end(ctx, cmd, phase, NULL, 0);
}

vkprof_result vkprof_cmd_end_args(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase,
                                  const vkprof_arg *args, uint32_t count)
{
    if (!vkprof_active(ctx)) {
        return VKPROF_DISABLED;
    }
    if (args == NULL && count > 0) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT,
                            "end_args: args is NULL with count %u; the scope stays open", count);
    }
    for (uint32_t k = 0; k < count && k < VKPROF_GPU_MAX_ARGS; k++) {
        if (args[k].key == NULL || args[k].value == NULL) {
            return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT,
                                "end_args: arg %u has a NULL key or value; the scope stays open",
                                k);
        }
    }
    return cmd_end(ctx, cmd, phase, args, count);
}

vkprof_result vkprof_cmd_both(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase,
                              vkprof_record_fn record, void *user)
{
    if (record == NULL) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT, "both: record callback is NULL");
    }
    if (cmd == VK_NULL_HANDLE) {
        /* record would be handed a NULL command buffer to record into */
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT,
                            "both: command buffer is NULL; record not called");
    }
    if (!vkprof_active(ctx)) {
        record(cmd, user);
        return VKPROF_DISABLED;
    }
    vkprof_result r = vkprof_cmd_begin(ctx, cmd, phase);
    record(cmd, user);
    if (r != VKPROF_OK) {
        return r;
    }
    return vkprof_cmd_end(ctx, cmd, phase);
}

vkprof_result vkprof_resolve(vkprof_context ctx, uint64_t *out_ns)
{
    if (!vkprof_active(ctx)) {
        return VKPROF_DISABLED;
    }
    if (vkprof__ring_mode(ctx)) {
        /* ring mode: the same call site collects whatever is finished */
        if (out_ns != NULL) {
            *out_ns = 0;
        }
        return vkprof__ring_collect(ctx);
    }
    switch (ctx->gpu.state) {
    case VKPROF_SCOPE_IDLE:
        return vkprof__fail(ctx, VKPROF_ERROR_NOTHING_PENDING, "resolve: no scope was recorded");
    case VKPROF_SCOPE_BEGUN:
        return vkprof__fail(ctx, VKPROF_ERROR_NOT_ENDED, "resolve: the '%s' scope was not ended",
                            ctx->gpu.phases[ctx->gpu.scope_phase].name);
    case VKPROF_SCOPE_RESOLVED:
        if (out_ns != NULL) {
            *out_ns = vkprof_ticks_to_ns(ctx->gpu.scope_ticks, ctx->info.timestamp_period);
        }
        return VKPROF_OK;
    case VKPROF_SCOPE_ENDED: break;
    }
    /* Two (value, availability) pairs; never WAIT, never PARTIAL. */
    uint64_t data[4] = {0, 0, 0, 0};
    VkResult vr = ctx->vk.GetQueryPoolResults(
        ctx->desc.device, ctx->gpu.pool, 0, 2, sizeof data, data, 2 * sizeof(uint64_t),
        VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
    if (vr != VK_SUCCESS && vr != VK_NOT_READY) {
        return vkprof__fail(ctx, VKPROF_ERROR_VULKAN, "vkGetQueryPoolResults failed (VkResult %d)",
                            (int)vr);
    }
    if (vr == VK_NOT_READY || data[1] == 0 || data[3] == 0) {
        return vkprof__fail(ctx, VKPROF_ERROR_NOT_READY,
                            "resolve('%s'): timestamps not available yet (submit and wait first)",
                            ctx->gpu.phases[ctx->gpu.scope_phase].name);
    }
    /* Without a host reset, the previous scope's results stay available until
     * the GPU executes this scope's vkCmdResetQueryPool; with or without it, a
     * discarded scope that ran unread leaves its pair too (the begin that
     * discarded it remembered that pair: remember_unread_pair). The device
     * clock moves on between scopes, so an identical pair is that stale
     * result. */
    if (ctx->gpu.have_last_pair && data[0] == ctx->gpu.last_pair[0] &&
        data[2] == ctx->gpu.last_pair[1]) {
        return vkprof__fail(ctx, VKPROF_ERROR_NOT_READY,
                            "resolve('%s'): only the previous scope's results are there yet "
                            "(submit and wait first)",
                            ctx->gpu.phases[ctx->gpu.scope_phase].name);
    }
    ctx->gpu.last_pair[0] = data[0];
    ctx->gpu.last_pair[1] = data[2];
    ctx->gpu.have_last_pair = true;
    if (ctx->gpu.host_reset) {
        /* Both writes have completed: the range is idle. */
        ctx->vk.ResetQueryPool(ctx->desc.device, ctx->gpu.pool, 0, 2);
    }
    if (vkprof__ticks_backwards(data[0], data[2], ctx->valid_mask)) {
        /* never folded as a wrapped duration: the sample is lost, counted */
        ctx->gpu.lost_backwards++;
        ctx->gpu.state = VKPROF_SCOPE_IDLE;
        return vkprof__fail(ctx, VKPROF_ERROR_VULKAN,
                            "resolve('%s'): the device wrote the end stamp before the begin "
                            "stamp (%llu ticks earlier); the sample is lost (lost_backwards)",
                            ctx->gpu.phases[ctx->gpu.scope_phase].name,
                            (unsigned long long)((data[0] - data[2]) & ctx->valid_mask));
    }
    ctx->gpu.scope_ticks = (data[2] - data[0]) & ctx->valid_mask;
    ctx->gpu.scope_begin_ticks = data[0] & ctx->valid_mask;
    ctx->gpu.scope_end_ticks = data[2] & ctx->valid_mask;
    vkprof__cal_maybe_refresh(ctx);
    ctx->gpu.state = VKPROF_SCOPE_RESOLVED;
    if (out_ns != NULL) {
        *out_ns = vkprof_ticks_to_ns(ctx->gpu.scope_ticks, ctx->info.timestamp_period);
    }
    return VKPROF_OK;
}

vkprof_result vkprof_accumulate(vkprof_context ctx, vkprof_phase phase)
{
    if (!vkprof_active(ctx)) {
        return VKPROF_DISABLED;
    }
    if (!vkprof__phase_valid(ctx, phase)) {
        return vkprof__fail(ctx, VKPROF_ERROR_UNKNOWN_PHASE, "accumulate: unknown phase id %u",
                            phase);
    }
    if (vkprof__ring_mode(ctx)) {
        return VKPROF_OK; /* folded by vkprof_resolve / vkprof_collect */
    }
    switch (ctx->gpu.state) {
    case VKPROF_SCOPE_IDLE:
        return vkprof__fail(ctx, VKPROF_ERROR_NOTHING_PENDING,
                            "accumulate('%s'): no scope was recorded", ctx->gpu.phases[phase].name);
    case VKPROF_SCOPE_BEGUN:
        return vkprof__fail(ctx, VKPROF_ERROR_NOT_ENDED,
                            "accumulate('%s') without end: the scope is still open",
                            ctx->gpu.phases[phase].name);
    case VKPROF_SCOPE_ENDED:
        return vkprof__fail(ctx, VKPROF_ERROR_NOT_RESOLVED,
                            "accumulate('%s') before a successful resolve",
                            ctx->gpu.phases[phase].name);
    case VKPROF_SCOPE_RESOLVED: break;
    }
    if (phase != ctx->gpu.scope_phase) {
        return vkprof__fail(ctx, VKPROF_ERROR_PHASE_MISMATCH,
                            "accumulate('%s') but the scope is '%s'; nothing folded",
                            ctx->gpu.phases[phase].name,
                            ctx->gpu.phases[ctx->gpu.scope_phase].name);
    }
    vkprof__phase_fold(ctx, phase, ctx->gpu.scope_ticks, false);
    ctx->gpu.scopes_collected++;
    if (atomic_load_explicit(&ctx->trace.on, memory_order_relaxed)) {
        vkprof__trace_gpu(ctx, phase, ctx->gpu.scope_begin_ticks, ctx->gpu.scope_end_ticks,
                          ctx->gpu.scope_flow, vkprof__steps_done(ctx) + 1, ctx->gpu.scope_annot);
    }
    ctx->gpu.state = VKPROF_SCOPE_IDLE;
    return VKPROF_OK;
}

vkprof_result vkprof_last_scope_ticks(vkprof_context ctx, uint64_t *begin, uint64_t *end)
{
    if (ctx == NULL || begin == NULL || end == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    /* have_last_pair also covers a pair that begin found unread, which was
     * never resolved; only a resolve sets the scope ticks (zero until then) */
    if (!ctx->gpu.have_last_pair ||
        (ctx->gpu.scope_begin_ticks == 0 && ctx->gpu.scope_end_ticks == 0)) {
        return VKPROF_ERROR_NOTHING_PENDING;
    }
    *begin = ctx->gpu.scope_begin_ticks;
    *end = ctx->gpu.scope_end_ticks;
    return VKPROF_OK;
}

vkprof_result vkprof__collect(vkprof_context ctx)
{
    if (!vkprof_active(ctx)) {
        return VKPROF_DISABLED;
    }
    if (vkprof__ring_mode(ctx)) {
        return vkprof__ring_collect(ctx);
    }
    if (ctx->gpu.state != VKPROF_SCOPE_ENDED && ctx->gpu.state != VKPROF_SCOPE_RESOLVED) {
        return VKPROF_OK; /* nothing finished to fold */
    }
    if (ctx->gpu.state == VKPROF_SCOPE_ENDED) {
        /* a quiet probe: not ready is not an error here */
        uint64_t data[4] = {0, 0, 0, 0};
        VkResult vr = ctx->vk.GetQueryPoolResults(
            ctx->desc.device, ctx->gpu.pool, 0, 2, sizeof data, data, 2 * sizeof(uint64_t),
            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
        if (vr != VK_SUCCESS || data[1] == 0 || data[3] == 0) {
            return vr == VK_SUCCESS || vr == VK_NOT_READY
                       ? VKPROF_OK
                       : vkprof__fail(ctx, VKPROF_ERROR_VULKAN,
                                      "vkGetQueryPoolResults failed (VkResult %d)", (int)vr);
        }
        vkprof_result r = vkprof_resolve(ctx, NULL);
        if (r == VKPROF_ERROR_NOT_READY) {
            return VKPROF_OK; /* stale pair: counted by resolve, tried again later */
        }
        if (r != VKPROF_OK) {
            return r;
        }
    }
    return vkprof_accumulate(ctx, ctx->gpu.scope_phase);
}
