/* vkprof_trace_write and vkprof_flush: the one place that opens the
 * trace file (atomically, export/atomic_file.h) and hands it to the
 * exporter of the format (export/export.h). */
#define _XOPEN_SOURCE 700
#include "base/base.h"

#include "export/atomic_file.h"
#include "export/export.h"

#include <errno.h>
#include <string.h>

vkprof_result vkprof_trace_write(vkprof_context ctx, const char *path)
{
    if (ctx == NULL || path == NULL || path[0] == '\0') {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT, "trace_write: no path");
    }
    if (ctx->trace.events == NULL) {
        return vkprof__fail(ctx, VKPROF_ERROR_NOT_TRACING,
                            "trace_write('%s'): tracing was never started", path);
    }
    vkprof_afile out;
    int err = vkprof__afile_open(&out, path);
    if (err == 0) {
        if (vkprof__trace_write_json(ctx, &out) != 0 && !vkprof__afile_failed(&out)) {
            out.err = errno ? errno : ENOMEM;
            out.step = "format the trace";
        }
        /* the first failure of any step; out.step and out.hint stay valid */
        err = vkprof__afile_commit(&out);
    }
    if (err != 0) {
        const bool in_place = out.in_place;
        return vkprof__fail(ctx, VKPROF_ERROR_IO, "trace_write('%s'): cannot %s: %s%s%s; %s", path,
                            out.step ? out.step : "write", strerror(err), out.hint ? ": " : "",
                            out.hint ? out.hint : "",
                            in_place ? "the trace is incomplete"
                                     : "the previous file, if any, is untouched");
    }
    return VKPROF_OK;
}

vkprof_result vkprof_flush(vkprof_context ctx)
{
    if (ctx == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    if (ctx->trace.path[0] == '\0') {
        return VKPROF_ERROR_NOT_TRACING;
    }
    return vkprof_trace_write(ctx, ctx->trace.path);
}
