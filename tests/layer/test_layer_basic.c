/* VK_LAYER_vkprof on lavapipe, in one process per case, with the Khronos
 * validation layer above ours (first listed) or below it; any validation
 * message fails. The app records T tokens of work under two pipelines made
 * from one module (one named with debug utils, one not), a command-buffer
 * label, a secondary buffer and a re-submitted buffer; it waits with
 * vkWaitForFences, with a vkGetFenceStatus spin and on an empty submit that
 * only signals a fence; then it destroys the device and exits (the app runs
 * in a child process: the layer writes the process's summary and one trace
 * at its exit), and the parent reads the summary JSON the layer wrote: dispatch counts per phase
 * name, steps, nothing lost, the name rules, sampling, label mode, off, and garbage env values. The
 * trace's GPU slices carry the dispatch args: the group counts and the local
 * size the app used (dispatch mode), the dispatches of the region (label,
 * cmdbuf). Case spec: a pipeline with specialisation info (its local size x
 * a spec constant), vkCmdDispatch, vkCmdDispatchBase and
 * vkCmdDispatchIndirect, and the same module without specialisation.
 *
 *   test_layer_basic CASE LAYER_DIR OUT_DIR
 * CASE: above | below | off | garbage | sample | label | cmdbuf | steplabel | spec */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "harness.h"
#include "index.h" /* lyr_sampled */
#include "names.h"
/* the busy shader's words, under a name of our own (vkutil.c has busy_spv) */
#define busy_spv test_busy_spv
#include "busy_spv.h"
#undef busy_spv
#include "spec_args_spv.h"

enum { T = 4, K1 = 2, K2 = 3, K3 = 2, K4 = 3, K5 = 2 };
/* the busy pipelines: vku_busy_create(d, BUSY_COUNT), and busy.comp's
 * local_size_x = 64 (vku_busy_record dispatches ceil(count / 64) groups) */
enum { BUSY_COUNT = 256, BUSY_LOCAL = 64 };
/* case spec: spec_args.comp's local_size_y = 2, local_size_z = 1, the
 * default of local_size_x_id = 0 is 1 */
enum { SPEC_X = 8, SPEC_SCALE = 5, SPEC_Y = 2, SPEC_Z = 1, SPEC_X_DEFAULT = 1 };
static const float SPEC_BIAS = 0.5f;

static const char *tcase;
static long g_child; /* the app's process: its files are <exe>-<pid>.* */
static char out_dir[1024];
static uint32_t messages;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *d,
                                                 void *user)
{
    (void)user;
    if (vku_message_counts(sev, types, d)) {
        messages++;
        fprintf(stderr, "VALIDATION: %s\n", d->pMessage);
    }
    return VK_FALSE;
}

static bool is(const char *c)
{
    return strcmp(tcase, c) == 0;
}

typedef struct app {
    VkInstance inst;
    VkDebugUtilsMessengerEXT messenger;
    vku_device dev;
    vku_busy named, plain;
    VkCommandPool pool, pool2; /* a's, reset every token; b's and the secondary's */
    VkCommandBuffer a, b, sec, sim;
    VkFence fa, fb, fc;
    bool sync2;
} app;

static void create_instance(app *p)
{
    VkDebugUtilsMessengerCreateInfoEXT mci = vku_messenger_info(on_message, NULL);
    VkApplicationInfo ai = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                            .pApplicationName = "test_layer_basic",
                            .apiVersion = VK_API_VERSION_1_3};
    const char *above[] = {"VK_LAYER_KHRONOS_validation", "VK_LAYER_vkprof"};
    const char *below[] = {"VK_LAYER_vkprof", "VK_LAYER_KHRONOS_validation"};
    const char *ext[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pNext = &mci,
                               .pApplicationInfo = &ai,
                               .enabledLayerCount = 2,
                               .ppEnabledLayerNames = is("above") ? above : below,
                               .enabledExtensionCount = 1,
                               .ppEnabledExtensionNames = ext};
    VkResult r = vkCreateInstance(&ci, NULL, &p->inst);
    CHECK_VK(r);
    if (r != VK_SUCCESS) {
        /* nothing can run without it: report and stop here, not crash on it */
        exit(th_done());
    }
    volkLoadInstance(p->inst);
    CHECK_VK(vkCreateDebugUtilsMessengerEXT(p->inst, &mci, NULL, &p->messenger));
}

/* A second instance that only lists devices, as ggml does. */
static void list_only_instance(void)
{
    VkApplicationInfo ai = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                            .apiVersion = VK_API_VERSION_1_2};
    const char *layers[] = {"VK_LAYER_vkprof"};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pApplicationInfo = &ai,
                               .enabledLayerCount = 1,
                               .ppEnabledLayerNames = layers};
    VkInstance inst = VK_NULL_HANDLE;
    CHECK_VK(vkCreateInstance(&ci, NULL, &inst));
    PFN_vkEnumeratePhysicalDevices enumerate =
        (PFN_vkEnumeratePhysicalDevices)vkGetInstanceProcAddr(inst, "vkEnumeratePhysicalDevices");
    PFN_vkDestroyInstance destroy =
        (PFN_vkDestroyInstance)vkGetInstanceProcAddr(inst, "vkDestroyInstance");
    uint32_t n = 0;
    CHECK_VK(enumerate(inst, &n, NULL));
    CHECK(n > 0);
    destroy(inst, NULL);
}

/* Like ggml: the app's own Vulkan 1.1/1.2 feature structs, no calibrated
 * timestamps, synchronization2 only in the "below" case. */
static void create_device(app *p)
{
    vku_device *d = &p->dev;
    memset(d, 0, sizeof *d);
    uint32_t n = 1;
    VkResult r = vkEnumeratePhysicalDevices(p->inst, &n, &d->phys);
    CHECK(r == VK_SUCCESS || r == VK_INCOMPLETE);
    vkGetPhysicalDeviceProperties(d->phys, &d->props);
    vkGetPhysicalDeviceMemoryProperties(d->phys, &d->mem);
    d->family = vku_compute_family(d->phys);
    p->sync2 = is("below");
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                  .queueFamilyIndex = d->family,
                                  .queueCount = 1,
                                  .pQueuePriorities = &prio};
    VkPhysicalDeviceVulkan13Features f13 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
        .synchronization2 = VK_TRUE};
    VkPhysicalDeviceVulkan12Features f12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .pNext = p->sync2 ? &f13 : NULL,
        .timelineSemaphore = VK_TRUE};
    VkPhysicalDeviceVulkan11Features f11 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = &f12};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &f11};
    VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .pNext = &f2,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &qi};
    CHECK_VK(vkCreateDevice(d->phys, &ci, NULL, &d->device));
    /* the layer edited its copy, never the app's structs */
    CHECK(f12.hostQueryReset == VK_FALSE);
    CHECK(ci.enabledExtensionCount == 0);
    volkLoadDevice(d->device);
    VkDeviceQueueInfo2 q2 = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_INFO_2,
                             .queueFamilyIndex = d->family};
    vkGetDeviceQueue2(d->device, &q2, &d->queue);
}

static void name_pipeline(app *p, VkPipeline pl, const char *name)
{
    VkDebugUtilsObjectNameInfoEXT ni = {.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT,
                                        .objectType = VK_OBJECT_TYPE_PIPELINE,
                                        .objectHandle = (uint64_t)pl,
                                        .pObjectName = name};
    CHECK_VK(vkSetDebugUtilsObjectNameEXT(p->dev.device, &ni));
}

static void begin(VkCommandBuffer c, VkCommandBufferUsageFlags flags,
                  const VkCommandBufferInheritanceInfo *inh)
{
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = flags,
                                   .pInheritanceInfo = inh};
    CHECK_VK(vkBeginCommandBuffer(c, &bi));
}

static void dispatches(app *p, VkCommandBuffer c, vku_busy *b, int k)
{
    for (int i = 0; i < k; i++) {
        vku_busy_record(&p->dev, b, c, 20);
        vku_compute_barrier(c);
    }
}

static void record_a(app *p, bool with_secondary)
{
    begin(p->a, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, NULL);
    VkDebugUtilsLabelEXT l = {.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
                              .pLabelName = "lbl"};
    vkCmdBeginDebugUtilsLabelEXT(p->a, &l);
    dispatches(p, p->a, &p->named, K1);
    vkCmdEndDebugUtilsLabelEXT(p->a);
    dispatches(p, p->a, &p->named, K2);
    dispatches(p, p->a, &p->plain, K3);
    if (with_secondary) {
        vkCmdExecuteCommands(p->a, 1, &p->sec);
        vku_compute_barrier(p->a);
    }
    CHECK_VK(vkEndCommandBuffer(p->a));
}

static void submit(app *p, VkCommandBuffer c, VkFence f, bool use2)
{
    if (use2) {
        VkCommandBufferSubmitInfo cbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
                                         .commandBuffer = c};
        VkSubmitInfo2 si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
                            .commandBufferInfoCount = 1,
                            .pCommandBufferInfos = &cbi};
        CHECK_VK(vkQueueSubmit2(p->dev.queue, 1, &si, f));
    } else {
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = c != VK_NULL_HANDLE ? 1u : 0u,
                           .pCommandBuffers = &c};
        CHECK_VK(vkQueueSubmit(p->dev.queue, c != VK_NULL_HANDLE ? 1u : 0u, &si, f));
    }
}

static void run_app(app *p)
{
    create_instance(p);
    list_only_instance();
    create_device(p);
    vku_device *d = &p->dev;
    CHECK_VK(vku_busy_create(d, BUSY_COUNT, &p->named));
    CHECK_VK(vku_busy_create(d, BUSY_COUNT, &p->plain));
    name_pipeline(p, p->named.pipeline, "named_pipe");

    if (is("below") || is("off")) {
        /* ours is the first layer: the app gets our vkCmdDispatch, or the
         * next layer's when the layer is off */
        Dl_info info;
        PFN_vkVoidFunction f = vkGetDeviceProcAddr(d->device, "vkCmdDispatch");
        CHECK(f != NULL && dladdr((void *)f, &info) != 0);
        bool ours = info.dli_fname != NULL && strstr(info.dli_fname, "VkLayer_vkprof") != NULL;
        CHECK(ours == is("below"));
        /* what no layer below has stays NULL */
        CHECK(vkGetDeviceProcAddr(d->device, "vkCmdNoSuchFunctionVKPROF") == NULL);
    }

    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = d->family};
    CHECK_VK(vkCreateCommandPool(d->device, &pci, NULL, &p->pool));
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = p->pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    CHECK_VK(vkAllocateCommandBuffers(d->device, &cai, &p->a));
    CHECK_VK(vkCreateCommandPool(d->device, &pci, NULL, &p->pool2));
    cai.commandPool = p->pool2;
    CHECK_VK(vkAllocateCommandBuffers(d->device, &cai, &p->b));
    CHECK_VK(vkAllocateCommandBuffers(d->device, &cai, &p->sim));
    cai.level = VK_COMMAND_BUFFER_LEVEL_SECONDARY;
    CHECK_VK(vkAllocateCommandBuffers(d->device, &cai, &p->sec));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    CHECK_VK(vkCreateFence(d->device, &fci, NULL, &p->fa));
    CHECK_VK(vkCreateFence(d->device, &fci, NULL, &p->fb));
    CHECK_VK(vkCreateFence(d->device, &fci, NULL, &p->fc));

    bool full = !is("sample"); /* sample: one submit per token, buffer a alone */
    if (full) {
        VkCommandBufferInheritanceInfo inh = {
            .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO};
        begin(p->sec, 0, &inh);
        dispatches(p, p->sec, &p->plain, K5);
        CHECK_VK(vkEndCommandBuffer(p->sec));
        begin(p->b, 0, NULL);
        dispatches(p, p->b, &p->plain, K4);
        CHECK_VK(vkEndCommandBuffer(p->b));
        /* simultaneous use, in two batches of one submit: host query resets
         * would reset queries in use, so the layer times it in a second
         * context that resets them in the buffer */
        begin(p->sim, VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT, NULL);
        dispatches(p, p->sim, &p->plain, 1);
        CHECK_VK(vkEndCommandBuffer(p->sim));
        VkSubmitInfo two[2] = {{.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                                .commandBufferCount = 1,
                                .pCommandBuffers = &p->sim},
                               {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                                .commandBufferCount = 1,
                                .pCommandBuffers = &p->sim}};
        CHECK_VK(vkQueueSubmit(d->queue, 2, two, p->fc));
        CHECK_VK(vkWaitForFences(d->device, 1, &p->fc, VK_TRUE, UINT64_MAX));
        CHECK_VK(vkResetFences(d->device, 1, &p->fc));
    }
    for (int t = 0; t < T; t++) {
        if (is("steplabel")) {
            VkDebugUtilsLabelEXT l = {.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
                                      .pLabelName = "tok"};
            vkQueueInsertDebugUtilsLabelEXT(d->queue, &l);
        }
        /* a: re-recorded every token, the pool reset first */
        CHECK_VK(vkResetCommandPool(d->device, p->pool, 0));
        record_a(p, full);
        submit(p, p->a, p->fa, false);
        CHECK_VK(vkWaitForFences(d->device, 1, &p->fa, VK_TRUE, UINT64_MAX));
        CHECK_VK(vkResetFences(d->device, 1, &p->fa));
        if (!full) {
            continue;
        }
        /* b: submitted with vkQueueSubmit2 where synchronization2 is on; a spin */
        submit(p, p->b, p->fb, p->sync2);
        VkResult r;
        while ((r = vkGetFenceStatus(d->device, p->fb)) == VK_NOT_READY) {
        }
        CHECK_VK(r);
        CHECK_VK(vkGetFenceStatus(d->device, p->fb)); /* polled again: no second collect */
        CHECK_VK(vkResetFences(d->device, 1, &p->fb));
        /* an empty submit that only signals a fence: no work, no step */
        submit(p, VK_NULL_HANDLE, p->fc, false);
        CHECK_VK(vkWaitForFences(d->device, 1, &p->fc, VK_TRUE, UINT64_MAX));
        CHECK_VK(vkResetFences(d->device, 1, &p->fc));
    }
    CHECK_VK(vkDeviceWaitIdle(d->device));
    vkDestroyFence(d->device, p->fa, NULL);
    vkDestroyFence(d->device, p->fb, NULL);
    vkDestroyFence(d->device, p->fc, NULL);
    vkDestroyCommandPool(d->device, p->pool, NULL);
    vkDestroyCommandPool(d->device, p->pool2, NULL);
    vku_busy_destroy(d, &p->named);
    vku_busy_destroy(d, &p->plain);
    vkDestroyDevice(d->device, NULL);
    vkDestroyDebugUtilsMessengerEXT(p->inst, p->messenger, NULL);
    vkDestroyInstance(p->inst, NULL);
}

/* ---- the summary ---------------------------------------------------------- */

static cJSON *load_json(const char *path)
{
    char *text = th_read_file(path);
    if (text == NULL) {
        fprintf(stderr, "cannot read %s\n", path);
        return NULL;
    }
    cJSON *j = cJSON_Parse(text);
    free(text);
    return j;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1.0;
}

static uint64_t phase_count(const cJSON *snap, const char *name)
{
    const cJSON *ph;
    cJSON_ArrayForEach(ph, cJSON_GetObjectItemCaseSensitive(snap, "phases"))
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(ph, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0) {
            return (uint64_t)num(ph, "count");
        }
    }
    return UINT64_MAX;
}

static const char *arg_of(const cJSON *ev, const char *key)
{
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ev, "args"), key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool arg_is(const cJSON *ev, const char *key, const char *want)
{
    const char *v = arg_of(ev, key);
    if (v == NULL || strcmp(v, want) != 0) {
        fprintf(stderr, "args.%s: '%s', expected '%s'\n", key, v ? v : "(none)", want);
        return false;
    }
    return true;
}

/* the number of args besides phase, ns and step */
static int extra_args(const cJSON *ev)
{
    return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ev, "args")) - 3;
}

/* A GPU slice's dispatch args (docs/layer.md): in dispatch mode the group
 * counts and local size of the busy pipelines, no base, no spec; in label
 * mode the "lbl" region's K1 dispatches; in cmdbuf mode a's or b's. */
static void check_args(const cJSON *ev, uint64_t *with_k123, uint64_t *with_k4)
{
    char want[64];
    if (is("label")) {
        snprintf(want, sizeof want, "%d", K1);
        CHECK(arg_is(ev, "dispatches", want));
        CHECK(extra_args(ev) == 1);
    } else if (is("cmdbuf")) {
        const char *v = arg_of(ev, "dispatches");
        CHECK(v != NULL);
        snprintf(want, sizeof want, "%d", K1 + K2 + K3);
        *with_k123 += v != NULL && strcmp(v, want) == 0;
        snprintf(want, sizeof want, "%d", K4);
        *with_k4 += v != NULL && strcmp(v, want) == 0;
        CHECK(extra_args(ev) == 1);
    } else {
        snprintf(want, sizeof want, "%d,1,1", (BUSY_COUNT + BUSY_LOCAL - 1) / BUSY_LOCAL);
        CHECK(arg_is(ev, "groups", want));
        snprintf(want, sizeof want, "%d,1,1", BUSY_LOCAL);
        CHECK(arg_is(ev, "local_size", want));
        CHECK(extra_args(ev) == 2); /* no base, no spec */
    }
}

/* every GPU slice lies after the start of a submit span and before the end
 * of a wait span that ends after that submit */
static void check_trace(const char *path, uint64_t expect_gpu)
{
    cJSON *tr = load_json(path);
    CHECK(tr != NULL);
    if (tr == NULL) {
        return;
    }
    const cJSON *ev, *events = cJSON_GetObjectItemCaseSensitive(tr, "traceEvents");
    uint64_t gpu = 0, submits = 0, waits = 0, bad = 0, with_k123 = 0, with_k4 = 0;
    cJSON_ArrayForEach(ev, events)
    {
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(ev, "cat");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(ev, "name");
        if (!cJSON_IsString(cat) || !cJSON_IsString(name)) {
            continue;
        }
        if (strcmp(cat->valuestring, "host") == 0) {
            submits += strcmp(name->valuestring, "vkQueueSubmit") == 0;
            waits += strncmp(name->valuestring, "vkWait", 6) == 0 ||
                     strcmp(name->valuestring, "vkGetFenceStatus") == 0;
        }
        if (strcmp(cat->valuestring, "gpu") != 0) {
            continue;
        }
        gpu++;
        check_args(ev, &with_k123, &with_k4);
        double g0 = num(ev, "ts"), g1 = g0 + num(ev, "dur");
        double sub = -1.0, wait = -1.0;
        const cJSON *h;
        cJSON_ArrayForEach(h, events)
        {
            const cJSON *hc = cJSON_GetObjectItemCaseSensitive(h, "cat");
            const cJSON *hn = cJSON_GetObjectItemCaseSensitive(h, "name");
            if (!cJSON_IsString(hc) || strcmp(hc->valuestring, "host") != 0 ||
                !cJSON_IsString(hn)) {
                continue;
            }
            double h0 = num(h, "ts"), h1 = h0 + num(h, "dur");
            if (strcmp(hn->valuestring, "vkQueueSubmit") == 0 && h0 <= g0 && h0 > sub) {
                sub = h0;
            }
            bool is_wait = strncmp(hn->valuestring, "vkWait", 6) == 0 ||
                           strcmp(hn->valuestring, "vkGetFenceStatus") == 0 ||
                           strcmp(hn->valuestring, "vkDeviceWaitIdle") == 0;
            if (is_wait && h1 >= g1 && (wait < 0 || h1 < wait)) {
                wait = h1;
            }
        }
        if (sub < 0 || wait < 0 || wait < sub) {
            bad++;
        }
    }
    CHECK_EQ_U64(gpu, expect_gpu);
    CHECK_EQ_U64(bad, 0);
    if (is("cmdbuf")) {
        /* a's own dispatches (its secondary's are not counted), and b's */
        CHECK_EQ_U64(with_k123, T);
        CHECK_EQ_U64(with_k4, T);
    }
    CHECK(submits > 0 && waits > 0);
    cJSON_Delete(tr);
}

/* ---- case spec: specialisation constants, base and indirect dispatches ---- */

enum {
    SPEC_G0X = 3,
    SPEC_G0Y = 2,
    SPEC_BASE_X = 1,
    SPEC_BASE_Y = 2,
    SPEC_G1X = 2,
    SPEC_IX = 4,
    SPEC_PLAIN_GX = 5
};

static void run_spec(app *p)
{
    create_instance(p);
    create_device(p);
    vku_device *d = &p->dev;
    VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                    .codeSize = sizeof spec_args_spv,
                                    .pCode = spec_args_spv};
    VkShaderModule mod;
    CHECK_VK(vkCreateShaderModule(d->device, &smi, NULL, &mod));
    VkPipelineLayoutCreateInfo lci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    VkPipelineLayout layout;
    CHECK_VK(vkCreatePipelineLayout(d->device, &lci, NULL, &layout));
    uint32_t vals[3] = {SPEC_X, SPEC_SCALE, 0};
    memcpy(&vals[2], &SPEC_BIAS, 4);
    const VkSpecializationMapEntry me[3] = {{0, 0, 4}, {1, 4, 4}, {2, 8, 4}};
    const VkSpecializationInfo si = {3, me, sizeof vals, vals};
    VkComputePipelineCreateInfo ci[2];
    for (int i = 0; i < 2; i++) {
        ci[i] = (VkComputePipelineCreateInfo){
            .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
            .flags = i == 0 ? VK_PIPELINE_CREATE_DISPATCH_BASE_BIT : 0,
            .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                      .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                      .module = mod,
                      .pName = "main",
                      .pSpecializationInfo = i == 0 ? &si : NULL},
            .layout = layout};
    }
    VkPipeline pl[2];
    CHECK_VK(vkCreateComputePipelines(d->device, VK_NULL_HANDLE, 2, ci, NULL, pl));
    /* the indirect dispatch's counts, in a host-visible buffer */
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = sizeof(VkDispatchIndirectCommand),
                              .usage = VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT};
    VkBuffer ib;
    CHECK_VK(vkCreateBuffer(d->device, &bci, NULL, &ib));
    VkMemoryRequirements mr;
    vkGetBufferMemoryRequirements(d->device, ib, &mr);
    uint32_t type = UINT32_MAX;
    const VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t t = 0; t < d->mem.memoryTypeCount && type == UINT32_MAX; t++) {
        if ((mr.memoryTypeBits & (1u << t)) &&
            (d->mem.memoryTypes[t].propertyFlags & want) == want) {
            type = t;
        }
    }
    CHECK(type != UINT32_MAX);
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = mr.size,
                                .memoryTypeIndex = type};
    VkDeviceMemory mem;
    CHECK_VK(vkAllocateMemory(d->device, &mai, NULL, &mem));
    CHECK_VK(vkBindBufferMemory(d->device, ib, mem, 0));
    void *map = NULL;
    CHECK_VK(vkMapMemory(d->device, mem, 0, VK_WHOLE_SIZE, 0, &map));
    const VkDispatchIndirectCommand ind = {SPEC_IX, 1, 1};
    memcpy(map, &ind, sizeof ind);
    vkUnmapMemory(d->device, mem);

    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .queueFamilyIndex = d->family};
    CHECK_VK(vkCreateCommandPool(d->device, &pci, NULL, &p->pool));
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = p->pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    CHECK_VK(vkAllocateCommandBuffers(d->device, &cai, &p->a));
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    CHECK_VK(vkCreateFence(d->device, &fci, NULL, &p->fa));
    begin(p->a, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, NULL);
    vkCmdBindPipeline(p->a, VK_PIPELINE_BIND_POINT_COMPUTE, pl[0]);
    vkCmdDispatch(p->a, SPEC_G0X, SPEC_G0Y, 1);
    vkCmdDispatchBase(p->a, SPEC_BASE_X, SPEC_BASE_Y, 0, SPEC_G1X, 1, 1);
    vkCmdDispatchIndirect(p->a, ib, 0);
    vkCmdBindPipeline(p->a, VK_PIPELINE_BIND_POINT_COMPUTE, pl[1]);
    vkCmdDispatch(p->a, SPEC_PLAIN_GX, 1, 1);
    CHECK_VK(vkEndCommandBuffer(p->a));
    submit(p, p->a, p->fa, false);
    CHECK_VK(vkWaitForFences(d->device, 1, &p->fa, VK_TRUE, UINT64_MAX));
    CHECK_VK(vkDeviceWaitIdle(d->device));
    vkDestroyFence(d->device, p->fa, NULL);
    vkDestroyCommandPool(d->device, p->pool, NULL);
    vkDestroyBuffer(d->device, ib, NULL);
    vkFreeMemory(d->device, mem, NULL);
    vkDestroyPipeline(d->device, pl[0], NULL);
    vkDestroyPipeline(d->device, pl[1], NULL);
    vkDestroyPipelineLayout(d->device, layout, NULL);
    vkDestroyShaderModule(d->device, mod, NULL);
    vkDestroyDevice(d->device, NULL);
    vkDestroyDebugUtilsMessengerEXT(p->inst, p->messenger, NULL);
    vkDestroyInstance(p->inst, NULL);
}

/* The four slices' args, each as the app recorded it. */
static void check_spec(void)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/test_layer_basic-%ld.summary.json", out_dir, g_child);
    cJSON *s = load_json(path);
    CHECK(s != NULL);
    const cJSON *trace = cJSON_GetObjectItemCaseSensitive(s, "trace");
    CHECK(cJSON_IsString(trace));
    cJSON *tr = NULL;
    if (cJSON_IsString(trace)) {
        snprintf(path, sizeof path, "%s/%s", out_dir, trace->valuestring);
        tr = load_json(path);
    }
    CHECK(tr != NULL);
    uint32_t bias;
    memcpy(&bias, &SPEC_BIAS, 4);
    char spec[64], local[32], local_default[32], g0[32], g1[32], base[32], gp[32];
    snprintf(spec, sizeof spec, "0=%d,1=%d,2=%u", SPEC_X, SPEC_SCALE, bias);
    snprintf(local, sizeof local, "%d,%d,%d", SPEC_X, SPEC_Y, SPEC_Z);
    snprintf(local_default, sizeof local_default, "%d,%d,%d", SPEC_X_DEFAULT, SPEC_Y, SPEC_Z);
    snprintf(g0, sizeof g0, "%d,%d,1", SPEC_G0X, SPEC_G0Y);
    snprintf(g1, sizeof g1, "%d,1,1", SPEC_G1X);
    snprintf(base, sizeof base, "%d,%d,0", SPEC_BASE_X, SPEC_BASE_Y);
    snprintf(gp, sizeof gp, "%d,1,1", SPEC_PLAIN_GX);
    int seen[4] = {0, 0, 0, 0}, gpu = 0;
    const cJSON *ev;
    cJSON_ArrayForEach(ev, cJSON_GetObjectItemCaseSensitive(tr, "traceEvents"))
    {
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(ev, "cat");
        if (!cJSON_IsString(cat) || strcmp(cat->valuestring, "gpu") != 0) {
            continue;
        }
        gpu++;
        const char *g = arg_of(ev, "groups");
        CHECK(g != NULL);
        if (g == NULL) {
            continue;
        }
        if (strcmp(g, g0) == 0) {
            seen[0]++;
            CHECK(arg_is(ev, "local_size", local) && arg_is(ev, "spec", spec));
            CHECK(extra_args(ev) == 3);
        } else if (strcmp(g, g1) == 0) {
            seen[1]++;
            CHECK(arg_is(ev, "base", base) && arg_is(ev, "local_size", local) &&
                  arg_is(ev, "spec", spec));
            CHECK(extra_args(ev) == 4);
        } else if (strcmp(g, "indirect") == 0) { /* the counts are not known on the host */
            seen[2]++;
            CHECK(arg_is(ev, "local_size", local) && arg_is(ev, "spec", spec));
            CHECK(extra_args(ev) == 3);
        } else if (strcmp(g, gp) == 0) {
            seen[3]++;
            CHECK(arg_is(ev, "local_size", local_default));
            CHECK(extra_args(ev) == 2); /* no specialisation info: no spec */
        } else {
            fprintf(stderr, "unexpected groups '%s'\n", g);
            CHECK(false);
        }
    }
    CHECK(gpu == 4);
    for (int i = 0; i < 4; i++) {
        CHECK(seen[i] == 1);
    }
    cJSON_Delete(tr);
    cJSON_Delete(s);
}

static void check_summary(void)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/test_layer_basic-%ld.summary.json", out_dir, g_child);
    cJSON *s = load_json(path);
    CHECK(s != NULL);
    if (s == NULL) {
        return;
    }
    CHECK_EQ_U64(num(s, "vkprof_layer_summary"), 2);
    CHECK_EQ_U64(num(s, "pid"), (uint64_t)g_child);
    /* it exited: the layer finished it, and removed its spools */
    const cJSON *ended = cJSON_GetObjectItemCaseSensitive(s, "ended");
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(ended, "finished_by");
    CHECK(cJSON_IsString(by) && strcmp(by->valuestring, "layer") == 0);
    char spools[1400];
    snprintf(spools, sizeof spools, "%s/.vkprof/test_layer_basic-%ld", out_dir, g_child);
    CHECK(access(spools, F_OK) != 0);
    const cJSON *active = cJSON_GetObjectItemCaseSensitive(s, "active");
    CHECK(cJSON_IsBool(active) && cJSON_IsTrue(active) == !is("off"));
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(s, "mode");
    CHECK(cJSON_IsString(mode) && strcmp(mode->valuestring, is("label")    ? "label"
                                                            : is("cmdbuf") ? "cmdbuf"
                                                                           : "dispatch") == 0);
    CHECK_EQ_U64(num(s, "sample_every"), is("sample") ? 2 : 1);
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(s, "devices");
    CHECK(cJSON_GetArraySize(devs) == 1);
    const cJSON *dev = cJSON_GetArrayItem(devs, 0);
    const cJSON *ctxs = cJSON_GetObjectItemCaseSensitive(dev, "contexts");
    const cJSON *fams = cJSON_GetObjectItemCaseSensitive(dev, "queue_families");
    CHECK(cJSON_GetArraySize(fams) == 1);
    const cJSON *fam = cJSON_GetArrayItem(fams, 0);
    const cJSON *timed = cJSON_GetObjectItemCaseSensitive(fam, "timed");
    CHECK(cJSON_IsBool(timed) && cJSON_IsTrue(timed) == !is("off"));
    const cJSON *trace = cJSON_GetObjectItemCaseSensitive(s, "trace");
    const cJSON *fd = cJSON_GetObjectItemCaseSensitive(fam, "dispatches");
    if (is("off")) {
        CHECK(cJSON_GetArraySize(ctxs) == 0);
        CHECK(cJSON_IsNull(trace));
        cJSON_Delete(s);
        return;
    }
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dev, "calibrated_timestamps")));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dev, "host_query_reset")));
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dev, "synchronization2")) == is("below"));
    bool full = !is("sample");
    uint64_t steps = is("steplabel") ? T : full ? 2 * T + 1 : T;
    CHECK_EQ_U64(num(dev, "steps"), steps);
    /* the family's context, and (full runs) its simultaneous-use buffers' */
    CHECK(cJSON_GetArraySize(ctxs) == (full ? 2 : 1));
    const cJSON *ctx = cJSON_GetArrayItem(ctxs, 0);
    CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(ctx, "simultaneous_use")));
    const cJSON *snap = cJSON_GetObjectItemCaseSensitive(ctx, "snapshot");
    const cJSON *tm = cJSON_GetObjectItemCaseSensitive(snap, "timing");
    const cJSON *lost = cJSON_GetObjectItemCaseSensitive(tm, "lost");
    CHECK_EQ_U64(num(tm, "scopes_dropped"), 0);
    CHECK_EQ_U64(num(tm, "scopes_pending"), 0);
    CHECK_EQ_U64(num(tm, "samples"), num(tm, "scopes_collected"));
    CHECK_EQ_U64(num(lost, "overwritten") + num(lost, "reset") + num(lost, "never_submitted"), 0);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tm, "host_reset")));

    uint64_t hash = vkl_spirv_hash(test_busy_spv, sizeof test_busy_spv / 4);
    char hname[32];
    vkl_hash_name(hash, hname);
    /* the plain pipeline: by the map (above); by its default name with the
     * names from loaded files off (below); else after busy_spv, the symbol
     * that holds its code in this executable (the layer finds it there) */
    const char *plain = is("above") ? "mapped_pipe" : is("below") ? hname : "busy";
    uint64_t recorded =
        full ? (uint64_t)(K1 + K2 + K3) * T + K4 + K5 + 1 : (uint64_t)(K1 + K2 + K3) * T;
    CHECK_EQ_U64(num(fd, "recorded"), recorded);
    const cJSON *untimed = cJSON_GetObjectItemCaseSensitive(fd, "recorded_untimed");
    CHECK_EQ_U64(num(untimed, "simultaneous_use"), 0);
    CHECK_EQ_U64(num(untimed, "phase_table_full"), 0);
    /* every dispatch executed is timed or untimed, by reason */
    uint64_t exec_untimed = 0;
    const cJSON *eu;
    cJSON_ArrayForEach(eu, cJSON_GetObjectItemCaseSensitive(fd, "executed_untimed"))
    {
        exec_untimed += (uint64_t)eu->valuedouble;
    }
    CHECK_EQ_U64(num(fd, "executed_timed") + exec_untimed, num(fd, "executed"));
    if (full) {
        /* run twice in one submit, over one set of queries that each
         * execution resets in the buffer: which run's values are read is
         * ambiguous, so both samples are counted as lost (overwritten) */
        const cJSON *sc = cJSON_GetArrayItem(ctxs, 1);
        CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sc, "simultaneous_use")));
        const cJSON *ss = cJSON_GetObjectItemCaseSensitive(sc, "snapshot");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(ss, "timing");
        uint64_t n = is("label") ? 0 : 2;
        CHECK_EQ_U64(num(st, "samples"), n);
        CHECK_EQ_U64(num(st, "scopes_collected"), 0);
        CHECK_EQ_U64(num(cJSON_GetObjectItemCaseSensitive(st, "lost"), "overwritten"), n);
        CHECK_EQ_U64(num(st, "scopes_pending"), 0);
        CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(st, "host_reset")));
    }
    if (is("cmdbuf")) {
        /* each execution of a primary: a (re-recorded) and b (re-submitted)
         * every token; the secondary runs inside a's scope */
        CHECK_EQ_U64(phase_count(snap, "command_buffer"), 2 * T);
        CHECK_EQ_U64(phase_count(snap, "lbl"), UINT64_MAX);
        /* every dispatch inside its buffer's scope, but a secondary's (no region) */
        CHECK_EQ_U64(num(untimed, "no_region"), num(fd, "recorded") - num(fd, "recorded_timed"));
        CHECK_EQ_U64(num(tm, "scopes_collected"), 2 * T);
    } else if (is("label")) {
        CHECK_EQ_U64(phase_count(snap, "lbl"), T);
        CHECK_EQ_U64(phase_count(snap, "named_pipe"), UINT64_MAX); /* never registered */
        /* inside the "lbl" region, or no region */
        CHECK_EQ_U64(num(fd, "recorded_timed"), (uint64_t)K1 * T);
        CHECK_EQ_U64(num(tm, "scopes_collected"), T);
    } else {
        /* sampled: 1 submit window in 2 on average, chosen by the layer's
         * mix of the window's number (index.h): one submit per token */
        uint64_t tokens = 0;
        for (int t = 0; t < T; t++) {
            tokens += !is("sample") || lyr_sampled((uint64_t)t, 2);
        }
        CHECK(tokens > 0 && (tokens < T || !is("sample")));
        CHECK_EQ_U64(phase_count(snap, "lbl"), K1 * tokens);
        CHECK_EQ_U64(phase_count(snap, "named_pipe"), K2 * tokens);
        uint64_t plain_n = full ? (uint64_t)(K3 + K4 + K5) * T : (uint64_t)K3 * tokens;
        CHECK_EQ_U64(phase_count(snap, plain), plain_n);
        uint64_t timed_rec =
            full ? (uint64_t)(K1 + K2 + K3) * T + K4 + K5 + 1 : (uint64_t)(K1 + K2 + K3) * tokens;
        CHECK_EQ_U64(num(fd, "recorded_timed"), timed_rec);
        if (is("sample")) {
            /* the other tokens' recordings: untimed, not sampled */
            CHECK_EQ_U64(num(untimed, "not_sampled"), (uint64_t)(K1 + K2 + K3) * (T - tokens));
        }
        CHECK_EQ_U64(num(tm, "scopes_collected"), (K1 + K2) * tokens + plain_n);
    }
    CHECK(cJSON_IsString(trace));
    if (cJSON_IsString(trace)) {
        char tpath[1400];
        snprintf(tpath, sizeof tpath, "%s/%s", out_dir, trace->valuestring);
        check_trace(tpath, (uint64_t)num(tm, "scopes_collected"));
    }
    cJSON_Delete(s);
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) {
        n++;
    }
    return n;
}

/* What a loader that reads no manifest (Android's) sees: the library's own
 * exports, called through dlopen, no loader and no instance involved. */
static int introspect(const char *layer_dir)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/libVkLayer_vkprof.so", layer_dir);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != NULL);
    if (lib == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return th_done();
    }
    PFN_vkEnumerateInstanceLayerProperties eil =
        (PFN_vkEnumerateInstanceLayerProperties)dlsym(lib, "vkEnumerateInstanceLayerProperties");
    PFN_vkEnumerateInstanceExtensionProperties eie =
        (PFN_vkEnumerateInstanceExtensionProperties)dlsym(lib,
                                                          "vkEnumerateInstanceExtensionProperties");
    PFN_vkEnumerateDeviceLayerProperties edl =
        (PFN_vkEnumerateDeviceLayerProperties)dlsym(lib, "vkEnumerateDeviceLayerProperties");
    PFN_vkEnumerateDeviceExtensionProperties ede = (PFN_vkEnumerateDeviceExtensionProperties)dlsym(
        lib, "vkEnumerateDeviceExtensionProperties");
    CHECK(eil != NULL && eie != NULL && edl != NULL && ede != NULL);
    if (eil == NULL || eie == NULL || edl == NULL || ede == NULL) {
        return th_done();
    }
    uint32_t n = 7;
    CHECK_VK(eil(&n, NULL));
    CHECK_EQ_U64(n, 1);
    VkLayerProperties lp[2];
    n = 0;
    CHECK(eil(&n, lp) == VK_INCOMPLETE);
    CHECK_EQ_U64(n, 0);
    n = 2;
    memset(lp, 0, sizeof lp);
    CHECK_VK(eil(&n, lp));
    CHECK_EQ_U64(n, 1);
    CHECK(strcmp(lp[0].layerName, "VK_LAYER_vkprof") == 0);
    CHECK(lp[0].implementationVersion == vkprof_version());
    CHECK(lp[0].description[0] != '\0');
    n = 2;
    CHECK_VK(edl(VK_NULL_HANDLE, &n, lp));
    CHECK_EQ_U64(n, 1);
    CHECK(strcmp(lp[0].layerName, "VK_LAYER_vkprof") == 0);
    /* no extension of its own; another layer's name is not ours */
    n = 5;
    CHECK_VK(eie("VK_LAYER_vkprof", &n, NULL));
    CHECK_EQ_U64(n, 0);
    CHECK(eie("VK_LAYER_KHRONOS_validation", &n, NULL) == VK_ERROR_LAYER_NOT_PRESENT);
    CHECK(eie(NULL, &n, NULL) == VK_ERROR_LAYER_NOT_PRESENT);
    n = 5;
    CHECK_VK(ede(VK_NULL_HANDLE, "VK_LAYER_vkprof", &n, NULL));
    CHECK_EQ_U64(n, 0);
    CHECK(ede(VK_NULL_HANDLE, NULL, &n, NULL) == VK_ERROR_LAYER_NOT_PRESENT);
    printf("introspect: %s %s (version %u): %s\n", lp[0].layerName, path,
           lp[0].implementationVersion, lp[0].description);
    /* the library stays loaded (-z nodelete); dlclose only drops the handle */
    dlclose(lib);
    return th_done();
}

/* The cost probe's choice of blocks (index.h, lyr_cost_off): the first
 * pair of blocks on; in every later pair exactly one block off; which one
 * varies (no fixed alternation an app's steps could line up with); block 0:
 * no probe. */
static void cost_blocks_check(void)
{
    for (uint32_t b = 1; b <= 16; b *= 4) {
        uint64_t first_off = 0;
        for (uint64_t s = 0; s < 2 * b; s++) {
            CHECK(!lyr_cost_off(s, b));
        }
        for (uint64_t pair = 1; pair <= 1000; pair++) {
            uint64_t off = 0;
            for (uint64_t s = 2 * b * pair; s < 2 * b * (pair + 1); s++) {
                off += lyr_cost_off(s, b);
                /* a block is all on or all off */
                CHECK(lyr_cost_off(s, b) == lyr_cost_off(s - s % b, b));
            }
            CHECK_EQ_U64(off, b);
            first_off += lyr_cost_off(2 * b * pair, b);
        }
        CHECK(first_off > 400 && first_off < 600);
    }
    for (uint64_t s = 0; s < 100; s++) {
        CHECK(!lyr_cost_off(s, 0));
    }
}

int main(int argc, char **argv)
{
    vku_keep_driver_mapped(); /* ASan: leaks of lavapipe stay nameable */
    if (argc != 4) {
        fprintf(stderr, "usage: test_layer_basic CASE LAYER_DIR OUT_DIR\n");
        return 2;
    }
    tcase = argv[1];
    th_case = tcase;
    snprintf(out_dir, sizeof out_dir, "%s/%s", argv[3], tcase);
    char cmd[2200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", out_dir, out_dir);
    if (system(cmd) != 0) {
        return 2;
    }
    if (is("introspect")) {
        cost_blocks_check();
        return introspect(argv[2]);
    }
    {
        /* ours first, and a path already there kept after it (the machine's
         * own validation layer may be found only through it) */
        const char *had = getenv("VK_ADD_LAYER_PATH");
        char lp[4200];
        snprintf(lp, sizeof lp, "%s%s%s", argv[2], had != NULL && had[0] ? ":" : "",
                 had != NULL ? had : "");
        setenv("VK_ADD_LAYER_PATH", lp, 1);
    }
    setenv("VKPROF_LAYER_OUTPUT_DIR", out_dir, 1);
    unsetenv("VK_INSTANCE_LAYERS");
    if (is("above")) {
        char map[1400];
        snprintf(map, sizeof map, "%s/names.txt", out_dir);
        FILE *f = fopen(map, "w");
        CHECK(f != NULL);
        fprintf(f, "# the plain busy pipeline\n%016llx mapped_pipe\n",
                (unsigned long long)vkl_spirv_hash(test_busy_spv, sizeof test_busy_spv / 4));
        fclose(f);
        setenv("VKPROF_LAYER_NAMES", map, 1);
    }
    if (is("off")) {
        setenv("VKPROF_LAYER", "off", 1);
    }
    if (is("below")) {
        setenv("VKPROF_LAYER_AUTO_NAMES", "off", 1);
    }
    if (is("sample")) {
        setenv("VKPROF_LAYER_SAMPLE", "2", 1);
    }
    if (is("label")) {
        setenv("VKPROF_LAYER_MODE", "label", 1);
    }
    if (is("cmdbuf")) {
        setenv("VKPROF_LAYER_MODE", "cmdbuf", 1);
    }
    if (is("steplabel")) {
        setenv("VKPROF_LAYER_STEPS", "label:tok", 1);
    }
    char errpath[1400];
    int saved = -1;
    if (is("garbage")) {
        setenv("VKPROF_LAYER", "maybe", 1);
        setenv("VKPROF_LAYER_MODE", "fast", 1);
        setenv("VKPROF_LAYER_SAMPLE", "0", 1);
        setenv("VKPROF_LAYER_STEPS", "sometimes", 1);
        setenv("VKPROF_LAYER_AUTO_NAMES", "perhaps", 1);
        setenv("VKPROF_LAYER_NAMES", "/nonexistent/vkprof-names.txt", 1);
        snprintf(errpath, sizeof errpath, "%s/stderr.txt", out_dir);
        fflush(stderr);
        saved = dup(2);
        FILE *e = freopen(errpath, "w", stderr);
        CHECK(e != NULL);
    }
    /* the app in a child: the layer writes its summary and trace at its exit */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        CHECK_VK(volkInitialize());
        app p;
        memset(&p, 0, sizeof p);
        if (is("spec")) {
            run_spec(&p);
        } else {
            run_app(&p);
        }
        CHECK_EQ_U64(messages, 0);
        fflush(NULL);
        exit(th_failures > 0 ? 1 : 0);
    }
    int ws = 0;
    CHECK(pid > 0 && waitpid(pid, &ws, 0) == pid);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    g_child = (long)pid;
    if (is("spec")) {
        check_spec();
        return th_done();
    }
    if (saved >= 0) {
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        char *text = th_read_file(errpath);
        CHECK(text != NULL);
        if (text != NULL) {
            fputs(text, stdout);
            CHECK(count_of(text, "VKPROF_LAYER='maybe'") == 1);
            CHECK(count_of(text, "VKPROF_LAYER_MODE='fast'") == 1);
            CHECK(count_of(text, "VKPROF_LAYER_SAMPLE='0'") == 1);
            CHECK(count_of(text, "VKPROF_LAYER_STEPS='sometimes'") == 1);
            CHECK(count_of(text, "VKPROF_LAYER_AUTO_NAMES='perhaps'") == 1);
            CHECK(count_of(text, "VKPROF_LAYER_NAMES") == 1);
            free(text);
        }
    }
    check_summary();
    return th_done();
}
