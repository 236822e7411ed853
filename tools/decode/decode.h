/* A Llama-shaped decode engine on Vulkan compute (one token per step,
 * greedy), with a plain-C reference of the same model. Weights are random
 * from a seed: the same hash on the GPU (shaders/decode_init.comp) and in C.
 *
 * Precision: fp16 weight matrices (two halves per uint32, unpackHalf2x16),
 * fp32 norm gains, fp32 activations, fp32 KV cache, fp32 accumulation. */
#ifndef VKPROF_DECODE_H
#define VKPROF_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vkutil.h"

#define DEC_PRECISION "fp16 weights, fp32 activations/KV cache/accumulation"

/* ---- model shape ------------------------------------------------------- */

typedef struct dec_preset {
    const char *name;
    uint32_t dim, n_layers, n_heads, n_kv_heads, head_dim, ffn, vocab;
    uint32_t default_ctx;
    float rope_theta, norm_eps;
    bool tie_embeddings; /* LM head reads the embedding table (Llama 3.2 1B) */
    /* Mixture of experts (n_experts > 0): layers first_moe.. replace the
     * dense MLP by a router over n_experts experts (each a gated MLP of width
     * expert_ffn), of which top_k run per token, plus, when shared_ffn > 0, a
     * shared expert of that width that always runs. Layers before first_moe
     * keep the dense MLP of width ffn. All 0: a dense model. */
    uint32_t n_experts, top_k, expert_ffn, shared_ffn, first_moe;
} dec_preset;

/* NULL when unknown. */
const dec_preset *dec_find_preset(const char *name);
/* "tiny|llama-1b|llama-8b|moe-tiny|olmoe-1b-7b|qwen3-30b-a3b" */
const char *dec_preset_names(void);
/* Whether layer l of p is an MoE layer (n_experts > 0 and l >= first_moe). */
bool dec_layer_is_moe(const dec_preset *p, uint32_t layer);

/* ---- weights: hash + exact fp16 ---------------------------------------- */

/* Tensor ids fed to the hash. Per layer: DEC_T_LAYER(l) + kind. */
enum {
    DEC_T_EMBED = 1,
    DEC_T_LM_HEAD = 2,
    DEC_T_NORM_FINAL = 3,
    DEC_T_QKV = 0,
    DEC_T_O = 1,
    DEC_T_GATE_UP = 2,
    DEC_T_DOWN = 3,
    DEC_T_NORM_ATT = 4,
    DEC_T_NORM_FFN = 5,
    /* MoE layers (which have no dense MLP): DEC_T_GATE_UP is every expert's
     * fused [gate; up] stacked by expert (n_experts * 2 * expert_ffn rows x
     * dim), DEC_T_DOWN every expert's down projection stacked by expert
     * (n_experts * dim rows x expert_ffn); the router (n_experts x dim); the
     * shared expert's [gate; up] (2 * shared_ffn x dim) and its down
     * (dim x shared_ffn, tensor DEC_T_SHARED_DOWN(l)). */
    DEC_T_ROUTER = 6,
    DEC_T_SHARED_GATE_UP = 7
};
#define DEC_T_LAYER(l) (16u + 8u * (uint32_t)(l))
#define DEC_T_SHARED_DOWN(l) (0x80000000u | DEC_T_LAYER(l))

uint32_t dec_hash32(uint32_t x);
uint32_t dec_tensor_key(uint32_t seed, uint32_t tensor);
/* q in [-1023, 1023] for element `idx` of a tensor with `key`. */
int32_t dec_gen_q(uint32_t key, uint32_t idx);
/* fp16 bits of q * 2^-shift (exact; shift <= 24). */
uint16_t dec_half_bits(int32_t q, uint32_t shift);
float dec_half_to_float(uint16_t h);
/* Shift so that 1023 * 2^-shift ~ 1/sqrt(fan_in): uniform in +-1/sqrt(fan_in). */
uint32_t dec_shift_for_fan_in(uint32_t fan_in);
/* The embedding table is uniform in +-8/sqrt(dim) (tiny: +-0.5; llama-1b:
 * +-0.125): large enough that the input token matters, small enough that
 * the layers' outputs dominate the residual stream, so a tied LM head does
 * not simply echo the input token. */
#define DEC_EMBED_SHIFT(dim) (dec_shift_for_fan_in(dim) - 3)
/* Norm gain value of element idx: 1 + q * 2^-13 (exact in fp32). */
float dec_norm_gain(uint32_t key, uint32_t idx);

/* ---- per-phase costs ------------------------------------------------------ */

/* The phases of a dense preset (vkprof default ids), in pipeline order. An
 * MoE preset's are dec_preset_phases' (its MoE layers' moe_router,
 * moe_experts and moe_combine instead of, or besides, the dense MLP's
 * mlp_gate_up, activation and mlp_down). */
#define DEC_NUM_PHASES 11
extern const uint32_t dec_phase_ids[DEC_NUM_PHASES];
/* Every phase the engine can use, in pipeline order. */
#define DEC_MAX_PHASES 14
extern const uint32_t dec_all_phase_ids[DEC_MAX_PHASES];
/* The phases p's tokens call, in pipeline order, into ids (room for
 * DEC_MAX_PHASES); returns their number (dense presets: DEC_NUM_PHASES, the
 * list of dec_phase_ids). */
uint32_t dec_preset_phases(const dec_preset *p, uint32_t *ids);
/* Whether p's tokens make calls of the phase (dense presets: no moe_*; a
 * preset whose every layer is MoE: no mlp_gate_up, activation, mlp_down). */
bool dec_preset_uses_phase(const dec_preset *p, uint32_t phase_id);

typedef struct dec_phase_cost {
    uint64_t calls;      /* phase scopes (kernel-family calls) */
    uint64_t dispatches; /* vkCmdDispatch count */
    double bytes;        /* bytes read + written (weights, activations, KV) */
    double flops;        /* floating-point operations (multiply-add = 2) */
} dec_phase_cost;

/* ---- memory plan ---------------------------------------------------------- */

typedef struct dec_mem_plan {
    uint64_t weights;     /* fp16 matrices + fp32 norm gains */
    uint64_t kv_cache;    /* fp32 K and V, every layer, `ctx` rows */
    uint64_t activations; /* residual, scratch, scores, logits, RoPE table */
    uint64_t total;
} dec_mem_plan;

dec_mem_plan dec_plan_memory(const dec_preset *p, uint32_t ctx);
/* What one of `ranks` tensor-parallel ranks holds (dec_config.ranks): its
 * share of the heads' weights, KV cache and scratch, its share of the MLP and
 * expert columns, the replicated embedding, norms, router and LM head, and
 * its staging buffer. ranks <= 1: dec_plan_memory. */
dec_mem_plan dec_plan_memory_tp(const dec_preset *p, uint32_t ctx, uint32_t ranks);
uint64_t dec_param_count(const dec_preset *p);

/* ---- CPU reference --------------------------------------------------------- */

typedef struct dec_ref dec_ref;
/* NULL on allocation failure. */
dec_ref *dec_ref_create(const dec_preset *p, uint32_t ctx, uint32_t seed);
/* One token at the next position; returns the argmax, logits in *logits. */
uint32_t dec_ref_step(dec_ref *r, uint32_t token, const float **logits);
/* fp16 bits of element `idx` of layer-0's fused QKV matrix (for bit checks). */
uint16_t dec_ref_qkv_half(const dec_ref *r, uint32_t idx);
/* The router's choice (the engine's top-k shader does the same on the GPU):
 * the k largest of n logits, highest first, a tie to the lower id, and
 * their weights, a softmax over the chosen logits. */
#define DEC_MAX_TOP_K 16u
#define DEC_MAX_EXPERTS 256u
void dec_route_topk(const float *logits, uint32_t n, uint32_t k, uint32_t *ids, float *weights);
/* The experts the router of MoE layer `layer` chose at the last step
 * (top_k ids, highest logit first, ties to the lower id) and their combine
 * weights (softmax over the chosen logits); NULL for a dense layer or before
 * any step. */
const uint32_t *dec_ref_routed(const dec_ref *r, uint32_t layer, const float **weights);
void dec_ref_destroy(dec_ref *r);

/* ---- GPU engine ------------------------------------------------------------- */

/*
 * Hooks for host-side instrumentation (host spans and the trace are wired
 * by the caller; every member may be NULL). Names are static strings:
 * "token", "layer", "record", "submit_wait", or a vkprof phase name in gpu
 * mode.
 *   section_begin/section_end  nest properly, on the calling thread
 *   pre_submit                 the command buffer is still recording: a place
 *                              to add the caller's own timestamps
 *   post_wait                  after the submit's fence wait
 *   step                       after each token, with its index and id
 */
/* Where a tensor-parallel engine all-reduces (dec_hooks.all_reduce). */
typedef enum dec_site {
    DEC_SITE_ATTN = 0, /* after attention's output projection */
    DEC_SITE_MLP = 1   /* after the MLP's down projection, or the MoE combine */
} dec_site;

typedef struct dec_hooks {
    void *user;
    void (*section_begin)(void *user, const char *name);
    void (*section_end)(void *user, const char *name);
    void (*pre_submit)(void *user, VkCommandBuffer cmd, const char *what);
    void (*post_wait)(void *user, const char *what);
    void (*step)(void *user, uint32_t index, uint32_t token);
    /* Tensor parallel (dec_config.ranks > 1; never called otherwise, and
     * required then). The engine has submitted the token's work up to `site`
     * of `layer` and waited for it; `data` (host memory, n floats) holds this
     * rank's partial sum, which the hook must replace by the sum over every
     * rank before it returns. Returns 0, or nonzero to fail the step. */
    int (*all_reduce)(void *user, dec_site site, uint32_t layer, float *data, uint32_t n);
    /* MoE layers: the experts the router chose for this token, as read back
     * on the host (ids[k], in the router's order, highest weight first) and
     * their combine weights. Called on every rank. */
    void (*routed)(void *user, uint32_t layer, const uint32_t *ids, const float *weights,
                   uint32_t k);
} dec_hooks;

/* Each mode is one file behind the engine's profiling seam
 * (decode_profile.h). */
typedef enum dec_profile {
    DEC_PROFILE_OFF = 0, /* one command buffer, one submit per token */
    DEC_PROFILE_GPU = 1, /* vkprof 2-slot: one submit+wait per phase call */
    /* vkprof ring: the token recorded like OFF (one command buffer, the same
     * barriers), each phase call wrapped in vkprof_cmd_begin/end after its
     * barrier; one submit + fence wait per token, then vkprof_collect().
     * The context is the caller's, created with timing_mode RING (and its
     * shared_boundaries / sample_every); the caller counts steps with
     * vkprof_step() (e.g. from the step hook), which sampling relies on. */
    DEC_PROFILE_RING = 2,
    /* "bare Vulkan": the same stamps as RING without the library
     * (decode_baseline.c). The mode owns a timestamp query pool, 2 stamps per phase call, written
     * with vkCmdWriteTimestamp2(ALL_COMMANDS) (vkCmdWriteTimestamp(BOTTOM_OF_PIPE) without
     * synchronization2) at the places RING stamps; the pool is reset from the host before each
     * token (hostQueryReset) or at the start of the command buffer; after the fence all results are
     * read with one vkGetQueryPoolResults(64_BIT | WAIT) and end - begin summed per phase. */
    DEC_PROFILE_BASELINE = 3,
    /* The same with one stamp per boundary: a phase call begins at the
     * previous one's end stamp (the barrier between counts toward the
     * second, as with the ring's shared_boundaries). */
    DEC_PROFILE_BASELINE_SHARED = 4
} dec_profile;

/* "off", "gpu", "ring", "baseline", "baseline-shared" */
const char *dec_profile_name(dec_profile p);

/* The object name of the weight-generation pipeline (dec_create's
 * dispatches, before any token); every other pipeline is named by its
 * phase's vkprof default name (dec_phase_label). */
#define DEC_INIT_PIPELINE_NAME "weights_init"
/* The queue label around each token's submits (dec_config.labels). */
#define DEC_TOKEN_LABEL "token"
/* vkprof's default name of a phase id ("qkv_proj"), NULL beyond them. */
const char *dec_phase_label(uint32_t phase_id);

typedef struct dec_config {
    const dec_preset *preset;
    uint32_t ctx; /* max context (positions); 0: preset default */
    uint32_t seed;
    dec_profile profile;
    vkprof_context prof; /* required (and active) for DEC_PROFILE_GPU; required for RING */
    const dec_hooks *hooks;
    bool keep_logits; /* copy the logits back each token (tests) */
    /* The instance has VK_EXT_debug_utils enabled: every pipeline gets an
     * object name, its phase's (one pipeline per phase, whatever the mode). */
    bool debug_utils;
    /* Needs debug_utils: each phase call is also a command-buffer label region
     * of its phase's name, and each token's submits a queue label region
     * DEC_TOKEN_LABEL. Commands and results are otherwise the same. */
    bool labels;
    /* Tensor parallelism: this engine is rank `rank` of `ranks` (0 and 1: the
     * whole model). It holds its share of the attention heads (n_heads and
     * n_kv_heads divide by ranks) and of the hidden columns of the MLP, of
     * every expert and of the shared expert (each width divides by ranks);
     * the embedding, norms, router and LM head are replicated. Each token
     * then all-reduces twice per layer through hooks->all_reduce. */
    uint32_t rank, ranks;
    /* Profiling scopes of DEC_PROFILE_RING: false, one per phase call (its
     * dispatches and the barriers between them); true, one per dispatch, as
     * the vkprof layer scopes them: a call's scope ends right after each of
     * its dispatches and the next begins before the next one (with shared
     * boundaries, at that end stamp), so the stamps sit where the layer's do.
     * Only with DEC_PROFILE_OFF and DEC_PROFILE_RING (dec_create and
     * dec_reconfigure refuse the other modes) and at ranks <= 1. With a
     * rotating context the rotation is over the dispatches (`vkprof decode`
     * does not offer that: its rotation report counts phase calls). */
    bool scope_dispatches;
} dec_config;

typedef struct dec_engine dec_engine;

/* Checks memory and limits, allocates, builds pipelines, generates the
 * weights on the GPU. Returns 0, or 1 with a message in err (2 for a
 * configuration the device cannot run, e.g. not enough memory). */
int dec_create(vku_device *dev, const dec_config *cfg, dec_engine **out, char *err,
               size_t err_size);
/* One token at the next position: returns 0 and the argmax in *next. */
int dec_step(dec_engine *e, uint32_t token, uint32_t *next, char *err, size_t err_size);
/* Switch an existing engine (weights kept) to another profiling mode,
 * context and hooks (NULL: none); the position goes back to 0 and the costs
 * and baseline sums are zeroed. Returns 0, or 1 with a message in err. */
int dec_reconfigure(dec_engine *e, dec_profile profile, vkprof_context prof, const dec_hooks *hooks,
                    char *err, size_t err_size);
/* Back to position 0 (the KV rows are rewritten before they are read), with
 * the costs and baseline sums zeroed. */
void dec_reset(dec_engine *e);
/* Phase calls per token: 9 x layers + 4 (an MoE layer's router, experts and
 * combine replace a dense layer's gate/up, activation and down). */
uint32_t dec_calls_per_token(const dec_engine *e);
/* Baseline modes: scopes stamped and the sum of their (end - begin), masked
 * with timestampValidBits, converted to ns once (vkprof_ticks_to_ns), per
 * phase id since the last reset. Returns 0, or 1 for an unknown id. */
int dec_baseline_phase(const dec_engine *e, uint32_t phase_id, uint64_t *count, uint64_t *ns);
/* Baseline modes: timestamp writes recorded since the last reset. */
uint64_t dec_baseline_stamps(const dec_engine *e);
/* Logits of the last step (keep_logits), else NULL. */
const float *dec_logits(const dec_engine *e);
uint32_t dec_position(const dec_engine *e);
uint32_t dec_context(const dec_engine *e);
/* Costs summed over every step so far, per phase id (index = vkprof id). */
const dec_phase_cost *dec_costs(const dec_engine *e, uint32_t phase_id);
/* Read back `n` uint32 words of layer-0's fused QKV weights (tests). */
int dec_read_qkv_words(dec_engine *e, uint32_t *out, uint32_t n);
/* Device memory allocated, and the heap it came from. */
uint64_t dec_allocated_bytes(const dec_engine *e);
void dec_destroy(dec_engine *e);

#endif
