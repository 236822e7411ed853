/* GPU <-> host clock calibration: points from VK_KHR/EXT_calibrated_timestamps
 * (best maxDeviation of a bounded number of tries), a CLOCK_MONOTONIC_RAW
 * bridge, or a submitted timestamp bracketed by two host reads; mapped
 * piecewise-linearly in integer arithmetic from the nearest points. */
#include "base/base.h"
#include "clock/clock.h"

#include <stdlib.h>
#include <string.h>

#define DOMAIN_DEVICE ((VkTimeDomainEXT)0)
#define DOMAIN_MONOTONIC ((VkTimeDomainEXT)1)
#define DOMAIN_MONOTONIC_RAW ((VkTimeDomainEXT)2)

/* a - b in ticks, signed, for a counter that wraps at `mask` */
static int64_t sdelta_m(uint64_t mask, uint64_t a, uint64_t b)
{
    uint64_t d = (a - b) & mask;
    if (mask == UINT64_MAX) {
        return (int64_t)d;
    }
    if (d > (mask >> 1)) {
        return -(int64_t)((mask - d) + 1);
    }
    return (int64_t)d;
}

static int64_t sdelta(vkprof_context ctx, uint64_t a, uint64_t b)
{
    return sdelta_m(ctx->valid_mask, a, b);
}

static uint64_t uabs64(int64_t v)
{
    return v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
}

/* round(a * b / c), signs of a and b honoured, c > 0 */
static int64_t muldiv_s(int64_t a, int64_t b, int64_t c)
{
    bool neg = (a < 0) != (b < 0);
    uint64_t q = vkprof__muldiv(uabs64(a), uabs64(b), (uint64_t)c);
    if (q > (uint64_t)INT64_MAX) {
        q = (uint64_t)INT64_MAX;
    }
    return neg ? -(int64_t)q : (int64_t)q;
}

/* The same, with the compiler's 128-bit arithmetic inlined where it has it
 * (the snapshots' many ticks): vkprof__muldiv's rounding and saturation, so
 * the same value (test_clock_snapshot compares the two maps). */
static inline int64_t muldiv_s_fast(int64_t a, int64_t b, int64_t c)
{
#if defined(__SIZEOF_INT128__)
    bool neg = (a < 0) != (b < 0);
    uint64_t ua = uabs64(a), ub = uabs64(b), uc = (uint64_t)c, q;
    __extension__ typedef unsigned __int128 u128;
    u128 prod = (u128)ua * ub + uc / 2;
    uint64_t hi = (uint64_t)(prod >> 64);
    if (uc == 0 || hi >= uc) {
        q = UINT64_MAX;
    } else if (hi == 0) {
        q = (uint64_t)prod / uc;
    } else {
        q = (uint64_t)(prod / uc);
    }
    if (q > (uint64_t)INT64_MAX) {
        q = (uint64_t)INT64_MAX;
    }
    return neg ? -(int64_t)q : (int64_t)q;
#else
    return muldiv_s(a, b, c);
#endif
}

static int64_t ticks_to_ns_s(vkprof_context ctx, int64_t ticks)
{
    uint64_t ns = vkprof_ticks_to_ns(uabs64(ticks), ctx->info.timestamp_period);
    if (ns > (uint64_t)INT64_MAX) {
        ns = (uint64_t)INT64_MAX;
    }
    return ticks < 0 ? -(int64_t)ns : (int64_t)ns;
}

bool vkprof__pl_add(vkprof_cal_point *points, uint32_t *count, uint32_t cap, uint64_t mask,
                    vkprof_cal_point p)
{
    if (*count > 0) {
        const vkprof_cal_point *last = &points[*count - 1];
        /* Points must advance on both clocks; anything else is noise. */
        if (sdelta_m(mask, p.ticks, last->ticks) <= 0 || p.host_ns <= last->host_ns) {
            return false;
        }
    }
    if (*count == cap) {
        /* Full: keep every other point (first and last stay), so old events
         * are still interpolated, at half the resolution. */
        uint32_t w = 0;
        for (uint32_t r = 0; r < *count; r += 2) {
            points[w++] = points[r];
        }
        *count = w;
    }
    points[(*count)++] = p;
    return true;
}

static void add_point(vkprof_context ctx, vkprof_cal_point p)
{
    vkprof_cal *c = &ctx->cal;
    c->taken++;
    c->last_ns = vkprof_host_now_ns();
    (void)vkprof__pl_add(c->points, &c->count, VKPROF_CAL_POINTS, ctx->valid_mask, p);
}

static vkprof_result sample_extension(vkprof_context ctx, vkprof_cal_point *out)
{
    vkprof_cal *c = &ctx->cal;
    VkCalibratedTimestampInfoEXT info[2];
    memset(info, 0, sizeof info);
    info[0].sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT;
    info[0].timeDomain = DOMAIN_DEVICE;
    info[1].sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT;
    info[1].timeDomain = c->host_domain;
    uint32_t tries = ctx->desc.calibration_tries; /* resolved: 1..64 */
    uint64_t best_dev = UINT64_MAX, best_ts[2] = {0, 0};
    for (uint32_t i = 0; i < tries; i++) {
        uint64_t ts[2] = {0, 0}, dev = 0;
        VkResult vr = ctx->vk.GetCalibratedTimestamps(ctx->desc.device, 2, info, ts, &dev);
        if (vr != VK_SUCCESS) {
            return vkprof__fail(ctx, VKPROF_ERROR_VULKAN,
                                "vkGetCalibratedTimestamps failed (VkResult %d)", (int)vr);
        }
        if (dev < best_dev) {
            best_dev = dev;
            best_ts[0] = ts[0];
            best_ts[1] = ts[1];
        }
    }
    uint64_t err = best_dev + (uint64_t)ctx->info.timestamp_period + 1;
    uint64_t host = best_ts[1];
    if (c->raw_bridge) {
        uint64_t berr = 0;
        int64_t off = vkprof__raw_to_mono_offset(&berr);
        host = (uint64_t)((int64_t)host + off);
        err += berr;
    }
    out->ticks = best_ts[0] & ctx->valid_mask;
    out->host_ns = host;
    out->err_ns = err;
    return VKPROF_OK;
}

static vkprof_result bracket_setup(vkprof_context ctx)
{
    vkprof_cal *c = &ctx->cal;
    const vkprof_vk *vk = &ctx->vk;
    if (vk->CreateCommandPool == NULL || vk->AllocateCommandBuffers == NULL ||
        vk->BeginCommandBuffer == NULL || vk->EndCommandBuffer == NULL || vk->CreateFence == NULL ||
        vk->QueueSubmit == NULL || vk->WaitForFences == NULL || vk->ResetFences == NULL) {
        return VKPROF_ERROR_MISSING_FUNCTION;
    }
    VkDevice dev = ctx->desc.device;
    const VkAllocationCallbacks *a = ctx->desc.vk_allocator;
    VkCommandPoolCreateInfo pci;
    memset(&pci, 0, sizeof pci);
    pci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
    pci.queueFamilyIndex = ctx->desc.queue_family_index;
    VkResult vr = vk->CreateCommandPool(dev, &pci, a, &c->cmd_pool);
    if (vr == VK_SUCCESS) {
        VkCommandBufferAllocateInfo ai;
        memset(&ai, 0, sizeof ai);
        ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
        ai.commandPool = c->cmd_pool;
        ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        ai.commandBufferCount = 1;
        vr = vk->AllocateCommandBuffers(dev, &ai, &c->cmd);
    }
    if (vr == VK_SUCCESS) {
        VkFenceCreateInfo fci;
        memset(&fci, 0, sizeof fci);
        fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
        vr = vk->CreateFence(dev, &fci, a, &c->fence);
    }
    if (vr == VK_SUCCESS) {
        VkQueryPoolCreateInfo qci;
        memset(&qci, 0, sizeof qci);
        qci.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
        qci.queryType = VK_QUERY_TYPE_TIMESTAMP;
        qci.queryCount = 1;
        vr = vk->CreateQueryPool(dev, &qci, a, &c->pool);
    }
    if (vr == VK_SUCCESS) {
        /* recorded once, submitted for every sample: the reset is inside */
        VkCommandBufferBeginInfo bi;
        memset(&bi, 0, sizeof bi);
        bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
        vr = vk->BeginCommandBuffer(c->cmd, &bi);
        if (vr == VK_SUCCESS) {
            vk->CmdResetQueryPool(c->cmd, c->pool, 0, 1);
            vk->CmdWriteTimestamp(c->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, c->pool, 0);
            vr = vk->EndCommandBuffer(c->cmd);
        }
    }
    if (vr != VK_SUCCESS) {
        return vkprof__fail(ctx, VKPROF_ERROR_VULKAN,
                            "calibration fallback setup failed (VkResult %d)", (int)vr);
    }
    return VKPROF_OK;
}

static vkprof_result sample_bracket(vkprof_context ctx, vkprof_cal_point *out)
{
    vkprof_cal *c = &ctx->cal;
    const vkprof_vk *vk = &ctx->vk;
    uint32_t tries = ctx->desc.calibration_tries; /* resolved: 1..64 */
    uint64_t best = UINT64_MAX;
    for (uint32_t i = 0; i < tries; i++) {
        VkSubmitInfo si;
        memset(&si, 0, sizeof si);
        si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
        si.commandBufferCount = 1;
        si.pCommandBuffers = &c->cmd;
        VkResult vr = vk->ResetFences(ctx->desc.device, 1, &c->fence);
        uint64_t t0 = vkprof_host_now_ns();
        if (vr == VK_SUCCESS) {
            vr = vk->QueueSubmit(ctx->desc.queue, 1, &si, c->fence);
        }
        if (vr == VK_SUCCESS) {
            vr = vk->WaitForFences(ctx->desc.device, 1, &c->fence, VK_TRUE, UINT64_C(5000000000));
        }
        uint64_t t1 = vkprof_host_now_ns();
        if (vr != VK_SUCCESS) {
            return vkprof__fail(ctx, VKPROF_ERROR_VULKAN,
                                "calibration fallback: submit/wait failed (VkResult %d)", (int)vr);
        }
        uint64_t data[2] = {0, 0};
        vr =
            vk->GetQueryPoolResults(ctx->desc.device, c->pool, 0, 1, sizeof data, data, sizeof data,
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
        if (vr != VK_SUCCESS || data[1] == 0) {
            continue;
        }
        if (t1 - t0 < best) {
            best = t1 - t0;
            out->ticks = data[0] & ctx->valid_mask;
            out->host_ns = t0 + (t1 - t0) / 2;
            out->err_ns = (t1 - t0 + 1) / 2 + (uint64_t)ctx->info.timestamp_period + 1;
        }
    }
    if (best == UINT64_MAX) {
        return vkprof__fail(ctx, VKPROF_ERROR_NOT_READY,
                            "calibration fallback: the timestamp never became available");
    }
    return VKPROF_OK;
}

vkprof_result vkprof__cal_init(vkprof_context ctx)
{
    vkprof_cal *c = &ctx->cal;
    c->points = calloc(VKPROF_CAL_POINTS, sizeof *c->points);
    if (c->points == NULL) {
        return VKPROF_ERROR_OUT_OF_MEMORY;
    }
    c->method = VKPROF_CALIBRATION_NONE;
    if (!ctx->info.supported) {
        return VKPROF_OK;
    }
    if (ctx->vk.GetCalibratedTimestamps != NULL &&
        ctx->vk.GetPhysicalDeviceCalibrateableTimeDomains != NULL) {
        uint32_t n = 0;
        VkTimeDomainEXT domains[16];
        VkResult vr =
            ctx->vk.GetPhysicalDeviceCalibrateableTimeDomains(ctx->desc.physical_device, &n, NULL);
        if (vr == VK_SUCCESS && n > 16) {
            n = 16;
        }
        if (vr == VK_SUCCESS) {
            vr = ctx->vk.GetPhysicalDeviceCalibrateableTimeDomains(ctx->desc.physical_device, &n,
                                                                   domains);
        }
        bool dev = false, mono = false, raw = false;
        for (uint32_t i = 0; (vr == VK_SUCCESS || vr == VK_INCOMPLETE) && i < n; i++) {
            dev = dev || domains[i] == DOMAIN_DEVICE;
            mono = mono || domains[i] == DOMAIN_MONOTONIC;
            raw = raw || domains[i] == DOMAIN_MONOTONIC_RAW;
        }
        if (dev && (mono || raw)) {
            c->method = VKPROF_CALIBRATION_EXTENSION;
            c->host_domain = mono ? DOMAIN_MONOTONIC : DOMAIN_MONOTONIC_RAW;
            c->raw_bridge = !mono;
        } else {
            vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_ERROR_NO_CALIBRATION,
                        "calibrated timestamps offer no DEVICE + CLOCK_MONOTONIC(_RAW) pair");
        }
    }
    if (c->method == VKPROF_CALIBRATION_NONE && ctx->desc.queue != VK_NULL_HANDLE) {
        if (bracket_setup(ctx) == VKPROF_OK) {
            c->method = VKPROF_CALIBRATION_BRACKET;
        }
    }
    if (c->method == VKPROF_CALIBRATION_NONE) {
        vkprof__log(ctx, VKPROF_LOG_INFO, VKPROF_ERROR_NO_CALIBRATION,
                    "no calibrated timestamps and no queue given: GPU scopes cannot be placed "
                    "on the host timeline");
        return VKPROF_OK;
    }
    return VKPROF_OK;
}

void vkprof__cal_shutdown(vkprof_context ctx)
{
    vkprof_cal *c = &ctx->cal;
    const VkAllocationCallbacks *a = ctx->desc.vk_allocator;
    if (c->pool != VK_NULL_HANDLE) {
        ctx->vk.DestroyQueryPool(ctx->desc.device, c->pool, a);
    }
    if (c->fence != VK_NULL_HANDLE) {
        ctx->vk.DestroyFence(ctx->desc.device, c->fence, a);
    }
    if (c->cmd_pool != VK_NULL_HANDLE) {
        ctx->vk.DestroyCommandPool(ctx->desc.device, c->cmd_pool, a);
    }
    free(c->points);
    memset(c, 0, sizeof *c);
}

vkprof_result vkprof_calibrate(vkprof_context ctx)
{
    if (ctx == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    if (ctx->offline) {
        return VKPROF_DISABLED; /* an opened spool: its points are its writer's */
    }
    vkprof_cal_point p = {0, 0, 0};
    vkprof_result r;
    switch (ctx->cal.method) {
    case VKPROF_CALIBRATION_EXTENSION: r = sample_extension(ctx, &p); break;
    case VKPROF_CALIBRATION_BRACKET:
        if (ctx->cal.cmd == VK_NULL_HANDLE) {
            return VKPROF_OK; /* bracketing by submit windows: they bring the points */
        }
        r = sample_bracket(ctx, &p);
        break;
    default: return VKPROF_ERROR_NO_CALIBRATION;
    }
    if (r == VKPROF_OK) {
        add_point(ctx, p);
    }
    return r;
}

void vkprof__cal_maybe_refresh(vkprof_context ctx)
{
    vkprof__hclk_maybe_refresh(&ctx->hclk); /* a collect is a good moment for the host clock too */
    if (ctx->cal.method != VKPROF_CALIBRATION_EXTENSION) {
        return;
    }
    uint64_t every = (uint64_t)ctx->desc.recalibrate_ms * UINT64_C(1000000); /* resolved: never 0 */
    if (ctx->cal.count == 0 || vkprof_host_now_ns() - ctx->cal.last_ns >= every) {
        (void)vkprof_calibrate(ctx);
    }
}

/* The last point at or before rel (0 <= rel <= rel_last): with `tab` (each
 * point's ticks after p[0], strictly increasing) from the cursor, else the
 * binary search over the points themselves. Both give the largest lo in
 * [0, n - 2] with rel(lo) <= rel when the points increase, so the same lo. */
static uint32_t pl_segment(const vkprof_cal_point *p, uint32_t n, uint64_t mask, const int64_t *tab,
                           uint32_t *cursor, int64_t rel)
{
    uint32_t lo = 0, hi = n - 1;
    if (tab != NULL) {
        uint32_t c = *cursor;
        if (c + 1 < n && tab[c] <= rel && (c + 2 == n || rel < tab[c + 1])) {
            return c;
        }
        if (c + 2 < n && tab[c + 1] <= rel && (c + 3 == n || rel < tab[c + 2])) {
            *cursor = c + 1;
            return c + 1;
        }
        while (hi - lo > 1) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (tab[mid] <= rel) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        *cursor = lo;
        return lo;
    }
    /* binary search: the last point at or before `ticks` */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sdelta_m(mask, p[mid].ticks, p[0].ticks) <= rel) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static bool pl_map_with(const vkprof_cal_point *p, uint32_t n, uint64_t mask,
                        vkprof_pl_nominal nominal, const void *arg, const int64_t *tab,
                        uint32_t *cursor, uint64_t ticks, uint64_t *host_ns)
{
    if (n == 0) {
        return false;
    }
    int64_t rel = sdelta_m(mask, ticks, p[0].ticks);
    /* a point's ns plus an offset, wrapping as two's complement (defined:
     * a tick far outside the points saturates the offset at INT64_MAX) */
#define PL_ADD(base_ns, off) ((int64_t)((uint64_t)(base_ns) + (uint64_t)(off)))
    int64_t h;
    if (n == 1) {
        h = PL_ADD(p[0].host_ns, nominal(arg, rel));
    } else {
        int64_t rel_last = tab != NULL ? tab[n - 1] : sdelta_m(mask, p[n - 1].ticks, p[0].ticks);
        if (rel >= 0 && rel <= rel_last) {
            uint32_t lo = pl_segment(p, n, mask, tab, cursor, rel), hi = lo + 1;
            int64_t r0 = tab != NULL ? tab[lo] : sdelta_m(mask, p[lo].ticks, p[0].ticks);
            int64_t r1 = tab != NULL ? tab[hi] : sdelta_m(mask, p[hi].ticks, p[0].ticks);
            int64_t dh = (int64_t)(p[hi].host_ns - p[lo].host_ns);
            h = PL_ADD(p[lo].host_ns, tab != NULL ? muldiv_s_fast(rel - r0, dh, r1 - r0)
                                                  : muldiv_s(rel - r0, dh, r1 - r0));
        } else {
            /* Outside the points: extrapolate from the nearer end with the
             * slope over all points (a short baseline would amplify the
             * points' own error), or the nominal rate under 100 ms. */
            const vkprof_cal_point *end = rel < 0 ? &p[0] : &p[n - 1];
            int64_t rel_end = rel < 0 ? 0 : rel_last;
            int64_t span_h = (int64_t)(p[n - 1].host_ns - p[0].host_ns);
            if (span_h >= 100000000 && rel_last > 0) {
                h = PL_ADD(end->host_ns, tab != NULL
                                             ? muldiv_s_fast(rel - rel_end, span_h, rel_last)
                                             : muldiv_s(rel - rel_end, span_h, rel_last));
            } else {
                h = PL_ADD(end->host_ns, nominal(arg, rel - rel_end));
            }
        }
    }
#undef PL_ADD
    *host_ns = h < 0 ? 0 : (uint64_t)h;
    return true;
}

bool vkprof__pl_map(const vkprof_cal_point *p, uint32_t n, uint64_t mask, vkprof_pl_nominal nominal,
                    const void *arg, uint64_t ticks, uint64_t *host_ns)
{
    return pl_map_with(p, n, mask, nominal, arg, NULL, NULL, ticks, host_ns);
}

bool vkprof__pl_snap_prepare(vkprof_pl_snap *s)
{
    s->rel = NULL;
    s->cur = 0;
    if (s->n < 2) {
        return true;
    }
    int64_t *tab = malloc(s->n * sizeof *tab);
    if (tab == NULL) {
        return false;
    }
    tab[0] = 0;
    for (uint32_t i = 1; i < s->n; i++) {
        tab[i] = sdelta_m(s->mask, s->p[i].ticks, s->p[0].ticks);
        if (tab[i] <= tab[i - 1]) {
            free(tab); /* wrapped past half the range: search as vkprof__pl_map */
            return true;
        }
    }
    s->rel = tab;
    return true;
}

bool vkprof__pl_snap_map(vkprof_pl_snap *s, uint64_t ticks, uint64_t *host_ns)
{
    return pl_map_with(s->p, s->n, s->mask, s->nominal, s->arg != NULL ? s->arg : (const void *)s,
                       s->rel, &s->cur, ticks, host_ns);
}

void vkprof__pl_snap_free(vkprof_pl_snap *s)
{
    free(s->p);
    free(s->rel);
    memset(s, 0, sizeof *s);
}

static int64_t gpu_nominal(const void *arg, int64_t ticks)
{
    return ticks_to_ns_s((vkprof_context)arg, ticks);
}

bool vkprof__cal_map(vkprof_context ctx, uint64_t ticks, uint64_t *host_ns)
{
    return vkprof__pl_map(ctx->cal.points, ctx->cal.count, ctx->valid_mask, gpu_nominal, ctx, ticks,
                          host_ns);
}

uint64_t vkprof__cal_bound(vkprof_context ctx, uint64_t host_ns)
{
    vkprof_cal *c = &ctx->cal;
    uint64_t key = c->taken + c->count;
    if (c->err_key != key) {
        uint64_t m = 0;
        for (uint32_t i = 0; c->points != NULL && i < c->count; i++) {
            m = c->points[i].err_ns > m ? c->points[i].err_ns : m;
        }
        c->err_max = m;
        c->err_key = key;
    }
    uint64_t dist = host_ns > c->last_ns ? host_ns - c->last_ns : c->last_ns - host_ns;
    return c->err_max + dist / 1000u + 1000u;
}

void vkprof__cal_window(vkprof_context ctx, uint64_t begin_ticks, uint64_t end_ticks,
                        uint64_t submit_ns, uint64_t read_ns)
{
    vkprof_cal *c = &ctx->cal;
    if (c->points == NULL || read_ns < submit_ns) {
        return;
    }
    /* the window as a bracketing point for the begin stamp */
    vkprof_cal_point w = {begin_ticks & ctx->valid_mask, submit_ns + (read_ns - submit_ns) / 2,
                          (read_ns - submit_ns + 1) / 2 + (uint64_t)ctx->info.timestamp_period + 1};
    if (!c->has_win_best || w.err_ns < c->win_best.err_ns) {
        c->win_best = w;
        c->has_win_best = true;
        if (c->inconsistent) {
            /* bracketing by windows: the narrowest one is the point */
            c->points[0] = w;
            c->count = 1;
            c->last_ns = w.host_ns;
            c->taken++;
        }
    }
    if (c->method != VKPROF_CALIBRATION_EXTENSION || c->count == 0 || c->inconsistent) {
        return;
    }
    uint64_t hb, he;
    if (!vkprof__cal_map(ctx, begin_ticks & ctx->valid_mask, &hb) ||
        !vkprof__cal_map(ctx, end_ticks & ctx->valid_mask, &he)) {
        return;
    }
    c->win_checks++;
    int64_t off = 0; /* + mapped after the window, - before it */
    uint64_t bb = vkprof__cal_bound(ctx, hb), be = vkprof__cal_bound(ctx, he);
    if (hb < submit_ns && submit_ns - hb > bb) {
        off = -(int64_t)(submit_ns - hb);
    } else if (he > read_ns && he - read_ns > be) {
        off = (int64_t)(he - read_ns);
    }
    if (off == 0) {
        c->win_consec = 0;
        return;
    }
    c->win_violations++;
    if (++c->win_consec < 3 || !c->has_win_best) {
        return;
    }
    c->inconsistent = true;
    c->inconsistent_ns = off;
    c->method = VKPROF_CALIBRATION_BRACKET;
    c->points[0] = c->win_best;
    c->count = 1;
    c->last_ns = c->win_best.host_ns;
    c->taken++;
    vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_ERROR_NO_CALIBRATION,
                "calibrated timestamps are inconsistent with the GPU's own stamps: 3 "
                "executions in a row mapped %.6f s %s their submit-to-read window; GPU time is "
                "now placed by bracketing with those windows (error bound %llu ns)",
                (double)(off < 0 ? -off : off) / 1e9, off < 0 ? "before" : "after",
                (unsigned long long)c->win_best.err_ns);
}

bool vkprof__cal_snapshot(vkprof_context ctx, vkprof_pl_snap *s)
{
    memset(s, 0, sizeof *s);
    s->mask = ctx->valid_mask;
    s->nominal = gpu_nominal;
    s->arg = ctx;
    uint32_t n = ctx->cal.points != NULL ? ctx->cal.count : 0;
    s->p = malloc((n ? n : 1) * sizeof *s->p);
    if (s->p == NULL) {
        return false;
    }
    if (n > 0) {
        memcpy(s->p, ctx->cal.points, n * sizeof *s->p);
    }
    s->n = n;
    if (!vkprof__pl_snap_prepare(s)) {
        vkprof__pl_snap_free(s);
        return false;
    }
    return true;
}

vkprof_result vkprof_device_to_host_ns(vkprof_context ctx, uint64_t ticks, uint64_t *host_ns)
{
    if (ctx == NULL || host_ns == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    return vkprof__cal_map(ctx, ticks & ctx->valid_mask, host_ns) ? VKPROF_OK
                                                                  : VKPROF_ERROR_NO_CALIBRATION;
}

vkprof_result vkprof_get_calibration(vkprof_context ctx, vkprof_calibration *out)
{
    if (ctx == NULL || out == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    const vkprof_cal *c = &ctx->cal;
    memset(out, 0, sizeof *out);
    out->method = c->method;
    out->extension = c->method == VKPROF_CALIBRATION_EXTENSION ? c->extension : "";
    out->host_domain =
        c->raw_bridge ? "CLOCK_MONOTONIC_RAW bridged to CLOCK_MONOTONIC" : "CLOCK_MONOTONIC";
    out->points = c->count;
    out->recalibrations = c->taken;
    out->inconsistent = c->inconsistent;
    out->inconsistent_offset_ns = c->inconsistent_ns;
    out->window_checks = c->win_checks;
    out->window_violations = c->win_violations;
    for (uint32_t i = 0; i < c->count; i++) {
        if (c->points[i].err_ns > out->error_bound_ns) {
            out->error_bound_ns = c->points[i].err_ns;
        }
    }
    if (c->count > 0) {
        const vkprof_cal_point *first = &c->points[0], *last = &c->points[c->count - 1];
        out->last_error_ns = last->err_ns;
        out->anchor_ticks = last->ticks;
        out->anchor_host_ns = last->host_ns;
        if (c->count > 1) {
            uint64_t dev_ns = vkprof_ticks_to_ns((uint64_t)sdelta(ctx, last->ticks, first->ticks),
                                                 ctx->info.timestamp_period);
            double host_ns = (double)(last->host_ns - first->host_ns);
            if (dev_ns > 0) {
                out->drift_ppm = (host_ns - (double)dev_ns) / (double)dev_ns * 1e6;
            }
        }
    }
    return c->count == 0 ? VKPROF_ERROR_NO_CALIBRATION : VKPROF_OK;
}
