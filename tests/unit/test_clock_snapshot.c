/* The clock seam's snapshots (issue 12): an export copies the points once
 * and maps every tick lock-free with a cursor (vkprof__pl_snap_map,
 * vkprof__hclk_snap_ns, vkprof__cal_snap_map). Each must return EXACTLY what
 * the per-tick maps return (vkprof__pl_map, vkprof__hclk_ns,
 * vkprof__cal_map): the same ns and the same success, for ticks at random,
 * sorted, reversed, interleaved as two threads', before the first point,
 * after the last, at each point and one tick either side, and near the
 * extremes; on points of full 64-bit and of narrow, wrapping counters
 * (including points spread past half the range, where the map's binary
 * search is used as it is); with one point, with a short and a long
 * baseline; on a simulated host clock, the real counter, the
 * CLOCK_MONOTONIC fallback, and a context's GPU calibration. No Vulkan: a
 * fake two-function device stands in. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "nodevice.h"
#include "clock/clock.h"

/* ---- a deterministic generator ------------------------------------------ */

static uint64_t g_rng = UINT64_C(0x9e3779b97f4a7c15);

static uint64_t rnd(void)
{
    /* splitmix64 */
    uint64_t z = (g_rng += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The ticks to try on points p[0..n): the interesting ones, then random ones
 * around and inside the points, in several orders. *count gets how many. */
static uint64_t *ticks_for(const vkprof_cal_point *p, uint32_t n, uint64_t mask, size_t *count)
{
    size_t cap = 64 + (size_t)n * 8 + 4 * 4096, k = 0;
    uint64_t *t = malloc(cap * sizeof *t);
    if (t == NULL) {
        *count = 0;
        return NULL;
    }
    const uint64_t fixed[] = {0,
                              1,
                              2,
                              mask,
                              mask - 1,
                              mask >> 1,
                              (mask >> 1) + 1,
                              UINT64_MAX,
                              UINT64_MAX - 1,
                              UINT64_C(1) << 63};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        t[k++] = fixed[i];
    }
    uint64_t lo = n ? p[0].ticks : 0, hi = n ? p[n - 1].ticks : 1000;
    for (uint32_t i = 0; i < n; i++) {
        for (int d = -2; d <= 2; d++) {
            t[k++] = p[i].ticks + (uint64_t)(int64_t)d;
        }
        if (i + 1 < n) {
            uint64_t mid = p[i].ticks + ((p[i + 1].ticks - p[i].ticks) & mask) / 2;
            t[k++] = mid;
            t[k++] = mid + 1;
        }
    }
    uint64_t width = ((hi - lo) & mask) + 1;
    /* random inside, sorted (one thread's ticks), then the same reversed */
    size_t s0 = k;
    for (int i = 0; i < 2048; i++) {
        t[k++] = lo + rnd() % (width + 2000) - 1000;
    }
    qsort(t + s0, k - s0, sizeof *t, cmp_u64);
    for (size_t i = s0; i < s0 + 2048; i++) {
        t[k++] = t[s0 + 2047 - (i - s0)];
    }
    /* two sorted threads interleaved */
    for (int i = 0; i < 1024; i++) {
        t[k++] = t[s0 + (size_t)i];
        t[k++] = t[s0 + 1024 + (size_t)i];
    }
    /* random anywhere, and well before and after the points */
    for (int i = 0; i < 1024; i++) {
        t[k++] = rnd();
        t[k++] = lo - rnd() % (width * 4 + 1);
        t[k++] = hi + rnd() % (width * 4 + 1);
    }
    *count = k;
    return t;
}

static unsigned g_searched; /* snapshots of points that do not increase after p[0] */

/* Both ways on every tick: vkprof__pl_map on the points, and a snapshot of
 * them. Returns how many ticks were compared. */
static size_t compare_pl(const vkprof_cal_point *p, uint32_t n, uint64_t mask,
                         vkprof_pl_nominal nominal, const void *arg)
{
    vkprof_pl_snap s;
    memset(&s, 0, sizeof s);
    s.p = malloc((n ? n : 1) * sizeof *s.p);
    CHECK(s.p != NULL);
    if (s.p == NULL) {
        return 0;
    }
    memcpy(s.p, p, n * sizeof *p);
    s.n = n;
    s.mask = mask;
    s.nominal = nominal;
    s.arg = arg;
    CHECK(vkprof__pl_snap_prepare(&s));
    g_searched += n >= 2 && s.rel == NULL;
    size_t count = 0;
    uint64_t *t = ticks_for(p, n, mask, &count);
    for (size_t i = 0; i < count; i++) {
        uint64_t a = 0xdead, b = 0xdead;
        bool ra = vkprof__pl_map(p, n, mask, nominal, arg, t[i], &a);
        bool rb = vkprof__pl_snap_map(&s, t[i], &b);
        CHECK(ra == rb);
        if (a != b) {
            fprintf(stderr, "  ticks %llu: %llu != %llu (n %u, mask %llx)\n",
                    (unsigned long long)t[i], (unsigned long long)a, (unsigned long long)b, n,
                    (unsigned long long)mask);
        }
        CHECK_EQ_U64(a, b);
    }
    free(t);
    vkprof__pl_snap_free(&s);
    return count;
}

/* ns = ticks * 52.08 (a GPU's period), as a nominal rate */
static int64_t nominal_5208(const void *arg, int64_t ticks)
{
    (void)arg;
    const int64_t lim = INT64_C(1) << 50; /* saturating: no overflow */
    ticks = ticks > lim ? lim : ticks < -lim ? -lim : ticks;
    return ticks * 5208 / 100;
}

/* Points starting at `t0` on a counter of `mask`, `step` ticks apart (with
 * jitter), `ns_step` ns apart (with drift): the ticks wrap when they pass
 * the mask. */
static void make_points(vkprof_cal_point *p, uint32_t n, uint64_t mask, uint64_t t0, uint64_t step,
                        uint64_t ns_step)
{
    uint64_t t = t0, h = UINT64_C(1000000000000);
    for (uint32_t i = 0; i < n; i++) {
        p[i].ticks = t & mask;
        p[i].host_ns = h;
        p[i].err_ns = 10;
        t += step + rnd() % (step / 8 + 1);
        h += ns_step + rnd() % (ns_step / 16 + 1);
    }
}

static void test_pl(void)
{
    check_case = "pl points";
    static vkprof_cal_point p[4096];
    const uint64_t masks[] = {UINT64_MAX, (UINT64_C(1) << 36) - 1, (UINT64_C(1) << 32) - 1,
                              (UINT64_C(1) << 48) - 1};
    const uint32_t ns[] = {0, 1, 2, 3, 7, 64, 512, 4096};
    size_t total = 0;
    for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++) {
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            uint32_t n = ns[k];
            /* a long baseline (slope over all points outside them), near the
             * counter's top (the points wrap), and a short one (nominal) */
            make_points(p, n, masks[m], masks[m] - 5000000, 20000000, 1041600000);
            total += compare_pl(p, n, masks[m], nominal_5208, NULL);
            make_points(p, n, masks[m], 12345, 1000, 52080 / 100);
            total += compare_pl(p, n, masks[m], nominal_5208, NULL);
            make_points(p, n, masks[m], rnd(), 1 + rnd() % 100000000, 1 + rnd() % 1000000000);
            total += compare_pl(p, n, masks[m], nominal_5208, NULL);
        }
        /* points spread past half the range of a narrow counter: ticks after
         * p[0] no longer increase, the snapshot searches as the map does */
        if (masks[m] != UINT64_MAX) {
            make_points(p, 64, masks[m], 0, masks[m] / 40, 1000000000);
            total += compare_pl(p, 64, masks[m], nominal_5208, NULL);
        }
    }
    printf("  pl: %zu ticks compared (%u sets of points past half the range)\n", total, g_searched);
    CHECK(g_searched > 0);
}

/* ---- the host clock: simulated, the real counter, the fallback ---------- */

typedef struct sim_clock {
    uint64_t k, mono_ns, step_ns;
    uint32_t reads;
} sim_clock;

static uint64_t sim_mono(void *user)
{
    sim_clock *s = user;
    uint64_t v = s->mono_ns;
    /* a drifting reference: the step moves a little every 64 reads */
    s->mono_ns += s->step_ns + (s->reads++ % 64 == 0 ? 1 : 0);
    s->k += 24;
    return v;
}

static uint64_t sim_counter(void *user)
{
    sim_clock *s = user;
    return s->k - 12;
}

static void compare_hclk(vkprof_hclk *c, const char *what)
{
    vkprof_pl_snap s;
    CHECK(vkprof__hclk_snapshot(c, &s));
    size_t count = 0;
    uint64_t *t = ticks_for(c->points, c->count, UINT64_MAX, &count);
    for (size_t i = 0; i < count; i++) {
        uint64_t a = vkprof__hclk_ns(c, t[i]);
        uint64_t b = vkprof__hclk_snap_ns(&s, t[i]);
        if (a != b) {
            fprintf(stderr, "  %s: ticks %llu: %llu != %llu\n", what, (unsigned long long)t[i],
                    (unsigned long long)a, (unsigned long long)b);
        }
        CHECK_EQ_U64(a, b);
    }
    printf("  host clock %s: %u points, %zu ticks compared\n", what, c->count, count);
    free(t);
    vkprof__pl_snap_free(&s);
}

static void test_hclk_sim(uint64_t nominal_hz, uint32_t extra_points)
{
    check_case = nominal_hz ? "host clock, simulated, nominal" : "host clock, simulated";
    sim_clock s = {.k = 24 * UINT64_C(1000003), .mono_ns = 5000000, .step_ns = 1250};
    vkprof_hclk_source src = {sim_counter, sim_mono, &s, nominal_hz};
    vkprof__hclk_test_source(&src);
    vkprof_hclk *c = calloc(1, sizeof *c);
    char warn[256];
    vkprof__hclk_init(c, NULL, 1000 * UINT64_C(1000000), warn, sizeof warn);
    vkprof__hclk_test_source(NULL);
    CHECK(c->kind == VKPROF_HCLK_SIM);
    compare_hclk(c, "simulated, at start");
    for (uint32_t i = 0; i < extra_points; i++) {
        /* about 1 ms .. 300 ms of reference time between points */
        uint64_t until = s.mono_ns + 1000000 + rnd() % 300000000;
        while (s.mono_ns < until) {
            (void)sim_mono(&s);
        }
        vkprof__hclk_calibrate(c);
    }
    compare_hclk(c, "simulated, calibrated");
    free(c);
}

static void test_hclk_real(void)
{
    check_case = "host clock, the counter";
    vkprof_hclk *c = calloc(1, sizeof *c);
    char warn[256];
    vkprof__hclk_init(c, "counter", 1000 * UINT64_C(1000000), warn, sizeof warn);
    for (int i = 0; i < 5; i++) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        vkprof__hclk_calibrate(c);
    }
    compare_hclk(c, c->kind == VKPROF_HCLK_COUNTER ? "counter" : "fallback (no counter)");
    free(c);

    check_case = "host clock, the fallback";
    c = calloc(1, sizeof *c);
    vkprof__hclk_init(c, "monotonic", 1000 * UINT64_C(1000000), warn, sizeof warn);
    CHECK(c->kind == VKPROF_HCLK_MONOTONIC);
    compare_hclk(c, "CLOCK_MONOTONIC");
    free(c);
}

/* ---- a context's GPU calibration ----------------------------------------- */

static float g_period = 52.08f;

static void compare_cal(vkprof_context ctx, const char *what)
{
    vkprof_pl_snap s;
    CHECK(vkprof__cal_snapshot(ctx, &s));
    size_t count = 0;
    uint64_t *t = ticks_for(ctx->cal.points, ctx->cal.count, ctx->valid_mask, &count);
    for (size_t i = 0; i < count; i++) {
        uint64_t a = 0xdead, b = 0xdead;
        bool ra = vkprof__cal_map(ctx, t[i], &a);
        bool rb = vkprof__cal_snap_map(&s, t[i], &b);
        CHECK(ra == rb);
        CHECK_EQ_U64(a, b);
    }
    printf("  GPU %s: %u points, mask %llx, %zu ticks compared\n", what, ctx->cal.count,
           (unsigned long long)ctx->valid_mask, count);
    free(t);
    vkprof__pl_snap_free(&s);
}

static void test_cal(float period)
{
    check_case = "GPU calibration";
    g_period = period;
    vkprof_context_desc d = th_nodevice_desc(NULL);
    d.enable = VKPROF_ENABLE_OFF;
    d.report_every = UINT32_MAX;
    d.trace_path = "";
    vkprof_context ctx = NULL;
    CHECK(vkprof_create(&d, &ctx) == VKPROF_OK);
    if (ctx == NULL) {
        return;
    }
    CHECK(ctx->cal.points != NULL);
    compare_cal(ctx, "no point");
    /* a 36-bit counter (as NVIDIA's), then others: the points as
     * vkprof__pl_add keeps them, added one by one */
    const uint64_t masks[] = {(UINT64_C(1) << 36) - 1, UINT64_MAX, (UINT64_C(1) << 32) - 1};
    for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++) {
        ctx->valid_mask = masks[m];
        static const uint32_t sizes[] = {1, 2, 5, 300, 4096 + 100};
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            ctx->cal.count = 0;
            uint64_t t = masks[m] - 3000000000u, h = UINT64_C(77000000000);
            for (uint32_t i = 0; i < sizes[k]; i++) {
                vkprof_cal_point p = {t & masks[m], h, 20};
                (void)vkprof__pl_add(ctx->cal.points, &ctx->cal.count, VKPROF_CAL_POINTS, masks[m],
                                     p);
                t += 1000000 + rnd() % 4000000;
                h += 52080000 + rnd() % 100000;
            }
            compare_cal(ctx, "points");
        }
    }
    vkprof_destroy(ctx);
}

int main(void)
{
    test_pl();
    test_hclk_sim(19200000, 0);
    test_hclk_sim(19200000, 40);
    test_hclk_sim(0, 0);
    test_hclk_sim(0, 600); /* past VKPROF_HCLK_POINTS: thinned as it is */
    test_hclk_real();
    test_cal(52.08f);
    test_cal(1.0f);
    if (check_failures != 0) {
        fprintf(stderr, "test_clock_snapshot: %d failure(s)\n", check_failures);
        return 1;
    }
    printf("test_clock_snapshot: ok\n");
    return 0;
}
