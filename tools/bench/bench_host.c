/* `vkprof bench`: the host costs. An off call site, a span with host
 * profiling on, the clock alone; then a trace store of `trace_capacity`
 * events filled with spans and exported, with its memory. See bench.h. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* A field of /proc/self/status in bytes ("VmRSS", "VmHWM"), or -1. */
static long long proc_status_bytes(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) {
        return -1;
    }
    char line[256];
    long long v = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            long long kb = 0;
            if (sscanf(line + n + 1, "%lld", &kb) == 1) {
                v = kb * 1024;
            }
            break;
        }
    }
    fclose(f);
    return v;
}

/* Keeps `p` opaque to the optimiser: the load and the test of the call site
 * happen in every iteration, nothing is hoisted out of the loop. */
#if defined(__GNUC__) || defined(__clang__)
#define OPAQUE(p) __asm__ __volatile__("" : "+r"(p))
#define CONSUME(v) __asm__ __volatile__("" : : "r"(v))
#else
#define OPAQUE(p) ((void)0)
#define CONSUME(v) ((void)(v))
#endif

static double time_off_callsite(vkprof_context ctx, uint64_t iters, double *empty_ns)
{
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    unsigned acc = 0;
    /* the loop alone, with the same barrier */
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < iters; i++) {
        vkprof_context c = ctx;
        OPAQUE(c);
        CONSUME(c);
    }
    uint64_t t1 = bench_now_ns();
    for (uint64_t i = 0; i < iters; i++) {
        vkprof_context c = ctx;
        OPAQUE(c);
        vkprof_result r = VKPROF_BEGIN(c, cmd, VKPROF_PHASE_ATTENTION);
        acc += (unsigned)r;
    }
    uint64_t t2 = bench_now_ns();
    CONSUME(acc);
    *empty_ns = (double)(t1 - t0) / (double)iters;
    return (double)(t2 - t1) / (double)iters;
}

static double time_spans(vkprof_context ctx, uint64_t iters)
{
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < iters; i++) {
        vkprof_span s = vkprof_span_start(ctx, VKPROF_BUCKET_ATTENTION);
        vkprof_span_end(ctx, &s);
    }
    return (double)(bench_now_ns() - t0) / (double)iters;
}

#if defined(__x86_64__)
static inline uint64_t read_counter(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}
#define COUNTER_NAME "rdtsc"
#elif defined(__aarch64__)
static inline uint64_t read_counter(void)
{
    uint64_t v;
    __asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
    return v;
}
#define COUNTER_NAME "isb; mrs cntvct_el0"
#else
#define COUNTER_NAME ""
#endif

/* The CPU counter alone, read as the span path reads it; -1 without one. */
static double time_counter(uint64_t iters)
{
#if defined(__x86_64__) || defined(__aarch64__)
    uint64_t t0 = bench_now_ns(), acc = 0;
    for (uint64_t i = 0; i < iters; i++) {
        acc += read_counter();
    }
    CONSUME(acc);
    return (double)(bench_now_ns() - t0) / (double)iters;
#else
    (void)iters;
    return -1.0;
#endif
}

/* A span with VKPROF_HOST_CLOCK=monotonic (the clock_gettime fallback), the
 * user's VKPROF_HOST_CLOCK restored after; -1 when no context. */
static double time_spans_monotonic(vkprof_context_desc d, uint64_t iters)
{
    const char *old = getenv("VKPROF_HOST_CLOCK");
    char keep[64];
    snprintf(keep, sizeof keep, "%s", old ? old : "");
    setenv("VKPROF_HOST_CLOCK", "monotonic", 1);
    vkprof_context ctx = NULL;
    vkprof_result r = vkprof_create(&d, &ctx);
    if (old != NULL) {
        setenv("VKPROF_HOST_CLOCK", keep, 1);
    } else {
        unsetenv("VKPROF_HOST_CLOCK");
    }
    if (r != VKPROF_OK) {
        return -1.0;
    }
    double ns = time_spans(ctx, iters);
    vkprof_destroy(ctx);
    return ns;
}

static double time_clock(uint64_t iters)
{
    uint64_t t0 = bench_now_ns(), acc = 0;
    for (uint64_t i = 0; i < iters; i++) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        acc += (uint64_t)ts.tv_nsec;
    }
    CONSUME(acc);
    return (double)(bench_now_ns() - t0) / (double)iters;
}

int bench_measure_host(const vku_instance *inst, const vku_device *dev, host_costs *h)
{
    /* (e) an off call site, a span, the clock */
    vkprof_context_desc d = bench_base_desc(inst, dev);
    vkprof_context off = NULL, on = NULL;
    if (vkprof_create(&d, &off) != VKPROF_OK) {
        fprintf(stderr, "vkprof bench: vkprof_create failed\n");
        return 1;
    }
    d.host_level = VKPROF_HOST_ALL;
    if (vkprof_create(&d, &on) != VKPROF_OK) {
        fprintf(stderr, "vkprof bench: vkprof_create failed\n");
        vkprof_destroy(off);
        return 1;
    }
    h->off_callsite_ns = time_off_callsite(off, h->off_iters, &h->empty_loop_ns);
    h->span_ns = time_spans(on, h->span_iters);
    h->clock_ns = time_clock(h->clock_iters);
    /* issue 12, side by side: the span on the CPU counter (above), on the
     * clock_gettime fallback, and the counter read alone */
    h->span_monotonic_ns = time_spans_monotonic(d, h->span_iters);
    h->counter_name = COUNTER_NAME;
    h->counter_ns = COUNTER_NAME[0] ? time_counter(h->clock_iters) : 0.0;
    vkprof_destroy(off);
    vkprof_destroy(on);

    /* (f) fill a store of `trace_capacity` events with spans and export it */
    d.trace_capacity = h->trace_capacity;
    vkprof_context tr = NULL;
    if (vkprof_create(&d, &tr) != VKPROF_OK) {
        fprintf(stderr, "vkprof bench: vkprof_create failed\n");
        return 1;
    }
    /* restart the peak-RSS count where the kernel allows it (VmHWM := VmRSS) */
    FILE *cr = fopen("/proc/self/clear_refs", "w");
    if (cr != NULL) {
        fputs("5", cr);
        fclose(cr);
    }
    h->rss_before = proc_status_bytes("VmRSS");
    if (vkprof_trace_start(tr, h->trace_capacity) != VKPROF_OK) {
        fprintf(stderr, "vkprof bench: cannot start a trace of %u events\n", h->trace_capacity);
        vkprof_destroy(tr);
        return 1;
    }
    uint64_t t0 = bench_now_ns();
    for (uint32_t i = 0; i < h->trace_capacity; i++) {
        vkprof_span s = vkprof_span_start(tr, VKPROF_BUCKET_ATTENTION);
        vkprof_span_end(tr, &s);
    }
    uint64_t t1 = bench_now_ns();
    h->fill_ns_per_span = (double)(t1 - t0) / (double)h->trace_capacity;
    vkprof_trace_counts(tr, &h->trace_recorded, &h->trace_dropped);
    h->rss_after_fill = proc_status_bytes("VmRSS");

    const char *tmpdir = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/vkprof-bench.XXXXXX",
             tmpdir != NULL && tmpdir[0] != '\0' ? tmpdir : "/tmp");
    int rc = 1;
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "vkprof bench: cannot create a folder %s: %s\n", dir, strerror(errno));
        vkprof_destroy(tr);
        return 1;
    }
    char path[600];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    uint64_t t2 = bench_now_ns();
    vkprof_result wr = vkprof_trace_write(tr, path);
    uint64_t t3 = bench_now_ns();
    h->hwm_after_write = proc_status_bytes("VmHWM");
    if (wr != VKPROF_OK) {
        fprintf(stderr, "vkprof bench: vkprof_trace_write(%s): %s\n", path, vkprof_result_text(wr));
    } else {
        struct stat st;
        h->file_bytes = stat(path, &st) == 0 ? (long long)st.st_size : -1;
        h->write_s = (double)(t3 - t2) * 1e-9;
        h->events_per_s = h->write_s > 0 ? (double)h->trace_recorded / h->write_s : 0.0;
        rc = 0;
    }
    remove(path);
    rmdir(dir);
    vkprof_destroy(tr);
    return rc;
}
