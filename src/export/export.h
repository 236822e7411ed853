/* The exporters of the timeline store, one per trace format. Each writes a
 * whole trace of `ctx` to an open atomic file (export/atomic_file.h) and
 * returns 0, or -1 with errno set when the trace could not be formatted (a
 * write error is kept in the file's own state and reported by its commit).
 * trace_write.c opens the file and picks the exporter. */
#ifndef VKPROF_EXPORT_EXPORT_H
#define VKPROF_EXPORT_EXPORT_H

#include "base/base.h"
#include "export/atomic_file.h"

/* Chrome Trace Event JSON (docs/trace-format.md): trace_json.c. */
int vkprof__trace_write_json(vkprof_context ctx, vkprof_afile *f);

/* Perfetto's native protobuf format (docs/trace-format.md, "Native Perfetto
 * traces"): trace_pftrace.c. */
int vkprof__trace_write_pftrace(vkprof_context ctx, vkprof_afile *f);

/* Which formats a trace path gets (trace_write.c): the path's extension
 * (".pftrace" or ".perfetto-trace": Perfetto; anything else: JSON), unless
 * VKPROF_TRACE_FORMAT says json, pftrace or both ("both": the JSON at a
 * path without a Perfetto extension and the Perfetto trace beside it with
 * ".pftrace" for its extension, or the other way round). */
enum { VKPROF_TRACE_JSON = 1, VKPROF_TRACE_PFTRACE = 2 };
bool vkprof__trace_is_pftrace_path(const char *path);

/* metadata.process of every format (trace_write.c): the kernel's boot id
 * and the host name, each "" when unreadable, cut to [0-9A-Za-z._-]. */
void vkprof__process_identity(char *boot, size_t boot_size, char *host, size_t host_size);

#endif
