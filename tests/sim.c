#define _POSIX_C_SOURCE 200809L
#include "sim.h"

#include <signal.h>
#include <string.h>
#include <time.h>

sim_state g_sim;

void sim_reset(void)
{
    memset(&g_sim, 0, sizeof g_sim);
}

static void VKAPI_CALL w_GetPhysicalDeviceProperties(VkPhysicalDevice p,
                                                     VkPhysicalDeviceProperties *out)
{
    vkGetPhysicalDeviceProperties(p, out);
    if (g_sim.override_period) {
        out->limits.timestampPeriod = g_sim.period;
    }
}

static void VKAPI_CALL w_GetPhysicalDeviceQueueFamilyProperties(VkPhysicalDevice p, uint32_t *n,
                                                                VkQueueFamilyProperties *out)
{
    vkGetPhysicalDeviceQueueFamilyProperties(p, n, out);
    if (out != NULL && g_sim.override_valid_bits) {
        for (uint32_t i = 0; i < *n; i++) {
            out[i].timestampValidBits = g_sim.valid_bits;
        }
    }
}

static VkResult VKAPI_CALL w_CreateQueryPool(VkDevice d, const VkQueryPoolCreateInfo *ci,
                                             const VkAllocationCallbacks *a, VkQueryPool *out)
{
    g_sim.pools_created++;
    return vkCreateQueryPool(d, ci, a, out);
}

static void VKAPI_CALL w_DestroyQueryPool(VkDevice d, VkQueryPool p, const VkAllocationCallbacks *a)
{
    g_sim.pools_destroyed++;
    vkDestroyQueryPool(d, p, a);
}

static void VKAPI_CALL w_CmdResetQueryPool(VkCommandBuffer c, VkQueryPool p, uint32_t first,
                                           uint32_t count)
{
    g_sim.cmd_calls++;
    g_sim.cmd_reset++;
    vkCmdResetQueryPool(c, p, first, count);
}

static void log_stamp(VkCommandBuffer c, VkQueryPool p, uint32_t q)
{
    if (g_sim.stamps < SIM_STAMPS) {
        g_sim.stamp[g_sim.stamps].cmd = c;
        g_sim.stamp[g_sim.stamps].pool = p;
        g_sim.stamp[g_sim.stamps].query = q;
    }
    g_sim.stamps++;
}

static PFN_vkResetQueryPool real_ResetQueryPool;

static void VKAPI_CALL w_ResetQueryPool(VkDevice d, VkQueryPool p, uint32_t first, uint32_t count)
{
    g_sim.host_resets++;
    g_sim.last_host_reset_first = first;
    g_sim.last_host_reset_count = count;
    real_ResetQueryPool(d, p, first, count);
}

static void VKAPI_CALL w_CmdWriteTimestamp(VkCommandBuffer c, VkPipelineStageFlagBits s,
                                           VkQueryPool p, uint32_t q)
{
    g_sim.cmd_calls++;
    g_sim.cmd_timestamp++;
    log_stamp(c, p, q);
    vkCmdWriteTimestamp(c, s, p, q);
}

static void VKAPI_CALL w_CmdWriteTimestamp2(VkCommandBuffer c, VkPipelineStageFlags2 s,
                                            VkQueryPool p, uint32_t q)
{
    g_sim.cmd_calls++;
    g_sim.cmd_timestamp2++;
    g_sim.last_stage2 = s;
    log_stamp(c, p, q);
    vkCmdWriteTimestamp2(c, s, p, q);
}

/* The per-slot knobs over a call the device has answered; `before` holds
 * the values the caller's buffer had before the call. */
static VkResult apply_slot_knobs(uint32_t first, uint32_t count, uint64_t *v,
                                 const uint64_t *before, VkResult r)
{
    bool all = true;
    /* "earlier call": decided on what was reported before this one */
    uint64_t call = g_sim.results_calls;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t s = first + i;
        if (s >= SIM_SLOTS) {
            all = all && v[2 * i + 1] != 0;
            continue;
        }
        struct sim_slot *k = &g_sim.slot[s];
        k->reads++;
        bool written = v[2 * i + 1] != 0;
        if (!written) {
            all = false;
            continue;
        }
        k->device_value = v[2 * i];
        bool hide = k->never;
        if (!hide && k->after != 0) {
            uint32_t o = k->after - 1;
            hide = o >= SIM_SLOTS || g_sim.slot[o].reported_call == 0 ||
                   g_sim.slot[o].reported_call >= call;
        }
        if (!hide && k->late > 0) {
            k->late--;
            hide = true;
        }
        if (hide) {
            k->hidden++;
            v[2 * i] = before[2 * i]; /* not written to pData when unavailable */
            v[2 * i + 1] = 0;
            all = false;
            continue;
        }
        if (k->fake) {
            v[2 * i] = k->value;
        }
        k->reported++;
        k->reported_value = v[2 * i];
        if (k->reported_call == 0) {
            k->reported_call = call;
        }
    }
    if (r == VK_SUCCESS || r == VK_NOT_READY) {
        r = all ? VK_SUCCESS : VK_NOT_READY;
    }
    return r;
}

static VkResult VKAPI_CALL w_GetQueryPoolResults(VkDevice d, VkQueryPool p, uint32_t first,
                                                 uint32_t count, size_t size, void *data,
                                                 VkDeviceSize stride, VkQueryResultFlags flags)
{
    g_sim.results_calls++;
    if (g_sim.kill_at_results_call != 0 && g_sim.results_calls == g_sim.kill_at_results_call) {
        raise(SIGKILL);
    }
    g_sim.last_result_flags = flags;
    bool knobs = g_sim.slot_knobs && (flags & VK_QUERY_RESULT_64_BIT) &&
                 (flags & VK_QUERY_RESULT_WITH_AVAILABILITY_BIT) &&
                 !(flags & (VK_QUERY_RESULT_WAIT_BIT | VK_QUERY_RESULT_PARTIAL_BIT)) &&
                 stride == 16 && size >= (size_t)count * 16 && count <= 64;
    if (g_sim.slot_knobs && !knobs) {
        g_sim.slot_knob_skips++;
    }
    uint64_t before[128];
    if (knobs) {
        memcpy(before, data, (size_t)count * 16);
    }
    VkResult r = vkGetQueryPoolResults(d, p, first, count, size, data, stride, flags);
    if (knobs) {
        r = apply_slot_knobs(first, count, data, before, r);
    }
    if (g_sim.fake_results && (flags & VK_QUERY_RESULT_64_BIT) &&
        (flags & VK_QUERY_RESULT_WITH_AVAILABILITY_BIT) && stride == 16 && count <= 2) {
        uint64_t *v = data;
        for (uint32_t i = 0; i < count; i++) {
            v[2 * i] = g_sim.fake_value[first + i];
            v[2 * i + 1] = g_sim.fake_unavailable ? 0 : 1;
        }
        r = g_sim.fake_unavailable ? VK_NOT_READY : VK_SUCCESS;
    }
    return r;
}

static VkResult VKAPI_CALL w_GetCalibrateableTimeDomains(VkPhysicalDevice p, uint32_t *n,
                                                         VkTimeDomainEXT *out)
{
    if (g_sim.calib_mode != 2) {
        return vkGetPhysicalDeviceCalibrateableTimeDomainsEXT(p, n, out);
    }
    static const VkTimeDomainEXT raw_only[2] = {VK_TIME_DOMAIN_DEVICE_EXT,
                                                VK_TIME_DOMAIN_CLOCK_MONOTONIC_RAW_EXT};
    if (out == NULL) {
        *n = 2;
        return VK_SUCCESS;
    }
    uint32_t k = *n < 2 ? *n : 2;
    memcpy(out, raw_only, k * sizeof *out);
    *n = k;
    return k < 2 ? VK_INCOMPLETE : VK_SUCCESS;
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static VkResult VKAPI_CALL w_GetCalibratedTimestamps(VkDevice d, uint32_t count,
                                                     const VkCalibratedTimestampInfoEXT *info,
                                                     uint64_t *ts, uint64_t *dev)
{
    g_sim.calib_calls++;
    if (g_sim.calib_mode == 0) {
        return vkGetCalibratedTimestampsEXT(d, count, info, ts, dev);
    }
    /* Ask the real device (lavapipe: DEVICE + CLOCK_MONOTONIC) and translate. */
    VkCalibratedTimestampInfoEXT real[4];
    if (count > 4) {
        return VK_ERROR_INITIALIZATION_FAILED;
    }
    for (uint32_t i = 0; i < count; i++) {
        real[i] = info[i];
        if (real[i].timeDomain == VK_TIME_DOMAIN_CLOCK_MONOTONIC_RAW_EXT) {
            real[i].timeDomain = VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT;
        }
    }
    VkResult r = vkGetCalibratedTimestampsEXT(d, count, real, ts, dev);
    if (r != VK_SUCCESS) {
        return r;
    }
    uint64_t mono_minus_raw = clock_ns(CLOCK_MONOTONIC) - clock_ns(CLOCK_MONOTONIC_RAW);
    uint64_t host = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (real[i].timeDomain == VK_TIME_DOMAIN_CLOCK_MONOTONIC_EXT) {
            host = ts[i];
        }
    }
    for (uint32_t i = 0; i < count; i++) {
        if (info[i].timeDomain == VK_TIME_DOMAIN_CLOCK_MONOTONIC_RAW_EXT) {
            ts[i] -= mono_minus_raw;
        } else if (info[i].timeDomain == VK_TIME_DOMAIN_DEVICE_EXT && g_sim.calib_mode == 1) {
            /* From the host's clock, read exactly; with calib_on_stamps,
             * from the stamps' (the device's DEVICE reading in this call),
             * but the host's where they are the same clock (lavapipe), so
             * that lavapipe reads the same either way. */
            const int64_t gap = (int64_t)(ts[i] - host);
            const uint64_t base =
                !g_sim.calib_on_stamps || (gap > -1000000 && gap < 1000000) ? host : ts[i];
            int64_t since = (int64_t)(host - g_sim.drift_ref_ns);
            ts[i] = (uint64_t)((int64_t)base + g_sim.drift_offset_ns +
                               since / 1000000000 * g_sim.drift_ppb +
                               (since % 1000000000) * g_sim.drift_ppb / 1000000000);
        }
    }
    return VK_SUCCESS;
}

/* ---- simulated queues ---------------------------------------------------- */

static struct sim_queue *sim_queue_of(VkQueue q)
{
    for (uint32_t i = 0; i < SIM_QUEUES; i++) {
        if (q == (VkQueue)(void *)&g_sim.queue[i]) {
            return &g_sim.queue[i];
        }
    }
    return NULL;
}

static void VKAPI_CALL w_GetDeviceQueue(VkDevice d, uint32_t family, uint32_t index, VkQueue *out)
{
    if (!g_sim.sim_queues || index >= SIM_QUEUES) {
        vkGetDeviceQueue(d, family, index, out);
        return;
    }
    struct sim_queue *q = &g_sim.queue[index];
    vkGetDeviceQueue(d, family, 0, &q->real);
    *out = (VkQueue)(void *)q;
}

static bool holdable(const VkSubmitInfo *s)
{
    return s->pNext == NULL && s->waitSemaphoreCount == 0 && s->signalSemaphoreCount == 0 &&
           s->commandBufferCount <= 4;
}

static VkResult VKAPI_CALL w_QueueSubmit(VkQueue queue, uint32_t count, const VkSubmitInfo *sub,
                                         VkFence fence)
{
    struct sim_queue *q = sim_queue_of(queue);
    if (q == NULL) {
        return vkQueueSubmit(queue, count, sub, fence);
    }
    q->submits += count;
    bool hold = q->hold && q->held + (count > 0 ? count : 1) <= SIM_HELD;
    for (uint32_t i = 0; hold && i < count; i++) {
        hold = holdable(&sub[i]);
    }
    if (!hold) {
        q->unheld += q->hold ? count : 0;
        q->forwarded += count;
        return vkQueueSubmit(q->real, count, sub, fence);
    }
    for (uint32_t i = 0; i < count; i++) {
        struct sim_held *h = &q->held_batch[q->held++];
        h->count = sub[i].commandBufferCount;
        memcpy(h->cmd, sub[i].pCommandBuffers, h->count * sizeof h->cmd[0]);
        h->fence = i + 1 == count ? fence : VK_NULL_HANDLE;
    }
    if (count == 0 && fence != VK_NULL_HANDLE) {
        struct sim_held *h = &q->held_batch[q->held++]; /* a fence alone */
        h->count = 0;
        h->fence = fence;
    }
    return VK_SUCCESS;
}

static PFN_vkQueueSubmit2 real_QueueSubmit2;

static VkResult VKAPI_CALL w_QueueSubmit2(VkQueue queue, uint32_t count, const VkSubmitInfo2 *sub,
                                          VkFence fence)
{
    struct sim_queue *q = sim_queue_of(queue);
    if (q == NULL) {
        return real_QueueSubmit2(queue, count, sub, fence);
    }
    q->submits += count;
    q->unheld += q->hold ? count : 0;
    q->forwarded += count;
    return real_QueueSubmit2(q->real, count, sub, fence);
}

VkResult sim_queue_release(VkQueue queue)
{
    struct sim_queue *q = sim_queue_of(queue);
    if (q == NULL) {
        return VK_ERROR_INITIALIZATION_FAILED;
    }
    VkResult r = VK_SUCCESS;
    for (uint32_t i = 0; i < q->held; i++) {
        struct sim_held *h = &q->held_batch[i];
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = h->count,
                           .pCommandBuffers = h->cmd};
        VkResult ri = vkQueueSubmit(q->real, h->count > 0 ? 1 : 0, &si, h->fence);
        q->forwarded += h->count > 0 ? 1 : 0;
        if (r == VK_SUCCESS) {
            r = ri;
        }
    }
    q->held = 0;
    q->hold = false;
    return r;
}

#define FN(f) ((PFN_vkVoidFunction)(void *)(f))

PFN_vkVoidFunction VKAPI_CALL sim_get_instance_proc_addr(VkInstance inst, const char *name)
{
    if (strcmp(name, "vkGetPhysicalDeviceProperties") == 0) {
        return FN(w_GetPhysicalDeviceProperties);
    }
    if (strcmp(name, "vkGetPhysicalDeviceQueueFamilyProperties") == 0) {
        return FN(w_GetPhysicalDeviceQueueFamilyProperties);
    }
    if (g_sim.hide_calibration && strstr(name, "Calibrat") != NULL) {
        return NULL;
    }
    if (strcmp(name, "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT") == 0) {
        return FN(w_GetCalibrateableTimeDomains);
    }
    if (strcmp(name, "vkGetPhysicalDeviceCalibrateableTimeDomainsKHR") == 0) {
        return NULL;
    }
    if (strncmp(name, "vkCmd", 5) == 0) {
        g_sim.unknown_cmd_lookups++;
        return NULL;
    }
    return vkGetInstanceProcAddr(inst, name);
}

PFN_vkVoidFunction VKAPI_CALL sim_get_device_proc_addr(VkDevice dev, const char *name)
{
    if (strcmp(name, "vkCreateQueryPool") == 0) {
        return FN(w_CreateQueryPool);
    }
    if (strcmp(name, "vkDestroyQueryPool") == 0) {
        return FN(w_DestroyQueryPool);
    }
    if (strcmp(name, "vkCmdResetQueryPool") == 0) {
        return FN(w_CmdResetQueryPool);
    }
    if (strcmp(name, "vkCmdWriteTimestamp") == 0) {
        return FN(w_CmdWriteTimestamp);
    }
    if (strcmp(name, "vkCmdWriteTimestamp2") == 0 || strcmp(name, "vkCmdWriteTimestamp2KHR") == 0) {
        return g_sim.hide_timestamp2 ? NULL : FN(w_CmdWriteTimestamp2);
    }
    if (strcmp(name, "vkGetQueryPoolResults") == 0) {
        return FN(w_GetQueryPoolResults);
    }
    if (strcmp(name, "vkGetDeviceQueue") == 0) {
        return FN(w_GetDeviceQueue);
    }
    if (strcmp(name, "vkQueueSubmit") == 0) {
        return FN(w_QueueSubmit);
    }
    if (strcmp(name, "vkQueueSubmit2") == 0 || strcmp(name, "vkQueueSubmit2KHR") == 0) {
        /* only where the device has it (the library's choice stays the same) */
        PFN_vkVoidFunction real = vkGetDeviceProcAddr(dev, name);
        if (real == NULL) {
            return NULL;
        }
        real_QueueSubmit2 = (PFN_vkQueueSubmit2)(void *)real;
        return FN(w_QueueSubmit2);
    }
    if (strcmp(name, "vkResetQueryPool") == 0 || strcmp(name, "vkResetQueryPoolEXT") == 0) {
        /* wrapped only where the device has it: the library's choice stays the same */
        PFN_vkVoidFunction real = vkGetDeviceProcAddr(dev, name);
        if (real == NULL) {
            return NULL;
        }
        real_ResetQueryPool = (PFN_vkResetQueryPool)(void *)real;
        return FN(w_ResetQueryPool);
    }
    if (g_sim.hide_calibration && strstr(name, "Calibrat") != NULL) {
        return NULL;
    }
    if (strcmp(name, "vkGetCalibratedTimestampsEXT") == 0) {
        return FN(w_GetCalibratedTimestamps);
    }
    if (strcmp(name, "vkGetCalibratedTimestampsKHR") == 0) {
        return NULL; /* the test device enables the EXT */
    }
    if (strncmp(name, "vkCmd", 5) == 0) {
        /* The library may only record through the wrapped entry points. */
        g_sim.unknown_cmd_lookups++;
        return NULL;
    }
    return vkGetDeviceProcAddr(dev, name);
}
