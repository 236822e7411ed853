/* The decode engine against its plain-C reference (tiny preset, validation
 * layer on), the phase counts of --profile gpu, and the `vkprof decode` CLI.
 *
 *   test_decode              engine cases
 *   test_decode --cli VKPROF CLI cases, running the given vkprof binary */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "decode.h"
#include "harness.h"

#define STEPS 16u
#define SEED 7u

static th_gpu g;

static dec_engine *make_engine_of(const char *preset, dec_profile mode, vkprof_context prof,
                                  const dec_hooks *hooks)
{
    dec_config cfg = {.preset = dec_find_preset(preset),
                      .seed = SEED,
                      .profile = mode,
                      .prof = prof,
                      .hooks = hooks,
                      .keep_logits = true};
    dec_engine *e = NULL;
    char err[512] = "";
    int rc = dec_create(&g.dev, &cfg, &e, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "dec_create %s: %s\n", preset, err);
    }
    CHECK(rc == 0 && e != NULL);
    return e;
}

static dec_engine *make_engine(dec_profile mode, vkprof_context prof)
{
    dec_config cfg = {.preset = dec_find_preset("tiny"),
                      .seed = SEED,
                      .profile = mode,
                      .prof = prof,
                      .keep_logits = true};
    dec_engine *e = NULL;
    char err[512] = "";
    int rc = dec_create(&g.dev, &cfg, &e, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "dec_create: %s\n", err);
    }
    CHECK(rc == 0 && e != NULL);
    return e;
}

static void test_presets(void)
{
    const dec_preset *t = dec_find_preset("tiny"), *b1 = dec_find_preset("llama-1b"),
                     *b8 = dec_find_preset("llama-8b");
    CHECK(t != NULL && b1 != NULL && b8 != NULL);
    CHECK(dec_find_preset("llama-70b") == NULL);
    CHECK(dec_find_preset(NULL) == NULL);
    if (b1 == NULL || b8 == NULL) {
        return;
    }
    /* Llama 3.2 1B: 1.24B parameters (tied); Llama 3.1 8B: 8.03B */
    double p1 = (double)dec_param_count(b1) * 1e-9, p8 = (double)dec_param_count(b8) * 1e-9;
    printf("  params: llama-1b %.3fB, llama-8b %.3fB\n", p1, p8);
    CHECK(p1 > 1.23 && p1 < 1.25);
    CHECK(p8 > 8.02 && p8 < 8.04);
    dec_mem_plan m = dec_plan_memory(b8, 512);
    CHECK(m.kv_cache == 2ull * 32 * 512 * 1024 * 4);
    CHECK(m.total == m.weights + m.kv_cache + m.activations);
    /* MoE: OLMoE-1B-7B has 6.92B parameters (1.3B active), Qwen3-30B-A3B 30.5B */
    const dec_preset *mt = dec_find_preset("moe-tiny"), *ol = dec_find_preset("olmoe-1b-7b"),
                     *qw = dec_find_preset("qwen3-30b-a3b");
    CHECK(mt != NULL && ol != NULL && qw != NULL);
    if (mt == NULL || ol == NULL || qw == NULL) {
        return;
    }
    CHECK(!dec_layer_is_moe(mt, 0) && dec_layer_is_moe(mt, 1) && dec_layer_is_moe(ol, 0));
    CHECK(!dec_layer_is_moe(b8, 3));
    double po = (double)dec_param_count(ol) * 1e-9, pq = (double)dec_param_count(qw) * 1e-9;
    dec_mem_plan mo = dec_plan_memory(ol, 512), mq = dec_plan_memory(qw, 512);
    printf("  params: olmoe-1b-7b %.3fB (%.2f GiB of weights), qwen3-30b-a3b %.3fB (%.2f GiB)\n",
           po, (double)mo.weights / (1u << 30), pq, (double)mq.weights / (1u << 30));
    CHECK(po > 6.9 && po < 6.95);
    CHECK(pq > 30.4 && pq < 30.6);
    /* fp16: 2 bytes a parameter, plus fp32 norm gains */
    CHECK(mo.weights > 2 * dec_param_count(ol) &&
          mo.weights < 2 * dec_param_count(ol) + (1u << 20));
    /* a rank holds its share of the experts' and heads' weights */
    dec_mem_plan m2 = dec_plan_memory_tp(ol, 512, 2);
    CHECK(m2.weights < mo.weights / 2 + (uint64_t)ol->vocab * ol->dim * 4);
    CHECK(m2.kv_cache * 2 == mo.kv_cache);
    /* phases: dense presets make no MoE calls, olmoe no dense-MLP calls */
    CHECK(!dec_preset_uses_phase(t, VKPROF_PHASE_MOE_ROUTER));
    CHECK(dec_preset_uses_phase(t, VKPROF_PHASE_MLP_DOWN));
    CHECK(dec_preset_uses_phase(mt, VKPROF_PHASE_MLP_DOWN));
    CHECK(dec_preset_uses_phase(mt, VKPROF_PHASE_MOE_COMBINE));
    CHECK(!dec_preset_uses_phase(ol, VKPROF_PHASE_MLP_GATE_UP));
    CHECK(dec_preset_uses_phase(ol, VKPROF_PHASE_MOE_EXPERTS));
    CHECK(!dec_preset_uses_phase(ol, VKPROF_PHASE_ALL_REDUCE));
    uint32_t ids[DEC_MAX_PHASES];
    CHECK_EQ_U64(dec_preset_phases(t, ids), DEC_NUM_PHASES);
    CHECK(memcmp(ids, dec_phase_ids, sizeof dec_phase_ids) == 0);
    CHECK_EQ_U64(dec_preset_phases(mt, ids), DEC_MAX_PHASES);
    CHECK_EQ_U64(dec_preset_phases(ol, ids), DEC_NUM_PHASES);
    CHECK(ids[6] == VKPROF_PHASE_MOE_ROUTER && ids[8] == VKPROF_PHASE_MOE_COMBINE);
}

static void test_route_topk(void)
{
    /* highest first, a tie to the lower id, softmax over the chosen */
    const float l[6] = {0.5f, 2.0f, -1.0f, 2.0f, 0.5f, 1.0f};
    uint32_t ids[4];
    float w[4];
    dec_route_topk(l, 6, 4, ids, w);
    CHECK(ids[0] == 1 && ids[1] == 3 && ids[2] == 5 && ids[3] == 0);
    float z = 2.0f + expf(-1.0f) + expf(-1.5f);
    CHECK(fabsf(w[0] - 1.0f / z) < 1e-6f && fabsf(w[1] - w[0]) < 1e-7f);
    CHECK(fabsf(w[3] - expf(-1.5f) / z) < 1e-6f);
}

static void test_half(void)
{
    /* exact fp16 bits for q * 2^-shift, normal and subnormal */
    CHECK(dec_half_bits(0, 14) == 0);
    CHECK(dec_half_bits(1, 10) == 0x1400);                /* 2^-10 */
    CHECK(dec_half_bits(-1023, 10) == (0x8000 | 0x3bfe)); /* -0.9990234375 */
    CHECK(dec_half_bits(1, 24) == 0x0001);                /* smallest subnormal */
    CHECK(dec_half_bits(5, 17) == 0x0280);                /* 5 * 2^-17 = 640 * 2^-24 */
    for (int32_t q = -1023; q <= 1023; q++) {
        for (uint32_t s = 8; s <= 24; s += 4) {
            float v = dec_half_to_float(dec_half_bits(q, s));
            if (v != ldexpf((float)q, -(int)s)) {
                CHECK(v == ldexpf((float)q, -(int)s));
                return;
            }
        }
    }
}

static void test_weights_bit_identical(void)
{
    dec_engine *e = make_engine(DEC_PROFILE_OFF, NULL);
    dec_ref *r = dec_ref_create(dec_find_preset("tiny"), 0, SEED);
    CHECK(r != NULL);
    enum { N = 8192 };
    uint32_t *w = calloc(N, sizeof *w);
    if (e != NULL && r != NULL && w != NULL) {
        CHECK(dec_read_qkv_words(e, w, N) == 0);
        int bad = 0;
        for (uint32_t i = 0; i < N && bad < 4; i++) {
            uint16_t lo = (uint16_t)(w[i] & 0xffffu), hi = (uint16_t)(w[i] >> 16);
            if (lo != dec_ref_qkv_half(r, 2 * i) || hi != dec_ref_qkv_half(r, 2 * i + 1)) {
                fprintf(stderr, "  word %u: gpu %08x, cpu %04x%04x\n", i, w[i],
                        dec_ref_qkv_half(r, 2 * i + 1), dec_ref_qkv_half(r, 2 * i));
                bad++;
            }
        }
        CHECK(bad == 0);
    }
    free(w);
    dec_ref_destroy(r);
    dec_destroy(e);
}

/*
 * Logit tolerance. Both sides use the same fp16 weights (bit-identical, see
 * above) and fp32 math, so the only differences are the order of fp32
 * additions (the GPU sums dot products as 128 strided partials and a tree;
 * the CPU sums left to right) and the GPU's exp/sqrt/division, which are
 * a few ulp off C's. Each dot product of length n then differs by about
 * sqrt(n) * 2^-24 relative to the sum of |terms|, i.e. ~1e-6 of the logit
 * scale; 4 layers and the norms amplify that by a small factor. We allow
 * 1e-3 of the logits' RMS (the observed figure is printed; it is ~1e-6),
 * which still catches any real error: a wrong row, head, RoPE pair or
 * off-by-one position moves logits by the order of their RMS.
 */
#define LOGIT_REL_TOL 1e-3

static void test_matches_reference(void)
{
    const dec_preset *p = dec_find_preset("tiny");
    dec_engine *e = make_engine(DEC_PROFILE_OFF, NULL);
    dec_ref *r = dec_ref_create(p, 0, SEED);
    CHECK(r != NULL);
    if (e == NULL || r == NULL) {
        dec_ref_destroy(r);
        dec_destroy(e);
        return;
    }
    uint32_t tg = 1, tc = 1, distinct = 0;
    uint32_t seen[STEPS];
    double worst = 0.0;
    for (uint32_t i = 0; i < STEPS; i++) {
        uint32_t ng = 0;
        char err[256] = "";
        int rc = dec_step(e, tg, &ng, err, sizeof err);
        if (rc != 0) {
            fprintf(stderr, "  dec_step: %s\n", err);
        }
        CHECK(rc == 0);
        const float *lc = NULL;
        uint32_t nc = dec_ref_step(r, tc, &lc);
        const float *lg = dec_logits(e);
        CHECK(lg != NULL);
        if (rc != 0 || lg == NULL) {
            break;
        }
        double ss = 0.0, maxd = 0.0;
        bool finite = true;
        for (uint32_t v = 0; v < p->vocab; v++) {
            ss += (double)lc[v] * lc[v];
            maxd = fmax(maxd, fabs((double)lg[v] - lc[v]));
            finite = finite && isfinite(lg[v]);
        }
        double rms = sqrt(ss / p->vocab), rel = maxd / rms;
        worst = fmax(worst, rel);
        CHECK(finite);
        CHECK(rel <= LOGIT_REL_TOL);
        if (ng != nc) {
            fprintf(stderr, "  step %u: gpu token %u, cpu token %u\n", i, ng, nc);
        }
        CHECK_EQ_U64(ng, nc);
        /* the GPU's logit of its token is the maximum */
        CHECK(lg[ng] >= lg[nc]);
        bool dup = false;
        for (uint32_t k = 0; k < distinct; k++) {
            dup = dup || seen[k] == ng;
        }
        if (!dup) {
            seen[distinct++] = ng;
        }
        tg = ng;
        tc = nc;
    }
    printf("  %u steps: max |gpu - cpu| logit = %.3g of the logit RMS (tolerance %.0e); "
           "%u distinct tokens\n",
           STEPS, worst, LOGIT_REL_TOL, distinct);
    CHECK(distinct >= 4); /* argmax is not degenerate */
    dec_ref_destroy(r);
    dec_destroy(e);
}

/* ---- MoE ------------------------------------------------------------------------- */

/* What the routed hook saw at the current step, per layer. */
typedef struct route_log {
    uint32_t calls, bad;
    bool seen[64];
    uint32_t ids[64][DEC_MAX_TOP_K];
    float w[64][DEC_MAX_TOP_K];
} route_log;

static void on_routed(void *user, uint32_t layer, const uint32_t *ids, const float *weights,
                      uint32_t k)
{
    route_log *r = user;
    r->calls++;
    if (layer >= 64 || k > DEC_MAX_TOP_K) {
        r->bad++;
        return;
    }
    r->seen[layer] = true;
    memcpy(r->ids[layer], ids, k * sizeof *ids);
    memcpy(r->w[layer], weights, k * sizeof *weights);
}

/* moe-tiny against the C reference: tokens, logits (LOGIT_REL_TOL, as the
 * dense model: same weights, same fp32 math, another summation order), and
 * at every step the experts each MoE layer routed to, read back through the
 * routed hook, equal the reference's choice, their weights within 1e-5. */
static void test_moe_matches_reference(void)
{
    const dec_preset *p = dec_find_preset("moe-tiny");
    route_log rl;
    memset(&rl, 0, sizeof rl);
    dec_hooks h = {.user = &rl, .routed = on_routed};
    dec_engine *e = make_engine_of("moe-tiny", DEC_PROFILE_OFF, NULL, &h);
    dec_ref *r = dec_ref_create(p, 0, SEED);
    CHECK(r != NULL);
    if (e == NULL || r == NULL) {
        dec_ref_destroy(r);
        dec_destroy(e);
        return;
    }
    uint32_t tg = 1, tc = 1, distinct_sets = 0, moe = 0;
    double worst = 0.0, worst_w = 0.0;
    uint32_t first_ids[DEC_MAX_TOP_K] = {0};
    for (uint32_t i = 0; i < STEPS; i++) {
        memset(&rl, 0, sizeof rl);
        uint32_t ng = 0;
        char err[256] = "";
        int rc = dec_step(e, tg, &ng, err, sizeof err);
        if (rc != 0) {
            fprintf(stderr, "  dec_step: %s\n", err);
        }
        CHECK(rc == 0);
        const float *lc = NULL;
        uint32_t nc = dec_ref_step(r, tc, &lc);
        const float *lg = dec_logits(e);
        if (rc != 0 || lg == NULL) {
            break;
        }
        CHECK_EQ_U64(rl.bad, 0);
        moe = 0;
        for (uint32_t l = 0; l < p->n_layers; l++) {
            const float *rw = NULL;
            const uint32_t *ri = dec_ref_routed(r, l, &rw);
            CHECK(dec_layer_is_moe(p, l) == (ri != NULL));
            CHECK(rl.seen[l] == (ri != NULL));
            if (ri == NULL || !rl.seen[l]) {
                continue;
            }
            moe++;
            for (uint32_t j = 0; j < p->top_k; j++) {
                if (rl.ids[l][j] != ri[j]) {
                    fprintf(stderr, "  step %u layer %u slot %u: gpu expert %u, cpu %u\n", i, l, j,
                            rl.ids[l][j], ri[j]);
                }
                CHECK_EQ_U64(rl.ids[l][j], ri[j]);
                worst_w = fmax(worst_w, fabs((double)rl.w[l][j] - rw[j]));
            }
            if (i == 0 && l == p->first_moe) {
                memcpy(first_ids, ri, sizeof first_ids);
            } else if (memcmp(first_ids, ri, p->top_k * sizeof *ri) != 0) {
                distinct_sets++;
            }
        }
        CHECK_EQ_U64(rl.calls, moe);
        CHECK_EQ_U64(moe, p->n_layers - p->first_moe);
        double ss = 0.0, maxd = 0.0;
        for (uint32_t v = 0; v < p->vocab; v++) {
            ss += (double)lc[v] * lc[v];
            maxd = fmax(maxd, fabs((double)lg[v] - lc[v]));
        }
        worst = fmax(worst, maxd / sqrt(ss / p->vocab));
        if (ng != nc) {
            fprintf(stderr, "  step %u: gpu token %u, cpu token %u\n", i, ng, nc);
        }
        CHECK_EQ_U64(ng, nc);
        tg = ng;
        tc = nc;
    }
    printf("  moe-tiny, %u steps: tokens and routed experts equal the reference; max |logit diff| "
           "%.3g of the RMS (tolerance %.0e), max |weight diff| %.3g; %u routings differ from the "
           "first\n",
           STEPS, worst, LOGIT_REL_TOL, worst_w, distinct_sets);
    CHECK(worst <= LOGIT_REL_TOL);
    CHECK(worst_w <= 1e-5);
    CHECK(distinct_sets > 0); /* the router is not degenerate */
    /* the calls of every phase: a dense layer's MLP in layer 0, the MoE
     * phases in the others, and only the phases the preset uses */
    uint64_t L = p->n_layers, moe_l = L - p->first_moe, expect[VKPROF_PHASE_DEFAULT_COUNT] = {0};
    expect[VKPROF_PHASE_EMBEDDING] = 1;
    expect[VKPROF_PHASE_NORM] = 2 * L + 1;
    expect[VKPROF_PHASE_QKV] = expect[VKPROF_PHASE_ROPE] = L;
    expect[VKPROF_PHASE_ATTENTION] = expect[VKPROF_PHASE_ATTN_OUTPUT] = L;
    expect[VKPROF_PHASE_MLP_GATE_UP] = expect[VKPROF_PHASE_ACTIVATION] = L - moe_l;
    expect[VKPROF_PHASE_MLP_DOWN] = L - moe_l;
    expect[VKPROF_PHASE_MOE_ROUTER] = expect[VKPROF_PHASE_MOE_EXPERTS] = moe_l;
    expect[VKPROF_PHASE_MOE_COMBINE] = moe_l;
    expect[VKPROF_PHASE_LM_HEAD] = expect[VKPROF_PHASE_SAMPLING] = 1;
    uint64_t per_token = 0;
    for (uint32_t k = 0; k < VKPROF_PHASE_DEFAULT_COUNT; k++) {
        th_case = dec_phase_label(k);
        CHECK_EQ_U64(dec_costs(e, k)->calls, expect[k] * STEPS);
        CHECK((expect[k] > 0) == dec_preset_uses_phase(p, k));
        CHECK((dec_costs(e, k)->bytes > 0) == (expect[k] > 0));
        per_token += expect[k];
    }
    th_case = "test_moe_matches_reference";
    CHECK_EQ_U64(per_token, dec_calls_per_token(e));
    /* the experts' phase: per call k experts' (and the shared one's) gate/up
     * and down, one activation per kind */
    CHECK_EQ_U64(dec_costs(e, VKPROF_PHASE_MOE_EXPERTS)->dispatches,
                 moe_l * STEPS * (2 * (p->top_k + 1) + 2));
    dec_ref_destroy(r);
    dec_destroy(e);
}

static void test_profile_gpu(void)
{
    const dec_preset *p = dec_find_preset("tiny");
    vkprof_context_desc d = th_desc(&g, NULL, false);
    d.enable = VKPROF_ENABLE_ON;
    vkprof_context prof = th_ctx(&d);
    CHECK(vkprof_active(prof));
    dec_engine *e = make_engine(DEC_PROFILE_GPU, prof);
    dec_engine *ref = make_engine(DEC_PROFILE_OFF, NULL);
    enum { T = 4 };
    if (e != NULL && ref != NULL) {
        uint32_t tg = 1, to = 1;
        for (uint32_t i = 0; i < T; i++) {
            char err[256] = "";
            uint32_t a = 0, b = 0;
            int rc = dec_step(e, tg, &a, err, sizeof err);
            if (rc != 0) {
                fprintf(stderr, "  dec_step (gpu): %s\n", err);
            }
            CHECK(rc == 0);
            CHECK(dec_step(ref, to, &b, err, sizeof err) == 0);
            CHECK_EQ_U64(a, b); /* profiling does not change the result */
            tg = a;
            to = b;
        }
        vkprof_phase_stats st[VKPROF_PHASE_DEFAULT_COUNT];
        uint32_t n = 0;
        vkprof_error_counts ec;
        CHECK(vkprof_snapshot(prof, st, VKPROF_PHASE_DEFAULT_COUNT, &n, &ec) == VKPROF_OK);
        uint64_t L = p->n_layers;
        uint64_t expect[VKPROF_PHASE_DEFAULT_COUNT] = {0};
        expect[VKPROF_PHASE_EMBEDDING] = 1;
        expect[VKPROF_PHASE_NORM] = 2 * L + 1;
        expect[VKPROF_PHASE_QKV] = L;
        expect[VKPROF_PHASE_ROPE] = L;
        expect[VKPROF_PHASE_ATTENTION] = L;
        expect[VKPROF_PHASE_ATTN_OUTPUT] = L;
        expect[VKPROF_PHASE_MLP_GATE_UP] = L;
        expect[VKPROF_PHASE_ACTIVATION] = L;
        expect[VKPROF_PHASE_MLP_DOWN] = L;
        expect[VKPROF_PHASE_LM_HEAD] = 1;
        expect[VKPROF_PHASE_SAMPLING] = 1;
        for (uint32_t k = 0; k < VKPROF_PHASE_DEFAULT_COUNT; k++) {
            const dec_phase_cost *c = dec_costs(e, k);
            th_case = st[k].name;
            CHECK_EQ_U64(st[k].count, expect[k] * T);
            CHECK_EQ_U64(st[k].count, c->calls);              /* what the engine dispatched */
            CHECK_EQ_U64(dec_costs(ref, k)->calls, c->calls); /* same calls when off */
            if (expect[k] != 0) {
                CHECK(st[k].total_ns > 0);
                CHECK(c->dispatches >= c->calls);
                CHECK(c->bytes > 0);
            }
        }
        th_case = "test_profile_gpu";
        CHECK_EQ_U64(ec.vulkan_errors + ec.not_ready + ec.discarded + ec.begin_twice, 0);
    }
    dec_destroy(ref);
    dec_destroy(e);
    vkprof_destroy(prof);
}

static void test_errors(void)
{
    char err[512] = "";
    dec_engine *e = NULL;
    /* the KV cache of llama-8b for 2^20 positions is 256 GiB */
    dec_config cfg = {.preset = dec_find_preset("llama-8b"), .ctx = 1u << 20, .seed = 1};
    CHECK(dec_create(&g.dev, &cfg, &e, err, sizeof err) == 2);
    CHECK(e == NULL);
    CHECK(strstr(err, "not enough device memory") != NULL);
    printf("  %s\n", err);
    /* olmoe-1b-7b: 12.9 GiB of fp16 weights and, for 2^20 positions, a
     * 256 GiB KV cache: refused before allocating on any device */
    dec_config cm = {.preset = dec_find_preset("olmoe-1b-7b"), .ctx = 1u << 20, .seed = 1};
    CHECK(dec_create(&g.dev, &cm, &e, err, sizeof err) == 2);
    CHECK(e == NULL);
    if (e != NULL) {
        dec_destroy(e);
        e = NULL;
    }
    CHECK(strstr(err, "not enough device memory") != NULL && strstr(err, "weights 12.89") != NULL);
    printf("  %s\n", err);
    /* gpu profiling without an active context */
    dec_config c2 = {.preset = dec_find_preset("tiny"), .profile = DEC_PROFILE_GPU};
    CHECK(dec_create(&g.dev, &c2, &e, err, sizeof err) != 0);
    CHECK(e == NULL);
    /* stepping past the context */
    dec_config c3 = {.preset = dec_find_preset("tiny"), .ctx = 2, .seed = 1};
    CHECK(dec_create(&g.dev, &c3, &e, err, sizeof err) == 0);
    if (e != NULL) {
        uint32_t t = 1;
        CHECK(dec_step(e, t, &t, err, sizeof err) == 0);
        CHECK(dec_step(e, t, &t, err, sizeof err) == 0);
        CHECK(dec_step(e, t, &t, err, sizeof err) != 0);
        CHECK(strstr(err, "context is full") != NULL);
        CHECK(dec_step(e, 999999, &t, err, sizeof err) != 0);
    }
    dec_destroy(e);
}

/* ---- tensor parallelism ---------------------------------------------------------- */

/*
 * R ranks, each its own VkDevice (of the one physical device), engine and
 * thread, all-reducing through a test hook: every rank puts its partial sum
 * in its slot, waits for all, adds the slots in rank order 0..R-1 (so every
 * rank gets the same bits), and waits again before the slots are reused.
 * The tokens must equal the ranks=1 engine's and its logits agree within
 * TP_LOGIT_REL_TOL of their RMS: the only difference is the order of fp32
 * additions (a dot product over q_dim (ffn) is cut into R partial dot
 * products, summed on the host, instead of one 128-lane tree), so each
 * residual element differs by a few ulp of its magnitude; 4 layers and the
 * norms keep that near 1e-6 of the logit scale (the observed figure is
 * printed). 1e-4 is far below what a wrong slice does: a missing head or a
 * residual added twice moves logits by the order of their RMS.
 */
#define TP_LOGIT_REL_TOL 1e-4
#define TP_MAX_RANKS 4
#define TP_STEPS 16u
#define TP_LAYERS 8u /* most layers whose routing a case records */

typedef struct tp_world {
    uint32_t ranks, dim;
    pthread_barrier_t bar;
    float *slot[TP_MAX_RANKS];
    uint64_t calls[TP_MAX_RANKS];
    int bad_call; /* a rank reduced at another site/layer than rank 0 */
    uint32_t site_seen[TP_MAX_RANKS][2];
} tp_world;

typedef struct tp_rank {
    tp_world *w;
    uint32_t rank;
    const dec_preset *p;
    vku_device dev;
    vkprof_context prof; /* gpu and ring modes: this rank's */
    dec_engine *e;
    uint32_t steps, cur;
    uint64_t nrouted;
    uint32_t ids[TP_STEPS][TP_LAYERS][DEC_MAX_TOP_K]; /* routed experts */
    uint32_t tokens[TP_STEPS];
    float *logits; /* steps x vocab */
    int rc;
    char err[256];
} tp_rank;

static int tp_all_reduce(void *user, dec_site site, uint32_t layer, float *data, uint32_t n)
{
    tp_rank *r = user;
    tp_world *w = r->w;
    if (n != w->dim) {
        return 1;
    }
    memcpy(w->slot[r->rank], data, n * sizeof *data);
    w->site_seen[r->rank][0] = (uint32_t)site;
    w->site_seen[r->rank][1] = layer;
    pthread_barrier_wait(&w->bar);
    if (w->site_seen[r->rank][0] != w->site_seen[0][0] ||
        w->site_seen[r->rank][1] != w->site_seen[0][1]) {
        w->bad_call = 1; /* written by the mismatching rank only */
    }
    for (uint32_t i = 0; i < n; i++) {
        float acc = w->slot[0][i];
        for (uint32_t k = 1; k < w->ranks; k++) {
            acc += w->slot[k][i];
        }
        data[i] = acc;
    }
    w->calls[r->rank]++;
    pthread_barrier_wait(&w->bar);
    return 0;
}

static void tp_routed(void *user, uint32_t layer, const uint32_t *ids, const float *w, uint32_t k)
{
    tp_rank *r = user;
    (void)w;
    if (layer < TP_LAYERS && r->cur < TP_STEPS && k <= DEC_MAX_TOP_K) {
        memcpy(r->ids[r->cur][layer], ids, k * sizeof *ids);
    }
    r->nrouted++;
}

static void *tp_thread(void *arg)
{
    tp_rank *r = arg;
    const dec_preset *p = r->p;
    uint32_t tok = 1;
    for (uint32_t i = 0; i < r->steps; i++) {
        uint32_t next = 0;
        r->cur = i;
        r->rc = dec_step(r->e, tok, &next, r->err, sizeof r->err);
        if (r->rc != 0) {
            /* the others wait at the barrier for ever: fail loudly instead */
            fprintf(stderr, "  rank %u step %u: %s\n", r->rank, i, r->err);
            exit(1);
        }
        r->tokens[i] = next;
        memcpy(r->logits + (size_t)i * p->vocab, dec_logits(r->e), p->vocab * sizeof(float));
        tok = next;
    }
    return NULL;
}

/* The ranks=1 engine's tokens and logits for TP_STEPS steps from token 1
 * (computed once per preset; a case of fewer steps compares the first ones). */
static struct {
    const char *preset;
    uint32_t tokens[TP_STEPS];
    float *logits;
    tp_rank routes; /* its routed experts (tp_routed) */
} tp_ref;

static void tp_reference(const char *preset, uint32_t *tokens, float *logits)
{
    const dec_preset *p = dec_find_preset(preset);
    size_t nl = (size_t)TP_STEPS * p->vocab;
    if (tp_ref.preset == NULL || strcmp(tp_ref.preset, preset) != 0) {
        free(tp_ref.logits);
        tp_ref.preset = NULL;
        tp_ref.logits = calloc(nl, sizeof(float));
        memset(&tp_ref.routes, 0, sizeof tp_ref.routes);
        dec_hooks h = {.user = &tp_ref.routes, .routed = tp_routed};
        dec_config cfg = {.preset = p, .seed = SEED, .hooks = &h, .keep_logits = true};
        dec_engine *e = NULL;
        char err[512] = "";
        CHECK(tp_ref.logits != NULL && dec_create(&g.dev, &cfg, &e, err, sizeof err) == 0);
        uint32_t tok = 1;
        bool ok = e != NULL;
        for (uint32_t i = 0; ok && i < TP_STEPS; i++) {
            tp_ref.routes.cur = i;
            ok = dec_step(e, tok, &tp_ref.tokens[i], err, sizeof err) == 0;
            CHECK(ok);
            if (ok) {
                memcpy(tp_ref.logits + (size_t)i * p->vocab, dec_logits(e),
                       p->vocab * sizeof(float));
                tok = tp_ref.tokens[i];
            }
        }
        dec_destroy(e);
        if (ok) {
            tp_ref.preset = preset;
        }
    }
    if (tp_ref.preset != NULL) {
        memcpy(tokens, tp_ref.tokens, sizeof tp_ref.tokens);
        memcpy(logits, tp_ref.logits, nl * sizeof(float));
    }
}

static void tp_case(const char *preset, uint32_t R, dec_profile mode, uint32_t steps)
{
    const dec_preset *p = dec_find_preset(preset);
    size_t nl = (size_t)TP_STEPS * p->vocab;
    uint32_t ref_tok[TP_STEPS] = {0};
    float *ref_log = calloc(nl, sizeof(float));
    tp_world w = {.ranks = R, .dim = p->dim};
    tp_rank rk[TP_MAX_RANKS];
    memset(rk, 0, sizeof rk);
    CHECK(ref_log != NULL && pthread_barrier_init(&w.bar, NULL, R) == 0);
    tp_reference(preset, ref_tok, ref_log);
    dec_hooks hooks[TP_MAX_RANKS];
    bool ok = true;
    for (uint32_t r = 0; r < R && ok; r++) {
        rk[r].w = &w;
        rk[r].rank = r;
        rk[r].p = p;
        rk[r].steps = steps;
        w.slot[r] = calloc(p->dim, sizeof(float));
        rk[r].logits = calloc(nl, sizeof(float));
        /* each rank its own VkDevice, on the main thread (volk loads device
         * pointers into globals) */
        ok = w.slot[r] != NULL && rk[r].logits != NULL &&
             vku_device_create(&rk[r].dev, g.dev.phys, g.dev.family) == VK_SUCCESS;
        hooks[r] = (dec_hooks){.user = &rk[r], .all_reduce = tp_all_reduce, .routed = tp_routed};
        if (ok && (mode == DEC_PROFILE_GPU || mode == DEC_PROFILE_RING)) {
            vkprof_context_desc d = vku_vkprof_desc(&g.inst, &rk[r].dev);
            d.enable = VKPROF_ENABLE_ON;
            d.timing_mode = mode == DEC_PROFILE_RING ? VKPROF_TIMING_RING : VKPROF_TIMING_2SLOT;
            d.shared_boundaries = mode == DEC_PROFILE_RING;
            d.trace_path = "";
            ok = vkprof_create(&d, &rk[r].prof) == VKPROF_OK;
        }
        dec_config cfg = {.preset = p,
                          .seed = SEED,
                          .profile = mode,
                          .prof = rk[r].prof,
                          .hooks = &hooks[r],
                          .keep_logits = true,
                          .rank = r,
                          .ranks = R};
        char err[512] = "";
        if (ok && dec_create(&rk[r].dev, &cfg, &rk[r].e, err, sizeof err) != 0) {
            fprintf(stderr, "  dec_create rank %u of %u: %s\n", r, R, err);
            ok = false;
        }
        CHECK(ok);
    }
    pthread_t th[TP_MAX_RANKS];
    for (uint32_t r = 0; r < R && ok; r++) {
        CHECK(pthread_create(&th[r], NULL, tp_thread, &rk[r]) == 0);
    }
    for (uint32_t r = 0; r < R && ok; r++) {
        pthread_join(th[r], NULL);
    }
    double worst = 0.0;
    for (uint32_t r = 0; r < R && ok; r++) {
        CHECK_EQ_U64(w.calls[r], 2ull * p->n_layers * steps);
        for (uint32_t i = 0; i < steps; i++) {
            if (rk[r].tokens[i] != ref_tok[i]) {
                fprintf(stderr, "  rank %u of %u, step %u: token %u, ranks=1 %u\n", r, R, i,
                        rk[r].tokens[i], ref_tok[i]);
            }
            CHECK_EQ_U64(rk[r].tokens[i], ref_tok[i]);
            double ss = 0.0, maxd = 0.0;
            const float *a = rk[r].logits + (size_t)i * p->vocab,
                        *b = ref_log + (size_t)i * p->vocab;
            for (uint32_t v = 0; v < p->vocab; v++) {
                ss += (double)b[v] * b[v];
                maxd = fmax(maxd, fabs((double)a[v] - b[v]));
            }
            worst = fmax(worst, maxd / sqrt(ss / p->vocab));
        }
    }
    CHECK(worst <= TP_LOGIT_REL_TOL);
    CHECK(w.bad_call == 0);
    /* MoE: the router is replicated, so every rank reads back the same
     * experts, and they are the ranks=1 engine's */
    uint32_t moe = 0;
    for (uint32_t l = 0; l < p->n_layers; l++) {
        moe += dec_layer_is_moe(p, l);
    }
    for (uint32_t r = 0; r < R && ok; r++) {
        CHECK_EQ_U64(rk[r].nrouted, (uint64_t)moe * steps);
        for (uint32_t i = 0; i < steps && moe > 0; i++) {
            for (uint32_t l = 0; l < p->n_layers && l < TP_LAYERS; l++) {
                size_t sz = p->top_k * sizeof(uint32_t);
                CHECK(memcmp(rk[r].ids[i][l], rk[0].ids[i][l], sz) == 0);
                CHECK(memcmp(rk[r].ids[i][l], tp_ref.routes.ids[i][l], sz) == 0);
            }
        }
    }
    /* every phase call of every segment timed once: the profile's counts are
     * the engine's calls */
    for (uint32_t r = 0; r < R && ok && mode != DEC_PROFILE_OFF; r++) {
        vkprof_phase_stats st[VKPROF_PHASE_DEFAULT_COUNT];
        uint32_t n = 0;
        if (rk[r].prof != NULL) {
            CHECK(vkprof_snapshot(rk[r].prof, st, VKPROF_PHASE_DEFAULT_COUNT, &n, NULL) ==
                  VKPROF_OK);
        }
        uint64_t total = 0;
        for (uint32_t k = 0; k < VKPROF_PHASE_DEFAULT_COUNT; k++) {
            uint64_t cnt = 0, ns = 0;
            if (rk[r].prof != NULL) {
                cnt = st[k].count;
                ns = st[k].total_ns;
            } else {
                CHECK(dec_baseline_phase(rk[r].e, k, &cnt, &ns) == 0);
            }
            th_case = dec_phase_label(k);
            CHECK_EQ_U64(cnt, dec_costs(rk[r].e, k)->calls);
            CHECK(cnt == 0 || ns > 0);
            total += cnt;
        }
        th_case = "tp_case";
        CHECK_EQ_U64(total, (uint64_t)dec_calls_per_token(rk[r].e) * steps);
    }
    if (ok) {
        printf("  %s, %u ranks, profile %s: %u tokens equal ranks=1's; max |logit diff| %.3g of "
               "the RMS (tolerance %.0e)\n",
               preset, R, dec_profile_name(mode), steps, worst, TP_LOGIT_REL_TOL);
    }
    for (uint32_t r = 0; r < R; r++) {
        dec_destroy(rk[r].e);
        vkprof_destroy(rk[r].prof);
        if (rk[r].dev.device != VK_NULL_HANDLE) {
            vku_device_destroy(&rk[r].dev);
        }
        free(rk[r].logits);
        free(w.slot[r]);
    }
    pthread_barrier_destroy(&w.bar);
    free(ref_log);
}

static void test_tensor_parallel(void)
{
    tp_case("tiny", 2, DEC_PROFILE_OFF, TP_STEPS);
    tp_case("tiny", 4, DEC_PROFILE_OFF, TP_STEPS);
    /* several submits per token in every kind of profiling mode (fewer
     * steps: the 2-slot mode submits each of the 40 calls of a token) */
    tp_case("tiny", 2, DEC_PROFILE_GPU, 4);
    tp_case("tiny", 2, DEC_PROFILE_RING, 4);
    tp_case("tiny", 2, DEC_PROFILE_BASELINE_SHARED, 4);
    free(tp_ref.logits);
    tp_ref.logits = NULL;
    tp_ref.preset = NULL;
}

/* MoE x tensor parallelism: each expert's (and the shared expert's) hidden
 * columns split across the ranks, the router replicated. */
static void test_moe_tensor_parallel(void)
{
    tp_case("moe-tiny", 2, DEC_PROFILE_OFF, TP_STEPS);
    tp_case("moe-tiny", 2, DEC_PROFILE_RING, 4);
    free(tp_ref.logits);
    tp_ref.logits = NULL;
    tp_ref.preset = NULL;
}

static int never_reduce(void *user, dec_site site, uint32_t layer, float *data, uint32_t n)
{
    (void)user;
    (void)site;
    (void)layer;
    (void)data;
    (void)n;
    return 1;
}

static void test_tensor_parallel_errors(void)
{
    char err[512] = "";
    dec_engine *e = NULL;
    dec_hooks h = {.all_reduce = never_reduce};
    /* tiny has 8 heads and 4 kv heads: 3 ranks do not divide them */
    dec_config cfg = {.preset = dec_find_preset("tiny"), .seed = 1, .hooks = &h, .ranks = 3};
    CHECK(dec_create(&g.dev, &cfg, &e, err, sizeof err) == 2);
    CHECK(e == NULL);
    CHECK(strstr(err, "do not divide") != NULL);
    printf("  %s\n", err);
    /* 8 ranks divide the 8 heads, not the 4 kv heads */
    cfg.ranks = 8;
    CHECK(dec_create(&g.dev, &cfg, &e, err, sizeof err) == 2);
    CHECK(strstr(err, "do not divide") != NULL);
    /* a rank beyond the ranks, and no all-reduce hook */
    cfg.ranks = 2;
    cfg.rank = 2;
    CHECK(dec_create(&g.dev, &cfg, &e, err, sizeof err) == 2);
    cfg.rank = 1;
    cfg.hooks = NULL;
    CHECK(dec_create(&g.dev, &cfg, &e, err, sizeof err) == 2);
    CHECK(strstr(err, "all_reduce") != NULL);
    /* a failing all-reduce fails the step */
    cfg.hooks = &h;
    CHECK(dec_create(&g.dev, &cfg, &e, err, sizeof err) == 0);
    if (e != NULL) {
        uint32_t t = 1;
        CHECK(dec_step(e, t, &t, err, sizeof err) != 0);
        CHECK(strstr(err, "all-reduce") != NULL);
    }
    dec_destroy(e);
}

/* ---- CLI ------------------------------------------------------------------------ */

static const char *vkprof_bin;
static char dir[256];

/* Run `vkprof decode ARGS`; returns the exit status, stderr in errbuf. */
static int run_cli(const char *args, char *errbuf, size_t n)
{
    char cmd[1024], errf[300];
    snprintf(errf, sizeof errf, "%s/stderr.txt", dir);
    snprintf(cmd, sizeof cmd, "'%s' decode %s > '%s/stdout.txt' 2> '%s'", vkprof_bin, args, dir,
             errf);
    int st = system(cmd);
    errbuf[0] = '\0';
    FILE *f = fopen(errf, "r");
    if (f != NULL) {
        size_t got = fread(errbuf, 1, n - 1, f);
        errbuf[got] = '\0';
        fclose(f);
    }
    return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

static void test_cli_json(void)
{
    char err[4096], args[512], path[300];
    snprintf(path, sizeof path, "%s/out.json", dir);
    snprintf(args, sizeof args, "--preset tiny --tokens 4 --profile gpu --json '%s'", path);
    int rc = run_cli(args, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "  stderr: %s\n", err);
    }
    CHECK_EQ_U64(rc, 0);
    char *text = th_read_file(path);
    CHECK(text != NULL);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    CHECK(j != NULL);
    if (j != NULL) {
        CHECK(cJSON_IsString(cJSON_GetObjectItem(j, "preset")) &&
              strcmp(cJSON_GetObjectItem(j, "preset")->valuestring, "tiny") == 0);
        CHECK(cJSON_IsString(cJSON_GetObjectItem(j, "device")));
        CHECK(cJSON_IsString(cJSON_GetObjectItem(j, "precision")));
        CHECK(cJSON_GetObjectItem(j, "tokens")->valuedouble == 4);
        CHECK(cJSON_GetObjectItem(j, "tokens_per_s")->valuedouble > 0);
        cJSON *ids = cJSON_GetObjectItem(j, "token_ids");
        CHECK(cJSON_IsArray(ids) && cJSON_GetArraySize(ids) == 4);
        cJSON *ph = cJSON_GetObjectItem(j, "phases");
        CHECK(cJSON_IsArray(ph) && cJSON_GetArraySize(ph) == DEC_NUM_PHASES);
        const dec_preset *tiny = dec_find_preset("tiny");
        cJSON *it;
        cJSON_ArrayForEach(it, ph)
        {
            /* every phase listed; those of tiny's layers (no MoE) called and timed */
            cJSON *id = cJSON_GetObjectItem(it, "id");
            CHECK(cJSON_IsNumber(id));
            bool used =
                cJSON_IsNumber(id) && dec_preset_uses_phase(tiny, (uint32_t)id->valuedouble);
            double calls = cJSON_GetObjectItem(it, "calls_per_token")->valuedouble;
            CHECK(used ? calls > 0 : calls == 0);
            CHECK((cJSON_GetObjectItem(it, "bytes_per_token")->valuedouble > 0) == used);
            CHECK((cJSON_GetObjectItem(it, "total_ns")->valuedouble > 0) == used);
            CHECK(cJSON_IsNumber(cJSON_GetObjectItem(it, "gbps")));
        }
        cJSON *vk = cJSON_GetObjectItem(j, "vkprof");
        CHECK(cJSON_IsObject(vk));
    }
    cJSON_Delete(j);
    free(text);
    /* --profile off: JSON without the vkprof snapshot, still parses */
    snprintf(args, sizeof args, "--tokens 2 --json '%s'", path);
    CHECK_EQ_U64(run_cli(args, err, sizeof err), 0);
    text = th_read_file(path);
    j = text ? cJSON_Parse(text) : NULL;
    CHECK(j != NULL && cJSON_IsNull(cJSON_GetObjectItem(j, "vkprof")));
    cJSON_Delete(j);
    free(text);
    remove(path);
}

/* An MoE preset's JSON lists its own phases (the MoE ones too), each with
 * the calls, dispatches and bytes of an engine that ran the same tokens, and
 * the per-phase times add up to the library's total over every phase. */
static void test_cli_moe_json(void)
{
    enum { T = 4 };
    const dec_preset *p = dec_find_preset("moe-tiny");
    char err[4096], args[512], path[300];
    snprintf(path, sizeof path, "%s/moe.json", dir);
    snprintf(args, sizeof args,
             "--preset moe-tiny --tokens %u --seed %u --profile ring --json '%s'", (unsigned)T,
             SEED, path);
    int rc = run_cli(args, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "  stderr: %s\n", err);
    }
    CHECK_EQ_U64(rc, 0);
    /* the engine's own costs over the same T tokens (first token 1) */
    th_gpu_init(&g);
    dec_engine *e = make_engine_of("moe-tiny", DEC_PROFILE_OFF, NULL, NULL);
    uint32_t tok = 1;
    for (uint32_t i = 0; e != NULL && i < T; i++) {
        char serr[256] = "";
        CHECK(dec_step(e, tok, &tok, serr, sizeof serr) == 0);
    }
    char *text = th_read_file(path);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    CHECK(j != NULL);
    if (j != NULL && e != NULL) {
        uint32_t ids[DEC_MAX_PHASES];
        uint32_t n = dec_preset_phases(p, ids);
        cJSON *ph = cJSON_GetObjectItem(j, "phases");
        CHECK(cJSON_IsArray(ph) && (uint32_t)cJSON_GetArraySize(ph) == n);
        bool seen[VKPROF_PHASE_DEFAULT_COUNT] = {false};
        uint32_t moe_seen = 0;
        double pct = 0, ns_sum = 0, bytes = 0, flops = 0;
        cJSON *it;
        cJSON_ArrayForEach(it, ph)
        {
            uint32_t id = (uint32_t)cJSON_GetObjectItem(it, "id")->valuedouble;
            CHECK(id < VKPROF_PHASE_DEFAULT_COUNT && dec_preset_uses_phase(p, id));
            if (id >= VKPROF_PHASE_DEFAULT_COUNT) {
                continue;
            }
            th_case = dec_phase_label(id);
            CHECK(!seen[id]);
            seen[id] = true;
            const dec_phase_cost *c = dec_costs(e, id);
            double calls = cJSON_GetObjectItem(it, "calls_per_token")->valuedouble * T;
            CHECK(c->calls > 0);
            CHECK_EQ_U64((uint64_t)llround(calls), c->calls);
            /* ring times every token: one scope per call */
            CHECK_EQ_U64((uint64_t)cJSON_GetObjectItem(it, "count")->valuedouble, c->calls);
            CHECK_EQ_U64((uint64_t)cJSON_GetObjectItem(it, "dispatches")->valuedouble,
                         c->dispatches);
            CHECK(fabs(cJSON_GetObjectItem(it, "bytes_per_token")->valuedouble - c->bytes / T) <=
                  0.5);
            CHECK(cJSON_GetObjectItem(it, "total_ns")->valuedouble > 0);
            moe_seen += id == VKPROF_PHASE_MOE_ROUTER || id == VKPROF_PHASE_MOE_EXPERTS ||
                        id == VKPROF_PHASE_MOE_COMBINE;
            pct += cJSON_GetObjectItem(it, "percent")->valuedouble;
            ns_sum += cJSON_GetObjectItem(it, "total_ns")->valuedouble;
        }
        for (uint32_t k = 0; k < n; k++) {
            bytes += dec_costs(e, ids[k])->bytes / T;
            flops += dec_costs(e, ids[k])->flops / T;
        }
        th_case = "test_cli_moe_json";
        CHECK_EQ_U64(moe_seen, 3);
        CHECK(fabs(pct - 100.0) <= 0.001 * n); /* each percent has 3 decimals */
        /* the top-level traffic sums every phase, the MoE ones too */
        CHECK(fabs(cJSON_GetObjectItem(j, "bytes_per_token")->valuedouble - bytes) <= 0.5);
        CHECK(fabs(cJSON_GetObjectItem(j, "flops_per_token")->valuedouble - flops) <= 0.5);
        /* no phase's time is left out: the rows add up to the snapshot's
         * total over every phase the library knows */
        double lib_ns = 0;
        cJSON *vph = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "vkprof"), "phases");
        CHECK(cJSON_IsArray(vph));
        cJSON_ArrayForEach(it, vph)
        {
            lib_ns += cJSON_GetObjectItem(it, "total_ns")->valuedouble;
        }
        CHECK(lib_ns > 0 && ns_sum == lib_ns);
        /* and the text report's sum is theirs */
        char out[300];
        snprintf(out, sizeof out, "%s/stdout.txt", dir);
        char *txt = th_read_file(out);
        CHECK(txt != NULL && strstr(txt, "moe_experts") != NULL &&
              strstr(txt, "moe_router") != NULL && strstr(txt, "moe_combine") != NULL);
        const char *sum = txt ? strstr(txt, "; sum ") : NULL;
        CHECK(sum != NULL);
        if (sum != NULL) {
            double ms = strtod(sum + 6, NULL);
            CHECK(fabs(ms - lib_ns * 1e-6 / T) <= 0.0005 + 1e-9 * lib_ns);
        }
        free(txt);
    }
    cJSON_Delete(j);
    free(text);
    dec_destroy(e);
    th_gpu_finish(&g);
    remove(path);
}

/* The value of key in the protoc text of the .pftrace metadata: the
 * uint_value of the dict entry named key; -1 when missing. */
static long long pf_meta_u64(const char *text, const char *key)
{
    char name[96];
    snprintf(name, sizeof name, "name: \"%s\"", key);
    const char *at = text ? strstr(text, name) : NULL;
    if (at == NULL) {
        return -1;
    }
    /* the entry's value is printed before its name, after "dict_entries {" */
    const char *open = NULL;
    for (const char *q = text; (q = strstr(q, "dict_entries {")) != NULL && q < at; q++) {
        open = q;
    }
    const char *v = open ? strstr(open, "uint_value: ") : NULL;
    return v != NULL && v < at ? strtoll(v + 12, NULL, 10) : -1;
}

/* The integer o.key, or UINT64_MAX when it is missing or not a number. */
static uint64_t json_u64(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 ? (uint64_t)v->valuedouble : UINT64_MAX;
}

/* --profile ring-rotating --trace: metadata.gpu_sampling (JSON and .pftrace)
 * carries the rotation counters, and they agree with the run: every phase
 * call executed once, K of them stamped a token, the rest unstamped, a pass
 * of ceil(calls / K) tokens, no token with another call count. */
static void test_cli_rotating_trace(void)
{
    enum { T = 12, K = 3 };
    char err[4096], args[1024], tr[300], pf[300], js[300];
    snprintf(tr, sizeof tr, "%s/rot.json", dir);
    snprintf(pf, sizeof pf, "%s/rot.pftrace", dir);
    snprintf(js, sizeof js, "%s/rot-out.json", dir);
    snprintf(args, sizeof args,
             "--tokens %u --profile ring-rotating --rotate %u --trace '%s' --json '%s'",
             (unsigned)T, (unsigned)K, tr, js);
    setenv("VKPROF_TRACE_FORMAT", "both", 1);
    int rc = run_cli(args, err, sizeof err);
    unsetenv("VKPROF_TRACE_FORMAT");
    if (rc != 0) {
        fprintf(stderr, "  stderr: %s\n", err);
    }
    CHECK_EQ_U64(rc, 0);
    char *t = th_read_file(tr), *o = th_read_file(js);
    cJSON *jt = t ? cJSON_Parse(t) : NULL, *jo = o ? cJSON_Parse(o) : NULL;
    CHECK(jt != NULL && jo != NULL);
    const cJSON *s = cJSON_GetObjectItem(cJSON_GetObjectItem(jt, "metadata"), "gpu_sampling");
    CHECK(cJSON_IsObject(s));
    if (s != NULL && jo != NULL) {
        /* the run's calls a token, from the engine's costs in the JSON */
        double per_token = 0, lib_calls = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItem(jo, "phases"))
        {
            per_token += cJSON_GetObjectItem(it, "calls_per_token")->valuedouble;
        }
        cJSON_ArrayForEach(it, cJSON_GetObjectItem(cJSON_GetObjectItem(jo, "vkprof"), "phases"))
        {
            lib_calls += cJSON_GetObjectItem(it, "calls")->valuedouble;
        }
        uint64_t calls = (uint64_t)llround(per_token), executed = (uint64_t)T * calls;
#define SAMP_(key) json_u64(s, key)
        CHECK(calls > K);
        CHECK_EQ_U64(SAMP_("rotate_scopes"), K);
        CHECK_EQ_U64(SAMP_("calls_executed"), executed);
        CHECK_EQ_U64(SAMP_("calls_executed"), (uint64_t)lib_calls);
        CHECK_EQ_U64(SAMP_("samples"), (uint64_t)T * K); /* K stamped calls a token */
        CHECK_EQ_U64(SAMP_("calls_executed"), SAMP_("samples") + SAMP_("calls_unstamped"));
        CHECK_EQ_U64(SAMP_("scopes_collected") + SAMP_("scopes_dropped"), SAMP_("samples"));
        CHECK_EQ_U64(SAMP_("rotate_period"), (calls + K - 1) / K);
        CHECK_EQ_U64(SAMP_("rotate_changed_steps"), 0);
        /* the .pftrace metadata event says the same */
        if (system("protoc --version > /dev/null 2>&1") == 0) {
            char proto[1100], cmd[4096], src[1024], txt[300];
            snprintf(src, sizeof src, "%s", __FILE__);
            char *slash = strstr(src, "/tests/cli/decode/");
            CHECK(slash != NULL);
            if (slash != NULL) {
                *slash = '\0';
                snprintf(proto, sizeof proto, "%s/src/export", src);
                snprintf(txt, sizeof txt, "%s/rot.txt", dir);
                snprintf(cmd, sizeof cmd,
                         "protoc --decode=perfetto.protos.Trace -I '%s' '%s/perfetto_trace.proto' "
                         "< '%s' > '%s' 2>&1",
                         proto, proto, pf, txt);
                CHECK(system(cmd) == 0);
                char *pt = th_read_file(txt);
                CHECK(pt != NULL);
                static const char *keys[] = {"rotate_scopes",        "calls_executed",
                                             "calls_unstamped",      "rotate_period",
                                             "rotate_changed_steps", "samples"};
                for (uint32_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
                    th_case = keys[k];
                    long long v = pf_meta_u64(pt, keys[k]);
                    CHECK(v >= 0);
                    CHECK_EQ_U64((uint64_t)v, SAMP_(keys[k]));
                }
                th_case = "test_cli_rotating_trace";
                free(pt);
            }
        } else {
            printf("  protoc not installed: the .pftrace metadata not decoded\n");
        }
#undef SAMP_
    }
    cJSON_Delete(jt);
    cJSON_Delete(jo);
    free(t);
    free(o);
}

static void expect_fail(const char *args, int code, const char *msg)
{
    char err[4096];
    int rc = run_cli(args, err, sizeof err);
    if (rc != code || strstr(err, msg) == NULL) {
        fprintf(stderr, "  '%s': exit %d, stderr: %s\n", args, rc, err);
    }
    CHECK_EQ_U64(rc, code);
    CHECK(strstr(err, msg) != NULL);
}

static void test_cli_errors(void)
{
    expect_fail("--preset llama-70b", 2, "unknown preset 'llama-70b'");
    expect_fail("--bogus", 2, "unknown option '--bogus'");
    expect_fail("--tokens 12x", 2, "bad number for --tokens");
    expect_fail("--tokens", 2, "needs a value");
    expect_fail("--trace /nonexistent-dir/t.json --tokens 1", 1, "could not be written");
    expect_fail("--profile sometimes", 2, "unknown profile");
    expect_fail("--device no-such-device-name", 1, "no device name contains");
    expect_fail("--preset llama-8b --ctx 1048576 --tokens 1", 1, "not enough device memory");
    expect_fail("--json /nonexistent-dir/x.json --tokens 1", 1, "cannot write");
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--cli") == 0) {
        vkprof_bin = argv[2];
        snprintf(dir, sizeof dir, "/tmp/vkprof_decode_cli.%ld", (long)getpid());
        char mk[300];
        snprintf(mk, sizeof mk, "mkdir -p '%s'", dir);
        if (system(mk) != 0) {
            fprintf(stderr, "cannot create %s\n", dir);
            return 1;
        }
        RUN(test_cli_json);
        RUN(test_cli_errors);
        RUN(test_cli_moe_json);
        RUN(test_cli_rotating_trace);
        char rm[300];
        snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
        if (system(rm) != 0) {
            fprintf(stderr, "cannot remove %s\n", dir);
        }
        return th_done();
    }
    if (argc == 2 && strcmp(argv[1], "--tp") == 0) { /* ctest decode_engine_tp */
        th_gpu_init(&g);
        RUN(test_tensor_parallel);
        RUN(test_tensor_parallel_errors);
        RUN(test_moe_tensor_parallel);
        th_gpu_finish(&g);
        return th_done();
    }
    RUN(test_presets);
    RUN(test_half);
    RUN(test_route_topk);
    th_gpu_init(&g);
    RUN(test_weights_bit_identical);
    RUN(test_matches_reference);
    RUN(test_moe_matches_reference);
    RUN(test_profile_gpu);
    RUN(test_errors);
    th_gpu_finish(&g);
    return th_done();
}
