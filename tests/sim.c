#define _POSIX_C_SOURCE 200809L
#include "sim.h"

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

static void VKAPI_CALL w_CmdWriteTimestamp(VkCommandBuffer c, VkPipelineStageFlagBits s,
                                           VkQueryPool p, uint32_t q)
{
    g_sim.cmd_calls++;
    g_sim.cmd_timestamp++;
    vkCmdWriteTimestamp(c, s, p, q);
}

static void VKAPI_CALL w_CmdWriteTimestamp2(VkCommandBuffer c, VkPipelineStageFlags2 s,
                                            VkQueryPool p, uint32_t q)
{
    g_sim.cmd_calls++;
    g_sim.cmd_timestamp2++;
    g_sim.last_stage2 = s;
    vkCmdWriteTimestamp2(c, s, p, q);
}

static VkResult VKAPI_CALL w_GetQueryPoolResults(VkDevice d, VkQueryPool p, uint32_t first,
                                                 uint32_t count, size_t size, void *data,
                                                 VkDeviceSize stride, VkQueryResultFlags flags)
{
    g_sim.results_calls++;
    g_sim.last_result_flags = flags;
    VkResult r = vkGetQueryPoolResults(d, p, first, count, size, data, stride, flags);
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
            int64_t since = (int64_t)(host - g_sim.drift_ref_ns);
            ts[i] = (uint64_t)((int64_t)host + g_sim.drift_offset_ns +
                               since / 1000000000 * g_sim.drift_ppb +
                               (since % 1000000000) * g_sim.drift_ppb / 1000000000);
        }
    }
    return VK_SUCCESS;
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
