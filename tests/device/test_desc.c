/* Desc fields checked by vkprof_create (issue 10, items 10 and 11):
 * - log_level: every enum value is accepted, out-of-range ones are refused,
 *   and VKPROF_LOG_REPORT behaves as its doc says;
 * - synchronization2: the default stamps with core vkCmdWriteTimestamp, so a
 *   device without the synchronization2 feature gets no validation message;
 *   VKPROF_FEATURE_ENABLED stamps with vkCmdWriteTimestamp2.
 * Each case makes its own device (validation on) and counts its messages. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "harness.h"
#include "sim.h"

/* ---- a device of our own, with or without synchronization2 ---- */

typedef struct gpu {
    vku_instance inst;
    vku_device dev;
    vku_busy busy;
} gpu;

static bool gpu_init(gpu *g, bool no_sync2)
{
    memset(g, 0, sizeof *g);
    if (vku_instance_create(&g->inst, true, "vkprof test_desc") != VK_SUCCESS) {
        fprintf(stderr, "FAIL: no Vulkan instance with the validation layer\n");
        exit(1);
    }
    VkPhysicalDevice phys;
    char err[256] = "";
    if (vku_pick_device(g->inst.instance, getenv("VKPROF_TEST_DEVICE"), &phys, err, sizeof err) !=
        VK_SUCCESS) {
        fprintf(stderr, "FAIL: %s\n", err);
        exit(1);
    }
    uint32_t fam = vku_compute_family(phys);
    vku_device_options opt = {.no_synchronization2 = no_sync2};
    if (fam == UINT32_MAX || vku_device_create_ex(&g->dev, phys, fam, &opt) != VK_SUCCESS ||
        vku_busy_create(&g->dev, 1024, &g->busy) != VK_SUCCESS) {
        fprintf(stderr, "FAIL: cannot create a device with a compute queue\n");
        exit(1);
    }
    printf("  device %s, synchronization2 %s\n", g->dev.props.deviceName,
           g->dev.sync2 ? "enabled" : "not enabled");
    return true;
}

/* Destroys everything; every validation message of the case is a failure. */
static void gpu_finish(gpu *g)
{
    vku_busy_destroy(&g->dev, &g->busy);
    vku_device_destroy(&g->dev);
    uint32_t msgs = g->inst.messages;
    vku_instance_destroy(&g->inst);
    if (msgs != 0) {
        fprintf(stderr, "FAIL [%s]: %u validation message(s)\n", th_case, msgs);
        th_failures += (int)msgs;
    }
}

/* The desc an app writes from the README: handles and proc addrs only. The
 * tables are the sim's, which count every vkCmd* the library records; the
 * legacy stamp's stage is recorded here as well. */
static VkPipelineStageFlagBits g_legacy_stage;
static uint64_t g_legacy_stage_other;
static PFN_vkCmdWriteTimestamp g_sim_write_timestamp;

static void VKAPI_CALL w_write_timestamp(VkCommandBuffer c, VkPipelineStageFlagBits s,
                                         VkQueryPool p, uint32_t q)
{
    if (g_legacy_stage != 0 && g_legacy_stage != s) {
        g_legacy_stage_other++;
    }
    g_legacy_stage = s;
    g_sim_write_timestamp(c, s, p, q);
}

static PFN_vkVoidFunction VKAPI_CALL get_device_proc_addr(VkDevice dev, const char *name)
{
    PFN_vkVoidFunction f = sim_get_device_proc_addr(dev, name);
    if (f != NULL && strcmp(name, "vkCmdWriteTimestamp") == 0) {
        g_sim_write_timestamp = (PFN_vkCmdWriteTimestamp)(void *)f;
        return (PFN_vkVoidFunction)(void *)w_write_timestamp;
    }
    return f;
}

static vkprof_context_desc readme_desc(const gpu *g)
{
    vkprof_context_desc d = vkprof_default_desc();
    d.instance = g->inst.instance;
    d.physical_device = g->dev.phys;
    d.device = g->dev.device;
    d.queue_family_index = g->dev.family;
    d.get_instance_proc_addr = sim_get_instance_proc_addr;
    d.get_device_proc_addr = get_device_proc_addr;
    d.enable = VKPROF_ENABLE_ON;
    return d;
}

static void reset_counts(void)
{
    sim_reset();
    g_legacy_stage = 0;
    g_legacy_stage_other = 0;
}

/* Two scopes of `phase`, submitted, waited for and folded; both modes. */
static void run_scopes(gpu *g, vkprof_context ctx, vkprof_timing_mode mode)
{
    for (int i = 0; i < 2; i++) {
        CHECK_VK(vku_begin(&g->dev));
        CHECK(vkprof_cmd_begin(ctx, g->dev.cmd, VKPROF_PHASE_MLP_DOWN) == VKPROF_OK);
        vku_busy_record(&g->dev, &g->busy, g->dev.cmd, 20);
        CHECK(vkprof_cmd_end(ctx, g->dev.cmd, VKPROF_PHASE_MLP_DOWN) == VKPROF_OK);
        CHECK_VK(vku_submit_wait(&g->dev));
        if (mode == VKPROF_TIMING_2SLOT) {
            uint64_t ns = 0;
            CHECK(vkprof_resolve(ctx, &ns) == VKPROF_OK);
            CHECK(ns > 0);
            CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_MLP_DOWN) == VKPROF_OK);
        } else {
            CHECK(vkprof_collect(ctx) == VKPROF_OK);
        }
    }
    vkprof_phase_stats st[VKPROF_MAX_PHASES];
    uint32_t n = 0;
    CHECK(vkprof_snapshot(ctx, st, VKPROF_MAX_PHASES, &n, NULL) == VKPROF_OK);
    CHECK(n > VKPROF_PHASE_MLP_DOWN);
    CHECK_EQ_U64(st[VKPROF_PHASE_MLP_DOWN].count, 2);
    CHECK(st[VKPROF_PHASE_MLP_DOWN].total_ns > 0);
    CHECK(st[VKPROF_PHASE_MLP_DOWN].min_ns > 0);
}

/* One context per timing mode with `d`; returns what device info said. */
static bool profile_with(gpu *g, vkprof_context_desc d)
{
    bool ts2 = false;
    for (int m = 0; m < 2; m++) {
        d.timing_mode = m == 0 ? VKPROF_TIMING_2SLOT : VKPROF_TIMING_RING;
        vkprof_context ctx = NULL;
        CHECK(vkprof_create(&d, &ctx) == VKPROF_OK);
        CHECK(vkprof_active(ctx));
        vkprof_device_info info;
        CHECK(vkprof_get_device_info(ctx, &info) == VKPROF_OK);
        ts2 = info.timestamp2;
        run_scopes(g, ctx, d.timing_mode);
        vkprof_destroy(ctx);
    }
    return ts2;
}

/* ---- item 11: synchronization2 ---- */

static void test_default_desc(void)
{
    vkprof_context_desc d = vkprof_default_desc();
    CHECK(d.synchronization2 == VKPROF_FEATURE_UNKNOWN);
    CHECK(!d.no_synchronization2);
    for (size_t i = 0; i < sizeof d.reserved / sizeof d.reserved[0]; i++) {
        CHECK(d.reserved[i] == 0);
    }
    /* zero means default: a `= {0}` desc says the same */
    vkprof_context_desc z;
    memset(&z, 0, sizeof z);
    CHECK(z.synchronization2 == VKPROF_FEATURE_UNKNOWN);
}

/* The bug: the default desc on a device without synchronization2 recorded
 * vkCmdWriteTimestamp2 (VUID-vkCmdWriteTimestamp2-synchronization2-03858). */
static void test_default_without_sync2(void)
{
    gpu g;
    gpu_init(&g, true);
    CHECK(!g.dev.sync2);
    reset_counts();
    bool ts2 = profile_with(&g, readme_desc(&g));
    CHECK(!ts2);
    CHECK_EQ_U64(g_sim.cmd_timestamp, 2 * 2 + 2 * 2);
    CHECK_EQ_U64(g_sim.cmd_timestamp2, 0);
    /* the legacy stamp waits for every earlier command: one bit, BOTTOM_OF_PIPE */
    CHECK(g_legacy_stage == VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT);
    CHECK_EQ_U64(g_legacy_stage_other, 0);
    gpu_finish(&g);
}

/* The default stays legacy also where the device has the feature on: the
 * library cannot know, so it asks nothing of the device. No warning. */
static void test_default_with_sync2(void)
{
    gpu g;
    gpu_init(&g, false);
    reset_counts();
    th_log log;
    memset(&log, 0, sizeof log);
    log.quiet = 1;
    vkprof_context_desc d = readme_desc(&g);
    d.log = th_log_fn;
    d.log_user = &log;
    CHECK(!profile_with(&g, d));
    CHECK_EQ_U64(g_sim.cmd_timestamp2, 0);
    CHECK_EQ_U64(g_sim.cmd_timestamp, 8);
    CHECK_EQ_U64(log.warnings, 0);
    CHECK_EQ_U64(log.errors, 0);
    gpu_finish(&g);
}

static void test_enabled(void)
{
    gpu g;
    gpu_init(&g, false);
    if (!g.dev.sync2) {
        printf("  skipped: the device does not offer synchronization2\n");
        gpu_finish(&g);
        return;
    }
    reset_counts();
    vkprof_context_desc d = readme_desc(&g);
    d.synchronization2 = VKPROF_FEATURE_ENABLED;
    CHECK(profile_with(&g, d));
    CHECK_EQ_U64(g_sim.cmd_timestamp2, 8);
    CHECK_EQ_U64(g_sim.cmd_timestamp, 0);
    CHECK(g_sim.last_stage2 == VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT);

    /* no_synchronization2 = true wins over ENABLED (compatibility) */
    reset_counts();
    d.no_synchronization2 = true;
    CHECK(!profile_with(&g, d));
    CHECK_EQ_U64(g_sim.cmd_timestamp2, 0);
    CHECK_EQ_U64(g_sim.cmd_timestamp, 8);

    /* vku_vkprof_desc says what the device enabled */
    vkprof_context_desc v = vku_vkprof_desc(&g.inst, &g.dev);
    CHECK(v.synchronization2 == VKPROF_FEATURE_ENABLED);
    CHECK(!v.no_synchronization2);
    gpu_finish(&g);
}

static void test_disabled(void)
{
    gpu g;
    gpu_init(&g, true);
    reset_counts();
    vkprof_context_desc d = readme_desc(&g);
    d.synchronization2 = VKPROF_FEATURE_DISABLED;
    CHECK(!profile_with(&g, d));
    CHECK_EQ_U64(g_sim.cmd_timestamp2, 0);
    CHECK_EQ_U64(g_sim.cmd_timestamp, 8);
    vkprof_context_desc v = vku_vkprof_desc(&g.inst, &g.dev);
    CHECK(v.synchronization2 == VKPROF_FEATURE_DISABLED);

    /* out of range: refused */
    vkprof_context ctx = (vkprof_context)(void *)&d;
    d.synchronization2 = (vkprof_feature)3;
    CHECK(vkprof_create(&d, &ctx) == VKPROF_ERROR_INVALID_ARGUMENT);
    CHECK(ctx == NULL);
    gpu_finish(&g);
}

/* ---- item 10: log_level ---- */

typedef struct level_log {
    int by_level[8];
    int reports;
} level_log;

static void level_log_fn(void *user, vkprof_log_level level, vkprof_result code, const char *msg)
{
    (void)code;
    level_log *l = user;
    if ((unsigned)level < 8) {
        l->by_level[level]++;
    }
    if (level == VKPROF_LOG_REPORT && strstr(msg, "vkprof host profile") != NULL) {
        l->reports++;
    }
}

/* Create with `level` (and 32 valid timestamp bits, which the library notes
 * at INFO level), time one span and one step at host `host` level with a
 * report every step. */
static vkprof_result create_at(gpu *g, vkprof_log_level level, vkprof_host_level host, level_log *l)
{
    memset(l, 0, sizeof *l);
    reset_counts();
    g_sim.override_valid_bits = true;
    g_sim.valid_bits = 32;
    vkprof_context_desc d = readme_desc(g);
    d.log_level = level;
    d.log = level_log_fn;
    d.log_user = l;
    d.host_level = host;
    d.report_every = 1;
    vkprof_context ctx = (vkprof_context)(void *)l;
    vkprof_result r = vkprof_create(&d, &ctx);
    if (r != VKPROF_OK) {
        CHECK(ctx == NULL);
        return r;
    }
    vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_NORM);
    vkprof_span_end(ctx, &s);
    vkprof_step(ctx);
    vkprof_destroy(ctx);
    g_sim.override_valid_bits = false;
    return r;
}

static void test_log_levels(void)
{
    gpu g;
    gpu_init(&g, false);
    static const vkprof_log_level all[] = {VKPROF_LOG_DEFAULT, VKPROF_LOG_ERROR, VKPROF_LOG_WARN,
                                           VKPROF_LOG_INFO, VKPROF_LOG_REPORT};
    level_log l;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        vkprof_result r = create_at(&g, all[i], VKPROF_HOST_ALL, &l);
        printf("  log_level %d: %s, %d info, %d report(s)\n", (int)all[i], vkprof_result_name(r),
               l.by_level[VKPROF_LOG_INFO], l.reports);
        CHECK(r == VKPROF_OK);
        /* the report is always delivered while host profiling is on */
        CHECK_EQ_U64(l.reports, 1);
        CHECK_EQ_U64(l.by_level[VKPROF_LOG_REPORT], 1);
        /* INFO only where the level asks for it: INFO and REPORT (the most verbose) */
        bool info = all[i] == VKPROF_LOG_INFO || all[i] == VKPROF_LOG_REPORT;
        CHECK(info ? l.by_level[VKPROF_LOG_INFO] > 0 : l.by_level[VKPROF_LOG_INFO] == 0);
    }
    /* REPORT with host profiling off: no report, INFO still delivered */
    CHECK(create_at(&g, VKPROF_LOG_REPORT, VKPROF_HOST_OFF, &l) == VKPROF_OK);
    CHECK_EQ_U64(l.reports, 0);
    CHECK_EQ_U64(l.by_level[VKPROF_LOG_REPORT], 0);
    CHECK(l.by_level[VKPROF_LOG_INFO] > 0);
    /* out of range, either side: refused, *out NULL */
    CHECK(create_at(&g, (vkprof_log_level)(VKPROF_LOG_REPORT + 1), VKPROF_HOST_ALL, &l) ==
          VKPROF_ERROR_INVALID_ARGUMENT);
    CHECK(create_at(&g, (vkprof_log_level)-1, VKPROF_HOST_ALL, &l) ==
          VKPROF_ERROR_INVALID_ARGUMENT);
    CHECK(create_at(&g, (vkprof_log_level)1000, VKPROF_HOST_ALL, &l) ==
          VKPROF_ERROR_INVALID_ARGUMENT);
    gpu_finish(&g);
}

/* ---- desc defaults, resolved in one pass by vkprof_create ---- */

static vkprof_timing_stats stats_of(const vkprof_context_desc *d)
{
    vkprof_timing_stats ts;
    memset(&ts, 0xab, sizeof ts);
    vkprof_context ctx = NULL;
    CHECK(vkprof_create(d, &ctx) == VKPROF_OK);
    CHECK(vkprof_get_timing_stats(ctx, &ts) == VKPROF_OK);
    vkprof_destroy(ctx);
    return ts;
}

/* A desc of zeros but for the handles and proc-addr functions of `from`. */
static vkprof_context_desc handles_only(const vkprof_context_desc *from)
{
    vkprof_context_desc z;
    memset(&z, 0, sizeof z);
    z.instance = from->instance;
    z.physical_device = from->physical_device;
    z.device = from->device;
    z.queue_family_index = from->queue_family_index;
    z.get_instance_proc_addr = from->get_instance_proc_addr;
    z.get_device_proc_addr = from->get_device_proc_addr;
    return z;
}

static void test_resolved_defaults(void)
{
    gpu g;
    gpu_init(&g, false);
    reset_counts();
    /* zero and vkprof_default_desc() resolve alike: 4096 ring queries, every step */
    vkprof_context_desc d = readme_desc(&g);
    d.timing_mode = VKPROF_TIMING_RING;
    vkprof_timing_stats a = stats_of(&d);
    CHECK_EQ_U64(a.ring_queries, 4096);
    CHECK_EQ_U64(a.sample_every, 1);
    vkprof_context_desc z = handles_only(&d);
    z.enable = VKPROF_ENABLE_ON;
    z.timing_mode = VKPROF_TIMING_RING;
    vkprof_timing_stats b = stats_of(&z);
    CHECK_EQ_U64(b.ring_queries, a.ring_queries);
    CHECK_EQ_U64(b.sample_every, a.sample_every);
    /* the lower bounds: ring_queries at least 4, sample_every 1 */
    z.ring_queries = 1;
    z.sample_every = 1;
    b = stats_of(&z);
    CHECK_EQ_U64(b.ring_queries, 4);
    CHECK_EQ_U64(b.sample_every, 1);
    z.ring_queries = 64;
    z.sample_every = 5;
    b = stats_of(&z);
    CHECK_EQ_U64(b.ring_queries, 64);
    CHECK_EQ_U64(b.sample_every, 5);
    /* the env vars are read once, at create: later changes do not matter */
    z.enable = VKPROF_ENABLE_FROM_ENV;
    z.env_var = "VKPROF_TEST_DESC_GPU";
    z.host_env_var = "VKPROF_TEST_DESC_HOST";
    setenv("VKPROF_TEST_DESC_GPU", "1", 1);
    setenv("VKPROF_TEST_DESC_HOST", "2", 1);
    vkprof_context ctx = NULL;
    CHECK(vkprof_create(&z, &ctx) == VKPROF_OK);
    setenv("VKPROF_TEST_DESC_GPU", "0", 1);
    setenv("VKPROF_TEST_DESC_HOST", "0", 1);
    CHECK(vkprof_active(ctx));
    CHECK(vkprof_get_host_level(ctx) == VKPROF_HOST_HOT);
    vkprof_destroy(ctx);
    CHECK(vkprof_create(&z, &ctx) == VKPROF_OK);
    CHECK(!vkprof_active(ctx));
    CHECK(vkprof_get_host_level(ctx) == VKPROF_HOST_OFF);
    vkprof_destroy(ctx);
    unsetenv("VKPROF_TEST_DESC_GPU");
    unsetenv("VKPROF_TEST_DESC_HOST");
    /* names too long for the context's copy: refused, *out NULL */
    char longname[200];
    memset(longname, 'A', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    for (int i = 0; i < 3; i++) {
        vkprof_context_desc e = z;
        if (i == 0) {
            e.env_var = longname;
        } else if (i == 1) {
            e.host_env_var = longname;
        } else {
            e.trace_env_var = longname;
        }
        ctx = (vkprof_context)(void *)&e;
        CHECK(vkprof_create(&e, &ctx) == VKPROF_ERROR_INVALID_ARGUMENT);
        CHECK(ctx == NULL);
    }
    /* out of range: refused before anything is resolved */
    vkprof_context_desc e = z;
    e.calibration_tries = 65;
    CHECK(vkprof_create(&e, &ctx) == VKPROF_ERROR_INVALID_ARGUMENT);
    e = z;
    e.ring_queries = (1u << 24) + 1;
    CHECK(vkprof_create(&e, &ctx) == VKPROF_ERROR_INVALID_ARGUMENT);
    gpu_finish(&g);
}

/* vkprof_get_desc: the desc as create resolved it, the environment read
 * once, every string the context's own copy. */
static void test_get_desc(void)
{
    gpu g;
    gpu_init(&g, false);
    reset_counts();
    vkprof_context_desc d = readme_desc(&g);
    vkprof_context_desc z = handles_only(&d);
    z.timing_mode = VKPROF_TIMING_RING;
    z.env_var = "VKPROF_TEST_GETDESC";
    char label[16] = "rank0";
    z.trace_label = label;
    setenv("VKPROF_TEST_GETDESC", "on", 1);
    setenv("VKPROF_RING_ROTATE", "3", 1);
    setenv("VKPROF_TRACE_FORMAT", "pftrace", 1);
    vkprof_context ctx = NULL;
    CHECK(vkprof_create(&z, &ctx) == VKPROF_OK);
    unsetenv("VKPROF_TEST_GETDESC");
    unsetenv("VKPROF_RING_ROTATE");
    unsetenv("VKPROF_TRACE_FORMAT");
    strcpy(label, "changed");
    vkprof_context_desc r;
    memset(&r, 0xab, sizeof r);
    CHECK(vkprof_get_desc(ctx, &r) == VKPROF_OK);
    CHECK(r.enable == VKPROF_ENABLE_ON); /* from the env var, read at create */
    CHECK(r.host_level == VKPROF_HOST_OFF);
    CHECK_EQ_U64(r.rotate_scopes, 3);
    CHECK(r.trace_format == VKPROF_TRACE_FORMAT_PFTRACE);
    CHECK_EQ_U64(r.ring_queries, 4096); /* the header's stated defaults */
    CHECK_EQ_U64(r.sample_every, 1);
    CHECK_EQ_U64(r.report_every, 8);
    CHECK_EQ_U64(r.trace_capacity, 1u << 20);
    CHECK(r.log_level == VKPROF_LOG_WARN);
    CHECK(r.synchronization2 == VKPROF_FEATURE_DISABLED); /* unknown: the core stamp */
    CHECK(r.env_var != NULL && strcmp(r.env_var, "VKPROF_TEST_GETDESC") == 0);
    CHECK(r.env_var != z.env_var); /* the context's copy */
    CHECK(r.trace_label != NULL && strcmp(r.trace_label, "rank0") == 0);
    CHECK(r.trace_path == NULL); /* no trace asked for */
    CHECK(r.device == z.device && r.queue_family_index == z.queue_family_index);
    vkprof_destroy(ctx);
    gpu_finish(&g);
}

int main(void)
{
    RUN(test_default_desc);
    RUN(test_default_without_sync2);
    RUN(test_default_with_sync2);
    RUN(test_enabled);
    RUN(test_disabled);
    RUN(test_log_levels);
    RUN(test_resolved_defaults);
    RUN(test_get_desc);
    return th_done();
}
