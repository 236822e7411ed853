/* Through an interposed function table on the real device: the off path
 * records nothing, a device without timestamps is a no-op, and simulated
 * counters (36/48/64 valid bits, periods 1.0/52.083/38.46, wraps) give exact
 * figures. The stamps are really recorded and executed on lavapipe; only the
 * values read back are chosen by the simulation. */
#include <string.h>

#include "harness.h"
#include "sim.h"

static th_gpu g;
static vku_busy busy;
static th_log logbuf;

static vkprof_context make_ctx(vkprof_enable_mode mode)
{
    vkprof_context_desc d = th_desc(&g, &logbuf, true);
    d.enable = mode;
    return th_ctx(&d);
}

static void record_busy(VkCommandBuffer cmd, void *user)
{
    (void)user;
    vku_busy_record(&g.dev, &busy, cmd, 20);
}

/* Every call of the timing cycle, as a runtime would make them. */
static void full_cycle(vkprof_context ctx, vkprof_result expect)
{
    CHECK_VK(vku_begin(&g.dev));
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == expect);
    record_busy(g.dev.cmd, NULL);
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == expect);
    CHECK(VKPROF_BEGIN(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == expect);
    CHECK(VKPROF_END(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == expect);
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(vkprof_resolve(ctx, NULL) == expect);
    CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_NORM) == expect);
}

static void test_off_path(void)
{
    sim_reset();
    vkprof_context ctx = make_ctx(VKPROF_ENABLE_OFF);
    CHECK(!vkprof_active(ctx));
    /* the app's own work still runs through both(): the buffer changes */
    memset(busy.buf.map, 0, busy.buf.size);
    full_cycle(ctx, VKPROF_DISABLED);
    CHECK_VK(vku_begin(&g.dev));
    CHECK(vkprof_cmd_both(ctx, g.dev.cmd, VKPROF_PHASE_MLP_DOWN, record_busy, NULL) ==
          VKPROF_DISABLED);
    /* the shader's writes made available to the host read below (a fence
     * wait alone covers only device accesses) */
    VkMemoryBarrier to_host = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                               .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                               .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(g.dev.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, NULL, 0, NULL);
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(((const float *)busy.buf.map)[1] != 0.0f);
    CHECK_EQ_U64(g_sim.cmd_calls, 0);
    CHECK_EQ_U64(g_sim.pools_created, 0);
    CHECK_EQ_U64(g_sim.results_calls, 0);
    CHECK(!vkprof_any_recorded(ctx));

    /* the counter is live: switched on, the same cycle records commands */
    vkprof_set_active(ctx, true);
    full_cycle(ctx, VKPROF_OK);
    CHECK_EQ_U64(g_sim.pools_created, 1);
    CHECK_EQ_U64(g_sim.cmd_reset, 2);
    CHECK_EQ_U64(g_sim.cmd_timestamp2, 4);
    CHECK_EQ_U64(g_sim.cmd_calls, 6);
    CHECK(g_sim.last_stage2 == VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT);
    CHECK(g_sim.last_result_flags ==
          (VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT));
    CHECK(vkprof_any_recorded(ctx));

    /* and off again: nothing more */
    vkprof_set_active(ctx, false);
    uint64_t before = g_sim.cmd_calls;
    full_cycle(ctx, VKPROF_DISABLED);
    CHECK_EQ_U64(g_sim.cmd_calls, before);
    vkprof_destroy(ctx);
    CHECK_EQ_U64(g_sim.pools_destroyed, 1);
    CHECK_EQ_U64(g_sim.unknown_cmd_lookups, 0);
}

static void test_no_timestamps(void)
{
    sim_reset();
    g_sim.override_valid_bits = true;
    g_sim.valid_bits = 0;
    logbuf.warnings = 0;
    vkprof_context ctx = make_ctx(VKPROF_ENABLE_ON);
    CHECK(!vkprof_active(ctx));
    CHECK(logbuf.warnings == 1); /* requested but unsupported: said once */
    vkprof_set_active(ctx, true);
    CHECK(!vkprof_active(ctx));
    full_cycle(ctx, VKPROF_DISABLED);
    CHECK_VK(vku_begin(&g.dev));
    CHECK(vkprof_cmd_both(ctx, g.dev.cmd, VKPROF_PHASE_NORM, record_busy, NULL) == VKPROF_DISABLED);
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK_EQ_U64(g_sim.cmd_calls, 0);
    CHECK_EQ_U64(g_sim.pools_created, 0);
    vkprof_device_info info;
    vkprof_get_device_info(ctx, &info);
    CHECK(info.requested && !info.supported && info.timestamp_valid_bits == 0);
    vkprof_destroy(ctx);

    /* an impossible width is treated as none */
    sim_reset();
    g_sim.override_valid_bits = true;
    g_sim.valid_bits = 65;
    ctx = make_ctx(VKPROF_ENABLE_ON);
    CHECK(!vkprof_active(ctx));
    vkprof_destroy(ctx);
    /* so is a zero period */
    sim_reset();
    g_sim.override_period = true;
    g_sim.period = 0.0f;
    ctx = make_ctx(VKPROF_ENABLE_ON);
    CHECK(!vkprof_active(ctx));
    vkprof_destroy(ctx);
}

/* floor(ticks * period) for the float period, computed independently in long
 * double (exact here: ticks < 2^40 and a 24-bit mantissa fit in 64 bits). */
static uint64_t expect_ns(uint64_t ticks, float period)
{
    long double v = (long double)ticks * (long double)period;
    return (uint64_t)v;
}

static void check_case(uint32_t bits, float period, uint64_t begin, uint64_t end,
                       uint64_t want_ticks)
{
    sim_reset();
    g_sim.override_valid_bits = true;
    g_sim.valid_bits = bits;
    g_sim.override_period = true;
    g_sim.period = period;
    vkprof_context ctx = make_ctx(VKPROF_ENABLE_ON);
    CHECK(vkprof_active(ctx));
    g_sim.fake_results = true;
    uint64_t want = expect_ns(want_ticks, period);
    uint64_t mask = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    for (uint64_t rep = 0; rep < 3; rep++) {
        /* the clock moves on between scopes; the delta stays */
        g_sim.fake_value[0] = (begin + rep * 1000003u) & mask;
        g_sim.fake_value[1] = (end + rep * 1000003u) & mask;
        CHECK_VK(vku_begin(&g.dev));
        CHECK(vkprof_cmd_both(ctx, g.dev.cmd, VKPROF_PHASE_MOE_EXPERTS, record_busy, NULL) ==
              VKPROF_OK);
        CHECK_VK(vku_submit_wait(&g.dev));
        uint64_t ns = 0;
        CHECK(vkprof_resolve(ctx, &ns) == VKPROF_OK);
        if (ns != want) {
            fprintf(stderr, "  bits %u period %.6g begin %llu end %llu: got %llu ns, want %llu\n",
                    bits, (double)period, (unsigned long long)begin, (unsigned long long)end,
                    (unsigned long long)ns, (unsigned long long)want);
        }
        CHECK_EQ_U64(ns, want);
        CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_MOE_EXPERTS) == VKPROF_OK);
    }
    vkprof_phase_stats st[VKPROF_MAX_PHASES];
    uint32_t n;
    CHECK(vkprof_snapshot(ctx, st, VKPROF_MAX_PHASES, &n, NULL) == VKPROF_OK);
    CHECK_EQ_U64(st[VKPROF_PHASE_MOE_EXPERTS].count, 3);
    CHECK_EQ_U64(st[VKPROF_PHASE_MOE_EXPERTS].total_ticks, 3 * want_ticks);
    /* the total is scaled once from the exact tick sum */
    CHECK_EQ_U64(st[VKPROF_PHASE_MOE_EXPERTS].total_ns, expect_ns(3 * want_ticks, period));
    CHECK_EQ_U64(st[VKPROF_PHASE_MOE_EXPERTS].min_ns, want);
    CHECK_EQ_U64(st[VKPROF_PHASE_MOE_EXPERTS].max_ns, want);
    vkprof_destroy(ctx);
}

static void test_wrap_and_period(void)
{
    /* 32: the H200's transfer family 3 reports it */
    static const uint32_t bits[] = {32, 36, 48, 64};
    static const float periods[] = {1.0f, 52.083f, 38.46f};
    for (size_t b = 0; b < 4; b++) {
        uint64_t mask = bits[b] == 64 ? UINT64_MAX : (UINT64_C(1) << bits[b]) - 1;
        for (size_t p = 0; p < 3; p++) {
            /* plain */
            check_case(bits[b], periods[p], 1000, 1000 + 123457, 123457);
            /* the counter wraps between begin and end */
            check_case(bits[b], periods[p], mask - 4999, 7001, 12001);
            /* begin at the very top */
            check_case(bits[b], periods[p], mask, 0, 1);
        }
    }
    /* H200-like absolute ticks: Unix-epoch ns, ~1.8e18, period 1.0 */
    check_case(64, 1.0f, UINT64_C(1800000000000000001), UINT64_C(1800000000000777778), 777777);
    /* mobile 19.2 MHz counter with 36 bits, about an hour in */
    check_case(36, 52.08333206f, UINT64_C(69000000000), UINT64_C(69000000000) + 19200, 19200);
}

static void test_not_available(void)
{
    sim_reset();
    vkprof_context ctx = make_ctx(VKPROF_ENABLE_ON);
    g_sim.fake_results = true;
    g_sim.fake_unavailable = true;
    CHECK_VK(vku_begin(&g.dev));
    CHECK(vkprof_cmd_both(ctx, g.dev.cmd, VKPROF_PHASE_NORM, record_busy, NULL) == VKPROF_OK);
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(vkprof_resolve(ctx, NULL) == VKPROF_ERROR_NOT_READY);
    CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_NORM) == VKPROF_ERROR_NOT_RESOLVED);
    g_sim.fake_unavailable = false;
    g_sim.fake_value[0] = 10;
    g_sim.fake_value[1] = 30;
    CHECK(vkprof_resolve(ctx, NULL) == VKPROF_OK);
    CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_NORM) == VKPROF_OK);
    vkprof_phase_stats st[VKPROF_MAX_PHASES];
    uint32_t n;
    CHECK(vkprof_snapshot(ctx, st, VKPROF_MAX_PHASES, &n, NULL) == VKPROF_OK);
    CHECK_EQ_U64(st[VKPROF_PHASE_NORM].total_ns, 20);
    vkprof_destroy(ctx);
}

static void test_legacy_stamp(void)
{
    /* the app says it did not enable synchronization2 */
    sim_reset();
    vkprof_context_desc d = th_desc(&g, NULL, true);
    d.enable = VKPROF_ENABLE_ON;
    d.no_synchronization2 = true;
    vkprof_context ctx = th_ctx(&d);
    full_cycle(ctx, VKPROF_OK);
    CHECK_EQ_U64(g_sim.cmd_timestamp, 4);
    CHECK_EQ_U64(g_sim.cmd_timestamp2, 0);
    vkprof_destroy(ctx);

    /* vkCmdWriteTimestamp2 missing from the driver: falls back, with a warning */
    sim_reset();
    g_sim.hide_timestamp2 = true;
    logbuf.warnings = 0;
    ctx = make_ctx(VKPROF_ENABLE_ON);
    CHECK(logbuf.warnings == 1);
    full_cycle(ctx, VKPROF_OK);
    CHECK_EQ_U64(g_sim.cmd_timestamp, 4);
    CHECK_EQ_U64(g_sim.cmd_timestamp2, 0);
    vkprof_device_info info;
    vkprof_get_device_info(ctx, &info);
    CHECK(!info.timestamp2);
    vkprof_destroy(ctx);
}

/* ---- the entry-point table (VKPROF_VK_FUNCTIONS): names, aliases, needs ---- */

static const char *g_hidden[4];  /* names the proc-addr functions answer NULL for */
static uint64_t g_reset_lookups; /* lookups of vkResetQueryPool(EXT) */

static bool hidden(const char *name)
{
    for (size_t i = 0; i < sizeof g_hidden / sizeof g_hidden[0]; i++) {
        if (g_hidden[i] != NULL && strcmp(g_hidden[i], name) == 0) {
            return true;
        }
    }
    return false;
}

static PFN_vkVoidFunction VKAPI_CALL hide_instance_proc_addr(VkInstance inst, const char *name)
{
    return hidden(name) ? NULL : sim_get_instance_proc_addr(inst, name);
}

static PFN_vkVoidFunction VKAPI_CALL hide_device_proc_addr(VkDevice dev, const char *name)
{
    if (strncmp(name, "vkResetQueryPool", 16) == 0) {
        g_reset_lookups++;
    }
    return hidden(name) ? NULL : sim_get_device_proc_addr(dev, name);
}

static vkprof_result create_hiding(const char *a, const char *b, bool host_reset,
                                   vkprof_context *ctx)
{
    memset(g_hidden, 0, sizeof g_hidden);
    g_hidden[0] = a;
    g_hidden[1] = b;
    g_reset_lookups = 0;
    vkprof_context_desc d = vku_vkprof_desc(&g.inst, &g.dev);
    d.get_instance_proc_addr = hide_instance_proc_addr;
    d.get_device_proc_addr = hide_device_proc_addr;
    d.enable = VKPROF_ENABLE_ON;
    d.log = th_log_fn;
    d.log_user = &logbuf;
    d.host_query_reset = host_reset && g.dev.host_query_reset;
    d.synchronization2 = VKPROF_FEATURE_ENABLED; /* asks for the stamp2 entry point */
    d.no_synchronization2 = false;
    *ctx = (vkprof_context)(void *)&d;
    return vkprof_create(&d, ctx);
}

static void test_entry_points(void)
{
    sim_reset();
    vkprof_context ctx;
    /* a required instance-level entry point missing: create fails */
    CHECK(create_hiding("vkGetPhysicalDeviceQueueFamilyProperties", NULL, false, &ctx) ==
          VKPROF_ERROR_MISSING_FUNCTION);
    CHECK(ctx == NULL);
    CHECK(create_hiding("vkGetPhysicalDeviceProperties", NULL, false, &ctx) ==
          VKPROF_ERROR_MISSING_FUNCTION);
    CHECK(ctx == NULL);
    /* a timing entry point missing: created, without timestamps, records nothing */
    static const char *const timing[] = {"vkCreateQueryPool", "vkDestroyQueryPool",
                                         "vkCmdResetQueryPool", "vkCmdWriteTimestamp",
                                         "vkGetQueryPoolResults"};
    for (size_t i = 0; i < sizeof timing / sizeof timing[0]; i++) {
        sim_reset();
        CHECK(create_hiding(timing[i], NULL, false, &ctx) == VKPROF_OK);
        CHECK(ctx != NULL && !vkprof_active(ctx));
        full_cycle(ctx, VKPROF_DISABLED);
        CHECK_EQ_U64(g_sim.cmd_calls, 0);
        CHECK_EQ_U64(g_sim.pools_created, 0);
        vkprof_destroy(ctx);
    }
    /* an optional one missing under both names: still timing */
    sim_reset();
    CHECK(create_hiding("vkQueueSubmit2", "vkQueueSubmit2KHR", false, &ctx) == VKPROF_OK);
    CHECK(vkprof_active(ctx));
    CHECK(vkprof_queue_submit2(ctx, g.dev.queue, 0, NULL, VK_NULL_HANDLE) ==
          VK_ERROR_INITIALIZATION_FAILED);
    full_cycle(ctx, VKPROF_OK);
    CHECK(g_sim.cmd_calls > 0);
    vkprof_destroy(ctx);
    /* aliases: the second name is found when the first is missing */
    vkprof_device_info info;
    if (g.dev.sync2) {
        CHECK(create_hiding("vkCmdWriteTimestamp2", NULL, false, &ctx) == VKPROF_OK);
        CHECK(vkprof_get_device_info(ctx, &info) == VKPROF_OK && info.timestamp2);
        vkprof_destroy(ctx);
    }
    CHECK(create_hiding("vkCmdWriteTimestamp2", "vkCmdWriteTimestamp2KHR", false, &ctx) ==
          VKPROF_OK);
    CHECK(vkprof_get_device_info(ctx, &info) == VKPROF_OK && !info.timestamp2);
    vkprof_destroy(ctx);
    /* vkResetQueryPool is looked up only when the app enabled hostQueryReset */
    CHECK(create_hiding(NULL, NULL, false, &ctx) == VKPROF_OK);
    CHECK_EQ_U64(g_reset_lookups, 0);
    vkprof_timing_stats ts;
    CHECK(vkprof_get_timing_stats(ctx, &ts) == VKPROF_OK && !ts.host_reset);
    vkprof_destroy(ctx);
    if (g.dev.host_query_reset) {
        /* the core name found first: the alias is never asked for */
        CHECK(create_hiding(NULL, NULL, true, &ctx) == VKPROF_OK);
        CHECK_EQ_U64(g_reset_lookups, 1);
        CHECK(vkprof_get_timing_stats(ctx, &ts) == VKPROF_OK && ts.host_reset);
        vkprof_destroy(ctx);
        /* the core name missing: the EXT alias is asked for, and used where
         * the device has it (only with VK_EXT_host_query_reset enabled) */
        bool ext = vkGetDeviceProcAddr(g.dev.device, "vkResetQueryPoolEXT") != NULL;
        CHECK(create_hiding("vkResetQueryPool", NULL, true, &ctx) == VKPROF_OK);
        CHECK_EQ_U64(g_reset_lookups, 2);
        CHECK(vkprof_get_timing_stats(ctx, &ts) == VKPROF_OK && ts.host_reset == ext);
        vkprof_destroy(ctx);
        CHECK(create_hiding("vkResetQueryPool", "vkResetQueryPoolEXT", true, &ctx) == VKPROF_OK);
        CHECK(vkprof_get_timing_stats(ctx, &ts) == VKPROF_OK && !ts.host_reset);
        vkprof_destroy(ctx);
    }
    memset(g_hidden, 0, sizeof g_hidden);
}

int main(void)
{
    th_gpu_init(&g);
    th_busy_init(&g, &busy, 4096);
    logbuf.quiet = 1;
    RUN(test_off_path);
    RUN(test_no_timestamps);
    RUN(test_wrap_and_period);
    RUN(test_not_available);
    RUN(test_legacy_stamp);
    RUN(test_entry_points);
    vku_busy_destroy(&g.dev, &busy);
    th_gpu_finish(&g);
    return th_done();
}
