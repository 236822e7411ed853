/* The phase table, per-phase accumulators, snapshots and their JSON form. */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const default_names[VKPROF_PHASE_DEFAULT_COUNT] = {
#define VKPROF_X_(id, name) name,
    VKPROF_DEFAULT_PHASES(VKPROF_X_)
#undef VKPROF_X_
};

static void acc_clear(vkprof_phase_acc *a)
{
    a->count = 0;
    a->total_ticks = 0;
    a->min_ticks = UINT64_MAX;
    a->max_ticks = 0;
}

vkprof_result vkprof__phases_init(vkprof_context ctx)
{
    ctx->phase_cap = 32;
    ctx->phases = calloc(ctx->phase_cap, sizeof *ctx->phases);
    if (ctx->phases == NULL) {
        return VKPROF_ERROR_OUT_OF_MEMORY;
    }
    for (uint32_t i = 0; i < VKPROF_PHASE_DEFAULT_COUNT; i++) {
        snprintf(ctx->phases[i].name, sizeof ctx->phases[i].name, "%s", default_names[i]);
        acc_clear(&ctx->phases[i]);
    }
    ctx->phase_count = VKPROF_PHASE_DEFAULT_COUNT;
    return VKPROF_OK;
}

void vkprof__phases_free(vkprof_context ctx)
{
    free(ctx->phases);
    ctx->phases = NULL;
    ctx->phase_count = ctx->phase_cap = 0;
}

bool vkprof__phase_valid(vkprof_context ctx, vkprof_phase phase)
{
    return phase < ctx->phase_count;
}

void vkprof__phase_fold(vkprof_context ctx, vkprof_phase phase, uint64_t ticks)
{
    vkprof_phase_acc *a = &ctx->phases[phase];
    a->count++;
    a->total_ticks = (a->total_ticks > UINT64_MAX - ticks) ? UINT64_MAX : a->total_ticks + ticks;
    if (ticks < a->min_ticks) {
        a->min_ticks = ticks;
    }
    if (ticks > a->max_ticks) {
        a->max_ticks = ticks;
    }
}

vkprof_result vkprof_register_phase(vkprof_context ctx, const char *name, vkprof_phase *out)
{
    if (ctx == NULL || name == NULL || out == NULL || name[0] == '\0' ||
        strlen(name) > VKPROF_MAX_NAME) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT,
                            "vkprof_register_phase: name must be 1..%u bytes", VKPROF_MAX_NAME);
    }
    for (uint32_t i = 0; i < ctx->phase_count; i++) {
        if (strcmp(ctx->phases[i].name, name) == 0) {
            *out = i;
            return VKPROF_OK;
        }
    }
    if (ctx->phase_count >= VKPROF_MAX_PHASES) {
        return vkprof__fail(ctx, VKPROF_ERROR_TOO_MANY_PHASES,
                            "vkprof_register_phase('%s'): %u phases already", name,
                            VKPROF_MAX_PHASES);
    }
    if (ctx->phase_count == ctx->phase_cap) {
        uint32_t cap = ctx->phase_cap * 2;
        vkprof_phase_acc *p = realloc(ctx->phases, cap * sizeof *p);
        if (p == NULL) {
            return vkprof__fail(ctx, VKPROF_ERROR_OUT_OF_MEMORY, "vkprof_register_phase");
        }
        ctx->phases = p;
        ctx->phase_cap = cap;
    }
    vkprof_phase_acc *a = &ctx->phases[ctx->phase_count];
    memset(a, 0, sizeof *a);
    memcpy(a->name, name, strlen(name) + 1);
    acc_clear(a);
    *out = ctx->phase_count++;
    return VKPROF_OK;
}

uint32_t vkprof_phase_count(vkprof_context ctx)
{
    return ctx == NULL ? 0 : ctx->phase_count;
}

const char *vkprof_phase_name(vkprof_context ctx, vkprof_phase phase)
{
    if (ctx == NULL || phase >= ctx->phase_count) {
        return NULL;
    }
    return ctx->phases[phase].name;
}

bool vkprof_any_recorded(vkprof_context ctx)
{
    if (ctx == NULL) {
        return false;
    }
    for (uint32_t i = 0; i < ctx->phase_count; i++) {
        if (ctx->phases[i].count != 0) {
            return true;
        }
    }
    return false;
}

void vkprof_reset(vkprof_context ctx)
{
    if (ctx == NULL) {
        return;
    }
    for (uint32_t i = 0; i < ctx->phase_count; i++) {
        acc_clear(&ctx->phases[i]);
    }
    vkprof__errors_clear(ctx);
    atomic_store(&ctx->timed_steps, 0);
    ctx->scopes_recorded = ctx->scopes_collected = 0;
    ctx->lost_ring_full = ctx->lost_overwritten = ctx->lost_never_submitted = 0;
    ctx->lost_reset = ctx->lost_misuse = ctx->extra_samples = ctx->submissions = 0;
    ctx->stamps_written = ctx->shared_stamps = 0;
}

static void fill_stats(vkprof_context ctx, uint32_t i, vkprof_phase_stats *s)
{
    const vkprof_phase_acc *a = &ctx->phases[i];
    float period = ctx->info.timestamp_period;
    memset(s, 0, sizeof *s);
    s->id = i;
    memcpy(s->name, a->name, sizeof s->name);
    s->count = a->count;
    s->total_ticks = a->total_ticks;
    s->total_ns = vkprof_ticks_to_ns(a->total_ticks, period);
    s->min_ns = a->count ? vkprof_ticks_to_ns(a->min_ticks, period) : 0;
    s->max_ns = a->count ? vkprof_ticks_to_ns(a->max_ticks, period) : 0;
}

vkprof_result vkprof_snapshot(vkprof_context ctx, vkprof_phase_stats *out, uint32_t cap,
                              uint32_t *count, vkprof_error_counts *errors)
{
    if (ctx == NULL || count == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    if (out == NULL) {
        cap = 0; /* a size query */
    }
    *count = ctx->phase_count;
    uint32_t n = cap < ctx->phase_count ? cap : ctx->phase_count;
    for (uint32_t i = 0; i < n; i++) {
        fill_stats(ctx, i, &out[i]);
    }
    if (errors != NULL) {
        vkprof__errors_read(ctx, errors);
    }
    return cap < ctx->phase_count ? VKPROF_ERROR_BUFFER_TOO_SMALL : VKPROF_OK;
}

/* A bounded appender: counts what would be written even past the end. */
typedef struct jbuf {
    char *p;
    size_t cap, len;
} jbuf;

static void jput(jbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void jput(jbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->len < b->cap ? b->cap - b->len : 0;
    int n = vsnprintf(room ? b->p + b->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) {
        b->len += (size_t)n;
    }
}

/* JSON string escaping (RFC 8259): quotes, backslash, control characters. */
static void jstr(jbuf *b, const char *s)
{
    jput(b, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        switch (*c) {
        case '"': jput(b, "\\\""); break;
        case '\\': jput(b, "\\\\"); break;
        case '\n': jput(b, "\\n"); break;
        case '\r': jput(b, "\\r"); break;
        case '\t': jput(b, "\\t"); break;
        default:
            if (*c < 0x20) {
                jput(b, "\\u%04x", *c);
            } else {
                jput(b, "%c", *c);
            }
        }
    }
    jput(b, "\"");
}

vkprof_result vkprof_snapshot_json(vkprof_context ctx, char *buf, size_t cap, size_t *needed)
{
    if (ctx == NULL || needed == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    if (buf == NULL) {
        cap = 0; /* a size query */
    }
    jbuf b = {buf, cap, 0};
    const vkprof_device_info *info = &ctx->info;
    jput(&b, "{\"vkprof_version\":%u,\"device\":", vkprof_version());
    jstr(&b, info->device_name);
    jput(&b,
         ",\"queue_family\":%u,\"timestamp_valid_bits\":%u,\"timestamp_period_ns\":%.9g,"
         "\"enabled\":%s,\"requested\":%s,\"supported\":%s,\"phases\":[",
         info->queue_family_index, info->timestamp_valid_bits, (double)info->timestamp_period,
         ctx->head.active ? "true" : "false", ctx->requested ? "true" : "false",
         info->supported ? "true" : "false");
    for (uint32_t i = 0; i < ctx->phase_count; i++) {
        vkprof_phase_stats s;
        fill_stats(ctx, i, &s);
        jput(&b, "%s{\"id\":%u,\"name\":", i ? "," : "", s.id);
        jstr(&b, s.name);
        jput(&b,
             ",\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"min_ns\":%" PRIu64
             ",\"max_ns\":%" PRIu64 ",\"mean_ns\":%.3f,\"total_ticks\":%" PRIu64 "}",
             s.count, s.total_ns, s.min_ns, s.max_ns,
             s.count ? (double)s.total_ns / (double)s.count : 0.0, s.total_ticks);
    }
    vkprof_timing_stats ts;
    vkprof_get_timing_stats(ctx, &ts);
    jput(&b,
         "],\"timing\":{\"mode\":\"%s\",\"queries\":%u,\"sample_every\":%u,"
         "\"timed_steps\":%" PRIu64 ",\"scopes_recorded\":%" PRIu64 ",\"scopes_collected\":%" PRIu64
         ",\"scopes_dropped\":%" PRIu64 ",\"scopes_pending\":%" PRIu64
         ",\"stamps_written\":%" PRIu64 ",\"shared_stamps\":%" PRIu64 ",\"host_reset\":%s",
         ts.mode == VKPROF_TIMING_RING ? "ring" : "2slot", ts.ring_queries, ts.sample_every,
         ts.timed_steps, ts.scopes_recorded, ts.scopes_collected, ts.scopes_dropped,
         ts.scopes_pending, ts.stamps_written, ts.shared_stamps, ts.host_reset ? "true" : "false");
    /* one accounting: samples == scopes_collected + scopes_dropped + scopes_pending */
    jput(&b,
         ",\"samples\":%" PRIu64 ",\"submissions\":%" PRIu64 ",\"lost\":{\"ring_full\":%" PRIu64
         ",\"overwritten\":%" PRIu64 ",\"never_submitted\":%" PRIu64 ",\"reset\":%" PRIu64
         ",\"misuse\":%" PRIu64 "}}",
         ts.samples, ts.submissions, ts.lost_ring_full, ts.lost_overwritten,
         ts.lost_never_submitted, ts.lost_reset, ts.lost_misuse);
    vkprof_error_counts e;
    vkprof__errors_read(ctx, &e);
    jput(&b, ",\"errors\":{");
    const char *sep = "";
#define VKPROF_X_(field, result, meaning)                                                          \
    jput(&b, "%s\"" #field "\":%" PRIu64, sep, e.field);                                           \
    sep = ",";
    VKPROF_ERROR_COUNTERS(VKPROF_X_)
#undef VKPROF_X_
    jput(&b, "}}");
    *needed = b.len + 1;
    if (b.len + 1 > cap) {
        if (cap > 0) {
            buf[0] = '\0';
        }
        return VKPROF_ERROR_BUFFER_TOO_SMALL;
    }
    return VKPROF_OK;
}
