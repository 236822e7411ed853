/* Tensor-parallel decode (decode_tp.c, `vkprof decode --ranks R`) on
 * lavapipe with the validation layer on: the collective alone (bit-identical
 * sums, abort without a hang), tokens of R = 2 and 4 against R = 1, the
 * skew injected with and without the rendezvous probe, level 2, the route
 * trace, and the CLI (per-rank traces, option errors).
 *
 *   test_decode_tp                 every case
 *   test_decode_tp --cli VKPROF    also the CLI cases, running that binary
 *   test_decode_tp --tsan          the threaded cases alone (the TSan build's case)
 *   test_decode_tp --skew          the skew case alone */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "decode_tp.h"
#include "harness.h"

#define SEED 7u

static th_gpu g;
static char dir[256];

/* ---- the collective alone (no engine, no context) ----------------------------- */

#define CR 4u   /* ranks */
#define CN 300u /* floats per all-reduce */
#define CALLS 400u

typedef struct coll_arg {
    dec_tp_rank *r;
    uint32_t fail_at; /* this rank fails before collective fail_at (UINT32_MAX: never) */
    uint32_t done;
    int rc;
    float out[CN];
    uint32_t bad; /* results that differ from the reference sum */
} coll_arg;

/* A value of rank k, collective c, element i: different exponents so that
 * the order of the additions matters in fp32. */
static float coll_val(uint32_t k, uint32_t c, uint32_t i)
{
    uint32_t h = dec_hash32(k * 1000003u + c * 7919u + i);
    return ldexpf((float)(int32_t)(h & 0xffffffu) - 8388608.0f, (int)(h >> 27) - 40);
}

static void *coll_main(void *p)
{
    coll_arg *a = p;
    for (uint32_t c = 0; c < CALLS; c++) {
        if (c == a->fail_at) {
            /* what a failing rank does: abort the barrier for every rank */
            dec_tp_barrier_abort(&a->r->comm->bar);
            a->rc = 1;
            return NULL;
        }
        for (uint32_t i = 0; i < CN; i++) {
            a->out[i] = coll_val(a->r->rank, c, i);
        }
        if (dec_tp_all_reduce(a->r, c % 2 ? DEC_SITE_MLP : DEC_SITE_ATTN, c / 2, a->out, CN) != 0) {
            a->rc = 1;
            return NULL;
        }
        for (uint32_t i = 0; i < CN; i++) {
            float ref = coll_val(0, c, i);
            for (uint32_t k = 1; k < CR; k++) {
                ref += coll_val(k, c, i);
            }
            if (memcmp(&ref, &a->out[i], sizeof ref) != 0) {
                a->bad++;
            }
        }
        a->done++;
    }
    return NULL;
}

static void run_collective(bool spin, uint32_t fail_rank, uint32_t fail_at)
{
    dec_tp_comm c;
    CHECK(dec_tp_comm_init(&c, CR, CN, spin) == 0);
    dec_tp_rank rk[CR];
    coll_arg a[CR];
    pthread_t t[CR];
    memset(rk, 0, sizeof rk);
    memset(a, 0, sizeof a);
    for (uint32_t k = 0; k < CR; k++) {
        rk[k].rank = k;
        rk[k].comm = &c;
        rk[k].probe = true; /* every rank takes the same barriers */
        a[k].r = &rk[k];
        a[k].fail_at = k == fail_rank ? fail_at : UINT32_MAX;
    }
    for (uint32_t k = 0; k < CR; k++) {
        CHECK(pthread_create(&t[k], NULL, coll_main, &a[k]) == 0);
    }
    for (uint32_t k = 0; k < CR; k++) {
        pthread_join(t[k], NULL);
    }
    for (uint32_t k = 0; k < CR; k++) {
        CHECK_EQ_U64(a[k].bad, 0);
        if (fail_rank == UINT32_MAX) {
            CHECK_EQ_U64(a[k].rc, 0);
            CHECK_EQ_U64(a[k].done, CALLS);
            CHECK_EQ_U64(rk[k].collectives, CALLS);
        } else {
            /* everyone stops: nobody waits forever, nobody gets past it */
            CHECK_EQ_U64(a[k].rc, 1);
            CHECK(a[k].done <= fail_at);
            if (k != fail_rank) {
                CHECK(rk[k].peer_failed);
            }
        }
    }
    dec_tp_comm_destroy(&c);
}

static void test_collective(void)
{
    /* the sums are in rank order; for these values the order matters (so a
     * rank that summed in another order would differ) */
    uint32_t differ = 0;
    for (uint32_t i = 0; i < CN; i++) {
        float fwd = coll_val(0, 3, i), rev = coll_val(CR - 1, 3, i);
        for (uint32_t k = 1; k < CR; k++) {
            fwd += coll_val(k, 3, i);
        }
        for (uint32_t k = CR - 1; k-- > 0;) {
            rev += coll_val(k, 3, i);
        }
        differ += memcmp(&fwd, &rev, sizeof fwd) != 0;
    }
    printf("  %u of %u sums differ between rank order and reverse order\n", differ, CN);
    CHECK(differ > CN / 10);
    run_collective(false, UINT32_MAX, 0);
    run_collective(true, UINT32_MAX, 0);
    run_collective(false, 2, 37);
    run_collective(true, 0, 0);
    /* a barrier aborted before anyone arrives, and one reused many times */
    dec_tp_barrier b;
    CHECK(dec_tp_barrier_init(&b, 1, false) == 0);
    for (int i = 0; i < 1000; i++) {
        CHECK(dec_tp_barrier_wait(&b) == 0);
    }
    dec_tp_barrier_abort(&b);
    CHECK(dec_tp_barrier_wait(&b) == -1);
    dec_tp_barrier_destroy(&b);
}

static void test_rank_path(void)
{
    char out[64];
    CHECK(dec_tp_rank_path(out, sizeof out, "trace.json", 0) == 0 &&
          strcmp(out, "trace.rank0.json") == 0);
    CHECK(dec_tp_rank_path(out, sizeof out, "/a.b/t", 3) == 0 && strcmp(out, "/a.b/t.rank3") == 0);
    CHECK(dec_tp_rank_path(out, sizeof out, "d/.hidden", 1) == 0 &&
          strcmp(out, "d/.hidden.rank1") == 0);
    CHECK(dec_tp_rank_path(out, sizeof out, "x.tar.json", 12) == 0 &&
          strcmp(out, "x.tar.rank12.json") == 0);
    CHECK(dec_tp_rank_path(out, 8, "trace.json", 0) == 1);
}

/* The routed hook on the span glue alone: the ids land on the open
 * moe_host_sync span as "experts", not on the span around it. */
static void test_annotate(void)
{
    vkprof_context_desc d = th_desc(&g, NULL, false);
    d.host_level = VKPROF_HOST_ALL;
    d.trace_path = "";
    vkprof_context ctx = th_ctx(&d);
    CHECK(vkprof_trace_begin(ctx, 0) == VKPROF_OK);
    dec_tp_comm c;
    CHECK(dec_tp_comm_init(&c, 1, 16, false) == 0);
    dec_tp_rank r;
    memset(&r, 0, sizeof r);
    r.comm = &c;
    r.prof = ctx;
    r.hooks = dec_tp_hooks(&r, true);
    const uint32_t ids[3] = {3, 17, 42}, ids2[2] = {5, 9};
    r.hooks.section_begin(r.hooks.user, "layer");
    r.hooks.section_begin(r.hooks.user, "moe_host_sync");
    r.hooks.section_begin(r.hooks.user, "submit_wait");
    r.hooks.section_end(r.hooks.user, "submit_wait");
    r.hooks.routed(r.hooks.user, 1, ids, NULL, 3);
    r.hooks.section_end(r.hooks.user, "moe_host_sync");
    r.hooks.routed(r.hooks.user, 2, ids2, NULL, 2); /* outside: not annotated, counted */
    r.hooks.section_end(r.hooks.user, "layer");
    CHECK_EQ_U64(r.annotated, 1);
    CHECK_EQ_U64(r.routed_outside, 1);
    CHECK_EQ_U64(r.routed_calls, 2);
    CHECK(r.routed_layer == 2 && r.routed_k == 2 && r.routed_ids[1] == 9);
    char path[300];
    snprintf(path, sizeof path, "%s/annotate.json", dir);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    vkprof_destroy(ctx);
    dec_tp_comm_destroy(&c);
    char *text = th_read_file(path);
    cJSON *doc = text != NULL ? cJSON_Parse(text) : NULL;
    CHECK(doc != NULL);
    uint32_t found = 0, elsewhere = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "traceEvents"))
    {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *ex = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(e, "args"), "experts");
        if (!cJSON_IsString(nm) || ex == NULL) {
            continue;
        }
        if (strcmp(nm->valuestring, "moe_host_sync") == 0 && cJSON_IsString(ex) &&
            strcmp(ex->valuestring, "3,17,42") == 0) {
            found++;
        } else {
            elsewhere++;
        }
    }
    CHECK_EQ_U64(found, 1);
    CHECK_EQ_U64(elsewhere, 0);
    cJSON_Delete(doc);
    free(text);
}

/* ---- the driver on the engine ------------------------------------------------------ */

typedef struct logbuf {
    pthread_mutex_t mu;
    char *text;
    size_t len, cap;
    uint32_t warnings;
} logbuf;

static void log_fn(void *user, uint32_t rank, vkprof_log_level level, vkprof_result code,
                   const char *msg)
{
    (void)rank;
    (void)code;
    logbuf *l = user;
    pthread_mutex_lock(&l->mu);
    if (level == VKPROF_LOG_WARN || level == VKPROF_LOG_ERROR) {
        l->warnings++;
        fprintf(stderr, "  log (rank %u): %s\n", rank, msg);
    }
    if (level == VKPROF_LOG_REPORT && strncmp(msg, "route:", 6) == 0) {
        size_t n = strlen(msg);
        if (l->len + n + 1 > l->cap) {
            size_t cap = (l->cap + n + 1) * 2;
            char *t = realloc(l->text, cap);
            if (t != NULL) {
                l->text = t;
                l->cap = cap;
            }
        }
        if (l->len + n + 1 <= l->cap) {
            memcpy(l->text + l->len, msg, n + 1);
            l->len += n;
        }
    }
    pthread_mutex_unlock(&l->mu);
}

static logbuf lb = {.mu = PTHREAD_MUTEX_INITIALIZER};

static dec_tp_config base_cfg(const char *preset, uint32_t ranks, uint32_t tokens)
{
    dec_tp_config c = {.preset = dec_find_preset(preset),
                       .seed = SEED,
                       .tokens = tokens,
                       .first_token = 1,
                       .ranks = ranks,
                       .mode = DEC_PROFILE_OFF,
                       .sample_every = 1,
                       .host_level = VKPROF_HOST_OFF,
                       .probe = true,
                       .skew_rank = UINT32_MAX,
                       .log = log_fn,
                       .log_user = &lb};
    return c;
}

static int run_tp(dec_tp_run *run, const dec_tp_config *cfg)
{
    char err[640] = "";
    int rc = dec_tp_run_decode(run, cfg, &g.inst, g.dev.phys, g.dev.family, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "  dec_tp_run_decode (%u ranks): %s\n", cfg->ranks, err);
    }
    return rc;
}

static bool tokens_of(const char *preset, uint32_t ranks, uint32_t tokens, uint32_t *out)
{
    dec_tp_config cfg = base_cfg(preset, ranks, tokens);
    dec_tp_run run;
    int rc = run_tp(&run, &cfg);
    CHECK_EQ_U64(rc, 0);
    if (rc == 0) {
        /* the driver checked it every step; check it again from outside */
        for (uint32_t k = 0; k < ranks; k++) {
            CHECK(memcmp(run.r[k].ids, run.r[0].ids, tokens * sizeof *out) == 0);
            CHECK_EQ_U64(run.r[k].collectives,
                         ranks > 1 ? 2ull * tokens * cfg.preset->n_layers : 0ull);
        }
        memcpy(out, run.r[0].ids, tokens * sizeof *out);
    }
    dec_tp_cleanup(&run);
    return rc == 0;
}

/* The tokens of R = 2 and 4 equal R = 1's. Each rank sums the partials in the
 * same order, so every rank holds bit-identical activations after each
 * all-reduce and picks the same argmax; against R = 1 only the order of the
 * fp32 additions differs (a partial sum per rank, then their sum), which
 * moves logits by about 1e-6 of their scale: an argmax flips only on a
 * near-tie, and these seeds have none. */
static void tokens_vs_one(const char *preset, uint32_t tokens)
{
    if (dec_find_preset(preset) == NULL) {
        printf("  SKIP %s: the engine has no such preset yet\n", preset);
        return;
    }
    uint32_t t1[32], t2[32], t4[32];
    if (!tokens_of(preset, 1, tokens, t1) || !tokens_of(preset, 2, tokens, t2) ||
        !tokens_of(preset, 4, tokens, t4)) {
        return;
    }
    uint32_t distinct = 0;
    for (uint32_t i = 0; i < tokens; i++) {
        bool seen = false;
        for (uint32_t j = 0; j < i; j++) {
            seen = seen || t1[j] == t1[i];
        }
        distinct += !seen;
        if (t2[i] != t1[i] || t4[i] != t1[i]) {
            fprintf(stderr, "  %s step %u: ranks 1 %u, 2 %u, 4 %u\n", preset, i, t1[i], t2[i],
                    t4[i]);
        }
        CHECK_EQ_U64(t2[i], t1[i]);
        CHECK_EQ_U64(t4[i], t1[i]);
    }
    printf("  %s: %u tokens (%u distinct) equal for ranks 1, 2, 4\n", preset, tokens, distinct);
    CHECK(distinct >= 3);
}

static void test_tokens(void)
{
    tokens_vs_one("tiny", 8);
    tokens_vs_one("moe-tiny", 8);
}

/* ---- skew ------------------------------------------------------------------------------ */

static uint64_t bucket_ns(vkprof_context ctx, vkprof_bucket b, uint64_t *calls)
{
    vkprof_bucket_stats bs[VKPROF_MAX_BUCKETS];
    uint32_t n = 0;
    vkprof_bucket_snapshot(ctx, bs, VKPROF_MAX_BUCKETS, &n);
    if (calls != NULL) {
        *calls = b < n ? bs[b].calls : 0;
    }
    return b < n ? bs[b].total_ns : 0;
}

typedef struct skew_fig {
    uint64_t rdv0, ar0, rdv1, slept, rdv_calls0, sleeps;
    /* rank 0's median per site (its trace), ns: probe and collective at the
     * attention site */
    double med_rdv, med_ar;
} skew_fig;

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

#define SKEW_MAX_SITES 256u

/* The durations (ns), in trace order, of the host spans named `name`. */
static uint32_t trace_durations(const char *path, const char *name, double *v)
{
    char *text = th_read_file(path);
    cJSON *doc = text != NULL ? cJSON_Parse(text) : NULL;
    CHECK(doc != NULL);
    uint32_t n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "traceEvents"))
    {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *dur = cJSON_GetObjectItemCaseSensitive(e, "dur");
        if (cJSON_IsString(nm) && strcmp(nm->valuestring, name) == 0 && cJSON_IsNumber(dur) &&
            n < SKEW_MAX_SITES) {
            v[n++] = dur->valuedouble * 1e3;
        }
    }
    cJSON_Delete(doc);
    free(text);
    return n;
}

/* The median of rank 0's spans named `name`, one per site. */
static double trace_median(const char *path, const char *name)
{
    static double v[SKEW_MAX_SITES];
    uint32_t n = trace_durations(path, name, v);
    if (n == 0) {
        return 0.0;
    }
    qsort(v, n, sizeof v[0], cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static bool skew_run(bool probe, uint32_t skew_us, uint32_t tokens, skew_fig *f)
{
    dec_tp_config cfg = base_cfg("tiny", 2, tokens);
    cfg.host_level = VKPROF_HOST_HOT;
    cfg.probe = probe;
    cfg.skew_rank = skew_us ? 1 : UINT32_MAX;
    cfg.skew_us = skew_us;
    cfg.trace = true;
    dec_tp_run run;
    int rc = run_tp(&run, &cfg);
    CHECK_EQ_U64(rc, 0);
    char p0[300];
    snprintf(p0, sizeof p0, "%s/skew.rank0.json", dir);
    if (rc == 0) {
        f->rdv0 = bucket_ns(run.r[0].prof, VKPROF_BUCKET_ALLREDUCE_ATTN_RENDEZVOUS, &f->rdv_calls0);
        f->ar0 = bucket_ns(run.r[0].prof, VKPROF_BUCKET_ALLREDUCE_ATTN, NULL);
        f->rdv1 = bucket_ns(run.r[1].prof, VKPROF_BUCKET_ALLREDUCE_ATTN_RENDEZVOUS, NULL);
        f->slept = run.r[1].skew_slept_ns;
        f->sleeps = run.r[1].skew_sleeps;
        CHECK_EQ_U64(run.r[0].skew_sleeps, 0);
        rc = vkprof_trace_write(run.r[0].prof, p0) == VKPROF_OK ? 0 : 1;
        CHECK_EQ_U64(rc, 0);
    }
    dec_tp_cleanup(&run);
    if (rc == 0) {
        f->med_rdv = probe ? trace_median(p0, "allreduce_attn_rendezvous") : 0.0;
        f->med_ar = trace_median(p0, "allreduce_attn");
    }
    return rc == 0;
}

/*
 * Rank 1 sleeps D before each attention all-reduce (tokens x layers sites);
 * S is the sum of its measured sleeps (D plus the scheduler's overshoot).
 * With the probe both ranks leave its barrier together, so rank 0 waits
 * there max(0, a1 + D - a0), a0/a1 being the ranks' natural arrivals: its
 * wait grows by the full D where rank 1 is not naturally ahead, by less
 * where it is. On lavapipe both ranks' "GPU" is the same 2 CPU cores, shared
 * with whatever else runs: the natural arrival skew is 0.1-7 ms per site
 * (about 4 ms under ASan), with outliers of tens of ms when the machine is
 * busy, so a bucket total of 32 sites moves by up to ~120 ms from run to
 * run. Hence D = 25 ms (the example is 2 ms): S ~ 810 ms, and two
 * checks against a no-skew run of the same test:
 *   - the bucket (the figure the report shows) grows by [0.5 S, 1.3 S]: the
 *     loss to rank 1's natural lead plus the run-to-run spread stay inside
 *     that, a probe that were not where the wait happens gives ~0;
 *   - rank 0's median per site (from its trace; robust to the outliers)
 *     grows by [0.7, 1.25] x the mean sleep: biased low by a few ms (the
 *     natural lead of rank 1 at about half the sites), not by more.
 * Rank 0 is the one that waits, so it is woken from the barrier last (on a
 * busy machine 5-7 ms late): rank 1, not rank 0, then waits in the next
 * span, which is why only rank 0's figures are checked.
 * The collective's own bucket on rank 0 must not grow by more than 0.15 S,
 * nor its median by more than 0.15 D (observed: within +-110 ms, +-0.2
 * ms). Without the probe
 * the same growth, by the same two checks, lands in the collective.
 */
#define SKEW_US 25000u
#define SKEW_TOKENS 8u

static void test_skew(void)
{
    skew_fig base = {0}, skew = {0}, nbase = {0}, nskew = {0};
    if (!skew_run(true, 0, SKEW_TOKENS, &base) || !skew_run(true, SKEW_US, SKEW_TOKENS, &skew) ||
        !skew_run(false, 0, SKEW_TOKENS, &nbase) ||
        !skew_run(false, SKEW_US, SKEW_TOKENS, &nskew)) {
        return;
    }
    uint32_t sites = SKEW_TOKENS * dec_find_preset("tiny")->n_layers;
    CHECK_EQ_U64(skew.sleeps, sites);
    CHECK_EQ_U64(skew.rdv_calls0, sites);
    CHECK(skew.slept >= (uint64_t)sites * SKEW_US * 1000u);
    double S = (double)skew.slept, nS = (double)nskew.slept;
    double D = S / sites, nD = nS / sites;
    double g_rdv = (double)skew.rdv0 - (double)base.rdv0;
    double g_ar = (double)skew.ar0 - (double)base.ar0;
    double n_ar = (double)nskew.ar0 - (double)nbase.ar0;
    double m_rdv = skew.med_rdv - base.med_rdv, m_ar = skew.med_ar - base.med_ar;
    double nm_ar = nskew.med_ar - nbase.med_ar;
    printf("  probe: rank 1 slept %.1f ms in %u sleeps; rank 0: rendezvous %.1f -> %.1f ms "
           "(+%.1f, %.2f of the sleeps), allreduce_attn %.1f -> %.1f ms (%+.1f); rank 1 "
           "rendezvous %.1f -> %.1f ms; rank 0's median per site: probe %.2f -> %.2f ms "
           "(%.2f of a sleep), allreduce_attn %.3f -> %.3f ms\n",
           S * 1e-6, sites, (double)base.rdv0 * 1e-6, (double)skew.rdv0 * 1e-6, g_rdv * 1e-6,
           g_rdv / S, (double)base.ar0 * 1e-6, (double)skew.ar0 * 1e-6, g_ar * 1e-6,
           (double)base.rdv1 * 1e-6, (double)skew.rdv1 * 1e-6, base.med_rdv * 1e-6,
           skew.med_rdv * 1e-6, m_rdv / D, base.med_ar * 1e-6, skew.med_ar * 1e-6);
    printf("  no probe: rank 1 slept %.1f ms; rank 0 allreduce_attn %.1f -> %.1f ms (+%.1f, "
           "%.2f of the sleeps); rank 0's median per site %.2f -> %.2f ms (%.2f of a "
           "sleep)\n",
           nS * 1e-6, (double)nbase.ar0 * 1e-6, (double)nskew.ar0 * 1e-6, n_ar * 1e-6, n_ar / nS,
           nbase.med_ar * 1e-6, nskew.med_ar * 1e-6, nm_ar / nD);
    CHECK(g_rdv >= 0.5 * S && g_rdv <= 1.3 * S);
    CHECK(m_rdv >= 0.7 * D && m_rdv <= 1.25 * D);
    CHECK(g_ar <= 0.15 * S);
    CHECK(m_ar <= 0.15 * D);
    CHECK(n_ar >= 0.5 * nS && n_ar <= 1.3 * nS);
    CHECK(nm_ar >= 0.7 * nD && nm_ar <= 1.25 * nD);
    CHECK_EQ_U64(nskew.rdv_calls0, 0);
    CHECK_EQ_U64(nskew.rdv0, 0);
}

/* ---- level 2: only the hot spans -------------------------------------------------------- */

static bool is_allreduce(const char *name)
{
    return strncmp(name, "allreduce_", 10) == 0;
}

static void level_run(vkprof_host_level level, const char *trace_path)
{
    enum { T = 3 };
    dec_tp_config cfg = base_cfg("tiny", 2, T);
    cfg.host_level = level;
    cfg.trace = true;
    dec_tp_run run;
    if (run_tp(&run, &cfg) != 0) {
        CHECK(false);
        dec_tp_cleanup(&run);
        return;
    }
    uint64_t per = (uint64_t)T * cfg.preset->n_layers;
    for (uint32_t k = 0; k < 2; k++) {
        vkprof_bucket_stats bs[VKPROF_MAX_BUCKETS];
        uint32_t n = 0;
        CHECK(vkprof_bucket_snapshot(run.r[k].prof, bs, VKPROF_MAX_BUCKETS, &n) == VKPROF_OK);
        uint64_t cold_calls = 0;
        for (uint32_t b = 0; b < n; b++) {
            if (is_allreduce(bs[b].name)) {
                CHECK(bs[b].hot);
                CHECK_EQ_U64(bs[b].calls, per); /* probe, enqueue, sync at both sites */
            } else if (!bs[b].hot) {
                cold_calls += bs[b].calls;
            }
        }
        if (level == VKPROF_HOST_HOT) {
            CHECK_EQ_U64(cold_calls, 0);
        } else {
            CHECK(cold_calls > 0); /* level 1 times the sections too */
        }
    }
    CHECK(vkprof_trace_write(run.r[1].prof, trace_path) == VKPROF_OK);
    dec_tp_cleanup(&run);

    /* the trace: every host span is an all-reduce bucket at level 2, the
     * probes are marked, and the thread is "rank 1" */
    char *text = th_read_file(trace_path);
    cJSON *doc = text != NULL ? cJSON_Parse(text) : NULL;
    CHECK(doc != NULL);
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");
    uint64_t host = 0, cold = 0, probes = 0;
    bool named = false;
    const cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        if (cJSON_IsString(ph) && strcmp(ph->valuestring, "M") == 0 && cJSON_IsString(name) &&
            strcmp(name->valuestring, "thread_name") == 0) {
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(args, "name");
            named = named || (cJSON_IsString(n) && strcmp(n->valuestring, "rank 1") == 0);
        }
        if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X") != 0 || !cJSON_IsString(cat) ||
            strcmp(cat->valuestring, "host") != 0 || !cJSON_IsString(name)) {
            continue;
        }
        host++;
        cold += !is_allreduce(name->valuestring);
        probes += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args, "probe"));
    }
    printf("  level %d: rank 1's trace: %llu host spans, %llu not an all-reduce, %llu probes\n",
           level == VKPROF_HOST_HOT ? 2 : 1, (unsigned long long)host, (unsigned long long)cold,
           (unsigned long long)probes);
    CHECK(named);
    CHECK_EQ_U64(probes, 2 * per);
    if (level == VKPROF_HOST_HOT) {
        CHECK_EQ_U64(host, 6 * per);
        CHECK_EQ_U64(cold, 0);
    } else {
        CHECK(cold > 0);
    }
    cJSON_Delete(doc);
    free(text);
}

static void test_level2(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/level2.json", dir);
    level_run(VKPROF_HOST_HOT, path);
    snprintf(path, sizeof path, "%s/level1.json", dir);
    level_run(VKPROF_HOST_ALL, path);
}

/* ---- TSan: R = 4 with every kind of span and the trace --------------------------------------- */

static void four_ranks(const char *preset)
{
    if (dec_find_preset(preset) == NULL) {
        printf("  SKIP %s: the engine has no such preset yet\n", preset);
        return;
    }
    dec_tp_config cfg = base_cfg(preset, 4, 3);
    cfg.host_level = VKPROF_HOST_ALL;
    cfg.trace = true;
    cfg.route_trace = true;
    cfg.skew_rank = 2;
    cfg.skew_us = 200;
    dec_tp_run run;
    int rc = run_tp(&run, &cfg);
    CHECK_EQ_U64(rc, 0);
    for (uint32_t k = 0; rc == 0 && k < 4; k++) {
        CHECK_EQ_U64(run.r[k].collectives, 2ull * 3 * cfg.preset->n_layers);
        CHECK(vkprof_step_count(run.r[k].prof) == 3);
        CHECK_EQ_U64(run.r[k].annotated, run.r[k].routed_calls);
    }
    dec_tp_cleanup(&run);
}

static void test_four_ranks(void)
{
    four_ranks("tiny");
    four_ranks("moe-tiny");
}

/* ---- the route trace ----------------------------------------------------------------------------
 */

static void route_env(void)
{
    logbuf w = {.mu = PTHREAD_MUTEX_INITIALIZER};
    unsetenv(DEC_TP_ROUTE_TRACE_ENV);
    CHECK(!dec_tp_route_trace_env(log_fn, &w));
    setenv(DEC_TP_ROUTE_TRACE_ENV, "1", 1);
    CHECK(dec_tp_route_trace_env(log_fn, &w));
    setenv(DEC_TP_ROUTE_TRACE_ENV, "off", 1);
    CHECK(!dec_tp_route_trace_env(log_fn, &w));
    setenv(DEC_TP_ROUTE_TRACE_ENV, "verbose", 1);
    CHECK(!dec_tp_route_trace_env(log_fn, &w));
    CHECK(!dec_tp_route_trace_env(log_fn, &w));
    CHECK_EQ_U64(w.warnings, 1); /* once */
    unsetenv(DEC_TP_ROUTE_TRACE_ENV);
    free(w.text);
}

static void route_run(const char *preset, bool probe)
{
    const dec_preset *p = dec_find_preset(preset);
    if (p == NULL) {
        printf("  SKIP %s: the engine has no such preset yet\n", preset);
        return;
    }
    enum { T = 3, R = 2 };
    dec_tp_config cfg = base_cfg(preset, R, T);
    cfg.route_trace = true;
    cfg.probe = probe;
    cfg.host_level = VKPROF_HOST_ALL;
    cfg.trace = true;
    pthread_mutex_lock(&lb.mu);
    lb.len = 0;
    if (lb.text != NULL) {
        lb.text[0] = '\0';
    }
    pthread_mutex_unlock(&lb.mu);
    dec_tp_run run;
    if (run_tp(&run, &cfg) != 0) {
        CHECK(false);
        dec_tp_cleanup(&run);
        return;
    }
    for (uint32_t k = 0; k < R; k++) {
        /* every routed choice annotated its open moe_host_sync span (the
         * engine calls routed inside that section, after the read-back) */
        CHECK_EQ_U64(run.r[k].routed_outside, 0);
        CHECK_EQ_U64(run.r[k].annotated, run.r[k].routed_calls);
        if (p->n_experts > 0) {
            CHECK_EQ_U64(run.r[k].routed_calls, (uint64_t)T * (p->n_layers - p->first_moe));
        }
    }
    char tpath[300];
    snprintf(tpath, sizeof tpath, "%s/route.rank1.json", dir);
    CHECK(vkprof_trace_write(run.r[1].prof, tpath) == VKPROF_OK);
    dec_tp_cleanup(&run);
    /* rank 1's moe_host_sync spans carry "experts", in time order */
    static char span_ex[256][700];
    uint32_t n_span = 0;
    char *ttext = th_read_file(tpath);
    cJSON *doc = ttext != NULL ? cJSON_Parse(ttext) : NULL;
    CHECK(doc != NULL);
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "traceEvents"))
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
        if (!cJSON_IsString(name) || !cJSON_IsString(ph) || strcmp(ph->valuestring, "X") != 0 ||
            strcmp(name->valuestring, "moe_host_sync") != 0) {
            continue;
        }
        const cJSON *ex = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(e, "args"), "experts");
        CHECK(cJSON_IsString(ex));
        if (cJSON_IsString(ex) && n_span < 256) {
            snprintf(span_ex[n_span++], sizeof span_ex[0], "%s", ex->valuestring);
        }
    }
    cJSON_Delete(doc);
    free(ttext);
    static char line_ex[256][700];
    uint32_t n_line = 0;
    /* one line per rank, step, layer and site, with every field */
    uint32_t seen[R][T][64][2];
    memset(seen, 0, sizeof seen);
    uint32_t lines = 0, bad = 0;
    char *save = NULL;
    for (char *l = strtok_r(lb.text != NULL ? lb.text : (char[]){""}, "\n", &save); l != NULL;
         l = strtok_r(NULL, "\n", &save)) {
        unsigned step, rank, layer, moe;
        char site[8], rdv[32], ex[700], exl[16];
        int n = sscanf(l,
                       "route: step=%u rank=%u site=%7s layer=%u moe=%u rendezvous_us=%31s "
                       "experts=%699s experts_layer=%15s",
                       &step, &rank, site, &layer, &moe, rdv, ex, exl);
        lines++;
        if (n != 8 || step >= T || rank >= R || layer >= p->n_layers || layer >= 64) {
            fprintf(stderr, "  bad route line: %s\n", l);
            bad++;
            continue;
        }
        bool mlp = strcmp(site, "mlp") == 0;
        CHECK(mlp || strcmp(site, "attn") == 0);
        seen[rank][step][layer][mlp]++;
        bool is_moe = p->n_experts > 0 && layer >= p->first_moe;
        CHECK_EQ_U64(moe, is_moe);
        if (probe) {
            char *end = NULL;
            double us = strtod(rdv, &end);
            CHECK(end != rdv && *end == '\0' && us >= 0.0);
        } else {
            CHECK(strcmp(rdv, "-") == 0);
        }
        if (p->n_experts == 0) {
            CHECK(strcmp(ex, "-") == 0 && strcmp(exl, "-") == 0);
        } else if (mlp && is_moe) {
            if (rank == 1 && n_line < 256) {
                snprintf(line_ex[n_line++], sizeof line_ex[0], "%s", ex);
            }
            /* the MLP site of a MoE layer follows its own routing: top_k ids */
            CHECK_EQ_U64(strtoul(exl, NULL, 10), layer);
            uint32_t k = 0;
            char *q = ex;
            while (*q != '\0') {
                char *end = NULL;
                unsigned long id = strtoul(q, &end, 10);
                if (end == q) {
                    bad++;
                    break;
                }
                CHECK(id < p->n_experts);
                k++;
                q = *end == ',' ? end + 1 : end;
            }
            CHECK_EQ_U64(k, p->top_k);
        }
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(lines, (uint32_t)R * T * p->n_layers * 2);
    for (uint32_t k = 0; k < R; k++) {
        for (uint32_t s = 0; s < T; s++) {
            for (uint32_t l = 0; l < p->n_layers && l < 64; l++) {
                CHECK(seen[k][s][l][0] == 1 && seen[k][s][l][1] == 1);
            }
        }
    }
    /* the span args and the route lines: the same ids, in the same order */
    CHECK_EQ_U64(n_span, n_line);
    CHECK_EQ_U64(n_span, p->n_experts > 0 ? (uint64_t)T * (p->n_layers - p->first_moe) : 0u);
    for (uint32_t i = 0; i < n_span && i < n_line; i++) {
        if (strcmp(span_ex[i], line_ex[i]) != 0) {
            fprintf(stderr, "  moe_host_sync %u: experts %s in the trace, %s routed\n", i,
                    span_ex[i], line_ex[i]);
            CHECK(false);
        }
    }
    printf("  %s: %u route lines (probe %s), %u moe_host_sync spans with their experts\n", preset,
           lines, probe ? "on" : "off", n_span);
}

static void test_route_trace(void)
{
    route_env();
    route_run("tiny", true);
    route_run("tiny", false);
    route_run("moe-tiny", true);
}

/* ---- the CLI
 * -------------------------------------------------------------------------------------- */

static const char *vkprof_bin;

/* `vkprof decode ARGS` under the validation layer (loaded through the
 * environment: the tool makes no messenger, so the layer prints its
 * messages, and any "Validation" in the output fails). */
static int run_cli(const char *env, const char *args, char *out, size_t n)
{
    char cmd[1400], f[300];
    snprintf(f, sizeof f, "%s/cli.txt", dir);
    snprintf(cmd, sizeof cmd,
             "VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation %s '%s' decode %s > '%s' 2>&1", env,
             vkprof_bin, args, f);
    int st = system(cmd);
    out[0] = '\0';
    FILE *fp = fopen(f, "r");
    if (fp != NULL) {
        size_t got = fread(out, 1, n - 1, fp);
        out[got] = '\0';
        fclose(fp);
    }
    CHECK(strstr(out, "Validation") == NULL);
    return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

static bool json_tokens(const char *path, uint32_t *ids, uint32_t n)
{
    char *text = th_read_file(path);
    cJSON *doc = text != NULL ? cJSON_Parse(text) : NULL;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(doc, "token_ids");
    bool ok = cJSON_IsArray(arr) && (uint32_t)cJSON_GetArraySize(arr) == n;
    for (uint32_t i = 0; ok && i < n; i++) {
        ids[i] = (uint32_t)cJSON_GetArrayItem(arr, (int)i)->valuedouble;
    }
    cJSON_Delete(doc);
    free(text);
    return ok;
}

static void test_cli(void)
{
    static char out[1 << 16];
    char args[1024], j1[300], j2[300], tr[300], t0[300], t1[300];
    snprintf(j1, sizeof j1, "%s/r1.json", dir);
    snprintf(j2, sizeof j2, "%s/r2.json", dir);
    snprintf(tr, sizeof tr, "%s/trace.json", dir);
    snprintf(t0, sizeof t0, "%s/trace.rank0.json", dir);
    snprintf(t1, sizeof t1, "%s/trace.rank1.json", dir);
    snprintf(args, sizeof args, "--tokens 4 --json '%s'", j1);
    CHECK_EQ_U64(run_cli("", args, out, sizeof out), 0);
    snprintf(args, sizeof args,
             "--tokens 4 --ranks 2 --profile host --trace '%s' --json '%s' --skew-rank 1 "
             "--skew-us 100",
             tr, j2);
    int rc = run_cli("VKPROF_DECODE_ROUTE_TRACE=1", args, out, sizeof out);
    CHECK_EQ_U64(rc, 0);
    if (rc != 0) {
        fprintf(stderr, "%s\n", out);
    }
    CHECK(strstr(out, "route: step=3 rank=1 site=mlp layer=3 moe=0 rendezvous_us=") != NULL);
    CHECK(strstr(out, "== rank 1:") != NULL && strstr(out, "allreduce_attn_rendezvous") != NULL);
    uint32_t a[4], b[4];
    CHECK(json_tokens(j1, a, 4) && json_tokens(j2, b, 4) && memcmp(a, b, sizeof a) == 0);
    CHECK(access(t0, R_OK) == 0 && access(t1, R_OK) == 0);
    /* FILE itself: the ranks merged (vkprof merge), a process per rank */
    char *merged = th_read_file(tr);
    cJSON *doc = merged != NULL ? cJSON_Parse(merged) : NULL;
    CHECK(doc != NULL);
    uint32_t procs = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "traceEvents"))
    {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *an =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e, "args"), "name");
        if (cJSON_IsString(nm) && strcmp(nm->valuestring, "process_name") == 0 &&
            cJSON_IsString(an) &&
            (strcmp(an->valuestring, "rank 0") == 0 || strcmp(an->valuestring, "rank 1") == 0)) {
            procs++;
        }
    }
    printf("  merged trace: %u host processes, rank 0 and rank 1\n", procs);
    CHECK_EQ_U64(procs, 2);
    cJSON_Delete(doc);
    free(merged);
    /* garbage in the env var: one warning, no route lines */
    rc = run_cli("VKPROF_DECODE_ROUTE_TRACE=maybe", "--tokens 2 --ranks 2", out, sizeof out);
    CHECK_EQ_U64(rc, 0);
    CHECK(strstr(out, "VKPROF_DECODE_ROUTE_TRACE") != NULL && strstr(out, "route:") == NULL);
    /* option errors */
    CHECK_EQ_U64(run_cli("", "--skew-rank 0 --skew-us 10", out, sizeof out), 2);
    CHECK_EQ_U64(run_cli("", "--ranks 2 --skew-rank 2 --skew-us 10", out, sizeof out), 2);
    CHECK_EQ_U64(run_cli("", "--ranks 2 --skew-rank 1", out, sizeof out), 2);
    CHECK_EQ_U64(run_cli("", "--ranks 0", out, sizeof out), 2);
    CHECK_EQ_U64(run_cli("", "--no-rendezvous", out, sizeof out), 2);
    /* 3 ranks do not divide tiny's 8 heads / 4 KV heads: the engine says so */
    CHECK_EQ_U64(run_cli("", "--tokens 2 --ranks 3", out, sizeof out), 1);
}

int main(int argc, char **argv)
{
    bool tsan = argc == 2 && strcmp(argv[1], "--tsan") == 0;
    bool skew_only = argc == 2 && strcmp(argv[1], "--skew") == 0;
    if (argc == 3 && strcmp(argv[1], "--cli") == 0) {
        vkprof_bin = argv[2];
    }
    snprintf(dir, sizeof dir, "/tmp/vkprof_decode_tp.%ld", (long)getpid());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0) {
        return 1;
    }
    th_gpu_init(&g);
    if (tsan) {
        RUN(test_collective);
        RUN(test_four_ranks);
    } else if (skew_only) {
        RUN(test_skew);
    } else {
        RUN(test_collective);
        RUN(test_rank_path);
        RUN(test_annotate);
        RUN(test_tokens);
        RUN(test_level2);
        RUN(test_route_trace);
        RUN(test_four_ranks);
        RUN(test_skew);
        if (vkprof_bin != NULL) {
            RUN(test_cli);
        }
    }
    th_gpu_finish(&g);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", dir);
    }
    free(lb.text);
    return th_done();
}
