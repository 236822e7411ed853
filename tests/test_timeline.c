/* Host spans, calibration and the timeline on a real device (lavapipe) with
 * validation on, plus simulated devices through the function table: no
 * calibration extension (bracket fallback), a drifting device clock, and a
 * device that offers only CLOCK_MONOTONIC_RAW. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "sim.h"

static th_gpu g;
static vku_busy busy;
static th_log logbuf;
static char tmpdir[256];

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static vkprof_context make_ctx(bool sim, bool give_queue)
{
    vkprof_context_desc d = vku_vkprof_desc(&g.inst, &g.dev);
    if (sim) {
        d.get_instance_proc_addr = sim_get_instance_proc_addr;
        d.get_device_proc_addr = sim_get_device_proc_addr;
    }
    d.enable = VKPROF_ENABLE_ON;
    d.host_level = VKPROF_HOST_ALL;
    d.report_every = UINT32_MAX;
    d.queue = give_queue ? g.dev.queue : VK_NULL_HANDLE;
    d.log = th_log_fn;
    d.log_user = &logbuf;
    vkprof_context ctx = NULL;
    CHECK(vkprof_create(&d, &ctx) == VKPROF_OK);
    return ctx;
}

/* ts / dur strings are microseconds with 3 decimals: back to integer ns */
static int64_t to_ns(const cJSON *v)
{
    return cJSON_IsNumber(v) ? (int64_t)llround(v->valuedouble * 1000.0) : -1;
}

typedef struct slice {
    int pid, tid;
    int64_t ts, end;
} slice;

static int cmp_slice(const void *a, const void *b)
{
    const slice *x = a, *y = b;
    if (x->pid != y->pid) {
        return x->pid - y->pid;
    }
    if (x->tid != y->tid) {
        return x->tid - y->tid;
    }
    if (x->ts != y->ts) {
        return x->ts < y->ts ? -1 : 1;
    }
    return x->end > y->end ? -1 : x->end < y->end;
}

/* Parse a trace with cJSON and check its structure: the fields every event
 * needs, proper nesting per (pid, tid), named tracks, metadata. Returns the
 * root (caller deletes) or NULL. */
static cJSON *load_and_check(const char *path)
{
    char *text = th_read_file(path);
    CHECK(text != NULL);
    if (text == NULL) {
        return NULL;
    }
    cJSON *root = cJSON_Parse(text);
    free(text);
    CHECK(root != NULL);
    if (root == NULL) {
        return NULL;
    }
    const cJSON *unit = cJSON_GetObjectItemCaseSensitive(root, "displayTimeUnit");
    CHECK(cJSON_IsString(unit) && strcmp(unit->valuestring, "ns") == 0);
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    CHECK(cJSON_IsArray(events));
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    CHECK(cJSON_IsObject(meta));
    static const char *const meta_keys[] = {"device",       "driver",
                                            "calibration",  "dropped_events",
                                            "clock_anchor", "trace_start_monotonic_ns"};
    for (size_t i = 0; i < sizeof meta_keys / sizeof meta_keys[0]; i++) {
        CHECK(cJSON_GetObjectItemCaseSensitive(meta, meta_keys[i]) != NULL);
    }
    const cJSON *cal = cJSON_GetObjectItemCaseSensitive(meta, "calibration");
    CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(cal, "error_bound_ns")));
    CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(cal, "method")));

    int n = cJSON_GetArraySize(events);
    slice *sl = calloc((size_t)n + 1, sizeof *sl);
    int ns = 0, gpu_named = 0, flows_s = 0, flows_f = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, events)
    {
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
        CHECK(cJSON_IsString(ph));
        if (!cJSON_IsString(ph)) {
            continue;
        }
        CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "pid")));
        CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "tid")));
        const char *p = ph->valuestring;
        if (strcmp(p, "X") == 0) {
            CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "name")));
            int64_t ts = to_ns(cJSON_GetObjectItemCaseSensitive(e, "ts"));
            int64_t dur = to_ns(cJSON_GetObjectItemCaseSensitive(e, "dur"));
            CHECK(ts >= 0 && dur >= 0);
            sl[ns].pid = cJSON_GetObjectItemCaseSensitive(e, "pid")->valueint;
            sl[ns].tid = cJSON_GetObjectItemCaseSensitive(e, "tid")->valueint;
            sl[ns].ts = ts;
            sl[ns].end = ts + dur;
            ns++;
        } else if (strcmp(p, "M") == 0) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
            CHECK(cJSON_IsObject(args));
            if (cJSON_IsString(name) && strcmp(name->valuestring, "process_name") == 0) {
                const cJSON *an = cJSON_GetObjectItemCaseSensitive(args, "name");
                if (cJSON_IsString(an) && strncmp(an->valuestring, "GPU: ", 5) == 0) {
                    gpu_named++;
                    CHECK(strcmp(an->valuestring + 5, g.dev.props.deviceName) == 0);
                }
            }
        } else if (strcmp(p, "s") == 0) {
            flows_s++;
        } else if (strcmp(p, "f") == 0) {
            flows_f++;
            CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "bp")));
        } else {
            CHECK(strcmp(p, "i") == 0 || strcmp(p, "C") == 0);
        }
    }
    CHECK(gpu_named == 1);
    CHECK(flows_s == flows_f);
    /* proper nesting: on each track, a slice starting inside another ends inside it */
    qsort(sl, (size_t)ns, sizeof *sl, cmp_slice);
    int bad = 0;
    for (int i = 0; i < ns;) {
        int j = i;
        slice stack[64];
        int depth = 0;
        for (; j < ns && sl[j].pid == sl[i].pid && sl[j].tid == sl[i].tid; j++) {
            while (depth > 0 && stack[depth - 1].end <= sl[j].ts) {
                depth--;
            }
            if (depth > 0 && sl[j].end > stack[depth - 1].end) {
                bad++;
            }
            if (depth < 64) {
                stack[depth++] = sl[j];
            }
        }
        i = j;
    }
    CHECK(bad == 0);
    free(sl);
    return root;
}

static int64_t meta_i64(const cJSON *root, const char *a, const char *b)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, a);
    if (b != NULL) {
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    }
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

/* ---- containment ---------------------------------------------------- */

typedef struct window {
    uint64_t submit_ns, fence_ns;
} window;

/* `count` submits, each one timed scope; host windows from just before the
 * submit to just after the fence wait returns. */
static void run_scopes(vkprof_context ctx, int count, window *w)
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
        CHECK_VK(vkQueueSubmit(g.dev.queue, 1, &si, g.dev.fence));
        CHECK_VK(vkWaitForFences(g.dev.device, 1, &g.dev.fence, VK_TRUE, UINT64_C(10000000000)));
        w[i].fence_ns = vkprof_host_now_ns();
        CHECK(vkprof_resolve(ctx, NULL) == VKPROF_OK);
        CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
    }
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
    CHECK(vkprof_trace_start(ctx, 4096) == VKPROF_OK);
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
    CHECK(vkprof_trace_start(ctx, 4096) == VKPROF_OK);
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
    CHECK(vkprof_trace_start(ctx, 4096) == VKPROF_OK);
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
    CHECK(vkprof_trace_start(ctx, 4096) == VKPROF_OK);
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
    vkprof_context_desc d = vku_vkprof_desc(&g.inst, &g.dev);
    d.get_instance_proc_addr = sim_get_instance_proc_addr;
    d.get_device_proc_addr = sim_get_device_proc_addr;
    d.enable = VKPROF_ENABLE_ON;
    vkprof_context ctx = NULL;
    CHECK(vkprof_create(&d, &ctx) == VKPROF_OK);
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

/* ---- spans, levels, report --------------------------------------------- */

static int syncs;
static void count_sync(void *user)
{
    (void)user;
    syncs++;
}

static void wait_a_bit(void *user)
{
    (void)user;
    sleep_ms(2);
}

static void test_span_levels(void)
{
    vkprof_context_desc d = vku_vkprof_desc(&g.inst, &g.dev);
    d.enable = VKPROF_ENABLE_OFF;
    d.report_every = UINT32_MAX;
    d.log = th_log_fn;
    d.log_user = &logbuf;
    vkprof_context ctx;

    /* env: 2 = hot only */
    setenv("VKPROF_HOST_PROFILE", "2", 1);
    CHECK(vkprof_create(&d, &ctx) == VKPROF_OK);
    CHECK(vkprof_get_host_level(ctx) == VKPROF_HOST_HOT);
    vkprof_span s = vkprof_span_start(ctx, VKPROF_BUCKET_NORM);
    CHECK(s.start_ns == 0);
    CHECK(vkprof_span_end(ctx, &s) == 0);
    vkprof_span h = vkprof_span_start_hot(ctx, VKPROF_BUCKET_ALLREDUCE_ATTN);
    CHECK(h.start_ns != 0);
    CHECK(vkprof_span_end(ctx, &h) > 0 || true);
    vkprof_bucket_stats st[VKPROF_MAX_BUCKETS];
    uint32_t n;
    CHECK(vkprof_bucket_snapshot(ctx, st, VKPROF_MAX_BUCKETS, &n) == VKPROF_OK);
    CHECK(st[VKPROF_BUCKET_NORM].calls == 0);
    CHECK(st[VKPROF_BUCKET_ALLREDUCE_ATTN].calls == 1);
    /* the rendezvous probe: charged to the probe bucket, wait called */
    uint64_t waited =
        vkprof_rendezvous(ctx, VKPROF_BUCKET_ALLREDUCE_ATTN_RENDEZVOUS, wait_a_bit, NULL);
    CHECK(waited >= 2000000);
    CHECK(vkprof_bucket_snapshot(ctx, st, VKPROF_MAX_BUCKETS, &n) == VKPROF_OK);
    CHECK(st[VKPROF_BUCKET_ALLREDUCE_ATTN_RENDEZVOUS].calls == 1);
    CHECK(st[VKPROF_BUCKET_ALLREDUCE_ATTN_RENDEZVOUS].total_ns == waited);
    CHECK(st[VKPROF_BUCKET_ALLREDUCE_ATTN].calls == 1);
    vkprof_destroy(ctx);

    /* env: 1 = everything; sync variants */
    setenv("VKPROF_HOST_PROFILE", "1", 1);
    CHECK(vkprof_create(&d, &ctx) == VKPROF_OK);
    CHECK(vkprof_get_host_level(ctx) == VKPROF_HOST_ALL);
    syncs = 0;
    s = vkprof_span_start(ctx, VKPROF_BUCKET_MLP);
    CHECK(s.start_ns != 0);
    (void)vkprof_span_end_sync(ctx, &s, count_sync, NULL); /* may round to 0 ns */
    CHECK(syncs == 1);
    s = vkprof_span_start(ctx, VKPROF_BUCKET_MLP);
    sleep_ms(1);
    uint64_t ns = vkprof_span_end_sync(ctx, &s, count_sync, NULL);
    CHECK(syncs == 2 && ns >= 1000000u);
    /* closing twice, or an empty token, does nothing */
    CHECK(vkprof_span_end(ctx, &s) == 0);
    CHECK(vkprof_bucket_snapshot(ctx, st, VKPROF_MAX_BUCKETS, &n) == VKPROF_OK);
    CHECK(st[VKPROF_BUCKET_MLP].calls == 2);
    /* unknown bucket: an error, an empty token */
    s = vkprof_span_start(ctx, 5000);
    CHECK(s.start_ns == 0);
    /* app buckets */
    vkprof_bucket mine, again;
    CHECK(vkprof_register_bucket(ctx, "tokenizer", false, &mine) == VKPROF_OK);
    CHECK(mine == VKPROF_BUCKET_DEFAULT_COUNT);
    CHECK(vkprof_register_bucket(ctx, "tokenizer", true, &again) == VKPROF_OK && again == mine);
    CHECK(strcmp(vkprof_bucket_name(ctx, mine), "tokenizer") == 0);
    CHECK(vkprof_register_bucket(ctx, "", false, &again) == VKPROF_ERROR_INVALID_ARGUMENT);
    /* the level can change at runtime */
    vkprof_set_host_level(ctx, VKPROF_HOST_OFF);
    s = vkprof_span_start_hot(ctx, VKPROF_BUCKET_ALLREDUCE_MLP);
    CHECK(s.start_ns == 0);
    syncs = 0;
    /* the app's sync still runs on an empty token: its work must happen */
    vkprof_span_end_sync(ctx, &s, count_sync, NULL);
    CHECK(syncs == 1);
    vkprof_destroy(ctx);

    /* garbage: off, with a warning */
    setenv("VKPROF_HOST_PROFILE", "verbose", 1);
    logbuf.warnings = 0;
    CHECK(vkprof_create(&d, &ctx) == VKPROF_OK);
    CHECK(vkprof_get_host_level(ctx) == VKPROF_HOST_OFF);
    CHECK(logbuf.warnings == 1 && strstr(logbuf.last, "VKPROF_HOST_PROFILE") != NULL);
    vkprof_destroy(ctx);
    unsetenv("VKPROF_HOST_PROFILE");
}

static void test_report_format(void)
{
    vkprof_report_row rows[] = {
        {"norm", 1200000, 16}, {"attention", 4800000, 16}, {"idle", 0, 0}, {"mlp", 2000000, 8}};
    char buf[2048];
    size_t n = vkprof_format_report(buf, sizeof buf, 9, 8, 16000000, rows, 4);
    CHECK(n == strlen(buf));
    const char *want =
        "vkprof host profile, steps 9-16: 2.000 ms/token under profiling (500.0 tokens/s; "
        "profiled, spans serialise the run: not a serving figure)\n"
        "  bucket                         ms/token      %  calls/token    us/call\n"
        "  attention                         0.600   30.0         2.00     300.00\n"
        "  mlp                               0.250   12.5         1.00     250.00\n"
        "  norm                              0.150    7.5         2.00      75.00\n";
    if (strcmp(buf, want) != 0) {
        fprintf(stderr, "got:\n%s\nwant:\n%s\n", buf, want);
    }
    CHECK(strcmp(buf, want) == 0);
    /* truncation: reports the size needed, never overruns */
    char small[20];
    size_t need = vkprof_format_report(small, sizeof small, 9, 8, 16000000, rows, 4);
    CHECK(need == n && strlen(small) == sizeof small - 1);
}

typedef struct report_log {
    int reports;
    char last[4096];
} report_log;

static void on_report(void *user, vkprof_log_level level, vkprof_result code, const char *msg)
{
    (void)code;
    report_log *r = user;
    if (level == VKPROF_LOG_REPORT) {
        r->reports++;
        snprintf(r->last, sizeof r->last, "%s", msg);
    }
}

static void test_report_every(void)
{
    static report_log rl;
    vkprof_context_desc d = vku_vkprof_desc(&g.inst, &g.dev);
    d.enable = VKPROF_ENABLE_OFF;
    d.host_level = VKPROF_HOST_ALL;
    d.report_every = 4;
    d.log = on_report;
    d.log_user = &rl;
    vkprof_context ctx;
    CHECK(vkprof_create(&d, &ctx) == VKPROF_OK);
    for (int step = 0; step < 9; step++) {
        vkprof_span s = vkprof_span_start(ctx, VKPROF_BUCKET_ATTENTION);
        vkprof_span_end(ctx, &s);
        s = vkprof_span_start(ctx, VKPROF_BUCKET_ATTENTION);
        vkprof_span_end(ctx, &s);
        vkprof_step(ctx);
    }
    CHECK(rl.reports == 2);
    CHECK(strstr(rl.last, "steps 5-8:") != NULL);
    CHECK(strstr(rl.last, "not a serving figure") != NULL);
    /* 2 calls per token in the window */
    CHECK(strstr(rl.last, "attention") != NULL && strstr(rl.last, "2.00") != NULL);
    CHECK(vkprof_step_count(ctx) == 9);
    vkprof_destroy(ctx);
}

/* ---- the timeline with everything on ------------------------------------ */

static void test_trace_json(void)
{
    vkprof_context ctx = make_ctx(false, false);
    CHECK(vkprof_trace_start(ctx, 0) == VKPROF_OK);
    vkprof_set_thread_name(ctx, "decode \"main\"");
    vkprof_bucket layer;
    CHECK(vkprof_register_bucket(ctx, "layer", false, &layer) == VKPROF_OK);
    for (int step = 0; step < 3; step++) {
        vkprof_span ls = vkprof_span_start(ctx, layer);
        vkprof_span as = vkprof_span_start(ctx, VKPROF_BUCKET_ATTENTION);
        CHECK_VK(vku_begin(&g.dev));
        CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        vku_busy_record(&g.dev, &busy, g.dev.cmd, 100);
        CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        CHECK_VK(vku_submit_wait(&g.dev));
        CHECK(vkprof_resolve(ctx, NULL) == VKPROF_OK);
        CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        vkprof_span_end(ctx, &as);
        vkprof_span ms = vkprof_span_start(ctx, VKPROF_BUCKET_MOE_ROUTER);
        uint32_t experts[3] = {3, 17, (uint32_t)(40 + step)};
        CHECK(vkprof_span_annotate_ids(&ms, "experts", experts, 3));
        CHECK(vkprof_span_annotate(&ms, "note", "tab\there"));
        vkprof_span_end(ctx, &ms);
        vkprof_rendezvous(ctx, VKPROF_BUCKET_ALLREDUCE_MLP_RENDEZVOUS, NULL, NULL);
        vkprof_span_end(ctx, &ls);
        vkprof_step(ctx);
    }
    char path[300];
    snprintf(path, sizeof path, "%s/trace.json", tmpdir);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    /* a second write replaces the first */
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    cJSON *root = load_and_check(path);
    if (root == NULL) {
        vkprof_destroy(ctx);
        return;
    }
    int gpu = 0, host = 0, steps = 0, annotated = 0, probes = 0, named = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
    {
        const char *ph = cJSON_GetObjectItemCaseSensitive(e, "ph")->valuestring;
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        if (strcmp(ph, "X") == 0 && strcmp(cat->valuestring, "gpu") == 0) {
            gpu++;
            CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(args, "ns")));
        } else if (strcmp(ph, "X") == 0) {
            host++;
            const cJSON *ex = cJSON_GetObjectItemCaseSensitive(args, "experts");
            if (cJSON_IsString(ex)) {
                annotated++;
                CHECK(strncmp(ex->valuestring, "3,17,4", 6) == 0);
                CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(args, "note")->valuestring,
                             "tab\there") == 0);
            }
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args, "probe"))) {
                probes++;
            }
        } else if (strcmp(ph, "i") == 0) {
            steps++;
        } else if (strcmp(ph, "M") == 0) {
            const cJSON *an = cJSON_GetObjectItemCaseSensitive(args, "name");
            if (cJSON_IsString(an) && strcmp(an->valuestring, "decode \"main\"") == 0) {
                named++;
            }
        }
    }
    CHECK(gpu == 3);
    CHECK(host == 3 * 4);
    CHECK(steps == 3);
    CHECK(annotated == 3);
    CHECK(probes == 3);
    CHECK(named == 1);
    CHECK(meta_i64(root, "flows", NULL) == 3);
    CHECK(meta_i64(root, "dropped_events", NULL) == 0);
    CHECK(meta_i64(root, "steps", NULL) == 3);
    CHECK(meta_i64(root, "clock_anchor", "realtime_ns") > 1600000000000000000LL);
    cJSON_Delete(root);
    vkprof_destroy(ctx);
}

/* ---- bounded memory: overflow is counted ---------------------------------- */

static void test_overflow(void)
{
    vkprof_context ctx = make_ctx(false, false);
    CHECK(vkprof_trace_start(ctx, 100) == VKPROF_OK);
    for (int i = 0; i < 250; i++) {
        vkprof_span s = vkprof_span_start(ctx, VKPROF_BUCKET_NORM);
        vkprof_span_end(ctx, &s);
    }
    uint64_t rec = 0, drop = 0;
    vkprof_trace_counts(ctx, &rec, &drop);
    CHECK(rec == 100 && drop == 150);
    char path[300];
    snprintf(path, sizeof path, "%s/overflow.json", tmpdir);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    cJSON *root = load_and_check(path);
    CHECK(meta_i64(root, "dropped_events", NULL) == 150);
    CHECK(meta_i64(root, "event_capacity", NULL) == 100);
    cJSON_Delete(root);
    /* the counters still saw every span */
    vkprof_bucket_stats st[VKPROF_MAX_BUCKETS];
    uint32_t n;
    vkprof_bucket_snapshot(ctx, st, VKPROF_MAX_BUCKETS, &n);
    CHECK(st[VKPROF_BUCKET_NORM].calls == 250);
    vkprof_destroy(ctx);
}

/* ---- atomic write ------------------------------------------------------ */

static int count_tmp_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL) {
        if (strstr(de->d_name, ".tmp") != NULL) {
            n++;
        }
    }
    if (d) {
        closedir(d);
    }
    return n;
}

static void test_atomic_write(void)
{
    vkprof_context ctx = make_ctx(false, false);
    CHECK(vkprof_trace_start(ctx, 200000) == VKPROF_OK);
    for (int i = 0; i < 20000; i++) {
        vkprof_span s = vkprof_span_start(ctx, VKPROF_BUCKET_NORM);
        vkprof_span_end(ctx, &s);
    }
    char good[300];
    snprintf(good, sizeof good, "%s/keep.json", tmpdir);
    FILE *f = fopen(good, "w");
    fputs("{\"the\":\"old trace\"}", f);
    fclose(f);

    logbuf.errors = 0;
    /* a folder that does not exist */
    CHECK(vkprof_trace_write(ctx, "/nonexistent-vkprof-dir/t.json") == VKPROF_ERROR_IO);
    CHECK(logbuf.errors == 1 && strstr(logbuf.last, "/nonexistent-vkprof-dir/t.json") != NULL);

    /* a full disk: the file-size limit makes writes fail with EFBIG, as a
     * full file system fails them with ENOSPC */
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 64 * 1024;
    signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    vkprof_result r = vkprof_trace_write(ctx, good);
    setrlimit(RLIMIT_FSIZE, &old);
    CHECK(r == VKPROF_ERROR_IO);
    printf("  full disk: %s\n", logbuf.last);
    char *text = th_read_file(good);
    CHECK(text != NULL && strcmp(text, "{\"the\":\"old trace\"}") == 0);
    free(text);
    CHECK(count_tmp_files(tmpdir) == 0);

    /* a read-only folder (only meaningful when not root: root ignores modes) */
    if (geteuid() != 0) {
        char ro[300];
        snprintf(ro, sizeof ro, "%s/ro", tmpdir);
        mkdir(ro, 0755);
        char rofile[320];
        snprintf(rofile, sizeof rofile, "%s/t.json", ro);
        f = fopen(rofile, "w");
        fputs("old", f);
        fclose(f);
        chmod(ro, 0555);
        CHECK(vkprof_trace_write(ctx, rofile) == VKPROF_ERROR_IO);
        text = th_read_file(rofile);
        CHECK(text != NULL && strcmp(text, "old") == 0);
        free(text);
        chmod(ro, 0755);
    } else {
        /* as root, a read-only file system: /proc refuses new files */
        CHECK(vkprof_trace_write(ctx, "/proc/vkprof-trace.json") == VKPROF_ERROR_IO);
    }
    /* and it still writes once the disk has room */
    CHECK(vkprof_trace_write(ctx, good) == VKPROF_OK);
    cJSON *root = load_and_check(good);
    CHECK(meta_i64(root, "host_spans", NULL) == 20000);
    cJSON_Delete(root);
    vkprof_destroy(ctx);
}

/* VKPROF_TRACE=path: written when the context is destroyed */
static void test_env_trace(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/env.json", tmpdir);
    unlink(path);
    setenv("VKPROF_TRACE", path, 1);
    vkprof_context ctx = make_ctx(false, false);
    unsetenv("VKPROF_TRACE");
    CHECK(vkprof_tracing(ctx));
    vkprof_span s = vkprof_span_start(ctx, VKPROF_BUCKET_NORM);
    vkprof_span_end(ctx, &s);
    vkprof_step(ctx);
    CHECK(vkprof_flush(ctx) == VKPROF_OK);
    vkprof_step(ctx);
    vkprof_destroy(ctx);
    cJSON *root = load_and_check(path);
    CHECK(root != NULL);
    CHECK(meta_i64(root, "steps", NULL) == 2);
    cJSON_Delete(root);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vkprof-timeline-XXXXXX");
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    th_gpu_init(&g);
    th_busy_init(&g, &busy, 4096);
    logbuf.quiet = 1;
    RUN(test_report_format);
    RUN(test_report_every);
    RUN(test_span_levels);
    RUN(test_trace_json);
    RUN(test_overflow);
    RUN(test_containment_extension);
    RUN(test_containment_bracket);
    RUN(test_raw_only);
    RUN(test_drift);
    RUN(test_atomic_write);
    RUN(test_env_trace);
    vku_busy_destroy(&g.dev, &busy);
    th_gpu_finish(&g);
    printf("trace files kept in %s\n", tmpdir);
    return th_done();
}
