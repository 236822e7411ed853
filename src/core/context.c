/* Context lifetime: the function table, device facts, and the enable flag. */
#include "base/base.h"
#include "clock/clock.h"
#include "timeline/store.h"
#include "gpu/gpu.h"
#include "host/host.h"
#include "export/export.h"
#include "core/core.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Defaults of the desc fields whose zero means "default" (vkprof.h documents
 * each next to its field). resolve_desc() is the only place they are applied. */
#define VKPROF_DEFAULT_ENV "VKPROF_GPU_PROFILE"
#define VKPROF_DEFAULT_HOST_ENV "VKPROF_HOST_PROFILE"
#define VKPROF_DEFAULT_TRACE_ENV "VKPROF_TRACE"
#define VKPROF_DEFAULT_RING_QUERIES 4096u
#define VKPROF_MIN_RING_QUERIES 4u
#define VKPROF_DEFAULT_REPORT_EVERY 8u
#define VKPROF_DEFAULT_RECALIBRATE_MS 1000u
#define VKPROF_DEFAULT_CALIBRATION_TRIES 8u
#define VKPROF_DEFAULT_TRACE_CAPACITY (1u << 20)

vkprof_context_desc vkprof_default_desc(void)
{
    /* Zero is the default of every field; the few set here only say so. */
    vkprof_context_desc d;
    memset(&d, 0, sizeof d);
    d.enable = VKPROF_ENABLE_FROM_ENV;
    d.env_var = VKPROF_DEFAULT_ENV;
    d.log_level = VKPROF_LOG_WARN;
    return d;
}

static bool equal_nocase(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (b[i] == '\0' || tolower((unsigned char)a[i]) != tolower((unsigned char)b[i])) {
            return false;
        }
    }
    return b[n] == '\0';
}

bool vkprof_parse_flag(const char *text, bool *out)
{
    if (text == NULL || out == NULL) {
        return false;
    }
    while (isspace((unsigned char)*text)) {
        text++;
    }
    size_t n = strlen(text);
    while (n > 0 && isspace((unsigned char)text[n - 1])) {
        n--;
    }
    static const char *const on[] = {"1", "on", "true", "yes"};
    static const char *const off[] = {"0", "off", "false", "no"};
    if (n == 0) {
        *out = false;
        return true;
    }
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
        if (equal_nocase(text, on[i], n)) {
            *out = true;
            return true;
        }
        if (equal_nocase(text, off[i], n)) {
            *out = false;
            return true;
        }
    }
    return false;
}

void vkprof__update_active(vkprof_context ctx)
{
    ctx->info.requested = ctx->requested;
    ctx->head.active = (ctx->requested && ctx->info.supported) ? 1 : 0;
}

/* The loader, generated from VKPROF_VK_FUNCTIONS (context.h). */
enum { VK_LEVEL_I, VK_LEVEL_D };
enum { VK_NEED_REQUIRED, VK_NEED_TIMING, VK_NEED_OPTIONAL, VK_NEED_HOST_RESET };

typedef struct vk_entry {
    unsigned char level, need;
    const char *name, *alias;
    size_t offset; /* of the field in vkprof_vk */
} vk_entry;

static const vk_entry vk_entries[VKPROF_VK_COUNT] = {
#define VKPROF_X_(level, need, type, field, name, alias)                                           \
    {VK_LEVEL_##level, VK_NEED_##need, name, alias, offsetof(vkprof_vk, field)},
    VKPROF_VK_FUNCTIONS(VKPROF_X_)
#undef VKPROF_X_
};

/* Every field is a function pointer, stored as the PFN_vkVoidFunction it was
 * looked up as (what every Vulkan loader does). */
#define VKPROF_X_(level, need, type, field, name, alias)                                           \
    _Static_assert(sizeof(type) == sizeof(PFN_vkVoidFunction), #field " is a function pointer");
VKPROF_VK_FUNCTIONS(VKPROF_X_)
#undef VKPROF_X_

static PFN_vkVoidFunction vk_lookup(vkprof_context ctx, unsigned level, const char *name)
{
    return level == VK_LEVEL_I ? ctx->desc.get_instance_proc_addr(ctx->desc.instance, name)
                               : ctx->desc.get_device_proc_addr(ctx->desc.device, name);
}

static PFN_vkVoidFunction vk_get(const vkprof_vk *vk, const vk_entry *e)
{
    PFN_vkVoidFunction f;
    memcpy(&f, (const char *)vk + e->offset, sizeof f);
    return f;
}

static vkprof_result load_functions(vkprof_context ctx)
{
    ctx->vk.from_alias = 0;
    for (uint32_t i = 0; i < VKPROF_VK_COUNT; i++) {
        const vk_entry *e = &vk_entries[i];
        PFN_vkVoidFunction f = NULL;
        if (e->need != VK_NEED_HOST_RESET || ctx->desc.host_query_reset) {
            f = vk_lookup(ctx, e->level, e->name);
            if (f == NULL && e->alias != NULL) {
                f = vk_lookup(ctx, e->level, e->alias);
                if (f != NULL) {
                    ctx->vk.from_alias |= UINT64_C(1) << i;
                }
            }
        }
        memcpy((char *)&ctx->vk + e->offset, &f, sizeof f);
    }
    ctx->cal.extension =
        ctx->vk.GetCalibratedTimestamps != NULL &&
                !(ctx->vk.from_alias & (UINT64_C(1) << VKPROF_VK_INDEX_GetCalibratedTimestamps))
            ? "VK_EXT_calibrated_timestamps"
            : "VK_KHR_calibrated_timestamps";
    for (uint32_t i = 0; i < VKPROF_VK_COUNT; i++) {
        if (vk_entries[i].need == VK_NEED_REQUIRED && vk_get(&ctx->vk, &vk_entries[i]) == NULL) {
            return vkprof__fail(ctx, VKPROF_ERROR_MISSING_FUNCTION, "%s not loadable",
                                vk_entries[i].name);
        }
    }
    return VKPROF_OK;
}

/* Timestamps need every TIMING entry point (the 2-slot cycle's). */
static bool timing_functions_present(const vkprof_vk *vk)
{
    for (uint32_t i = 0; i < VKPROF_VK_COUNT; i++) {
        if (vk_entries[i].need == VK_NEED_TIMING && vk_get(vk, &vk_entries[i]) == NULL) {
            return false;
        }
    }
    return true;
}

static void read_device_facts(vkprof_context ctx)
{
    VkPhysicalDeviceProperties props;
    memset(&props, 0, sizeof props);
    ctx->vk.GetPhysicalDeviceProperties(ctx->desc.physical_device, &props);
    vkprof_device_info *info = &ctx->info;
    memcpy(info->device_name, props.deviceName, sizeof info->device_name);
    info->device_name[sizeof info->device_name - 1] = '\0';
    info->vendor_id = props.vendorID;
    info->device_id = props.deviceID;
    info->api_version = props.apiVersion;
    info->driver_version = props.driverVersion;
    info->timestamp_period = props.limits.timestampPeriod;
    snprintf(ctx->driver_name, sizeof ctx->driver_name, "driver version 0x%x", props.driverVersion);
    if (ctx->vk.GetPhysicalDeviceProperties2 != NULL && props.apiVersion >= VK_API_VERSION_1_2) {
        VkPhysicalDeviceDriverProperties drv;
        memset(&drv, 0, sizeof drv);
        drv.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
        VkPhysicalDeviceProperties2 p2;
        memset(&p2, 0, sizeof p2);
        p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
        p2.pNext = &drv;
        ctx->vk.GetPhysicalDeviceProperties2(ctx->desc.physical_device, &p2);
        drv.driverName[sizeof drv.driverName - 1] = '\0';
        drv.driverInfo[sizeof drv.driverInfo - 1] = '\0';
        snprintf(ctx->driver_name, sizeof ctx->driver_name, "%s %s", drv.driverName,
                 drv.driverInfo);
    }
    info->queue_family_index = ctx->desc.queue_family_index;

    uint32_t n = 0;
    ctx->vk.GetPhysicalDeviceQueueFamilyProperties(ctx->desc.physical_device, &n, NULL);
    VkQueueFamilyProperties *fam = n ? calloc(n, sizeof *fam) : NULL;
    uint32_t bits = 0;
    if (fam != NULL) {
        ctx->vk.GetPhysicalDeviceQueueFamilyProperties(ctx->desc.physical_device, &n, fam);
        if (ctx->desc.queue_family_index < n) {
            bits = fam[ctx->desc.queue_family_index].timestampValidBits;
        } else {
            vkprof__log(ctx, VKPROF_LOG_ERROR, VKPROF_ERROR_INVALID_ARGUMENT,
                        "queue family %u does not exist (the device has %u); timing stays off",
                        ctx->desc.queue_family_index, n);
        }
        free(fam);
    }
    /* The spec asks 36..64 of graphics/compute families, but transfer-only
     * families report less (the H200's family 3 has 32). Any width 1..64 is
     * masked correctly; a narrow one only wraps sooner, so say so. */
    if (bits > 64) {
        vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_DISABLED,
                    "queue family %u reports timestampValidBits=%u (more than 64); "
                    "treating it as having no timestamps",
                    ctx->desc.queue_family_index, bits);
        bits = 0;
    } else if (bits != 0 && bits < 36) {
        vkprof__log(ctx, VKPROF_LOG_INFO, VKPROF_OK,
                    "queue family %u has only %u valid timestamp bits: the counter wraps "
                    "every 2^%u ticks; deltas are masked, but a scope longer than that is "
                    "ambiguous",
                    ctx->desc.queue_family_index, bits, bits);
    }
    if (bits != 0 && !(props.limits.timestampPeriod > 0.0f)) {
        vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_DISABLED,
                    "timestampPeriod is %g; treating the device as having no timestamps",
                    (double)props.limits.timestampPeriod);
        bits = 0;
    }
    if (bits != 0 && !timing_functions_present(&ctx->vk)) {
        vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_ERROR_MISSING_FUNCTION,
                    "query-pool entry points are missing; timing stays off");
        bits = 0;
    }
    info->timestamp_valid_bits = bits;
    ctx->valid_mask = bits == 0 ? 0 : bits >= 64 ? UINT64_MAX : ((UINT64_C(1) << bits) - 1u);
    info->supported = bits != 0;

    ctx->gpu.host_reset = ctx->desc.host_query_reset && ctx->vk.ResetQueryPool != NULL;
    bool want2 = ctx->desc.synchronization2 == VKPROF_FEATURE_ENABLED; /* resolve_desc */
    info->timestamp2 = want2 && ctx->vk.CmdWriteTimestamp2 != NULL;
    if (want2 && ctx->vk.CmdWriteTimestamp2 == NULL && info->supported) {
        vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_ERROR_MISSING_FUNCTION,
                    "vkCmdWriteTimestamp2 is not available; using vkCmdWriteTimestamp");
    }
}

/* Copy an env var name (default `def` for NULL or "") into `dst`. */
static bool copy_name(char *dst, size_t cap, const char *name, const char *def)
{
    const char *v = name != NULL && name[0] != '\0' ? name : def;
    size_t n = strlen(v);
    if (n >= cap) {
        return false;
    }
    memcpy(dst, v, n + 1);
    return true;
}

/* VKPROF_HOST_PROFILE: "1" every span, "2" hot spans only, "0" or "": off. */
static bool parse_host_level(const char *v, vkprof_host_level *out)
{
    while (*v == ' ' || *v == '\t') {
        v++;
    }
    size_t n = strlen(v);
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\n')) {
        n--;
    }
    *out = VKPROF_HOST_OFF;
    if (n == 1 && v[0] == '1') {
        *out = VKPROF_HOST_ALL;
    } else if (n == 1 && v[0] == '2') {
        *out = VKPROF_HOST_HOT;
    } else if (!(n == 0 || (n == 1 && v[0] == '0'))) {
        return false;
    }
    return true;
}

/*
 * The caller's desc, resolved in one pass into ctx->desc: every zero replaced
 * by its default, the env vars read (once), the strings copied into the
 * context. Nothing after this reads the caller's desc or applies a default:
 *   enable      -> ON or OFF                 log_level   -> ERROR..REPORT
 *   host_level  -> OFF, ALL or HOT           env names   -> ctx copies
 *   ring_queries, sample_every, report_every, recalibrate_ms,
 *   calibration_tries, trace_capacity        -> their values, never 0
 *   rotate_scopes -> VKPROF_RING_ROTATE when set and valid (else the desc)
 *   trace_path  -> the path to trace to (desc or env; ctx copy), or NULL
 *   synchronization2 -> ENABLED only when vkCmdWriteTimestamp2 is wanted
 *                       (no_synchronization2 folded in, then false)
 * The enum ranges were checked by vkprof_create before.
 */
static vkprof_result resolve_desc(vkprof_context ctx, const vkprof_context_desc *in)
{
    vkprof_context_desc d = *in;
    /* the logger first, so that the rest can log through it */
    if (d.log_level == VKPROF_LOG_DEFAULT) {
        d.log_level = VKPROF_LOG_WARN;
    }
    ctx->desc.log = d.log;
    ctx->desc.log_user = d.log_user;
    ctx->desc.log_level = d.log_level;

    if (!copy_name(ctx->env_var, sizeof ctx->env_var, in->env_var, VKPROF_DEFAULT_ENV)) {
        vkprof__log(NULL, VKPROF_LOG_ERROR, VKPROF_ERROR_INVALID_ARGUMENT,
                    "vkprof_create: env_var name longer than %zu bytes", sizeof ctx->env_var - 1);
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    if (!copy_name(ctx->host_env_var, sizeof ctx->host_env_var, in->host_env_var,
                   VKPROF_DEFAULT_HOST_ENV)) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT, "host_env_var is too long");
    }
    if (!copy_name(ctx->trace_env_var, sizeof ctx->trace_env_var, in->trace_env_var,
                   VKPROF_DEFAULT_TRACE_ENV)) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT, "trace_env_var is too long");
    }
    d.env_var = ctx->env_var;
    d.host_env_var = ctx->host_env_var;
    d.trace_env_var = ctx->trace_env_var;

    /* desc.environment: VKPROF_ENV_IGNORE reads none of the variables below */
    const bool env = d.environment != VKPROF_ENV_IGNORE;
    if (d.enable == VKPROF_ENABLE_FROM_ENV) {
        const char *v = env ? getenv(ctx->env_var) : NULL;
        bool on = false;
        if (v != NULL && !vkprof_parse_flag(v, &on)) {
            vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_ERROR_INVALID_ARGUMENT,
                        "%s='%.64s' is not a flag (use 1/0, on/off, true/false, yes/no); "
                        "GPU profiling stays off",
                        ctx->env_var, v);
            on = false;
        }
        d.enable = on ? VKPROF_ENABLE_ON : VKPROF_ENABLE_OFF;
    }
    if (d.host_level == VKPROF_HOST_FROM_ENV) {
        const char *v = env ? getenv(ctx->host_env_var) : NULL;
        vkprof_host_level level = VKPROF_HOST_OFF;
        if (v != NULL && !parse_host_level(v, &level)) {
            vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_ERROR_INVALID_ARGUMENT,
                        "%s='%.64s' is not a level (1: every span, 2: hot spans only, "
                        "0 or empty: off); host profiling stays off",
                        ctx->host_env_var, v);
        }
        d.host_level = level;
    }

    if (d.ring_queries == 0) {
        d.ring_queries = VKPROF_DEFAULT_RING_QUERIES;
    } else if (d.ring_queries < VKPROF_MIN_RING_QUERIES) {
        d.ring_queries = VKPROF_MIN_RING_QUERIES;
    }
    if (d.sample_every == 0) {
        d.sample_every = 1;
    }
    /* rotating sampling: VKPROF_RING_ROTATE=K overrides the desc (0: off) */
    const char *rot = env ? getenv("VKPROF_RING_ROTATE") : NULL;
    if (rot != NULL && rot[0] != '\0') {
        char *endp = NULL;
        errno = 0;
        unsigned long long k = strtoull(rot, &endp, 10);
        if (errno != 0 || !isdigit((unsigned char)rot[0]) || *endp != '\0' || k > (1u << 24)) {
            vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_ERROR_INVALID_ARGUMENT,
                        "VKPROF_RING_ROTATE='%.64s' is not a count of phase calls (0..%u); "
                        "ignored (rotate_scopes stays %u)",
                        rot, 1u << 24, d.rotate_scopes);
        } else {
            d.rotate_scopes = (uint32_t)k;
        }
    }
    if (d.report_every == 0) {
        d.report_every = VKPROF_DEFAULT_REPORT_EVERY;
    }
    if (d.recalibrate_ms == 0) {
        d.recalibrate_ms = VKPROF_DEFAULT_RECALIBRATE_MS;
    }
    if (d.calibration_tries == 0) {
        d.calibration_tries = VKPROF_DEFAULT_CALIBRATION_TRIES;
    }
    if (d.trace_capacity == 0) {
        d.trace_capacity = VKPROF_DEFAULT_TRACE_CAPACITY;
    }

    /* The trace path: desc.trace_path wins over the env var; "" is off. */
    const char *path = in->trace_path;
    ctx->trace_from = "desc.trace_path";
    if (path == NULL && env) {
        path = getenv(ctx->trace_env_var);
        ctx->trace_from = ctx->trace_env_var;
    }
    d.trace_path = NULL;
    if (path != NULL && path[0] != '\0') {
        if (strlen(path) >= sizeof ctx->trace_path) {
            return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT, "trace path is too long");
        }
        memcpy(ctx->trace_path, path, strlen(path) + 1);
        d.trace_path = ctx->trace_path;
    }

    /* The trace's format: the desc's, else VKPROF_TRACE_FORMAT, else by the
     * path (resolved here once: writing a trace reads no environment). */
    if (d.trace_format == VKPROF_TRACE_FORMAT_DEFAULT) {
        d.trace_format = VKPROF_TRACE_FORMAT_BY_PATH;
        const char *f = env ? getenv("VKPROF_TRACE_FORMAT") : NULL;
        if (f != NULL && f[0] != '\0') {
            if (strcmp(f, "json") == 0) {
                d.trace_format = VKPROF_TRACE_FORMAT_JSON;
            } else if (strcmp(f, "pftrace") == 0 || strcmp(f, "perfetto") == 0) {
                d.trace_format = VKPROF_TRACE_FORMAT_PFTRACE;
            } else if (strcmp(f, "both") == 0) {
                d.trace_format = VKPROF_TRACE_FORMAT_BOTH;
            } else {
                vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_ERROR_INVALID_ARGUMENT,
                            "VKPROF_TRACE_FORMAT='%.64s' is not json, pftrace or both: the "
                            "trace format follows the path's extension",
                            f);
            }
        }
    }
    /* the spool file and the label, copied */
    d.trace_spool = NULL;
    if (in->trace_spool != NULL && in->trace_spool[0] != '\0') {
        if (strlen(in->trace_spool) >= sizeof ctx->spool_path) {
            return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT, "trace_spool is too long");
        }
        memcpy(ctx->spool_path, in->trace_spool, strlen(in->trace_spool) + 1);
        d.trace_spool = ctx->spool_path;
    }
    if (!copy_name(ctx->trace_label, sizeof ctx->trace_label, in->trace_label, "")) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT, "trace_label is too long");
    }
    d.trace_label = ctx->trace_label;

    /* vkCmdWriteTimestamp2 only when the app says it enabled synchronization2:
     * a 1.3 device hands out the entry point whether the feature is on or not
     * (VUID-vkCmdWriteTimestamp2-synchronization2-03858). no_synchronization2
     * (the older field) forces the core stamp whatever the new one says. */
    if (d.no_synchronization2 || d.synchronization2 != VKPROF_FEATURE_ENABLED) {
        d.synchronization2 = VKPROF_FEATURE_DISABLED;
    }
    d.no_synchronization2 = false;

    ctx->desc = d;
    return VKPROF_OK;
}

vkprof_result vkprof_create(const vkprof_context_desc *desc, vkprof_context *out)
{
    if (out == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    *out = NULL;
    if (desc == NULL || desc->instance == VK_NULL_HANDLE ||
        desc->physical_device == VK_NULL_HANDLE || desc->device == VK_NULL_HANDLE ||
        desc->get_instance_proc_addr == NULL || desc->get_device_proc_addr == NULL) {
        vkprof__log(NULL, VKPROF_LOG_ERROR, VKPROF_ERROR_INVALID_ARGUMENT,
                    "vkprof_create: instance, physical_device, device, get_instance_proc_addr "
                    "and get_device_proc_addr are required");
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    for (size_t i = 0; i < sizeof desc->reserved / sizeof desc->reserved[0]; i++) {
        if (desc->reserved[i] != 0) {
            vkprof__log(NULL, VKPROF_LOG_ERROR, VKPROF_ERROR_INVALID_ARGUMENT,
                        "vkprof_create: reserved fields must be zero");
            return VKPROF_ERROR_INVALID_ARGUMENT;
        }
    }
    if ((unsigned)desc->timing_mode > VKPROF_TIMING_RING || desc->ring_queries > (1u << 24) ||
        desc->rotate_scopes > (1u << 24) || (unsigned)desc->host_level > VKPROF_HOST_HOT ||
        desc->calibration_tries > 64) {
        vkprof__log(NULL, VKPROF_LOG_ERROR, VKPROF_ERROR_INVALID_ARGUMENT,
                    "vkprof_create: timing_mode, ring_queries or rotate_scopes (<= 2^24), "
                    "host_level or "
                    "calibration_tries (<= 64) out of range");
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    /* every value of each enum is accepted; VKPROF_LOG_REPORT is the last level */
    if ((unsigned)desc->enable > VKPROF_ENABLE_OFF ||
        (unsigned)desc->log_level > VKPROF_LOG_REPORT ||
        (unsigned)desc->synchronization2 > VKPROF_FEATURE_DISABLED ||
        (unsigned)desc->environment > VKPROF_ENV_IGNORE ||
        (unsigned)desc->trace_format > VKPROF_TRACE_FORMAT_BOTH ||
        (unsigned)desc->trace_keep > VKPROF_TRACE_KEEP_LAST ||
        (unsigned)desc->submit_collect > VKPROF_SUBMIT_COLLECT_OWN ||
        (unsigned)desc->trace_gpu_busy > VKPROF_FEATURE_DISABLED ||
        (unsigned)desc->outer_begin_top > VKPROF_FEATURE_DISABLED) {
        vkprof__log(NULL, VKPROF_LOG_ERROR, VKPROF_ERROR_INVALID_ARGUMENT,
                    "vkprof_create: enable, log_level, synchronization2, environment, "
                    "trace_format, trace_keep, submit_collect, trace_gpu_busy or outer_begin_top "
                    "out of range");
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    vkprof_context ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL) {
        return VKPROF_ERROR_OUT_OF_MEMORY;
    }
    vkprof_result r = resolve_desc(ctx, desc);
    if (r != VKPROF_OK) {
        free(ctx);
        return r;
    }

    r = load_functions(ctx);
    if (r == VKPROF_OK) {
        r = vkprof__phases_init(ctx);
    }
    if (r != VKPROF_OK) {
        vkprof__phases_free(ctx);
        free(ctx);
        return r;
    }
    read_device_facts(ctx);
    r = vkprof__host_init(ctx);
    if (r == VKPROF_OK) {
        r = vkprof__cal_init(ctx);
    }
    if (r == VKPROF_OK && ctx->desc.trace_spool != NULL) {
        r = vkprof__spool_create(ctx); /* no file: the store stays in memory, logged */
    }
    if (r == VKPROF_OK) {
        r = vkprof__trace_init(ctx);
    }
    if (r == VKPROF_OK && ctx->desc.trace_spool != NULL) {
        /* a spool is a trace: on from the start (in memory when the file
         * could not be made) */
        r = vkprof_trace_begin(ctx, 0);
    }
    if (r == VKPROF_OK && vkprof__ring_mode(ctx)) {
        r = vkprof__ring_create(ctx);
    }
    if (r != VKPROF_OK) {
        vkprof__ring_shutdown(ctx);
        vkprof__spool_close(ctx);
        vkprof__trace_shutdown(ctx);
        vkprof__cal_shutdown(ctx);
        vkprof__phases_free(ctx);
        free(ctx);
        return r;
    }

    ctx->requested = ctx->desc.enable == VKPROF_ENABLE_ON;
    if (ctx->requested && !ctx->info.supported) {
        vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_DISABLED,
                    "GPU profiling requested, but queue family %u of '%s' has no timestamps; "
                    "every vkprof call is a no-op",
                    ctx->desc.queue_family_index, ctx->info.device_name);
    }
    vkprof__update_active(ctx);
    /* The first calibration point, so GPU scopes can be placed from the start. */
    if (ctx->cal.method != VKPROF_CALIBRATION_NONE && ctx->head.active) {
        (void)vkprof_calibrate(ctx);
    }
    /* the spool's first checkpoint: readable from now on, whatever ends the
     * process */
    vkprof__spool_checkpoint(ctx);
    *out = ctx;
    return VKPROF_OK;
}

/* The device is idle by the time the app destroys the context (it must be,
 * for the query pool to be destroyed): fold what finished but was never
 * collected, and count what never ran as lost, so the final trace and the
 * counters are whole. */
static void collect_at_destroy(vkprof_context ctx)
{
    if (vkprof__ring_mode(ctx)) {
        uint64_t late, left;
        vkprof__ring_destroy_collect(ctx, &late, &left);
        if (late > 0) {
            vkprof__log(ctx, VKPROF_LOG_INFO, VKPROF_OK,
                        "destroy: collected %llu finished GPU scope(s) that were never collected",
                        (unsigned long long)late);
        }
        if (left > 0) {
            vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_OK,
                        "destroy: %llu GPU scope(s) had not run (never submitted, still running, "
                        "or left open); counted as lost",
                        (unsigned long long)left);
        }
        return;
    }
    if (ctx->gpu.state == VKPROF_SCOPE_ENDED || ctx->gpu.state == VKPROF_SCOPE_RESOLVED) {
        ctx->errors.discarded++;
        ctx->gpu.lost_misuse++;
        ctx->gpu.state = VKPROF_SCOPE_IDLE;
        vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_OK,
                    "destroy: the last '%s' scope was never accumulated; discarded",
                    ctx->gpu.phases[ctx->gpu.scope_phase].name);
    }
}

void vkprof_destroy(vkprof_context ctx)
{
    if (ctx == NULL) {
        return;
    }
    if (ctx->offline) {
        vkprof__spool_destroy_offline(ctx); /* an opened spool: no Vulkan, no flush */
        return;
    }
    collect_at_destroy(ctx);
    if (ctx->trace.path[0] != '\0') {
        (void)vkprof_trace_flush(ctx);
    }
    vkprof__spool_close(ctx); /* the last checkpoint; the store goes with the file */
    vkprof__trace_shutdown(ctx);
    vkprof__host_shutdown(ctx);
    vkprof__cal_shutdown(ctx);
    vkprof__timing_shutdown(ctx);
    vkprof__phases_free(ctx);
    free(ctx);
}

void vkprof_set_active(vkprof_context ctx, bool on)
{
    if (ctx == NULL || ctx->offline) {
        return; /* an opened spool times nothing */
    }
    if (!on) {
        /* An open or unfolded scope cannot be completed once off. */
        vkprof__twoslot_abandon(ctx);
    }
    if (!on && vkprof__ring_mode(ctx)) {
        vkprof__ring_on_disable(ctx); /* open scopes are given up where they are */
    }
    ctx->requested = on;
    vkprof__update_active(ctx);
}

vkprof_result vkprof_get_device_info(vkprof_context ctx, vkprof_device_info *out)
{
    if (ctx == NULL || out == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    *out = ctx->info;
    return VKPROF_OK;
}

vkprof_result vkprof_get_desc(vkprof_context ctx, vkprof_context_desc *out)
{
    if (ctx == NULL || out == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    *out = ctx->desc;
    return VKPROF_OK;
}

/* A step is the app's token: the GPU core (sampling, shared boundaries), the
 * timeline and the per-token report each learn of it, from here. */
void vkprof_step(vkprof_context ctx)
{
    if (ctx == NULL || ctx->offline) {
        return;
    }
    uint64_t step = vkprof__steps_advance(ctx); /* steps count from 1 */
    vkprof__timing_on_step(ctx, step - 1);
    uint64_t now = vkprof_host_now_ns();
    if (atomic_load_explicit(&ctx->trace.on, memory_order_relaxed)) {
        vkprof__trace_step(ctx, step, now);
    }
    vkprof__host_on_step(ctx, step, now, vkprof_get_timing_stats);
    vkprof__spool_checkpoint(ctx);
}

vkprof_result vkprof_collect(vkprof_context ctx)
{
    vkprof_result r = vkprof__collect(ctx);
    if (ctx != NULL && ctx->spool != NULL) {
        vkprof__spool_checkpoint(ctx); /* what was folded reaches the file */
    }
    return r;
}
