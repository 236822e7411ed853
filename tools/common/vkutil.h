/* Small Vulkan helpers shared by the vkprof tool and the tests (not part of
 * the library): instance with optional validation, device on a compute
 * family, buffers, and the "busy" compute pipeline. Loads Vulkan with volk. */
#ifndef VKPROF_VKUTIL_H
#define VKPROF_VKUTIL_H

#include <volk.h>

#include <stdbool.h>
#include <stdint.h>

#include "vkprof/vkprof.h"

typedef struct vku_instance {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    bool validation;   /* the Khronos validation layer is enabled */
    bool debug_utils;  /* VK_EXT_debug_utils is enabled */
    uint32_t messages; /* validation/loader warnings and errors seen */
    uint32_t notices;  /* loader warnings printed but not counted */
    bool print_messages;
} vku_instance;

typedef struct vku_device {
    VkPhysicalDevice phys;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem;
    VkDevice device;
    uint32_t family;
    VkQueue queue;        /* queue 0 of `family` */
    VkQueue queue2;       /* queue 1 of `family`: VK_NULL_HANDLE unless asked for and offered */
    uint32_t queue_count; /* queues created: 1, or 2 with queue2 */
    VkCommandPool cmd_pool;
    VkCommandBuffer cmd;
    VkFence fence;
    bool sync2;            /* synchronization2 feature enabled */
    bool host_query_reset; /* hostQueryReset feature enabled */
    bool calibrated_ext;   /* VK_KHR/EXT_calibrated_timestamps enabled */
} vku_device;

typedef struct vku_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    void *map;
    VkDeviceSize size;
} vku_buffer;

typedef struct vku_busy {
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkShaderModule module;
    VkPipeline pipeline;
    VkDescriptorPool dpool;
    VkDescriptorSet set;
    vku_buffer buf;
    uint32_t count; /* invocations per dispatch */
} vku_busy;

/* Create an instance (Vulkan 1.3 requested). With `validation`, the Khronos
 * layer and a debug-utils messenger that counts (and prints) warnings and
 * errors are enabled; fails when the layer is missing. Returns a VkResult. */
/* Under AddressSanitizer: keep lavapipe and the validation layer mapped
 * for the whole process (RTLD_NODELETE), so that LeakSanitizer can name the
 * library of their own leaks (tests/lsan.supp suppresses those by name; an
 * unloaded library shows as "<unknown module>"). vku_instance_create calls
 * it; an app that creates its own instances calls it first. A no-op
 * otherwise. */
void vku_keep_driver_mapped(void);

VkResult vku_instance_create(vku_instance *out, bool validation, const char *app_name);
/* The same; with debug_utils, VK_EXT_debug_utils is also enabled where the
 * loader, driver or an implicit layer offers it (out->debug_utils says
 * whether it is), without the validation layer (object names and labels for
 * a debug-utils consumer such as the vkprof layer). */
VkResult vku_instance_create_ex(vku_instance *out, bool validation, const char *app_name,
                                bool debug_utils);

/* The messenger every tool and test uses: warnings and errors of the
 * general, validation and performance kinds, to fn(user). */
VkDebugUtilsMessengerCreateInfoEXT vku_messenger_info(PFN_vkDebugUtilsMessengerCallbackEXT fn,
                                                      void *user);

/* Whether the loader, the driver or an enabled implicit layer offers the
 * instance extension (call after volkInitialize, which the above do). */
bool vku_has_instance_ext(const char *name);
void vku_instance_destroy(vku_instance *inst);

/* Number of physical devices, and the one chosen by `selector`: NULL or ""
 * picks the default (a discrete GPU, else integrated, else the first); a
 * number picks by index; anything else matches a substring of the name.
 * Returns VK_ERROR_INITIALIZATION_FAILED with a message in `err` when none. */
VkResult vku_pick_device(VkInstance inst, const char *selector, VkPhysicalDevice *out, char *err,
                         size_t err_size);

/* Whether the device offers the extension. */
bool vku_has_device_ext(VkPhysicalDevice phys, const char *name);

/* First queue family with COMPUTE, or UINT32_MAX. */
uint32_t vku_compute_family(VkPhysicalDevice phys);

/* Create a device with one queue of `family`, enabling synchronization2,
 * hostQueryReset and calibrated timestamps where offered, plus a command
 * pool, one command buffer and a fence. */
VkResult vku_device_create(vku_device *out, VkPhysicalDevice phys, uint32_t family);
/* Choices for vku_device_create_ex (NULL, or all zero: the defaults of
 * vku_device_create). */
typedef struct vku_device_options {
    bool no_synchronization2; /* leave synchronization2 off even where offered */
    /* Queues of `family` wanted: 0 or 1, one (queue2 stays VK_NULL_HANDLE);
     * 2, two where the family has them (queueCount >= 2), both at priority
     * 1.0, the second in queue2; one where it has not. More than 2:
     * VK_ERROR_INITIALIZATION_FAILED. */
    uint32_t queue_count;
} vku_device_options;
VkResult vku_device_create_ex(vku_device *out, VkPhysicalDevice phys, uint32_t family,
                              const vku_device_options *opt);
void vku_device_destroy(vku_device *dev);

/* Begin recording dev->cmd (after resetting it); end, submit and wait. */
VkResult vku_begin(vku_device *dev);
VkResult vku_submit_wait(vku_device *dev);

/* Host-visible, coherent storage buffer, mapped. */
VkResult vku_buffer_create(vku_device *dev, VkDeviceSize size, vku_buffer *out);
void vku_buffer_destroy(vku_device *dev, vku_buffer *buf);

/* The busy pipeline over a buffer of `count` floats. */
VkResult vku_busy_create(vku_device *dev, uint32_t count, vku_busy *out);
void vku_busy_destroy(vku_device *dev, vku_busy *busy);
/* Record one busy dispatch of `iterations` per invocation. */
void vku_busy_record(vku_device *dev, const vku_busy *busy, VkCommandBuffer cmd,
                     uint32_t iterations);
/* A compute->compute memory barrier. */
void vku_compute_barrier(VkCommandBuffer cmd);

/* A vkprof desc filled from this instance/device (enable mode left default). */
vkprof_context_desc vku_vkprof_desc(const vku_instance *inst, const vku_device *dev);

/* Whether a debug-utils message counts as a validation failure: every ERROR
 * (the validation layer's or the loader's), and every WARNING except the
 * loader's informational GENERAL notices (pMessageIdName "Loader Message",
 * e.g. "env var 'VK_INSTANCE_LAYERS' defined and adding layers"). INFO and
 * VERBOSE never count. */
bool vku_message_counts(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                        VkDebugUtilsMessageTypeFlagsEXT types,
                        const VkDebugUtilsMessengerCallbackDataEXT *data);

/* Human-readable VkResult. */
const char *vku_result_name(VkResult r);

#endif
