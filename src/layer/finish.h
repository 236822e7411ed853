/* Finishing a process's profile (issue 24): its one trace (every device and
 * queue family a track of the same file) and its summary, from the layer's
 * index (index.h) and its contexts: the live ones, when the layer finishes
 * its own process at exit; the spools, opened after the process ended
 * (vkprof run, vkprof recover). One function writes both, whoever calls it.
 *
 * Compiled into the layer and into the `vkprof` tool; it calls only the
 * public API and the two writers the layer shares with the library
 * (base/json.h, export/atomic_file.h). */
#ifndef VKPROF_LAYER_FINISH_H
#define VKPROF_LAYER_FINISH_H

#include <stdbool.h>
#include <stddef.h>

#include "index.h"
#include "vkprof/vkprof.h"

/* How the process ended, as far as its finisher knows. */
typedef struct lyr_ending {
    const char *how;      /* "exit", "signal", "unknown" */
    int status;           /* how == "exit": the exit status */
    int signo;            /* how == "signal": the signal */
    const char *detail;   /* a sentence more, or NULL */
    const char *finisher; /* "layer", "vkprof run", "vkprof recover" */
} lyr_ending;

/* A process's contexts by device, family and kind (0: the family's, 1: its
 * simultaneous-use one); NULL where there is none. */
typedef vkprof_context lyr_ctx_table[LYR_IDX_DEVICES][LYR_IDX_FAMILIES][2];

/* Write <out_dir>/<ix->base>.trace.json (or .pftrace, or both, as
 * ix->trace_format says) and <out_dir>/<ix->base>.summary.json; the index's
 * trace and summary names are filled in. A process with no context has no
 * trace, only a summary. 0, or -1 with the reason in err. */
int lyr_finish_write(lyr_index *ix, const char *out_dir, lyr_ctx_table *ctxs, const lyr_ending *end,
                     char *err, size_t errcap);

/* The index file at `path`, read and checked (never trusted: sizes, counts
 * and strings), into memory (free it); NULL with the reason in err. */
lyr_index *lyr_index_read(const char *path, char *err, size_t errcap);

/* A process the layer did not finish (it died, or exec replaced it):
 * <out_dir>/.vkprof/<base>/ opened, its spools read, its trace and summary
 * written, the folder removed. *ix_out (may be NULL) gets a copy of its
 * index (free it). 0, or -1 with the reason in err (the folder is kept). */
int lyr_finish_dir(const char *out_dir, const char *base, const lyr_ending *end, lyr_index **ix_out,
                   char *err, size_t errcap);

/* Remove <out_dir>/.vkprof/<base>/: the index and the spools it names, then
 * the folder (kept when something else is in it). */
void lyr_remove_dir(const char *out_dir, const lyr_index *ix);

#endif
