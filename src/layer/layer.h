/* VK_LAYER_vkprof: the explicit Vulkan layer over libvkprof's ring (issue 9).
 *
 * A front end beside src/core/: it calls only the public API
 * (include/vkprof/vkprof.h), the naming module (names.h) and the next
 * layer's Vulkan entry points; nothing below calls it.
 *
 *   layer.c   the loader interface (negotiate, the two proc-addr functions),
 *             instances and devices, the env config, device creation edits
 *   record.c  command pools and buffers: labels, pipelines, dispatch scopes
 *   queue.c   queues, submits, waits, steps, host spans
 *   output.c  the process's folder, its mapped index and its spools' names;
 *             at exit the process's one trace and summary (finish.c)
 *   map.c     the lock-free lookup table (handle -> state)
 *
 * Threads. Lookups on the recording path (a command buffer's state, a
 * pipeline's) are lock-free reads of map.c; a command buffer's state is only
 * touched by the thread recording it (Vulkan's external synchronisation).
 * Everything that reads or resets queries, registers a phase name or
 * submits goes through the device's one mutex (lyr_device.lock). */
#ifndef VKPROF_LAYER_LAYER_H
#define VKPROF_LAYER_LAYER_H

#include <vulkan/vulkan.h>
#include <vulkan/vk_layer.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "vkprof/vkprof.h"
#include "index.h"
#include "names.h"

#define LYR_NAME "VK_LAYER_vkprof"
#define LYR_MAX_FAMILIES 16u
#define LYR_MAX_QUEUES 64u
#define LYR_LABEL_DEPTH 16u
#define LYR_NO_PHASE UINT32_MAX

/* ---- the lock-free map (map.c) ------------------------------------------ */
typedef struct lyr_node {
    _Atomic uint64_t key; /* 0: free (reusable within its bucket) */
    _Atomic(void *) val;
    struct lyr_node *_Atomic next;
    struct lyr_node *all; /* every node, for freeing and walking (under lock) */
} lyr_node;

typedef struct lyr_map {
    lyr_node *_Atomic *buckets;
    uint32_t mask;
    pthread_mutex_t lock;
    lyr_node *all;
} lyr_map;

bool lyr_map_init(lyr_map *m, uint32_t buckets_pow2);
void lyr_map_free(lyr_map *m, void (*free_val)(void *));
bool lyr_map_put(lyr_map *m, uint64_t key, void *val);
void *lyr_map_get(const lyr_map *m, uint64_t key);
void *lyr_map_take(lyr_map *m, uint64_t key);
/* calls fn for every live entry, under the map's lock */
void lyr_map_each(lyr_map *m, void (*fn)(uint64_t key, void *val, void *user), void *user);

/* ---- config (layer.c) ---------------------------------------------------- */
typedef enum { LYR_MODE_DISPATCH = 0, LYR_MODE_LABEL = 1, LYR_MODE_CMDBUF = 2 } lyr_mode;
typedef enum { LYR_STEPS_WAIT = 0, LYR_STEPS_LABEL = 1, LYR_STEPS_NONE = 2 } lyr_steps;

typedef struct lyr_config {
    bool on;
    lyr_mode mode;
    uint32_t sample;
    uint32_t rotate; /* VKPROF_LAYER_ROTATE=K: dispatch mode stamps K dispatches a step (0: all) */
    /* VKPROF_LAYER_BUSY (default on): with rotate, each primary command
     * buffer is also a scope of an outer phase, stamped in every step, for
     * the GPU's busy time beside the window (issue 26) */
    bool busy;
    /* VKPROF_LAYER_BUSY_EVERY=N (with rotate and busy): the busy scopes in
     * one step in N only, a step of their own (the window stamps nothing in
     * it: the buffers run as in flow); the other steps stamp the window and
     * count the buffers' scopes as left out (estimated). 1: every step,
     * beside the window. Each stamp a step costs (issue 26). */
    uint32_t busy_every;
    /* VKPROF_LAYER_BUSY_BEGIN=top|all (default all): where a command
     * buffer's busy scope begins: at the top of the pipe (waiting for
     * nothing) or after all earlier work (desc.outer_begin_top) */
    bool busy_top;
    /* VKPROF_LAYER_DIAG_STAMPS=top: a diagnostic, never for figures: every
     * stamp the library records is written at the top of the pipe, waiting
     * for nothing, so its times are meaningless; a run's cost with it,
     * against without, splits the cost between the stamps' waits on the GPU
     * and the host's work (docs/layer.md) */
    bool diag_top;
    bool diag_none; /* VKPROF_LAYER_DIAG_STAMPS=none: no stamp recorded at all */
    /* VKPROF_LAYER_COST_BLOCK=B: the cost probe, blocks of B steps with
     * profiling off at random (cost.h); 0: off */
    uint32_t cost_block;
    char out_dir[1024];
    lyr_steps steps;
    char step_label[128];
    vkl_name_map *names;
    uint32_t trace_events;
    bool keep_last;        /* VKPROF_LAYER_TRACE_KEEP=last */
    uint32_t trace_format; /* vkprof_trace_format: VKPROF_LAYER_TRACE_FORMAT */
    char run[64];          /* VKPROF_LAYER_RUN: the `vkprof run` this process belongs to */
    bool auto_names;       /* VKPROF_LAYER_AUTO_NAMES (default on): embedded.c */
} lyr_config;

extern lyr_config lyr_cfg;
const char *lyr_mode_name(lyr_mode m);
/* Does each primary command buffer get a scope of its own? --mode cmdbuf,
 * and the rotating window's busy scopes (an outer phase, LYR_OUTER_PHASE) */
bool lyr_buffer_scopes(void);
#define LYR_OUTER_PHASE "command_buffer"

void lyr_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- instances ----------------------------------------------------------- */
typedef struct lyr_instance {
    VkInstance handle;
    void *key;
    uint32_t api_version; /* the app's VkApplicationInfo.apiVersion, 1.0 when not given */
    bool props2_ext;      /* VK_KHR_get_physical_device_properties2 enabled */
    PFN_vkGetInstanceProcAddr gipa;
    PFN_vkDestroyInstance DestroyInstance;
    PFN_vkGetPhysicalDeviceProperties GetPhysicalDeviceProperties;
    PFN_vkGetPhysicalDeviceQueueFamilyProperties GetPhysicalDeviceQueueFamilyProperties;
    PFN_vkEnumerateDeviceExtensionProperties EnumerateDeviceExtensionProperties;
    PFN_vkGetPhysicalDeviceFeatures2 GetPhysicalDeviceFeatures2;
} lyr_instance;

/* ---- devices --------------------------------------------------------------- */
/* The next layer's device functions the layer intercepts or uses. */
#define LYR_DEVICE_FUNCS(X)                                                                        \
    X(DestroyDevice)                                                                               \
    X(GetDeviceQueue)                                                                              \
    X(GetDeviceQueue2)                                                                             \
    X(CreateCommandPool)                                                                           \
    X(DestroyCommandPool)                                                                          \
    X(ResetCommandPool)                                                                            \
    X(AllocateCommandBuffers)                                                                      \
    X(FreeCommandBuffers)                                                                          \
    X(BeginCommandBuffer)                                                                          \
    X(EndCommandBuffer)                                                                            \
    X(ResetCommandBuffer)                                                                          \
    X(CmdBindPipeline)                                                                             \
    X(CmdDispatch)                                                                                 \
    X(CmdDispatchBase)                                                                             \
    X(CmdDispatchBaseKHR)                                                                          \
    X(CmdDispatchIndirect)                                                                         \
    X(CmdExecuteCommands)                                                                          \
    X(CmdBeginDebugUtilsLabelEXT)                                                                  \
    X(CmdEndDebugUtilsLabelEXT)                                                                    \
    X(QueueBeginDebugUtilsLabelEXT)                                                                \
    X(QueueEndDebugUtilsLabelEXT)                                                                  \
    X(QueueInsertDebugUtilsLabelEXT)                                                               \
    X(SetDebugUtilsObjectNameEXT)                                                                  \
    X(CreateShaderModule)                                                                          \
    X(DestroyShaderModule)                                                                         \
    X(CreateComputePipelines)                                                                      \
    X(DestroyPipeline)                                                                             \
    X(QueueSubmit)                                                                                 \
    X(QueueSubmit2)                                                                                \
    X(QueueSubmit2KHR)                                                                             \
    X(WaitForFences)                                                                               \
    X(GetFenceStatus)                                                                              \
    X(DestroyFence)                                                                                \
    X(WaitSemaphores)                                                                              \
    X(WaitSemaphoresKHR)                                                                           \
    X(QueueWaitIdle)                                                                               \
    X(DeviceWaitIdle)

typedef struct lyr_next {
#define LYR_X_(name) PFN_vk##name name;
    LYR_DEVICE_FUNCS(LYR_X_)
#undef LYR_X_
} lyr_next;

/* Host span buckets of the layer (one set per context). */
enum {
    LYR_SPAN_SUBMIT,
    LYR_SPAN_WAIT_FENCES,
    LYR_SPAN_FENCE_STATUS,
    LYR_SPAN_WAIT_SEMAPHORES,
    LYR_SPAN_QUEUE_IDLE,
    LYR_SPAN_DEVICE_IDLE,
    LYR_SPAN_COLLECT,    /* the layer's own reading of results: never inside an app call's span */
    LYR_SPAN_SUBMIT_OWN, /* its own work at an app submit (starting the executions): outside it */
    LYR_SPAN_RECORD,     /* a recording, vkBeginCommandBuffer to vkEndCommandBuffer (detached) */
    LYR_SPAN_COUNT
};

typedef struct lyr_family {
    uint32_t index;
    VkQueueFlags flags;
    uint32_t valid_bits;
    bool used;                   /* a queue or pool of it was created */
    _Atomic(vkprof_context) ctx; /* created at the family's first command pool */
    /* simultaneous-use buffers: a second context that resets its queries in
     * the command buffer (each execution resets its own), made at the first one */
    _Atomic(vkprof_context) ctx_sim;
    bool ctx_failed; /* vkprof_create failed: untimed, reason kept */
    char reason[96]; /* why untimed */
    vkprof_bucket spans[LYR_SPAN_COUNT];
    _Atomic uint64_t submits;    /* submits with command buffers: sampling */
    _Atomic uint64_t dispatches; /* vkCmdDispatch* recorded */
    _Atomic uint64_t dispatches_timed;
    _Atomic uint64_t exec_dispatches; /* executed: each submit of a buffer counts */
    _Atomic uint64_t exec_timed;      /* executed with a stamp */
    _Atomic uint64_t exec_untimed[LYR_UNTIMED_COUNT];
    _Atomic uint64_t untimed[LYR_UNTIMED_COUNT]; /* recorded without a stamp, by reason */
    /* the app's host time recording (vkBeginCommandBuffer's entry to
     * vkEndCommandBuffer's return), over the recordings ended (issue 26) */
    _Atomic uint64_t record_ns, recordings;
    _Atomic uint64_t buffers_left_out; /* executions of left-out buffers' scopes (counted) */
    _Atomic uint32_t qlabel_gen;       /* bumped when a queue label of the family changes */
    uint32_t unknown_phase[2]; /* "pipeline-unknown" in ctx, ctx_sim; LYR_NO_PHASE until needed */
    /* LYR_OUTER_PHASE in ctx, ctx_sim (flagged outer); LYR_NO_PHASE until
     * the first busy scope: its lookup, once, not at every buffer */
    _Atomic uint32_t outer_phase[2];
    char trace_file[300];
    char trace_file_sim[300]; /* basename written, "" when none */
} lyr_family;

typedef struct lyr_queue {
    _Atomic uint64_t handle;
    uint32_t family;
    /* queue labels, under the device lock */
    uint32_t depth;
    char labels[LYR_LABEL_DEPTH][VKPROF_MAX_NAME + 1];
    uint64_t label_order; /* when its top label was opened (device-wide order) */
} lyr_queue;

/* The cost probe's sums for one state (0: profiling on, 1: off) */
typedef struct lyr_cost_sum {
    _Atomic uint64_t steps;
    _Atomic uint64_t sum_ns;
    _Atomic uint64_t sumsq_us2; /* of each step's wall time in whole us, squared */
} lyr_cost_sum;

typedef struct lyr_device {
    VkDevice handle;
    void *key;
    uint32_t index; /* order of creation in the process */
    VkPhysicalDevice phys;
    lyr_instance *inst;
    PFN_vkGetDeviceProcAddr gdpa;
    lyr_next next;
    bool intercept; /* the layer is on for this device */
    bool calibrated, host_reset, sync2;
    /* the next layer's stamp calls, behind lyr_cfg.diag_top's wrappers */
    PFN_vkCmdWriteTimestamp2 diag_ts2;
    PFN_vkCmdWriteTimestamp diag_ts;
    bool cal_khr, cal_ext; /* which calibrated-timestamps extension is enabled */
    char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
    pthread_mutex_t lock;
    uint32_t nfamilies;
    lyr_family fam[LYR_MAX_FAMILIES];
    lyr_queue queues[LYR_MAX_QUEUES];
    _Atomic uint32_t nqueues;
    uint64_t label_order;
    lyr_map pools, pipes, modules, fences;
    _Atomic uint64_t seq;        /* submits (also empty ones) */
    _Atomic uint64_t since_step; /* submits with work since the last step */
    _Atomic uint64_t steps;
    /* the cost probe (lyr_cost_off): the wall time of each step, by whether
     * profiling was on in it (relaxed atomics: counters) */
    _Atomic uint64_t cost_last_ns;
    lyr_cost_sum cost[2];
    /* executions of buffers with dispatches, and those whose recording's
     * state (profiled or not) is not the state of the step they ran in */
    _Atomic uint64_t cost_execs, cost_mixed;
    /* Where results are read (issue 26): after the app's own waits, and at a
     * submit only when nothing was read for LYR_COLLECT_STALE_NS (an app that
     * never waits in a call the layer sees). The library reads nothing else
     * at a submit (desc.submit_collect OWN): a read there may wait for the
     * GPU (lavapipe waits for idle) and held the app's vkQueueSubmit. */
    _Atomic uint64_t last_collect_ns; /* 0: none yet */
    _Atomic uint64_t collects_after_waits, collects_at_submits;
    /* host time by lyr_host_time (queue.c): ns and calls */
    _Atomic uint64_t host_ns[LYR_HOST_COUNT], host_calls[LYR_HOST_COUNT];
    /* the host's time in the counted steps of each state, by kind
     * (lyr_cost_host): what the probe's statement splits its cost into */
    _Atomic uint64_t cost_host_ns[2][LYR_COST_KINDS];
    /* the pairs of blocks (under cost_lock): the current pair's two blocks'
     * steps and time, and over the pairs completed, the difference of their
     * mean step times (on - off) and the off block's mean, in us */
    pthread_mutex_t cost_lock;
    uint64_t cost_blk_n[2], cost_blk_ns[2];
    uint64_t cost_pairs;
    double cost_d_sum_us, cost_d_sq_us2, cost_off_sum_us;
    bool finished;       /* results written and contexts destroyed */
    bool inherited;      /* the parent's, seen from the child of a fork: never written */
    lyr_idx_device *idx; /* its entry in the process's index (output.c), NULL without one */
} lyr_device;

/* A shader module: its hash (names.h) and its compute entry points' local
 * sizes, for the dispatch args. */
/* embedded.c: a module's name from the ELF files the process has loaded */
typedef enum {
    LYR_NAME_NONE = 0,
    LYR_NAME_EMBEDDED = 1,      /* pCode is a loaded file's data object */
    LYR_NAME_EMBEDDED_HASH = 2, /* its normalised hash is one of theirs */
} lyr_name_source;
lyr_name_source lyr_embedded_name(const void *code, size_t code_size, uint64_t hash, char *out,
                                  size_t cap);
void lyr_embedded_forked_child(void);

typedef struct lyr_module {
    uint64_t hash;
    char auto_name[64]; /* lyr_embedded_name's; "" none */
    uint32_t nwg;
    vkl_workgroup wg[VKL_WG_ENTRIES];
} lyr_module;

typedef struct lyr_pipe {
    uint64_t hash;
    /* the dispatch args of its scopes: the local size ("64,1,1" or
     * "unknown: why") and the specialisation constants ("" none), fixed at
     * creation */
    char local_size[VKPROF_ANNOTATION_MAX + 1];
    char spec[VKPROF_ANNOTATION_MAX + 1];
    _Atomic uint32_t gen;           /* bumped at each rename */
    char name[VKPROF_MAX_NAME + 1]; /* the debug-utils object name; "" none */
    char auto_name[64];             /* its module's lyr_embedded_name; "" none */
    _Atomic uint64_t
        cache[2 * LYR_MAX_FAMILIES]; /* per family and context: (gen + 1) << 32 | phase */
} lyr_pipe;

typedef struct lyr_fence {
    _Atomic uint64_t seq;           /* the submit that signals it */
    _Atomic uint32_t pending;       /* 1 from the submit until a wait saw it signalled */
    _Atomic uint64_t first_poll_ns; /* vkGetFenceStatus: its first NOT_READY since the submit */
} lyr_fence;

typedef struct lyr_pool {
    uint32_t family;
} lyr_pool;

/* A recording's calls per phase, where it stamps none because the layer's
 * sampling or cost probe left it out: each execution hands them to the
 * library (vkprof_count_calls), so a phase's estimate covers the steps not
 * timed (a trace of --sample N read 1/N of each phase's time). */
typedef struct lyr_calls {
    uint32_t n[VKPROF_MAX_PHASES];
    uint64_t touched[VKPROF_MAX_PHASES / 64];
} lyr_calls;

typedef struct lyr_cmd {
    VkCommandBuffer handle;
    lyr_device *dev;
    VkCommandPool pool;
    uint32_t family;
    bool secondary;
    /* the recording (owner thread only) */
    bool timed;       /* this recording stamps */
    bool counting;    /* it does not, left out by sampling or the cost probe: counts its calls */
    lyr_calls *calls; /* counting: its calls per phase (allocated at first use) */
    uint32_t label_counted; /* counting, label mode: bit i, region i's segment is open */
    bool buffer_left_out;   /* its buffer scope (busy, cmdbuf) is one of its counted calls:
                               counting, or a window step (busy_every) */
    bool window_off;        /* a busy step (busy_every): its dispatches are counted, not stamped */
    bool cost_off;          /* recorded in a block the cost probe leaves unprofiled */
    uint64_t cost_step;     /* the step it was recorded in (the probe's warm-up) */
    bool no_scopes;         /* render pass continue: nothing may be stamped */
    bool had_scopes;        /* a scope call since the last release */
    bool rec_scopes;        /* the current recording holds scopes */
    uint32_t pipe_phase;
    uint32_t buf_phase; /* the phase of the buffer's own scope, from its begin */
    bool pipe_from_object_name;
    lyr_pipe *pipe;
    uint32_t pipe_gen;
    uint32_t qlabel_phase; /* the queue label open when recording began */
    uint32_t depth;
    uint32_t label_phase[LYR_LABEL_DEPTH];
    bool label_scoped[LYR_LABEL_DEPTH];   /* label mode: its segment is open */
    bool label_want[LYR_LABEL_DEPTH];     /* label mode: the region is timed (segments) */
    uint64_t label_disp[LYR_LABEL_DEPTH]; /* n_dispatch when its segment began */
    bool cmdbuf_scoped;
    int region_why;         /* cmdbuf mode: why the buffer's scope was not taken (-1: it was) */
    bool simultaneous;      /* SIMULTANEOUS_USE: recorded into the family's ctx_sim */
    vkprof_context rctx;    /* the context of the current recording */
    int untimed_why;        /* !timed: why (enum lyr_untimed) */
    bool submitted;         /* the current recording was submitted (else it is discarded) */
    uint64_t rec_t0;        /* vkprof_host_now_ns() at its vkBeginCommandBuffer; 0: none open */
    vkprof_span rec_span;   /* the recording's detached span (the trace's recording time) */
    const void *rec_thread; /* the thread it began on (its recording mark's address) */
    uint64_t rec_mark;      /* that thread's count of begins at its begin */
    /* this recording's dispatches: all, with a stamp, without one by reason;
     * each submit of the buffer executes them once more */
    uint64_t n_dispatch, n_timed, n_untimed[LYR_UNTIMED_COUNT];
    char name[VKPROF_MAX_NAME + 1];
    VkCommandBuffer *secs;
    uint32_t nsecs, capsecs;
} lyr_cmd;

extern lyr_map lyr_cmds; /* VkCommandBuffer -> lyr_cmd, every device */

/* layer.c */
lyr_device *lyr_device_get(const void *dispatchable);
vkprof_context lyr_family_ctx(lyr_device *d, uint32_t family);
vkprof_context lyr_ensure_ctx(lyr_device *d, uint32_t family);     /* takes d->lock */
vkprof_context lyr_ensure_sim_ctx(lyr_device *d, uint32_t family); /* takes d->lock */
uint32_t lyr_phase_locked(vkprof_context ctx, const char *name);
uint32_t lyr_phase(lyr_device *d, vkprof_context ctx, const char *name); /* takes d->lock */
PFN_vkVoidFunction lyr_device_proc(lyr_device *d, const char *name);

/* record.c */
void lyr_cmd_free(void *c);

/* queue.c */
#define LYR_COLLECT_STALE_NS UINT64_C(1000000000)
void lyr_collect_all(lyr_device *d); /* takes d->lock */
void lyr_register_queue(lyr_device *d, VkQueue q, uint32_t family);
uint32_t lyr_queue_label_phase(lyr_device *d, uint32_t family,
                               vkprof_context ctx); /* takes d->lock */

/* output.c: the process's folder, index and end */
void lyr_note_instance(void);             /* the first one claims the process's folder */
const char *lyr_proc_dir(void);           /* NULL without a folder */
void lyr_idx_module(lyr_name_source how); /* a shader module created, and how it was named */
const char *lyr_proc_why(void);           /* why there is none */
void lyr_idx_device_add(lyr_device *d);
void lyr_idx_sync(lyr_device *d); /* the device's counters into the index */

/* The cost probe: ns of host time of a kind (LYR_HOST_*, LYR_COST_RECORD)
 * spent in step `step`, into its state's sums; the warm-up's steps (the
 * first pair of blocks, as cost_step) are not counted. */
static inline void lyr_cost_host(lyr_device *d, uint64_t step, int kind, uint64_t ns)
{
    const uint32_t b = lyr_cfg.cost_block;
    if (b > 0 && step >= 2 * (uint64_t)b) {
        atomic_fetch_add_explicit(&d->cost_host_ns[lyr_cost_off(step, b) ? 1 : 0][kind], ns,
                                  memory_order_relaxed);
    }
}
bool lyr_spool_path(lyr_device *d, uint32_t family, bool sim, char *path, size_t cap);
void lyr_idx_context(lyr_device *d, uint32_t family, bool sim, vkprof_context ctx);
void lyr_finish_device(lyr_device *d); /* collect, index, contexts destroyed (spools closed) */
void lyr_exit_flush(void);             /* the process's trace and summary */
void lyr_proc_forked_child(void);

/* The intercepts, by name: record.c and queue.c each list theirs; an entry
 * is handed out only where the next layer has the function (next_offset into
 * lyr_next). Ends with a NULL name. */
typedef struct lyr_proc {
    const char *name;
    PFN_vkVoidFunction fn;
    size_t next_offset;
} lyr_proc;
extern const lyr_proc lyr_record_procs[];
extern const lyr_proc lyr_queue_procs[];

#endif
