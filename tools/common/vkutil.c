/* Vulkan helpers for the vkprof tool and tests; see vkutil.h. */
#include "vkutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>
#endif

#include "busy_spv.h"

const char *vku_result_name(VkResult r)
{
    switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    default: return "VkResult(other)";
    }
}

/* What the Vulkan loader sends through the messenger (loader/log.c): type
 * GENERAL (GENERAL|VALIDATION for its own checks of the API, PERFORMANCE for
 * performance notes), pMessageIdName "Loader Message", messageIdNumber 0, and
 * WARNING for notices such as "env var 'VK_INSTANCE_LAYERS' defined and adding
 * layers". */
static bool is_loader_message(const VkDebugUtilsMessengerCallbackDataEXT *data)
{
    return data != NULL && data->pMessageIdName != NULL &&
           strcmp(data->pMessageIdName, "Loader Message") == 0;
}

bool vku_message_counts(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                        VkDebugUtilsMessageTypeFlagsEXT types,
                        const VkDebugUtilsMessengerCallbackDataEXT *data)
{
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        return true; /* validation or loader, an error always counts */
    }
    if (!(severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT)) {
        return false;
    }
    if (types & (VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                 VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT)) {
        return true;
    }
    /* A GENERAL warning: only the loader's own notices are left out. */
    return !is_loader_message(data);
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                 void *user)
{
    vku_instance *inst = user;
    const char *id = data->pMessageIdName ? data->pMessageIdName : "";
    if (vku_message_counts(severity, types, data)) {
        inst->messages++;
        if (inst->print_messages) {
            fprintf(stderr, "VALIDATION %s: %s\n", id, data->pMessage);
        }
    } else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        /* A loader notice: shown, not counted, so nothing is hidden. */
        inst->notices++;
        if (inst->print_messages) {
            fprintf(stderr, "vulkan loader: %s\n", data->pMessage);
        }
    }
    return VK_FALSE;
}

static bool has_layer(const char *name)
{
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, NULL);
    VkLayerProperties *p = calloc(n ? n : 1, sizeof *p);
    bool found = false;
    if (p != NULL && vkEnumerateInstanceLayerProperties(&n, p) >= 0) {
        for (uint32_t i = 0; i < n; i++) {
            found = found || strcmp(p[i].layerName, name) == 0;
        }
    }
    free(p);
    return found;
}

/* Under AddressSanitizer only. Lavapipe's one-time initialiser (pthread_once)
 * keeps a buffer for the life of the process, which tests/lsan.supp names
 * (leak:libvulkan_lvp.so). But the loader unloads the driver at
 * vkDestroyInstance, so at exit LeakSanitizer finds the buffer in an
 * "<unknown module>" that no suppression can name, and every GPU test fails.
 * Keeping the driver mapped (RTLD_NODELETE) lets the suppression match. */
void vku_keep_driver_mapped(void)
{
#if defined(__SANITIZE_ADDRESS__)
    static const char *const libs[] = {"libvulkan_lvp.so", "libVkLayer_khronos_validation.so"};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        (void)dlopen(libs[i], RTLD_NOW | RTLD_NODELETE); /* absent: nothing to keep */
    }
#endif
}

VkDebugUtilsMessengerCreateInfoEXT vku_messenger_info(PFN_vkDebugUtilsMessengerCallbackEXT fn,
                                                      void *user)
{
    VkDebugUtilsMessengerCreateInfoEXT mci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = fn,
        .pUserData = user};
    return mci;
}

bool vku_has_instance_ext(const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateInstanceExtensionProperties(NULL, &n, NULL) < 0) {
        return false;
    }
    VkExtensionProperties *p = calloc(n ? n : 1, sizeof *p);
    bool found = false;
    if (p != NULL && vkEnumerateInstanceExtensionProperties(NULL, &n, p) >= 0) {
        for (uint32_t i = 0; i < n && !found; i++) {
            found = strcmp(p[i].extensionName, name) == 0;
        }
    }
    free(p);
    return found;
}

VkResult vku_instance_create(vku_instance *out, bool validation, const char *app_name)
{
    return vku_instance_create_ex(out, validation, app_name, false);
}

VkResult vku_instance_create_ex(vku_instance *out, bool validation, const char *app_name,
                                bool debug_utils)
{
    vku_keep_driver_mapped();
    memset(out, 0, sizeof *out);
    out->print_messages = true;
    VkResult r = volkInitialize();
    if (r != VK_SUCCESS) {
        fprintf(stderr, "vkprof: no Vulkan loader found (libvulkan.so.1): %s\n",
                vku_result_name(r));
        return r;
    }
    const char *layer = "VK_LAYER_KHRONOS_validation";
    if (validation && !has_layer(layer)) {
        fprintf(stderr,
                "vkprof: %s is not installed (Debian: apt-get install vulkan-validationlayers)\n",
                layer);
        return VK_ERROR_LAYER_NOT_PRESENT;
    }
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = app_name,
                             .pEngineName = "vkprof",
                             .apiVersion = VK_API_VERSION_1_3};
    const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkDebugUtilsMessengerCreateInfoEXT mci = vku_messenger_info(on_message, out);
    /* with validation the layer offers debug utils itself */
    bool want_exts = validation || (debug_utils && vku_has_instance_ext(exts[0]));
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pNext = validation ? &mci : NULL,
                               .pApplicationInfo = &app,
                               .enabledLayerCount = validation ? 1u : 0u,
                               .ppEnabledLayerNames = &layer,
                               .enabledExtensionCount = want_exts ? 1u : 0u,
                               .ppEnabledExtensionNames = exts};
    r = vkCreateInstance(&ci, NULL, &out->instance);
    if (r != VK_SUCCESS) {
        fprintf(stderr, "vkprof: vkCreateInstance failed: %s\n", vku_result_name(r));
        return r;
    }
    volkLoadInstanceOnly(out->instance);
    out->validation = validation;
    out->debug_utils = want_exts;
    if (validation) {
        r = vkCreateDebugUtilsMessengerEXT(out->instance, &mci, NULL, &out->messenger);
        if (r != VK_SUCCESS) {
            fprintf(stderr, "vkprof: vkCreateDebugUtilsMessengerEXT failed: %s\n",
                    vku_result_name(r));
            vkDestroyInstance(out->instance, NULL);
            out->instance = VK_NULL_HANDLE;
            return r;
        }
    }
    return VK_SUCCESS;
}

void vku_instance_destroy(vku_instance *inst)
{
    if (inst->instance == VK_NULL_HANDLE) {
        return;
    }
    if (inst->messenger != VK_NULL_HANDLE) {
        vkDestroyDebugUtilsMessengerEXT(inst->instance, inst->messenger, NULL);
    }
    vkDestroyInstance(inst->instance, NULL);
    inst->instance = VK_NULL_HANDLE;
}

VkResult vku_pick_device(VkInstance inst, const char *selector, VkPhysicalDevice *out, char *err,
                         size_t err_size)
{
    uint32_t n = 0;
    VkResult r = vkEnumeratePhysicalDevices(inst, &n, NULL);
    if (r < 0 || n == 0) {
        snprintf(err, err_size,
                 "no Vulkan device found (on a machine without a GPU, install "
                 "mesa-vulkan-drivers for lavapipe)");
        return VK_ERROR_INITIALIZATION_FAILED;
    }
    VkPhysicalDevice *devs = calloc(n, sizeof *devs);
    if (devs == NULL) {
        return VK_ERROR_OUT_OF_HOST_MEMORY;
    }
    vkEnumeratePhysicalDevices(inst, &n, devs);
    int pick = -1;
    if (selector == NULL || selector[0] == '\0') {
        int best = -1;
        for (uint32_t i = 0; i < n; i++) {
            VkPhysicalDeviceProperties p;
            vkGetPhysicalDeviceProperties(devs[i], &p);
            int score = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU     ? 4
                        : p.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? 3
                        : p.deviceType == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU    ? 2
                                                                                 : 1;
            if (score > best && vku_compute_family(devs[i]) != UINT32_MAX) {
                best = score;
                pick = (int)i;
            }
        }
    } else {
        char *end = NULL;
        unsigned long idx = strtoul(selector, &end, 10);
        if (end != selector && *end == '\0') {
            if (idx < n) {
                pick = (int)idx;
            } else {
                snprintf(err, err_size, "device index %lu out of range: %u device(s) found", idx,
                         n);
            }
        } else {
            for (uint32_t i = 0; i < n && pick < 0; i++) {
                VkPhysicalDeviceProperties p;
                vkGetPhysicalDeviceProperties(devs[i], &p);
                if (strstr(p.deviceName, selector) != NULL) {
                    pick = (int)i;
                }
            }
            if (pick < 0) {
                snprintf(err, err_size, "no device name contains '%s'", selector);
            }
        }
    }
    if (pick >= 0) {
        *out = devs[pick];
    } else if (selector == NULL || selector[0] == '\0') {
        snprintf(err, err_size, "no Vulkan device with a compute queue");
    }
    free(devs);
    return pick >= 0 ? VK_SUCCESS : VK_ERROR_INITIALIZATION_FAILED;
}

uint32_t vku_compute_family(VkPhysicalDevice phys)
{
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, NULL);
    VkQueueFamilyProperties *f = calloc(n ? n : 1, sizeof *f);
    uint32_t fam = UINT32_MAX;
    if (f != NULL) {
        vkGetPhysicalDeviceQueueFamilyProperties(phys, &n, f);
        for (uint32_t i = 0; i < n && fam == UINT32_MAX; i++) {
            if (f[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
                fam = i;
            }
        }
    }
    free(f);
    return fam;
}

bool vku_has_device_ext(VkPhysicalDevice phys, const char *name)
{
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(phys, NULL, &n, NULL);
    VkExtensionProperties *e = calloc(n ? n : 1, sizeof *e);
    bool found = false;
    if (e != NULL && vkEnumerateDeviceExtensionProperties(phys, NULL, &n, e) >= 0) {
        for (uint32_t i = 0; i < n; i++) {
            found = found || strcmp(e[i].extensionName, name) == 0;
        }
    }
    free(e);
    return found;
}

VkResult vku_device_create(vku_device *out, VkPhysicalDevice phys, uint32_t family)
{
    return vku_device_create_ex(out, phys, family, NULL);
}

VkResult vku_device_create_ex(vku_device *out, VkPhysicalDevice phys, uint32_t family,
                              const vku_device_options *opt)
{
    memset(out, 0, sizeof *out);
    out->phys = phys;
    out->family = family;
    uint32_t want_queues = opt != NULL && opt->queue_count > 1 ? opt->queue_count : 1;
    if (want_queues > 2) {
        fprintf(stderr, "vkprof: %u queues asked for; vku_device_create_ex makes 1 or 2\n",
                want_queues);
        return VK_ERROR_INITIALIZATION_FAILED;
    }
    if (want_queues == 2) {
        uint32_t nf = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(phys, &nf, NULL);
        VkQueueFamilyProperties *fp = calloc(nf ? nf : 1, sizeof *fp);
        if (fp == NULL) {
            return VK_ERROR_OUT_OF_HOST_MEMORY;
        }
        vkGetPhysicalDeviceQueueFamilyProperties(phys, &nf, fp);
        if (family >= nf || fp[family].queueCount < 2) {
            want_queues = 1; /* the family has one: the second stays VK_NULL_HANDLE */
        }
        free(fp);
    }
    out->queue_count = want_queues;
    vkGetPhysicalDeviceProperties(phys, &out->props);
    vkGetPhysicalDeviceMemoryProperties(phys, &out->mem);

    VkPhysicalDeviceVulkan13Features f13 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    VkPhysicalDeviceVulkan12Features f12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    bool v13 = out->props.apiVersion >= VK_API_VERSION_1_3;
    bool v12 = out->props.apiVersion >= VK_API_VERSION_1_2;
    if (v13) {
        f12.pNext = &f13;
    }
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = v12 ? &f12 : NULL};
    vkGetPhysicalDeviceFeatures2(phys, &f2);

    VkPhysicalDeviceVulkan13Features e13 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
        .synchronization2 =
            v13 && !(opt != NULL && opt->no_synchronization2) ? f13.synchronization2 : VK_FALSE};
    VkPhysicalDeviceVulkan12Features e12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .pNext = v13 ? &e13 : NULL,
        .hostQueryReset = v12 ? f12.hostQueryReset : VK_FALSE};
    VkPhysicalDeviceFeatures2 e2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = v12 ? &e12 : NULL};
    out->sync2 = e13.synchronization2 == VK_TRUE;
    out->host_query_reset = e12.hostQueryReset == VK_TRUE;

    const char *exts[1];
    uint32_t next = 0;
    /* The EXT first: Debian's validation layer (1.3.239) predates the KHR
     * name and warns about it; both have the same entry points. */
    if (vku_has_device_ext(phys, VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME)) {
        exts[next++] = VK_EXT_CALIBRATED_TIMESTAMPS_EXTENSION_NAME;
    } else if (vku_has_device_ext(phys, "VK_KHR_calibrated_timestamps")) {
        exts[next++] = "VK_KHR_calibrated_timestamps";
    }
    out->calibrated_ext = next > 0;

    const float prio[2] = {1.0f, 1.0f};
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = family,
                                   .queueCount = want_queues,
                                   .pQueuePriorities = prio};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .pNext = &e2,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci,
                              .enabledExtensionCount = next,
                              .ppEnabledExtensionNames = exts};
    VkResult r = vkCreateDevice(phys, &dci, NULL, &out->device);
    if (r != VK_SUCCESS) {
        fprintf(stderr, "vkprof: vkCreateDevice failed: %s\n", vku_result_name(r));
        return r;
    }
    volkLoadDevice(out->device);
    vkGetDeviceQueue(out->device, family, 0, &out->queue);
    if (want_queues == 2) {
        vkGetDeviceQueue(out->device, family, 1, &out->queue2);
    }
    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = family};
    r = vkCreateCommandPool(out->device, &pci, NULL, &out->cmd_pool);
    if (r == VK_SUCCESS) {
        VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                          .commandPool = out->cmd_pool,
                                          .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                          .commandBufferCount = 1};
        r = vkAllocateCommandBuffers(out->device, &ai, &out->cmd);
    }
    if (r == VK_SUCCESS) {
        VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        r = vkCreateFence(out->device, &fci, NULL, &out->fence);
    }
    if (r != VK_SUCCESS) {
        fprintf(stderr, "vkprof: device setup failed: %s\n", vku_result_name(r));
        vku_device_destroy(out);
    }
    return r;
}

void vku_device_destroy(vku_device *dev)
{
    if (dev->device == VK_NULL_HANDLE) {
        return;
    }
    vkDeviceWaitIdle(dev->device);
    if (dev->fence != VK_NULL_HANDLE) {
        vkDestroyFence(dev->device, dev->fence, NULL);
    }
    if (dev->cmd_pool != VK_NULL_HANDLE) {
        vkDestroyCommandPool(dev->device, dev->cmd_pool, NULL);
    }
    vkDestroyDevice(dev->device, NULL);
    dev->device = VK_NULL_HANDLE;
}

VkResult vku_begin(vku_device *dev)
{
    VkResult r = vkResetCommandBuffer(dev->cmd, 0);
    if (r != VK_SUCCESS) {
        return r;
    }
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    return vkBeginCommandBuffer(dev->cmd, &bi);
}

VkResult vku_submit_wait(vku_device *dev)
{
    VkResult r = vkEndCommandBuffer(dev->cmd);
    if (r != VK_SUCCESS) {
        return r;
    }
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &dev->cmd};
    r = vkResetFences(dev->device, 1, &dev->fence);
    if (r == VK_SUCCESS) {
        r = vkQueueSubmit(dev->queue, 1, &si, dev->fence);
    }
    if (r == VK_SUCCESS) {
        r = vkWaitForFences(dev->device, 1, &dev->fence, VK_TRUE, UINT64_C(60000000000));
    }
    return r;
}

VkResult vku_buffer_create(vku_device *dev, VkDeviceSize size, vku_buffer *out)
{
    memset(out, 0, sizeof *out);
    out->size = size;
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = size,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = vkCreateBuffer(dev->device, &bci, NULL, &out->buffer);
    if (r != VK_SUCCESS) {
        return r;
    }
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev->device, out->buffer, &req);
    VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < dev->mem.memoryTypeCount && type == UINT32_MAX; i++) {
        if ((req.memoryTypeBits & (1u << i)) &&
            (dev->mem.memoryTypes[i].propertyFlags & want) == want) {
            type = i;
        }
    }
    if (type == UINT32_MAX) {
        vkDestroyBuffer(dev->device, out->buffer, NULL);
        out->buffer = VK_NULL_HANDLE;
        return VK_ERROR_FEATURE_NOT_PRESENT;
    }
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = req.size,
                               .memoryTypeIndex = type};
    r = vkAllocateMemory(dev->device, &ai, NULL, &out->memory);
    if (r == VK_SUCCESS) {
        r = vkBindBufferMemory(dev->device, out->buffer, out->memory, 0);
    }
    if (r == VK_SUCCESS) {
        r = vkMapMemory(dev->device, out->memory, 0, VK_WHOLE_SIZE, 0, &out->map);
    }
    if (r != VK_SUCCESS) {
        vku_buffer_destroy(dev, out);
    }
    return r;
}

void vku_buffer_destroy(vku_device *dev, vku_buffer *buf)
{
    if (buf->buffer != VK_NULL_HANDLE) {
        vkDestroyBuffer(dev->device, buf->buffer, NULL);
    }
    if (buf->memory != VK_NULL_HANDLE) {
        vkFreeMemory(dev->device, buf->memory, NULL);
    }
    memset(buf, 0, sizeof *buf);
}

VkResult vku_busy_create(vku_device *dev, uint32_t count, vku_busy *out)
{
    memset(out, 0, sizeof *out);
    out->count = count;
    VkResult r = vku_buffer_create(dev, (VkDeviceSize)count * sizeof(float), &out->buf);
    if (r != VK_SUCCESS) {
        return r;
    }
    memset(out->buf.map, 0, (size_t)count * sizeof(float));
    VkDescriptorSetLayoutBinding b = {.binding = 0,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .descriptorCount = 1,
                                      .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dci = {.sType =
                                               VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = 1,
                                           .pBindings = &b};
    r = vkCreateDescriptorSetLayout(dev->device, &dci, NULL, &out->dsl);
    VkPushConstantRange pcr = {
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = 2 * sizeof(uint32_t)};
    if (r == VK_SUCCESS) {
        VkPipelineLayoutCreateInfo lci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                          .setLayoutCount = 1,
                                          .pSetLayouts = &out->dsl,
                                          .pushConstantRangeCount = 1,
                                          .pPushConstantRanges = &pcr};
        r = vkCreatePipelineLayout(dev->device, &lci, NULL, &out->layout);
    }
    if (r == VK_SUCCESS) {
        VkShaderModuleCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                        .codeSize = sizeof busy_spv,
                                        .pCode = busy_spv};
        r = vkCreateShaderModule(dev->device, &sci, NULL, &out->module);
    }
    if (r == VK_SUCCESS) {
        VkComputePipelineCreateInfo pci = {
            .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
            .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                      .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                      .module = out->module,
                      .pName = "main"},
            .layout = out->layout};
        r = vkCreateComputePipelines(dev->device, VK_NULL_HANDLE, 1, &pci, NULL, &out->pipeline);
    }
    if (r == VK_SUCCESS) {
        VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 1};
        VkDescriptorPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                          .maxSets = 1,
                                          .poolSizeCount = 1,
                                          .pPoolSizes = &ps};
        r = vkCreateDescriptorPool(dev->device, &pci, NULL, &out->dpool);
    }
    if (r == VK_SUCCESS) {
        VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                          .descriptorPool = out->dpool,
                                          .descriptorSetCount = 1,
                                          .pSetLayouts = &out->dsl};
        r = vkAllocateDescriptorSets(dev->device, &ai, &out->set);
    }
    if (r == VK_SUCCESS) {
        VkDescriptorBufferInfo bi = {
            .buffer = out->buf.buffer, .offset = 0, .range = VK_WHOLE_SIZE};
        VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                  .dstSet = out->set,
                                  .dstBinding = 0,
                                  .descriptorCount = 1,
                                  .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                  .pBufferInfo = &bi};
        vkUpdateDescriptorSets(dev->device, 1, &w, 0, NULL);
    }
    if (r != VK_SUCCESS) {
        vku_busy_destroy(dev, out);
    }
    return r;
}

void vku_busy_destroy(vku_device *dev, vku_busy *busy)
{
    if (busy->pipeline != VK_NULL_HANDLE) {
        vkDestroyPipeline(dev->device, busy->pipeline, NULL);
    }
    if (busy->module != VK_NULL_HANDLE) {
        vkDestroyShaderModule(dev->device, busy->module, NULL);
    }
    if (busy->dpool != VK_NULL_HANDLE) {
        vkDestroyDescriptorPool(dev->device, busy->dpool, NULL);
    }
    if (busy->layout != VK_NULL_HANDLE) {
        vkDestroyPipelineLayout(dev->device, busy->layout, NULL);
    }
    if (busy->dsl != VK_NULL_HANDLE) {
        vkDestroyDescriptorSetLayout(dev->device, busy->dsl, NULL);
    }
    vku_buffer_destroy(dev, &busy->buf);
    memset(busy, 0, sizeof *busy);
}

void vku_busy_record(vku_device *dev, const vku_busy *busy, VkCommandBuffer cmd,
                     uint32_t iterations)
{
    (void)dev;
    uint32_t pc[2] = {iterations, busy->count};
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, busy->pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, busy->layout, 0, 1, &busy->set, 0,
                            NULL);
    vkCmdPushConstants(cmd, busy->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, pc);
    vkCmdDispatch(cmd, (busy->count + 63) / 64, 1, 1);
}

void vku_compute_barrier(VkCommandBuffer cmd)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

vkprof_context_desc vku_vkprof_desc(const vku_instance *inst, const vku_device *dev)
{
    vkprof_context_desc d = vkprof_default_desc();
    d.instance = inst->instance;
    d.physical_device = dev->phys;
    d.device = dev->device;
    d.queue_family_index = dev->family;
    d.get_instance_proc_addr = vkGetInstanceProcAddr;
    d.get_device_proc_addr = vkGetDeviceProcAddr;
    /* what this device enabled: vkCmdWriteTimestamp2 only with the feature */
    d.synchronization2 = dev->sync2 ? VKPROF_FEATURE_ENABLED : VKPROF_FEATURE_DISABLED;
    d.no_synchronization2 = !dev->sync2;
    d.host_query_reset = dev->host_query_reset;
    return d;
}
