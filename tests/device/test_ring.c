/* Ring mode on lavapipe with validation on, through the counting function
 * table: many scopes per command buffer, collection that reads only what is
 * finished (never WAIT), overflow that drops instead of overwriting, shared
 * boundary stamps, sampling, command-buffer resets when the host cannot
 * reset, scopes whose command buffer was never submitted, and misuse. */
#include <cjson/cJSON.h>
#include <string.h>

#include "harness.h"
#include "sim.h"

static th_gpu g;
static vku_busy busy;
static th_log logbuf;

static const vkprof_phase seq5[5] = {VKPROF_PHASE_NORM, VKPROF_PHASE_QKV, VKPROF_PHASE_ATTENTION,
                                     VKPROF_PHASE_MLP_GATE_UP, VKPROF_PHASE_MLP_DOWN};

static vkprof_context make_ring(uint32_t queries, bool shared, uint32_t sample, bool host_reset)
{
    vkprof_context_desc d = th_desc(&g, &logbuf, true);
    d.enable = VKPROF_ENABLE_ON;
    d.timing_mode = VKPROF_TIMING_RING;
    d.ring_queries = queries;
    d.shared_boundaries = shared;
    d.sample_every = sample;
    d.host_query_reset = host_reset && g.dev.host_query_reset;
    d.report_every = UINT32_MAX;
    return th_ctx(&d);
}

/* One token: `n` scopes back to back in one command buffer, a barrier
 * between dependent dispatches, as a decode engine records them. */
static void record_token(vkprof_context ctx, int n, vkprof_result expect)
{
    for (int i = 0; i < n; i++) {
        if (i) {
            vku_compute_barrier(g.dev.cmd);
        }
        CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, seq5[i % 5]) == expect);
        vku_busy_record(&g.dev, &busy, g.dev.cmd, 30);
        CHECK(vkprof_cmd_end(ctx, g.dev.cmd, seq5[i % 5]) == expect);
    }
}

static void test_every_dispatch(void)
{
    sim_reset();
    vkprof_context ctx = make_ring(0, false, 0, true);
    for (int token = 0; token < 3; token++) {
        CHECK_VK(vku_begin(&g.dev));
        record_token(ctx, 5, VKPROF_OK);
        CHECK_VK(vku_submit_wait(&g.dev));
        CHECK(vkprof_collect(ctx) == VKPROF_OK);
        vkprof_step(ctx);
    }
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.scopes_recorded, 15);
    CHECK_EQ_U64(t.scopes_collected, 15);
    CHECK_EQ_U64(t.scopes_pending, 0);
    CHECK_EQ_U64(t.scopes_dropped, 0);
    CHECK_EQ_U64(t.stamps_written, 30);
    CHECK_EQ_U64(t.timed_steps, 3);
    CHECK(t.ring_queries == 4096 && t.host_reset);
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_U64(th_phase(ctx, seq5[i]).count, 3);
    }
    /* one pool, created once; never WAIT; with host resets no
     * vkCmdResetQueryPool (slots are reset from the host when freed and
     * before a re-submission; test_no_host_reset covers the other path) */
    CHECK_EQ_U64(g_sim.pools_created, 1);
    CHECK_EQ_U64(g_sim.cmd_reset, 0);
    CHECK(!(g_sim.last_result_flags & VK_QUERY_RESULT_WAIT_BIT));
    CHECK(g_sim.last_result_flags & VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
    vkprof_destroy(ctx);
}

/* Scopes recorded but not yet executed stay pending; collect folds only the
 * finished ones and comes back for the rest. The 2-slot call sites
 * (resolve/accumulate) work unchanged in ring mode. */
static void test_collect_partial(void)
{
    sim_reset();
    vkprof_context ctx = make_ring(64, false, 0, true);
    CHECK_VK(vku_begin(&g.dev));
    record_token(ctx, 3, VKPROF_OK);
    CHECK_VK(vku_submit_wait(&g.dev));
    /* token B: recorded, not submitted yet */
    CHECK_VK(vku_begin(&g.dev));
    record_token(ctx, 2, VKPROF_OK);
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.scopes_collected, 3); /* A is finished: folded */
    CHECK_EQ_U64(t.scopes_pending, 2);   /* B is not: left for later */
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(vkprof_resolve(ctx, NULL) == VKPROF_OK); /* ring: resolve collects */
    CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_NORM) == VKPROF_OK);
    t = th_stats(ctx);
    CHECK_EQ_U64(t.scopes_collected, 5);
    CHECK_EQ_U64(t.scopes_pending, 0);
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_NORM).count, 2);
    vkprof_destroy(ctx);
}

static void test_overflow(void)
{
    sim_reset();
    vkprof_context ctx = make_ring(8, false, 0, true);
    CHECK_VK(vku_begin(&g.dev));
    record_token(ctx, 10, VKPROF_OK); /* 4 scopes fill 8 slots; 6 find none */
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.scopes_recorded, 10);
    CHECK_EQ_U64(t.scopes_dropped, 6);
    CHECK_EQ_U64(t.lost_ring_full, 6);
    CHECK_EQ_U64(t.samples, t.scopes_collected + t.scopes_dropped + t.scopes_pending);
    /* the loss is logged, once */
    CHECK(logbuf.warnings == 1 && strstr(logbuf.last, "GPU samples lost") != NULL);
    CHECK_EQ_U64(t.scopes_collected, 4);
    CHECK_EQ_U64(t.stamps_written, 8);
    CHECK_EQ_U64(g_sim.cmd_timestamp2, 8); /* nothing was stamped over an unread slot */
    /* after collection the ring is free again */
    CHECK_VK(vku_begin(&g.dev));
    record_token(ctx, 4, VKPROF_OK);
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    t = th_stats(ctx);
    CHECK_EQ_U64(t.scopes_collected, 8);
    CHECK_EQ_U64(t.scopes_dropped, 6);
    CHECK_EQ_U64(t.scopes_pending, 0);
    /* the snapshot and its JSON say so */
    size_t need = 0;
    vkprof_snapshot_json(ctx, NULL, 0, &need);
    char *buf = malloc(need);
    CHECK(vkprof_snapshot_json(ctx, buf, need, &need) == VKPROF_OK);
    cJSON *root = cJSON_Parse(buf);
    const cJSON *timing = cJSON_GetObjectItemCaseSensitive(root, "timing");
    CHECK(cJSON_IsObject(timing));
    CHECK(cJSON_GetObjectItemCaseSensitive(timing, "scopes_dropped")->valuedouble == 6);
    CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(timing, "mode")->valuestring, "ring") == 0);
    cJSON_Delete(root);
    free(buf);
    vkprof_destroy(ctx);
}

static void test_shared_boundaries(void)
{
    sim_reset();
    vkprof_context ctx = make_ring(0, true, 0, true);
    for (int token = 0; token < 2; token++) {
        CHECK_VK(vku_begin(&g.dev));
        record_token(ctx, 5, VKPROF_OK);
        CHECK_VK(vku_submit_wait(&g.dev));
        CHECK(vkprof_collect(ctx) == VKPROF_OK);
        vkprof_step(ctx);
    }
    vkprof_timing_stats t = th_stats(ctx);
    /* 5 back-to-back scopes: 6 stamps per token, not 10 */
    CHECK_EQ_U64(t.stamps_written, 12);
    CHECK_EQ_U64(t.shared_stamps, 8);
    CHECK_EQ_U64(t.scopes_collected, 10);
    vkprof_phase_stats st[VKPROF_MAX_PHASES];
    uint32_t n;
    vkprof_snapshot(ctx, st, VKPROF_MAX_PHASES, &n, NULL);
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_U64(st[seq5[i]].count, 2);
        CHECK(st[seq5[i]].min_ns > 0);
    }
    /* a different command buffer never shares */
    VkCommandBuffer other = th_alloc_cmd(&g);
    CHECK_VK(vku_begin(&g.dev));
    th_begin_cmd(other);
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK);
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK);
    CHECK(vkprof_cmd_begin(ctx, other, VKPROF_PHASE_ROPE) == VKPROF_OK);
    CHECK(vkprof_cmd_end(ctx, other, VKPROF_PHASE_ROPE) == VKPROF_OK);
    CHECK_VK(vkEndCommandBuffer(other));
    t = th_stats(ctx);
    CHECK_EQ_U64(t.stamps_written, 16);
    CHECK_EQ_U64(t.shared_stamps, 8);
    CHECK_VK(vkEndCommandBuffer(g.dev.cmd));
    VkCommandBuffer both[2] = {g.dev.cmd, other};
    th_submit_wait(&g, NULL, 2, both); /* the seed's model: the library is not told */
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    CHECK_EQ_U64(th_stats(ctx).scopes_collected, 12);
    vkFreeCommandBuffers(g.dev.device, g.dev.cmd_pool, 1, &other);
    vkprof_destroy(ctx);
}

static void test_sampling(void)
{
    sim_reset();
    vkprof_context ctx = make_ring(0, false, 4, true);
    for (int step = 0; step < 12; step++) {
        bool timed = vkprof_step_timed(ctx);
        CHECK(timed == (step % 4 == 0));
        uint64_t before = g_sim.cmd_calls;
        CHECK_VK(vku_begin(&g.dev));
        record_token(ctx, 3, timed ? VKPROF_OK : VKPROF_DISABLED);
        CHECK_VK(vku_submit_wait(&g.dev));
        CHECK(vkprof_collect(ctx) == VKPROF_OK);
        if (!timed) {
            CHECK_EQ_U64(g_sim.cmd_calls, before); /* an untimed step records nothing */
        }
        vkprof_step(ctx);
    }
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.sample_every, 4);
    CHECK_EQ_U64(t.timed_steps, 3);
    CHECK_EQ_U64(t.scopes_collected, 9);
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_NORM).count, 3);
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_ATTENTION).count, 3);
    vkprof_destroy(ctx);
}

/* Without hostQueryReset: each scope's slots are reset in the command buffer,
 * and the previous lap's values are never folded again. */
static void test_no_host_reset(void)
{
    sim_reset();
    vkprof_context ctx = make_ring(8, false, 0, false);
    for (int lap = 0; lap < 4; lap++) {
        CHECK_VK(vku_begin(&g.dev));
        record_token(ctx, 4, VKPROF_OK); /* 8 slots: the whole ring every token */
        CHECK_VK(vku_submit_wait(&g.dev));
        CHECK(vkprof_collect(ctx) == VKPROF_OK);
    }
    CHECK_EQ_U64(g_sim.cmd_reset, 16);
    CHECK_EQ_U64(th_stats(ctx).scopes_collected, 16);
    CHECK(!th_stats(ctx).host_reset);
    /* the next lap recorded but not submitted: the slots still hold lap 4's
     * values, available; they must not be taken for this lap's */
    CHECK_VK(vku_begin(&g.dev));
    record_token(ctx, 4, VKPROF_OK);
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    CHECK_EQ_U64(th_stats(ctx).scopes_collected, 16);
    CHECK_EQ_U64(th_stats(ctx).scopes_pending, 4);
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    CHECK_EQ_U64(th_stats(ctx).scopes_collected, 20);
    vkprof_destroy(ctx);
}

/* A command buffer recorded and then dropped (reset, never submitted): its
 * scopes can never finish. Once later scopes have, they are given up, so the
 * ring does not stall. */
static void test_lost_scopes(void)
{
    sim_reset();
    vkprof_context ctx = make_ring(64, false, 0, true);
    CHECK_VK(vku_begin(&g.dev));
    record_token(ctx, 3, VKPROF_OK);
    CHECK(vkprof_collect(ctx) == VKPROF_OK); /* ends any boundary; nothing ready */
    CHECK_VK(vku_begin(&g.dev));             /* the app throws that recording away */
    record_token(ctx, 2, VKPROF_OK);
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.scopes_collected, 2);
    CHECK_EQ_U64(t.scopes_dropped, 3);
    CHECK_EQ_U64(t.scopes_pending, 0);
    vkprof_destroy(ctx);
}

/* A recording that is never submitted is no sample: vkprof_cmd_discard
 * takes its scopes (an open one too) out of the samples and the calls,
 * without a loss; an earlier, submitted execution still unread is lost. */
static void scopes_on(vkprof_context ctx, VkCommandBuffer c, int n)
{
    for (int i = 0; i < n; i++) {
        CHECK(vkprof_cmd_begin(ctx, c, seq5[i % 5]) == VKPROF_OK);
        vku_busy_record(&g.dev, &busy, c, 10);
        CHECK(vkprof_cmd_end(ctx, c, seq5[i % 5]) == VKPROF_OK);
    }
}

static void test_discard(void)
{
    sim_reset();
    vkprof_context ctx = make_ring(64, false, 0, true);
    VkCommandBuffer c = th_alloc_cmd(&g);
    th_begin_cmd(c);
    scopes_on(ctx, c, 2);
    CHECK_VK(vkEndCommandBuffer(c));
    th_submit_wait(&g, ctx, 1, &c);
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    /* recorded, one left open, never submitted: the app frees it */
    th_begin_cmd(c);
    scopes_on(ctx, c, 3);
    CHECK(vkprof_cmd_begin(ctx, c, VKPROF_PHASE_NORM) == VKPROF_OK);
    CHECK(vkprof_cmd_discard(ctx, c) == VKPROF_OK);
    CHECK_VK(vkEndCommandBuffer(c));
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.samples, 2);
    CHECK_EQ_U64(t.scopes_collected, 2);
    CHECK_EQ_U64(t.scopes_dropped, 0);
    CHECK_EQ_U64(t.scopes_discarded, 4);
    CHECK_EQ_U64(t.calls_executed, 2);
    CHECK_EQ_U64(t.lost_misuse + t.lost_never_submitted, 0);
    /* a submitted execution nobody collected, then a discarded re-recording:
     * the execution ran and is lost (reset), the re-recording is no sample */
    th_begin_cmd(c);
    scopes_on(ctx, c, 2);
    CHECK_VK(vkEndCommandBuffer(c));
    CHECK(vkprof_cmd_submit(ctx, g.dev.queue, 1, &c) == VKPROF_OK);
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &c};
    CHECK_VK(vkQueueSubmit(g.dev.queue, 1, &si, VK_NULL_HANDLE));
    CHECK_VK(vkQueueWaitIdle(g.dev.queue));
    th_begin_cmd(c);
    scopes_on(ctx, c, 1);
    CHECK(vkprof_cmd_discard(ctx, c) == VKPROF_OK);
    CHECK_VK(vkEndCommandBuffer(c));
    t = th_stats(ctx);
    CHECK_EQ_U64(t.samples, 4);
    CHECK_EQ_U64(t.scopes_discarded, 5);
    CHECK_EQ_U64(t.scopes_collected + t.lost_reset, 4);
    CHECK_EQ_U64(t.scopes_pending, 0);
    vkFreeCommandBuffers(g.dev.device, g.dev.cmd_pool, 1, &c);
    vkprof_destroy(ctx);
}

static void test_ring_misuse(void)
{
    sim_reset();
    vkprof_context ctx = make_ring(64, false, 0, true);
    vkprof_context ctx2 = ctx;
    CHECK_VK(vku_begin(&g.dev));
    /* scopes nest: a region holding a dispatch scope */
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK);
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_ROPE) == VKPROF_OK);
    /* the innermost scope is ROPE: dropped, never folded */
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_ERROR_PHASE_MISMATCH);
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK); /* the region */
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_ERROR_END_WITHOUT_BEGIN);
    /* nesting has a stated depth */
    for (uint32_t i = 0; i < VKPROF_MAX_SCOPE_DEPTH; i++) {
        CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
    }
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_ERROR_BEGIN_TWICE);
    vku_busy_record(&g.dev, &busy, g.dev.cmd, 30);
    for (uint32_t i = 0; i < VKPROF_MAX_SCOPE_DEPTH; i++) {
        CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
    }
    /* an end in a command buffer the scope was not begun in */
    VkCommandBuffer other = th_alloc_cmd(&g);
    CHECK(vkprof_cmd_end(ctx2, other, VKPROF_PHASE_NORM) == VKPROF_ERROR_END_WITHOUT_BEGIN);
    vkFreeCommandBuffers(g.dev.device, g.dev.cmd_pool, 1, &other);
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, 4242) == VKPROF_ERROR_UNKNOWN_PHASE);
    record_token(ctx, 2, VKPROF_OK);
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    /* the region, the 8 nested scopes and the two good ones fold */
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.scopes_collected, 11);
    CHECK_EQ_U64(t.scopes_pending, 0);
    CHECK_EQ_U64(t.lost_misuse, 1);
    CHECK_EQ_U64(t.samples, t.scopes_collected + t.scopes_dropped + t.scopes_pending);
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_ROPE).count, 0);
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_ATTENTION).count, 8);
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_NORM).count, 2);
    /* nested durations hold: each region contains the one inside it */
    vkprof_phase_stats st[VKPROF_MAX_PHASES];
    uint32_t n;
    vkprof_snapshot(ctx, st, VKPROF_MAX_PHASES, &n, NULL);
    CHECK(st[VKPROF_PHASE_ATTENTION].max_ns >= st[VKPROF_PHASE_ATTENTION].min_ns);
    CHECK(st[VKPROF_PHASE_ATTENTION].min_ns > 0);
    vkprof_error_counts e;
    vkprof_snapshot(ctx, NULL, 0, &n, &e);
    CHECK_EQ_U64(e.begin_twice, 1);
    CHECK_EQ_U64(e.end_without_begin, 2);
    CHECK_EQ_U64(e.phase_mismatch, 1);
    CHECK_EQ_U64(e.unknown_phase, 1);
    /* turning profiling off with a scope open gives it up; the ring stays usable */
    CHECK_VK(vku_begin(&g.dev));
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK);
    vkprof_set_active(ctx, false);
    vkprof_set_active(ctx, true);
    record_token(ctx, 2, VKPROF_OK);
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    t = th_stats(ctx);
    CHECK_EQ_U64(t.scopes_collected, 13);
    CHECK_EQ_U64(t.scopes_pending, 0);
    CHECK_EQ_U64(t.lost_misuse, 2);
    vkprof_snapshot(ctx, NULL, 0, &n, &e);
    CHECK_EQ_U64(e.discarded, 1);
    /* bad ring settings are refused */
    vkprof_context_desc d = vku_vkprof_desc(&g.inst, &g.dev);
    d.timing_mode = (vkprof_timing_mode)9;
    vkprof_context bad = NULL;
    CHECK(vkprof_create(&d, &bad) == VKPROF_ERROR_INVALID_ARGUMENT && bad == NULL);
    vkprof_destroy(ctx);
}

/* Ring scopes land on the timeline, tagged with the step they were recorded in. */
static void test_ring_trace(void)
{
    sim_reset();
    vkprof_context ctx = make_ring(0, true, 2, true);
    CHECK(vkprof_trace_begin(ctx, 1000) == VKPROF_OK);
    for (int step = 0; step < 4; step++) {
        CHECK_VK(vku_begin(&g.dev));
        record_token(ctx, 3, vkprof_step_timed(ctx) ? VKPROF_OK : VKPROF_DISABLED);
        CHECK_VK(vku_submit_wait(&g.dev));
        CHECK(vkprof_collect(ctx) == VKPROF_OK);
        vkprof_step(ctx);
    }
    char path[] = "/tmp/vkprof-ring-trace.json";
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    char *text = th_read_file(path);
    CHECK(text != NULL && text[0] != '\0');
    cJSON *root = cJSON_Parse(text);
    CHECK(root != NULL);
    int gpu = 0, steps_ok = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
    {
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        if (cJSON_IsString(cat) && strcmp(cat->valuestring, "gpu") == 0) {
            gpu++;
            int s = (int)cJSON_GetObjectItemCaseSensitive(
                        cJSON_GetObjectItemCaseSensitive(e, "args"), "step")
                        ->valuedouble;
            steps_ok += s == 1 || s == 3; /* steps 0 and 2 (1-based: 1 and 3) are timed */
        }
    }
    CHECK(gpu == 6 && steps_ok == 6);
    const cJSON *gs = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "metadata"), "gpu_sampling");
    CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(gs, "mode")->valuestring, "ring") == 0);
    CHECK(cJSON_GetObjectItemCaseSensitive(gs, "every_n_steps")->valuedouble == 2);
    CHECK(cJSON_GetObjectItemCaseSensitive(gs, "timed_steps")->valuedouble == 2);
    cJSON_Delete(root);
    free(text);
    remove(path);
    vkprof_destroy(ctx);
}

int main(void)
{
    th_gpu_init(&g);
    th_busy_init(&g, &busy, 4096);
    logbuf.quiet = 1;
    RUN(test_every_dispatch);
    RUN(test_collect_partial);
    RUN(test_overflow);
    RUN(test_shared_boundaries);
    RUN(test_sampling);
    RUN(test_no_host_reset);
    RUN(test_lost_scopes);
    RUN(test_discard);
    RUN(test_ring_misuse);
    RUN(test_ring_trace);
    vku_busy_destroy(&g.dev, &busy);
    th_gpu_finish(&g);
    return th_done();
}
