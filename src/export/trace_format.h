/* The vkprof trace format: the names and numbers that the writer
 * (src/export/trace_json.c) and the reader of `vkprof report`
 * (tools/report/trace_reader.c) share, so neither side keeps its own copy.
 * docs/trace-format.md describes the format; this header is its vocabulary.
 *
 * Vulkan-free, and a shared internal (src/internal.cmake): the reader
 * includes it as "export/trace_format.h" through vkprof_internal; it is not
 * part of the public API.
 *
 * What is here: vkprof's own vocabulary (track pids, event categories, the
 * args keys, the metadata keys, the reasons a GPU sample is lost, the format
 * version). What is not: the field names of the Chrome Trace Event format
 * itself ("traceEvents", "ph", "ts", "dur", "pid", "tid", "name", "cat",
 * "args", "id", ...) and its phase letters ("X", "M", "i", "s", "f", "C"):
 * they are fixed by that format, which every viewer reads, and are written
 * as they are on both sides. */
#ifndef VKPROF_EXPORT_TRACE_FORMAT_H
#define VKPROF_EXPORT_TRACE_FORMAT_H

/* The version of this format, written as metadata.trace_format. Raise it
 * when a field changes meaning or goes away (added optional fields need no
 * raise: readers take every field as optional). 1: the format of vkprof 0.2. */
#define VKPROF_TF_VERSION 1

/* ---- tracks --------------------------------------------------------------- */

#define VKPROF_TF_PID_HOST 1 /* the host process; a tid per host thread */
#define VKPROF_TF_PID_GPU 2  /* the GPU; a tid per queue */
/* The GPU tid of a queue: family * 100 + index + 1. */
#define VKPROF_TF_GPU_TID(family, index) ((family)*100u + (index) + 1u)

/* M events ("name" of a ph "M" event; the value is in args.name or
 * args.sort_index) */
#define VKPROF_TF_M_PROCESS_NAME "process_name"
#define VKPROF_TF_M_PROCESS_SORT "process_sort_index"
#define VKPROF_TF_M_THREAD_NAME "thread_name"
#define VKPROF_TF_M_THREAD_SORT "thread_sort_index"
#define VKPROF_TF_M_ARG_NAME "name"
#define VKPROF_TF_M_ARG_SORT "sort_index"

/* ---- events ---------------------------------------------------------------- */

/* "cat" of each kind of event */
#define VKPROF_TF_CAT_GPU "gpu"   /* X: a GPU phase scope */
#define VKPROF_TF_CAT_HOST "host" /* X: a host span */
#define VKPROF_TF_CAT_STEP "step" /* i: a decode step */
#define VKPROF_TF_CAT_FLOW "flow" /* s/f: host span -> the GPU scope it recorded */
#define VKPROF_TF_CAT_BUSY "busy" /* C: a queue's GPU busy share of each step */

/* A queue's GPU busy counter (ph "C", pid VKPROF_TF_PID_GPU, the queue's
 * tid): its name is this prefix and the queue track's name; its one arg,
 * VKPROF_TF_BUSY_ARG, the percentage of the step starting at ts (until the
 * next step event) in which the queue ran timed work, 3 decimals. */
#define VKPROF_TF_BUSY_PREFIX "GPU busy, "
#define VKPROF_TF_BUSY_ARG "%"

/* "name" of a step's instant event, and of a flow */
#define VKPROF_TF_STEP_NAME "token"
#define VKPROF_TF_FLOW_NAME "recorded"

/* args keys */
#define VKPROF_TF_ARG_PHASE "phase"   /* GPU scope: the phase name */
#define VKPROF_TF_ARG_NS "ns"         /* GPU scope: exact duration in ns */
#define VKPROF_TF_ARG_BUCKET "bucket" /* host span: the bucket name */
#define VKPROF_TF_ARG_HOT "hot"       /* host span: a hot span */
#define VKPROF_TF_ARG_SYNC "sync"     /* host span: synchronised with the GPU */
#define VKPROF_TF_ARG_PROBE "probe"   /* host span: a rendezvous probe */
#define VKPROF_TF_ARG_STEP "step"     /* GPU scope, host span, step: the step number */
/* host span: the MoE expert ids the router picked (vkprof_span_annotate_ids:
 * a string "3,17,42"; an array of integers is read too). `vkprof report`
 * counts them on spans of VKPROF_TF_EXPERTS_BUCKET only (one per MoE layer
 * per token), so an id list repeated on other spans is not counted twice. */
#define VKPROF_TF_ARG_EXPERTS "experts"
#define VKPROF_TF_EXPERTS_BUCKET "moe_host_sync" /* VKPROF_BUCKET_MOE_HOST_SYNC's name */
/* Host buckets of collectives: the name starts with the prefix; the probe
 * buckets (args.probe spans) end with the suffix (vkprof.h's defaults:
 * allreduce_attn, allreduce_attn_enqueue, allreduce_attn_rendezvous, ...). */
#define VKPROF_TF_COLLECTIVE_PREFIX "allreduce_"
#define VKPROF_TF_PROBE_SUFFIX "_rendezvous"

/* ---- metadata ---------------------------------------------------------------- */

#define VKPROF_TF_META "metadata"
#define VKPROF_TF_META_FORMAT "trace_format" /* VKPROF_TF_VERSION */
#define VKPROF_TF_META_VERSION "vkprof_version"
#define VKPROF_TF_META_DEVICE "device"
#define VKPROF_TF_META_DRIVER "driver"
#define VKPROF_TF_META_DROPPED_EVENTS "dropped_events"
#define VKPROF_TF_META_DROPPED_ANNOTATIONS "dropped_annotations"
#define VKPROF_TF_META_UNMAPPED_GPU_SCOPES "unmapped_gpu_scopes"
#define VKPROF_TF_META_EVENT_CAPACITY "event_capacity"
#define VKPROF_TF_META_HOST_SPANS "host_spans"
#define VKPROF_TF_META_GPU_SCOPES "gpu_scopes"
#define VKPROF_TF_META_FLOWS "flows"
#define VKPROF_TF_META_TRACE_START "trace_start_monotonic_ns"
#define VKPROF_TF_META_STEPS "steps"
#define VKPROF_TF_META_TIMESTAMP_PERIOD "timestamp_period_ns"
#define VKPROF_TF_META_TIMESTAMP_BITS "timestamp_valid_bits"

/* The event store: which events the trace holds (desc.trace_keep) and, when
 * it could not hold them all, from when to when it is whole. */
#define VKPROF_TF_META_TRACE_KEEP "trace_keep" /* "first" or "last" */
#define VKPROF_TF_KEEP_FIRST "first"
#define VKPROF_TF_KEEP_LAST "last"
#define VKPROF_TF_META_EVENTS_RECORDED "events_recorded"       /* events the store was given */
#define VKPROF_TF_META_OVERWRITTEN_EVENTS "overwritten_events" /* "last": wrapped over */
/* "first", full: the store filled at this CLOCK_MONOTONIC ns, and the trace
 * holds nothing after it (0: it never filled) */
#define VKPROF_TF_META_COMPLETE_UNTIL "complete_until_monotonic_ns"
/* "last", wrapped: the trace holds nothing before this CLOCK_MONOTONIC ns (0:
 * it never wrapped) */
#define VKPROF_TF_META_COMPLETE_FROM "complete_from_monotonic_ns"
/* desc.trace_label of the (first) context, "" none */
#define VKPROF_TF_META_LABEL "label"
/* A trace of several contexts (vkprof_trace_write_set): each one's own
 * metadata (the keys above that describe one context), in an array; the
 * top level then holds the sums, the largest, or "mixed". */
#define VKPROF_TF_META_CONTEXTS "contexts"
/* a set: the index in contexts[] of the context whose steps are the token
 * events (the others' steps are the same tokens, not written again) */
#define VKPROF_TF_META_TOKEN_CONTEXT "token_context"
#define VKPROF_TF_CTX_QUEUE_FAMILY "queue_family"
#define VKPROF_TF_CTX_QUEUE_INDEX "queue_index"
#define VKPROF_TF_CTX_GPU_TID "gpu_tid"           /* its queue's track */
#define VKPROF_TF_CTX_DEVICE_INDEX "device_index" /* one VkDevice, one number, from 0 */
#define VKPROF_TF_MIXED "mixed"

/* metadata.process: which process on which boot of which host wrote the
 * trace. Traces with the same boot_id share CLOCK_MONOTONIC, so `vkprof
 * merge` places them exactly; across boots or hosts it needs an alignment. */
#define VKPROF_TF_META_PROCESS "process"
#define VKPROF_TF_PROC_BOOT_ID "boot_id" /* /proc/sys/kernel/random/boot_id; "" if unreadable */
#define VKPROF_TF_PROC_HOST "host"       /* gethostname(); "" if unknown */
#define VKPROF_TF_PROC_PID "pid"         /* getpid() */

/* metadata.merge: written by `vkprof merge` (docs/trace-format.md, "Merging
 * traces"). Input k (from 0) becomes host pid 2k+1 and GPU pid 2k+2, so input
 * 0 keeps the pids of an unmerged trace. */
#define VKPROF_TF_MERGE_HOST_PID(k) (2 * (k) + 1)
#define VKPROF_TF_MERGE_GPU_PID(k) (2 * (k) + 2)
#define VKPROF_TF_META_MERGE "merge"
#define VKPROF_TF_MERGE_METHOD "method" /* "same_boot" when every input is, else "rendezvous" */
#define VKPROF_TF_MERGE_REFERENCE "reference" /* the input whose clock is the merged one: 0 */
#define VKPROF_TF_MERGE_INPUTS "inputs"       /* an array, one object per input: */
#define VKPROF_TF_MERGE_FILE "file"           /* the file name as given */
#define VKPROF_TF_MERGE_NAME "name"           /* "rank k", or from --names */
#define VKPROF_TF_MERGE_HOST_PID_KEY "host_pid"
#define VKPROF_TF_MERGE_GPU_PID_KEY "gpu_pid"
#define VKPROF_TF_MERGE_OFFSET "offset_ns"           /* its clock minus the reference's */
#define VKPROF_TF_MERGE_ERROR_BOUND "error_bound_ns" /* |offset error| <= this */
#define VKPROF_TF_MERGE_INPUT_METHOD "method"        /* VKPROF_TF_MERGE_SAME_BOOT / _RENDEZVOUS */
#define VKPROF_TF_MERGE_MATCHED "matched_probes"     /* probes the estimate used */
#define VKPROF_TF_MERGE_SHIFT "shift_ns"      /* added to its ts (in ns) to place it in the merge */
#define VKPROF_TF_MERGE_INPUT_META "metadata" /* its whole metadata, as it was */
#define VKPROF_TF_MERGE_SAME_BOOT "same_boot"
#define VKPROF_TF_MERGE_RENDEZVOUS "rendezvous"

#define VKPROF_TF_META_CALIBRATION "calibration"
#define VKPROF_TF_CAL_METHOD "method"
#define VKPROF_TF_CAL_EXTENSION "extension"
#define VKPROF_TF_CAL_HOST_DOMAIN "host_domain"
#define VKPROF_TF_CAL_ERROR_BOUND "error_bound_ns"
#define VKPROF_TF_CAL_POINTS "points"
#define VKPROF_TF_CAL_RECALIBRATIONS "recalibrations"
#define VKPROF_TF_CAL_DRIFT_PPM "drift_ppm"
/* the check in use (vkprof_calibration): executions checked against their
 * submit-to-read windows, those outside, and, when the calibrated clock was
 * found inconsistent with the stamps, by how much (ns, + after) */
#define VKPROF_TF_CAL_WINDOW_CHECKS "window_checks"
#define VKPROF_TF_CAL_WINDOW_VIOLATIONS "window_violations"
#define VKPROF_TF_CAL_INCONSISTENT "inconsistent"
#define VKPROF_TF_CAL_INCONSISTENT_NS "inconsistent_offset_ns"
#define VKPROF_TF_CAL_DRIFT_DECIMALS 4 /* drift_ppm is written with 4 decimals */

/* metadata.host_clock: the clock host spans were timed with. Spans' ts and
 * dur are CLOCK_MONOTONIC either way; with a counter they were mapped from
 * its ticks through calibration points against CLOCK_MONOTONIC. */
#define VKPROF_TF_META_HOST_CLOCK "host_clock"
#define VKPROF_TF_HCLK_SOURCE "source" /* "tsc", "cntvct_el0", "CLOCK_MONOTONIC", "simulated" */
#define VKPROF_TF_HCLK_REASON "reason" /* why this clock when not the default ("" if it is) */
#define VKPROF_TF_HCLK_HZ "counter_hz" /* the calibrated frequency, rounded; 1e9 for MONOTONIC */
#define VKPROF_TF_HCLK_RATE_NUM "ns_per_tick_num" /* the duration rate: num / den ns per tick */
#define VKPROF_TF_HCLK_RATE_DEN "ns_per_tick_den"
#define VKPROF_TF_HCLK_ERROR_BOUND "error_bound_ns" /* worst point error + worst residual */
#define VKPROF_TF_HCLK_RESIDUAL "residual_ns"       /* worst unforeseen drift at a new point */
#define VKPROF_TF_HCLK_POINTS "points"

#define VKPROF_TF_META_CLOCK_ANCHOR "clock_anchor"
#define VKPROF_TF_ANCHOR_REALTIME "realtime_ns"
#define VKPROF_TF_ANCHOR_MONOTONIC "monotonic_ns"
#define VKPROF_TF_ANCHOR_ERROR "error_ns"

/* metadata.gpu_sampling: vkprof_get_timing_stats() when the trace was written */
#define VKPROF_TF_META_SAMPLING "gpu_sampling"
#define VKPROF_TF_SAMP_MODE "mode" /* VKPROF_TF_MODE_* */
#define VKPROF_TF_SAMP_EVERY_N "every_n_steps"
#define VKPROF_TF_SAMP_TIMED_STEPS "timed_steps"
#define VKPROF_TF_SAMP_RECORDED "scopes_recorded"
#define VKPROF_TF_SAMP_SAMPLES "samples"
#define VKPROF_TF_SAMP_SUBMISSIONS "submissions"
#define VKPROF_TF_SAMP_COLLECTED "scopes_collected"
#define VKPROF_TF_SAMP_DROPPED "scopes_dropped" /* the sum of lost.* */
#define VKPROF_TF_SAMP_PENDING "scopes_pending"
/* recorded into buffers never submitted (vkprof_cmd_discard): no samples */
#define VKPROF_TF_SAMP_DISCARDED "scopes_discarded"
/* Ring mode: phase calls stamped or not (calls_executed = the phases' calls;
 * calls_unstamped: left out by every_n_steps or rotation, neither timed nor
 * lost), and rotating sampling (rotate_scopes phase calls stamped a step, 0:
 * not rotating; rotate_period: steps a pass over every call index takes;
 * rotate_changed_steps: steps whose call count differed from the step
 * before). Always written; 0 where they do not apply. */
#define VKPROF_TF_SAMP_CALLS_EXECUTED "calls_executed"
#define VKPROF_TF_SAMP_CALLS_UNSTAMPED "calls_unstamped"
#define VKPROF_TF_SAMP_ROTATE_SCOPES "rotate_scopes"
#define VKPROF_TF_SAMP_ROTATE_PERIOD "rotate_period"
#define VKPROF_TF_SAMP_ROTATE_CHANGED "rotate_changed_steps"
#define VKPROF_TF_SAMP_LOST "lost" /* an object: one count per reason below */
/* true when every call of each step was timed (no rotation, no
 * every_n_steps, no call left out, and the app did not say it times only
 * part of each step: desc.trace_gpu_busy); then the GPU's busy and idle time
 * per step is measured (the busy counter, vkprof report's busy/idle). false:
 * work not timed would read as idle, and neither is given. Absent in older
 * traces. */
#define VKPROF_TF_SAMP_WHOLE_STEPS "whole_steps"
/* true when the GPU's busy and idle time per step is measured: every call
 * of each step was timed (whole_steps), or each step's work lay inside the
 * scopes of outer phases (below), stamped in every step whatever the
 * rotating window (vkprof_set_phase_flags, desc.trace_gpu_busy ENABLED).
 * The busy counter is written, and vkprof report gives busy/idle, only then.
 * Absent in older traces (whole_steps then says it). */
#define VKPROF_TF_SAMP_BUSY_MEASURED "busy_measured"
/* the names of the outer phases (VKPROF_PHASE_FLAG_OUTER): their slices hold
 * other slices' work (a whole command buffer), so they are no part of the
 * split per phase. An array of strings; absent when there are none. */
#define VKPROF_TF_SAMP_OUTER_PHASES "outer_phases"
/* Each phase's estimate, where the GPU slices are a sample (rotation,
 * every_n_steps, calls left unstamped): an object keyed by phase name, each
 * {"calls": calls executed, "timed": its slices (scopes folded), "est_total_ns":
 * the library's estimate of all its calls (vkprof_phase_stats.est_total_ns),
 * "outer": true for an outer phase}, summed over the contexts that wrote
 * the trace. Absent when every call was timed (the slices are the whole). */
#define VKPROF_TF_SAMP_ESTIMATES "estimates"
#define VKPROF_TF_EST_CALLS "calls"
#define VKPROF_TF_EST_TIMED "timed"
#define VKPROF_TF_EST_TOTAL "est_total_ns"
#define VKPROF_TF_EST_OUTER "outer"
#define VKPROF_TF_MODE_RING "ring"
#define VKPROF_TF_MODE_2SLOT "2slot"

/* Why a GPU sample was lost: X(id, key, text), in the order of the lost_*
 * fields of vkprof_timing_stats (include/vkprof/vkprof.h). `id` names the
 * field (lost_<id>), `key` is its key in metadata.gpu_sampling.lost, `text`
 * how `vkprof report` says it. trace_json.c asserts at compile time that
 * every lost_* field of vkprof_timing_stats is listed here, in this order. */
#define VKPROF_TF_LOST_REASONS(X)                                                                  \
    X(ring_full, "ring_full", "ring full")                                                         \
    X(overwritten, "overwritten", "overwritten")                                                   \
    X(never_submitted, "never_submitted", "never submitted")                                       \
    X(reset, "reset", "reset")                                                                     \
    X(misuse, "misuse", "misuse")                                                                  \
    X(backwards, "backwards", "end before begin")                                                  \
    X(stale, "stale", "stale: began before it was recorded")

enum vkprof_tf_lost {
#define VKPROF_TF_LOST_ENUM_(id, key, text) VKPROF_TF_LOST_##id,
    VKPROF_TF_LOST_REASONS(VKPROF_TF_LOST_ENUM_)
#undef VKPROF_TF_LOST_ENUM_
        VKPROF_TF_LOST_COUNT
};

#endif
