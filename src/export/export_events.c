/* See export_events.h. */
#define _XOPEN_SOURCE 700
#include "base/base.h"
#include "clock/clock.h"
#include "timeline/store.h"

#include "export/export_events.h"
#include "export/trace_format.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the sort key ------------------------------------------------------
 *
 * Both maps (the GPU's and the host clock's piecewise-linear maps) are
 * monotone, non-decreasing, in `rel`, the signed distance of the ticks from
 * the map's first point: inside the points each segment interpolates between
 * increasing host times, outside them it extrapolates with a positive slope.
 * So an event's host-ns start never decreases as its rank (rel, made
 * unsigned by flipping the sign bit) increases, and events can be sorted by
 * rank without mapping them first: the sort needs no array of keys, only
 * indices. Two ranks that map to one ns are put in order by the iterator
 * (vkprof__export_next), which maps every start anyway.
 *
 *   GPU scope: rel = the signed distance, modulo the valid bits, from its
 *              context's first calibration point (calib.c's sdelta_m),
 *              exactly as the map computes it, so a counter that wraps inside
 *              the trace is ordered as the map orders it; a track holds one
 *              context's scopes, so ranks are only compared within one clock;
 *   span:      the host clock's ticks (64 bits), relative to the first span
 *              of the walk: its map subtracts its own first point, which
 *              orders the same whenever the ticks of one process lie within
 *              2^63 of each other (a counter does not wrap that far; the
 *              CLOCK_MONOTONIC fallback is ns);
 *   step:      CLOCK_MONOTONIC ns. */

#define SIGN64 (UINT64_C(1) << 63)

typedef struct keyer {
    const vkprof_event *events;
    const uint8_t *ev_src; /* NULL: one context */
    uint64_t span_ref;
    const vkprof_xsrc *src;
} keyer;

static inline uint32_t src_of_ptr(const keyer *k, const vkprof_event *e)
{
    return k->ev_src != NULL ? k->ev_src[e - k->events] : 0u;
}

static uint64_t gpu_rel(uint64_t mask, uint64_t a, uint64_t b)
{
    uint64_t d = (a - b) & mask;
    int64_t r;
    if (mask == UINT64_MAX) {
        r = (int64_t)d;
    } else if (d > (mask >> 1)) {
        r = -(int64_t)((mask - d) + 1);
    } else {
        r = (int64_t)d;
    }
    return (uint64_t)r ^ SIGN64;
}

static inline uint64_t rank_of(const keyer *k, const vkprof_event *e)
{
    switch (e->kind) {
    case VKPROF_EV_SPAN: return (e->start - k->span_ref) ^ SIGN64;
    case VKPROF_EV_GPU: {
        const vkprof_xsrc *s = &k->src[src_of_ptr(k, e)];
        return gpu_rel(s->ctx->valid_mask, e->start, s->gpu_ref);
    }
    default: return e->start;
    }
}

/* Of two events with one rank (one start), the larger of these ends later. */
static inline uint64_t end_rank_of(const keyer *k, const vkprof_event *e)
{
    switch (e->kind) {
    case VKPROF_EV_SPAN: return (e->end - k->span_ref) ^ SIGN64;
    case VKPROF_EV_GPU: return (e->end - e->start) & k->src[src_of_ptr(k, e)].ctx->valid_mask;
    default: return e->end;
    }
}

/* (kind, tid) as one number: the most significant part of the order */
#define BUCKETS (3u << 16)
static inline uint32_t bucket_of(const vkprof_event *e)
{
    return ((uint32_t)(e->kind - 1u) << 16) | e->tid;
}

/* ---- LSD radix sort of indices ---------------------------------------- */

#define DIGIT_BITS 11u
#define DIGITS (1u << DIGIT_BITS)
#define MAX_PASSES ((64u + DIGIT_BITS - 1u) / DIGIT_BITS)

static unsigned bit_length(uint64_t v)
{
    unsigned b = 0;
    while (v != 0) {
        b++;
        v >>= 1;
    }
    return b;
}

/* The rank minus its kind's least rank, the digit the passes sort on. */
typedef struct rank_base {
    const keyer *k;
    uint64_t min[4];
} rank_base;

static inline uint64_t rel_rank(const rank_base *rb, const vkprof_event *e)
{
    return rank_of(rb->k, e) - rb->min[e->kind];
}

/* What msd_sort sorts by: the rank, or (by_id) the span's flow id. */
typedef struct sort_key {
    const rank_base *rb;
    bool by_id;
    uint64_t min_id;
    uint32_t *h;                   /* DIGITS counters */
    uint32_t (*start)[DIGITS + 1]; /* one row per level */
} sort_key;

static inline uint64_t key_of(const sort_key *sk, const vkprof_event *e)
{
    return sk->by_id ? e->id - sk->min_id : rel_rank(sk->rb, e);
}

/* Sort a[0..n) by the bits of the rank below `top` + DIGIT_BITS, most
 * significant digit first, stable, through tmp[0..n). MSD, not LSD: the
 * store is nearly in time order, so each digit's indices come from one
 * stretch of it and every pass reads the store almost in order; an LSD pass
 * on the low digits would scatter them and miss the cache on every event. */
/* Whether a[0..n) is in order already; *ties: two neighbours share a key. */
static bool in_order(const sort_key *sk, const vkprof_event *ev, const uint32_t *a, uint32_t n,
                     bool *ties)
{
    uint64_t prev = key_of(sk, &ev[a[0]]);
    bool eq = false;
    for (uint32_t i = 1; i < n; i++) {
        const uint64_t k = key_of(sk, &ev[a[i]]);
        if (k < prev) {
            return false;
        }
        eq = eq || k == prev;
        prev = k;
    }
    *ties = *ties || eq;
    return true;
}

static void msd_sort(const sort_key *sk, const vkprof_event *ev, uint32_t *a, uint32_t *tmp,
                     uint32_t n, int top, unsigned level)
{
    uint32_t *h = sk->h;
    if (n <= 32) {
        for (uint32_t i = 1; i < n; i++) {
            const uint32_t v = a[i];
            const uint64_t kv = key_of(sk, &ev[v]);
            uint32_t j = i;
            for (; j > 0 && key_of(sk, &ev[a[j - 1]]) > kv; j--) {
                a[j] = a[j - 1];
            }
            a[j] = v;
        }
        return;
    }
    for (; top >= 0; top -= (int)DIGIT_BITS) {
        memset(h, 0, DIGITS * sizeof *h);
        for (uint32_t i = 0; i < n; i++) {
            h[(key_of(sk, &ev[a[i]]) >> top) & (DIGITS - 1u)]++;
        }
        uint32_t d0 = 0;
        while (h[d0] == 0) {
            d0++;
        }
        if (h[d0] != n) {
            break; /* this digit splits them */
        }
    }
    if (top < 0) {
        return; /* one rank: the store's order stays */
    }
    uint32_t *start = sk->start[level], sum = 0;
    for (uint32_t d = 0; d < DIGITS; d++) {
        start[d] = sum;
        sum += h[d];
    }
    start[DIGITS] = sum;
    for (uint32_t d = 0; d < DIGITS; d++) {
        h[d] = start[d];
    }
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t idx = a[i];
        tmp[h[(key_of(sk, &ev[idx]) >> top) & (DIGITS - 1u)]++] = idx;
    }
    memcpy(a, tmp, (size_t)n * sizeof *a);
    if (top == 0) {
        return;
    }
    for (uint32_t d = 0; d < DIGITS; d++) {
        const uint32_t c = start[d + 1] - start[d];
        if (c > 1) {
            msd_sort(sk, ev, a + start[d], tmp + start[d], c, top - (int)DIGIT_BITS, level + 1);
        }
    }
}

/* Sort `a` (n indices) by (bucket, rank), stable, through `tmp` (n);
 * bucket_count holds the count of each bucket. */
/* Returns whether two events of one track may share a rank. */
static bool sort_events(const sort_key *sk, const vkprof_event *ev, uint32_t *a, uint32_t *tmp,
                        uint32_t n, const unsigned *bits, uint32_t *bucket_count,
                        const uint64_t *unordered, bool ties)
{
    /* the bucket, most significant: a counting pass (bucket_count becomes
     * the starts), unless one track holds everything */
    uint32_t sum = 0;
    bool one = false;
    for (uint32_t b = 0; b < BUCKETS; b++) {
        const uint32_t c = bucket_count[b];
        one = one || c == n;
        bucket_count[b] = sum;
        sum += c;
    }
    if (!one) {
        for (uint32_t i = 0; i < n; i++) {
            const uint32_t idx = a[i];
            tmp[bucket_count[bucket_of(&ev[idx])]++] = idx;
        }
        memcpy(a, tmp, (size_t)n * sizeof *a);
    }
    /* each track by rank (bucket_count[b] is now the end of bucket b) */
    for (uint32_t i = 0; i < n;) {
        const uint32_t b = bucket_of(&ev[a[i]]);
        const uint32_t end = one ? n : bucket_count[b];
        const unsigned kb = bits[ev[a[i]].kind];
        /* a track recorded in time order (GPU scopes, steps, spans that do
         * not nest), as the gathering pass found, is left as it is (its
         * ties were noted there) */
        const bool ordered = (unordered[b >> 6] >> (b & 63) & 1u) == 0;
        if (end - i > 1 && kb == 0) {
            ties = true; /* every one of this kind has one rank */
        } else if (end - i > 1 && !ordered) {
            const int top = (int)(((kb - 1u) / DIGIT_BITS) * DIGIT_BITS);
            msd_sort(sk, ev, a + i, tmp + i, end - i, top, 0);
            ties = true; /* not known: looked for after the sort */
        }
        i = end;
    }
    return ties;
}

/* Events of one bucket and one rank: the longer first, stable (a run is
 * short; a long one, e.g. many GPU scopes on one timestamp, is merge sorted
 * through `tmp`). */
static void sort_run_by_end(const keyer *k, const vkprof_event *ev, uint32_t *a, uint32_t n,
                            uint32_t *tmp)
{
    if (n <= 16) {
        for (uint32_t i = 1; i < n; i++) {
            uint32_t v = a[i];
            uint64_t kv = end_rank_of(k, &ev[v]);
            uint32_t j = i;
            for (; j > 0 && end_rank_of(k, &ev[a[j - 1]]) < kv; j--) {
                a[j] = a[j - 1];
            }
            a[j] = v;
        }
        return;
    }
    uint32_t half = n / 2;
    sort_run_by_end(k, ev, a, half, tmp);
    sort_run_by_end(k, ev, a + half, n - half, tmp);
    memcpy(tmp, a, half * sizeof *a);
    uint32_t i = 0, j = half, w = 0;
    while (i < half && j < n) {
        /* take the right one only when it ends strictly later: stable */
        if (end_rank_of(k, &ev[a[j]]) > end_rank_of(k, &ev[tmp[i]])) {
            a[w++] = a[j++];
        } else {
            a[w++] = tmp[i++];
        }
    }
    while (i < half) {
        a[w++] = tmp[i++];
    }
}

/* ---- the walk ----------------------------------------------------------- */

typedef struct scratch {
    uint32_t bucket_count[BUCKETS];
    /* per bucket, found in the gathering pass: seen, and out of rank order
     * (each bucket's events in the order they were gathered) */
    uint64_t seen[BUCKETS / 64], unordered[BUCKETS / 64];
    uint32_t h[DIGITS];
    uint32_t start[MAX_PASSES][DIGITS + 1];
    uint64_t used[65536 / 64]; /* host thread indices seen */
} scratch;

static inline uint32_t src_of(const vkprof_export *x, uint32_t idx)
{
    return x->ev_src != NULL ? x->ev_src[idx] : 0u;
}

static uint64_t map_start(vkprof_export *x, uint32_t idx)
{
    const vkprof_event *e = &x->ev[idx];
    uint64_t ns = e->start;
    if (e->kind == VKPROF_EV_GPU) {
        /* kept only when the context's calibration has a point: the map succeeds */
        if (!vkprof__pl_snap_map(&x->src[src_of(x, idx)].gpu, e->start, &ns)) {
            ns = 0;
        }
    } else if (e->kind == VKPROF_EV_SPAN) {
        /* both ends through the one map of the host clock (monotone, so
         * slices nest as their ticks do); steps are CLOCK_MONOTONIC ns */
        ns = vkprof__hclk_snap_ns(&x->hclk, e->start);
    }
    return ns;
}

static uint64_t map_end(vkprof_export *x, uint32_t idx, uint64_t start_ns)
{
    const vkprof_event *e = &x->ev[idx];
    if (e->kind == VKPROF_EV_GPU) {
        /* Both ends through the one map, as a span's: two scopes that share
         * a stamp share the boundary, under drift and across calibration
         * points (a start mapped plus a duration in nominal ns overlapped
         * the next slice by the drift times the length, and Perfetto drops
         * partly overlapping slices). The map is monotone in the masked
         * ticks; the phase totals stay in device ns (trace-format.md). */
        uint64_t end_ns = start_ns;
        if (!vkprof__pl_snap_map(&x->src[src_of(x, idx)].gpu, e->end, &end_ns) ||
            end_ns < start_ns) {
            end_ns = start_ns;
        }
        return end_ns;
    }
    if (e->kind == VKPROF_EV_SPAN) {
        return vkprof__hclk_snap_ns(&x->hclk, e->end);
    }
    return e->end;
}

/* A host thread's name: its context's (an opened spool's copy) or the
 * process's, else "thread <tid>". */
static void thread_name(vkprof_context ctx, uint16_t tid, char *out, size_t cap)
{
    const char *tn = NULL;
    if (ctx->frozen != NULL) {
        const vkprof_frozen *f = ctx->frozen;
        if (tid >= 1 && tid <= f->thread_count && f->thread_names[tid - 1][0] != '\0') {
            tn = f->thread_names[tid - 1];
        } else if (tid == 1024) {
            tn = "other threads";
        }
    } else {
        tn = vkprof__thread_name(tid);
    }
    if (tn != NULL) {
        snprintf(out, cap, "%s", tn);
    } else {
        snprintf(out, cap, "thread %u", (unsigned)tid);
    }
}

static uint64_t device_id_of(vkprof_context ctx)
{
    return ctx->frozen != NULL ? ctx->frozen->device_id : (uint64_t)(uintptr_t)ctx->desc.device;
}

/* The GPU queue tracks' tids: one context, the classic family * 100 +
 * index + 1; several, that plus 2000 per device after the first and 1000
 * for a second context on the same queue (the layer's simultaneous-use
 * one), or 60000 + k where that does not fit or is taken. Device ordinals
 * into ord[]. */
static void gpu_tids(vkprof_export *x, uint32_t *ord)
{
    uint64_t devs[VKPROF_TRACE_SET_MAX];
    uint32_t ndev = 0;
    for (uint32_t s = 0; s < x->nsrc; s++) {
        const vkprof_context c = x->src[s].ctx;
        const uint64_t id = device_id_of(c);
        uint32_t d = 0;
        while (d < ndev && devs[d] != id) {
            d++;
        }
        if (d == ndev && ndev < VKPROF_TRACE_SET_MAX) {
            devs[ndev++] = id;
        }
        ord[s] = d;
        const uint32_t base = VKPROF_TF_GPU_TID(c->desc.queue_family_index, c->desc.queue_index);
        uint32_t tid = x->nsrc == 1 ? base : UINT32_MAX;
        for (uint32_t dup = 0; tid == UINT32_MAX && dup < 2 && base < 1000u; dup++) {
            uint32_t cand = 2000u * d + 1000u * dup + base;
            bool taken = cand > 59999u;
            for (uint32_t o = 0; o < s && !taken; o++) {
                taken = x->src[o].gpu_tid == cand;
            }
            if (!taken) {
                tid = cand;
            }
        }
        if (tid == UINT32_MAX) {
            tid = 60000u + s;
        }
        x->src[s].gpu_tid = (uint16_t)tid;
    }
}

static const char *const cal_methods[] = {"none", "calibrated_timestamps", "bracket"};

static void fill_meta(vkprof_export *x, const uint32_t *dev_ord, const uint64_t *first_ns,
                      const uint64_t *counts)
{
    vkprof_xmeta *m = &x->meta;
    m->n = x->nsrc;
    vkprof__export_process(x->src[0].ctx, &m->proc);
    vkprof__hclk_info(&x->src[0].ctx->hclk, &m->hclk);
    for (uint32_t s = 0; s < x->nsrc; s++) {
        const vkprof_context c = x->src[s].ctx;
        vkprof_xctx_meta *cm = &m->ctx[s];
        const vkprof_trace *t = &c->trace;
        cm->label = c->trace_label;
        cm->device = c->info.device_name;
        cm->driver = c->driver_name;
        cm->queue_family = c->desc.queue_family_index;
        cm->queue_index = c->desc.queue_index;
        cm->gpu_tid = x->src[s].gpu_tid;
        cm->device_ord = dev_ord[s];
        cm->device_id = device_id_of(c);
        cm->period = c->info.timestamp_period;
        cm->valid_bits = c->info.timestamp_valid_bits;
        vkprof_get_calibration(c, &cm->cal);
        vkprof_get_timing_stats(c, &cm->ts);
        cm->steps = vkprof__steps_done(c);
        cm->keep_last = t->keep_last;
        cm->capacity = t->capacity;
        cm->recorded = x->src[s].next;
        cm->dropped = t->keep_last ? 0 : atomic_load(&t->dropped);
        cm->overwritten =
            t->keep_last && cm->recorded > t->capacity ? cm->recorded - t->capacity : 0;
        cm->full_at_ns = t->keep_last ? 0 : atomic_load(&t->full_at_ns);
        cm->dropped_annotations = atomic_load(&t->annot_dropped);
        cm->host_spans = counts[4 * s + VKPROF_EV_SPAN];
        cm->gpu_scopes = counts[4 * s + VKPROF_EV_GPU];
        cm->steps_kept = counts[4 * s + VKPROF_EV_STEP];
        cm->unmapped = counts[4 * s];
        cm->first_ns = first_ns[s] == UINT64_MAX ? 0 : first_ns[s];
    }
    /* the whole trace */
    const vkprof_xctx_meta *c0 = &m->ctx[0];
    m->device = c0->device;
    m->driver = c0->driver;
    m->cal = c0->cal;
    m->cal_method = cal_methods[c0->cal.method <= 2 ? c0->cal.method : 0];
    m->ts = c0->ts;
    m->sampling_mode =
        c0->ts.mode == VKPROF_TIMING_RING ? VKPROF_TF_MODE_RING : VKPROF_TF_MODE_2SLOT;
    m->steps = c0->steps;
    m->token_src = x->token_src;
    m->period = c0->period;
    m->valid_bits = c0->valid_bits;
    for (uint32_t s = 0; s < x->nsrc; s++) {
        const vkprof_xctx_meta *cm = &m->ctx[s];
        m->keep_last = m->keep_last || cm->keep_last;
        m->capacity += cm->capacity;
        m->recorded += cm->recorded;
        m->dropped += cm->dropped;
        m->overwritten += cm->overwritten;
        m->dropped_annotations += cm->dropped_annotations;
        m->unmapped += cm->unmapped;
        m->host_spans += cm->host_spans;
        m->gpu_scopes += cm->gpu_scopes;
        if (cm->full_at_ns != 0 &&
            (m->complete_until_ns == 0 || cm->full_at_ns < m->complete_until_ns)) {
            m->complete_until_ns = cm->full_at_ns;
        }
        if (cm->overwritten > 0 && cm->first_ns > m->complete_from_ns) {
            m->complete_from_ns = cm->first_ns;
        }
        if (s == 0) {
            continue;
        }
        if (strcmp(cm->device, m->device) != 0) {
            m->device = "mixed";
        }
        if (strcmp(cm->driver, m->driver) != 0) {
            m->driver = "mixed";
        }
        if (cm->cal.method != c0->cal.method) {
            m->cal_method = "mixed";
        }
        if (cm->cal.error_bound_ns > m->cal.error_bound_ns) {
            const char *method = m->cal_method;
            m->cal = cm->cal;
            m->cal_method = method;
        }
        if (cm->ts.mode != c0->ts.mode) {
            m->sampling_mode = "mixed";
        }
        m->steps = cm->steps > m->steps ? cm->steps : m->steps;
        vkprof_timing_stats *a = &m->ts;
        const vkprof_timing_stats *b = &cm->ts;
        a->sample_every = b->sample_every > a->sample_every ? b->sample_every : a->sample_every;
        a->timed_steps = b->timed_steps > a->timed_steps ? b->timed_steps : a->timed_steps;
        a->rotate_scopes =
            b->rotate_scopes > a->rotate_scopes ? b->rotate_scopes : a->rotate_scopes;
        a->rotate_period =
            b->rotate_period > a->rotate_period ? b->rotate_period : a->rotate_period;
        a->scopes_recorded += b->scopes_recorded;
        a->samples += b->samples;
        a->submissions += b->submissions;
        a->scopes_collected += b->scopes_collected;
        a->scopes_dropped += b->scopes_dropped;
        a->scopes_pending += b->scopes_pending;
        a->scopes_discarded += b->scopes_discarded;
        a->calls_executed += b->calls_executed;
        a->calls_unstamped += b->calls_unstamped;
        a->rotate_changed_steps += b->rotate_changed_steps;
        a->stamps_written += b->stamps_written;
        a->shared_stamps += b->shared_stamps;
        a->lost_ring_full += b->lost_ring_full;
        a->lost_overwritten += b->lost_overwritten;
        a->lost_never_submitted += b->lost_never_submitted;
        a->lost_reset += b->lost_reset;
        a->lost_misuse += b->lost_misuse;
        a->lost_backwards += b->lost_backwards;
        a->lost_stale += b->lost_stale;
    }
    /* the calibration's check, over every context (the first one may be a
     * transfer family that ran nothing): counts summed, and any context's
     * verdict of inconsistency with its offset */
    uint64_t wc = 0, wv = 0;
    bool inconsistent = false;
    int64_t offset = 0;
    for (uint32_t s = 0; s < x->nsrc; s++) {
        const vkprof_calibration *cc = &m->ctx[s].cal;
        wc += cc->window_checks;
        wv += cc->window_violations;
        if (cc->inconsistent && !inconsistent) {
            inconsistent = true;
            offset = cc->inconsistent_offset_ns;
        }
    }
    m->cal.window_checks = wc;
    m->cal.window_violations = wv;
    m->cal.inconsistent = inconsistent;
    m->cal.inconsistent_offset_ns = offset;
}

int vkprof__export_begin(vkprof_export *x, const vkprof_context *ctxs, uint32_t n)
{
    memset(x, 0, sizeof *x);
    if (n == 0 || n > VKPROF_TRACE_SET_MAX) {
        errno = EINVAL;
        return -1;
    }
    uint32_t dev_ord[VKPROF_TRACE_SET_MAX];
    uint64_t first_ns[VKPROF_TRACE_SET_MAX];
    uint64_t *counts = calloc((size_t)n * 4, sizeof *counts); /* per context: unmapped, kinds */
    uint64_t *src_min_rank = calloc(n, sizeof *src_min_rank);
    uint32_t *src_min_at = calloc(n, sizeof *src_min_at);
    scratch *sc = calloc(1, sizeof *sc);
    uint32_t *order = NULL, *tmp = NULL;
    uint64_t *last_rank = NULL;
    struct {
        uint32_t bucket, count;
    } *bk = NULL;
    uint32_t nbk = 0;
    x->src = calloc(n, sizeof *x->src);
    x->meta.ctx = calloc(n, sizeof *x->meta.ctx);
    x->nsrc = n;
    if (counts == NULL || src_min_rank == NULL || src_min_at == NULL || sc == NULL ||
        x->src == NULL || x->meta.ctx == NULL) {
        goto nomem;
    }
    /* each context: its store as it is now, its calibration copied once */
    uint64_t total = 0;
    for (uint32_t s = 0; s < n; s++) {
        vkprof_xsrc *xs = &x->src[s];
        const vkprof_context c = ctxs[s];
        const vkprof_trace *t = &c->trace;
        xs->ctx = c;
        xs->ev = t->events;
        xs->next = atomic_load(&t->next);
        xs->annot_next = atomic_load(&t->annot_next);
        xs->slots = t->events == NULL        ? 0
                    : xs->next < t->capacity ? (uint32_t)xs->next
                                             : t->capacity;
        if (!vkprof__cal_snapshot(c, &xs->gpu)) {
            goto nomem;
        }
        xs->gpu_ref = xs->gpu.n > 0 ? xs->gpu.p[0].ticks : 0;
        total += xs->slots;
        src_min_rank[s] = UINT64_MAX;
        first_ns[s] = UINT64_MAX;
    }
    if (total > UINT32_MAX - 1u) {
        errno = EOVERFLOW;
        goto fail;
    }
    gpu_tids(x, dev_ord);
    /* a host clock point now (a live context): every span recorded so far is
     * interpolated; then the one copy the walk maps spans through */
    vkprof__hclk_calibrate(&ctxs[0]->hclk);
    if (!vkprof__hclk_snapshot(&ctxs[0]->hclk, &x->hclk)) {
        goto nomem;
    }

    /* the events: the one store in place, or a copy of every kept one */
    if (n == 1) {
        x->ev = x->src[0].ev;
    } else {
        x->ev_copy = malloc((total ? total : 1) * sizeof *x->ev_copy);
        x->ev_src = malloc(total ? total : 1);
        if (x->ev_copy == NULL || x->ev_src == NULL) {
            goto nomem;
        }
        x->ev = x->ev_copy;
    }
    order = total ? malloc((size_t)total * sizeof *order) : NULL;
    if (total && order == NULL) {
        goto nomem;
    }
    keyer k = {x->ev, x->ev_src, 0, x->src};
    /* each bucket's last rank: a calloc'd table of which only the pages of
     * the buckets in use are ever touched */
    last_rank = calloc(BUCKETS, sizeof *last_rank);
    if (last_rank == NULL) {
        goto nomem;
    }
    bool ties_seen = false;
    bool span_ref_set = false;
    uint32_t kept = 0, ncopy = 0;
    uint64_t min_rank[4] = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX}, max_rank[4] = {0};
    uint32_t min_at[4] = {0};
    uint64_t min_id = UINT64_MAX, max_id = 0;
    uint32_t spans_with_id = 0, gpu_with_id = 0;
    uint32_t *bucket_count = sc->bucket_count;
    uint64_t *used = sc->used;
    x->token_src = 0;
    for (uint32_t s = 1; s < n; s++) {
        if (vkprof__steps_done(x->src[s].ctx) > vkprof__steps_done(x->src[x->token_src].ctx)) {
            x->token_src = s;
        }
    }
    for (uint32_t s = 0; s < n; s++) {
        const vkprof_xsrc *xs = &x->src[s];
        const vkprof_trace *t = &xs->ctx->trace;
        for (uint32_t i = 0; i < xs->slots; i++) {
            const vkprof_event *e = &xs->ev[i];
            if (atomic_load_explicit(&((vkprof_event *)e)->ready, memory_order_acquire) !=
                vkprof__trace_expect(t, xs->next, i)) {
                continue; /* still being written by another thread (or an older lap's) */
            }
            const unsigned kind = e->kind;
            if (kind < VKPROF_EV_SPAN || kind > VKPROF_EV_STEP) {
                continue;
            }
            if (kind == VKPROF_EV_GPU && xs->gpu.n == 0) {
                counts[4 * s]++; /* no calibration to place it: counted as unmapped */
                continue;
            }
            if (kind == VKPROF_EV_STEP && s != x->token_src) {
                continue; /* the same tokens, stepped by another context */
            }
            uint32_t idx = i;
            if (n > 1) {
                idx = ncopy++;
                x->ev_copy[idx] = *e;
                atomic_store_explicit(&x->ev_copy[idx].ready, 1, memory_order_relaxed);
                if (kind == VKPROF_EV_GPU) {
                    x->ev_copy[idx].tid = xs->gpu_tid;
                }
                x->ev_src[idx] = (uint8_t)s;
                e = &x->ev_copy[idx];
            }
            if (kind == VKPROF_EV_GPU) {
                gpu_with_id += e->id != 0;
            } else {
                if (kind == VKPROF_EV_SPAN && !span_ref_set) {
                    k.span_ref = e->start;
                    span_ref_set = true;
                }
                if (kind == VKPROF_EV_SPAN && e->id != 0) {
                    spans_with_id++;
                    min_id = e->id < min_id ? e->id : min_id;
                    max_id = e->id > max_id ? e->id : max_id;
                }
                used[e->tid >> 6] |= UINT64_C(1) << (e->tid & 63);
            }
            counts[4 * s + kind]++;
            bucket_count[bucket_of(e)]++;
            order[kept++] = idx;
            /* the ranks, in the same pass over the store: per kind (the
             * sort), and each context's earliest GPU scope (span_ref is set
             * by the first span, before its own rank) */
            const uint64_t r = rank_of(&k, e);
            if (r < min_rank[kind]) {
                min_rank[kind] = r;
                min_at[kind] = idx;
            }
            if (r > max_rank[kind]) {
                max_rank[kind] = r;
            }
            if (kind == VKPROF_EV_GPU && r < src_min_rank[s]) {
                src_min_rank[s] = r;
                src_min_at[s] = idx;
            }
            /* its track in rank order so far? (the sort's own check, done
             * here: one pass over the store fewer) */
            const uint32_t b = bucket_of(e);
            const uint64_t bit = UINT64_C(1) << (b & 63);
            if (sc->seen[b >> 6] & bit) {
                if (r < last_rank[b]) {
                    sc->unordered[b >> 6] |= bit;
                }
                ties_seen = ties_seen || r == last_rank[b];
            }
            sc->seen[b >> 6] |= bit;
            last_rank[b] = r;
        }
    }
    x->kept = kept;
    for (unsigned kind = VKPROF_EV_SPAN; kind <= VKPROF_EV_STEP; kind++) {
        for (uint32_t s = 0; s < n; s++) {
            x->count[kind] += (uint32_t)counts[4 * s + kind];
        }
    }
    x->first[VKPROF_EV_SPAN] = 0;
    x->first[VKPROF_EV_GPU] = x->count[VKPROF_EV_SPAN];
    x->first[VKPROF_EV_STEP] = x->count[VKPROF_EV_SPAN] + x->count[VKPROF_EV_GPU];

    /* the trace's zero: the earliest mapped start (the maps are monotone:
     * the least rank of spans and steps, each context's least GPU rank), or
     * the stores' start */
    x->t0 = UINT64_MAX;
    for (uint32_t s = 0; s < n; s++) {
        const uint64_t st = x->src[s].ctx->trace.start_ns;
        if (x->src[s].ev != NULL && st < x->t0) {
            x->t0 = st;
        }
    }
    if (x->t0 == UINT64_MAX) {
        x->t0 = 0;
    }
    for (unsigned kind = VKPROF_EV_SPAN; kind <= VKPROF_EV_STEP; kind += 2) {
        if (x->count[kind] > 0) {
            uint64_t st = map_start(x, min_at[kind]);
            x->t0 = st < x->t0 ? st : x->t0;
        }
    }
    for (uint32_t s = 0; s < n; s++) {
        if (src_min_rank[s] != UINT64_MAX) {
            uint64_t st = map_start(x, src_min_at[s]);
            x->t0 = st < x->t0 ? st : x->t0;
        }
    }

    if (kept > 0) {
        tmp = malloc((size_t)kept * sizeof *tmp);
        if (tmp == NULL) {
            goto nomem;
        }
        rank_base rb = {&k, {0}};
        unsigned bits[4] = {0};
        for (unsigned kind = VKPROF_EV_SPAN; kind <= VKPROF_EV_STEP; kind++) {
            if (x->count[kind] > 0) {
                rb.min[kind] = min_rank[kind];
                bits[kind] = bit_length(max_rank[kind] - min_rank[kind]);
            }
        }
        /* the buckets in use and their sizes, in bucket order (the order's
         * grouping), before the sort turns the counts into offsets */
        for (uint32_t b = 0; b < BUCKETS; b++) {
            nbk += bucket_count[b] != 0;
        }
        bk = malloc((nbk ? nbk : 1) * sizeof *bk);
        if (bk == NULL) {
            goto nomem;
        }
        for (uint32_t b = 0, m = 0; b < BUCKETS; b++) {
            if (bucket_count[b] != 0) {
                bk[m].bucket = b;
                bk[m++].count = bucket_count[b];
            }
        }
        sort_key sk = {&rb, false, 0, sc->h, sc->start};
        const bool ties =
            sort_events(&sk, x->ev, order, tmp, kept, bits, bucket_count, sc->unordered, ties_seen);
        /* one start, one bucket: the longer first */
        for (uint32_t i = 0; ties && i < kept;) {
            const vkprof_event *e = &x->ev[order[i]];
            uint32_t b = bucket_of(e);
            uint64_t r = rank_of(&k, e);
            uint32_t j = i + 1;
            while (j < kept && bucket_of(&x->ev[order[j]]) == b &&
                   rank_of(&k, &x->ev[order[j]]) == r) {
                j++;
            }
            if (j - i > 1) {
                sort_run_by_end(&k, x->ev, order + i, j - i, tmp);
            }
            i = j;
        }
        /* flows: spans by id, only when some GPU scope names a span */
        if (gpu_with_id > 0 && spans_with_id > 0) {
            uint32_t *ids = malloc((size_t)spans_with_id * sizeof *ids);
            if (ids == NULL) {
                goto nomem;
            }
            uint32_t m = 0;
            for (uint32_t i = 0; i < x->count[VKPROF_EV_SPAN]; i++) {
                if (x->ev[order[i]].id != 0) {
                    ids[m++] = order[i];
                }
            }
            sort_key by_id = {&rb, true, min_id, sc->h, sc->start};
            const unsigned ib = bit_length(max_id - min_id);
            bool same = false; /* ids are unique */
            if (m > 1 && ib > 0 && !in_order(&by_id, x->ev, ids, m, &same)) {
                msd_sort(&by_id, x->ev, ids, tmp, m, (int)(((ib - 1u) / DIGIT_BITS) * DIGIT_BITS),
                         0);
            }
            x->span_by_id = ids;
            x->span_ids = m;
        }
        free(tmp);
        tmp = NULL;
    }
    x->order = order;
    order = NULL;

    /* the tracks: the host threads that recorded spans or steps (in
     * increasing index), then each context's queue (a track even with no
     * GPU scope, as it is the context's) */
    uint32_t nthreads = 0;
    for (uint32_t w = 0; w < 65536 / 64; w++) {
        nthreads += (uint32_t)__builtin_popcountll(used[w]);
    }
    x->tracks = calloc((size_t)nthreads + n, sizeof *x->tracks);
    if (x->tracks == NULL) {
        goto nomem;
    }
    for (uint32_t tid = 0; tid < 65536; tid++) {
        if ((used[tid >> 6] >> (tid & 63)) & 1u) {
            vkprof_xtrack *tr = &x->tracks[x->ntracks++];
            tr->kind = VKPROF_EV_SPAN;
            tr->tid = (uint16_t)tid;
            thread_name(ctxs[0], (uint16_t)tid, tr->name, sizeof tr->name);
        }
    }
    x->nthreads = x->ntracks;
    for (uint32_t s = 0; s < n; s++) {
        const vkprof_context c = ctxs[s];
        vkprof_xtrack *tr = &x->tracks[x->ntracks++];
        tr->kind = VKPROF_EV_GPU;
        tr->tid = x->src[s].gpu_tid;
        tr->src = s;
        if (n == 1) {
            snprintf(tr->name, sizeof tr->name, "queue family %u, queue %u",
                     c->desc.queue_family_index, c->desc.queue_index);
        } else {
            snprintf(tr->name, sizeof tr->name, "%s: queue family %u, queue %u%s%s%s",
                     c->info.device_name, c->desc.queue_family_index, c->desc.queue_index,
                     c->trace_label[0] ? " (" : "", c->trace_label, c->trace_label[0] ? ")" : "");
        }
    }
    /* each track's ranges in the order (the order is by kind, then tid:
     * the buckets' sizes, without reading the events again) */
    for (uint32_t m = 0, i = 0; m < nbk; m++) {
        const unsigned kind = (bk[m].bucket >> 16) + 1u;
        const uint16_t tid = (uint16_t)(bk[m].bucket & 0xffffu);
        for (uint32_t t = 0; t < x->ntracks; t++) {
            vkprof_xtrack *tr = &x->tracks[t];
            bool mine = kind == VKPROF_EV_GPU ? tr->kind == VKPROF_EV_GPU && tr->tid == tid
                                              : tr->kind == VKPROF_EV_SPAN && tr->tid == tid;
            if (mine) {
                tr->pos[kind] = i;
                tr->n[kind] = bk[m].count;
                break;
            }
        }
        i += bk[m].count;
    }
    /* each context's first start kept (for the metadata) */
    for (uint32_t s = 0; s < n; s++) {
        if (src_min_rank[s] != UINT64_MAX) {
            first_ns[s] = map_start(x, src_min_at[s]);
        }
    }
    if (x->count[VKPROF_EV_SPAN] + x->count[VKPROF_EV_STEP] > 0) {
        /* host events belong to the trace, not to a context: the first one's */
        uint64_t hs = UINT64_MAX;
        for (unsigned kind = VKPROF_EV_SPAN; kind <= VKPROF_EV_STEP; kind += 2) {
            if (x->count[kind] > 0) {
                uint64_t st = map_start(x, min_at[kind]);
                hs = st < hs ? st : hs;
            }
        }
        first_ns[0] = hs < first_ns[0] ? hs : first_ns[0];
    }
    fill_meta(x, dev_ord, first_ns, counts);
    free(counts);
    free(src_min_rank);
    free(src_min_at);
    free(sc);
    free(last_rank);
    free(bk);
    return 0;

nomem:
    errno = ENOMEM;
fail:;
    int e = errno;
    free(counts);
    free(src_min_rank);
    free(src_min_at);
    free(sc);
    free(last_rank);
    free(bk);
    free(order);
    free(tmp);
    vkprof__export_end(x);
    errno = e;
    return -1;
}

void vkprof__export_end(vkprof_export *x)
{
    for (uint32_t s = 0; x->src != NULL && s < x->nsrc; s++) {
        vkprof__pl_snap_free(&x->src[s].gpu);
    }
    vkprof__pl_snap_free(&x->hclk);
    free(x->src);
    free(x->ev_copy);
    free(x->ev_src);
    free(x->order);
    free(x->span_by_id);
    free(x->tracks);
    free(x->meta.ctx);
    memset(x, 0, sizeof *x);
}

void vkprof__export_iter(const vkprof_export *x, vkprof_xiter *it, unsigned kind)
{
    memset(it, 0, sizeof *it);
    if (kind >= VKPROF_EV_SPAN && kind <= VKPROF_EV_STEP) {
        it->pos = x->first[kind];
        it->stop = x->first[kind] + x->count[kind];
    } else {
        it->pos = 0;
        it->stop = x->kept;
    }
}

void vkprof__export_iter_range(vkprof_xiter *it, uint32_t pos, uint32_t n)
{
    memset(it, 0, sizeof *it);
    it->pos = pos;
    it->stop = pos + n;
}

void vkprof__export_iter_free(vkprof_xiter *it)
{
    free(it->run);
    it->run = NULL;
    it->run_cap = it->run_len = it->run_pos = 0;
}

static void fill(vkprof_export *x, uint32_t idx, uint64_t start, uint64_t end, vkprof_xevent *out)
{
    const vkprof_event *e = &x->ev[idx];
    const uint32_t s = src_of(x, idx);
    const vkprof_context c = x->src[s].ctx;
    out->start_ns = start;
    out->end_ns = end;
    out->id = e->id;
    out->step = e->step;
    out->name_id = e->name;
    out->index = idx;
    out->src = s;
    out->tid = e->tid;
    out->kind = e->kind;
    out->flags = e->flags;
    out->annot = NULL;
    out->name = NULL;
    if (e->kind == VKPROF_EV_GPU) {
        out->name = vkprof_phase_name(c, e->name);
    } else if (e->kind == VKPROF_EV_SPAN) {
        out->name = vkprof_bucket_name(c, e->name);
    }
    /* a span's annotations, a GPU scope's args (vkprof_cmd_end_args) */
    if (e->kind != VKPROF_EV_STEP && e->annot != 0) {
        out->annot = vkprof__trace_annot(&c->trace, x->src[s].annot_next, e->annot);
    }
    if (e->kind != VKPROF_EV_STEP && out->name == NULL) {
        out->name = "?";
    }
}

static bool run_push(vkprof_xiter *it, uint32_t idx, uint64_t start, uint64_t end)
{
    if (it->run_len == it->run_cap) {
        uint32_t cap = it->run_cap ? it->run_cap * 2 : 16;
        vkprof_xrun *r = realloc(it->run, cap * sizeof *r);
        if (r == NULL) {
            it->failed = true;
            return false;
        }
        it->run = r;
        it->run_cap = cap;
    }
    it->run[it->run_len++] = (vkprof_xrun){idx, start, end};
    return true;
}

bool vkprof__export_next(vkprof_export *x, vkprof_xiter *it, vkprof_xevent *out)
{
    if (it->run_pos < it->run_len) {
        const vkprof_xrun *r = &it->run[it->run_pos++];
        fill(x, r->idx, r->start, r->end, out);
        return true;
    }
    if (it->failed || it->pos >= it->stop) {
        return false;
    }
    const vkprof_event *ev = x->ev;
    const uint32_t idx = x->order[it->pos++];
    const vkprof_event *e = &ev[idx];
    const uint64_t start = it->have_peek ? it->peek_start : map_start(x, idx);
    it->have_peek = false;
    if (it->pos < it->stop && bucket_of(&ev[x->order[it->pos]]) == bucket_of(e)) {
        /* the next one of this track: does it start in the same ns? (Two
         * ranks can: a counter ticks faster than 1 ns.) */
        uint64_t s2 = map_start(x, x->order[it->pos]);
        if (s2 != start) {
            it->have_peek = true;
            it->peek_start = s2;
        } else {
            /* the run of one start: by end, the longer first, stable */
            it->run_len = it->run_pos = 0;
            if (!run_push(it, idx, start, map_end(x, idx, start))) {
                return false;
            }
            while (it->pos < it->stop) {
                const uint32_t j = x->order[it->pos];
                if (bucket_of(&ev[j]) != bucket_of(e)) {
                    break;
                }
                uint64_t s = map_start(x, j);
                if (s != start) {
                    it->have_peek = true;
                    it->peek_start = s;
                    break;
                }
                if (!run_push(it, j, s, map_end(x, j, s))) {
                    return false;
                }
                it->pos++;
            }
            for (uint32_t a = 1; a < it->run_len; a++) {
                vkprof_xrun v = it->run[a];
                uint32_t b = a;
                for (; b > 0 && it->run[b - 1].end < v.end; b--) {
                    it->run[b] = it->run[b - 1];
                }
                it->run[b] = v;
            }
            const vkprof_xrun *r = &it->run[it->run_pos++];
            fill(x, r->idx, r->start, r->end, out);
            return true;
        }
    }
    fill(x, idx, start, map_end(x, idx, start), out);
    return true;
}

bool vkprof__export_next_flow(vkprof_export *x, vkprof_xiter *it, vkprof_xflow *out)
{
    const vkprof_event *ev = x->ev;
    vkprof_xevent g;
    while (x->span_ids > 0 && vkprof__export_next(x, it, &g)) {
        if (g.kind != VKPROF_EV_GPU || g.id == 0) {
            continue;
        }
        uint32_t lo = 0, hi = x->span_ids;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (ev[x->span_by_id[mid]].id < g.id) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if (lo >= x->span_ids || ev[x->span_by_id[lo]].id != g.id) {
            continue; /* the span is still open or was dropped */
        }
        const vkprof_event *s = &ev[x->span_by_id[lo]];
        out->span_id = g.id;
        out->span_index = x->span_by_id[lo];
        out->span_tid = s->tid;
        out->span_start_ns = map_start(x, x->span_by_id[lo]);
        out->gpu_index = g.index;
        out->gpu_tid = g.tid;
        out->gpu_start_ns = g.start_ns;
        x->meta.flows++;
        return true;
    }
    return false;
}

/* ---- the metadata, for both formats ------------------------------------ */

static void meta_calibration(const vkprof_meta_sink *k, const vkprof_calibration *cal,
                             const char *method)
{
    k->obj(k->w, VKPROF_TF_META_CALIBRATION);
    k->str(k->w, VKPROF_TF_CAL_METHOD, method);
    k->str(k->w, VKPROF_TF_CAL_EXTENSION, cal->extension ? cal->extension : "");
    k->str(k->w, VKPROF_TF_CAL_HOST_DOMAIN, cal->host_domain ? cal->host_domain : "");
    k->u64(k->w, VKPROF_TF_CAL_ERROR_BOUND, cal->error_bound_ns);
    k->u64(k->w, VKPROF_TF_CAL_POINTS, cal->points);
    k->u64(k->w, VKPROF_TF_CAL_RECALIBRATIONS, cal->recalibrations);
    k->drift(k->w, VKPROF_TF_CAL_DRIFT_PPM, cal->drift_ppm);
    k->u64(k->w, VKPROF_TF_CAL_WINDOW_CHECKS, cal->window_checks);
    k->u64(k->w, VKPROF_TF_CAL_WINDOW_VIOLATIONS, cal->window_violations);
    k->boolean(k->w, VKPROF_TF_CAL_INCONSISTENT, cal->inconsistent);
    if (cal->inconsistent) {
        k->f64(k->w, VKPROF_TF_CAL_INCONSISTENT_NS, (double)cal->inconsistent_offset_ns);
    }
    k->end(k->w);
}

/* Did context s time every call of each step (issue 26)? Work left untimed
 * would read as idle in the busy figures. */
static bool whole_steps(const vkprof_export *x, uint32_t s)
{
    const vkprof_timing_stats *ts = &x->meta.ctx[s].ts;
    return ts->rotate_scopes == 0 && ts->sample_every <= 1 && ts->calls_unstamped == 0 &&
           x->src[s].ctx->desc.trace_gpu_busy != VKPROF_FEATURE_DISABLED;
}

/* Context s's outer phases: their scopes hold each step's work (issue 26) */
static bool has_outer(vkprof_context c)
{
    const uint32_t n = vkprof_phase_count(c);
    for (uint32_t i = 0; i < n; i++) {
        if (vkprof_phase_flags(c, i) & VKPROF_PHASE_FLAG_OUTER) {
            return true;
        }
    }
    return false;
}

/* Is context s's GPU busy time per step measured? Every call timed, or,
 * with rotation, each step's work inside outer scopes stamped in every step
 * (the app says so: desc.trace_gpu_busy ENABLED). */
static bool busy_measured(const vkprof_export *x, uint32_t s)
{
    const vkprof_timing_stats *ts = &x->meta.ctx[s].ts;
    const vkprof_context c = x->src[s].ctx;
    return whole_steps(x, s) || (ts->rotate_scopes > 0 && ts->sample_every <= 1 &&
                                 c->desc.trace_gpu_busy == VKPROF_FEATURE_ENABLED && has_outer(c));
}

/* Is `name` (NULL: any) an outer phase of a context in [from, to)? */
static bool outer_named_before(const vkprof_export *x, uint32_t from, uint32_t to, const char *name)
{
    for (uint32_t s = from; s < to; s++) {
        const vkprof_context c = x->src[s].ctx;
        const uint32_t n = vkprof_phase_count(c);
        for (uint32_t i = 0; i < n; i++) {
            if ((vkprof_phase_flags(c, i) & VKPROF_PHASE_FLAG_OUTER) &&
                (name == NULL || strcmp(vkprof_phase_name(c, i), name) == 0)) {
                return true;
            }
        }
    }
    return false;
}

static void meta_outer(const vkprof_meta_sink *k, const vkprof_export *x, uint32_t from,
                       uint32_t to)
{
    if (!outer_named_before(x, from, to, NULL)) {
        return; /* none: no key */
    }
    k->arr(k->w, VKPROF_TF_SAMP_OUTER_PHASES);
    for (uint32_t s = from; s < to; s++) {
        const vkprof_context c = x->src[s].ctx;
        const uint32_t n = vkprof_phase_count(c);
        for (uint32_t i = 0; i < n; i++) {
            if ((vkprof_phase_flags(c, i) & VKPROF_PHASE_FLAG_OUTER) &&
                !outer_named_before(x, from, s, vkprof_phase_name(c, i))) {
                k->str(k->w, NULL, vkprof_phase_name(c, i));
            }
        }
    }
    k->end(k->w);
}

/* Are context s's GPU slices a sample of its calls? */
static bool sampled_slices(const vkprof_export *x, uint32_t s)
{
    const vkprof_timing_stats *ts = &x->meta.ctx[s].ts;
    return ts->rotate_scopes > 0 || ts->sample_every > 1 || ts->calls_unstamped > 0;
}

/* The phases' stats of context c (NULL: none, or out of memory; *n: how many) */
static vkprof_phase_stats *phase_stats(vkprof_context c, uint32_t *n)
{
    *n = 0;
    uint32_t count = 0;
    vkprof_snapshot(c, NULL, 0, &count, NULL);
    vkprof_phase_stats *st = count > 0 ? calloc(count, sizeof *st) : NULL;
    if (st == NULL || vkprof_snapshot(c, st, count, n, NULL) != VKPROF_OK) {
        free(st);
        *n = 0;
        return NULL;
    }
    return st;
}

static bool phase_ran(const vkprof_phase_stats *p)
{
    return p->calls > 0 || p->count > 0;
}

/* Each phase's estimate, summed by name over contexts [from, to), where a
 * context's slices are a sample (issue 26: vkprof report read a rotated
 * trace's slices as the whole, 1/3 of each phase's time, without a word).
 * Each context's stats are read once; a name is written at the first
 * context where it ran, with the later ones' figures. */
static void meta_estimates(const vkprof_meta_sink *k, const vkprof_export *x, uint32_t from,
                           uint32_t to)
{
    bool any = false;
    for (uint32_t s = from; s < to && !any; s++) {
        any = sampled_slices(x, s);
    }
    if (!any) {
        return;
    }
    const uint32_t nc = to - from;
    vkprof_phase_stats **st = calloc(nc, sizeof *st);
    uint32_t *ns = calloc(nc, sizeof *ns);
    for (uint32_t c = 0; st != NULL && ns != NULL && c < nc; c++) {
        st[c] = phase_stats(x->src[from + c].ctx, &ns[c]);
    }
    k->obj(k->w, VKPROF_TF_SAMP_ESTIMATES);
    for (uint32_t c = 0; st != NULL && ns != NULL && c < nc; c++) {
        for (uint32_t i = 0; i < ns[c]; i++) {
            const vkprof_phase_stats *p = &st[c][i];
            bool seen = false;
            for (uint32_t e = 0; e < c && !seen; e++) {
                for (uint32_t j = 0; j < ns[e] && !seen; j++) {
                    seen = phase_ran(&st[e][j]) && strcmp(st[e][j].name, p->name) == 0;
                }
            }
            if (!phase_ran(p) || seen) {
                continue;
            }
            uint64_t calls = p->calls, timed = p->count, est = p->est_total_ns;
            for (uint32_t e = c + 1; e < nc; e++) {
                for (uint32_t j = 0; j < ns[e]; j++) {
                    if (strcmp(st[e][j].name, p->name) == 0) {
                        calls += st[e][j].calls;
                        timed += st[e][j].count;
                        est += st[e][j].est_total_ns;
                    }
                }
            }
            k->obj(k->w, p->name);
            k->u64(k->w, VKPROF_TF_EST_CALLS, calls);
            k->u64(k->w, VKPROF_TF_EST_TIMED, timed);
            k->u64(k->w, VKPROF_TF_EST_TOTAL, est);
            if (p->flags & VKPROF_PHASE_FLAG_OUTER) {
                k->boolean(k->w, VKPROF_TF_EST_OUTER, true);
            }
            k->end(k->w);
        }
    }
    k->end(k->w);
    for (uint32_t c = 0; st != NULL && c < nc; c++) {
        free(st[c]);
    }
    free(st);
    free(ns);
}

static void meta_sampling(const vkprof_meta_sink *k, const vkprof_timing_stats *ts,
                          const char *mode, bool whole, bool busy, const vkprof_export *x,
                          uint32_t from, uint32_t to)
{
    k->obj(k->w, VKPROF_TF_META_SAMPLING);
    k->str(k->w, VKPROF_TF_SAMP_MODE, mode);
    k->u64(k->w, VKPROF_TF_SAMP_EVERY_N, ts->sample_every > 1 ? ts->sample_every : 1u);
    k->u64(k->w, VKPROF_TF_SAMP_TIMED_STEPS, ts->timed_steps);
    k->u64(k->w, VKPROF_TF_SAMP_RECORDED, ts->scopes_recorded);
    k->u64(k->w, VKPROF_TF_SAMP_SAMPLES, ts->samples);
    k->u64(k->w, VKPROF_TF_SAMP_SUBMISSIONS, ts->submissions);
    k->u64(k->w, VKPROF_TF_SAMP_COLLECTED, ts->scopes_collected);
    k->u64(k->w, VKPROF_TF_SAMP_DROPPED, ts->scopes_dropped);
    k->u64(k->w, VKPROF_TF_SAMP_PENDING, ts->scopes_pending);
    k->u64(k->w, VKPROF_TF_SAMP_DISCARDED, ts->scopes_discarded);
    k->u64(k->w, VKPROF_TF_SAMP_CALLS_EXECUTED, ts->calls_executed);
    k->u64(k->w, VKPROF_TF_SAMP_CALLS_UNSTAMPED, ts->calls_unstamped);
    k->u64(k->w, VKPROF_TF_SAMP_ROTATE_SCOPES, ts->rotate_scopes);
    k->u64(k->w, VKPROF_TF_SAMP_ROTATE_PERIOD, ts->rotate_period);
    k->u64(k->w, VKPROF_TF_SAMP_ROTATE_CHANGED, ts->rotate_changed_steps);
    k->boolean(k->w, VKPROF_TF_SAMP_WHOLE_STEPS, whole);
    k->boolean(k->w, VKPROF_TF_SAMP_BUSY_MEASURED, busy);
    meta_outer(k, x, from, to);
    meta_estimates(k, x, from, to);
    k->obj(k->w, VKPROF_TF_SAMP_LOST);
#define LOST_KV_(id, key, text) k->u64(k->w, key, ts->lost_##id);
    VKPROF_TF_LOST_REASONS(LOST_KV_)
#undef LOST_KV_
    k->end(k->w);
    k->end(k->w);
}

/* The keys of the event store (and their whole-from/until times) */
static void meta_store(const vkprof_meta_sink *k, bool keep_last, uint64_t recorded,
                       uint64_t overwritten, uint64_t complete_from, uint64_t complete_until)
{
    k->str(k->w, VKPROF_TF_META_TRACE_KEEP, keep_last ? VKPROF_TF_KEEP_LAST : VKPROF_TF_KEEP_FIRST);
    k->u64(k->w, VKPROF_TF_META_EVENTS_RECORDED, recorded);
    k->u64(k->w, VKPROF_TF_META_OVERWRITTEN_EVENTS, overwritten);
    k->u64(k->w, VKPROF_TF_META_COMPLETE_FROM, complete_from);
    k->u64(k->w, VKPROF_TF_META_COMPLETE_UNTIL, complete_until);
}

void vkprof__export_meta(const vkprof_export *x, const vkprof_meta_sink *k, uint64_t t0)
{
    const vkprof_xmeta *m = &x->meta;
    void *w = k->w;
    k->u64(w, VKPROF_TF_META_FORMAT, VKPROF_TF_VERSION);
    k->u64(w, VKPROF_TF_META_VERSION, vkprof_version());
    k->str(w, VKPROF_TF_META_DEVICE, m->device);
    k->str(w, VKPROF_TF_META_DRIVER, m->driver);
    meta_calibration(k, &m->cal, m->cal_method);

    /* which clock host spans were timed with, and how well it maps */
    k->obj(w, VKPROF_TF_META_HOST_CLOCK);
    k->str(w, VKPROF_TF_HCLK_SOURCE, m->hclk.source);
    k->str(w, VKPROF_TF_HCLK_REASON, m->hclk.reason);
    k->u64(w, VKPROF_TF_HCLK_HZ, m->hclk.hz);
    k->u64(w, VKPROF_TF_HCLK_RATE_NUM, m->hclk.rate_num);
    k->u64(w, VKPROF_TF_HCLK_RATE_DEN, m->hclk.rate_den);
    k->u64(w, VKPROF_TF_HCLK_ERROR_BOUND, m->hclk.error_bound_ns);
    k->u64(w, VKPROF_TF_HCLK_RESIDUAL, m->hclk.residual_ns);
    k->u64(w, VKPROF_TF_HCLK_POINTS, m->hclk.points);
    k->end(w);

    k->u64(w, VKPROF_TF_META_DROPPED_EVENTS, m->dropped);
    k->u64(w, VKPROF_TF_META_DROPPED_ANNOTATIONS, m->dropped_annotations);
    k->u64(w, VKPROF_TF_META_UNMAPPED_GPU_SCOPES, m->unmapped);
    k->u64(w, VKPROF_TF_META_EVENT_CAPACITY, m->capacity);
    k->u64(w, VKPROF_TF_META_HOST_SPANS, m->host_spans);
    k->u64(w, VKPROF_TF_META_GPU_SCOPES, m->gpu_scopes);
    k->u64(w, VKPROF_TF_META_FLOWS, m->flows);

    k->obj(w, VKPROF_TF_META_CLOCK_ANCHOR);
    k->u64(w, VKPROF_TF_ANCHOR_REALTIME, m->proc.real_ns);
    k->u64(w, VKPROF_TF_ANCHOR_MONOTONIC, m->proc.mono_ns);
    k->u64(w, VKPROF_TF_ANCHOR_ERROR, m->proc.err_ns);
    k->end(w);

    k->obj(w, VKPROF_TF_META_PROCESS);
    k->str(w, VKPROF_TF_PROC_BOOT_ID, m->proc.boot_id);
    k->str(w, VKPROF_TF_PROC_HOST, m->proc.host);
    k->u64(w, VKPROF_TF_PROC_PID, (uint64_t)m->proc.pid);
    k->end(w);

    k->u64(w, VKPROF_TF_META_TRACE_START, t0);
    k->u64(w, VKPROF_TF_META_STEPS, m->steps);
    k->f64(w, VKPROF_TF_META_TIMESTAMP_PERIOD, (double)m->period);
    k->u64(w, VKPROF_TF_META_TIMESTAMP_BITS, m->valid_bits);

    /* GPU sampling: the public accounting (one source for every exporter) */
    bool whole = true, busy = true;
    for (uint32_t s = 0; s < m->n; s++) {
        whole = whole && whole_steps(x, s);
        busy = busy && busy_measured(x, s);
    }
    meta_sampling(k, &m->ts, m->sampling_mode, whole, busy, x, 0, m->n);

    meta_store(k, m->keep_last, m->recorded, m->overwritten, m->complete_from_ns,
               m->complete_until_ns);
    k->str(w, VKPROF_TF_META_LABEL, m->ctx[0].label);

    if (m->n > 1) {
        k->u64(w, VKPROF_TF_META_TOKEN_CONTEXT, m->token_src);
        k->arr(w, VKPROF_TF_META_CONTEXTS);
        for (uint32_t s = 0; s < m->n; s++) {
            const vkprof_xctx_meta *c = &m->ctx[s];
            k->obj(w, NULL);
            k->str(w, VKPROF_TF_META_LABEL, c->label);
            k->str(w, VKPROF_TF_META_DEVICE, c->device);
            k->str(w, VKPROF_TF_META_DRIVER, c->driver);
            k->u64(w, VKPROF_TF_CTX_DEVICE_INDEX, c->device_ord);
            k->u64(w, VKPROF_TF_CTX_QUEUE_FAMILY, c->queue_family);
            k->u64(w, VKPROF_TF_CTX_QUEUE_INDEX, c->queue_index);
            k->u64(w, VKPROF_TF_CTX_GPU_TID, c->gpu_tid);
            meta_calibration(k, &c->cal, cal_methods[c->cal.method <= 2 ? c->cal.method : 0]);
            k->u64(w, VKPROF_TF_META_DROPPED_EVENTS, c->dropped);
            k->u64(w, VKPROF_TF_META_DROPPED_ANNOTATIONS, c->dropped_annotations);
            k->u64(w, VKPROF_TF_META_UNMAPPED_GPU_SCOPES, c->unmapped);
            k->u64(w, VKPROF_TF_META_EVENT_CAPACITY, c->capacity);
            k->u64(w, VKPROF_TF_META_HOST_SPANS, c->host_spans);
            k->u64(w, VKPROF_TF_META_GPU_SCOPES, c->gpu_scopes);
            k->u64(w, VKPROF_TF_META_STEPS, c->steps);
            k->f64(w, VKPROF_TF_META_TIMESTAMP_PERIOD, (double)c->period);
            k->u64(w, VKPROF_TF_META_TIMESTAMP_BITS, c->valid_bits);
            meta_sampling(k, &c->ts,
                          c->ts.mode == VKPROF_TIMING_RING ? VKPROF_TF_MODE_RING
                                                           : VKPROF_TF_MODE_2SLOT,
                          whole_steps(x, s), busy_measured(x, s), x, s, s + 1);
            meta_store(k, c->keep_last, c->recorded, c->overwritten,
                       c->overwritten > 0 ? c->first_ns : 0, c->full_at_ns);
            k->end(w);
        }
        k->end(w);
    }
}

/* ---- the GPU busy counter (issue 26) ---------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Add the busy interval [a, b) to the steps it overlaps (st: the sorted
 * step events, m of them; b[k] is [st[k], st[k + 1])). */
static void busy_add(vkprof_xbusy *out, unsigned char *hit, const uint64_t *st, uint32_t m,
                     uint64_t a, uint64_t b)
{
    /* the last step event at or before a (0 when a is before them all) */
    uint32_t lo = 0, hi = m;
    while (hi - lo > 1) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (st[mid] <= a) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    for (uint32_t k = lo; k + 1 < m && st[k] < b; k++) {
        const uint64_t s = a > st[k] ? a : st[k];
        const uint64_t e = b < st[k + 1] ? b : st[k + 1];
        if (e > s) {
            out[k].busy_ns += e - s;
            hit[k] = 1;
        }
    }
}

int vkprof__export_busy(vkprof_export *x, uint32_t t, vkprof_xbusy **out)
{
    *out = NULL;
    if (t >= x->ntracks || x->tracks[t].kind != VKPROF_EV_GPU) {
        return 0;
    }
    const vkprof_xtrack *tr = &x->tracks[t];
    const uint32_t s = tr->src;
    const uint32_t nsteps = x->count[VKPROF_EV_STEP];
    /* only where every call of a step was timed, or its work lay inside
     * outer scopes: work left untimed would read as idle */
    if (tr->n[VKPROF_EV_GPU] == 0 || nsteps < 2 || !busy_measured(x, s)) {
        return 0;
    }
    uint64_t *st = malloc((size_t)nsteps * sizeof *st);
    if (st == NULL) {
        errno = ENOMEM;
        return -1;
    }
    vkprof_xiter it;
    vkprof_xevent e;
    uint32_t m = 0;
    vkprof__export_iter(x, &it, VKPROF_EV_STEP);
    while (m < nsteps && vkprof__export_next(x, &it, &e)) {
        st[m++] = e.start_ns;
    }
    bool failed = it.failed;
    vkprof__export_iter_free(&it);
    qsort(st, m, sizeof *st, cmp_u64);
    uint32_t u = 0; /* distinct times */
    for (uint32_t k = 0; k < m; k++) {
        if (u == 0 || st[k] != st[u - 1]) {
            st[u++] = st[k];
        }
    }
    vkprof_xbusy *b = NULL;
    unsigned char *hit = NULL; /* the steps with work in them */
    if (!failed && u >= 2) {
        b = calloc(u - 1, sizeof *b);
        hit = calloc(u - 1, 1);
        failed = b == NULL || hit == NULL;
    }
    if (failed || u < 2) {
        free(b);
        free(hit);
        free(st);
        if (failed) {
            errno = ENOMEM;
            return -1;
        }
        return 0;
    }
    for (uint32_t k = 0; k + 1 < u; k++) {
        b[k].start_ns = st[k];
        b[k].end_ns = st[k + 1];
    }
    /* the union of the track's scopes (in start order), step by step; where
     * the busy time comes from outer scopes beside a sampled split, theirs
     * alone, and only the steps that hold them (vkprof run --busy N stamps
     * them in 1 step in N): each measured step has its value, held until
     * the next one */
    const bool outer_only = !whole_steps(x, s);
    uint64_t cs = 0, ce = 0;
    bool open = false;
    vkprof__export_iter_range(&it, tr->pos[VKPROF_EV_GPU], tr->n[VKPROF_EV_GPU]);
    while (vkprof__export_next(x, &it, &e)) {
        if (e.end_ns <= e.start_ns ||
            (outer_only && e.src < x->nsrc &&
             !(vkprof_phase_flags(x->src[e.src].ctx, e.name_id) & VKPROF_PHASE_FLAG_OUTER))) {
            continue;
        }
        if (open && e.start_ns <= ce) {
            if (e.end_ns > ce) {
                ce = e.end_ns;
            }
            continue;
        }
        if (open) {
            busy_add(b, hit, st, u, cs, ce);
        }
        cs = e.start_ns;
        ce = e.end_ns;
        open = true;
    }
    if (open) {
        busy_add(b, hit, st, u, cs, ce);
    }
    failed = it.failed;
    vkprof__export_iter_free(&it);
    free(st);
    if (failed) {
        free(b);
        free(hit);
        errno = ENOMEM;
        return -1;
    }
    uint32_t n = u - 1;
    if (outer_only) {
        n = 0;
        for (uint32_t k = 0; k + 1 < u; k++) {
            if (hit[k]) {
                b[n++] = b[k];
            }
        }
    }
    free(hit);
    if (n == 0) {
        free(b);
        return 0;
    }
    *out = b;
    return (int)n;
}
