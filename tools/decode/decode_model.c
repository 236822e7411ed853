/* Presets, the weight hash, exact fp16, the memory plan and the CPU reference
 * of the decode model (see decode.h and docs/decode.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "decode_internal.h"

static const dec_preset presets[] = {
    {"tiny", 256, 4, 8, 4, 32, 768, 4096, 256, 10000.0f, 1e-5f, false, 0, 0, 0, 0, 0},
    {"llama-1b", 2048, 16, 32, 8, 64, 8192, 128256, 512, 500000.0f, 1e-5f, true, 0, 0, 0, 0, 0},
    {"llama-8b", 4096, 32, 32, 8, 128, 14336, 128256, 512, 500000.0f, 1e-5f, false, 0, 0, 0, 0, 0},
    /* CI on lavapipe: a dense layer 0, then MoE layers of 8 experts, top 2,
     * and a shared expert */
    {"moe-tiny", 256, 3, 8, 4, 32, 768, 4096, 256, 10000.0f, 1e-5f, false, 8, 2, 256, 256, 1},
    /* OLMoE-1B-7B: every layer MoE, 64 experts, top 8, no shared expert
     * (ffn is unused) */
    {"olmoe-1b-7b", 2048, 16, 16, 16, 128, 1024, 50304, 512, 10000.0f, 1e-5f, false, 64, 8, 1024, 0,
     0},
    /* Qwen3-30B-A3B: 128 experts, top 8, 4 kv heads (without Qwen3's q/k norms) */
    {"qwen3-30b-a3b", 2048, 48, 32, 4, 128, 768, 151936, 512, 1000000.0f, 1e-6f, false, 128, 8, 768,
     0, 0},
};

const dec_preset *dec_find_preset(const char *name)
{
    for (size_t i = 0; name != NULL && i < sizeof presets / sizeof presets[0]; i++) {
        if (strcmp(presets[i].name, name) == 0) {
            return &presets[i];
        }
    }
    return NULL;
}

const char *dec_preset_names(void)
{
    return "tiny|llama-1b|llama-8b|moe-tiny|olmoe-1b-7b|qwen3-30b-a3b";
}

bool dec_layer_is_moe(const dec_preset *p, uint32_t layer)
{
    return p->n_experts > 0 && layer >= p->first_moe;
}

const uint32_t dec_phase_ids[DEC_NUM_PHASES] = {
    VKPROF_PHASE_EMBEDDING,   VKPROF_PHASE_NORM,       VKPROF_PHASE_QKV,
    VKPROF_PHASE_ROPE,        VKPROF_PHASE_ATTENTION,  VKPROF_PHASE_ATTN_OUTPUT,
    VKPROF_PHASE_MLP_GATE_UP, VKPROF_PHASE_ACTIVATION, VKPROF_PHASE_MLP_DOWN,
    VKPROF_PHASE_LM_HEAD,     VKPROF_PHASE_SAMPLING};

const uint32_t dec_all_phase_ids[DEC_MAX_PHASES] = {
    VKPROF_PHASE_EMBEDDING,   VKPROF_PHASE_NORM,        VKPROF_PHASE_QKV,
    VKPROF_PHASE_ROPE,        VKPROF_PHASE_ATTENTION,   VKPROF_PHASE_ATTN_OUTPUT,
    VKPROF_PHASE_MLP_GATE_UP, VKPROF_PHASE_ACTIVATION,  VKPROF_PHASE_MLP_DOWN,
    VKPROF_PHASE_MOE_ROUTER,  VKPROF_PHASE_MOE_EXPERTS, VKPROF_PHASE_MOE_COMBINE,
    VKPROF_PHASE_LM_HEAD,     VKPROF_PHASE_SAMPLING};

uint32_t dec_preset_phases(const dec_preset *p, uint32_t *ids)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < DEC_MAX_PHASES; k++) {
        if (dec_preset_uses_phase(p, dec_all_phase_ids[k])) {
            ids[n++] = dec_all_phase_ids[k];
        }
    }
    return n;
}

/* Layers with a dense MLP, and MoE layers. */
static uint32_t moe_layers(const dec_preset *p)
{
    if (p->n_experts == 0) {
        return 0;
    }
    return p->first_moe < p->n_layers ? p->n_layers - p->first_moe : 0;
}

bool dec_preset_uses_phase(const dec_preset *p, uint32_t phase_id)
{
    uint32_t moe = moe_layers(p), dense = p->n_layers - moe;
    switch (phase_id) {
    case VKPROF_PHASE_MLP_GATE_UP:
    case VKPROF_PHASE_ACTIVATION:
    case VKPROF_PHASE_MLP_DOWN: return dense > 0;
    case VKPROF_PHASE_MOE_ROUTER:
    case VKPROF_PHASE_MOE_EXPERTS:
    case VKPROF_PHASE_MOE_COMBINE: return moe > 0;
    default:
        for (uint32_t k = 0; k < DEC_MAX_PHASES; k++) {
            if (dec_all_phase_ids[k] == phase_id) {
                return true;
            }
        }
        return false;
    }
}

/* ---- hash and fp16 ------------------------------------------------------- */

uint32_t dec_hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

uint32_t dec_tensor_key(uint32_t seed, uint32_t tensor)
{
    return dec_hash32(dec_hash32(seed) ^ (tensor * 0x9e3779b9u));
}

int32_t dec_gen_q(uint32_t key, uint32_t idx)
{
    return (int32_t)(dec_hash32(idx ^ key) % 2047u) - 1023;
}

uint16_t dec_half_bits(int32_t q, uint32_t shift)
{
    uint32_t s = q < 0 ? 0x8000u : 0u;
    uint32_t m = (uint32_t)(q < 0 ? -q : q);
    if (m == 0) {
        return (uint16_t)s;
    }
    int e = 31 - __builtin_clz(m);
    int be = e - (int)shift + 15;
    if (be >= 1) {
        uint32_t mant = (m << (10 - e)) & 0x3ffu;
        return (uint16_t)(s | ((uint32_t)be << 10) | mant);
    }
    return (uint16_t)(s | (m << (24u - shift)));
}

float dec_half_to_float(uint16_t h)
{
    uint32_t s = (h >> 15) & 1u, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    float v;
    if (e == 0) {
        v = ldexpf((float)m, -24);
    } else if (e == 31) {
        v = m ? NAN : INFINITY;
    } else {
        v = ldexpf((float)(m | 0x400u), (int)e - 25);
    }
    return s ? -v : v;
}

uint32_t dec_shift_for_fan_in(uint32_t fan_in)
{
    long s = lround(log2(1023.0 * sqrt((double)fan_in)));
    return s < 1 ? 1u : s > 24 ? 24u : (uint32_t)s;
}

float dec_norm_gain(uint32_t key, uint32_t idx)
{
    return 1.0f + ldexpf((float)dec_gen_q(key, idx), -13);
}

void dec_rope_table(const dec_preset *p, uint32_t ctx, float *out)
{
    uint32_t hp = p->head_dim / 2;
    for (uint32_t pos = 0; pos < ctx; pos++) {
        for (uint32_t i = 0; i < hp; i++) {
            double freq = pow((double)p->rope_theta, -2.0 * (double)i / (double)p->head_dim);
            double a = (double)pos * freq;
            out[2 * ((size_t)pos * hp + i)] = (float)cos(a);
            out[2 * ((size_t)pos * hp + i) + 1] = (float)sin(a);
        }
    }
}

/* ---- shapes and memory ------------------------------------------------------ */

dec_shapes dec_shapes_of(const dec_preset *p)
{
    dec_shapes s;
    s.q_dim = p->n_heads * p->head_dim;
    s.kv_dim = p->n_kv_heads * p->head_dim;
    s.qkv_rows = s.q_dim + 2 * s.kv_dim;
    return s;
}

/* Weight elements of one layer's MLP held by one of R ranks: dense, or an
 * MoE layer's router (replicated), experts and shared expert. */
static uint64_t mlp_elems(const dec_preset *p, bool moe, uint64_t R)
{
    uint64_t d = p->dim;
    if (!moe) {
        return 3ull * (p->ffn / R) * d;
    }
    return (uint64_t)p->n_experts * d + (uint64_t)p->n_experts * 3 * (p->expert_ffn / R) * d +
           3ull * (p->shared_ffn / R) * d;
}

uint64_t dec_param_count(const dec_preset *p)
{
    dec_shapes s = dec_shapes_of(p);
    uint64_t d = p->dim, n = 0;
    for (uint32_t l = 0; l < p->n_layers; l++) {
        n += (uint64_t)s.qkv_rows * d + d * s.q_dim + mlp_elems(p, dec_layer_is_moe(p, l), 1) +
             2 * d;
    }
    return n + (uint64_t)p->vocab * d * (p->tie_embeddings ? 1 : 2) + d;
}

/* The most experts' [gate; up] slots one token holds (top_k experts, and the
 * shared expert), per rank: the gate/up scratch is the larger of this and a
 * dense layer's. */
static uint64_t gu_scratch(const dec_preset *p, uint64_t R)
{
    uint64_t dense = 2ull * (p->ffn / R);
    uint64_t moe =
        p->n_experts > 0 ? 2ull * (p->top_k * (p->expert_ffn / R) + p->shared_ffn / R) : 0;
    return dense > moe ? dense : moe;
}

dec_mem_plan dec_plan_memory_tp(const dec_preset *p, uint32_t ctx, uint32_t ranks)
{
    dec_shapes s = dec_shapes_of(p);
    uint64_t R = ranks > 1 ? ranks : 1, d = p->dim;
    uint64_t q = s.q_dim / R, kv = s.kv_dim / R, qkv = q + 2 * kv, f = p->ffn / R;
    uint64_t heads = p->n_heads / R;
    dec_mem_plan m;
    uint64_t elems = 0;
    for (uint32_t l = 0; l < p->n_layers; l++) {
        elems += qkv * d + d * q + mlp_elems(p, dec_layer_is_moe(p, l), R);
    }
    (void)f;
    m.weights = elems * 2 + (uint64_t)p->vocab * d * 2 * (p->tie_embeddings ? 1 : 2) +
                (2ull * p->n_layers + 1) * d * 4;
    m.kv_cache = 2ull * p->n_layers * ctx * kv * 4;
    /* router logits, routed ids + weights, the experts' outputs */
    uint64_t moe = p->n_experts > 0 ? p->n_experts + 2ull * 16 + (p->top_k + 1ull) * d : 0;
    uint64_t gu = gu_scratch(p, R);
    m.activations = 4ull * (2 * d + qkv + heads * ctx + q + gu + gu / 2 + p->vocab +
                            2 * DEC_ARGMAX_MAX_GROUPS + (R > 1 ? d : 0) + moe) +
                    (uint64_t)ctx * p->head_dim * 4;
    m.total = m.weights + m.kv_cache + m.activations;
    return m;
}

dec_mem_plan dec_plan_memory(const dec_preset *p, uint32_t ctx)
{
    return dec_plan_memory_tp(p, ctx, 1);
}

/* ---- CPU reference -------------------------------------------------------------- */

struct dec_ref {
    dec_preset p;
    dec_shapes s;
    uint32_t ctx, pos;
    float *embed, *lm_head, *norm_final, *rope;
    struct {
        float *qkv, *o, *gu, *down, *norm_att, *norm_ffn, *kc, *vc;
        /* MoE layers: gu and down are every expert's, stacked by expert */
        float *router, *sgu, *sdown;
        bool routed;
        uint32_t ids[DEC_MAX_TOP_K];
        float w[DEC_MAX_TOP_K];
    } * layer;
    uint16_t *qkv0_bits;
    float *x, *xn, *qkv, *att, *ao, *gu, *h, *logits, *rlog, *eo;
};

static float *gen_matrix(uint32_t seed, uint32_t tensor, uint32_t rows, uint32_t cols,
                         uint32_t shift, uint16_t *bits)
{
    size_t n = (size_t)rows * cols;
    float *w = malloc(n * sizeof *w);
    if (w == NULL) {
        return NULL;
    }
    uint32_t key = dec_tensor_key(seed, tensor);
    for (size_t i = 0; i < n; i++) {
        uint16_t hb = dec_half_bits(dec_gen_q(key, (uint32_t)i), shift);
        if (bits != NULL) {
            bits[i] = hb;
        }
        w[i] = dec_half_to_float(hb);
    }
    return w;
}

static float *gen_gain(uint32_t seed, uint32_t tensor, uint32_t n)
{
    float *g = malloc((size_t)n * sizeof *g);
    if (g != NULL) {
        uint32_t key = dec_tensor_key(seed, tensor);
        for (uint32_t i = 0; i < n; i++) {
            g[i] = dec_norm_gain(key, i);
        }
    }
    return g;
}

dec_ref *dec_ref_create(const dec_preset *p, uint32_t ctx, uint32_t seed)
{
    dec_ref *r = calloc(1, sizeof *r);
    if (r == NULL) {
        return NULL;
    }
    r->p = *p;
    r->s = dec_shapes_of(p);
    r->ctx = ctx ? ctx : p->default_ctx;
    uint32_t d = p->dim, f = p->ffn, E = p->n_experts, ef = p->expert_ffn, sf = p->shared_ffn;
    r->layer = calloc(p->n_layers, sizeof *r->layer);
    r->qkv0_bits = malloc((size_t)r->s.qkv_rows * d * sizeof *r->qkv0_bits);
    bool ok = r->layer != NULL && r->qkv0_bits != NULL && p->top_k <= DEC_MAX_TOP_K;
    for (uint32_t l = 0; ok && l < p->n_layers; l++) {
        uint32_t t = DEC_T_LAYER(l);
        r->layer[l].qkv = gen_matrix(seed, t + DEC_T_QKV, r->s.qkv_rows, d, dec_shift_for_fan_in(d),
                                     l == 0 ? r->qkv0_bits : NULL);
        r->layer[l].o =
            gen_matrix(seed, t + DEC_T_O, d, r->s.q_dim, dec_shift_for_fan_in(r->s.q_dim), NULL);
        bool moe = dec_layer_is_moe(p, l);
        if (!moe) {
            r->layer[l].gu =
                gen_matrix(seed, t + DEC_T_GATE_UP, 2 * f, d, dec_shift_for_fan_in(d), NULL);
            r->layer[l].down =
                gen_matrix(seed, t + DEC_T_DOWN, d, f, dec_shift_for_fan_in(f), NULL);
        } else {
            r->layer[l].router =
                gen_matrix(seed, t + DEC_T_ROUTER, E, d, dec_shift_for_fan_in(d), NULL);
            r->layer[l].gu =
                gen_matrix(seed, t + DEC_T_GATE_UP, E * 2 * ef, d, dec_shift_for_fan_in(d), NULL);
            r->layer[l].down =
                gen_matrix(seed, t + DEC_T_DOWN, E * d, ef, dec_shift_for_fan_in(ef), NULL);
            ok = r->layer[l].router != NULL;
            if (ok && sf > 0) {
                r->layer[l].sgu = gen_matrix(seed, t + DEC_T_SHARED_GATE_UP, 2 * sf, d,
                                             dec_shift_for_fan_in(d), NULL);
                r->layer[l].sdown =
                    gen_matrix(seed, DEC_T_SHARED_DOWN(l), d, sf, dec_shift_for_fan_in(sf), NULL);
                ok = r->layer[l].sgu && r->layer[l].sdown;
            }
        }
        r->layer[l].norm_att = gen_gain(seed, t + DEC_T_NORM_ATT, d);
        r->layer[l].norm_ffn = gen_gain(seed, t + DEC_T_NORM_FFN, d);
        r->layer[l].kc = malloc((size_t)r->ctx * r->s.kv_dim * sizeof(float));
        r->layer[l].vc = malloc((size_t)r->ctx * r->s.kv_dim * sizeof(float));
        ok = ok && r->layer[l].qkv && r->layer[l].o && r->layer[l].gu && r->layer[l].down &&
             r->layer[l].norm_att && r->layer[l].norm_ffn && r->layer[l].kc && r->layer[l].vc;
    }
    /* scratch: the widest MLP of a layer, dense or one expert */
    uint32_t wmax = f > ef ? f : ef;
    wmax = wmax > sf ? wmax : sf;
    if (ok) {
        r->embed = gen_matrix(seed, DEC_T_EMBED, p->vocab, d, DEC_EMBED_SHIFT(d), NULL);
        r->lm_head = p->tie_embeddings ? r->embed
                                       : gen_matrix(seed, DEC_T_LM_HEAD, p->vocab, d,
                                                    dec_shift_for_fan_in(d), NULL);
        r->norm_final = gen_gain(seed, DEC_T_NORM_FINAL, d);
        r->rope = malloc((size_t)r->ctx * p->head_dim * sizeof(float));
        r->x = malloc(d * sizeof(float));
        r->xn = malloc(d * sizeof(float));
        r->qkv = malloc(r->s.qkv_rows * sizeof(float));
        r->att = malloc((size_t)r->ctx * sizeof(float));
        r->ao = malloc(r->s.q_dim * sizeof(float));
        r->gu = malloc(2 * (size_t)wmax * sizeof(float));
        r->h = malloc((size_t)wmax * sizeof(float));
        r->logits = malloc((size_t)p->vocab * sizeof(float));
        r->rlog = malloc((E ? E : 1) * sizeof(float));
        r->eo = malloc(((size_t)p->top_k + 1) * d * sizeof(float));
        ok = r->embed && r->lm_head && r->norm_final && r->rope && r->x && r->xn && r->qkv &&
             r->att && r->ao && r->gu && r->h && r->logits && r->rlog && r->eo;
    }
    if (!ok) {
        dec_ref_destroy(r);
        return NULL;
    }
    dec_rope_table(p, r->ctx, r->rope);
    return r;
}

void dec_ref_destroy(dec_ref *r)
{
    if (r == NULL) {
        return;
    }
    for (uint32_t l = 0; r->layer != NULL && l < r->p.n_layers; l++) {
        free(r->layer[l].qkv);
        free(r->layer[l].o);
        free(r->layer[l].gu);
        free(r->layer[l].down);
        free(r->layer[l].norm_att);
        free(r->layer[l].norm_ffn);
        free(r->layer[l].kc);
        free(r->layer[l].vc);
        free(r->layer[l].router);
        free(r->layer[l].sgu);
        free(r->layer[l].sdown);
    }
    free(r->layer);
    if (r->lm_head != r->embed) {
        free(r->lm_head);
    }
    free(r->embed);
    free(r->norm_final);
    free(r->rope);
    free(r->qkv0_bits);
    free(r->x);
    free(r->xn);
    free(r->qkv);
    free(r->att);
    free(r->ao);
    free(r->gu);
    free(r->h);
    free(r->logits);
    free(r->rlog);
    free(r->eo);
    free(r);
}

uint16_t dec_ref_qkv_half(const dec_ref *r, uint32_t idx)
{
    return r->qkv0_bits[idx];
}

const uint32_t *dec_ref_routed(const dec_ref *r, uint32_t layer, const float **weights)
{
    if (layer >= r->p.n_layers || !r->layer[layer].routed) {
        return NULL;
    }
    if (weights != NULL) {
        *weights = r->layer[layer].w;
    }
    return r->layer[layer].ids;
}

void dec_route_topk(const float *logits, uint32_t n, uint32_t k, uint32_t *ids, float *weights)
{
    for (uint32_t j = 0; j < k; j++) {
        uint32_t best = UINT32_MAX;
        for (uint32_t e = 0; e < n; e++) {
            bool taken = false;
            for (uint32_t i = 0; i < j; i++) {
                taken = taken || ids[i] == e;
            }
            /* strictly greater: the lower id wins a tie */
            if (!taken && (best == UINT32_MAX || logits[e] > logits[best])) {
                best = e;
            }
        }
        ids[j] = best;
    }
    float m = logits[ids[0]], sum = 0.0f;
    for (uint32_t j = 0; j < k; j++) {
        weights[j] = expf(logits[ids[j]] - m);
        sum += weights[j];
    }
    for (uint32_t j = 0; j < k; j++) {
        weights[j] = weights[j] / sum;
    }
}

static void rmsnorm(float *o, const float *x, const float *g, uint32_t n, float eps)
{
    float ss = 0.0f;
    for (uint32_t i = 0; i < n; i++) {
        ss += x[i] * x[i];
    }
    float scale = 1.0f / sqrtf(ss / (float)n + eps);
    for (uint32_t i = 0; i < n; i++) {
        o[i] = (x[i] * scale) * g[i];
    }
}

/* y (=|+=) W x, W rows x cols row-major */
static void matvec(float *y, const float *w, const float *x, uint32_t rows, uint32_t cols, bool add)
{
    for (uint32_t r = 0; r < rows; r++) {
        const float *row = w + (size_t)r * cols;
        float acc = 0.0f;
        for (uint32_t c = 0; c < cols; c++) {
            acc += row[c] * x[c];
        }
        y[r] = add ? y[r] + acc : acc;
    }
}

/* out (=|+=) down . (silu(gate) * up), [gate; up] = gu . xn, width w */
static void mlp(dec_ref *r, const float *gu, const float *down, uint32_t w, float *out, bool add)
{
    uint32_t d = r->p.dim;
    matvec(r->gu, gu, r->xn, 2 * w, d, false);
    for (uint32_t i = 0; i < w; i++) {
        float g = r->gu[i];
        r->h[i] = g / (1.0f + expf(-g)) * r->gu[w + i];
    }
    matvec(out, down, r->h, d, w, add);
}

uint32_t dec_ref_step(dec_ref *r, uint32_t token, const float **logits)
{
    const dec_preset *p = &r->p;
    uint32_t d = p->dim, hd = p->head_dim, hp = hd / 2, f = p->ffn, pos = r->pos;
    uint32_t q_dim = r->s.q_dim, kv_dim = r->s.kv_dim, group = p->n_heads / p->n_kv_heads;
    memcpy(r->x, r->embed + (size_t)token * d, d * sizeof(float));
    for (uint32_t l = 0; l < p->n_layers; l++) {
        rmsnorm(r->xn, r->x, r->layer[l].norm_att, d, p->norm_eps);
        matvec(r->qkv, r->layer[l].qkv, r->xn, r->s.qkv_rows, d, false);
        float *kc = r->layer[l].kc + (size_t)pos * kv_dim,
              *vc = r->layer[l].vc + (size_t)pos * kv_dim;
        for (uint32_t h = 0; h < p->n_heads + p->n_kv_heads; h++) {
            for (uint32_t i = 0; i < hp; i++) {
                const float *cs = r->rope + 2 * ((size_t)pos * hp + i);
                float *v = r->qkv + (size_t)h * hd + 2 * i;
                float a = v[0], b = v[1];
                float ra = a * cs[0] - b * cs[1], rb = a * cs[1] + b * cs[0];
                if (h < p->n_heads) {
                    v[0] = ra;
                    v[1] = rb;
                } else {
                    size_t k = (size_t)(h - p->n_heads) * hd + 2 * i;
                    kc[k] = ra;
                    kc[k + 1] = rb;
                }
            }
        }
        memcpy(vc, r->qkv + q_dim + kv_dim, kv_dim * sizeof(float));
        float scale = 1.0f / sqrtf((float)hd);
        for (uint32_t h = 0; h < p->n_heads; h++) {
            const float *q = r->qkv + (size_t)h * hd;
            uint32_t kvh = h / group;
            float m = -INFINITY;
            for (uint32_t t = 0; t <= pos; t++) {
                const float *k = r->layer[l].kc + (size_t)t * kv_dim + (size_t)kvh * hd;
                float s = 0.0f;
                for (uint32_t i = 0; i < hd; i++) {
                    s += q[i] * k[i];
                }
                r->att[t] = s * scale;
                m = fmaxf(m, r->att[t]);
            }
            float sum = 0.0f;
            for (uint32_t t = 0; t <= pos; t++) {
                r->att[t] = expf(r->att[t] - m);
                sum += r->att[t];
            }
            for (uint32_t t = 0; t <= pos; t++) {
                r->att[t] *= 1.0f / sum;
            }
            float *o = r->ao + (size_t)h * hd;
            for (uint32_t i = 0; i < hd; i++) {
                float acc = 0.0f;
                for (uint32_t t = 0; t <= pos; t++) {
                    acc += r->att[t] * r->layer[l].vc[(size_t)t * kv_dim + (size_t)kvh * hd + i];
                }
                o[i] = acc;
            }
        }
        matvec(r->x, r->layer[l].o, r->ao, d, q_dim, true);
        rmsnorm(r->xn, r->x, r->layer[l].norm_ffn, d, p->norm_eps);
        if (!dec_layer_is_moe(p, l)) {
            mlp(r, r->layer[l].gu, r->layer[l].down, f, r->x, true);
            continue;
        }
        /* router, top-k, the chosen experts (and the shared one), combine */
        uint32_t k = p->top_k, ef = p->expert_ffn, sf = p->shared_ffn;
        matvec(r->rlog, r->layer[l].router, r->xn, p->n_experts, d, false);
        dec_route_topk(r->rlog, p->n_experts, k, r->layer[l].ids, r->layer[l].w);
        r->layer[l].routed = true;
        for (uint32_t j = 0; j < k; j++) {
            size_t e = r->layer[l].ids[j];
            mlp(r, r->layer[l].gu + e * 2 * ef * d, r->layer[l].down + e * d * ef, ef,
                r->eo + (size_t)j * d, false);
        }
        if (sf > 0) {
            mlp(r, r->layer[l].sgu, r->layer[l].sdown, sf, r->eo + (size_t)k * d, false);
        }
        for (uint32_t i = 0; i < d; i++) {
            float acc = r->x[i];
            for (uint32_t j = 0; j < k; j++) {
                acc += r->layer[l].w[j] * r->eo[(size_t)j * d + i];
            }
            if (sf > 0) {
                acc += r->eo[(size_t)k * d + i];
            }
            r->x[i] = acc;
        }
    }
    rmsnorm(r->xn, r->x, r->norm_final, d, p->norm_eps);
    matvec(r->logits, r->lm_head, r->xn, p->vocab, d, false);
    uint32_t best = 0;
    for (uint32_t i = 1; i < p->vocab; i++) {
        if (r->logits[i] > r->logits[best]) {
            best = i;
        }
    }
    r->pos++;
    if (logits != NULL) {
        *logits = r->logits;
    }
    return best;
}
