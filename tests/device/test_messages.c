/* Which debug-utils messages the harness counts (issue 10, items 13 and 14).
 *   test_messages             the classification on synthetic callback data,
 *                             and a live instance with VK_INSTANCE_LAYERS set
 *   test_messages --sync      a deliberate write-after-write hazard that
 *                             synchronization validation must report (run with
 *                             VK_LAYER_ENABLES=..SYNCHRONIZATION_VALIDATION_EXT:
 *                             proves that setting really turns it on). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static VkDebugUtilsMessengerCallbackDataEXT msg(const char *id_name, int32_t id, const char *text)
{
    VkDebugUtilsMessengerCallbackDataEXT d = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CALLBACK_DATA_EXT,
        .pMessageIdName = id_name,
        .messageIdNumber = id,
        .pMessage = text};
    return d;
}

#define SEV_W VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
#define SEV_E VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT
#define SEV_I VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT
#define SEV_V VK_DEBUG_UTILS_MESSAGE_SEVERITY_VERBOSE_BIT_EXT
#define T_GEN VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
#define T_VAL VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT
#define T_PERF VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT

/* Callback data shaped as the loader (loader/log.c) and the validation layer
 * send them. */
static void classification(void)
{
    VkDebugUtilsMessengerCallbackDataEXT loader = msg(
        "Loader Message", 0,
        "env var 'VK_INSTANCE_LAYERS' defined and adding layers \"VK_LAYER_KHRONOS_validation\"");
    CHECK(!vku_message_counts(SEV_W, T_GEN, &loader));
    CHECK(!vku_message_counts(SEV_I, T_GEN, &loader));
    CHECK(!vku_message_counts(SEV_V, T_GEN, &loader));

    /* Real loader errors count; so do the loader's own API checks
     * (GENERAL|VALIDATION) and performance notes. */
    VkDebugUtilsMessengerCallbackDataEXT loader_err =
        msg("Loader Message", 0, "vkCreateDevice: failed to create device chain.");
    CHECK(vku_message_counts(SEV_E, T_GEN, &loader_err));
    CHECK(vku_message_counts(SEV_E, T_GEN | T_VAL, &loader_err));
    CHECK(vku_message_counts(SEV_W, T_GEN | T_VAL, &loader_err));
    CHECK(vku_message_counts(SEV_W, T_PERF, &loader_err));

    VkDebugUtilsMessengerCallbackDataEXT vuid =
        msg("VUID-vkCmdWriteTimestamp2-synchronization2-03858", 0x4b2d7a5c,
            "Validation Error: [ VUID-vkCmdWriteTimestamp2-synchronization2-03858 ]");
    CHECK(vku_message_counts(SEV_E, T_VAL, &vuid));
    CHECK(vku_message_counts(SEV_W, T_VAL, &vuid));
    CHECK(!vku_message_counts(SEV_I, T_VAL, &vuid));

    VkDebugUtilsMessengerCallbackDataEXT sync =
        msg("SYNC-HAZARD-WRITE-AFTER-WRITE", 0x5c0ec5d6, "Validation Error: [ SYNC-HAZARD ]");
    CHECK(vku_message_counts(SEV_E, T_VAL, &sync));

    VkDebugUtilsMessengerCallbackDataEXT perf =
        msg("UNASSIGNED-BestPractices-vkAllocateMemory-small-allocation", 0x1, "perf");
    CHECK(vku_message_counts(SEV_W, T_PERF, &perf));

    /* A GENERAL warning from anyone but the loader, or without an id, counts. */
    VkDebugUtilsMessengerCallbackDataEXT other = msg("UNASSIGNED-some-layer", 7, "general");
    CHECK(vku_message_counts(SEV_W, T_GEN, &other));
    VkDebugUtilsMessengerCallbackDataEXT anon = msg(NULL, 0, "no id");
    CHECK(vku_message_counts(SEV_W, T_GEN, &anon));
    CHECK(vku_message_counts(SEV_W, T_GEN, NULL));
}

/* The layer forced the usual way as well as asked for by the instance: the
 * loader's notice arrives, is printed, and is not counted; the layer is
 * loaded once and the instance works. */
static void forced_layer_env(void)
{
    const char *old = getenv("VK_INSTANCE_LAYERS");
    char *saved = old ? strdup(old) : NULL;
    setenv("VK_INSTANCE_LAYERS", "VK_LAYER_KHRONOS_validation", 1);
    vku_instance inst;
    VkResult r = vku_instance_create(&inst, true, "vkprof test_messages");
    CHECK_VK(r);
    if (r == VK_SUCCESS) {
        uint32_t n = 0;
        CHECK_VK(vkEnumeratePhysicalDevices(inst.instance, &n, NULL));
        CHECK(n > 0);
        CHECK(inst.notices > 0); /* the loader did send its notice */
        CHECK_EQ_U64(inst.messages, 0);
        vku_instance_destroy(&inst);
    }
    if (saved) {
        setenv("VK_INSTANCE_LAYERS", saved, 1);
        free(saved);
    } else {
        unsetenv("VK_INSTANCE_LAYERS");
    }
}

static uint32_t sync_hazards;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_sync(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                              VkDebugUtilsMessageTypeFlagsEXT types,
                                              const VkDebugUtilsMessengerCallbackDataEXT *data,
                                              void *user)
{
    (void)user;
    if (vku_message_counts(severity, types, data) && data->pMessageIdName != NULL &&
        strncmp(data->pMessageIdName, "SYNC-HAZARD-", 12) == 0) {
        sync_hazards++;
    }
    return VK_FALSE;
}

/* Two transfer writes of one buffer with no barrier between them: a
 * SYNC-HAZARD-WRITE-AFTER-WRITE when synchronization validation is on. (This
 * layer version, 1.3.239, reports transfer/transfer and transfer/shader
 * hazards but not one dispatch against the next through the same storage
 * descriptor, so the hazard here is a transfer one.) */
static void sync_validation_active(void)
{
    th_gpu g;
    th_gpu_init(&g);
    VkDevice dev = g.dev.device;
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = 256,
                              .usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkBuffer buf = VK_NULL_HANDLE;
    VkDeviceMemory mem = VK_NULL_HANDLE;
    CHECK_VK(vkCreateBuffer(dev, &bci, NULL, &buf));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, buf, &req);
    uint32_t type = 0;
    while (type < 32 && !(req.memoryTypeBits & (1u << type))) {
        type++;
    }
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = req.size,
                               .memoryTypeIndex = type};
    CHECK_VK(vkAllocateMemory(dev, &ai, NULL, &mem));
    CHECK_VK(vkBindBufferMemory(dev, buf, mem, 0));

    VkDebugUtilsMessengerCreateInfoEXT mci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = SEV_W | SEV_E,
        .messageType = T_GEN | T_VAL | T_PERF,
        .pfnUserCallback = on_sync};
    VkDebugUtilsMessengerEXT m = VK_NULL_HANDLE;
    CHECK_VK(vkCreateDebugUtilsMessengerEXT(g.inst.instance, &mci, NULL, &m));
    CHECK_VK(vku_begin(&g.dev));
    vkCmdFillBuffer(g.dev.cmd, buf, 0, VK_WHOLE_SIZE, 1);
    vkCmdFillBuffer(g.dev.cmd, buf, 0, VK_WHOLE_SIZE, 2); /* the hazard */
    CHECK_VK(vku_submit_wait(&g.dev));
    printf("  SYNC-HAZARD messages: %u (VK_LAYER_ENABLES=%s)\n", sync_hazards,
           getenv("VK_LAYER_ENABLES") ? getenv("VK_LAYER_ENABLES") : "");
    CHECK(sync_hazards > 0);
    /* The hazard was the point; any other message still fails the test. */
    g.inst.messages -= sync_hazards < g.inst.messages ? sync_hazards : g.inst.messages;
    if (m != VK_NULL_HANDLE) {
        vkDestroyDebugUtilsMessengerEXT(g.inst.instance, m, NULL);
    }
    vkDestroyBuffer(dev, buf, NULL);
    vkFreeMemory(dev, mem, NULL);
    th_gpu_finish(&g);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--sync") == 0) {
        RUN(sync_validation_active);
    } else {
        RUN(classification);
        RUN(forced_layer_env);
    }
    return th_done();
}
