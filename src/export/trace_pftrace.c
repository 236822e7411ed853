/* The trace as a native Perfetto trace (.pftrace; docs/trace-format.md,
 * "Native Perfetto traces"): the same events, tracks, flows and metadata as
 * the JSON trace (trace_json.c), in Perfetto's protobuf format, encoded by
 * export/pb.h, laid out as export/pftrace_format.h says, written through the
 * atomic file. */
#define _GNU_SOURCE /* CLOCK_BOOTTIME */
#include "base/base.h"
#include "clock/clock.h"
#include "timeline/store.h"
#include "export/export_events.h"

#include "export/atomic_file.h"
#include "export/export.h"
#include "export/pb.h"
#include "export/pftrace_format.h"
#include "export/trace_format.h"

#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Bytes encoded before they go to the file in one write. */
#define FLUSH_AT ((size_t)1 << 20)

/* ---- the writer --------------------------------------------------------- */

typedef struct pf_writer {
    vkprof_afile *f;
    vkprof_pb b;
    /* the current sequence */
    uint32_t seq;
    uint64_t last_ts; /* the delta clock's value */
    uint32_t next_name_iid;
    /* a thread's sequence holds the spans of every context: (context, bucket) */
    uint32_t host_iid[VKPROF_TRACE_SET_MAX * VKPROF_MAX_BUCKETS], gpu_iid[VKPROF_MAX_PHASES];
    uint32_t token_iid, nsrc;
    const char *an_key[VKPROF_PF_AN_FIRST_FREE + 64];
    uint32_t an_keys;
} pf_writer;

static void maybe_flush(pf_writer *w)
{
    if (w->b.len >= FLUSH_AT && vkprof__pb_ok(&w->b)) {
        vkprof__afile_write(w->f, w->b.buf, w->b.len);
        w->b.len = 0;
    }
}

static void interned_entry(vkprof_pb *b, uint32_t list, uint64_t iid, const char *name)
{
    size_t e = vkprof__pb_open(b, list);
    vkprof__pb_uint(b, PF_IID, iid);
    vkprof__pb_string(b, PF_IID_NAME, name);
    vkprof__pb_close(b, e);
}

/* The first packet of a track's sequence: incremental state cleared, the
 * defaults (the delta clock, the track), the fixed interned ids, and the
 * snapshot that anchors the delta clock at t_base. */
static void begin_sequence(pf_writer *w, uint32_t seq, uint64_t track_uuid, bool gpu,
                           uint64_t t_base)
{
    vkprof_pb *b = &w->b;
    w->seq = seq;
    w->last_ts = t_base;
    w->next_name_iid = 1;
    memset(w->host_iid, 0, (size_t)w->nsrc * VKPROF_MAX_BUCKETS * sizeof w->host_iid[0]);
    memset(w->gpu_iid, 0, sizeof w->gpu_iid);
    w->token_iid = 0;
    w->an_keys = 0;

    size_t p = vkprof__pb_open(b, PF_TRACE_PACKET);
    vkprof__pb_uint(b, PF_PKT_SEQ_ID, seq);
    vkprof__pb_uint(b, PF_PKT_SEQ_FLAGS, PF_SEQ_INCREMENTAL_STATE_CLEARED);
    vkprof__pb_uint(b, PF_PKT_FIRST_ON_SEQUENCE, 1);
    size_t d = vkprof__pb_open(b, PF_PKT_DEFAULTS);
    vkprof__pb_uint(b, PF_DEFAULTS_CLOCK_ID, VKPROF_PF_CLOCK_DELTA);
    size_t te = vkprof__pb_open(b, PF_DEFAULTS_TRACK_EVENT);
    vkprof__pb_uint(b, PF_TE_DEFAULTS_TRACK_UUID, track_uuid);
    vkprof__pb_close(b, te);
    vkprof__pb_close(b, d);
    size_t id = vkprof__pb_open(b, PF_PKT_INTERNED_DATA);
    /* slices carry no category: the track says it (host thread: "host",
     * GPU queue: "gpu"), which keeps a span within 32 bytes; steps do */
    if (!gpu) {
        interned_entry(b, PF_ID_CATEGORIES, VKPROF_PF_CAT_STEP, VKPROF_TF_CAT_STEP);
    }
    interned_entry(b, PF_ID_ANNOT_NAMES, VKPROF_PF_AN_STEP, VKPROF_TF_ARG_STEP);
    if (!gpu) {
        interned_entry(b, PF_ID_ANNOT_NAMES, VKPROF_PF_AN_HOT, VKPROF_TF_ARG_HOT);
        interned_entry(b, PF_ID_ANNOT_NAMES, VKPROF_PF_AN_SYNC, VKPROF_TF_ARG_SYNC);
        interned_entry(b, PF_ID_ANNOT_NAMES, VKPROF_PF_AN_PROBE, VKPROF_TF_ARG_PROBE);
    }
    vkprof__pb_close(b, id);
    size_t cs = vkprof__pb_open(b, PF_PKT_CLOCK_SNAPSHOT);
    size_t c = vkprof__pb_open(b, PF_CS_CLOCKS);
    vkprof__pb_uint(b, PF_CLOCK_ID, VKPROF_PF_CLOCK_DELTA);
    vkprof__pb_uint(b, PF_CLOCK_TIMESTAMP, t_base);
    vkprof__pb_uint(b, PF_CLOCK_INCREMENTAL, 1);
    vkprof__pb_close(b, c);
    c = vkprof__pb_open(b, PF_CS_CLOCKS);
    vkprof__pb_uint(b, PF_CLOCK_ID, PF_CLOCK_MONOTONIC);
    vkprof__pb_uint(b, PF_CLOCK_TIMESTAMP, t_base);
    vkprof__pb_close(b, c);
    vkprof__pb_close(b, cs);
    vkprof__pb_close(b, p);
}

static void track_descriptor(pf_writer *w, uint64_t uuid, uint64_t parent, const char *name,
                             int64_t pid, int64_t tid, bool thread)
{
    vkprof_pb *b = &w->b;
    size_t p = vkprof__pb_open(b, PF_TRACE_PACKET);
    vkprof__pb_uint(b, PF_PKT_SEQ_ID, w->seq);
    size_t td = vkprof__pb_open(b, PF_PKT_TRACK_DESCRIPTOR);
    vkprof__pb_uint(b, PF_TD_UUID, uuid);
    if (parent != 0) {
        vkprof__pb_uint(b, PF_TD_PARENT, parent);
    }
    if (thread) {
        size_t t = vkprof__pb_open(b, PF_TD_THREAD);
        vkprof__pb_int(b, PF_THD_PID, pid);
        vkprof__pb_int(b, PF_THD_TID, tid);
        vkprof__pb_string(b, PF_THD_NAME, name);
        vkprof__pb_close(b, t);
    } else if (pid != 0) {
        size_t pd = vkprof__pb_open(b, PF_TD_PROCESS);
        vkprof__pb_int(b, PF_PD_PID, pid);
        vkprof__pb_string(b, PF_PD_NAME, name);
        vkprof__pb_close(b, pd);
    } else {
        vkprof__pb_string(b, PF_TD_NAME, name);
    }
    vkprof__pb_close(b, td);
    vkprof__pb_close(b, p);
}

/* A packet on the current sequence at ts: the delta (ts is never behind the
 * sequence's clock: events go out in time order; should one not, it is
 * written on CLOCK_MONOTONIC itself, never clamped). Returns the packet. */
static size_t event_packet(pf_writer *w, uint64_t ts, bool needs_state)
{
    vkprof_pb *b = &w->b;
    size_t p = vkprof__pb_open(b, PF_TRACE_PACKET);
    if (ts >= w->last_ts) {
        vkprof__pb_uint(b, PF_PKT_TIMESTAMP, ts - w->last_ts);
        w->last_ts = ts;
    } else {
        vkprof__pb_uint(b, PF_PKT_TIMESTAMP, ts);
        vkprof__pb_uint(b, PF_PKT_TIMESTAMP_CLOCK_ID, PF_CLOCK_MONOTONIC);
    }
    vkprof__pb_uint(b, PF_PKT_SEQ_ID, w->seq);
    if (needs_state) {
        vkprof__pb_uint(b, PF_PKT_SEQ_FLAGS, PF_SEQ_NEEDS_INCREMENTAL_STATE);
    }
    return p;
}

/* The event name's iid on this sequence, interning it in this packet
 * (before its track_event) the first time. */
static uint32_t name_iid(pf_writer *w, uint32_t *slot, const char *name)
{
    if (*slot == 0) {
        *slot = w->next_name_iid++;
        size_t id = vkprof__pb_open(&w->b, PF_PKT_INTERNED_DATA);
        interned_entry(&w->b, PF_ID_NAMES, *slot, name);
        vkprof__pb_close(&w->b, id);
    }
    return *slot;
}

/* A span annotation key's iid (keys are few: linear search by text). 0 when
 * the table is full: then the key goes by name. */
static uint32_t annot_iid(pf_writer *w, const char *key, size_t *interned)
{
    for (uint32_t i = 0; i < w->an_keys; i++) {
        if (strcmp(w->an_key[i], key) == 0) {
            return VKPROF_PF_AN_FIRST_FREE + i;
        }
    }
    if (w->an_keys >= 64) {
        return 0;
    }
    if (*interned == SIZE_MAX) {
        *interned = vkprof__pb_open(&w->b, PF_PKT_INTERNED_DATA);
    }
    w->an_key[w->an_keys] = key;
    uint32_t iid = VKPROF_PF_AN_FIRST_FREE + w->an_keys++;
    interned_entry(&w->b, PF_ID_ANNOT_NAMES, iid, key);
    return iid;
}

static void annot_uint(vkprof_pb *b, uint32_t iid, uint64_t v)
{
    size_t a = vkprof__pb_open(b, PF_TE_ANNOTATIONS);
    vkprof__pb_uint(b, PF_DA_NAME_IID, iid);
    vkprof__pb_uint(b, PF_DA_UINT, v);
    vkprof__pb_close(b, a);
}

static void annot_true(vkprof_pb *b, uint32_t iid)
{
    size_t a = vkprof__pb_open(b, PF_TE_ANNOTATIONS);
    vkprof__pb_uint(b, PF_DA_NAME_IID, iid);
    vkprof__pb_uint(b, PF_DA_BOOL, 1);
    vkprof__pb_close(b, a);
}

/* A span's annotations or a GPU scope's args (an may be NULL): string debug
 * annotations, the key by its iid (annot_iid), or by name when that is 0. */
static void annots(vkprof_pb *b, const vkprof_annot *an, const uint32_t *an_iid)
{
    for (uint32_t k = 0; an != NULL && k < an->count && k < VKPROF_SPAN_MAX_ANNOTATIONS; k++) {
        size_t a = vkprof__pb_open(b, PF_TE_ANNOTATIONS);
        if (an_iid[k] != 0) {
            vkprof__pb_uint(b, PF_DA_NAME_IID, an_iid[k]);
        } else {
            vkprof__pb_string(b, PF_DA_NAME, an->key[k]);
        }
        vkprof__pb_string(b, PF_DA_STRING, an->value[k]);
        vkprof__pb_close(b, a);
    }
}

/* ---- the slices of one track, BEGIN/END in time order ------------------- */

typedef struct pf_level {
    uint64_t *end; /* the open slices' ends, innermost last */
    size_t n, cap;
    bool described;
} pf_level;

typedef struct pf_track {
    pf_level *lv;
    size_t nlv;
    uint64_t uuid;
    const char *name;
    uint64_t overlaps; /* slices that went to a level >= 1 */
} pf_track;

static void end_packet(pf_writer *w, pf_track *t, size_t level)
{
    pf_level *l = &t->lv[level];
    uint64_t ts = l->end[--l->n];
    vkprof_pb *b = &w->b;
    if (level == 0 && ts >= w->last_ts && w->seq < 0x80u && vkprof__pb_room(b, 24)) {
        /* the common END, byte by byte: every length fits one byte */
        uint8_t *q = b->buf + b->len, *start = q;
        *q++ = (PF_TRACE_PACKET << 3) | VKPROF_PB_LEN;
        uint8_t *len = q++;
        *q++ = (PF_PKT_TIMESTAMP << 3) | VKPROF_PB_VARINT;
        q += vkprof__pb_put_varint(q, ts - w->last_ts);
        *q++ = (PF_PKT_SEQ_ID << 3) | VKPROF_PB_VARINT;
        *q++ = (uint8_t)w->seq;
        *q++ = (PF_PKT_TRACK_EVENT << 3) | VKPROF_PB_LEN;
        *q++ = 2;
        *q++ = (PF_TE_TYPE << 3) | VKPROF_PB_VARINT;
        *q++ = PF_TYPE_SLICE_END;
        *len = (uint8_t)(q - len - 1);
        b->len += (size_t)(q - start);
        w->last_ts = ts;
        return;
    }
    size_t p = event_packet(w, ts, false);
    size_t te = vkprof__pb_open(b, PF_PKT_TRACK_EVENT);
    vkprof__pb_uint(b, PF_TE_TYPE, PF_TYPE_SLICE_END);
    if (level > 0) {
        vkprof__pb_uint(b, PF_TE_TRACK_UUID, VKPROF_PF_UUID_LEVEL(t->uuid, level));
    }
    vkprof__pb_close(b, te);
    vkprof__pb_close(b, p);
}

/* END every open slice that ends at or before ts, earliest first. */
static void close_until(pf_writer *w, pf_track *t, uint64_t ts)
{
    if (t->nlv == 1) {
        pf_level *lv = &t->lv[0];
        while (lv->n > 0 && lv->end[lv->n - 1] <= ts) {
            end_packet(w, t, 0);
        }
        return;
    }
    for (;;) {
        size_t best = SIZE_MAX;
        uint64_t best_end = ts;
        for (size_t l = 0; l < t->nlv; l++) {
            pf_level *lv = &t->lv[l];
            if (lv->n > 0 && lv->end[lv->n - 1] <= best_end) {
                best_end = lv->end[lv->n - 1];
                best = l;
            }
        }
        if (best == SIZE_MAX) {
            return;
        }
        end_packet(w, t, best);
    }
}

/* The level a slice [start, end) nests in (after close_until(start)); the
 * levels grow as needed. SIZE_MAX when out of memory. */
static size_t pick_level(pf_track *t, uint64_t end)
{
    size_t l = 0;
    for (; l < t->nlv; l++) {
        pf_level *lv = &t->lv[l];
        if (lv->n == 0 || lv->end[lv->n - 1] >= end) {
            break;
        }
    }
    if (l == t->nlv) {
        pf_level *nl = realloc(t->lv, (t->nlv + 1) * sizeof *nl);
        if (nl == NULL) {
            return SIZE_MAX;
        }
        t->lv = nl;
        memset(&t->lv[t->nlv], 0, sizeof *t->lv);
        t->nlv++;
    }
    pf_level *lv = &t->lv[l];
    if (lv->n == lv->cap) {
        size_t cap = lv->cap ? lv->cap * 2 : 64;
        uint64_t *e = realloc(lv->end, cap * sizeof *e);
        if (e == NULL) {
            return SIZE_MAX;
        }
        lv->end = e;
        lv->cap = cap;
    }
    return l;
}

static void track_free(pf_track *t)
{
    for (size_t l = 0; l < t->nlv; l++) {
        free(t->lv[l].end);
    }
    free(t->lv);
    t->lv = NULL;
    t->nlv = 0;
}

typedef struct pf_counts {
    uint64_t host_spans, gpu_scopes, steps, overlaps;
} pf_counts;

/* The flows: a GPU scope's (the flow number that ends at it), a span's (the
 * numbers that start at it), by the event's index in the walk; NULL while
 * the trace has none. */
typedef struct pf_flows {
    uint64_t *of;            /* GPU scope: the flow that ends here, or 0 */
    uint32_t *first, *count; /* host span: its flows in ids[] */
    uint64_t *ids;
} pf_flows;

/* One slice's or step's BEGIN / INSTANT packet. */
static int emit_event(pf_writer *w, pf_track *t, const vkprof_xevent *e, const pf_flows *fl,
                      pf_counts *cnt)
{
    vkprof_pb *b = &w->b;
    const uint32_t idx = e->index;
    /* a GPU scope's flow, a span's flows */
    const uint64_t gflow = fl->of != NULL ? fl->of[idx] : 0;
    const uint32_t nflows = fl->count != NULL ? fl->count[idx] : 0;
    const uint64_t *flow_ids = nflows ? fl->ids + fl->first[idx] : NULL;
    close_until(w, t, e->start_ns);
    if (e->kind == VKPROF_EV_STEP) {
        size_t p = event_packet(w, e->start_ns, true);
        uint32_t iid = name_iid(w, &w->token_iid, VKPROF_TF_STEP_NAME);
        size_t te = vkprof__pb_open(b, PF_PKT_TRACK_EVENT);
        vkprof__pb_uint(b, PF_TE_TYPE, PF_TYPE_INSTANT);
        vkprof__pb_uint(b, PF_TE_NAME_IID, iid);
        vkprof__pb_uint(b, PF_TE_CATEGORY_IIDS, VKPROF_PF_CAT_STEP);
        annot_uint(b, VKPROF_PF_AN_STEP, e->step);
        vkprof__pb_close(b, te);
        vkprof__pb_close(b, p);
        cnt->steps++;
        return 0;
    }
    const bool gpu = e->kind == VKPROF_EV_GPU;
    const uint64_t start = e->start_ns;
    uint64_t end = e->end_ns >= start ? e->end_ns : start;
    size_t level = pick_level(t, end);
    if (level == SIZE_MAX) {
        return -1;
    }
    if (level > 0 && !t->lv[level].described) {
        char nm[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE + 256];
        snprintf(nm, sizeof nm, "%s (overlap %zu)", t->name, level);
        track_descriptor(w, VKPROF_PF_UUID_LEVEL(t->uuid, level), t->uuid, nm, 0, 0, false);
        t->lv[level].described = true;
    }
    if (level > 0) {
        t->overlaps++;
        cnt->overlaps++;
    }
    uint32_t *slot = gpu ? &w->gpu_iid[e->name_id % VKPROF_MAX_PHASES]
                         : &w->host_iid[(e->src % VKPROF_TRACE_SET_MAX) * VKPROF_MAX_BUCKETS +
                                        e->name_id % VKPROF_MAX_BUCKETS];
    if (level == 0 && *slot != 0 && e->annot == NULL && nflows <= 4 && start >= w->last_ts &&
        w->seq < 0x80u && vkprof__pb_room(b, 128)) {
        /* the common BEGIN, byte by byte: at most 11 + 2 + 2 + 2 + 2 + 2 + 6 +
         * (2 + 4 + 11) + 3 * 6 + 4 * 10 bytes, so every length fits one byte */
        uint8_t *q = b->buf + b->len, *begin = q;
        *q++ = (PF_TRACE_PACKET << 3) | VKPROF_PB_LEN;
        uint8_t *plen = q++;
        *q++ = (PF_PKT_TIMESTAMP << 3) | VKPROF_PB_VARINT;
        q += vkprof__pb_put_varint(q, start - w->last_ts);
        *q++ = (PF_PKT_SEQ_ID << 3) | VKPROF_PB_VARINT;
        *q++ = (uint8_t)w->seq;
        *q++ = (PF_PKT_SEQ_FLAGS << 3) | VKPROF_PB_VARINT;
        *q++ = PF_SEQ_NEEDS_INCREMENTAL_STATE;
        *q++ = (PF_PKT_TRACK_EVENT << 3) | VKPROF_PB_LEN;
        uint8_t *tlen = q++;
        *q++ = (PF_TE_TYPE << 3) | VKPROF_PB_VARINT;
        *q++ = PF_TYPE_SLICE_BEGIN;
        *q++ = (PF_TE_NAME_IID << 3) | VKPROF_PB_VARINT;
        q += vkprof__pb_put_varint(q, *slot);
        /* the step, then the flags that are set (name iid, bool true) */
        *q++ = (PF_TE_ANNOTATIONS << 3) | VKPROF_PB_LEN;
        uint8_t *alen = q++;
        *q++ = (PF_DA_NAME_IID << 3) | VKPROF_PB_VARINT;
        *q++ = VKPROF_PF_AN_STEP;
        *q++ = (PF_DA_UINT << 3) | VKPROF_PB_VARINT;
        q += vkprof__pb_put_varint(q, e->step);
        *alen = (uint8_t)(q - alen - 1);
        static const uint8_t flag_iid[3] = {VKPROF_PF_AN_HOT, VKPROF_PF_AN_SYNC,
                                            VKPROF_PF_AN_PROBE};
        static const uint8_t flag_bit[3] = {VKPROF_EVF_HOT, VKPROF_EVF_SYNC, VKPROF_EVF_PROBE};
        for (int k = 0; k < 3 && !gpu; k++) {
            if (e->flags & flag_bit[k]) {
                *q++ = (PF_TE_ANNOTATIONS << 3) | VKPROF_PB_LEN;
                *q++ = 4;
                *q++ = (PF_DA_NAME_IID << 3) | VKPROF_PB_VARINT;
                *q++ = flag_iid[k];
                *q++ = (PF_DA_BOOL << 3) | VKPROF_PB_VARINT;
                *q++ = 1;
            }
        }
        if (gpu && gflow != 0) {
            q += vkprof__pb_put_varint(q, (PF_TE_TERMINATING_FLOW_IDS << 3) | VKPROF_PB_FIXED64);
            for (int i = 0; i < 8; i++) {
                *q++ = (uint8_t)(gflow >> (8 * i));
            }
        }
        for (uint32_t k = 0; !gpu && k < nflows; k++) {
            const uint64_t id = flow_ids[k];
            q += vkprof__pb_put_varint(q, (PF_TE_FLOW_IDS << 3) | VKPROF_PB_FIXED64);
            for (int i = 0; i < 8; i++) {
                *q++ = (uint8_t)(id >> (8 * i));
            }
        }
        *tlen = (uint8_t)(q - tlen - 1);
        *plen = (uint8_t)(q - plen - 1);
        b->len += (size_t)(q - begin);
        w->last_ts = start;
        if (gpu) {
            cnt->gpu_scopes++;
        } else {
            cnt->host_spans++;
        }
        t->lv[0].end[t->lv[0].n++] = end;
        return 0;
    }
    size_t p = event_packet(w, start, true);
    uint32_t iid = name_iid(w, slot, e->name != NULL ? e->name : "?");
    /* span annotation and GPU arg keys are interned before the track_event too */
    uint32_t an_iid[VKPROF_SPAN_MAX_ANNOTATIONS] = {0};
    const vkprof_annot *an = e->annot;
    if (an != NULL) {
        size_t interned = SIZE_MAX;
        for (uint32_t k = 0; k < an->count && k < VKPROF_SPAN_MAX_ANNOTATIONS; k++) {
            an_iid[k] = annot_iid(w, an->key[k], &interned);
        }
        if (interned != SIZE_MAX) {
            vkprof__pb_close(b, interned);
        }
    }
    size_t te = vkprof__pb_open(b, PF_PKT_TRACK_EVENT);
    vkprof__pb_uint(b, PF_TE_TYPE, PF_TYPE_SLICE_BEGIN);
    vkprof__pb_uint(b, PF_TE_NAME_IID, iid);
    if (level > 0) {
        vkprof__pb_uint(b, PF_TE_TRACK_UUID, VKPROF_PF_UUID_LEVEL(t->uuid, level));
    }
    annot_uint(b, VKPROF_PF_AN_STEP, e->step);
    if (gpu) {
        cnt->gpu_scopes++;
        if (gflow != 0) {
            vkprof__pb_fixed64(b, PF_TE_TERMINATING_FLOW_IDS, gflow);
        }
        annots(b, an, an_iid); /* the scope's args (vkprof_cmd_end_args) */
    } else {
        cnt->host_spans++;
        if (e->flags & VKPROF_EVF_HOT) {
            annot_true(b, VKPROF_PF_AN_HOT);
        }
        if (e->flags & VKPROF_EVF_SYNC) {
            annot_true(b, VKPROF_PF_AN_SYNC);
        }
        if (e->flags & VKPROF_EVF_PROBE) {
            annot_true(b, VKPROF_PF_AN_PROBE);
        }
        annots(b, an, an_iid);
        for (uint32_t k = 0; k < nflows; k++) {
            vkprof__pb_fixed64(b, PF_TE_FLOW_IDS, flow_ids[k]);
        }
    }
    vkprof__pb_close(b, te);
    vkprof__pb_close(b, p);
    t->lv[level].end[t->lv[level].n++] = end;
    return 0;
}

/* ---- the metadata ------------------------------------------------------- */

/* An entry: at the top level a debug annotation, inside a dict an entry. */
static void kv_u64(vkprof_pb *b, uint32_t where, const char *key, uint64_t v)
{
    size_t a = vkprof__pb_open(b, where);
    vkprof__pb_string(b, PF_DA_NAME, key);
    vkprof__pb_uint(b, PF_DA_UINT, v);
    vkprof__pb_close(b, a);
}

static void kv_str(vkprof_pb *b, uint32_t where, const char *key, const char *v)
{
    size_t a = vkprof__pb_open(b, where);
    vkprof__pb_string(b, PF_DA_NAME, key);
    vkprof__pb_string(b, PF_DA_STRING, v ? v : "");
    vkprof__pb_close(b, a);
}

static void kv_f64(vkprof_pb *b, uint32_t where, const char *key, double v)
{
    size_t a = vkprof__pb_open(b, where);
    vkprof__pb_string(b, PF_DA_NAME, key);
    vkprof__pb_double(b, PF_DA_DOUBLE, v);
    vkprof__pb_close(b, a);
}

static void kv_bool(vkprof_pb *b, uint32_t where, const char *key, bool v)
{
    size_t a = vkprof__pb_open(b, where);
    vkprof__pb_string(b, PF_DA_NAME, key);
    vkprof__pb_uint(b, PF_DA_BOOL, v ? 1u : 0u);
    vkprof__pb_close(b, a);
}

/* The metadata's keys as debug annotations: the top level of the
 * metadata instant, nested objects as dicts; an array is a dict whose keys
 * are "0", "1", ... (a debug annotation has no array of dicts the reader
 * reads: tools/report/pftrace_reader.c turns it back into an array). */
#define PF_SINK_DEPTH 8
typedef struct pf_sink {
    vkprof_pb *b;
    uint32_t depth;
    size_t open[PF_SINK_DEPTH];
    bool is_arr[PF_SINK_DEPTH];
    uint32_t index[PF_SINK_DEPTH];
    char key[PF_SINK_DEPTH][12];
} pf_sink;

static uint32_t ps_where(const pf_sink *s)
{
    return s->depth == 0 ? PF_TE_ANNOTATIONS : PF_DA_DICT;
}

/* key, or the element's number inside an array */
static const char *ps_key(pf_sink *s, const char *key)
{
    if (key == NULL && s->depth > 0 && s->is_arr[s->depth - 1]) {
        char *k = s->key[s->depth - 1];
        snprintf(k, sizeof s->key[0], "%u", s->index[s->depth - 1]++);
        return k;
    }
    return key != NULL ? key : "";
}

static void ps_open(void *w, const char *key, bool arr)
{
    pf_sink *s = w;
    const char *k = ps_key(s, key);
    size_t a = vkprof__pb_open(s->b, ps_where(s));
    vkprof__pb_string(s->b, PF_DA_NAME, k);
    if (s->depth < PF_SINK_DEPTH) {
        s->open[s->depth] = a;
        s->is_arr[s->depth] = arr;
        s->index[s->depth] = 0;
        s->depth++;
    }
}

static void ps_obj(void *w, const char *key)
{
    ps_open(w, key, false);
}

static void ps_arr(void *w, const char *key)
{
    ps_open(w, key, true);
}

static void ps_end(void *w)
{
    pf_sink *s = w;
    if (s->depth > 0) {
        s->depth--;
        vkprof__pb_close(s->b, s->open[s->depth]);
    }
}

static void ps_u64(void *w, const char *key, uint64_t v)
{
    pf_sink *s = w;
    const char *k = ps_key(s, key);
    kv_u64(s->b, ps_where(s), k, v);
}

static void ps_str(void *w, const char *key, const char *v)
{
    pf_sink *s = w;
    const char *k = ps_key(s, key);
    kv_str(s->b, ps_where(s), k, v);
}

static void ps_f64(void *w, const char *key, double v)
{
    pf_sink *s = w;
    const char *k = ps_key(s, key);
    kv_f64(s->b, ps_where(s), k, v);
}

static void ps_drift(void *w, const char *key, double ppm)
{
    /* as the JSON trace: 4 decimals (a double here; NaN stays NaN) */
    if (isfinite(ppm) && fabs(ppm) < 1e12) {
        ppm = (double)llround(ppm * 1e4) / 1e4;
    }
    ps_f64(w, key, ppm);
}

static void ps_bool(void *w, const char *key, bool v)
{
    pf_sink *s = w;
    const char *k = ps_key(s, key);
    kv_bool(s->b, ps_where(s), k, v);
}

typedef struct pf_meta_in {
    uint64_t t0;
    pf_counts cnt;
    uint64_t gpu_unit_ns; /* GPU clock snapshots in ticks of this many ns; 0: in ns */
    uint32_t gpu_snapshots;
} pf_meta_in;

static void write_metadata(pf_writer *w, const vkprof_export *x, const pf_meta_in *in)
{
    vkprof_pb *b = &w->b;
    const uint32_t in_dict = PF_DA_DICT;
    size_t p = vkprof__pb_open(b, PF_TRACE_PACKET);
    vkprof__pb_uint(b, PF_PKT_TIMESTAMP, in->t0);
    vkprof__pb_uint(b, PF_PKT_TIMESTAMP_CLOCK_ID, PF_CLOCK_MONOTONIC);
    vkprof__pb_uint(b, PF_PKT_SEQ_ID, VKPROF_PF_SEQ_PROCESS);
    size_t te = vkprof__pb_open(b, PF_PKT_TRACK_EVENT);
    vkprof__pb_uint(b, PF_TE_TYPE, PF_TYPE_INSTANT);
    vkprof__pb_uint(b, PF_TE_TRACK_UUID, VKPROF_PF_UUID_HOST);
    vkprof__pb_string(b, PF_TE_CATEGORIES, VKPROF_PF_META_CATEGORY);
    vkprof__pb_string(b, PF_TE_NAME, VKPROF_PF_META_EVENT);

    pf_sink sink;
    memset(&sink, 0, sizeof sink);
    sink.b = b;
    const vkprof_meta_sink k = {&sink,  ps_obj, ps_arr,   ps_end, ps_u64,
                                ps_str, ps_f64, ps_drift, ps_bool};
    vkprof__export_meta(x, &k, in->t0);

    /* what only this format has: its clocks and its overlap tracks */
    size_t d = vkprof__pb_open(b, PF_TE_ANNOTATIONS);
    vkprof__pb_string(b, PF_DA_NAME, VKPROF_PF_META_PERFETTO);
    kv_u64(b, in_dict, "boottime_ns", x->meta.proc.boot_ns);
    kv_u64(b, in_dict, "monotonic_ns", x->meta.proc.mono_ns);
    kv_u64(b, in_dict, "clock_error_ns", x->meta.proc.err_ns);
    kv_u64(b, in_dict, "gpu_clock_id", VKPROF_PF_CLOCK_GPU);
    kv_bool(b, in_dict, "gpu_clock_in_ticks", in->gpu_unit_ns != 0);
    kv_u64(b, in_dict, "gpu_clock_unit_ns", in->gpu_unit_ns ? in->gpu_unit_ns : 1u);
    kv_u64(b, in_dict, "gpu_clock_snapshots", in->gpu_snapshots);
    kv_u64(b, in_dict, "thread_tid_base", VKPROF_PF_TID_BASE);
    kv_u64(b, in_dict, "overlapping_slices", in->cnt.overlaps);
    vkprof__pb_close(b, d);

    vkprof__pb_close(b, te);
    vkprof__pb_close(b, p);
}

/* ---- the export --------------------------------------------------------- */

/* The flows of the walk, numbered in the JSON trace's order (by GPU track,
 * then start), from 1: a GPU scope's number, each span's numbers. 0 on
 * success (fl all NULL when the trace has none), -1 out of memory. */
static int gather_flows(vkprof_export *x, uint32_t nev, pf_flows *fl)
{
    memset(fl, 0, sizeof *fl);
    if (x->span_ids == 0) {
        return 0;
    }
    fl->of = calloc(nev ? nev : 1, sizeof *fl->of);
    fl->first = malloc((nev ? nev : 1) * sizeof *fl->first);
    fl->count = calloc(nev ? nev : 1, sizeof *fl->count);
    uint32_t npairs = 0, cap = 1024;
    uint32_t *pairs = malloc((size_t)cap * 2 * sizeof *pairs);
    if (fl->of == NULL || fl->first == NULL || fl->count == NULL || pairs == NULL) {
        free(pairs);
        return -1;
    }
    vkprof_xiter it;
    vkprof_xflow f;
    vkprof__export_iter(x, &it, VKPROF_EV_GPU);
    while (vkprof__export_next_flow(x, &it, &f)) {
        if (npairs == cap) {
            uint32_t *np = realloc(pairs, (size_t)cap * 4 * sizeof *pairs);
            if (np == NULL) {
                it.failed = true;
                break;
            }
            pairs = np;
            cap *= 2;
        }
        fl->of[f.gpu_index] = x->meta.flows;
        pairs[2 * npairs] = f.span_index;
        pairs[2 * npairs + 1] = (uint32_t)x->meta.flows;
        npairs++;
    }
    const bool failed = it.failed;
    vkprof__export_iter_free(&it);
    if (failed) {
        free(pairs);
        return -1;
    }
    fl->ids = malloc((npairs ? npairs : 1) * sizeof *fl->ids);
    if (fl->ids == NULL) {
        free(pairs);
        return -1;
    }
    /* each span's flows, contiguous: count, prefix, fill */
    for (uint32_t k = 0; k < npairs; k++) {
        fl->count[pairs[2 * k]]++;
    }
    uint32_t sum = 0;
    for (uint32_t i = 0; i < nev; i++) {
        fl->first[i] = sum;
        sum += fl->count[i];
        fl->count[i] = 0;
    }
    for (uint32_t k = 0; k < npairs; k++) {
        const uint32_t si = pairs[2 * k];
        fl->ids[fl->first[si] + fl->count[si]++] = pairs[2 * k + 1];
    }
    free(pairs);
    return 0;
}

/* One track's events in time order: a queue's scopes, or a thread's spans
 * and steps merged by start (a step after a span that starts with it). */
static int emit_track(pf_writer *w, vkprof_export *x, const vkprof_xtrack *tr, pf_track *t,
                      const pf_flows *fl, pf_counts *cnt)
{
    vkprof_xiter a, s;
    const unsigned main_kind = tr->kind;
    vkprof__export_iter_range(&a, tr->pos[main_kind], tr->n[main_kind]);
    vkprof__export_iter_range(&s, tr->pos[VKPROF_EV_STEP],
                              main_kind == VKPROF_EV_SPAN ? tr->n[VKPROF_EV_STEP] : 0);
    vkprof_xevent ea, es;
    bool ha = vkprof__export_next(x, &a, &ea), hs = vkprof__export_next(x, &s, &es);
    int rc = 0;
    while (rc == 0 && (ha || hs) && !vkprof__afile_failed(w->f) && vkprof__pb_ok(&w->b)) {
        if (ha && (!hs || ea.start_ns <= es.start_ns)) {
            rc = emit_event(w, t, &ea, fl, cnt);
            ha = vkprof__export_next(x, &a, &ea);
        } else {
            rc = emit_event(w, t, &es, fl, cnt);
            hs = vkprof__export_next(x, &s, &es);
        }
        maybe_flush(w);
    }
    if (a.failed || s.failed) {
        rc = -1;
    }
    vkprof__export_iter_free(&a);
    vkprof__export_iter_free(&s);
    return rc;
}

int vkprof__trace_write_pftrace(vkprof_export *xp, vkprof_afile *f)
{
    vkprof_export x = *xp; /* the walk's state is shared; its cursors are hints */
    const uint32_t n = x.nsrc;
    int rc = -1;
    pf_writer w = {.f = f, .nsrc = n};
    pf_flows fl;
    memset(&fl, 0, sizeof fl);
    pf_track *tracks = calloc(x.ntracks ? x.ntracks : 1, sizeof *tracks);
    vkprof__pb_init(&w.b, FLUSH_AT + 65536);
    /* the walk's events: the one store's slots, or the copy */
    const uint32_t nev = n == 1 ? x.src[0].slots : (uint32_t)(x.count[1] + x.count[2] + x.count[3]);
    if (tracks == NULL || !vkprof__pb_ok(&w.b) || gather_flows(&x, nev, &fl) != 0) {
        goto out;
    }
    const uint64_t t0 = x.t0;
    pf_counts cnt = {0};

    /* sequence 1: clocks, the process and GPU tracks */
    pf_meta_in meta = {.t0 = t0};
    const vkprof_xprocess *proc = &x.meta.proc;
    vkprof_pb *b = &w.b;
    w.seq = VKPROF_PF_SEQ_PROCESS;
    size_t p = vkprof__pb_open(b, PF_TRACE_PACKET);
    vkprof__pb_uint(b, PF_PKT_SEQ_ID, VKPROF_PF_SEQ_PROCESS);
    vkprof__pb_uint(b, PF_PKT_SEQ_FLAGS, PF_SEQ_INCREMENTAL_STATE_CLEARED);
    vkprof__pb_uint(b, PF_PKT_FIRST_ON_SEQUENCE, 1);
    size_t cs = vkprof__pb_open(b, PF_PKT_CLOCK_SNAPSHOT);
    const uint32_t ids[3] = {PF_CLOCK_MONOTONIC, PF_CLOCK_BOOTTIME, PF_CLOCK_REALTIME};
    const uint64_t vals[3] = {proc->mono_ns, proc->boot_ns, proc->real_ns};
    for (int k = 0; k < 3; k++) {
        size_t c = vkprof__pb_open(b, PF_CS_CLOCKS);
        vkprof__pb_uint(b, PF_CLOCK_ID, ids[k]);
        vkprof__pb_uint(b, PF_CLOCK_TIMESTAMP, vals[k]);
        vkprof__pb_close(b, c);
    }
    /* Android's system traces are on BOOTTIME: this one lines up with them */
    vkprof__pb_uint(b, PF_CS_PRIMARY, PF_CLOCK_BOOTTIME);
    vkprof__pb_close(b, cs);
    vkprof__pb_close(b, p);

    char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE + 64];
    snprintf(name, sizeof name, "vkprof host (pid %lld)", (long long)proc->pid);
    track_descriptor(&w, VKPROF_PF_UUID_HOST, 0, name, proc->pid, 0, false);
    char gpu_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE + 16];
    snprintf(gpu_name, sizeof gpu_name, "GPU: %s", x.meta.device);
    track_descriptor(&w, VKPROF_PF_UUID_GPU, 0, gpu_name, 0, 0, false);

    /* the GPU's ticks against CLOCK_MONOTONIC at each calibration point (the
     * first context that has points: one GPU clock): in ticks when the
     * period is a whole number of ns, else in ns */
    for (uint32_t s = 0; s < n; s++) {
        const vkprof_pl_snap *g = &x.src[s].gpu;
        if (g->n == 0) {
            continue;
        }
        const float fperiod = x.src[s].ctx->info.timestamp_period;
        const double period = (double)fperiod;
        const uint64_t unit =
            (period >= 1.0 && period < 1e6 && period == floor(period)) ? (uint64_t)period : 0;
        meta.gpu_unit_ns = unit;
        uint64_t prev = 0;
        for (uint32_t k = 0; k < g->n; k++) {
            const vkprof_cal_point *cp = &g->p[k];
            uint64_t v = unit ? cp->ticks : vkprof_ticks_to_ns(cp->ticks, fperiod);
            if (k > 0 && v <= prev) {
                break; /* the counter wrapped: later points would not be monotonic */
            }
            prev = v;
            p = vkprof__pb_open(b, PF_TRACE_PACKET);
            vkprof__pb_uint(b, PF_PKT_SEQ_ID, VKPROF_PF_SEQ_PROCESS);
            cs = vkprof__pb_open(b, PF_PKT_CLOCK_SNAPSHOT);
            size_t c = vkprof__pb_open(b, PF_CS_CLOCKS);
            vkprof__pb_uint(b, PF_CLOCK_ID, PF_CLOCK_MONOTONIC);
            vkprof__pb_uint(b, PF_CLOCK_TIMESTAMP, cp->host_ns);
            vkprof__pb_close(b, c);
            c = vkprof__pb_open(b, PF_CS_CLOCKS);
            vkprof__pb_uint(b, PF_CLOCK_ID, VKPROF_PF_CLOCK_GPU);
            vkprof__pb_uint(b, PF_CLOCK_TIMESTAMP, v);
            if (unit > 1) {
                vkprof__pb_uint(b, PF_CLOCK_UNIT_NS, unit);
            }
            vkprof__pb_close(b, c);
            vkprof__pb_close(b, cs);
            vkprof__pb_close(b, p);
            meta.gpu_snapshots++;
            maybe_flush(&w);
        }
        break;
    }

    /* each track with events: its sequence, its descriptor, its events in
     * time order; a queue without scopes is described on sequence 1 (the
     * JSON trace names it too) */
    uint32_t seq = VKPROF_PF_SEQ_FIRST_TRACK;
    for (uint32_t k = 0; k < x.ntracks && !vkprof__afile_failed(f) && vkprof__pb_ok(b); k++) {
        const vkprof_xtrack *xt = &x.tracks[k];
        const bool gpu = xt->kind == VKPROF_EV_GPU;
        pf_track *tr = &tracks[k];
        tr->name = xt->name;
        tr->uuid = gpu ? VKPROF_PF_UUID_QUEUE(xt->tid) : VKPROF_PF_UUID_THREAD(xt->tid);
        const uint32_t nmain = xt->n[xt->kind], nsteps = gpu ? 0 : xt->n[VKPROF_EV_STEP];
        if (nmain + nsteps == 0) {
            if (gpu) {
                w.seq = VKPROF_PF_SEQ_PROCESS;
                track_descriptor(&w, tr->uuid, VKPROF_PF_UUID_GPU, xt->name, 0, 0, false);
            }
            continue;
        }
        /* the sequence's first event: the earlier of the track's first ones */
        vkprof_xiter it;
        vkprof_xevent e0;
        uint64_t first = UINT64_MAX;
        vkprof__export_iter_range(&it, xt->pos[xt->kind], nmain);
        if (vkprof__export_next(&x, &it, &e0)) {
            first = e0.start_ns;
        }
        vkprof__export_iter_free(&it);
        vkprof__export_iter_range(&it, xt->pos[VKPROF_EV_STEP], nsteps);
        if (vkprof__export_next(&x, &it, &e0) && e0.start_ns < first) {
            first = e0.start_ns;
        }
        vkprof__export_iter_free(&it);
        begin_sequence(&w, seq++, tr->uuid, gpu, first);
        if (gpu) {
            track_descriptor(&w, tr->uuid, VKPROF_PF_UUID_GPU, xt->name, 0, 0, false);
        } else {
            track_descriptor(&w, tr->uuid, 0, xt->name, proc->pid,
                             (int64_t)(VKPROF_PF_TID_BASE + xt->tid), true);
        }
        if (emit_track(&w, &x, xt, tr, &fl, &cnt) != 0) {
            goto out;
        }
        close_until(&w, tr, UINT64_MAX);
        track_free(tr);
    }

    /* each queue's GPU busy share of each step (issue 26): a counter track
     * on a sequence of its own */
    for (uint32_t k = x.nthreads; k < x.ntracks && !vkprof__afile_failed(f) && vkprof__pb_ok(b);
         k++) {
        const vkprof_xtrack *xt = &x.tracks[k];
        vkprof_xbusy *bz = NULL;
        const int nb = vkprof__export_busy(&x, k, &bz);
        if (nb < 0) {
            goto out;
        }
        if (nb == 0) {
            continue;
        }
        const uint64_t uuid = VKPROF_PF_UUID_BUSY(xt->tid);
        begin_sequence(&w, seq++, uuid, true, bz[0].start_ns);
        char cname[sizeof xt->name + 16];
        snprintf(cname, sizeof cname, "%s%s", VKPROF_TF_BUSY_PREFIX, xt->name);
        p = vkprof__pb_open(b, PF_TRACE_PACKET);
        vkprof__pb_uint(b, PF_PKT_SEQ_ID, w.seq);
        size_t td = vkprof__pb_open(b, PF_PKT_TRACK_DESCRIPTOR);
        vkprof__pb_uint(b, PF_TD_UUID, uuid);
        vkprof__pb_uint(b, PF_TD_PARENT, VKPROF_PF_UUID_GPU);
        vkprof__pb_string(b, PF_TD_NAME, cname);
        size_t cd = vkprof__pb_open(b, PF_TD_COUNTER);
        vkprof__pb_string(b, PF_CD_UNIT_NAME, VKPROF_TF_BUSY_ARG);
        vkprof__pb_close(b, cd);
        vkprof__pb_close(b, td);
        vkprof__pb_close(b, p);
        for (int i = 0; i < nb; i++) {
            p = event_packet(&w, bz[i].start_ns, true);
            size_t te = vkprof__pb_open(b, PF_PKT_TRACK_EVENT);
            vkprof__pb_uint(b, PF_TE_TYPE, PF_TYPE_COUNTER);
            vkprof__pb_double(b, PF_TE_DOUBLE_COUNTER_VALUE,
                              (double)vkprof__busy_milli(&bz[i]) / 1000.0);
            vkprof__pb_close(b, te);
            vkprof__pb_close(b, p);
            maybe_flush(&w);
        }
        free(bz);
    }

    /* the metadata, last: it carries the counts */
    w.seq = VKPROF_PF_SEQ_PROCESS;
    meta.cnt = cnt;
    write_metadata(&w, &x, &meta);
    if (!vkprof__pb_ok(b)) {
        errno = ENOMEM;
        goto out;
    }
    if (!vkprof__afile_failed(f)) {
        vkprof__afile_write(f, b->buf, b->len);
    }
    rc = 0;
out:
    if (rc != 0 && errno == 0) {
        errno = ENOMEM;
    }
    for (uint32_t k = 0; tracks != NULL && k < x.ntracks; k++) {
        track_free(&tracks[k]);
    }
    free(tracks);
    free(fl.of);
    free(fl.first);
    free(fl.count);
    free(fl.ids);
    vkprof__pb_free(&w.b);
    return rc;
}
