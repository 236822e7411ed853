/* linked_app: a plain Vulkan compute app LINKED TO THE LOADER (cc app.c
 * -lvulkan), as most apps are (llama.cpp's own llama-cli/llama-server in a
 * default build). The loader's vkGetInstanceProcAddr is then in the global
 * symbol scope, which the project's other test apps (volk: dlopen of the
 * loader) never show. It calls no vkprof function. Compiled as C
 * (linked_app) and as C++ (linked_app_cxx), for the tests of the vkprof
 * layer on such apps and on bad days: signal deaths at several points,
 * fork, exec, a server stopped with Ctrl-C.
 *
 *   linked_app [--iterations N] [--dispatches D] [--progress FILE]
 *              [--die WHAT --die-at POINT --die-iter I] [--fork] [--exec PROG ARGS...]
 *              [--serve] [--validation] [--no-device] [--sleep-ms MS]
 *              [--pipelines N] [--abandon] [--time-record] [--resubmit]
 *
 * Each iteration records one one-time-submit command buffer of D dispatches
 * (pipelines "alpha" and "beta" alternating, a barrier between), submits it
 * with a fence and waits for the fence: one step for the layer. After each
 * wait it rewrites --progress FILE with the iterations completed and the
 * dispatches of each pipeline so far ("iterations 3 alpha 6 beta 6\n"), so a
 * test knows what was timed before a death.
 *
 * --die WHAT: how the process ends: exit, _exit, abort, segv, sigint,
 * sigterm, sigkill (a signal the process sends itself, its default action);
 * --die-at POINT: where: start (before any Vulkan call), instance (after
 * vkCreateInstance), device (after vkCreateDevice), submitted (iteration
 * --die-iter submitted, its fence not waited for), waited (iteration
 * --die-iter waited for; the default).
 * --serve: run iterations until SIGINT or SIGTERM, which the app catches as a
 * server does: it finishes the iteration, tears everything down and exits 0.
 * --fork: after the first iteration, fork a child that does its own
 * iterations on its own instance and device (Vulkan objects do not cross a
 * fork), while the parent goes on; the parent waits for it. The child's
 * progress file is FILE.child. (Vulkan in the child of a process that
 * has a device hangs NVIDIA's driver, with or without any layer.)
 * --fork-novk: the same fork, but the child does no Vulkan: it sleeps
 * 100 ms and exits with exit(0).
 * --exec PROG ARGS...: after the iterations and without tearing anything
 * down, exec PROG (the process image is replaced: no destructor runs).
 * --validation: the Khronos validation layer on, any message fails the run.
 * --no-device: an instance only.
 * --pipelines N: N more pipelines (named p0, p1, ...), each dispatched once
 * per iteration after the D dispatches (not in the progress file's counts).
 * --abandon: at teardown, a buffer begun and recorded is freed without a
 * submit (as a WebGPU runtime does at device destroy).
 * --interleave: at teardown, two buffers recorded at once (begun together,
 * ended in that order) and a third ended on another thread, submitted and
 * waited for.
 * --resubmit: record the buffer at the first iteration only, and submit
 * that recording again at every later one (no one-time-submit flag).
 * --time-record: print the host time of recording (vkBeginCommandBuffer
 * to vkEndCommandBuffer) per dispatch, over the iterations after the first,
 * on stdout ("record_ns_per_dispatch X over N dispatches"): what a layer
 * costs the app's recording thread.
 *
 * Exit status: 0; 1 on a Vulkan error or a validation message. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <vulkan/vulkan.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "busy_spv.h"

#define COUNT 256u
/* a Vulkan struct zeroed, with its sType (valid C and C++, warning-free) */
#define INIT(var, stype) (memset(&(var), 0, sizeof(var)), (var).sType = (stype))
#define TIMEOUT_NS UINT64_C(60000000000)

typedef struct app {
    VkInstance inst;
    VkPhysicalDevice phys;
    VkDevice dev;
    VkQueue queue;
    uint32_t family;
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDescriptorSetLayout dsl;
    VkDescriptorPool dpool;
    VkDescriptorSet set;
    VkPipelineLayout layout;
    VkShaderModule module;
    VkPipeline pipe[2];
    VkPipeline *extra;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkCommandBuffer gate_cmd; /* --gate: held on the GPU by `gate` until the host sets it */
    VkEvent gate;
    VkSemaphore timeline; /* --poll: each submit signals the next value */
    uint64_t timeline_value;
    VkDebugUtilsMessengerEXT messenger;
    unsigned long messages;
} app;

static const char *const pipe_names[2] = {"alpha", "beta"};
static unsigned g_extra_pipes; /* --pipelines N: N more, named "p<i>", one dispatch each */
static bool g_abandon;         /* --abandon: a buffer begun, recorded, never submitted, freed */
static bool g_interleave; /* --interleave: two buffers recorded at once, one ended on a thread */
/* --gate: each iteration first submits a buffer that the GPU holds until
 * the host sets an event, then the iteration's own buffer, and only then
 * sets the event (work in flight at a submit, as ggml's graph submits
 * are; a profiler whose reads wait for the GPU, as lavapipe's do, would
 * wait forever inside that submit: a watchdog ends the app with status 3) */
static bool g_gate;
static bool g_vk12; /* --vk12: VkPhysicalDeviceVulkan12Features chained at vkCreateDevice */
/* --own-stamps WHERE: the app's own timestamps, as a profiler in the app
 * would write them (no layer needed): reset (an in-buffer vkCmdResetQueryPool
 * at the start, no stamp), begin, mid, end or both (a stamp after all earlier
 * work at the start, after dispatch D/2, at the end, or at the start and the
 * end; the queries reset from the host before each recording). With
 * --time-record: what a stamp costs the recording of the rest of its buffer
 * on a driver (issue 26). */
static const char *g_own_stamps = "";
static VkQueryPool g_qpool;
/* --poll: no fence and no wait call; each submit signals a timeline
 * semaphore, whose counter the host polls (vkGetSemaphoreCounterValue, a
 * call the layer does not intercept): an app whose completions the layer
 * never sees */
static bool g_poll;
/* --spin: wait by polling vkGetFenceStatus, as ggml does */
static bool g_spin;
static bool g_no_names; /* --no-names: no debug names (the layer names them itself) */
/* --shader copy | lib:PATH | libcopy:PATH: the module's code from a heap
 * copy, from the shared object PATH's busy_spv (names_fixture), or from a
 * heap copy of that; default: this executable's own busy_spv */
static const char *g_shader = "";
static bool
    g_queue_labels;  /* --queue-labels: each submit inside a queue label, as ggml's markers */
static bool g_split; /* --split: alpha's dispatches in one submit, beta's in a second one */
/* --nested-labels: ggml's newer markers, three deep: "graph" around the
 * buffer, "node" around each dispatch, "disp" inside it */
static bool g_nested_labels;
static bool g_time_record;            /* --time-record */
static bool g_resubmit;               /* --resubmit */
static uint64_t g_rec_ns, g_rec_disp; /* its sums, from the second iteration */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile sig_atomic_t g_stop;
static const char *g_die = "", *g_die_at = "waited";
static unsigned g_die_iter = 0;
static int g_messages_fail;

#define CHECK(call)                                                                                \
    do {                                                                                           \
        VkResult vr_ = (call);                                                                     \
        if (vr_ != VK_SUCCESS) {                                                                   \
            fprintf(stderr, "linked_app: %s failed: %d\n", #call, (int)vr_);                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static bool g_fork_novk; /* --fork-novk */

static void die_now(void)
{
    fflush(NULL);
    if (strcmp(g_die, "exit") == 0) {
        exit(0);
    } else if (strcmp(g_die, "_exit") == 0) {
        _exit(0);
    } else if (strcmp(g_die, "abort") == 0) {
        abort();
    } else if (strcmp(g_die, "segv") == 0) {
        /* a real fault, the default action (a sanitizer's own handler, and
         * UBSan's null check, would turn it into an exit) */
        signal(SIGSEGV, SIG_DFL);
        volatile uintptr_t bad = 16; /* opaque to the compiler's bounds checks */
        volatile int *p = (volatile int *)bad;
        *p = 1;
    } else if (strcmp(g_die, "sigint") == 0) {
        signal(SIGINT, SIG_DFL);
        raise(SIGINT);
    } else if (strcmp(g_die, "sigterm") == 0) {
        signal(SIGTERM, SIG_DFL);
        raise(SIGTERM);
    } else if (strcmp(g_die, "sigkill") == 0) {
        raise(SIGKILL);
    }
    fprintf(stderr, "linked_app: --die %s: not a way to end\n", g_die);
    _exit(3);
}

static void maybe_die(const char *point, unsigned iter)
{
    if (g_die[0] != '\0' && strcmp(point, g_die_at) == 0 &&
        (strcmp(point, "submitted") != 0 && strcmp(point, "waited") != 0 ? true
                                                                         : iter == g_die_iter)) {
        die_now();
    }
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *d,
                                                 void *user)
{
    (void)type;
    app *a = (app *)user;
    if (sev >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        a->messages++;
        fprintf(stderr, "linked_app: validation: %s\n", d->pMessage ? d->pMessage : "");
    }
    return VK_FALSE;
}

static void create_instance(app *a, bool validation)
{
    VkApplicationInfo ai;
    INIT(ai, VK_STRUCTURE_TYPE_APPLICATION_INFO);
    ai.pApplicationName = "linked_app";
    ai.apiVersion = VK_API_VERSION_1_2;
    const char *layers[1] = {"VK_LAYER_KHRONOS_validation"};
    const char *exts[1] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkInstanceCreateInfo ci;
    INIT(ci, VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
    ci.pApplicationInfo = &ai;
    ci.enabledExtensionCount = 1;
    ci.ppEnabledExtensionNames = exts;
    if (validation) {
        ci.enabledLayerCount = 1;
        ci.ppEnabledLayerNames = layers;
    }
    CHECK(vkCreateInstance(&ci, NULL, &a->inst));
#ifdef __SANITIZE_ADDRESS__
    /* LeakSanitizer looks after the loader has unloaded the driver. A
     * one-time initialisation in lavapipe keeps a table in a global (128
     * bytes an entry, realloc'd under pthread_once: by its shape, Mesa's
     * CPU detection of L3 caches), and once the driver is unmapped it
     * reads as a leak in an unknown module,
     * which no suppression can name (seen on an AMD EPYC host, Mesa
     * 22.3.6). Keep lavapipe loaded: its globals stay reachable, and a leak
     * of its own still falls under tests/lsan.supp by name. */
    (void)dlopen("libvulkan_lvp.so", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
#endif
    PFN_vkCreateDebugUtilsMessengerEXT mk = (PFN_vkCreateDebugUtilsMessengerEXT)(void (*)(
        void))vkGetInstanceProcAddr(a->inst, "vkCreateDebugUtilsMessengerEXT");
    if (validation && mk != NULL) {
        VkDebugUtilsMessengerCreateInfoEXT mi;
        INIT(mi, VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
        mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                             VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
        mi.pfnUserCallback = on_message;
        mi.pUserData = a;
        CHECK(mk(a->inst, &mi, NULL, &a->messenger));
    }
}

static uint32_t memory_type(app *a, uint32_t bits, VkMemoryPropertyFlags want)
{
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(a->phys, &mp);
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++) {
        if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) {
            return i;
        }
    }
    fprintf(stderr, "linked_app: no memory type\n");
    exit(1);
}

static void name_object(app *a, VkObjectType type, uint64_t handle, const char *name)
{
    PFN_vkSetDebugUtilsObjectNameEXT set = (PFN_vkSetDebugUtilsObjectNameEXT)(void (*)(
        void))vkGetDeviceProcAddr(a->dev, "vkSetDebugUtilsObjectNameEXT");
    if (set == NULL) {
        set = (PFN_vkSetDebugUtilsObjectNameEXT)(void (*)(void))vkGetInstanceProcAddr(
            a->inst, "vkSetDebugUtilsObjectNameEXT");
    }
    if (set != NULL) {
        VkDebugUtilsObjectNameInfoEXT ni;
        INIT(ni, VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT);
        ni.objectType = type;
        ni.objectHandle = handle;
        ni.pObjectName = name;
        CHECK(set(a->dev, &ni));
    }
}

static void create_device(app *a)
{
    uint32_t n = 0;
    CHECK(vkEnumeratePhysicalDevices(a->inst, &n, NULL));
    if (n == 0) {
        fprintf(stderr, "linked_app: no Vulkan device\n");
        exit(1);
    }
    VkPhysicalDevice devs[16];
    n = n > 16 ? 16 : n;
    vkEnumeratePhysicalDevices(a->inst, &n, devs);
    a->phys = devs[0];
    uint32_t nf = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(a->phys, &nf, NULL);
    VkQueueFamilyProperties fp[32];
    nf = nf > 32 ? 32 : nf;
    vkGetPhysicalDeviceQueueFamilyProperties(a->phys, &nf, fp);
    a->family = UINT32_MAX;
    for (uint32_t i = 0; i < nf && a->family == UINT32_MAX; i++) {
        if (fp[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            a->family = i;
        }
    }
    if (a->family == UINT32_MAX) {
        fprintf(stderr, "linked_app: no compute queue\n");
        exit(1);
    }
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi;
    INIT(qi, VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
    qi.queueFamilyIndex = a->family;
    qi.queueCount = 1;
    qi.pQueuePriorities = &prio;
    VkDeviceCreateInfo di;
    INIT(di, VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
    di.queueCreateInfoCount = 1;
    di.pQueueCreateInfos = &qi;
    /* --vk12: the Vulkan 1.2 features chained, none asked for (ggml chains
     * them; the layer then turns hostQueryReset on inside them) */
    VkPhysicalDeviceVulkan12Features f12;
    INIT(f12, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
    f12.timelineSemaphore = g_poll ? VK_TRUE : VK_FALSE;
    if (g_own_stamps[0] != '\0' && strcmp(g_own_stamps, "reset") != 0) {
        f12.hostQueryReset = VK_TRUE;
    }
    if (g_vk12 || g_poll || f12.hostQueryReset) {
        di.pNext = &f12;
    }
    CHECK(vkCreateDevice(a->phys, &di, NULL, &a->dev));
    if (g_own_stamps[0] != '\0') {
        VkQueryPoolCreateInfo qp;
        INIT(qp, VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
        qp.queryType = VK_QUERY_TYPE_TIMESTAMP;
        qp.queryCount = 2;
        CHECK(vkCreateQueryPool(a->dev, &qp, NULL, &g_qpool));
        if (f12.hostQueryReset) {
            vkResetQueryPool(a->dev, g_qpool, 0, 2);
        }
    }
    vkGetDeviceQueue(a->dev, a->family, 0, &a->queue);

    VkBufferCreateInfo bi;

    INIT(bi, VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
    bi.size = COUNT * sizeof(float);
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    CHECK(vkCreateBuffer(a->dev, &bi, NULL, &a->buf));
    VkMemoryRequirements mr;
    vkGetBufferMemoryRequirements(a->dev, a->buf, &mr);
    VkMemoryAllocateInfo mi;
    INIT(mi, VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
    mi.allocationSize = mr.size;
    mi.memoryTypeIndex = memory_type(a, mr.memoryTypeBits, 0);
    CHECK(vkAllocateMemory(a->dev, &mi, NULL, &a->mem));
    CHECK(vkBindBufferMemory(a->dev, a->buf, a->mem, 0));

    VkDescriptorSetLayoutBinding b;
    memset(&b, 0, sizeof b);
    b.binding = 0;
    b.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    b.descriptorCount = 1;
    b.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    VkDescriptorSetLayoutCreateInfo li;
    INIT(li, VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
    li.bindingCount = 1;
    li.pBindings = &b;
    CHECK(vkCreateDescriptorSetLayout(a->dev, &li, NULL, &a->dsl));
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
    VkDescriptorPoolCreateInfo pi;
    INIT(pi, VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
    pi.maxSets = 1;
    pi.poolSizeCount = 1;
    pi.pPoolSizes = &ps;
    CHECK(vkCreateDescriptorPool(a->dev, &pi, NULL, &a->dpool));
    VkDescriptorSetAllocateInfo si;
    INIT(si, VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
    si.descriptorPool = a->dpool;
    si.descriptorSetCount = 1;
    si.pSetLayouts = &a->dsl;
    CHECK(vkAllocateDescriptorSets(a->dev, &si, &a->set));
    VkDescriptorBufferInfo dbi = {a->buf, 0, VK_WHOLE_SIZE};
    VkWriteDescriptorSet w;
    INIT(w, VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
    w.dstSet = a->set;
    w.descriptorCount = 1;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = &dbi;
    vkUpdateDescriptorSets(a->dev, 1, &w, 0, NULL);

    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 2 * sizeof(uint32_t)};
    VkPipelineLayoutCreateInfo pli;
    INIT(pli, VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
    pli.setLayoutCount = 1;
    pli.pSetLayouts = &a->dsl;
    pli.pushConstantRangeCount = 1;
    pli.pPushConstantRanges = &pcr;
    CHECK(vkCreatePipelineLayout(a->dev, &pli, NULL, &a->layout));
    VkShaderModuleCreateInfo smi;
    INIT(smi, VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
    smi.codeSize = sizeof busy_spv;
    smi.pCode = busy_spv;
    const uint32_t *code = busy_spv;
    if (strncmp(g_shader, "lib:", 4) == 0 || strncmp(g_shader, "libcopy:", 8) == 0) {
        void *h = dlopen(strchr(g_shader, ':') + 1, RTLD_NOW | RTLD_LOCAL);
        const uint32_t *(*get)(void) = NULL;
        if (h != NULL) {
            *(void **)&get = dlsym(h, "names_fixture_busy");
        }
        if (get == NULL) {
            fprintf(stderr, "linked_app: %s: %s\n", g_shader, dlerror());
            exit(1);
        }
        code = get();
    }
    uint32_t *copy = NULL;
    if (strcmp(g_shader, "copy") == 0 || strncmp(g_shader, "libcopy:", 8) == 0) {
        copy = (uint32_t *)malloc(sizeof busy_spv);
        if (copy == NULL) {
            exit(1);
        }
        memcpy(copy, code, sizeof busy_spv);
        code = copy;
    }
    smi.pCode = code;
    CHECK(vkCreateShaderModule(a->dev, &smi, NULL, &a->module));
    free(copy);
    for (int i = 0; i < 2; i++) {
        VkComputePipelineCreateInfo cpi;
        INIT(cpi, VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
        cpi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
        cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        cpi.stage.module = a->module;
        cpi.stage.pName = "main";
        cpi.layout = a->layout;
        CHECK(vkCreateComputePipelines(a->dev, VK_NULL_HANDLE, 1, &cpi, NULL, &a->pipe[i]));
        if (!g_no_names) {
            name_object(a, VK_OBJECT_TYPE_PIPELINE, (uint64_t)(uintptr_t)a->pipe[i], pipe_names[i]);
        }
    }
    a->extra = g_extra_pipes ? (VkPipeline *)calloc(g_extra_pipes, sizeof *a->extra) : NULL;
    for (unsigned i = 0; i < g_extra_pipes && a->extra != NULL; i++) {
        VkComputePipelineCreateInfo cpi;
        INIT(cpi, VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
        cpi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
        cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
        cpi.stage.module = a->module;
        cpi.stage.pName = "main";
        cpi.layout = a->layout;
        CHECK(vkCreateComputePipelines(a->dev, VK_NULL_HANDLE, 1, &cpi, NULL, &a->extra[i]));
        char nm[32];
        snprintf(nm, sizeof nm, "p%u", i);
        name_object(a, VK_OBJECT_TYPE_PIPELINE, (uint64_t)(uintptr_t)a->extra[i], nm);
    }
    VkCommandPoolCreateInfo cpi;
    INIT(cpi, VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    cpi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    cpi.queueFamilyIndex = a->family;
    CHECK(vkCreateCommandPool(a->dev, &cpi, NULL, &a->pool));
    VkCommandBufferAllocateInfo cai;
    INIT(cai, VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    cai.commandPool = a->pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    CHECK(vkAllocateCommandBuffers(a->dev, &cai, &a->cmd));
    VkFenceCreateInfo fi;
    INIT(fi, VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    CHECK(vkCreateFence(a->dev, &fi, NULL, &a->fence));
    if (g_poll) {
        VkSemaphoreTypeCreateInfo ti;
        INIT(ti, VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO);
        ti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
        VkSemaphoreCreateInfo sci;
        INIT(sci, VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO);
        sci.pNext = &ti;
        CHECK(vkCreateSemaphore(a->dev, &sci, NULL, &a->timeline));
    }
    if (g_gate) {
        CHECK(vkAllocateCommandBuffers(a->dev, &cai, &a->gate_cmd));
        VkEventCreateInfo ei;
        INIT(ei, VK_STRUCTURE_TYPE_EVENT_CREATE_INFO);
        CHECK(vkCreateEvent(a->dev, &ei, NULL, &a->gate));
    }
}

static void on_watchdog(int sig)
{
    (void)sig;
    static const char m[] = "linked_app: a submit did not return within 20 s (--gate)\n";
    ssize_t w = write(2, m, sizeof m - 1);
    (void)w;
    _exit(3);
}

/* --gate: the held buffer (one alpha dispatch after the event), submitted
 * without a fence */
static void gate_submit(app *a)
{
    VkCommandBufferBeginInfo bi;
    INIT(bi, VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    CHECK(vkResetCommandBuffer(a->gate_cmd, 0));
    CHECK(vkBeginCommandBuffer(a->gate_cmd, &bi));
    vkCmdWaitEvents(a->gate_cmd, 1, &a->gate, VK_PIPELINE_STAGE_HOST_BIT,
                    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, NULL, 0, NULL, 0, NULL);
    vkCmdBindPipeline(a->gate_cmd, VK_PIPELINE_BIND_POINT_COMPUTE, a->pipe[0]);
    vkCmdBindDescriptorSets(a->gate_cmd, VK_PIPELINE_BIND_POINT_COMPUTE, a->layout, 0, 1, &a->set,
                            0, NULL);
    uint32_t pc[2] = {64, COUNT};
    vkCmdPushConstants(a->gate_cmd, a->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, pc);
    vkCmdDispatch(a->gate_cmd, COUNT / 64, 1, 1);
    CHECK(vkEndCommandBuffer(a->gate_cmd));
    VkSubmitInfo si;
    INIT(si, VK_STRUCTURE_TYPE_SUBMIT_INFO);
    si.commandBufferCount = 1;
    si.pCommandBuffers = &a->gate_cmd;
    CHECK(vkQueueSubmit(a->queue, 1, &si, VK_NULL_HANDLE));
}

/* A buffer begun and recorded, then freed without a submit (a WebGPU
 * runtime does this at device destroy): nothing ran, nothing is lost. */
static void abandon(app *a)
{
    VkCommandBuffer c;
    VkCommandBufferAllocateInfo cai;
    INIT(cai, VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    cai.commandPool = a->pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    CHECK(vkAllocateCommandBuffers(a->dev, &cai, &c));
    VkCommandBufferBeginInfo bi;
    INIT(bi, VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    CHECK(vkBeginCommandBuffer(c, &bi));
    vkCmdBindPipeline(c, VK_PIPELINE_BIND_POINT_COMPUTE, a->pipe[0]);
    vkCmdBindDescriptorSets(c, VK_PIPELINE_BIND_POINT_COMPUTE, a->layout, 0, 1, &a->set, 0, NULL);
    vkCmdDispatch(c, 1, 1, 1);
    vkFreeCommandBuffers(a->dev, a->pool, 1, &c);
}

static void *end_elsewhere(void *arg)
{
    CHECK(vkEndCommandBuffer(*(VkCommandBuffer *)arg));
    return NULL;
}

/* Recordings as runtimes make them, not one at a time: X and Y begun
 * together and ended in the order they began (X's recording holds Y's
 * begin), then Z begun here and ended on another thread (the app
 * synchronises the pool: this thread waits). All three submitted and
 * waited for. */
static void interleave(app *a)
{
    VkCommandBuffer c[3];
    VkCommandBufferAllocateInfo cai;
    INIT(cai, VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    cai.commandPool = a->pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 3;
    CHECK(vkAllocateCommandBuffers(a->dev, &cai, c));
    VkCommandBufferBeginInfo bi;
    INIT(bi, VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    CHECK(vkBeginCommandBuffer(c[0], &bi));
    CHECK(vkBeginCommandBuffer(c[1], &bi));
    for (int i = 0; i < 3; i++) {
        if (i == 2) {
            CHECK(vkBeginCommandBuffer(c[2], &bi));
        }
        vkCmdBindPipeline(c[i], VK_PIPELINE_BIND_POINT_COMPUTE, a->pipe[i % 2]);
        vkCmdBindDescriptorSets(c[i], VK_PIPELINE_BIND_POINT_COMPUTE, a->layout, 0, 1, &a->set, 0,
                                NULL);
        uint32_t pc[2] = {64, COUNT};
        vkCmdPushConstants(c[i], a->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, pc);
        vkCmdDispatch(c[i], COUNT / 64, 1, 1);
        if (i == 1) {
            CHECK(vkEndCommandBuffer(c[0]));
            CHECK(vkEndCommandBuffer(c[1]));
        }
    }
    pthread_t t;
    if (pthread_create(&t, NULL, end_elsewhere, &c[2]) != 0 || pthread_join(t, NULL) != 0) {
        fprintf(stderr, "linked_app: --interleave: no thread\n");
        exit(1);
    }
    VkSubmitInfo si;
    INIT(si, VK_STRUCTURE_TYPE_SUBMIT_INFO);
    si.commandBufferCount = 3;
    si.pCommandBuffers = c;
    CHECK(vkResetFences(a->dev, 1, &a->fence));
    CHECK(vkQueueSubmit(a->queue, 1, &si, a->fence));
    CHECK(vkWaitForFences(a->dev, 1, &a->fence, VK_TRUE, UINT64_MAX));
    vkFreeCommandBuffers(a->dev, a->pool, 3, c);
}

static void destroy_device(app *a)
{
    vkDeviceWaitIdle(a->dev);
    if (g_interleave) {
        interleave(a);
    }
    if (g_abandon) {
        abandon(a);
    }
    vkDestroyFence(a->dev, a->fence, NULL);
    if (g_qpool != VK_NULL_HANDLE) {
        vkDestroyQueryPool(a->dev, g_qpool, NULL);
    }
    vkFreeCommandBuffers(a->dev, a->pool, 1, &a->cmd);
    if (a->timeline != VK_NULL_HANDLE) {
        vkDestroySemaphore(a->dev, a->timeline, NULL);
    }
    if (a->gate != VK_NULL_HANDLE) {
        vkFreeCommandBuffers(a->dev, a->pool, 1, &a->gate_cmd);
        vkDestroyEvent(a->dev, a->gate, NULL);
    }
    vkDestroyCommandPool(a->dev, a->pool, NULL);
    for (int i = 0; i < 2; i++) {
        vkDestroyPipeline(a->dev, a->pipe[i], NULL);
    }
    for (unsigned i = 0; i < g_extra_pipes && a->extra != NULL; i++) {
        vkDestroyPipeline(a->dev, a->extra[i], NULL);
    }
    free(a->extra);
    vkDestroyShaderModule(a->dev, a->module, NULL);
    vkDestroyPipelineLayout(a->dev, a->layout, NULL);
    vkDestroyDescriptorPool(a->dev, a->dpool, NULL);
    vkDestroyDescriptorSetLayout(a->dev, a->dsl, NULL);
    vkDestroyBuffer(a->dev, a->buf, NULL);
    vkFreeMemory(a->dev, a->mem, NULL);
    vkDestroyDevice(a->dev, NULL);
    a->dev = VK_NULL_HANDLE;
}

static void destroy_instance(app *a)
{
    if (a->messenger != VK_NULL_HANDLE) {
        PFN_vkDestroyDebugUtilsMessengerEXT rm = (PFN_vkDestroyDebugUtilsMessengerEXT)(void (*)(
            void))vkGetInstanceProcAddr(a->inst, "vkDestroyDebugUtilsMessengerEXT");
        if (rm != NULL) {
            rm(a->inst, a->messenger, NULL);
        }
    }
    vkDestroyInstance(a->inst, NULL);
}

/* a command-buffer label and its end */
static void label_begin(app *a, const char *name)
{
    PFN_vkCmdBeginDebugUtilsLabelEXT f = (PFN_vkCmdBeginDebugUtilsLabelEXT)(void (*)(
        void))vkGetInstanceProcAddr(a->inst, "vkCmdBeginDebugUtilsLabelEXT");
    if (f != NULL) {
        VkDebugUtilsLabelEXT l;
        INIT(l, VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT);
        l.pLabelName = name;
        f(a->cmd, &l);
    }
}

static void label_end(app *a)
{
    PFN_vkCmdEndDebugUtilsLabelEXT f = (PFN_vkCmdEndDebugUtilsLabelEXT)(void (*)(
        void))vkGetInstanceProcAddr(a->inst, "vkCmdEndDebugUtilsLabelEXT");
    if (f != NULL) {
        f(a->cmd);
    }
}

/* one iteration: D dispatches, submitted with the fence and waited for */
static void iterate(app *a, unsigned iter, unsigned dispatches, unsigned long counts[2])
{
    for (unsigned part = 0; part < (g_split ? 2u : 1u); part++) {
        if (g_gate) {
            gate_submit(a);
            counts[0]++;
        }
        const bool record = !g_resubmit || iter == 0;
        VkCommandBufferBeginInfo bi;
        INIT(bi, VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
        bi.flags = g_resubmit ? 0 : VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        const uint64_t rec0 = mono_ns();
        unsigned recorded = 0;
        if (record) {
            const bool own = g_own_stamps[0] != '\0',
                       own_reset = own && !strcmp(g_own_stamps, "reset");
            if (own && !own_reset) {
                vkResetQueryPool(a->dev, g_qpool, 0, 2); /* the last use was waited for */
            }
            CHECK(vkResetCommandBuffer(a->cmd, 0));
            CHECK(vkBeginCommandBuffer(a->cmd, &bi));
            if (own_reset) {
                vkCmdResetQueryPool(a->cmd, g_qpool, 0, 2);
            }
            if (own && (!strcmp(g_own_stamps, "begin") || !strcmp(g_own_stamps, "both"))) {
                vkCmdWriteTimestamp(a->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, g_qpool, 0);
            }
            if (g_nested_labels) {
                label_begin(a, "graph");
            }
            vkCmdBindDescriptorSets(a->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, a->layout, 0, 1,
                                    &a->set, 0, NULL);
            uint32_t pc[2] = {64, COUNT};
            vkCmdPushConstants(a->cmd, a->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, pc);
            for (unsigned k = 0; k < dispatches; k++) {
                if (g_split && k % 2 != part) {
                    continue;
                }
                if (k > 0) {
                    VkMemoryBarrier mb;
                    INIT(mb, VK_STRUCTURE_TYPE_MEMORY_BARRIER);
                    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT;
                    mb.dstAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT;
                    vkCmdPipelineBarrier(a->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL,
                                         0, NULL);
                }
                vkCmdBindPipeline(a->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, a->pipe[k % 2]);
                if (g_nested_labels) {
                    label_begin(a, "node");
                    label_begin(a, "disp");
                }
                vkCmdDispatch(a->cmd, COUNT / 64, 1, 1);
                recorded++;
                if (k == dispatches / 2 && !strcmp(g_own_stamps, "mid")) {
                    vkCmdWriteTimestamp(a->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, g_qpool, 0);
                }
                if (g_nested_labels) {
                    label_end(a);
                    label_end(a);
                }
            }
            for (unsigned i = 0; i < g_extra_pipes && a->extra != NULL; i++) {
                vkCmdBindPipeline(a->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, a->extra[i]);
                vkCmdDispatch(a->cmd, 1, 1, 1);
                recorded++;
            }
            if (g_nested_labels) {
                label_end(a); /* graph */
            }
            if (own && (!strcmp(g_own_stamps, "end") || !strcmp(g_own_stamps, "both"))) {
                vkCmdWriteTimestamp(a->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, g_qpool, 1);
            }
            CHECK(vkEndCommandBuffer(a->cmd));
            if (iter > 0) {
                g_rec_ns += mono_ns() - rec0;
                g_rec_disp += recorded;
            }
        }
        VkSubmitInfo si;
        INIT(si, VK_STRUCTURE_TYPE_SUBMIT_INFO);
        si.commandBufferCount = 1;
        si.pCommandBuffers = &a->cmd;
        PFN_vkQueueBeginDebugUtilsLabelEXT qbegin = NULL;
        PFN_vkQueueEndDebugUtilsLabelEXT qend = NULL;
        if (g_queue_labels) {
            qbegin = (PFN_vkQueueBeginDebugUtilsLabelEXT)(void (*)(void))vkGetInstanceProcAddr(
                a->inst, "vkQueueBeginDebugUtilsLabelEXT");
            qend = (PFN_vkQueueEndDebugUtilsLabelEXT)(void (*)(void))vkGetInstanceProcAddr(
                a->inst, "vkQueueEndDebugUtilsLabelEXT");
        }
        if (qbegin != NULL && qend != NULL) {
            VkDebugUtilsLabelEXT l;
            INIT(l, VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT);
            l.pLabelName = "graph_compute";
            qbegin(a->queue, &l);
        }
        if (g_gate) {
            alarm(20); /* the gate buffer is still held: this submit must not wait for it */
        }
        VkTimelineSemaphoreSubmitInfo tsi;
        INIT(tsi, VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO);
        const uint64_t signal_value = a->timeline_value + 1;
        if (g_poll) {
            tsi.signalSemaphoreValueCount = 1;
            tsi.pSignalSemaphoreValues = &signal_value;
            si.pNext = &tsi;
            si.signalSemaphoreCount = 1;
            si.pSignalSemaphores = &a->timeline;
        }
        CHECK(vkQueueSubmit(a->queue, 1, &si, g_poll ? VK_NULL_HANDLE : a->fence));
        if (g_gate) {
            alarm(0);
            CHECK(vkSetEvent(a->dev, a->gate));
        }
        if (qbegin != NULL && qend != NULL) {
            qend(a->queue);
        }
        maybe_die("submitted", iter);
        if (g_poll) {
            a->timeline_value = signal_value;
            uint64_t v = 0;
            for (;;) {
                CHECK(vkGetSemaphoreCounterValue(a->dev, a->timeline, &v));
                if (v >= signal_value) {
                    break;
                }
                struct timespec ts = {0, 200 * 1000L};
                nanosleep(&ts, NULL);
            }
        } else if (g_spin) {
            VkResult st;
            while ((st = vkGetFenceStatus(a->dev, a->fence)) == VK_NOT_READY) {
            }
            CHECK(st);
            CHECK(vkResetFences(a->dev, 1, &a->fence));
        } else {
            CHECK(vkWaitForFences(a->dev, 1, &a->fence, VK_TRUE, TIMEOUT_NS));
            CHECK(vkResetFences(a->dev, 1, &a->fence));
        }
        if (g_gate) {
            CHECK(vkResetEvent(a->dev, a->gate));
        }
    }
    counts[0] += (dispatches + 1) / 2;
    counts[1] += dispatches / 2;
}

static void write_progress(const char *path, unsigned done, const unsigned long counts[2])
{
    if (path == NULL) {
        return;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        return;
    }
    fprintf(f, "iterations %u %s %lu %s %lu\n", done, pipe_names[0], counts[0], pipe_names[1],
            counts[1]);
    fclose(f);
    rename(tmp, path);
}

static void on_stop(int sig)
{
    (void)sig;
    g_stop = 1;
}

/* A run on its own instance and device: what the process (or a forked child)
 * does. Returns the exit status. */
static int run(bool validation, bool no_device, unsigned iterations, unsigned dispatches,
               const char *progress, bool serve, unsigned sleep_ms, bool fork_child,
               char **exec_argv)
{
    app a;
    memset(&a, 0, sizeof a);
    create_instance(&a, validation);
    maybe_die("instance", 0);
    if (no_device) {
        destroy_instance(&a);
        return a.messages > 0 ? 1 : 0;
    }
    create_device(&a);
    maybe_die("device", 0);
    unsigned long counts[2] = {0, 0};
    pid_t child = -1;
    for (unsigned i = 0; serve ? !g_stop : i < iterations; i++) {
        iterate(&a, i, dispatches, counts);
        write_progress(progress, i + 1, counts);
        maybe_die("waited", i);
        if (fork_child && i == 0) {
            fflush(NULL);
            child = fork();
            if (child == 0) {
                /* never left running: a probe that times out kills only
                 * the parent (a driver that hangs in a forked child) */
                (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
            }
            if (child == 0 && g_fork_novk) {
                /* a worker that never touches Vulkan and exits the usual way
                 * (atexit handlers, the layer's among them, run) */
                struct timespec ts = {0, 100 * 1000000L};
                nanosleep(&ts, NULL);
                exit(0);
            }
            if (child == 0) {
                /* the parent's Vulkan objects are not the child's: its own */
                char p2[4096];
                snprintf(p2, sizeof p2, "%s.child", progress != NULL ? progress : "progress");
                _exit(run(validation, false, iterations, dispatches, p2, false, 0, false, NULL));
            }
        }
        if (sleep_ms > 0) {
            struct timespec ts = {(time_t)(sleep_ms / 1000), (long)(sleep_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    int status = 0;
    if (child > 0) {
        int ws = 0;
        while (waitpid(child, &ws, 0) < 0 && errno == EINTR) {
        }
        status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
    }
    if (exec_argv != NULL) {
        fflush(NULL);
        execvp(exec_argv[0], exec_argv);
        fprintf(stderr, "linked_app: exec %s: %s\n", exec_argv[0], strerror(errno));
        return 1;
    }
    if (g_time_record && g_rec_disp > 0) {
        printf("record_ns_per_dispatch %.1f over %llu dispatches\n",
               (double)g_rec_ns / (double)g_rec_disp, (unsigned long long)g_rec_disp);
    }
    destroy_device(&a);
    destroy_instance(&a);
    if (a.messages > 0 && g_messages_fail) {
        fprintf(stderr, "linked_app: %lu validation messages\n", a.messages);
        return 1;
    }
    return status;
}

int main(int argc, char **argv)
{
    unsigned iterations = 4, dispatches = 6, sleep_ms = 0;
    const char *progress = NULL;
    bool validation = false, no_device = false, serve = false, fork_child = false;
    char **exec_argv = NULL;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(o, "--iterations") == 0 && v) {
            iterations = (unsigned)strtoul(v, NULL, 10);
            i++;
        } else if (strcmp(o, "--dispatches") == 0 && v) {
            dispatches = (unsigned)strtoul(v, NULL, 10);
            i++;
        } else if (strcmp(o, "--progress") == 0 && v) {
            progress = v;
            i++;
        } else if (strcmp(o, "--die") == 0 && v) {
            g_die = v;
            i++;
        } else if (strcmp(o, "--die-at") == 0 && v) {
            g_die_at = v;
            i++;
        } else if (strcmp(o, "--die-iter") == 0 && v) {
            g_die_iter = (unsigned)strtoul(v, NULL, 10);
            i++;
        } else if (strcmp(o, "--sleep-ms") == 0 && v) {
            sleep_ms = (unsigned)strtoul(v, NULL, 10);
            i++;
        } else if (strcmp(o, "--pipelines") == 0 && v) {
            g_extra_pipes = (unsigned)strtoul(v, NULL, 10);
            i++;
        } else if (strcmp(o, "--nested-labels") == 0) {
            g_nested_labels = true;
        } else if (strcmp(o, "--split") == 0) {
            g_split = true;
        } else if (strcmp(o, "--queue-labels") == 0) {
            g_queue_labels = true;
        } else if (strcmp(o, "--no-names") == 0) {
            g_no_names = true;
        } else if (strcmp(o, "--shader") == 0 && v) {
            g_shader = v;
            i++;
        } else if (strcmp(o, "--resubmit") == 0) {
            g_resubmit = true;
        } else if (strcmp(o, "--time-record") == 0) {
            g_time_record = true;
        } else if (strcmp(o, "--abandon") == 0) {
            g_abandon = true;
        } else if (strcmp(o, "--interleave") == 0) {
            g_interleave = true;
        } else if (strcmp(o, "--gate") == 0) {
            g_gate = true;
        } else if (strcmp(o, "--own-stamps") == 0 && v) {
            g_own_stamps = v;
            i++;
            if (strcmp(v, "reset") && strcmp(v, "begin") && strcmp(v, "mid") && strcmp(v, "end") &&
                strcmp(v, "both")) {
                fprintf(stderr, "linked_app: --own-stamps reset|begin|mid|end|both\n");
                return 1;
            }
        } else if (strcmp(o, "--vk12") == 0) {
            g_vk12 = true;
        } else if (strcmp(o, "--poll") == 0) {
            g_poll = true;
        } else if (strcmp(o, "--spin") == 0) {
            g_spin = true;
        } else if (strcmp(o, "--validation") == 0) {
            validation = true;
        } else if (strcmp(o, "--no-device") == 0) {
            no_device = true;
        } else if (strcmp(o, "--serve") == 0) {
            serve = true;
        } else if (strcmp(o, "--fork") == 0) {
            fork_child = true;
        } else if (strcmp(o, "--fork-novk") == 0) {
            fork_child = true;
            g_fork_novk = true;
        } else if (strcmp(o, "--exec") == 0 && v) {
            exec_argv = argv + i + 1;
            break;
        } else {
            fprintf(stderr, "linked_app: unknown option %s\n", o);
            return 2;
        }
    }
    g_messages_fail = validation;
    if (g_gate) {
        signal(SIGALRM, on_watchdog);
    }
    if (serve) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
    }
    maybe_die("start", 0);
    return run(validation, no_device, iterations, dispatches, progress, serve, sleep_ms, fork_child,
               exec_argv);
}
