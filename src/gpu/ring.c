/* Ring mode: the GPU timing core that follows Vulkan's submission model.
 *
 * Recording. Scopes belong to the command buffer they are recorded into. Each
 * command buffer has a tracker, found through a lock-free table keyed by the
 * handle; only the buffer's owner (the thread that records it, as Vulkan
 * already requires) touches its recording state, so the recording path takes
 * no lock. A recording is a list of scopes (nesting up to
 * VKPROF_MAX_SCOPE_DEPTH) over stamp positions; positions live in chunks of
 * query slots taken from a lock-free bitmap. Every execution (the first or
 * the K-th) writes freshly reset queries: with host resets, slots are reset
 * from the host when freed and before each re-submission; without, every
 * scope records a vkCmdResetQueryPool of its own slots in its buffer.
 *
 * Executions. vkprof_cmd_submit() (before the app's vkQueueSubmit, or through
 * vkprof_queue_submit/2) seals the buffer's recording and starts one
 * execution of it. The previous execution of the same recording is collected
 * first (it has finished: Vulkan forbids re-submitting a pending buffer); what
 * is still not there would be overwritten, so it is counted as lost, never
 * folded. A re-recorded buffer retires its old recording at its next submit.
 * Without any vkprof_cmd_submit call the context works as the seed did: each
 * recording is taken as executed once, and recording and collection happen on
 * one thread.
 *
 * Collection (vkprof_collect, and lazily at each submit unless
 * desc.submit_collect says the app collects elsewhere) runs under one lock,
 * reads WITH_AVAILABILITY and never WAIT. A slot still holding its previous
 * use's value (its reset has not executed yet) is recognised by comparison
 * with the value read last time: the device clock moved on. Within one
 * execution of one command buffer, stamps execute in order: a scope that is
 * not written while one that ended after it is, never ran (the buffer was
 * re-recorded or reset before it was submitted), and is counted as lost.
 * Slots are freed when the GPU can no longer write them.
 *
 * Rotation (desc.rotate_scopes = K). The step's phase calls are numbered in
 * the order their begins arrive (one counter per context, reset by
 * vkprof_step); a step stamps the calls [start, start + K) only, and the
 * next step's window starts K further on, or at 0 once past the longest step
 * of the pass; a step too short to reach the window leaves it for the next
 * (rotate_advance): with C calls a step, windows [0, K), [K, 2K),
 * ..., [(P-1)K, C) cover every index once every P = ceil(C / K) steps. A call
 * outside the window records nothing: its begin and end are kept on the
 * buffer's open stack (an entry with SKIP set) so that nesting and misuse
 * are checked as for stamped scopes, and it is no sample. With shared
 * boundaries the end of the call just before the window is stamped alone
 * (no scope), and the window's first call begins at that stamp, as it would
 * in an every-step shared ring: K + 1 stamps a step, and every call is
 * measured exactly as the every-step ring measures it. */
#include "base/base.h"
#include "clock/clock.h"
#include "timeline/store.h"
#include "gpu/gpu.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define TRACKERS 1024u /* command buffers with scopes at once (power of two) */
#define TOMBSTONE ((uintptr_t)1)
/* an open-stack entry of a call left out by rotation: SKIP | phase, and
 * SKIP_EDGE when its end is the boundary before the window */
#define SKIP (UINT64_C(1) << 63)
#define SKIP_EDGE (UINT64_C(1) << 62)
#define SKIP_PHASE(e) ((vkprof_phase)((e)&0xffffffffu))
#define NO_IDX UINT64_MAX

enum { SC_OPEN = 0, SC_ENDED = 1 };

typedef struct rscope {
    uint64_t begin_pos, end_pos; /* stamp positions in the recording */
    uint64_t end_order;          /* order of the end call in the recording */
    uint64_t step;               /* the step it was recorded in (1-based) */
    uint64_t flow;               /* the span open at begin */
    uint64_t rec_ns;             /* CLOCK_MONOTONIC at its begin call: it ran after that */
    uint64_t b, e;               /* values read in the current execution */
    uint32_t annot;              /* its args (vkprof__trace_args), 0: none */
    vkprof_phase phase;          /* VKPROF_MAX_PHASES: dropped (misuse, ring full) */
    uint8_t state;               /* SC_OPEN, SC_ENDED */
    bool done;                   /* current execution: folded or lost */
    bool ready;                  /* b and e were read in this collection */
    bool partial;                /* one of its stamps is written: it ran */
    bool first_use;              /* its phase's first call (desc.rotate_first_calls) */
} rscope;

/* A recording's calls per phase, stamped or left out by rotation: a
 * recording submitted again runs them again, and each later execution
 * counts them again (issue 26: counted once, at recording, a phase's
 * estimate read 1/K of its time over K executions). Bounded whatever the
 * recording's length; written by the recording's owner, read at submits
 * under the lock. */
typedef struct rcall {
    uint32_t phase, calls;
    uint32_t left_out; /* of calls: left out by rotation */
} rcall;

/* One entry per phase called, in the order first called (a recording holds
 * few phases: a buffer's own scope and a window's calls). Grown by doubling
 * up to VKPROF_MAX_PHASES entries: a recording's calls cost no zeroing of a
 * table of every phase (2 KB calloc'd per recording was most of a stamped
 * call's host time, issue 26). */
typedef struct rcalls {
    uint32_t n, cap;
    uint32_t last; /* the entry of the last call: consecutive calls share a phase */
    rcall v[];
} rcalls;

typedef struct rrec {
    rscope *scopes;
    rcalls *calls;      /* NULL: none listed (or out of memory: calls_partial) */
    bool calls_partial; /* a call could not be listed: its re-executions go uncounted */
    uint64_t head;      /* implicit mode: scopes before head are done and gone */
    uint64_t count;     /* scopes in the array, from index 0 */
    uint64_t cap;
    uint32_t *chunks; /* chunk ids in position order, from chunk_base */
    uint64_t chunk_base, nchunks, chunk_cap;
    uint64_t stamps;         /* positions handed out */
    uint64_t ends;           /* end calls so far (end_order) */
    uint64_t live;           /* scopes that can give a sample per execution */
    uint64_t submits;        /* executions started */
    uint64_t exec_step;      /* the step of the current execution (1-based) */
    uint64_t exec_submit_ns; /* CLOCK_MONOTONIC at its vkprof_cmd_submit (the window's start) */
    uint64_t exec_flow; /* the span open at its submit: the flow of scopes recorded outside one */
    bool exec_pending;  /* an execution is started and not fully collected */
    bool tainted;       /* its predecessor was not finished: values ambiguous */
    bool in_pending;    /* on the pending list */
} rrec;

/* One thread's call counters in one ring: written by that thread alone, so
 * a relaxed load and store (no lock prefix), read by anyone. A call left out
 * by rotation paid four lock-prefixed read-modify-writes (the phase's
 * calls, the unstamped calls, the rotation index, the phase's first-use
 * flag), ~90% of its time in perf(1); llama.cpp's 1B graph makes 261 such
 * calls a step. Now only the rotation index, which orders calls across
 * threads, is one (issue 26; docs/performance.md, "What a call left out
 * costs"). */
typedef struct calls_slot {
    _Atomic uint64_t phase[VKPROF_MAX_PHASES];
    _Atomic uint64_t unstamped;
} calls_slot;

typedef struct tracker {
    _Atomic uintptr_t key; /* the VkCommandBuffer; 0 free; TOMBSTONE freed */
    /* the owner's recording state */
    rrec *cur;                             /* being recorded, not yet submitted */
    uint64_t open[VKPROF_MAX_SCOPE_DEPTH]; /* indexes of open scopes in cur, or SKIP | phase */
    uint32_t depth;
    uint64_t enable_epoch; /* the enable epoch of the open scopes */
    bool boundary_valid;
    uint64_t boundary_pos;
    uint64_t boundary_epoch;
    /* the step's calls numbered when the boundary was stamped (step_calls):
     * a numbered call shares it only as the very next call of the step, and
     * an outer scope only with no call numbered since. Calls left out by
     * vkprof_cmd_begin_leaf leave no trace in the tracker, and one of them
     * in between would be timed with the next stamped call. Without
     * rotation nothing is numbered, and sharing is as it always was. */
    uint64_t boundary_seq;
    /* set by the owner when a scope call comes in an untimed step: the
     * buffer is being recorded again, without stamps (read at the submit) */
    _Atomic bool rerecorded;
    /* under the lock */
    rrec *sealed; /* the recording the buffer holds since its last submit */
} tracker;

struct vkprof_ring_T {
    VkQueryPool pool;
    uint32_t queries;
    uint32_t chunk; /* slots per chunk */
    uint32_t nchunks;
    _Atomic uint64_t *free_bits; /* 1: chunk free */
    uint32_t free_words;
    _Atomic uint32_t cursor;
    tracker *trackers;
    atomic_flag lock;
    _Atomic bool notified; /* vkprof_cmd_submit was called: executions are explicit */
    rrec **pending;        /* sealed recordings with an execution in flight (lock) */
    uint32_t npending, pending_cap;
    /* per slot, under the lock */
    uint64_t *readback;   /* 2 x queries (value, availability) of the last read */
    uint64_t *last_value; /* the value of the slot's previous use */
    uint8_t *has_last;
    /* the stale check (under the lock): a sample has shown that the
     * calibration places stamps after their recording; until then a stamp
     * before it is not called stale (the calibration itself may be off) */
    bool stale_validated;
    /* Calls: begins per phase, stamped or not, and those left unstamped.
     * Each recording thread counts in its own slot, by its thread index
     * (calls_slot); the shared counters take threads past the table and
     * the subtractions of recordings that never ran; vkprof_reset moves
     * the bases. A count is shared + the slots - base, modulo 2^64. */
    _Atomic(calls_slot *) slots[VKPROF_MAX_THREADS - 1];
    _Atomic uint64_t phase_calls[VKPROF_MAX_PHASES];
    _Atomic uint64_t calls_unstamped;
    _Atomic uint64_t phase_base[VKPROF_MAX_PHASES];
    _Atomic uint64_t unstamped_base;
    /* rotation (relaxed atomics; the window is moved by vkprof_step, and
     * read by every begin) */
    _Atomic uint64_t step_calls; /* rotation: calls begun in the current step */
    _Atomic uint64_t rot_start;  /* rotation: the first call index stamped this step */
    _Atomic uint64_t rot_cycles, rot_last_calls, rot_changed;
    /* the most calls of a step in this pass, and the steps in a row too short
     * to reach the window */
    _Atomic uint64_t rot_pass_max, rot_waits;
    /* desc.rotate_first_calls: a phase has had its first call (never reset:
     * a first use is once in the context's life) */
    _Atomic bool phase_seen[VKPROF_MAX_PHASES];
};

typedef struct vkprof_ring_T vkprof_ring;

bool vkprof__ring_mode(vkprof_context ctx)
{
    return ctx->desc.timing_mode == VKPROF_TIMING_RING;
}

static uint32_t sample_every(vkprof_context ctx)
{
    return ctx->desc.sample_every; /* resolved: never 0 */
}

bool vkprof__step_timed(vkprof_context ctx)
{
    if (!vkprof__ring_mode(ctx)) {
        return true;
    }
    uint64_t step = vkprof__steps_done(ctx);
    return step % sample_every(ctx) == 0;
}

bool vkprof_step_timed(vkprof_context ctx)
{
    return vkprof_active(ctx) && vkprof__step_timed(ctx);
}

static void rotate_advance(vkprof_ring *r, uint32_t k);
static uint64_t calls_now(vkprof_ring *r, uint32_t phase);

void vkprof__timing_on_step(vkprof_context ctx, uint64_t finished)
{
    if (!vkprof__ring_mode(ctx) || finished % sample_every(ctx) == 0) {
        if (ctx->head.active) {
            atomic_fetch_add_explicit(&ctx->gpu.timed_steps, 1, memory_order_relaxed);
        }
    }
    /* a step ends any shared boundary: the next token is a new recording */
    atomic_fetch_add_explicit(&ctx->gpu.step_epoch, 1, memory_order_relaxed);
    if (vkprof__ring_mode(ctx) && ctx->desc.rotate_scopes > 0 && ctx->gpu.ring != NULL) {
        rotate_advance(ctx->gpu.ring, ctx->desc.rotate_scopes);
    }
}

/* Steps in a row too short to reach the window before it starts again at 0
 * (the long steps stopped coming). */
#define ROT_WAIT_MAX 64u

/* Rotation: the step just finished had `n` calls. When it reached the window
 * (n > start), the next step's window starts K further on, or at 0 (a pass
 * completed) once past the longest step of this pass. A step too short to
 * reach it leaves it where it is, for the next step that is long enough:
 * with steps of different lengths (a long one, then a short one: another
 * token path, an MoE step with fewer experts) every index of the long steps
 * is still stamped once a pass; wrapping at the short step's end, as this
 * did before issue 26, never reached the long steps' later calls. After
 * ROT_WAIT_MAX short steps in a row the window starts again at 0. A step
 * without calls (not timed, or no GPU work) leaves the window. */
static void rotate_advance(vkprof_ring *r, uint32_t k)
{
    uint64_t n = atomic_exchange_explicit(&r->step_calls, 0, memory_order_relaxed);
    if (n == 0) {
        return;
    }
    uint64_t last = atomic_exchange_explicit(&r->rot_last_calls, n, memory_order_relaxed);
    if (last != 0 && last != n) {
        atomic_fetch_add_explicit(&r->rot_changed, 1, memory_order_relaxed);
    }
    uint64_t pass_max = atomic_load_explicit(&r->rot_pass_max, memory_order_relaxed);
    if (n > pass_max) {
        pass_max = n;
    }
    uint64_t start = atomic_load_explicit(&r->rot_start, memory_order_relaxed);
    if (n <= start) {
        /* not reached: wait for a step that is long enough */
        if (atomic_fetch_add_explicit(&r->rot_waits, 1, memory_order_relaxed) + 1 < ROT_WAIT_MAX) {
            atomic_store_explicit(&r->rot_pass_max, pass_max, memory_order_relaxed);
            return;
        }
        start = pass_max; /* waited long enough: the pass ends here */
    } else {
        start += k;
    }
    atomic_store_explicit(&r->rot_waits, 0, memory_order_relaxed);
    if (start >= pass_max) {
        start = 0;
        pass_max = 0;
        atomic_fetch_add_explicit(&r->rot_cycles, 1, memory_order_relaxed);
    }
    atomic_store_explicit(&r->rot_pass_max, pass_max, memory_order_relaxed);
    atomic_store_explicit(&r->rot_start, start, memory_order_relaxed);
}

/* vkprof_reset: the call counters start again; the window stays where it is. */
void vkprof__ring_reset_counts(vkprof_context ctx)
{
    vkprof_ring *r = ctx->gpu.ring;
    if (r == NULL) {
        return;
    }
    /* the bases move to the counts now (the threads' slots are theirs to
     * write, so they are not zeroed) */
    for (uint32_t i = 0; i < VKPROF_MAX_PHASES; i++) {
        uint64_t base = atomic_load_explicit(&r->phase_base[i], memory_order_relaxed);
        atomic_store_explicit(&r->phase_base[i], base + calls_now(r, i), memory_order_relaxed);
    }
    uint64_t ub = atomic_load_explicit(&r->unstamped_base, memory_order_relaxed);
    atomic_store_explicit(&r->unstamped_base, ub + calls_now(r, VKPROF_MAX_PHASES),
                          memory_order_relaxed);
    atomic_store_explicit(&r->rot_cycles, 0, memory_order_relaxed);
    atomic_store_explicit(&r->rot_changed, 0, memory_order_relaxed);
}

/* A phase's executed calls: ring mode counts every begin; UINT64_MAX in
 * 2-slot mode (every call there is a scope: its count). */
uint64_t vkprof__ring_phase_calls(vkprof_context ctx, vkprof_phase phase)
{
    if (ctx->frozen != NULL) {
        return phase < VKPROF_MAX_PHASES ? ctx->frozen->phase_calls[phase] : UINT64_MAX;
    }
    if (!vkprof__ring_mode(ctx) || ctx->gpu.ring == NULL || phase >= VKPROF_MAX_PHASES) {
        return UINT64_MAX;
    }
    return calls_now(ctx->gpu.ring, phase);
}

static void add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* A counter of the calling thread's own slot: one writer, no lock prefix. */
static void own_add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* The calling thread's counters in this ring, made at its first call; NULL
 * for a thread past the thread table (it shares its index) or without
 * memory: the shared counters then. Only the thread itself stores its slot,
 * so making it needs no compare-and-swap. */
static calls_slot *my_slot(vkprof_ring *r)
{
    uint16_t tid = vkprof__thread_index();
    if (tid == 0 || tid >= VKPROF_MAX_THREADS) {
        return NULL;
    }
    calls_slot *s = atomic_load_explicit(&r->slots[tid - 1], memory_order_acquire);
    if (s == NULL) {
        s = calloc(1, sizeof *s);
        if (s != NULL) {
            atomic_store_explicit(&r->slots[tid - 1], s, memory_order_release);
        }
    }
    return s;
}

/* A begin, counted: its phase, and whether it was left unstamped. */
static void count_call(vkprof_ring *r, calls_slot *s, vkprof_phase phase)
{
    if (s != NULL) {
        own_add(&s->phase[phase], 1);
    } else {
        add(&r->phase_calls[phase], 1);
    }
}

static void count_unstamped(vkprof_ring *r, calls_slot *s)
{
    if (s != NULL) {
        own_add(&s->unstamped, 1);
    } else {
        add(&r->calls_unstamped, 1);
    }
}

/* The counts now: shared + every thread's slot - the base (modulo 2^64: the
 * shared counter takes subtractions, so it may wrap on its own).
 * phase == VKPROF_MAX_PHASES: the unstamped calls. */
static uint64_t calls_now(vkprof_ring *r, uint32_t phase)
{
    bool un = phase >= VKPROF_MAX_PHASES;
    uint64_t v = un ? atomic_load_explicit(&r->calls_unstamped, memory_order_relaxed) -
                          atomic_load_explicit(&r->unstamped_base, memory_order_relaxed)
                    : atomic_load_explicit(&r->phase_calls[phase], memory_order_relaxed) -
                          atomic_load_explicit(&r->phase_base[phase], memory_order_relaxed);
    uint32_t n = vkprof__thread_count();
    for (uint32_t i = 0; i < n && i < VKPROF_MAX_THREADS - 1; i++) {
        calls_slot *s = atomic_load_explicit(&r->slots[i], memory_order_acquire);
        if (s != NULL) {
            v += atomic_load_explicit(un ? &s->unstamped : &s->phase[phase], memory_order_relaxed);
        }
    }
    return v;
}

/* Count lost samples; the logger warns the first time anything is lost. */
static void lose(vkprof_context ctx, _Atomic uint64_t *reason, uint64_t n, const char *why)
{
    if (n == 0) {
        return;
    }
    add(reason, n);
    if (!atomic_exchange_explicit(&ctx->gpu.lost_warned, true, memory_order_relaxed)) {
        vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_OK,
                    "GPU samples lost (first: %llu, %s); every report counts them "
                    "(vkprof_get_timing_stats, the snapshot, the trace, vkprof report)",
                    (unsigned long long)n, why);
    }
}

static void lock(vkprof_ring *r)
{
    while (atomic_flag_test_and_set_explicit(&r->lock, memory_order_acquire)) {
        sched_yield();
    }
}

static void unlock(vkprof_ring *r)
{
    atomic_flag_clear_explicit(&r->lock, memory_order_release);
}

void vkprof__gpu_lock(vkprof_context ctx)
{
    if (vkprof__ring_mode(ctx) && ctx->gpu.ring != NULL) {
        lock(ctx->gpu.ring);
    }
}

void vkprof__gpu_unlock(vkprof_context ctx)
{
    if (vkprof__ring_mode(ctx) && ctx->gpu.ring != NULL) {
        unlock(ctx->gpu.ring);
    }
}

/* ---- setup ---- */

static vkprof_result ring_init_locked(vkprof_context ctx)
{
    vkprof_ring *r = ctx->gpu.ring;
    if (r->pool != VK_NULL_HANDLE) {
        return VKPROF_OK;
    }
    uint32_t n = ctx->desc.ring_queries; /* resolved: at least 4 */
    /* chunks: the unit a recording takes at once (one bit of the bitmap) */
    uint32_t c = n >= 1024 ? 32u : n >= 64 ? 8u : 2u;
    r->chunk = c;
    r->nchunks = n / c;
    r->free_words = (r->nchunks + 63) / 64;
    r->free_bits = calloc(r->free_words, sizeof *r->free_bits);
    r->readback = calloc((size_t)n * 2, sizeof *r->readback);
    r->last_value = calloc(n, sizeof *r->last_value);
    r->has_last = calloc(n, 1);
    if (r->free_bits == NULL || r->readback == NULL || r->last_value == NULL ||
        r->has_last == NULL) {
        return vkprof__fail(ctx, VKPROF_ERROR_OUT_OF_MEMORY, "ring: %u queries", n);
    }
    for (uint32_t i = 0; i < r->nchunks; i++) {
        atomic_fetch_or_explicit(&r->free_bits[i / 64], UINT64_C(1) << (i % 64),
                                 memory_order_relaxed);
    }
    VkQueryPoolCreateInfo ci;
    memset(&ci, 0, sizeof ci);
    ci.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    ci.queryCount = n;
    VkQueryPool pool = VK_NULL_HANDLE;
    VkResult vr = ctx->vk.CreateQueryPool(ctx->desc.device, &ci, ctx->desc.vk_allocator, &pool);
    if (vr != VK_SUCCESS) {
        return vkprof__fail(ctx, VKPROF_ERROR_VULKAN,
                            "vkCreateQueryPool(%u queries) failed (VkResult %d)", n, (int)vr);
    }
    if (ctx->gpu.host_reset) {
        ctx->vk.ResetQueryPool(ctx->desc.device, pool, 0, n);
    }
    r->queries = n;
    r->pool = pool;
    return VKPROF_OK;
}

vkprof_result vkprof__ring_create(vkprof_context ctx)
{
    vkprof_ring *r = calloc(1, sizeof *r);
    if (r == NULL) {
        return VKPROF_ERROR_OUT_OF_MEMORY;
    }
    r->trackers = calloc(TRACKERS, sizeof *r->trackers);
    if (r->trackers == NULL) {
        free(r);
        return VKPROF_ERROR_OUT_OF_MEMORY;
    }
    atomic_flag_clear(&r->lock);
    ctx->gpu.ring = r;
    return VKPROF_OK;
}

/* The pool is made on first use; the first scope may come from any thread. */
static vkprof_result ring_ready(vkprof_context ctx)
{
    vkprof_ring *r = ctx->gpu.ring;
    if (atomic_load_explicit(&ctx->gpu.ring_ready, memory_order_acquire)) {
        return VKPROF_OK;
    }
    lock(r);
    vkprof_result res = ring_init_locked(ctx);
    if (res == VKPROF_OK) {
        atomic_store_explicit(&ctx->gpu.ring_ready, true, memory_order_release);
    }
    unlock(r);
    return res;
}

static void rec_free(rrec *rec)
{
    if (rec != NULL) {
        free(rec->calls);
        free(rec->scopes);
        free(rec->chunks);
        free(rec);
    }
}

void vkprof__ring_shutdown(vkprof_context ctx)
{
    vkprof_ring *r = ctx->gpu.ring;
    if (r == NULL) {
        return;
    }
    if (r->pool != VK_NULL_HANDLE) {
        ctx->vk.DestroyQueryPool(ctx->desc.device, r->pool, ctx->desc.vk_allocator);
    }
    for (uint32_t i = 0; i < TRACKERS; i++) {
        rec_free(r->trackers[i].cur);
        rec_free(r->trackers[i].sealed);
    }
    free(r->trackers);
    for (uint32_t i = 0; i < VKPROF_MAX_THREADS - 1; i++) {
        free(atomic_load_explicit(&r->slots[i], memory_order_relaxed));
    }
    free(r->pending);
    free(r->free_bits);
    free(r->readback);
    free(r->last_value);
    free(r->has_last);
    free(r);
    ctx->gpu.ring = NULL;
}

/* ---- the tracker table (lock-free; a handle is inserted only by its owner) ---- */

static uint32_t hash_handle(uintptr_t k)
{
    uint64_t x = (uint64_t)k;
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return (uint32_t)x & (TRACKERS - 1);
}

static tracker *tracker_find(vkprof_ring *r, VkCommandBuffer cmd, bool create)
{
    uintptr_t k = (uintptr_t)(void *)cmd;
    for (int attempt = 0; attempt < 4; attempt++) {
        uint32_t h = hash_handle(k);
        tracker *tomb = NULL;
        for (uint32_t i = 0; i < TRACKERS; i++) {
            tracker *t = &r->trackers[(h + i) & (TRACKERS - 1)];
            uintptr_t key = atomic_load_explicit(&t->key, memory_order_acquire);
            if (key == k) {
                return t;
            }
            if (key == TOMBSTONE) {
                if (tomb == NULL) {
                    tomb = t;
                }
                continue;
            }
            if (key == 0) {
                break;
            }
        }
        if (!create) {
            return NULL;
        }
        /* not present: claim the first tombstone or free entry on the path */
        for (uint32_t i = 0; i < TRACKERS; i++) {
            tracker *t = tomb != NULL ? tomb : &r->trackers[(h + i) & (TRACKERS - 1)];
            uintptr_t key = atomic_load_explicit(&t->key, memory_order_relaxed);
            if (key == 0 || key == TOMBSTONE) {
                if (atomic_compare_exchange_strong_explicit(&t->key, &key, k, memory_order_acq_rel,
                                                            memory_order_relaxed)) {
                    return t;
                }
            }
            if (tomb != NULL) {
                break; /* someone took it: look again from the start */
            }
        }
    }
    return NULL;
}

/* ---- chunks (lock-free bitmap) ---- */

static bool chunk_take(vkprof_ring *r, uint32_t *out)
{
    uint32_t start = atomic_fetch_add_explicit(&r->cursor, 1, memory_order_relaxed);
    for (uint32_t i = 0; i < r->free_words; i++) {
        uint32_t w = (start + i) % r->free_words;
        uint64_t bits = atomic_load_explicit(&r->free_bits[w], memory_order_relaxed);
        while (bits != 0) {
            uint32_t b = (uint32_t)__builtin_ctzll(bits);
            uint64_t want = bits & ~(UINT64_C(1) << b);
            if (atomic_compare_exchange_weak_explicit(&r->free_bits[w], &bits, want,
                                                      memory_order_acquire, memory_order_relaxed)) {
                *out = w * 64 + b;
                return true;
            }
        }
    }
    return false;
}

static void chunk_give(vkprof_ring *r, uint32_t id)
{
    atomic_fetch_or_explicit(&r->free_bits[id / 64], UINT64_C(1) << (id % 64),
                             memory_order_release);
}

static uint32_t slot_at(const vkprof_ring *r, const rrec *rec, uint64_t pos)
{
    uint64_t ci = pos / r->chunk - rec->chunk_base;
    return rec->chunks[ci] * r->chunk + (uint32_t)(pos % r->chunk);
}

/* Hand out the next position (taking a chunk when the last one is used up);
 * false: ring full. */
static bool position_take(vkprof_ring *r, rrec *rec, uint64_t *pos)
{
    uint64_t p = rec->stamps;
    if (p / r->chunk >= rec->chunk_base + rec->nchunks) {
        uint32_t id;
        if (!chunk_take(r, &id)) {
            return false;
        }
        if (rec->nchunks == rec->chunk_cap) {
            uint64_t cap = rec->chunk_cap ? rec->chunk_cap * 2 : 16;
            uint32_t *q = realloc(rec->chunks, cap * sizeof *q);
            if (q == NULL) {
                chunk_give(r, id);
                return false;
            }
            rec->chunks = q;
            rec->chunk_cap = cap;
        }
        rec->chunks[rec->nchunks++] = id;
    }
    rec->stamps = p + 1;
    *pos = p;
    return true;
}

/* ---- recording (the command buffer's owner only) ---- */

static rrec *rec_new(void)
{
    return calloc(1, sizeof(rrec));
}

/* A call of the recording, listed for its re-executions */
static void rec_count_call(rrec *rec, vkprof_phase phase, bool left_out)
{
    if (rec->calls_partial) {
        return;
    }
    rcalls *c = rec->calls;
    if (c == NULL || c->v[c->last].phase != phase) {
        uint32_t i = 0;
        while (c != NULL && i < c->n && c->v[i].phase != phase) {
            i++;
        }
        if (c == NULL || i == c->n) {
            if (c == NULL || c->n == c->cap) {
                uint32_t cap = c == NULL ? 8u : 2u * c->cap;
                rcalls *g = realloc(c, sizeof *c + cap * sizeof c->v[0]);
                if (g == NULL) {
                    rec->calls_partial = true; /* those listed still count */
                    return;
                }
                if (c == NULL) {
                    g->n = 0;
                }
                g->cap = cap;
                rec->calls = c = g;
            }
            c->v[c->n++] = (rcall){phase, 0, 0};
        }
        c->last = i;
    }
    c->v[c->last].calls++;
    c->v[c->last].left_out += left_out ? 1u : 0u;
}

/* The recording's calls, added to the phases' counts (sign 1: it ran again)
 * or taken off them (-1: the left-out calls of a recording that never ran;
 * its stamped ones are taken off with their scopes). Under the lock. */
static void rec_calls_apply(vkprof_ring *r, const rrec *rec, int sign)
{
    if (rec->calls == NULL) {
        return;
    }
    uint64_t left = 0;
    for (uint32_t i = 0; i < rec->calls->n; i++) {
        const rcall *e = &rec->calls->v[i];
        uint64_t n = sign > 0 ? e->calls : e->left_out;
        if (sign > 0) {
            add(&r->phase_calls[e->phase], n);
        } else {
            atomic_fetch_sub_explicit(&r->phase_calls[e->phase], n, memory_order_relaxed);
        }
        left += e->left_out;
    }
    if (sign > 0) {
        add(&r->calls_unstamped, left);
    } else {
        atomic_fetch_sub_explicit(&r->calls_unstamped, left, memory_order_relaxed);
    }
}

/* Does the recording hold anything a submit runs: a scope, or a listed call? */
static bool rec_holds(const rrec *rec)
{
    return rec != NULL && (rec->count > 0 || rec->calls != NULL);
}

static rscope *scope_push(rrec *rec)
{
    if (rec->count == rec->cap) {
        uint64_t cap = rec->cap ? rec->cap * 2 : 128;
        rscope *p = realloc(rec->scopes, cap * sizeof *p);
        if (p == NULL) {
            return NULL;
        }
        rec->scopes = p;
        rec->cap = cap;
    }
    rscope *sc = &rec->scopes[rec->count++];
    memset(sc, 0, sizeof *sc);
    return sc;
}

static void ring_stamp(vkprof_context ctx, VkCommandBuffer cmd, const rrec *rec, uint64_t pos)
{
    vkprof__stamp(ctx, cmd, ctx->gpu.ring->pool, slot_at(ctx->gpu.ring, rec, pos));
}

/* Open scopes left by a disable, or at a submit, can never end: drop them. */
static void drop_open(vkprof_context ctx, tracker *t)
{
    if (t->depth == 0) {
        return;
    }
    uint64_t n = 0;
    for (uint32_t i = 0; i < t->depth; i++) {
        if (t->open[i] & SKIP) {
            continue; /* left out by rotation: no sample */
        }
        rscope *sc = &t->cur->scopes[t->open[i]];
        if (sc->phase < VKPROF_MAX_PHASES) {
            n++; /* a scope that was already dropped (ring full) was counted then */
            t->cur->live--;
        }
        sc->phase = VKPROF_MAX_PHASES;
        sc->state = SC_ENDED;
        sc->done = true;
    }
    lose(ctx, &ctx->gpu.lost_misuse, n, "a scope left open");
    atomic_fetch_add_explicit(&ctx->errors.discarded, t->depth, memory_order_relaxed);
    t->depth = 0;
    t->boundary_valid = false;
}

static bool boundary_usable(vkprof_context ctx, const tracker *t, uint64_t idx)
{
    const uint64_t seq =
        idx != NO_IDX ? idx
                      : atomic_load_explicit(&ctx->gpu.ring->step_calls, memory_order_relaxed);
    return ctx->desc.shared_boundaries && t->boundary_valid &&
           t->boundary_epoch == atomic_load_explicit(&ctx->gpu.step_epoch, memory_order_relaxed) &&
           t->boundary_seq == seq;
}

/* Rotation: a begin outside this step's window. Nothing is recorded; the
 * buffer is being recorded anew (its next submit runs what is stamped now). */
static vkprof_result skip_begin(vkprof_context ctx, calls_slot *mine, vkprof_phase phase,
                                VkCommandBuffer cmd, bool edge)
{
    vkprof_ring *r = ctx->gpu.ring;
    count_unstamped(r, mine);
    tracker *t = tracker_find(r, cmd, true);
    if (t == NULL) {
        return VKPROF_DISABLED; /* the table is full; its end is taken as left out too */
    }
    uint64_t epoch = atomic_load_explicit(&ctx->gpu.enable_epoch, memory_order_relaxed);
    if (t->depth > 0 && t->enable_epoch != epoch) {
        drop_open(ctx, t);
    }
    if (t->depth >= VKPROF_MAX_SCOPE_DEPTH) {
        return vkprof__fail(ctx, VKPROF_ERROR_BEGIN_TWICE,
                            "begin('%s'): scopes nest at most %u deep in one command buffer",
                            ctx->gpu.phases[phase].name, VKPROF_MAX_SCOPE_DEPTH);
    }
    atomic_store_explicit(&t->rerecorded, true, memory_order_relaxed);
    if (t->cur != NULL || (t->cur = rec_new()) != NULL) {
        rec_count_call(t->cur, phase, true);
    }
    t->open[t->depth++] = SKIP | (edge ? SKIP_EDGE : 0) | (uint64_t)phase;
    t->enable_epoch = epoch;
    t->boundary_valid = false;
    return VKPROF_DISABLED;
}

/* Rotation with shared boundaries: the end of the call before the window is
 * the window's first boundary, one stamp that belongs to no scope. Not a
 * sample: when the ring is full the window's first call stamps its own
 * begin (or is lost there, counted). */
static void edge_stamp(vkprof_context ctx, tracker *t, VkCommandBuffer cmd)
{
    vkprof_ring *r = ctx->gpu.ring;
    if (ring_ready(ctx) != VKPROF_OK) {
        return;
    }
    if (t->cur == NULL && (t->cur = rec_new()) == NULL) {
        return;
    }
    uint64_t pos;
    if (!position_take(r, t->cur, &pos)) {
        return;
    }
    if (!ctx->gpu.host_reset) {
        ctx->vk.CmdResetQueryPool(cmd, r->pool, slot_at(r, t->cur, pos), 1);
    }
    ring_stamp(ctx, cmd, t->cur, pos);
    t->boundary_valid = true;
    t->boundary_pos = pos;
    t->boundary_seq = atomic_load_explicit(&r->step_calls, memory_order_relaxed);
    t->boundary_epoch = atomic_load_explicit(&ctx->gpu.step_epoch, memory_order_relaxed);
}

/* Rotation: does the call take an index in the step? Not an outer phase (a
 * whole command buffer), which is stamped in every timed step: the busy
 * time beside the window. */
static bool rot_numbered(vkprof_context ctx, vkprof_phase phase)
{
    return ctx->desc.rotate_scopes > 0 &&
           (atomic_load_explicit(&ctx->gpu.phases[phase].flags, memory_order_relaxed) &
            VKPROF_PHASE_FLAG_OUTER) == 0;
}

/* Rotation: the call's index in the step, the window's start, and whether
 * it is its phase's first call (stamped whatever the window: a driver's
 * compile at first use, counted once in the estimate). Is it outside the
 * window? */
static bool rot_claim(vkprof_context ctx, vkprof_phase phase, uint64_t *idx, uint64_t *start,
                      bool *first_use)
{
    vkprof_ring *r = ctx->gpu.ring;
    *idx = atomic_fetch_add_explicit(&r->step_calls, 1, memory_order_relaxed);
    *start = atomic_load_explicit(&r->rot_start, memory_order_relaxed);
    *first_use = ctx->desc.rotate_first_calls &&
                 !atomic_load_explicit(&r->phase_seen[phase], memory_order_relaxed) &&
                 !atomic_exchange_explicit(&r->phase_seen[phase], true, memory_order_relaxed);
    return *idx < *start || *idx - *start >= ctx->desc.rotate_scopes;
}

vkprof_result vkprof__ring_begin(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase,
                                 bool *left_out)
{
    vkprof_ring *r = ctx->gpu.ring;
    uint64_t idx = NO_IDX, start = 0;
    bool first_use = false, counted = false;
    calls_slot *mine = NULL;
    if (left_out != NULL && vkprof__step_timed(ctx) && rot_numbered(ctx, phase)) {
        /* vkprof_cmd_begin_leaf: a call the window leaves out is only
         * numbered (the caller counts it, and no end follows) */
        bool outside = rot_claim(ctx, phase, &idx, &start, &first_use);
        bool edge = ctx->desc.shared_boundaries && idx + 1 == start;
        if (outside && !first_use && !edge) {
            *left_out = true;
            return VKPROF_DISABLED;
        }
        counted = true; /* the index is taken: the rest as vkprof_cmd_begin */
        mine = my_slot(r);
        count_call(r, mine, phase);
        if (outside && !first_use) {
            return skip_begin(ctx, mine, phase, cmd, true);
        }
    }
    if (!counted) {
        mine = my_slot(r);
        count_call(r, mine, phase);
    }
    if (!vkprof__step_timed(ctx)) {
        count_unstamped(r, mine);
        /* sampling: this step is not timed. A buffer that held scopes is
         * being recorded anew without stamps: its next submit runs none. */
        tracker *u = tracker_find(r, cmd, false);
        if (u != NULL && u->depth == 0) {
            u->boundary_valid = false;
            atomic_store_explicit(&u->rerecorded, true, memory_order_relaxed);
        }
        return VKPROF_DISABLED;
    }
    if (!counted && rot_numbered(ctx, phase)) {
        if (rot_claim(ctx, phase, &idx, &start, &first_use) && !first_use) {
            /* the call just before the window ends at the window's first boundary */
            return skip_begin(ctx, mine, phase, cmd,
                              ctx->desc.shared_boundaries && idx + 1 == start);
        }
    }
    tracker *t = tracker_find(r, cmd, true);
    if (t == NULL) {
        add(&ctx->gpu.scopes_recorded, 1);
        lose(ctx, &ctx->gpu.lost_ring_full, 1,
             "more command buffers with scopes than the table holds");
        return VKPROF_OK;
    }
    uint64_t epoch = atomic_load_explicit(&ctx->gpu.enable_epoch, memory_order_relaxed);
    if (t->depth > 0 && t->enable_epoch != epoch) {
        drop_open(ctx, t); /* profiling was turned off while they were open */
    }
    if (t->depth >= VKPROF_MAX_SCOPE_DEPTH) {
        return vkprof__fail(ctx, VKPROF_ERROR_BEGIN_TWICE,
                            "begin('%s'): scopes nest at most %u deep in one command buffer",
                            ctx->gpu.phases[phase].name, VKPROF_MAX_SCOPE_DEPTH);
    }
    vkprof_result res = ring_ready(ctx);
    if (res != VKPROF_OK) {
        return res;
    }
    if (t->cur == NULL && (t->cur = rec_new()) == NULL) {
        return vkprof__fail(ctx, VKPROF_ERROR_OUT_OF_MEMORY, "ring: a recording");
    }
    rrec *rec = t->cur;
    rec_count_call(rec, phase, false);
    rscope *sc = scope_push(rec);
    if (sc == NULL) {
        return vkprof__fail(ctx, VKPROF_ERROR_OUT_OF_MEMORY, "ring: a scope");
    }
    add(&ctx->gpu.scopes_recorded, 1);
    sc->first_use = first_use;
    sc->phase = phase;
    sc->state = SC_OPEN;
    sc->flow = vkprof__current_span();
    sc->step = vkprof__steps_done(ctx) + 1;
    /* a stamp of this scope runs after its buffer's submit, which follows
     * this call: its begin cannot come before (the stale check) */
    sc->rec_ns = vkprof_host_now_ns();
    bool shared = boundary_usable(ctx, t, idx);
    uint64_t first = 0, second = 0;
    uint64_t mark = rec->stamps;
    if (!position_take(r, rec, &first) || (!shared && !position_take(r, rec, &second))) {
        /* full: drop the scope, never overwrite a slot that was not read */
        sc->phase = VKPROF_MAX_PHASES;
        sc->state = SC_ENDED;
        sc->done = true;
        rec->stamps = mark; /* a position taken for nothing is handed out again */
        t->boundary_valid = false;
        lose(ctx, &ctx->gpu.lost_ring_full, 1, "the query ring was full");
    } else {
        /* Without host resets, reset this scope's own slots in this command
         * buffer, then stamp. With them, the slots are unavailable already
         * (reset when the chunk was freed, and before each re-submission):
         * an in-buffer reset costs GPU time (an H200 measured 0.77x the
         * bare-Vulkan floor with one per scope). */
        uint32_t s0 = slot_at(r, rec, first);
        bool in_buffer = !ctx->gpu.host_reset;
        if (shared) {
            if (in_buffer) {
                ctx->vk.CmdResetQueryPool(cmd, r->pool, s0, 1);
            }
            sc->begin_pos = t->boundary_pos;
            sc->end_pos = first;
            add(&ctx->gpu.shared_stamps, 1);
        } else {
            uint32_t s1 = slot_at(r, rec, second);
            if (!in_buffer) {
                /* reset from the host */
            } else if (s1 == s0 + 1) {
                ctx->vk.CmdResetQueryPool(cmd, r->pool, s0, 2);
            } else {
                ctx->vk.CmdResetQueryPool(cmd, r->pool, s0, 1);
                ctx->vk.CmdResetQueryPool(cmd, r->pool, s1, 1);
            }
            sc->begin_pos = first;
            sc->end_pos = second;
            if (ctx->desc.outer_begin_top == VKPROF_FEATURE_ENABLED &&
                (atomic_load_explicit(&ctx->gpu.phases[phase].flags, memory_order_relaxed) &
                 VKPROF_PHASE_FLAG_OUTER)) {
                /* an outer scope's begin waits for nothing: the earlier
                 * work runs on past it (desc.outer_begin_top) */
                vkprof__stamp_top(ctx, cmd, r->pool, slot_at(r, rec, first));
            } else {
                ring_stamp(ctx, cmd, rec, first);
            }
        }
        rec->live++;
    }
    t->open[t->depth++] = rec->count - 1;
    t->enable_epoch = epoch;
    t->boundary_valid = false;
    return VKPROF_OK;
}

vkprof_result vkprof__ring_end(vkprof_context ctx, VkCommandBuffer cmd, vkprof_phase phase,
                               const vkprof_arg *args, uint32_t count)
{
    vkprof_ring *r = ctx->gpu.ring;
    tracker *t = tracker_find(r, cmd, false);
    uint64_t epoch = atomic_load_explicit(&ctx->gpu.enable_epoch, memory_order_relaxed);
    if (t != NULL && t->depth > 0 && t->enable_epoch != epoch) {
        drop_open(ctx, t);
    }
    if (t == NULL || t->depth == 0) {
        if (!vkprof__step_timed(ctx) || (t == NULL && ctx->desc.rotate_scopes > 0)) {
            return VKPROF_DISABLED;
        }
        return vkprof__fail(ctx, VKPROF_ERROR_END_WITHOUT_BEGIN,
                            "end('%s') without begin in this command buffer",
                            ctx->gpu.phases[phase].name);
    }
    uint64_t top = t->open[t->depth - 1];
    if (top & SKIP) {
        /* a call left out by rotation: no sample, nothing to fold or lose */
        t->depth--;
        t->boundary_valid = false;
        if (SKIP_PHASE(top) != phase) {
            return vkprof__fail(ctx, VKPROF_ERROR_PHASE_MISMATCH,
                                "end('%s') but begin was '%s' (a call left out by rotation)",
                                ctx->gpu.phases[phase].name, ctx->gpu.phases[SKIP_PHASE(top)].name);
        }
        /* Only where executions are told (vkprof_cmd_submit): the seed's
         * model frees a recording's slots once its scopes are collected,
         * and a collect between this end and the next begin could free the
         * edge's slot before its buffer ran. There the window's first call
         * stamps its own begin (still K + 1 stamps; the barrier before it
         * is then not counted toward it). */
        if ((top & SKIP_EDGE) && atomic_load_explicit(&r->notified, memory_order_relaxed)) {
            edge_stamp(ctx, t, cmd);
        }
        return VKPROF_DISABLED;
    }
    rrec *rec = t->cur;
    rscope *sc = &rec->scopes[t->open[--t->depth]];
    bool dropped = sc->phase >= VKPROF_MAX_PHASES;
    if (!dropped && phase != sc->phase) {
        vkprof_phase open = sc->phase;
        sc->phase = VKPROF_MAX_PHASES; /* never folded */
        sc->state = SC_ENDED;
        sc->done = true;
        rec->live--;
        t->boundary_valid = false;
        lose(ctx, &ctx->gpu.lost_misuse, 1, "an end that named another phase");
        return vkprof__fail(ctx, VKPROF_ERROR_PHASE_MISMATCH,
                            "end('%s') but begin was '%s'; the scope is dropped",
                            ctx->gpu.phases[phase].name, ctx->gpu.phases[open].name);
    }
    sc->state = SC_ENDED;
    sc->end_order = rec->ends++;
    if (dropped) {
        t->boundary_valid = false;
        return VKPROF_OK; /* counted when it was dropped */
    }
    ring_stamp(ctx, cmd, rec, sc->end_pos);
    sc->annot = count > 0 ? vkprof__trace_args(ctx, args, count) : 0;
    t->boundary_valid = true;
    t->boundary_pos = sc->end_pos;
    t->boundary_seq = atomic_load_explicit(&r->step_calls, memory_order_relaxed);
    t->boundary_epoch = atomic_load_explicit(&ctx->gpu.step_epoch, memory_order_relaxed);
    return VKPROF_OK;
}

/* ---- collection (under the lock) ---- */

static vkprof_result read_positions(vkprof_context ctx, const rrec *rec, uint64_t from, uint64_t to)
{
    vkprof_ring *r = ctx->gpu.ring;
    while (from < to) {
        if (from / r->chunk < rec->chunk_base) {
            from = rec->chunk_base * r->chunk;
            continue;
        }
        uint64_t n = r->chunk - from % r->chunk;
        if (n > to - from) {
            n = to - from;
        }
        uint32_t first = slot_at(r, rec, from);
        VkResult vr = ctx->vk.GetQueryPoolResults(
            ctx->desc.device, r->pool, first, (uint32_t)n, (size_t)n * 2 * sizeof(uint64_t),
            &r->readback[2 * (size_t)first], 2 * sizeof(uint64_t),
            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
        if (vr != VK_SUCCESS && vr != VK_NOT_READY) {
            return vkprof__fail(ctx, VKPROF_ERROR_VULKAN,
                                "ring: vkGetQueryPoolResults failed (VkResult %d)", (int)vr);
        }
        from += n;
    }
    return VKPROF_OK;
}

/* Is this execution's stamp at `pos` written? Its value in *v. */
static bool pos_ready(vkprof_context ctx, const rrec *rec, uint64_t pos, uint64_t *v)
{
    vkprof_ring *r = ctx->gpu.ring;
    uint32_t s = slot_at(r, rec, pos);
    if (r->readback[2 * (size_t)s + 1] == 0) {
        return false;
    }
    *v = r->readback[2 * (size_t)s] & ctx->valid_mask;
    /* the slot's previous use left its value available until this use's reset
     * executes; the clock moved on since, so an equal value is that stale one */
    return !(r->has_last[s] && r->last_value[s] == *v);
}

/* The execution is over (collected or lost): what its slots hold now is the
 * previous use for the next one. */
static void remember(vkprof_context ctx, const rrec *rec, uint64_t from, uint64_t to)
{
    vkprof_ring *r = ctx->gpu.ring;
    for (uint64_t p = from; p < to; p++) {
        if (p / r->chunk < rec->chunk_base) {
            continue;
        }
        uint32_t s = slot_at(r, rec, p);
        if (r->readback[2 * (size_t)s + 1] != 0) {
            r->last_value[s] = r->readback[2 * (size_t)s] & ctx->valid_mask;
            r->has_last[s] = 1;
        }
    }
}

/* Give the first `n` chunks of `rec` back. The GPU will not write them again:
 * read them one last time (stale detection for their next user), and reset
 * them from the host where the app allows it. */
static void chunks_release(vkprof_context ctx, rrec *rec, uint64_t n, bool ran)
{
    vkprof_ring *r = ctx->gpu.ring;
    if (n == 0) {
        return;
    }
    uint64_t from = rec->chunk_base * r->chunk, to = (rec->chunk_base + n) * r->chunk;
    if (to > rec->stamps) {
        to = rec->stamps; /* only positions handed out were ever reset */
    }
    /* a recording that was never submitted wrote nothing: its slots keep
     * their previous use's values (and are read only once initialized) */
    /* with host resets the slots are reset below: nothing to remember */
    if (ran && !ctx->gpu.host_reset && read_positions(ctx, rec, from, to) == VKPROF_OK) {
        remember(ctx, rec, from, to);
    }
    for (uint64_t i = 0; i < n; i++) {
        uint32_t id = rec->chunks[i];
        if (ctx->gpu.host_reset) {
            ctx->vk.ResetQueryPool(ctx->desc.device, r->pool, id * r->chunk, r->chunk);
            for (uint32_t k = 0; k < r->chunk; k++) {
                r->has_last[id * r->chunk + k] = 0;
            }
        }
        chunk_give(r, id);
    }
    memmove(rec->chunks, rec->chunks + n, (rec->nchunks - n) * sizeof *rec->chunks);
    rec->nchunks -= n;
    rec->chunk_base += n;
}

/* Reset every slot of `rec` from the host (none of them may be in use). */
static void rec_host_reset(vkprof_context ctx, const rrec *rec)
{
    vkprof_ring *r = ctx->gpu.ring;
    for (uint64_t i = 0; i < rec->nchunks; i++) {
        uint32_t id = rec->chunks[i];
        ctx->vk.ResetQueryPool(ctx->desc.device, r->pool, id * r->chunk, r->chunk);
        memset(&r->has_last[id * r->chunk], 0, r->chunk);
    }
}

/* Fold what the current execution of `rec` has finished. `implicit`: the
 * seed's model (no submit calls): the recording is still growing, scopes run
 * once, and finished ones leave it. Returns true when nothing is pending. */
/* Issue 25: a sample whose begin stamp, mapped to the host clock, lies
 * before its scope was recorded, by more than the mapping's bound, is
 * another execution's value: stale (a buffer re-submitted without
 * vkprof_cmd_submit wrote its stamps into slots the ring had given back to
 * a new recording). The bound: vkprof__cal_bound. Only in the seed's model
 * (no vkprof_cmd_submit: with it, executions are known and their windows
 * check the calibration instead), only once a sample has been seen after its
 * recording (a calibration that is off would make every sample look stale),
 * and not without a calibration. Under the lock (calibration points are
 * added under it too). */
static bool stale_sample(vkprof_context ctx, const rscope *sc)
{
    vkprof_ring *r = ctx->gpu.ring;
    const vkprof_cal *c = &ctx->cal;
    if (ctx->clock_checks_off || sc->rec_ns == 0 || c->count == 0 || c->points == NULL) {
        return false;
    }
    uint64_t host;
    if (!vkprof__cal_map(ctx, sc->b, &host)) {
        return false;
    }
    uint64_t bound = vkprof__cal_bound(ctx, host);
    if (!(host < sc->rec_ns && sc->rec_ns - host > bound)) {
        r->stale_validated = true;
        return false;
    }
    return r->stale_validated;
}

static bool rec_collect(vkprof_context ctx, rrec *rec, bool implicit, uint64_t *folded)
{
    vkprof_ring *r = ctx->gpu.ring;
    if (rec->head >= rec->count) {
        return true;
    }
    /* the lowest position still needed */
    uint64_t lo = UINT64_MAX;
    for (uint64_t i = rec->head; i < rec->count; i++) {
        const rscope *sc = &rec->scopes[i];
        if (!sc->done && sc->begin_pos < lo) {
            lo = sc->begin_pos;
        }
    }
    if (lo != UINT64_MAX && read_positions(ctx, rec, lo, rec->stamps) != VKPROF_OK) {
        return false;
    }
    /* the latest-ending scope that is written: every scope that ended before
     * it in this command buffer has executed, or never will */
    bool any = false;
    uint64_t last_order = 0;
    for (uint64_t i = rec->head; i < rec->count; i++) {
        rscope *sc = &rec->scopes[i];
        if (sc->done || sc->state != SC_ENDED) {
            continue;
        }
        uint64_t b, e;
        if (pos_ready(ctx, rec, sc->begin_pos, &b) && pos_ready(ctx, rec, sc->end_pos, &e)) {
            sc->b = b;
            sc->e = e;
            sc->ready = true;
            if (!any || sc->end_order > last_order) {
                last_order = sc->end_order;
            }
            any = true;
        } else {
            sc->ready = false;
        }
        sc->partial = false;
    }
    /* A scope not there while a later-ending one is: the read may have been
     * torn (its stamps landed between the reads of its slots and the later
     * ones). Read again: what is still not there after the later scope was
     * seen written never ran. */
    bool suspects = false;
    for (uint64_t i = rec->head; i < rec->count && any; i++) {
        const rscope *sc = &rec->scopes[i];
        suspects |= !sc->done && sc->state == SC_ENDED && !sc->ready && sc->end_order < last_order;
    }
    if (suspects && read_positions(ctx, rec, lo, rec->stamps) == VKPROF_OK) {
        for (uint64_t i = rec->head; i < rec->count; i++) {
            rscope *sc = &rec->scopes[i];
            uint64_t b, e;
            if (!sc->done && sc->state == SC_ENDED && !sc->ready && sc->end_order < last_order) {
                bool hb = pos_ready(ctx, rec, sc->begin_pos, &b);
                bool he = pos_ready(ctx, rec, sc->end_pos, &e);
                sc->ready = hb && he;
                sc->partial = hb || he; /* it ran: its other stamp is late */
                if (sc->ready) {
                    sc->b = b;
                    sc->e = e;
                }
            }
        }
    }
    bool trace = atomic_load_explicit(&ctx->trace.on, memory_order_relaxed) != 0;
    bool pending = false;
    /* the calibration's check (explicit executions): the first begin and the
     * last end folded now, and when the read that found them had finished */
    uint64_t read_ns = implicit || rec->tainted ? 0 : vkprof_host_now_ns();
    const rscope *first = NULL, *last = NULL;
    for (uint64_t i = rec->head; i < rec->count; i++) {
        rscope *sc = &rec->scopes[i];
        if (sc->done) {
            continue;
        }
        if (sc->state != SC_ENDED) {
            pending = true;
            continue;
        }
        if (sc->ready) {
            if (rec->tainted) {
                lose(ctx, &ctx->gpu.lost_overwritten, 1,
                     "a command buffer was submitted again before its previous execution "
                     "finished");
            } else if (vkprof__ticks_backwards(sc->b, sc->e, ctx->valid_mask)) {
                lose(ctx, &ctx->gpu.lost_backwards, 1,
                     "a scope's end stamp was earlier than its begin stamp (written out of order, "
                     "or a slot still held an older value); not folded");
            } else if (implicit && stale_sample(ctx, sc)) {
                lose(ctx, &ctx->gpu.lost_stale, 1,
                     "a scope's begin stamp lies before the scope was recorded (its slots held "
                     "another execution's values: a command buffer submitted again without "
                     "vkprof_cmd_submit?); not folded");
            } else {
                vkprof__phase_fold(ctx, sc->phase, (sc->e - sc->b) & ctx->valid_mask,
                                   sc->first_use);
                sc->first_use = false; /* a re-submitted recording's later runs are not */
                add(&ctx->gpu.scopes_collected, 1);
                if (first == NULL || sc->begin_pos < first->begin_pos) {
                    first = sc;
                }
                if (last == NULL || sc->end_pos > last->end_pos) {
                    last = sc;
                }
                (*folded)++;
                if (trace) {
                    vkprof__trace_gpu(ctx, sc->phase, sc->b, sc->e,
                                      sc->flow != 0 || implicit ? sc->flow : rec->exec_flow,
                                      implicit ? sc->step : rec->exec_step, sc->annot);
                }
            }
            sc->done = true;
        } else if (any && sc->end_order < last_order && !sc->partial) {
            lose(ctx, &ctx->gpu.lost_never_submitted, 1,
                 "a recorded scope never ran (its command buffer was re-recorded or reset "
                 "before a submit)");
            sc->done = true;
        } else {
            pending = true;
        }
    }
    if (first != NULL && read_ns != 0 && rec->exec_submit_ns != 0 && !ctx->clock_checks_off) {
        vkprof__cal_window(ctx, first->b, last->e, rec->exec_submit_ns, read_ns);
    }
    if (implicit) {
        /* drop the done prefix; give back chunks no pending scope needs */
        uint64_t h = rec->head;
        while (h < rec->count && rec->scopes[h].done) {
            h++;
        }
        rec->head = h;
        uint64_t need = rec->stamps; /* lowest position still needed */
        for (uint64_t i = h; i < rec->count; i++) {
            if (!rec->scopes[i].done && rec->scopes[i].begin_pos < need) {
                need = rec->scopes[i].begin_pos;
            }
        }
        uint64_t keep_from = need / r->chunk;
        bool all_done = need == rec->stamps;
        if (all_done) {
            /* nothing pending: every chunk goes back, and the next scope
             * starts a fresh one (its slots are reset where it is recorded) */
            chunks_release(ctx, rec, rec->nchunks, true);
            rec->stamps = rec->chunk_base * r->chunk;
        } else if (keep_from > rec->chunk_base && rec->nchunks > 0) {
            uint64_t n = keep_from - rec->chunk_base;
            if (n > rec->nchunks) {
                n = rec->nchunks;
            }
            chunks_release(ctx, rec, n, true);
        }
        if (rec->head == rec->count) {
            rec->head = rec->count = 0; /* all done: reuse the array */
        } else if (rec->head > 64 && rec->head * 2 > rec->count) {
            memmove(rec->scopes, rec->scopes + rec->head,
                    (rec->count - rec->head) * sizeof *rec->scopes);
            rec->count -= rec->head;
            rec->head = 0;
        }
    }
    return !pending;
}

/* The execution ended (collected, or given up): its values are the slots'
 * previous use from now on. */
static void exec_close(vkprof_context ctx, rrec *rec)
{
    remember(ctx, rec, rec->chunk_base * ctx->gpu.ring->chunk, rec->stamps);
    rec->exec_pending = false;
    rec->tainted = false;
}

/* Give up what the current execution has not delivered. */
static void exec_give_up(vkprof_context ctx, rrec *rec, _Atomic uint64_t *reason, const char *why)
{
    uint64_t n = 0;
    for (uint64_t i = rec->head; i < rec->count; i++) {
        rscope *sc = &rec->scopes[i];
        if (!sc->done && sc->phase < VKPROF_MAX_PHASES) {
            sc->done = true;
            n++;
        }
    }
    lose(ctx, reason, n, why);
    exec_close(ctx, rec);
}

static void pending_add(vkprof_ring *r, rrec *rec)
{
    if (rec->in_pending) {
        return;
    }
    if (r->npending == r->pending_cap) {
        uint32_t cap = r->pending_cap ? r->pending_cap * 2 : 32;
        rrec **p = realloc(r->pending, cap * sizeof *p);
        if (p == NULL) {
            return; /* collected when its buffer is submitted again, retired or destroyed */
        }
        r->pending = p;
        r->pending_cap = cap;
    }
    r->pending[r->npending++] = rec;
    rec->in_pending = true;
}

static void pending_remove(vkprof_ring *r, rrec *rec)
{
    for (uint32_t i = 0; i < r->npending; i++) {
        if (r->pending[i] == rec) {
            r->pending[i] = r->pending[--r->npending];
            break;
        }
    }
    rec->in_pending = false;
}

/* Collect an execution; when it is over, close it. */
static void exec_collect(vkprof_context ctx, rrec *rec, uint64_t *folded)
{
    if (!rec->exec_pending) {
        return;
    }
    if (rec_collect(ctx, rec, false, folded)) {
        exec_close(ctx, rec);
    }
}

/* A recording is replaced or its buffer reset/freed: everything in flight has
 * finished by Vulkan's rules; collect it, count the rest, free its slots. */
static void rec_retire(vkprof_context ctx, rrec *rec, _Atomic uint64_t *reason, const char *why,
                       uint64_t *folded)
{
    if (rec == NULL) {
        return;
    }
    vkprof_ring *r = ctx->gpu.ring;
    if (rec->exec_pending) {
        exec_collect(ctx, rec, folded);
        if (rec->exec_pending) {
            exec_give_up(ctx, rec, reason, why);
        }
    }
    pending_remove(r, rec);
    chunks_release(ctx, rec, rec->nchunks, rec->submits > 0);
    rec_free(rec);
}

static vkprof_result collect_locked(vkprof_context ctx, uint64_t *folded)
{
    vkprof_ring *r = ctx->gpu.ring;
    for (uint32_t i = 0; i < r->npending;) {
        rrec *rec = r->pending[i];
        exec_collect(ctx, rec, folded);
        if (!rec->exec_pending) {
            r->pending[i] = r->pending[--r->npending];
            rec->in_pending = false;
        } else {
            i++;
        }
    }
    if (!atomic_load_explicit(&r->notified, memory_order_relaxed)) {
        /* the seed's model: recordings run once, on this thread */
        for (uint32_t i = 0; i < TRACKERS; i++) {
            tracker *t = &r->trackers[i];
            uintptr_t key = atomic_load_explicit(&t->key, memory_order_acquire);
            if (key > TOMBSTONE && t->cur != NULL) {
                (void)rec_collect(ctx, t->cur, true, folded);
                t->boundary_valid = false; /* the app may now re-record the buffer */
                /* its calls so far ran: a discard takes back only later ones */
                free(t->cur->calls);
                t->cur->calls = NULL;
                t->cur->calls_partial = false;
            }
        }
    }
    return VKPROF_OK;
}

vkprof_result vkprof__ring_collect(vkprof_context ctx)
{
    vkprof_ring *r = ctx->gpu.ring;
    if (!atomic_load_explicit(&ctx->gpu.ring_ready, memory_order_acquire)) {
        return VKPROF_OK;
    }
    uint64_t folded = 0;
    lock(r);
    vkprof_result res = collect_locked(ctx, &folded);
    if (folded > 0) {
        vkprof__cal_maybe_refresh(ctx);
    }
    unlock(r);
    return res;
}

/* ---- submissions ---- */

static void submit_one_locked(vkprof_context ctx, VkCommandBuffer cmd, uint64_t step,
                              uint64_t submit_ns, uint64_t *folded)
{
    vkprof_ring *r = ctx->gpu.ring;
    tracker *t = tracker_find(r, cmd, false);
    if (t == NULL) {
        return; /* no scope was ever recorded into it */
    }
    bool rerecorded = atomic_exchange_explicit(&t->rerecorded, false, memory_order_relaxed);
    if (rerecorded && !rec_holds(t->cur)) {
        /* re-recorded in an untimed step: the buffer holds no scope now */
        rec_retire(ctx, t->sealed, &ctx->gpu.lost_reset,
                   "a command buffer was re-recorded before its execution was collected", folded);
        t->sealed = NULL;
        t->boundary_valid = false;
        return;
    }
    if (rec_holds(t->cur)) {
        /* a new recording: the buffer was re-recorded since its last submit */
        drop_open(ctx, t);
        rec_retire(ctx, t->sealed, &ctx->gpu.lost_reset,
                   "a command buffer was re-recorded before its execution was collected", folded);
        t->sealed = t->cur;
        t->cur = NULL;
    }
    t->boundary_valid = false;
    rrec *rec = t->sealed;
    if (rec == NULL) {
        return;
    }
    bool tainted = false;
    if (rec->exec_pending) {
        /* the previous execution must be read before this one overwrites it */
        exec_collect(ctx, rec, folded);
        if (rec->exec_pending) {
            exec_give_up(ctx, rec, &ctx->gpu.lost_overwritten,
                         "a command buffer was submitted again before its previous execution "
                         "was read");
            tainted = true;
        }
    }
    if (rec->submits > 0 && ctx->gpu.host_reset) {
        /* The buffer is not pending (Vulkan forbids re-submitting a pending
         * buffer without SIMULTANEOUS_USE), even when its previous run was
         * given up: reset its slots for this run. */
        rec_host_reset(ctx, rec);
    }
    if (rec->submits > 0) {
        rec_calls_apply(r, rec, 1); /* its calls run again */
        add(&ctx->gpu.extra_samples, rec->live);
        for (uint64_t i = 0; i < rec->count; i++) {
            rscope *sc = &rec->scopes[i];
            sc->done = sc->phase >= VKPROF_MAX_PHASES;
        }
    }
    rec->submits++;
    if (rec->count > 0) {
        add(&ctx->gpu.submissions, 1); /* executions with scopes */
    }
    rec->exec_step = step;
    rec->exec_submit_ns = submit_ns;
    rec->exec_flow = vkprof__current_span();
    rec->exec_pending = rec->live > 0;
    rec->tainted = tainted;
    if (rec->exec_pending) {
        pending_add(r, rec);
    }
}

vkprof_result vkprof_cmd_submit(vkprof_context ctx, VkQueue queue, uint32_t count,
                                const VkCommandBuffer *cmds)
{
    (void)queue; /* executions are told apart per command buffer; any queue */
    if (ctx == NULL) {
        return VKPROF_DISABLED;
    }
    if (count > 0 && cmds == NULL) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT, "submit: NULL command buffers");
    }
    if (!vkprof_active(ctx) || !vkprof__ring_mode(ctx)) {
        return VKPROF_DISABLED;
    }
    vkprof_ring *r = ctx->gpu.ring;
    if (!atomic_load_explicit(&ctx->gpu.ring_ready, memory_order_acquire)) {
        atomic_store_explicit(&r->notified, true, memory_order_relaxed);
        return VKPROF_OK; /* nothing was recorded yet */
    }
    uint64_t step = vkprof__steps_done(ctx) + 1;
    uint64_t folded = 0;
    lock(r);
    /* From now on executions are explicit. The seed-model collection of the
     * recordings is not run: other threads may be recording them right now;
     * each is sealed at its own buffer's submit. */
    atomic_store_explicit(&r->notified, true, memory_order_relaxed);
    /* lazily collect what finished (unless the app collects elsewhere:
     * VKPROF_SUBMIT_COLLECT_OWN), then start the new executions; each
     * re-submitted buffer's previous execution is read in submit_one_locked */
    if (ctx->desc.submit_collect != VKPROF_SUBMIT_COLLECT_OWN) {
        (void)collect_locked(ctx, &folded);
    }
    /* the executions start after this (the app's vkQueueSubmit follows) */
    uint64_t submit_ns = vkprof_host_now_ns();
    for (uint32_t i = 0; i < count; i++) {
        if (cmds[i] != VK_NULL_HANDLE) {
            submit_one_locked(ctx, cmds[i], step, submit_ns, &folded);
        }
    }
    if (folded > 0) {
        vkprof__cal_maybe_refresh(ctx);
    }
    unlock(r);
    return VKPROF_OK;
}

vkprof_result vkprof_cmd_submit_flow(vkprof_context ctx, uint32_t count,
                                     const VkCommandBuffer *cmds)
{
    if (ctx == NULL) {
        return VKPROF_DISABLED;
    }
    if (count > 0 && cmds == NULL) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT,
                            "submit flow: NULL command buffers");
    }
    uint64_t flow = vkprof__current_span();
    if (flow == 0 || !vkprof_active(ctx) || !vkprof__ring_mode(ctx) ||
        !atomic_load_explicit(&ctx->gpu.ring_ready, memory_order_acquire)) {
        return VKPROF_DISABLED;
    }
    vkprof_ring *r = ctx->gpu.ring;
    lock(r);
    for (uint32_t i = 0; i < count; i++) {
        tracker *t = cmds[i] != VK_NULL_HANDLE ? tracker_find(r, cmds[i], false) : NULL;
        if (t != NULL && t->sealed != NULL && t->sealed->exec_pending) {
            t->sealed->exec_flow = flow;
        }
    }
    unlock(r);
    return VKPROF_OK;
}

vkprof_result vkprof_count_calls(vkprof_context ctx, vkprof_phase phase, uint64_t n)
{
    if (ctx == NULL || !vkprof_active(ctx) || !vkprof__ring_mode(ctx) || ctx->gpu.ring == NULL) {
        return VKPROF_DISABLED;
    }
    if (!vkprof__phase_valid(ctx, phase)) {
        return vkprof__fail(ctx, VKPROF_ERROR_UNKNOWN_PHASE, "count_calls: phase %u unknown",
                            (unsigned)phase);
    }
    if (n == 0) {
        return VKPROF_OK;
    }
    /* calls that ran with no scope: the phase's calls and the unstamped
     * ones, as a call that sampling left out counts (each thread's own slot:
     * no lock prefix) */
    vkprof_ring *r = ctx->gpu.ring;
    calls_slot *mine = my_slot(r);
    if (mine != NULL) {
        own_add(&mine->phase[phase], n);
        own_add(&mine->unstamped, n);
    } else {
        add(&r->phase_calls[phase], n);
        add(&r->calls_unstamped, n);
    }
    return VKPROF_OK;
}

vkprof_result vkprof_cmd_discard(vkprof_context ctx, VkCommandBuffer cmd)
{
    if (ctx == NULL || !vkprof__ring_mode(ctx) || cmd == VK_NULL_HANDLE || ctx->gpu.ring == NULL) {
        return VKPROF_OK;
    }
    vkprof_ring *r = ctx->gpu.ring;
    tracker *t = tracker_find(r, cmd, false);
    if (t == NULL) {
        return VKPROF_OK;
    }
    uint64_t folded = 0, n = 0;
    lock(r);
    /* the recording that never ran: open scopes and recorded ones alike are
     * no samples, and their calls were never executed */
    for (uint32_t i = 0; i < t->depth && t->cur != NULL; i++) {
        if (t->open[i] & SKIP) {
            continue;
        }
        rscope *sc = &t->cur->scopes[t->open[i]];
        if (sc->phase < VKPROF_MAX_PHASES) {
            n++;
            atomic_fetch_sub_explicit(&r->phase_calls[sc->phase], 1, memory_order_relaxed);
            t->cur->live--;
        }
        sc->phase = VKPROF_MAX_PHASES;
        sc->state = SC_ENDED;
        sc->done = true;
    }
    t->depth = 0;
    if (t->cur != NULL) {
        for (uint64_t i = t->cur->head; i < t->cur->count; i++) {
            rscope *sc = &t->cur->scopes[i];
            if (!sc->done && sc->phase < VKPROF_MAX_PHASES) {
                n++;
                atomic_fetch_sub_explicit(&r->phase_calls[sc->phase], 1, memory_order_relaxed);
                sc->done = true;
            }
        }
        rec_calls_apply(r, t->cur, -1); /* its left-out calls never ran either */
        chunks_release(ctx, t->cur, t->cur->nchunks, false);
        rec_free(t->cur);
        t->cur = NULL;
    }
    atomic_fetch_sub_explicit(&ctx->gpu.scopes_recorded, n, memory_order_relaxed);
    add(&ctx->gpu.scopes_discarded, n);
    /* earlier recordings that were submitted ran: what is unread is lost */
    rec_retire(ctx, t->sealed, &ctx->gpu.lost_reset,
               "a command buffer was reset or freed before its execution was collected", &folded);
    t->sealed = NULL;
    t->boundary_valid = false;
    atomic_store_explicit(&t->rerecorded, false, memory_order_relaxed);
    atomic_store_explicit(&t->key, TOMBSTONE, memory_order_release);
    if (folded > 0) {
        vkprof__cal_maybe_refresh(ctx);
    }
    unlock(r);
    return VKPROF_OK;
}

vkprof_result vkprof_cmd_release(vkprof_context ctx, VkCommandBuffer cmd)
{
    if (ctx == NULL || !vkprof__ring_mode(ctx) || cmd == VK_NULL_HANDLE || ctx->gpu.ring == NULL) {
        return VKPROF_OK;
    }
    vkprof_ring *r = ctx->gpu.ring;
    tracker *t = tracker_find(r, cmd, false);
    if (t == NULL) {
        return VKPROF_OK;
    }
    uint64_t folded = 0;
    lock(r);
    drop_open(ctx, t);
    if (t->cur != NULL) {
        bool seed = !atomic_load_explicit(&r->notified, memory_order_relaxed);
        if (seed) {
            /* the seed's model: whatever finished is collected first */
            (void)rec_collect(ctx, t->cur, true, &folded);
        }
        uint64_t n = 0;
        for (uint64_t i = t->cur->head; i < t->cur->count; i++) {
            const rscope *sc = &t->cur->scopes[i];
            n += !sc->done && sc->phase < VKPROF_MAX_PHASES;
        }
        if (seed) {
            lose(ctx, &ctx->gpu.lost_reset, n,
                 "a command buffer was reset or freed before its scopes were collected");
        } else {
            lose(ctx, &ctx->gpu.lost_never_submitted, n,
                 "a command buffer was reset or freed with scopes never submitted");
        }
        chunks_release(ctx, t->cur, t->cur->nchunks, seed);
        rec_free(t->cur);
        t->cur = NULL;
    }
    rec_retire(ctx, t->sealed, &ctx->gpu.lost_reset,
               "a command buffer was reset or freed before its execution was collected", &folded);
    t->sealed = NULL;
    t->boundary_valid = false;
    atomic_store_explicit(&t->rerecorded, false, memory_order_relaxed);
    /* the entry is free for another buffer (freed handles must not fill the
     * table); a tombstone keeps the probe chains of the others intact */
    atomic_store_explicit(&t->key, TOMBSTONE, memory_order_release);
    if (folded > 0) {
        vkprof__cal_maybe_refresh(ctx);
    }
    unlock(r);
    return VKPROF_OK;
}

/* Every submission in the batch, in order, before the real call. */
VkResult vkprof_queue_submit(vkprof_context ctx, VkQueue queue, uint32_t count,
                             const VkSubmitInfo *submits, VkFence fence)
{
    if (ctx == NULL || ctx->vk.QueueSubmit == NULL || (count > 0 && submits == NULL)) {
        return VK_ERROR_INITIALIZATION_FAILED;
    }
    for (uint32_t i = 0; i < count; i++) {
        (void)vkprof_cmd_submit(ctx, queue, submits[i].commandBufferCount,
                                submits[i].pCommandBuffers);
    }
    return ctx->vk.QueueSubmit(queue, count, submits, fence);
}

VkResult vkprof_queue_submit2(vkprof_context ctx, VkQueue queue, uint32_t count,
                              const VkSubmitInfo2 *submits, VkFence fence)
{
    if (ctx == NULL || ctx->vk.QueueSubmit2 == NULL || (count > 0 && submits == NULL)) {
        return VK_ERROR_INITIALIZATION_FAILED;
    }
    for (uint32_t i = 0; i < count; i++) {
        for (uint32_t k = 0; k < submits[i].commandBufferInfoCount; k++) {
            VkCommandBuffer cb = submits[i].pCommandBufferInfos[k].commandBuffer;
            (void)vkprof_cmd_submit(ctx, queue, 1, &cb);
        }
    }
    return ctx->vk.QueueSubmit2(queue, count, submits, fence);
}

/* ---- turning off, destroy, stats ---- */

void vkprof__ring_on_disable(vkprof_context ctx)
{
    /* open scopes can no longer end; each tracker gives its up when next used */
    atomic_fetch_add_explicit(&ctx->gpu.enable_epoch, 1, memory_order_relaxed);
}

void vkprof__ring_destroy_collect(vkprof_context ctx, uint64_t *late, uint64_t *left)
{
    vkprof_ring *r = ctx->gpu.ring;
    *late = *left = 0;
    if (r == NULL || !atomic_load_explicit(&ctx->gpu.ring_ready, memory_order_acquire)) {
        return;
    }
    uint64_t folded = 0;
    lock(r);
    (void)collect_locked(ctx, &folded);
    uint64_t before_lost = atomic_load(&ctx->gpu.lost_never_submitted) +
                           atomic_load(&ctx->gpu.lost_reset) + atomic_load(&ctx->gpu.lost_misuse);
    for (uint32_t i = 0; i < TRACKERS; i++) {
        tracker *t = &r->trackers[i];
        if (atomic_load_explicit(&t->key, memory_order_relaxed) <= TOMBSTONE) {
            continue;
        }
        if (t->depth > 0) {
            drop_open(ctx, t);
        }
        if (t->cur != NULL) {
            uint64_t n = 0;
            for (uint64_t k = t->cur->head; k < t->cur->count; k++) {
                const rscope *sc = &t->cur->scopes[k];
                n += !sc->done && sc->phase < VKPROF_MAX_PHASES;
            }
            lose(ctx, &ctx->gpu.lost_never_submitted, n, "scopes were never submitted");
            chunks_release(ctx, t->cur, t->cur->nchunks,
                           !atomic_load_explicit(&r->notified, memory_order_relaxed));
            rec_free(t->cur);
            t->cur = NULL;
        }
        if (t->sealed != NULL) {
            rec_retire(ctx, t->sealed, &ctx->gpu.lost_never_submitted,
                       "an execution had not finished at destroy", &folded);
            t->sealed = NULL;
        }
    }
    *left = atomic_load(&ctx->gpu.lost_never_submitted) + atomic_load(&ctx->gpu.lost_reset) +
            atomic_load(&ctx->gpu.lost_misuse) - before_lost;
    *late = folded;
    unlock(r);
}

vkprof_result vkprof_get_timing_stats(vkprof_context ctx, vkprof_timing_stats *out)
{
    if (ctx == NULL || out == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    if (ctx->frozen != NULL) { /* an opened spool: what its last checkpoint says */
        *out = ctx->frozen->timing;
        return VKPROF_OK;
    }
    memset(out, 0, sizeof *out);
    out->mode = ctx->desc.timing_mode;
    bool ring = vkprof__ring_mode(ctx);
    out->ring_queries =
        ring ? (ctx->gpu.ring != NULL && ctx->gpu.ring->queries ? ctx->gpu.ring->queries
                                                                : ctx->desc.ring_queries)
             : 2u;
    out->sample_every = sample_every(ctx);
    out->rotate_scopes = ring ? ctx->desc.rotate_scopes : 0;
    out->rotate_first_calls = out->rotate_scopes > 0 && ctx->desc.rotate_first_calls;
    out->timed_steps = atomic_load(&ctx->gpu.timed_steps);
    out->scopes_recorded = atomic_load(&ctx->gpu.scopes_recorded);
    out->scopes_collected = atomic_load(&ctx->gpu.scopes_collected);
    out->lost_ring_full = atomic_load(&ctx->gpu.lost_ring_full);
    out->lost_overwritten = atomic_load(&ctx->gpu.lost_overwritten);
    out->lost_never_submitted = atomic_load(&ctx->gpu.lost_never_submitted);
    out->lost_reset = atomic_load(&ctx->gpu.lost_reset);
    out->lost_misuse = atomic_load(&ctx->gpu.lost_misuse);
    out->lost_backwards = atomic_load(&ctx->gpu.lost_backwards);
    out->lost_stale = atomic_load(&ctx->gpu.lost_stale);
    out->scopes_dropped = out->lost_ring_full + out->lost_overwritten + out->lost_never_submitted +
                          out->lost_reset + out->lost_misuse + out->lost_backwards +
                          out->lost_stale;
    out->submissions = atomic_load(&ctx->gpu.submissions);
    out->scopes_discarded = atomic_load(&ctx->gpu.scopes_discarded);
    out->samples = out->scopes_recorded + atomic_load(&ctx->gpu.extra_samples);
    if (ring) {
        uint64_t known = out->scopes_collected + out->scopes_dropped;
        out->scopes_pending = out->samples > known ? out->samples - known : 0;
    } else {
        /* one scope at a time: begun, ended or resolved and not yet folded */
        out->scopes_pending = ctx->gpu.state != VKPROF_SCOPE_IDLE;
    }
    out->stamps_written = atomic_load(&ctx->gpu.stamps_written);
    out->shared_stamps = atomic_load(&ctx->gpu.shared_stamps);
    out->host_reset = ctx->gpu.host_reset;
    vkprof_ring *r = ctx->gpu.ring;
    if (ring && r != NULL) {
        uint32_t np = atomic_load_explicit(&ctx->gpu.phase_count, memory_order_acquire);
        for (uint32_t i = 0; i < np && i < VKPROF_MAX_PHASES; i++) {
            out->calls_executed += calls_now(r, i);
        }
        out->calls_unstamped = calls_now(r, VKPROF_MAX_PHASES);
        if (out->rotate_scopes > 0) {
            uint64_t n = atomic_load_explicit(&r->rot_last_calls, memory_order_relaxed);
            out->rotate_cycles = atomic_load_explicit(&r->rot_cycles, memory_order_relaxed);
            out->rotate_calls_per_step = n;
            out->rotate_period = (n + out->rotate_scopes - 1) / out->rotate_scopes;
            out->rotate_changed_steps = atomic_load_explicit(&r->rot_changed, memory_order_relaxed);
        }
    } else if (!ring) {
        /* 2-slot: every call is a scope */
        out->calls_executed = out->scopes_recorded;
    }
    return VKPROF_OK;
}
