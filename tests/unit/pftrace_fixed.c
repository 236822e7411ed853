/* A native Perfetto trace of a fixed store, the same bytes on every run
 * (issue 12): the exporter's output is compared byte for byte between two
 * builds (`cmp`), e.g. before and after a change meant to keep it.
 *
 * Every clock the library reads is this program's: clock_gettime and getpid
 * are defined here (a static libvkprof resolves them to these), a virtual
 * clock that advances 37 ns a read; spans run on a simulated host counter
 * (vkprof__hclk_test_source, 3 ticks a ns, drifting, calibrated more than
 * once: the piecewise-linear map is used); GPU scopes are put in the store
 * directly on a 36-bit counter near its wrap, with calibration points added
 * as vkprof_calibrate adds them; spans nest, carry annotations and flags,
 * steps, flows from spans to GPU scopes, equal starts, two host threads (one
 * after the other, so the order is fixed) and a GPU track out of the host's
 * order (the sort is used).
 *
 * Usage: pftrace_fixed OUT.pftrace [SPANS [all|spans|flat|long]]   (default
 * 20000 spans, all); spans: no GPU scope; flat: one thread's spans, unnested,
 * no step, no GPU scope (the store is then in order: nothing is sorted);
 * long: all, with 5 h between the threads (a trace sorted by track, then
 * each track by start). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "clock/clock.h"
#include "timeline/store.h"
#include "nodevice.h"

/* ---- the program's clocks ------------------------------------------------ */

static uint64_t g_now = UINT64_C(86400000000000); /* one day after boot */

int clock_gettime(clockid_t id, struct timespec *ts)
{
    uint64_t v = __atomic_add_fetch(&g_now, 37, __ATOMIC_RELAXED);
    if (id == CLOCK_REALTIME) {
        v += UINT64_C(1700000000000000000);
    } else if (id == CLOCK_BOOTTIME) {
        v += UINT64_C(5000000000);
    }
    ts->tv_sec = (time_t)(v / 1000000000u);
    ts->tv_nsec = (long)(v % 1000000000u);
    return 0;
}

pid_t getpid(void)
{
    return 4242;
}

/* the host counter: 3 ticks a ns, plus 1 tick every 4096 reads (a drift) */
static uint64_t g_reads;
static uint64_t sim_counter(void *user)
{
    (void)user;
    return 1000000007u + 3 * __atomic_load_n(&g_now, __ATOMIC_RELAXED) + g_reads++ / 4096;
}

static uint64_t sim_mono(void *user)
{
    (void)user;
    return __atomic_add_fetch(&g_now, 37, __ATOMIC_RELAXED);
}

static vkprof_context g_ctx;
static unsigned long g_spans;
static bool g_flat, g_long;

/* One thread's spans: a token (step) of nested spans, some annotated, some hot. */
static void *record(void *arg)
{
    const char *name = arg;
    vkprof_set_thread_name(g_ctx, name);
    for (unsigned long i = 0; i < g_spans; i++) {
        vkprof_span outer = i % 7 == 0 ? vkprof_span_begin_hot(g_ctx, VKPROF_BUCKET_ATTENTION)
                                       : vkprof_span_begin(g_ctx, VKPROF_BUCKET_MLP);
        if (i % 5 == 0) {
            char v[32];
            snprintf(v, sizeof v, "layer %lu", i % 13);
            vkprof_span_annotate(&outer, "layer", v);
            vkprof_span_annotate(&outer, i % 2 ? "kind" : "shape", "x");
        }
        if (i % 3 == 0 && !g_flat) {
            vkprof_span inner = vkprof_span_begin(g_ctx, VKPROF_BUCKET_NORM);
            vkprof_span_end(g_ctx, &inner);
        }
        vkprof_span_end(g_ctx, &outer);
        if (i % 100 == 99 && !g_flat) {
            vkprof_step(g_ctx);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: pftrace_fixed OUT.pftrace [SPANS]\n");
        return 2;
    }
    g_spans = argc > 2 ? strtoul(argv[2], NULL, 10) : 20000ul;
    const char *mode = argc > 3 ? argv[3] : "all";
    g_flat = strcmp(mode, "flat") == 0;
    g_long = strcmp(mode, "long") == 0;
    const bool with_gpu = strcmp(mode, "all") == 0 || g_long;
    unsetenv("VKPROF_HOST_CLOCK");
    setenv("VKPROF_TRACE_FORMAT", "pftrace", 1);
    vkprof_hclk_source src = {sim_counter, sim_mono, NULL, 0};
    vkprof__hclk_test_source(&src);
    vkprof_context_desc d = th_nodevice_desc("fixed device (pftrace_fixed)");
    d.enable = VKPROF_ENABLE_OFF;
    d.host_level = VKPROF_HOST_ALL;
    d.report_every = UINT32_MAX;
    d.trace_path = "";
    if (vkprof_create(&d, &g_ctx) != VKPROF_OK ||
        vkprof_trace_begin(g_ctx, (uint32_t)(g_spans * 5 + 4096)) != VKPROF_OK) {
        fprintf(stderr, "pftrace_fixed: cannot create the context\n");
        return 1;
    }
    vkprof_context ctx = g_ctx;
    /* a 36-bit GPU counter at 1 ns a tick, its points as calibrations add them */
    ctx->valid_mask = (UINT64_C(1) << 36) - 1;
    ctx->info.timestamp_valid_bits = 36;
    ctx->info.timestamp_period = 1.0f;

    const char *names[2] = {"fixed worker 1", "fixed worker 2"};
    for (int k = 0; k < 2 && !g_flat; k++) {
        pthread_t th;
        if (pthread_create(&th, NULL, record, (void *)names[k]) != 0) {
            return 1;
        }
        pthread_join(th, NULL);
        vkprof__hclk_calibrate(&ctx->hclk);                     /* a point between the threads */
        g_now += g_long ? UINT64_C(18000000000000) : 150000000; /* 5 h or 150 ms on */
        vkprof__hclk_calibrate(&ctx->hclk);
    }
    record((void *)"fixed main");

    /* GPU scopes: one for each span with a flow id that has one, from the
     * newest back (out of the host's order), some with equal starts */
    const uint64_t mask = ctx->valid_mask;
    const uint64_t base = mask - 4000000; /* wraps after 4 ms of ticks */
    uint64_t host0 = g_now - 20000000;
    for (uint32_t i = 0; i < 6; i++) {
        vkprof_cal_point p = {(base + i * UINT64_C(1500000)) & mask,
                              host0 + i * UINT64_C(1500000) + i * 7, 30};
        (void)vkprof__pl_add(ctx->cal.points, &ctx->cal.count, VKPROF_CAL_POINTS, mask, p);
    }
    uint64_t n = atomic_load(&ctx->trace.next);
    uint64_t gpu = 0;
    for (uint64_t i = n; with_gpu && i-- > 0 && gpu < g_spans;) {
        const vkprof_event *e = &ctx->trace.events[i];
        if (e->kind != VKPROF_EV_SPAN || e->id == 0 || i % 3 == 0) {
            continue;
        }
        /* out of order (the sort is used); pairs share a start */
        uint64_t t0 = (base - 100000 + (gpu * 7919 % g_spans) / 2 * 977) & mask;
        uint64_t t1 = (t0 + 300 + (gpu % 11) * 40) & mask;
        vkprof__trace_gpu(ctx, (vkprof_phase)(gpu % 5), t0, t1, e->id, e->step, 0);
        gpu++;
    }
    vkprof_result r = vkprof_trace_write(ctx, argv[1]);
    if (r != VKPROF_OK) {
        fprintf(stderr, "pftrace_fixed: writing %s: %s\n", argv[1], vkprof_result_text(r));
        return 1;
    }
    printf("pftrace_fixed: %llu events, %llu GPU scopes -> %s\n",
           (unsigned long long)atomic_load(&ctx->trace.next), (unsigned long long)gpu, argv[1]);
    vkprof_destroy(ctx);
    vkprof__hclk_test_source(NULL);
    return 0;
}
