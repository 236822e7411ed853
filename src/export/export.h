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

#endif
