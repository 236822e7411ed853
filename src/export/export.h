/* The exporters of the timeline store, one per trace format. Each writes a
 * whole trace from one export walk (export_events.h: gathered, sorted and
 * mapped once, by trace_write.c, for every format it writes) to an open
 * atomic file (export/atomic_file.h) and returns 0, or -1 with errno set
 * when the trace could not be formatted (a write error is kept in the
 * file's own state and reported by its commit). trace_write.c opens the
 * file, begins and ends the walk, and picks the exporters. */
#ifndef VKPROF_EXPORT_EXPORT_H
#define VKPROF_EXPORT_EXPORT_H

#include "base/base.h"
#include "export/atomic_file.h"

struct vkprof_export;

/* Chrome Trace Event JSON (docs/trace-format.md): trace_json.c. */
int vkprof__trace_write_json(struct vkprof_export *x, vkprof_afile *f);

/* Perfetto's native protobuf format (docs/trace-format.md, "Native Perfetto
 * traces"): trace_pftrace.c. */
int vkprof__trace_write_pftrace(struct vkprof_export *x, vkprof_afile *f);

/* Which formats a trace path gets (trace_write.c): the path's extension
 * (".pftrace" or ".perfetto-trace": Perfetto; anything else: JSON), unless
 * VKPROF_TRACE_FORMAT says json, pftrace or both ("both": the JSON at a
 * path without a Perfetto extension and the Perfetto trace beside it with
 * ".pftrace" for its extension, or the other way round). */
enum { VKPROF_TRACE_JSON = 1, VKPROF_TRACE_PFTRACE = 2 };
bool vkprof__trace_is_pftrace_path(const char *path);

/* Spools (spool.c; desc.trace_spool). create: the file made and the store
 * attached to it (no spool, with the reason logged and kept, when it cannot
 * be made: not an error of vkprof_create). checkpoint: the small state copied
 * in when something changed. close: the last checkpoint, the state CLOSED,
 * unmapped (vkprof_destroy, before the store's shutdown). destroy_offline:
 * all of an opened spool's context. */
vkprof_result vkprof__spool_create(vkprof_context ctx);
void vkprof__spool_checkpoint(vkprof_context ctx);
void vkprof__spool_close(vkprof_context ctx);
void vkprof__spool_destroy_offline(vkprof_context ctx);

/* metadata.process of every format (trace_write.c): the kernel's boot id
 * and the host name, each "" when unreadable, cut to [0-9A-Za-z._-]. */
void vkprof__process_identity(char *boot, size_t boot_size, char *host, size_t host_size);

/* Who wrote a trace and its clocks read together (trace_write.c): a live
 * context's process now (MONOTONIC with BOOTTIME and REALTIME read between
 * two MONOTONIC reads, the tightest of a few tries; err_ns half that
 * bracket), an opened spool's as its writer read them at its last
 * checkpoint. */
typedef struct vkprof_xprocess {
    int64_t pid;
    char boot_id[64], host[256];
    uint64_t mono_ns, boot_ns, real_ns, err_ns;
} vkprof_xprocess;
void vkprof__export_process(vkprof_context ctx, vkprof_xprocess *out);

#endif
