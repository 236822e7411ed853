/* `vkprof bench`: the decode runs. One engine on one device, its weights
 * kept, switched between the profiling configurations with dec_reconfigure;
 * one warm-up run each, then interleaved rounds, the order rotated by one
 * each round. See bench.h. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

const bench_info bench_cinfo[C_COUNT] = {
    [C_OFF] = {"off", "no profiling: the token in one command buffer, one submit + fence wait"},
    [C_HOST] = {"host", "host spans only (VKPROF_HOST_ALL): token/record/layer/submit_wait "
                        "sections, the per-token report every 8 tokens (to a silent logger)"},
    [C_2SLOT] = {"2slot", "vkprof 2-slot: one submit + fence wait + resolve per phase call"},
    [C_RING] = {"ring", "vkprof ring, every token: 2 stamps per phase call, one submit per "
                        "token, vkprof_collect after the fence"},
    [C_RING_SHARED] = {"ring-shared", "vkprof ring with shared_boundaries: 1 stamp per "
                                      "boundary (a phase call begins at the previous end)"},
    [C_RING_SAMPLED] = {"ring-sampled", "vkprof ring with shared boundaries, every phase call "
                                        "of 1 token in N (sample_every), nothing recorded in "
                                        "the others"},
    [C_RING_ROTATING] = {"ring-rotating", "vkprof ring with shared boundaries, rotating: K phase "
                                          "calls of each token (rotate_scopes, K+1 stamps), "
                                          "the next K the next token; per-phase time = mean of "
                                          "the timed calls x calls executed"},
    [C_BASE] = {"baseline", "bare Vulkan: the ring's stamps without the library (own pool, host "
                            "reset, one vkGetQueryPoolResults(WAIT) per token)"},
    [C_BASE_SHARED] = {"baseline-shared", "bare Vulkan with one stamp per boundary, as "
                                          "ring-shared"},
};

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- host spans through the engine's hooks (as `vkprof decode` wires them) --- */

static void on_step_ctx(void *user, uint32_t index, uint32_t token)
{
    (void)index;
    (void)token;
    vkprof_step((vkprof_context)user);
}

/* Warnings and errors to stderr; the per-token report is formatted (its cost
 * is part of host profiling) and dropped. */
static void on_log(void *user, vkprof_log_level level, vkprof_result code, const char *msg)
{
    (void)user;
    if (level == VKPROF_LOG_REPORT) {
        return;
    }
    fprintf(stderr, "vkprof %s: %s (%s)\n",
            level == VKPROF_LOG_ERROR  ? "error"
            : level == VKPROF_LOG_WARN ? "warning"
                                       : "info",
            msg, vkprof_result_name(code));
}

vkprof_context_desc bench_base_desc(const vku_instance *inst, const vku_device *dev)
{
    vkprof_context_desc d = vku_vkprof_desc(inst, dev);
    d.enable = VKPROF_ENABLE_OFF;
    d.host_level = VKPROF_HOST_OFF;
    d.queue = dev->queue;
    d.trace_path = "";
    d.log = on_log;
    return d;
}

int bench_alloc(bench *b, uint32_t tokens, uint32_t repeats)
{
    b->tokens = tokens;
    b->repeats = repeats;
    b->ref_ids = calloc(tokens, sizeof *b->ref_ids);
    b->ids = calloc(tokens, sizeof *b->ids);
    bool oom = b->ref_ids == NULL || b->ids == NULL;
    for (uint32_t c = 0; c < C_COUNT; c++) {
        b->conf[c].tps = calloc(repeats, sizeof(double));
        b->conf[c].ratio = calloc(repeats, sizeof(double));
        b->conf[c].tok_ns = calloc((size_t)repeats * tokens, sizeof(double));
        oom =
            oom || b->conf[c].tps == NULL || b->conf[c].ratio == NULL || b->conf[c].tok_ns == NULL;
    }
    if (oom) {
        fprintf(stderr, "vkprof bench: out of memory\n");
        return 1;
    }
    return 0;
}

int bench_create_configs(bench *b, const vku_instance *inst, const vku_device *dev,
                         uint32_t sample_every)
{
    for (uint32_t c = 0; c < C_COUNT; c++) {
        bconf *k = &b->conf[c];
        vkprof_context_desc d = bench_base_desc(inst, dev);
        k->mode = DEC_PROFILE_OFF;
        switch (c) {
        case C_HOST: d.host_level = VKPROF_HOST_ALL; break;
        case C_2SLOT:
            d.enable = VKPROF_ENABLE_ON;
            k->mode = DEC_PROFILE_GPU;
            break;
        case C_RING:
        case C_RING_SHARED:
        case C_RING_SAMPLED:
        case C_RING_ROTATING:
            d.enable = VKPROF_ENABLE_ON;
            d.timing_mode = VKPROF_TIMING_RING;
            /* the sampled rings stamp the cheapest way: one stamp per boundary */
            d.shared_boundaries = c != C_RING;
            d.sample_every = c == C_RING_SAMPLED ? sample_every : 1;
            /* VKPROF_RING_ROTATE overrides it, as for any context */
            d.rotate_scopes = c == C_RING_ROTATING ? VKPROF_DEFAULT_ROTATE_SCOPES : 0;
            k->mode = DEC_PROFILE_RING;
            if (c == C_RING_ROTATING) {
                b->rot_desc = d;
            }
            break;
        case C_BASE: k->mode = DEC_PROFILE_BASELINE; break;
        case C_BASE_SHARED: k->mode = DEC_PROFILE_BASELINE_SHARED; break;
        default: break;
        }
        if (c == C_OFF || c == C_BASE || c == C_BASE_SHARED) {
            continue;
        }
        vkprof_result pr = vkprof_create(&d, &k->prof);
        if (pr != VKPROF_OK) {
            fprintf(stderr, "vkprof bench: vkprof_create: %s\n", vkprof_result_text(pr));
            return 1;
        }
        if (d.enable == VKPROF_ENABLE_ON && !vkprof_active(k->prof)) {
            fprintf(stderr,
                    "vkprof bench: the compute queue of %s has no timestamps: "
                    "nothing to measure\n",
                    dev->props.deviceName);
            return 1;
        }
        if (c == C_HOST) {
            k->hooks = dec_span_hooks(&b->glue, k->prof, true);
        } else {
            k->hooks = (dec_hooks){.user = k->prof, .step = on_step_ctx};
        }
    }
    return 0;
}

/* One run of `tokens` tokens from position 0; tokens/s in *tps, each
 * token's time (ns) in tok_ns[] unless NULL. */
static int run_once(bench *b, bconf *c, const char *name, double *tps, double *tok_ns)
{
    if (dec_reconfigure(b->eng, c->mode, c->prof, &c->hooks, b->err, sizeof b->err) != 0) {
        fprintf(stderr, "vkprof bench: %s: %s\n", name, b->err);
        return 1;
    }
    uint32_t tok = 1; /* a BOS-like start token */
    uint64_t t0 = bench_now_ns();
    for (uint32_t i = 0; i < b->tokens; i++) {
        uint32_t next = 0;
        uint64_t s0 = tok_ns != NULL ? bench_now_ns() : 0;
        if (dec_step(b->eng, tok, &next, b->err, sizeof b->err) != 0) {
            fprintf(stderr, "vkprof bench: %s, token %u: %s\n", name, i, b->err);
            return 1;
        }
        if (tok_ns != NULL) {
            tok_ns[i] = (double)(bench_now_ns() - s0);
        }
        b->ids[i] = next;
        tok = next;
    }
    uint64_t t1 = bench_now_ns();
    *tps = (double)b->tokens / ((double)(t1 - t0) * 1e-9);
    for (uint32_t i = 0; i < b->tokens && b->have_ref; i++) {
        if (b->ids[i] != b->ref_ids[i]) {
            fprintf(stderr, "vkprof bench: %s: token %u is %u, unprofiled %u\n", name, i, b->ids[i],
                    b->ref_ids[i]);
            b->mismatches++;
            break;
        }
    }
    return 0;
}

int bench_run_rounds(bench *b)
{
    bconf *conf = b->conf;
    /* warm-up: one run per configuration; the first gives the reference tokens */
    double tps;
    for (uint32_t c = 0; c < C_COUNT; c++) {
        if (run_once(b, &conf[c], bench_cinfo[c].name, &tps, NULL) != 0) {
            return 1;
        }
        if (c == C_OFF) {
            memcpy(b->ref_ids, b->ids, b->tokens * sizeof *b->ids);
            b->have_ref = true;
        }
        printf("warm-up   %-16s %9.2f tokens/s\n", bench_cinfo[c].name, tps);
        fflush(stdout);
    }
    for (uint32_t c = 0; c < C_COUNT; c++) {
        if (conf[c].prof != NULL) {
            vkprof_reset(conf[c].prof); /* figures over the measured rounds only */
        }
    }
    /* interleaved rounds, the order rotated by one each round */
    for (uint32_t r = 0; r < b->repeats; r++) {
        for (uint32_t i = 0; i < C_COUNT; i++) {
            uint32_t c = (r + i) % C_COUNT;
            bconf *k = &conf[c];
            if (run_once(b, k, bench_cinfo[c].name, &k->tps[r],
                         &k->tok_ns[(size_t)r * b->tokens]) != 0) {
                return 1;
            }
            if (k->mode == DEC_PROFILE_BASELINE || k->mode == DEC_PROFILE_BASELINE_SHARED) {
                for (uint32_t ph = 0; ph < VKPROF_PHASE_DEFAULT_COUNT; ph++) {
                    uint64_t cnt = 0, ns = 0;
                    dec_baseline_phase(b->eng, ph, &cnt, &ns);
                    k->bl_ns[ph] += ns;
                    k->bl_count[ph] += cnt;
                }
                k->bl_stamps += dec_baseline_stamps(b->eng);
            }
        }
        printf("round %u/%u:", r + 1, b->repeats);
        for (uint32_t c = 0; c < C_COUNT; c++) {
            conf[c].ratio[r] = conf[c].tps[r] / conf[C_OFF].tps[r];
            printf(" %s %.3f", bench_cinfo[c].name, conf[c].ratio[r]);
        }
        printf("\n");
        fflush(stdout);
    }
    return 0;
}

void bench_gather(bench *b)
{
    uint64_t measured = (uint64_t)b->tokens * b->repeats;
    for (uint32_t c = 0; c < C_COUNT; c++) {
        bconf *k = &b->conf[c];
        if (k->prof != NULL && k->mode != DEC_PROFILE_OFF) {
            vkprof_get_timing_stats(k->prof, &k->ts);
            vkprof_phase_stats st[BENCH_MAX_PHASES];
            uint32_t n = 0;
            vkprof_snapshot(k->prof, st, BENCH_MAX_PHASES, &n, &k->ec);
            k->timed_tokens = k->mode == DEC_PROFILE_RING ? k->ts.timed_steps : measured;
            /* rotating: every token is timed, K of its calls; a phase's time
             * is its estimate, the mean of its timed calls x its calls */
            bool est = k->ts.rotate_scopes > 0;
            uint64_t stamps = k->ts.stamps_written;
            uint64_t scopes = 0;
            for (uint32_t ph = 0; ph < VKPROF_PHASE_DEFAULT_COUNT && ph < n; ph++) {
                k->phase_count[ph] = st[ph].count;
                scopes += st[ph].count;
                uint64_t ns = est ? st[ph].est_total_ns : st[ph].total_ns;
                k->phase_ns_per_token[ph] =
                    k->timed_tokens ? (double)ns / (double)k->timed_tokens : 0.0;
            }
            if (stamps == 0) {
                stamps = 2 * scopes; /* a library that does not count them */
            }
            k->stamps_per_token = (double)stamps / (double)measured;
            k->has_phases = k->timed_tokens > 0;
        } else if (k->mode == DEC_PROFILE_BASELINE || k->mode == DEC_PROFILE_BASELINE_SHARED) {
            k->timed_tokens = measured;
            for (uint32_t ph = 0; ph < VKPROF_PHASE_DEFAULT_COUNT; ph++) {
                k->phase_count[ph] = k->bl_count[ph];
                k->phase_ns_per_token[ph] = (double)k->bl_ns[ph] / (double)measured;
            }
            k->stamps_per_token = (double)k->bl_stamps / (double)measured;
            k->has_phases = true;
        }
    }
    if (bench_convergence(b) != 0) {
        b->conf[C_RING_ROTATING].conv_n = 0; /* reported as not measured */
    }
}

/* The rotating split after each token of a fresh context against
 * ring-shared's split over the measured rounds (every token, the same
 * boundaries): tokens x repeats tokens, runs of `tokens` from position 0 as
 * in the rounds. */
int bench_convergence(bench *b)
{
    bconf *k = &b->conf[C_RING_ROTATING];
    const double *ref = b->conf[C_RING_SHARED].phase_ns_per_token;
    uint32_t n = b->tokens * b->repeats;
    free(k->conv_pp);
    k->conv_pp = calloc(n, sizeof *k->conv_pp);
    k->conv_n = k->conv_tokens = k->conv_period = 0;
    if (k->conv_pp == NULL) {
        fprintf(stderr, "vkprof bench: out of memory\n");
        return 1;
    }
    vkprof_context ctx = NULL;
    vkprof_result pr = vkprof_create(&b->rot_desc, &ctx);
    if (pr != VKPROF_OK) {
        fprintf(stderr, "vkprof bench: convergence: vkprof_create: %s\n", vkprof_result_text(pr));
        return 1;
    }
    dec_hooks hooks = {.user = ctx, .step = on_step_ctx};
    int rc = 1;
    uint32_t done_tokens = 0;
    for (uint32_t r = 0; r < b->repeats; r++) {
        /* from position 0, as each round's run */
        if (dec_reconfigure(b->eng, DEC_PROFILE_RING, ctx, &hooks, b->err, sizeof b->err) != 0) {
            fprintf(stderr, "vkprof bench: convergence: %s\n", b->err);
            goto done;
        }
        uint32_t tok = 1;
        for (uint32_t i = 0; i < b->tokens; i++) {
            uint32_t next = 0;
            if (dec_step(b->eng, tok, &next, b->err, sizeof b->err) != 0) {
                fprintf(stderr, "vkprof bench: convergence, token %u: %s\n", i, b->err);
                goto done;
            }
            tok = next;
            vkprof_phase_stats st[BENCH_MAX_PHASES];
            uint32_t np = 0;
            double est[VKPROF_PHASE_DEFAULT_COUNT] = {0};
            vkprof_snapshot(ctx, st, BENCH_MAX_PHASES, &np, NULL);
            for (uint32_t ph = 0; ph < VKPROF_PHASE_DEFAULT_COUNT && ph < np; ph++) {
                est[ph] = (double)st[ph].est_total_ns;
            }
            double d = bench_split_diff(ref, est);
            k->conv_pp[done_tokens++] = isnan(d) ? 100.0 : d;
        }
    }
    k->conv_n = done_tokens;
    /* the first count from which every later one is within 1 pp */
    uint32_t from = done_tokens;
    while (from > 0 && k->conv_pp[from - 1] <= 1.0) {
        from--;
    }
    k->conv_tokens = from < done_tokens ? from + 1 : 0;
    vkprof_timing_stats ts;
    vkprof_get_timing_stats(ctx, &ts);
    k->conv_period = (uint32_t)ts.rotate_period;
    rc = 0;
done:
    /* the engine must not keep a context that is gone */
    (void)dec_reconfigure(b->eng, DEC_PROFILE_OFF, NULL, NULL, b->err, sizeof b->err);
    vkprof_destroy(ctx);
    return rc;
}

void bench_free(bench *b)
{
    dec_destroy(b->eng);
    b->eng = NULL;
    for (uint32_t c = 0; c < C_COUNT; c++) {
        vkprof_destroy(b->conf[c].prof);
        b->conf[c].prof = NULL;
        free(b->conf[c].tps);
        free(b->conf[c].ratio);
        free(b->conf[c].tok_ns);
        free(b->conf[c].conv_pp);
        b->conf[c].tps = b->conf[c].ratio = b->conf[c].tok_ns = b->conf[c].conv_pp = NULL;
    }
    free(b->ref_ids);
    free(b->ids);
    b->ref_ids = b->ids = NULL;
}
