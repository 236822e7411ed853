/* `vkprof bench`: the host costs. An off call site, a span with host
 * profiling on, the clock alone; then a trace store of `trace_capacity`
 * events filled with spans and exported, with its memory. See bench.h. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
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
        vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_ATTENTION);
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum { LEFT_SAMPLED, LEFT_ROTATING, LEFT_LEAF };

/* ns per begin/end pair of calls that write no stamp: `steps` steps of
 * `calls` pairs recorded into a real command buffer (the rotating window's
 * K + 1 stamps among them), submitted, waited, collected and stepped; only
 * the recording loop is timed, and the median step is returned (a step that
 * the OS interrupted does not move it). NAN when a call fails. how:
 * LEFT_SAMPLED, LEFT_ROTATING (vkprof_cmd_begin/end: every call kept on the
 * buffer's open stack), LEFT_LEAF (vkprof_cmd_begin_leaf, as the layer
 * makes its dispatches: a call the window leaves out is only numbered, and
 * counted here, in the loop, and handed over at the submit) */
static double time_left_out(const vku_instance *inst, const vku_device *dev, int how,
                            uint32_t calls, uint32_t steps)
{
    const bool rotating = how != LEFT_SAMPLED;
    uint64_t counted[VKPROF_PHASE_DEFAULT_COUNT];
    vkprof_context_desc d = bench_base_desc(inst, dev);
    d.enable = VKPROF_ENABLE_ON;
    d.timing_mode = VKPROF_TIMING_RING;
    d.shared_boundaries = true;
    d.sample_every = rotating ? 1 : 1u << 20;
    d.rotate_scopes = rotating ? 4 : 0;
    d.rotate_first_calls = rotating;
    vkprof_context ctx = NULL;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    double *per = calloc(steps, sizeof *per), out = NAN;
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = dev->cmd_pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    bool ok = per != NULL && vkprof_create(&d, &ctx) == VKPROF_OK && vkprof_active(ctx) &&
              vkAllocateCommandBuffers(dev->device, &ai, &cmd) == VK_SUCCESS &&
              vkCreateFence(dev->device, &fi, NULL, &fence) == VK_SUCCESS;
    /* the first step of an untimed context is step 0, which sampling times:
     * step once first */
    if (ok && !rotating) {
        vkprof_step(ctx);
    }
    for (uint32_t s = 0; ok && s < steps + 2; s++) {
        VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                       .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
        ok = vkBeginCommandBuffer(cmd, &bi) == VK_SUCCESS;
        memset(counted, 0, sizeof counted);
        uint64_t t0 = bench_now_ns();
        for (uint32_t i = 0; ok && i < calls; i++) {
            vkprof_phase ph = (vkprof_phase)(i % VKPROF_PHASE_DEFAULT_COUNT);
            if (how == LEFT_LEAF) {
                bool left_out = false;
                (void)vkprof_cmd_begin_leaf(ctx, cmd, ph, &left_out);
                if (left_out) {
                    counted[ph]++;
                } else {
                    (void)vkprof_cmd_end(ctx, cmd, ph);
                }
            } else {
                VKPROF_BEGIN(ctx, cmd, ph);
                VKPROF_END(ctx, cmd, ph);
            }
        }
        uint64_t t1 = bench_now_ns();
        for (uint32_t p = 0; how == LEFT_LEAF && p < VKPROF_PHASE_DEFAULT_COUNT; p++) {
            (void)vkprof_count_calls(ctx, p, counted[p]); /* its execution, below */
        }
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &cmd};
        ok = ok && vkEndCommandBuffer(cmd) == VK_SUCCESS &&
             vkprof_queue_submit(ctx, dev->queue, 1, &si, fence) == VK_SUCCESS &&
             vkWaitForFences(dev->device, 1, &fence, VK_TRUE, UINT64_MAX) == VK_SUCCESS &&
             vkResetFences(dev->device, 1, &fence) == VK_SUCCESS;
        vkprof_collect(ctx);
        vkprof_step(ctx);
        if (s >= 2) { /* two warm-up steps: the pool, the recording's chunks */
            per[s - 2] = (double)(t1 - t0) / (double)calls;
        }
    }
    if (ok) {
        qsort(per, steps, sizeof *per, cmp_double);
        out = per[steps / 2];
    }
    if (fence != VK_NULL_HANDLE) {
        vkDestroyFence(dev->device, fence, NULL);
    }
    if (cmd != VK_NULL_HANDLE) {
        vkFreeCommandBuffers(dev->device, dev->cmd_pool, 1, &cmd);
    }
    vkprof_destroy(ctx);
    free(per);
    return out;
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
    /* a call left out, sampled and rotating, twice in turn (the second
     * pair kept: caches and the CPU's clock warmed up alike) */
    h->left_out_calls = 261;
    h->left_out_steps = 400;
    for (int rep = 0; rep < 2; rep++) {
        h->left_out_sampled_ns =
            time_left_out(inst, dev, LEFT_SAMPLED, h->left_out_calls, h->left_out_steps);
        h->left_out_rotating_ns =
            time_left_out(inst, dev, LEFT_ROTATING, h->left_out_calls, h->left_out_steps);
        h->left_out_leaf_ns =
            time_left_out(inst, dev, LEFT_LEAF, h->left_out_calls, h->left_out_steps);
    }
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
    if (vkprof_trace_begin(tr, h->trace_capacity) != VKPROF_OK) {
        fprintf(stderr, "vkprof bench: cannot start a trace of %u events\n", h->trace_capacity);
        vkprof_destroy(tr);
        return 1;
    }
    uint64_t t0 = bench_now_ns();
    for (uint32_t i = 0; i < h->trace_capacity; i++) {
        vkprof_span s = vkprof_span_begin(tr, VKPROF_BUCKET_ATTENTION);
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

/* ---- the ring's host path per token (issue 12: what the p99 pays) -------- */

typedef struct rp_conf {
    vkprof_context ctx; /* RP_OFF: an inactive context, as an app built with vkprof and left off */
    double *tok_us, *rec_us, *rest_us, *col_us;
    uint32_t n;
    uint64_t stamps0, tokens0;
} rp_conf;

/* One token: `calls` empty phase calls, submit, wait, collect, step. */
static int rp_token(const vku_device *dev, rp_conf *k, bool off, VkCommandBuffer cmd, VkFence fence,
                    uint32_t calls, double *rec_us, double *rest_us, double *collect_us)
{
    uint64_t t0 = bench_now_ns();
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    if (vkBeginCommandBuffer(cmd, &bi) != VK_SUCCESS) {
        return 1;
    }
    for (uint32_t i = 0; i < calls; i++) {
        vkprof_phase ph = (vkprof_phase)(i % VKPROF_PHASE_DEFAULT_COUNT);
        VKPROF_BEGIN(k->ctx, cmd, ph);
        VKPROF_END(k->ctx, cmd, ph);
    }
    if (vkEndCommandBuffer(cmd) != VK_SUCCESS) {
        return 1;
    }
    uint64_t t1 = bench_now_ns();
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    VkResult r = off ? vkQueueSubmit(dev->queue, 1, &si, fence)
                     : vkprof_queue_submit(k->ctx, dev->queue, 1, &si, fence);
    if (r != VK_SUCCESS ||
        vkWaitForFences(dev->device, 1, &fence, VK_TRUE, UINT64_MAX) != VK_SUCCESS) {
        return 1;
    }
    vkResetFences(dev->device, 1, &fence);
    uint64_t t2 = bench_now_ns();
    if (!off) {
        vkprof_collect(k->ctx);
        vkprof_step(k->ctx);
    }
    uint64_t t3 = bench_now_ns();
    *rec_us = (double)(t1 - t0) * 1e-3;
    *rest_us = (double)(t3 - t1) * 1e-3;
    *collect_us = (double)(t3 - t2) * 1e-3;
    return 0;
}

static double mean_of(const double *v, uint32_t n)
{
    double s = 0;
    for (uint32_t i = 0; i < n; i++) {
        s += v[i];
    }
    return n ? s / n : NAN;
}

void bench_measure_ring_path(const vku_instance *inst, const vku_device *dev, ring_path *rp)
{
    static const char *const names[RP_COUNT] = {"off", "sampled-untimed", "rotating",
                                                "shared-every"};
    static const char *const whats[RP_COUNT] = {
        "VKPROF_BEGIN/END on an inactive context, plain vkQueueSubmit, no collect",
        "ring, shared boundaries, 1 token in 2^20 timed: the untimed tokens of ring-sampled",
        "ring-rotating: K phase calls stamped a token (K + 1 stamps)",
        "ring-shared: every phase call of every token stamped"};
    rp_conf k[RP_COUNT];
    memset(k, 0, sizeof k);
    memset(rp->c, 0, sizeof rp->c);
    rp->ran = false;
    rp->err[0] = '\0';
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    uint32_t cap = rp->tokens * rp->rounds;
    bool ok = cap > 0 && rp->calls > 0;
    for (uint32_t c = 0; ok && c < RP_COUNT; c++) {
        vkprof_context_desc d = bench_base_desc(inst, dev);
        if (c != RP_OFF) {
            d.enable = VKPROF_ENABLE_ON;
            d.timing_mode = VKPROF_TIMING_RING;
            d.shared_boundaries = true;
            d.sample_every = c == RP_SAMPLED_UNTIMED ? 1u << 20 : 1;
            d.rotate_scopes = c == RP_ROTATING ? rp->rotate_scopes : 0;
        }
        k[c].tok_us = calloc(cap, sizeof(double));
        k[c].rec_us = calloc(cap, sizeof(double));
        k[c].rest_us = calloc(cap, sizeof(double));
        k[c].col_us = calloc(cap, sizeof(double));
        ok = k[c].tok_us && k[c].rec_us && k[c].rest_us && k[c].col_us &&
             vkprof_create(&d, &k[c].ctx) == VKPROF_OK;
        if (ok && c != RP_OFF && !vkprof_active(k[c].ctx)) {
            snprintf(rp->err, sizeof rp->err, "the device has no timestamps on this queue");
            ok = false;
        }
        rp->c[c].name = names[c];
        rp->c[c].what = whats[c];
    }
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = dev->cmd_pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    ok = ok && vkAllocateCommandBuffers(dev->device, &ai, &cmd) == VK_SUCCESS &&
         vkCreateFence(dev->device, &fi, NULL, &fence) == VK_SUCCESS;
    /* a warm-up token each (the ring's pool and recording chunks), then the
     * rounds, the configurations interleaved token by token's run */
    for (uint32_t c = 0; ok && c < RP_COUNT; c++) {
        double a, b, e;
        ok = rp_token(dev, &k[c], c == RP_OFF, cmd, fence, rp->calls, &a, &b, &e) == 0;
        if (ok && c != RP_OFF) {
            vkprof_timing_stats st;
            vkprof_get_timing_stats(k[c].ctx, &st);
            k[c].stamps0 = st.stamps_written;
        }
    }
    for (uint32_t r = 0; ok && r < rp->rounds; r++) {
        for (uint32_t c = 0; ok && c < RP_COUNT; c++) {
            for (uint32_t t = 0; ok && t < rp->tokens; t++) {
                double a = 0, b = 0, e = 0;
                ok = rp_token(dev, &k[c], c == RP_OFF, cmd, fence, rp->calls, &a, &b, &e) == 0;
                k[c].col_us[k[c].n] = e;
                k[c].rec_us[k[c].n] = a;
                k[c].rest_us[k[c].n] = b;
                k[c].tok_us[k[c].n++] = a + b;
            }
        }
    }
    if (!ok && rp->err[0] == '\0') {
        snprintf(rp->err, sizeof rp->err, "a Vulkan or vkprof call failed");
    }
    for (uint32_t c = 0; ok && c < RP_COUNT; c++) {
        rp->c[c].p50_us = bench_quantile(k[c].tok_us, k[c].n, 0.50);
        rp->c[c].p99_us = bench_quantile(k[c].tok_us, k[c].n, 0.99);
        rp->c[c].mean_us = mean_of(k[c].tok_us, k[c].n);
        rp->c[c].record_mean_us = mean_of(k[c].rec_us, k[c].n);
        rp->c[c].rest_mean_us = mean_of(k[c].rest_us, k[c].n);
        rp->c[c].collect_mean_us = mean_of(k[c].col_us, k[c].n);
        if (c != RP_OFF) {
            vkprof_timing_stats st;
            vkprof_get_timing_stats(k[c].ctx, &st);
            rp->c[c].stamps_per_token = (double)(st.stamps_written - k[c].stamps0) / k[c].n;
            if (st.scopes_dropped > 0) {
                snprintf(rp->err, sizeof rp->err, "%s lost %llu scopes", names[c],
                         (unsigned long long)st.scopes_dropped);
            }
        }
    }
    rp->ran = ok;
    if (fence != VK_NULL_HANDLE) {
        vkDestroyFence(dev->device, fence, NULL);
    }
    if (cmd != VK_NULL_HANDLE) {
        vkFreeCommandBuffers(dev->device, dev->cmd_pool, 1, &cmd);
    }
    for (uint32_t c = 0; c < RP_COUNT; c++) {
        vkprof_destroy(k[c].ctx);
        free(k[c].tok_us);
        free(k[c].rec_us);
        free(k[c].rest_us);
        free(k[c].col_us);
    }
}
