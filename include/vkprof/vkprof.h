/*
 * vkprof: per-phase GPU timing for Vulkan compute work, host spans, and one
 * timeline of both for Perfetto.
 *
 * The app hands over its Vulkan objects and proc-addr functions; the library
 * loads no Vulkan loader of its own and keeps a per-context function table.
 *
 * QUICK START (the ring mode: never stalls, any thread; the README has the
 * 2-slot mode and more)
 *
 *   1. Create a context for the queue family you time:
 *        vkprof_context_desc d = vkprof_default_desc(); // zero means default
 *        d.instance = inst; d.physical_device = phys; d.device = dev;
 *        d.queue_family_index = family; d.queue = queue;
 *        d.get_instance_proc_addr = vkGetInstanceProcAddr;
 *        d.get_device_proc_addr = vkGetDeviceProcAddr;
 *        d.timing_mode = VKPROF_TIMING_RING;
 *        vkprof_context prof;
 *        vkprof_create(&d, &prof); // on with VKPROF_GPU_PROFILE=1 and timestamps
 *   2. Around each phase's dispatches, while recording:
 *        VKPROF_BEGIN(prof, cmd, VKPROF_PHASE_ATTENTION);
 *        vkCmdDispatch(cmd, ...);
 *        VKPROF_END(prof, cmd, VKPROF_PHASE_ATTENTION);
 *   3. Submit through it (or call vkprof_cmd_submit just before your own):
 *        vkprof_queue_submit(prof, queue, 1, &submit_info, fence);
 *   4. After the fence, once per token:
 *        vkprof_collect(prof); vkprof_step(prof);
 *   5. Read and write:
 *        vkprof_snapshot_json(prof, buf, sizeof buf, &need); // or vkprof_snapshot
 *        vkprof_trace_write(prof, "run.json"); // after vkprof_trace_begin(prof, 0)
 *        vkprof_destroy(prof);
 *   Host spans: vkprof_span_begin / vkprof_span_end around host work.
 *
 * THREAD SAFETY, call by call. Distinct contexts are independent.
 *   Any thread, any time, concurrently:
 *     vkprof_version, vkprof_result_name/_text, vkprof_default_desc,
 *     vkprof_parse_flag, vkprof_ticks_to_ns, vkprof_tick_delta,
 *     vkprof_host_now_ns, vkprof_active, vkprof_register_phase (a short
 *     lock), vkprof_phase_count/_name, vkprof_get_device_info, vkprof_get_desc;
 *     the host spans: vkprof_span_*, vkprof_register_bucket (a short lock),
 *     vkprof_bucket_*, vkprof_get/set_host_level, vkprof_rendezvous,
 *     vkprof_set_thread_name, vkprof_step, vkprof_step_count
 *     (tests/device/test_threads.c: 8 threads under TSan); vkprof_spool_sync and
 *     vkprof_spool_status (the spool's mutex).
 *   Ring mode (VKPROF_TIMING_RING), any thread, concurrently:
 *     VKPROF_BEGIN/END, vkprof_cmd_begin/_end/_end_args/_both, each command
 *     buffer recorded by one thread at a time as Vulkan requires (lock-free);
 *     vkprof_cmd_submit(_flow), vkprof_queue_submit(2), vkprof_cmd_release,
 *     vkprof_cmd_discard and vkprof_collect (one spin lock)
 *     (tests/device/test_submit_threads.c: 8 threads under TSan).
 *   One thread at a time, and not while vkprof_collect runs on another (it
 *   folds the samples these read or reset):
 *     vkprof_snapshot(_json), vkprof_get_timing_stats, vkprof_format_report,
 *     vkprof_reset, vkprof_calibrate, vkprof_get_calibration,
 *     vkprof_device_to_host_ns, vkprof_trace_begin, vkprof_trace_write(_set),
 *     vkprof_trace_flush (exporting takes only published events: other threads may
 *     go on recording spans and scopes meanwhile).
 *   2-slot mode (the default timing_mode): every timing call (begin, end,
 *     resolve, accumulate, collect, last_scope_ticks) on one thread at a
 *     time: it has one scope in flight.
 *   vkprof_create and vkprof_destroy: destroy when no other call on the
 *     context is in flight.
 *
 * Cost when off: while profiling is off (or the queue family has no
 * timestamps) every call returns at once and records no Vulkan command and
 * creates no query pool. The VKPROF_* macros below test vkprof_active()
 * inline first, so a call site costs one load and one branch.
 */
#ifndef VKPROF_VKPROF_H
#define VKPROF_VKPROF_H

/* Includes <vulkan/vulkan.h> as the app has it: with the prototypes unless
 * the app defined VK_NO_PROTOTYPES itself (volk and the like). The library's
 * own sources define VK_NO_PROTOTYPES (src/context.h). */
#include <vulkan/vulkan.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* libvkprof.so exports only what this header declares: the library is built
 * with -fvisibility=hidden, and these declarations are default-visible. */
#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC visibility push(default)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- version ----------------------------------------------------------- */

#define VKPROF_VERSION_MAJOR 0
#define VKPROF_VERSION_MINOR 2
#define VKPROF_VERSION_PATCH 0
#define VKPROF_VERSION                                                                             \
    ((VKPROF_VERSION_MAJOR * 10000) + (VKPROF_VERSION_MINOR * 100) + VKPROF_VERSION_PATCH)

/** Version the library was built as (compare with VKPROF_VERSION). */
uint32_t vkprof_version(void);

/* ---- enums ------------------------------------------------------------- */

/* X-macro: every result code, its value and a one-line meaning. */
#define VKPROF_RESULTS(X)                                                                          \
    X(VKPROF_OK, 0, "success")                                                                     \
    X(VKPROF_DISABLED, 1, "profiling is off or unsupported; nothing was done")                     \
    X(VKPROF_ERROR_INVALID_ARGUMENT, -1, "an argument is NULL, zero or out of range")              \
    X(VKPROF_ERROR_UNKNOWN_PHASE, -2, "the phase id was never registered")                         \
    X(VKPROF_ERROR_BEGIN_TWICE, -3, "begin while a scope is already open (not re-entrant)")        \
    X(VKPROF_ERROR_END_WITHOUT_BEGIN, -4, "end without an open scope")                             \
    X(VKPROF_ERROR_PHASE_MISMATCH, -5, "end/accumulate names another phase than begin")            \
    X(VKPROF_ERROR_NOT_ENDED, -6, "resolve or accumulate before end")                              \
    X(VKPROF_ERROR_NOT_RESOLVED, -7, "accumulate before a successful resolve")                     \
    X(VKPROF_ERROR_NOTHING_PENDING, -8, "resolve or accumulate with no scope recorded")            \
    X(VKPROF_ERROR_NOT_READY, -9, "the GPU has not written the timestamps yet")                    \
    X(VKPROF_ERROR_VULKAN, -10, "a Vulkan call failed")                                            \
    X(VKPROF_ERROR_OUT_OF_MEMORY, -11, "host memory allocation failed")                            \
    X(VKPROF_ERROR_MISSING_FUNCTION, -12, "a required Vulkan entry point is missing")              \
    X(VKPROF_ERROR_TOO_MANY_PHASES, -13, "the phase table is full")                                \
    X(VKPROF_ERROR_BUFFER_TOO_SMALL, -14, "the output buffer is too small")                        \
    X(VKPROF_ERROR_IO, -15, "a file could not be written (see the log for why)")                   \
    X(VKPROF_ERROR_UNKNOWN_BUCKET, -16, "the bucket id was never registered")                      \
    X(VKPROF_ERROR_NO_CALIBRATION, -17, "no GPU-to-host clock mapping is available")               \
    X(VKPROF_ERROR_NOT_TRACING, -18, "tracing is off")                                             \
    X(VKPROF_ERROR_SPAN_TOO_DEEP, -19,                                                             \
      "more than VKPROF_SPAN_MAX_DEPTH spans open on this thread; the new one is not timed")       \
    X(VKPROF_ERROR_SPAN_CLOSED, -20,                                                               \
      "the span was closed or given up already, or is another thread's or context's")              \
    X(VKPROF_ERROR_SPAN_ORDER, -21,                                                                \
      "a span closed while spans opened inside it were open; those were given up")

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
#define VKPROF_DEFAULT_PHASES(X)                                                                   \
    X(VKPROF_PHASE_EMBEDDING, "embedding")                                                         \
    X(VKPROF_PHASE_NORM, "norm")                                                                   \
    X(VKPROF_PHASE_QKV, "qkv_proj")                                                                \
    X(VKPROF_PHASE_ROPE, "rope")                                                                   \
    X(VKPROF_PHASE_ATTENTION, "attention")                                                         \
    X(VKPROF_PHASE_ATTN_OUTPUT, "attn_output")                                                     \
    X(VKPROF_PHASE_MLP_GATE_UP, "mlp_gate_up")                                                     \
    X(VKPROF_PHASE_ACTIVATION, "activation")                                                       \
    X(VKPROF_PHASE_MLP_DOWN, "mlp_down")                                                           \
    X(VKPROF_PHASE_MOE_ROUTER, "moe_router")                                                       \
    X(VKPROF_PHASE_MOE_EXPERTS, "moe_experts")                                                     \
    X(VKPROF_PHASE_MOE_COMBINE, "moe_combine")                                                     \
    X(VKPROF_PHASE_ALL_REDUCE, "all_reduce")                                                       \
    X(VKPROF_PHASE_LM_HEAD, "lm_head")                                                             \
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

/** How GPU scopes are timed (chosen when the context is created). */
typedef enum vkprof_timing_mode {
    /** One scope at a time in a 2-slot pool: the app submits and waits after
     *  each scope, then resolve + accumulate. Exact, and it serialises. */
    VKPROF_TIMING_2SLOT = 0,
    /** Many scopes in flight in a multi-slot pool; vkprof_collect() folds
     *  whatever the GPU has finished, never blocks, and frees the slots. */
    VKPROF_TIMING_RING = 1
} vkprof_timing_mode;

/** The sampling period the benchmark and the docs call "the default N": with
 *  shared boundaries, 1 token in 32 costs under 0.5% on the H200 (docs/performance.md). */
#define VKPROF_DEFAULT_SAMPLE_EVERY 32u

/** The rotating window the benchmark and `vkprof decode --profile
 *  ring-rotating` use (desc.rotate_scopes): 4 phase calls, 5 stamps a token
 *  with shared boundaries (docs/performance.md). */
#define VKPROF_DEFAULT_ROTATE_SCOPES 4u

/** How profiling is switched on when a context is created. */
typedef enum vkprof_enable_mode {
    VKPROF_ENABLE_FROM_ENV = 0, /**< read the env var (default VKPROF_GPU_PROFILE) once */
    VKPROF_ENABLE_ON = 1,       /**< on, whatever the environment says */
    VKPROF_ENABLE_OFF = 2       /**< off, whatever the environment says */
} vkprof_enable_mode;

/** Levels of logger messages. As desc.log_level: the most verbose level
 *  passed to the logger; every value below is accepted there. */
typedef enum vkprof_log_level {
    VKPROF_LOG_DEFAULT = 0, /**< as a desc field: WARN */
    VKPROF_LOG_ERROR = 1,
    VKPROF_LOG_WARN = 2,
    VKPROF_LOG_INFO = 3,
    /** The per-token host report (vkprof_step): always delivered while host
     *  profiling is on, whatever desc.log_level says, and never while it is
     *  off. As a desc field: the most verbose, so errors, warnings and info
     *  are all delivered. */
    VKPROF_LOG_REPORT = 4
} vkprof_log_level;

/** What the app says about an optional device feature it may have enabled.
 *  The library cannot ask a VkDevice which features were enabled, and an
 *  entry point being loadable does not mean its feature is on. */
typedef enum vkprof_feature {
    VKPROF_FEATURE_UNKNOWN = 0, /**< not said: the library uses only what is always valid */
    VKPROF_FEATURE_ENABLED = 1, /**< the app enabled the feature on desc.device */
    VKPROF_FEATURE_DISABLED = 2 /**< the app did not enable it */
} vkprof_feature;

/** Which environment variables vkprof_create() reads (desc.environment). */
typedef enum vkprof_env_policy {
    /** The default: the variables the desc names (env_var, host_env_var,
     *  trace_env_var) where their fields say "from the environment", and
     *  VKPROF_TRACE_FORMAT, VKPROF_RING_ROTATE and VKPROF_HOST_CLOCK; each
     *  once, in vkprof_create(), never after. */
    VKPROF_ENV_READ = 0,
    /** None: every setting comes from the desc, and a field that says "from
     *  the environment" takes its off/default value (enable FROM_ENV: off;
     *  host_level FROM_ENV: off; trace_path NULL: no trace). For a front end
     *  with options of its own (the Vulkan layer reads only VKPROF_LAYER_*),
     *  so that the library's variables, set for another process, cannot leak
     *  into it. */
    VKPROF_ENV_IGNORE = 1
} vkprof_env_policy;

/** The format(s) a trace is written in (desc.trace_format). */
typedef enum vkprof_trace_format {
    /** VKPROF_TRACE_FORMAT (json, pftrace, perfetto, both) when it is set and
     *  the environment is read; else by the path, as BY_PATH. */
    VKPROF_TRACE_FORMAT_DEFAULT = 0,
    /** A path ending in .pftrace or .perfetto-trace: Perfetto's protobuf;
     *  any other path: Chrome JSON. */
    VKPROF_TRACE_FORMAT_BY_PATH = 1,
    VKPROF_TRACE_FORMAT_JSON = 2,    /**< Chrome Trace Event JSON, whatever the path */
    VKPROF_TRACE_FORMAT_PFTRACE = 3, /**< Perfetto's protobuf, whatever the path */
    /** Both: the path keeps the format its extension names, the other goes
     *  beside it with the extension replaced (docs/trace-format.md). */
    VKPROF_TRACE_FORMAT_BOTH = 4
} vkprof_trace_format;

/** What the event store keeps once it holds trace_capacity events (desc.trace_keep). */
typedef enum vkprof_trace_keep {
    /** The first trace_capacity events; later ones are dropped, counted, and
     *  the trace says when the store filled. The default. */
    VKPROF_TRACE_KEEP_FIRST = 0,
    /** The last trace_capacity events: the store wraps and overwrites the
     *  oldest, counted; the trace says from when it is complete. For a
     *  server that runs for hours and is stopped with Ctrl-C: the recent
     *  window. */
    VKPROF_TRACE_KEEP_LAST = 1
} vkprof_trace_keep;

/** What vkprof_cmd_submit reads before it starts the new executions
 *  (desc.submit_collect; ring mode). */
typedef enum vkprof_submit_collect {
    /** Whatever has finished, of every execution in flight: the lazy
     *  collection point, for apps that never call vkprof_collect. The
     *  default. */
    VKPROF_SUBMIT_COLLECT_FINISHED = 0,
    /** Only what must be read now: the previous execution of each buffer
     *  being submitted, before this one overwrites it. Nothing else is read
     *  on the submitting thread; the app calls vkprof_collect where it
     *  chooses (after its own waits, or on a thread of its own). For apps
     *  whose submit must not wait: a driver may make vkGetQueryPoolResults
     *  wait for the device (lavapipe does), and a read while earlier work
     *  still runs then holds the app's submit until that work is done. */
    VKPROF_SUBMIT_COLLECT_OWN = 1
} vkprof_submit_collect;

/** Host span levels (VKPROF_HOST_PROFILE: "1" all spans, "2" hot spans only, else off). */
typedef enum vkprof_host_level {
    VKPROF_HOST_FROM_ENV = 0, /**< as a desc field: read the env var once */
    VKPROF_HOST_OFF = 1,
    VKPROF_HOST_ALL = 2, /**< level 1: every span */
    VKPROF_HOST_HOT = 3  /**< level 2: only spans opened with vkprof_span_begin_hot() */
} vkprof_host_level;

/** How GPU ticks are related to the host clock. */
typedef enum vkprof_calibration_method {
    VKPROF_CALIBRATION_NONE = 0,      /**< no mapping yet: GPU scopes cannot be placed */
    VKPROF_CALIBRATION_EXTENSION = 1, /**< VK_KHR/EXT_calibrated_timestamps */
    VKPROF_CALIBRATION_BRACKET = 2    /**< a submitted timestamp between two host reads */
} vkprof_calibration_method;

/* ---- handles ----------------------------------------------------------- */

typedef struct vkprof_context_T *vkprof_context;

/* ---- structs ----------------------------------------------------------- */

/**
 * Logger callback. `code` is the result the message is about (VKPROF_OK for
 * plain information). `message` is valid only during the call.
 *
 * Misuse and failures counted in vkprof_error_counts are logged the first
 * VKPROF_LOG_REPEATS times per kind; the last of those is followed by one
 * line saying that further ones are counted, not logged. vkprof_reset()
 * zeroes the counters and so starts the logging again.
 */
#define VKPROF_LOG_REPEATS 8u
typedef void (*vkprof_log_fn)(void *user, vkprof_log_level level, vkprof_result code,
                              const char *message);

/**
 * Everything the library needs from the app. Zero means default for every
 * field except the Vulkan handles and the two proc-addr functions, which are
 * required; each field's default is stated next to it. Start from
 * vkprof_default_desc() or `= {0}` (the same thing). vkprof_create checks the
 * ranges, then resolves the desc once: every zero becomes its default, the
 * env vars named here are read (once, then never again) and every string is
 * copied; the context keeps only the resolved settings, so the desc and its
 * strings may go away after the call.
 */
typedef struct vkprof_context_desc {
    VkInstance instance;              /**< required */
    VkPhysicalDevice physical_device; /**< required */
    VkDevice device;                  /**< required */
    uint32_t queue_family_index;      /**< family the timed work is submitted to; default 0 */
    PFN_vkGetInstanceProcAddr get_instance_proc_addr; /**< required */
    PFN_vkGetDeviceProcAddr get_device_proc_addr;     /**< required */
    const VkAllocationCallbacks *vk_allocator; /**< passed to vkCreate/DestroyQueryPool; NULL */

    vkprof_enable_mode enable; /**< default VKPROF_ENABLE_FROM_ENV */
    const char *env_var;       /**< NULL or "": "VKPROF_GPU_PROFILE"; copied (< 128 bytes) */

    /**
     * Kept for compatibility; see `synchronization2` below, which is the
     * field to use. true: stamps use vkCmdWriteTimestamp(BOTTOM_OF_PIPE),
     * whatever `synchronization2` says. false (the default): `synchronization2`
     * decides.
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

    vkprof_log_fn log;          /**< NULL: lines on stderr */
    void *log_user;             /**< passed to `log`; may be NULL */
    vkprof_log_level log_level; /**< most verbose level passed to log; 0: WARN */

    /* ---- ring mode ---- */
    vkprof_timing_mode timing_mode; /**< default VKPROF_TIMING_2SLOT */
    uint32_t ring_queries; /**< ring pool size in queries; 0: 4096; 1..3 count as 4; <= 2^24 */
    /** Ring mode: a scope begun right after the previous one ended, in the
     *  same command buffer with no vkprof call between, reuses that end stamp
     *  as its begin stamp (one stamp per boundary). Whatever the app records
     *  between the two (a barrier) then counts toward the second scope.
     *  Default false. */
    bool shared_boundaries;
    /** Ring mode: time only 1 decode step in N (steps counted by
     *  vkprof_step(); step 0 is timed). 0 or 1: every step. Per-phase figures
     *  are then over the timed steps, whose count the snapshot states. */
    uint32_t sample_every;
    /** Ring mode: rotating sampling. K > 0: each step stamps only K phase
     *  calls, the window of call indexes [start, start + K) within the step
     *  (a call's index: its place among the step's vkprof_cmd_begin calls),
     *  and the window moves on by K each step that reached it, back to 0
     *  past the longest step of the pass: every call index is stamped once
     *  every P = ceil(calls / K) steps. A step too short to reach the window
     *  leaves it for the next long one, so steps of different lengths (a
     *  long one, then a short one) still have every call stamped once a
     *  pass (after 64 short steps in a row, the window starts again at 0). With shared_boundaries
     * the window costs K + 1 stamps (the end of the call before the window is stamped as the
     * window's first boundary, so each call is measured as in an every-step shared ring). Calls
     * outside the window record nothing and are not samples; they are counted
     * (vkprof_phase_stats.calls, vkprof_timing_stats.calls_*), so a phase's mean times its calls
     * estimates its total (est_total_ns). 0: every call of a timed step. VKPROF_RING_ROTATE=K in
     * the environment overrides it (0 turns it off; anything else is warned about and ignored).
     * Steps still obey sample_every. Default 0. */
    uint32_t rotate_scopes;
    /** Rotation: also stamp each phase's first call, whatever the window,
     *  and count it once in the estimate, apart from the mean that is
     *  scaled (vkprof_phase_stats.first_calls, first_ns). Drivers compile
     *  a pipeline at its first use (an H200 took 893 ms for a first
     *  flash-attention dispatch); one such call in a phase's few samples,
     *  scaled by the period, would swamp the phase. Costs 2 stamps once per
     *  phase. Default false (every sample in the scaled mean). */
    bool rotate_first_calls;

    /* ---- host spans ---- */
    vkprof_host_level host_level; /**< default VKPROF_HOST_FROM_ENV */
    const char *host_env_var;     /**< NULL or "": "VKPROF_HOST_PROFILE"; copied (< 128 bytes) */
    uint32_t report_every;        /**< per-token report every N steps; 0: 8; UINT32_MAX: never */

    /* ---- calibration and timeline ---- */
    /** The queue the timed work is submitted to. Optional; needed only for
     *  the bracket calibration fallback (devices without calibrated
     *  timestamps), which submits one timestamp to it from vkprof_create()
     *  and vkprof_calibrate(): those calls then need the queue externally
     *  synchronised, like any vkQueueSubmit. */
    VkQueue queue;
    uint32_t queue_index;       /**< index of `queue` in its family (trace track naming); 0 */
    uint32_t recalibrate_ms;    /**< extension path: recalibrate at most this often; 0: 1000 */
    uint32_t calibration_tries; /**< samples per calibration (best maxDeviation kept); 0: 8;
                                   max 64 */
    /** NULL or "": "VKPROF_TRACE"; the env var holding a trace path (tracing
     *  on when set and not empty); copied (< 128 bytes) */
    const char *trace_env_var;
    /** Overrides the env var ("" : no trace, whatever the env says); NULL:
     *  use the env var. Copied (< 1024 bytes). */
    const char *trace_path;
    uint32_t trace_capacity; /**< events kept; 0: 1 << 20; more are counted as dropped */

    /**
     * Whether the app enabled the synchronization2 feature (Vulkan 1.3 core
     * or VK_KHR_synchronization2) on `device`. Only VKPROF_FEATURE_ENABLED
     * makes the library stamp with vkCmdWriteTimestamp2(ALL_COMMANDS), which
     * needs that feature (VUID-vkCmdWriteTimestamp2-synchronization2-03858).
     * VKPROF_FEATURE_UNKNOWN (the default, zero) and VKPROF_FEATURE_DISABLED
     * stamp with core vkCmdWriteTimestamp(BOTTOM_OF_PIPE), valid on every
     * device and queue family, and exactly equivalent: both write the
     * timestamp once every earlier command has completed all its stages.
     * Precedence: no_synchronization2 = true forces vkCmdWriteTimestamp;
     * otherwise ENABLED uses vkCmdWriteTimestamp2 (falling back, with a
     * warning, when the entry point is missing); otherwise vkCmdWriteTimestamp.
     * vkprof_device_info.timestamp2 tells which one is used.
     * (Takes the place of reserved[0] of earlier versions: zero is the safe
     * default.)
     */
    vkprof_feature synchronization2;

    /** Which environment variables are read; default VKPROF_ENV_READ. */
    vkprof_env_policy environment;
    /** The trace's format(s); default VKPROF_TRACE_FORMAT_DEFAULT. */
    vkprof_trace_format trace_format;
    /** Which events the store keeps when full; default VKPROF_TRACE_KEEP_FIRST. */
    vkprof_trace_keep trace_keep;
    /**
     * A file that holds the trace's event store while the process runs, so
     * that what was recorded outlives a process that runs no more code
     * (SIGKILL, a crash, _exit, exec). NULL or "": none (the store is in
     * memory). The file is created (never an existing one: O_EXCL), sized
     * for trace_capacity events up front (posix_fallocate: a full disk is
     * found now, not by a write later), mapped shared, and written as events
     * are recorded; the rest of what a trace holds (names, calibration,
     * counts) is copied into it at each checkpoint: every vkprof_collect(),
     * vkprof_step() and vkprof_spool_sync() that changed something, and at
     * vkprof_destroy(), which marks it closed. vkprof_spool_open() reads it
     * back, in any process, as a context whose trace and figures are those
     * of the last checkpoint, plus every event recorded after it. When the
     * file cannot be made, the store stays in memory and the reason is
     * logged (vkprof_spool_status() says so). After fork() the child stops
     * writing the parent's spool. Copied (< 1024 bytes). Layout:
     * docs/trace-format.md, "Spools".
     */
    const char *trace_spool;
    /** A name for this context in its traces and spool (the layer's
     *  "device 0, queue family 2"; "rank 1"): the metadata's "label", and a
     *  set trace's context entry. NULL or "": none. Copied (< 128 bytes). */
    const char *trace_label;
    /** What vkprof_cmd_submit reads first; default VKPROF_SUBMIT_COLLECT_FINISHED.
     *  (Takes the place of reserved[0] of earlier versions.) */
    vkprof_submit_collect submit_collect;
    /** The trace's GPU busy counter (a counter track per queue: the share of
     *  each step, between two step events, in which the queue ran timed
     *  work; docs/trace-format.md, "Counters"). It is written only where the
     *  library knows every call of a step was timed (no rotation, no
     *  sample_every, no call left out). VKPROF_FEATURE_DISABLED: never, for
     *  an app that itself times only part of each step (the vkprof layer's
     *  --sample N), where untimed work would read as idle. UNKNOWN (the
     *  default): as said. ENABLED: also with rotation, where phases flagged
     *  VKPROF_PHASE_FLAG_OUTER are registered: the app says that in each
     *  step that holds scopes of them, they hold all of its work (the
     *  layer's command buffers), and the counter is their union in those
     *  steps only: an app may stamp them in some steps (the layer's
     *  --busy N), and a step without one has no value. (Takes the place of
     *  reserved[1].) */
    vkprof_feature trace_gpu_busy;
    /** The begin stamp of an outer phase's scope (VKPROF_PHASE_FLAG_OUTER:
     *  a whole command buffer) at the top of the pipe: ENABLED, it waits for
     *  nothing, so the queue's earlier work runs on past it (a begin stamp
     *  that waits for all earlier work drains the queue at every buffer);
     *  its end stamp still waits for all earlier work. Its scopes then
     *  start when the GPU reaches them, possibly while earlier work still
     *  runs: their union (the busy time) is unchanged, a single scope's
     *  length may hold some of that earlier work. UNKNOWN (the default)
     *  and DISABLED: both stamps wait, as every other stamp does. (Takes
     *  the place of reserved[0].) */
    vkprof_feature outer_begin_top;
    uint32_t reserved[3]; /**< must be zero */
} vkprof_context_desc;

/** Figures of one phase since the last reset. Times are exact GPU nanoseconds. */
typedef struct vkprof_phase_stats {
    vkprof_phase id;
    char name[VKPROF_MAX_NAME + 1];
    uint64_t count;       /**< scopes folded in */
    uint64_t total_ns;    /**< sum of (end - begin), masked, then scaled once */
    uint64_t min_ns;      /**< shortest scope (0 when count is 0) */
    uint64_t max_ns;      /**< longest scope */
    uint64_t total_ticks; /**< the same sum in raw device ticks */
    /** Calls of the phase executed since the last reset (ring mode: every
     *  vkprof_cmd_begin while active, stamped or left out by sampling or
     *  rotation; 2-slot mode: equal to count). */
    uint64_t calls;
    /** The estimated GPU time of all `calls`: total_ns / count * calls
     *  (exact integer arithmetic, rounded down); total_ns when every call was
     *  timed; 0 when none was. Per token: est_total_ns / steps. With
     *  desc.rotate_first_calls, the first calls' time counts once:
     *  first_ns + (total_ns - first_ns) / (count - first_calls) *
     *  (calls - first_calls). */
    uint64_t est_total_ns;
    /** Of count: the phase's first calls, stamped whatever the rotating
     *  window (desc.rotate_first_calls; else 0), and their time in ns
     *  (part of total_ns). */
    uint64_t first_calls;
    uint64_t first_ns;
    /** VKPROF_PHASE_FLAG_* (vkprof_set_phase_flags): OUTER, a phase whose
     *  scopes hold others' work, left out of the split. */
    uint32_t flags;
    /** vkprof_set_phase_parent: the phase its scopes are nested in, the
     *  region around it; VKPROF_PHASE_NO_PARENT when none was told, or only
     *  "none"; VKPROF_PHASE_SEVERAL_PARENTS when two different ones were
     *  told (its time then belongs to no single region's total). */
    uint32_t parent;
} vkprof_phase_stats;

/**
 * The misuse and failure counters, one row each: X(field, result, meaning).
 * A row with a result code counts every occurrence of that result (as the
 * call returns it, and logs it); a row with VKPROF_OK counts something that
 * is not a result, where it happens. One row gives the field of
 * vkprof_error_counts, its counting and its key in the snapshot JSON
 * ("errors": {"<field>": n, ...}), in this order.
 */
#define VKPROF_ERROR_COUNTERS(X)                                                                   \
    X(begin_twice, VKPROF_ERROR_BEGIN_TWICE, "begin while a scope is open")                        \
    X(end_without_begin, VKPROF_ERROR_END_WITHOUT_BEGIN, "end without an open scope")              \
    X(phase_mismatch, VKPROF_ERROR_PHASE_MISMATCH, "end/accumulate named another phase")           \
    X(not_ended, VKPROF_ERROR_NOT_ENDED, "resolve/accumulate before end")                          \
    X(not_resolved, VKPROF_ERROR_NOT_RESOLVED, "accumulate before a successful resolve")           \
    X(nothing_pending, VKPROF_ERROR_NOTHING_PENDING, "resolve/accumulate with no scope")           \
    X(unknown_phase, VKPROF_ERROR_UNKNOWN_PHASE, "a phase id never registered")                    \
    X(not_ready, VKPROF_ERROR_NOT_READY, "results read before the GPU wrote them")                 \
    X(vulkan_errors, VKPROF_ERROR_VULKAN, "Vulkan calls that failed")                              \
    X(discarded, VKPROF_OK, "scopes ended but never accumulated, then begun over")                 \
    X(invalid_argument, VKPROF_ERROR_INVALID_ARGUMENT, "calls refused for an argument")            \
    X(span_too_deep, VKPROF_ERROR_SPAN_TOO_DEEP, "spans not timed: too many open on a thread")     \
    X(span_closed, VKPROF_ERROR_SPAN_CLOSED, "closes of a span closed or given up already")        \
    X(span_order, VKPROF_ERROR_SPAN_ORDER, "spans given up: an outer one was closed first")

/** Misuse and failures since the last reset (VKPROF_ERROR_COUNTERS). None of
 *  these is ever folded into a phase. */
typedef struct vkprof_error_counts {
#define VKPROF_X_(field, result, meaning) uint64_t field;
    VKPROF_ERROR_COUNTERS(VKPROF_X_)
#undef VKPROF_X_
} vkprof_error_counts;

/** Device facts the context found; read with vkprof_get_device_info(). */
typedef struct vkprof_device_info {
    char device_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
    uint32_t vendor_id, device_id, api_version, driver_version;
    uint32_t queue_family_index;
    uint32_t timestamp_valid_bits; /**< 0: no timestamps on this family */
    float timestamp_period;        /**< ns per tick, as the driver reports it */
    bool requested;  /**< profiling was asked for (env var, desc or vkprof_set_active) */
    bool supported;  /**< the queue family has timestamps */
    bool timestamp2; /**< vkCmdWriteTimestamp2 is used (else vkCmdWriteTimestamp) */
} vkprof_device_info;

/* ---- functions --------------------------------------------------------- */
/*
 * NULL: every function accepts NULL for every pointer argument; the doc of
 * each says what it does then. A NULL context makes every call a no-op that
 * returns a value of "nothing": false, 0, NULL, an empty span,
 * VKPROF_DISABLED (the timing cycle, as while off) or
 * VKPROF_ERROR_INVALID_ARGUMENT (where a result was asked for). NULL for a
 * required output pointer returns VKPROF_ERROR_INVALID_ARGUMENT and writes
 * nothing. No call ever dereferences a NULL argument. (tests/device/test_null.c
 * calls each one with NULL for each pointer argument.)
 */

/** The default desc: all zero, which means "default" in every field (the
 *  Vulkan handles left zero; synchronization2 VKPROF_FEATURE_UNKNOWN), with
 *  three fields spelled out as their zero means: enable
 *  VKPROF_ENABLE_FROM_ENV, env_var VKPROF_DEFAULT_ENV and log_level
 *  VKPROF_LOG_WARN. The resolved values of the rest are known only once
 *  vkprof_create has resolved them: read them with vkprof_get_desc. */
vkprof_context_desc vkprof_default_desc(void);

/**
 * Create a context. Reads the enable env var once (unless desc->enable says
 * otherwise). Never fails because timestamps are missing: the context is
 * then simply inactive. Returns VKPROF_ERROR_INVALID_ARGUMENT for missing
 * required fields, VKPROF_ERROR_MISSING_FUNCTION when an instance entry
 * point cannot be loaded, VKPROF_ERROR_OUT_OF_MEMORY. Out-of-range enum
 * fields (log_level beyond VKPROF_LOG_REPORT, synchronization2 beyond
 * VKPROF_FEATURE_DISABLED, ...) give VKPROF_ERROR_INVALID_ARGUMENT.
 * `*out` is set to NULL on failure. NULL `desc` or NULL `out`:
 * VKPROF_ERROR_INVALID_ARGUMENT (and *out NULL where `out` is not).
 */
vkprof_result vkprof_create(const vkprof_context_desc *desc, vkprof_context *out);

/** Destroy a context and its query pool. NULL is accepted. The device must be idle
 *  with respect to any command buffer that still references the pool. */
void vkprof_destroy(vkprof_context ctx);

/* Layout shared with the inline fast paths. Do not touch its fields. */
struct vkprof_context_head_ {
    volatile int active;     /* requested && supported; must stay first */
    volatile int host_level; /* vkprof_host_level (never FROM_ENV): the span macros */
};

/** True only when profiling is requested AND the queue family has timestamps.
 *  Inline: one load, no call. NULL gives false. */
static inline bool vkprof_active(vkprof_context ctx)
{
    return ctx != NULL && ((const struct vkprof_context_head_ *)(const void *)ctx)->active != 0;
}

/* The span macros' inline check: one load of the host level. Not API. */
static inline bool vkprof__span_on_(vkprof_context ctx, bool hot)
{
    if (ctx == NULL) {
        return false;
    }
    const volatile int *p = &((const struct vkprof_context_head_ *)(const void *)ctx)->host_level;
#if defined(__GNUC__) || defined(__clang__)
    int level = __atomic_load_n(p, __ATOMIC_RELAXED);
#else
    int level = *p;
#endif
    return level == VKPROF_HOST_ALL || (hot && level == VKPROF_HOST_HOT);
}

/** Request profiling on or off at runtime; vkprof_active() reads the result.
 *  Turning it on has no effect when the
 *  queue family has no timestamps (vkprof_active() stays false). Turning it
 *  off abandons an open scope without folding it. NULL ctx: no-op. */
void vkprof_set_active(vkprof_context ctx, bool on);

/**
 * Parse an enable flag: "1", "on", "true", "yes" -> true; "0", "off",
 * "false", "no", "" -> false (case-insensitive, surrounding blanks allowed).
 * Returns false for anything else, leaving *out untouched. NULL `text` or
 * NULL `out`: false.
 */
bool vkprof_parse_flag(const char *text, bool *out);

/** Device facts; VKPROF_ERROR_INVALID_ARGUMENT for a NULL ctx or `out`. */
vkprof_result vkprof_get_device_info(vkprof_context ctx, vkprof_device_info *out);

/**
 * The desc as vkprof_create resolved it: no field left at a zero that means
 * "default" (a zero that remains is a value: rotate_scopes 0, no rotation;
 * trace_path NULL, no trace), the environment variables it read applied
 * (enable, host level, trace path and format, VKPROF_RING_ROTATE), and every
 * string pointing into the context (valid until vkprof_destroy). Like
 * sokol's sg_query_desc. VKPROF_ERROR_INVALID_ARGUMENT for a NULL ctx or
 * `out`.
 */
vkprof_result vkprof_get_desc(vkprof_context ctx, vkprof_context_desc *out);

/**
 * Register an app phase by name (at most VKPROF_MAX_NAME bytes, not empty).
 * A name already registered (default names included) returns its id.
 * NULL ctx, `name` or `out`: VKPROF_ERROR_INVALID_ARGUMENT.
 */
vkprof_result vkprof_register_phase(vkprof_context ctx, const char *name, vkprof_phase *out);

/** Number of registered phases (defaults included); 0 for a NULL ctx. */
uint32_t vkprof_phase_count(vkprof_context ctx);

/** Name of a phase, or NULL for an unknown id or a NULL ctx. */
const char *vkprof_phase_name(vkprof_context ctx, vkprof_phase phase);

/**
 * Phase flags (vkprof_set_phase_flags).
 *
 * VKPROF_PHASE_FLAG_OUTER: the phase's scopes hold other scopes' work, a
 * whole command buffer or a region (issue 26). With rotation
 * (desc.rotate_scopes) every scope of an outer phase is stamped in each
 * timed step: it takes no call index, so it neither moves nor fills the
 * window, and it is never a first call. Its figures are then exact while
 * the other phases' are estimates, and the union of its scopes is the
 * queue's busy time: the trace's GPU busy counter is written from them
 * (desc.trace_gpu_busy ENABLED says that each step's work lies inside
 * them, in the steps that hold them: an app may begin them in some steps
 * only, and count the rest with vkprof_count_calls). An outer phase's time overlaps its inner
 * scopes' time, so front ends leave it out of the split (vkprof_phase_stats.flags says which phases
 * are outer; the trace names them, metadata gpu_sampling.outer_phases). Without rotation the flag
 * changes no stamp.
 */
#define VKPROF_PHASE_FLAG_OUTER 0x1u

/**
 * Set a registered phase's flags (VKPROF_PHASE_FLAG_*), before its first
 * scope. VKPROF_ERROR_INVALID_ARGUMENT for a NULL ctx, an unknown phase or
 * an unknown flag bit.
 */
vkprof_result vkprof_set_phase_flags(vkprof_context ctx, vkprof_phase phase, uint32_t flags);

/** A phase's flags; 0 for an unknown id or a NULL ctx. */
uint32_t vkprof_phase_flags(vkprof_context ctx, vkprof_phase phase);

/**
 * Phase nesting: the region a phase's scopes lie in (issue 26: the layer's
 * --mode label times each debug-label region's own time, in segments, and
 * tells the library which region each one is nested in, so that a front
 * end can give each region's total: its own time and its nested
 * regions'). `parent` VKPROF_PHASE_NO_PARENT: a top-level region. Told
 * again with the same parent, nothing changes; told another (a region
 * nested in two different ones, or top-level once and nested once), the
 * phase has VKPROF_PHASE_SEVERAL_PARENTS, for good. A phase told itself as
 * its parent is left as it was (a region nested in one of the same name
 * is the same row). Thread-safe, lock-free; the snapshot JSON gives
 * "parent": NAME, or "parent_several": true.
 * VKPROF_ERROR_INVALID_ARGUMENT for a NULL ctx or an unknown phase or
 * parent.
 */
#define VKPROF_PHASE_NO_PARENT 0xffffffffu
#define VKPROF_PHASE_SEVERAL_PARENTS 0xfffffffeu
vkprof_result vkprof_set_phase_parent(vkprof_context ctx, vkprof_phase phase, vkprof_phase parent);

/*
 * The timing cycle (not re-entrant: one scope at a time per context). In the
 * default 2-slot mode:
 *
 *   vkprof_cmd_begin(ctx, cmd, phase);   before the first dispatch
 *   ... vkCmdDispatch ...
 *   vkprof_cmd_end(ctx, cmd, phase);     after the last dispatch
 *   (submit, wait for the fence)
 *   vkprof_resolve(ctx, &ns);            read the two results
 *   vkprof_accumulate(ctx, phase);       fold end - begin into the phase
 *
 * Each stamp is vkCmdWriteTimestamp(BOTTOM_OF_PIPE), or
 * vkCmdWriteTimestamp2(ALL_COMMANDS) where desc.synchronization2 says the
 * app enabled that feature, into a 2-slot query pool, created on first
 * use; begin records vkCmdResetQueryPool for both slots first, so the pool
 * needs no host reset. The command buffer must be in the
 * recording state, outside any render pass, on the context's queue family.
 *
 * All of them return VKPROF_DISABLED (and do nothing) while inactive, and
 * for a NULL ctx.
 * Misuse returns an error, is counted in vkprof_error_counts, goes to the
 * logger, and never folds a value into a phase.
 */

/** Stamp the beginning of a scope. A scope ended but never accumulated is
 *  discarded (counted as `discarded`). NULL ctx: VKPROF_DISABLED; NULL
 *  `cmd` (while active): VKPROF_ERROR_INVALID_ARGUMENT. */
vkprof_result vkprof_cmd_begin(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase);

/**
 * Ring rotation's short path (desc.rotate_scopes > 0) for a call with
 * nothing nested inside it, such as one dispatch: vkprof_cmd_begin, except
 * that a call this step's window leaves out is only numbered. Then
 * *left_out is set, the result is VKPROF_DISABLED, nothing is recorded or
 * kept for the buffer, no vkprof_cmd_end follows, and the call is not
 * counted: the caller counts it with vkprof_count_calls, once per execution
 * of its buffer (a layer counts each recording's calls and hands them over
 * at each submit). Everything else is as after vkprof_cmd_begin, *left_out
 * false: a scope to end, or a call left out whose end is still needed (the
 * one just before the window: its end is the window's first boundary).
 * What it saves: the call's tracker lookups, its counting and its place on
 * the buffer's open stack, at both ends (issue 26: most of a rotating step's
 * host cost). A buffer re-recorded with only such calls holds no new scope:
 * release it first (vkprof_cmd_release) or leave it out of vkprof_cmd_submit
 * (vkprof_queue_submit passes every buffer), as the vkprof layer does; else
 * its submit is taken as another run of the recording it held before.
 * Without rotation, in a step not timed, in 2-slot mode or for an outer
 * phase: the same as vkprof_cmd_begin. NULL left_out:
 * VKPROF_ERROR_INVALID_ARGUMENT.
 */
vkprof_result vkprof_cmd_begin_leaf(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase,
                                    bool *left_out);

/** Stamp the end of the open scope; `phase` must be the one given to begin.
 *  NULL ctx: VKPROF_DISABLED; NULL `cmd` (while active):
 *  VKPROF_ERROR_INVALID_ARGUMENT, and the scope stays open. */
vkprof_result vkprof_cmd_end(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase);

/** One arg of a GPU scope (vkprof_cmd_end_args). */
typedef struct vkprof_arg {
    const char *key;   /**< copied, cut at 31 bytes; not "phase", "ns" or "step", and not
                            twice in one call (else the scope goes without args, counted) */
    const char *value; /**< copied, cut at VKPROF_ANNOTATION_MAX bytes */
} vkprof_arg;

/** Most args of one GPU scope (the same as VKPROF_SPAN_MAX_ANNOTATIONS). */
#define VKPROF_GPU_MAX_ARGS 4u

/**
 * vkprof_cmd_end, and while tracing, `args` go with the GPU slice(s) the
 * scope produces: the slice's "args" in a JSON trace, debug annotations in a
 * .pftrace (e.g. a dispatch's workgroup counts). Nothing more is recorded
 * into `cmd`; while not tracing the args are checked, not copied. They are
 * kept once per recording, in the trace's annotation store: every execution
 * of a re-submitted buffer carries them, and a record equal to a recent one
 * (the same key strings, by address, and values) shares its entry. More
 * than VKPROF_GPU_MAX_ARGS, or the store full: the scope is timed and
 * traced without args, and counted in the trace's dropped_annotations (args
 * are never cut to fewer). NULL `args` with
 * `count` 0 is vkprof_cmd_end. While active, NULL `args` with `count` > 0,
 * or a NULL key or value: VKPROF_ERROR_INVALID_ARGUMENT, and the scope
 * stays open (as with a NULL `cmd`).
 */
vkprof_result vkprof_cmd_end_args(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase,
                                  const vkprof_arg *args, uint32_t count);

/** Records the app's dispatch(es) for one scope. */
typedef void (*vkprof_record_fn)(VkCommandBuffer cmd, void *user);

/**
 * One-dispatch scope ("both"): begin, then `record(cmd, user)`, then end.
 * `record` is always called, also when profiling is off, so the app's work is
 * recorded either way; the library itself records nothing while off.
 * NULL ctx: `record` is called, VKPROF_DISABLED. NULL `record`, or NULL
 * `cmd`: VKPROF_ERROR_INVALID_ARGUMENT, and nothing is called or recorded.
 * `user` is only passed on, and may be NULL.
 */
vkprof_result vkprof_cmd_both(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase,
                              vkprof_record_fn record, void *user);

/**
 * Read the two results with vkGetQueryPoolResults (64-bit, WITH_AVAILABILITY,
 * never WAIT). Call after the submit's fence. VKPROF_ERROR_NOT_READY when the
 * GPU has not written both yet: nothing changes, and a later call may succeed.
 * On success `*out_ns` gets the exact scope duration; NULL `out_ns`: the
 * scope is resolved all the same. NULL ctx: VKPROF_DISABLED.
 * Ring mode: the same as vkprof_collect() (and *out_ns gets 0), so a call
 * site written for the 2-slot cycle keeps working.
 */
vkprof_result vkprof_resolve(vkprof_context ctx, uint64_t *out_ns);

/** The raw device ticks (masked) of the last successfully resolved scope,
 *  for apps that keep their own timeline; map them with
 *  vkprof_device_to_host_ns(). VKPROF_ERROR_NOTHING_PENDING before any.
 *  NULL ctx, `begin` or `end`: VKPROF_ERROR_INVALID_ARGUMENT. */
vkprof_result vkprof_last_scope_ticks(vkprof_context ctx, uint64_t *begin, uint64_t *end);

/** Fold the resolved scope into `phase` (which must be the scope's phase).
 *  Ring mode: nothing to do (vkprof_collect folds); returns VKPROF_OK.
 *  NULL ctx: VKPROF_DISABLED. */
vkprof_result vkprof_accumulate(vkprof_context ctx, vkprof_phase phase);

/**
 * Fold every finished scope into its phase (and the timeline), without ever
 * blocking: results are read WITH_AVAILABILITY and without WAIT, and a scope
 * whose stamps are not written yet stays for a later call. Ring mode: call it
 * after each submit's fence, or once per frame; slots are freed as scopes are
 * folded (in recording order). 2-slot mode: resolve + accumulate of the open
 * scope when its results are there. Returns VKPROF_OK (also when nothing was
 * ready), VKPROF_DISABLED when inactive (or for a NULL ctx), or
 * VKPROF_ERROR_VULKAN.
 */
vkprof_result vkprof_collect(vkprof_context ctx);

/** Ring mode: scopes nest (a region holding dispatch scopes) up to this
 *  depth in one command buffer; a deeper begin is VKPROF_ERROR_BEGIN_TWICE.
 *  2-slot mode does not nest. */
#define VKPROF_MAX_SCOPE_DEPTH 8u

/**
 * Ring mode: tell the library that these command buffers are about to be
 * submitted, on any queue and from any thread. Call it right BEFORE the app's
 * vkQueueSubmit/vkQueueSubmit2 (or use vkprof_queue_submit/2, which do both).
 * Each call starts one execution of each buffer's current recording: a
 * buffer submitted K times gives K samples per scope. It first collects,
 * without the WAIT flag, whatever has finished (the lazy collection point;
 * with desc.submit_collect = VKPROF_SUBMIT_COLLECT_OWN it does not); the
 * previous execution of a re-submitted buffer has finished by Vulkan's rules
 * and is read now, and what it has not delivered is counted as lost
 * (lost_overwritten), never folded.
 * Once called, call it for every submit of a buffer holding scopes. A buffer
 * re-recorded without any scope call (not even one refused as untimed by
 * sampling) is taken as holding its old recording: call vkprof_cmd_release
 * when you reset it. Without
 * any call the context keeps the seed's model: each recording is taken as
 * executed once, recorded and collected on one thread.
 * Buffers without scopes and VK_NULL_HANDLE entries are ignored. `queue` is
 * for the app's records only; executions are told apart per command buffer.
 * Returns VKPROF_OK, VKPROF_DISABLED (inactive, NULL ctx, or 2-slot mode), or
 * VKPROF_ERROR_INVALID_ARGUMENT (count > 0 with NULL `cmds`).
 */
vkprof_result vkprof_cmd_submit(vkprof_context ctx, VkQueue queue, uint32_t count,
                                const VkCommandBuffer *cmds);

/** Flows from the submit (ring mode, while tracing): a GPU slice links to
 *  the span open when its scope was recorded; a scope recorded outside any
 *  span links instead to the span open on this thread at its buffer's
 *  vkprof_cmd_submit. A caller that opens its submit span only after
 *  vkprof_cmd_submit (the vkprof layer does, so that its own collection stays
 *  outside the app's span) calls this inside that span, for the same
 *  buffers: their current executions link to it. Returns VKPROF_OK, or
 *  VKPROF_DISABLED (NULL ctx, inactive, 2-slot mode, no span open). */
vkprof_result vkprof_cmd_submit_flow(vkprof_context ctx, uint32_t count,
                                     const VkCommandBuffer *cmds);

/** vkprof_cmd_submit for every batch, then vkQueueSubmit through the
 *  context's function table. Returns the driver's VkResult;
 *  VK_ERROR_INITIALIZATION_FAILED, calling nothing, for a NULL ctx or NULL
 *  `submits` with count > 0. */
VkResult vkprof_queue_submit(vkprof_context ctx, VkQueue queue, uint32_t count,
                             const VkSubmitInfo *submits, VkFence fence);

/** The same for vkQueueSubmit2 (core 1.3 or VK_KHR_synchronization2);
 *  VK_ERROR_INITIALIZATION_FAILED when the device has neither. */
VkResult vkprof_queue_submit2(vkprof_context ctx, VkQueue queue, uint32_t count,
                              const VkSubmitInfo2 *submits, VkFence fence);

/**
 * Ring mode: the app is about to reset or free `cmd` (vkResetCommandBuffer,
 * vkFreeCommandBuffers; for vkResetCommandPool, each of its buffers). Its
 * finished executions are collected; what had not been collected is counted
 * as lost (lost_reset), and scopes recorded but never submitted as
 * lost_never_submitted; its slots are freed. Re-recording a buffer without
 * this call is fine: its next vkprof_cmd_submit retires the old recording.
 * Always VKPROF_OK (a no-op for NULL, 2-slot mode and unknown buffers).
 */
vkprof_result vkprof_cmd_release(vkprof_context ctx, VkCommandBuffer cmd);

/**
 * Ring mode: vkprof_cmd_release for a buffer whose current recording will
 * never be submitted (the app frees, resets or re-begins it without having
 * submitted it: nothing of it ran). Its recorded scopes, open ones too, are
 * then no samples: they leave scopes_recorded, their calls leave the
 * phases' calls, and they are counted in scopes_discarded, never as lost.
 * Executions of earlier, submitted recordings are treated as by
 * vkprof_cmd_release. Always VKPROF_OK (a no-op for NULL, 2-slot mode and
 * unknown buffers).
 */
vkprof_result vkprof_cmd_discard(vkprof_context ctx, VkCommandBuffer cmd);

/**
 * Ring mode: `n` executed calls of `phase` that ran with no scope, because a
 * sampler above the library left them out before vkprof_cmd_begin (the vkprof
 * layer's --sample N and cost probe: a recording it does not time never
 * reaches the library). They join the phase's calls, calls_executed and
 * calls_unstamped as calls left out by sample_every do, so its estimate
 * (est_total_ns: the mean of its timed calls times its calls) and a trace's
 * estimates cover them. Count executions: a recording submitted twice ran its
 * calls twice. Calls counted here are not taken back by vkprof_cmd_discard.
 * Returns VKPROF_OK, VKPROF_DISABLED (NULL ctx, inactive, 2-slot mode) or
 * VKPROF_ERROR_UNKNOWN_PHASE (a phase not registered: counted in errors).
 */
vkprof_result vkprof_count_calls(vkprof_context ctx, vkprof_phase phase, uint64_t n);

/** Counters of the timing machinery since the last vkprof_reset() (pending: now). */
typedef struct vkprof_timing_stats {
    vkprof_timing_mode mode;
    uint32_t ring_queries;     /**< pool size (2 in 2-slot mode) */
    uint32_t sample_every;     /**< 1: every step */
    uint32_t rotate_scopes;    /**< K of rotating sampling; 0: not rotating */
    bool rotate_first_calls;   /**< desc.rotate_first_calls, with rotation */
    uint64_t timed_steps;      /**< steps whose scopes were recorded */
    uint64_t scopes_recorded;  /**< scopes whose stamps were recorded */
    uint64_t scopes_collected; /**< scopes folded into a phase */
    uint64_t scopes_dropped;   /**< samples lost, all reasons (the sum of lost_* below) */
    uint64_t scopes_pending;   /**< samples recorded or submitted, not folded or lost yet */
    uint64_t stamps_written;   /**< timestamp writes recorded */
    uint64_t shared_stamps;    /**< boundaries that served two scopes with one stamp */
    bool host_reset;           /**< queries are reset from the host (else in the command buffer) */
    /* One accounting: every sample is collected, lost or pending, so
     * samples == scopes_collected + scopes_dropped + scopes_pending. A sample
     * is one execution of one recorded scope: a command buffer submitted K
     * times gives K samples per scope; a scope never submitted counts once. */
    uint64_t samples;
    uint64_t submissions; /**< command buffer executions seen (vkprof_submit...) */
    /** scopes recorded into buffers that were never submitted, and said so
     *  (vkprof_cmd_discard): nothing ran, so no sample and no loss */
    uint64_t scopes_discarded;
    /* Ring mode: phase calls, stamped or not (every vkprof_cmd_begin that
     * reached the ring while active). calls_unstamped were left out by
     * sample_every or rotation: they are not samples (neither timed nor
     * lost). The phases' vkprof_phase_stats.calls sum to calls_executed. */
    uint64_t calls_executed;
    uint64_t calls_unstamped;
    /* Rotation (rotate_scopes > 0): passes completed over every call index,
     * the phase calls of the last step with calls, the steps a pass takes
     * for it (ceil(calls / K)), and the steps whose number of calls differed
     * from the step before (a different token path: the once-per-pass
     * coverage holds only across steps of equal call counts). */
    uint64_t rotate_cycles;
    uint64_t rotate_calls_per_step;
    uint64_t rotate_period;
    uint64_t rotate_changed_steps;
    uint64_t lost_ring_full;       /**< no free query slot when the scope was recorded */
    uint64_t lost_overwritten;     /**< re-submitted before the previous execution was read */
    uint64_t lost_never_submitted; /**< recorded, never ran (seen at re-record or destroy) */
    uint64_t lost_reset;           /**< command buffer reset or freed before it was collected */
    uint64_t lost_misuse;          /**< dropped by a begin/end misuse (counted in errors too) */
    /** its end stamp read as earlier than its begin stamp (the device wrote
     *  them out of order, or one slot still held an older value): a sample
     *  that cannot be exact, never folded */
    uint64_t lost_backwards;
    /** stale: its begin stamp, on the calibrated host clock, lies before the
     *  scope was recorded, less the mapping's bound: the value is another
     *  execution's (a buffer re-submitted without vkprof_cmd_submit wrote
     *  into slots the ring had given back), never folded. Checked only with
     *  a calibration (vkprof_get_calibration: points > 0). */
    uint64_t lost_stale;
} vkprof_timing_stats;

/** VKPROF_ERROR_INVALID_ARGUMENT for a NULL ctx or `out`. */
vkprof_result vkprof_get_timing_stats(vkprof_context ctx, vkprof_timing_stats *out);

/** True when scopes of the current step are timed (always, unless sampling);
 *  false while inactive and for a NULL ctx. */
bool vkprof_step_timed(vkprof_context ctx);

/** True when any phase has at least one scope folded in since the last
 *  reset; false for a NULL ctx. */
bool vkprof_any_recorded(vkprof_context ctx);

/** Zero every phase figure and error counter. Registered phases stay. NULL
 *  ctx: no-op. */
void vkprof_reset(vkprof_context ctx);

/**
 * Copy all phases (ids 0..count-1) into `out` (room for `cap`). `*count` gets
 * the number of phases; returns VKPROF_ERROR_BUFFER_TOO_SMALL (after filling
 * `cap`) when cap is smaller. NULL `out`: a size query (cap is taken as 0).
 * `errors` may be NULL. NULL ctx or NULL `count`: VKPROF_ERROR_INVALID_ARGUMENT.
 */
vkprof_result vkprof_snapshot(vkprof_context ctx, vkprof_phase_stats *out, uint32_t cap,
                              uint32_t *count, vkprof_error_counts *errors);

/**
 * The snapshot as one JSON object (UTF-8, NUL-terminated) in `buf`. `*needed`
 * gets the size needed including the NUL; with a NULL (whatever `cap` says)
 * or small buffer the result is VKPROF_ERROR_BUFFER_TOO_SMALL and nothing
 * partial is claimed. NULL ctx or NULL `needed`: VKPROF_ERROR_INVALID_ARGUMENT.
 */
vkprof_result vkprof_snapshot_json(vkprof_context ctx, char *buf, size_t cap, size_t *needed);

/**
 * Exact tick -> ns conversion: floor(ticks * period), computed in 128-bit
 * fixed point from the float period, saturating at UINT64_MAX.
 */
uint64_t vkprof_ticks_to_ns(uint64_t ticks, float timestamp_period);

/** (end - begin) masked to `valid_bits` (36..64; 0 gives 0). Right across a wrap. */
uint64_t vkprof_tick_delta(uint64_t begin, uint64_t end, uint32_t valid_bits);

/* ======================================================================== */
/* Host section spans                                                        */
/* ======================================================================== */
/*
 * Thread safety: every vkprof_span_*, vkprof_bucket_*, vkprof_step,
 * vkprof_rendezvous and vkprof_set_thread_name call may come from any number
 * of threads at once (counters are atomic). vkprof_register_bucket takes a
 * short lock. Spans nest per thread (close the inner one first).
 */

/** The default buckets for LLM decode; `hot` ones are timed at level 2 too. */
#define VKPROF_DEFAULT_BUCKETS(X)                                                                  \
    X(VKPROF_BUCKET_NORM, "norm", 0)                                                               \
    X(VKPROF_BUCKET_ATTN_PROJ, "attn_proj", 0)                                                     \
    X(VKPROF_BUCKET_ATTENTION, "attention", 0)                                                     \
    X(VKPROF_BUCKET_MLP, "mlp", 0)                                                                 \
    X(VKPROF_BUCKET_MOE_ROUTER, "moe_router", 0)                                                   \
    X(VKPROF_BUCKET_MOE_HOST_SYNC, "moe_host_sync", 0)                                             \
    X(VKPROF_BUCKET_MOE_EXPERTS, "moe_experts", 0)                                                 \
    X(VKPROF_BUCKET_MOE_SHARED, "moe_shared", 0)                                                   \
    X(VKPROF_BUCKET_MOE_COMBINE, "moe_combine", 0)                                                 \
    X(VKPROF_BUCKET_ALLREDUCE_ATTN, "allreduce_attn", 1)                                           \
    X(VKPROF_BUCKET_ALLREDUCE_ATTN_ENQUEUE, "allreduce_attn_enqueue", 1)                           \
    X(VKPROF_BUCKET_ALLREDUCE_ATTN_RENDEZVOUS, "allreduce_attn_rendezvous", 1)                     \
    X(VKPROF_BUCKET_ALLREDUCE_MLP, "allreduce_mlp", 1)                                             \
    X(VKPROF_BUCKET_ALLREDUCE_MLP_ENQUEUE, "allreduce_mlp_enqueue", 1)                             \
    X(VKPROF_BUCKET_ALLREDUCE_MLP_RENDEZVOUS, "allreduce_mlp_rendezvous", 1)

typedef enum vkprof_default_bucket {
#define VKPROF_X_(id, name, hot) id,
    VKPROF_DEFAULT_BUCKETS(VKPROF_X_)
#undef VKPROF_X_
        VKPROF_BUCKET_DEFAULT_COUNT
} vkprof_default_bucket;

typedef uint32_t vkprof_bucket;
#define VKPROF_MAX_BUCKETS 128u
#define VKPROF_SPAN_MAX_ANNOTATIONS 4u
#define VKPROF_ANNOTATION_MAX 47u /**< longest annotation value kept, in bytes */

/** Most spans open at once on one thread (all contexts together). A span
 *  opened beyond it is not timed: an empty token, counted as span_too_deep. */
#define VKPROF_SPAN_MAX_DEPTH 16u

/**
 * A span token: returned by start, closed by end. 24 bytes; the span's
 * annotations and flow bookkeeping live in the library, in storage of the
 * thread that opened it. Empty (start_ns == 0) when that level is off;
 * closing or annotating an empty token does nothing. Lives on the caller's
 * stack; may be copied, but a span belongs to the thread that opened it.
 *
 * Spans nest per thread: close the inner one first. Misuse is never timed
 * wrongly and never crashes:
 *  - closed twice (through a copy; end sets the closed token's start_ns to
 *    0, so closing the same variable again is closing an empty token), or
 *    closed from another thread or with another context: 0, nothing timed,
 *    counted as span_closed;
 *  - an outer span closed while spans opened inside it are still open: the
 *    outer one is timed; the inner ones are given up (not timed, counted as
 *    span_order each; closing one later counts as span_closed);
 *  - annotated after it was closed or given up: false, nothing attached;
 *  - more than VKPROF_SPAN_MAX_DEPTH open on the thread: the new span is an
 *    empty token, counted as span_too_deep.
 * The counts are in vkprof_error_counts and the snapshot, and are logged.
 */
typedef struct vkprof_span {
    uint64_t start_ns;    /**< the host clock's reading at open (CPU counter ticks, or
                               CLOCK_MONOTONIC ns where the counter is not used: see
                               VKPROF_HOST_CLOCK); not a time to compare; 0: empty token */
    vkprof_bucket bucket; /**< the bucket it is timed into */
    uint32_t slot_;       /* internal: its place on the thread's span stack */
    uint64_t serial_;     /* internal: which span held that place */
} vkprof_span;

/** The app's synchronisation before a span reads the clock (a fence wait,
 *  vkQueueWaitIdle, ...). The span then covers GPU work, and the run is
 *  knowingly serialised. */
typedef void (*vkprof_sync_fn)(void *user);

/** Register a bucket by name (1..VKPROF_MAX_NAME bytes); an existing name
 *  returns its id. `hot` spans of it are timed at level 2. NULL ctx, `name`
 *  or `out`: VKPROF_ERROR_INVALID_ARGUMENT. */
vkprof_result vkprof_register_bucket(vkprof_context ctx, const char *name, bool hot,
                                     vkprof_bucket *out);
/** Name of a bucket; NULL for an unknown id or a NULL ctx. */
const char *vkprof_bucket_name(vkprof_context ctx, vkprof_bucket bucket);
/** Number of registered buckets (defaults included); 0 for a NULL ctx. */
uint32_t vkprof_bucket_count(vkprof_context ctx);

/** Current level (VKPROF_HOST_OFF for a NULL ctx); vkprof_set_host_level()
 *  changes it at runtime (a NULL ctx or an out-of-range level: no-op). */
vkprof_host_level vkprof_get_host_level(vkprof_context ctx);
void vkprof_set_host_level(vkprof_context ctx, vkprof_host_level level);

/** Open a span (timed at level 1 only). NULL ctx: an empty token. */
vkprof_span vkprof_span_begin(vkprof_context ctx, vkprof_bucket bucket);
/** Open a hot span (timed at levels 1 and 2). NULL ctx: an empty token. */
vkprof_span vkprof_span_begin_hot(vkprof_context ctx, vkprof_bucket bucket);
/** Attach a key/value to an open span (both copied: the key cut at 31
 *  bytes, the value at VKPROF_ANNOTATION_MAX bytes). A key given again
 *  (as cut) takes the new value. Ignored on an empty token. Returns false
 *  when the span is full, for a key the trace writes itself ("bucket",
 *  "hot", "sync", "step", "probe": an event must not hold a key twice), and
 *  for a NULL `span`, `key` or `value` (nothing attached). */
bool vkprof_span_annotate(vkprof_span *span, const char *key, const char *value);
/** The same with a list of integers, written "3,17,42" (e.g. MoE expert ids).
 *  NULL `ids` with `count` 0 is the empty list; with `count` > 0, or a NULL
 *  `span` or `key`: false, nothing attached. */
bool vkprof_span_annotate_ids(vkprof_span *span, const char *key, const uint32_t *ids,
                              uint32_t count);
/** Close: host time only, no synchronisation. Returns the span in ns (0 if
 *  empty). NULL ctx or NULL `span`: 0, nothing counted. */
uint64_t vkprof_span_end(vkprof_context ctx, vkprof_span *span);
/** Close after calling `sync(user)`, so the span covers the GPU work. NULL
 *  `sync`: the same as vkprof_span_end(). `sync` is called also when
 *  nothing is timed (NULL ctx, NULL or empty `span`: 0); `user` is only
 *  passed on, and may be NULL. */
uint64_t vkprof_span_end_sync(vkprof_context ctx, vkprof_span *span, vkprof_sync_fn sync,
                              void *user);

/** A span off the thread's span stack, for an interval that a front end
 *  sees begin and end in different calls (the vkprof layer's command-buffer
 *  recordings, vkBeginCommandBuffer to vkEndCommandBuffer, which may
 *  interleave). Timed at level 1, like vkprof_span_begin, into `bucket`,
 *  and traced on this thread's track; it takes no annotation, is no flow's
 *  source and is not the thread's open span. The caller keeps it nested in
 *  time with the thread's other spans. NULL ctx, or host spans not at level
 *  1: an empty token. */
vkprof_span vkprof_span_begin_detached(vkprof_context ctx, vkprof_bucket bucket);
/** Close a detached span, on the thread and with the context that opened
 *  it (the token does not hold the context: another one would time it into
 *  its own bucket of that id). Returns its length
 *  in ns; 0, nothing timed, for an empty token, a stack span's token (close
 *  that with vkprof_span_end), a NULL ctx or `span`, or another thread. */
uint64_t vkprof_span_end_detached(vkprof_context ctx, vkprof_span *span);

/**
 * Rendezvous probe: time `wait(user)` (the app's barrier that returns once
 * every rank has arrived) as a hot span of `probe_bucket`, marked as a probe.
 * Call it right before the collective's own span: the wait for the slowest
 * rank is then charged to the probe, and the collective's span measures only
 * the collective. Returns the wait in ns (0 when hot spans are off, or for
 * a NULL ctx; `wait` is called either way). NULL `wait`: nothing to wait
 * for, an empty probe. `user` is only passed on, and may be NULL.
 */
uint64_t vkprof_rendezvous(vkprof_context ctx, vkprof_bucket probe_bucket, vkprof_sync_fn wait,
                           void *user);

/** Name the calling thread's track in the trace (copied; 63 bytes kept).
 *  NULL ctx or NULL `name`: no-op. */
void vkprof_set_thread_name(vkprof_context ctx, const char *name);

/** Count one decode step (token). Every `report_every` steps, while host
 *  profiling is on, emits the per-token report through the logger
 *  (VKPROF_LOG_REPORT). While tracing, marks the step on the timeline. NULL
 *  ctx: no-op. */
void vkprof_step(vkprof_context ctx);
/** Steps counted so far; 0 for a NULL ctx. */
uint64_t vkprof_step_count(vkprof_context ctx);

/** Figures of one bucket. */
typedef struct vkprof_bucket_stats {
    vkprof_bucket id;
    char name[VKPROF_MAX_NAME + 1];
    bool hot;
    uint64_t calls;
    uint64_t total_ns;
} vkprof_bucket_stats;

/** Copy every bucket's figures since the context was created into `out`
 *  (room for `cap`); `*count` gets the number of buckets, and
 *  VKPROF_ERROR_BUFFER_TOO_SMALL (after filling `cap`) when cap is smaller.
 *  NULL `out`: a size query (cap is taken as 0). NULL ctx or NULL `count`:
 *  VKPROF_ERROR_INVALID_ARGUMENT. */
vkprof_result vkprof_bucket_snapshot(vkprof_context ctx, vkprof_bucket_stats *out, uint32_t cap,
                                     uint32_t *count);

/** Input of the per-token report formatter. */
typedef struct vkprof_report_row {
    const char *name;
    uint64_t total_ns; /**< in the window */
    uint64_t calls;    /**< in the window */
} vkprof_report_row;

/**
 * Format the per-token host report for a window of `tokens` steps that took
 * `wall_ns` of host time: a header (ms/token under profiling, and a plain
 * warning that profiled throughput is not a serving figure), then one line
 * per row sorted by time: name, ms/token, %, calls/token, us/call. Rows with
 * no calls are left out. Returns the bytes needed (without NUL), like
 * snprintf. `rows` is sorted in place. NULL `buf`: nothing is written,
 * whatever `cap` says (a size query, like snprintf(NULL, 0, ...)). NULL
 * `rows`: no rows, whatever `count` says.
 */
size_t vkprof_format_report(char *buf, size_t cap, uint64_t first_step, uint64_t tokens,
                            uint64_t wall_ns, vkprof_report_row *rows, uint32_t count);

/* ======================================================================== */
/* GPU <-> host clock calibration                                            */
/* ======================================================================== */

typedef struct vkprof_calibration {
    vkprof_calibration_method method;
    const char *extension;   /**< "VK_KHR_calibrated_timestamps", "VK_EXT_...", or "" */
    const char *host_domain; /**< "CLOCK_MONOTONIC", or "CLOCK_MONOTONIC_RAW bridged" */
    uint64_t error_bound_ns; /**< worst bound of the points in use */
    uint64_t last_error_ns;  /**< bound of the newest point */
    uint32_t points;         /**< calibration points kept (piecewise-linear map) */
    uint64_t recalibrations; /**< points taken in all */
    uint64_t anchor_ticks;   /**< newest point: device ticks ... */
    uint64_t anchor_host_ns; /**< ... and the host CLOCK_MONOTONIC ns they map to */
    double drift_ppm;        /**< host ns per device ns over the kept points, - 1, in ppm */
    /** Checked as it is used (ring mode with vkprof_cmd_submit): each
     *  execution's stamps must map inside the host window from its submit to
     *  the read that found them. window_checks executions were checked,
     *  window_violations fell outside by more than the bound. Three in a row:
     *  `inconsistent` (the calibrated clock is not the stamps' clock, as on
     *  some drivers), inconsistent_offset_ns says by how much (+ after the
     *  window, - before), and the map falls back to bracketing by those
     *  windows (method becomes VKPROF_CALIBRATION_BRACKET). */
    bool inconsistent;
    int64_t inconsistent_offset_ns;
    uint64_t window_checks;
    uint64_t window_violations;
} vkprof_calibration;

/** Take a calibration point now (bounded tries; the best maxDeviation is
 *  kept). With the bracket fallback it submits to desc.queue and waits.
 *  NULL ctx: VKPROF_ERROR_INVALID_ARGUMENT. */
vkprof_result vkprof_calibrate(vkprof_context ctx);
/** The calibration state; VKPROF_ERROR_INVALID_ARGUMENT for a NULL ctx or `out`. */
vkprof_result vkprof_get_calibration(vkprof_context ctx, vkprof_calibration *out);
/** Map absolute device ticks (as written by a timestamp query) to host
 *  CLOCK_MONOTONIC ns, piecewise-linearly between calibration points, in
 *  integer arithmetic. VKPROF_ERROR_NO_CALIBRATION without a point.
 *  NULL ctx or NULL `host_ns`: VKPROF_ERROR_INVALID_ARGUMENT. */
vkprof_result vkprof_device_to_host_ns(vkprof_context ctx, uint64_t ticks, uint64_t *host_ns);
/** Host CLOCK_MONOTONIC now, in ns: the clock of the trace and of span
 *  durations (spans read the CPU counter where usable, mapped to it). */
uint64_t vkprof_host_now_ns(void);

/* ======================================================================== */
/* Timeline and Chrome Trace Event export                                    */
/* ======================================================================== */

/** Start recording events (if not yet), keeping at most `capacity` events
 *  (0: desc.trace_capacity). Host spans, steps and GPU scopes are recorded
 *  from now on. NULL ctx: VKPROF_ERROR_INVALID_ARGUMENT. */
vkprof_result vkprof_trace_begin(vkprof_context ctx, uint32_t capacity);
/** True while events are recorded; false for a NULL ctx. */
bool vkprof_tracing(vkprof_context ctx);
/** Events recorded, and events dropped because the store was full. NULL
 *  ctx: both 0. `recorded` and `dropped` may each be NULL (not written). */
void vkprof_trace_counts(vkprof_context ctx, uint64_t *recorded, uint64_t *dropped);
/** The event store as it stands (vkprof_get_trace_info). */
typedef struct vkprof_trace_info {
    bool tracing;         /**< events are recorded now */
    bool keep_last;       /**< desc.trace_keep is VKPROF_TRACE_KEEP_LAST */
    uint64_t capacity;    /**< events it holds */
    uint64_t recorded;    /**< events it was given in all */
    uint64_t kept;        /**< events it holds now */
    uint64_t dropped;     /**< KEEP_FIRST: not kept, the store was full */
    uint64_t overwritten; /**< KEEP_LAST: wrapped over */
    uint64_t full_at_ns;  /**< KEEP_FIRST: CLOCK_MONOTONIC when the first one was not kept; 0 */
    uint64_t start_ns;    /**< CLOCK_MONOTONIC when the store started */
} vkprof_trace_info;
/** VKPROF_ERROR_INVALID_ARGUMENT for a NULL ctx or `out`; a context that
 *  never traced gives zeros (VKPROF_OK). */
vkprof_result vkprof_get_trace_info(vkprof_context ctx, vkprof_trace_info *out);

/**
 * Write the trace to `path` in the format desc.trace_format says (resolved
 * by vkprof_create, VKPROF_TRACE_FORMAT read there: by default Chrome Trace
 * Event JSON, or Perfetto's protobuf for a .pftrace or .perfetto-trace
 * path; vkprof_trace_write_set picks a format per call), atomically: a
 * temporary file in the same folder, flushed and synced, then renamed over
 * `path`. On any error (full disk, read-only folder) the temporary file is
 * removed, `path` is left as it was, and VKPROF_ERROR_IO is returned with the
 * reason logged. Events keep being recorded; writing twice is fine.
 * NULL ctx, NULL or empty `path`: VKPROF_ERROR_INVALID_ARGUMENT.
 */
vkprof_result vkprof_trace_write(vkprof_context ctx, const char *path);
/**
 * Write one trace of several contexts to `path`, atomically, in `format`
 * (VKPROF_TRACE_FORMAT_DEFAULT: the first context's desc.trace_format, as
 * vkprof_create resolved it; the path rules are vkprof_trace_write's). Every context's events are
 * on one timeline: the host threads once (the contexts of one process share them), and each
 * context's GPU queue a track of its own device (the same VkDevice is one
 * device), named by device and queue family; the metadata holds each
 * context's own (device, calibration, sampling, losses) under "contexts",
 * and the sums at the top, as vkprof merge does. Host spans are mapped
 * through the first context's host clock. Contexts opened with
 * vkprof_spool_open() may be given, live and opened ones mixed. count 1 is
 * vkprof_trace_write. NULL or empty `ctxs`, a NULL context in it, more than
 * VKPROF_TRACE_SET_MAX, or no `path`: VKPROF_ERROR_INVALID_ARGUMENT.
 */
#define VKPROF_TRACE_SET_MAX 64u
vkprof_result vkprof_trace_write_set(const vkprof_context *ctxs, uint32_t count, const char *path,
                                     vkprof_trace_format format);

/* ---- spools (desc.trace_spool) ------------------------------------------ */

/** Where a spool stands. */
typedef enum vkprof_spool_state {
    VKPROF_SPOOL_NONE = 0,    /**< the context has no spool (none asked for, or it failed) */
    VKPROF_SPOOL_OPEN = 1,    /**< being written (or its process ended without closing it) */
    VKPROF_SPOOL_CLOSED = 2,  /**< vkprof_destroy() closed it: complete */
    VKPROF_SPOOL_DETACHED = 3 /**< written by the parent of a fork (seen from the child) */
} vkprof_spool_state;

/** What a spool says of itself (vkprof_spool_status). */
typedef struct vkprof_spool_info {
    vkprof_spool_state state;
    int64_t pid;                      /**< the process that wrote it */
    char exe[256];                    /**< its executable's name */
    char label[128];                  /**< desc.trace_label of the context that wrote it */
    uint64_t created_ns;              /**< CLOCK_MONOTONIC at creation */
    uint64_t checkpoint_ns;           /**< CLOCK_MONOTONIC of the last checkpoint (0: none) */
    uint64_t checkpoints;             /**< checkpoints written */
    uint64_t closed_ns;               /**< CLOCK_MONOTONIC when it was closed (0: not closed) */
    uint64_t events_after_checkpoint; /**< events recorded after the last checkpoint (kept) */
    char reason[256];                 /**< why there is no spool (state NONE), else "" */
} vkprof_spool_info;

/** Write a checkpoint now (only when something changed since the last).
 *  VKPROF_DISABLED without a spool; NULL ctx: VKPROF_ERROR_INVALID_ARGUMENT. */
vkprof_result vkprof_spool_sync(vkprof_context ctx);
/** The spool's state; VKPROF_ERROR_INVALID_ARGUMENT for a NULL ctx or `out`. */
vkprof_result vkprof_spool_status(vkprof_context ctx, vkprof_spool_info *out);
/**
 * Open a spool written by any process (alive, ended or killed) as a
 * context that holds its trace: vkprof_trace_write(_set), vkprof_snapshot(_json),
 * vkprof_bucket_snapshot, vkprof_get_timing_stats, vkprof_get_calibration,
 * vkprof_get_device_info, vkprof_spool_status and the name lookups read it;
 * it times nothing (inactive) and calls no Vulkan function. Free it with
 * vkprof_destroy(). The file is read as untrusted input: anything that does
 * not fit its own header is VKPROF_ERROR_IO with the reason in `err` (errcap
 * bytes; may be NULL). NULL `path` or `out`: VKPROF_ERROR_INVALID_ARGUMENT.
 */
vkprof_result vkprof_spool_open(const char *path, vkprof_context *out, char *err, size_t errcap);

/** Write to desc.trace_path / $VKPROF_TRACE when set (VKPROF_ERROR_NOT_TRACING otherwise).
 *  vkprof_destroy() does the same. NULL ctx: VKPROF_ERROR_INVALID_ARGUMENT.
 *  The k-th context of the process that names the same file writes
 *  `<stem>.ctx<k><ext>` instead (trace.ctx2.json) and logs so; a device or
 *  FIFO is written in place, a symlink is followed, a directory is refused
 *  (docs/trace-format.md, "Where the trace goes"). A failed write returns
 *  VKPROF_ERROR_IO and logs the step and its errno. */
vkprof_result vkprof_trace_flush(vkprof_context ctx);

/* ---- call-site macros --------------------------------------------------- */
/*
 * Define VKPROF_DISABLE before including this header to compile every call
 * site out: the macros then expand to nothing that is evaluated (except the
 * record callback of VKPROF_BOTH, which must still record the work).
 * A NULL ctx: VKPROF_BEGIN / VKPROF_END give VKPROF_DISABLED without a
 * call; VKPROF_BOTH calls `record` and gives VKPROF_DISABLED.
 */
#ifndef VKPROF_DISABLE
#define VKPROF_BEGIN(ctx, cmd, phase)                                                              \
    (vkprof_active(ctx) ? vkprof_cmd_begin((ctx), (cmd), (phase)) : VKPROF_DISABLED)
#define VKPROF_END(ctx, cmd, phase)                                                                \
    (vkprof_active(ctx) ? vkprof_cmd_end((ctx), (cmd), (phase)) : VKPROF_DISABLED)
#define VKPROF_BOTH(ctx, cmd, phase, record, user)                                                 \
    vkprof_cmd_both((ctx), (cmd), (phase), (record), (user))
#else
#define VKPROF_BEGIN(ctx, cmd, phase) ((void)0, VKPROF_DISABLED)
#define VKPROF_END(ctx, cmd, phase) ((void)0, VKPROF_DISABLED)
#define VKPROF_BOTH(ctx, cmd, phase, record, user) ((record)((cmd), (user)), VKPROF_DISABLED)
#endif

/*
 * Span macros, the same way: VKPROF_SPAN / VKPROF_SPAN_HOT test the host
 * level inline (one load) and call vkprof_span_begin/_hot only when the span
 * is timed; VKPROF_SPAN_END / VKPROF_SPAN_ANNOTATE test the token inline.
 *
 *     vkprof_span s = VKPROF_SPAN(ctx, VKPROF_BUCKET_MLP);
 *     VKPROF_SPAN_ANNOTATE(&s, "layer", "3");
 *     ...
 *     VKPROF_SPAN_END(ctx, &s);
 *
 * Under VKPROF_DISABLE they reference no library symbol: SPAN and SPAN_HOT
 * give an empty token, END and ANNOTATE 0 and false (their arguments not
 * evaluated), while SPAN_END_SYNC and RENDEZVOUS still call the app's
 * `sync` / `wait` (when not NULL), which the app's run needs either way.
 */
static inline vkprof_span vkprof__span_empty_(void)
{
    vkprof_span s = {0, 0, 0, 0};
    return s;
}
static inline void vkprof__span_call_(vkprof_sync_fn fn, void *user)
{
    if (fn != NULL) {
        fn(user);
    }
}
#ifndef VKPROF_DISABLE
#define VKPROF_SPAN(ctx, bucket)                                                                   \
    (vkprof__span_on_((ctx), false) ? vkprof_span_begin((ctx), (bucket)) : vkprof__span_empty_())
#define VKPROF_SPAN_HOT(ctx, bucket)                                                               \
    (vkprof__span_on_((ctx), true) ? vkprof_span_begin_hot((ctx), (bucket)) : vkprof__span_empty_())
#define VKPROF_SPAN_END(ctx, span)                                                                 \
    ((span)->start_ns != 0 ? vkprof_span_end((ctx), (span)) : (uint64_t)0)
#define VKPROF_SPAN_END_SYNC(ctx, span, sync, user)                                                \
    vkprof_span_end_sync((ctx), (span), (sync), (user))
#define VKPROF_SPAN_ANNOTATE(span, key, value)                                                     \
    ((span)->start_ns != 0 ? vkprof_span_annotate((span), (key), (value)) : false)
#define VKPROF_RENDEZVOUS(ctx, bucket, wait, user)                                                 \
    vkprof_rendezvous((ctx), (bucket), (wait), (user))
#else
#define VKPROF_SPAN(ctx, bucket) vkprof__span_empty_()
#define VKPROF_SPAN_HOT(ctx, bucket) vkprof__span_empty_()
#define VKPROF_SPAN_END(ctx, span) ((void)sizeof(span), (uint64_t)0)
#define VKPROF_SPAN_END_SYNC(ctx, span, sync, user)                                                \
    ((void)sizeof(span), vkprof__span_call_((sync), (user)), (uint64_t)0)
#define VKPROF_SPAN_ANNOTATE(span, key, value) ((void)sizeof(span), false)
#define VKPROF_RENDEZVOUS(ctx, bucket, wait, user) (vkprof__span_call_((wait), (user)), (uint64_t)0)
#endif

/* ---- the old names of 0.2 (docs/migrating.md, "One verb for each pair") --- */
/*
 * Every pair is begin/end now: vkprof_cmd_begin/_end, vkprof_span_begin/_end,
 * vkprof_trace_begin; the trace's writers are vkprof_trace_write(_set) and
 * vkprof_trace_flush. The old names still compile, with a deprecation
 * warning, and do exactly what the new ones do; they are inline and the
 * shared library no longer exports them. Define VKPROF_NO_DEPRECATED to
 * drop them.
 */
#ifndef VKPROF_NO_DEPRECATED
/* each name at the start of its line, as every declaration (tests/device/test_null.c reads them) */
// clang-format off
#if defined(__GNUC__) || defined(__clang__)
#define VKPROF_DEPRECATED_(msg) __attribute__((deprecated(msg)))
#elif defined(_MSC_VER)
#define VKPROF_DEPRECATED_(msg) __declspec(deprecated(msg))
#else
#define VKPROF_DEPRECATED_(msg)
#endif
static inline VKPROF_DEPRECATED_("renamed vkprof_span_begin")
vkprof_span vkprof_span_start(vkprof_context ctx, vkprof_bucket bucket)
{
    return vkprof_span_begin(ctx, bucket);
}
static inline VKPROF_DEPRECATED_("renamed vkprof_span_begin_hot")
vkprof_span vkprof_span_start_hot(vkprof_context ctx, vkprof_bucket bucket)
{
    return vkprof_span_begin_hot(ctx, bucket);
}
static inline VKPROF_DEPRECATED_("renamed vkprof_trace_begin")
vkprof_result vkprof_trace_start(vkprof_context ctx, uint32_t capacity)
{
    return vkprof_trace_begin(ctx, capacity);
}
static inline VKPROF_DEPRECATED_("renamed vkprof_trace_flush")
vkprof_result vkprof_flush(vkprof_context ctx)
{
    return vkprof_trace_flush(ctx);
}
// clang-format on
#endif

#ifdef __cplusplus
}
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC visibility pop
#endif
#endif /* VKPROF_VKPROF_H */
