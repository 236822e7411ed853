/* `vkprof report`: the reader of the vkprof trace (Chrome Trace Event JSON,
 * docs/trace-format.md) and the summary it prints and draws. Everything of
 * `vkprof report` is named rpt_* / RPT_* (the library's own names are
 * vkprof_*; nothing here is library API). The files:
 *
 *   trace_reader.h  this interface: the summary's types, the limits, every
 *                   rpt_* function of the files below;
 *   trace_reader.c  rpt_load_file, rpt_parse, rpt_read_file, rpt_free,
 *                   rpt_clean_string, rpt_pick_token: the bounded reader (fuzzed:
 *                   fuzz/fuzz_trace_reader.c, scripts/fuzz.sh) and the
 *                   summary it builds;
 *   report_print.c  rpt_print, rpt_loss_warning, rpt_repeat_warning: the text
 *                   summary;
 *                   rpt_rank_view_build: per rank collectives, skew, the
 *                   slowest rank, expert load (merged traces: `vkprof merge`);
 *   merge.c, merge.h, cmd_merge.c: `vkprof merge` (rpt_merge);
 *   report_svg.c    rpt_svg: the SVG chart, to a stream;
 *   report_svg_file.c rpt_svg_file: the same to a file, through tools/common/outfile.h;
 *   cmd_report.c    vkprof_cmd_report: the subcommand (options, exit status).
 *
 * The names the trace writer shares with this reader (pids, categories, keys,
 * lost-sample reasons, the format version) come from one header,
 * src/export/trace_format.h (VKPROF_TF_*).
 *
 * The reader takes a buffer and its length (no terminating NUL needed) and
 * returns either a summary or one error message that says what is wrong and
 * where ("at event #N": N is the index in traceEvents, from 0; or the line and
 * column of a JSON syntax error). No object in the trace may have a key twice
 * (cJSON would keep both and a lookup would pick one): such a trace is
 * refused, by rpt_parse and rpt_walk alike. It never reads outside the buffer, and its
 * memory stays within a small multiple of the input size: events are parsed
 * one at a time, each at most RPT_MAX_EVENT_BYTES long. */
#ifndef RPT_TRACE_READER_H
#define RPT_TRACE_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "export/trace_format.h"

/** Largest file `rpt_load_file` accepts (2 GiB). */
#define RPT_MAX_FILE_BYTES ((size_t)2 << 30)
/** Largest single event object, in bytes of JSON text. */
#define RPT_MAX_EVENT_BYTES ((size_t)1 << 20)
/** Largest top-level value other than traceEvents (metadata, ...). */
#define RPT_MAX_VALUE_BYTES ((size_t)16 << 20)
/** Deepest JSON nesting accepted. */
#define RPT_MAX_DEPTH 64
/** Most distinct GPU phases, host buckets, tracks. */
#define RPT_MAX_GROUPS 1024
#define RPT_MAX_TRACKS 1024
/** Longest name kept, in bytes (longer names are cut on a UTF-8 boundary). */
#define RPT_MAX_NAME 128
/** Largest ts or dur accepted, in microseconds (about 31 years). */
#define RPT_MAX_US 1e15

/** A GPU phase or a host bucket. Times in exact nanoseconds. */
typedef struct rpt_group {
    char *name;
    uint64_t total_ns; /**< sum of the slices' durations */
    uint64_t self_ns;  /**< total less the time of slices nested inside (same track) */
    uint64_t calls;    /**< number of slices */
} rpt_group;

/** One phase's estimate (metadata.gpu_sampling.estimates): the trace's
 *  slices of it are a sample of its calls. */
typedef struct rpt_estimate {
    char *name;
    uint64_t calls;  /**< calls executed */
    uint64_t timed;  /**< of them, timed (its slices, before any loss) */
    uint64_t est_ns; /**< the estimated GPU time of all its calls */
    int outer;       /**< an outer phase: holds other phases' work */
} rpt_estimate;
#define RPT_MAX_ESTIMATES 4096

/** One (pid, tid) track. */
typedef struct rpt_track {
    int64_t pid, tid;
    char *name;         /**< thread_name, or NULL */
    int is_gpu;         /**< its slices are GPU scopes */
    uint32_t max_depth; /**< deepest nesting level seen (0: no nesting) */
} rpt_track;

/** Most expert ids in one span's "experts" annotation, and the largest id. */
#define RPT_MAX_EXPERT_IDS 1024
#define RPT_MAX_EXPERT_ID 65535
/** Most MoE layers the expert load is split by. */
#define RPT_MAX_MOE_LAYERS 1024
/** Most inputs of a merged trace (metadata.merge.inputs) and of `vkprof merge`. */
#define RPT_MAX_RANKS 256

#define RPT_NO_PARENT UINT32_MAX

/** One X event. */
typedef struct rpt_slice {
    int64_t ts_ns, dur_ns;
    int64_t step; /**< args.step, or -1 */
    uint32_t group, track, depth, seq;
    uint32_t parent; /**< the slice it nests in (same track), or RPT_NO_PARENT */
    int is_gpu;
    int probe;          /**< args.probe true: a rendezvous probe span */
    uint32_t n_experts; /**< ids in args.experts (host spans of VKPROF_TF_EXPERTS_BUCKET) */
    size_t experts_at;  /**< where they start in rpt_summary.expert_ids */
} rpt_slice;

/** One flow event ("s" or "f" with an "id"; docs/trace-format.md): the
 *  layer's "s" lies at the start of the host span that recorded GPU work
 *  (its vkQueueSubmit*), each "f" at the start of a GPU slice of it. Several
 *  "f" may share one id, or each have its own id with its own "s" at the
 *  same span start. */
typedef struct rpt_flow {
    int64_t ts_ns;
    uint64_t id;    /**< a number's value (an integer in 0..2^64, else its
                         double's bits), or a string's FNV-1a hash */
    uint32_t track; /**< index in rpt_summary.tracks */
    uint8_t id_str; /**< the id is a string's hash (never equal to a number's) */
    uint8_t start;  /**< 1: "s" (the flow's start), 0: "f" */
} rpt_flow;

/** One input of a merged trace (metadata.merge.inputs[k]). */
typedef struct rpt_rank {
    char *name;                /**< its name ("rank k" or from --names) */
    int64_t host_pid, gpu_pid; /**< its processes in the merged trace */
} rpt_rank;

enum rpt_token_source {
    RPT_TOKENS_FROM_EVENTS,   /**< "token" instant events */
    RPT_TOKENS_FROM_METADATA, /**< metadata.steps */
    RPT_TOKENS_DEFAULT        /**< neither: 1 */
};

typedef struct rpt_summary {
    rpt_group *gpu, *host; /**< sorted by total time, longest first */
    size_t n_gpu, n_host;
    uint64_t gpu_busy_ns, host_busy_ns; /**< sums of self times */

    rpt_track *tracks;
    size_t n_tracks;
    rpt_slice *slices; /**< sorted by track, then ts */
    size_t n_slices;
    int64_t *token_ts_ns; /**< the token events' timestamps, sorted (in a merged
                               trace: those of the first rank that has any) */
    size_t n_token_events;
    int64_t *token_pids; /**< every token event's pid, in file order */
    size_t n_token_pids;
    uint32_t *expert_ids; /**< the ids of every slice's "experts", slice by slice */
    size_t n_expert_ids;
    rpt_flow *flows; /**< the "s" and "f" events with an "id", in file order */
    size_t n_flows_read;

    /* metadata.merge (a trace written by `vkprof merge`): n_ranks 0 otherwise */
    rpt_rank *ranks;
    size_t n_ranks;
    char *merge_method; /**< metadata.merge.method */

    uint64_t tokens;     /**< the per-token divisor */
    int token_source;    /**< enum rpt_token_source */
    uint64_t gpu_tokens; /**< divisor of GPU figures (fewer when GPU sampling skips steps) */
    int64_t end_ns;      /**< latest slice end or token */

    /* metadata (NULL / has_* 0 when absent) */
    char *process_name_gpu; /**< process_name of VKPROF_TF_PID_GPU */
    char *device, *driver, *cal_method, *sampling_mode;
    int has_error_bound, has_dropped, has_capacity, has_steps, has_every_n, has_version, has_format;
    uint64_t error_bound_ns, dropped_events, event_capacity, steps, every_n_steps, version;
    int has_rotate;
    uint64_t rotate_scopes; /* metadata.gpu_sampling.rotate_scopes: K of a rotating window */
    uint64_t format;        /**< metadata.trace_format (VKPROF_TF_VERSION when written) */

    /* metadata.gpu_sampling's accounting of GPU samples (one sample: one
     * execution of one recorded scope): samples == scopes_collected +
     * scopes_dropped + scopes_pending, scopes_dropped == the sum of lost.*.
     * has_* 0 when absent (older traces); lost[] 0 when absent. */
    int has_scopes_recorded, has_samples, has_submissions, has_scopes_collected, has_scopes_dropped,
        has_scopes_pending, has_lost;
    uint64_t scopes_recorded, samples, submissions, scopes_collected, scopes_dropped,
        scopes_pending;
    uint64_t lost[VKPROF_TF_LOST_COUNT]; /**< by reason: VKPROF_TF_LOST_* */
    uint64_t samples_lost;               /**< scopes_dropped, else the sum of lost.* */
    /* metadata.gpu_sampling.whole_steps: every call of each step was timed;
     * 0 with has_whole_steps: GPU busy and idle per step are not measured */
    int has_whole_steps, whole_steps;
    /* metadata.gpu_sampling.busy_measured (issue 26): busy and idle per step
     * are measured (every call timed, or outer scopes around each step's
     * work); absent in older traces, where whole_steps says it */
    int has_busy_measured, busy_measured;
    /* metadata.gpu_sampling.outer_phases, joined by ", " (NULL: none): phases
     * whose slices hold other slices' work (a whole command buffer) */
    char *outer_phases;
    /* metadata.gpu_sampling.estimates (issue 26): where the GPU slices are a
     * sample, each phase's calls, timed slices and estimated total, in the
     * file's order (at most RPT_MAX_ESTIMATES) */
    rpt_estimate *estimates;
    size_t n_estimates;
    int samples_lost_mismatch; /**< scopes_dropped differs from the sum of lost.* */
    int samples_unbalanced;    /**< samples differs from collected + dropped + pending */

    /* what was read and what was skipped */
    uint64_t n_events, n_flows, n_counters, n_meta_events, n_dup_meta, n_other_x, n_other_instants,
        n_unknown_ph;
    uint64_t first_unknown_index;
    char first_unknown_ph[16];

    /* X events of cat gpu/host that repeat an earlier one exactly (the same
     * pid, tid, ts, dur, name, cat and args): counted as recorded, and
     * warned about (docs/trace-format.md, "Reading traces back"). The first
     * such event is traceEvents[first_dup_index], a copy of first_dup_of. */
    uint64_t n_dup_events, first_dup_index, first_dup_of;
} rpt_summary;

struct cJSON;
/** What rpt_walk calls: each event of traceEvents (always an object: a
 * non-object is an error; in file order, idx from 0), and the metadata value
 * (whatever its type) with its JSON text (`len` bytes, valid JSON: numbers
 * beyond 2^53 are exact there, not in cJSON's doubles). Other top-level keys
 * are skipped. A callback returns 0, or -1 after writing its own message
 * into the err given to rpt_walk. The values are freed when the callback
 * returns. Either may be NULL. */
typedef struct rpt_walk_fns {
    int (*event)(void *user, const struct cJSON *ev, long idx);
    int (*metadata)(void *user, const struct cJSON *meta, const char *text, size_t len);
    void *user;
} rpt_walk_fns;

/** Walk a trace with the bounds of rpt_parse (each event at most
 * RPT_MAX_EVENT_BYTES, other values RPT_MAX_VALUE_BYTES, nesting
 * RPT_MAX_DEPTH): the reader of `vkprof merge`. Returns 0, or -1 with a
 * message in err. */
int rpt_walk(const char *buf, size_t len, const rpt_walk_fns *fns, char *err, size_t err_size);

/** Parse a trace. On success returns 0 and *out (free with rpt_free);
 * on failure returns -1 and writes a message (no file name, no newline) to
 * err. */
int rpt_parse(const char *buf, size_t len, rpt_summary **out, char *err, size_t err_size);

/** Load a whole trace file (or stdin for "-") into memory: the one place a
 * trace file is read, for `vkprof report` and `vkprof merge` alike. At most
 * max_bytes (0: RPT_MAX_FILE_BYTES); an empty file, a directory or a larger
 * file is refused. A Perfetto trace (rpt_trace_format) is converted into its
 * JSON text; one that cannot be is refused with the converter's message
 * ("Perfetto trace: ... (at packet #N, byte B)"), never handed to the JSON
 * reader. On success returns 0, *buf (malloc'd, free it; not NUL-terminated)
 * and *len: JSON text; on failure -1 and a message in err (it names what went
 * wrong but not the file). */
int rpt_load_file(const char *path, size_t max_bytes, char **buf, size_t *len, char *err,
                  size_t err_size);

/** The formats of a trace file. */
enum rpt_format {
    RPT_FORMAT_NONE = 0,    /**< neither (the JSON reader says so) */
    RPT_FORMAT_JSON = 1,    /**< Chrome Trace Event JSON */
    RPT_FORMAT_PFTRACE = 2, /**< a native Perfetto trace (protobuf) */
};

/** Which format the bytes of a file are, its name helping (NULL or "-": no
 * name). In order:
 *  - framed as a Perfetto trace to the last byte (rpt_is_pftrace): PFTRACE;
 *  - nothing but blanks: JSON (its reader says the file is empty), or
 *    PFTRACE when the name says so and the first byte is 0x0a;
 *  - first non-blank byte (after a UTF-8 BOM) '{' or '[': JSON, whatever the
 *    name; except when the file starts with 0x0a (a TracePacket's tag) and
 *    what follows the bracket is not what a JSON trace has there ('"' or
 *    '}' after '{', '{' or ']' after '['): then PFTRACE (a packet of 123 or
 *    91 bytes);
 *  - first byte 0x0a (Trace field 1, length-delimited: a TracePacket), or a
 *    name ending in .pftrace or .perfetto-trace: PFTRACE;
 *  - else NONE. */
int rpt_trace_format(const char *name, const char *buf, size_t len);

/** rpt_load_file, also telling which format the file was (*format, may be
 * NULL: RPT_FORMAT_PFTRACE when *buf is the JSON text of a converted
 * Perfetto trace, else RPT_FORMAT_JSON). */
int rpt_load_trace(const char *path, size_t max_bytes, char **buf, size_t *len, int *format,
                   char *err, size_t err_size);

/** After rpt_parse or rpt_walk failed on the JSON text of a converted
 * Perfetto trace: says so in err, in place ("Perfetto trace, as converted
 * to JSON: " before the message: its event numbers and lines are those of
 * that text). */
void rpt_pftrace_json_error(char *err, size_t err_size);

/** Native Perfetto traces (pftrace_reader.c): nonzero when buf is framed as a
 * Perfetto trace (every top-level field a TracePacket, to the last byte);
 * rpt_pftrace_to_json converts one into the JSON text of the same trace
 * (*out malloc'd, NUL-terminated; *out_len without the NUL), or returns -1
 * with a message in err: "Perfetto trace: WHAT (at packet #N, byte B)", N
 * counted from 0, B the offset of the packet's tag byte in the file. It checks
 * the framing first, so a cut or damaged file says where its packets stop
 * making sense. rpt_load_file does both. */
int rpt_is_pftrace(const char *buf, size_t len);
int rpt_pftrace_to_json(const char *buf, size_t len, char **out, size_t *out_len, char *err,
                        size_t err_size);

/** rpt_load_file, then rpt_parse. The message names what went wrong but not
 * the file. */
int rpt_read_file(const char *path, size_t max_bytes, rpt_summary **out, char *err,
                  size_t err_size);

void rpt_free(rpt_summary *s);

/** A malloc'd copy that is valid UTF-8 without control characters (each bad
 * byte becomes '?'), cut to RPT_MAX_NAME bytes; NULL when out of
 * memory. Every name in a summary is cleaned so. */
char *rpt_clean_string(const char *s);

/** The warning about lost GPU samples, one line without a newline (e.g.
 * "WARNING: 30 of 50 GPU samples lost (ring full 30); the GPU split below
 * covers the rest only"), written to buf like snprintf; returns 0 and writes
 * an empty string when the trace says no sample was lost. */
size_t rpt_loss_warning(const rpt_summary *s, char *buf, size_t size);

/** The warning about slices that repeat an earlier one (n_dup_events), one
 * line without a newline, written to buf like snprintf; returns 0 and writes
 * an empty string when there are none. */
size_t rpt_repeat_warning(const rpt_summary *s, char *buf, size_t size);

/** GPU busy and idle on one GPU track (issue 26): the union of its slices
 * within each window between consecutive token (step) events, against the
 * window's length. Work the trace did not time (copies, barriers, untimed
 * dispatches) counts as idle; windows with no timed GPU work at all
 * (sampling) are left out and counted. */
typedef struct rpt_gpu_idle {
    int64_t busy_ns;        /**< summed over the windows counted */
    int64_t window_ns;      /**< their length, summed */
    size_t windows;         /**< windows with timed GPU work */
    size_t empty;           /**< windows with none, left out */
    double median_idle_pct; /**< the median window's idle share, % */
    /** Of the idle time: between two stretches of busy time inside a window
     *  (the gaps between command buffers, or between dispatches, that the
     *  host or a dependency left), their count; the rest is at the
     *  window's ends (before its first work, after its last) */
    int64_t gap_ns;
    size_t gaps;
    int64_t edge_ns;
} rpt_gpu_idle;

/** Fill *out for track `track` of s: 1 when it is a GPU track with timed
 *  work in at least one window; 0 when not (another kind of track, no such
 *  window, fewer than two token events, a merged trace: the windows are one
 *  rank's); -1 when out of memory. The text summary and the SVG both say
 *  it. */
int rpt_gpu_idle_of(const rpt_summary *s, size_t track, rpt_gpu_idle *out);

/** The time from an app's submit to the start of the GPU work it submitted:
 *  for each "s" flow event at the start of a host span whose bucket starts
 *  with "vkQueueSubmit" (the layer's span of vkQueueSubmit, vkQueueSubmit2,
 *  vkQueueSubmit2KHR), the earliest "f" on a GPU track of any id that starts
 *  there, less the span's start. Signed, in ns; median and p90 the nearest
 *  rank of the sorted values. */
typedef struct rpt_submit_latency_out {
    size_t count;      /**< submits measured */
    int64_t median_ns; /**< nearest rank */
    int64_t p90_ns;    /**< nearest rank */
    int64_t mean_ns;
} rpt_submit_latency_out;

/** Fill *out: 1 when at least one submit was measured; 0 when not (no such
 *  submit, GPU busy not measured: the first timed slice of a submit need not
 *  be its first work; a merged trace); -1 when out of memory. */
int rpt_submit_latency(const rpt_summary *s, rpt_submit_latency_out *out);

/** Print the text summary: the loss warning first when samples were lost,
 *  then "vkprof report: PATH". Returns 0, or -1 on a write error. */
int rpt_print(const rpt_summary *s, const char *path, FILE *out);

/** Write the SVG to a stream. Returns 0, or -1 on a write error. */
int rpt_svg(const rpt_summary *s, const char *title, FILE *out);

/** Write the SVG to path atomically (a temporary file in the same folder,
 * then rename). Returns 0, or -1 with a message in err; no partial file is
 * left behind. */
int rpt_svg_file(const rpt_summary *s, const char *title, const char *path, char *err,
                 size_t err_size);

/* ---- metadata the summary does not keep (report_print.c; issue 25) -----
 *
 * rpt_meta_find: where the top-level "metadata" value of a trace's JSON text
 *   is (a buffer rpt_parse accepted); 0 and *meta, *meta_len, or -1 when it
 *   has none (the JSON Array Format, or no such key).
 * rpt_meta_layer_trace: 1 when the trace was written by the vkprof Vulkan
 *   layer (`vkprof run`), whose steps are app waits, not tokens: its
 *   metadata.label is the layer's "device N, queue family F" (for a merged
 *   trace: every input's), or it has the layer's own host bucket
 *   ("vkprof layer: collect" or "vkprof layer: submit"). meta may be NULL.
 * rpt_unmapped_note: how many GPU scopes were timed but could not be placed
 *   on the host clock (metadata.unmapped_gpu_scopes; per context when the
 *   trace has several) and why, one line without a newline, written like
 *   snprintf; 0 and "" when none.
 * rpt_print_meta, rpt_svg_meta, rpt_svg_file_meta: rpt_print, rpt_svg and
 *   rpt_svg_file with the metadata's text (NULL: none). */
int rpt_meta_find(const char *buf, size_t len, const char **meta, size_t *meta_len);
int rpt_meta_layer_trace(const rpt_summary *s, const char *meta, size_t meta_len);
size_t rpt_unmapped_note(const rpt_summary *s, const char *meta, size_t meta_len, char *buf,
                         size_t size);
int rpt_print_meta(const rpt_summary *s, const char *meta, size_t meta_len, const char *path,
                   FILE *out);
int rpt_svg_meta(const rpt_summary *s, const char *meta, size_t meta_len, const char *title,
                 FILE *out);
int rpt_svg_file_meta(const rpt_summary *s, const char *meta, size_t meta_len, const char *title,
                      const char *path, char *err, size_t err_size);

/** One rank's figures (rpt_rank_view_build, report_print.c). A rank is one input of a merged
 * trace (its host and GPU pids), or the one process of an unmerged trace. */
typedef struct rpt_rank_stats {
    uint64_t tokens;        /**< its token events (else the summary's tokens) */
    uint64_t collective_ns; /**< host spans of collective buckets (VKPROF_TF_COLLECTIVE_PREFIX,
                                 not probes), outermost ones only: nothing counted twice */
    uint64_t collectives;   /**< how many */
    uint64_t probe_ns;      /**< rendezvous probe spans (args.probe): the arrival skew */
    uint64_t probes;
    uint64_t slowest_tokens; /**< tokens (steps with probes) at which it waited least */
    uint64_t routed;         /**< expert ids in its moe_host_sync "experts" */
    uint64_t routing_spans;  /**< spans that carried them */
    uint64_t max_expert;     /**< the most any one expert id got, summed over MoE layers */
} rpt_rank_stats;

/** One token's (step's) rendezvous across the ranks. */
typedef struct rpt_step_skew {
    int64_t step;
    int slowest;             /**< the rank that waited least (the others waited for it) */
    uint64_t min_ns, max_ns; /**< the least and the most probe wait of a rank in the step */
    uint32_t ranks;          /**< ranks with probes in the step */
} rpt_step_skew;

typedef struct rpt_rank_view {
    size_t n_ranks;
    rpt_rank_stats *rank;
    int slowest; /**< the rank with the least probe wait per token; -1: no probes */
    rpt_step_skew *steps;
    size_t n_steps;
    /* expert load: counts[r * n_experts + e] tokens routed to expert e on rank
     * r; n_experts is the largest id seen + 1 (0: no "experts" args) */
    uint32_t n_experts;
    uint64_t *counts;
    /* Per MoE layer (the k-th routing span of a token on its track, from 0;
     * ids of one number in two layers are two experts): the busiest expert's
     * tokens over the mean per expert, layer_imbalance[r * n_moe_layers + l]
     * for rank r, row n_ranks for every rank together; 0: no tokens there.
     * Layers past RPT_MAX_MOE_LAYERS are not split (layers_cut). */
    uint32_t n_moe_layers;
    double *layer_imbalance;
    int layers_cut;
} rpt_rank_view;

/** Build the per-rank view of a summary. Returns 0, or -1 when out of memory. */
int rpt_rank_view_build(const rpt_summary *s, rpt_rank_view *v);
void rpt_rank_view_free(rpt_rank_view *v);

/** Pick the representative token for the timeline: sets [*t0, *t1) and
 * returns its index (0-based) among the token events, or -1 when the trace
 * has no token events (then the window is the whole trace). */
long rpt_pick_token(const rpt_summary *s, int64_t *t0, int64_t *t1);

#endif
