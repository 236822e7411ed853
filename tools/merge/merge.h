/* `vkprof merge`: several vkprof traces (per rank, per process) into one
 * trace that Perfetto opens and `vkprof report` reads
 * (docs/trace-format.md, "Merging traces"). Named rpt_merge* like the rest of
 * tools/report's reader; the inputs are loaded by rpt_load_file and walked by
 * rpt_walk, with the bounds of the report's reader. */
#ifndef RPT_MERGE_H
#define RPT_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "trace_reader.h"

/** Fewest matched rendezvous probes an alignment accepts. */
#define RPT_MERGE_MIN_PROBES 4

enum rpt_merge_status {
    RPT_MERGE_OK = 0,
    RPT_MERGE_ERROR = 1,   /**< an input cannot be read or is not a trace; the output failed */
    RPT_MERGE_REFUSED = 2, /**< the clocks cannot be put together (another boot, no
                                alignment, too few probes) */
};

typedef struct rpt_merge_opts {
    const char *const *inputs; /**< file paths (not "-": each is read twice) */
    size_t n_inputs;           /**< 1..RPT_MAX_RANKS */
    const char *const *names;  /**< NULL, or n_inputs process names */
    int align_rendezvous;      /**< --align rendezvous */
    const char *output;        /**< written atomically (tools/common/outfile.h) */
    size_t max_bytes;          /**< per input; 0: RPT_MAX_FILE_BYTES */
} rpt_merge_opts;

/** What the merge found, per input (for the caller's summary line). */
typedef struct rpt_merge_input {
    int64_t offset_ns;       /**< its clock minus input 0's */
    uint64_t error_bound_ns; /**< |error of offset_ns| <= this */
    uint64_t matched;        /**< rendezvous probes matched (0 for same_boot) */
    int rendezvous;          /**< 1: estimated from probes; 0: the same boot as input 0 */
    /** its slices that repeat an earlier one (rpt_summary.n_dup_events, the
     * first such event and the one it repeats): merged as written, and
     * warned about (rpt_repeat_warning) */
    uint64_t dup_events, first_dup_index, first_dup_of;
} rpt_merge_input;

/** Merge. Returns an enum rpt_merge_status; on failure a message in err
 * (naming the file) and no output file. `info` (NULL, or n_inputs entries)
 * receives the offsets on success. */
int rpt_merge(const rpt_merge_opts *o, rpt_merge_input *info, char *err, size_t err_size);

/** Split "a,b,c" into n names (malloc'd array of pointers into a malloc'd
 * copy: free(names[0]) and free(names)); -1 when the count differs from n or
 * a name is empty. */
int rpt_merge_split_names(const char *list, size_t n, char ***names);

#endif
