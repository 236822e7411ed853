/* Diagnostics: one logger callback per context, stderr by default. */
#include "internal.h"

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

vkprof_result vkprof__fail(vkprof_context ctx, vkprof_result code, const char *fmt, ...)
{
    if (ctx != NULL) {
        vkprof_error_counts *e = &ctx->errors;
        switch (code) {
        case VKPROF_ERROR_BEGIN_TWICE: e->begin_twice++; break;
        case VKPROF_ERROR_END_WITHOUT_BEGIN: e->end_without_begin++; break;
        case VKPROF_ERROR_PHASE_MISMATCH: e->phase_mismatch++; break;
        case VKPROF_ERROR_NOT_ENDED: e->not_ended++; break;
        case VKPROF_ERROR_NOT_RESOLVED: e->not_resolved++; break;
        case VKPROF_ERROR_NOTHING_PENDING: e->nothing_pending++; break;
        case VKPROF_ERROR_UNKNOWN_PHASE: e->unknown_phase++; break;
        case VKPROF_ERROR_NOT_READY: e->not_ready++; break;
        case VKPROF_ERROR_VULKAN: e->vulkan_errors++; break;
        case VKPROF_ERROR_INVALID_ARGUMENT: e->invalid_argument++; break;
        default: break;
        }
    }
    va_list ap;
    va_start(ap, fmt);
    /* NOT_READY is an expected, retryable condition: a warning, not an error. */
    vlog(ctx, code == VKPROF_ERROR_NOT_READY ? VKPROF_LOG_WARN : VKPROF_LOG_ERROR, code, fmt, ap);
    va_end(ap);
    return code;
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
