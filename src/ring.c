/* Ring mode: many scopes in flight in one multi-slot timestamp pool.
 *
 * Slots are handed out in order as 64-bit sequence numbers (slot = seq %
 * queries); a scope takes two (or one, when its begin shares the previous
 * scope's end stamp). vkprof_collect() reads the pending range with
 * WITH_AVAILABILITY and never WAIT, folds finished scopes in recording order,
 * and frees their slots (host reset when the app enabled hostQueryReset, else
 * each stamp is preceded by vkCmdResetQueryPool of its slot, and a stale value
 * from the slot's previous lap is recognised by comparison). A scope that
 * finds no free slot is dropped and counted: an unread slot is never
 * overwritten. Sampling times every stamp of 1 step in N. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

bool vkprof__ring_mode(vkprof_context ctx)
{
    return ctx->desc.timing_mode == VKPROF_TIMING_RING;
}

static uint32_t sample_every(vkprof_context ctx)
{
    return ctx->desc.sample_every > 1 ? ctx->desc.sample_every : 1u;
}

bool vkprof__step_timed(vkprof_context ctx)
{
    if (!vkprof__ring_mode(ctx)) {
        return true;
    }
    uint64_t step = atomic_load_explicit(&ctx->host.steps, memory_order_relaxed);
    return step % sample_every(ctx) == 0;
}

bool vkprof_step_timed(vkprof_context ctx)
{
    return vkprof_active(ctx) && vkprof__step_timed(ctx);
}

void vkprof__timing_on_step(vkprof_context ctx, uint64_t finished)
{
    if (!vkprof__ring_mode(ctx) || finished % sample_every(ctx) == 0) {
        if (ctx->head.active) {
            atomic_fetch_add_explicit(&ctx->timed_steps, 1, memory_order_relaxed);
        }
    }
    /* a step ends any shared boundary: the next token is a new recording */
    atomic_fetch_add_explicit(&ctx->step_epoch, 1, memory_order_relaxed);
}

static vkprof_result ring_init(vkprof_context ctx)
{
    vkprof_ring *r = &ctx->ring;
    if (r->pool != VK_NULL_HANDLE) {
        return VKPROF_OK;
    }
    uint32_t n = ctx->desc.ring_queries ? ctx->desc.ring_queries : 4096u;
    if (n < 4) {
        n = 4;
    }
    r->scopes = calloc(n, sizeof *r->scopes);
    r->last_value = calloc(n, sizeof *r->last_value);
    r->has_last = calloc(n, 1);
    r->readback = calloc((size_t)n * 2, sizeof *r->readback);
    if (r->scopes == NULL || r->last_value == NULL || r->has_last == NULL || r->readback == NULL) {
        vkprof__ring_shutdown(ctx);
        return vkprof__fail(ctx, VKPROF_ERROR_OUT_OF_MEMORY, "ring: %u queries", n);
    }
    VkQueryPoolCreateInfo ci;
    memset(&ci, 0, sizeof ci);
    ci.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    ci.queryCount = n;
    VkResult vr = ctx->vk.CreateQueryPool(ctx->desc.device, &ci, ctx->desc.vk_allocator, &r->pool);
    if (vr != VK_SUCCESS) {
        r->pool = VK_NULL_HANDLE;
        vkprof__ring_shutdown(ctx);
        return vkprof__fail(ctx, VKPROF_ERROR_VULKAN,
                            "vkCreateQueryPool(%u queries) failed (VkResult %d)", n, (int)vr);
    }
    r->queries = n;
    if (ctx->host_reset) {
        ctx->vk.ResetQueryPool(ctx->desc.device, r->pool, 0, n);
    }
    return VKPROF_OK;
}

void vkprof__ring_shutdown(vkprof_context ctx)
{
    vkprof_ring *r = &ctx->ring;
    if (r->pool != VK_NULL_HANDLE) {
        ctx->vk.DestroyQueryPool(ctx->desc.device, r->pool, ctx->desc.vk_allocator);
    }
    free(r->scopes);
    free(r->last_value);
    free(r->has_last);
    free(r->readback);
    memset(r, 0, sizeof *r);
}

static uint32_t slot_of(const vkprof_ring *r, uint64_t seq)
{
    return (uint32_t)(seq % r->queries);
}

/* Record one stamp into slot `seq` (reset first when there is no host reset). */
static void ring_stamp(vkprof_context ctx, VkCommandBuffer cmd, uint64_t seq)
{
    vkprof_ring *r = &ctx->ring;
    uint32_t slot = slot_of(r, seq);
    if (!ctx->host_reset) {
        ctx->vk.CmdResetQueryPool(cmd, r->pool, slot, 1);
    }
    vkprof__stamp(ctx, cmd, r->pool, slot);
}

static bool boundary_usable(vkprof_context ctx, VkCommandBuffer cmd)
{
    const vkprof_ring *r = &ctx->ring;
    return ctx->desc.shared_boundaries && r->boundary_valid && r->boundary_cmd == cmd &&
           r->boundary_epoch == atomic_load_explicit(&ctx->step_epoch, memory_order_relaxed);
}

vkprof_result vkprof__ring_begin(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase)
{
    vkprof_ring *r = &ctx->ring;
    if (r->open) {
        /* not re-entrant, as in 2-slot mode: the open scope is dropped */
        vkprof_phase open = r->open_phase;
        if (!r->open_dropped) {
            /* its begin stamp stays recorded; the scope is marked never-ending */
            r->scopes[(r->scope_head + r->scope_count - 1) % r->queries].ended = true;
            r->scopes[(r->scope_head + r->scope_count - 1) % r->queries].phase = VKPROF_MAX_PHASES;
        }
        r->open = false;
        r->boundary_valid = false;
        return vkprof__fail(ctx, VKPROF_ERROR_BEGIN_TWICE,
                            "begin('%s') while '%s' is open; both scopes are dropped",
                            ctx->phases[phase].name, ctx->phases[open].name);
    }
    if (!vkprof__step_timed(ctx)) {
        r->boundary_valid = false;
        return VKPROF_DISABLED; /* sampling: this step is not timed */
    }
    vkprof_result res = ring_init(ctx);
    if (res != VKPROF_OK) {
        return res;
    }
    bool shared = boundary_usable(ctx, cmd);
    uint64_t need = shared ? 1 : 2; /* slots for this scope: begin (unless shared) + end */
    r->open = true;
    r->open_phase = phase;
    if (r->alloc_seq + need - r->tail_seq > r->queries || r->scope_count >= r->queries) {
        /* full: drop the scope, never overwrite a slot that was not read */
        r->open_dropped = true;
        r->boundary_valid = false;
        ctx->lost_ring_full++;
        return VKPROF_OK;
    }
    r->open_dropped = false;
    vkprof_ring_scope *sc = &r->scopes[(r->scope_head + r->scope_count) % r->queries];
    memset(sc, 0, sizeof *sc);
    sc->phase = phase;
    sc->shared_begin = shared;
    sc->flow = vkprof__current_span();
    sc->step = atomic_load_explicit(&ctx->host.steps, memory_order_relaxed) + 1;
    if (shared) {
        sc->begin_seq = r->boundary_seq;
        ctx->shared_stamps++;
    } else {
        sc->begin_seq = r->alloc_seq++;
        ring_stamp(ctx, cmd, sc->begin_seq);
    }
    r->scope_count++;
    r->boundary_valid = false;
    ctx->scopes_recorded++;
    return VKPROF_OK;
}

vkprof_result vkprof__ring_end(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase)
{
    vkprof_ring *r = &ctx->ring;
    if (!r->open) {
        if (!vkprof__step_timed(ctx)) {
            return VKPROF_DISABLED;
        }
        return vkprof__fail(ctx, VKPROF_ERROR_END_WITHOUT_BEGIN, "end('%s') without begin",
                            ctx->phases[phase].name);
    }
    vkprof_ring_scope *sc = &r->scopes[(r->scope_head + r->scope_count - 1) % r->queries];
    if (phase != r->open_phase) {
        r->open = false;
        r->boundary_valid = false;
        if (!r->open_dropped) {
            sc->ended = true;
            sc->phase = VKPROF_MAX_PHASES; /* never folded */
        }
        return vkprof__fail(ctx, VKPROF_ERROR_PHASE_MISMATCH,
                            "end('%s') but begin was '%s'; the scope is dropped",
                            ctx->phases[phase].name, ctx->phases[r->open_phase].name);
    }
    r->open = false;
    if (r->open_dropped) {
        return VKPROF_OK; /* counted when it was dropped */
    }
    sc->end_seq = r->alloc_seq++;
    sc->ended = true;
    ring_stamp(ctx, cmd, sc->end_seq);
    r->boundary_valid = true;
    r->boundary_cmd = cmd;
    r->boundary_seq = sc->end_seq;
    r->boundary_epoch = atomic_load_explicit(&ctx->step_epoch, memory_order_relaxed);
    return VKPROF_OK;
}

/* Read [from, to) sequence numbers into readback[] (indexed by slot). */
static vkprof_result read_range(vkprof_context ctx, uint64_t from, uint64_t to)
{
    vkprof_ring *r = &ctx->ring;
    while (from < to) {
        uint32_t first = slot_of(r, from);
        uint64_t n = to - from;
        if (first + n > r->queries) {
            n = r->queries - first;
        }
        VkResult vr = ctx->vk.GetQueryPoolResults(
            ctx->desc.device, r->pool, first, (uint32_t)n, (size_t)n * 2 * sizeof(uint64_t),
            &r->readback[2 * (size_t)first], 2 * sizeof(uint64_t),
            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
        if (vr != VK_SUCCESS && vr != VK_NOT_READY) {
            return vkprof__fail(ctx, VKPROF_ERROR_VULKAN,
                                "ring: vkGetQueryPoolResults failed (VkResult %d)", (int)vr);
        }
        from += n;
    }
    return VKPROF_OK;
}

/* Is slot `seq` written for this lap? Its value in *v. */
static bool slot_ready(vkprof_context ctx, uint64_t seq, uint64_t *v)
{
    vkprof_ring *r = &ctx->ring;
    uint32_t s = slot_of(r, seq);
    if (r->readback[2 * (size_t)s + 1] == 0) {
        return false;
    }
    *v = r->readback[2 * (size_t)s] & ctx->valid_mask;
    /* without host resets the previous lap's value stays available until this
     * lap's reset executes; the clock moved on, so an equal value is stale */
    if (!ctx->host_reset && r->has_last[s] && r->last_value[s] == *v) {
        return false;
    }
    return true;
}

static void free_through(vkprof_context ctx, uint64_t new_tail)
{
    vkprof_ring *r = &ctx->ring;
    uint64_t from = r->tail_seq;
    if (new_tail <= from) {
        return;
    }
    /* remember what was read (stale detection), then reset from the host */
    for (uint64_t q = from; q < new_tail; q++) {
        uint32_t s = slot_of(r, q);
        r->last_value[s] = r->readback[2 * (size_t)s] & ctx->valid_mask;
        r->has_last[s] = r->readback[2 * (size_t)s + 1] != 0;
    }
    if (ctx->host_reset) {
        uint64_t q = from;
        while (q < new_tail) {
            uint32_t first = slot_of(r, q);
            uint64_t n = new_tail - q;
            if (first + n > r->queries) {
                n = r->queries - first;
            }
            ctx->vk.ResetQueryPool(ctx->desc.device, r->pool, first, (uint32_t)n);
            q += n;
        }
    }
    r->tail_seq = new_tail;
}

vkprof_result vkprof__ring_collect(vkprof_context ctx)
{
    vkprof_ring *r = &ctx->ring;
    /* a collect ends any shared boundary: the app may now re-record that buffer */
    r->boundary_valid = false;
    if (r->pool == VK_NULL_HANDLE || r->scope_count == 0) {
        return VKPROF_OK;
    }
    vkprof_result res = read_range(ctx, r->tail_seq, r->alloc_seq);
    if (res != VKPROF_OK) {
        return res;
    }
    /* The newest scope whose last stamp is written: on one queue, everything
     * recorded before it has executed, so an older scope still unwritten was
     * never submitted (its command buffer was dropped) and is given up. */
    int64_t last_done = -1;
    uint64_t closed = r->scope_count - ((r->open && !r->open_dropped) ? 1u : 0u);
    for (uint64_t i = 0; i < closed; i++) {
        const vkprof_ring_scope *sc = &r->scopes[(r->scope_head + i) % r->queries];
        bool valid = sc->phase < VKPROF_MAX_PHASES;
        uint64_t v;
        if (slot_ready(ctx, valid ? sc->end_seq : sc->begin_seq, &v)) {
            last_done = (int64_t)i;
        }
    }
    uint64_t index = 0;
    bool trace = atomic_load_explicit(&ctx->trace.on, memory_order_relaxed) != 0;
    while (index < closed) {
        vkprof_ring_scope *sc = &r->scopes[r->scope_head % r->queries];
        bool valid = sc->phase < VKPROF_MAX_PHASES; /* else dropped by misuse */
        uint64_t b = 0, e = 0;
        bool complete =
            slot_ready(ctx, sc->begin_seq, &b) && (!valid || slot_ready(ctx, sc->end_seq, &e));
        if (!complete && (int64_t)index > last_done) {
            break; /* not finished yet: try again later */
        }
        if (complete && valid) {
            uint64_t ticks = (e - b) & ctx->valid_mask;
            vkprof__phase_fold(ctx, sc->phase, ticks);
            ctx->scopes_collected++;
            if (trace) {
                vkprof__trace_gpu(ctx, sc->phase, b, e, sc->flow, sc->step);
            }
        } else if (!complete && valid) {
            ctx->lost_never_submitted++; /* never executed */
        }
        index++;
        r->scope_head = (r->scope_head + 1) % r->queries;
        r->scope_count--;
    }
    uint64_t folded = index;
    if (folded > 0) {
        /* Free in one go (one host reset per contiguous range, not one per
         * scope): the slots still needed start at the next scope's begin;
         * with no next scope, at the next slot to hand out. */
        uint64_t tail = r->alloc_seq;
        if (r->scope_count > 0) {
            tail = r->scopes[r->scope_head % r->queries].begin_seq;
        }
        free_through(ctx, tail);
    }
    if (folded > 0) {
        vkprof__cal_maybe_refresh(ctx);
    }
    return VKPROF_OK;
}

vkprof_result vkprof_get_timing_stats(vkprof_context ctx, vkprof_timing_stats *out)
{
    if (ctx == NULL || out == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    memset(out, 0, sizeof *out);
    out->mode = ctx->desc.timing_mode;
    out->ring_queries = vkprof__ring_mode(ctx) ? (ctx->ring.queries        ? ctx->ring.queries
                                                  : ctx->desc.ring_queries ? ctx->desc.ring_queries
                                                                           : 4096u)
                                               : 2u;
    out->sample_every = sample_every(ctx);
    out->timed_steps = atomic_load(&ctx->timed_steps);
    out->scopes_recorded = ctx->scopes_recorded;
    out->scopes_collected = ctx->scopes_collected;
    out->lost_ring_full = ctx->lost_ring_full;
    out->lost_overwritten = ctx->lost_overwritten;
    out->lost_never_submitted = ctx->lost_never_submitted;
    out->lost_reset = ctx->lost_reset;
    out->lost_misuse = ctx->lost_misuse;
    out->scopes_dropped = ctx->lost_ring_full + ctx->lost_overwritten + ctx->lost_never_submitted +
                          ctx->lost_reset + ctx->lost_misuse;
    out->submissions = ctx->submissions;
    out->samples = ctx->scopes_recorded + ctx->lost_ring_full + ctx->extra_samples;
    out->scopes_pending = vkprof__ring_mode(ctx) ? ctx->ring.scope_count
                                                 : (ctx->state == VKPROF_SCOPE_ENDED ||
                                                    ctx->state == VKPROF_SCOPE_RESOLVED);
    out->stamps_written = ctx->stamps_written;
    out->shared_stamps = ctx->shared_stamps;
    out->host_reset = ctx->host_reset;
    return VKPROF_OK;
}
