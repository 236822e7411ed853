/* vkprof_trace_write and vkprof_trace_flush: the one place that opens the
 * trace file (atomically, export/atomic_file.h) and hands it to the
 * exporter of the format (export/export.h): JSON, Perfetto's protobuf, or
 * both, by the path's extension or VKPROF_TRACE_FORMAT. */
#define _GNU_SOURCE /* CLOCK_BOOTTIME */
#include "base/base.h"

#include "export/atomic_file.h"
#include "export/export.h"
#include "export/export_events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

bool vkprof__trace_is_pftrace_path(const char *path)
{
    static const char *const exts[] = {".pftrace", ".perfetto-trace"};
    size_t n = strlen(path);
    for (size_t k = 0; k < sizeof exts / sizeof exts[0]; k++) {
        size_t m = strlen(exts[k]);
        if (n > m && strcmp(path + n - m, exts[k]) == 0) {
            return true;
        }
    }
    return false;
}

/* The formats for `path`: desc.trace_format, resolved by vkprof_create
 * (VKPROF_TRACE_FORMAT was read there, once), or the path's extension. */
static int trace_formats(vkprof_trace_format format, const char *path)
{
    switch (format) {
    case VKPROF_TRACE_FORMAT_JSON: return VKPROF_TRACE_JSON;
    case VKPROF_TRACE_FORMAT_PFTRACE: return VKPROF_TRACE_PFTRACE;
    case VKPROF_TRACE_FORMAT_BOTH: return VKPROF_TRACE_JSON | VKPROF_TRACE_PFTRACE;
    default: return vkprof__trace_is_pftrace_path(path) ? VKPROF_TRACE_PFTRACE : VKPROF_TRACE_JSON;
    }
}

/* The path of the other format beside `path`: its last extension (after the
 * last '/') replaced by `ext`, or `ext` appended when it has none. */
static bool sibling_path(const char *path, const char *ext, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t stem = (dot != NULL && dot != base) ? (size_t)(dot - path) : strlen(path);
    int n = snprintf(out, cap, "%.*s%s", (int)stem, path, ext);
    return n > 0 && (size_t)n < cap;
}

/* One file of the walk x, in one format. */
static vkprof_result write_one(vkprof_context ctx, vkprof_export *x, const char *path, int format)
{
    vkprof_afile out;
    int err = vkprof__afile_open(&out, path);
    if (err == 0) {
        errno = 0;
        int rc = format == VKPROF_TRACE_PFTRACE ? vkprof__trace_write_pftrace(x, &out)
                                                : vkprof__trace_write_json(x, &out);
        if (rc != 0 && !vkprof__afile_failed(&out)) {
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

/* The boot id (a UUID the kernel draws at boot: equal ids mean one
 * CLOCK_MONOTONIC) and the host name; each "" when it cannot be read. Only
 * [0-9A-Za-z._-] is kept, so neither needs escaping or can break a reader. */
static void keep_plain(char *s)
{
    char *w = s;
    for (const char *r = s; *r != '\0'; r++) {
        const char c = *r;
        if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            c == '.' || c == '_' || c == '-') {
            *w++ = c;
        }
    }
    *w = '\0';
}

void vkprof__process_identity(char *boot, size_t boot_size, char *host, size_t host_size)
{
    boot[0] = '\0';
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        if (fgets(boot, (int)boot_size, f) == NULL) {
            boot[0] = '\0';
        }
        fclose(f);
    }
    keep_plain(boot);
    if (gethostname(host, host_size) != 0) {
        host[0] = '\0';
    }
    host[host_size - 1] = '\0';
    keep_plain(host);
}

/* The walk is begun once for every format written: both files of "both"
 * hold the same events, mapped through the same clock snapshot, with the
 * same metadata (test_pftrace's check_identical). */
static vkprof_result write_set(const vkprof_context *ctxs, uint32_t n, const char *path,
                               vkprof_trace_format format)
{
    vkprof_context ctx = ctxs[0];
    const int formats = trace_formats(format, path);
    const bool pf = vkprof__trace_is_pftrace_path(path);
    int first = formats, second = 0;
    char other[sizeof ctx->trace.path + 32];
    if (formats == (VKPROF_TRACE_JSON | VKPROF_TRACE_PFTRACE)) {
        /* both: the path keeps the format its extension names; the other
         * goes beside it. A device or FIFO is one stream: both documents in
         * it would be neither format, so it gets the path's own format only. */
        first = pf ? VKPROF_TRACE_PFTRACE : VKPROF_TRACE_JSON;
        struct stat st;
        if (!(stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))) {
            if (!sibling_path(path, pf ? ".json" : ".pftrace", other, sizeof other)) {
                return vkprof__fail(
                    ctx, VKPROF_ERROR_INVALID_ARGUMENT,
                    "trace_write('%s'): the path is too long for its .pftrace sibling", path);
            }
            second = pf ? VKPROF_TRACE_JSON : VKPROF_TRACE_PFTRACE;
        }
    }
    vkprof_export x;
    if (vkprof__export_begin(&x, ctxs, n) != 0) {
        return vkprof__fail(ctx, VKPROF_ERROR_OUT_OF_MEMORY,
                            "trace_write('%s'): cannot gather the events: %s", path,
                            strerror(errno ? errno : ENOMEM));
    }
    vkprof_result r1 = write_one(ctx, &x, path, first);
    vkprof_result r2 = second != 0 ? write_one(ctx, &x, other, second) : VKPROF_OK;
    vkprof__export_end(&x);
    return r1 != VKPROF_OK ? r1 : r2;
}

vkprof_result vkprof_trace_write(vkprof_context ctx, const char *path)
{
    if (ctx == NULL || path == NULL || path[0] == '\0') {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT, "trace_write: no path");
    }
    if (ctx->trace.events == NULL) {
        return vkprof__fail(ctx, VKPROF_ERROR_NOT_TRACING,
                            "trace_write('%s'): tracing was never started", path);
    }
    return write_set(&ctx, 1, path, ctx->desc.trace_format);
}

vkprof_result vkprof_trace_write_set(const vkprof_context *ctxs, uint32_t count, const char *path,
                                     vkprof_trace_format format)
{
    if (ctxs == NULL || count == 0 || count > VKPROF_TRACE_SET_MAX || path == NULL ||
        path[0] == '\0' || (unsigned)format > VKPROF_TRACE_FORMAT_BOTH) {
        return vkprof__fail(ctxs != NULL && count > 0 ? ctxs[0] : NULL,
                            VKPROF_ERROR_INVALID_ARGUMENT,
                            "trace_write_set: 1..%u contexts and a path", VKPROF_TRACE_SET_MAX);
    }
    for (uint32_t i = 0; i < count; i++) {
        if (ctxs[i] == NULL) {
            return vkprof__fail(ctxs[0], VKPROF_ERROR_INVALID_ARGUMENT,
                                "trace_write_set: context %u is NULL", i);
        }
    }
    return write_set(ctxs, count, path,
                     format == VKPROF_TRACE_FORMAT_DEFAULT ? ctxs[0]->desc.trace_format : format);
}

vkprof_result vkprof_trace_flush(vkprof_context ctx)
{
    if (ctx == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    if (ctx->trace.path[0] == '\0') {
        return VKPROF_ERROR_NOT_TRACING;
    }
    return vkprof_trace_write(ctx, ctx->trace.path);
}

static uint64_t read_ns(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0) {
        return 0;
    }
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

void vkprof__export_process(vkprof_context ctx, vkprof_xprocess *out)
{
    memset(out, 0, sizeof *out);
    if (ctx->frozen != NULL) {
        const vkprof_frozen *f = ctx->frozen;
        out->pid = f->pid;
        snprintf(out->boot_id, sizeof out->boot_id, "%s", f->boot_id);
        snprintf(out->host, sizeof out->host, "%s", f->host);
        out->mono_ns = f->mono_ns;
        out->boot_ns = f->boot_ns;
        out->real_ns = f->real_ns;
        out->err_ns = f->clock_err_ns;
        return;
    }
    out->pid = (int64_t)getpid();
    vkprof__process_identity(out->boot_id, sizeof out->boot_id, out->host, sizeof out->host);
    out->err_ns = UINT64_MAX;
    for (int i = 0; i < 8; i++) {
        uint64_t a = read_ns(CLOCK_MONOTONIC);
        uint64_t boot = read_ns(CLOCK_BOOTTIME);
        uint64_t real = read_ns(CLOCK_REALTIME);
        uint64_t b = read_ns(CLOCK_MONOTONIC);
        if (out->err_ns == UINT64_MAX || b - a < out->err_ns * 2) {
            out->mono_ns = a + (b - a) / 2;
            out->boot_ns = boot;
            out->real_ns = real;
            out->err_ns = (b - a + 1) / 2;
        }
    }
}
