/* The trace as a native Perfetto trace (.pftrace; docs/trace-format.md,
 * "Native Perfetto traces"): the same events, tracks, flows and metadata as
 * the JSON trace (trace_json.c), in Perfetto's protobuf format, encoded by
 * export/pb.h, laid out as export/pftrace_format.h says, written through the
 * atomic file. */
#define _GNU_SOURCE /* CLOCK_BOOTTIME */
#include "base/base.h"
#include "clock/clock.h"
#include "timeline/store.h"

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

/* One event of the store, mapped to host CLOCK_MONOTONIC ns (24 bytes: the
 * export's one array of the store's size; the flows, when there are any, are
 * in arrays of their own). */
typedef struct pf_ev {
    uint64_t start, end;
    uint32_t src;  /* its index in the store */
    uint32_t slot; /* its track in track_of[]: tid, GPU + 65536 */
} pf_ev;

/* The flows, by the index of the event in ev[] (NULL while there are none). */
typedef struct pf_flows {
    uint64_t *of;            /* GPU scope: the flow that ends here, or 0 */
    uint32_t *first, *count; /* host span: its flows in ids[] */
    uint64_t *ids;
} pf_flows;

/* The events' array, written once in a pass over the store: in transparent
 * huge pages where the kernel offers them (Linux, madvise), so a 24 MB array
 * is a dozen page faults rather than 6000 (an export is often the process's
 * first and only one: nothing to reuse); else malloc. *mapped: the length to
 * unmap, 0 for malloc. */
#define HUGE_PAGE ((size_t)2 << 20)
static void *big_alloc(size_t bytes, size_t *mapped)
{
    *mapped = 0;
#if defined(MADV_HUGEPAGE) && defined(MAP_ANONYMOUS)
    if (bytes >= 2 * HUGE_PAGE && bytes < SIZE_MAX / 2) {
        size_t len = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        uint8_t *p =
            mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) {
            /* aligned to a huge page: the rest of the mapping goes back */
            uint8_t *a = (uint8_t *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
            if (a > p) {
                munmap(p, (size_t)(a - p));
            }
            if (p + HUGE_PAGE > a) {
                munmap(a + len, (size_t)(p + HUGE_PAGE - a));
            }
            (void)madvise(a, len, MADV_HUGEPAGE); /* a hint: small pages without it */
            *mapped = len;
            return a;
        }
    }
#endif
    return malloc(bytes);
}

static void big_free(void *p, size_t mapped)
{
    if (mapped != 0) {
        munmap(p, mapped);
    } else {
        free(p);
    }
}

/* A sort record: key, then the event's index. */
typedef struct pf_key {
    uint64_t key;
    uint64_t val;
} pf_key;

/* LSD radix sort by key (stable), 16 bits a pass, as many passes as the
 * largest key needs. tmp holds n records. */
static void radix_sort(pf_key *a, pf_key *tmp, size_t n, uint32_t *count /* 65536 */)
{
    uint64_t max = 0;
    for (size_t i = 0; i < n; i++) {
        max |= a[i].key;
    }
    for (unsigned shift = 0; shift < 64 && (max >> shift) != 0; shift += 16) {
        memset(count, 0, 65536 * sizeof *count);
        for (size_t i = 0; i < n; i++) {
            count[(a[i].key >> shift) & 0xffffu]++;
        }
        uint32_t sum = 0;
        for (size_t d = 0; d < 65536; d++) {
            uint32_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) {
            tmp[count[(a[i].key >> shift) & 0xffffu]++] = a[i];
        }
        memcpy(a, tmp, n * sizeof *a);
    }
}

static uint64_t read_ns(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0) {
        return 0;
    }
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC with BOOTTIME and REALTIME read between two MONOTONIC
 * reads: the tightest of a few tries; *err_ns is half its bracket. */
typedef struct clock_triple {
    uint64_t mono, boot, real, err_ns;
} clock_triple;

static clock_triple read_clocks(void)
{
    clock_triple best = {0, 0, 0, UINT64_MAX};
    for (int i = 0; i < 8; i++) {
        uint64_t a = read_ns(CLOCK_MONOTONIC);
        uint64_t boot = read_ns(CLOCK_BOOTTIME);
        uint64_t real = read_ns(CLOCK_REALTIME);
        uint64_t b = read_ns(CLOCK_MONOTONIC);
        if (b - a < best.err_ns * 2 || best.err_ns == UINT64_MAX) {
            best.mono = a + (b - a) / 2;
            best.boot = boot;
            best.real = real;
            best.err_ns = (b - a + 1) / 2;
        }
    }
    return best;
}

/* ---- the writer --------------------------------------------------------- */

typedef struct pf_writer {
    vkprof_afile *f;
    vkprof_pb b;
    /* the current sequence */
    uint32_t seq;
    uint64_t last_ts; /* the delta clock's value */
    uint32_t next_name_iid;
    uint32_t host_iid[VKPROF_MAX_BUCKETS], gpu_iid[VKPROF_MAX_PHASES], token_iid;
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
    memset(w->host_iid, 0, sizeof w->host_iid);
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

static const char *name_of(vkprof_context ctx, const vkprof_event *e)
{
    const char *n = NULL;
    if (e->kind == VKPROF_EV_GPU) {
        n = vkprof_phase_name(ctx, e->name);
    } else if (e->kind == VKPROF_EV_SPAN) {
        n = vkprof_bucket_name(ctx, e->name);
    }
    return n ? n : "?";
}

typedef struct pf_counts {
    uint64_t host_spans, gpu_scopes, steps, flows, overlaps;
} pf_counts;

/* One slice's or step's BEGIN / INSTANT packet. */
static int emit_event(pf_writer *w, vkprof_context ctx, pf_track *t, const pf_ev *ev,
                      const pf_flows *fl, uint64_t idx, pf_counts *cnt)
{
    const vkprof_event *e = &ctx->trace.events[ev->src];
    vkprof_pb *b = &w->b;
    /* a GPU scope's flow, a span's flows */
    const uint64_t gflow = fl->of != NULL ? fl->of[idx] : 0;
    const uint32_t nflows = fl->count != NULL ? fl->count[idx] : 0;
    const uint64_t *flow_ids = nflows ? fl->ids + fl->first[idx] : NULL;
    close_until(w, t, ev->start);
    if (e->kind == VKPROF_EV_STEP) {
        size_t p = event_packet(w, ev->start, true);
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
    uint64_t end = ev->end >= ev->start ? ev->end : ev->start;
    size_t level = pick_level(t, end);
    if (level == SIZE_MAX) {
        return -1;
    }
    if (level > 0 && !t->lv[level].described) {
        char nm[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE + 64];
        snprintf(nm, sizeof nm, "%s (overlap %zu)", t->name, level);
        track_descriptor(w, VKPROF_PF_UUID_LEVEL(t->uuid, level), t->uuid, nm, 0, 0, false);
        t->lv[level].described = true;
    }
    if (level > 0) {
        t->overlaps++;
        cnt->overlaps++;
    }
    uint32_t *slot =
        gpu ? &w->gpu_iid[e->name % VKPROF_MAX_PHASES] : &w->host_iid[e->name % VKPROF_MAX_BUCKETS];
    if (level == 0 && *slot != 0 && e->annot == 0 && nflows <= 4 && ev->start >= w->last_ts &&
        w->seq < 0x80u && vkprof__pb_room(b, 128)) {
        /* the common BEGIN, byte by byte: at most 11 + 2 + 2 + 2 + 2 + 2 + 6 +
         * (2 + 4 + 11) + 3 * 6 + 4 * 10 bytes, so every length fits one byte */
        uint8_t *q = b->buf + b->len, *start = q;
        *q++ = (PF_TRACE_PACKET << 3) | VKPROF_PB_LEN;
        uint8_t *plen = q++;
        *q++ = (PF_PKT_TIMESTAMP << 3) | VKPROF_PB_VARINT;
        q += vkprof__pb_put_varint(q, ev->start - w->last_ts);
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
        b->len += (size_t)(q - start);
        w->last_ts = ev->start;
        if (gpu) {
            cnt->gpu_scopes++;
        } else {
            cnt->host_spans++;
        }
        t->lv[0].end[t->lv[0].n++] = end;
        return 0;
    }
    size_t p = event_packet(w, ev->start, true);
    uint32_t iid = name_iid(w, slot, name_of(ctx, e));
    /* span annotation and GPU arg keys are interned before the track_event too */
    uint32_t an_iid[VKPROF_SPAN_MAX_ANNOTATIONS] = {0};
    const vkprof_annot *an = NULL;
    if (e->annot != 0 && e->annot <= ctx->trace.annot_capacity) {
        an = &ctx->trace.annots[e->annot - 1];
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

static size_t dict(vkprof_pb *b, const char *key)
{
    size_t a = vkprof__pb_open(b, PF_TE_ANNOTATIONS); /* == PF_DA_DICT's own nesting below */
    vkprof__pb_string(b, PF_DA_NAME, key);
    return a;
}

static size_t sub_dict(vkprof_pb *b, const char *key)
{
    size_t a = vkprof__pb_open(b, PF_DA_DICT);
    vkprof__pb_string(b, PF_DA_NAME, key);
    return a;
}

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

typedef struct pf_meta_in {
    uint64_t t0, unmapped;
    pf_counts cnt;
    clock_triple clk;
    uint64_t gpu_unit_ns; /* GPU clock snapshots in ticks of this many ns; 0: in ns */
    uint32_t gpu_snapshots;
} pf_meta_in;

static void write_metadata(pf_writer *w, vkprof_context ctx, const pf_meta_in *in)
{
    vkprof_pb *b = &w->b;
    vkprof_trace *t = &ctx->trace;
    const uint32_t top = PF_TE_ANNOTATIONS, in_dict = PF_DA_DICT;
    size_t p = vkprof__pb_open(b, PF_TRACE_PACKET);
    vkprof__pb_uint(b, PF_PKT_TIMESTAMP, in->t0);
    vkprof__pb_uint(b, PF_PKT_TIMESTAMP_CLOCK_ID, PF_CLOCK_MONOTONIC);
    vkprof__pb_uint(b, PF_PKT_SEQ_ID, VKPROF_PF_SEQ_PROCESS);
    size_t te = vkprof__pb_open(b, PF_PKT_TRACK_EVENT);
    vkprof__pb_uint(b, PF_TE_TYPE, PF_TYPE_INSTANT);
    vkprof__pb_uint(b, PF_TE_TRACK_UUID, VKPROF_PF_UUID_HOST);
    vkprof__pb_string(b, PF_TE_CATEGORIES, VKPROF_PF_META_CATEGORY);
    vkprof__pb_string(b, PF_TE_NAME, VKPROF_PF_META_EVENT);

    kv_u64(b, top, VKPROF_TF_META_FORMAT, VKPROF_TF_VERSION);
    kv_u64(b, top, VKPROF_TF_META_VERSION, vkprof_version());
    kv_str(b, top, VKPROF_TF_META_DEVICE, ctx->info.device_name);
    kv_str(b, top, VKPROF_TF_META_DRIVER, ctx->driver_name);

    vkprof_calibration cal;
    vkprof_get_calibration(ctx, &cal);
    static const char *const methods[] = {"none", "calibrated_timestamps", "bracket"};
    size_t d = dict(b, VKPROF_TF_META_CALIBRATION);
    kv_str(b, in_dict, VKPROF_TF_CAL_METHOD, methods[cal.method]);
    kv_str(b, in_dict, VKPROF_TF_CAL_EXTENSION, cal.extension ? cal.extension : "");
    kv_str(b, in_dict, VKPROF_TF_CAL_HOST_DOMAIN, cal.host_domain ? cal.host_domain : "");
    kv_u64(b, in_dict, VKPROF_TF_CAL_ERROR_BOUND, cal.error_bound_ns);
    kv_u64(b, in_dict, VKPROF_TF_CAL_POINTS, cal.points);
    kv_u64(b, in_dict, VKPROF_TF_CAL_RECALIBRATIONS, cal.recalibrations);
    /* as the JSON trace: 4 decimals (a double here; NaN stays NaN) */
    double drift = cal.drift_ppm;
    if (isfinite(drift) && fabs(drift) < 1e12) {
        drift = (double)llround(drift * 1e4) / 1e4;
    }
    kv_f64(b, in_dict, VKPROF_TF_CAL_DRIFT_PPM, drift);
    vkprof__pb_close(b, d);

    vkprof_hclk_info hi;
    vkprof__hclk_info(&ctx->hclk, &hi);
    d = dict(b, VKPROF_TF_META_HOST_CLOCK);
    kv_str(b, in_dict, VKPROF_TF_HCLK_SOURCE, hi.source);
    kv_str(b, in_dict, VKPROF_TF_HCLK_REASON, hi.reason);
    kv_u64(b, in_dict, VKPROF_TF_HCLK_HZ, hi.hz);
    kv_u64(b, in_dict, VKPROF_TF_HCLK_RATE_NUM, hi.rate_num);
    kv_u64(b, in_dict, VKPROF_TF_HCLK_RATE_DEN, hi.rate_den);
    kv_u64(b, in_dict, VKPROF_TF_HCLK_ERROR_BOUND, hi.error_bound_ns);
    kv_u64(b, in_dict, VKPROF_TF_HCLK_RESIDUAL, hi.residual_ns);
    kv_u64(b, in_dict, VKPROF_TF_HCLK_POINTS, hi.points);
    vkprof__pb_close(b, d);

    kv_u64(b, top, VKPROF_TF_META_DROPPED_EVENTS, atomic_load(&t->dropped));
    kv_u64(b, top, VKPROF_TF_META_DROPPED_ANNOTATIONS, atomic_load(&t->annot_dropped));
    kv_u64(b, top, VKPROF_TF_META_UNMAPPED_GPU_SCOPES, in->unmapped);
    kv_u64(b, top, VKPROF_TF_META_EVENT_CAPACITY, t->capacity);
    kv_u64(b, top, VKPROF_TF_META_HOST_SPANS, in->cnt.host_spans);
    kv_u64(b, top, VKPROF_TF_META_GPU_SCOPES, in->cnt.gpu_scopes);
    kv_u64(b, top, VKPROF_TF_META_FLOWS, in->cnt.flows);

    d = dict(b, VKPROF_TF_META_CLOCK_ANCHOR);
    kv_u64(b, in_dict, VKPROF_TF_ANCHOR_REALTIME, in->clk.real);
    kv_u64(b, in_dict, VKPROF_TF_ANCHOR_MONOTONIC, in->clk.mono);
    kv_u64(b, in_dict, VKPROF_TF_ANCHOR_ERROR, in->clk.err_ns);
    vkprof__pb_close(b, d);

    char boot[64], host[256];
    vkprof__process_identity(boot, sizeof boot, host, sizeof host);
    d = dict(b, VKPROF_TF_META_PROCESS);
    kv_str(b, in_dict, VKPROF_TF_PROC_BOOT_ID, boot);
    kv_str(b, in_dict, VKPROF_TF_PROC_HOST, host);
    kv_u64(b, in_dict, VKPROF_TF_PROC_PID, (uint64_t)getpid());
    vkprof__pb_close(b, d);

    kv_u64(b, top, VKPROF_TF_META_TRACE_START, in->t0);
    kv_u64(b, top, VKPROF_TF_META_STEPS, atomic_load(&ctx->host.steps));
    kv_f64(b, top, VKPROF_TF_META_TIMESTAMP_PERIOD, (double)ctx->info.timestamp_period);
    kv_u64(b, top, VKPROF_TF_META_TIMESTAMP_BITS, ctx->info.timestamp_valid_bits);

    vkprof_timing_stats ts;
    vkprof_get_timing_stats(ctx, &ts);
    d = dict(b, VKPROF_TF_META_SAMPLING);
    kv_str(b, in_dict, VKPROF_TF_SAMP_MODE,
           ts.mode == VKPROF_TIMING_RING ? VKPROF_TF_MODE_RING : VKPROF_TF_MODE_2SLOT);
    kv_u64(b, in_dict, VKPROF_TF_SAMP_EVERY_N, ts.sample_every > 1 ? ts.sample_every : 1u);
    kv_u64(b, in_dict, VKPROF_TF_SAMP_TIMED_STEPS, ts.timed_steps);
    kv_u64(b, in_dict, VKPROF_TF_SAMP_RECORDED, ts.scopes_recorded);
    kv_u64(b, in_dict, VKPROF_TF_SAMP_SAMPLES, ts.samples);
    kv_u64(b, in_dict, VKPROF_TF_SAMP_SUBMISSIONS, ts.submissions);
    kv_u64(b, in_dict, VKPROF_TF_SAMP_COLLECTED, ts.scopes_collected);
    kv_u64(b, in_dict, VKPROF_TF_SAMP_DROPPED, ts.scopes_dropped);
    kv_u64(b, in_dict, VKPROF_TF_SAMP_PENDING, ts.scopes_pending);
    kv_u64(b, in_dict, VKPROF_TF_SAMP_CALLS_EXECUTED, ts.calls_executed);
    kv_u64(b, in_dict, VKPROF_TF_SAMP_CALLS_UNSTAMPED, ts.calls_unstamped);
    kv_u64(b, in_dict, VKPROF_TF_SAMP_ROTATE_SCOPES, ts.rotate_scopes);
    kv_u64(b, in_dict, VKPROF_TF_SAMP_ROTATE_PERIOD, ts.rotate_period);
    kv_u64(b, in_dict, VKPROF_TF_SAMP_ROTATE_CHANGED, ts.rotate_changed_steps);
    size_t lost = sub_dict(b, VKPROF_TF_SAMP_LOST);
#define LOST_KV_(id, key, text) kv_u64(b, in_dict, key, ts.lost_##id);
    VKPROF_TF_LOST_REASONS(LOST_KV_)
#undef LOST_KV_
    vkprof__pb_close(b, lost);
    vkprof__pb_close(b, d);

    /* what only this format has: its clocks and its overlap tracks */
    d = dict(b, VKPROF_PF_META_PERFETTO);
    kv_u64(b, in_dict, "boottime_ns", in->clk.boot);
    kv_u64(b, in_dict, "monotonic_ns", in->clk.mono);
    kv_u64(b, in_dict, "clock_error_ns", in->clk.err_ns);
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

int vkprof__trace_write_pftrace(vkprof_context ctx, vkprof_afile *f)
{
    vkprof_trace *t = &ctx->trace;
    uint64_t n = atomic_load(&t->next);
    if (n > t->capacity) {
        n = t->capacity;
    }
    int rc = -1;
    size_t ev_mapped = 0;
    pf_ev *ev = big_alloc((n ? n : 1) * sizeof *ev, &ev_mapped);
    /* the order to write them in: NULL while it is the store's (sorted) */
    pf_key *keys = NULL, *tmp = NULL;
    uint32_t *count = malloc(65536 * sizeof *count);
    uint32_t *track_of = calloc(2 * 65536, sizeof *track_of); /* (gpu, tid) -> 1 + track */
    pf_flows fl = {NULL, NULL, NULL, NULL};
    pf_track *tracks = NULL;
    uint32_t *track_start = NULL;
    pf_writer w = {.f = f};
    vkprof_pl_snap hsnap, gsnap; /* the host clock's and the GPU's points, copied once */
    memset(&hsnap, 0, sizeof hsnap);
    memset(&gsnap, 0, sizeof gsnap);
    vkprof__pb_init(&w.b, FLUSH_AT + 65536);
    if (ev == NULL || count == NULL || track_of == NULL || !vkprof__pb_ok(&w.b)) {
        goto out;
    }

    /* 1. the events, mapped to host ns (as trace_json.c maps them) */
    uint64_t kept = 0, unmapped = 0, t0 = t->start_ns, gpu_with_id = 0, smax = 0;
    /* in (track, start) order as the store holds them: no sort (tracks are
     * numbered in the order of their slots) */
    bool in_order = true;
    uint32_t prev_slot = 0;
    uint64_t prev_start = 0;
    vkprof__hclk_calibrate(&ctx->hclk);
    if (!vkprof__hclk_snapshot(&ctx->hclk, &hsnap) || !vkprof__cal_snapshot(ctx, &gsnap)) {
        goto out;
    }
    for (uint64_t i = 0; i < n; i++) {
        const vkprof_event *e = &t->events[i];
        if (!atomic_load_explicit(&((vkprof_event *)e)->ready, memory_order_acquire)) {
            continue;
        }
        pf_ev o = {e->start, e->end, (uint32_t)i, e->tid};
        if (e->kind == VKPROF_EV_GPU) {
            uint64_t hs;
            if (!vkprof__cal_snap_map(&gsnap, e->start, &hs)) {
                unmapped++;
                continue;
            }
            uint64_t he;
            if (!vkprof__cal_snap_map(&gsnap, e->end, &he)) {
                unmapped++;
                continue;
            }
            o.start = hs;
            o.end = hs + vkprof_ticks_to_ns(
                             vkprof_tick_delta(e->start, e->end, ctx->info.timestamp_valid_bits),
                             ctx->info.timestamp_period);
            gpu_with_id += e->id != 0;
        } else if (e->kind == VKPROF_EV_SPAN) {
            o.start = vkprof__hclk_snap_ns(&hsnap, e->start);
            o.end = vkprof__hclk_snap_ns(&hsnap, e->end);
        } else if (e->kind == VKPROF_EV_STEP) {
            o.end = o.start;
        } else {
            continue;
        }
        if (o.start < t0) {
            t0 = o.start;
        }
        if (o.start > smax) {
            smax = o.start;
        }
        if (e->kind == VKPROF_EV_GPU) {
            o.slot += 65536u;
        }
        track_of[o.slot] = 1;
        in_order &= o.slot > prev_slot || (o.slot == prev_slot && o.start >= prev_start);
        prev_slot = o.slot;
        prev_start = o.start;
        ev[kept++] = o;
    }

    /* 2. tracks: host threads (spans, steps) and GPU queues, in that order */
    uint32_t ntracks = 0;
    for (uint32_t k = 0; k < 2 * 65536u; k++) {
        if (track_of[k] != 0) {
            track_of[k] = ++ntracks;
        }
    }
    tracks = calloc(ntracks ? ntracks : 1, sizeof *tracks);
    track_start = calloc((size_t)ntracks + 1, sizeof *track_start);
    if (tracks == NULL || track_start == NULL) {
        goto out;
    }

    /* 3. sort by (track, start, longer first): the key is the track and the
     * start after t0 (already in order when the store is, as a thread's
     * unnested spans are: then no sort and no key array, unless equal starts
     * must be swapped); a trace longer than 2^44 ns (4.9 h) or with more than
     * 2^20 tracks is sorted by track, then each track by start */
    const uint64_t tmax = smax > t0 ? smax - t0 : 0;
    const bool radix = tmax < (UINT64_C(1) << 44) && ntracks < (1u << 20);
    for (uint64_t i = 0; i < kept; i++) {
        track_start[track_of[ev[i].slot]]++; /* track_of is 1 + the track */
    }
    for (uint32_t k = 0; k < ntracks; k++) {
        track_start[k + 1] += track_start[k];
    }
    bool need_keys = !(radix && in_order);
    for (uint64_t i = 1; i < kept && !need_keys; i++) {
        /* in order: a pair to swap has the same track and start */
        need_keys = ev[i - 1].slot == ev[i].slot && ev[i - 1].start == ev[i].start &&
                    ev[i - 1].end < ev[i].end;
    }
    if (need_keys) {
        keys = malloc((kept ? kept : 1) * sizeof *keys);
        tmp = malloc((kept ? kept : 1) * sizeof *tmp);
        if (keys == NULL || tmp == NULL) {
            goto out;
        }
        for (uint64_t i = 0; i < kept; i++) {
            uint64_t tr = track_of[ev[i].slot] - 1u;
            keys[i].key = radix ? (tr << 44) | (ev[i].start - t0) : tr;
            keys[i].val = i;
        }
        if (!(radix && in_order)) {
            radix_sort(keys, tmp, kept, count);
        }
        if (!radix) {
            /* within each track by start (rare: a very long trace) */
            for (uint32_t k = 0; k < ntracks; k++) {
                pf_key *a = keys + track_start[k];
                size_t m = track_start[k + 1] - track_start[k];
                for (size_t i = 0; i < m; i++) {
                    a[i].key = ev[a[i].val].start;
                }
                radix_sort(a, tmp, m, count);
            }
        }
        /* equal starts: the longer (the parent) first (runs are short) */
        for (uint64_t i = 1; i < kept; i++) {
            pf_key x = keys[i];
            uint64_t k = i;
            while (k > 0 && keys[k - 1].key == x.key && ev[keys[k - 1].val].end < ev[x.val].end) {
                keys[k] = keys[k - 1];
                k--;
            }
            keys[k] = x;
        }
        free(tmp);
        tmp = NULL;
    }
#define ORDER(i) (keys != NULL ? keys[(i)].val : (uint64_t)(i))

    /* 4. flows: each GPU scope whose recording span is in the trace */
    pf_counts cnt = {0};
    if (gpu_with_id > 0) {
        uint64_t nspan = 0;
        for (uint64_t i = 0; i < kept; i++) {
            const vkprof_event *e = &t->events[ev[i].src];
            nspan += e->kind == VKPROF_EV_SPAN && e->id != 0;
        }
        pf_key *spans = malloc((nspan ? nspan : 1) * sizeof *spans);
        pf_key *tmp2 = malloc((nspan ? nspan : 1) * sizeof *tmp2);
        fl.of = calloc(kept ? kept : 1, sizeof *fl.of);
        fl.first = malloc((kept ? kept : 1) * sizeof *fl.first);
        fl.count = calloc(kept ? kept : 1, sizeof *fl.count);
        fl.ids = malloc(gpu_with_id * sizeof *fl.ids);
        uint64_t *pairs = malloc(gpu_with_id * 2 * sizeof *pairs);
        if (spans == NULL || tmp2 == NULL || fl.of == NULL || fl.first == NULL ||
            fl.count == NULL || fl.ids == NULL || pairs == NULL) {
            free(spans);
            free(tmp2);
            free(pairs);
            goto out;
        }
        nspan = 0;
        for (uint64_t i = 0; i < kept; i++) {
            const vkprof_event *e = &t->events[ev[i].src];
            if (e->kind == VKPROF_EV_SPAN && e->id != 0) {
                spans[nspan].key = e->id;
                spans[nspan].val = i;
                nspan++;
            }
        }
        radix_sort(spans, tmp2, nspan, count);
        free(tmp2);
        /* in the JSON trace's order (by track, then start), numbered from 1 */
        uint64_t npairs = 0;
        for (uint64_t i = 0; i < kept; i++) {
            const uint64_t gi = ORDER(i);
            const vkprof_event *g = &t->events[ev[gi].src];
            if (g->kind != VKPROF_EV_GPU || g->id == 0 || nspan == 0) {
                continue;
            }
            uint64_t lo = 0, hi = nspan;
            while (lo < hi) {
                uint64_t mid = lo + (hi - lo) / 2;
                if (spans[mid].key < g->id) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            if (lo >= nspan || spans[lo].key != g->id) {
                continue; /* the span is still open or was dropped */
            }
            fl.of[gi] = ++cnt.flows;
            pairs[2 * npairs] = spans[lo].val; /* the span's event */
            pairs[2 * npairs + 1] = fl.of[gi];
            npairs++;
        }
        free(spans);
        /* each span's flows, contiguous: count, prefix, fill */
        for (uint64_t k = 0; k < npairs; k++) {
            fl.count[pairs[2 * k]]++;
        }
        uint32_t sum = 0;
        for (uint64_t i = 0; i < kept; i++) {
            fl.first[i] = sum;
            sum += fl.count[i];
            fl.count[i] = 0;
        }
        for (uint64_t k = 0; k < npairs; k++) {
            const uint64_t si = pairs[2 * k];
            fl.ids[fl.first[si] + fl.count[si]++] = pairs[2 * k + 1];
        }
        free(pairs);
    }

    /* 5. sequence 1: clocks, the process and GPU tracks */
    pf_meta_in meta = {.t0 = t0, .unmapped = unmapped};
    meta.clk = read_clocks();
    vkprof_pb *b = &w.b;
    w.seq = VKPROF_PF_SEQ_PROCESS;
    size_t p = vkprof__pb_open(b, PF_TRACE_PACKET);
    vkprof__pb_uint(b, PF_PKT_SEQ_ID, VKPROF_PF_SEQ_PROCESS);
    vkprof__pb_uint(b, PF_PKT_SEQ_FLAGS, PF_SEQ_INCREMENTAL_STATE_CLEARED);
    vkprof__pb_uint(b, PF_PKT_FIRST_ON_SEQUENCE, 1);
    size_t cs = vkprof__pb_open(b, PF_PKT_CLOCK_SNAPSHOT);
    const uint32_t ids[3] = {PF_CLOCK_MONOTONIC, PF_CLOCK_BOOTTIME, PF_CLOCK_REALTIME};
    const uint64_t vals[3] = {meta.clk.mono, meta.clk.boot, meta.clk.real};
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
    snprintf(name, sizeof name, "vkprof host (pid %ld)", (long)getpid());
    track_descriptor(&w, VKPROF_PF_UUID_HOST, 0, name, (int64_t)getpid(), 0, false);
    char gpu_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE + 16];
    snprintf(gpu_name, sizeof gpu_name, "GPU: %s", ctx->info.device_name);
    track_descriptor(&w, VKPROF_PF_UUID_GPU, 0, gpu_name, 0, 0, false);

    /* the GPU's ticks against CLOCK_MONOTONIC at each calibration point: in
     * ticks when the period is a whole number of ns, else in ns */
    const double period = (double)ctx->info.timestamp_period;
    const uint64_t unit =
        (period >= 1.0 && period < 1e6 && period == floor(period)) ? (uint64_t)period : 0;
    meta.gpu_unit_ns = unit;
    uint64_t prev = 0;
    for (uint32_t k = 0; k < ctx->cal.count && ctx->cal.points != NULL; k++) {
        const vkprof_cal_point *cp = &ctx->cal.points[k];
        uint64_t v = unit ? cp->ticks : vkprof_ticks_to_ns(cp->ticks, ctx->info.timestamp_period);
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

    /* 6. each track: its sequence, its descriptor, its events in time order */
    uint32_t threads = vkprof__thread_count();
    for (uint32_t k = 0; k < ntracks && !vkprof__afile_failed(f) && vkprof__pb_ok(b); k++) {
        uint32_t first = track_start[k], last = track_start[k + 1];
        if (first == last) {
            continue;
        }
        const vkprof_event *e0 = &t->events[ev[ORDER(first)].src];
        const bool gpu = e0->kind == VKPROF_EV_GPU;
        pf_track *tr = &tracks[k];
        char tname[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE + 64];
        if (gpu) {
            tr->uuid = VKPROF_PF_UUID_QUEUE(e0->tid);
            /* as the JSON trace names its one queue track */
            snprintf(tname, sizeof tname, "queue family %u, queue %u", ctx->desc.queue_family_index,
                     ctx->desc.queue_index);
        } else {
            tr->uuid = VKPROF_PF_UUID_THREAD(e0->tid);
            const char *tn = e0->tid <= threads ? vkprof__thread_name(e0->tid) : NULL;
            if (tn != NULL) {
                snprintf(tname, sizeof tname, "%s", tn);
            } else {
                snprintf(tname, sizeof tname, "thread %u", (unsigned)e0->tid);
            }
        }
        tr->name = tname;
        begin_sequence(&w, VKPROF_PF_SEQ_FIRST_TRACK + k, tr->uuid, gpu, ev[ORDER(first)].start);
        if (gpu) {
            track_descriptor(&w, tr->uuid, VKPROF_PF_UUID_GPU, tname, 0, 0, false);
        } else {
            track_descriptor(&w, tr->uuid, 0, tname, (int64_t)getpid(),
                             (int64_t)(VKPROF_PF_TID_BASE + e0->tid), true);
        }
        for (uint32_t i = first; i < last; i++) {
            const uint64_t ei = ORDER(i);
            if (emit_event(&w, ctx, tr, &ev[ei], &fl, ei, &cnt) != 0) {
                goto out;
            }
            maybe_flush(&w);
        }
        close_until(&w, tr, UINT64_MAX);
        track_free(tr);
    }

    /* the context's queue is a track even with no GPU scope (as in the JSON
     * trace, which always names it) */
    const uint32_t qtid = VKPROF_TF_GPU_TID(ctx->desc.queue_family_index, ctx->desc.queue_index);
    if (qtid < 65536u && track_of[65536u + qtid] == 0 && !vkprof__afile_failed(f)) {
        w.seq = VKPROF_PF_SEQ_PROCESS;
        snprintf(name, sizeof name, "queue family %u, queue %u", ctx->desc.queue_family_index,
                 ctx->desc.queue_index);
        track_descriptor(&w, VKPROF_PF_UUID_QUEUE(qtid), VKPROF_PF_UUID_GPU, name, 0, 0, false);
    }

    /* 7. the metadata, last: it carries the counts */
    w.seq = VKPROF_PF_SEQ_PROCESS;
    meta.cnt = cnt;
    write_metadata(&w, ctx, &meta);
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
    for (uint32_t k = 0; tracks != NULL && k < ntracks; k++) {
        track_free(&tracks[k]);
    }
    free(tracks);
    free(track_start);
#undef ORDER
    free(fl.of);
    free(fl.first);
    free(fl.count);
    free(fl.ids);
    free(track_of);
    free(count);
    free(tmp);
    free(keys);
    big_free(ev, ev_mapped);
    vkprof__pl_snap_free(&hsnap);
    vkprof__pl_snap_free(&gsnap);
    vkprof__pb_free(&w.b);
    return rc;
}
