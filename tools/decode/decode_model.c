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
    return "tiny|llama-1b|llama-8b";
}

const uint32_t dec_phase_ids[DEC_NUM_PHASES] = {
    VKPROF_PHASE_EMBEDDING,   VKPROF_PHASE_NORM,       VKPROF_PHASE_QKV,
    VKPROF_PHASE_ROPE,        VKPROF_PHASE_ATTENTION,  VKPROF_PHASE_ATTN_OUTPUT,
    VKPROF_PHASE_MLP_GATE_UP, VKPROF_PHASE_ACTIVATION, VKPROF_PHASE_MLP_DOWN,
    VKPROF_PHASE_LM_HEAD,     VKPROF_PHASE_SAMPLING};

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

uint64_t dec_param_count(const dec_preset *p)
{
    dec_shapes s = dec_shapes_of(p);
    uint64_t d = p->dim, per_layer = (uint64_t)s.qkv_rows * d + d * s.q_dim + 2ull * p->ffn * d +
                                     d * p->ffn + 2 * d;
    return per_layer * p->n_layers + (uint64_t)p->vocab * d * (p->tie_embeddings ? 1 : 2) + d;
}

dec_mem_plan dec_plan_memory_tp(const dec_preset *p, uint32_t ctx, uint32_t ranks)
{
    dec_shapes s = dec_shapes_of(p);
    uint64_t R = ranks > 1 ? ranks : 1, d = p->dim;
    uint64_t q = s.q_dim / R, kv = s.kv_dim / R, qkv = q + 2 * kv, f = p->ffn / R;
    uint64_t heads = p->n_heads / R;
    dec_mem_plan m;
    uint64_t mats = qkv * d + d * q + 2ull * f * d + d * f;
    m.weights = mats * 2 * p->n_layers + (uint64_t)p->vocab * d * 2 * (p->tie_embeddings ? 1 : 2) +
                (2ull * p->n_layers + 1) * d * 4;
    m.kv_cache = 2ull * p->n_layers * ctx * kv * 4;
    m.activations = 4ull * (2 * d + qkv + heads * ctx + q + 3ull * f + p->vocab +
                            2 * DEC_ARGMAX_MAX_GROUPS + (R > 1 ? d : 0)) +
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
    } * layer;
    uint16_t *qkv0_bits;
    float *x, *xn, *qkv, *att, *ao, *gu, *h, *logits;
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
    uint32_t d = p->dim, f = p->ffn;
    r->layer = calloc(p->n_layers, sizeof *r->layer);
    r->qkv0_bits = malloc((size_t)r->s.qkv_rows * d * sizeof *r->qkv0_bits);
    bool ok = r->layer != NULL && r->qkv0_bits != NULL;
    for (uint32_t l = 0; ok && l < p->n_layers; l++) {
        uint32_t t = DEC_T_LAYER(l);
        r->layer[l].qkv = gen_matrix(seed, t + DEC_T_QKV, r->s.qkv_rows, d, dec_shift_for_fan_in(d),
                                     l == 0 ? r->qkv0_bits : NULL);
        r->layer[l].o =
            gen_matrix(seed, t + DEC_T_O, d, r->s.q_dim, dec_shift_for_fan_in(r->s.q_dim), NULL);
        r->layer[l].gu =
            gen_matrix(seed, t + DEC_T_GATE_UP, 2 * f, d, dec_shift_for_fan_in(d), NULL);
        r->layer[l].down = gen_matrix(seed, t + DEC_T_DOWN, d, f, dec_shift_for_fan_in(f), NULL);
        r->layer[l].norm_att = gen_gain(seed, t + DEC_T_NORM_ATT, d);
        r->layer[l].norm_ffn = gen_gain(seed, t + DEC_T_NORM_FFN, d);
        r->layer[l].kc = malloc((size_t)r->ctx * r->s.kv_dim * sizeof(float));
        r->layer[l].vc = malloc((size_t)r->ctx * r->s.kv_dim * sizeof(float));
        ok = r->layer[l].qkv && r->layer[l].o && r->layer[l].gu && r->layer[l].down &&
             r->layer[l].norm_att && r->layer[l].norm_ffn && r->layer[l].kc && r->layer[l].vc;
    }
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
        r->gu = malloc(2 * (size_t)f * sizeof(float));
        r->h = malloc((size_t)f * sizeof(float));
        r->logits = malloc((size_t)p->vocab * sizeof(float));
        ok = r->embed && r->lm_head && r->norm_final && r->rope && r->x && r->xn && r->qkv &&
             r->att && r->ao && r->gu && r->h && r->logits;
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
    free(r);
}

uint16_t dec_ref_qkv_half(const dec_ref *r, uint32_t idx)
{
    return r->qkv0_bits[idx];
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
        matvec(r->gu, r->layer[l].gu, r->xn, 2 * f, d, false);
        for (uint32_t i = 0; i < f; i++) {
            float g = r->gu[i];
            r->h[i] = g / (1.0f + expf(-g)) * r->gu[f + i];
        }
        matvec(r->x, r->layer[l].down, r->h, d, f, true);
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
