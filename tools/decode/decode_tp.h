/* Tensor parallelism for the decode engine (`vkprof decode --ranks R`): R
 * ranks, each a thread with its own VkDevice, vkprof context and dec_engine
 * (cfg.rank = k, cfg.ranks = R), all-reducing on the host through the
 * exchange below, profiled as a production engine does it:
 *
 *   [skew sleep]                       --skew-rank K --skew-us N, attention only
 *   vkprof_rendezvous(<site>_rendezvous, barrier)   the probe: arrival skew
 *   span_hot(<site>_enqueue) ... span_end            copy the partial in
 *   span_hot(<site>) ... span_end_sync(barrier, sum) the collective itself
 *
 * where <site> is allreduce_attn or allreduce_mlp (vkprof's default hot
 * buckets). The sum is taken in rank order 0..R-1 on every rank, so every
 * rank gets bit-identical results. docs/decode.md, "Tensor-parallel ranks
 * (--ranks)". */
#ifndef VKPROF_DECODE_TP_H
#define VKPROF_DECODE_TP_H

#include <pthread.h>
#include <stdatomic.h>

#include "decode.h"
#include "decode_spans.h"

/* ---- a reusable barrier that can be aborted ------------------------------ */

/* A generation barrier on a mutex and a condition variable. With `spin`, a
 * waiter first polls the generation (acquire) for up to DEC_TP_SPIN_NS before
 * it sleeps: worth it only where every rank has a core of its own. Abort
 * wakes every waiter, now and later, with -1: a rank that fails calls it so
 * that no other rank waits forever. */
#define DEC_TP_SPIN_NS 50000u
typedef struct dec_tp_barrier {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint32_t n, waiting;
    bool spin;
    atomic_uint gen;
    atomic_int aborted;
} dec_tp_barrier;

int dec_tp_barrier_init(dec_tp_barrier *b, uint32_t n, bool spin);
/* 0 once all n have arrived; -1 when the barrier is (or gets) aborted. */
int dec_tp_barrier_wait(dec_tp_barrier *b);
void dec_tp_barrier_abort(dec_tp_barrier *b);
bool dec_tp_barrier_aborted(dec_tp_barrier *b);
void dec_tp_barrier_destroy(dec_tp_barrier *b);

/* ---- the exchange ----------------------------------------------------------- */

/* Two halves of [ranks][cap] floats, used alternately: collective c writes
 * half c % 2. Rank k's write of collective c + 2 comes after it passed the
 * barrier of collective c + 1, which every rank reached only after reading
 * half c % 2 for collective c: no buffer is written while another rank may
 * still read it, without a second barrier per collective. */
typedef struct dec_tp_comm {
    uint32_t ranks, cap;
    float *slots; /* [2][ranks][cap] */
    dec_tp_barrier bar;
} dec_tp_comm;

/* Returns 0, or 1 when out of memory. spin: see dec_tp_barrier. */
int dec_tp_comm_init(dec_tp_comm *c, uint32_t ranks, uint32_t cap, bool spin);
void dec_tp_comm_destroy(dec_tp_comm *c);

/* ---- one rank -------------------------------------------------------------- */

#define DEC_TP_MAX_ROUTED 64u

/* Where the route trace's and the driver's lines go: rank, level, code and
 * the message, as vkprof's logger has them (route lines: VKPROF_LOG_REPORT,
 * VKPROF_OK, one line ending in '\n'). */
typedef void (*dec_tp_log_fn)(void *user, uint32_t rank, vkprof_log_level level, vkprof_result code,
                              const char *msg);

typedef struct dec_tp_rank {
    uint32_t rank;
    dec_tp_comm *comm;
    const dec_preset *preset;
    vkprof_context prof; /* NULL: no spans, no probe span (the barriers still run) */
    bool probe;          /* rendezvous probe before each collective */
    uint32_t skew_us;    /* sleep before each attention all-reduce (0: none) */
    bool route_trace;    /* one line per collective through `log` */
    dec_tp_log_fn log;
    void *log_user;
    uint32_t step; /* the token being computed (route trace) */

    /* the device, context, engine and tokens of this rank (the driver's) */
    vku_device dev;
    bool dev_ok;
    dec_engine *eng;
    dec_span_glue glue;
    dec_hooks hooks;
    uint32_t *ids;
    int rc;           /* 0, or 1 when this rank failed */
    bool peer_failed; /* it stopped because another rank failed */
    char err[512];

    /* figures */
    uint64_t collectives;   /* all-reduces done */
    uint64_t parity;        /* which exchange half the next one uses */
    uint64_t skew_sleeps;   /* injected sleeps ... */
    uint64_t skew_slept_ns; /* ... and their measured length */
    uint64_t rendezvous_ns; /* probe barrier waits, measured here (also without spans) */
    uint64_t last_rendezvous_ns;
    bool routed_any;
    uint32_t routed_layer, routed_k;
    uint32_t routed_ids[DEC_TP_MAX_ROUTED];
    uint64_t routed_calls;
    uint64_t annotated; /* moe_host_sync spans annotated with "experts" */
    /* routed calls that found no moe_host_sync section open (the engine
     * calls routed inside it, after the read-back: this stays 0) */
    uint64_t routed_outside;
} dec_tp_rank;

/* The collective of the hook (dec_hooks.all_reduce): skew, probe, enqueue,
 * sync, route line. Returns 0, or 1 (r->err says why; the barrier is then
 * aborted for every rank). */
int dec_tp_all_reduce(dec_tp_rank *r, dec_site site, uint32_t layer, float *data, uint32_t n);
/* The experts of the routed hook: kept for the route trace and written as
 * span arg "experts" on the open moe_host_sync span. */
void dec_tp_routed(dec_tp_rank *r, uint32_t layer, const uint32_t *ids, uint32_t k);
/* The hooks of rank r: section spans (when `spans`) and steps through
 * r->glue (r->prof), all_reduce and routed through the functions above. */
dec_hooks dec_tp_hooks(dec_tp_rank *r, bool spans);

/* The route trace's env var: "1"/"on"/... on, "0"/"off"/"" or unset off;
 * anything else is warned about (once per process, through `log`) and
 * ignored (off). */
#define DEC_TP_ROUTE_TRACE_ENV "VKPROF_DECODE_ROUTE_TRACE"
bool dec_tp_route_trace_env(dec_tp_log_fn log, void *user);

/* ---- the driver -------------------------------------------------------------- */

typedef struct dec_tp_config {
    const dec_preset *preset;
    uint32_t ctx, seed, tokens, first_token;
    uint32_t ranks;
    dec_profile mode;
    bool ring_shared;
    uint32_t sample_every;        /* ring: 1 token in N timed (1: every one) */
    uint32_t rotate_scopes;       /* ring: K phase calls stamped a token, rotating (0: all) */
    bool timed;                   /* mode is GPU or RING: contexts enabled */
    vkprof_host_level host_level; /* OFF, ALL (level 1) or HOT (level 2) */
    bool trace;                   /* start each rank's trace */
    bool need_context;            /* a context per rank even when nothing above asks */
    bool probe;                   /* rendezvous probe (only where host spans are on) */
    uint32_t skew_rank, skew_us;  /* skew_us 0: none */
    bool route_trace;
    bool debug_utils, labels;
    dec_tp_log_fn log; /* NULL: stderr */
    void *log_user;
} dec_tp_config;

typedef struct dec_tp_run {
    dec_tp_config cfg;
    dec_tp_comm comm;
    dec_tp_rank *r;       /* [ranks] */
    double init_seconds;  /* contexts, engines and weights, to the start barrier */
    double seconds;       /* the tokens: start barrier to the last step's barrier */
    uint32_t failed_rank; /* the first rank that failed, UINT32_MAX: none */
} dec_tp_run;

/* Run the decode on R ranks of `phys` (compute family `family`): R devices
 * created here (sequentially; volk's device pointers are then the loader's
 * trampolines, which dispatch on each VkDevice), one thread per rank. Every
 * step, each rank checks that every rank produced the same token; a
 * mismatch fails the run. Returns 0 (run->r[k].ids holds the tokens, the
 * contexts and engines stay for the caller's report until dec_tp_cleanup),
 * or 1 with the first failing rank's message in err. */
int dec_tp_run_decode(dec_tp_run *run, const dec_tp_config *cfg, const vku_instance *inst,
                      VkPhysicalDevice phys, uint32_t family, char *err, size_t err_size);
void dec_tp_cleanup(dec_tp_run *run);

/* The trace path of rank k: FILE with ".rank<k>" before its extension (the
 * last '.' after the last '/'), or appended where it has none:
 * trace.json -> trace.rank0.json, out/t -> out/t.rank0. Returns 0, or 1 when
 * it does not fit. */
int dec_tp_rank_path(char *out, size_t size, const char *path, uint32_t rank);

#endif
