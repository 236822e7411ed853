/* The layer's per-process index (issue 24): what the summary of a process
 * says beyond its contexts' own figures (devices, queue families, dispatch
 * counts, why something is untimed, the spool of each context), kept in a
 * file mapped shared in the process's spool folder, so that it outlives a
 * process that runs no more code, like the spools themselves.
 *
 *   <out>/.vkprof/<base>/index                  this record
 *   <out>/.vkprof/<base>/d<D>-f<F>[-sim].spool  each context's spool
 *
 * <base> is <exe>-<pid>, or <exe>-<pid>.<N> when that was taken (an exec
 * of the same program in the same pid, a pid reused, a file of the user's):
 * the folder is claimed with mkdir, so two processes never share one. The
 * process's trace and summary are <out>/<base>.trace.json (or .pftrace) and
 * <out>/<base>.summary.json. The layer writes its fields in place: strings
 * once, before the count or state that makes them visible; counters as they
 * change (at each submit, and the layer copies its own at each collection
 * and step; each only ever raises a count, lyr_idx_max). Readers
 * (finish.c) check everything against the sizes below.
 *
 * Pure C11 and no Vulkan: the layer and the `vkprof` tool (run, recover)
 * both include it. */
#ifndef VKPROF_LAYER_INDEX_H
#define VKPROF_LAYER_INDEX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define LYR_INDEX_MAGIC "VKPLYRIX"
#define LYR_INDEX_VERSION                                                                          \
    9u /* 2: the module names' counts; 3: rotate; 4: the cost probe; 5: recording time;            \
          6: where results were read, the host's time; 7: buffers left out; 8: the cost            \
          probe's host time by state; 9: busy_every */
#define LYR_IDX_DEVICES 64u
#define LYR_IDX_FAMILIES 16u
#define LYR_SPOOL_DIR ".vkprof"

/* Why dispatches were recorded without a stamp: X(id, key) */
#define LYR_UNTIMED_REASONS(X)                                                                     \
    X(not_sampled, "not_sampled")           /* --sample N: a submit window not timed */            \
    X(not_in_window, "not_in_window")       /* --rotate K: outside this step's window */           \
    X(cost_probe, "cost_probe")             /* --cost-probe B: a block of steps left unprofiled */ \
    X(phase_table_full, "phase_table_full") /* no phase left for its name */                       \
    X(simultaneous_use, "simultaneous_use") /* simultaneous use, no context for it */              \
    X(family_untimed, "family_untimed")     /* its queue family has no timestamps / no ctx */      \
    X(render_pass_continue, "render_pass_continue") /* a secondary inside a render pass */         \
    X(layer_off, "layer_off")                       /* VKPROF_LAYER=off */                         \
    X(no_region, "no_region") /* label/cmdbuf mode: outside every timed region */                  \
    X(refused, "refused")     /* the library refused the scope (logged) */

enum lyr_untimed {
#define LYR_X_(id, key) LYR_UNTIMED_##id,
    LYR_UNTIMED_REASONS(LYR_X_)
#undef LYR_X_
        LYR_UNTIMED_COUNT
};

/* Where the app's threads spent host time in the calls the layer sees
 * (issue 26), and the layer's own: X(id, key) */
#define LYR_HOST_TIMES(X)                                                                          \
    X(submit, "submit")   /* the app's vkQueueSubmit(2) calls, the driver's part */                \
    X(wait, "wait")       /* vkWaitForFences, vkWaitSemaphores, vkQueue/DeviceWaitIdle */          \
    X(spin, "spin")       /* vkGetFenceStatus polls: the first one after a submit to success */    \
    X(collect, "collect") /* the layer reading results */                                          \
    X(layer_submit, "layer_submit") /* the layer's own work at a submit */

enum lyr_host_time {
#define LYR_X_(id, key) LYR_HOST_##id,
    LYR_HOST_TIMES(LYR_X_)
#undef LYR_X_
        LYR_HOST_COUNT
};

/* The cost probe's host time by state: each LYR_HOST_TIMES kind, and the
 * app's recording (vkBeginCommandBuffer..vkEndCommandBuffer) */
#define LYR_COST_RECORD LYR_HOST_COUNT
#define LYR_COST_KINDS (LYR_HOST_COUNT + 1)

enum lyr_proc_state {
    LYR_PROC_RUNNING = 1, /* written to as the process runs */
    LYR_PROC_EXITED = 2,  /* the layer saw the process exit (its destructor ran) */
    LYR_PROC_FINISHED = 3 /* its trace and summary are written */
};

enum lyr_dev_state { LYR_DEV_FREE = 0, LYR_DEV_LIVE = 1, LYR_DEV_DESTROYED = 2 };

typedef struct lyr_idx_family {
    _Atomic uint32_t used;
    uint32_t flags, valid_bits, pad;
    char reason[96];      /* why untimed; "" timed */
    char spool[2][64];    /* its contexts' spools (the family's, simultaneous use), "" none */
    char missing[2][160]; /* why a context has no spool */
    _Atomic uint64_t dispatches;       /* recorded */
    _Atomic uint64_t dispatches_timed; /* recorded with a stamp */
    _Atomic uint64_t submits;          /* submits carrying command buffers */
    _Atomic uint64_t exec_dispatches;  /* executed (each submit of a buffer counts) */
    _Atomic uint64_t exec_timed;       /* executed with a stamp: samples */
    _Atomic uint64_t exec_untimed[LYR_UNTIMED_COUNT];
    _Atomic uint64_t untimed[LYR_UNTIMED_COUNT]; /* recorded without a stamp */
    /* debug-utils labels begun: in command buffers, and on its queues */
    _Atomic uint64_t cmd_labels, queue_labels;
    /* the app's host time recording command buffers, and the recordings */
    _Atomic uint64_t record_ns, recordings;
    /* executions of primary buffers whose busy (or cmdbuf) scope the
     * sampling or the cost probe left out: counted as calls, not stamped */
    _Atomic uint64_t buffers_left_out;
} lyr_idx_family;

typedef struct lyr_idx_device {
    _Atomic uint32_t state;
    uint32_t index;
    uint32_t profiled, calibrated, host_reset, sync2, nfamilies, pad;
    char name[256];
    char fallback_trace[256]; /* a trace written at its destroy (a context had no spool), "" */
    _Atomic uint64_t steps;
    uint64_t created_ns;
    _Atomic uint64_t destroyed_ns;
    /* the cost probe: steps, their wall time and its square (us^2), with
     * profiling on [0] and off [1] (copies of the device's counters) */
    uint64_t cost_steps[2], cost_sum_ns[2], cost_sumsq_us2[2];
    uint64_t cost_execs, cost_mixed; /* executions; those run in the other state */
    /* pairs of blocks completed; the sums of their differences of mean step
     * time (on - off), of its square, and of the off block's mean (us) */
    uint64_t cost_pairs;
    double cost_d_sum_us, cost_d_sq_us2, cost_off_sum_us;
    /* the host's time in the counted steps of each state [0: on, 1: off],
     * by kind (LYR_HOST_TIMES, then LYR_COST_RECORD): where the cost went */
    uint64_t cost_host_ns[2][LYR_COST_KINDS];
    /* the layer's reading of results (issue 26): after the app's waits, and
     * at its submits (none read for LYR_COLLECT_STALE_NS) */
    _Atomic uint64_t collects_after_waits, collects_at_submits;
    /* host time by lyr_host_time: ns and calls */
    _Atomic uint64_t host_ns[LYR_HOST_COUNT], host_calls[LYR_HOST_COUNT];
    lyr_idx_family fam[LYR_IDX_FAMILIES];
} lyr_idx_device;

typedef struct lyr_index {
    char magic[8];
    uint32_t version, size; /* LYR_INDEX_VERSION, sizeof(lyr_index) */
    int64_t pid;
    uint64_t created_ns; /* CLOCK_MONOTONIC */
    char exe[256];
    char run[64];   /* VKPROF_LAYER_RUN: the `vkprof run` it belongs to, "" none */
    char base[256]; /* <exe>-<pid>[.N]: the folder's and the outputs' name */
    char boot_id[64];
    /* the layer's settings */
    uint32_t active, mode, sample_every, keep_last;
    uint32_t trace_format; /* vkprof_trace_format */
    uint32_t trace_events;
    uint64_t name_map_entries;
    uint32_t auto_names; /* VKPROF_LAYER_AUTO_NAMES */
    uint32_t rotate;     /* VKPROF_LAYER_ROTATE: K dispatches stamped a step, 0 all */
    uint32_t cost_block; /* VKPROF_LAYER_COST_BLOCK: the cost probe's block of steps, 0 off */
    uint32_t busy_every; /* the busy scopes: in 1 step in N (VKPROF_LAYER_BUSY_EVERY), 0 none */
    /* shader modules created, and how many of them embedded.c named */
    _Atomic uint64_t modules, modules_by_address, modules_by_content;
    char mode_name[16];
    char steps_rule[160];
    /* where it stands */
    _Atomic uint32_t state;
    _Atomic uint32_t ndevices; /* entries of dev[] in use */
    _Atomic uint64_t exited_ns, updated_ns;
    /* an exec replaced this image: the next image (the same pid) says so at
     * its start, and its executable's name */
    _Atomic uint64_t replaced_ns;
    char replaced_by[256];
    char trace[256], summary[256]; /* when finished: the files' names */
    lyr_idx_device dev[LYR_IDX_DEVICES];
} lyr_index;

/* --sample N (VKPROF_LAYER_SAMPLE): is the submit window `window` (the
 * family's submit count when a recording began) timed? One in `every` on
 * average, chosen by a mix of the window's number (splitmix64's finalizer),
 * not by window % every: an app with a fixed pattern of submits (two per
 * token, a reduction every other submit) would otherwise have some of its
 * kernels never timed (issue 26). Window 0 is always timed. */
static inline uint64_t lyr_mix64(uint64_t x)
{
    uint64_t z = x + UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static inline bool lyr_sampled(uint64_t window, uint32_t every)
{
    if (every <= 1 || window == 0) {
        return true;
    }
    return lyr_mix64(window) % every == 0;
}

/* --cost-probe B (VKPROF_LAYER_COST_BLOCK): is step `step` (0-based) one
 * with profiling off? Steps go in blocks of B; blocks go in pairs, and in
 * each pair one block is off, which one chosen by a mix of the pair's
 * number: half the steps off, in an order no fixed pattern of the app's
 * steps (a graph step, then a copy step) can line up with. The first pair
 * (warm-up: the driver compiles, the caches fill) is on and not measured. */
static inline bool lyr_cost_off(uint64_t step, uint32_t block)
{
    if (block == 0) {
        return false;
    }
    const uint64_t b = step / block, pair = b / 2;
    if (pair == 0) {
        return false;
    }
    return (b & 1) == (lyr_mix64(pair) & 1);
}

/* Raise a count of the index to v (never lower it: several threads write
 * the same count from their own copies). */
static inline void lyr_idx_max(_Atomic uint64_t *dst, uint64_t v)
{
    uint64_t cur = atomic_load_explicit(dst, memory_order_relaxed);
    while (cur < v && !atomic_compare_exchange_weak_explicit(dst, &cur, v, memory_order_relaxed,
                                                             memory_order_relaxed)) {
    }
}

#endif
