/* `vkprof bench`: the statistics. Medians and ranges over the rounds, the
 * same-round ratios against the unprofiled run, the GPU cost per stamp, and
 * how well the per-phase splits of two configurations agree. See bench.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

double bench_median(const double *v, uint32_t n)
{
    if (n == 0) {
        return NAN;
    }
    double *c = malloc(n * sizeof *c);
    if (c == NULL) {
        return NAN;
    }
    memcpy(c, v, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_double);
    double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}

double bench_quantile(const double *v, uint32_t n, double q)
{
    if (n == 0 || !(q > 0) || q > 1) {
        return NAN;
    }
    double *c = malloc(n * sizeof *c);
    if (c == NULL) {
        return NAN;
    }
    memcpy(c, v, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_double);
    /* nearest rank: the ceil(q n)-th smallest (1-based) */
    uint32_t rank = (uint32_t)ceil(q * (double)n);
    if (rank < 1) {
        rank = 1;
    }
    double x = c[(rank > n ? n : rank) - 1];
    free(c);
    return x;
}

void bench_min_max(const double *v, uint32_t n, double *lo, double *hi)
{
    *lo = NAN;
    *hi = NAN;
    for (uint32_t i = 0; i < n; i++) {
        if (i == 0 || v[i] < *lo) {
            *lo = v[i];
        }
        if (i == 0 || v[i] > *hi) {
            *hi = v[i];
        }
    }
}

double bench_split_diff(const double *a, const double *b)
{
    double sa = 0, sb = 0, worst = 0;
    for (uint32_t k = 0; k < VKPROF_PHASE_DEFAULT_COUNT; k++) {
        sa += a[k];
        sb += b[k];
    }
    if (!(sa > 0) || !(sb > 0)) {
        return NAN;
    }
    for (uint32_t k = 0; k < VKPROF_PHASE_DEFAULT_COUNT; k++) {
        worst = fmax(worst, fabs(100.0 * a[k] / sa - 100.0 * b[k] / sb));
    }
    return worst;
}

double bench_sum_phases(const double *a)
{
    double s = 0;
    for (uint32_t k = 0; k < VKPROF_PHASE_DEFAULT_COUNT; k++) {
        s += a[k];
    }
    return s;
}

void bench_figures(bench *b)
{
    bconf *conf = b->conf;
    uint32_t repeats = b->repeats;
    for (uint32_t c = 0; c < C_COUNT; c++) {
        bconf *k = &conf[c];
        k->tps_med = bench_median(k->tps, repeats);
        k->ratio_med = bench_median(k->ratio, repeats);
        bench_min_max(k->ratio, repeats, &k->ratio_min, &k->ratio_max);
        /* token times: every token of every measured round, pooled */
        uint32_t nt = repeats * b->tokens;
        k->p50_ms = bench_quantile(k->tok_ns, nt, 0.50) * 1e-6;
        k->p99_ms = bench_quantile(k->tok_ns, nt, 0.99) * 1e-6;
        if (c != C_OFF) {
            k->p50_ratio = k->p50_ms / conf[C_OFF].p50_ms;
            k->p99_ratio = k->p99_ms / conf[C_OFF].p99_ms;
        } else {
            k->p50_ratio = k->p99_ratio = 1.0;
        }
        if (k->stamps_per_token > 0) {
            double *cost = calloc(repeats, sizeof *cost);
            if (cost != NULL) {
                for (uint32_t r = 0; r < repeats; r++) {
                    cost[r] = (1e9 / k->tps[r] - 1e9 / conf[C_OFF].tps[r]) / k->stamps_per_token;
                }
                k->cost_per_stamp_ns = bench_median(cost, repeats);
                free(cost);
            }
        }
    }
}

int bench_summarise(const bench *b, summary *s)
{
    const bconf *conf = b->conf;
    uint32_t repeats = b->repeats;
    double *q = calloc(repeats, sizeof *q), *q2 = calloc(repeats, sizeof *q2);
    if (q == NULL || q2 == NULL) {
        free(q);
        free(q2);
        fprintf(stderr, "vkprof bench: out of memory\n");
        return 1;
    }
    for (uint32_t r = 0; r < repeats; r++) {
        q[r] = conf[C_RING].tps[r] / conf[C_BASE].tps[r];
        q2[r] = conf[C_RING_SHARED].tps[r] / conf[C_BASE_SHARED].tps[r];
    }
    s->ring_vs_base_med = bench_median(q, repeats);
    bench_min_max(q, repeats, &s->ring_vs_base_min, &s->ring_vs_base_max);
    s->rings_vs_bases_med = bench_median(q2, repeats);
    bench_min_max(q2, repeats, &s->rings_vs_bases_min, &s->rings_vs_bases_max);
    free(q);
    free(q2);
    s->split_ring_sampled =
        bench_split_diff(conf[C_RING].phase_ns_per_token, conf[C_RING_SAMPLED].phase_ns_per_token);
    s->split_rings_sampled = bench_split_diff(conf[C_RING_SHARED].phase_ns_per_token,
                                              conf[C_RING_SAMPLED].phase_ns_per_token);
    s->split_rings_rotating = bench_split_diff(conf[C_RING_SHARED].phase_ns_per_token,
                                               conf[C_RING_ROTATING].phase_ns_per_token);
    s->rotate_scopes = conf[C_RING_ROTATING].ts.rotate_scopes;
    s->split_ring_2slot =
        bench_split_diff(conf[C_RING].phase_ns_per_token, conf[C_2SLOT].phase_ns_per_token);
    s->split_ring_base =
        bench_split_diff(conf[C_RING].phase_ns_per_token, conf[C_BASE].phase_ns_per_token);
    s->split_rings_bases = bench_split_diff(conf[C_RING_SHARED].phase_ns_per_token,
                                            conf[C_BASE_SHARED].phase_ns_per_token);
    s->ring_over_base_time = bench_sum_phases(conf[C_RING].phase_ns_per_token) /
                             bench_sum_phases(conf[C_BASE].phase_ns_per_token);
    s->rings_over_bases_time = bench_sum_phases(conf[C_RING_SHARED].phase_ns_per_token) /
                               bench_sum_phases(conf[C_BASE_SHARED].phase_ns_per_token);
    s->tokens_identical = b->mismatches == 0;
    return 0;
}
