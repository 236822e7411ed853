/* Diagnostics: one logger callback per context, stderr by default. */
#include "base/base.h"

#include <stdio.h>
#include <stdlib.h>

static const char *level_name(vkprof_log_level level)
{
    switch (level) {
    case VKPROF_LOG_ERROR: return "error";
    case VKPROF_LOG_WARN: return "warning";
    default: return "info";
    }
}

static void vlog(vkprof_context ctx, vkprof_log_level level, vkprof_result code, const char *fmt,
                 va_list ap)
{
    /* ctx->desc is resolved (log_level never DEFAULT) before anything logs */
    vkprof_log_level max = ctx != NULL ? ctx->desc.log_level : VKPROF_LOG_WARN;
    /* reports are asked for by turning host profiling on: always delivered */
    if (level > max && level != VKPROF_LOG_REPORT) {
        return;
    }
    char small[512];
    char *msg = small;
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n >= (int)sizeof small) {
        char *big = malloc((size_t)n + 1);
        if (big != NULL) {
            vsnprintf(big, (size_t)n + 1, fmt, copy);
            msg = big;
        }
    }
    va_end(copy);
    if (ctx != NULL && ctx->desc.log != NULL) {
        ctx->desc.log(ctx->desc.log_user, level, code, msg);
    } else if (level == VKPROF_LOG_REPORT) {
        fputs(msg, stderr);
    } else {
        fprintf(stderr, "vkprof %s: %s (%s)\n", level_name(level), msg, vkprof_result_name(code));
    }
    if (msg != small) {
        free(msg);
    }
}

void vkprof__log(vkprof_context ctx, vkprof_log_level level, vkprof_result code, const char *fmt,
                 ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(ctx, level, code, fmt, ap);
    va_end(ap);
}

uint64_t vkprof__count_result(vkprof_context ctx, vkprof_result code)
{
    if (ctx == NULL || code == VKPROF_OK) {
        return 0;
    }
    vkprof_error_atomics *e = &ctx->errors;
    /* rows with VKPROF_OK are not results: never matched here */
#define VKPROF_X_(field, result, meaning)                                                          \
    if (code == (result)) {                                                                        \
        return atomic_fetch_add_explicit(&e->field, 1, memory_order_relaxed) + 1;                  \
    }
    VKPROF_ERROR_COUNTERS(VKPROF_X_)
#undef VKPROF_X_
    return 0;
}

void vkprof__errors_read(vkprof_context ctx, vkprof_error_counts *out)
{
#define VKPROF_X_(field, result, meaning)                                                          \
    out->field = atomic_load_explicit(&ctx->errors.field, memory_order_relaxed);
    VKPROF_ERROR_COUNTERS(VKPROF_X_)
#undef VKPROF_X_
}

void vkprof__errors_clear(vkprof_context ctx)
{
#define VKPROF_X_(field, result, meaning)                                                          \
    atomic_store_explicit(&ctx->errors.field, 0, memory_order_relaxed);
    VKPROF_ERROR_COUNTERS(VKPROF_X_)
#undef VKPROF_X_
}

vkprof_result vkprof__fail(vkprof_context ctx, vkprof_result code, const char *fmt, ...)
{
    uint64_t n = vkprof__count_result(ctx, code);
    /* A buggy call site in a decode loop repeats its misuse every token: the
     * first VKPROF_LOG_REPEATS of each counted kind are logged, the rest only
     * counted (vkprof_error_counts; reset by vkprof_reset). */
    if (n > VKPROF_LOG_REPEATS) {
        return code;
    }
    /* NOT_READY is an expected, retryable condition: a warning, not an error. */
    vkprof_log_level level = code == VKPROF_ERROR_NOT_READY ? VKPROF_LOG_WARN : VKPROF_LOG_ERROR;
    va_list ap;
    va_start(ap, fmt);
    vlog(ctx, level, code, fmt, ap);
    va_end(ap);
    if (n == VKPROF_LOG_REPEATS) {
        vkprof__log(ctx, level, code,
                    "%s seen %u times: further ones are counted in vkprof_error_counts, not "
                    "logged",
                    vkprof_result_name(code), (unsigned)VKPROF_LOG_REPEATS);
    }
    return code;
}

/* Here, in base, so that every seam may name the version (the snapshot's and
 * the trace's metadata) without calling up into core. */
uint32_t vkprof_version(void)
{
    return VKPROF_VERSION;
}

const char *vkprof_result_name(vkprof_result r)
{
    switch (r) {
#define VKPROF_X_(name, value, text)                                                               \
    case name: return #name;
        VKPROF_RESULTS(VKPROF_X_)
#undef VKPROF_X_
    default: return "VKPROF_RESULT_UNKNOWN";
    }
}

const char *vkprof_result_text(vkprof_result r)
{
    switch (r) {
#define VKPROF_X_(name, value, text)                                                               \
    case name: return text;
        VKPROF_RESULTS(VKPROF_X_)
#undef VKPROF_X_
    default: return "unknown result code";
    }
}
