/* GPU scopes placed on the host timeline (lavapipe, validation on): every
 * scope of the trace inside its submit..fence window within the stated
 * calibration bound, with the calibration extension, with the bracket
 * fallback (simulated: no extension) and with a device that offers only
 * CLOCK_MONOTONIC_RAW; a drifting device clock (simulated, 250 ppm)
 * corrected between calibration points and past the last one; and slices
 * that share a stamp sharing their boundary under 2000 ppm of drift; and a
 * calibrated clock offset from the stamps' own, caught in use (issue 25). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "timeline_common.h"

/* ---- containment ---------------------------------------------------- */

typedef struct window {
    uint64_t submit_ns, fence_ns;
} window;

/* `count` submits, each one timed scope; host windows from just before the
 * submit to just after the fence wait returns. Ring mode (`ring`): submits
 * through vkprof_queue_submit (explicit executions) and vkprof_collect;
 * else the 2-slot resolve and accumulate. */
static void run_scopes_in(vkprof_context ctx, int count, window *w, bool ring)
{
    for (int i = 0; i < count; i++) {
        CHECK_VK(vku_begin(&g.dev));
        CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        vku_busy_record(&g.dev, &busy, g.dev.cmd, 200 + 50 * (uint32_t)(i % 5));
        CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        CHECK_VK(vkEndCommandBuffer(g.dev.cmd));
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &g.dev.cmd};
        CHECK_VK(vkResetFences(g.dev.device, 1, &g.dev.fence));
        w[i].submit_ns = vkprof_host_now_ns();
        if (ring) {
            CHECK_VK(vkprof_queue_submit(ctx, g.dev.queue, 1, &si, g.dev.fence));
        } else {
            CHECK_VK(vkQueueSubmit(g.dev.queue, 1, &si, g.dev.fence));
        }
        CHECK_VK(vkWaitForFences(g.dev.device, 1, &g.dev.fence, VK_TRUE, UINT64_C(10000000000)));
        w[i].fence_ns = vkprof_host_now_ns();
        if (ring) {
            CHECK(vkprof_collect(ctx) == VKPROF_OK);
        } else {
            CHECK(vkprof_resolve(ctx, NULL) == VKPROF_OK);
            CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        }
    }
}

static void run_scopes(vkprof_context ctx, int count, window *w)
{
    run_scopes_in(ctx, count, w, false);
}

/* Every GPU scope of the trace must lie in its submit..fence window, give or
 * take the calibration's stated error bound. Returns the share strictly
 * inside. */
static double check_containment(const char *path, const window *w, int count,
                                const char *want_method)
{
    cJSON *root = load_and_check(path);
    if (root == NULL) {
        return 0;
    }
    const cJSON *cal = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "metadata"), "calibration");
    CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(cal, "method")->valuestring, want_method) == 0);
    int64_t bound = meta_i64(root, "calibration", "error_bound_ns");
    int64_t t0 = meta_i64(root, "trace_start_monotonic_ns", NULL);
    CHECK(bound >= 0 && t0 > 0);
    const cJSON *e;
    int k = 0, strict = 0, outside = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
    {
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        if (!cJSON_IsString(cat) || strcmp(cat->valuestring, "gpu") != 0) {
            continue;
        }
        if (k >= count) {
            k++;
            continue;
        }
        int64_t s = t0 + to_ns(cJSON_GetObjectItemCaseSensitive(e, "ts"));
        int64_t end = s + to_ns(cJSON_GetObjectItemCaseSensitive(e, "dur"));
        int64_t lo = (int64_t)w[k].submit_ns, hi = (int64_t)w[k].fence_ns;
        if (s >= lo && end <= hi) {
            strict++;
        }
        if (s < lo - bound || end > hi + bound) {
            outside++;
            fprintf(stderr, "  scope %d [%lld, %lld] outside window [%lld, %lld] +- %lld ns\n", k,
                    (long long)s, (long long)end, (long long)lo, (long long)hi, (long long)bound);
        }
        k++;
    }
    CHECK(k == count);
    CHECK(outside == 0);
    printf("  %d scopes, %d strictly inside their submit..fence window, all within +-%lld ns "
           "(method %s)\n",
           k, strict, (long long)bound, want_method);
    cJSON_Delete(root);
    return count ? (double)strict / count : 0;
}

static void test_containment_extension(void)
{
    vkprof_context ctx = make_ctx(false, false);
    vkprof_calibration cal;
    CHECK(vkprof_get_calibration(ctx, &cal) == VKPROF_OK);
    CHECK(cal.method == VKPROF_CALIBRATION_EXTENSION);
    CHECK(cal.points >= 1);
    CHECK(vkprof_trace_begin(ctx, 4096) == VKPROF_OK);
    enum { N = 60 };
    window w[N];
    run_scopes(ctx, N, w);
    char path[300];
    snprintf(path, sizeof path, "%s/contain.json", tmpdir);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    double share = check_containment(path, w, N, "calibrated_timestamps");
    /* lavapipe: the device clock is CLOCK_MONOTONIC itself (deviation 1 ns) */
    CHECK(share == 1.0);
    vkprof_destroy(ctx);
}

static void test_containment_bracket(void)
{
    sim_reset();
    g_sim.hide_calibration = true;
    vkprof_context ctx = make_ctx(true, true);
    vkprof_calibration cal;
    CHECK(vkprof_get_calibration(ctx, &cal) == VKPROF_OK);
    CHECK(cal.method == VKPROF_CALIBRATION_BRACKET);
    CHECK(cal.error_bound_ns > 0);
    printf("  bracket error bound %llu ns\n", (unsigned long long)cal.error_bound_ns);
    CHECK(vkprof_trace_begin(ctx, 4096) == VKPROF_OK);
    enum { N = 30 };
    window w[N];
    run_scopes(ctx, N, w);
    CHECK(vkprof_calibrate(ctx) == VKPROF_OK);
    char path[300];
    snprintf(path, sizeof path, "%s/bracket.json", tmpdir);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    check_containment(path, w, N, "bracket");
    vkprof_destroy(ctx);

    /* no extension and no queue: GPU scopes cannot be placed, and the trace says so */
    sim_reset();
    g_sim.hide_calibration = true;
    ctx = make_ctx(true, false);
    CHECK(vkprof_get_calibration(ctx, &cal) == VKPROF_ERROR_NO_CALIBRATION);
    uint64_t h;
    CHECK(vkprof_device_to_host_ns(ctx, 12345, &h) == VKPROF_ERROR_NO_CALIBRATION);
    CHECK(vkprof_trace_begin(ctx, 4096) == VKPROF_OK);
    run_scopes(ctx, 3, w);
    snprintf(path, sizeof path, "%s/none.json", tmpdir);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    cJSON *root = load_and_check(path);
    CHECK(meta_i64(root, "unmapped_gpu_scopes", NULL) == 3);
    CHECK(meta_i64(root, "gpu_scopes", NULL) == 0);
    cJSON_Delete(root);
    vkprof_destroy(ctx);
}

static void test_raw_only(void)
{
    sim_reset();
    g_sim.calib_mode = 2;
    vkprof_context ctx = make_ctx(true, false);
    vkprof_calibration cal;
    CHECK(vkprof_get_calibration(ctx, &cal) == VKPROF_OK);
    CHECK(cal.method == VKPROF_CALIBRATION_EXTENSION);
    CHECK(strstr(cal.host_domain, "RAW") != NULL);
    CHECK(g_sim.calib_calls > 0);
    CHECK(vkprof_trace_begin(ctx, 4096) == VKPROF_OK);
    enum { N = 20 };
    window w[N];
    run_scopes(ctx, N, w);
    char path[300];
    snprintf(path, sizeof path, "%s/raw.json", tmpdir);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    check_containment(path, w, N, "calibrated_timestamps");
    vkprof_destroy(ctx);
}

/* A device clock that runs 250 ppm fast against the host: one calibration
 * point and the nominal period would be off by 250 ns per ms; piecewise-
 * linear correction between points must remove that. */
static void test_drift(void)
{
    sim_reset();
    g_sim.calib_mode = 1;
    g_sim.drift_ppb = 250000; /* 250 ppm */
    g_sim.drift_ref_ns = vkprof_host_now_ns();
    g_sim.drift_offset_ns = 5000000000; /* the device clock reads 5 s ahead */
    vkprof_context_desc d = th_desc(&g, NULL, true);
    d.enable = VKPROF_ENABLE_ON;
    vkprof_context ctx = th_ctx(&d);
/* device ticks for a host time, by the simulated relation */
#define DEV_AT(h)                                                                                  \
    ((uint64_t)((int64_t)(h) + g_sim.drift_offset_ns +                                             \
                ((int64_t)(h) - (int64_t)g_sim.drift_ref_ns) / 1000000000 * g_sim.drift_ppb +      \
                (((int64_t)(h) - (int64_t)g_sim.drift_ref_ns) % 1000000000) * g_sim.drift_ppb /    \
                    1000000000))
    uint64_t hosts[6];
    for (int i = 0; i < 6; i++) {
        if (i) {
            sleep_ms(40);
        }
        CHECK(vkprof_calibrate(ctx) == VKPROF_OK);
        hosts[i] = vkprof_host_now_ns();
    }
    vkprof_calibration cal;
    CHECK(vkprof_get_calibration(ctx, &cal) == VKPROF_OK);
    CHECK(cal.points == 6 + 1 || cal.points == 6);
    printf("  drift seen %.1f ppm (simulated 250 ppm = -%.1f ppm host per device), bound %llu ns\n",
           cal.drift_ppm, 250.0 / 1.00025, (unsigned long long)cal.error_bound_ns);
    CHECK(fabs(cal.drift_ppm - (-249.94)) < 5.0);
    /* between points: interpolated, within the points' own error */
    int64_t worst = 0;
    for (int i = 0; i < 5; i++) {
        uint64_t h = hosts[i] + (hosts[i + 1] - hosts[i]) / 2;
        uint64_t mapped = 0;
        CHECK(vkprof_device_to_host_ns(ctx, DEV_AT(h), &mapped) == VKPROF_OK);
        int64_t err = (int64_t)mapped - (int64_t)h;
        if (llabs(err) > worst) {
            worst = llabs(err);
        }
    }
    /* a single point with the nominal period would be off by 250 ppm x 20..200 ms = 5..50 us */
    printf("  worst interpolation error %lld ns\n", (long long)worst);
    CHECK(worst <= (int64_t)cal.error_bound_ns * 2 + 1000);
    /* past the last point: extrapolated with the long-baseline slope */
    uint64_t future = hosts[5] + 100000000; /* 100 ms on */
    uint64_t mapped = 0;
    CHECK(vkprof_device_to_host_ns(ctx, DEV_AT(future), &mapped) == VKPROF_OK);
    int64_t ext_err = llabs((int64_t)mapped - (int64_t)future);
    printf("  extrapolation 100 ms past the last point: error %lld ns (uncorrected: ~25000)\n",
           (long long)ext_err);
    CHECK(ext_err < 5000);
#undef DEV_AT
    vkprof_destroy(ctx);
}

/* Slices that share a boundary stamp share the boundary in the trace, under
 * a device clock that drifts 2000 ppm against the host (simulated through
 * the calibration calls): both ends go through the one clock map. With the
 * start mapped and the duration in nominal ns, each slice overlapped the
 * next by its length x 2000 ppm, and Perfetto drops partly overlapping
 * slices (issue 25). */
static void test_drift_boundaries(void)
{
    sim_reset();
    g_sim.calib_mode = 1;
    g_sim.calib_on_stamps = true; /* real stamps are mapped */
    g_sim.drift_ppb = 2000000;    /* 2000 ppm */
    g_sim.drift_ref_ns = vkprof_host_now_ns();
    vkprof_context_desc d = th_desc(&g, NULL, true);
    d.enable = VKPROF_ENABLE_ON;
    d.timing_mode = VKPROF_TIMING_RING;
    d.shared_boundaries = true;
    d.environment = VKPROF_ENV_IGNORE;
    vkprof_context ctx = th_ctx(&d);
    CHECK(vkprof_trace_begin(ctx, 4096) == VKPROF_OK);
    for (int i = 0; i < 3; i++) {
        sleep_ms(40);
        CHECK(vkprof_calibrate(ctx) == VKPROF_OK);
    }
    enum { SCOPES = 8 };
    VkCommandBuffer cmd = th_alloc_cmd(&g);
    th_begin_cmd(cmd);
    for (int k = 0; k < SCOPES; k++) {
        vkprof_phase ph = k % 2 ? VKPROF_PHASE_MLP_DOWN : VKPROF_PHASE_ATTENTION;
        CHECK(vkprof_cmd_begin(ctx, cmd, ph) == VKPROF_OK);
        vku_busy_record(&g.dev, &busy, cmd, 400);
        CHECK(vkprof_cmd_end(ctx, cmd, ph) == VKPROF_OK);
    }
    CHECK_VK(vkEndCommandBuffer(cmd));
    th_submit_wait(&g, ctx, 1, &cmd);
    /* points on both sides of the work: it is interpolated at the drifting rate */
    for (int i = 0; i < 3; i++) {
        sleep_ms(40);
        CHECK(vkprof_calibrate(ctx) == VKPROF_OK);
    }
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    vkprof_timing_stats ts = th_stats(ctx);
    CHECK(ts.scopes_collected == SCOPES && ts.shared_stamps > 0);
    char path[300];
    snprintf(path, sizeof path, "%s/drift-boundaries.json", tmpdir);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    /* load_and_check: on every track, slices nest or are disjoint */
    cJSON *root = load_and_check(path);
    int64_t prev_end = -1, shared = 0, n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
    {
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        if (!cJSON_IsString(cat) || strcmp(cat->valuestring, "gpu") != 0) {
            continue;
        }
        int64_t ts0 = to_ns(cJSON_GetObjectItemCaseSensitive(e, "ts"));
        int64_t end = ts0 + to_ns(cJSON_GetObjectItemCaseSensitive(e, "dur"));
        CHECK(prev_end < 0 || ts0 >= prev_end); /* in order, never overlapping */
        shared += prev_end >= 0 && ts0 == prev_end;
        prev_end = end;
        n++;
    }
    CHECK(n == SCOPES);
    /* consecutive scopes with one stamp between them share the boundary */
    CHECK(shared == (int64_t)ts.shared_stamps);
    printf("  %lld slices, %lld boundaries shared to the ns under 2000 ppm of drift\n",
           (long long)n, (long long)shared);
    cJSON_Delete(root);
    CHECK(vkprof_cmd_release(ctx, cmd) == VKPROF_OK);
    vkFreeCommandBuffers(g.dev.device, g.dev.cmd_pool, 1, &cmd);
    vkprof_destroy(ctx);
}

/* Issue 25: a calibration that lies is caught as it is used. The simulated
 * driver's calibrated DEVICE clock reads `offset` ns apart from the clock its
 * timestamp queries write (RADV on GFX11.5 was seen 11.85 s apart: kvark/blade
 * PR #388). Ring mode with vkprof_cmd_submit: every execution's stamps must
 * map inside its submit..read window; three in a row outside make the
 * calibration inconsistent (by about `offset`), and the map falls back to
 * bracketing by those windows: every slice of the trace is then inside its
 * submit..fence window, within the stated bound. offset 0: consistent, every
 * execution checked, nothing moved. */
static void calib_offset_case(int64_t offset)
{
    printf("  calibrated clock %+.2f s from the stamps' clock\n", (double)offset / 1e9);
    sim_reset();
    g_sim.calib_mode = 1;
    g_sim.calib_on_stamps = true; /* real stamps are mapped */
    g_sim.drift_ppb = 0;
    g_sim.drift_ref_ns = vkprof_host_now_ns();
    g_sim.drift_offset_ns = offset;
    vkprof_context_desc d = th_desc(&g, &logbuf, true);
    d.enable = VKPROF_ENABLE_ON;
    d.timing_mode = VKPROF_TIMING_RING;
    d.environment = VKPROF_ENV_IGNORE;
    d.report_every = UINT32_MAX;
    memset(&logbuf, 0, sizeof logbuf);
    logbuf.quiet = 1;
    vkprof_context ctx = th_ctx(&d);
    if (ctx == NULL) {
        return;
    }
    CHECK(vkprof_trace_begin(ctx, 4096) == VKPROF_OK);
    enum { N = 12 };
    window w[N];
    run_scopes_in(ctx, N, w, true);
    vkprof_calibration cal;
    CHECK(vkprof_get_calibration(ctx, &cal) == VKPROF_OK);
    printf("  checked %llu executions, %llu outside; inconsistent %d by %.6f s; method %d, "
           "bound %llu ns\n",
           (unsigned long long)cal.window_checks, (unsigned long long)cal.window_violations,
           (int)cal.inconsistent, (double)cal.inconsistent_offset_ns / 1e9, (int)cal.method,
           (unsigned long long)cal.error_bound_ns);
    CHECK_EQ_U64(th_phase(ctx, VKPROF_PHASE_ATTENTION).count, N); /* durations stay exact */
    char path[300];
    snprintf(path, sizeof path, "%s/calib_offset_%lld.json", tmpdir, (long long)offset);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    {
        /* a trace of two contexts whose first ran nothing (the layer's
         * transfer family on the H200): the check's counts and verdict are
         * the whole trace's, not the first context's */
        vkprof_context idle = make_ctx(false, false);
        CHECK(vkprof_trace_begin(idle, 64) == VKPROF_OK);
        vkprof_context both[2] = {idle, ctx};
        char set[300];
        snprintf(set, sizeof set, "%s/calib_offset_set_%lld.json", tmpdir, (long long)offset);
        CHECK(vkprof_trace_write_set(both, 2, set, VKPROF_TRACE_FORMAT_JSON) == VKPROF_OK);
        cJSON *root = load_and_check(set);
        const cJSON *mc = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(root, "metadata"), "calibration");
        CHECK(meta_i64(root, "calibration", "window_checks") == (int64_t)cal.window_checks);
        CHECK(meta_i64(root, "calibration", "window_violations") == (int64_t)cal.window_violations);
        CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(mc, "inconsistent")) ==
              cal.inconsistent);
        cJSON_Delete(root);
        vkprof_destroy(idle);
    }
    if (offset == 0) {
        CHECK(!cal.inconsistent);
        CHECK(cal.method == VKPROF_CALIBRATION_EXTENSION);
        CHECK_EQ_U64(cal.window_checks, N);
        CHECK_EQ_U64(cal.window_violations, 0);
        CHECK_EQ_U64(logbuf.warnings, 0);
        (void)check_containment(path, w, N, "calibrated_timestamps");
    } else {
        CHECK(cal.inconsistent);
        CHECK(cal.method == VKPROF_CALIBRATION_BRACKET);
        CHECK(cal.window_violations >= 3);
        /* the calibrated clock reads `offset` ahead: stamps map that far
         * before their window (or after it, for a negative offset), give or
         * take the window itself */
        CHECK(llabs(cal.inconsistent_offset_ns + offset) < 100000000);
        CHECK(logbuf.warnings >= 1 && strstr(logbuf.last, "inconsistent") != NULL);
        (void)check_containment(path, w, N, "bracket");
        cJSON *root = load_and_check(path);
        const cJSON *mc = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(root, "metadata"), "calibration");
        CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(mc, "inconsistent")));
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(mc, "inconsistent_offset_ns");
        CHECK(cJSON_IsNumber(o) && o->valuedouble == (double)cal.inconsistent_offset_ns);
        cJSON_Delete(root);
    }
    vkprof_destroy(ctx);
}

static void test_calib_offset(void)
{
    calib_offset_case(0);
    calib_offset_case(INT64_C(11850000000));
    calib_offset_case(-INT64_C(11850000000));
}

int main(void)
{
    tl_init();
    RUN(test_containment_extension);
    RUN(test_containment_bracket);
    RUN(test_raw_only);
    RUN(test_drift);
    RUN(test_drift_boundaries);
    RUN(test_calib_offset);
    return tl_finish();
}
