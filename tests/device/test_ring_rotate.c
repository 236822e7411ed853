/* Rotating sampling in the ring (desc.rotate_scopes = K), on lavapipe with
 * validation on, through the counting function table (tests/sim.c):
 * coverage (every call index stamped exactly once per pass of P steps), the
 * stamps per step (K + 1 with shared boundaries, counted through the table),
 * the estimator against the every-step shared ring on a deterministic
 * workload (query values set per boundary through the sim's slot knobs), the
 * sample accounting, a full ring, a step whose number of calls changes, the
 * seed's model (no vkprof_cmd_submit),
 * misuse on a call left out, the VKPROF_RING_ROTATE override, and each
 * phase's first call stamped apart and counted once (rotate_first_calls),
 * and calls counted from more threads than the thread table holds. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h" /* VKPROF_MAX_THREADS, vkprof__thread_count */
#include "context.h"   /* clock_checks_off: the sim's fake values are not on the host clock */
#include "harness.h"
#include "sim.h"

static th_gpu g;
static vku_busy busy;
static th_log logbuf;

static bool first_calls;         /* make_rot: desc.rotate_first_calls */
static vkprof_feature outer_top; /* make_rot: desc.outer_begin_top */

static vkprof_context make_rot(uint32_t queries, bool shared, uint32_t rotate)
{
    vkprof_context_desc d = th_desc(&g, &logbuf, true);
    d.enable = VKPROF_ENABLE_ON;
    d.timing_mode = VKPROF_TIMING_RING;
    d.ring_queries = queries;
    d.shared_boundaries = shared;
    d.rotate_scopes = rotate;
    d.rotate_first_calls = first_calls;
    d.outer_begin_top = outer_top;
    d.host_query_reset = g.dev.host_query_reset;
    d.report_every = UINT32_MAX;
    vkprof_context ctx = th_ctx(&d);
    if (ctx != NULL) {
        ctx->clock_checks_off = true;
    }
    return ctx;
}

static uint64_t stamps_now(void)
{
    return g_sim.cmd_timestamp + g_sim.cmd_timestamp2;
}

static void check_accounting(vkprof_context ctx)
{
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.samples, t.scopes_collected + t.scopes_dropped + t.scopes_pending);
    CHECK_EQ_U64(t.scopes_dropped, t.lost_ring_full + t.lost_overwritten + t.lost_never_submitted +
                                       t.lost_reset + t.lost_misuse);
}

/* The deterministic workload: boundary j of a step (the start of call j;
 * j = n: the end of the last call) is at base + bnd[j] ticks. */
#define MAXC 16
static uint64_t bnd[MAXC + 1];
static uint64_t token_base;

/* The stamps recorded since `from` are boundary `j`: set their values. */
static void fake_since(uint32_t from, uint32_t j)
{
    for (uint32_t s = from; s < g_sim.stamps && s < SIM_STAMPS; s++) {
        uint32_t q = g_sim.stamp[s].query;
        CHECK(q < SIM_SLOTS);
        if (q < SIM_SLOTS) {
            g_sim.slot[q].fake = true;
            g_sim.slot[q].value = token_base + bnd[j];
        }
    }
}

/* One step: `n` calls of phases ph[0..n), a barrier between, in g.dev.cmd;
 * submitted through vkprof_queue_submit and collected. Returns the stamps
 * recorded. `fake`: set each boundary's value as it is stamped. */
static void resubmit_step(vkprof_context ctx);

/* g.dev.cmd begun for any number of submits (vku_begin's is for one) */
static void begin_reusable(void)
{
    CHECK_VK(vkResetCommandBuffer(g.dev.cmd, 0));
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    CHECK_VK(vkBeginCommandBuffer(g.dev.cmd, &bi));
}

static bool reusable; /* run_step: the buffer may be submitted again */
/* run_step: each call through vkprof_cmd_begin_leaf, as the vkprof layer
 * makes its dispatches: a call the window leaves out gets no end, and is
 * counted here and handed over at the buffer's submit (vkprof_count_calls) */
static bool leaf;

static uint64_t run_step(vkprof_context ctx, uint32_t n, const vkprof_phase *ph, bool fake)
{
    uint64_t before = stamps_now();
    if (reusable) {
        begin_reusable();
    } else {
        CHECK_VK(vku_begin(&g.dev));
    }
    uint64_t left[VKPROF_MAX_PHASES] = {0};
    for (uint32_t i = 0; i < n; i++) {
        if (i) {
            vku_compute_barrier(g.dev.cmd);
        }
        uint32_t s0 = g_sim.stamps;
        bool left_out = false;
        vkprof_result r = leaf ? vkprof_cmd_begin_leaf(ctx, g.dev.cmd, ph[i], &left_out)
                               : vkprof_cmd_begin(ctx, g.dev.cmd, ph[i]);
        CHECK(r == VKPROF_OK || r == VKPROF_DISABLED);
        CHECK(!left_out || r == VKPROF_DISABLED);
        if (fake) {
            fake_since(s0, i);
        }
        vku_busy_record(&g.dev, &busy, g.dev.cmd, 4);
        if (left_out) {
            CHECK_EQ_U64(g_sim.stamps, s0); /* nothing recorded for it */
            left[ph[i]]++;
            continue;
        }
        s0 = g_sim.stamps;
        r = vkprof_cmd_end(ctx, g.dev.cmd, ph[i]);
        CHECK(r == VKPROF_OK || r == VKPROF_DISABLED);
        if (fake) {
            fake_since(s0, i + 1);
        }
    }
    CHECK_VK(vkEndCommandBuffer(g.dev.cmd));
    for (uint32_t p = 0; p < VKPROF_MAX_PHASES; p++) {
        if (left[p] > 0) {
            CHECK(vkprof_count_calls(ctx, p, left[p]) == VKPROF_OK); /* its execution */
        }
    }
    resubmit_step(ctx);
    return stamps_now() - before;
}

/* Every call index is stamped exactly once per pass of P = ceil(C / K)
 * steps, and a step costs min(K, C - start) + 1 stamps with shared
 * boundaries (2 per call without). */
static void coverage(bool shared)
{
    enum { C = 7, K = 2, P = 4, PASSES = 3 };
    sim_reset();
    vkprof_context ctx = make_rot(0, shared, K);
    vkprof_phase ph[C];
    for (uint32_t i = 0; i < C; i++) {
        char name[16];
        snprintf(name, sizeof name, "call%u", i);
        CHECK(vkprof_register_phase(ctx, name, &ph[i]) == VKPROF_OK);
    }
    for (uint32_t step = 0; step < P * PASSES; step++) {
        uint32_t start = (step % P) * K;
        uint32_t stamped = C - start < K ? C - start : K;
        uint64_t stamps = run_step(ctx, C, ph, false);
        CHECK_EQ_U64(stamps, shared ? stamped + 1 : 2 * stamped);
        uint32_t pass = step / P;
        for (uint32_t i = 0; i < C; i++) {
            /* stamped this pass so far: the indexes below this step's window end */
            uint64_t want = pass + (i < start + stamped ? 1 : 0);
            CHECK_EQ_U64(th_phase(ctx, ph[i]).count, want);
        }
        check_accounting(ctx);
    }
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.rotate_scopes, K);
    CHECK_EQ_U64(t.rotate_cycles, PASSES);
    CHECK_EQ_U64(t.rotate_period, P);
    CHECK_EQ_U64(t.rotate_calls_per_step, C);
    CHECK_EQ_U64(t.rotate_changed_steps, 0);
    CHECK_EQ_U64(t.calls_executed, (uint64_t)C * P * PASSES);
    CHECK_EQ_U64(t.calls_unstamped, (uint64_t)C * P * PASSES - (uint64_t)C * PASSES);
    CHECK_EQ_U64(t.samples, (uint64_t)C * PASSES); /* calls left out are no samples */
    CHECK_EQ_U64(t.scopes_collected, (uint64_t)C * PASSES);
    CHECK_EQ_U64(t.scopes_dropped, 0);
    CHECK_EQ_U64(t.scopes_pending, 0);
    for (uint32_t i = 0; i < C; i++) {
        vkprof_phase_stats s = th_phase(ctx, ph[i]);
        CHECK_EQ_U64(s.calls, P * PASSES);
        CHECK(s.total_ns > 0);
        /* the estimate: mean of the timed calls times the calls executed */
        CHECK_EQ_U64(s.est_total_ns, s.total_ns * P); /* total is PASSES calls, P * PASSES ran */
    }
    vkprof_destroy(ctx);
}

static void test_rotate_coverage_shared(void)
{
    coverage(true);
}

static void test_rotate_coverage_unshared(void)
{
    coverage(false);
}

static void test_rotate_estimates(void);

/* The same gap next to an outer scope (which takes no call index): a call
 * stamped after an outer scope's end and a left-out call must stamp its
 * own begin; an outer scope begun right after a stamped call, nothing
 * numbered since, still shares its end. K = 2, first calls stamped: step 0
 * has 4 calls of X (the window [0, 2)); step 1 (the window [2, 4)) records
 * outer O, then X (index 0, left out), then Y (index 1: the window's edge,
 * and Y's first call, so stamped), then O again. */
static void test_rotate_leaf_gap_outer(void)
{
    sim_reset();
    first_calls = true;
    vkprof_context ctx = make_rot(0, true, 2);
    vkprof_phase x = VKPROF_PHASE_NORM, y = VKPROF_PHASE_QKV, o;
    CHECK(vkprof_register_phase(ctx, "buffer", &o) == VKPROF_OK);
    CHECK(vkprof_set_phase_flags(ctx, o, VKPROF_PHASE_FLAG_OUTER) == VKPROF_OK);
    leaf = true;
    const vkprof_phase four[4] = {x, x, x, x};
    CHECK_EQ_U64(run_step(ctx, 4, four, false), 3); /* [0, 2) of 4: 3 stamps, shared */
    uint64_t before = stamps_now();
    CHECK_VK(vku_begin(&g.dev));
    CHECK(vkprof_cmd_begin_leaf(ctx, g.dev.cmd, o, &(bool){false}) == VKPROF_OK);
    vku_busy_record(&g.dev, &busy, g.dev.cmd, 4);
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, o) == VKPROF_OK); /* 2 stamps */
    bool lo = false;
    CHECK(vkprof_cmd_begin_leaf(ctx, g.dev.cmd, x, &lo) == VKPROF_DISABLED && lo); /* index 0 */
    vku_busy_record(&g.dev, &busy, g.dev.cmd, 4);
    uint64_t mid = stamps_now();
    CHECK(vkprof_cmd_begin_leaf(ctx, g.dev.cmd, y, &lo) == VKPROF_OK && !lo); /* index 1 */
    CHECK_EQ_U64(stamps_now() - mid, 1); /* its own begin: O's end is before X */
    vku_busy_record(&g.dev, &busy, g.dev.cmd, 4);
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, y) == VKPROF_OK);
    /* an outer scope right after Y's end, nothing numbered since: it shares */
    mid = stamps_now();
    CHECK(vkprof_cmd_begin_leaf(ctx, g.dev.cmd, o, &lo) == VKPROF_OK && !lo);
    CHECK_EQ_U64(stamps_now() - mid, 0);
    vku_busy_record(&g.dev, &busy, g.dev.cmd, 4);
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, o) == VKPROF_OK);
    CHECK_VK(vkEndCommandBuffer(g.dev.cmd));
    CHECK(vkprof_count_calls(ctx, x, 1) == VKPROF_OK); /* the left-out X, run once */
    th_submit_wait(&g, ctx, 1, &g.dev.cmd);
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    vkprof_step(ctx);
    CHECK_EQ_U64(stamps_now() - before, 2 + 2 + 1);
    CHECK_EQ_U64(th_phase(ctx, y).count, 1);
    CHECK_EQ_U64(th_phase(ctx, x).calls, 5);
    CHECK_EQ_U64(th_phase(ctx, o).count, 2);
    check_accounting(ctx);
    leaf = false;
    first_calls = false;
    vkprof_destroy(ctx);
}

/* The same through vkprof_cmd_begin_leaf: the same stamps a step, samples,
 * calls and estimates, with the left-out calls counted by the caller */
static void test_rotate_leaf(void)
{
    leaf = true;
    coverage(true);
    coverage(false);
    test_rotate_estimates(); /* every call measured as the every-step ring measures it */
    leaf = false;
}

/* A call the window leaves out through vkprof_cmd_begin_leaf leaves no
 * trace in the buffer's tracker: the next stamped call must not take the
 * boundary of a stamped call before the gap, or the left-out calls would be
 * timed with it. Window [0, 2) of 5 calls, the fifth a phase's first call
 * (stamped whatever the window): its own begin stamp, 5 stamps, its exact
 * time; through vkprof_cmd_begin the same. */
static void test_rotate_leaf_gap(void)
{
    enum { C = 5, K = 2 };
    vkprof_phase ph[C] = {VKPROF_PHASE_NORM, VKPROF_PHASE_NORM, VKPROF_PHASE_NORM,
                          VKPROF_PHASE_NORM, VKPROF_PHASE_QKV};
    bnd[0] = 0;
    for (uint32_t i = 0; i < C; i++) {
        bnd[i + 1] = bnd[i] + 1000 + 100 * i;
    }
    for (int l = 1; l >= 0; l--) {
        leaf = l != 0;
        first_calls = true;
        sim_reset();
        g_sim.slot_knobs = true;
        vkprof_context ctx = make_rot(128, true, K);
        token_base = UINT64_C(1) << 40;
        CHECK_EQ_U64(run_step(ctx, C, ph, true), 5);
        CHECK_EQ_U64(g_sim.slot_knob_skips, 0);
        vkprof_phase_stats q = th_phase(ctx, VKPROF_PHASE_QKV);
        CHECK_EQ_U64(q.count, 1);
        CHECK_EQ_U64(q.total_ns, bnd[5] - bnd[4]); /* call 4 alone */
        vkprof_phase_stats nm = th_phase(ctx, VKPROF_PHASE_NORM);
        CHECK_EQ_U64(nm.count, 2);
        CHECK_EQ_U64(nm.calls, 4);
        CHECK_EQ_U64(nm.total_ns, bnd[2] - bnd[0]);
        vkprof_timing_stats t = th_stats(ctx);
        CHECK_EQ_U64(t.calls_executed, C);
        CHECK_EQ_U64(t.calls_unstamped, 2);
        check_accounting(ctx);
        vkprof_destroy(ctx);
    }
    leaf = false;
    first_calls = false;
}

/* The estimate equals the every-step shared ring's exact totals on a
 * deterministic workload: 10 calls a step over 5 phases (each phase twice,
 * with different durations), K = 3 (P = 4), 8 steps = 2 passes. */
static void test_rotate_estimates(void)
{
    enum { C = 10, K = 3, P = 4, STEPS = 8 };
    static const vkprof_phase base5[5] = {VKPROF_PHASE_NORM, VKPROF_PHASE_QKV,
                                          VKPROF_PHASE_ATTENTION, VKPROF_PHASE_MLP_GATE_UP,
                                          VKPROF_PHASE_MLP_DOWN};
    vkprof_phase ph[C];
    bnd[0] = 0;
    for (uint32_t i = 0; i < C; i++) {
        ph[i] = base5[i % 5];
        bnd[i + 1] = bnd[i] + 1000 + 137 * i; /* call i lasts 1000 + 137 i ticks */
    }
    vkprof_phase_stats every[5], rot[5];
    vkprof_timing_stats te, tr;
    for (int mode = 0; mode < 2; mode++) {
        sim_reset();
        g_sim.slot_knobs = true;
        vkprof_context ctx = make_rot(128, true, mode == 0 ? 0 : K);
        CHECK(th_stats(ctx).ring_queries <= SIM_SLOTS);
        for (uint32_t step = 0; step < STEPS; step++) {
            token_base = UINT64_C(1) << 40 | (uint64_t)(step + 1) << 24;
            uint64_t stamps = run_step(ctx, C, ph, true);
            if (mode == 1) {
                uint32_t start = (step % P) * K;
                uint32_t stamped = C - start < K ? C - start : K;
                CHECK_EQ_U64(stamps, stamped + 1);
            } else {
                CHECK_EQ_U64(stamps, C + 1);
            }
        }
        CHECK_EQ_U64(g_sim.slot_knob_skips, 0);
        for (int k = 0; k < 5; k++) {
            (mode == 0 ? every : rot)[k] = th_phase(ctx, base5[k]);
        }
        (mode == 0 ? &te : &tr)[0] = th_stats(ctx);
        check_accounting(ctx);
        vkprof_destroy(ctx);
    }
    CHECK_EQ_U64(te.scopes_collected, C * STEPS);
    CHECK_EQ_U64(tr.scopes_collected, C * STEPS / P);
    CHECK_EQ_U64(tr.calls_executed, C * STEPS);
    CHECK_EQ_U64(tr.rotate_cycles, STEPS / P);
    for (int k = 0; k < 5; k++) {
        /* phase k: calls k and k + 5, each STEPS times */
        uint64_t exact = STEPS * ((bnd[k + 1] - bnd[k]) + (bnd[k + 6] - bnd[k + 5]));
        CHECK_EQ_U64(every[k].total_ns, exact);
        CHECK_EQ_U64(every[k].est_total_ns, exact);
        CHECK_EQ_U64(every[k].calls, 2 * STEPS);
        CHECK_EQ_U64(every[k].count, 2 * STEPS);
        CHECK_EQ_U64(rot[k].count, 2 * STEPS / P);
        CHECK_EQ_U64(rot[k].calls, 2 * STEPS);
        CHECK_EQ_U64(rot[k].est_total_ns, every[k].total_ns);
        /* the same calls, measured the same way: the same extremes */
        CHECK_EQ_U64(rot[k].min_ns, every[k].min_ns);
        CHECK_EQ_U64(rot[k].max_ns, every[k].max_ns);
    }
}

/* A ring too small for the window: the calls that find no slot are lost and
 * counted, as in the every-step ring; the accounting balances. */
static void test_rotate_ring_full(void)
{
    enum { C = 8, K = 6 };
    static const vkprof_phase p8[C] = {
        VKPROF_PHASE_NORM,     VKPROF_PHASE_QKV,  VKPROF_PHASE_ATTENTION, VKPROF_PHASE_MLP_GATE_UP,
        VKPROF_PHASE_MLP_DOWN, VKPROF_PHASE_NORM, VKPROF_PHASE_QKV,       VKPROF_PHASE_ATTENTION};
    sim_reset();
    vkprof_context ctx = make_rot(4, true, K); /* 4 slots; the window needs 7 stamps */
    for (int step = 0; step < 4; step++) {
        run_step(ctx, C, p8, false);
        check_accounting(ctx);
    }
    vkprof_timing_stats t = th_stats(ctx);
    CHECK(t.lost_ring_full > 0);
    CHECK(t.scopes_collected > 0);
    CHECK_EQ_U64(t.scopes_pending, 0);
    /* windows [0,6) [6,8) [0,6) [6,8): 16 stamped calls, 16 left out */
    CHECK_EQ_U64(t.samples, 16);
    CHECK_EQ_U64(t.calls_unstamped, 16);
    CHECK_EQ_U64(t.scopes_collected + t.lost_ring_full, 16);
    vkprof_destroy(ctx);
}

/* A step with another number of calls (another token path) is counted; the
 * window wraps at the calls of the step just finished; nothing is lost. */
static void test_rotate_changed_path(void)
{
    static const vkprof_phase p6[6] = {VKPROF_PHASE_NORM,      VKPROF_PHASE_QKV,
                                       VKPROF_PHASE_ATTENTION, VKPROF_PHASE_MLP_GATE_UP,
                                       VKPROF_PHASE_MLP_DOWN,  VKPROF_PHASE_LM_HEAD};
    sim_reset();
    vkprof_context ctx = make_rot(0, true, 4);
    /* calls: 6 [0,4) ; 6 [4,6) ; 4 [0,4) ; 6 [0,4) ; 6 [4,6) */
    static const uint32_t n[5] = {6, 6, 4, 6, 6};
    static const uint32_t want_stamps[5] = {5, 3, 5, 5, 3};
    for (int step = 0; step < 5; step++) {
        CHECK_EQ_U64(run_step(ctx, n[step], p6, false), want_stamps[step]);
        check_accounting(ctx);
    }
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.rotate_changed_steps, 2);
    CHECK_EQ_U64(t.rotate_cycles, 3);
    CHECK_EQ_U64(t.calls_executed, 28);
    CHECK_EQ_U64(t.samples, 4 + 2 + 4 + 4 + 2);
    CHECK_EQ_U64(t.scopes_collected, t.samples);
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_LM_HEAD).calls, 4);
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_LM_HEAD).count, 2);
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_NORM).calls, 5);
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_NORM).count, 3);
    /* the snapshot says it */
    size_t need = 0;
    vkprof_snapshot_json(ctx, NULL, 0, &need);
    char *js = malloc(need);
    CHECK(js != NULL && vkprof_snapshot_json(ctx, js, need, &need) == VKPROF_OK);
    CHECK(js != NULL && strstr(js, "\"changed_steps\":2") != NULL);
    CHECK(js != NULL && strstr(js, "\"calls_executed\":28") != NULL);
    CHECK(js != NULL && strstr(js, "\"rotate_scopes\":4") != NULL);
    free(js);
    vkprof_destroy(ctx);
}

/* Steps of two lengths, alternating (issue 26): a long step of 12 calls,
 * then a short one of 4, K = 2. The window used to start again at 0 past
 * the short step's last call, so the long step's calls 4..11 were never
 * stamped; now a short step leaves a window it does not reach for the next
 * long step, and every call of both is stamped within two passes. Then
 * only short steps: after ROT_WAIT_MAX of them the window starts again at
 * 0, and the short step's calls are stamped again. */
static void test_rotate_uneven_steps(void)
{
    enum { A = 12, B = 4, K = 2 };
    sim_reset();
    vkprof_context ctx = make_rot(0, true, K);
    vkprof_phase pa[A], pb[B];
    for (uint32_t i = 0; i < A; i++) {
        char name[16];
        snprintf(name, sizeof name, "long%u", i);
        CHECK(vkprof_register_phase(ctx, name, &pa[i]) == VKPROF_OK);
    }
    for (uint32_t i = 0; i < B; i++) {
        char name[16];
        snprintf(name, sizeof name, "short%u", i);
        CHECK(vkprof_register_phase(ctx, name, &pb[i]) == VKPROF_OK);
    }
    /* pass 1: A [0,2) B [2,4) A [4,6) B - A [6,8) B - A [8,10) B - A [10,12),
     * 9 steps; pass 2 starts with a short step: B [0,2) A [2,4) ... */
    for (int step = 0; step < 20; step++) {
        if (step % 2 == 0) {
            run_step(ctx, A, pa, false);
        } else {
            run_step(ctx, B, pb, false);
        }
        check_accounting(ctx);
    }
    for (uint32_t i = 0; i < A; i++) {
        CHECK(th_phase(ctx, pa[i]).count >= 1);
        CHECK_EQ_U64(th_phase(ctx, pa[i]).calls, 10);
    }
    for (uint32_t i = 0; i < B; i++) {
        CHECK(th_phase(ctx, pb[i]).count >= 1);
    }
    vkprof_timing_stats t = th_stats(ctx);
    CHECK(t.rotate_cycles >= 2);
    CHECK_EQ_U64(t.rotate_changed_steps, 19);
    CHECK_EQ_U64(t.scopes_dropped, 0);
    /* only short steps now: the window (past 4 or not) comes back to them */
    uint64_t before = th_phase(ctx, pb[0]).count;
    for (int step = 0; step < 80; step++) {
        run_step(ctx, B, pb, false);
    }
    CHECK(th_phase(ctx, pb[0]).count > before);
    check_accounting(ctx);
    vkprof_destroy(ctx);
}

/* An outer phase (VKPROF_PHASE_FLAG_OUTER, issue 26) around each step's
 * calls: stamped in every step (2 stamps more a step), exact (its estimate
 * is its total), and no call index, so the window moves over the inner
 * calls exactly as without it; its time holds the stamped inner calls'.
 * Flags are refused for an unknown phase or bit. */
static void test_rotate_outer(void)
{
    enum { C = 5, K = 2, P = 3, PASSES = 3 };
    sim_reset();
    vkprof_context ctx = make_rot(0, true, K);
    vkprof_phase ph[C], outer;
    for (uint32_t i = 0; i < C; i++) {
        char name[16];
        snprintf(name, sizeof name, "call%u", i);
        CHECK(vkprof_register_phase(ctx, name, &ph[i]) == VKPROF_OK);
    }
    CHECK(vkprof_register_phase(ctx, "buffer", &outer) == VKPROF_OK);
    CHECK(vkprof_set_phase_flags(ctx, outer, 0x2u) == VKPROF_ERROR_INVALID_ARGUMENT);
    CHECK(vkprof_set_phase_flags(ctx, outer + 1, VKPROF_PHASE_FLAG_OUTER) ==
          VKPROF_ERROR_INVALID_ARGUMENT);
    CHECK(vkprof_set_phase_flags(NULL, outer, VKPROF_PHASE_FLAG_OUTER) ==
          VKPROF_ERROR_INVALID_ARGUMENT);
    CHECK(vkprof_phase_flags(ctx, outer) == 0);
    CHECK(vkprof_set_phase_flags(ctx, outer, VKPROF_PHASE_FLAG_OUTER) == VKPROF_OK);
    CHECK(vkprof_phase_flags(ctx, outer) == VKPROF_PHASE_FLAG_OUTER);
    CHECK(vkprof_phase_flags(ctx, outer + 1) == 0);
    for (uint32_t step = 0; step < P * PASSES; step++) {
        uint32_t start = (step % P) * K;
        uint32_t stamped = C - start < K ? C - start : K;
        uint64_t before = stamps_now();
        CHECK_VK(vku_begin(&g.dev));
        CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, outer) == VKPROF_OK);
        for (uint32_t i = 0; i < C; i++) {
            vku_compute_barrier(g.dev.cmd);
            vkprof_result r = vkprof_cmd_begin(ctx, g.dev.cmd, ph[i]);
            CHECK(r == (i >= start && i < start + stamped ? VKPROF_OK : VKPROF_DISABLED));
            vku_busy_record(&g.dev, &busy, g.dev.cmd, 4);
            (void)vkprof_cmd_end(ctx, g.dev.cmd, ph[i]);
        }
        CHECK(vkprof_cmd_end(ctx, g.dev.cmd, outer) == VKPROF_OK);
        CHECK_VK(vkEndCommandBuffer(g.dev.cmd));
        th_submit_wait(&g, ctx, 1, &g.dev.cmd);
        CHECK(vkprof_collect(ctx) == VKPROF_OK);
        vkprof_step(ctx);
        /* the window's K + 1, the buffer's 2 */
        CHECK_EQ_U64(stamps_now() - before, stamped + 1 + 2);
        CHECK_EQ_U64(th_phase(ctx, outer).count, step + 1);
        check_accounting(ctx);
    }
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.rotate_calls_per_step, C); /* the outer scope takes no index */
    CHECK_EQ_U64(t.rotate_period, P);
    CHECK_EQ_U64(t.rotate_cycles, PASSES);
    CHECK_EQ_U64(t.calls_executed, (uint64_t)(C + 1) * P * PASSES);
    CHECK_EQ_U64(t.calls_unstamped, (uint64_t)C * P * PASSES - (uint64_t)C * PASSES);
    CHECK_EQ_U64(t.scopes_dropped, 0);
    vkprof_phase_stats o = th_phase(ctx, outer);
    CHECK_EQ_U64(o.calls, P * PASSES);
    CHECK_EQ_U64(o.est_total_ns, o.total_ns);
    CHECK_EQ_U64(o.flags, VKPROF_PHASE_FLAG_OUTER);
    CHECK_EQ_U64(o.first_calls, 0);
    uint64_t inner = 0;
    for (uint32_t i = 0; i < C; i++) {
        vkprof_phase_stats s = th_phase(ctx, ph[i]);
        CHECK_EQ_U64(s.count, PASSES);
        CHECK_EQ_U64(s.flags, 0);
        inner += s.total_ns;
    }
    /* each step's buffer holds its stamped calls: a GPU fact, on lavapipe */
    CHECK(o.total_ns >= inner && inner > 0);
    /* vkprof_reset keeps the flags */
    vkprof_reset(ctx);
    CHECK(vkprof_phase_flags(ctx, outer) == VKPROF_PHASE_FLAG_OUTER);
    vkprof_destroy(ctx);
}

/* The seed's model (no vkprof_cmd_submit): no edge stamp (a collect could
 * free it before it ran); the window's first call stamps its own begin, so
 * a window is still K + 1 stamps, and every index is covered once a pass. */
static void test_rotate_seed_model(void)
{
    enum { C = 6, K = 2, P = 3 };
    static const vkprof_phase p6[C] = {VKPROF_PHASE_NORM,     VKPROF_PHASE_QKV,
                                       VKPROF_PHASE_ROPE,     VKPROF_PHASE_ATTENTION,
                                       VKPROF_PHASE_MLP_DOWN, VKPROF_PHASE_LM_HEAD};
    sim_reset();
    vkprof_context ctx = make_rot(0, true, K);
    for (int step = 0; step < 2 * P; step++) {
        uint64_t before = stamps_now();
        CHECK_VK(vku_begin(&g.dev));
        for (int i = 0; i < C; i++) {
            if (i) {
                vku_compute_barrier(g.dev.cmd);
            }
            vkprof_result r = vkprof_cmd_begin(ctx, g.dev.cmd, p6[i]);
            CHECK(r == VKPROF_OK || r == VKPROF_DISABLED);
            vku_busy_record(&g.dev, &busy, g.dev.cmd, 4);
            r = vkprof_cmd_end(ctx, g.dev.cmd, p6[i]);
            CHECK(r == VKPROF_OK || r == VKPROF_DISABLED);
        }
        CHECK_EQ_U64(stamps_now() - before, K + 1);
        CHECK_VK(vku_submit_wait(&g.dev));
        CHECK(vkprof_collect(ctx) == VKPROF_OK);
        vkprof_step(ctx);
        check_accounting(ctx);
    }
    for (int i = 0; i < C; i++) {
        CHECK_EQ_U64(th_phase(ctx, p6[i]).count, 2);
        CHECK_EQ_U64(th_phase(ctx, p6[i]).calls, 2 * P);
    }
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.scopes_collected, 2 * C);
    CHECK_EQ_U64(t.scopes_pending, 0);
    CHECK_EQ_U64(t.scopes_dropped, 0);
    vkprof_destroy(ctx);
}

/* A driver compiles a pipeline at its first dispatch: on a deterministic
 * workload whose step 0 makes each phase's first call 50000 ticks longer,
 * 6 calls a step over 3 phases (each phase's calls alike), K = 2 (P = 3),
 * 12 steps. With rotate_first_calls each phase's first call is stamped
 * whatever the window (step 0: its window of 2 and the third phase's first
 * call) and counted once: the estimate is the exact total. Without, a first
 * call inside the window is scaled by the period (+2 x 50000), and one
 * outside it is never seen (-50000). */
static void test_rotate_first_calls(void)
{
    enum { C = 6, K = 2, P = 3, STEPS = 12, COMPILE = 50000 };
    static const vkprof_phase base3[3] = {VKPROF_PHASE_NORM, VKPROF_PHASE_QKV,
                                          VKPROF_PHASE_ATTENTION};
    vkprof_phase ph[C];
    for (uint32_t i = 0; i < C; i++) {
        ph[i] = base3[i % 3];
    }
    for (int with = 1; with >= 0; with--) {
        sim_reset();
        g_sim.slot_knobs = true;
        first_calls = with != 0;
        vkprof_context ctx = make_rot(128, true, K);
        for (uint32_t step = 0; step < STEPS; step++) {
            bnd[0] = 0;
            for (uint32_t i = 0; i < C; i++) {
                bnd[i + 1] = bnd[i] + 1000 + 300 * (i % 3) + (step == 0 && i < 3 ? COMPILE : 0);
            }
            token_base = UINT64_C(1) << 40 | (uint64_t)(step + 1) << 24;
            uint64_t stamps = run_step(ctx, C, ph, true);
            /* step 0 with the flag: calls 0, 1 (the window) and 2 (a first
             * call), boundaries shared: 4 stamps; else K + 1 */
            CHECK_EQ_U64(stamps, step == 0 && with ? 4 : K + 1);
            check_accounting(ctx);
        }
        CHECK_EQ_U64(g_sim.slot_knob_skips, 0);
        vkprof_timing_stats t = th_stats(ctx);
        CHECK_EQ_U64(t.rotate_cycles, STEPS / P);
        CHECK_EQ_U64(t.calls_executed, C * STEPS);
        CHECK_EQ_U64(t.samples, (uint64_t)C * STEPS / P + (with ? 1 : 0));
        CHECK_EQ_U64(t.scopes_collected, t.samples);
        for (uint32_t k = 0; k < 3; k++) {
            vkprof_phase_stats s = th_phase(ctx, base3[k]);
            const uint64_t d = 1000 + 300 * k;
            const uint64_t exact = COMPILE + 2 * STEPS * d;
            CHECK_EQ_U64(s.calls, 2 * STEPS);
            CHECK_EQ_U64(s.count, 2 * STEPS / P + (with && k == 2 ? 1 : 0));
            CHECK_EQ_U64(s.first_calls, with ? 1 : 0);
            CHECK_EQ_U64(s.first_ns, with ? COMPILE + d : 0);
            CHECK_EQ_U64(s.max_ns, k == 2 && !with ? d : COMPILE + d);
            if (with) {
                CHECK_EQ_U64(s.est_total_ns, exact);
            } else if (k < 2) {
                CHECK_EQ_U64(s.est_total_ns, exact + 2 * COMPILE); /* scaled by P */
            } else {
                CHECK_EQ_U64(s.est_total_ns, exact - COMPILE); /* never stamped */
            }
        }
        size_t need = 0;
        vkprof_snapshot_json(ctx, NULL, 0, &need);
        char *js = malloc(need);
        CHECK(js != NULL && vkprof_snapshot_json(ctx, js, need, &need) == VKPROF_OK);
        CHECK(js != NULL && (strstr(js, "\"first_calls\":1") != NULL) == (with != 0));
        CHECK(js != NULL && (strstr(js, "\"rotate_first_calls\":true") != NULL) == (with != 0));
        free(js);
        vkprof_destroy(ctx);
    }
    first_calls = false;
}

/* Submit g.dev.cmd as it is (no recording) through vkprof_queue_submit,
 * wait, collect, step. */
static void resubmit_step(vkprof_context ctx)
{
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &g.dev.cmd};
    CHECK_VK(vkResetFences(g.dev.device, 1, &g.dev.fence));
    CHECK_VK(vkprof_queue_submit(ctx, g.dev.queue, 1, &si, g.dev.fence));
    CHECK_VK(vkWaitForFences(g.dev.device, 1, &g.dev.fence, VK_TRUE, UINT64_MAX));
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    vkprof_step(ctx);
}

/* A recording submitted again runs its calls again: each execution counts
 * them, stamped or left out (issue 26: counted once, at recording, a
 * phase's estimate was its mean times its recorded calls, 1/R of its time
 * over R executions; and with every call stamped, est_total_ns read
 * total_ns / R). A recording whose calls were all left out is counted too,
 * and a recording that never ran takes its left-out calls back. */
/* A re-submitted recording of many phases, some called twice in a row and
 * again later: each execution counts every call (the recording's list of
 * calls grows past its first entries and finds a phase again) */
static void test_rotate_resubmit_many(void)
{
    enum { P = 20, R = 3 };
    vkprof_phase ph[2 * P + 1], reg[P];
    sim_reset();
    vkprof_context ctx = make_rot(0, false, 1);
    for (uint32_t i = 0; i < P; i++) {
        char name[16];
        snprintf(name, sizeof name, "many%u", i);
        CHECK(vkprof_register_phase(ctx, name, &reg[i]) == VKPROF_OK);
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < P; i++) { /* 0 0 1 2 3 ... : phase 0 twice in a row */
        ph[n++] = reg[i];
        if (i == 0) {
            ph[n++] = reg[0];
        }
    }
    for (uint32_t i = 0; i < P; i += 2) { /* and the even ones again, after the others */
        ph[n++] = reg[i];
    }
    reusable = true;
    run_step(ctx, n, ph, false);
    reusable = false;
    for (uint32_t i = 1; i < R; i++) {
        resubmit_step(ctx);
    }
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.calls_executed, (uint64_t)n * R);
    CHECK_EQ_U64(t.calls_unstamped, (uint64_t)(n - 1) * R); /* K = 1: one stamped */
    for (uint32_t i = 0; i < P; i++) {
        const uint64_t per = (i == 0 ? 3u : i % 2 == 0 ? 2u : 1u);
        CHECK_EQ_U64(th_phase(ctx, reg[i]).calls, per * R);
    }
    check_accounting(ctx);
    vkprof_destroy(ctx);
}

static void test_rotate_resubmit(void)
{
    enum { C = 4, R = 5 };
    const vkprof_phase ph[C] = {VKPROF_PHASE_NORM, VKPROF_PHASE_QKV, VKPROF_PHASE_ATTENTION,
                                VKPROF_PHASE_MLP_DOWN};
    for (uint32_t k = 0; k <= 1; k++) { /* every call stamped (k = 0), then K = 1 */
        sim_reset();
        const int warned = logbuf.warnings;
        vkprof_context ctx = make_rot(0, false, k);
        reusable = true;
        run_step(ctx, C, ph, false); /* recorded once, executed R times */
        reusable = false;
        for (uint32_t i = 1; i < R; i++) {
            resubmit_step(ctx);
        }
        vkprof_timing_stats t = th_stats(ctx);
        CHECK_EQ_U64(t.calls_executed, (uint64_t)C * R);
        CHECK_EQ_U64(t.calls_unstamped, k ? (uint64_t)(C - 1) * R : 0);
        CHECK_EQ_U64(t.scopes_collected, k ? R : (uint64_t)C * R);
        CHECK_EQ_U64(t.scopes_dropped, 0);
        for (uint32_t i = 0; i < C; i++) {
            vkprof_phase_stats s = th_phase(ctx, ph[i]);
            CHECK_EQ_U64(s.calls, R);
            if (i == 0 || k == 0) {
                /* stamped: a sample per execution, the estimate exact */
                CHECK_EQ_U64(s.count, R);
                CHECK_EQ_U64(s.est_total_ns, s.total_ns);
                CHECK(s.total_ns > 0);
            } else {
                CHECK_EQ_U64(s.count, 0);
            }
        }
        check_accounting(ctx);
        if (k == 1) {
            /* the window is at index 1 now (R steps of 4 calls, K = 1: index
             * R % 4); a recording of one call, left out, executed twice */
            uint32_t skip = 0;
            begin_reusable();
            skip += vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_LM_HEAD) == VKPROF_DISABLED;
            skip += vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_LM_HEAD) == VKPROF_DISABLED;
            CHECK_VK(vkEndCommandBuffer(g.dev.cmd));
            CHECK_EQ_U64(skip, 2);
            resubmit_step(ctx);
            resubmit_step(ctx);
            CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_LM_HEAD).calls, 2);
            t = th_stats(ctx);
            CHECK_EQ_U64(t.calls_executed, (uint64_t)C * R + 2);
            CHECK_EQ_U64(t.calls_unstamped, (uint64_t)(C - 1) * R + 2);
            /* recorded, never submitted, discarded: its calls never ran */
            CHECK_VK(vku_begin(&g.dev));
            for (uint32_t i = 0; i < C; i++) {
                vkprof_result r = vkprof_cmd_begin(ctx, g.dev.cmd, ph[i]);
                CHECK(r == VKPROF_OK || r == VKPROF_DISABLED);
                r = vkprof_cmd_end(ctx, g.dev.cmd, ph[i]);
                CHECK(r == VKPROF_OK || r == VKPROF_DISABLED);
            }
            CHECK_VK(vkEndCommandBuffer(g.dev.cmd));
            CHECK(vkprof_cmd_discard(ctx, g.dev.cmd) == VKPROF_OK);
            t = th_stats(ctx);
            CHECK_EQ_U64(t.calls_executed, (uint64_t)C * R + 2);
            CHECK_EQ_U64(t.calls_unstamped, (uint64_t)(C - 1) * R + 2);
        }
        CHECK_EQ_U64(logbuf.warnings, warned); /* nothing lost or misused */
        vkprof_destroy(ctx);
    }
    /* The seed's model (no vkprof_cmd_submit): one recording of the buffer
     * is kept across runs; a discard takes back the calls recorded since the
     * last collection only, not those that ran before it */
    sim_reset();
    vkprof_context ctx = make_rot(0, false, 1);
    for (int run = 0; run < 2; run++) {
        CHECK_VK(vku_begin(&g.dev));
        for (uint32_t i = 0; i < C; i++) {
            vkprof_result r = vkprof_cmd_begin(ctx, g.dev.cmd, ph[i]);
            CHECK(r == VKPROF_OK || r == VKPROF_DISABLED);
            r = vkprof_cmd_end(ctx, g.dev.cmd, ph[i]);
            CHECK(r == VKPROF_OK || r == VKPROF_DISABLED);
        }
        if (run == 0) {
            CHECK_VK(vku_submit_wait(&g.dev)); /* ends the buffer */
            CHECK(vkprof_collect(ctx) == VKPROF_OK);
            vkprof_step(ctx);
        } else {
            CHECK_VK(vkEndCommandBuffer(g.dev.cmd));
        }
    }
    CHECK(vkprof_cmd_discard(ctx, g.dev.cmd) == VKPROF_OK);
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.calls_executed, C);
    CHECK_EQ_U64(t.calls_unstamped, C - 1);
    CHECK_EQ_U64(t.scopes_collected, 1);
    vkprof_destroy(ctx);
}

/* desc.outer_begin_top: an outer scope's begin stamp at the top of the pipe
 * (it waits for nothing), its end and every other stamp after all earlier
 * work; off (the default), every stamp waits. Its sample is read as any. */
static void test_rotate_outer_top(void)
{
    if (!g.dev.sync2) {
        printf("  (no synchronization2: the stages are the core API's; skipped)\n");
        return;
    }
    for (int on = 0; on <= 1; on++) {
        sim_reset();
        outer_top = on ? VKPROF_FEATURE_ENABLED : VKPROF_FEATURE_UNKNOWN;
        vkprof_context ctx = make_rot(0, true, 1);
        outer_top = VKPROF_FEATURE_UNKNOWN;
        vkprof_phase outer;
        CHECK(vkprof_register_phase(ctx, "buffer", &outer) == VKPROF_OK);
        CHECK(vkprof_set_phase_flags(ctx, outer, VKPROF_PHASE_FLAG_OUTER) == VKPROF_OK);
        CHECK_VK(vku_begin(&g.dev));
        uint64_t before = stamps_now();
        CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, outer) == VKPROF_OK);
        CHECK_EQ_U64(stamps_now() - before, 1);
        CHECK_EQ_U64(g_sim.last_stage2, on ? VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT
                                           : VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT);
        CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK); /* the window */
        CHECK_EQ_U64(g_sim.last_stage2, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT);
        vku_busy_record(&g.dev, &busy, g.dev.cmd, 4);
        CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK);
        CHECK(vkprof_cmd_end(ctx, g.dev.cmd, outer) == VKPROF_OK);
        CHECK_EQ_U64(g_sim.last_stage2, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT);
        CHECK_EQ_U64(stamps_now() - before, 4);
        CHECK_VK(vkEndCommandBuffer(g.dev.cmd));
        th_submit_wait(&g, ctx, 1, &g.dev.cmd);
        CHECK(vkprof_collect(ctx) == VKPROF_OK);
        vkprof_step(ctx);
        vkprof_phase_stats o = th_phase(ctx, outer), n = th_phase(ctx, VKPROF_PHASE_NORM);
        CHECK_EQ_U64(o.count, 1);
        CHECK_EQ_U64(n.count, 1);
        /* lavapipe runs commands one after another: the top-of-pipe begin
         * still comes before the work inside */
        CHECK(o.total_ns >= n.total_ns && n.total_ns > 0);
        CHECK_EQ_U64(th_stats(ctx).scopes_dropped, 0);
        vkprof_destroy(ctx);
    }
}

/* A call left out records no Vulkan command; its end is checked against its
 * begin; vkprof_reset restarts the counters. */
static void test_rotate_misuse(void)
{
    sim_reset();
    vkprof_context ctx = make_rot(0, false, 1);
    CHECK_VK(vku_begin(&g.dev));
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK); /* index 0 */
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK);
    uint64_t before = g_sim.cmd_calls;
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_QKV) == VKPROF_DISABLED); /* left out */
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_QKV) == VKPROF_DISABLED);
    CHECK_EQ_U64(g_sim.cmd_calls, before);
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_QKV) == VKPROF_DISABLED);
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_MLP_DOWN) == VKPROF_ERROR_PHASE_MISMATCH);
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_QKV) == VKPROF_ERROR_END_WITHOUT_BEGIN);
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    vkprof_step(ctx);
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.scopes_collected, 1);
    CHECK_EQ_U64(t.scopes_dropped, 0); /* a misused call left out is no sample */
    CHECK_EQ_U64(t.calls_executed, 3);
    CHECK_EQ_U64(t.calls_unstamped, 2);
    vkprof_reset(ctx);
    t = th_stats(ctx);
    CHECK_EQ_U64(t.calls_executed, 0);
    CHECK_EQ_U64(t.calls_unstamped, 0);
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_QKV).calls, 0);
    vkprof_destroy(ctx);
}

/* Calls are counted per recording thread, each in its own slot, and summed
 * (issue 26: no lock-prefixed add on a call left out). Threads one after
 * the other, on one command buffer: more than the thread table holds, so
 * the last ones count in the shared counters; then vkprof_reset, and more.
 * Every call is counted exactly once, in its phase. */
typedef struct count_job {
    vkprof_context ctx;
    VkCommandBuffer cmd;
    int fails;
} count_job;

static const vkprof_phase count_phases[3] = {VKPROF_PHASE_QKV, VKPROF_PHASE_ATTENTION,
                                             VKPROF_PHASE_MLP_DOWN};

static void *count_calls(void *arg)
{
    count_job *j = arg;
    for (int i = 0; i < 3; i++) {
        /* left out: no Vulkan command */
        j->fails += vkprof_cmd_begin(j->ctx, j->cmd, count_phases[i]) != VKPROF_DISABLED;
        j->fails += vkprof_cmd_end(j->ctx, j->cmd, count_phases[i]) != VKPROF_DISABLED;
    }
    return NULL;
}

static uint32_t count_in_threads(count_job *j, uint32_t threads)
{
    uint32_t ran = 0;
    for (uint32_t t = 0; t < threads; t++) {
        pthread_t th;
        if (pthread_create(&th, NULL, count_calls, j) == 0) {
            pthread_join(th, NULL);
            ran++;
        }
    }
    return ran;
}

static void test_rotate_calls_per_thread(void)
{
    sim_reset();
    vkprof_context ctx = make_rot(0, false, 1);
    count_job j = {ctx, g.dev.cmd, 0};
    CHECK_VK(vku_begin(&g.dev));
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK); /* index 0 */
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK);
    uint32_t ran = count_in_threads(&j, VKPROF_MAX_THREADS + 16);
    CHECK_EQ_U64(j.fails, 0);
    CHECK_EQ_U64(vkprof__thread_count(), VKPROF_MAX_THREADS); /* the table is full */
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    vkprof_step(ctx);
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.scopes_collected, 1);
    CHECK_EQ_U64(t.calls_executed, 1 + 3 * (uint64_t)ran);
    CHECK_EQ_U64(t.calls_unstamped, 3 * (uint64_t)ran);
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_NORM).calls, 1);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_U64(th_phase(ctx, count_phases[i]).calls, ran);
    }
    vkprof_reset(ctx);
    t = th_stats(ctx);
    CHECK_EQ_U64(t.calls_executed, 0);
    CHECK_EQ_U64(t.calls_unstamped, 0);
    /* after the reset, the window at index 1: this thread (its own slot) and
     * 5 more past the table */
    CHECK_VK(vku_begin(&g.dev));
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_DISABLED); /* index 0 */
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_DISABLED);
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK); /* index 1 */
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK);
    count_calls(&j);
    ran = count_in_threads(&j, 5);
    CHECK_EQ_U64(j.fails, 0);
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    vkprof_step(ctx);
    t = th_stats(ctx);
    CHECK_EQ_U64(t.calls_executed, 2 + 3 * (1 + (uint64_t)ran));
    CHECK_EQ_U64(t.calls_unstamped, 1 + 3 * (1 + (uint64_t)ran));
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_NORM).calls, 2);
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_QKV).calls, 1 + ran);
    vkprof_destroy(ctx);
}

/* vkprof_count_calls: calls a sampler above the library left out (the
 * layer's --sample and cost probe) join the phase's calls and the
 * unstamped ones, so its estimate is its mean times all its calls; in
 * 2-slot mode, inactive or with a NULL ctx it is refused, an unknown phase
 * is an error. */
static void *count_qkv3(void *arg)
{
    CHECK(vkprof_count_calls((vkprof_context)arg, VKPROF_PHASE_QKV, 3) == VKPROF_OK);
    return NULL;
}

static void test_count_calls(void)
{
    static const vkprof_phase ph[2] = {VKPROF_PHASE_NORM, VKPROF_PHASE_QKV};
    sim_reset();
    g_sim.slot_knobs = true;
    vkprof_context ctx = make_rot(64, true, 0);
    bnd[0] = 0;
    bnd[1] = 1000; /* NORM: 1000 ticks */
    bnd[2] = 4000; /* QKV: 3000 ticks */
    token_base = UINT64_C(1) << 40;
    (void)run_step(ctx, 2, ph, true);
    vkprof_step(ctx);
    /* three steps left out above the library: counted, never stamped */
    uint64_t stamps = stamps_now();
    for (int i = 0; i < 3; i++) {
        CHECK(vkprof_count_calls(ctx, VKPROF_PHASE_NORM, 1) == VKPROF_OK);
        vkprof_step(ctx);
    }
    /* from another thread: its own slot, summed by the readers */
    pthread_t th;
    CHECK(pthread_create(&th, NULL, count_qkv3, ctx) == 0);
    CHECK(pthread_join(th, NULL) == 0);
    CHECK(vkprof_count_calls(ctx, VKPROF_PHASE_QKV, 0) == VKPROF_OK);
    CHECK_EQ_U64(stamps_now(), stamps);
    vkprof_phase_stats n = th_phase(ctx, VKPROF_PHASE_NORM), q = th_phase(ctx, VKPROF_PHASE_QKV);
    CHECK_EQ_U64(n.count, 1);
    CHECK_EQ_U64(n.calls, 4);
    CHECK_EQ_U64(n.total_ns, 1000);
    CHECK_EQ_U64(n.est_total_ns, 4000);
    CHECK_EQ_U64(q.count, 1);
    CHECK_EQ_U64(q.calls, 4);
    CHECK_EQ_U64(q.est_total_ns, 12000);
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.calls_executed, 8);
    CHECK_EQ_U64(t.calls_unstamped, 6);
    CHECK_EQ_U64(t.scopes_collected, 2);
    check_accounting(ctx);
    /* refused: an unknown phase (an error), inactive, NULL */
    CHECK(vkprof_count_calls(ctx, VKPROF_MAX_PHASES - 1, 1) == VKPROF_ERROR_UNKNOWN_PHASE);
    CHECK(strstr(logbuf.last, "count_calls: phase") != NULL);
    vkprof_error_counts ec;
    uint32_t nph = 0;
    CHECK(vkprof_snapshot(ctx, NULL, 0, &nph, &ec) == VKPROF_ERROR_BUFFER_TOO_SMALL);
    CHECK_EQ_U64(ec.unknown_phase, 1);
    vkprof_set_active(ctx, false);
    CHECK(vkprof_count_calls(ctx, VKPROF_PHASE_NORM, 1) == VKPROF_DISABLED);
    vkprof_set_active(ctx, true);
    CHECK(vkprof_count_calls(NULL, VKPROF_PHASE_NORM, 1) == VKPROF_DISABLED);
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_NORM).calls, 4);
    /* a reset forgets them with the rest */
    vkprof_reset(ctx);
    CHECK_EQ_U64(th_stats(ctx).calls_unstamped, 0);
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_NORM).calls, 0);
    vkprof_destroy(ctx);
    /* 2-slot mode counts no calls */
    vkprof_context_desc d = th_desc(&g, &logbuf, true);
    d.enable = VKPROF_ENABLE_ON;
    d.timing_mode = VKPROF_TIMING_2SLOT;
    vkprof_context two = th_ctx(&d);
    CHECK(vkprof_count_calls(two, VKPROF_PHASE_NORM, 1) == VKPROF_DISABLED);
    vkprof_destroy(two);
}

/* VKPROF_RING_ROTATE overrides the desc; garbage is warned about and ignored. */
static void test_rotate_env(void)
{
    sim_reset();
    setenv("VKPROF_RING_ROTATE", "3", 1);
    vkprof_context ctx = make_rot(0, true, 0);
    CHECK_EQ_U64(th_stats(ctx).rotate_scopes, 3);
    vkprof_destroy(ctx);
    setenv("VKPROF_RING_ROTATE", "0", 1);
    ctx = make_rot(0, true, 5);
    CHECK_EQ_U64(th_stats(ctx).rotate_scopes, 0);
    vkprof_destroy(ctx);
    static const char *const bad[] = {"x", "3x", "-1", "99999999999999999999", " 2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("VKPROF_RING_ROTATE", bad[i], 1);
        int warned = logbuf.warnings;
        ctx = make_rot(0, true, 2);
        CHECK(logbuf.warnings == warned + 1 && strstr(logbuf.last, "VKPROF_RING_ROTATE") != NULL);
        CHECK_EQ_U64(th_stats(ctx).rotate_scopes, 2);
        vkprof_destroy(ctx);
    }
    unsetenv("VKPROF_RING_ROTATE");
    /* the desc is range-checked */
    vkprof_context_desc d = vku_vkprof_desc(&g.inst, &g.dev);
    d.timing_mode = VKPROF_TIMING_RING;
    d.rotate_scopes = (1u << 24) + 1;
    d.log = th_log_fn;
    d.log_user = &logbuf;
    ctx = NULL;
    CHECK(vkprof_create(&d, &ctx) == VKPROF_ERROR_INVALID_ARGUMENT && ctx == NULL);
}

int main(void)
{
    unsetenv("VKPROF_RING_ROTATE");
    th_gpu_init(&g);
    th_busy_init(&g, &busy, 256);
    logbuf.quiet = 1;
    RUN(test_rotate_coverage_shared);
    RUN(test_rotate_coverage_unshared);
    RUN(test_rotate_estimates);
    RUN(test_rotate_leaf);
    RUN(test_rotate_leaf_gap);
    RUN(test_rotate_leaf_gap_outer);
    RUN(test_rotate_ring_full);
    RUN(test_rotate_changed_path);
    RUN(test_rotate_uneven_steps);
    RUN(test_rotate_outer);
    RUN(test_rotate_outer_top);
    RUN(test_rotate_seed_model);
    RUN(test_rotate_resubmit);
    RUN(test_rotate_resubmit_many);
    RUN(test_rotate_misuse);
    RUN(test_rotate_env);
    RUN(test_rotate_first_calls);
    RUN(test_rotate_calls_per_thread);
    RUN(test_count_calls);
    vku_busy_destroy(&g.dev, &busy);
    th_gpu_finish(&g);
    return th_done();
}
