/* The vkprof layout of a native Perfetto trace (.pftrace): the sequence
 * ids, clock ids, track uuids and interned ids that the writer
 * (src/export/trace_pftrace.c) and the reader of `vkprof report`
 * (tools/report/pftrace_reader.c) share, and Perfetto's field numbers they
 * use (src/export/perfetto_trace.proto has the same numbers as a schema).
 * docs/trace-format.md, "Native Perfetto traces", describes the layout.
 *
 * Vulkan-free, and a shared internal like trace_format.h (src/internal.cmake). */
#ifndef VKPROF_EXPORT_PFTRACE_FORMAT_H
#define VKPROF_EXPORT_PFTRACE_FORMAT_H

/* ---- Perfetto's field numbers (perfetto_trace.proto) ------------------- */

#define PF_TRACE_PACKET 1

#define PF_PKT_CLOCK_SNAPSHOT 6
#define PF_PKT_TIMESTAMP 8
#define PF_PKT_SEQ_ID 10 /* trusted_packet_sequence_id */
#define PF_PKT_TRACK_EVENT 11
#define PF_PKT_INTERNED_DATA 12
#define PF_PKT_SEQ_FLAGS 13
#define PF_PKT_TIMESTAMP_CLOCK_ID 58
#define PF_PKT_DEFAULTS 59 /* TracePacketDefaults */
#define PF_PKT_TRACK_DESCRIPTOR 60
#define PF_PKT_FIRST_ON_SEQUENCE 87

#define PF_SEQ_INCREMENTAL_STATE_CLEARED 1
#define PF_SEQ_NEEDS_INCREMENTAL_STATE 2

#define PF_DEFAULTS_CLOCK_ID 58
#define PF_DEFAULTS_TRACK_EVENT 11 /* TrackEventDefaults */
#define PF_TE_DEFAULTS_TRACK_UUID 11

#define PF_CS_CLOCKS 1
#define PF_CS_PRIMARY 2
#define PF_CLOCK_ID 1
#define PF_CLOCK_TIMESTAMP 2
#define PF_CLOCK_INCREMENTAL 3
#define PF_CLOCK_UNIT_NS 4

#define PF_TD_UUID 1
#define PF_TD_NAME 2
#define PF_TD_PROCESS 3
#define PF_TD_THREAD 4
#define PF_TD_PARENT 5
#define PF_TD_COUNTER 8 /* CounterDescriptor: the track is a counter */
#define PF_CD_UNIT_NAME 6
#define PF_PD_PID 1
#define PF_PD_NAME 6
#define PF_THD_PID 1
#define PF_THD_TID 2
#define PF_THD_NAME 5

#define PF_TE_CATEGORY_IIDS 3
#define PF_TE_ANNOTATIONS 4
#define PF_TE_TYPE 9
#define PF_TE_NAME_IID 10
#define PF_TE_TRACK_UUID 11
#define PF_TE_CATEGORIES 22
#define PF_TE_NAME 23
#define PF_TE_FLOW_IDS 47             /* fixed64 */
#define PF_TE_TERMINATING_FLOW_IDS 48 /* fixed64 */
#define PF_TYPE_SLICE_BEGIN 1
#define PF_TYPE_SLICE_END 2
#define PF_TYPE_INSTANT 3
#define PF_TYPE_COUNTER 4
#define PF_TE_DOUBLE_COUNTER_VALUE 44 /* double */

#define PF_DA_NAME_IID 1
#define PF_DA_BOOL 2
#define PF_DA_UINT 3
#define PF_DA_INT 4
#define PF_DA_DOUBLE 5
#define PF_DA_STRING 6
#define PF_DA_NAME 10
#define PF_DA_DICT 11

#define PF_ID_CATEGORIES 1 /* InternedData.event_categories */
#define PF_ID_NAMES 2      /* .event_names */
#define PF_ID_ANNOT_NAMES 3
#define PF_IID 1 /* EventCategory / EventName / DebugAnnotationName */
#define PF_IID_NAME 2

/* BuiltinClock */
#define PF_CLOCK_REALTIME 1
#define PF_CLOCK_MONOTONIC 3
#define PF_CLOCK_BOOTTIME 6

/* ---- vkprof's layout --------------------------------------------------- */

/* Sequence 1 holds the process-wide packets: the clock snapshots (MONOTONIC
 * with BOOTTIME and REALTIME; MONOTONIC with the GPU's ticks at each
 * calibration point), the host process and GPU tracks, the metadata.
 * Sequence VKPROF_PF_SEQ_FIRST_TRACK + k holds track k's packets (a host
 * thread or a GPU queue). */
#define VKPROF_PF_SEQ_PROCESS 1u
#define VKPROF_PF_SEQ_FIRST_TRACK 2u

/* Sequence-scoped clocks (64..127). Every track sequence's events are
 * timestamped in VKPROF_PF_CLOCK_DELTA: CLOCK_MONOTONIC ns, each packet's
 * timestamp a delta from the previous one (is_incremental), anchored by a
 * snapshot at the sequence's start. VKPROF_PF_CLOCK_GPU (on sequence 1) is
 * the device's timestamp counter. */
#define VKPROF_PF_CLOCK_DELTA 64u
#define VKPROF_PF_CLOCK_GPU 65u

/* Track uuids */
#define VKPROF_PF_UUID_HOST 1u                         /* the host process */
#define VKPROF_PF_UUID_GPU 2u                          /* the GPU (a track, not a process) */
#define VKPROF_PF_UUID_THREAD(tid) (0x100u + (tid))    /* host thread vkprof tid */
#define VKPROF_PF_UUID_QUEUE(gtid) (0x20000u + (gtid)) /* GPU queue (VKPROF_TF_GPU_TID) */
/* A GPU queue's busy counter (issue 26): a counter track, child of the GPU,
 * named VKPROF_TF_BUSY_PREFIX and the queue's name, on a sequence of its
 * own; a TYPE_COUNTER event at each step's start, double_counter_value the
 * percentage (the JSON trace's value) */
#define VKPROF_PF_UUID_BUSY(gtid) (0x30000u + (gtid))
/* A track's overlap level L >= 1 (slices that do not nest on the track go
 * to the first level where they do): a child track of the track. */
#define VKPROF_PF_UUID_LEVEL(uuid, level) ((uuid) + ((uint64_t)(level) << 32))

/* ThreadDescriptor.tid of vkprof thread `tid`: vkprof numbers its threads in
 * order of first use and does not record the kernel's tid; the offset keeps
 * them clear of every real tid (the kernel's pid_max is at most 2^22). */
#define VKPROF_PF_TID_BASE 0x40000000u

/* Interned ids fixed per sequence (categories and debug annotation names);
 * event names get iids from 1 in order of first use; span annotation keys
 * get annotation-name iids from VKPROF_PF_AN_FIRST_FREE. */
#define VKPROF_PF_CAT_STEP 1u /* slices have none: their track's kind is it */
#define VKPROF_PF_AN_STEP 1u
#define VKPROF_PF_AN_HOT 2u
#define VKPROF_PF_AN_SYNC 3u
#define VKPROF_PF_AN_PROBE 4u
#define VKPROF_PF_AN_FIRST_FREE 5u

/* The metadata: one TYPE_INSTANT event on the host process track at the
 * trace start, of this name and category, whose debug annotations are the
 * JSON trace's metadata object (nested objects as dict_entries). */
#define VKPROF_PF_META_EVENT "vkprof metadata"
#define VKPROF_PF_META_CATEGORY "metadata"
/* metadata.perfetto: how this file maps onto the JSON trace */
#define VKPROF_PF_META_PERFETTO "perfetto"

#endif
