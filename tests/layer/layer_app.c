/* layer_app: a multi-threaded plain-Vulkan compute app that submits the way
 * real runtimes do, for the vkprof layer's tests. It calls no vkprof function.
 *
 * Each iteration i (of --iterations N):
 *   - two recording threads, new every iteration, reset their command pools
 *     (two per thread role, alternating) and re-record: A a one-time-submit
 *     primary PA that executes a one-time-submit secondary SA; B a primary PB;
 *   - one buffer S, recorded once (simultaneous use), is submitted 2 times
 *     per iteration, 3 when i % 3 == 0, never re-recorded; another, R
 *     (recorded once, no simultaneous use), once per iteration, with PA;
 *   - the main thread submits {PA, R} {S, PB} {S} in one call, vkQueueSubmit on
 *     even iterations and vkQueueSubmit2 on odd ones (where synchronization2
 *     is offered; --no-submit2 or without it: always vkQueueSubmit); the
 *     first batch waits on the copy queue's timeline value i (its previous
 *     copy), the last signals a binary semaphore;
 *   - a copy thread (alive for the whole run) waits on that semaphore, copies
 *     PA's buffer to a host buffer (after a dispatch where its queue has
 *     compute) and signals the timeline semaphore value i + 1. Its queue is a
 *     second one where the device has one (another family with transfer, else
 *     queue 1 of the compute family); otherwise (lavapipe) it is the same
 *     queue, submitted from the second thread under the queue's mutex. The
 *     JSON's "second_queue" says which;
 *   - the main thread then waits by i % 4: 0 vkWaitForFences on the batch's
 *     fence, 1 an empty submit that only signals a fence and a
 *     vkGetFenceStatus spin on it, 2 vkWaitSemaphores on the timeline value
 *     i + 1, 3 vkQueueWaitIdle on both queues. The copy thread itself waits
 *     with vkWaitSemaphores on its previous copy before resetting its pool.
 *
 * A first instance only lists the devices (as ggml does).
 *
 * Every pipeline (one shader module, shaders/busy.comp) has a debug-utils
 * object name; some dispatches are inside command-buffer label regions (one
 * level, never across command buffers). The app counts what it executed,
 * each re-submit counted, and prints it as JSON on stdout (and to --json
 * FILE): dispatches per pipeline name; dispatches per phase name by the vkprof
 * layer's rule (the open command-buffer label, else the pipeline's name; the
 * app uses no queue labels); executions of each label region; command-buffer
 * executions, secondaries included.
 *
 * Validation: the messenger counts every message that vku_message_counts
 * counts (the Khronos layer's, enabled with --validation or through
 * VK_INSTANCE_LAYERS, and the loader's); any one fails the run (exit 1). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* the busy shader's words under the app's own name (vkutil.c defines busy_spv) */
#define busy_spv layer_app_busy_spv
#include "busy_spv.h"
#undef busy_spv

#define COUNT 256u /* floats per storage buffer (busy.comp: 64 per group) */
#define TIMEOUT_NS UINT64_C(60000000000)

enum {
    PIPE_ALPHA,
    PIPE_BETA,
    PIPE_GAMMA,
    PIPE_DELTA,
    PIPE_EPSILON,
    PIPE_ZETA,
    PIPE_COPYPREP,
    NPIPE
};
static const char *const pipe_names[NPIPE] = {"app_alpha",   "app_beta", "app_gamma",   "app_delta",
                                              "app_epsilon", "app_zeta", "app_copyprep"};
enum { LAB_ATTN, LAB_FFN, LAB_SEC, LAB_STATIC, NLAB };
static const char *const label_names[NLAB] = {"attn", "ffn", "sec", "static_region"};
/* phase index: a pipeline's (0..NPIPE-1), or NPIPE + a label's */
#define NPHASE (NPIPE + NLAB)

static const char *phase_name(int ph)
{
    return ph < NPIPE ? pipe_names[ph] : label_names[ph - NPIPE];
}

/* What one recording executes each time it is executed. */
typedef struct rec {
    uint64_t by_pipe[NPIPE], by_phase[NPHASE], regions[NLAB];
    uint64_t dispatches, cmdbufs;
    int label; /* the open label region, -1: none */
} rec;

static void rec_add(rec *to, const rec *r, uint64_t times)
{
    for (int k = 0; k < NPIPE; k++) {
        to->by_pipe[k] += r->by_pipe[k] * times;
    }
    for (int k = 0; k < NPHASE; k++) {
        to->by_phase[k] += r->by_phase[k] * times;
    }
    for (int k = 0; k < NLAB; k++) {
        to->regions[k] += r->regions[k] * times;
    }
    to->dispatches += r->dispatches * times;
    to->cmdbufs += r->cmdbufs * times;
}

enum { BUF_A, BUF_B, BUF_S, BUF_C, BUF_R, NSET, BUF_HOST = NSET, NBUF };

typedef struct app {
    VkInstance inst;
    VkDebugUtilsMessengerEXT messenger;
    atomic_uint messages;
    VkPhysicalDevice phys;
    VkPhysicalDeviceMemoryProperties mem;
    VkDevice dev;
    uint32_t fam, copy_fam, copy_index;
    VkQueue q, qc;
    bool same_queue, copy_compute, submit2;
    char second_queue[160];
    pthread_mutex_t lock_main_, lock_copy_, *lock_main, *lock_copy;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkShaderModule mod;
    VkPipeline pipe[NPIPE];
    VkDescriptorPool dpool;
    VkDescriptorSet set[NSET];
    VkBuffer buf[NBUF];
    VkDeviceMemory bmem[NBUF];
    uint32_t busy_iters;
    /* submission objects */
    VkCommandPool pool_a[2], pool_b[2], pool_s, pool_c;
    VkCommandBuffer pa[2], sa[2], pb[2], s, c, r;
    rec rec_s, rec_r;
    rec simultaneous; /* what S's executions add to the totals */
    VkSemaphore sem_compute, timeline;
    VkFence f_work, f_empty;
    /* main <-> copy thread */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint32_t main_submitted, copy_submitted, iterations;
    rec copy_total;
    /* waits, by kind */
    uint64_t waits_fence, waits_status, waits_sem, waits_idle, submits, empty_submits, spins;
} app;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                 void *user)
{
    app *a = user;
    if (vku_message_counts(severity, types, data)) {
        atomic_fetch_add(&a->messages, 1);
        fprintf(stderr, "VALIDATION %s: %s\n", data->pMessageIdName ? data->pMessageIdName : "",
                data->pMessage);
    }
    return VK_FALSE;
}

/* ---- instance, device, queues -------------------------------------------------- */

/* As ggml does: a first instance only to list the devices, destroyed before
 * the one that is used. */
static int list_devices(void)
{
    VkApplicationInfo ai = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                            .pApplicationName = "layer_app (device list)",
                            .apiVersion = VK_API_VERSION_1_3};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pApplicationInfo = &ai};
    VkInstance inst = VK_NULL_HANDLE;
    if (vkCreateInstance(&ci, NULL, &inst) != VK_SUCCESS) {
        fprintf(stderr, "layer_app: vkCreateInstance (device list) failed\n");
        return 1;
    }
    PFN_vkEnumeratePhysicalDevices enumerate =
        (PFN_vkEnumeratePhysicalDevices)vkGetInstanceProcAddr(inst, "vkEnumeratePhysicalDevices");
    PFN_vkDestroyInstance destroy =
        (PFN_vkDestroyInstance)vkGetInstanceProcAddr(inst, "vkDestroyInstance");
    uint32_t n = 0;
    VkResult r = enumerate != NULL ? enumerate(inst, &n, NULL) : VK_ERROR_INITIALIZATION_FAILED;
    if (destroy != NULL) {
        destroy(inst, NULL);
    }
    if (r != VK_SUCCESS || n == 0) {
        fprintf(stderr, "layer_app: no Vulkan device listed\n");
        return 1;
    }
    return 0;
}

static int create_instance(app *a, bool validation)
{
    if (volkInitialize() != VK_SUCCESS) {
        fprintf(stderr, "layer_app: no Vulkan loader\n");
        return 1;
    }
    if (list_devices() != 0) {
        return 1;
    }
    if (!vku_has_instance_ext(VK_EXT_DEBUG_UTILS_EXTENSION_NAME)) {
        fprintf(stderr, "layer_app: the instance offers no VK_EXT_debug_utils\n");
        return 1;
    }
    const char *layer = "VK_LAYER_KHRONOS_validation";
    const char *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkDebugUtilsMessengerCreateInfoEXT mci = vku_messenger_info(on_message, a);
    VkApplicationInfo ai = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                            .pApplicationName = "layer_app",
                            .apiVersion = VK_API_VERSION_1_3};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pNext = &mci,
                               .pApplicationInfo = &ai,
                               .enabledLayerCount = validation ? 1u : 0u,
                               .ppEnabledLayerNames = &layer,
                               .enabledExtensionCount = 1,
                               .ppEnabledExtensionNames = &ext};
    VkResult r = vkCreateInstance(&ci, NULL, &a->inst);
    if (r != VK_SUCCESS) {
        fprintf(stderr, "layer_app: vkCreateInstance: %s\n", vku_result_name(r));
        return 1;
    }
    volkLoadInstance(a->inst);
    r = vkCreateDebugUtilsMessengerEXT(a->inst, &mci, NULL, &a->messenger);
    if (r != VK_SUCCESS) {
        fprintf(stderr, "layer_app: vkCreateDebugUtilsMessengerEXT: %s\n", vku_result_name(r));
        return 1;
    }
    return 0;
}

/* The compute family, and the second queue: another family with transfer
 * (a copy queue), else queue 1 of the compute family, else the same queue. */
static int pick_queues(app *a)
{
    char err[256] = "";
    if (vku_pick_device(a->inst, getenv("VKPROF_TEST_DEVICE"), &a->phys, err, sizeof err) !=
        VK_SUCCESS) {
        fprintf(stderr, "layer_app: %s\n", err);
        return 1;
    }
    vkGetPhysicalDeviceMemoryProperties(a->phys, &a->mem);
    a->fam = vku_compute_family(a->phys);
    if (a->fam == UINT32_MAX) {
        fprintf(stderr, "layer_app: no compute queue family\n");
        return 1;
    }
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(a->phys, &n, NULL);
    VkQueueFamilyProperties *qf = calloc(n ? n : 1, sizeof *qf);
    if (qf == NULL) {
        return 1;
    }
    vkGetPhysicalDeviceQueueFamilyProperties(a->phys, &n, qf);
    a->copy_fam = UINT32_MAX;
    for (uint32_t f = 0; f < n && a->copy_fam == UINT32_MAX; f++) { /* transfer only first */
        if (f != a->fam && qf[f].queueCount > 0 && (qf[f].queueFlags & VK_QUEUE_TRANSFER_BIT) &&
            !(qf[f].queueFlags & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT))) {
            a->copy_fam = f;
        }
    }
    for (uint32_t f = 0; f < n && a->copy_fam == UINT32_MAX; f++) {
        if (f != a->fam && qf[f].queueCount > 0 &&
            (qf[f].queueFlags &
             (VK_QUEUE_TRANSFER_BIT | VK_QUEUE_COMPUTE_BIT | VK_QUEUE_GRAPHICS_BIT))) {
            a->copy_fam = f;
        }
    }
    a->copy_index = 0;
    if (a->copy_fam != UINT32_MAX) {
        snprintf(a->second_queue, sizeof a->second_queue, "queue 0 of family %u (another family)",
                 a->copy_fam);
    } else if (qf[a->fam].queueCount >= 2) {
        a->copy_fam = a->fam;
        a->copy_index = 1;
        snprintf(a->second_queue, sizeof a->second_queue,
                 "queue 1 of family %u (the compute family)", a->fam);
    } else {
        a->copy_fam = a->fam;
        a->same_queue = true;
        snprintf(a->second_queue, sizeof a->second_queue,
                 "none: the device has one queue; queue 0 of family %u is shared by a second "
                 "thread under a mutex",
                 a->fam);
    }
    a->copy_compute = (qf[a->copy_fam].queueFlags & VK_QUEUE_COMPUTE_BIT) != 0;
    free(qf);
    return 0;
}

static int create_device(app *a, bool want_submit2)
{
    VkPhysicalDeviceVulkan13Features f13 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    VkPhysicalDeviceVulkan12Features f12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(a->phys, &props);
    bool v13 = props.apiVersion >= VK_API_VERSION_1_3;
    f12.pNext = v13 ? &f13 : NULL;
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &f12};
    vkGetPhysicalDeviceFeatures2(a->phys, &f2);
    if (!f12.timelineSemaphore) {
        fprintf(stderr, "layer_app: the device has no timeline semaphores\n");
        return 1;
    }
    a->submit2 = want_submit2 && v13 && f13.synchronization2;
    /* only what the app uses: timeline semaphores, synchronization2 for
     * vkQueueSubmit2 (no hostQueryReset: a layer that needs it must add it) */
    VkPhysicalDeviceVulkan13Features e13 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
        .synchronization2 = a->submit2};
    VkPhysicalDeviceVulkan12Features e12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .pNext = a->submit2 ? &e13 : NULL,
        .timelineSemaphore = VK_TRUE};
    float prio[2] = {1.0f, 1.0f};
    VkDeviceQueueCreateInfo qci[2] = {{.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                       .queueFamilyIndex = a->fam,
                                       .queueCount = a->copy_index == 1 ? 2u : 1u,
                                       .pQueuePriorities = prio},
                                      {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                       .queueFamilyIndex = a->copy_fam,
                                       .queueCount = 1,
                                       .pQueuePriorities = prio}};
    bool two_families = a->copy_fam != a->fam;
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .pNext = &e12,
                              .queueCreateInfoCount = two_families ? 2u : 1u,
                              .pQueueCreateInfos = qci};
    VkResult r = vkCreateDevice(a->phys, &dci, NULL, &a->dev);
    if (r != VK_SUCCESS) {
        fprintf(stderr, "layer_app: vkCreateDevice: %s\n", vku_result_name(r));
        return 1;
    }
    volkLoadDevice(a->dev);
    if (a->submit2 && vkQueueSubmit2 == NULL) {
        a->submit2 = false;
    }
    /* vkGetDeviceQueue2 for the first, vkGetDeviceQueue for the second */
    VkDeviceQueueInfo2 qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_INFO_2,
                             .queueFamilyIndex = a->fam,
                             .queueIndex = 0};
    vkGetDeviceQueue2(a->dev, &qi, &a->q);
    if (a->same_queue) {
        a->qc = a->q;
    } else {
        vkGetDeviceQueue(a->dev, a->copy_fam, a->copy_index, &a->qc);
    }
    pthread_mutex_init(&a->lock_main_, NULL);
    pthread_mutex_init(&a->lock_copy_, NULL);
    a->lock_main = &a->lock_main_;
    a->lock_copy = a->same_queue ? &a->lock_main_ : &a->lock_copy_;
    return 0;
}

static void set_name(app *a, VkObjectType type, uint64_t handle, const char *name)
{
    VkDebugUtilsObjectNameInfoEXT ni = {.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT,
                                        .objectType = type,
                                        .objectHandle = handle,
                                        .pObjectName = name};
    CHECK_VK(vkSetDebugUtilsObjectNameEXT(a->dev, &ni));
}

/* ---- buffers and pipelines ------------------------------------------------------- */

static int create_buffers(app *a)
{
    uint32_t fams[2] = {a->fam, a->copy_fam};
    bool concurrent = a->copy_fam != a->fam;
    for (int b = 0; b < NBUF; b++) {
        VkBufferCreateInfo bci = {
            .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
            .size = COUNT * sizeof(float),
            .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                     VK_BUFFER_USAGE_TRANSFER_DST_BIT,
            .sharingMode = concurrent ? VK_SHARING_MODE_CONCURRENT : VK_SHARING_MODE_EXCLUSIVE,
            .queueFamilyIndexCount = concurrent ? 2u : 0u,
            .pQueueFamilyIndices = fams};
        if (vkCreateBuffer(a->dev, &bci, NULL, &a->buf[b]) != VK_SUCCESS) {
            return 1;
        }
        VkMemoryRequirements req;
        vkGetBufferMemoryRequirements(a->dev, a->buf[b], &req);
        VkMemoryPropertyFlags want = b == BUF_HOST ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                         VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                                   : 0;
        uint32_t type = UINT32_MAX;
        for (uint32_t i = 0; i < a->mem.memoryTypeCount && type == UINT32_MAX; i++) {
            if ((req.memoryTypeBits & (1u << i)) &&
                (a->mem.memoryTypes[i].propertyFlags & want) == want) {
                type = i;
            }
        }
        VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                    .allocationSize = req.size,
                                    .memoryTypeIndex = type};
        if (type == UINT32_MAX || vkAllocateMemory(a->dev, &mai, NULL, &a->bmem[b]) != VK_SUCCESS ||
            vkBindBufferMemory(a->dev, a->buf[b], a->bmem[b], 0) != VK_SUCCESS) {
            return 1;
        }
    }
    return 0;
}

static int create_pipelines(app *a)
{
    VkDescriptorSetLayoutBinding b = {.binding = 0,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .descriptorCount = 1,
                                      .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dci = {.sType =
                                               VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = 1,
                                           .pBindings = &b};
    VkPushConstantRange pcr = {
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = 2 * sizeof(uint32_t)};
    VkPipelineLayoutCreateInfo lci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &a->dsl,
                                      .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &pcr};
    VkShaderModuleCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                    .codeSize = sizeof layer_app_busy_spv,
                                    .pCode = layer_app_busy_spv};
    if (vkCreateDescriptorSetLayout(a->dev, &dci, NULL, &a->dsl) != VK_SUCCESS ||
        vkCreatePipelineLayout(a->dev, &lci, NULL, &a->layout) != VK_SUCCESS ||
        vkCreateShaderModule(a->dev, &sci, NULL, &a->mod) != VK_SUCCESS) {
        return 1;
    }
    for (int p = 0; p < NPIPE; p++) {
        VkComputePipelineCreateInfo pci = {
            .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
            .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                      .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                      .module = a->mod,
                      .pName = "main"},
            .layout = a->layout};
        if (vkCreateComputePipelines(a->dev, VK_NULL_HANDLE, 1, &pci, NULL, &a->pipe[p]) !=
            VK_SUCCESS) {
            return 1;
        }
        set_name(a, VK_OBJECT_TYPE_PIPELINE, (uint64_t)a->pipe[p], pipe_names[p]);
    }
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = NSET};
    VkDescriptorPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = NSET,
                                      .poolSizeCount = 1,
                                      .pPoolSizes = &ps};
    if (vkCreateDescriptorPool(a->dev, &pci, NULL, &a->dpool) != VK_SUCCESS) {
        return 1;
    }
    for (int s = 0; s < NSET; s++) {
        VkDescriptorSetAllocateInfo sai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                           .descriptorPool = a->dpool,
                                           .descriptorSetCount = 1,
                                           .pSetLayouts = &a->dsl};
        if (vkAllocateDescriptorSets(a->dev, &sai, &a->set[s]) != VK_SUCCESS) {
            return 1;
        }
        VkDescriptorBufferInfo bi = {.buffer = a->buf[s], .offset = 0, .range = VK_WHOLE_SIZE};
        VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                  .dstSet = a->set[s],
                                  .descriptorCount = 1,
                                  .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                  .pBufferInfo = &bi};
        vkUpdateDescriptorSets(a->dev, 1, &w, 0, NULL);
    }
    return 0;
}

/* ---- recording, with the counts ---------------------------------------------------- */

/* Everything before (earlier commands, earlier submits on the queue) before
 * everything after, for shaders and transfers. */
static void barrier(VkCommandBuffer c)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                         VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
    VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(c, st, st, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* The same on a queue that may have no compute (a transfer queue). */
static void transfer_barrier(VkCommandBuffer c)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT,
        .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
    vkCmdPipelineBarrier(c, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                         &mb, 0, NULL, 0, NULL);
}

static void begin(VkCommandBuffer c, VkCommandBufferUsageFlags flags, bool secondary, rec *r)
{
    VkCommandBufferInheritanceInfo inh = {.sType =
                                              VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO};
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = flags,
                                   .pInheritanceInfo = secondary ? &inh : NULL};
    CHECK_VK(vkBeginCommandBuffer(c, &bi));
    memset(r, 0, sizeof *r);
    r->label = -1;
    r->cmdbufs = 1;
}

static void label_begin(VkCommandBuffer c, rec *r, int lab)
{
    VkDebugUtilsLabelEXT l = {.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
                              .pLabelName = label_names[lab]};
    vkCmdBeginDebugUtilsLabelEXT(c, &l);
    r->label = lab;
    r->regions[lab]++;
}

static void label_end(VkCommandBuffer c, rec *r)
{
    vkCmdEndDebugUtilsLabelEXT(c);
    r->label = -1;
}

static void dispatch(app *a, VkCommandBuffer c, rec *r, int pipe, int set)
{
    uint32_t pc[2] = {a->busy_iters, COUNT};
    vkCmdBindPipeline(c, VK_PIPELINE_BIND_POINT_COMPUTE, a->pipe[pipe]);
    vkCmdBindDescriptorSets(c, VK_PIPELINE_BIND_POINT_COMPUTE, a->layout, 0, 1, &a->set[set], 0,
                            NULL);
    vkCmdPushConstants(c, a->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, pc);
    vkCmdDispatch(c, COUNT / 64, 1, 1);
    r->by_pipe[pipe]++;
    r->by_phase[r->label >= 0 ? NPIPE + r->label : pipe]++;
    r->dispatches++;
}

static VkCommandPool make_pool(app *a, uint32_t fam, VkCommandPoolCreateFlags flags)
{
    VkCommandPoolCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = flags,
                                  .queueFamilyIndex = fam};
    VkCommandPool p = VK_NULL_HANDLE;
    CHECK_VK(vkCreateCommandPool(a->dev, &ci, NULL, &p));
    return p;
}

static VkCommandBuffer make_cmd(app *a, VkCommandPool pool, VkCommandBufferLevel level)
{
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = pool,
                                      .level = level,
                                      .commandBufferCount = 1};
    VkCommandBuffer c = VK_NULL_HANDLE;
    CHECK_VK(vkAllocateCommandBuffers(a->dev, &ai, &c));
    return c;
}

typedef struct job {
    app *a;
    uint32_t iter;
    rec r; /* what the primary executes, its secondary included */
} job;

/* Thread A: PA (one-time) with label "attn" {alpha, alpha, beta}, gamma
 * (1 + i % 3 times), then the secondary SA: "sec" {delta}, delta. */
static void *record_a(void *arg)
{
    job *j = arg;
    app *a = j->a;
    uint32_t slot = j->iter % 2;
    CHECK_VK(vkResetCommandPool(a->dev, a->pool_a[slot], 0));
    rec rs;
    VkCommandBuffer sa = a->sa[slot], pa = a->pa[slot];
    begin(sa, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, true, &rs);
    barrier(sa);
    label_begin(sa, &rs, LAB_SEC);
    dispatch(a, sa, &rs, PIPE_DELTA, BUF_A);
    label_end(sa, &rs);
    barrier(sa);
    dispatch(a, sa, &rs, PIPE_DELTA, BUF_A);
    CHECK_VK(vkEndCommandBuffer(sa));

    begin(pa, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, false, &j->r);
    barrier(pa);
    label_begin(pa, &j->r, LAB_ATTN);
    dispatch(a, pa, &j->r, PIPE_ALPHA, BUF_A);
    barrier(pa);
    dispatch(a, pa, &j->r, PIPE_ALPHA, BUF_A);
    barrier(pa);
    dispatch(a, pa, &j->r, PIPE_BETA, BUF_A);
    label_end(pa, &j->r);
    for (uint32_t k = 0; k < 1 + j->iter % 3; k++) {
        barrier(pa);
        dispatch(a, pa, &j->r, PIPE_GAMMA, BUF_A);
    }
    barrier(pa);
    vkCmdExecuteCommands(pa, 1, &sa);
    rec_add(&j->r, &rs, 1);
    CHECK_VK(vkEndCommandBuffer(pa));
    return NULL;
}

/* Thread B: PB (re-recorded, not one-time) with "ffn" {epsilon x3}, beta. */
static void *record_b(void *arg)
{
    job *j = arg;
    app *a = j->a;
    uint32_t slot = j->iter % 2;
    CHECK_VK(vkResetCommandPool(a->dev, a->pool_b[slot], 0));
    VkCommandBuffer pb = a->pb[slot];
    begin(pb, 0, false, &j->r);
    barrier(pb);
    label_begin(pb, &j->r, LAB_FFN);
    for (int k = 0; k < 3; k++) {
        if (k > 0) {
            barrier(pb);
        }
        dispatch(a, pb, &j->r, PIPE_EPSILON, BUF_B);
    }
    label_end(pb, &j->r);
    barrier(pb);
    dispatch(a, pb, &j->r, PIPE_BETA, BUF_B);
    CHECK_VK(vkEndCommandBuffer(pb));
    return NULL;
}

/* S, once: gamma, "static_region" {delta}; simultaneous use (it is in the
 * same queue submission twice). */
static void record_static(app *a)
{
    begin(a->s, VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT, false, &a->rec_s);
    barrier(a->s);
    dispatch(a, a->s, &a->rec_s, PIPE_GAMMA, BUF_S);
    barrier(a->s);
    label_begin(a->s, &a->rec_s, LAB_STATIC);
    dispatch(a, a->s, &a->rec_s, PIPE_DELTA, BUF_S);
    label_end(a->s, &a->rec_s);
    CHECK_VK(vkEndCommandBuffer(a->s));
}

/* R, once: zeta; no simultaneous use: submitted once an iteration, never
 * pending twice (every iteration ends with a wait that retires it), so each
 * of its executions can be timed. */
static void record_resubmitted(app *a)
{
    begin(a->r, 0, false, &a->rec_r);
    barrier(a->r);
    dispatch(a, a->r, &a->rec_r, PIPE_ZETA, BUF_R);
    CHECK_VK(vkEndCommandBuffer(a->r));
}

/* ---- the copy thread ------------------------------------------------------------------ */

static void wait_value(app *a, uint64_t value)
{
    VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                              .semaphoreCount = 1,
                              .pSemaphores = &a->timeline,
                              .pValues = &value};
    CHECK_VK(vkWaitSemaphores(a->dev, &wi, TIMEOUT_NS));
}

static void *copy_thread(void *arg)
{
    app *a = arg;
    for (uint32_t i = 0; i < a->iterations; i++) {
        pthread_mutex_lock(&a->mu);
        while (a->main_submitted < i + 1) {
            pthread_cond_wait(&a->cv, &a->mu);
        }
        pthread_mutex_unlock(&a->mu);
        if (i > 0) {
            wait_value(a, i); /* its previous copy, before the pool's reset */
        }
        CHECK_VK(vkResetCommandPool(a->dev, a->pool_c, 0));
        rec r;
        begin(a->c, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, false, &r);
        if (a->copy_compute) {
            barrier(a->c);
            dispatch(a, a->c, &r, PIPE_COPYPREP, BUF_C);
        }
        transfer_barrier(a->c);
        VkBufferCopy bc = {.size = COUNT * sizeof(float)};
        vkCmdCopyBuffer(a->c, a->buf[BUF_A], a->buf[BUF_HOST], 1, &bc);
        CHECK_VK(vkEndCommandBuffer(a->c));
        uint64_t signal = i + 1, zero = 0;
        VkTimelineSemaphoreSubmitInfo ts = {.sType =
                                                VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                            .waitSemaphoreValueCount = 1,
                                            .pWaitSemaphoreValues = &zero,
                                            .signalSemaphoreValueCount = 1,
                                            .pSignalSemaphoreValues = &signal};
        VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .pNext = &ts,
                           .waitSemaphoreCount = 1,
                           .pWaitSemaphores = &a->sem_compute,
                           .pWaitDstStageMask = &stage,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &a->c,
                           .signalSemaphoreCount = 1,
                           .pSignalSemaphores = &a->timeline};
        pthread_mutex_lock(a->lock_copy);
        CHECK_VK(vkQueueSubmit(a->qc, 1, &si, VK_NULL_HANDLE));
        pthread_mutex_unlock(a->lock_copy);
        pthread_mutex_lock(&a->mu);
        rec_add(&a->copy_total, &r, 1);
        a->submits++;
        a->copy_submitted = i + 1;
        pthread_cond_broadcast(&a->cv);
        pthread_mutex_unlock(&a->mu);
    }
    return NULL;
}

static void wait_copy_submitted(app *a, uint32_t n)
{
    pthread_mutex_lock(&a->mu);
    while (a->copy_submitted < n) {
        pthread_cond_wait(&a->cv, &a->mu);
    }
    pthread_mutex_unlock(&a->mu);
}

/* ---- the main loop ----------------------------------------------------------------------- */

/* One queue submission of `n` batches (each: its buffers, an optional wait
 * on the timeline, an optional signal of sem_compute): vkQueueSubmit, or
 * vkQueueSubmit2 with `use2`. */
typedef struct batch {
    uint32_t ncmd;
    VkCommandBuffer cmd[2];
    bool wait_timeline;
    uint64_t wait_value;
    bool signal;
} batch;

static void submit(app *a, bool use2, uint32_t n, const batch *b, VkFence fence)
{
    VkSubmitInfo si[3];
    VkTimelineSemaphoreSubmitInfo ts[3];
    VkSubmitInfo2 si2[3];
    VkCommandBufferSubmitInfo cbi[3][2];
    VkSemaphoreSubmitInfo wsi[3], ssi[3];
    VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    for (uint32_t k = 0; k < n; k++) {
        ts[k] = (VkTimelineSemaphoreSubmitInfo){
            .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
            .waitSemaphoreValueCount = b[k].wait_timeline ? 1u : 0u,
            .pWaitSemaphoreValues = &b[k].wait_value};
        si[k] = (VkSubmitInfo){.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                               .pNext = b[k].wait_timeline ? &ts[k] : NULL,
                               .waitSemaphoreCount = b[k].wait_timeline ? 1u : 0u,
                               .pWaitSemaphores = &a->timeline,
                               .pWaitDstStageMask = &stage,
                               .commandBufferCount = b[k].ncmd,
                               .pCommandBuffers = b[k].cmd,
                               .signalSemaphoreCount = b[k].signal ? 1u : 0u,
                               .pSignalSemaphores = &a->sem_compute};
        for (uint32_t c = 0; c < b[k].ncmd; c++) {
            cbi[k][c] =
                (VkCommandBufferSubmitInfo){.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
                                            .commandBuffer = b[k].cmd[c]};
        }
        wsi[k] = (VkSemaphoreSubmitInfo){.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
                                         .semaphore = a->timeline,
                                         .value = b[k].wait_value,
                                         .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT};
        ssi[k] = (VkSemaphoreSubmitInfo){.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
                                         .semaphore = a->sem_compute,
                                         .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT};
        si2[k] = (VkSubmitInfo2){.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
                                 .waitSemaphoreInfoCount = b[k].wait_timeline ? 1u : 0u,
                                 .pWaitSemaphoreInfos = &wsi[k],
                                 .commandBufferInfoCount = b[k].ncmd,
                                 .pCommandBufferInfos = cbi[k],
                                 .signalSemaphoreInfoCount = b[k].signal ? 1u : 0u,
                                 .pSignalSemaphoreInfos = &ssi[k]};
    }
    pthread_mutex_lock(a->lock_main);
    if (use2) {
        CHECK_VK(vkQueueSubmit2(a->q, n, n ? si2 : NULL, fence));
    } else {
        CHECK_VK(vkQueueSubmit(a->q, n, n ? si : NULL, fence));
    }
    pthread_mutex_unlock(a->lock_main);
    pthread_mutex_lock(&a->mu);
    a->submits++;
    a->empty_submits += n == 0;
    pthread_mutex_unlock(&a->mu);
}

static void run(app *a, rec *total)
{
    for (uint32_t i = 0; i < a->iterations; i++) {
        if (i > 0) {
            wait_copy_submitted(a, i); /* its wait on sem_compute is in: signal it again */
        }
        job ja = {.a = a, .iter = i}, jb = {.a = a, .iter = i};
        pthread_t ta, tb;
        if (pthread_create(&ta, NULL, record_a, &ja) != 0 ||
            pthread_create(&tb, NULL, record_b, &jb) != 0) {
            fprintf(stderr, "layer_app: pthread_create failed\n");
            exit(1);
        }
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        uint32_t slot = i % 2, s_times = 2;
        bool use2 = a->submit2 && (i % 2) == 1;
        if (i % 3 == 0) { /* S alone first, no fence, no semaphore */
            batch b0 = {.ncmd = 1, .cmd = {a->s}};
            submit(a, false, 1, &b0, VK_NULL_HANDLE);
            s_times++;
        }
        uint32_t method = i % 4;
        batch b[3] = {
            {.ncmd = 2, .cmd = {a->pa[slot], a->r}, .wait_timeline = i > 0, .wait_value = i},
            {.ncmd = 2, .cmd = {a->s, a->pb[slot]}},
            {.ncmd = 1, .cmd = {a->s}, .signal = true}};
        submit(a, use2, 3, b, method == 0 ? a->f_work : VK_NULL_HANDLE);
        pthread_mutex_lock(&a->mu);
        a->main_submitted = i + 1;
        pthread_cond_broadcast(&a->cv);
        pthread_mutex_unlock(&a->mu);
        rec_add(total, &ja.r, 1);
        rec_add(total, &jb.r, 1);
        rec_add(total, &a->rec_s, s_times);
        rec_add(&a->simultaneous, &a->rec_s, s_times);
        rec_add(total, &a->rec_r, 1);

        switch (method) {
        case 0:
            CHECK_VK(vkWaitForFences(a->dev, 1, &a->f_work, VK_TRUE, TIMEOUT_NS));
            CHECK_VK(vkResetFences(a->dev, 1, &a->f_work));
            a->waits_fence++;
            break;
        case 1: {
            submit(a, use2, 0, NULL, a->f_empty); /* only signals the fence */
            VkResult r;
            while ((r = vkGetFenceStatus(a->dev, a->f_empty)) == VK_NOT_READY) {
                a->spins++;
                sched_yield();
            }
            CHECK_VK(r);
            CHECK_VK(vkResetFences(a->dev, 1, &a->f_empty));
            a->waits_status++;
            break;
        }
        case 2:
            wait_copy_submitted(a, i + 1);
            wait_value(a, i + 1);
            a->waits_sem++;
            break;
        default:
            wait_copy_submitted(a, i + 1);
            pthread_mutex_lock(a->lock_main);
            CHECK_VK(vkQueueWaitIdle(a->q));
            pthread_mutex_unlock(a->lock_main);
            if (!a->same_queue) {
                pthread_mutex_lock(a->lock_copy);
                CHECK_VK(vkQueueWaitIdle(a->qc));
                pthread_mutex_unlock(a->lock_copy);
            }
            a->waits_idle++;
            break;
        }
    }
}

/* ---- output --------------------------------------------------------------------------------- */

static void print_json(FILE *f, const app *a, const rec *t)
{
    fprintf(f,
            "{\"layer_app\": 1, \"iterations\": %u, \"busy_iterations\": %u, "
            "\"instances\": 2, \"recording_threads\": %u,\n",
            a->iterations, a->busy_iters, 2 * a->iterations);
    fprintf(f, " \"second_queue\": \"%s\", \"same_queue\": %s, \"copy_queue_compute\": %s,\n",
            a->second_queue, a->same_queue ? "true" : "false", a->copy_compute ? "true" : "false");
    fprintf(f, " \"queue_submit2\": %s, \"submits\": %llu, \"empty_submits\": %llu,\n",
            a->submit2 ? "true" : "false", (unsigned long long)a->submits,
            (unsigned long long)a->empty_submits);
    fprintf(f,
            " \"waits\": {\"wait_for_fences\": %llu, \"get_fence_status\": %llu, "
            "\"wait_semaphores\": %llu, \"queue_wait_idle\": %llu},\n",
            (unsigned long long)a->waits_fence, (unsigned long long)a->waits_status,
            (unsigned long long)a->waits_sem, (unsigned long long)a->waits_idle);
    /* the layers the loader can enable (VK_INSTANCE_LAYERS names outside this
     * list are skipped by the loader with a notice only) */
    fprintf(f, " \"layers_available\": [");
    uint32_t nl = 0;
    vkEnumerateInstanceLayerProperties(&nl, NULL);
    VkLayerProperties *lp = calloc(nl ? nl : 1, sizeof *lp);
    if (lp != NULL && vkEnumerateInstanceLayerProperties(&nl, lp) >= 0) {
        for (uint32_t k = 0; k < nl; k++) {
            fprintf(f, "%s\"%s\"", k ? ", " : "", lp[k].layerName);
        }
    }
    free(lp);
    fprintf(f, "],\n");
    fprintf(f, " \"dispatches\": %llu, \"cmdbuf_executions\": %llu,\n",
            (unsigned long long)t->dispatches, (unsigned long long)t->cmdbufs);
    fprintf(f, " \"by_pipeline\": {");
    for (int k = 0; k < NPIPE; k++) {
        fprintf(f, "%s\"%s\": %llu", k ? ", " : "", pipe_names[k],
                (unsigned long long)t->by_pipe[k]);
    }
    fprintf(f, "},\n \"by_phase\": {");
    bool first = true;
    for (int k = 0; k < NPHASE; k++) {
        if (t->by_phase[k] != 0) {
            fprintf(f, "%s\"%s\": %llu", first ? "" : ", ", phase_name(k),
                    (unsigned long long)t->by_phase[k]);
            first = false;
        }
    }
    /* of those, what executions of S (simultaneous use, pending up to 3 times
     * at once) add: a layer that keeps its stamps in the buffer can time only
     * one of overlapping executions, and must count the others as lost */
    fprintf(f, "},\n \"by_phase_simultaneous\": {");
    first = true;
    for (int k = 0; k < NPHASE; k++) {
        if (a->simultaneous.by_phase[k] != 0) {
            fprintf(f, "%s\"%s\": %llu", first ? "" : ", ", phase_name(k),
                    (unsigned long long)a->simultaneous.by_phase[k]);
            first = false;
        }
    }
    fprintf(f, "},\n \"label_regions_simultaneous\": {");
    for (int k = 0; k < NLAB; k++) {
        fprintf(f, "%s\"%s\": %llu", k ? ", " : "", label_names[k],
                (unsigned long long)a->simultaneous.regions[k]);
    }
    fprintf(f, "},\n \"label_regions\": {");
    for (int k = 0; k < NLAB; k++) {
        fprintf(f, "%s\"%s\": %llu", k ? ", " : "", label_names[k],
                (unsigned long long)t->regions[k]);
    }
    fprintf(f, "}}\n");
}

static void usage(void)
{
    fprintf(stderr, "usage: layer_app [--iterations N] [--busy N] [--validation] [--no-submit2] "
                    "[--json FILE]\n");
}

int main(int argc, char **argv)
{
    vku_keep_driver_mapped(); /* ASan: leaks of lavapipe stay nameable */
    static app a;
    uint32_t iterations = 12, busy = 64;
    bool validation = false, want_submit2 = true;
    const char *json = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
            iterations = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--busy") == 0 && i + 1 < argc) {
            busy = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--validation") == 0) {
            validation = true;
        } else if (strcmp(argv[i], "--no-submit2") == 0) {
            want_submit2 = false;
        } else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
            json = argv[++i];
        } else {
            usage();
            return 2;
        }
    }
    if (iterations == 0 || busy == 0) {
        usage();
        return 2;
    }
    th_case = "layer_app";
    a.iterations = iterations;
    a.busy_iters = busy;
    pthread_mutex_init(&a.mu, NULL);
    pthread_cond_init(&a.cv, NULL);
    if (create_instance(&a, validation) != 0 || pick_queues(&a) != 0 ||
        create_device(&a, want_submit2) != 0 || create_buffers(&a) != 0 ||
        create_pipelines(&a) != 0) {
        fprintf(stderr, "layer_app: setup failed\n");
        return 1;
    }
    for (int k = 0; k < 2; k++) {
        a.pool_a[k] = make_pool(&a, a.fam, 0);
        a.pool_b[k] = make_pool(&a, a.fam, 0);
        a.pa[k] = make_cmd(&a, a.pool_a[k], VK_COMMAND_BUFFER_LEVEL_PRIMARY);
        a.sa[k] = make_cmd(&a, a.pool_a[k], VK_COMMAND_BUFFER_LEVEL_SECONDARY);
        a.pb[k] = make_cmd(&a, a.pool_b[k], VK_COMMAND_BUFFER_LEVEL_PRIMARY);
    }
    a.pool_s = make_pool(&a, a.fam, 0);
    a.pool_c = make_pool(&a, a.copy_fam, 0);
    a.s = make_cmd(&a, a.pool_s, VK_COMMAND_BUFFER_LEVEL_PRIMARY);
    a.r = make_cmd(&a, a.pool_s, VK_COMMAND_BUFFER_LEVEL_PRIMARY);
    a.c = make_cmd(&a, a.pool_c, VK_COMMAND_BUFFER_LEVEL_PRIMARY);
    VkSemaphoreTypeCreateInfo tci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                     .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    CHECK_VK(vkCreateSemaphore(a.dev, &sci, NULL, &a.sem_compute));
    sci.pNext = &tci;
    CHECK_VK(vkCreateSemaphore(a.dev, &sci, NULL, &a.timeline));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    CHECK_VK(vkCreateFence(a.dev, &fci, NULL, &a.f_work));
    CHECK_VK(vkCreateFence(a.dev, &fci, NULL, &a.f_empty));
    record_static(&a);
    record_resubmitted(&a);

    rec total;
    memset(&total, 0, sizeof total);
    pthread_t tc;
    if (th_failures == 0 && pthread_create(&tc, NULL, copy_thread, &a) == 0) {
        run(&a, &total);
        pthread_join(tc, NULL);
    } else {
        fprintf(stderr, "layer_app: setup failed\n");
        th_failures++;
    }
    CHECK_VK(vkDeviceWaitIdle(a.dev));
    rec_add(&total, &a.copy_total, 1);

    vkDestroyFence(a.dev, a.f_work, NULL);
    vkDestroyFence(a.dev, a.f_empty, NULL);
    vkDestroySemaphore(a.dev, a.sem_compute, NULL);
    vkDestroySemaphore(a.dev, a.timeline, NULL);
    for (int k = 0; k < 2; k++) {
        vkDestroyCommandPool(a.dev, a.pool_a[k], NULL);
        vkDestroyCommandPool(a.dev, a.pool_b[k], NULL);
    }
    vkDestroyCommandPool(a.dev, a.pool_s, NULL);
    vkDestroyCommandPool(a.dev, a.pool_c, NULL);
    vkDestroyDescriptorPool(a.dev, a.dpool, NULL);
    for (int p = 0; p < NPIPE; p++) {
        vkDestroyPipeline(a.dev, a.pipe[p], NULL);
    }
    vkDestroyShaderModule(a.dev, a.mod, NULL);
    vkDestroyPipelineLayout(a.dev, a.layout, NULL);
    vkDestroyDescriptorSetLayout(a.dev, a.dsl, NULL);
    for (int b = 0; b < NBUF; b++) {
        vkDestroyBuffer(a.dev, a.buf[b], NULL);
        vkFreeMemory(a.dev, a.bmem[b], NULL);
    }
    vkDestroyDevice(a.dev, NULL);
    vkDestroyDebugUtilsMessengerEXT(a.inst, a.messenger, NULL);
    vkDestroyInstance(a.inst, NULL);

    unsigned msgs = atomic_load(&a.messages);
    if (msgs != 0) {
        fprintf(stderr, "FAIL: %u validation message(s)\n", msgs);
        th_failures += (int)msgs;
    }
    print_json(stdout, &a, &total);
    if (json != NULL) {
        FILE *f = fopen(json, "w");
        if (f == NULL) {
            fprintf(stderr, "layer_app: cannot write %s\n", json);
            th_failures++;
        } else {
            print_json(f, &a, &total);
            if (fclose(f) != 0) {
                th_failures++;
            }
        }
    }
    return th_done();
}
