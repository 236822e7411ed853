/* Queues: submits (told to the library first), waits (collect on success,
 * close a step when every submitted batch has retired), queue labels (names
 * and step marks), and the host spans of submits and waits. */
#include "layer.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEXT(d, name) ((d)->next.name)

void lyr_register_queue(lyr_device *d, VkQueue q, uint32_t family)
{
    if (q == VK_NULL_HANDLE) {
        return;
    }
    pthread_mutex_lock(&d->lock);
    uint32_t n = atomic_load(&d->nqueues);
    bool found = false;
    for (uint32_t i = 0; i < n && !found; i++) {
        found = atomic_load(&d->queues[i].handle) == (uint64_t)(uintptr_t)q;
    }
    if (!found && n < LYR_MAX_QUEUES) {
        d->queues[n].family = family;
        d->queues[n].depth = 0;
        atomic_store(&d->queues[n].handle, (uint64_t)(uintptr_t)q);
        atomic_store_explicit(&d->nqueues, n + 1, memory_order_release);
    }
    if (family < d->nfamilies) {
        d->fam[family].used = true;
    }
    pthread_mutex_unlock(&d->lock);
}

static lyr_queue *queue_get(lyr_device *d, VkQueue q)
{
    uint32_t n = atomic_load_explicit(&d->nqueues, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++) {
        if (atomic_load_explicit(&d->queues[i].handle, memory_order_relaxed) ==
            (uint64_t)(uintptr_t)q) {
            return &d->queues[i];
        }
    }
    return NULL;
}

static VKAPI_ATTR void VKAPI_CALL lyr_GetDeviceQueue(VkDevice device, uint32_t family,
                                                     uint32_t index, VkQueue *out)
{
    lyr_device *d = lyr_device_get(device);
    NEXT(d, GetDeviceQueue)(device, family, index, out);
    lyr_register_queue(d, *out, family);
}

static VKAPI_ATTR void VKAPI_CALL lyr_GetDeviceQueue2(VkDevice device,
                                                      const VkDeviceQueueInfo2 *info, VkQueue *out)
{
    lyr_device *d = lyr_device_get(device);
    NEXT(d, GetDeviceQueue2)(device, info, out);
    lyr_register_queue(d, *out, info->queueFamilyIndex);
}

/* ---- host time (issue 26) ------------------------------------------------ */

/* Time since t0 into the device's host time of kind k (one call). */
static void host_add(lyr_device *d, int k, uint64_t t0)
{
    const uint64_t t1 = vkprof_host_now_ns(), ns = t1 > t0 ? t1 - t0 : 0;
    atomic_fetch_add_explicit(&d->host_ns[k], ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&d->host_calls[k], 1, memory_order_relaxed);
    lyr_cost_host(d, atomic_load_explicit(&d->steps, memory_order_relaxed), k, ns);
}

/* ---- host spans -------------------------------------------------------- */

typedef struct spans {
    vkprof_span s[LYR_MAX_FAMILIES];
    uint32_t n;
} spans;

static void spans_start(lyr_device *d, int kind, spans *sp)
{
    sp->n = d->nfamilies;
    for (uint32_t f = 0; f < sp->n; f++) {
        vkprof_context ctx = lyr_family_ctx(d, f);
        sp->s[f] =
            ctx != NULL ? vkprof_span_begin(ctx, d->fam[f].spans[kind]) : vkprof__span_empty_();
    }
}

static void spans_end(lyr_device *d, spans *sp)
{
    for (uint32_t f = sp->n; f-- > 0;) {
        if (sp->s[f].start_ns != 0) {
            (void)vkprof_span_end(lyr_family_ctx(d, f), &sp->s[f]);
        }
    }
}

/* ---- collection and steps ---------------------------------------------- */

void lyr_collect_all(lyr_device *d)
{
    const uint64_t t0 = vkprof_host_now_ns();
    /* the index first: every dispatch a collection can fold was submitted,
     * so counted executed, before it; a process that dies in the collection
     * never has more timed events than executed dispatches */
    lyr_idx_sync(d);
    pthread_mutex_lock(&d->lock);
    if (!d->finished) {
        for (uint32_t f = 0; f < d->nfamilies; f++) {
            vkprof_context ctx = lyr_family_ctx(d, f);
            vkprof_context sim = atomic_load(&d->fam[f].ctx_sim);
            if (ctx != NULL) {
                (void)vkprof_collect(ctx);
            }
            if (sim != NULL) {
                (void)vkprof_collect(sim);
            }
        }
    }
    atomic_store_explicit(&d->last_collect_ns, vkprof_host_now_ns(), memory_order_relaxed);
    pthread_mutex_unlock(&d->lock);
    host_add(d, LYR_HOST_collect, t0);
}

/* A collection after one of the app's waits: counted as such (first, so
 * that the index, synced at its start, has the count should the process
 * die in it). */
static void collect_after_wait(lyr_device *d)
{
    atomic_fetch_add_explicit(&d->collects_after_waits, 1, memory_order_relaxed);
    lyr_collect_all(d);
}

/* The cost probe: the wall time of the step that ends now, into the sums of
 * its state (profiling on or off while it was recorded: lyr_cost_off of its
 * number). Steps of the first pair of blocks (warm-up) are not counted. */
static void cost_step(lyr_device *d)
{
    const uint32_t b = lyr_cfg.cost_block;
    const uint64_t now = vkprof_host_now_ns();
    const uint64_t last = atomic_exchange_explicit(&d->cost_last_ns, now, memory_order_relaxed);
    const uint64_t step = atomic_load(&d->steps); /* the one ending, 0-based */
    if (last != 0 && step >= 2 * (uint64_t)b && now > last) {
        lyr_cost_sum *s = &d->cost[lyr_cost_off(step, b) ? 1 : 0];
        const uint64_t dt = now - last, us = dt / 1000;
        atomic_fetch_add_explicit(&s->steps, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->sum_ns, dt, memory_order_relaxed);
        /* a step under 4.3 s: its square fits; longer ones saturate it */
        atomic_fetch_add_explicit(&s->sumsq_us2,
                                  us < (UINT64_C(1) << 32) ? us * us : UINT64_MAX / 2,
                                  memory_order_relaxed);
        /* by pairs of blocks: the two blocks of a pair are neighbours in
         * time and hold the same mix of the app's steps (a graph step, a
         * copy step), so the difference of their means varies far less than
         * single steps do; a pair counts at its last step */
        const int off = lyr_cost_off(step, b) ? 1 : 0;
        pthread_mutex_lock(&d->cost_lock);
        d->cost_blk_n[off]++;
        d->cost_blk_ns[off] += dt;
        if ((step + 1) % (2 * (uint64_t)b) == 0) {
            if (d->cost_blk_n[0] > 0 && d->cost_blk_n[1] > 0) {
                const double m0 = (double)d->cost_blk_ns[0] / (double)d->cost_blk_n[0] / 1e3;
                const double m1 = (double)d->cost_blk_ns[1] / (double)d->cost_blk_n[1] / 1e3;
                d->cost_pairs++;
                d->cost_d_sum_us += m0 - m1;
                d->cost_d_sq_us2 += (m0 - m1) * (m0 - m1);
                d->cost_off_sum_us += m1;
            }
            d->cost_blk_n[0] = d->cost_blk_n[1] = d->cost_blk_ns[0] = d->cost_blk_ns[1] = 0;
        }
        pthread_mutex_unlock(&d->cost_lock);
    }
}

static void step_all(lyr_device *d)
{
    if (lyr_cfg.cost_block > 0) {
        cost_step(d);
    }
    for (uint32_t f = 0; f < d->nfamilies; f++) {
        vkprof_context ctx = lyr_family_ctx(d, f);
        vkprof_context sim = atomic_load(&d->fam[f].ctx_sim);
        if (ctx != NULL) {
            vkprof_step(ctx);
        }
        if (sim != NULL) {
            vkprof_step(sim);
        }
    }
    atomic_fetch_add(&d->steps, 1);
}

/* Queue work retired: collect; a step closes when every batch submitted so
 * far has retired (all_retired) and there was work since the last step. */
static void on_retired(lyr_device *d, bool all_retired)
{
    collect_after_wait(d);
    if (lyr_cfg.steps == LYR_STEPS_WAIT && all_retired && atomic_exchange(&d->since_step, 0) > 0) {
        step_all(d);
    }
    lyr_idx_sync(d); /* the index follows the collections */
}

/* on_retired in a span of its own ("vkprof layer: collect"), after the app's
 * call's span has ended: the layer's reading of results is its cost, never
 * billed to the app's wait (issue 26). */
static void on_retired_span(lyr_device *d, bool all_retired)
{
    spans sp;
    spans_start(d, LYR_SPAN_COLLECT, &sp);
    on_retired(d, all_retired);
    spans_end(d, &sp);
}

/* ---- submits ------------------------------------------------------------- */

typedef struct cmd_list {
    VkCommandBuffer stack[64];
    VkCommandBuffer *v;
    uint32_t n, cap;
} cmd_list;

/* Every occurrence counts: a buffer in two batches of one submit (simultaneous
 * use) runs twice, and the library counts what it cannot read apart as lost. */
static void list_add(cmd_list *l, VkCommandBuffer cb)
{
    if (l->n == l->cap) {
        uint32_t cap = l->cap * 2;
        VkCommandBuffer *n = malloc(cap * sizeof *n);
        if (n == NULL) {
            return;
        }
        memcpy(n, l->v, l->n * sizeof *n);
        if (l->v != l->stack) {
            free(l->v);
        }
        l->v = n;
        l->cap = cap;
    }
    l->v[l->n++] = cb;
}

/* One more execution of a buffer's recording: its dispatches, timed or
 * not (why), into its family's counts; the recording is now submitted (a
 * reset or free of it is no discard). */
static void count_exec(lyr_cmd *c)
{
    c->submitted = true;
    /* the cost probe: a recording run in a step of the other state (made in
     * one block, submitted in another) blurs the two states */
    if (lyr_cfg.cost_block > 0 && c->n_dispatch > 0) {
        atomic_fetch_add_explicit(&c->dev->cost_execs, 1, memory_order_relaxed);
        if (lyr_cost_off(atomic_load_explicit(&c->dev->steps, memory_order_relaxed),
                         lyr_cfg.cost_block) != c->cost_off) {
            atomic_fetch_add_explicit(&c->dev->cost_mixed, 1, memory_order_relaxed);
        }
    }
    /* the calls of the recording the library never saw (a recording left
     * out by the sampling or the probe, or dispatches the rotating window
     * left out): they ran once more, unstamped (the phases' estimates cover
     * them) */
    if (c->calls != NULL) {
        for (uint32_t w = 0; w < VKPROF_MAX_PHASES / 64; w++) {
            for (uint64_t bits = c->calls->touched[w]; bits != 0; bits &= bits - 1) {
                uint32_t ph = w * 64 + (uint32_t)__builtin_ctzll(bits);
                (void)vkprof_count_calls(c->rctx, ph, c->calls->n[ph]);
            }
        }
    }
    if (c->family >= c->dev->nfamilies) {
        return;
    }
    lyr_family *f = &c->dev->fam[c->family];
    if (c->buffer_left_out) {
        atomic_fetch_add_explicit(&f->buffers_left_out, 1, memory_order_relaxed);
    }
    uint64_t untimed[LYR_UNTIMED_COUNT] = {0};
    const uint64_t n =
        atomic_fetch_add_explicit(&f->exec_dispatches, c->n_dispatch, memory_order_relaxed) +
        c->n_dispatch;
    const uint64_t t =
        atomic_fetch_add_explicit(&f->exec_timed, c->n_timed, memory_order_relaxed) + c->n_timed;
    for (int r = 0; r < LYR_UNTIMED_COUNT; r++) {
        if (c->n_untimed[r] != 0) {
            untimed[r] = atomic_fetch_add_explicit(&f->exec_untimed[r], c->n_untimed[r],
                                                   memory_order_relaxed) +
                         c->n_untimed[r];
        }
    }
    /* into the mapped index at once: the library may collect (and write
     * events) inside this very submit, and a process that dies next must
     * never show more timed events than executed dispatches */
    lyr_idx_device *e = c->dev->idx;
    if (e != NULL && c->family < e->nfamilies) {
        lyr_idx_family *x = &e->fam[c->family];
        lyr_idx_max(&x->exec_dispatches, n);
        lyr_idx_max(&x->exec_timed, t);
        for (int r = 0; r < LYR_UNTIMED_COUNT; r++) {
            if (untimed[r] != 0) {
                lyr_idx_max(&x->exec_untimed[r], untimed[r]);
            }
        }
        /* and what was recorded so far (each buffer is recorded before it runs) */
        lyr_idx_max(&x->dispatches, atomic_load_explicit(&f->dispatches, memory_order_relaxed));
        lyr_idx_max(&x->dispatches_timed,
                    atomic_load_explicit(&f->dispatches_timed, memory_order_relaxed));
    }
}

/* l[0]: buffers recorded into the family's context, l[1]: into its ctx_sim */
static void list_add_cmd(cmd_list *l, VkCommandBuffer cb, bool *work)
{
    if (cb == VK_NULL_HANDLE) {
        return;
    }
    *work = true;
    lyr_cmd *c = lyr_map_get(&lyr_cmds, (uint64_t)(uintptr_t)cb);
    if (c == NULL) {
        return;
    }
    count_exec(c);
    if (c->rec_scopes) {
        list_add(&l[c->rctx != lyr_family_ctx(c->dev, c->family)], cb);
    }
    /* secondaries executed by it run with it */
    for (uint32_t i = 0; i < c->nsecs; i++) {
        lyr_cmd *s = lyr_map_get(&lyr_cmds, (uint64_t)(uintptr_t)c->secs[i]);
        if (s != NULL) {
            count_exec(s);
        }
        if (s != NULL && s->rec_scopes) {
            list_add(&l[s->rctx != lyr_family_ctx(s->dev, s->family)], c->secs[i]);
        }
    }
}

static lyr_fence *fence_entry(lyr_device *d, VkFence fence)
{
    lyr_fence *fe = lyr_map_get(&d->fences, (uint64_t)fence);
    if (fe == NULL) {
        fe = calloc(1, sizeof *fe);
        if (fe != NULL && !lyr_map_put(&d->fences, (uint64_t)fence, fe)) {
            free(fe);
            fe = NULL;
        }
    }
    return fe;
}

typedef struct submit_state {
    lyr_device *d;
    lyr_queue *q;
    vkprof_context ctx;
    uint32_t family;
    cmd_list list[2];
    bool work;
    vkprof_span span;
} submit_state;

/* Results are read after the app's waits, not in its submits: a read while
 * earlier work runs may wait for that work (lavapipe's waits for the device
 * to go idle), and it held the app's vkQueueSubmit for as long (issue 26).
 * Only an app that never waits in a call the layer sees (it polls memory,
 * or a semaphore's counter) leaves results unread; then a submit collects
 * once nothing was read for LYR_COLLECT_STALE_NS, so that a process stopped
 * later still has them. Not under d->lock. */
static void submit_collect_stale(submit_state *s)
{
    lyr_device *d = s->d;
    if (s->ctx == NULL || s->list[0].n + s->list[1].n == 0) {
        return;
    }
    const uint64_t now = vkprof_host_now_ns();
    const uint64_t last = atomic_load_explicit(&d->last_collect_ns, memory_order_relaxed);
    if (last == 0) {
        /* the first submit: the clock starts here */
        uint64_t zero = 0;
        (void)atomic_compare_exchange_strong(&d->last_collect_ns, &zero, now);
        return;
    }
    if (now < last || now - last < LYR_COLLECT_STALE_NS) {
        return;
    }
    vkprof_span cs = vkprof_span_begin(s->ctx, d->fam[s->family].spans[LYR_SPAN_COLLECT]);
    atomic_fetch_add_explicit(&d->collects_at_submits, 1, memory_order_relaxed); /* as above */
    lyr_collect_all(d);
    if (cs.start_ns != 0) {
        (void)vkprof_span_end(s->ctx, &cs);
    }
}

static void submit_begin(submit_state *s, VkQueue queue, VkFence fence)
{
    lyr_device *d = s->d;
    submit_collect_stale(s);
    const uint64_t own0 = vkprof_host_now_ns();
    pthread_mutex_lock(&d->lock);
    /* the layer's own work at the submit (vkprof_cmd_submit starts the
     * executions; it reads only a re-submitted buffer's previous run): its
     * span, before the app's vkQueueSubmit span */
    vkprof_span cs = s->ctx != NULL && s->list[0].n > 0
                         ? vkprof_span_begin(s->ctx, d->fam[s->family].spans[LYR_SPAN_SUBMIT_OWN])
                         : vkprof__span_empty_();
    if (s->ctx != NULL && s->list[0].n > 0) {
        (void)vkprof_cmd_submit(s->ctx, queue, s->list[0].n, s->list[0].v);
    }
    vkprof_context sim = s->family < d->nfamilies ? atomic_load(&d->fam[s->family].ctx_sim) : NULL;
    if (sim != NULL && s->list[1].n > 0) {
        (void)vkprof_cmd_submit(sim, queue, s->list[1].n, s->list[1].v);
    }
    if (cs.start_ns != 0) {
        (void)vkprof_span_end(s->ctx, &cs);
    }
    uint64_t seq = atomic_fetch_add(&d->seq, 1) + 1;
    if (fence != VK_NULL_HANDLE) {
        lyr_fence *fe = fence_entry(d, fence);
        if (fe != NULL) {
            atomic_store(&fe->seq, seq);
            atomic_store_explicit(&fe->first_poll_ns, 0, memory_order_relaxed);
            atomic_store(&fe->pending, 1);
        }
    }
    if (s->work) {
        atomic_fetch_add(&d->since_step, 1);
        if (s->family < d->nfamilies) {
            const uint64_t n = atomic_fetch_add(&d->fam[s->family].submits, 1) + 1;
            if (d->idx != NULL && s->family < d->idx->nfamilies) {
                lyr_idx_max(&d->idx->fam[s->family].submits, n); /* as count_exec */
            }
        }
    }
    host_add(d, LYR_HOST_layer_submit, own0);
    s->span = s->ctx != NULL ? vkprof_span_begin(s->ctx, d->fam[s->family].spans[LYR_SPAN_SUBMIT])
                             : vkprof__span_empty_();
    /* the GPU slices of these executions link to this span (the collection
     * above stays outside it) */
    if (s->span.start_ns != 0 && s->list[0].n > 0) {
        (void)vkprof_cmd_submit_flow(s->ctx, s->list[0].n, s->list[0].v);
    }
}

static void submit_end(submit_state *s)
{
    if (s->span.start_ns != 0) {
        (void)vkprof_span_end(s->ctx, &s->span);
    }
    pthread_mutex_unlock(&s->d->lock);
    for (int i = 0; i < 2; i++) {
        if (s->list[i].v != s->list[i].stack) {
            free(s->list[i].v);
        }
    }
}

static void submit_init(submit_state *s, VkQueue queue)
{
    memset(s, 0, sizeof *s);
    s->d = lyr_device_get(queue);
    s->q = queue_get(s->d, queue);
    s->family = s->q != NULL ? s->q->family : UINT32_MAX;
    s->ctx = s->q != NULL ? lyr_family_ctx(s->d, s->family) : NULL;
    for (int i = 0; i < 2; i++) {
        s->list[i].v = s->list[i].stack;
        s->list[i].cap = 64;
    }
}

static VKAPI_ATTR VkResult VKAPI_CALL lyr_QueueSubmit(VkQueue queue, uint32_t count,
                                                      const VkSubmitInfo *si, VkFence fence)
{
    submit_state s;
    submit_init(&s, queue);
    for (uint32_t b = 0; b < count; b++) {
        for (uint32_t i = 0; i < si[b].commandBufferCount; i++) {
            list_add_cmd(s.list, si[b].pCommandBuffers[i], &s.work);
        }
    }
    submit_begin(&s, queue, fence);
    const uint64_t t0 = vkprof_host_now_ns();
    VkResult vr = NEXT(s.d, QueueSubmit)(queue, count, si, fence);
    host_add(s.d, LYR_HOST_submit, t0);
    submit_end(&s);
    return vr;
}

static VkResult submit2(VkQueue queue, uint32_t count, const VkSubmitInfo2 *si, VkFence fence,
                        bool khr)
{
    submit_state s;
    submit_init(&s, queue);
    for (uint32_t b = 0; b < count; b++) {
        for (uint32_t i = 0; i < si[b].commandBufferInfoCount; i++) {
            list_add_cmd(s.list, si[b].pCommandBufferInfos[i].commandBuffer, &s.work);
        }
    }
    submit_begin(&s, queue, fence);
    const uint64_t t0 = vkprof_host_now_ns();
    VkResult vr = khr ? NEXT(s.d, QueueSubmit2KHR)(queue, count, si, fence)
                      : NEXT(s.d, QueueSubmit2)(queue, count, si, fence);
    host_add(s.d, LYR_HOST_submit, t0);
    submit_end(&s);
    return vr;
}

static VKAPI_ATTR VkResult VKAPI_CALL lyr_QueueSubmit2(VkQueue queue, uint32_t count,
                                                       const VkSubmitInfo2 *si, VkFence fence)
{
    return submit2(queue, count, si, fence, false);
}

static VKAPI_ATTR VkResult VKAPI_CALL lyr_QueueSubmit2KHR(VkQueue queue, uint32_t count,
                                                          const VkSubmitInfo2 *si, VkFence fence)
{
    return submit2(queue, count, si, fence, true);
}

/* ---- waits ------------------------------------------------------------------ */

static VKAPI_ATTR VkResult VKAPI_CALL lyr_WaitForFences(VkDevice device, uint32_t count,
                                                        const VkFence *fences, VkBool32 all,
                                                        uint64_t timeout)
{
    lyr_device *d = lyr_device_get(device);
    spans sp;
    spans_start(d, LYR_SPAN_WAIT_FENCES, &sp);
    const uint64_t t0 = vkprof_host_now_ns();
    VkResult vr = NEXT(d, WaitForFences)(device, count, fences, all, timeout);
    host_add(d, LYR_HOST_wait, t0);
    if (vr == VK_SUCCESS) {
        uint64_t now = atomic_load(&d->seq);
        bool collect = false, last = false;
        for (uint32_t i = 0; i < count; i++) {
            lyr_fence *fe = lyr_map_get(&d->fences, (uint64_t)fences[i]);
            if (fe == NULL || atomic_load(&fe->pending) == 0) {
                continue;
            }
            if (!all && NEXT(d, GetFenceStatus)(device, fences[i]) != VK_SUCCESS) {
                continue;
            }
            if (atomic_exchange(&fe->pending, 0) != 0) {
                collect = true;
                last |= atomic_load(&fe->seq) == now;
            }
        }
        spans_end(d, &sp);
        if (collect) {
            on_retired_span(d, last);
        }
        return vr;
    }
    spans_end(d, &sp);
    return vr;
}

/* The busy-spin path: one lock-free lookup and one load while not signalled;
 * the first success after a submit collects (once per signal). */
static VKAPI_ATTR VkResult VKAPI_CALL lyr_GetFenceStatus(VkDevice device, VkFence fence)
{
    lyr_device *d = lyr_device_get(device);
    VkResult vr = NEXT(d, GetFenceStatus)(device, fence);
    if (vr != VK_SUCCESS) {
        if (vr == VK_NOT_READY) {
            /* the app's spin starts at its first poll that finds the fence
             * unsignalled (a lookup and a load a poll; the clock once) */
            lyr_fence *fw = lyr_map_get(&d->fences, (uint64_t)fence);
            if (fw != NULL && atomic_load_explicit(&fw->pending, memory_order_relaxed) != 0 &&
                atomic_load_explicit(&fw->first_poll_ns, memory_order_relaxed) == 0) {
                atomic_store_explicit(&fw->first_poll_ns, vkprof_host_now_ns(),
                                      memory_order_relaxed);
            }
        }
        return vr;
    }
    lyr_fence *fe = lyr_map_get(&d->fences, (uint64_t)fence);
    if (fe != NULL && atomic_load_explicit(&fe->pending, memory_order_relaxed) != 0 &&
        atomic_exchange(&fe->pending, 0) != 0) {
        const uint64_t p0 = atomic_exchange_explicit(&fe->first_poll_ns, 0, memory_order_relaxed);
        if (p0 != 0) {
            host_add(d, LYR_HOST_spin, p0);
        }
        /* the app's spin is not timed (one load per call); its successful
         * call is marked where it returned, and the collection after it is
         * the layer's own span */
        spans sp;
        spans_start(d, LYR_SPAN_FENCE_STATUS, &sp);
        spans_end(d, &sp);
        on_retired_span(d, atomic_load(&fe->seq) == atomic_load(&d->seq));
    }
    return vr;
}

static VKAPI_ATTR void VKAPI_CALL lyr_DestroyFence(VkDevice device, VkFence fence,
                                                   const VkAllocationCallbacks *alloc)
{
    lyr_device *d = lyr_device_get(device);
    free(lyr_map_take(&d->fences, (uint64_t)fence));
    NEXT(d, DestroyFence)(device, fence, alloc);
}

static VkResult wait_semaphores(VkDevice device, const VkSemaphoreWaitInfo *info, uint64_t timeout,
                                bool khr)
{
    lyr_device *d = lyr_device_get(device);
    spans sp;
    spans_start(d, LYR_SPAN_WAIT_SEMAPHORES, &sp);
    const uint64_t t0 = vkprof_host_now_ns();
    VkResult vr = khr ? NEXT(d, WaitSemaphoresKHR)(device, info, timeout)
                      : NEXT(d, WaitSemaphores)(device, info, timeout);
    host_add(d, LYR_HOST_wait, t0);
    spans_end(d, &sp);
    if (vr == VK_SUCCESS) {
        spans cs;
        spans_start(d, LYR_SPAN_COLLECT, &cs);
        collect_after_wait(d); /* which batches retired is not known: no step */
        spans_end(d, &cs);
    }
    return vr;
}

static VKAPI_ATTR VkResult VKAPI_CALL lyr_WaitSemaphores(VkDevice device,
                                                         const VkSemaphoreWaitInfo *info,
                                                         uint64_t timeout)
{
    return wait_semaphores(device, info, timeout, false);
}

static VKAPI_ATTR VkResult VKAPI_CALL lyr_WaitSemaphoresKHR(VkDevice device,
                                                            const VkSemaphoreWaitInfo *info,
                                                            uint64_t timeout)
{
    return wait_semaphores(device, info, timeout, true);
}

static VKAPI_ATTR VkResult VKAPI_CALL lyr_QueueWaitIdle(VkQueue queue)
{
    lyr_device *d = lyr_device_get(queue);
    spans sp;
    spans_start(d, LYR_SPAN_QUEUE_IDLE, &sp);
    const uint64_t t0 = vkprof_host_now_ns();
    VkResult vr = NEXT(d, QueueWaitIdle)(queue);
    host_add(d, LYR_HOST_wait, t0);
    spans_end(d, &sp);
    if (vr == VK_SUCCESS) {
        /* every batch retired only when the device has this one queue */
        on_retired_span(d, atomic_load(&d->nqueues) <= 1);
    }
    return vr;
}

static VKAPI_ATTR VkResult VKAPI_CALL lyr_DeviceWaitIdle(VkDevice device)
{
    lyr_device *d = lyr_device_get(device);
    spans sp;
    spans_start(d, LYR_SPAN_DEVICE_IDLE, &sp);
    const uint64_t t0 = vkprof_host_now_ns();
    VkResult vr = NEXT(d, DeviceWaitIdle)(device);
    host_add(d, LYR_HOST_wait, t0);
    spans_end(d, &sp);
    if (vr == VK_SUCCESS) {
        on_retired_span(d, true);
    }
    return vr;
}

/* ---- queue labels ------------------------------------------------------------ */

static bool step_label(const VkDebugUtilsLabelEXT *l)
{
    return lyr_cfg.steps == LYR_STEPS_LABEL && l != NULL && l->pLabelName != NULL &&
           strncmp(l->pLabelName, lyr_cfg.step_label, strlen(lyr_cfg.step_label)) == 0;
}

uint32_t lyr_queue_label_phase(lyr_device *d, uint32_t family, vkprof_context ctx)
{
    pthread_mutex_lock(&d->lock);
    uint32_t n = atomic_load(&d->nqueues);
    const lyr_queue *best = NULL;
    for (uint32_t i = 0; i < n; i++) {
        const lyr_queue *q = &d->queues[i];
        if (q->family == family && q->depth > 0 &&
            (best == NULL || q->label_order > best->label_order)) {
            best = q;
        }
    }
    uint32_t ph = LYR_NO_PHASE;
    if (best != NULL) {
        uint32_t top = best->depth <= LYR_LABEL_DEPTH ? best->depth - 1 : LYR_LABEL_DEPTH - 1;
        ph = lyr_phase_locked(ctx, best->labels[top]);
    }
    pthread_mutex_unlock(&d->lock);
    return ph;
}

static VKAPI_ATTR void VKAPI_CALL lyr_QueueBeginDebugUtilsLabelEXT(VkQueue queue,
                                                                   const VkDebugUtilsLabelEXT *l)
{
    lyr_device *d = lyr_device_get(queue);
    if (d == NULL || NEXT(d, QueueBeginDebugUtilsLabelEXT) == NULL) {
        return;
    }
    NEXT(d, QueueBeginDebugUtilsLabelEXT)(queue, l);
    lyr_queue *q = queue_get(d, queue);
    if (q == NULL) {
        return;
    }
    if (d->idx != NULL && q->family < d->idx->nfamilies) {
        atomic_fetch_add_explicit(&d->idx->fam[q->family].queue_labels, 1, memory_order_relaxed);
    }
    bool step = step_label(l);
    pthread_mutex_lock(&d->lock);
    if (q->depth < LYR_LABEL_DEPTH) {
        /* a step mark names nothing */
        snprintf(q->labels[q->depth], sizeof q->labels[q->depth], "%s",
                 step || l == NULL || l->pLabelName == NULL ? "" : l->pLabelName);
    }
    q->depth++;
    q->label_order = ++d->label_order;
    if (q->family < d->nfamilies) {
        atomic_fetch_add(&d->fam[q->family].qlabel_gen, 1);
    }
    pthread_mutex_unlock(&d->lock);
    if (step) {
        step_all(d);
    }
}

static VKAPI_ATTR void VKAPI_CALL lyr_QueueEndDebugUtilsLabelEXT(VkQueue queue)
{
    lyr_device *d = lyr_device_get(queue);
    if (d == NULL || NEXT(d, QueueEndDebugUtilsLabelEXT) == NULL) {
        return;
    }
    NEXT(d, QueueEndDebugUtilsLabelEXT)(queue);
    lyr_queue *q = queue_get(d, queue);
    if (q == NULL) {
        return;
    }
    pthread_mutex_lock(&d->lock);
    if (q->depth > 0) {
        q->depth--;
    }
    pthread_mutex_unlock(&d->lock);
}

static VKAPI_ATTR void VKAPI_CALL lyr_QueueInsertDebugUtilsLabelEXT(VkQueue queue,
                                                                    const VkDebugUtilsLabelEXT *l)
{
    lyr_device *d = lyr_device_get(queue);
    if (d == NULL || NEXT(d, QueueInsertDebugUtilsLabelEXT) == NULL) {
        return;
    }
    NEXT(d, QueueInsertDebugUtilsLabelEXT)(queue, l);
    if (step_label(l)) {
        step_all(d);
    }
}

#define P(name)                                                                                    \
    {                                                                                              \
        "vk" #name, (PFN_vkVoidFunction)lyr_##name, offsetof(lyr_next, name)                       \
    }
const lyr_proc lyr_queue_procs[] = {
    P(GetDeviceQueue),
    P(GetDeviceQueue2),
    P(QueueSubmit),
    P(QueueSubmit2),
    P(QueueSubmit2KHR),
    P(WaitForFences),
    P(GetFenceStatus),
    P(DestroyFence),
    P(WaitSemaphores),
    P(WaitSemaphoresKHR),
    P(QueueWaitIdle),
    P(DeviceWaitIdle),
    P(QueueBeginDebugUtilsLabelEXT),
    P(QueueEndDebugUtilsLabelEXT),
    P(QueueInsertDebugUtilsLabelEXT),
    {NULL, NULL, 0},
};
