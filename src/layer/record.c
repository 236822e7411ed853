/* Recording: command pools and buffers, pipelines and their names, labels,
 * and the scopes around dispatches (dispatch mode), label regions (label
 * mode) or whole primary buffers (cmdbuf mode). */
#include "layer.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEXT(d, name) ((d)->next.name)

static lyr_cmd *cmd_get(VkCommandBuffer cb)
{
    return lyr_map_get(&lyr_cmds, (uint64_t)(uintptr_t)cb);
}

static lyr_device *cmd_dev(lyr_cmd *c, VkCommandBuffer cb)
{
    return c != NULL ? c->dev : lyr_device_get(cb);
}

/* counting: one more call of `phase` in this recording (owner thread) */
static void calls_add(lyr_cmd *c, uint32_t phase)
{
    if (phase >= VKPROF_MAX_PHASES) {
        return; /* no phase (no pipeline bound, or none registered) */
    }
    if (c->calls == NULL && (c->calls = calloc(1, sizeof *c->calls)) == NULL) {
        c->counting = false; /* out of memory: the estimate then misses it */
        return;
    }
    c->calls->n[phase]++;
    c->calls->touched[phase / 64] |= UINT64_C(1) << (phase % 64);
}

/* a new recording: no calls yet (only the touched entries are cleared) */
static void calls_clear(lyr_cmd *c)
{
    if (c->calls == NULL) {
        return;
    }
    for (uint32_t w = 0; w < VKPROF_MAX_PHASES / 64; w++) {
        for (uint64_t bits = c->calls->touched[w]; bits != 0; bits &= bits - 1) {
            c->calls->n[w * 64 + (uint32_t)__builtin_ctzll(bits)] = 0;
        }
        c->calls->touched[w] = 0;
    }
}

/* The trace's recording time: each recording is a detached span of its
 * family's context, from its vkBeginCommandBuffer to its
 * vkEndCommandBuffer, on the app's thread. Recordings may interleave on a
 * thread (a secondary recorded inside a primary, two buffers at once) and
 * end on another thread; a span is written only for a recording that began
 * and ended on this thread with no other begin on it in between, so the
 * thread's spans always nest (any two written are disjoint, and the app's
 * calls' spans inside one lie within it). */
static _Thread_local uint64_t rec_begins; /* this thread's recording begins, from its base */
static _Atomic uint64_t rec_threads;      /* threads that began a recording: each one's base */

static void rec_span_begin(lyr_device *d, lyr_cmd *c, bool begun)
{
    c->rec_span = vkprof__span_empty_();
    if (!begun) {
        return;
    }
    /* a secondary has no span of its own (one recorded inside a primary
     * is within the primary's), and does not end the primary's */
    vkprof_context ctx = lyr_family_ctx(d, c->family);
    if (ctx != NULL && !c->secondary) {
        if (rec_begins == 0) {
            /* a base of its own: a thread made later at this thread's
             * address never matches a mark of this one */
            rec_begins = (atomic_fetch_add_explicit(&rec_threads, 1, memory_order_relaxed) + 1)
                         << 32;
        }
        c->rec_thread = &rec_begins;
        c->rec_mark = ++rec_begins;
        c->rec_span = vkprof_span_begin_detached(ctx, d->fam[c->family].spans[LYR_SPAN_RECORD]);
    }
}

static void rec_span_end(lyr_device *d, lyr_cmd *c)
{
    if (c->rec_span.start_ns != 0 && c->rec_thread == &rec_begins && c->rec_mark == rec_begins) {
        (void)vkprof_span_end_detached(lyr_family_ctx(d, c->family), &c->rec_span);
    }
    c->rec_span = vkprof__span_empty_();
}

void lyr_cmd_free(void *p)
{
    lyr_cmd *c = p;
    if (c != NULL) {
        free(c->secs);
        free(c->calls);
        free(c);
    }
}

/* The buffer's old recording is retired in the library (reset, free, or a
 * new recording). Under nothing; takes the device lock. */
static void cmd_release(lyr_cmd *c)
{
    if (!c->had_scopes) {
        return;
    }
    vkprof_context ctx = c->rctx;
    if (ctx != NULL) {
        pthread_mutex_lock(&c->dev->lock);
        /* a recording never submitted ran nothing: no sample, no loss (a
         * runtime that frees a buffer it began and never submitted did
         * nothing wrong) */
        if (c->submitted) {
            (void)vkprof_cmd_release(ctx, c->handle);
        } else {
            (void)vkprof_cmd_discard(ctx, c->handle);
        }
        pthread_mutex_unlock(&c->dev->lock);
    }
    c->had_scopes = false;
    c->rec_scopes = false;
}

/* ---- pools and buffers ---------------------------------------------------- */

static VKAPI_ATTR VkResult VKAPI_CALL lyr_CreateCommandPool(VkDevice device,
                                                            const VkCommandPoolCreateInfo *ci,
                                                            const VkAllocationCallbacks *alloc,
                                                            VkCommandPool *out)
{
    lyr_device *d = lyr_device_get(device);
    VkResult vr = NEXT(d, CreateCommandPool)(device, ci, alloc, out);
    if (vr == VK_SUCCESS) {
        lyr_pool *p = calloc(1, sizeof *p);
        if (p != NULL) {
            p->family = ci->queueFamilyIndex;
            if (!lyr_map_put(&d->pools, (uint64_t)*out, p)) {
                free(p);
            }
        }
        (void)lyr_ensure_ctx(d, ci->queueFamilyIndex);
    }
    return vr;
}

typedef struct pool_walk {
    VkCommandPool pool;
    lyr_cmd **list;
    uint32_t n, cap;
} pool_walk;

static void walk_pool(uint64_t key, void *val, void *user)
{
    (void)key;
    pool_walk *w = user;
    lyr_cmd *c = val;
    if (c->pool != w->pool) {
        return;
    }
    if (w->n == w->cap) {
        uint32_t cap = w->cap ? w->cap * 2 : 64;
        lyr_cmd **l = realloc(w->list, cap * sizeof *l);
        if (l == NULL) {
            return;
        }
        w->list = l;
        w->cap = cap;
    }
    w->list[w->n++] = c;
}

static pool_walk pool_buffers(VkCommandPool pool)
{
    pool_walk w = {pool, NULL, 0, 0};
    lyr_map_each(&lyr_cmds, walk_pool, &w);
    return w;
}

static VKAPI_ATTR void VKAPI_CALL lyr_DestroyCommandPool(VkDevice device, VkCommandPool pool,
                                                         const VkAllocationCallbacks *alloc)
{
    lyr_device *d = lyr_device_get(device);
    if (pool != VK_NULL_HANDLE) {
        pool_walk w = pool_buffers(pool);
        for (uint32_t i = 0; i < w.n; i++) {
            if (w.list[i]->dev != d) {
                continue;
            }
            cmd_release(w.list[i]);
            lyr_cmd_free(lyr_map_take(&lyr_cmds, (uint64_t)(uintptr_t)w.list[i]->handle));
        }
        free(w.list);
        free(lyr_map_take(&d->pools, (uint64_t)pool));
    }
    NEXT(d, DestroyCommandPool)(device, pool, alloc);
}

static VKAPI_ATTR VkResult VKAPI_CALL lyr_ResetCommandPool(VkDevice device, VkCommandPool pool,
                                                           VkCommandPoolResetFlags flags)
{
    lyr_device *d = lyr_device_get(device);
    pool_walk w = pool_buffers(pool);
    for (uint32_t i = 0; i < w.n; i++) {
        if (w.list[i]->dev == d) {
            cmd_release(w.list[i]);
            w.list[i]->nsecs = 0;
        }
    }
    free(w.list);
    return NEXT(d, ResetCommandPool)(device, pool, flags);
}

static VKAPI_ATTR VkResult VKAPI_CALL lyr_AllocateCommandBuffers(
    VkDevice device, const VkCommandBufferAllocateInfo *ai, VkCommandBuffer *out)
{
    lyr_device *d = lyr_device_get(device);
    VkResult vr = NEXT(d, AllocateCommandBuffers)(device, ai, out);
    if (vr != VK_SUCCESS) {
        return vr;
    }
    lyr_pool *p = lyr_map_get(&d->pools, (uint64_t)ai->commandPool);
    for (uint32_t i = 0; i < ai->commandBufferCount; i++) {
        lyr_cmd *c = calloc(1, sizeof *c);
        if (c == NULL) {
            continue;
        }
        c->handle = out[i];
        c->dev = d;
        c->pool = ai->commandPool;
        c->family = p != NULL ? p->family : UINT32_MAX;
        c->secondary = ai->level == VK_COMMAND_BUFFER_LEVEL_SECONDARY;
        c->pipe_phase = LYR_NO_PHASE;
        c->qlabel_phase = LYR_NO_PHASE;
        lyr_cmd_free(lyr_map_take(&lyr_cmds, (uint64_t)(uintptr_t)out[i])); /* a stale entry */
        if (!lyr_map_put(&lyr_cmds, (uint64_t)(uintptr_t)out[i], c)) {
            free(c);
        }
    }
    return vr;
}

static VKAPI_ATTR void VKAPI_CALL lyr_FreeCommandBuffers(VkDevice device, VkCommandPool pool,
                                                         uint32_t count, const VkCommandBuffer *cbs)
{
    lyr_device *d = lyr_device_get(device);
    for (uint32_t i = 0; i < count; i++) {
        if (cbs[i] == VK_NULL_HANDLE) {
            continue;
        }
        lyr_cmd *c = cmd_get(cbs[i]);
        if (c != NULL) {
            cmd_release(c);
            lyr_cmd_free(lyr_map_take(&lyr_cmds, (uint64_t)(uintptr_t)cbs[i]));
        }
    }
    NEXT(d, FreeCommandBuffers)(device, pool, count, cbs);
}

static VKAPI_ATTR VkResult VKAPI_CALL lyr_ResetCommandBuffer(VkCommandBuffer cb,
                                                             VkCommandBufferResetFlags flags)
{
    lyr_cmd *c = cmd_get(cb);
    lyr_device *d = cmd_dev(c, cb);
    if (c != NULL) {
        cmd_release(c);
        c->nsecs = 0;
    }
    return NEXT(d, ResetCommandBuffer)(cb, flags);
}

/* ---- scopes ---------------------------------------------------------------- */

static bool may_stamp(lyr_device *d, uint32_t family)
{
    const lyr_family *f = &d->fam[family];
    /* without host resets the library records vkCmdResetQueryPool, which a
     * transfer-only family does not support */
    return d->host_reset || (f->flags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)) != 0;
}

/* What a begin's result means for the recording: a scope (true), or why
 * not. With rotation, VKPROF_DISABLED is a call outside this step's window
 * that the library keeps on the buffer's open stack (*end_left: its end
 * must follow, and may stamp the window's first boundary): the buffer is
 * one with scopes, told to the library at its submit. */
static bool begun(lyr_cmd *c, vkprof_result r, int *why, bool *end_left)
{
    *end_left = false;
    if (r == VKPROF_DISABLED && lyr_cfg.rotate > 0) {
        *why = LYR_UNTIMED_not_in_window;
        *end_left = true;
    } else if (r != VKPROF_OK) {
        *why = LYR_UNTIMED_refused;
        return false;
    }
    c->had_scopes = true;
    c->rec_scopes = true;
    return r == VKPROF_OK;
}

static bool scope_begin(lyr_cmd *c, vkprof_context ctx, uint32_t phase, int *why)
{
    if (phase == LYR_NO_PHASE) {
        *why = LYR_UNTIMED_phase_table_full;
        return false;
    }
    bool end_left;
    return begun(c, vkprof_cmd_begin(ctx, c->handle, phase), why, &end_left);
}

/* A dispatch's scope (dispatch mode): as scope_begin, through the
 * library's short path for a call with nothing inside it. With rotation, a
 * dispatch the window leaves out is only numbered there: nothing of it is
 * kept for the buffer, no end follows, and the layer counts it in the
 * recording's calls, handed to the library at each execution (count_exec),
 * as a left-out recording's are. */
static bool dispatch_begin(lyr_cmd *c, vkprof_context ctx, uint32_t phase, int *why, bool *end_left)
{
    *end_left = false;
    if (phase == LYR_NO_PHASE) {
        *why = LYR_UNTIMED_phase_table_full;
        return false;
    }
    bool left_out = false;
    vkprof_result r = vkprof_cmd_begin_leaf(ctx, c->handle, phase, &left_out);
    if (left_out) {
        *why = LYR_UNTIMED_not_in_window;
        calls_add(c, phase);
        return false;
    }
    return begun(c, r, why, end_left);
}

/* The end of a label region's or a command buffer's scope: while tracing,
 * the number of dispatches recorded in it (this buffer's own; a secondary's
 * are not counted). */
static void region_end(vkprof_context ctx, VkCommandBuffer cb, uint32_t phase, uint64_t dispatches)
{
    if (vkprof_tracing(ctx)) {
        char v[24];
        snprintf(v, sizeof v, "%llu", (unsigned long long)dispatches);
        const vkprof_arg a = {"dispatches", v};
        (void)vkprof_cmd_end_args(ctx, cb, phase, &a, 1);
    } else {
        (void)vkprof_cmd_end(ctx, cb, phase);
    }
}

/* The phase of a command buffer's own scope: its name in --mode cmdbuf;
 * beside the rotating window, the one outer phase (stamped every step, no
 * part of the split: the GPU's busy time, issue 26) */
static uint32_t buffer_phase(lyr_device *d, const lyr_cmd *c, vkprof_context ctx)
{
    if (lyr_cfg.mode == LYR_MODE_CMDBUF) {
        return lyr_phase(d, ctx, c->name[0] ? c->name : "command_buffer");
    }
    _Atomic uint32_t *cache = &d->fam[c->family].outer_phase[ctx != lyr_family_ctx(d, c->family)];
    uint32_t phase = atomic_load_explicit(cache, memory_order_acquire);
    if (phase != LYR_NO_PHASE) {
        return phase;
    }
    phase = lyr_phase(d, ctx, LYR_OUTER_PHASE);
    if (phase != LYR_NO_PHASE && vkprof_phase_flags(ctx, phase) == 0) {
        (void)vkprof_set_phase_flags(ctx, phase, VKPROF_PHASE_FLAG_OUTER);
    }
    atomic_store_explicit(cache, phase, memory_order_release);
    return phase;
}

/* Does this recording's step stamp its buffers' busy scopes? Every step,
 * or with VKPROF_LAYER_BUSY_EVERY=N one step in N, in a step of its own:
 * its dispatches are counted, not stamped (issue 26: each stamp a step
 * costs; the buffers then run as in flow). Which steps: at random (a hash
 * of the step's number), never by a period: llama.cpp's decode alternates
 * a step of 261 dispatches with one of none, and every 4th step would be
 * an empty one, its buffers' mean then standing for all of them. Never the
 * first step, which holds the phases' first calls (the window stamps them);
 * always the second, so that a run of a few steps has its busy time too
 * (with N = 8 the hash's first pick is step 17). */
static bool busy_step(const lyr_cmd *c)
{
    return lyr_cfg.busy_every <= 1 || c->cost_step == 1 ||
           (c->cost_step > 0 &&
            lyr_mix64(c->cost_step ^ UINT64_C(0x62757379)) % lyr_cfg.busy_every == 0);
}

static VKAPI_ATTR VkResult VKAPI_CALL lyr_BeginCommandBuffer(VkCommandBuffer cb,
                                                             const VkCommandBufferBeginInfo *bi)
{
    lyr_cmd *c = cmd_get(cb);
    lyr_device *d = cmd_dev(c, cb);
    if (c == NULL || c->family >= d->nfamilies) {
        return NEXT(d, BeginCommandBuffer)(cb, bi);
    }
    /* the host time of this recording starts here, the layer's own work in
     * it included: what the app's recording thread spends */
    const uint64_t rec_t0 = d->intercept ? vkprof_host_now_ns() : 0;
    cmd_release(c); /* the old recording (a Begin resets the buffer) */
    c->nsecs = 0;
    c->depth = 0;
    c->cmdbuf_scoped = false;
    c->region_why = -1;
    c->pipe = NULL;
    c->pipe_phase = LYR_NO_PHASE;
    c->no_scopes = c->secondary && bi != NULL &&
                   (bi->flags & VK_COMMAND_BUFFER_USAGE_RENDER_PASS_CONTINUE_BIT) != 0;
    lyr_family *f = &d->fam[c->family];
    uint64_t submits = atomic_load_explicit(&f->submits, memory_order_relaxed);
    /* A simultaneous-use buffer may run again while pending; the library's
     * host resets before each execution would then reset queries in use
     * (invalid), so with host resets such a buffer is not timed, and its
     * scopes are counted as untimed for that reason. */
    c->simultaneous = bi != NULL && (bi->flags & VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT) != 0;
    vkprof_context ctx = c->simultaneous && d->host_reset ? lyr_ensure_sim_ctx(d, c->family)
                                                          : lyr_family_ctx(d, c->family);
    c->rctx = ctx;
    c->submitted = false;
    c->n_dispatch = c->n_timed = 0;
    memset(c->n_untimed, 0, sizeof c->n_untimed);
    /* the cost probe's state of the step it is recorded in (whatever else
     * leaves it untimed: the probe compares steps, not buffers) */
    c->cost_step = atomic_load_explicit(&d->steps, memory_order_relaxed);
    c->cost_off = lyr_cost_off(c->cost_step, lyr_cfg.cost_block);
    /* why this recording stamps nothing, when it does not */
    c->untimed_why = !d->intercept                           ? LYR_UNTIMED_layer_off
                     : c->simultaneous && ctx == NULL        ? LYR_UNTIMED_simultaneous_use
                     : !vkprof_active(ctx)                   ? LYR_UNTIMED_family_untimed
                     : c->no_scopes                          ? LYR_UNTIMED_render_pass_continue
                     : !may_stamp(d, c->family)              ? LYR_UNTIMED_family_untimed
                     : !lyr_sampled(submits, lyr_cfg.sample) ? LYR_UNTIMED_not_sampled
                     : c->cost_off                           ? LYR_UNTIMED_cost_probe
                                                             : -1;
    c->timed = c->untimed_why < 0;
    /* left out by the layer's sampling or the cost probe (the family is
     * timed): its calls are counted as a timed recording would make them
     * (dispatches, label segments or the buffer), so the estimates cover it */
    c->counting =
        c->untimed_why == LYR_UNTIMED_not_sampled || c->untimed_why == LYR_UNTIMED_cost_probe;
    c->label_counted = 0;
    c->buffer_left_out = false;
    c->window_off = false;
    calls_clear(c);
    c->qlabel_phase = LYR_NO_PHASE;
    if ((c->timed || c->counting) &&
        atomic_load_explicit(&f->qlabel_gen, memory_order_acquire) != 0) {
        c->qlabel_phase = lyr_queue_label_phase(d, c->family, ctx);
    }
    VkResult vr = NEXT(d, BeginCommandBuffer)(cb, bi);
    c->rec_t0 = vr == VK_SUCCESS ? rec_t0 : 0;
    rec_span_begin(d, c, vr == VK_SUCCESS && rec_t0 != 0);
    if (vr == VK_SUCCESS && c->timed && lyr_buffer_scopes() && !c->secondary && !busy_step(c)) {
        /* a window step (busy_every): the buffer's scope is left out, counted */
        uint32_t phase = buffer_phase(d, c, ctx);
        calls_add(c, phase);
        c->buffer_left_out = phase < VKPROF_MAX_PHASES;
    } else if (vr == VK_SUCCESS && c->timed && lyr_buffer_scopes() && !c->secondary) {
        uint32_t phase = buffer_phase(d, c, ctx);
        c->buf_phase = phase;
        int why = -1;
        c->cmdbuf_scoped = scope_begin(c, ctx, phase, &why);
        c->region_why = why;
        /* a busy step of its own (busy_every): no window inside it */
        c->window_off = lyr_cfg.busy_every > 1;
    } else if (vr == VK_SUCCESS && c->counting && lyr_buffer_scopes() && !c->secondary) {
        uint32_t phase = buffer_phase(d, c, ctx);
        calls_add(c, phase); /* the buffer's scope, not stamped */
        c->buffer_left_out = phase < VKPROF_MAX_PHASES && c->counting;
    }
    return vr;
}

static VKAPI_ATTR VkResult VKAPI_CALL lyr_EndCommandBuffer(VkCommandBuffer cb)
{
    lyr_cmd *c = cmd_get(cb);
    lyr_device *d = cmd_dev(c, cb);
    const uint64_t recorded = c != NULL ? c->n_dispatch : 0; /* this recording's dispatches */
    if (c != NULL && c->family < d->nfamilies) {
        /* the recording's counts: into the family's recorded ones now, and
         * kept for each submit of it (queue.c counts the executions) */
        lyr_family *f = &d->fam[c->family];
        atomic_fetch_add_explicit(&f->dispatches, c->n_dispatch, memory_order_relaxed);
        atomic_fetch_add_explicit(&f->dispatches_timed, c->n_timed, memory_order_relaxed);
        for (int r = 0; r < LYR_UNTIMED_COUNT; r++) {
            if (c->n_untimed[r] != 0) {
                atomic_fetch_add_explicit(&f->untimed[r], c->n_untimed[r], memory_order_relaxed);
            }
        }
    }
    if (c != NULL && c->timed) {
        vkprof_context ctx = c->rctx;
        /* label regions left open close with the buffer */
        for (uint32_t i = c->depth < LYR_LABEL_DEPTH ? c->depth : LYR_LABEL_DEPTH; i-- > 0;) {
            if (c->label_scoped[i]) {
                region_end(ctx, cb, c->label_phase[i], recorded - c->label_disp[i]);
                c->label_scoped[i] = false;
            }
        }
        if (c->cmdbuf_scoped) {
            region_end(ctx, cb, c->buf_phase, recorded);
            c->cmdbuf_scoped = false;
        }
    }
    VkResult vr = NEXT(d, EndCommandBuffer)(cb);
    if (c != NULL) {
        rec_span_end(d, c);
    }
    if (c != NULL && c->rec_t0 != 0 && c->family < d->nfamilies) {
        const uint64_t t1 = vkprof_host_now_ns();
        lyr_family *f = &d->fam[c->family];
        const uint64_t ns = t1 > c->rec_t0 ? t1 - c->rec_t0 : 0;
        atomic_fetch_add_explicit(&f->record_ns, ns, memory_order_relaxed);
        lyr_cost_host(d, c->cost_step, LYR_COST_RECORD, ns);
        atomic_fetch_add_explicit(&f->recordings, 1, memory_order_relaxed);
        c->rec_t0 = 0;
    }
    return vr;
}

/* ---- pipelines and their names -------------------------------------------- */

#define CACHE_OBJ_NAME UINT64_C(0x80000000)

/* The phase of a pipeline in a family: its debug-utils object name, else
 * the name map's entry for its module hash, else pipeline-<hash>. The
 * result is cached per family until the pipeline is renamed. */
static uint32_t pipe_phase(lyr_device *d, const lyr_cmd *cmd, lyr_pipe *p, bool *from_name)
{
    uint32_t family = cmd->family;
    vkprof_context ctx = cmd->rctx;
    uint32_t slot = family * 2 + (ctx != lyr_family_ctx(d, family));
    if (p == NULL) {
        lyr_family *f = &d->fam[family];
        pthread_mutex_lock(&d->lock);
        uint32_t *u = &f->unknown_phase[slot & 1];
        if (*u == LYR_NO_PHASE) {
            *u = lyr_phase_locked(ctx, "pipeline-unknown");
        }
        uint32_t ph = *u;
        pthread_mutex_unlock(&d->lock);
        *from_name = false;
        return ph;
    }
    uint32_t gen = atomic_load_explicit(&p->gen, memory_order_acquire);
    uint64_t c = atomic_load_explicit(&p->cache[slot], memory_order_acquire);
    if ((c >> 32) == (uint64_t)gen + 1) {
        *from_name = (c & CACHE_OBJ_NAME) != 0;
        uint32_t ph = (uint32_t)(c & 0x7fffffffu);
        return ph == 0x7fffffffu ? LYR_NO_PHASE : ph;
    }
    pthread_mutex_lock(&d->lock);
    gen = atomic_load_explicit(&p->gen, memory_order_acquire);
    char name[32];
    const char *use;
    bool obj = p->name[0] != '\0';
    if (obj) {
        use = p->name;
    } else {
        const char *m = lyr_cfg.names != NULL ? vkl_name_map_find(lyr_cfg.names, p->hash) : NULL;
        if (m != NULL) {
            use = m;
        } else if (p->auto_name[0] != '\0') {
            use = p->auto_name;
        } else {
            vkl_hash_name(p->hash, name);
            use = name;
        }
    }
    uint32_t ph = lyr_phase_locked(ctx, use);
    uint64_t entry = (((uint64_t)gen + 1) << 32) | (obj ? CACHE_OBJ_NAME : 0) |
                     (ph == LYR_NO_PHASE ? 0x7fffffffu : ph);
    atomic_store_explicit(&p->cache[slot], entry, memory_order_release);
    pthread_mutex_unlock(&d->lock);
    *from_name = obj;
    return ph;
}

static VKAPI_ATTR VkResult VKAPI_CALL lyr_CreateShaderModule(VkDevice device,
                                                             const VkShaderModuleCreateInfo *ci,
                                                             const VkAllocationCallbacks *alloc,
                                                             VkShaderModule *out)
{
    lyr_device *d = lyr_device_get(device);
    VkResult vr = NEXT(d, CreateShaderModule)(device, ci, alloc, out);
    if (vr == VK_SUCCESS) {
        lyr_module *m = malloc(sizeof *m);
        if (m != NULL) {
            m->hash = vkl_spirv_hash(ci->pCode, ci->codeSize / 4);
            m->auto_name[0] = '\0';
            lyr_name_source how = LYR_NAME_NONE;
            if (lyr_cfg.auto_names && m->hash != 0) {
                how = lyr_embedded_name(ci->pCode, ci->codeSize, m->hash, m->auto_name,
                                        sizeof m->auto_name);
            }
            lyr_idx_module(how);
            m->nwg = vkl_spirv_workgroups(ci->pCode, ci->codeSize / 4, m->wg, VKL_WG_ENTRIES);
            if (!lyr_map_put(&d->modules, (uint64_t)*out, m)) {
                free(m);
            }
        }
    }
    return vr;
}

static VKAPI_ATTR void VKAPI_CALL lyr_DestroyShaderModule(VkDevice device, VkShaderModule m,
                                                          const VkAllocationCallbacks *alloc)
{
    lyr_device *d = lyr_device_get(device);
    free(lyr_map_take(&d->modules, (uint64_t)m));
    NEXT(d, DestroyShaderModule)(device, m, alloc);
}

/* A pipeline's local size and specialisation constants, as its dispatch
 * args show them (docs/layer.md, "Dispatch args"). */
static void pipe_args(lyr_pipe *p, const lyr_module *mod, const VkPipelineShaderStageCreateInfo *st)
{
    const VkSpecializationInfo *si = st->pSpecializationInfo;
    vkl_spec_entry spec[64];
    uint32_t n = 0;
    for (uint32_t k = 0; si != NULL && si->pMapEntries != NULL && k < si->mapEntryCount && n < 64;
         k++) {
        spec[n++] = (vkl_spec_entry){si->pMapEntries[k].constantID, si->pMapEntries[k].offset,
                                     si->pMapEntries[k].size};
    }
    const void *data = si != NULL ? si->pData : NULL;
    size_t size = si != NULL ? si->dataSize : 0;
    const vkl_workgroup *wg = NULL;
    for (uint32_t e = 0; mod != NULL && e < mod->nwg && wg == NULL; e++) {
        if (st->pName != NULL &&
            strncmp(mod->wg[e].entry, st->pName, sizeof mod->wg[e].entry - 1) == 0) {
            wg = &mod->wg[e];
        }
    }
    if (mod == NULL) {
        snprintf(p->local_size, sizeof p->local_size, "unknown: module not seen");
    } else {
        vkl_workgroup_text(wg, spec, n, data, size, p->local_size, sizeof p->local_size);
    }
    vkl_spec_text(spec, n, data, size, p->spec, sizeof p->spec);
}

static VKAPI_ATTR VkResult VKAPI_CALL lyr_CreateComputePipelines(
    VkDevice device, VkPipelineCache cache, uint32_t count, const VkComputePipelineCreateInfo *ci,
    const VkAllocationCallbacks *alloc, VkPipeline *out)
{
    lyr_device *d = lyr_device_get(device);
    VkResult vr = NEXT(d, CreateComputePipelines)(device, cache, count, ci, alloc, out);
    if (vr < 0 && vr != VK_PIPELINE_COMPILE_REQUIRED) {
        return vr;
    }
    for (uint32_t i = 0; i < count; i++) {
        if (out[i] == VK_NULL_HANDLE) {
            continue;
        }
        lyr_pipe *p = calloc(1, sizeof *p);
        if (p == NULL) {
            continue;
        }
        const VkPipelineShaderStageCreateInfo *st = &ci[i].stage;
        const lyr_module *mod = NULL;
        lyr_module inl;
        if (st->module != VK_NULL_HANDLE) {
            mod = lyr_map_get(&d->modules, (uint64_t)st->module);
            p->hash = mod != NULL ? mod->hash : 0;
            if (mod != NULL) {
                memcpy(p->auto_name, mod->auto_name, sizeof p->auto_name);
            }
        } else {
            /* maintenance5 / graphics_pipeline_library: the module inline */
            for (const VkBaseInStructure *n = st->pNext; n != NULL; n = n->pNext) {
                if (n->sType == VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO) {
                    const VkShaderModuleCreateInfo *m = (const void *)n;
                    p->hash = vkl_spirv_hash(m->pCode, m->codeSize / 4);
                    lyr_name_source how = LYR_NAME_NONE;
                    if (lyr_cfg.auto_names && p->hash != 0) {
                        how = lyr_embedded_name(m->pCode, m->codeSize, p->hash, p->auto_name,
                                                sizeof p->auto_name);
                    }
                    lyr_idx_module(how);
                    inl.nwg =
                        vkl_spirv_workgroups(m->pCode, m->codeSize / 4, inl.wg, VKL_WG_ENTRIES);
                    mod = &inl;
                }
            }
        }
        pipe_args(p, mod, st);
        free(lyr_map_take(&d->pipes, (uint64_t)out[i]));
        if (!lyr_map_put(&d->pipes, (uint64_t)out[i], p)) {
            free(p);
        }
    }
    return vr;
}

static VKAPI_ATTR void VKAPI_CALL lyr_DestroyPipeline(VkDevice device, VkPipeline pipeline,
                                                      const VkAllocationCallbacks *alloc)
{
    lyr_device *d = lyr_device_get(device);
    free(lyr_map_take(&d->pipes, (uint64_t)pipeline));
    NEXT(d, DestroyPipeline)(device, pipeline, alloc);
}

static VKAPI_ATTR VkResult VKAPI_CALL
lyr_SetDebugUtilsObjectNameEXT(VkDevice device, const VkDebugUtilsObjectNameInfoEXT *info)
{
    lyr_device *d = lyr_device_get(device);
    if (d == NULL || NEXT(d, SetDebugUtilsObjectNameEXT) == NULL) {
        return VK_SUCCESS; /* a device we do not know (asked for through the instance) */
    }
    if (info != NULL && info->objectType == VK_OBJECT_TYPE_PIPELINE) {
        lyr_pipe *p = lyr_map_get(&d->pipes, info->objectHandle);
        if (p != NULL) {
            pthread_mutex_lock(&d->lock);
            snprintf(p->name, sizeof p->name, "%s",
                     info->pObjectName != NULL ? info->pObjectName : "");
            atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
            pthread_mutex_unlock(&d->lock);
        }
    } else if (info != NULL && info->objectType == VK_OBJECT_TYPE_COMMAND_BUFFER) {
        lyr_cmd *c = cmd_get((VkCommandBuffer)(uintptr_t)info->objectHandle);
        if (c != NULL) {
            snprintf(c->name, sizeof c->name, "%s",
                     info->pObjectName != NULL ? info->pObjectName : "");
        }
    }
    return NEXT(d, SetDebugUtilsObjectNameEXT)(device, info);
}

static VKAPI_ATTR void VKAPI_CALL lyr_CmdBindPipeline(VkCommandBuffer cb, VkPipelineBindPoint bp,
                                                      VkPipeline pipeline)
{
    lyr_cmd *c = cmd_get(cb);
    lyr_device *d = cmd_dev(c, cb);
    NEXT(d, CmdBindPipeline)(cb, bp, pipeline);
    if (c != NULL && (c->timed || c->counting) && bp == VK_PIPELINE_BIND_POINT_COMPUTE &&
        lyr_cfg.mode == LYR_MODE_DISPATCH) {
        c->pipe = lyr_map_get(&d->pipes, (uint64_t)pipeline);
        bool from_name = false;
        c->pipe_phase = pipe_phase(d, c, c->pipe, &from_name);
        c->pipe_from_object_name = from_name;
    }
}

/* ---- dispatches -------------------------------------------------------------- */

static inline uint32_t dispatch_phase(lyr_cmd *c)
{
    if (c->depth > 0) {
        uint32_t top = c->depth <= LYR_LABEL_DEPTH ? c->depth - 1 : LYR_LABEL_DEPTH - 1;
        if (c->label_phase[top] != LYR_NO_PHASE) {
            return c->label_phase[top];
        }
    }
    if (c->pipe != NULL) {
        bool from_name = false;
        uint32_t ph = pipe_phase(c->dev, c, c->pipe, &from_name); /* a cache hit */
        if (!from_name && c->qlabel_phase != LYR_NO_PHASE) {
            return c->qlabel_phase;
        }
        return ph;
    }
    return c->pipe_phase;
}

/* "x,y,z" into out (at least 33 bytes): what snprintf("%u,%u,%u") writes,
 * in a third of its time (it is paid on every traced dispatch) */
static void put_xyz(char *out, const uint32_t v[3])
{
    for (int k = 0; k < 3; k++) {
        char tmp[10];
        int n = 0;
        uint32_t x = v[k];
        do {
            tmp[n++] = (char)('0' + x % 10u);
            x /= 10u;
        } while (x != 0);
        while (n > 0) {
            *out++ = tmp[--n];
        }
        *out++ = k < 2 ? ',' : '\0';
    }
}

/* The end of a dispatch's scope: while tracing, with its args (group counts,
 * base, the pipeline's local size and specialisation constants). groups NULL:
 * an indirect dispatch; base NULL: none. */
static void dispatch_end(lyr_cmd *c, vkprof_context ctx, VkCommandBuffer cb, uint32_t phase,
                         const uint32_t *groups, const uint32_t *base)
{
    vkprof_result r;
    if (vkprof_tracing(ctx)) {
        char g[40] = "indirect", b[40];
        vkprof_arg a[VKPROF_GPU_MAX_ARGS];
        uint32_t n = 0;
        if (groups != NULL) {
            put_xyz(g, groups);
        }
        a[n++] = (vkprof_arg){"groups", g};
        if (base != NULL) {
            put_xyz(b, base);
            a[n++] = (vkprof_arg){"base", b};
        }
        const lyr_pipe *p = c->pipe;
        a[n++] = (vkprof_arg){"local_size", p != NULL ? p->local_size : "unknown: no pipeline"};
        if (p != NULL && p->spec[0] != '\0') {
            a[n++] = (vkprof_arg){"spec", p->spec};
        }
        r = vkprof_cmd_end_args(ctx, cb, phase, a, n);
    } else {
        r = vkprof_cmd_end(ctx, cb, phase);
    }
    if (r == VKPROF_OK) {
        c->n_timed++;
    } else {
        c->n_untimed[LYR_UNTIMED_refused]++;
    }
}

/* Label mode times each region's self time (issue 26: ggml nests its labels
 * three deep, submit > node > dispatch, and timing each region whole summed
 * every level: 2.66x the queue's busy time). A dispatch belongs to the
 * innermost timed region open around it; that region's segment opens at its
 * first such dispatch and closes when a nested label begins, when the region
 * ends or with the buffer. So segments never overlap, their sum is the time
 * of the dispatches' stretches, and a label's row is its own time, not its
 * children's. */
static void segment_close(lyr_cmd *c, VkCommandBuffer cb)
{
    const uint32_t n = c->depth < LYR_LABEL_DEPTH ? c->depth : LYR_LABEL_DEPTH;
    for (uint32_t i = 0; i < n; i++) {
        if (c->label_scoped[i]) {
            region_end(c->rctx, cb, c->label_phase[i], c->n_dispatch - c->label_disp[i]);
            c->label_scoped[i] = false;
        }
    }
}

/* Label and cmdbuf modes: is a dispatch (already counted in n_dispatch)
 * inside a timed region? -1 when it is, else why not (the region's scope
 * was refused, or none is open). Label mode opens its region's segment. */
static int region_cover(lyr_cmd *c, VkCommandBuffer cb)
{
    if (lyr_cfg.mode == LYR_MODE_CMDBUF) {
        return c->cmdbuf_scoped     ? -1
               : c->secondary       ? LYR_UNTIMED_no_region
               : c->region_why >= 0 ? c->region_why
                                    : LYR_UNTIMED_no_region;
    }
    const uint32_t n = c->depth < LYR_LABEL_DEPTH ? c->depth : LYR_LABEL_DEPTH;
    for (uint32_t i = n; i-- > 0;) {
        if (c->label_scoped[i]) {
            return -1;
        }
        if (c->label_want[i]) {
            segment_close(c, cb); /* another region's, further out */
            int why = -1;
            c->label_scoped[i] = scope_begin(c, c->rctx, c->label_phase[i], &why);
            c->label_disp[i] = c->n_dispatch - 1;
            return c->label_scoped[i] ? -1 : why;
        }
    }
    return LYR_UNTIMED_no_region;
}

/* A dispatch of a counting recording: the call a timed one would make.
 * Dispatch mode: its phase. Label mode: the segment of the innermost
 * region open around it, as region_cover opens them, counted once until a
 * nested label begins or the region ends. Cmdbuf mode: none (the buffer's
 * call is counted at its begin). */
static void count_dispatch(lyr_cmd *c)
{
    if (lyr_cfg.mode == LYR_MODE_DISPATCH) {
        calls_add(c, dispatch_phase(c));
        return;
    }
    if (lyr_cfg.mode != LYR_MODE_LABEL) {
        return;
    }
    const uint32_t n = c->depth < LYR_LABEL_DEPTH ? c->depth : LYR_LABEL_DEPTH;
    for (uint32_t i = n; i-- > 0;) {
        if (c->label_counted & (1u << i)) {
            return; /* its segment is open: counted */
        }
        if (c->label_want[i]) {
            c->label_counted = 1u << i; /* any other segment, further out, closes */
            calls_add(c, c->label_phase[i]);
            return;
        }
    }
}

#define DISPATCH_BODY(call)                                                                        \
    lyr_cmd *c = cmd_get(cb);                                                                      \
    lyr_device *d = cmd_dev(c, cb);                                                                \
    if (c == NULL) {                                                                               \
        call;                                                                                      \
        return;                                                                                    \
    }                                                                                              \
    c->n_dispatch++;                                                                               \
    if (!c->timed) {                                                                               \
        c->n_untimed[c->untimed_why]++;                                                            \
        if (c->counting) {                                                                         \
            count_dispatch(c);                                                                     \
        }                                                                                          \
        call;                                                                                      \
        return;                                                                                    \
    }                                                                                              \
    if (c->window_off) {                                                                           \
        /* a busy step (busy_every): counted, not stamped */                                       \
        c->n_untimed[LYR_UNTIMED_not_in_window]++;                                                 \
        calls_add(c, dispatch_phase(c));                                                           \
        call;                                                                                      \
        return;                                                                                    \
    }                                                                                              \
    if (lyr_cfg.mode != LYR_MODE_DISPATCH) {                                                       \
        /* inside a timed region (a label's, or the buffer's), or not */                           \
        int why_ = region_cover(c, cb);                                                            \
        if (why_ < 0) {                                                                            \
            c->n_timed++;                                                                          \
        } else {                                                                                   \
            c->n_untimed[why_]++;                                                                  \
        }                                                                                          \
        call;                                                                                      \
        return;                                                                                    \
    }                                                                                              \
    vkprof_context ctx = c->rctx;                                                                  \
    uint32_t phase = dispatch_phase(c);                                                            \
    int why_ = -1;                                                                                 \
    bool end_left_ = false;                                                                        \
    bool scoped = dispatch_begin(c, ctx, phase, &why_, &end_left_);                                \
    call;                                                                                          \
    if (scoped) {                                                                                  \
        dispatch_end(c, ctx, cb, phase, GROUPS, BASE);                                             \
    } else {                                                                                       \
        if (end_left_) {                                                                           \
            (void)vkprof_cmd_end(ctx, cb, phase); /* the left-out call's end */                    \
        }                                                                                          \
        c->n_untimed[why_]++;                                                                      \
    }

static VKAPI_ATTR void VKAPI_CALL lyr_CmdDispatch(VkCommandBuffer cb, uint32_t x, uint32_t y,
                                                  uint32_t z)
{
    const uint32_t groups_[3] = {x, y, z};
#define GROUPS groups_
#define BASE NULL
    DISPATCH_BODY(NEXT(d, CmdDispatch)(cb, x, y, z))
#undef GROUPS
#undef BASE
}

static VKAPI_ATTR void VKAPI_CALL lyr_CmdDispatchBase(VkCommandBuffer cb, uint32_t bx, uint32_t by,
                                                      uint32_t bz, uint32_t x, uint32_t y,
                                                      uint32_t z)
{
    const uint32_t groups_[3] = {x, y, z}, base_[3] = {bx, by, bz};
#define GROUPS groups_
#define BASE base_
    DISPATCH_BODY(NEXT(d, CmdDispatchBase)(cb, bx, by, bz, x, y, z))
#undef GROUPS
#undef BASE
}

static VKAPI_ATTR void VKAPI_CALL lyr_CmdDispatchBaseKHR(VkCommandBuffer cb, uint32_t bx,
                                                         uint32_t by, uint32_t bz, uint32_t x,
                                                         uint32_t y, uint32_t z)
{
    const uint32_t groups_[3] = {x, y, z}, base_[3] = {bx, by, bz};
#define GROUPS groups_
#define BASE base_
    DISPATCH_BODY(NEXT(d, CmdDispatchBaseKHR)(cb, bx, by, bz, x, y, z))
#undef GROUPS
#undef BASE
}

static VKAPI_ATTR void VKAPI_CALL lyr_CmdDispatchIndirect(VkCommandBuffer cb, VkBuffer buf,
                                                          VkDeviceSize offset)
{
#define GROUPS NULL /* the counts are in a buffer, not known on the host */
#define BASE NULL
    DISPATCH_BODY(NEXT(d, CmdDispatchIndirect)(cb, buf, offset))
#undef GROUPS
#undef BASE
}

static VKAPI_ATTR void VKAPI_CALL lyr_CmdExecuteCommands(VkCommandBuffer cb, uint32_t count,
                                                         const VkCommandBuffer *secs)
{
    lyr_cmd *c = cmd_get(cb);
    lyr_device *d = cmd_dev(c, cb);
    NEXT(d, CmdExecuteCommands)(cb, count, secs);
    if (c == NULL) {
        return;
    }
    for (uint32_t i = 0; i < count; i++) {
        if (c->nsecs == c->capsecs) {
            uint32_t cap = c->capsecs ? c->capsecs * 2 : 8;
            VkCommandBuffer *n = realloc(c->secs, cap * sizeof *n);
            if (n == NULL) {
                return;
            }
            c->secs = n;
            c->capsecs = cap;
        }
        c->secs[c->nsecs++] = secs[i];
    }
}

/* ---- labels ------------------------------------------------------------------- */

static VKAPI_ATTR void VKAPI_CALL lyr_CmdBeginDebugUtilsLabelEXT(VkCommandBuffer cb,
                                                                 const VkDebugUtilsLabelEXT *l)
{
    lyr_cmd *c = cmd_get(cb);
    lyr_device *d = cmd_dev(c, cb);
    if (d == NULL || NEXT(d, CmdBeginDebugUtilsLabelEXT) == NULL) {
        return;
    }
    NEXT(d, CmdBeginDebugUtilsLabelEXT)(cb, l);
    if (c == NULL) {
        return;
    }
    if (d->idx != NULL && c->family < d->idx->nfamilies) {
        atomic_fetch_add_explicit(&d->idx->fam[c->family].cmd_labels, 1, memory_order_relaxed);
    }
    if (c->depth < LYR_LABEL_DEPTH) {
        uint32_t i = c->depth;
        if (lyr_cfg.mode == LYR_MODE_LABEL) {
            segment_close(c, cb); /* the enclosing region's self time pauses */
            c->label_counted = 0;
        }
        c->label_scoped[i] = false;
        c->label_want[i] = false;
        c->label_phase[i] = LYR_NO_PHASE;
        if ((c->timed || c->counting) && lyr_cfg.mode != LYR_MODE_CMDBUF && l != NULL &&
            l->pLabelName != NULL && l->pLabelName[0] != '\0') {
            c->label_phase[i] = lyr_phase(d, c->rctx, l->pLabelName);
            c->label_disp[i] = c->n_dispatch;
            /* its segment opens at its first dispatch (region_cover) */
            c->label_want[i] = lyr_cfg.mode == LYR_MODE_LABEL;
            if (c->label_want[i] && c->label_phase[i] != LYR_NO_PHASE) {
                /* the region it is nested in, for each region's total: its
                 * own time and its nested regions' (one load when known) */
                uint32_t parent = VKPROF_PHASE_NO_PARENT;
                for (uint32_t k = i; k-- > 0;) {
                    if (c->label_want[k] && c->label_phase[k] != LYR_NO_PHASE) {
                        parent = c->label_phase[k];
                        break;
                    }
                }
                (void)vkprof_set_phase_parent(c->rctx, c->label_phase[i], parent);
            }
        }
    }
    c->depth++;
}

static VKAPI_ATTR void VKAPI_CALL lyr_CmdEndDebugUtilsLabelEXT(VkCommandBuffer cb)
{
    lyr_cmd *c = cmd_get(cb);
    lyr_device *d = cmd_dev(c, cb);
    if (d == NULL || NEXT(d, CmdEndDebugUtilsLabelEXT) == NULL) {
        return;
    }
    if (c != NULL && c->depth > 0) {
        c->depth--;
        if (c->depth < LYR_LABEL_DEPTH) {
            c->label_counted &= ~(1u << c->depth);
        }
        if (c->depth < LYR_LABEL_DEPTH && c->label_scoped[c->depth]) {
            region_end(c->rctx, cb, c->label_phase[c->depth],
                       c->n_dispatch - c->label_disp[c->depth]);
            c->label_scoped[c->depth] = false;
        }
    }
    NEXT(d, CmdEndDebugUtilsLabelEXT)(cb);
}

#define P(name)                                                                                    \
    {                                                                                              \
        "vk" #name, (PFN_vkVoidFunction)lyr_##name, offsetof(lyr_next, name)                       \
    }
const lyr_proc lyr_record_procs[] = {
    P(CreateCommandPool),
    P(DestroyCommandPool),
    P(ResetCommandPool),
    P(AllocateCommandBuffers),
    P(FreeCommandBuffers),
    P(BeginCommandBuffer),
    P(EndCommandBuffer),
    P(ResetCommandBuffer),
    P(CmdBindPipeline),
    P(CmdDispatch),
    P(CmdDispatchBase),
    P(CmdDispatchBaseKHR),
    P(CmdDispatchIndirect),
    P(CmdExecuteCommands),
    P(CmdBeginDebugUtilsLabelEXT),
    P(CmdEndDebugUtilsLabelEXT),
    P(SetDebugUtilsObjectNameEXT),
    P(CreateShaderModule),
    P(DestroyShaderModule),
    P(CreateComputePipelines),
    P(DestroyPipeline),
    {NULL, NULL, 0},
};
