/*
 * vkprof: per-phase GPU timing for Vulkan compute work.
 *
 * The app hands over its Vulkan objects and proc-addr functions; the library
 * loads no Vulkan loader of its own and keeps a per-context function table.
 *
 * Thread safety: a vkprof_context is NOT thread-safe. Calls on one context
 * must be externally serialised (one recording thread per context is the
 * normal case). Distinct contexts are independent. vkprof_result_name(),
 * vkprof_default_desc() and vkprof_parse_flag() are thread-safe.
 *
 * Cost when off: while profiling is off (or the queue family has no
 * timestamps) every call returns at once and records no Vulkan command and
 * creates no query pool. The VKPROF_* macros below test vkprof_active()
 * inline first, so a call site costs one load and one branch.
 */
#ifndef VKPROF_VKPROF_H
#define VKPROF_VKPROF_H

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version ----------------------------------------------------------- */

#define VKPROF_VERSION_MAJOR 0
#define VKPROF_VERSION_MINOR 1
#define VKPROF_VERSION_PATCH 0
#define VKPROF_VERSION \
    ((VKPROF_VERSION_MAJOR * 10000) + (VKPROF_VERSION_MINOR * 100) + VKPROF_VERSION_PATCH)

/** Version the library was built as (compare with VKPROF_VERSION). */
uint32_t vkprof_version(void);

/* ---- enums ------------------------------------------------------------- */

/* X-macro: every result code, its value and a one-line meaning. */
#define VKPROF_RESULTS(X)                                                                  \
    X(VKPROF_OK, 0, "success")                                                             \
    X(VKPROF_DISABLED, 1, "profiling is off or unsupported; nothing was done")             \
    X(VKPROF_ERROR_INVALID_ARGUMENT, -1, "an argument is NULL, zero or out of range")       \
    X(VKPROF_ERROR_UNKNOWN_PHASE, -2, "the phase id was never registered")                 \
    X(VKPROF_ERROR_BEGIN_TWICE, -3, "begin while a scope is already open (not re-entrant)") \
    X(VKPROF_ERROR_END_WITHOUT_BEGIN, -4, "end without an open scope")                     \
    X(VKPROF_ERROR_PHASE_MISMATCH, -5, "end/accumulate names another phase than begin")    \
    X(VKPROF_ERROR_NOT_ENDED, -6, "resolve or accumulate before end")                      \
    X(VKPROF_ERROR_NOT_RESOLVED, -7, "accumulate before a successful resolve")             \
    X(VKPROF_ERROR_NOTHING_PENDING, -8, "resolve or accumulate with no scope recorded")    \
    X(VKPROF_ERROR_NOT_READY, -9, "the GPU has not written the timestamps yet")            \
    X(VKPROF_ERROR_VULKAN, -10, "a Vulkan call failed")                                    \
    X(VKPROF_ERROR_OUT_OF_MEMORY, -11, "host memory allocation failed")                    \
    X(VKPROF_ERROR_MISSING_FUNCTION, -12, "a required Vulkan entry point is missing")       \
    X(VKPROF_ERROR_TOO_MANY_PHASES, -13, "the phase table is full")                        \
    X(VKPROF_ERROR_BUFFER_TOO_SMALL, -14, "the output buffer is too small")

typedef enum vkprof_result {
#define VKPROF_X_(name, value, text) name = value,
    VKPROF_RESULTS(VKPROF_X_)
#undef VKPROF_X_
    VKPROF_RESULT_MAX_ENUM_ = 0x7fffffff
} vkprof_result;

/** Name of a result code ("VKPROF_ERROR_NOT_READY"); never NULL. */
const char *vkprof_result_name(vkprof_result r);
/** One-line meaning of a result code; never NULL. */
const char *vkprof_result_text(vkprof_result r);

/** The default phases for LLM decode. Their ids are fixed; app phases follow. */
#define VKPROF_DEFAULT_PHASES(X)                 \
    X(VKPROF_PHASE_EMBEDDING, "embedding")       \
    X(VKPROF_PHASE_NORM, "norm")                 \
    X(VKPROF_PHASE_QKV, "qkv_proj")              \
    X(VKPROF_PHASE_ROPE, "rope")                 \
    X(VKPROF_PHASE_ATTENTION, "attention")       \
    X(VKPROF_PHASE_ATTN_OUTPUT, "attn_output")   \
    X(VKPROF_PHASE_MLP_GATE_UP, "mlp_gate_up")   \
    X(VKPROF_PHASE_ACTIVATION, "activation")     \
    X(VKPROF_PHASE_MLP_DOWN, "mlp_down")         \
    X(VKPROF_PHASE_MOE_ROUTER, "moe_router")     \
    X(VKPROF_PHASE_MOE_EXPERTS, "moe_experts")   \
    X(VKPROF_PHASE_MOE_COMBINE, "moe_combine")   \
    X(VKPROF_PHASE_ALL_REDUCE, "all_reduce")     \
    X(VKPROF_PHASE_LM_HEAD, "lm_head")           \
    X(VKPROF_PHASE_SAMPLING, "sampling")

typedef enum vkprof_default_phase {
#define VKPROF_X_(id, name) id,
    VKPROF_DEFAULT_PHASES(VKPROF_X_)
#undef VKPROF_X_
    VKPROF_PHASE_DEFAULT_COUNT
} vkprof_default_phase;

/** A phase id: one of vkprof_default_phase, or one returned by vkprof_register_phase(). */
typedef uint32_t vkprof_phase;

/** Most phases a context holds (defaults included). */
#define VKPROF_MAX_PHASES 256u
/** Longest phase name kept, in bytes, without the terminating NUL. */
#define VKPROF_MAX_NAME 63u

/** How profiling is switched on when a context is created. */
typedef enum vkprof_enable_mode {
    VKPROF_ENABLE_FROM_ENV = 0, /**< read the env var (default VKPROF_GPU_PROFILE) once */
    VKPROF_ENABLE_ON = 1,       /**< on, whatever the environment says */
    VKPROF_ENABLE_OFF = 2       /**< off, whatever the environment says */
} vkprof_enable_mode;

typedef enum vkprof_log_level {
    VKPROF_LOG_DEFAULT = 0, /**< as a desc field: WARN */
    VKPROF_LOG_ERROR = 1,
    VKPROF_LOG_WARN = 2,
    VKPROF_LOG_INFO = 3
} vkprof_log_level;

/* ---- handles ----------------------------------------------------------- */

typedef struct vkprof_context_T *vkprof_context;

/* ---- structs ----------------------------------------------------------- */

/**
 * Logger callback. `code` is the result the message is about (VKPROF_OK for
 * plain information). `message` is valid only during the call.
 */
typedef void (*vkprof_log_fn)(void *user, vkprof_log_level level, vkprof_result code,
                              const char *message);

/**
 * Everything the library needs from the app. Zero means default for every
 * field except the Vulkan handles and the two proc-addr functions, which are
 * required. Start from vkprof_default_desc() or `= {0}`.
 */
typedef struct vkprof_context_desc {
    VkInstance instance;                           /**< required */
    VkPhysicalDevice physical_device;              /**< required */
    VkDevice device;                               /**< required */
    uint32_t queue_family_index;                   /**< family the timed work is submitted to */
    PFN_vkGetInstanceProcAddr get_instance_proc_addr; /**< required */
    PFN_vkGetDeviceProcAddr get_device_proc_addr;  /**< required */
    const VkAllocationCallbacks *vk_allocator;     /**< passed to vkCreate/DestroyQueryPool */

    vkprof_enable_mode enable;  /**< default VKPROF_ENABLE_FROM_ENV */
    const char *env_var;        /**< default "VKPROF_GPU_PROFILE"; copied */

    /**
     * Set to true when the app did NOT enable the synchronization2 feature
     * (Vulkan 1.3 core or VK_KHR_synchronization2). The library then stamps
     * with vkCmdWriteTimestamp(BOTTOM_OF_PIPE) instead of
     * vkCmdWriteTimestamp2(ALL_COMMANDS), which needs that feature.
     */
    bool no_synchronization2;

    /**
     * Set to true when the app enabled the hostQueryReset feature (Vulkan 1.2
     * core or VK_EXT_host_query_reset). The library then also resets its
     * queries from the host, at creation and after every successful read, so
     * a result read early reports NOT_READY instead of an earlier scope's
     * values. Without it the library detects such stale reads by comparing
     * with the last pair it read.
     */
    bool host_query_reset;

    vkprof_log_fn log;     /**< default: lines on stderr */
    void *log_user;
    vkprof_log_level log_level; /**< most verbose level passed to log; default WARN */

    uint32_t reserved[8]; /**< must be zero */
} vkprof_context_desc;

/** Figures of one phase since the last reset. Times are exact GPU nanoseconds. */
typedef struct vkprof_phase_stats {
    vkprof_phase id;
    char name[VKPROF_MAX_NAME + 1];
    uint64_t count;     /**< scopes folded in */
    uint64_t total_ns;  /**< sum of (end - begin), masked, then scaled once */
    uint64_t min_ns;    /**< shortest scope (0 when count is 0) */
    uint64_t max_ns;    /**< longest scope */
    uint64_t total_ticks; /**< the same sum in raw device ticks */
} vkprof_phase_stats;

/** Misuse and failures since the last reset. None of these is ever folded into a phase. */
typedef struct vkprof_error_counts {
    uint64_t begin_twice;
    uint64_t end_without_begin;
    uint64_t phase_mismatch;
    uint64_t not_ended;          /**< resolve/accumulate before end */
    uint64_t not_resolved;       /**< accumulate before a successful resolve */
    uint64_t nothing_pending;
    uint64_t unknown_phase;
    uint64_t not_ready;
    uint64_t vulkan_errors;
    uint64_t discarded;          /**< scopes ended but never accumulated, then begun over */
    uint64_t invalid_argument;
} vkprof_error_counts;

/** Device facts the context found; read with vkprof_get_device_info(). */
typedef struct vkprof_device_info {
    char device_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
    uint32_t vendor_id, device_id, api_version, driver_version;
    uint32_t queue_family_index;
    uint32_t timestamp_valid_bits; /**< 0: no timestamps on this family */
    float timestamp_period;        /**< ns per tick, as the driver reports it */
    bool requested;   /**< profiling was asked for (env var, desc or set_enabled) */
    bool supported;   /**< the queue family has timestamps */
    bool timestamp2;  /**< vkCmdWriteTimestamp2 is used (else vkCmdWriteTimestamp) */
} vkprof_device_info;

/* ---- functions --------------------------------------------------------- */

/** A desc with every default filled in (the Vulkan handles left zero). */
vkprof_context_desc vkprof_default_desc(void);

/**
 * Create a context. Reads the enable env var once (unless desc->enable says
 * otherwise). Never fails because timestamps are missing: the context is
 * then simply inactive. Returns VKPROF_ERROR_INVALID_ARGUMENT for missing
 * required fields, VKPROF_ERROR_MISSING_FUNCTION when an instance entry
 * point cannot be loaded, VKPROF_ERROR_OUT_OF_MEMORY.
 * `*out` is set to NULL on failure.
 */
vkprof_result vkprof_create(const vkprof_context_desc *desc, vkprof_context *out);

/** Destroy a context and its query pool. NULL is accepted. The device must be idle
 *  with respect to any command buffer that still references the pool. */
void vkprof_destroy(vkprof_context ctx);

/* Layout shared with the inline fast path. Do not touch its fields. */
struct vkprof_context_head_ {
    volatile int active; /* requested && supported */
};

/** True only when profiling is requested AND the queue family has timestamps.
 *  Inline: one load, no call. NULL gives false. */
static inline bool vkprof_active(vkprof_context ctx)
{
    return ctx != NULL && ((const struct vkprof_context_head_ *)(const void *)ctx)->active != 0;
}

/** The same as vkprof_active(), as an exported function. */
bool vkprof_enabled(vkprof_context ctx);

/** Force profiling on or off at runtime. Turning it on has no effect when the
 *  queue family has no timestamps (vkprof_enabled() stays false). Turning it
 *  off abandons an open scope without folding it. */
void vkprof_set_enabled(vkprof_context ctx, bool on);

/**
 * Parse an enable flag: "1", "on", "true", "yes" -> true; "0", "off",
 * "false", "no", "" -> false (case-insensitive, surrounding blanks allowed).
 * Returns false for anything else, leaving *out untouched.
 */
bool vkprof_parse_flag(const char *text, bool *out);

/** Device facts; returns VKPROF_ERROR_INVALID_ARGUMENT for NULL. */
vkprof_result vkprof_get_device_info(vkprof_context ctx, vkprof_device_info *out);

/**
 * Register an app phase by name (at most VKPROF_MAX_NAME bytes, not empty).
 * A name already registered (default names included) returns its id.
 */
vkprof_result vkprof_register_phase(vkprof_context ctx, const char *name, vkprof_phase *out);

/** Number of registered phases (defaults included). */
uint32_t vkprof_phase_count(vkprof_context ctx);

/** Name of a phase, or NULL for an unknown id. */
const char *vkprof_phase_name(vkprof_context ctx, vkprof_phase phase);

/*
 * The 2-slot timing cycle (not re-entrant: one scope at a time per context):
 *
 *   vkprof_cmd_begin(ctx, cmd, phase);   before the first dispatch
 *   ... vkCmdDispatch ...
 *   vkprof_cmd_end(ctx, cmd, phase);     after the last dispatch
 *   (submit, wait for the fence)
 *   vkprof_resolve(ctx, &ns);            read the two results
 *   vkprof_accumulate(ctx, phase);       fold end - begin into the phase
 *
 * Each stamp is vkCmdWriteTimestamp2(ALL_COMMANDS) into a 2-slot query pool,
 * created on first use; begin records vkCmdResetQueryPool for both slots
 * first, so the pool needs no host reset. The command buffer must be in the
 * recording state, outside any render pass, on the context's queue family.
 *
 * All of them return VKPROF_DISABLED (and do nothing) while inactive.
 * Misuse returns an error, is counted in vkprof_error_counts, goes to the
 * logger, and never folds a value into a phase.
 */

/** Stamp the beginning of a scope. A scope ended but never accumulated is
 *  discarded (counted as `discarded`). */
vkprof_result vkprof_cmd_begin(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase);

/** Stamp the end of the open scope; `phase` must be the one given to begin. */
vkprof_result vkprof_cmd_end(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase);

/** Records the app's dispatch(es) for one scope. */
typedef void (*vkprof_record_fn)(VkCommandBuffer cmd, void *user);

/**
 * One-dispatch scope ("both"): begin, then `record(cmd, user)`, then end.
 * `record` is always called, also when profiling is off, so the app's work is
 * recorded either way; the library itself records nothing while off.
 */
vkprof_result vkprof_cmd_both(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase,
                              vkprof_record_fn record, void *user);

/**
 * Read the two results with vkGetQueryPoolResults (64-bit, WITH_AVAILABILITY,
 * never WAIT). Call after the submit's fence. VKPROF_ERROR_NOT_READY when the
 * GPU has not written both yet: nothing changes, and a later call may succeed.
 * On success `*out_ns` (may be NULL) gets the exact scope duration.
 */
vkprof_result vkprof_resolve(vkprof_context ctx, uint64_t *out_ns);

/** Fold the resolved scope into `phase` (which must be the scope's phase). */
vkprof_result vkprof_accumulate(vkprof_context ctx, vkprof_phase phase);

/** True when any phase has at least one scope folded in since the last reset. */
bool vkprof_any_recorded(vkprof_context ctx);

/** Zero every phase figure and error counter. Registered phases stay. */
void vkprof_reset(vkprof_context ctx);

/**
 * Copy all phases (ids 0..count-1) into `out` (room for `cap`). `*count` gets
 * the number of phases; returns VKPROF_ERROR_BUFFER_TOO_SMALL (after filling
 * `cap`) when cap is smaller. `errors` may be NULL.
 */
vkprof_result vkprof_snapshot(vkprof_context ctx, vkprof_phase_stats *out, uint32_t cap,
                              uint32_t *count, vkprof_error_counts *errors);

/**
 * The snapshot as one JSON object (UTF-8, NUL-terminated) in `buf`. `*needed`
 * gets the size needed including the NUL; with a NULL or small buffer the
 * result is VKPROF_ERROR_BUFFER_TOO_SMALL and nothing partial is claimed.
 */
vkprof_result vkprof_snapshot_json(vkprof_context ctx, char *buf, size_t cap, size_t *needed);

/**
 * Exact tick -> ns conversion: floor(ticks * period), computed in 128-bit
 * fixed point from the float period, saturating at UINT64_MAX.
 */
uint64_t vkprof_ticks_to_ns(uint64_t ticks, float timestamp_period);

/** (end - begin) masked to `valid_bits` (36..64; 0 gives 0). Right across a wrap. */
uint64_t vkprof_tick_delta(uint64_t begin, uint64_t end, uint32_t valid_bits);

/* ---- call-site macros --------------------------------------------------- */
/*
 * Define VKPROF_DISABLE before including this header to compile every call
 * site out: the macros then expand to nothing that is evaluated (except the
 * record callback of VKPROF_BOTH, which must still record the work).
 */
#ifndef VKPROF_DISABLE
#define VKPROF_BEGIN(ctx, cmd, phase) \
    (vkprof_active(ctx) ? vkprof_cmd_begin((ctx), (cmd), (phase)) : VKPROF_DISABLED)
#define VKPROF_END(ctx, cmd, phase) \
    (vkprof_active(ctx) ? vkprof_cmd_end((ctx), (cmd), (phase)) : VKPROF_DISABLED)
#define VKPROF_BOTH(ctx, cmd, phase, record, user) \
    vkprof_cmd_both((ctx), (cmd), (phase), (record), (user))
#else
#define VKPROF_BEGIN(ctx, cmd, phase) ((void)0, VKPROF_DISABLED)
#define VKPROF_END(ctx, cmd, phase) ((void)0, VKPROF_DISABLED)
#define VKPROF_BOTH(ctx, cmd, phase, record, user) ((record)((cmd), (user)), VKPROF_DISABLED)
#endif

#ifdef __cplusplus
}
#endif
#endif /* VKPROF_VKPROF_H */
