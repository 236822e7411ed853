/* Internal definitions shared by the library's source files. Not installed. */
#ifndef VKPROF_INTERNAL_H
#define VKPROF_INTERNAL_H

#include "vkprof/vkprof.h"

#include <stdarg.h>

/* Vulkan headers older than 1.3.272 have only the EXT calibrated-timestamps
 * names; the KHR ones share their values and signatures. */
typedef VkResult(VKAPI_PTR *vkprof_PFN_GetCalibrateableTimeDomains)(VkPhysicalDevice, uint32_t *,
                                                                    VkTimeDomainEXT *);
typedef VkResult(VKAPI_PTR *vkprof_PFN_GetCalibratedTimestamps)(VkDevice, uint32_t,
                                                               const VkCalibratedTimestampInfoEXT *,
                                                               uint64_t *, uint64_t *);

/* The per-context function table: every Vulkan entry point the library calls. */
typedef struct vkprof_vk {
    /* instance level */
    PFN_vkGetPhysicalDeviceProperties GetPhysicalDeviceProperties;
    PFN_vkGetPhysicalDeviceQueueFamilyProperties GetPhysicalDeviceQueueFamilyProperties;
    PFN_vkEnumerateDeviceExtensionProperties EnumerateDeviceExtensionProperties;
    vkprof_PFN_GetCalibrateableTimeDomains GetPhysicalDeviceCalibrateableTimeDomains;
    /* device level */
    PFN_vkCreateQueryPool CreateQueryPool;
    PFN_vkDestroyQueryPool DestroyQueryPool;
    PFN_vkCmdResetQueryPool CmdResetQueryPool;
    PFN_vkCmdWriteTimestamp CmdWriteTimestamp;
    PFN_vkCmdWriteTimestamp2 CmdWriteTimestamp2; /* core 1.3 or the KHR alias */
    PFN_vkGetQueryPoolResults GetQueryPoolResults;
    PFN_vkResetQueryPool ResetQueryPool; /* core 1.2 or the EXT alias */
    vkprof_PFN_GetCalibratedTimestamps GetCalibratedTimestamps;
} vkprof_vk;

typedef struct vkprof_phase_acc {
    char name[VKPROF_MAX_NAME + 1];
    uint64_t count;
    uint64_t total_ticks; /* saturating */
    uint64_t min_ticks;
    uint64_t max_ticks;
} vkprof_phase_acc;

typedef enum vkprof_scope_state {
    VKPROF_SCOPE_IDLE = 0,
    VKPROF_SCOPE_BEGUN,
    VKPROF_SCOPE_ENDED,
    VKPROF_SCOPE_RESOLVED
} vkprof_scope_state;

struct vkprof_context_T {
    struct vkprof_context_head_ head; /* must stay first: vkprof_active() reads it */

    vkprof_context_desc desc;
    char env_var[128];
    vkprof_vk vk;
    vkprof_device_info info;
    uint64_t valid_mask;

    bool requested;

    /* 2-slot mode */
    VkQueryPool pool;
    vkprof_scope_state state;
    vkprof_phase scope_phase;
    uint64_t scope_ticks;
    uint64_t last_pair[2]; /* the last (begin, end) read: detects stale reads */
    bool have_last_pair;
    bool host_reset;       /* desc.host_query_reset and the entry point exists */

    vkprof_phase_acc *phases;
    uint32_t phase_count;
    uint32_t phase_cap;

    vkprof_error_counts errors;
};

/* log.c */
void vkprof__log(vkprof_context ctx, vkprof_log_level level, vkprof_result code, const char *fmt,
                 ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Count a misuse/failure, log it, and return it. */
vkprof_result vkprof__fail(vkprof_context ctx, vkprof_result code, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* context.c */
void vkprof__update_active(vkprof_context ctx);

/* phase.c */
vkprof_result vkprof__phases_init(vkprof_context ctx);
void vkprof__phases_free(vkprof_context ctx);
bool vkprof__phase_valid(vkprof_context ctx, vkprof_phase phase);
void vkprof__phase_fold(vkprof_context ctx, vkprof_phase phase, uint64_t ticks);

/* timing.c */
void vkprof__timing_shutdown(vkprof_context ctx);

#endif
