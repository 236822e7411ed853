/* Host section spans: named buckets, levels, atomic counters, the per-token
 * report, rendezvous probes and thread naming. Thread-safe throughout. */
#include "internal.h"

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
    atomic_store(&h->level, (int)level);
    h->window_start_ns = 0; /* set by the first span or step: setup time is not a token's */
    h->window_first_step = 1;
    return VKPROF_OK;
}

vkprof_host_level vkprof_get_host_level(vkprof_context ctx)
{
    return ctx == NULL ? VKPROF_HOST_OFF : (vkprof_host_level)atomic_load(&ctx->host.level);
}

void vkprof_set_host_level(vkprof_context ctx, vkprof_host_level level)
{
    if (ctx == NULL || level < VKPROF_HOST_OFF || level > VKPROF_HOST_HOT) {
        return;
    }
    atomic_store(&ctx->host.level, (int)level);
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

#define SPAN_HOT 1u
#define SPAN_PROBE 2u

static vkprof_span span_open(vkprof_context ctx, vkprof_bucket bucket, bool hot)
{
    vkprof_span s;
    s.start_ns = 0;
    s.annotation_count = 0;
    if (ctx == NULL) {
        return s;
    }
    int level = atomic_load_explicit(&ctx->host.level, memory_order_relaxed);
    if (level == VKPROF_HOST_OFF || (level == VKPROF_HOST_HOT && !hot)) {
        return s;
    }
    if (bucket >= atomic_load_explicit(&ctx->host.bucket_count, memory_order_acquire)) {
        vkprof__fail(ctx, VKPROF_ERROR_UNKNOWN_BUCKET, "span: unknown bucket id %u", bucket);
        return s;
    }
    s.bucket = bucket;
    s.flags = hot ? SPAN_HOT : 0;
    s.id = 0;
    s.parent = vkprof__current_span();
    if (atomic_load_explicit(&ctx->trace.on, memory_order_relaxed)) {
        s.id = vkprof__span_open();
    }
    s.start_ns = vkprof_host_now_ns();
    if (atomic_load_explicit(&ctx->host.window_start_ns, memory_order_relaxed) == 0) {
        uint64_t zero = 0;
        atomic_compare_exchange_strong(&ctx->host.window_start_ns, &zero, s.start_ns);
    }
    return s;
}

vkprof_span vkprof_span_start(vkprof_context ctx, vkprof_bucket bucket)
{
    return span_open(ctx, bucket, false);
}

vkprof_span vkprof_span_start_hot(vkprof_context ctx, vkprof_bucket bucket)
{
    return span_open(ctx, bucket, true);
}

bool vkprof_span_annotate(vkprof_span *span, const char *key, const char *value)
{
    if (span == NULL || span->start_ns == 0 || key == NULL || value == NULL) {
        return false;
    }
    if (span->annotation_count >= VKPROF_SPAN_MAX_ANNOTATIONS) {
        return false;
    }
    uint32_t i = span->annotation_count++;
    span->annotation_key[i] = key;
    snprintf(span->annotation_value[i], sizeof span->annotation_value[i], "%s", value);
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

static uint64_t span_close(vkprof_context ctx, vkprof_span *span, vkprof_sync_fn sync, void *user)
{
    if (span == NULL || span->start_ns == 0 || ctx == NULL) {
        if (sync != NULL) {
            sync(user);
        }
        return 0;
    }
    if (sync != NULL) {
        sync(user);
    }
    uint64_t end = vkprof_host_now_ns();
    uint64_t dur = end >= span->start_ns ? end - span->start_ns : 0;
    vkprof_bucket_slot *b = &ctx->host.buckets[span->bucket];
    atomic_fetch_add_explicit(&b->calls, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&b->total_ns, dur, memory_order_relaxed);
    if (span->id != 0) {
        vkprof__span_close(span->parent);
    }
    if (atomic_load_explicit(&ctx->trace.on, memory_order_relaxed)) {
        vkprof_span copy = *span;
        if (sync != NULL) {
            copy.flags |= 0x100u; /* synchronised */
        }
        vkprof__trace_span(ctx, &copy, end);
    }
    span->start_ns = 0;
    return dur;
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
    vkprof_span s = span_open(ctx, probe_bucket, true);
    if (s.start_ns != 0) {
        s.flags |= SPAN_PROBE;
    }
    if (wait == NULL) {
        return span_close(ctx, &s, NULL, NULL);
    }
    /* wait runs inside the probe span; not a "sync" of GPU work */
    wait(user);
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
        out[i].calls = atomic_load_explicit(&b->calls, memory_order_relaxed);
        out[i].total_ns = atomic_load_explicit(&b->total_ns, memory_order_relaxed);
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
               {"misuse", ts->lost_misuse}};
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

static void emit_report(vkprof_context ctx, uint64_t step, uint64_t now)
{
    vkprof_host *h = &ctx->host;
    uint32_t n = atomic_load_explicit(&h->bucket_count, memory_order_acquire);
    vkprof_report_row rows[VKPROF_MAX_BUCKETS];
    for (uint32_t i = 0; i < n; i++) {
        uint64_t calls = atomic_load_explicit(&h->buckets[i].calls, memory_order_relaxed);
        uint64_t total = atomic_load_explicit(&h->buckets[i].total_ns, memory_order_relaxed);
        rows[i].name = h->buckets[i].name;
        rows[i].calls = calls - h->window_calls[i];
        rows[i].total_ns = total - h->window_total[i];
        h->window_calls[i] = calls;
        h->window_total[i] = total;
    }
    uint64_t tokens = step - h->window_first_step + 1;
    char text[VKPROF_MAX_BUCKETS * 80 + 512];
    uint64_t start = atomic_load(&h->window_start_ns);
    size_t len = vkprof_format_report(text, sizeof text, h->window_first_step, tokens,
                                      start != 0 && start < now ? now - start : 0, rows, n);
    vkprof_timing_stats ts;
    if (len < sizeof text && vkprof_get_timing_stats(ctx, &ts) == VKPROF_OK) {
        format_loss(text + len, sizeof text - len, &ts); /* no loss: nothing added */
    }
    h->window_first_step = step + 1;
    atomic_store(&h->window_start_ns, now);
    vkprof__log(ctx, VKPROF_LOG_REPORT, VKPROF_OK, "%s", text);
}

/* vkprof_step (core/context.c) after step `step` (1-based) ended at `now`. */
void vkprof__host_on_step(vkprof_context ctx, uint64_t step, uint64_t now)
{
    vkprof_host *h = &ctx->host;
    if (atomic_load_explicit(&h->level, memory_order_relaxed) == VKPROF_HOST_OFF ||
        h->report_every == UINT32_MAX) {
        return;
    }
    if (step % h->report_every == 0) {
        lock(&h->report_lock);
        emit_report(ctx, step, now);
        unlock(&h->report_lock);
    }
}

uint64_t vkprof_step_count(vkprof_context ctx)
{
    return ctx == NULL ? 0 : atomic_load(&ctx->host.steps);
}
