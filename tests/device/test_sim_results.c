/* Ring mode against query results that do not come back as a fast, tidy
 * device gives them (issue 8), on lavapipe with validation on, through the
 * simulated function table (tests/sim.c): every scope runs on the device,
 * then the sim reports each of its stamps with a fake value (so each scope's
 * exact ticks are known) and hides written results where a knob says so:
 *   late   - the first N reads that find a slot written report it unavailable;
 *   never  - a slot is never reported available;
 *   after  - a slot is reported only once another slot was reported by an
 *            earlier call (results out of order: an end before its begin, a
 *            later command buffer before an earlier one).
 * After every vkprof_collect: samples == collected + dropped + pending, a
 * scope is folded exactly when the sim has reported both its stamps (with
 * the exact fake ticks, once), and only the losses the rules name happen.
 * Every case runs with host query reset on (where the device has it) and
 * off (test_never_then_resubmit only off: see main).
 * test_torn_read and test_end_before_begin_*then_later_scope state what the
 * ring must do; when written, all three failed against it (the in-order loss
 * rule counted a scope as never run while its stamps were merely not read
 * yet);
 * `test_sim_results NAME` runs only the cases whose name holds NAME. */
#include <string.h>

#include "context.h" /* clock_checks_off: the sim's fake values are not on the host clock */
#include "harness.h"
#include "sim.h"

static th_gpu g;
static vku_busy busy;
static bool host_reset;

/* every message the library logged in the current case */
static struct {
    int warnings;
    int errors;
    char text[8192];
} logs;

static void log_fn(void *user, vkprof_log_level level, vkprof_result code, const char *msg)
{
    (void)user;
    (void)code;
    if (level == VKPROF_LOG_ERROR) {
        logs.errors++;
    } else if (level == VKPROF_LOG_WARN) {
        logs.warnings++;
    }
    size_t n = strlen(logs.text);
    snprintf(logs.text + n, sizeof logs.text - n, "%s\n", msg);
}

static uint32_t make_valid_bits; /* 0: the device's; else simulated for the next make() */

static vkprof_context make(void)
{
    sim_reset();
    g_sim.slot_knobs = true;
    if (make_valid_bits != 0) {
        g_sim.override_valid_bits = true;
        g_sim.valid_bits = make_valid_bits;
    }
    memset(&logs, 0, sizeof logs);
    vkprof_context_desc d = th_desc(&g, NULL, true);
    d.enable = VKPROF_ENABLE_ON;
    d.timing_mode = VKPROF_TIMING_RING;
    d.ring_queries = 64; /* every slot inside the sim's SIM_SLOTS */
    d.host_query_reset = host_reset;
    d.report_every = UINT32_MAX;
    d.log = log_fn;
    d.log_level = VKPROF_LOG_INFO;
    vkprof_context ctx = th_ctx(&d);
    if (ctx != NULL) {
        ctx->clock_checks_off = true;
    }
    return ctx;
}

/* The slots of one scope's two stamps, as the sim saw them recorded. */
typedef struct scope_slots {
    uint32_t b, e;
    vkprof_phase phase;
} scope_slots;

static uint32_t last_stamp(void)
{
    CHECK(g_sim.stamps > 0 && g_sim.stamps <= SIM_STAMPS);
    uint32_t q = g_sim.stamp[g_sim.stamps - 1].query;
    CHECK(q < SIM_SLOTS);
    return q < SIM_SLOTS ? q : 0;
}

static scope_slots scope(vkprof_context ctx, VkCommandBuffer c, vkprof_phase p)
{
    scope_slots s = {.phase = p};
    uint32_t n0 = g_sim.stamps;
    CHECK(vkprof_cmd_begin(ctx, c, p) == VKPROF_OK);
    CHECK_EQ_U64(g_sim.stamps, n0 + 1);
    s.b = last_stamp();
    vku_busy_record(&g.dev, &busy, c, 5);
    CHECK(vkprof_cmd_end(ctx, c, p) == VKPROF_OK);
    CHECK_EQ_U64(g_sim.stamps, n0 + 2);
    s.e = last_stamp();
    CHECK(s.b != s.e);
    return s;
}

/* What the sim reports for the scope's stamps in its next execution. */
static void fake(scope_slots s, uint64_t begin, uint64_t ticks)
{
    g_sim.slot[s.b].fake = true;
    g_sim.slot[s.b].value = begin;
    g_sim.slot[s.e].fake = true;
    g_sim.slot[s.e].value = begin + ticks;
}

static bool reported(scope_slots s)
{
    return g_sim.slot[s.b].reported > 0 && g_sim.slot[s.e].reported > 0;
}

static void collect(vkprof_context ctx)
{
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    (void)th_stats(ctx);
    CHECK_EQ_U64(g_sim.slot_knob_skips, 0);
}

/* A phase holds exactly `count` scopes of exactly `ticks` in all. */
static void expect_phase(vkprof_context ctx, vkprof_phase p, uint64_t count, uint64_t ticks)
{
    vkprof_phase_stats ps = th_phase(ctx, p);
    CHECK_EQ_U64(ps.count, count);
    CHECK_EQ_U64(ps.total_ticks, ticks);
}

static void expect_totals(vkprof_context ctx, uint64_t collected, uint64_t dropped,
                          uint64_t pending)
{
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.scopes_collected, collected);
    CHECK_EQ_U64(t.scopes_dropped, dropped);
    CHECK_EQ_U64(t.scopes_pending, pending);
}

/* (a) Late: a scope whose end is written but reported only from the third
 * read on is folded once, on a later collect, with its exact ticks; then a
 * second execution of the same buffer, late on its begin, likewise. */
static void test_late(void)
{
    vkprof_context ctx = make();
    VkCommandBuffer c = th_alloc_cmd(&g);
    th_begin_cmd(c);
    scope_slots s = scope(ctx, c, VKPROF_PHASE_NORM);
    CHECK_VK(vkEndCommandBuffer(c));
    fake(s, 1000, 111);
    g_sim.slot[s.e].late = 2;
    th_submit_wait(&g, ctx, 1, &c);
    for (int k = 0; k < 5; k++) {
        collect(ctx);
        bool in = reported(s);
        if (k == 0) {
            CHECK(!in); /* the first read hid it: nothing can be folded yet */
        }
        expect_phase(ctx, VKPROF_PHASE_NORM, in ? 1 : 0, in ? 111 : 0);
        expect_totals(ctx, in ? 1 : 0, 0, in ? 0 : 1);
    }
    CHECK_EQ_U64(g_sim.slot[s.e].hidden, 2);
    CHECK(reported(s));

    /* the second execution: new values, its begin late by one read */
    fake(s, 5000, 222);
    g_sim.slot[s.b].late = 1;
    th_submit_wait(&g, ctx, 1, &c);
    uint64_t seen = g_sim.slot[s.b].reported;
    collect(ctx);
    bool in = g_sim.slot[s.b].reported > seen;
    CHECK(!in);
    expect_phase(ctx, VKPROF_PHASE_NORM, 1, 111);
    for (int k = 0; k < 3; k++) {
        collect(ctx);
        in = g_sim.slot[s.b].reported > seen;
        expect_phase(ctx, VKPROF_PHASE_NORM, in ? 2 : 1, in ? 333 : 111);
    }
    CHECK(in);
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.samples, 2);
    CHECK_EQ_U64(t.submissions, 2);
    expect_totals(ctx, 2, 0, 0);
    CHECK_EQ_U64(logs.warnings, 0);
    vkprof_cmd_release(ctx, c);
    vkFreeCommandBuffers(g.dev.device, g.dev.cmd_pool, 1, &c);
    vkprof_destroy(ctx);
    CHECK_EQ_U64(logs.warnings, 0);
}

/* (a) Late on the last scope of a buffer: the earlier one is folded at
 * once, the late one stays pending (nothing ended after it) and is folded
 * exactly once it is reported; nothing lost. */
static void test_late_last_scope(void)
{
    vkprof_context ctx = make();
    VkCommandBuffer c = th_alloc_cmd(&g);
    th_begin_cmd(c);
    scope_slots s0 = scope(ctx, c, VKPROF_PHASE_QKV);
    vku_compute_barrier(c);
    scope_slots s1 = scope(ctx, c, VKPROF_PHASE_ATTENTION);
    CHECK_VK(vkEndCommandBuffer(c));
    fake(s0, 100, 10);
    fake(s1, 200, 20);
    g_sim.slot[s1.e].late = 3;
    th_submit_wait(&g, ctx, 1, &c);
    for (int k = 0; k < 6; k++) {
        collect(ctx);
        bool in = reported(s1);
        expect_phase(ctx, VKPROF_PHASE_QKV, 1, 10);
        expect_phase(ctx, VKPROF_PHASE_ATTENTION, in ? 1 : 0, in ? 20 : 0);
        expect_totals(ctx, in ? 2 : 1, 0, in ? 0 : 1);
    }
    CHECK(reported(s1));
    vkprof_cmd_release(ctx, c);
    expect_totals(ctx, 2, 0, 0);
    vkFreeCommandBuffers(g.dev.device, g.dev.cmd_pool, 1, &c);
    vkprof_destroy(ctx);
    CHECK_EQ_U64(logs.warnings, 0);
}

/* A read that races the execution: vkGetQueryPoolResults is not atomic over
 * its range, so a collect while the buffer runs can find scope 0's end not
 * yet written and scope 1 (written a moment later, read a moment later)
 * already there. Modelled as scope 0's end late by one read. Scope 0 ran:
 * it must be folded on a later collect, not counted as never run.
 * When written, HEAD's ring counted scope 0 lost (lost_never_submitted) at
 * the first collect; its re-read of such suspects fixes it. */
static void test_torn_read(void)
{
    vkprof_context ctx = make();
    VkCommandBuffer c = th_alloc_cmd(&g);
    th_begin_cmd(c);
    scope_slots s0 = scope(ctx, c, VKPROF_PHASE_QKV);
    vku_compute_barrier(c);
    scope_slots s1 = scope(ctx, c, VKPROF_PHASE_ATTENTION);
    CHECK_VK(vkEndCommandBuffer(c));
    fake(s0, 100, 10);
    fake(s1, 200, 20);
    g_sim.slot[s0.e].late = 1;
    th_submit_wait(&g, ctx, 1, &c);
    for (int k = 0; k < 3; k++) {
        collect(ctx);
    }
    CHECK_EQ_U64(g_sim.slot[s0.e].hidden, 1); /* the sim did hide one read */
    expect_phase(ctx, VKPROF_PHASE_ATTENTION, 1, 20);
    expect_phase(ctx, VKPROF_PHASE_QKV, 1, 10);
    CHECK_EQ_U64(th_stats(ctx).lost_never_submitted, 0);
    expect_totals(ctx, 2, 0, 0);
    vkprof_cmd_release(ctx, c);
    vkFreeCommandBuffers(g.dev.device, g.dev.cmd_pool, 1, &c);
    vkprof_destroy(ctx);
}

/* (b) Never, in the middle of a buffer: scope 1 stays pending while the
 * buffer's later scope is not there either; once scope 2 (which ended after
 * it) is there, scope 1 is lost as never run; scope 0 and 2 exact. */
static void test_never_mid_buffer(void)
{
    vkprof_context ctx = make();
    VkCommandBuffer c = th_alloc_cmd(&g);
    th_begin_cmd(c);
    scope_slots s0 = scope(ctx, c, VKPROF_PHASE_NORM);
    vku_compute_barrier(c);
    scope_slots s1 = scope(ctx, c, VKPROF_PHASE_QKV);
    vku_compute_barrier(c);
    scope_slots s2 = scope(ctx, c, VKPROF_PHASE_ATTENTION);
    CHECK_VK(vkEndCommandBuffer(c));
    fake(s0, 1000, 1);
    fake(s1, 2000, 2);
    fake(s2, 3000, 3);
    /* a scope that never ran has neither stamp (one written stamp proves it
     * ran: then it waits for the other, see the end-before-begin cases) */
    g_sim.slot[s1.b].never = true;
    g_sim.slot[s1.e].never = true;
    g_sim.slot[s2.e].never = true; /* held until released below */
    th_submit_wait(&g, ctx, 1, &c);
    for (int k = 0; k < 3; k++) {
        collect(ctx);
        expect_phase(ctx, VKPROF_PHASE_NORM, 1, 1);
        expect_phase(ctx, VKPROF_PHASE_QKV, 0, 0);
        expect_phase(ctx, VKPROF_PHASE_ATTENTION, 0, 0);
        expect_totals(ctx, 1, 0, 2);
    }
    g_sim.slot[s2.e].never = false;
    collect(ctx);
    CHECK(reported(s2));
    expect_phase(ctx, VKPROF_PHASE_ATTENTION, 1, 3);
    expect_phase(ctx, VKPROF_PHASE_QKV, 0, 0);
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.lost_never_submitted, 1);
    expect_totals(ctx, 2, 1, 0);
    collect(ctx); /* nothing changes any more */
    expect_totals(ctx, 2, 1, 0);
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_QKV).count, 0);
    CHECK(strstr(logs.text, "GPU samples lost") != NULL);
    vkprof_cmd_release(ctx, c);
    expect_totals(ctx, 2, 1, 0);
    vkFreeCommandBuffers(g.dev.device, g.dev.cmd_pool, 1, &c);
    vkprof_destroy(ctx);
}

/* (b) Never, on the last scope of a buffer: pending (nothing ended after it)
 * until vkprof_cmd_release, which counts it lost (lost_reset: the buffer was
 * released before its execution was collected); and on a second buffer
 * until vkprof_destroy, which counts it and says so. Never folded. */
static void test_never_until_release_or_destroy(void)
{
    vkprof_context ctx = make();
    VkCommandBuffer c = th_alloc_cmd(&g), d = th_alloc_cmd(&g);
    th_begin_cmd(c);
    scope_slots s0 = scope(ctx, c, VKPROF_PHASE_NORM);
    vku_compute_barrier(c);
    scope_slots s1 = scope(ctx, c, VKPROF_PHASE_QKV);
    CHECK_VK(vkEndCommandBuffer(c));
    fake(s0, 100, 7);
    fake(s1, 200, 9);
    g_sim.slot[s1.e].never = true;
    th_submit_wait(&g, ctx, 1, &c);
    for (int k = 0; k < 3; k++) {
        collect(ctx);
        expect_phase(ctx, VKPROF_PHASE_NORM, 1, 7);
        expect_totals(ctx, 1, 0, 1);
    }
    CHECK(vkprof_cmd_release(ctx, c) == VKPROF_OK);
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.lost_reset, 1);
    expect_totals(ctx, 1, 1, 0);
    expect_phase(ctx, VKPROF_PHASE_QKV, 0, 0);
    CHECK_VK(vkResetCommandBuffer(c, 0));

    th_begin_cmd(d);
    scope_slots sd = scope(ctx, d, VKPROF_PHASE_LM_HEAD);
    CHECK_VK(vkEndCommandBuffer(d));
    fake(sd, 300, 5);
    g_sim.slot[sd.b].never = true;
    th_submit_wait(&g, ctx, 1, &d);
    collect(ctx);
    expect_totals(ctx, 1, 1, 1);
    logs.text[0] = '\0';
    vkprof_destroy(ctx);
    CHECK(strstr(logs.text, "destroy: 1 GPU scope(s) had not run") != NULL);
    CHECK(strstr(logs.text, "destroy: collected") == NULL); /* nothing folded at destroy */
    vkFreeCommandBuffers(g.dev.device, g.dev.cmd_pool, 1, &c);
    vkFreeCommandBuffers(g.dev.device, g.dev.cmd_pool, 1, &d);
}

/* (b) Never, then the buffer submitted again: the first execution is lost as
 * overwritten, the second too (it may hold the first's values), and the
 * third is folded with its own exact ticks: never one of an earlier
 * execution's values. */
static void test_never_then_resubmit(void)
{
    vkprof_context ctx = make();
    VkCommandBuffer c = th_alloc_cmd(&g);
    th_begin_cmd(c);
    scope_slots s = scope(ctx, c, VKPROF_PHASE_MLP_DOWN);
    CHECK_VK(vkEndCommandBuffer(c));
    fake(s, 100, 11);
    g_sim.slot[s.e].never = true;
    th_submit_wait(&g, ctx, 1, &c);
    collect(ctx);
    expect_totals(ctx, 0, 0, 1);
    /* the library's half of the submit reads the first execution one last
     * time (still hidden), then the device runs the second one */
    CHECK(vkprof_cmd_submit(ctx, g.dev.queue, 1, &c) == VKPROF_OK);
    CHECK_EQ_U64(th_stats(ctx).lost_overwritten, 1);
    g_sim.slot[s.e].never = false;
    fake(s, 1000, 22);
    th_submit_wait(&g, NULL, 1, &c);
    collect(ctx);
    CHECK(g_sim.slot[s.e].reported > 0);
    expect_phase(ctx, VKPROF_PHASE_MLP_DOWN, 0, 0);
    fake(s, 5000, 33);
    th_submit_wait(&g, ctx, 1, &c);
    collect(ctx);
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.samples, 3);
    CHECK_EQ_U64(t.lost_overwritten, 2);
    expect_totals(ctx, 1, 2, 0);
    expect_phase(ctx, VKPROF_PHASE_MLP_DOWN, 1, 33);
    vkprof_cmd_release(ctx, c);
    vkFreeCommandBuffers(g.dev.device, g.dev.cmd_pool, 1, &c);
    vkprof_destroy(ctx);
}

/* (c) Within one buffer, the end reported before the begin: the scope is not
 * folded (nor lost) until both are there, then exactly once. */
static void test_end_before_begin(void)
{
    vkprof_context ctx = make();
    VkCommandBuffer c = th_alloc_cmd(&g);
    th_begin_cmd(c);
    scope_slots s = scope(ctx, c, VKPROF_PHASE_ROPE);
    CHECK_VK(vkEndCommandBuffer(c));
    fake(s, 4000, 44);
    g_sim.slot[s.b].after = s.e + 1;
    th_submit_wait(&g, ctx, 1, &c);
    collect(ctx);
    CHECK(g_sim.slot[s.e].reported > 0);
    CHECK_EQ_U64(g_sim.slot[s.b].reported, 0);
    expect_phase(ctx, VKPROF_PHASE_ROPE, 0, 0);
    expect_totals(ctx, 0, 0, 1);
    for (int k = 0; k < 3; k++) {
        collect(ctx);
        bool in = reported(s);
        expect_phase(ctx, VKPROF_PHASE_ROPE, in ? 1 : 0, in ? 44 : 0);
        expect_totals(ctx, in ? 1 : 0, 0, in ? 0 : 1);
    }
    CHECK(reported(s));
    CHECK(g_sim.slot[s.e].reported_call < g_sim.slot[s.b].reported_call);
    vkprof_cmd_release(ctx, c);
    vkFreeCommandBuffers(g.dev.device, g.dev.cmd_pool, 1, &c);
    vkprof_destroy(ctx);
    CHECK_EQ_U64(logs.warnings, 0);
}

/* (c) The same with a later scope in the buffer that is reported at once:
 * scope 0's end is written, so it ran; it must wait for its begin, not be
 * counted as never run. `extra`: reads of the begin hidden on top of the
 * order (0: the begin is there by the next call, as a torn read; 2: later
 * than the ring's re-read within one collect).
 * When written, both failed against HEAD's ring (scope 0 counted in
 * lost_never_submitted at the first collect); the re-read of suspects in the
 * working tree fixes extra 0; extra 2 still fails: a scope with one stamp
 * written is counted as never run. */
static void end_before_begin_then_later_scope(uint32_t extra)
{
    vkprof_context ctx = make();
    VkCommandBuffer c = th_alloc_cmd(&g);
    th_begin_cmd(c);
    scope_slots s0 = scope(ctx, c, VKPROF_PHASE_QKV);
    vku_compute_barrier(c);
    scope_slots s1 = scope(ctx, c, VKPROF_PHASE_ATTENTION);
    CHECK_VK(vkEndCommandBuffer(c));
    fake(s0, 100, 10);
    fake(s1, 200, 20);
    g_sim.slot[s0.b].after = s0.e + 1;
    g_sim.slot[s0.b].late = extra;
    th_submit_wait(&g, ctx, 1, &c);
    for (int k = 0; k < 5; k++) {
        collect(ctx);
        bool in = reported(s0);
        expect_phase(ctx, VKPROF_PHASE_ATTENTION, 1, 20);
        expect_phase(ctx, VKPROF_PHASE_QKV, in ? 1 : 0, in ? 10 : 0);
        expect_totals(ctx, in ? 2 : 1, 0, in ? 0 : 1);
    }
    CHECK(reported(s0));
    CHECK_EQ_U64(th_stats(ctx).lost_never_submitted, 0);
    vkprof_cmd_release(ctx, c);
    vkFreeCommandBuffers(g.dev.device, g.dev.cmd_pool, 1, &c);
    vkprof_destroy(ctx);
}

static void test_end_before_begin_then_later_scope(void)
{
    end_before_begin_then_later_scope(0);
}

static void test_end_before_begin_late_then_later_scope(void)
{
    end_before_begin_then_later_scope(2);
}

/* (c) Across two command buffers: A submitted first, B second, B's results
 * reported first (A's only once B's end was reported by an earlier call).
 * The in-order rule is per buffer: A waits, nothing is lost, both exact. */
static void test_across_buffers(void)
{
    vkprof_context ctx = make();
    VkCommandBuffer a = th_alloc_cmd(&g), b = th_alloc_cmd(&g);
    th_begin_cmd(a);
    scope_slots sa = scope(ctx, a, VKPROF_PHASE_NORM);
    CHECK_VK(vkEndCommandBuffer(a));
    th_begin_cmd(b);
    scope_slots sb = scope(ctx, b, VKPROF_PHASE_MLP_GATE_UP);
    CHECK_VK(vkEndCommandBuffer(b));
    fake(sa, 10000, 1234);
    fake(sb, 20000, 567);
    g_sim.slot[sa.b].after = sb.e + 1;
    g_sim.slot[sa.e].after = sb.e + 1;
    th_submit_wait(&g, ctx, 1, &a);
    th_submit_wait(&g, ctx, 1, &b);
    for (int k = 0; k < 4; k++) {
        collect(ctx);
        bool ina = reported(sa), inb = reported(sb);
        CHECK(inb); /* nothing hides B */
        expect_phase(ctx, VKPROF_PHASE_NORM, ina ? 1 : 0, ina ? 1234 : 0);
        expect_phase(ctx, VKPROF_PHASE_MLP_GATE_UP, 1, 567);
        expect_totals(ctx, ina ? 2 : 1, 0, ina ? 0 : 1);
    }
    CHECK(reported(sa));
    CHECK(g_sim.slot[sa.b].reported_call > g_sim.slot[sb.e].reported_call);

    /* held for several collects, by hand: still pending, never lost */
    fake(sa, 30000, 4321);
    fake(sb, 40000, 765);
    g_sim.slot[sa.b].after = g_sim.slot[sa.e].after = 0;
    g_sim.slot[sa.e].never = true;
    th_submit_wait(&g, ctx, 1, &a);
    th_submit_wait(&g, ctx, 1, &b);
    for (int k = 0; k < 3; k++) {
        collect(ctx);
        expect_phase(ctx, VKPROF_PHASE_MLP_GATE_UP, 2, 567 + 765);
        expect_phase(ctx, VKPROF_PHASE_NORM, 1, 1234);
        expect_totals(ctx, 3, 0, 1);
    }
    g_sim.slot[sa.e].never = false;
    collect(ctx);
    expect_phase(ctx, VKPROF_PHASE_NORM, 2, 1234 + 4321);
    expect_totals(ctx, 4, 0, 0);
    CHECK_EQ_U64(th_stats(ctx).submissions, 4);
    vkprof_cmd_release(ctx, a);
    vkprof_cmd_release(ctx, b);
    vkFreeCommandBuffers(g.dev.device, g.dev.cmd_pool, 1, &a);
    vkFreeCommandBuffers(g.dev.device, g.dev.cmd_pool, 1, &b);
    vkprof_destroy(ctx);
    CHECK_EQ_U64(logs.warnings, 0);
}

/* (d) Stamps that read backwards (seen once on the H200, under the layer
 * with validation below it: a phase total of 2^64 - 1696 ns): scope 0's end
 * value is 1696 ticks before its begin, scope 1 is exact. Scope 0 is lost,
 * counted as lost_backwards and warned about, never folded as a wrapped
 * duration; scope 1 is folded; the phase totals hold only scope 1. Also on a
 * 36-bit counter, where the wrapped delta is 2^36 - 1696. */
static void backwards_case(bool bits36)
{
    make_valid_bits = bits36 ? 36 : 0;
    vkprof_context ctx = make();
    make_valid_bits = 0;
    VkCommandBuffer c = th_alloc_cmd(&g);
    th_begin_cmd(c);
    scope_slots s0 = scope(ctx, c, VKPROF_PHASE_QKV);
    vku_compute_barrier(c);
    scope_slots s1 = scope(ctx, c, VKPROF_PHASE_ATTENTION);
    CHECK_VK(vkEndCommandBuffer(c));
    fake(s0, 50000, 0);
    g_sim.slot[s0.e].value = 50000 - 1696;
    fake(s1, 60000, 300);
    th_submit_wait(&g, ctx, 1, &c);
    collect(ctx);
    CHECK(reported(s0) && reported(s1));
    expect_phase(ctx, VKPROF_PHASE_QKV, 0, 0);
    expect_phase(ctx, VKPROF_PHASE_ATTENTION, 1, 300);
    expect_totals(ctx, 1, 1, 0);
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.lost_backwards, 1);
    CHECK_EQ_U64(t.samples, t.scopes_collected + t.scopes_dropped + t.scopes_pending);
    CHECK_EQ_U64(logs.warnings, 1);
    CHECK(strstr(logs.text, "earlier than its begin") != NULL);
    /* the snapshot says it too */
    char json[16384];
    size_t need = 0;
    CHECK(vkprof_snapshot_json(ctx, json, sizeof json, &need) == VKPROF_OK);
    CHECK(strstr(json, "\"backwards\":1") != NULL);
    vkprof_cmd_release(ctx, c);
    vkFreeCommandBuffers(g.dev.device, g.dev.cmd_pool, 1, &c);
    vkprof_destroy(ctx);
}

static void test_backwards(void)
{
    backwards_case(false);
}

static void test_backwards_36bit(void)
{
    backwards_case(true);
}

static const char *only; /* argv[1]: run only the cases whose name holds it */
#define CASE(fn)                                                                                   \
    do {                                                                                           \
        if (only == NULL || strstr(#fn, only) != NULL) {                                           \
            RUN(fn);                                                                               \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    only = argc > 1 ? argv[1] : NULL;
    th_gpu_init(&g);
    th_busy_init(&g, &busy, 64);
    for (int pass = 0; pass < 2; pass++) {
        host_reset = pass == 0 && g.dev.host_query_reset;
        if (pass == 1 || g.dev.host_query_reset) {
            printf("host query reset %s\n", host_reset ? "on" : "off");
            CASE(test_late);
            CASE(test_late_last_scope);
            CASE(test_torn_read);
            CASE(test_never_mid_buffer);
            CASE(test_never_until_release_or_destroy);
            if (!host_reset) {
                /* With host resets the library resets a buffer's slots
                 * before each re-submission, except after an execution it
                 * gave up (tainted): here that one really ran (the sim only
                 * hid its results), so its slots are still available and
                 * the next execution's stamps would be an invalid use. A
                 * conformant device makes results available by the fence,
                 * so only a device like the sim gets there. */
                CASE(test_never_then_resubmit);
            }
            CASE(test_end_before_begin);
            CASE(test_end_before_begin_then_later_scope);
            CASE(test_end_before_begin_late_then_later_scope);
            CASE(test_across_buffers);
            CASE(test_backwards);
            CASE(test_backwards_36bit);
        }
    }
    vku_busy_destroy(&g.dev, &busy);
    th_gpu_finish(&g);
    return th_done();
}
