/* The reader of vkprof's native Perfetto traces (.pftrace): converts one into
 * the JSON text of the same trace (docs/trace-format.md), which rpt_parse
 * reads, so `vkprof report` and `vkprof merge` read both formats through one
 * parser. rpt_load_file calls it when the bytes or the name say it is a
 * Perfetto trace (rpt_trace_format).
 *
 * It reads the layout vkprof writes (src/export/pftrace_format.h): sequences
 * with interned names and a delta clock, host thread tracks, GPU queue
 * tracks (and their overlap levels), BEGIN/END slices with debug
 * annotations, step instants, flows, and the metadata instant. Bounded like
 * the JSON reader: every length and varint is checked against the buffer,
 * nesting is limited, the JSON it builds is at most RPT_MAX_FILE_BYTES, and
 * anything it cannot place (an END with no BEGIN, a slice never ended, an
 * unknown track) is an error that names the packet, never a guess. */
#define _POSIX_C_SOURCE 200809L
#include "trace_reader.h"

#include "export/pftrace_format.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- the wire format ------------------------------------------------------- */

typedef struct pbr {
    const uint8_t *p, *end;
} pbr;

typedef struct pbf {
    uint32_t field;
    uint32_t wire;
    uint64_t v;          /* varint / fixed64 value */
    const uint8_t *data; /* length-delimited: the bytes */
    size_t len;
} pbf;

static bool rd_varint(pbr *r, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) {
            return false;
        }
        uint8_t c = *r->p++;
        v |= (uint64_t)(c & 0x7fu) << shift;
        if ((c & 0x80u) == 0) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* rd_field without its rewind. */
static bool rd_field_(pbr *r, pbf *f, bool *bad)
{
    if (r->p >= r->end) {
        return false;
    }
    uint64_t tag;
    if (!rd_varint(r, &tag) || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX) {
        *bad = true;
        return false;
    }
    f->field = (uint32_t)(tag >> 3);
    f->wire = (uint32_t)(tag & 7u);
    f->data = NULL;
    f->len = 0;
    f->v = 0;
    switch (f->wire) {
    case 0:
        if (!rd_varint(r, &f->v)) {
            *bad = true;
            return false;
        }
        return true;
    case 1:
        if (r->end - r->p < 8) {
            *bad = true;
            return false;
        }
        for (int i = 0; i < 8; i++) {
            f->v |= (uint64_t)r->p[i] << (8 * i);
        }
        r->p += 8;
        return true;
    case 2: {
        uint64_t n;
        if (!rd_varint(r, &n) || n > (uint64_t)(r->end - r->p)) {
            *bad = true;
            return false;
        }
        f->data = r->p;
        f->len = (size_t)n;
        r->p += n;
        return true;
    }
    case 5:
        if (r->end - r->p < 4) {
            *bad = true;
            return false;
        }
        for (int i = 0; i < 4; i++) {
            f->v |= (uint64_t)r->p[i] << (8 * i);
        }
        r->p += 4;
        return true;
    default: *bad = true; return false;
    }
}

/* The next field; false at the end. *bad is set on malformed bytes, and then
 * r->p is left at the start of the malformed field (for messages). */
static bool rd_field(pbr *r, pbf *f, bool *bad)
{
    const uint8_t *start = r->p;
    if (rd_field_(r, f, bad)) {
        return true;
    }
    if (*bad) {
        r->p = start;
    }
    return false;
}

static pbr sub(const pbf *f)
{
    pbr r = {f->data, f->data + f->len};
    return r;
}

int rpt_is_pftrace(const char *buf, size_t len)
{
    /* Every top-level field is a length-delimited Trace.packet, to the last
     * byte: JSON text never frames so (it would have to be a run of '\n'
     * each followed by a length that lands on the next '\n'). */
    if (len == 0 || (uint8_t)buf[0] != 0x0a) {
        return false;
    }
    pbr r = {(const uint8_t *)buf, (const uint8_t *)buf + len};
    pbf f;
    bool bad = false;
    size_t packets = 0;
    while (rd_field(&r, &f, &bad)) {
        if (f.field != PF_TRACE_PACKET || f.wire != 2) {
            return false;
        }
        packets++;
    }
    return !bad && packets > 0;
}

/* ---- the JSON it builds ------------------------------------------------------ */

typedef struct jbuf {
    char *s;
    size_t len, cap;
    bool oom;
} jbuf;

static void jb_put(jbuf *j, const char *s, size_t n)
{
    if (j->oom) {
        return;
    }
    if (j->cap - j->len < n + 1) {
        size_t cap = j->cap ? j->cap : 65536;
        while (cap - j->len < n + 1) {
            cap *= 2;
        }
        if (cap > RPT_MAX_FILE_BYTES + 1) {
            j->oom = true;
            return;
        }
        char *q = realloc(j->s, cap);
        if (q == NULL) {
            j->oom = true;
            return;
        }
        j->s = q;
        j->cap = cap;
    }
    if (n > 0) { /* an empty string may come as NULL: memcpy must not see it */
        memcpy(j->s + j->len, s, n);
    }
    j->len += n;
    j->s[j->len] = '\0';
}

static void jb_cstr(jbuf *j, const char *s)
{
    jb_put(j, s, strlen(s));
}

static void jb_printf(jbuf *j, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) {
        jb_put(j, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
    }
}

/* A JSON string of the bytes (escaped; other bytes pass, rpt_parse cleans). */
static void jb_str(jbuf *j, const uint8_t *s, size_t n)
{
    jb_put(j, "\"", 1);
    if (s == NULL || n == 0) { /* an empty name may have no bytes at all */
        jb_put(j, "\"", 1);
        return;
    }
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        if (c == '"' || c == '\\' || c < 0x20) {
            jb_put(j, (const char *)s + run, i - run);
            if (c == '"' || c == '\\') {
                char e[2] = {'\\', (char)c};
                jb_put(j, e, 2);
            } else {
                jb_printf(j, "\\u%04x", c);
            }
            run = i + 1;
        }
    }
    jb_put(j, (const char *)s + run, n - run);
    jb_put(j, "\"", 1);
}

/* ns after the trace start as microseconds with three decimals */
static void jb_us(jbuf *j, int64_t ns)
{
    if (ns < 0) {
        jb_put(j, "-", 1);
        ns = -ns;
    }
    jb_printf(j, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
}

/* ---- the reader's state ------------------------------------------------------- */

typedef struct str {
    const uint8_t *s;
    size_t n;
} str;

#define MAX_IIDS 65536u
#define MAX_SEQS 4096u
#define MAX_DEPTH_SLICES 100000u
#define MAX_ANNOT_DEPTH 8

typedef struct seq {
    bool seen;
    uint32_t clock_id;                /* the default timestamp clock */
    uint64_t track_uuid;              /* the default track */
    bool delta_known;                 /* the delta clock was anchored by a snapshot */
    uint64_t delta_value, delta_mono; /* its value and CLOCK_MONOTONIC at the snapshot */
    uint64_t last;                    /* its value now */
    str *names, *cats, *annots;       /* by iid, grown as iids come (at most MAX_IIDS) */
    uint32_t n_names, n_cats, n_annots;
} seq;

typedef struct open_slice {
    uint64_t start;
    str name;
    bool gpu;
    char *args;      /* the args' members so far, without braces */
    uint64_t packet; /* where it begins, for messages */
    size_t at;
} open_slice;

typedef struct track {
    uint64_t uuid;
    int64_t pid, tid;
    str name;
    bool gpu, host_thread, process, gpu_root;
    bool counter; /* a queue's GPU busy counter (VKPROF_PF_UUID_BUSY) */
    open_slice *open;
    size_t n_open, cap_open;
} track;

typedef struct rd {
    const uint8_t *buf;
    size_t len;
    char *err;
    size_t err_size;
    seq *seqs;
    track *tracks;
    size_t n_tracks;
    uint64_t t0;
    bool have_t0;
    const uint8_t *meta;
    size_t meta_len;
    uint64_t packet;  /* index of the packet being read; NO_PACKET: none */
    size_t packet_at; /* its offset in the file (its tag byte) */
    uint64_t meta_packet;
    size_t meta_at;
    jbuf events, flows;
} rd;

#define NO_PACKET UINT64_MAX

static int rfail(rd *r, const char *fmt, ...)
{
    if (r->err != NULL && r->err_size > 0 && r->err[0] == '\0') {
        char msg[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        if (r->packet == NO_PACKET) {
            snprintf(r->err, r->err_size, "Perfetto trace: %s", msg);
        } else {
            snprintf(r->err, r->err_size, "Perfetto trace: %s (at packet #%" PRIu64 ", byte %zu)",
                     msg, r->packet, r->packet_at);
        }
    }
    return -1;
}

/* The framing, before anything else: the file must be a run of
 * Trace.packet fields (tag 0x0a, a length, that many bytes) to its last
 * byte. A damaged or cut file fails here with what is wrong and where. */
static int check_framing(rd *r)
{
    if (r->len == 0) {
        r->packet = NO_PACKET;
        return rfail(r, "the file is empty");
    }
    pbr top = {r->buf, r->buf + r->len};
    for (r->packet = 0; top.p < top.end; r->packet++) {
        r->packet_at = (size_t)(top.p - r->buf);
        uint64_t tag, n;
        if (!rd_varint(&top, &tag)) {
            return rfail(r, top.p >= top.end ? "the file ends inside a packet's tag: truncated?"
                                             : "a malformed packet tag (a varint over 10 bytes)");
        }
        if (tag != ((uint64_t)PF_TRACE_PACKET << 3 | 2u)) {
            return rfail(r,
                         "byte 0x%02x is not a packet's tag (a Trace holds TracePackets: field "
                         "1, tag 0x0a)%s",
                         (unsigned)r->buf[r->packet_at],
                         r->packet > 0 ? "; the packets before it are damaged or were cut short"
                                       : "");
        }
        if (!rd_varint(&top, &n)) {
            return rfail(r, top.p >= top.end ? "the file ends inside a packet's length: truncated?"
                                             : "a malformed packet length (a varint over 10 "
                                               "bytes)");
        }
        size_t left = (size_t)(top.end - top.p);
        if (n > left) {
            return rfail(r,
                         "the packet is %" PRIu64 " bytes long but the file ends %zu byte%s "
                         "after its header: truncated or damaged",
                         n, left, left == 1 ? "" : "s");
        }
        top.p += n;
    }
    return 0;
}

static track *find_track(rd *r, uint64_t uuid)
{
    for (size_t i = 0; i < r->n_tracks; i++) {
        if (r->tracks[i].uuid == uuid) {
            return &r->tracks[i];
        }
    }
    return NULL;
}

/* ---- pass 1: track descriptors and the metadata ------------------------------- */

static int read_descriptor(rd *r, const pbf *f)
{
    pbr d = sub(f);
    pbf x;
    bool bad = false;
    track t = {0};
    bool have_uuid = false, counter = false;
    while (rd_field(&d, &x, &bad)) {
        if (x.field == PF_TD_COUNTER && x.wire == 2) {
            counter = true;
        } else if (x.field == PF_TD_UUID && x.wire == 0) {
            t.uuid = x.v;
            have_uuid = true;
        } else if (x.field == PF_TD_NAME && x.wire == 2) {
            t.name = (str){x.data, x.len};
        } else if ((x.field == PF_TD_PROCESS || x.field == PF_TD_THREAD) && x.wire == 2) {
            pbr q = sub(&x);
            pbf y;
            while (rd_field(&q, &y, &bad)) {
                if (x.field == PF_TD_THREAD && y.field == PF_THD_TID && y.wire == 0) {
                    t.tid = (int64_t)(uint32_t)y.v - (int64_t)VKPROF_PF_TID_BASE;
                } else if (y.wire == 2 && ((x.field == PF_TD_THREAD && y.field == PF_THD_NAME) ||
                                           (x.field == PF_TD_PROCESS && y.field == PF_PD_NAME))) {
                    t.name = (str){y.data, y.len};
                }
            }
            if (x.field == PF_TD_THREAD) {
                t.host_thread = true;
                t.pid = VKPROF_TF_PID_HOST;
            } else {
                t.process = true;
            }
        }
    }
    if (bad || !have_uuid) {
        return rfail(r, "a malformed track descriptor");
    }
    if (!t.host_thread && !t.process) {
        uint64_t base = t.uuid & 0xffffffffu;
        if ((t.uuid >> 32) != 0) {
            /* an overlap level (a child of a thread or queue track): its
             * base track's pid and tid, and no name of its own */
            track *b = find_track(r, base);
            if (b == NULL || !(b->gpu || b->host_thread)) {
                return rfail(r, "overlap track %" PRIu64 " before its track", t.uuid);
            }
            t.gpu = b->gpu;
            t.host_thread = b->host_thread;
            t.pid = b->pid;
            t.tid = b->tid;
            t.name = (str){NULL, 0};
        } else if (t.uuid == VKPROF_PF_UUID_GPU) {
            t.gpu_root = true;
        } else if (base >= VKPROF_PF_UUID_QUEUE(0) && base < VKPROF_PF_UUID_QUEUE(65536u)) {
            t.gpu = true;
            t.pid = VKPROF_TF_PID_GPU;
            t.tid = (int64_t)(base - VKPROF_PF_UUID_QUEUE(0));
        } else if (t.uuid >= VKPROF_PF_UUID_BUSY(0) && t.uuid < VKPROF_PF_UUID_BUSY(65536u) &&
                   counter && t.name.s != NULL) {
            t.counter = true;
            t.pid = VKPROF_TF_PID_GPU;
            t.tid = (int64_t)(t.uuid - VKPROF_PF_UUID_BUSY(0));
        } else {
            return rfail(r, "track %" PRIu64 " is not one vkprof writes", t.uuid);
        }
    }
    if (find_track(r, t.uuid) != NULL) {
        return rfail(r, "track %" PRIu64 " described twice", t.uuid);
    }
    if (r->n_tracks >= RPT_MAX_TRACKS * 4) {
        return rfail(r, "more than %d tracks", RPT_MAX_TRACKS * 4);
    }
    track *nt = realloc(r->tracks, (r->n_tracks + 1) * sizeof *nt);
    if (nt == NULL) {
        return rfail(r, "out of memory");
    }
    r->tracks = nt;
    r->tracks[r->n_tracks++] = t;
    return 0;
}

static int pass1(rd *r)
{
    pbr top = {r->buf, r->buf + r->len};
    pbf pk;
    bool bad = false;
    for (r->packet = 0; (r->packet_at = (size_t)(top.p - r->buf), rd_field(&top, &pk, &bad));
         r->packet++) {
        pbr p = sub(&pk);
        pbf x;
        while (rd_field(&p, &x, &bad)) {
            if (x.field == PF_PKT_TRACK_DESCRIPTOR && x.wire == 2) {
                if (read_descriptor(r, &x) != 0) {
                    return -1;
                }
            } else if (x.field == PF_PKT_TRACK_EVENT && x.wire == 2) {
                /* the metadata instant: a name of its own (not interned) */
                pbr te = sub(&x);
                pbf y;
                bool bad2 = false;
                while (rd_field(&te, &y, &bad2)) {
                    if (y.field == PF_TE_NAME && y.wire == 2 &&
                        y.len == strlen(VKPROF_PF_META_EVENT) &&
                        memcmp(y.data, VKPROF_PF_META_EVENT, y.len) == 0) {
                        if (r->meta != NULL) {
                            return rfail(r,
                                         "two metadata events (the first in packet #%" PRIu64 ")",
                                         r->meta_packet);
                        }
                        r->meta = x.data;
                        r->meta_len = x.len;
                        r->meta_packet = r->packet;
                        r->meta_at = r->packet_at;
                    }
                }
            }
        }
        if (bad) {
            return rfail(r,
                         "a malformed field at byte %zu (a bad wire type, or a length past the "
                         "packet's end)",
                         (size_t)(p.p - r->buf));
        }
    }
    if (bad) {
        return rfail(r, "malformed framing");
    }
    return 0;
}

/* ---- debug annotations as JSON -------------------------------------------------- */

static str annot_name(const seq *s, const pbf *x)
{
    if (x->field == PF_DA_NAME && x->wire == 2) {
        return (str){x->data, x->len};
    }
    if (x->field == PF_DA_NAME_IID && x->wire == 0 && s != NULL && x->v < s->n_annots) {
        return s->annots[x->v];
    }
    return (str){NULL, 0};
}

/* One DebugAnnotation as `"name":value`; its name in *name. */
static int annot_json(rd *r, const seq *s, const pbf *da, jbuf *out, int depth, str *name_out)
{
    if (depth > MAX_ANNOT_DEPTH) {
        return rfail(r, "debug annotations nested too deep");
    }
    pbr a = sub(da);
    pbf x;
    bool bad = false;
    str name = {NULL, 0};
    jbuf val = {0};
    bool dict = false, as_array = true;
    jbuf arr = {0};
    int entries = 0;
    int values = 0; /* scalar values: one, or dict entries */
    while (rd_field(&a, &x, &bad)) {
        if ((x.field == PF_DA_NAME && x.wire == 2) || (x.field == PF_DA_NAME_IID && x.wire == 0)) {
            name = annot_name(s, &x);
            if (name.s == NULL) {
                free(val.s);
                free(arr.s);
                return rfail(r, "a debug annotation name that was not interned");
            }
        } else if (x.field == PF_DA_BOOL && x.wire == 0) {
            jb_cstr(&val, x.v ? "true" : "false");
            values++;
        } else if (x.field == PF_DA_UINT && x.wire == 0) {
            jb_printf(&val, "%" PRIu64, x.v);
            values++;
        } else if (x.field == PF_DA_INT && x.wire == 0) {
            jb_printf(&val, "%" PRId64, (int64_t)x.v);
            values++;
        } else if (x.field == PF_DA_DOUBLE && x.wire == 1) {
            double d;
            memcpy(&d, &x.v, sizeof d);
            if (isfinite(d)) {
                jb_printf(&val, "%.17g", d);
            } else {
                jb_cstr(&val, "null");
            }
            values++;
        } else if (x.field == PF_DA_STRING && x.wire == 2) {
            jb_str(&val, x.data, x.len);
            values++;
        } else if (x.field == PF_DA_DICT && x.wire == 2) {
            jb_cstr(&val, dict ? "," : "{");
            jb_cstr(&arr, dict ? "," : "[");
            dict = true;
            const size_t at = val.len;
            str inner;
            if (annot_json(r, s, &x, &val, depth + 1, &inner) != 0) {
                free(val.s);
                free(arr.s);
                return -1;
            }
            /* an array of the JSON trace is a dict of "0", "1", ... here
             * (export_events.c's metadata sink): the entry's value alone */
            char want[16];
            int wn = snprintf(want, sizeof want, "%d", entries++);
            if (as_array && inner.n == (size_t)wn && memcmp(inner.s, want, (size_t)wn) == 0 &&
                val.len >= at + (size_t)wn + 3) {
                jb_put(&arr, val.s + at + wn + 3, val.len - at - (size_t)wn - 3);
            } else {
                as_array = false;
            }
        }
    }
    if (bad) {
        free(val.s);
        free(arr.s);
        return rfail(r, "a malformed debug annotation");
    }
    if (values > 1 || (values > 0 && dict)) { /* their JSON would run together */
        free(val.s);
        free(arr.s);
        return rfail(r, "a debug annotation with more than one value");
    }
    if (dict && as_array && !arr.oom) {
        jb_cstr(&arr, "]");
        free(val.s);
        val = arr;
        values++;
    } else if (dict) {
        free(arr.s);
        jb_cstr(&val, "}");
        values++;
    } else {
        free(arr.s);
    }
    if (name.s == NULL || values == 0 || val.oom) {
        free(val.s);
        return rfail(r, "a debug annotation without a name or a value");
    }
    jb_str(out, name.s, name.n);
    jb_put(out, ":", 1);
    jb_put(out, val.s, val.len);
    free(val.s);
    *name_out = name;
    return 0;
}

/* ---- pass 2: the sequences and their events ------------------------------------- */

static int intern(rd *r, seq *s, const pbf *f)
{
    pbr d = sub(f);
    pbf x;
    bool bad = false;
    while (rd_field(&d, &x, &bad)) {
        uint32_t *cap = x.field == PF_ID_CATEGORIES    ? &s->n_cats
                        : x.field == PF_ID_NAMES       ? &s->n_names
                        : x.field == PF_ID_ANNOT_NAMES ? &s->n_annots
                                                       : NULL;
        str **tab = x.field == PF_ID_CATEGORIES    ? &s->cats
                    : x.field == PF_ID_NAMES       ? &s->names
                    : x.field == PF_ID_ANNOT_NAMES ? &s->annots
                                                   : NULL;
        if (tab == NULL || x.wire != 2) {
            continue;
        }
        pbr e = sub(&x);
        pbf y;
        uint64_t iid = 0;
        str name = {NULL, 0};
        while (rd_field(&e, &y, &bad)) {
            if (y.field == PF_IID && y.wire == 0) {
                iid = y.v;
            } else if (y.field == PF_IID_NAME && y.wire == 2) {
                name = (str){y.data, y.len};
            }
        }
        if (iid == 0 || iid >= MAX_IIDS || name.s == NULL) {
            return rfail(r, "an interned name without an iid (or iid >= %u)", MAX_IIDS);
        }
        if (iid >= *cap) {
            uint32_t ncap = *cap ? *cap : 16;
            while (ncap <= iid) {
                ncap *= 2;
            }
            str *q = realloc(*tab, ncap * sizeof *q);
            if (q == NULL) {
                return rfail(r, "out of memory");
            }
            memset(q + *cap, 0, (ncap - *cap) * sizeof *q);
            *tab = q;
            *cap = ncap;
        }
        (*tab)[iid] = name;
    }
    return bad ? rfail(r, "malformed interned data") : 0;
}

static void seq_clear(seq *s)
{
    free(s->names);
    free(s->cats);
    free(s->annots);
    memset(s, 0, sizeof *s);
}

static int snapshot(rd *r, seq *s, const pbf *f)
{
    pbr d = sub(f);
    pbf x;
    bool bad = false;
    bool have_delta = false, have_mono = false;
    uint64_t delta = 0, mono = 0;
    while (rd_field(&d, &x, &bad)) {
        if (x.field != PF_CS_CLOCKS || x.wire != 2) {
            continue;
        }
        pbr c = sub(&x);
        pbf y;
        uint64_t id = 0, ts = 0;
        bool incr = false;
        while (rd_field(&c, &y, &bad)) {
            if (y.field == PF_CLOCK_ID && y.wire == 0) {
                id = y.v;
            } else if (y.field == PF_CLOCK_TIMESTAMP && y.wire == 0) {
                ts = y.v;
            } else if (y.field == PF_CLOCK_INCREMENTAL && y.wire == 0) {
                incr = y.v != 0;
            }
        }
        if (id == VKPROF_PF_CLOCK_DELTA) {
            if (!incr) {
                return rfail(r, "clock %u is not incremental", VKPROF_PF_CLOCK_DELTA);
            }
            have_delta = true;
            delta = ts;
        } else if (id == PF_CLOCK_MONOTONIC) {
            have_mono = true;
            mono = ts;
        }
    }
    if (bad) {
        return rfail(r, "a malformed clock snapshot");
    }
    if (have_delta) {
        if (!have_mono) {
            return rfail(r, "clock %u without CLOCK_MONOTONIC", VKPROF_PF_CLOCK_DELTA);
        }
        s->delta_known = true;
        s->delta_value = s->last = delta;
        s->delta_mono = mono;
    }
    return 0;
}

static int push_slice(rd *r, track *t, open_slice o)
{
    if (t->n_open == t->cap_open) {
        size_t cap = t->cap_open ? t->cap_open * 2 : 16;
        if (cap > MAX_DEPTH_SLICES) {
            free(o.args);
            return rfail(r, "slices nested more than %u deep", MAX_DEPTH_SLICES);
        }
        open_slice *q = realloc(t->open, cap * sizeof *q);
        if (q == NULL) {
            free(o.args);
            return rfail(r, "out of memory");
        }
        t->open = q;
        t->cap_open = cap;
    }
    t->open[t->n_open++] = o;
    return 0;
}

static void flow_json(rd *r, bool end, uint64_t id, const track *t, uint64_t ts)
{
    jbuf *j = &r->flows;
    jb_cstr(j, end ? ",\n{\"ph\":\"f\",\"bp\":\"e\"" : ",\n{\"ph\":\"s\"");
    jb_printf(j, ",\"cat\":\"%s\",\"name\":\"%s\",\"id\":%" PRIu64, VKPROF_TF_CAT_FLOW,
              VKPROF_TF_FLOW_NAME, id);
    jb_printf(j, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":", t->pid, t->tid);
    jb_us(j, (int64_t)(ts - r->t0));
    jb_cstr(j, "}");
}

static int track_event(rd *r, seq *s, uint64_t ts, const pbf *f)
{
    pbr d = sub(f);
    pbf x;
    bool bad = false;
    uint64_t type = 0, uuid = s->track_uuid;
    str name = {NULL, 0};
    bool is_meta = false, have_value = false;
    double value = 0.0;
    while (rd_field(&d, &x, &bad)) {
        if (x.field == PF_TE_TYPE && x.wire == 0) {
            type = x.v;
        } else if (x.field == PF_TE_DOUBLE_COUNTER_VALUE && x.wire == 1) {
            memcpy(&value, &x.v, sizeof value);
            have_value = true;
        } else if (x.field == PF_TE_TRACK_UUID && x.wire == 0) {
            uuid = x.v;
        } else if (x.field == PF_TE_NAME_IID && x.wire == 0) {
            if (x.v >= s->n_names || s->names[x.v].s == NULL) {
                return rfail(r, "event name iid %" PRIu64 " was not interned", x.v);
            }
            name = s->names[x.v];
        } else if (x.field == PF_TE_NAME && x.wire == 2) {
            name = (str){x.data, x.len};
            is_meta = x.len == strlen(VKPROF_PF_META_EVENT) &&
                      memcmp(x.data, VKPROF_PF_META_EVENT, x.len) == 0;
        }
    }
    if (bad) {
        return rfail(r, "a malformed track event");
    }
    if (is_meta) {
        return 0; /* read in pass 1 */
    }
    track *t = find_track(r, uuid);
    if (t != NULL && t->counter) {
        /* a queue's GPU busy share of the step starting here, as the JSON
         * trace writes it: thousandths of a percent, 3 decimals */
        if (type != PF_TYPE_COUNTER || !have_value || !(value >= 0.0 && value <= 100.0)) {
            return rfail(r, "a counter event that is no percentage");
        }
        jbuf *j = &r->events;
        jb_printf(j, ",\n{\"ph\":\"C\",\"cat\":\"%s\",\"name\":", VKPROF_TF_CAT_BUSY);
        jb_str(j, t->name.s, t->name.n);
        jb_printf(j, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":", t->pid, t->tid);
        jb_us(j, (int64_t)(ts - r->t0));
        const uint64_t milli = (uint64_t)llround(value * 1000.0);
        jb_printf(j, ",\"args\":{\"%s\":%" PRIu64 ".%03" PRIu64 "}}", VKPROF_TF_BUSY_ARG,
                  milli / 1000u, milli % 1000u);
        return 0;
    }
    if (t == NULL || !(t->gpu || t->host_thread)) {
        return rfail(r, "an event on track %" PRIu64 ", which is no thread or queue", uuid);
    }
    if (type == PF_TYPE_SLICE_END) {
        if (t->n_open == 0) {
            return rfail(r, "a slice end with no slice open on its track");
        }
        open_slice o = t->open[--t->n_open];
        if (ts < o.start) {
            free(o.args);
            return rfail(r, "a slice ends before it begins");
        }
        jbuf *j = &r->events;
        jb_printf(j, ",\n{\"ph\":\"X\",\"cat\":\"%s\",\"name\":",
                  o.gpu ? VKPROF_TF_CAT_GPU : VKPROF_TF_CAT_HOST);
        jb_str(j, o.name.s, o.name.n);
        jb_printf(j, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":", t->pid, t->tid);
        jb_us(j, (int64_t)(o.start - r->t0));
        jb_cstr(j, ",\"dur\":");
        jb_us(j, (int64_t)(ts - o.start));
        jb_cstr(j, ",\"args\":{");
        jb_cstr(j, o.args);
        if (o.gpu) {
            jb_printf(j, ",\"%s\":%" PRIu64, VKPROF_TF_ARG_NS, ts - o.start);
        }
        jb_cstr(j, "}}");
        free(o.args);
        return 0;
    }
    if (type != PF_TYPE_SLICE_BEGIN && type != PF_TYPE_INSTANT) {
        return rfail(r, "a track event of type %" PRIu64, type);
    }
    if (name.s == NULL) {
        return rfail(r, "an event without a name");
    }
    /* the args: the debug annotations, the flows */
    jbuf args = {0};
    if (type == PF_TYPE_SLICE_BEGIN) {
        jb_str(&args, (const uint8_t *)(t->gpu ? VKPROF_TF_ARG_PHASE : VKPROF_TF_ARG_BUCKET),
               strlen(t->gpu ? VKPROF_TF_ARG_PHASE : VKPROF_TF_ARG_BUCKET));
        jb_put(&args, ":", 1);
        jb_str(&args, name.s, name.n);
    }
    bool hot = false, sync = false;
    d = sub(f);
    while (rd_field(&d, &x, &bad)) {
        if (x.field == PF_TE_ANNOTATIONS && x.wire == 2) {
            if (args.len > 0) {
                jb_put(&args, ",", 1);
            }
            str an;
            if (annot_json(r, s, &x, &args, 0, &an) != 0) {
                free(args.s);
                return -1;
            }
            hot |= an.n == 3 && memcmp(an.s, VKPROF_TF_ARG_HOT, 3) == 0;
            sync |= an.n == 4 && memcmp(an.s, VKPROF_TF_ARG_SYNC, 4) == 0;
        } else if (x.field == PF_TE_FLOW_IDS && x.wire == 1) {
            flow_json(r, false, x.v, t, ts);
        } else if (x.field == PF_TE_TERMINATING_FLOW_IDS && x.wire == 1) {
            flow_json(r, true, x.v, t, ts);
        }
    }
    if (type == PF_TYPE_SLICE_BEGIN && !t->gpu) {
        /* written only when true */
        if (!hot) {
            jb_printf(&args, ",\"%s\":false", VKPROF_TF_ARG_HOT);
        }
        if (!sync) {
            jb_printf(&args, ",\"%s\":false", VKPROF_TF_ARG_SYNC);
        }
    }
    if (args.oom) {
        free(args.s);
        return rfail(r, "out of memory");
    }
    if (type == PF_TYPE_INSTANT) {
        jbuf *j = &r->events;
        jb_printf(j, ",\n{\"ph\":\"i\",\"cat\":\"%s\",\"name\":", VKPROF_TF_CAT_STEP);
        jb_str(j, name.s, name.n);
        jb_printf(j, ",\"s\":\"p\",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":", t->pid,
                  t->tid);
        jb_us(j, (int64_t)(ts - r->t0));
        jb_cstr(j, ",\"args\":{");
        jb_put(j, args.s ? args.s : "", args.len);
        jb_cstr(j, "}}");
        free(args.s);
        return 0;
    }
    if (args.s == NULL) {
        jb_put(&args, "", 0);
    }
    open_slice o = {ts, name, t->gpu, args.s, r->packet, r->packet_at};
    return push_slice(r, t, o);
}

static int pass2(rd *r)
{
    pbr top = {r->buf, r->buf + r->len};
    pbf pk;
    bool bad = false;
    for (r->packet = 0; (r->packet_at = (size_t)(top.p - r->buf), rd_field(&top, &pk, &bad));
         r->packet++) {
        pbr p = sub(&pk);
        pbf x;
        uint64_t seq_id = 0, ts = 0, flags = 0, clock = 0;
        bool have_ts = false, have_clock = false;
        const pbf *te = NULL, *cs = NULL, *id = NULL, *defs = NULL;
        pbf te_f, cs_f, id_f, defs_f;
        while (rd_field(&p, &x, &bad)) {
            switch (x.field) {
            case PF_PKT_SEQ_ID: seq_id = x.v; break;
            case PF_PKT_TIMESTAMP:
                ts = x.v;
                have_ts = true;
                break;
            case PF_PKT_TIMESTAMP_CLOCK_ID:
                clock = x.v;
                have_clock = true;
                break;
            case PF_PKT_SEQ_FLAGS: flags = x.v; break;
            case PF_PKT_TRACK_EVENT:
                te_f = x;
                te = x.wire == 2 ? &te_f : NULL;
                break;
            case PF_PKT_CLOCK_SNAPSHOT:
                cs_f = x;
                cs = x.wire == 2 ? &cs_f : NULL;
                break;
            case PF_PKT_INTERNED_DATA:
                id_f = x;
                id = x.wire == 2 ? &id_f : NULL;
                break;
            case PF_PKT_DEFAULTS:
                defs_f = x;
                defs = x.wire == 2 ? &defs_f : NULL;
                break;
            default: break;
            }
        }
        if (bad) {
            return rfail(r,
                         "a malformed field at byte %zu (a bad wire type, or a length past the "
                         "packet's end)",
                         (size_t)(p.p - r->buf));
        }
        if (seq_id == 0 || seq_id >= MAX_SEQS) {
            return rfail(r, "a packet without a sequence id (or one >= %u)", MAX_SEQS);
        }
        seq *s = &r->seqs[seq_id];
        if (flags & PF_SEQ_INCREMENTAL_STATE_CLEARED) {
            seq_clear(s);
            s->seen = true;
        } else if (!s->seen) {
            return rfail(r, "sequence %" PRIu64 " does not start with its state cleared", seq_id);
        }
        if (defs != NULL) {
            pbr dd = sub(defs);
            pbf y;
            while (rd_field(&dd, &y, &bad)) {
                if (y.field == PF_DEFAULTS_CLOCK_ID && y.wire == 0) {
                    s->clock_id = (uint32_t)y.v;
                } else if (y.field == PF_DEFAULTS_TRACK_EVENT && y.wire == 2) {
                    pbr q = sub(&y);
                    pbf z;
                    while (rd_field(&q, &z, &bad)) {
                        if (z.field == PF_TE_DEFAULTS_TRACK_UUID && z.wire == 0) {
                            s->track_uuid = z.v;
                        }
                    }
                }
            }
            if (bad) {
                return rfail(r, "malformed packet defaults");
            }
        }
        /* every interned_data field of the packet (a packet may hold
         * several: protobuf merges them) */
        if (id != NULL) {
            pbr q = sub(&pk);
            while (rd_field(&q, &x, &bad)) {
                if (x.field == PF_PKT_INTERNED_DATA && x.wire == 2 && intern(r, s, &x) != 0) {
                    return -1;
                }
            }
        }
        if (cs != NULL && snapshot(r, s, cs) != 0) {
            return -1;
        }
        if (te == NULL) {
            continue;
        }
        /* the event's CLOCK_MONOTONIC time */
        uint32_t c = have_clock ? (uint32_t)clock : s->clock_id;
        uint64_t mono;
        if (!have_ts) {
            return rfail(r, "a track event without a timestamp");
        }
        if (c == PF_CLOCK_MONOTONIC) {
            mono = ts;
        } else if (c == VKPROF_PF_CLOCK_DELTA && s->delta_known) {
            s->last += ts;
            mono = s->delta_mono + (s->last - s->delta_value);
        } else {
            return rfail(r, "a timestamp in clock %u, which vkprof does not write", c);
        }
        if (track_event(r, s, mono, te) != 0) {
            return -1;
        }
        if (r->events.oom || r->flows.oom) {
            return rfail(r, "the trace is too large to convert");
        }
    }
    if (bad) {
        return rfail(r, "malformed framing");
    }
    for (size_t i = 0; i < r->n_tracks; i++) {
        if (r->tracks[i].n_open > 0) {
            const open_slice *o = &r->tracks[i].open[r->tracks[i].n_open - 1];
            r->packet = o->packet;
            r->packet_at = o->at;
            return rfail(r, "a slice on track %" PRIu64 " begins here and never ends",
                         r->tracks[i].uuid);
        }
    }
    return 0;
}

/* ---- the whole document ---------------------------------------------------------- */

static void meta_event(jbuf *j, const char *what, int64_t pid, int64_t tid, const str *name,
                       long sort)
{
    jb_printf(j,
              ",\n{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"args\":{",
              what, pid, tid);
    if (name != NULL) {
        jb_printf(j, "\"%s\":", VKPROF_TF_M_ARG_NAME);
        jb_str(j, name->s, name->n);
    } else {
        jb_printf(j, "\"%s\":%ld", VKPROF_TF_M_ARG_SORT, sort);
    }
    jb_cstr(j, "}}");
}

int rpt_pftrace_to_json(const char *buf, size_t len, char **out, size_t *out_len, char *err,
                        size_t err_size)
{
    *out = NULL;
    *out_len = 0;
    if (err != NULL && err_size > 0) {
        err[0] = '\0';
    }
    rd r = {.buf = (const uint8_t *)buf, .len = len, .err = err, .err_size = err_size};
    int rc = -1;
    jbuf doc = {0};
    r.seqs = calloc(MAX_SEQS, sizeof *r.seqs);
    if (r.seqs == NULL) {
        rfail(&r, "out of memory");
        goto done;
    }
    if (check_framing(&r) != 0) {
        goto done;
    }
    uint64_t n_packets = r.packet;
    if (pass1(&r) != 0) {
        goto done;
    }
    if (r.meta == NULL) {
        r.packet = NO_PACKET;
        rfail(&r,
              "no \"%s\" event, which vkprof writes last: the file is cut short (it ends "
              "after packet #%" PRIu64 ", at byte %zu), or it is not a trace vkprof wrote",
              VKPROF_PF_META_EVENT, n_packets - 1, len);
        goto done;
    }
    r.packet = r.meta_packet; /* the metadata's messages name its packet */
    r.packet_at = r.meta_at;
    /* the metadata: its annotations are the JSON metadata's members */
    jbuf meta = {0};
    {
        pbr m = {r.meta, r.meta + r.meta_len};
        pbf x;
        bool bad = false;
        while (rd_field(&m, &x, &bad)) {
            if (x.field == PF_TE_ANNOTATIONS && x.wire == 2) {
                jb_cstr(&meta, meta.len ? "," : "{");
                str an;
                if (annot_json(&r, NULL, &x, &meta, 0, &an) != 0) {
                    free(meta.s);
                    goto done;
                }
                if (an.n == strlen(VKPROF_TF_META_TRACE_START) &&
                    memcmp(an.s, VKPROF_TF_META_TRACE_START, an.n) == 0) {
                    /* its value: the uint just written after the colon */
                    const char *colon = strrchr(meta.s, ':');
                    r.t0 = strtoull(colon + 1, NULL, 10);
                    r.have_t0 = true;
                }
            }
        }
        jb_cstr(&meta, meta.len ? "}" : "{}");
        if (bad || meta.oom || !r.have_t0) {
            free(meta.s);
            rfail(&r, "the metadata event is malformed or has no %s", VKPROF_TF_META_TRACE_START);
            goto done;
        }
    }
    if (pass2(&r) != 0) {
        free(meta.s);
        goto done;
    }
    /* track names and order as trace_json.c writes them */
    jb_cstr(&doc, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    jb_cstr(&doc, "{\"ph\":\"M\",\"name\":\"" VKPROF_TF_M_PROCESS_SORT "\",\"pid\":1,\"tid\":0,"
                  "\"args\":{\"" VKPROF_TF_M_ARG_SORT "\":0}}");
    for (size_t i = 0; i < r.n_tracks; i++) {
        const track *t = &r.tracks[i];
        if (t->process) {
            meta_event(&doc, VKPROF_TF_M_PROCESS_NAME, VKPROF_TF_PID_HOST, 0, &t->name, 0);
        } else if (t->gpu_root) {
            meta_event(&doc, VKPROF_TF_M_PROCESS_NAME, VKPROF_TF_PID_GPU, 0, &t->name, 0);
            meta_event(&doc, VKPROF_TF_M_PROCESS_SORT, VKPROF_TF_PID_GPU, 0, NULL, 1);
        } else if (t->name.s != NULL && (t->gpu || t->host_thread)) {
            meta_event(&doc, VKPROF_TF_M_THREAD_NAME, t->pid, t->tid, &t->name, 0);
            if (t->host_thread) {
                meta_event(&doc, VKPROF_TF_M_THREAD_SORT, t->pid, t->tid, NULL, (long)t->tid);
            }
        }
    }
    jb_put(&doc, r.events.s ? r.events.s : "", r.events.len);
    jb_put(&doc, r.flows.s ? r.flows.s : "", r.flows.len);
    jb_cstr(&doc, "\n],\n\"" VKPROF_TF_META "\":");
    jb_put(&doc, meta.s, meta.len);
    jb_cstr(&doc, "}\n");
    free(meta.s);
    if (doc.oom) {
        r.packet = NO_PACKET;
        rfail(&r, "the trace is too large to convert");
        goto done;
    }
    *out = doc.s;
    *out_len = doc.len;
    doc.s = NULL;
    rc = 0;
done:
    free(doc.s);
    free(r.events.s);
    free(r.flows.s);
    for (size_t i = 0; i < r.n_tracks; i++) {
        for (size_t k = 0; k < r.tracks[i].n_open; k++) {
            free(r.tracks[i].open[k].args);
        }
        free(r.tracks[i].open);
    }
    free(r.tracks);
    if (r.seqs != NULL) {
        for (size_t i = 0; i < MAX_SEQS; i++) {
            seq_clear(&r.seqs[i]);
        }
        free(r.seqs);
    }
    return rc;
}
