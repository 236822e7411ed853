/* Host section spans: named buckets, levels, atomic counters, the per-token
 * report, rendezvous probes and thread naming. Thread-safe throughout. */
#include "base/base.h"
#include "clock/clock.h"
#include "timeline/store.h"
#include "host/host.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- buckets and levels ----------------------------------------------- */

static void lock(atomic_flag *f)
{
    while (atomic_flag_test_and_set_explicit(f, memory_order_acquire)) {
        /* registration and reports are rare and short */
    }
}

static void unlock(atomic_flag *f)
{
    atomic_flag_clear_explicit(f, memory_order_release);
}

vkprof_result vkprof__host_init(vkprof_context ctx)
{
    vkprof_host *h = &ctx->host;
    static const struct {
        const char *name;
        bool hot;
    } defaults[VKPROF_BUCKET_DEFAULT_COUNT] = {
#define VKPROF_X_(id, name, hot) {name, hot},
        VKPROF_DEFAULT_BUCKETS(VKPROF_X_)
#undef VKPROF_X_
    };
    for (uint32_t i = 0; i < VKPROF_BUCKET_DEFAULT_COUNT; i++) {
        snprintf(h->buckets[i].name, sizeof h->buckets[i].name, "%s", defaults[i].name);
        h->buckets[i].hot = defaults[i].hot;
    }
    atomic_store(&h->bucket_count, VKPROF_BUCKET_DEFAULT_COUNT);
    atomic_flag_clear(&h->register_lock);
    atomic_flag_clear(&h->report_lock);
    h->report_every = ctx->desc.report_every;       /* resolved: never 0 */
    vkprof_host_level level = ctx->desc.host_level; /* resolved: never FROM_ENV */
    __atomic_store_n(&ctx->head.host_level, (int)level, __ATOMIC_RELAXED);
    h->window_start_ns = 0; /* set by the first span or step: setup time is not a token's */
    static _Atomic uint64_t g_uids;
    h->uid = atomic_fetch_add_explicit(&g_uids, 1, memory_order_relaxed) + 1;
    atomic_store_explicit(&h->accs, NULL, memory_order_relaxed);
    h->window_first_step = 1;
    /* the clock spans read: the CPU counter where usable (clock/hostclock.c) */
    char warning[256];
    vkprof__hclk_init(
        &ctx->hclk, ctx->desc.environment != VKPROF_ENV_IGNORE ? getenv("VKPROF_HOST_CLOCK") : NULL,
        (uint64_t)ctx->desc.recalibrate_ms * UINT64_C(1000000), warning, sizeof warning);
    if (warning[0] != '\0') {
        vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_ERROR_INVALID_ARGUMENT, "%s", warning);
    }
    return VKPROF_OK;
}

/* ctx->head.host_level is read inline by the span macros (vkprof.h) as a
 * plain int; inside the library, atomically. */
static int host_level(vkprof_context ctx)
{
    return __atomic_load_n(&ctx->head.host_level, __ATOMIC_RELAXED);
}

vkprof_host_level vkprof_get_host_level(vkprof_context ctx)
{
    return ctx == NULL ? VKPROF_HOST_OFF : (vkprof_host_level)host_level(ctx);
}

void vkprof_set_host_level(vkprof_context ctx, vkprof_host_level level)
{
    if (ctx == NULL || level < VKPROF_HOST_OFF || level > VKPROF_HOST_HOT) {
        return;
    }
    __atomic_store_n(&ctx->head.host_level, (int)level, __ATOMIC_RELAXED);
}

vkprof_result vkprof_register_bucket(vkprof_context ctx, const char *name, bool hot,
                                     vkprof_bucket *out)
{
    if (ctx == NULL || name == NULL || out == NULL || name[0] == '\0' ||
        strlen(name) > VKPROF_MAX_NAME) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT,
                            "vkprof_register_bucket: name must be 1..%u bytes", VKPROF_MAX_NAME);
    }
    vkprof_host *h = &ctx->host;
    lock(&h->register_lock);
    uint32_t n = atomic_load(&h->bucket_count);
    for (uint32_t i = 0; i < n; i++) {
        if (strcmp(h->buckets[i].name, name) == 0) {
            unlock(&h->register_lock);
            *out = i;
            return VKPROF_OK;
        }
    }
    if (n >= VKPROF_MAX_BUCKETS) {
        unlock(&h->register_lock);
        return vkprof__fail(ctx, VKPROF_ERROR_TOO_MANY_PHASES,
                            "vkprof_register_bucket('%s'): %u buckets already", name,
                            VKPROF_MAX_BUCKETS);
    }
    memcpy(h->buckets[n].name, name, strlen(name) + 1);
    h->buckets[n].hot = hot;
    atomic_store_explicit(&h->bucket_count, n + 1, memory_order_release);
    unlock(&h->register_lock);
    *out = n;
    return VKPROF_OK;
}

const char *vkprof_bucket_name(vkprof_context ctx, vkprof_bucket bucket)
{
    if (ctx == NULL ||
        bucket >= atomic_load_explicit(&ctx->host.bucket_count, memory_order_acquire)) {
        return NULL;
    }
    return ctx->host.buckets[bucket].name;
}

uint32_t vkprof_bucket_count(vkprof_context ctx)
{
    return ctx == NULL ? 0 : atomic_load(&ctx->host.bucket_count);
}

/* ---- spans ---------------------------------------------------------- */
/*
 * Each thread keeps its open spans on a stack of VKPROF_SPAN_MAX_DEPTH
 * frames (all contexts together: spans nest per thread). A token names its
 * frame by slot_ and serial_; serials are unique per process (the thread's
 * number in the top 24 bits, a per-thread count below), so a token that is
 * stale (its span closed or given up), copied to another thread, or made up
 * never matches a frame, and is refused and counted instead of timed.
 */

#define SERIAL_THREAD_SHIFT 40
#define ACC_CACHE 4

typedef struct span_stack {
    uint32_t depth;
    uint64_t base; /* the thread's number << SERIAL_THREAD_SHIFT; 0 until the first span */
    uint64_t next;
    /* this thread's accumulators in the contexts it used last, keyed by the
     * context's uid (a destroyed context's is never matched again) */
    struct {
        uint64_t uid;
        vkprof_span_acc *acc;
    } accs[ACC_CACHE];
    uint32_t acc_next; /* the cache entry replaced next */
    vkprof_span_frame f[VKPROF_SPAN_MAX_DEPTH];
} span_stack;

static _Thread_local span_stack tl_spans;
static _Atomic uint64_t g_span_threads;

static uint64_t next_serial(span_stack *st)
{
    if (st->base == 0) {
        uint64_t t = atomic_fetch_add_explicit(&g_span_threads, 1, memory_order_relaxed) + 1;
        st->base = (t & ((UINT64_C(1) << (64 - SERIAL_THREAD_SHIFT)) - 1)) << SERIAL_THREAD_SHIFT;
        if (st->base == 0) {
            st->base = UINT64_C(1) << SERIAL_THREAD_SHIFT; /* past 2^24 threads: shared */
        }
    }
    st->next = (st->next + 1) & ((UINT64_C(1) << SERIAL_THREAD_SHIFT) - 1);
    if (st->next == 0) {
        st->next = 1;
    }
    return st->base | st->next;
}

/* This thread's span stack, its TLS address taken once per call. */
static inline span_stack *my_spans(void)
{
    span_stack *st = &tl_spans;
    VKPROF_KEEP_TLS_ADDR(st);
    return st;
}

/* This thread's accumulator in ctx (st: my_spans()): from the cache, else
 * the one this thread's span stack owns in the context's list (a thread
 * that ended may have left it: its span stack's address is this one now, so
 * one writer still), else a new one pushed on the list. NULL: out of memory
 * (the caller adds to the bucket slot instead). */
static vkprof_span_acc *acc_slow(vkprof_context ctx, span_stack *st)
{
    vkprof_host *h = &ctx->host;
    vkprof_span_acc *a = atomic_load_explicit(&h->accs, memory_order_acquire);
    while (a != NULL && a->owner != (const void *)st) {
        a = a->next;
    }
    if (a == NULL) {
        a = calloc(1, sizeof *a);
        if (a == NULL) {
            return NULL;
        }
        a->owner = st;
        vkprof_span_acc *head = atomic_load_explicit(&h->accs, memory_order_relaxed);
        do {
            a->next = head;
        } while (!atomic_compare_exchange_weak_explicit(&h->accs, &head, a, memory_order_release,
                                                        memory_order_relaxed));
    }
    uint32_t k = st->acc_next++ % ACC_CACHE;
    st->accs[k].uid = h->uid;
    st->accs[k].acc = a;
    return a;
}

static inline vkprof_span_acc *acc_of(vkprof_context ctx, span_stack *st)
{
    uint64_t uid = ctx->host.uid;
    for (uint32_t k = 0; k < ACC_CACHE; k++) {
        if (st->accs[k].uid == uid) {
            return st->accs[k].acc;
        }
    }
    return acc_slow(ctx, st);
}

void vkprof__host_shutdown(vkprof_context ctx)
{
    vkprof_span_acc *a = atomic_exchange_explicit(&ctx->host.accs, NULL, memory_order_acquire);
    while (a != NULL) {
        vkprof_span_acc *next = a->next;
        free(a);
        a = next;
    }
}

/* The frame a token names on this thread (st: my_spans()), or NULL. */
static vkprof_span_frame *frame_of(span_stack *st, const vkprof_span *span)
{
    if (span->serial_ == 0 || span->slot_ >= st->depth ||
        st->f[span->slot_].serial != span->serial_) {
        return NULL;
    }
    return &st->f[span->slot_];
}

/* The flow the GPU scopes recorded now belong to: the innermost open span
 * that has a flow id (base/thread.c keeps it for the GPU core). */
static void update_flow(const span_stack *st)
{
    uint64_t flow = 0;
    for (uint32_t i = st->depth; i-- > 0;) {
        if (st->f[i].id != 0) {
            flow = st->f[i].id;
            break;
        }
    }
    vkprof__span_close(flow);
}

static vkprof_span span_open(vkprof_context ctx, vkprof_bucket bucket, uint32_t flags)
{
    vkprof_span s = {0, 0, 0, 0};
    if (ctx == NULL) {
        return s;
    }
    int level = host_level(ctx);
    if (level == VKPROF_HOST_OFF || (level == VKPROF_HOST_HOT && !(flags & VKPROF_EVF_HOT))) {
        return s;
    }
    if (bucket >= atomic_load_explicit(&ctx->host.bucket_count, memory_order_acquire)) {
        vkprof__fail(ctx, VKPROF_ERROR_UNKNOWN_BUCKET, "span: unknown bucket id %u", bucket);
        return s;
    }
    span_stack *st = my_spans();
    if (st->depth >= VKPROF_SPAN_MAX_DEPTH) {
        vkprof__fail(ctx, VKPROF_ERROR_SPAN_TOO_DEEP,
                     "span '%s': %u spans are open on this thread already; not timed",
                     ctx->host.buckets[bucket].name, VKPROF_SPAN_MAX_DEPTH);
        return s;
    }
    uint32_t slot = st->depth++;
    vkprof_span_frame *f = &st->f[slot];
    f->ctx = ctx;
    f->serial = next_serial(st);
    f->bucket = bucket;
    f->flags = flags;
    f->annot.count = 0;
    f->id = 0;
    if (atomic_load_explicit(&ctx->trace.on, memory_order_relaxed)) {
        f->id = vkprof__span_open();
    }
    f->start = vkprof__hclk_read(&ctx->hclk);
    f->start += f->start == 0; /* 0 means an empty token */
    if (atomic_load_explicit(&ctx->host.window_start_ns, memory_order_relaxed) == 0) {
        uint64_t zero = 0;
        atomic_compare_exchange_strong(&ctx->host.window_start_ns, &zero,
                                       vkprof__hclk_ns(&ctx->hclk, f->start));
    }
    s.start_ns = f->start;
    s.bucket = bucket;
    s.slot_ = slot;
    s.serial_ = f->serial;
    return s;
}

vkprof_span vkprof_span_begin(vkprof_context ctx, vkprof_bucket bucket)
{
    return span_open(ctx, bucket, 0);
}

vkprof_span vkprof_span_begin_hot(vkprof_context ctx, vkprof_bucket bucket)
{
    return span_open(ctx, bucket, VKPROF_EVF_HOT);
}

bool vkprof_span_annotate(vkprof_span *span, const char *key, const char *value)
{
    if (span == NULL || span->start_ns == 0 || key == NULL || value == NULL) {
        return false;
    }
    vkprof_span_frame *f = frame_of(my_spans(), span);
    if (f == NULL) {
        return false; /* closed, given up, another thread's */
    }
    /* the keys a span's args carry already are not the app's to set: an
     * event would hold a key twice, which no reader can take */
    static const char *const reserved[] = {"bucket", "hot", "sync", "step", "probe"};
    for (size_t r = 0; r < sizeof reserved / sizeof reserved[0]; r++) {
        if (strncmp(key, reserved[r], VKPROF_ANNOTATION_KEY_MAX) == 0) {
            return false;
        }
    }
    /* a key given again (as kept: cut at VKPROF_ANNOTATION_KEY_MAX bytes)
     * takes the new value */
    uint32_t i = 0;
    while (i < f->annot.count && strncmp(f->annot.key[i], key, VKPROF_ANNOTATION_KEY_MAX) != 0) {
        i++;
    }
    if (i == f->annot.count) {
        if (f->annot.count >= VKPROF_SPAN_MAX_ANNOTATIONS) {
            return false; /* full */
        }
        f->annot.count++;
        snprintf(f->annot.key[i], sizeof f->annot.key[i], "%s", key);
    }
    snprintf(f->annot.value[i], sizeof f->annot.value[i], "%s", value);
    return true;
}

bool vkprof_span_annotate_ids(vkprof_span *span, const char *key, const uint32_t *ids,
                              uint32_t count)
{
    if (span == NULL || span->start_ns == 0 || (ids == NULL && count != 0)) {
        return false;
    }
    char buf[VKPROF_ANNOTATION_MAX + 1];
    size_t len = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < count; i++) {
        char item[16];
        int n = snprintf(item, sizeof item, "%s%" PRIu32, i ? "," : "", ids[i]);
        if (n < 0 || len + (size_t)n > VKPROF_ANNOTATION_MAX - 3) {
            /* say it was cut rather than show a wrong list */
            memcpy(buf + len, "...", 4);
            break;
        }
        memcpy(buf + len, item, (size_t)n + 1);
        len += (size_t)n;
    }
    return vkprof_span_annotate(span, key, buf);
}

/* Spans opened inside frame f (at slot) and still open: given up, counted
 * here (their own context may be gone: only its pointer is compared). Out of
 * line: misuse only. Returns their flow ids or-ed together. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline, cold))
#endif
static uint64_t
give_up_inner(vkprof_context ctx, span_stack *st, const vkprof_span_frame *f, uint32_t slot)
{
    uint64_t ids = 0;
    for (uint32_t i = st->depth; i-- > slot + 1;) {
        vkprof_span_frame *in = &st->f[i];
        ids |= in->id;
        vkprof__fail(ctx, VKPROF_ERROR_SPAN_ORDER,
                     "span '%s' closed while a span opened inside it ('%s') was open; that one "
                     "is not timed",
                     ctx->host.buckets[f->bucket].name,
                     in->ctx == ctx ? ctx->host.buckets[in->bucket].name : "of another context");
        in->serial = 0;
    }
    return ids;
}

/* A closed span's call and ticks into its bucket: the thread's own
 * accumulator where it has one, else the shared slot. */
static void account(vkprof_context ctx, span_stack *st, vkprof_bucket bucket, uint64_t dur)
{
    vkprof_span_acc *a = acc_of(ctx, st);
    if (a != NULL) {
        /* this thread is the only writer: no lock-prefixed add (17 ns of a
         * span on the H200 host, be99df8's side-by-side run) */
        atomic_store_explicit(&a->calls[bucket],
                              atomic_load_explicit(&a->calls[bucket], memory_order_relaxed) + 1,
                              memory_order_relaxed);
        atomic_store_explicit(&a->ticks[bucket],
                              atomic_load_explicit(&a->ticks[bucket], memory_order_relaxed) + dur,
                              memory_order_relaxed);
    } else {
        vkprof_bucket_slot *b = &ctx->host.buckets[bucket];
        atomic_fetch_add_explicit(&b->calls, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&b->total_ticks, dur, memory_order_relaxed);
    }
}

static uint64_t span_close(vkprof_context ctx, vkprof_span *span, vkprof_sync_fn sync, void *user)
{
    if (sync != NULL) {
        sync(user); /* called whatever is timed */
    }
    if (span == NULL || span->start_ns == 0 || ctx == NULL) {
        return 0;
    }
    span_stack *st = my_spans();
    vkprof_span_frame *f = frame_of(st, span);
    if (f == NULL || f->ctx != ctx) {
        vkprof__fail(ctx, VKPROF_ERROR_SPAN_CLOSED,
                     "span end: this span was closed or given up already, or belongs to "
                     "another thread or context; nothing timed");
        span->start_ns = 0;
        return 0;
    }
    uint64_t end = vkprof__hclk_read(&ctx->hclk);
    uint32_t slot = span->slot_;
    uint64_t ids = f->id; /* nonzero: a closed frame had a flow id */
    if (st->depth != slot + 1) {
        ids |= give_up_inner(ctx, st, f, slot);
    }
    uint64_t dur = end >= f->start ? end - f->start : 0; /* ticks */
    account(ctx, st, f->bucket, dur);
    if (atomic_load_explicit(&ctx->trace.on, memory_order_relaxed)) {
        vkprof__trace_span(ctx, f, f->flags | (sync != NULL ? VKPROF_EVF_SYNC : 0u), end);
    }
    f->serial = 0;
    st->depth = slot;
    if (ids != 0) {
        /* Only a frame with a flow id made itself the thread's open span
         * (span_open): when none of the closed ones had one, the open span
         * is the same as before and the out-of-line update is skipped. */
        update_flow(st);
    }
    span->start_ns = 0;
    return vkprof__hclk_dur_ns(&ctx->hclk, dur);
}

/* A detached span's token: no stack slot; serial_ holds the thread's key:
 * its span stack's serial base, unique to each thread ever made (up to
 * 2^24 of them), where thread indexes stop at the table's end. */
#define DETACHED_SLOT UINT32_MAX

static uint64_t thread_key(span_stack *st)
{
    if (st->base == 0) {
        (void)next_serial(st); /* sets the base */
    }
    return st->base;
}

vkprof_span vkprof_span_begin_detached(vkprof_context ctx, vkprof_bucket bucket)
{
    vkprof_span s = {0, 0, 0, 0};
    if (ctx == NULL || host_level(ctx) != VKPROF_HOST_ALL) {
        return s;
    }
    if (bucket >= atomic_load_explicit(&ctx->host.bucket_count, memory_order_acquire)) {
        vkprof__fail(ctx, VKPROF_ERROR_UNKNOWN_BUCKET, "span: unknown bucket id %u", bucket);
        return s;
    }
    uint64_t start = vkprof__hclk_read(&ctx->hclk);
    start += start == 0; /* 0 means an empty token */
    if (atomic_load_explicit(&ctx->host.window_start_ns, memory_order_relaxed) == 0) {
        uint64_t zero = 0;
        atomic_compare_exchange_strong(&ctx->host.window_start_ns, &zero,
                                       vkprof__hclk_ns(&ctx->hclk, start));
    }
    s.start_ns = start;
    s.bucket = bucket;
    s.slot_ = DETACHED_SLOT;
    s.serial_ = thread_key(my_spans());
    return s;
}

uint64_t vkprof_span_end_detached(vkprof_context ctx, vkprof_span *span)
{
    if (ctx == NULL || span == NULL || span->start_ns == 0 || span->slot_ != DETACHED_SLOT) {
        return 0;
    }
    if (span->serial_ != thread_key(my_spans()) ||
        span->bucket >= atomic_load_explicit(&ctx->host.bucket_count, memory_order_acquire)) {
        span->start_ns = 0; /* ended on another thread: its track is not this one */
        return 0;
    }
    uint64_t end = vkprof__hclk_read(&ctx->hclk);
    uint64_t dur = end >= span->start_ns ? end - span->start_ns : 0; /* ticks */
    account(ctx, my_spans(), span->bucket, dur);
    if (atomic_load_explicit(&ctx->trace.on, memory_order_relaxed)) {
        vkprof_span_frame f;
        memset(&f, 0, sizeof f);
        f.ctx = ctx;
        f.start = span->start_ns;
        f.bucket = span->bucket;
        vkprof__trace_span(ctx, &f, 0, end);
    }
    span->start_ns = 0;
    return vkprof__hclk_dur_ns(&ctx->hclk, dur);
}

uint64_t vkprof_span_end(vkprof_context ctx, vkprof_span *span)
{
    return span_close(ctx, span, NULL, NULL);
}

uint64_t vkprof_span_end_sync(vkprof_context ctx, vkprof_span *span, vkprof_sync_fn sync,
                              void *user)
{
    return span_close(ctx, span, sync, user);
}

uint64_t vkprof_rendezvous(vkprof_context ctx, vkprof_bucket probe_bucket, vkprof_sync_fn wait,
                           void *user)
{
    vkprof_span s = span_open(ctx, probe_bucket, VKPROF_EVF_HOT | VKPROF_EVF_PROBE);
    /* wait runs inside the probe span; not a "sync" of GPU work */
    if (wait != NULL) {
        wait(user);
    }
    return span_close(ctx, &s, NULL, NULL);
}

vkprof_result vkprof_bucket_snapshot(vkprof_context ctx, vkprof_bucket_stats *out, uint32_t cap,
                                     uint32_t *count)
{
    if (ctx == NULL || count == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    if (out == NULL) {
        cap = 0; /* a size query */
    }
    uint32_t n = atomic_load_explicit(&ctx->host.bucket_count, memory_order_acquire);
    *count = n;
    for (uint32_t i = 0; i < n && i < cap; i++) {
        const vkprof_bucket_slot *b = &ctx->host.buckets[i];
        out[i].id = i;
        memcpy(out[i].name, b->name, sizeof out[i].name);
        out[i].hot = b->hot;
        uint64_t ticks;
        vkprof__bucket_sums(ctx, i, &out[i].calls, &ticks);
        /* the exact tick sum, scaled once */
        out[i].total_ns = vkprof__hclk_dur_ns(&ctx->hclk, ticks);
    }
    return cap < n ? VKPROF_ERROR_BUFFER_TOO_SMALL : VKPROF_OK;
}

/* ---- steps and the per-token report ----------------------------------- */

static int cmp_rows(const void *a, const void *b)
{
    const vkprof_report_row *x = a, *y = b;
    if (x->total_ns != y->total_ns) {
        return x->total_ns > y->total_ns ? -1 : 1;
    }
    return strcmp(x->name, y->name);
}

size_t vkprof_format_report(char *buf, size_t cap, uint64_t first_step, uint64_t tokens,
                            uint64_t wall_ns, vkprof_report_row *rows, uint32_t count)
{
    if (buf == NULL) {
        cap = 0; /* like snprintf(NULL, 0, ...): the length only */
    }
    if (rows == NULL) {
        count = 0;
    }
    size_t len = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        size_t room_ = len < cap ? cap - len : 0;                                                  \
        int n_ = snprintf(room_ ? buf + len : NULL, room_, __VA_ARGS__);                           \
        if (n_ > 0) {                                                                              \
            len += (size_t)n_;                                                                     \
        }                                                                                          \
    } while (0)
    if (tokens == 0) {
        tokens = 1;
    }
    if (rows != NULL && count > 1) {
        qsort(rows, count, sizeof rows[0], cmp_rows);
    }
    double per_token_ms = (double)wall_ns / 1e6 / (double)tokens;
    PUT("vkprof host profile, steps %" PRIu64 "-%" PRIu64 ": %.3f ms/token under profiling "
        "(%.1f tokens/s; profiled, spans serialise the run: not a serving figure)\n",
        first_step, first_step + tokens - 1, per_token_ms,
        wall_ns ? 1e9 * (double)tokens / (double)wall_ns : 0.0);
    PUT("  %-28s %10s %6s %12s %10s\n", "bucket", "ms/token", "%", "calls/token", "us/call");
    for (uint32_t i = 0; rows != NULL && i < count; i++) {
        if (rows[i].calls == 0) {
            continue;
        }
        double ms = (double)rows[i].total_ns / 1e6 / (double)tokens;
        double pct = wall_ns ? 100.0 * (double)rows[i].total_ns / (double)wall_ns : 0.0;
        PUT("  %-28.28s %10.3f %6.1f %12.2f %10.2f\n", rows[i].name, ms, pct,
            (double)rows[i].calls / (double)tokens,
            (double)rows[i].total_ns / 1e3 / (double)rows[i].calls);
    }
#undef PUT
    return len;
}

/* The loss line of the per-token report, from the public accounting only:
 * "GPU samples lost so far: L of S (ring full A, ...); ..." or nothing. */
static size_t format_loss(char *buf, size_t cap, const vkprof_timing_stats *ts)
{
    if (ts->scopes_dropped == 0) {
        return 0;
    }
    const struct {
        const char *name;
        uint64_t n;
    } why[] = {{"ring full", ts->lost_ring_full},
               {"overwritten", ts->lost_overwritten},
               {"never submitted", ts->lost_never_submitted},
               {"reset", ts->lost_reset},
               {"misuse", ts->lost_misuse},
               {"end before begin", ts->lost_backwards},
               {"stale", ts->lost_stale}};
    size_t len = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        size_t room_ = len < cap ? cap - len : 0;                                                  \
        int n_ = snprintf(room_ ? buf + len : NULL, room_, __VA_ARGS__);                           \
        if (n_ > 0) {                                                                              \
            len += (size_t)n_;                                                                     \
        }                                                                                          \
    } while (0)
    PUT("GPU samples lost so far: %" PRIu64 " of %" PRIu64, ts->scopes_dropped, ts->samples);
    const char *sep = " (";
    for (size_t i = 0; i < sizeof why / sizeof why[0]; i++) {
        if (why[i].n > 0) {
            PUT("%s%s %" PRIu64, sep, why[i].name, why[i].n);
            sep = ", ";
        }
    }
    PUT("%s; GPU phase figures cover the rest only\n", sep[0] == ',' ? ")" : "");
#undef PUT
    return len;
}

static void emit_report(vkprof_context ctx, uint64_t step, uint64_t now,
                        vkprof_timing_stats_fn timing_stats)
{
    vkprof_host *h = &ctx->host;
    uint32_t n = atomic_load_explicit(&h->bucket_count, memory_order_acquire);
    vkprof_report_row rows[VKPROF_MAX_BUCKETS];
    for (uint32_t i = 0; i < n; i++) {
        uint64_t calls, total;
        vkprof__bucket_sums(ctx, i, &calls, &total);
        rows[i].name = h->buckets[i].name;
        rows[i].calls = calls - h->window_calls[i];
        /* the window's exact tick sum, scaled once */
        rows[i].total_ns = vkprof__hclk_dur_ns(&ctx->hclk, total - h->window_total[i]);
        h->window_calls[i] = calls;
        h->window_total[i] = total;
    }
    uint64_t tokens = step - h->window_first_step + 1;
    char text[VKPROF_MAX_BUCKETS * 80 + 512];
    uint64_t start = atomic_load(&h->window_start_ns);
    size_t len = vkprof_format_report(text, sizeof text, h->window_first_step, tokens,
                                      start != 0 && start < now ? now - start : 0, rows, n);
    vkprof_timing_stats ts;
    if (len < sizeof text && timing_stats(ctx, &ts) == VKPROF_OK) {
        format_loss(text + len, sizeof text - len, &ts); /* no loss: nothing added */
    }
    h->window_first_step = step + 1;
    atomic_store(&h->window_start_ns, now);
    vkprof__log(ctx, VKPROF_LOG_REPORT, VKPROF_OK, "%s", text);
}

/* vkprof_step (core/context.c) after step `step` (1-based) ended at `now`. */
void vkprof__host_on_step(vkprof_context ctx, uint64_t step, uint64_t now,
                          vkprof_timing_stats_fn timing_stats)
{
    vkprof_host *h = &ctx->host;
    vkprof__hclk_maybe_refresh(&ctx->hclk); /* a host clock point when one is due */
    if (host_level(ctx) == VKPROF_HOST_OFF || h->report_every == UINT32_MAX) {
        return;
    }
    if (step % h->report_every == 0) {
        lock(&h->report_lock);
        emit_report(ctx, step, now, timing_stats);
        unlock(&h->report_lock);
    }
}

uint64_t vkprof_step_count(vkprof_context ctx)
{
    return ctx == NULL ? 0 : vkprof__steps_done(ctx);
}
