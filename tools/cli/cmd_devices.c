/* `vkprof devices`: what every Vulkan device offers for timing, and one
 * dispatch measured through the library. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_opts.h"
#include "vkutil.h"

static const char *domain_name(VkTimeDomainEXT d)
{
    switch ((int)d) {
    case 0: return "DEVICE";
    case 1: return "CLOCK_MONOTONIC";
    case 2: return "CLOCK_MONOTONIC_RAW";
    case 3: return "QUERY_PERFORMANCE_COUNTER";
    default: return "unknown";
    }
}

static const char *type_name(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
    }
}

static void print_queue_flags(VkQueueFlags f)
{
    const char *sep = "";
    static const struct {
        VkQueueFlags bit;
        const char *name;
    } names[] = {{VK_QUEUE_GRAPHICS_BIT, "graphics"},
                 {VK_QUEUE_COMPUTE_BIT, "compute"},
                 {VK_QUEUE_TRANSFER_BIT, "transfer"},
                 {VK_QUEUE_SPARSE_BINDING_BIT, "sparse"},
                 {VK_QUEUE_PROTECTED_BIT, "protected"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (f & names[i].bit) {
            printf("%s%s", sep, names[i].name);
            sep = "|";
        }
    }
    if (*sep == '\0') {
        printf("none");
    }
}

static void print_calibration(VkInstance inst, VkPhysicalDevice phys)
{
    bool khr = vku_has_device_ext(phys, "VK_KHR_calibrated_timestamps");
    bool ext = vku_has_device_ext(phys, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME);
    printf("  calibrated timestamps: KHR %s, EXT %s", khr ? "yes" : "no", ext ? "yes" : "no");
    PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT fn = NULL;
    if (khr) {
        fn = (PFN_vkGetPhysicalDeviceCalibrateableTimeDomainsEXT)vkGetInstanceProcAddr(
            inst, "vkGetPhysicalDeviceCalibrateableTimeDomainsKHR");
    }
    if (fn == NULL && (khr || ext)) {
        fn = vkGetPhysicalDeviceCalibrateableTimeDomainsEXT;
    }
    if (fn == NULL) {
        printf("\n");
        return;
    }
    uint32_t n = 0;
    if (fn(phys, &n, NULL) != VK_SUCCESS || n == 0) {
        printf("; no time domains reported\n");
        return;
    }
    VkTimeDomainEXT *d = calloc(n, sizeof *d);
    if (d != NULL && fn(phys, &n, d) >= 0) {
        printf("; domains:");
        for (uint32_t i = 0; i < n; i++) {
            printf(" %s", domain_name(d[i]));
        }
    }
    printf("\n");
    free(d);
}

/* One busy dispatch, timed through vkprof on `family`. */
static void measure_dispatch(vku_instance *inst, VkPhysicalDevice phys, uint32_t family)
{
    vku_device dev;
    if (vku_device_create(&dev, phys, family) != VK_SUCCESS) {
        printf("  measured dispatch: device creation failed\n");
        return;
    }
    vku_busy busy;
    VkResult vr = vku_busy_create(&dev, 64 * 1024, &busy);
    if (vr != VK_SUCCESS) {
        printf("  measured dispatch: pipeline creation failed (%s)\n", vku_result_name(vr));
        vku_device_destroy(&dev);
        return;
    }
    vkprof_context_desc d = vku_vkprof_desc(inst, &dev);
    d.enable = VKPROF_ENABLE_ON;
    vkprof_context ctx = NULL;
    if (vkprof_create(&d, &ctx) != VKPROF_OK) {
        printf("  measured dispatch: vkprof_create failed\n");
    } else if (!vkprof_active(ctx)) {
        printf("  measured dispatch: family %u has no timestamps; nothing to measure\n", family);
    } else {
        const uint32_t iters = 1000;
        uint64_t ns = 0;
        vkprof_result r = VKPROF_OK;
        /* One warm-up, then the measured one. */
        for (int rep = 0; rep < 2 && r == VKPROF_OK; rep++) {
            vr = vku_begin(&dev);
            r = vkprof_cmd_begin(ctx, dev.cmd, VKPROF_PHASE_ATTENTION);
            vku_busy_record(&dev, &busy, dev.cmd, iters);
            if (r == VKPROF_OK) {
                r = vkprof_cmd_end(ctx, dev.cmd, VKPROF_PHASE_ATTENTION);
            }
            vr = vr == VK_SUCCESS ? vku_submit_wait(&dev) : vr;
            if (vr != VK_SUCCESS) {
                printf("  measured dispatch: submit failed (%s)\n", vku_result_name(vr));
                r = VKPROF_ERROR_VULKAN;
                break;
            }
            if (r == VKPROF_OK) {
                r = vkprof_resolve(ctx, &ns);
            }
            if (r == VKPROF_OK) {
                r = vkprof_accumulate(ctx, VKPROF_PHASE_ATTENTION);
            }
        }
        if (r == VKPROF_OK) {
            printf("  measured dispatch: busy shader, %u invocations x %u iterations, family %u: "
                   "%.3f ms GPU (%s)\n",
                   busy.count, iters, family, (double)ns / 1e6,
                   d.no_synchronization2 ? "vkCmdWriteTimestamp" : "vkCmdWriteTimestamp2");
        } else if (r != VKPROF_ERROR_VULKAN) {
            printf("  measured dispatch: %s\n", vkprof_result_name(r));
        }
    }
    vkprof_destroy(ctx);
    vku_busy_destroy(&dev, &busy);
    vku_device_destroy(&dev);
}

static void devices_usage(FILE *f)
{
    fprintf(f, "usage: vkprof devices [--device INDEX|NAME] [--no-dispatch]\n"
               "  List every Vulkan device (or the one --device names): queue families and\n"
               "  their timestamp bits, timestampPeriod, calibrated-timestamp domains, and\n"
               "  one dispatch measured through vkprof (unless --no-dispatch).\n");
}

int vkprof_cmd_devices(int argc, char **argv)
{
    const char *selector = NULL;
    bool no_dispatch = false;
    const cli_opt opts[] = {
        {"--device", CLI_STR, .str = &selector},
        {"--no-dispatch", CLI_FLAG, .flag = &no_dispatch},
    };
    const cli_spec spec = {.tool = "vkprof devices",
                           .opts = opts,
                           .n_opts = sizeof opts / sizeof opts[0],
                           .usage = devices_usage};
    int parsed = cli_parse(&spec, argc, argv);
    if (parsed != CLI_OK) {
        return cli_exit_status(parsed);
    }
    bool dispatch = !no_dispatch;
    vku_instance inst;
    if (vku_instance_create(&inst, false, "vkprof devices") != VK_SUCCESS) {
        return 1;
    }
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(inst.instance, &n, NULL);
    VkPhysicalDevice *devs = calloc(n ? n : 1, sizeof *devs);
    if (devs == NULL) {
        vku_instance_destroy(&inst);
        return 1;
    }
    vkEnumeratePhysicalDevices(inst.instance, &n, devs);
    if (n == 0) {
        fprintf(stderr, "vkprof devices: no Vulkan device found (without a GPU, install "
                        "mesa-vulkan-drivers for lavapipe)\n");
    }
    VkPhysicalDevice only = VK_NULL_HANDLE;
    if (selector != NULL) {
        char err[256] = "";
        if (vku_pick_device(inst.instance, selector, &only, err, sizeof err) != VK_SUCCESS) {
            fprintf(stderr, "vkprof devices: %s\n", err);
            free(devs);
            vku_instance_destroy(&inst);
            return 1;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        if (only != VK_NULL_HANDLE && devs[i] != only) {
            continue;
        }
        VkPhysicalDeviceDriverProperties drv = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                          .pNext = &drv};
        vkGetPhysicalDeviceProperties2(devs[i], &p2);
        const VkPhysicalDeviceProperties *p = &p2.properties;
        printf("device %u: %s (%s)\n", i, p->deviceName, type_name(p->deviceType));
        printf("  Vulkan %u.%u.%u, driver %s %s, vendor 0x%04x device 0x%04x\n",
               VK_API_VERSION_MAJOR(p->apiVersion), VK_API_VERSION_MINOR(p->apiVersion),
               VK_API_VERSION_PATCH(p->apiVersion), drv.driverName, drv.driverInfo, p->vendorID,
               p->deviceID);
        printf("  timestampPeriod: %.9g ns/tick, timestampComputeAndGraphics: %s\n",
               (double)p->limits.timestampPeriod,
               p->limits.timestampComputeAndGraphics ? "yes" : "no");
        uint32_t nf = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(devs[i], &nf, NULL);
        VkQueueFamilyProperties *f = calloc(nf ? nf : 1, sizeof *f);
        if (f != NULL) {
            vkGetPhysicalDeviceQueueFamilyProperties(devs[i], &nf, f);
            printf("  queue families:\n");
            for (uint32_t q = 0; q < nf; q++) {
                printf("    %u: ", q);
                print_queue_flags(f[q].queueFlags);
                printf(", %u queue(s), timestampValidBits %u\n", f[q].queueCount,
                       f[q].timestampValidBits);
            }
        }
        print_calibration(inst.instance, devs[i]);
        uint32_t fam = vku_compute_family(devs[i]);
        if (!dispatch) {
            /* nothing */
        } else if (fam == UINT32_MAX) {
            printf("  measured dispatch: no compute queue\n");
        } else {
            measure_dispatch(&inst, devs[i], fam);
        }
        free(f);
    }
    free(devs);
    vku_instance_destroy(&inst);
    return n == 0 ? 1 : 0;
}
