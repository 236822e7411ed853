/* The layout of the one context object, shared by every seam of src/
 * (docs/design.md, "The pieces"): the Vulkan function table, each seam's state as its own
 * block, and struct vkprof_context_T that holds them. Types only: the
 * functions of a seam are declared in its own header (base/base.h,
 * clock/clock.h, timeline/store.h, gpu/gpu.h, host/host.h, core/core.h), and a
 * source file includes the headers of the seams it calls, which must not be
 * above its own (tests/layering checks it). Not installed. */
#ifndef VKPROF_CONTEXT_H
#define VKPROF_CONTEXT_H

/* The library calls Vulkan only through its per-context table (struct
 * vkprof_vk) and never links the loader: no prototypes, so that a direct call
 * fails to compile. Every source file includes this header (directly or through its seam's header)
 * first; the CMake target defines it as well. */
#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include "vkprof/vkprof.h"

#include <stdarg.h>
#include <stdatomic.h>

/* Vulkan headers older than 1.3.272 have only the EXT calibrated-timestamps
 * names; the KHR ones share their values and signatures. */
typedef VkResult(VKAPI_PTR *vkprof_PFN_GetCalibrateableTimeDomains)(VkPhysicalDevice, uint32_t *,
                                                                    VkTimeDomainEXT *);
typedef VkResult(VKAPI_PTR *vkprof_PFN_GetCalibratedTimestamps)(
    VkDevice, uint32_t, const VkCalibratedTimestampInfoEXT *, uint64_t *, uint64_t *);

/*
 * Every Vulkan entry point the library calls, in one list; the function
 * table (struct vkprof_vk) and its loader (core/context.c) are generated
 * from it. X(level, need, type, field, name, alias):
 *   level  I: looked up with desc.get_instance_proc_addr(desc.instance, ...)
 *          D: with desc.get_device_proc_addr(desc.device, ...)
 *   need   REQUIRED: missing, vkprof_create fails with MISSING_FUNCTION
 *          TIMING:   missing, the queue family is taken as having no
 *                    timestamps (the context stays inactive)
 *          OPTIONAL: missing, the feature that uses it is off
 *          HOST_RESET: looked up only when desc.host_query_reset (optional)
 *   name   the name looked up first; alias: the one tried when that gives
 *          NULL (an older extension name, or a newer one older loaders do not
 *          know), or NULL. Which was found: vkprof_vk.from_alias.
 * A device-level entry point of an extension the app did not enable is NULL;
 * whichever name the app enabled is the one found.
 */
#define VKPROF_VK_FUNCTIONS(X)                                                                     \
    X(I, REQUIRED, PFN_vkGetPhysicalDeviceProperties, GetPhysicalDeviceProperties,                 \
      "vkGetPhysicalDeviceProperties", NULL)                                                       \
    X(I, REQUIRED, PFN_vkGetPhysicalDeviceQueueFamilyProperties,                                   \
      GetPhysicalDeviceQueueFamilyProperties, "vkGetPhysicalDeviceQueueFamilyProperties", NULL)    \
    X(I, OPTIONAL, PFN_vkEnumerateDeviceExtensionProperties, EnumerateDeviceExtensionProperties,   \
      "vkEnumerateDeviceExtensionProperties", NULL)                                                \
    /* EXT first: older loaders do not know the KHR name (same signature) */                       \
    X(I, OPTIONAL, vkprof_PFN_GetCalibrateableTimeDomains,                                         \
      GetPhysicalDeviceCalibrateableTimeDomains, "vkGetPhysicalDeviceCalibrateableTimeDomainsEXT", \
      "vkGetPhysicalDeviceCalibrateableTimeDomainsKHR")                                            \
    X(I, OPTIONAL, PFN_vkGetPhysicalDeviceProperties2, GetPhysicalDeviceProperties2,               \
      "vkGetPhysicalDeviceProperties2", NULL)                                                      \
    X(D, TIMING, PFN_vkCreateQueryPool, CreateQueryPool, "vkCreateQueryPool", NULL)                \
    X(D, TIMING, PFN_vkDestroyQueryPool, DestroyQueryPool, "vkDestroyQueryPool", NULL)             \
    X(D, TIMING, PFN_vkCmdResetQueryPool, CmdResetQueryPool, "vkCmdResetQueryPool", NULL)          \
    X(D, TIMING, PFN_vkCmdWriteTimestamp, CmdWriteTimestamp, "vkCmdWriteTimestamp", NULL)          \
    /* core 1.3 or the KHR alias; used only when desc.synchronization2 says so */                  \
    X(D, OPTIONAL, PFN_vkCmdWriteTimestamp2, CmdWriteTimestamp2, "vkCmdWriteTimestamp2",           \
      "vkCmdWriteTimestamp2KHR")                                                                   \
    X(D, TIMING, PFN_vkGetQueryPoolResults, GetQueryPoolResults, "vkGetQueryPoolResults", NULL)    \
    /* core 1.2 or the EXT alias */                                                                \
    X(D, HOST_RESET, PFN_vkResetQueryPool, ResetQueryPool, "vkResetQueryPool",                     \
      "vkResetQueryPoolEXT")                                                                       \
    X(D, OPTIONAL, vkprof_PFN_GetCalibratedTimestamps, GetCalibratedTimestamps,                    \
      "vkGetCalibratedTimestampsEXT", "vkGetCalibratedTimestampsKHR")                              \
    /* the bracket calibration fallback submits one timestamp itself */                            \
    X(D, OPTIONAL, PFN_vkCreateCommandPool, CreateCommandPool, "vkCreateCommandPool", NULL)        \
    X(D, OPTIONAL, PFN_vkDestroyCommandPool, DestroyCommandPool, "vkDestroyCommandPool", NULL)     \
    X(D, OPTIONAL, PFN_vkAllocateCommandBuffers, AllocateCommandBuffers,                           \
      "vkAllocateCommandBuffers", NULL)                                                            \
    X(D, OPTIONAL, PFN_vkBeginCommandBuffer, BeginCommandBuffer, "vkBeginCommandBuffer", NULL)     \
    X(D, OPTIONAL, PFN_vkEndCommandBuffer, EndCommandBuffer, "vkEndCommandBuffer", NULL)           \
    X(D, OPTIONAL, PFN_vkResetCommandBuffer, ResetCommandBuffer, "vkResetCommandBuffer", NULL)     \
    X(D, OPTIONAL, PFN_vkCreateFence, CreateFence, "vkCreateFence", NULL)                          \
    X(D, OPTIONAL, PFN_vkDestroyFence, DestroyFence, "vkDestroyFence", NULL)                       \
    X(D, OPTIONAL, PFN_vkResetFences, ResetFences, "vkResetFences", NULL)                          \
    X(D, OPTIONAL, PFN_vkWaitForFences, WaitForFences, "vkWaitForFences", NULL)                    \
    X(D, OPTIONAL, PFN_vkQueueSubmit, QueueSubmit, "vkQueueSubmit", NULL)                          \
    /* core 1.3 or the KHR alias; vkprof_queue_submit2 */                                          \
    X(D, OPTIONAL, PFN_vkQueueSubmit2, QueueSubmit2, "vkQueueSubmit2", "vkQueueSubmit2KHR")

/* The index of each entry point in the list (bits of vkprof_vk.from_alias). */
enum {
#define VKPROF_X_(level, need, type, field, name, alias) VKPROF_VK_INDEX_##field,
    VKPROF_VK_FUNCTIONS(VKPROF_X_)
#undef VKPROF_X_
        VKPROF_VK_COUNT
};
_Static_assert(VKPROF_VK_COUNT <= 64, "vkprof_vk.from_alias has one bit per entry point");

/* The per-context function table: one field per entry of VKPROF_VK_FUNCTIONS. */
typedef struct vkprof_vk {
#define VKPROF_X_(level, need, type, field, name, alias) type field;
    VKPROF_VK_FUNCTIONS(VKPROF_X_)
#undef VKPROF_X_
    uint64_t from_alias; /* bit VKPROF_VK_INDEX_x: found under its alias name */
} vkprof_vk;

/* ---- host spans ---- */
typedef struct vkprof_bucket_slot {
    char name[VKPROF_MAX_NAME + 1];
    bool hot;
    _Atomic uint64_t calls;
    _Atomic uint64_t total_ticks; /* host clock ticks (ctx->hclk); ns through vkprof__hclk_dur_ns */
} vkprof_bucket_slot;

/* One thread's sums of every bucket in one context (host/host.c): written
 * by that thread alone, with a plain load and store (no lock-prefixed add
 * on a span's path); readers add every thread's to the slot's own counts.
 * Owned by the context, freed with it. */
typedef struct vkprof_span_acc {
    struct vkprof_span_acc *next; /* the context's list; set before it is published */
    const void *owner;            /* the owning thread's span stack (unique among live threads) */
    _Atomic uint64_t calls[VKPROF_MAX_BUCKETS];
    _Atomic uint64_t ticks[VKPROF_MAX_BUCKETS];
} vkprof_span_acc;

typedef struct vkprof_host {
    /* the level is ctx->head.host_level (the span macros read it inline) */
    /* buckets[].calls/total_ticks: what no thread's accumulator holds (a
     * thread that could not get one adds there, atomically) */
    vkprof_bucket_slot buckets[VKPROF_MAX_BUCKETS];
    _Atomic(vkprof_span_acc *) accs; /* every thread's accumulator, newest first */
    uint64_t uid;                    /* unique in the process: threads cache their acc by it */
    _Atomic uint32_t bucket_count;
    atomic_flag register_lock;
    uint32_t report_every;
    /* report window, under report_lock */
    atomic_flag report_lock;
    _Atomic uint64_t window_start_ns; /* 0 until the first span */
    uint64_t window_first_step;
    uint64_t window_calls[VKPROF_MAX_BUCKETS];
    uint64_t window_total[VKPROF_MAX_BUCKETS]; /* ticks */
} vkprof_host;

/* ---- steps (base): the app's tokens. vkprof_step (core) advances the
 * count and an opened spool (export) restores it, through base/base.h; the
 * GPU core, the timeline, host spans and the exporters read it there. ---- */
typedef struct vkprof_steps {
    _Atomic uint64_t done; /* steps finished: the current step is done + 1 */
} vkprof_steps;

/* ---- calibration ---- */
typedef struct vkprof_cal_point {
    uint64_t ticks;   /* device ticks (absolute, as queries report them) */
    uint64_t host_ns; /* host CLOCK_MONOTONIC */
    uint64_t err_ns;  /* half-width of the uncertainty */
} vkprof_cal_point;

#define VKPROF_CAL_POINTS 4096u

/* ---- the host clock of spans (clock/hostclock.c) ----
 * Spans read the CPU's invariant counter (rdtsc, cntvct_el0) where it is
 * usable, else CLOCK_MONOTONIC; the counter is calibrated against
 * CLOCK_MONOTONIC with the same piecewise-linear points as the GPU clock
 * (vkprof_cal_point: ticks = counter, host_ns = CLOCK_MONOTONIC). */
typedef enum vkprof_hclk_kind {
    VKPROF_HCLK_MONOTONIC = 0, /* ticks are CLOCK_MONOTONIC ns */
    VKPROF_HCLK_COUNTER = 1,   /* rdtsc / cntvct_el0 */
    VKPROF_HCLK_SIM = 2        /* a test's counter (vkprof__hclk_test_source) */
} vkprof_hclk_kind;

/* A simulated counter and reference clock, for tests only. */
typedef struct vkprof_hclk_source {
    uint64_t (*counter)(void *user);
    uint64_t (*mono_ns)(void *user); /* stands in for CLOCK_MONOTONIC */
    void *user;
    uint64_t nominal_hz; /* 0: measured at start, like rdtsc */
} vkprof_hclk_source;

#define VKPROF_HCLK_POINTS 512u

typedef struct vkprof_hclk {
    vkprof_hclk_kind kind; /* read on every span */
    bool frozen;           /* an opened spool's copy: mapped only, never read or calibrated */
    vkprof_hclk_source sim;
    const char *source; /* "tsc", "cntvct_el0", "CLOCK_MONOTONIC", "simulated" */
    char reason[160];   /* why this clock, when not the default choice ("" otherwise) */
    uint64_t nominal_hz;
    /* The duration rate, ns per tick = rate_int + rate_frac / 2^64 (rate_frac
     * rounded up from the reduced fraction rate_num / rate_den), published
     * under the seqlock rate_seq: span ends read it from any thread. */
    _Atomic uint64_t rate_seq, rate_int, rate_frac;
    /* under lock: the points, the fraction, the schedule */
    atomic_flag lock;
    uint64_t rate_num, rate_den;
    vkprof_cal_point points[VKPROF_HCLK_POINTS];
    uint32_t count;
    uint64_t taken;
    uint64_t residual_ns; /* worst |predicted - measured| of a new point, beyond both errors */
    _Atomic uint64_t next_due_ns;
    uint64_t every_ns, max_every_ns;
} vkprof_hclk;

typedef struct vkprof_cal {
    vkprof_calibration_method method;
    const char *extension;
    bool raw_bridge; /* the device offers only CLOCK_MONOTONIC_RAW */
    VkTimeDomainEXT host_domain;
    vkprof_cal_point *points;
    uint32_t count;
    uint64_t taken;
    uint64_t last_ns; /* host time of the newest point */
    /* vkprof__cal_bound's cache: the points' largest error, for (taken + count) */
    uint64_t err_max, err_key;
    /* the check in use (vkprof__cal_window): executions checked, those whose
     * stamps mapped outside their window, the current run of them, and the
     * verdict with its offset; the narrowest window seen, as a point */
    uint64_t win_checks, win_violations;
    uint32_t win_consec;
    bool inconsistent;
    int64_t inconsistent_ns;
    bool has_win_best;
    vkprof_cal_point win_best;
    /* bracket fallback */
    VkCommandPool cmd_pool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkQueryPool pool;
} vkprof_cal;

/* ---- timeline ---- */
enum { VKPROF_EV_SPAN = 1, VKPROF_EV_GPU = 2, VKPROF_EV_STEP = 3 };
enum { VKPROF_EVF_HOT = 1, VKPROF_EVF_SYNC = 2, VKPROF_EVF_PROBE = 4 };

typedef struct vkprof_event {
    uint64_t start; /* host clock ticks (spans), CLOCK_MONOTONIC ns (steps), device ticks (GPU) */
    uint64_t end;
    uint64_t id; /* span: its flow id; GPU: the flow id of the span that recorded it */
    uint64_t step;
    uint32_t name;  /* bucket or phase */
    uint32_t annot; /* 1 + index into the annotation store; 0: none */
    uint16_t tid;   /* host thread index or GPU queue track */
    uint8_t kind;
    uint8_t flags;
    _Atomic uint32_t ready;
} vkprof_event;

/* Keys are copied, not pointed to: a record outlives the process in a spool
 * (export/spool.c), where a pointer would name nothing. */
#define VKPROF_ANNOTATION_KEY_MAX 31u
typedef struct vkprof_annot {
    uint32_t count;
    char key[VKPROF_SPAN_MAX_ANNOTATIONS][VKPROF_ANNOTATION_KEY_MAX + 1];
    char value[VKPROF_SPAN_MAX_ANNOTATIONS][VKPROF_ANNOTATION_MAX + 1];
} vkprof_annot;

/* One open span, in the storage of the thread that opened it (host/host.c):
 * the public vkprof_span names it by slot_ and serial_. */
typedef struct vkprof_span_frame {
    vkprof_context ctx;
    uint64_t serial; /* matches the token's serial_; 0: free */
    uint64_t start;  /* host clock ticks (ctx->hclk), never 0 */
    uint64_t id;     /* flow id while tracing, else 0 */
    vkprof_bucket bucket;
    uint32_t flags; /* VKPROF_EVF_HOT, VKPROF_EVF_PROBE */
    vkprof_annot annot;
} vkprof_span_frame;

#define VKPROF_ARGS_CACHE 1024u

typedef struct vkprof_trace {
    _Atomic int on;
    /* the store: VKPROF_TRACE_KEEP_FIRST fills events[0..capacity) once
     * (event i in slot i, ready 1); KEEP_LAST wraps (event i in slot
     * i % capacity, ready = i / capacity + 1, so a reader knows which lap a
     * slot holds: vkprof__trace_expect). Annotations the same way. */
    vkprof_event *events;
    uint32_t capacity;
    bool keep_last;
    bool external; /* events and annots belong to a spool mapping, not the heap */
    _Atomic uint64_t next;
    _Atomic uint64_t dropped;    /* KEEP_FIRST: events not kept (the store was full) */
    _Atomic uint64_t full_at_ns; /* CLOCK_MONOTONIC of the first event not kept; 0: none */
    vkprof_annot *annots;
    uint32_t annot_capacity;
    _Atomic uint64_t annot_next;
    _Atomic uint64_t annot_dropped;
    /* GPU scope args (vkprof_cmd_end_args): VKPROF_ARGS_CACHE entries, each 0
     * or 1 + the index of a recent args record in annots, by its hash */
    _Atomic uint32_t *args_cache;
    uint64_t start_ns;
    char path[1024]; /* where it is written (ctx->trace_path, suffixed per context) */
} vkprof_trace;

typedef struct vkprof_phase_acc {
    char name[VKPROF_MAX_NAME + 1];
    uint64_t count;
    uint64_t total_ticks; /* saturating */
    uint64_t min_ticks;
    uint64_t max_ticks;
    /* of count and total_ticks: the phase's first calls, stamped whatever
     * the rotating window (desc.rotate_first_calls) */
    uint64_t first_count;
    uint64_t first_ticks;
    /* VKPROF_PHASE_FLAG_*: set once, read on the recording path (relaxed);
     * vkprof_reset keeps them */
    _Atomic uint32_t flags;
    /* vkprof_set_phase_parent: 0 none told, VKPROF__PARENT_ROOT told none
     * (a top-level region), VKPROF__PARENT_SEVERAL told two different ones,
     * else the parent's id + 1; vkprof_reset keeps it */
    _Atomic uint32_t parent;
} vkprof_phase_acc;
#define VKPROF__PARENT_ROOT 0xfffffffeu
#define VKPROF__PARENT_SEVERAL 0xffffffffu

/* ---- ring mode (ring.c) ---- */
struct vkprof_ring_T;

typedef enum vkprof_scope_state {
    VKPROF_SCOPE_IDLE = 0,
    VKPROF_SCOPE_BEGUN,
    VKPROF_SCOPE_ENDED,
    VKPROF_SCOPE_RESOLVED
} vkprof_scope_state;

/* The error counters (VKPROF_ERROR_COUNTERS), atomic: counted from any
 * thread. vkprof__fail counts the result rows; the others are incremented
 * where they happen (ctx->errors.discarded++ is atomic). */
typedef struct vkprof_error_atomics {
#define VKPROF_X_(field, result, meaning) _Atomic uint64_t field;
    VKPROF_ERROR_COUNTERS(VKPROF_X_)
#undef VKPROF_X_
} vkprof_error_atomics;

/* ---- the GPU timing core (src/gpu/): the 2-slot cycle, the ring, the
 * phase table and the timing stats. Only gpu/ and the seams above it (export,
 * core) read it (tests/layering). ---- */
typedef struct vkprof_gpu {
    /* 2-slot mode */
    VkQueryPool pool;
    vkprof_scope_state state;
    vkprof_phase scope_phase;
    uint64_t scope_ticks;
    uint64_t last_pair[2]; /* the last (begin, end) read: detects stale reads */
    bool have_last_pair;
    bool host_reset; /* desc.host_query_reset and the entry point exists */

    struct vkprof_ring_T *ring;    /* ring mode only */
    _Atomic bool ring_ready;       /* its query pool exists */
    _Atomic uint64_t enable_epoch; /* bumped when profiling is turned off */
    /* timing stats (vkprof_timing_stats); atomic: scopes are recorded, and
     * vkprof_step called, from any thread */
    _Atomic uint64_t timed_steps;
    _Atomic uint64_t step_epoch;
    _Atomic uint64_t scopes_recorded, scopes_collected;
    /* samples lost, by reason (vkprof_timing_stats.lost_*) */
    _Atomic uint64_t lost_ring_full, lost_overwritten, lost_never_submitted, lost_reset,
        lost_misuse, lost_backwards, lost_stale;
    _Atomic uint64_t extra_samples;    /* executions beyond the first of a recorded scope */
    _Atomic uint64_t scopes_discarded; /* vkprof_cmd_discard: recorded, never submitted */
    _Atomic uint64_t submissions;
    _Atomic bool lost_warned; /* the logger warned once that samples were lost */
    _Atomic uint64_t stamps_written, shared_stamps;

    /* VKPROF_MAX_PHASES entries, allocated once (never moved, so a phase id
     * read on one thread stays valid while another registers); phase_count
     * is published with release after its entry is written, and
     * registrations are serialised by phase_lock. */
    vkprof_phase_acc *phases;
    _Atomic uint32_t phase_count;
    atomic_flag phase_lock;
    /* names to ids, under phase_lock: open addressing, each entry the id + 1
     * (0: empty), the phases [0, phase_hashed) in it (a layer looks a name
     * up at every label it sees, and a scan touched every phase's entry) */
    uint16_t phase_hash[2 * VKPROF_MAX_PHASES];
    uint32_t phase_hashed;

    /* 2-slot scope, for the timeline */
    uint64_t scope_begin_ticks, scope_end_ticks;
    uint64_t scope_flow;  /* the span open on this thread at begin */
    uint32_t scope_annot; /* its args: 1 + index into trace.annots; 0: none */
} vkprof_gpu;

struct vkprof_context_T {
    struct vkprof_context_head_ head; /* must stay first: vkprof_active() reads it */

    /* The caller's desc resolved by vkprof_create in one pass (core/context.c,
     * resolve_desc): no field here means "default" any more, and the strings
     * point into the context. Everything reads this, never the caller's. */
    vkprof_context_desc desc;
    char env_var[128], host_env_var[128], trace_env_var[128];
    char trace_path[1024];  /* the trace path asked for (desc or env) */
    char spool_path[1024];  /* desc.trace_spool */
    char trace_label[128];  /* desc.trace_label */
    const char *trace_from; /* where it came from, for messages */
    vkprof_vk vk;
    vkprof_device_info info;
    uint64_t valid_mask;

    bool requested;

    vkprof_gpu gpu; /* the GPU timing core (src/gpu/) */

    /* tests only: the stamps are simulated values with no relation to the
     * host clock (tests/sim.c's fake results), so the checks that compare
     * them with it (stale samples, the calibration's windows) are off */
    bool clock_checks_off;

    vkprof_error_atomics errors; /* read with vkprof__errors_read */

    vkprof_steps steps; /* base */
    vkprof_host host;
    vkprof_hclk hclk;
    vkprof_cal cal;
    vkprof_trace trace;
    char driver_name[VK_MAX_DRIVER_NAME_SIZE + VK_MAX_DRIVER_INFO_SIZE + 2];

    /* The spool (export/spool.c): the file the store lives in and the
     * checkpoints' state; NULL without one. An opened spool's context is
     * `offline` (no Vulkan, inactive) and its figures are `frozen`. */
    struct vkprof_spool_T *spool;
    char spool_reason[256]; /* why desc.trace_spool gave no spool; "" */
    bool offline;
    const struct vkprof_frozen *frozen;
};

/* What an opened spool (export/spool.c) holds that a live context computes:
 * the getters and the exporters read it where the context is `offline`. */
typedef struct vkprof_frozen {
    vkprof_timing_stats timing;
    uint64_t phase_calls[VKPROF_MAX_PHASES]; /* ring: each phase's executed calls */
    int64_t pid;
    char boot_id[64], host[256], exe[256];
    /* the clocks read together at the last checkpoint */
    uint64_t mono_ns, real_ns, boot_ns, clock_err_ns;
    uint64_t device_id; /* the VkDevice handle's value: one device, one id */
    uint32_t thread_count;
    char (*thread_names)[64]; /* [thread_count]; "" unnamed */
    char cal_extension[64], hclk_source[32];
} vkprof_frozen;

#endif
