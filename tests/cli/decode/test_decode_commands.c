/* The Vulkan commands the decode engine records, per profiling mode (tiny
 * preset, validation layer on). Every vkCmd* the engine calls goes through
 * volk's function pointers, which this test replaces with counters; the
 * library's go through tests/sim.c's table (which forwards through the same
 * pointers, so the totals count both). Each mode must record exactly the
 * unprofiled engine's commands plus its own stamps (and resets), and no
 * other: a mode that records one barrier more or less fails here.
 *
 *   off              T submits, the reference counts
 *   ring (every, shared boundaries, sampled 1 in 2)
 *                    off + the library's stamps (vkprof_timing_stats), the
 *                    library recording nothing but stamps and resets
 *   baseline(-shared) off + 2 x calls (calls + 1) stamps per token, one
 *                    vkGetQueryPoolResults per token, the pool reset once a
 *                    token (from the host, or in the command buffer)
 *   gpu (2-slot)     off + 2 stamps per call, one command buffer, submit and
 *                    fence wait per phase call
 * Run twice: with the device's features, and told that synchronization2 and
 * hostQueryReset are off.
 *
 * Then the same for a token of several segments (several submits): rank 0 of
 * 2 tensor-parallel ranks alone, its all-reduce hook leaving the partial sum
 * as it is (the commands, not the numbers, are checked): 1 + 2 x layers
 * segments per token in the one-buffer modes, each begun and submitted, the
 * shared-boundary modes 1 stamp more per segment; gpu keeps one buffer per
 * phase call (the copies ride in the calls' buffers). And for moe-tiny,
 * whose MoE layers each read the routed experts back mid-token (a segment
 * each), alone and with 2 ranks. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "harness.h"
#include "sim.h"

#define T 4u
#define SEED 7u

static th_gpu g;

/* ---- counters over volk's pointers ----------------------------------------- */

typedef struct counts {
    uint64_t bind_pipeline, bind_sets, push, dispatch, barrier, copy, cmd_reset, stamp, stamp2;
    uint64_t begin, submit, host_reset, results;
} counts;

static counts n;

/* The segmented cases: ranks = 2 (identity all-reduce), else 0; the preset
 * (moe-tiny: one host read-back of the routed experts per MoE layer). */
static uint32_t tp_ranks;
static const char *preset = "tiny";
static uint64_t reduces, routed;

static void count_routed(void *user, uint32_t layer, const uint32_t *ids, const float *w,
                         uint32_t k)
{
    (void)user;
    (void)layer;
    (void)ids;
    (void)w;
    (void)k;
    routed++;
}

static int identity_reduce(void *user, dec_site site, uint32_t layer, float *data, uint32_t k)
{
    (void)user;
    (void)site;
    (void)layer;
    (void)data;
    (void)k;
    reduces++;
    return 0;
}

/* All-reduce sites and MoE read-backs per token. */
static uint64_t tp_sites(void)
{
    return tp_ranks > 1 ? 2ull * dec_find_preset(preset)->n_layers : 0;
}

static uint64_t moe_syncs(void)
{
    const dec_preset *p = dec_find_preset(preset);
    uint64_t syncs = 0;
    for (uint32_t l = 0; l < p->n_layers; l++) {
        syncs += dec_layer_is_moe(p, l);
    }
    return syncs;
}

/* Command buffers (and submits) per token in the one-buffer modes. */
static uint64_t segments_per_token(const dec_engine *e)
{
    (void)e;
    return 1 + tp_sites() + moe_syncs();
}

static PFN_vkCmdBindPipeline r_CmdBindPipeline;
static PFN_vkCmdBindDescriptorSets r_CmdBindDescriptorSets;
static PFN_vkCmdPushConstants r_CmdPushConstants;
static PFN_vkCmdDispatch r_CmdDispatch;
static PFN_vkCmdPipelineBarrier r_CmdPipelineBarrier;
static PFN_vkCmdCopyBuffer r_CmdCopyBuffer;
static PFN_vkCmdResetQueryPool r_CmdResetQueryPool;
static PFN_vkCmdWriteTimestamp r_CmdWriteTimestamp;
static PFN_vkCmdWriteTimestamp2 r_CmdWriteTimestamp2;
static PFN_vkBeginCommandBuffer r_BeginCommandBuffer;
static PFN_vkQueueSubmit r_QueueSubmit;
static PFN_vkResetQueryPool r_ResetQueryPool;
static PFN_vkGetQueryPoolResults r_GetQueryPoolResults;

static void VKAPI_CALL c_CmdBindPipeline(VkCommandBuffer c, VkPipelineBindPoint bp, VkPipeline p)
{
    n.bind_pipeline++;
    r_CmdBindPipeline(c, bp, p);
}

static void VKAPI_CALL c_CmdBindDescriptorSets(VkCommandBuffer c, VkPipelineBindPoint bp,
                                               VkPipelineLayout l, uint32_t first, uint32_t count,
                                               const VkDescriptorSet *sets, uint32_t ndyn,
                                               const uint32_t *dyn)
{
    n.bind_sets++;
    r_CmdBindDescriptorSets(c, bp, l, first, count, sets, ndyn, dyn);
}

static void VKAPI_CALL c_CmdPushConstants(VkCommandBuffer c, VkPipelineLayout l,
                                          VkShaderStageFlags s, uint32_t off, uint32_t size,
                                          const void *v)
{
    n.push++;
    r_CmdPushConstants(c, l, s, off, size, v);
}

static void VKAPI_CALL c_CmdDispatch(VkCommandBuffer c, uint32_t x, uint32_t y, uint32_t z)
{
    n.dispatch++;
    r_CmdDispatch(c, x, y, z);
}

static void VKAPI_CALL c_CmdPipelineBarrier(VkCommandBuffer c, VkPipelineStageFlags src,
                                            VkPipelineStageFlags dst, VkDependencyFlags dep,
                                            uint32_t nm, const VkMemoryBarrier *m, uint32_t nb,
                                            const VkBufferMemoryBarrier *b, uint32_t ni,
                                            const VkImageMemoryBarrier *im)
{
    n.barrier++;
    r_CmdPipelineBarrier(c, src, dst, dep, nm, m, nb, b, ni, im);
}

static void VKAPI_CALL c_CmdCopyBuffer(VkCommandBuffer c, VkBuffer s, VkBuffer d, uint32_t k,
                                       const VkBufferCopy *r)
{
    n.copy++;
    r_CmdCopyBuffer(c, s, d, k, r);
}

static void VKAPI_CALL c_CmdResetQueryPool(VkCommandBuffer c, VkQueryPool p, uint32_t f, uint32_t k)
{
    n.cmd_reset++;
    r_CmdResetQueryPool(c, p, f, k);
}

static void VKAPI_CALL c_CmdWriteTimestamp(VkCommandBuffer c, VkPipelineStageFlagBits s,
                                           VkQueryPool p, uint32_t q)
{
    n.stamp++;
    r_CmdWriteTimestamp(c, s, p, q);
}

static void VKAPI_CALL c_CmdWriteTimestamp2(VkCommandBuffer c, VkPipelineStageFlags2 s,
                                            VkQueryPool p, uint32_t q)
{
    n.stamp2++;
    r_CmdWriteTimestamp2(c, s, p, q);
}

static VkResult VKAPI_CALL c_BeginCommandBuffer(VkCommandBuffer c,
                                                const VkCommandBufferBeginInfo *bi)
{
    n.begin++;
    return r_BeginCommandBuffer(c, bi);
}

static VkResult VKAPI_CALL c_QueueSubmit(VkQueue q, uint32_t k, const VkSubmitInfo *si, VkFence f)
{
    n.submit++;
    return r_QueueSubmit(q, k, si, f);
}

static void VKAPI_CALL c_ResetQueryPool(VkDevice d, VkQueryPool p, uint32_t f, uint32_t k)
{
    n.host_reset++;
    r_ResetQueryPool(d, p, f, k);
}

static VkResult VKAPI_CALL c_GetQueryPoolResults(VkDevice d, VkQueryPool p, uint32_t f, uint32_t k,
                                                 size_t size, void *data, VkDeviceSize stride,
                                                 VkQueryResultFlags fl)
{
    n.results++;
    return r_GetQueryPoolResults(d, p, f, k, size, data, stride, fl);
}

#define SWAP(name)                                                                                 \
    do {                                                                                           \
        r_##name = vk##name;                                                                       \
        vk##name = c_##name;                                                                       \
    } while (0)

static void interpose(void)
{
    SWAP(CmdBindPipeline);
    SWAP(CmdBindDescriptorSets);
    SWAP(CmdPushConstants);
    SWAP(CmdDispatch);
    SWAP(CmdPipelineBarrier);
    SWAP(CmdCopyBuffer);
    SWAP(CmdResetQueryPool);
    SWAP(CmdWriteTimestamp);
    SWAP(CmdWriteTimestamp2);
    SWAP(BeginCommandBuffer);
    SWAP(QueueSubmit);
    SWAP(ResetQueryPool);
    SWAP(GetQueryPoolResults);
}

/* ---- one mode ------------------------------------------------------------------ */

static void on_step(void *user, uint32_t index, uint32_t token)
{
    (void)index;
    (void)token;
    vkprof_step((vkprof_context)user);
}

static void print_counts(const char *what, const counts *c)
{
    printf("  %-24s per %u tokens: bind %llu/%llu push %llu dispatch %llu barrier %llu copy %llu "
           "cmd-reset %llu stamp %llu stamp2 %llu | begin %llu submit %llu host-reset %llu "
           "results %llu\n",
           what, T, (unsigned long long)c->bind_pipeline, (unsigned long long)c->bind_sets,
           (unsigned long long)c->push, (unsigned long long)c->dispatch,
           (unsigned long long)c->barrier, (unsigned long long)c->copy,
           (unsigned long long)c->cmd_reset, (unsigned long long)c->stamp,
           (unsigned long long)c->stamp2, (unsigned long long)c->begin,
           (unsigned long long)c->submit, (unsigned long long)c->host_reset,
           (unsigned long long)c->results);
}

/* Runs T tokens in `mode`; the counts of those steps only. */
static int run_mode(dec_engine *e, dec_profile mode, vkprof_context prof, counts *out,
                    const char *what)
{
    dec_hooks hooks = {.user = prof,
                       .step = prof != NULL ? on_step : NULL,
                       .all_reduce = tp_ranks > 1 ? identity_reduce : NULL,
                       .routed = count_routed};
    char err[512] = "";
    if (dec_reconfigure(e, mode, prof, &hooks, err, sizeof err) != 0) {
        fprintf(stderr, "  dec_reconfigure %s: %s\n", what, err);
        return 1;
    }
    memset(&n, 0, sizeof n);
    uint32_t tok = 1;
    for (uint32_t i = 0; i < T; i++) {
        uint32_t next = 0;
        if (dec_step(e, tok, &next, err, sizeof err) != 0) {
            fprintf(stderr, "  dec_step %s %u: %s\n", what, i, err);
            return 1;
        }
        tok = next;
    }
    *out = n;
    print_counts(what, out);
    return 0;
}

/* Everything but the stamps, resets, begins, submits and readbacks. */
static void check_same_work(const counts *a, const counts *off)
{
    CHECK_EQ_U64(a->bind_pipeline, off->bind_pipeline);
    CHECK_EQ_U64(a->bind_sets, off->bind_sets);
    CHECK_EQ_U64(a->push, off->push);
    CHECK_EQ_U64(a->dispatch, off->dispatch);
    CHECK_EQ_U64(a->barrier, off->barrier);
    CHECK_EQ_U64(a->copy, off->copy);
}

static vkprof_context lib_context(vkprof_timing_mode tm, bool shared, uint32_t every)
{
    vkprof_context_desc d = th_desc(&g, NULL, true);
    d.enable = VKPROF_ENABLE_ON;
    d.timing_mode = tm;
    d.shared_boundaries = shared;
    d.sample_every = every;
    d.trace_path = "";
    vkprof_context prof = th_ctx(&d);
    CHECK(vkprof_active(prof));
    return prof;
}

/* scopes: per token, the engine's phase calls (or its dispatches, with
 * dec_config.scope_dispatches) */
static void ring_case(dec_engine *e, const counts *off, bool shared, uint32_t every,
                      uint64_t scopes)
{
    sim_reset();
    vkprof_context prof = lib_context(VKPROF_TIMING_RING, shared, every);
    char what[64];
    snprintf(what, sizeof what, "ring shared=%d every=%u", (int)shared, every);
    counts c;
    uint64_t lib_before = g_sim.cmd_calls, lib_reset_before = g_sim.cmd_reset;
    if (prof == NULL || run_mode(e, DEC_PROFILE_RING, prof, &c, what) != 0) {
        CHECK(0);
        vkprof_destroy(prof);
        return;
    }
    uint64_t lib_cmds = g_sim.cmd_calls - lib_before,
             lib_resets = g_sim.cmd_reset - lib_reset_before;
    vkprof_timing_stats ts;
    CHECK(vkprof_get_timing_stats(prof, &ts) == VKPROF_OK);
    printf("  %-24s library: %llu commands, %llu stamps, %llu resets\n", what,
           (unsigned long long)lib_cmds, (unsigned long long)ts.stamps_written,
           (unsigned long long)lib_resets);
    uint64_t calls = scopes, every1 = every > 1 ? every : 1, S = segments_per_token(e);
    uint64_t timed = (T + every1 - 1) / every1;
    CHECK_EQ_U64(ts.stamps_written, shared ? (calls + S) * timed : 2 * calls * timed);
    CHECK_EQ_U64(ts.scopes_collected, calls * timed); /* every segment's scopes folded */
    CHECK_EQ_U64(ts.scopes_dropped + ts.scopes_pending, 0);
    CHECK_EQ_U64(lib_cmds, ts.stamps_written + lib_resets); /* stamps and resets only */
    if (g.dev.host_query_reset) {
        CHECK_EQ_U64(lib_resets, 0);
    }
    check_same_work(&c, off);
    CHECK_EQ_U64(c.stamp + c.stamp2, ts.stamps_written);
    CHECK_EQ_U64(g.dev.sync2 ? c.stamp : c.stamp2, 0);
    CHECK_EQ_U64(c.cmd_reset, lib_resets);
    CHECK_EQ_U64(c.begin, S * T);
    CHECK_EQ_U64(c.submit, S * T);
    vkprof_destroy(prof);
}

static void baseline_case(dec_engine *e, const counts *off, dec_profile mode)
{
    counts c;
    if (run_mode(e, mode, NULL, &c, dec_profile_name(mode)) != 0) {
        CHECK(0);
        return;
    }
    uint64_t calls = dec_calls_per_token(e), S = segments_per_token(e);
    uint64_t stamps = mode == DEC_PROFILE_BASELINE_SHARED ? (calls + S) * T : 2 * calls * T;
    check_same_work(&c, off);
    CHECK_EQ_U64(c.stamp + c.stamp2, stamps);
    CHECK_EQ_U64(g.dev.sync2 ? c.stamp : c.stamp2, 0);
    CHECK_EQ_U64(dec_baseline_stamps(e), stamps);
    CHECK_EQ_U64(c.cmd_reset, g.dev.host_query_reset ? 0 : T);
    CHECK_EQ_U64(c.host_reset, g.dev.host_query_reset ? T : 0);
    CHECK_EQ_U64(c.results, T);
    CHECK_EQ_U64(c.begin, S * T);
    CHECK_EQ_U64(c.submit, S * T);
    for (uint32_t k = 0; k < VKPROF_PHASE_DEFAULT_COUNT; k++) { /* every call's scope summed */
        uint64_t cnt = 0;
        CHECK(dec_baseline_phase(e, k, &cnt, NULL) == 0);
        CHECK_EQ_U64(cnt, dec_costs(e, k)->calls);
    }
}

static void gpu_case(dec_engine *e, const counts *off)
{
    sim_reset();
    vkprof_context prof = lib_context(VKPROF_TIMING_2SLOT, false, 0);
    counts c;
    uint64_t lib_before = g_sim.cmd_calls, lib_reset_before = g_sim.cmd_reset;
    if (prof == NULL || run_mode(e, DEC_PROFILE_GPU, prof, &c, "gpu (2-slot)") != 0) {
        CHECK(0);
        vkprof_destroy(prof);
        return;
    }
    uint64_t lib_cmds = g_sim.cmd_calls - lib_before,
             lib_resets = g_sim.cmd_reset - lib_reset_before;
    uint64_t calls = dec_calls_per_token(e);
    printf("  %-24s library: %llu commands, %llu resets\n", "gpu (2-slot)",
           (unsigned long long)lib_cmds, (unsigned long long)lib_resets);
    check_same_work(&c, off); /* a barrier opens each call's buffer instead of separating calls */
    CHECK_EQ_U64(c.stamp + c.stamp2, 2 * calls * T);
    CHECK_EQ_U64(lib_cmds, 2 * calls * T + lib_resets);
    CHECK_EQ_U64(c.cmd_reset, lib_resets);
    CHECK_EQ_U64(c.begin, calls * T);
    CHECK_EQ_U64(c.submit, calls * T);
    vkprof_destroy(prof);
}

/* dec_config.scope_dispatches: the same work as one scope per call, and one
 * scope per dispatch, stamped where the layer stamps (after each dispatch;
 * with shared boundaries the next scope begins at that stamp); modes with
 * fixed stamps per call are refused, as are several ranks. */
static void scope_dispatch_case(const counts *off_calls)
{
    dec_hooks h = {0};
    dec_config cfg = {
        .preset = dec_find_preset(preset), .seed = SEED, .hooks = &h, .scope_dispatches = true};
    dec_engine *e = NULL;
    char err[512] = "";
    if (dec_create(&g.dev, &cfg, &e, err, sizeof err) != 0) {
        fprintf(stderr, "  dec_create (scope per dispatch): %s\n", err);
        CHECK(0);
        return;
    }
    counts off;
    CHECK(run_mode(e, DEC_PROFILE_OFF, NULL, &off, "off, scope dispatch") == 0);
    CHECK(memcmp(&off, off_calls, sizeof off) == 0); /* the same commands */
    CHECK_EQ_U64(off.dispatch % T, 0);
    uint64_t D = off.dispatch / T; /* every dispatch is in a phase call */
    CHECK(D > dec_calls_per_token(e));
    ring_case(e, &off, false, 0, D);
    ring_case(e, &off, true, 0, D);
    ring_case(e, &off, true, 2, D);
    /* every dispatch's scope is its call's phase: per phase, the engine's
     * dispatch count (a fresh context: nothing else folded in it) */
    vkprof_context prof = lib_context(VKPROF_TIMING_RING, true, 0);
    counts c;
    CHECK(prof != NULL && run_mode(e, DEC_PROFILE_RING, prof, &c, "ring, per-phase") == 0);
    if (prof != NULL) {
        CHECK(vkprof_collect(prof) == VKPROF_OK);
        vkprof_phase_stats st[VKPROF_MAX_PHASES];
        uint32_t np = 0;
        CHECK(vkprof_snapshot(prof, st, VKPROF_MAX_PHASES, &np, NULL) == VKPROF_OK);
        for (uint32_t k = 0; k < VKPROF_PHASE_DEFAULT_COUNT && k < np; k++) {
            CHECK_EQ_U64(st[k].count, (uint64_t)dec_costs(e, k)->dispatches);
        }
        vkprof_destroy(prof);
    }
    const dec_profile refused[] = {DEC_PROFILE_GPU, DEC_PROFILE_BASELINE,
                                   DEC_PROFILE_BASELINE_SHARED};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        CHECK(dec_reconfigure(e, refused[i], NULL, &h, err, sizeof err) == 1);
        CHECK(strstr(err, "a scope per dispatch needs profile off or ring") != NULL);
    }
    dec_destroy(e);
    dec_hooks h2 = {.all_reduce = identity_reduce};
    cfg.hooks = &h2;
    cfg.ranks = 2;
    e = NULL;
    CHECK(dec_create(&g.dev, &cfg, &e, err, sizeof err) != 0 && e == NULL);
    CHECK(strstr(err, "a scope per dispatch is for one rank") != NULL);
}

static void test_commands(void)
{
    dec_hooks h = {.all_reduce = identity_reduce};
    dec_config cfg = {
        .preset = dec_find_preset(preset), .seed = SEED, .hooks = &h, .rank = 0, .ranks = tp_ranks};
    dec_engine *e = NULL;
    char err[512] = "";
    if (dec_create(&g.dev, &cfg, &e, err, sizeof err) != 0) {
        fprintf(stderr, "  dec_create: %s\n", err);
        CHECK(0);
        return;
    }
    counts off;
    CHECK(run_mode(e, DEC_PROFILE_OFF, NULL, &off, "off") == 0);
    uint64_t calls = dec_calls_per_token(e);
    /* a barrier opens the buffer and separates the calls, one before the host reads */
    CHECK(off.barrier >= (calls + 1) * T);
    CHECK(off.dispatch >= calls * T);
    CHECK_EQ_U64(off.bind_pipeline, off.dispatch);
    CHECK_EQ_U64(off.stamp + off.stamp2 + off.cmd_reset + off.host_reset + off.results, 0);
    uint64_t S = segments_per_token(e);
    CHECK_EQ_U64(off.begin, S * T);
    CHECK_EQ_U64(off.submit, S * T);
    /* each all-reduce site: the partial residual out and the sum back in;
     * the routed experts are read from their buffer */
    CHECK_EQ_U64(off.copy, 2 * tp_sites() * T);
    ring_case(e, &off, false, 0, calls);
    ring_case(e, &off, true, 0, calls);
    ring_case(e, &off, false, 2, calls);
    baseline_case(e, &off, DEC_PROFILE_BASELINE);
    baseline_case(e, &off, DEC_PROFILE_BASELINE_SHARED);
    gpu_case(e, &off);
    counts again;
    reduces = 0;
    routed = 0;
    CHECK(run_mode(e, DEC_PROFILE_OFF, NULL, &again, "off again") == 0);
    CHECK(memcmp(&again, &off, sizeof off) == 0);
    CHECK_EQ_U64(reduces, tp_sites() * T);
    CHECK_EQ_U64(routed, moe_syncs() * T);
    dec_destroy(e);
    if (tp_ranks <= 1) {
        scope_dispatch_case(&off);
    }
}

/* The same with 1 + 2 x layers segments per token (see the top). */
static void test_commands_segmented(void)
{
    tp_ranks = 2;
    test_commands();
    tp_ranks = 0;
}

static void test_commands_old_paths(void)
{
    vku_device saved = g.dev;
    g.dev.sync2 = false;
    g.dev.host_query_reset = false;
    test_commands();
    g.dev = saved;
}

int main(void)
{
    th_gpu_init(&g);
    interpose();
    RUN(test_commands);
    RUN(test_commands_old_paths);
    RUN(test_commands_segmented);
    tp_ranks = 2;
    RUN(test_commands_old_paths);
    tp_ranks = 0;
    /* moe-tiny: 1 + 2 MoE read-backs a token; with 2 ranks, 6 all-reduces more */
    preset = "moe-tiny";
    RUN(test_commands);
    RUN(test_commands_old_paths);
    RUN(test_commands_segmented);
    th_gpu_finish(&g);
    return th_done();
}
