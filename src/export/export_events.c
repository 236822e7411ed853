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
 * Both maps (vkprof__pl_map for GPU ticks and for the host clock's ticks)
 * are monotone, non-decreasing, in `rel`, the signed distance of the ticks
 * from the map's first point: inside the points each segment interpolates
 * between increasing host times, outside them it extrapolates with a
 * positive slope. So an event's host-ns start never decreases as its rank
 * (rel, made unsigned by flipping the sign bit) increases, and events can be
 * sorted by rank without mapping them first: the sort needs no array of
 * keys, only indices. Two ranks that map to one ns are put in order by the
 * iterator (vkprof__export_next), which maps every start anyway.
 *
 *   GPU scope: rel = the signed distance, modulo the valid bits, from the
 *              calibration's first point (calib.c's sdelta_m), exactly as
 *              vkprof__pl_map computes it, so a counter that wraps inside the
 *              trace is ordered as the map orders it;
 *   span:      the host clock's ticks (64 bits), relative to the first span
 *              of the store: its map subtracts its own first point, which
 *              orders the same whenever the ticks of one process lie within
 *              2^63 of each other (a counter does not wrap that far; the
 *              CLOCK_MONOTONIC fallback is ns);
 *   step:      CLOCK_MONOTONIC ns. */

#define SIGN64 (UINT64_C(1) << 63)

typedef struct keyer {
    const vkprof_event *events;
    uint64_t span_ref;
    uint64_t gpu_ref, gpu_mask;
} keyer;

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
    case VKPROF_EV_GPU: return gpu_rel(k->gpu_mask, e->start, k->gpu_ref);
    default: return e->start;
    }
}

/* Of two events with one rank (one start), the larger of these ends later. */
static inline uint64_t end_rank_of(const keyer *k, const vkprof_event *e, uint32_t valid_bits)
{
    switch (e->kind) {
    case VKPROF_EV_SPAN: return (e->end - k->span_ref) ^ SIGN64;
    case VKPROF_EV_GPU: return vkprof_tick_delta(e->start, e->end, valid_bits);
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
                        uint32_t n, const unsigned *bits, uint32_t *bucket_count)
{
    bool ties = false;
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
         * not nest) is checked in one pass and left as it is */
        if (end - i > 1 && kb == 0) {
            ties = true; /* every one of this kind has one rank */
        } else if (end - i > 1 && !in_order(sk, ev, a + i, end - i, &ties)) {
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
                            uint32_t *tmp, uint32_t bits)
{
    if (n <= 16) {
        for (uint32_t i = 1; i < n; i++) {
            uint32_t v = a[i];
            uint64_t kv = end_rank_of(k, &ev[v], bits);
            uint32_t j = i;
            for (; j > 0 && end_rank_of(k, &ev[a[j - 1]], bits) < kv; j--) {
                a[j] = a[j - 1];
            }
            a[j] = v;
        }
        return;
    }
    uint32_t half = n / 2;
    sort_run_by_end(k, ev, a, half, tmp, bits);
    sort_run_by_end(k, ev, a + half, n - half, tmp, bits);
    memcpy(tmp, a, half * sizeof *a);
    uint32_t i = 0, j = half, w = 0;
    while (i < half && j < n) {
        /* take the right one only when it ends strictly later: stable */
        if (end_rank_of(k, &ev[a[j]], bits) > end_rank_of(k, &ev[tmp[i]], bits)) {
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
    uint32_t h[DIGITS];
    uint32_t start[MAX_PASSES][DIGITS + 1];
    uint64_t used[65536 / 64]; /* host thread indices seen */
} scratch;

const char *vkprof__export_thread_name(uint16_t tid, char fallback[32])
{
    const char *tn = vkprof__thread_name(tid);
    if (tn == NULL) {
        snprintf(fallback, 32, "thread %u", (unsigned)tid);
        tn = fallback;
    }
    return tn;
}

static uint64_t map_start(vkprof_context ctx, const vkprof_event *e)
{
    uint64_t ns = e->start;
    if (e->kind == VKPROF_EV_GPU) {
        /* kept only when the calibration has a point: the map succeeds */
        if (!vkprof__cal_map(ctx, e->start, &ns)) {
            ns = 0;
        }
    } else if (e->kind == VKPROF_EV_SPAN) {
        /* both ends through the one map of the host clock (monotone, so
         * slices nest as their ticks do); steps are CLOCK_MONOTONIC ns */
        ns = vkprof__hclk_ns(&ctx->hclk, e->start);
    }
    return ns;
}

static uint64_t map_end(vkprof_context ctx, const vkprof_event *e, uint64_t start_ns)
{
    if (e->kind == VKPROF_EV_GPU) {
        /* the duration is exact from the ticks; the start is mapped */
        return start_ns + vkprof_ticks_to_ns(
                              vkprof_tick_delta(e->start, e->end, ctx->info.timestamp_valid_bits),
                              ctx->info.timestamp_period);
    }
    if (e->kind == VKPROF_EV_SPAN) {
        return vkprof__hclk_ns(&ctx->hclk, e->end);
    }
    return e->end;
}

int vkprof__export_begin(vkprof_export *x, vkprof_context ctx)
{
    memset(x, 0, sizeof *x);
    x->ctx = ctx;
    x->queue_family = ctx->desc.queue_family_index;
    x->queue_index = ctx->desc.queue_index;
    x->gpu_tid = (uint16_t)VKPROF_TF_GPU_TID(x->queue_family, x->queue_index);
    vkprof_trace *t = &ctx->trace;
    uint64_t n64 = atomic_load(&t->next);
    if (n64 > t->capacity) {
        n64 = t->capacity;
    }
    const uint32_t n = (uint32_t)n64;
    const vkprof_event *ev = t->events;
    /* a host clock point now: every span recorded so far is interpolated */
    vkprof__hclk_calibrate(&ctx->hclk);
    /* the calibration as it is now: with no point, GPU scopes cannot be
     * placed and are counted as unmapped */
    const uint32_t cal_points = ctx->cal.count;
    keyer k = {ev, 0, cal_points ? ctx->cal.points[0].ticks : 0, ctx->valid_mask};
    bool span_ref_set = false;

    uint32_t *order = n ? malloc((size_t)n * sizeof *order) : NULL;
    /* scratch: the count per bucket, the digit histograms, the threads seen */
    scratch *sc = calloc(1, sizeof *sc);
    uint32_t *bucket_count = sc ? sc->bucket_count : NULL;
    uint16_t *threads = NULL;
    uint32_t *tmp = NULL;
    if ((n && order == NULL) || sc == NULL) {
        goto nomem;
    }
    uint32_t kept = 0;
    uint64_t min_rank[4] = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX}, max_rank[4] = {0};
    uint32_t min_at[4] = {0};
    uint64_t min_id = UINT64_MAX, max_id = 0;
    uint32_t spans_with_id = 0, gpu_with_id = 0;
    const uint32_t nthreads = vkprof__thread_count();
    uint64_t *used = sc->used;
    for (uint32_t i = 0; i < n; i++) {
        const vkprof_event *e = &ev[i];
        if (!atomic_load_explicit(&((vkprof_event *)e)->ready, memory_order_acquire)) {
            continue; /* still being written by another thread */
        }
        const unsigned kind = e->kind;
        if (kind < VKPROF_EV_SPAN || kind > VKPROF_EV_STEP) {
            continue;
        }
        if (kind == VKPROF_EV_GPU) {
            if (cal_points == 0) {
                x->unmapped++;
                continue;
            }
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
            if (e->tid <= nthreads) {
                used[e->tid >> 6] |= UINT64_C(1) << (e->tid & 63);
            }
        }
        uint64_t r = rank_of(&k, e);
        if (r < min_rank[kind]) {
            min_rank[kind] = r;
            min_at[kind] = i;
        }
        if (r > max_rank[kind]) {
            max_rank[kind] = r;
        }
        x->count[kind]++;
        bucket_count[bucket_of(e)]++;
        order[kept++] = i;
    }
    x->kept = kept;
    x->host_spans = x->count[VKPROF_EV_SPAN];
    x->gpu_scopes = x->count[VKPROF_EV_GPU];
    x->steps = x->count[VKPROF_EV_STEP];
    x->first[VKPROF_EV_SPAN] = 0;
    x->first[VKPROF_EV_GPU] = x->count[VKPROF_EV_SPAN];
    x->first[VKPROF_EV_STEP] = x->count[VKPROF_EV_SPAN] + x->count[VKPROF_EV_GPU];

    /* the trace's zero: the earliest mapped start (the maps are monotone:
     * the least rank of each kind), or the store's start */
    x->t0 = t->start_ns;
    for (unsigned kind = VKPROF_EV_SPAN; kind <= VKPROF_EV_STEP; kind++) {
        if (x->count[kind] > 0) {
            uint64_t s = map_start(ctx, &ev[min_at[kind]]);
            x->t0 = s < x->t0 ? s : x->t0;
        }
    }

    /* the tracks of host threads */
    uint32_t tc = 0;
    for (uint32_t tid = 1; tid <= nthreads && tid < 65536; tid++) {
        tc += (used[tid >> 6] >> (tid & 63)) & 1u;
    }
    threads = tc ? malloc(tc * sizeof *threads) : NULL;
    if (tc && threads == NULL) {
        goto nomem;
    }
    x->thread_count = 0;
    for (uint32_t tid = 1; tid <= nthreads && tid < 65536; tid++) {
        if ((used[tid >> 6] >> (tid & 63)) & 1u) {
            threads[x->thread_count++] = (uint16_t)tid;
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
        sort_key sk = {&rb, false, 0, sc->h, sc->start};
        const bool ties = sort_events(&sk, ev, order, tmp, kept, bits, bucket_count);
        /* one start, one bucket: the longer first */
        const uint32_t vb = ctx->info.timestamp_valid_bits;
        for (uint32_t i = 0; ties && i < kept;) {
            const vkprof_event *e = &ev[order[i]];
            uint32_t b = bucket_of(e);
            uint64_t r = rank_of(&k, e);
            uint32_t j = i + 1;
            while (j < kept && bucket_of(&ev[order[j]]) == b && rank_of(&k, &ev[order[j]]) == r) {
                j++;
            }
            if (j - i > 1) {
                sort_run_by_end(&k, ev, order + i, j - i, tmp, vb);
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
                if (ev[order[i]].id != 0) {
                    ids[m++] = order[i];
                }
            }
            sort_key by_id = {&rb, true, min_id, sc->h, sc->start};
            const unsigned ib = bit_length(max_id - min_id);
            bool same = false; /* ids are unique */
            if (m > 1 && ib > 0 && !in_order(&by_id, ev, ids, m, &same)) {
                msd_sort(&by_id, ev, ids, tmp, m, (int)(((ib - 1u) / DIGIT_BITS) * DIGIT_BITS), 0);
            }
            x->span_by_id = ids;
            x->span_ids = m;
        }
        free(tmp);
        tmp = NULL;
    }
    free(sc);
    x->order = order;
    x->threads = threads;
    return 0;

nomem:
    free(order);
    free(tmp);
    free(sc);
    free(threads);
    memset(x, 0, sizeof *x);
    errno = ENOMEM;
    return -1;
}

void vkprof__export_end(vkprof_export *x)
{
    free(x->order);
    free(x->span_by_id);
    free(x->threads);
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

void vkprof__export_iter_free(vkprof_xiter *it)
{
    free(it->run);
    it->run = NULL;
    it->run_cap = it->run_len = it->run_pos = 0;
}

static void fill(vkprof_export *x, uint32_t idx, uint64_t start, uint64_t end, vkprof_xevent *out)
{
    const vkprof_trace *t = &x->ctx->trace;
    const vkprof_event *e = &t->events[idx];
    out->start_ns = start;
    out->end_ns = end;
    out->id = e->id;
    out->step = e->step;
    out->name_id = e->name;
    out->index = idx;
    out->tid = e->tid;
    out->kind = e->kind;
    out->flags = e->flags;
    out->annot = NULL;
    out->name = NULL;
    if (e->kind == VKPROF_EV_GPU) {
        out->name = vkprof_phase_name(x->ctx, e->name);
    } else if (e->kind == VKPROF_EV_SPAN) {
        out->name = vkprof_bucket_name(x->ctx, e->name);
    }
    /* a span's annotations, a GPU scope's args (vkprof_cmd_end_args) */
    if (e->kind != VKPROF_EV_STEP && e->annot != 0 && e->annot <= t->annot_capacity) {
        out->annot = &t->annots[e->annot - 1];
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
    vkprof_context ctx = x->ctx;
    const vkprof_event *ev = ctx->trace.events;
    const uint32_t idx = x->order[it->pos++];
    const vkprof_event *e = &ev[idx];
    const uint64_t start = it->have_peek ? it->peek_start : map_start(ctx, e);
    it->have_peek = false;
    if (it->pos < it->stop && bucket_of(&ev[x->order[it->pos]]) == bucket_of(e)) {
        /* the next one of this track: does it start in the same ns? (Two
         * ranks can: a counter ticks faster than 1 ns.) */
        uint64_t s2 = map_start(ctx, &ev[x->order[it->pos]]);
        if (s2 != start) {
            it->have_peek = true;
            it->peek_start = s2;
        } else {
            /* the run of one start: by end, the longer first, stable */
            it->run_len = it->run_pos = 0;
            if (!run_push(it, idx, start, map_end(ctx, e, start))) {
                return false;
            }
            while (it->pos < it->stop) {
                const uint32_t j = x->order[it->pos];
                if (bucket_of(&ev[j]) != bucket_of(e)) {
                    break;
                }
                uint64_t s = map_start(ctx, &ev[j]);
                if (s != start) {
                    it->have_peek = true;
                    it->peek_start = s;
                    break;
                }
                if (!run_push(it, j, s, map_end(ctx, &ev[j], s))) {
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
    fill(x, idx, start, map_end(ctx, e, start), out);
    return true;
}

bool vkprof__export_next_flow(vkprof_export *x, vkprof_xiter *it, vkprof_xflow *out)
{
    const vkprof_event *ev = x->ctx->trace.events;
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
        out->span_start_ns = map_start(x->ctx, s);
        out->gpu_index = g.index;
        out->gpu_tid = g.tid;
        out->gpu_start_ns = g.start_ns;
        x->flows++;
        return true;
    }
    return false;
}
