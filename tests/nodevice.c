/* The fake no-GPU device (nodevice.h). */
#include "nodevice.h"

#include <stdio.h>
#include <string.h>

static char g_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE] = "fake device";
static char g_handles[3];

static void VKAPI_PTR nd_props(VkPhysicalDevice pd, VkPhysicalDeviceProperties *p)
{
    (void)pd;
    memset(p, 0, sizeof *p);
    snprintf(p->deviceName, sizeof p->deviceName, "%s", g_name);
    p->limits.timestampPeriod = 1.0f;
}

static void VKAPI_PTR nd_families(VkPhysicalDevice pd, uint32_t *n, VkQueueFamilyProperties *f)
{
    (void)pd;
    if (f != NULL && *n >= 1) {
        memset(f, 0, sizeof *f);
        f->queueCount = 1;
        f->queueFlags = VK_QUEUE_COMPUTE_BIT;
        f->timestampValidBits = 0; /* no GPU timing */
    }
    *n = 1;
}

static PFN_vkVoidFunction VKAPI_PTR nd_gipa(VkInstance inst, const char *name)
{
    (void)inst;
    if (strcmp(name, "vkGetPhysicalDeviceProperties") == 0) {
        return (PFN_vkVoidFunction)nd_props;
    }
    if (strcmp(name, "vkGetPhysicalDeviceQueueFamilyProperties") == 0) {
        return (PFN_vkVoidFunction)nd_families;
    }
    return NULL;
}

static PFN_vkVoidFunction VKAPI_PTR nd_gdpa(VkDevice dev, const char *name)
{
    (void)dev;
    (void)name;
    return NULL;
}

vkprof_context_desc th_nodevice_desc(const char *device_name)
{
    snprintf(g_name, sizeof g_name, "%s", device_name != NULL ? device_name : "fake device");
    vkprof_context_desc d;
    memset(&d, 0, sizeof d);
    d.instance = (VkInstance)(void *)&g_handles[0];
    d.physical_device = (VkPhysicalDevice)(void *)&g_handles[1];
    d.device = (VkDevice)(void *)&g_handles[2];
    d.get_instance_proc_addr = nd_gipa;
    d.get_device_proc_addr = nd_gdpa;
    return d;
}
