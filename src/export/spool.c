/* Spools (desc.trace_spool): a context's trace that outlives its process.
 *
 * Why a file-backed store. A profiler that writes its trace at exit loses it
 * when the process runs no more code: SIGKILL, a crash, _exit, an exec, or a
 * Ctrl-C whose handler exits at once. So the event store itself lives in a
 * file mapped MAP_SHARED: an event is in the page cache (and so in the file,
 * whatever becomes of the process) the moment it is written, with no system
 * call on the span's or the collection's path. The rest of what a trace
 * needs (names, calibration points, the host clock, the counts) is small and
 * changes rarely; it is copied into the file at each checkpoint (every
 * vkprof_collect, vkprof_step and vkprof_spool_sync that changed something,
 * and at vkprof_destroy), into one of two slots in turn, so that a process
 * killed in the middle of a checkpoint leaves the other slot whole. Another
 * process (vkprof run, vkprof recover) opens the file afterwards with
 * vkprof_spool_open() and writes the trace through the same exporters.
 *
 * The file (docs/trace-format.md, "Spools"):
 *   spool_head        magic, version, the sizes of everything below, who
 *                     wrote it (pid, exe, boot id, host, label), its state
 *                     and the number of the last checkpoint
 *   spool_ckpt[2]     the checkpoints; slot = number % 2; a slot is whole
 *                     when its seq_begin equals its seq_end
 *   events[capacity]  the store's events, in place (timeline/store.c)
 *   annots[...]       the store's annotation records, in place
 * Every part starts on a page. The reader trusts nothing in it: every size,
 * count and offset is checked against the file and the types it was built
 * with (the layout carries sizeof of each record: another build's spool is
 * refused, not misread).
 *
 * fork: the child gets the mapping too, and a write from it would land in
 * the parent's file. An atfork handler maps every spool of the child again,
 * privately (copy on write), over the same address: the child's context
 * keeps working in memory, and the parent's file is the parent's alone. */
#define _GNU_SOURCE
#include "base/base.h"
#include "clock/clock.h"
#include "timeline/store.h"
#include "gpu/gpu.h"
#include "host/host.h"

#include "export/export.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SPOOL_MAGIC "VKPSPOOL"
#define SPOOL_VERSION 4u /* 3: lost_stale, the calibration check; 4: first calls */
#define SPOOL_THREADS 1024u
#define SPOOL_PAGE ((uint64_t)4096)
#define SPOOL_ENDIAN UINT32_C(0x01020304)

/* One checkpoint: what a trace and a snapshot need beyond the events. */
typedef struct spool_ckpt {
    _Atomic uint64_t seq_begin; /* the checkpoint's number, written first */
    uint64_t mono_ns, real_ns, boot_ns, clock_err_ns;
    /* the context */
    vkprof_device_info info;
    char driver_name[VK_MAX_DRIVER_NAME_SIZE + VK_MAX_DRIVER_INFO_SIZE + 2];
    uint32_t queue_family, queue_index;
    uint64_t valid_mask;
    uint64_t device_id;
    uint32_t timing_mode, sample_every, rotate_scopes, ring_queries;
    uint32_t host_level, shared_boundaries, active, requested;
    uint32_t host_reset, trace_format;
    uint32_t trace_gpu_busy; /* desc.trace_gpu_busy (was padding: 0, UNKNOWN, in older spools) */
    uint32_t pad1;
    vkprof_timing_stats timing;
    vkprof_error_counts errors;
    /* GPU calibration */
    uint32_t cal_method, cal_raw_bridge, cal_count, cal_inconsistent;
    uint64_t cal_taken, cal_last_ns;
    int64_t cal_inconsistent_ns;
    uint64_t cal_win_checks, cal_win_violations;
    char cal_extension[64];
    vkprof_cal_point cal_points[VKPROF_CAL_POINTS];
    /* the host clock of spans */
    uint32_t hclk_kind, hclk_count;
    uint64_t hclk_nominal_hz, hclk_rate_num, hclk_rate_den, hclk_taken, hclk_residual_ns;
    char hclk_source[32];
    char hclk_reason[160];
    vkprof_cal_point hclk_points[VKPROF_HCLK_POINTS];
    /* the store */
    uint64_t trace_next, trace_dropped, trace_full_at_ns, annot_next, annot_dropped;
    uint64_t trace_start_ns;
    /* the store's next index when the GPU sums were read (under the fold
     * lock: every GPU event below it is in them, none above) and just before
     * the bucket sums were: what an opened spool folds in after them */
    uint64_t gpu_next, span_next;
    /* buckets and phases */
    uint64_t steps;
    uint32_t bucket_count, phase_count;
    struct spool_bucket {
        char name[VKPROF_MAX_NAME + 1];
        uint64_t hot, calls, total_ticks;
    } buckets[VKPROF_MAX_BUCKETS];
    vkprof_phase_acc phases[VKPROF_MAX_PHASES];
    uint64_t phase_calls[VKPROF_MAX_PHASES];
    /* the process's thread names (the tracks of its host threads) */
    uint32_t thread_count, pad3;
    char thread_names[SPOOL_THREADS][64];
    _Atomic uint64_t seq_end; /* the same number, written last */
} spool_ckpt;

typedef struct spool_head {
    char magic[8];
    uint32_t version, endian;
    /* the layout */
    uint32_t head_size, ckpt_size, event_size, annot_size;
    uint32_t capacity, annot_capacity, keep_last, pad0;
    uint64_t ckpt_off[2], events_off, annots_off, file_size;
    /* who wrote it */
    int64_t pid;
    uint64_t created_ns;
    char exe[256], label[128], boot_id[64], host[256];
    /* where it stands */
    _Atomic uint64_t seq; /* the last whole checkpoint; 0: none yet */
    _Atomic uint32_t state;
    uint32_t pad1;
    _Atomic uint64_t closed_ns;
} spool_head;

struct vkprof_spool_T {
    uint8_t *map;
    size_t map_len;
    int fd;
    spool_head *head;
    spool_ckpt *ck[2];
    pthread_mutex_t lock;
    /* what each slot holds already (the writer's own bookkeeping) */
    uint64_t slot_cal_taken[2], slot_hclk_taken[2];
    uint32_t slot_cal_count[2], slot_hclk_count[2], slot_threads[2];
    uint64_t last_sig; /* what the last checkpoint saw: nothing new, no checkpoint */
    bool detached;     /* the child of a fork: its copy is private */
    char path[1024];
    vkprof_context ctx;
    struct vkprof_spool_T *next; /* live writers, for the fork handler */
    vkprof_frozen *frozen;       /* an opened spool's figures */
};

/* ---- the live writers, for fork ---------------------------------------- */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vkprof_spool_T *g_live;
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;

static void atfork_prepare(void)
{
    pthread_mutex_lock(&g_lock);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&g_lock);
}

/* The child: every spool mapped again over itself, privately. */
static void atfork_child(void)
{
    for (struct vkprof_spool_T *sp = g_live; sp != NULL; sp = sp->next) {
        if (sp->detached || sp->map == NULL) {
            continue;
        }
        void *p =
            mmap(sp->map, sp->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, sp->fd, 0);
        if (p == MAP_FAILED) {
            /* cannot be made private: the child must not write it at all */
            (void)mprotect(sp->map, sp->map_len, PROT_READ);
            atomic_store(&sp->ctx->trace.on, 0);
        }
        sp->detached = true;
        close(sp->fd);
        sp->fd = -1;
    }
    pthread_mutex_init(&g_lock, NULL);
}

static void atfork_register(void)
{
    (void)pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* ---- small helpers ------------------------------------------------------ */

static uint64_t round_page(uint64_t v)
{
    return (v + SPOOL_PAGE - 1) / SPOOL_PAGE * SPOOL_PAGE;
}

static uint64_t read_clock(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0) {
        return 0;
    }
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = src != NULL ? strnlen(src, cap - 1) : 0;
    if (n > 0) {
        memcpy(dst, src, n);
    }
    dst[n] = '\0';
}

static void exe_name(char *out, size_t cap)
{
    char path[4096];
    ssize_t k = readlink("/proc/self/exe", path, sizeof path - 1);
    const char *base = "";
    if (k > 0) {
        path[k] = '\0';
        const char *s = strrchr(path, '/');
        base = s != NULL ? s + 1 : path;
    }
    copy_str(out, cap, base);
}

/* ---- writing ------------------------------------------------------------- */

static void set_reason(vkprof_context ctx, const char *fmt, const char *what, int err)
{
    snprintf(ctx->spool_reason, sizeof ctx->spool_reason, fmt, what, strerror(err));
    vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_ERROR_IO,
                "trace spool '%s': %s; the trace store stays in memory (what was recorded is "
                "lost if the process ends without writing its trace)",
                ctx->spool_path, ctx->spool_reason);
}

vkprof_result vkprof__spool_create(vkprof_context ctx)
{
    const char *path = ctx->spool_path;
    const uint32_t cap = ctx->desc.trace_capacity; /* resolved: never 0 */
    const uint32_t acap = vkprof__trace_annot_capacity(cap);
    const uint64_t head_len = round_page(sizeof(spool_head));
    const uint64_t ck_len = round_page(sizeof(spool_ckpt));
    const uint64_t ev_off = head_len + 2 * ck_len;
    const uint64_t an_off = ev_off + round_page((uint64_t)cap * sizeof(vkprof_event));
    const uint64_t len = an_off + round_page((uint64_t)acap * sizeof(vkprof_annot));
    if (len > (uint64_t)SIZE_MAX / 2) {
        set_reason(ctx, "%s: %s", "too large for this process", EFBIG);
        return VKPROF_OK;
    }
    /* never an existing file: a spool is this context's alone */
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) {
        set_reason(ctx, "%s: %s", "cannot create the file", errno);
        return VKPROF_OK;
    }
    /* the whole size now: a full disk is found here, not as a SIGBUS later */
    int e = posix_fallocate(fd, 0, (off_t)len);
    if (e != 0) {
        set_reason(ctx, "%s: %s", "cannot reserve its size", e);
        close(fd);
        unlink(path);
        return VKPROF_OK;
    }
    uint8_t *map =
        mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (map == MAP_FAILED) {
        set_reason(ctx, "%s: %s", "cannot map it", errno);
        close(fd);
        unlink(path);
        return VKPROF_OK;
    }
    struct vkprof_spool_T *sp = calloc(1, sizeof *sp);
    if (sp == NULL) {
        munmap(map, (size_t)len);
        close(fd);
        unlink(path);
        return VKPROF_ERROR_OUT_OF_MEMORY;
    }
    sp->map = map;
    sp->map_len = (size_t)len;
    sp->fd = fd;
    sp->ctx = ctx;
    copy_str(sp->path, sizeof sp->path, path);
    pthread_mutex_init(&sp->lock, NULL);
    spool_head *h = (spool_head *)(void *)map;
    sp->head = h;
    sp->ck[0] = (spool_ckpt *)(void *)(map + head_len);
    sp->ck[1] = (spool_ckpt *)(void *)(map + head_len + ck_len);
    h->version = SPOOL_VERSION;
    h->endian = SPOOL_ENDIAN;
    h->head_size = (uint32_t)sizeof(spool_head);
    h->ckpt_size = (uint32_t)sizeof(spool_ckpt);
    h->event_size = (uint32_t)sizeof(vkprof_event);
    h->annot_size = (uint32_t)sizeof(vkprof_annot);
    h->capacity = cap;
    h->annot_capacity = acap;
    h->keep_last = ctx->desc.trace_keep == VKPROF_TRACE_KEEP_LAST;
    h->ckpt_off[0] = head_len;
    h->ckpt_off[1] = head_len + ck_len;
    h->events_off = ev_off;
    h->annots_off = an_off;
    h->file_size = len;
    h->pid = (int64_t)getpid();
    h->created_ns = vkprof_host_now_ns();
    exe_name(h->exe, sizeof h->exe);
    copy_str(h->label, sizeof h->label, ctx->trace_label);
    vkprof__process_identity(h->boot_id, sizeof h->boot_id, h->host, sizeof h->host);
    atomic_store(&h->state, VKPROF_SPOOL_OPEN);
    /* the magic last: a file without it was never a spool */
    atomic_thread_fence(memory_order_release);
    memcpy(h->magic, SPOOL_MAGIC, 8);

    vkprof_result r = vkprof__trace_attach(ctx, (vkprof_event *)(void *)(map + ev_off), cap,
                                           (vkprof_annot *)(void *)(map + an_off), acap);
    if (r != VKPROF_OK) {
        munmap(map, (size_t)len);
        close(fd);
        unlink(path);
        pthread_mutex_destroy(&sp->lock);
        free(sp);
        return r;
    }
    ctx->spool = sp;
    pthread_once(&g_atfork_once, atfork_register);
    pthread_mutex_lock(&g_lock);
    sp->next = g_live;
    g_live = sp;
    pthread_mutex_unlock(&g_lock);
    return VKPROF_OK;
}

/* What a checkpoint would change; equal to the last: nothing to write. */
static uint64_t hash_u64s(const uint64_t *v, size_t n)
{
    uint64_t s = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < n; i++) {
        s = (s ^ v[i]) * UINT64_C(0x100000001b3);
    }
    return s;
}

/* What a checkpoint holds changed: events, steps, scopes, losses, the
 * calibration and host clock points, names. Read from the counters
 * themselves: the timing stats' sums over every thread's slots cost a small
 * decode's step more than the rest of the checkpoint (issue 26). */
static uint64_t signature(vkprof_context ctx)
{
    const vkprof_gpu *gp = &ctx->gpu;
    const uint64_t v[] = {atomic_load(&ctx->trace.next),
                          atomic_load(&ctx->trace.annot_next),
                          atomic_load(&ctx->trace.dropped),
                          atomic_load(&ctx->trace.annot_dropped),
                          vkprof__steps_done(ctx),
                          atomic_load(&gp->phase_count),
                          atomic_load(&ctx->host.bucket_count),
                          ctx->cal.taken,
                          ctx->hclk.taken,
                          atomic_load(&gp->scopes_recorded),
                          atomic_load(&gp->extra_samples),
                          atomic_load(&gp->scopes_collected),
                          atomic_load(&gp->lost_ring_full),
                          atomic_load(&gp->lost_overwritten),
                          atomic_load(&gp->lost_never_submitted),
                          atomic_load(&gp->lost_reset),
                          atomic_load(&gp->lost_misuse),
                          atomic_load(&gp->lost_backwards),
                          atomic_load(&gp->lost_stale),
                          atomic_load(&gp->submissions),
                          vkprof__thread_count()};
    return hash_u64s(v, sizeof v / sizeof v[0]);
}

static void fill(vkprof_context ctx, struct vkprof_spool_T *sp, spool_ckpt *c, int slot)
{
    c->mono_ns = read_clock(CLOCK_MONOTONIC);
    c->boot_ns = read_clock(CLOCK_BOOTTIME);
    c->real_ns = read_clock(CLOCK_REALTIME);
    uint64_t after = read_clock(CLOCK_MONOTONIC);
    c->clock_err_ns = (after - c->mono_ns + 1) / 2;
    c->mono_ns += (after - c->mono_ns) / 2;
    c->info = ctx->info;
    copy_str(c->driver_name, sizeof c->driver_name, ctx->driver_name);
    c->queue_family = ctx->desc.queue_family_index;
    c->queue_index = ctx->desc.queue_index;
    c->valid_mask = ctx->valid_mask;
    c->device_id = (uint64_t)(uintptr_t)ctx->desc.device;
    c->timing_mode = ctx->desc.timing_mode;
    c->sample_every = ctx->desc.sample_every;
    c->rotate_scopes = ctx->desc.rotate_scopes;
    c->ring_queries = ctx->desc.ring_queries;
    c->host_level = (uint32_t)ctx->desc.host_level;
    c->shared_boundaries = ctx->desc.shared_boundaries;
    c->active = ctx->head.active != 0;
    c->requested = ctx->requested;
    c->host_reset = ctx->gpu.host_reset;
    c->trace_format = ctx->desc.trace_format;
    c->trace_gpu_busy = (uint32_t)ctx->desc.trace_gpu_busy;
    /* folds, calibration points and phase calls hold still meanwhile: the
     * counts, the phase sums and gpu_next describe one moment */
    vkprof__gpu_lock(ctx);
    vkprof_get_timing_stats(ctx, &c->timing);
    vkprof__errors_read(ctx, &c->errors);
    c->gpu_next = atomic_load(&ctx->trace.next);
    uint32_t np = atomic_load_explicit(&ctx->gpu.phase_count, memory_order_acquire);
    np = np > VKPROF_MAX_PHASES ? VKPROF_MAX_PHASES : np;
    c->phase_count = np;
    memcpy(c->phases, ctx->gpu.phases, np * sizeof *c->phases);
    for (uint32_t i = 0; i < np; i++) {
        c->phase_calls[i] = vkprof__ring_phase_calls(ctx, i);
    }
    const vkprof_cal *cal = &ctx->cal;
    c->cal_method = (uint32_t)cal->method;
    c->cal_raw_bridge = cal->raw_bridge;
    copy_str(c->cal_extension, sizeof c->cal_extension, cal->extension);
    c->cal_last_ns = cal->last_ns;
    c->cal_inconsistent = cal->inconsistent;
    c->cal_inconsistent_ns = cal->inconsistent_ns;
    c->cal_win_checks = cal->win_checks;
    c->cal_win_violations = cal->win_violations;
    uint32_t ncal = cal->points != NULL ? cal->count : 0;
    ncal = ncal > VKPROF_CAL_POINTS ? VKPROF_CAL_POINTS : ncal;
    if (cal->taken != sp->slot_cal_taken[slot] || ncal != sp->slot_cal_count[slot]) {
        memcpy(c->cal_points, cal->points, ncal * sizeof *c->cal_points);
        sp->slot_cal_taken[slot] = cal->taken;
        sp->slot_cal_count[slot] = ncal;
    }
    c->cal_count = ncal;
    c->cal_taken = cal->taken;
    vkprof__gpu_unlock(ctx);

    /* the host clock, under its own lock; its points only when they changed */
    uint64_t taken = 0, num = 1, den = 1, resid = 0;
    uint32_t nh = vkprof__hclk_copy(&ctx->hclk, NULL, &taken, &num, &den, &resid);
    if (taken != sp->slot_hclk_taken[slot] || nh != sp->slot_hclk_count[slot]) {
        nh = vkprof__hclk_copy(&ctx->hclk, c->hclk_points, &taken, &num, &den, &resid);
        sp->slot_hclk_taken[slot] = taken;
        sp->slot_hclk_count[slot] = nh;
    }
    c->hclk_kind = (uint32_t)ctx->hclk.kind;
    c->hclk_count = nh;
    c->hclk_taken = taken;
    c->hclk_rate_num = num;
    c->hclk_rate_den = den;
    c->hclk_residual_ns = resid;
    c->hclk_nominal_hz = ctx->hclk.nominal_hz;
    copy_str(c->hclk_source, sizeof c->hclk_source, ctx->hclk.source);
    copy_str(c->hclk_reason, sizeof c->hclk_reason, ctx->hclk.reason);

    const vkprof_trace *t = &ctx->trace;
    c->trace_next = atomic_load(&t->next);
    c->trace_dropped = atomic_load(&t->dropped);
    c->trace_full_at_ns = atomic_load(&t->full_at_ns);
    c->annot_next = atomic_load(&t->annot_next);
    c->annot_dropped = atomic_load(&t->annot_dropped);
    c->trace_start_ns = t->start_ns;

    c->steps = vkprof__steps_done(ctx);
    c->span_next = atomic_load(&t->next);
    uint32_t nb = atomic_load_explicit(&ctx->host.bucket_count, memory_order_acquire);
    nb = nb > VKPROF_MAX_BUCKETS ? VKPROF_MAX_BUCKETS : nb;
    c->bucket_count = nb;
    for (uint32_t i = 0; i < nb; i++) {
        const vkprof_bucket_slot *b = &ctx->host.buckets[i];
        copy_str(c->buckets[i].name, sizeof c->buckets[i].name, b->name);
        c->buckets[i].hot = b->hot;
        vkprof__bucket_sums(ctx, i, &c->buckets[i].calls, &c->buckets[i].total_ticks);
    }

    /* the thread names a slot does not hold yet (names are set once) */
    uint32_t nt = vkprof__thread_count();
    nt = nt > SPOOL_THREADS ? SPOOL_THREADS : nt;
    for (uint32_t tid = sp->slot_threads[slot] + 1; tid <= nt; tid++) {
        const char *n = vkprof__thread_name((uint16_t)tid);
        if (n == NULL) {
            break; /* not named yet: looked at again next time */
        }
        copy_str(c->thread_names[tid - 1], sizeof c->thread_names[0], n);
        sp->slot_threads[slot] = tid;
    }
    c->thread_count = nt;
}

static void checkpoint_locked(vkprof_context ctx, struct vkprof_spool_T *sp, bool force)
{
    const uint64_t sig = signature(ctx);
    if (!force && sig == sp->last_sig) {
        return;
    }
    spool_head *h = sp->head;
    const uint64_t seq = atomic_load_explicit(&h->seq, memory_order_relaxed) + 1;
    const int slot = (int)(seq & 1u);
    spool_ckpt *c = sp->ck[slot];
    atomic_store_explicit(&c->seq_begin, seq, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    fill(ctx, sp, c, slot);
    atomic_store_explicit(&c->seq_end, seq, memory_order_release);
    atomic_store_explicit(&h->seq, seq, memory_order_release);
    sp->last_sig = sig;
}

void vkprof__spool_checkpoint(vkprof_context ctx)
{
    struct vkprof_spool_T *sp = ctx->spool;
    if (sp == NULL || ctx->offline || sp->detached) {
        return;
    }
    pthread_mutex_lock(&sp->lock);
    checkpoint_locked(ctx, sp, false);
    pthread_mutex_unlock(&sp->lock);
}

void vkprof__spool_close(vkprof_context ctx)
{
    struct vkprof_spool_T *sp = ctx->spool;
    if (sp == NULL) {
        return;
    }
    if (!ctx->offline) {
        pthread_mutex_lock(&g_lock);
        for (struct vkprof_spool_T **at = &g_live; *at != NULL; at = &(*at)->next) {
            if (*at == sp) {
                *at = sp->next;
                break;
            }
        }
        pthread_mutex_unlock(&g_lock);
        if (!sp->detached) {
            pthread_mutex_lock(&sp->lock);
            checkpoint_locked(ctx, sp, true);
            atomic_store(&sp->head->closed_ns, vkprof_host_now_ns());
            atomic_store_explicit(&sp->head->state, VKPROF_SPOOL_CLOSED, memory_order_release);
            pthread_mutex_unlock(&sp->lock);
            /* the data is in the page cache, which outlives the process:
             * no fsync (that guards against a lost machine, not a lost
             * process, and would stall the app's teardown) */
        }
    }
    /* the store's memory goes with the mapping */
    atomic_store(&ctx->trace.on, 0);
    ctx->trace.events = NULL;
    ctx->trace.annots = NULL;
    munmap(sp->map, sp->map_len);
    if (sp->fd >= 0) {
        close(sp->fd);
    }
    pthread_mutex_destroy(&sp->lock);
    if (sp->frozen != NULL) {
        free(sp->frozen->thread_names);
        free(sp->frozen);
    }
    free(sp);
    ctx->spool = NULL;
}

vkprof_result vkprof_spool_sync(vkprof_context ctx)
{
    if (ctx == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    if (ctx->spool == NULL || ctx->offline || ctx->spool->detached) {
        return VKPROF_DISABLED;
    }
    vkprof__spool_checkpoint(ctx);
    return VKPROF_OK;
}

/* ---- status -------------------------------------------------------------- */

vkprof_result vkprof_spool_status(vkprof_context ctx, vkprof_spool_info *out)
{
    if (ctx == NULL || out == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    memset(out, 0, sizeof *out);
    struct vkprof_spool_T *sp = ctx->spool;
    if (sp == NULL) {
        out->state = VKPROF_SPOOL_NONE;
        copy_str(out->reason, sizeof out->reason, ctx->spool_reason);
        return VKPROF_OK;
    }
    const spool_head *h = sp->head;
    out->state = sp->detached ? VKPROF_SPOOL_DETACHED : (vkprof_spool_state)atomic_load(&h->state);
    out->pid = h->pid;
    copy_str(out->exe, sizeof out->exe, h->exe);
    copy_str(out->label, sizeof out->label, h->label);
    out->created_ns = h->created_ns;
    out->closed_ns = atomic_load(&h->closed_ns);
    const uint64_t seq = atomic_load_explicit(&h->seq, memory_order_acquire);
    out->checkpoints = seq;
    if (seq > 0) {
        const spool_ckpt *c = sp->ck[seq & 1u];
        out->checkpoint_ns = c->mono_ns;
        uint64_t next = atomic_load(&ctx->trace.next);
        out->events_after_checkpoint = next > c->trace_next ? next - c->trace_next : 0;
    }
    return VKPROF_OK;
}

/* ---- reading ------------------------------------------------------------- */

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        if (err != NULL && errcap > 0) {                                                           \
            snprintf(err, errcap, __VA_ARGS__);                                                    \
        }                                                                                          \
        goto fail;                                                                                 \
    } while (0)

/* The events claimed, from what the slots hold: the newest published
 * event's index + 1, at least what the last checkpoint counted. */
static uint64_t scan_next(const vkprof_event *ev, uint32_t cap, bool keep_last, uint64_t at_least)
{
    uint64_t next = 0;
    for (uint32_t s = 0; s < cap; s++) {
        uint32_t r = atomic_load_explicit(&((vkprof_event *)&ev[s])->ready, memory_order_acquire);
        if (r == 0 || (!keep_last && r != 1)) {
            continue;
        }
        uint64_t i = (uint64_t)(r - 1u) * cap + s;
        if (i + 1 > next) {
            next = i + 1;
        }
    }
    return next > at_least ? next : at_least;
}

/* The event of store index i, or NULL where it was never published or was
 * overwritten since (keep last). */
static const vkprof_event *event_at(const vkprof_trace *t, uint64_t i)
{
    const vkprof_event *e = &t->events[i % t->capacity];
    uint32_t r = atomic_load_explicit(&((vkprof_event *)e)->ready, memory_order_acquire);
    return r != 0 && (uint64_t)(r - 1u) == i / t->capacity ? e : NULL;
}

/* The events published after the last checkpoint read its sums (a process
 * that died in a collection, or between a span's end and the next
 * checkpoint): into the sums, so that the counts, the phase table and the
 * events say the same. GPU events are exact (gpu_next was read under the
 * fold lock); a span that ended on another thread in the instant between
 * span_next and the bucket sums being read can count twice, as in any live
 * read of sums that threads are adding to. */
static void fold_after(vkprof_context ctx, vkprof_frozen *fz, const spool_ckpt *c)
{
    const vkprof_trace *t = &ctx->trace;
    const uint64_t next = atomic_load(&t->next);
    const uint64_t oldest = t->keep_last && next > t->capacity ? next - t->capacity : 0;
    const uint64_t lim = t->keep_last ? next : (next < t->capacity ? next : t->capacity);
    const uint32_t np = atomic_load(&ctx->gpu.phase_count);
    const uint32_t nb = atomic_load(&ctx->host.bucket_count);
    uint64_t from = c->gpu_next < c->span_next ? c->gpu_next : c->span_next;
    from = from < oldest ? oldest : from;
    uint64_t steps = vkprof__steps_done(ctx);
    for (uint64_t i = from; i < lim; i++) {
        const vkprof_event *e = event_at(t, i);
        if (e == NULL) {
            continue;
        }
        if (e->kind == VKPROF_EV_GPU && i >= c->gpu_next && e->name < np) {
            vkprof__phase_fold(ctx, e->name, (e->end - e->start) & ctx->valid_mask, false);
            vkprof_timing_stats *ts = &fz->timing;
            ts->scopes_collected++;
            if (ts->scopes_pending > 0) {
                ts->scopes_pending--;
            } else { /* recorded after the checkpoint too */
                ts->samples++;
                ts->scopes_recorded++;
                ts->calls_executed++;
                fz->phase_calls[e->name]++;
            }
        } else if (e->kind == VKPROF_EV_SPAN && i >= c->span_next && e->name < nb) {
            vkprof_bucket_slot *b = &ctx->host.buckets[e->name];
            atomic_fetch_add(&b->calls, 1);
            atomic_fetch_add(&b->total_ticks, e->end >= e->start ? e->end - e->start : 0);
        } else if (e->kind == VKPROF_EV_STEP && e->step > steps) {
            steps = e->step;
        }
    }
    vkprof__steps_set(ctx, steps);
}

/* The static name a source of the host clock goes by (the context points at
 * one of these), from the spool's copy. */
static const char *hclk_source_name(const char *s)
{
    static const char *const known[] = {"tsc", "cntvct_el0", "CLOCK_MONOTONIC", "simulated"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(s, known[i]) == 0) {
            return known[i];
        }
    }
    return "unknown";
}

static const char *cal_extension_name(const char *s)
{
    static const char *const known[] = {"VK_KHR_calibrated_timestamps",
                                        "VK_EXT_calibrated_timestamps"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(s, known[i]) == 0) {
            return known[i];
        }
    }
    return "";
}

/* A string field of the file: NUL-terminated within its array. */
static bool terminated(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

vkprof_result vkprof_spool_open(const char *path, vkprof_context *out, char *err, size_t errcap)
{
    if (out == NULL || path == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    *out = NULL;
    if (err != NULL && errcap > 0) {
        err[0] = '\0';
    }
    int fd = -1;
    uint8_t *map = MAP_FAILED;
    size_t len = 0;
    vkprof_context ctx = NULL;
    struct vkprof_spool_T *sp = NULL;
    vkprof_frozen *fz = NULL;

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        FAIL("%s: cannot open: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        FAIL("%s: not a regular file", path);
    }
    if ((uint64_t)st.st_size < sizeof(spool_head) || (uint64_t)st.st_size > (UINT64_C(1) << 40)) {
        FAIL("%s: %lld bytes: not a spool", path, (long long)st.st_size);
    }
    len = (size_t)st.st_size;
    map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        FAIL("%s: cannot map: %s", path, strerror(errno));
    }
    const spool_head *h = (const spool_head *)(const void *)map;
    if (memcmp(h->magic, SPOOL_MAGIC, 8) != 0) {
        FAIL("%s: not a vkprof spool (no magic)", path);
    }
    if (h->version != SPOOL_VERSION || h->endian != SPOOL_ENDIAN) {
        FAIL("%s: spool version %u, byte order %#x: this vkprof reads version %u", path, h->version,
             h->endian, SPOOL_VERSION);
    }
    if (h->head_size != sizeof(spool_head) || h->ckpt_size != sizeof(spool_ckpt) ||
        h->event_size != sizeof(vkprof_event) || h->annot_size != sizeof(vkprof_annot)) {
        FAIL("%s: written by another build of vkprof (record sizes %u/%u/%u/%u, here "
             "%zu/%zu/%zu/%zu)",
             path, h->head_size, h->ckpt_size, h->event_size, h->annot_size, sizeof(spool_head),
             sizeof(spool_ckpt), sizeof(vkprof_event), sizeof(vkprof_annot));
    }
    if (h->capacity == 0 || h->capacity > (1u << 28) || h->annot_capacity == 0 ||
        h->annot_capacity > (1u << 28) || h->file_size != (uint64_t)st.st_size ||
        h->ckpt_off[0] < sizeof(spool_head) ||
        h->ckpt_off[1] < h->ckpt_off[0] + sizeof(spool_ckpt) ||
        h->events_off < h->ckpt_off[1] + sizeof(spool_ckpt) ||
        h->annots_off < h->events_off + (uint64_t)h->capacity * sizeof(vkprof_event) ||
        h->file_size < h->annots_off + (uint64_t)h->annot_capacity * sizeof(vkprof_annot) ||
        h->ckpt_off[0] % 8 || h->ckpt_off[1] % 8 || h->events_off % 8 || h->annots_off % 8) {
        FAIL("%s: its layout does not fit the file (%llu bytes)", path,
             (unsigned long long)st.st_size);
    }
    if (!terminated(h->exe, sizeof h->exe) || !terminated(h->label, sizeof h->label) ||
        !terminated(h->boot_id, sizeof h->boot_id) || !terminated(h->host, sizeof h->host)) {
        FAIL("%s: a damaged header (a name without its end)", path);
    }
    /* the newest whole checkpoint */
    const uint64_t seq = atomic_load_explicit(&((spool_head *)h)->seq, memory_order_acquire);
    const spool_ckpt *c = NULL;
    for (uint64_t s = seq; s + 2 > seq && s > 0 && c == NULL; s--) {
        const spool_ckpt *k = (const spool_ckpt *)(const void *)(map + h->ckpt_off[s & 1u]);
        if (atomic_load(&((spool_ckpt *)k)->seq_begin) == s &&
            atomic_load(&((spool_ckpt *)k)->seq_end) == s) {
            c = k;
        }
    }
    if (c == NULL) {
        FAIL("%s: no whole checkpoint (the process ended before its first one)", path);
    }
    if (c->phase_count > VKPROF_MAX_PHASES || c->bucket_count > VKPROF_MAX_BUCKETS ||
        c->cal_count > VKPROF_CAL_POINTS || c->hclk_count > VKPROF_HCLK_POINTS ||
        c->thread_count > SPOOL_THREADS || c->cal_method > VKPROF_CALIBRATION_BRACKET ||
        c->hclk_kind > VKPROF_HCLK_SIM || c->timing_mode > VKPROF_TIMING_RING ||
        !terminated(c->driver_name, sizeof c->driver_name) ||
        !terminated(c->cal_extension, sizeof c->cal_extension) ||
        !terminated(c->hclk_source, sizeof c->hclk_source) ||
        !terminated(c->hclk_reason, sizeof c->hclk_reason) ||
        !terminated(c->info.device_name, sizeof c->info.device_name)) {
        FAIL("%s: checkpoint %llu is damaged (a count or a name out of range)", path,
             (unsigned long long)seq);
    }

    ctx = calloc(1, sizeof *ctx);
    sp = calloc(1, sizeof *sp);
    fz = calloc(1, sizeof *fz);
    if (ctx == NULL || sp == NULL || fz == NULL) {
        FAIL("%s: out of memory", path);
    }
    ctx->offline = true;
    ctx->head.active = 0;
    /* the desc, as far as the readers need it */
    memset(&ctx->desc, 0, sizeof ctx->desc);
    ctx->desc.log_level = VKPROF_LOG_WARN;
    ctx->desc.queue_family_index = c->queue_family;
    ctx->desc.queue_index = c->queue_index;
    ctx->desc.timing_mode = (vkprof_timing_mode)c->timing_mode;
    ctx->desc.sample_every = c->sample_every;
    ctx->desc.rotate_scopes = c->rotate_scopes;
    ctx->desc.ring_queries = c->ring_queries;
    ctx->desc.shared_boundaries = c->shared_boundaries != 0;
    ctx->desc.host_level = (vkprof_host_level)c->host_level;
    ctx->desc.trace_capacity = h->capacity;
    ctx->desc.trace_keep = h->keep_last ? VKPROF_TRACE_KEEP_LAST : VKPROF_TRACE_KEEP_FIRST;
    ctx->desc.trace_gpu_busy = c->trace_gpu_busy <= VKPROF_FEATURE_DISABLED
                                   ? (vkprof_feature)c->trace_gpu_busy
                                   : VKPROF_FEATURE_DISABLED;
    ctx->desc.trace_format = c->trace_format <= VKPROF_TRACE_FORMAT_BOTH
                                 ? (vkprof_trace_format)c->trace_format
                                 : VKPROF_TRACE_FORMAT_BY_PATH;
    ctx->desc.device = (VkDevice)(uintptr_t)c->device_id;
    copy_str(ctx->trace_label, sizeof ctx->trace_label, h->label);
    ctx->desc.trace_label = ctx->trace_label;
    ctx->info = c->info;
    copy_str(ctx->driver_name, sizeof ctx->driver_name, c->driver_name);
    ctx->valid_mask = c->valid_mask;
    ctx->requested = c->requested != 0;
    ctx->gpu.host_reset = c->host_reset != 0;
    /* it times nothing: no span, no scope, whatever is called on it */
    __atomic_store_n(&ctx->head.host_level, (int)VKPROF_HOST_OFF, __ATOMIC_RELAXED);

    /* phases: names and sums */
    ctx->gpu.phases = calloc(VKPROF_MAX_PHASES, sizeof *ctx->gpu.phases);
    ctx->cal.points = calloc(VKPROF_CAL_POINTS, sizeof *ctx->cal.points);
    if (ctx->gpu.phases == NULL || ctx->cal.points == NULL) {
        FAIL("%s: out of memory", path);
    }
    memcpy(ctx->gpu.phases, c->phases, c->phase_count * sizeof *ctx->gpu.phases);
    for (uint32_t i = 0; i < c->phase_count; i++) {
        ctx->gpu.phases[i].name[VKPROF_MAX_NAME] = '\0';
        fz->phase_calls[i] = c->phase_calls[i];
    }
    atomic_flag_clear(&ctx->gpu.phase_lock);
    atomic_store(&ctx->gpu.phase_count, c->phase_count);
    /* the counts the getters compute in a live context */
    fz->timing = c->timing;
#define VKPROF_X_(field, result, meaning) atomic_store(&ctx->errors.field, c->errors.field);
    VKPROF_ERROR_COUNTERS(VKPROF_X_)
#undef VKPROF_X_
    /* calibration */
    ctx->cal.method = (vkprof_calibration_method)c->cal_method;
    ctx->cal.raw_bridge = c->cal_raw_bridge != 0;
    ctx->cal.extension = cal_extension_name(c->cal_extension);
    memcpy(ctx->cal.points, c->cal_points, c->cal_count * sizeof *ctx->cal.points);
    ctx->cal.count = c->cal_count;
    ctx->cal.taken = c->cal_taken;
    ctx->cal.last_ns = c->cal_last_ns;
    ctx->cal.inconsistent = c->cal_inconsistent != 0;
    ctx->cal.inconsistent_ns = c->cal_inconsistent_ns;
    ctx->cal.win_checks = c->cal_win_checks;
    ctx->cal.win_violations = c->cal_win_violations;
    /* the host clock */
    vkprof__hclk_restore(&ctx->hclk, (vkprof_hclk_kind)c->hclk_kind,
                         hclk_source_name(c->hclk_source), c->hclk_reason, c->hclk_nominal_hz,
                         c->hclk_points, c->hclk_count, c->hclk_taken, c->hclk_rate_num,
                         c->hclk_rate_den, c->hclk_residual_ns);
    /* buckets */
    for (uint32_t i = 0; i < c->bucket_count; i++) {
        vkprof_bucket_slot *b = &ctx->host.buckets[i];
        copy_str(b->name, sizeof b->name, c->buckets[i].name);
        b->hot = c->buckets[i].hot != 0;
        atomic_store(&b->calls, c->buckets[i].calls);
        atomic_store(&b->total_ticks, c->buckets[i].total_ticks);
    }
    atomic_store(&ctx->host.bucket_count, c->bucket_count);
    vkprof__steps_set(ctx, c->steps);
    ctx->host.report_every = UINT32_MAX;
    /* the store, in place (read only) */
    vkprof_trace *t = &ctx->trace;
    t->events = (vkprof_event *)(void *)(map + h->events_off);
    t->annots = (vkprof_annot *)(void *)(map + h->annots_off);
    t->capacity = h->capacity;
    t->annot_capacity = h->annot_capacity;
    t->keep_last = h->keep_last != 0;
    t->external = true;
    t->start_ns = c->trace_start_ns;
    atomic_store(&t->next, scan_next(t->events, t->capacity, t->keep_last, c->trace_next));
    atomic_store(&t->dropped, c->trace_dropped);
    atomic_store(&t->full_at_ns, c->trace_full_at_ns);
    atomic_store(&t->annot_next, c->annot_next);
    atomic_store(&t->annot_dropped, c->annot_dropped);
    atomic_store(&t->on, 0);
    fold_after(ctx, fz, c);
    /* who wrote it, and when the clocks were read last */
    fz->pid = h->pid;
    copy_str(fz->boot_id, sizeof fz->boot_id, h->boot_id);
    copy_str(fz->host, sizeof fz->host, h->host);
    copy_str(fz->exe, sizeof fz->exe, h->exe);
    fz->mono_ns = c->mono_ns;
    fz->real_ns = c->real_ns;
    fz->boot_ns = c->boot_ns;
    fz->clock_err_ns = c->clock_err_ns;
    fz->device_id = c->device_id;
    copy_str(fz->cal_extension, sizeof fz->cal_extension, c->cal_extension);
    copy_str(fz->hclk_source, sizeof fz->hclk_source, c->hclk_source);
    fz->thread_count = c->thread_count;
    fz->thread_names = calloc(c->thread_count ? c->thread_count : 1, sizeof *fz->thread_names);
    if (fz->thread_names == NULL) {
        FAIL("%s: out of memory", path);
    }
    for (uint32_t i = 0; i < c->thread_count; i++) {
        copy_str(fz->thread_names[i], sizeof fz->thread_names[i], c->thread_names[i]);
    }

    sp->map = map;
    sp->map_len = len;
    sp->fd = fd;
    sp->head = (spool_head *)(void *)map;
    sp->ck[0] = (spool_ckpt *)(void *)(map + h->ckpt_off[0]);
    sp->ck[1] = (spool_ckpt *)(void *)(map + h->ckpt_off[1]);
    sp->ctx = ctx;
    sp->frozen = fz;
    copy_str(sp->path, sizeof sp->path, path);
    pthread_mutex_init(&sp->lock, NULL);
    ctx->spool = sp;
    ctx->frozen = fz;
    *out = ctx;
    return VKPROF_OK;

fail:
    if (ctx != NULL) {
        free(ctx->gpu.phases);
        free(ctx->cal.points);
        free(ctx);
    }
    if (fz != NULL) {
        free(fz->thread_names);
        free(fz);
    }
    free(sp);
    if (map != MAP_FAILED) {
        munmap(map, len);
    }
    if (fd >= 0) {
        close(fd);
    }
    return VKPROF_ERROR_IO;
}

void vkprof__spool_destroy_offline(vkprof_context ctx)
{
    vkprof__spool_close(ctx); /* unmaps, frees the frozen figures */
    free(ctx->gpu.phases);
    free(ctx->cal.points);
    free(ctx);
}
