/* The decode engine on Vulkan compute: buffers, pipelines, weight
 * generation, and one token per dec_step (see decode.h, docs/decode.md).
 * A token is recorded the same way in every profiling mode; the mode is
 * called at fixed points through the seam of decode_profile.h. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "decode_internal.h"
#include "decode_profile.h"

#include "decode_argmax1_spv.h"
#include "decode_argmax2_spv.h"
#include "decode_attn_scores_spv.h"
#include "decode_attn_wsum_spv.h"
#include "decode_embed_spv.h"
#include "decode_init_spv.h"
#include "decode_matvec_spv.h"
#include "decode_moe_combine_spv.h"
#include "decode_moe_topk_spv.h"
#include "decode_rmsnorm_spv.h"
#include "decode_rope_spv.h"
#include "decode_silu_mul_spv.h"
#include "decode_softmax_spv.h"

#define MAXC 64u     /* most buffers one matrix is split into */
#define MV_ROWS 4u   /* rows per matvec workgroup (decode_matvec.comp) */
#define PC_WORDS 12u /* push-constant words every pipeline declares */
#define MAXSEG 520u  /* most row blocks of one matrix with their own global rows */

enum {
    P_INIT,
    P_EMBED,
    P_NORM,
    P_MATVEC,
    P_ROPE,
    P_SCORES,
    P_SOFTMAX,
    P_WSUM,
    P_SILU,
    P_ARGMAX1,
    P_ARGMAX2,
    P_TOPK,
    P_COMBINE,
    P_COUNT
};

static const struct {
    const uint32_t *code;
    size_t size;
    uint32_t nbind;
} shader_info[P_COUNT] = {
    [P_INIT] = {decode_init_spv, sizeof decode_init_spv, 1},
    [P_EMBED] = {decode_embed_spv, sizeof decode_embed_spv, 2},
    [P_NORM] = {decode_rmsnorm_spv, sizeof decode_rmsnorm_spv, 3},
    [P_MATVEC] = {decode_matvec_spv, sizeof decode_matvec_spv, 3},
    [P_ROPE] = {decode_rope_spv, sizeof decode_rope_spv, 4},
    [P_SCORES] = {decode_attn_scores_spv, sizeof decode_attn_scores_spv, 3},
    [P_SOFTMAX] = {decode_softmax_spv, sizeof decode_softmax_spv, 1},
    [P_WSUM] = {decode_attn_wsum_spv, sizeof decode_attn_wsum_spv, 3},
    [P_SILU] = {decode_silu_mul_spv, sizeof decode_silu_mul_spv, 2},
    [P_ARGMAX1] = {decode_argmax1_spv, sizeof decode_argmax1_spv, 2},
    [P_ARGMAX2] = {decode_argmax2_spv, sizeof decode_argmax2_spv, 2},
    [P_TOPK] = {decode_moe_topk_spv, sizeof decode_moe_topk_spv, 2},
    [P_COMBINE] = {decode_moe_combine_spv, sizeof decode_moe_combine_spv, 3},
};

/* The kernels: one VkPipeline each, from its shader's module, serving one
 * phase. Where the instance has VK_EXT_debug_utils (dec_config.debug_utils)
 * each pipeline gets the vkprof name of its phase as its object name, so a
 * consumer of debug-utils names (the vkprof layer) names every dispatch by
 * the phase the in-app profiler would: one shader serving several phases
 * (matvec: five) is several pipelines. Phase -1: the weight generation, named
 * DEC_INIT_PIPELINE_NAME. */
enum {
    K_INIT,
    K_EMBED,
    K_NORM,
    K_QKV,
    K_ROPE,
    K_SCORES,
    K_SOFTMAX,
    K_WSUM,
    K_ATTN_OUT,
    K_GATE_UP,
    K_SILU,
    K_DOWN,
    K_LM_HEAD,
    K_ARGMAX1,
    K_ARGMAX2,
    K_ROUTER,
    K_TOPK,
    K_EXPERT_GU,
    K_EXPERT_ACT,
    K_EXPERT_DOWN,
    K_COMBINE,
    K_COUNT
};

static const struct {
    uint32_t shader;
    int32_t phase;
} kernel_info[K_COUNT] = {
    [K_INIT] = {P_INIT, -1},
    [K_EMBED] = {P_EMBED, VKPROF_PHASE_EMBEDDING},
    [K_NORM] = {P_NORM, VKPROF_PHASE_NORM},
    [K_QKV] = {P_MATVEC, VKPROF_PHASE_QKV},
    [K_ROPE] = {P_ROPE, VKPROF_PHASE_ROPE},
    [K_SCORES] = {P_SCORES, VKPROF_PHASE_ATTENTION},
    [K_SOFTMAX] = {P_SOFTMAX, VKPROF_PHASE_ATTENTION},
    [K_WSUM] = {P_WSUM, VKPROF_PHASE_ATTENTION},
    [K_ATTN_OUT] = {P_MATVEC, VKPROF_PHASE_ATTN_OUTPUT},
    [K_GATE_UP] = {P_MATVEC, VKPROF_PHASE_MLP_GATE_UP},
    [K_SILU] = {P_SILU, VKPROF_PHASE_ACTIVATION},
    [K_DOWN] = {P_MATVEC, VKPROF_PHASE_MLP_DOWN},
    [K_LM_HEAD] = {P_MATVEC, VKPROF_PHASE_LM_HEAD},
    [K_ARGMAX1] = {P_ARGMAX1, VKPROF_PHASE_SAMPLING},
    [K_ARGMAX2] = {P_ARGMAX2, VKPROF_PHASE_SAMPLING},
    [K_ROUTER] = {P_MATVEC, VKPROF_PHASE_MOE_ROUTER},
    [K_TOPK] = {P_TOPK, VKPROF_PHASE_MOE_ROUTER},
    [K_EXPERT_GU] = {P_MATVEC, VKPROF_PHASE_MOE_EXPERTS},
    [K_EXPERT_ACT] = {P_SILU, VKPROF_PHASE_MOE_EXPERTS},
    [K_EXPERT_DOWN] = {P_MATVEC, VKPROF_PHASE_MOE_EXPERTS},
    [K_COMBINE] = {P_COMBINE, VKPROF_PHASE_MOE_COMBINE},
};

/* vkprof's default phase names, by id (the names a context registers). */
static const char *const default_phase_names[VKPROF_PHASE_DEFAULT_COUNT] = {
#define VKPROF_X_(id, name) [id] = name,
    VKPROF_DEFAULT_PHASES(VKPROF_X_)
#undef VKPROF_X_
};

const char *dec_phase_label(uint32_t phase_id)
{
    return phase_id < VKPROF_PHASE_DEFAULT_COUNT ? default_phase_names[phase_id] : NULL;
}

static const char *kernel_name(uint32_t k)
{
    int32_t ph = kernel_info[k].phase;
    return ph < 0 ? DEC_INIT_PIPELINE_NAME : default_phase_names[ph];
}

typedef struct dbuf {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize size;
    void *map;
} dbuf;

/* A row block of a matrix: local rows [lrow, lrow + n) are the tensor's
 * global rows [grow, grow + n) (a tensor-parallel rank's rows). */
typedef struct dseg {
    uint32_t lrow, n, grow;
} dseg;

/* A weight matrix as this engine holds it: `rows` x `cols` (local), split by
 * rows into buffers. Its weights are the tensor's global elements (global
 * row per segment) * gcols + coff + column: ranks=1 has one segment, the
 * identity, gcols = cols and coff = 0. */
typedef struct dmat {
    uint32_t rows, cols, shift, tensor;
    uint32_t nchunks, rows_per_chunk;
    uint32_t gcols, coff, nseg;
    dseg seg[MAXSEG];
    dbuf chunk[MAXC];
} dmat;

/* A shader's layout and module; its pipelines are per kernel. */
typedef struct dpipe {
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkShaderModule mod;
} dpipe;

/* A layer. MoE layers: gu and down hold every expert's (stacked by expert,
 * this rank's columns of each), down_set writing the experts' outputs
 * (eo) instead of x; router, sgu/sdown (the shared expert) and the top-k
 * and combine sets are theirs alone. */
typedef struct dlayer {
    bool moe;
    dmat qkv, o, gu, down, router, sgu, sdown;
    dbuf kc, vc;
    VkDescriptorSet norm_att, norm_ffn, rope, scores, softmax, wsum, act, topk, combine;
    VkDescriptorSet qkv_set[MAXC], o_set[MAXC], gu_set[MAXC], down_set[MAXC];
    VkDescriptorSet router_set[MAXC], sgu_set[MAXC], sdown_set[MAXC];
} dlayer;

/* This rank's share of the model (tensor parallelism; ranks = 1: all). */
typedef struct dshard {
    uint32_t rank, ranks;
    uint32_t heads, kv_heads; /* attention heads held */
    uint32_t q_dim, kv_dim, qkv_rows;
    uint32_t ffn;        /* dense MLP columns held */
    uint32_t expert_ffn; /* columns of each expert held */
    uint32_t shared_ffn; /* columns of the shared expert held */
} dshard;

struct dec_engine {
    vku_device *dev;
    dec_config cfg;
    dec_preset p;
    dec_shapes s;
    dshard sh;
    uint32_t ctx, pos;
    uint32_t max_groups[3];
    VkDeviceSize max_range, max_chunk;
    uint32_t mem_type_device, mem_type_host;
    dpipe pipe[P_COUNT];
    VkPipeline kpipe[K_COUNT];
    VkDescriptorPool pool;
    dmat embed, lm_own;
    dmat *lm;
    dbuf norms, rope, x, xn, qkv, att, ao, gu, h, logits, part, result, logits_host;
    dbuf stage; /* ranks > 1: the residual's partial sum, host-visible */
    /* MoE: router logits; routed ids [0, k) and weight bits [k, 2k),
     * host-visible (read back each MoE layer); the experts' outputs, top_k
     * slots of dim then the shared expert's */
    dbuf rlog, route, eo;
    dlayer *layers;
    VkDescriptorSet embed_set[MAXC], lm_set[MAXC], norm_final, argmax1, argmax2;
    uint32_t argmax_groups;
    uint64_t gu_words; /* gate/up scratch: a dense layer's, or top_k experts' + shared */
    dec_phase_cost cost[VKPROF_PHASE_DEFAULT_COUNT];
    uint64_t allocated;
    dec_prof prof; /* the profiling mode and its state (decode_profile.h) */
    /* per-step recording state */
    VkCommandBuffer cmd;
    uint32_t calls_in_cmd;
    bool section_open;
    /* cfg.scope_dispatches: the open phase call (call_phase), and its
     * dispatches recorded so far (each one's scope ended after it) */
    bool call_open;
    uint32_t call_phase, call_dispatches;
    bool upload_pending; /* submit_per_call: the reduced residual to copy in */
    /* A mid-token host read-back (host_read_set): copied, if src, after the
     * call's end stamp, then a host barrier, and submitted in host section
     * `section`. */
    struct {
        bool pending;
        const dbuf *src, *dst;
        VkDeviceSize size;
        const char *section;
        uint32_t layer; /* MoE: the layer whose routing is read (route_read) */
    } tail;
    /* MoE: the experts the last read-back routed to, and their weights */
    uint32_t routed_ids[DEC_MAX_TOP_K];
    float routed_w[DEC_MAX_TOP_K];
    int fail;
    char *err;
    size_t err_size;
};

static void set_err(dec_engine *e, const char *fmt, ...)
{
    if (e->fail) {
        return; /* keep the first message */
    }
    e->fail = 1;
    if (e->err != NULL && e->err_size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->err, e->err_size, fmt, ap);
        va_end(ap);
    }
}

/* A failure reported by the profiling mode. */
static void prof_check(dec_engine *e, int rc)
{
    if (rc != 0) {
        set_err(e, "%s", e->prof.msg);
    }
}

static const dec_hooks *hooks(const dec_engine *e)
{
    static const dec_hooks none = {0};
    return e->cfg.hooks != NULL ? e->cfg.hooks : &none;
}

static void hook_begin(const dec_engine *e, const char *name)
{
    if (hooks(e)->section_begin) {
        hooks(e)->section_begin(hooks(e)->user, name);
    }
}

static void hook_end(const dec_engine *e, const char *name)
{
    if (hooks(e)->section_end) {
        hooks(e)->section_end(hooks(e)->user, name);
    }
}

/* ---- memory and buffers ------------------------------------------------------ */

static uint32_t find_type(const VkPhysicalDeviceMemoryProperties *m, uint32_t bits,
                          VkMemoryPropertyFlags want)
{
    for (uint32_t i = 0; i < m->memoryTypeCount; i++) {
        if ((bits & (1u << i)) && (m->memoryTypes[i].propertyFlags & want) == want) {
            return i;
        }
    }
    return UINT32_MAX;
}

static VkResult buf_create(dec_engine *e, VkDeviceSize size, bool host, dbuf *out)
{
    VkDevice dv = e->dev->device;
    memset(out, 0, sizeof *out);
    out->size = size;
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = size,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = vkCreateBuffer(dv, &bci, NULL, &out->buf);
    if (r != VK_SUCCESS) {
        return r;
    }
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dv, out->buf, &req);
    const VkPhysicalDeviceMemoryProperties *m = &e->dev->mem;
    uint32_t type =
        host ? find_type(m, req.memoryTypeBits,
                         VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
             : find_type(m, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (type == UINT32_MAX && !host) {
        type = find_type(m, req.memoryTypeBits, 0);
    }
    if (type == UINT32_MAX) {
        return VK_ERROR_FEATURE_NOT_PRESENT;
    }
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = req.size,
                               .memoryTypeIndex = type};
    r = vkAllocateMemory(dv, &ai, NULL, &out->mem);
    if (r == VK_SUCCESS) {
        e->allocated += req.size;
        r = vkBindBufferMemory(dv, out->buf, out->mem, 0);
    }
    if (r == VK_SUCCESS && host) {
        r = vkMapMemory(dv, out->mem, 0, VK_WHOLE_SIZE, 0, &out->map);
    }
    return r;
}

static void buf_destroy(dec_engine *e, dbuf *b)
{
    if (b->buf != VK_NULL_HANDLE) {
        vkDestroyBuffer(e->dev->device, b->buf, NULL);
    }
    if (b->mem != VK_NULL_HANDLE) {
        vkFreeMemory(e->dev->device, b->mem, NULL);
    }
    memset(b, 0, sizeof *b);
}

static void mat_plan(dec_engine *e, dmat *m, uint32_t rows, uint32_t cols, uint32_t tensor,
                     uint32_t shift)
{
    m->rows = rows;
    m->cols = cols;
    m->tensor = tensor;
    m->shift = shift;
    m->gcols = cols;
    m->coff = 0;
    m->nseg = 1;
    m->seg[0] = (dseg){0, rows, 0};
    VkDeviceSize row_bytes = (VkDeviceSize)cols * 2;
    VkDeviceSize rpc = e->max_chunk / row_bytes;
    if (rpc >= MV_ROWS) {
        rpc -= rpc % MV_ROWS;
    }
    if (rpc > rows) {
        rpc = rows;
    }
    m->rows_per_chunk = (uint32_t)rpc;
    m->nchunks = rpc == 0 ? 0 : (uint32_t)((rows + rpc - 1) / rpc);
    if (rpc == 0 || m->nchunks > MAXC) {
        set_err(e,
                "a %ux%u fp16 matrix needs more than %u buffers of at most %llu bytes "
                "(maxStorageBufferRange / maxMemoryAllocationSize)",
                rows, cols, MAXC, (unsigned long long)e->max_chunk);
    }
    if ((uint64_t)rows * cols >= (UINT64_C(1) << 32)) {
        set_err(e, "a %ux%u matrix has 2^32 elements or more (the weight hash index is 32-bit)",
                rows, cols);
    }
}

/* A rank's slice of a global tensor of `grows` x `gcols`: its local columns
 * start at global column coff, and its local rows are the segments added with
 * mat_rows (none: every row, the identity). */
static void mat_slice(dec_engine *e, dmat *m, uint32_t gcols, uint32_t coff, uint64_t grows)
{
    m->gcols = gcols;
    m->coff = coff;
    m->nseg = 0;
    if (grows * gcols >= (UINT64_C(1) << 32)) {
        set_err(e, "a %llux%u tensor has 2^32 elements or more (the weight hash index is 32-bit)",
                (unsigned long long)grows, gcols);
    }
}

/* Local rows [lrow, lrow + n) are global rows [grow, grow + n). */
static void mat_rows(dec_engine *e, dmat *m, uint32_t lrow, uint32_t n, uint32_t grow)
{
    if (m->nseg >= MAXSEG) {
        set_err(e, "a matrix has more than %u row blocks", MAXSEG);
        return;
    }
    m->seg[m->nseg++] = (dseg){lrow, n, grow};
}

static uint32_t mat_chunk_rows(const dmat *m, uint32_t c)
{
    uint32_t first = c * m->rows_per_chunk;
    uint32_t n = m->rows - first;
    return n < m->rows_per_chunk ? n : m->rows_per_chunk;
}

static void mat_alloc(dec_engine *e, dmat *m)
{
    for (uint32_t c = 0; c < m->nchunks && !e->fail; c++) {
        VkResult r =
            buf_create(e, (VkDeviceSize)mat_chunk_rows(m, c) * m->cols * 2, false, &m->chunk[c]);
        if (r != VK_SUCCESS) {
            set_err(e, "allocating a weight buffer of %llu bytes failed: %s",
                    (unsigned long long)m->chunk[c].size, vku_result_name(r));
        }
    }
}

static void mat_destroy(dec_engine *e, dmat *m)
{
    for (uint32_t c = 0; c < MAXC; c++) {
        buf_destroy(e, &m->chunk[c]);
    }
}

/* ---- pipelines and descriptor sets ------------------------------------------ */

static VkResult pipe_create(dec_engine *e, uint32_t which)
{
    VkDevice dv = e->dev->device;
    dpipe *p = &e->pipe[which];
    VkDescriptorSetLayoutBinding b[4];
    for (uint32_t i = 0; i < shader_info[which].nbind; i++) {
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i,
                                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1,
                                              .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    }
    VkDescriptorSetLayoutCreateInfo dci = {.sType =
                                               VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = shader_info[which].nbind,
                                           .pBindings = b};
    VkResult r = vkCreateDescriptorSetLayout(dv, &dci, NULL, &p->dsl);
    VkPushConstantRange pcr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
                               .offset = 0,
                               .size = PC_WORDS * sizeof(uint32_t)};
    if (r == VK_SUCCESS) {
        VkPipelineLayoutCreateInfo lci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                          .setLayoutCount = 1,
                                          .pSetLayouts = &p->dsl,
                                          .pushConstantRangeCount = 1,
                                          .pPushConstantRanges = &pcr};
        r = vkCreatePipelineLayout(dv, &lci, NULL, &p->layout);
    }
    if (r == VK_SUCCESS) {
        VkShaderModuleCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                        .codeSize = shader_info[which].size,
                                        .pCode = shader_info[which].code};
        r = vkCreateShaderModule(dv, &sci, NULL, &p->mod);
    }
    return r;
}

/* Kernel k's pipeline from its shader's module, named by its phase where the
 * instance has debug utils. */
static VkResult kernel_create(dec_engine *e, uint32_t k)
{
    const dpipe *p = &e->pipe[kernel_info[k].shader];
    VkComputePipelineCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = p->mod,
                  .pName = "main"},
        .layout = p->layout};
    VkResult r =
        vkCreateComputePipelines(e->dev->device, VK_NULL_HANDLE, 1, &pci, NULL, &e->kpipe[k]);
    if (r == VK_SUCCESS && e->cfg.debug_utils) {
        VkDebugUtilsObjectNameInfoEXT ni = {.sType =
                                                VK_STRUCTURE_TYPE_DEBUG_UTILS_OBJECT_NAME_INFO_EXT,
                                            .objectType = VK_OBJECT_TYPE_PIPELINE,
                                            .objectHandle = (uint64_t)e->kpipe[k],
                                            .pObjectName = kernel_name(k)};
        r = vkSetDebugUtilsObjectNameEXT(e->dev->device, &ni);
    }
    return r;
}

typedef struct bind {
    const dbuf *b;
    VkDeviceSize off, range; /* range 0: the rest of the buffer */
} bind;

static VkDescriptorSet make_set(dec_engine *e, uint32_t which, const bind *bs)
{
    if (e->fail) {
        return VK_NULL_HANDLE;
    }
    VkDescriptorSet set = VK_NULL_HANDLE;
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = e->pool,
                                      .descriptorSetCount = 1,
                                      .pSetLayouts = &e->pipe[which].dsl};
    VkResult r = vkAllocateDescriptorSets(e->dev->device, &ai, &set);
    if (r != VK_SUCCESS) {
        set_err(e, "vkAllocateDescriptorSets failed: %s", vku_result_name(r));
        return VK_NULL_HANDLE;
    }
    VkDescriptorBufferInfo bi[4];
    VkWriteDescriptorSet w[4];
    uint32_t n = shader_info[which].nbind;
    for (uint32_t i = 0; i < n; i++) {
        bi[i] = (VkDescriptorBufferInfo){.buffer = bs[i].b->buf,
                                         .offset = bs[i].off,
                                         .range =
                                             bs[i].range ? bs[i].range : bs[i].b->size - bs[i].off};
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = set,
                                      .dstBinding = i,
                                      .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &bi[i]};
    }
    vkUpdateDescriptorSets(e->dev->device, n, w, 0, NULL);
    return set;
}

/* One dispatch of kernel k (its shader's layout, its own pipeline). */
static void dispatch(dec_engine *e, uint32_t k, VkDescriptorSet set, const uint32_t *pc,
                     uint32_t gx, uint32_t gy)
{
    uint32_t words[PC_WORDS] = {0};
    memcpy(words, pc, PC_WORDS * sizeof(uint32_t));
    VkPipelineLayout layout = e->pipe[kernel_info[k].shader].layout;
    /* one scope per dispatch: the call's first began in phase_begin, each
     * later one begins here (after the barrier before it, as the layer's) */
    bool per_dispatch = e->cfg.scope_dispatches && e->call_open && !e->fail;
    if (per_dispatch && e->call_dispatches > 0) {
        prof_check(e, dec_prof_phase_begin(&e->prof, e->cmd, e->call_phase));
    }
    vkCmdBindPipeline(e->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, e->kpipe[k]);
    vkCmdBindDescriptorSets(e->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, NULL);
    vkCmdPushConstants(e->cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof words, words);
    vkCmdDispatch(e->cmd, gx, gy, 1);
    if (per_dispatch && !e->fail) {
        prof_check(e, dec_prof_phase_end(&e->prof, e->cmd, e->call_phase));
        e->call_dispatches++;
    }
}

/* Everything written before (earlier commands and earlier submits, shaders
 * and transfers) is visible to everything after. */
static void full_barrier(VkCommandBuffer cmd)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
    VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vkCmdPipelineBarrier(cmd, st, st, 0, 1, &mb, 0, NULL, 0, NULL);
}

static void copy_buf(VkCommandBuffer cmd, const dbuf *src, const dbuf *dst, VkDeviceSize size)
{
    VkBufferCopy bc = {.size = size};
    vkCmdCopyBuffer(cmd, src->buf, dst->buf, 1, &bc);
}

static void host_barrier(VkCommandBuffer cmd)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask =
                              VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* ---- creation --------------------------------------------------------------------- */

static uint32_t ceil_div(uint64_t a, uint64_t b)
{
    return (uint32_t)((a + b - 1) / b);
}

static bool is_pow2(uint32_t v)
{
    return v != 0 && (v & (v - 1)) == 0;
}

static double gib(uint64_t b)
{
    return (double)b / (1024.0 * 1024.0 * 1024.0);
}

/* Largest device-local heap and what is left of its budget (VK_EXT_memory_budget). */
static void device_heap(dec_engine *e, uint64_t *size, uint64_t *avail, bool *has_budget)
{
    const VkPhysicalDeviceMemoryProperties *m = &e->dev->mem;
    uint32_t heap = UINT32_MAX;
    for (uint32_t i = 0; i < m->memoryTypeCount; i++) {
        uint32_t hi = m->memoryTypes[i].heapIndex;
        if ((m->memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) &&
            (heap == UINT32_MAX || m->memoryHeaps[hi].size > m->memoryHeaps[heap].size)) {
            heap = hi;
        }
    }
    if (heap == UINT32_MAX) {
        heap = 0;
    }
    *size = m->memoryHeaps[heap].size;
    *avail = *size;
    *has_budget = false;
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(e->dev->phys, NULL, &n, NULL);
    VkExtensionProperties *ext = calloc(n ? n : 1, sizeof *ext);
    if (ext != NULL && vkEnumerateDeviceExtensionProperties(e->dev->phys, NULL, &n, ext) >= 0) {
        for (uint32_t i = 0; i < n; i++) {
            *has_budget = *has_budget ||
                          strcmp(ext[i].extensionName, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME) == 0;
        }
    }
    free(ext);
    if (*has_budget) {
        VkPhysicalDeviceMemoryBudgetPropertiesEXT bp = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
        VkPhysicalDeviceMemoryProperties2 mp = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2, .pNext = &bp};
        vkGetPhysicalDeviceMemoryProperties2(e->dev->phys, &mp);
        uint64_t b = bp.heapBudget[heap], u = bp.heapUsage[heap];
        *avail = b > u ? b - u : 0;
    }
}

static void check_limits(dec_engine *e)
{
    const dec_preset *p = &e->p;
    const dshard *sh = &e->sh;
    uint32_t g = p->head_dim / 4;
    if (p->dim % 8 || sh->ffn % 8 || sh->q_dim % 8 || p->head_dim % 8 || !is_pow2(g) || g > 128 ||
        p->n_kv_heads == 0 || p->n_heads % p->n_kv_heads) {
        set_err(e, "unsupported shape: dim, ffn and n_heads*head_dim (per rank) must be multiples "
                   "of 8, head_dim/4 a power of two <= 128, n_heads a multiple of n_kv_heads");
        return;
    }
    if (p->n_experts > 0 &&
        (p->n_experts > DEC_MAX_EXPERTS || p->top_k == 0 || p->top_k > DEC_MAX_TOP_K ||
         p->top_k > p->n_experts || sh->expert_ffn == 0 || sh->expert_ffn % 8 ||
         sh->shared_ffn % 8 || p->first_moe > p->n_layers)) {
        set_err(e,
                "unsupported MoE shape: at most %u experts, top_k 1..%u and at most the "
                "experts, expert and shared widths (per rank) multiples of 8",
                DEC_MAX_EXPERTS, DEC_MAX_TOP_K);
        return;
    }
    struct {
        const char *what;
        uint64_t bytes;
    } ranges[] = {{"one layer's K (or V) cache", (uint64_t)e->ctx * sh->kv_dim * 4},
                  {"the attention scores", (uint64_t)sh->heads * e->ctx * 4},
                  {"the RoPE table", (uint64_t)e->ctx * p->head_dim * 4},
                  {"the logits", (uint64_t)p->vocab * 4},
                  {"the gate/up activations", e->gu_words * 4},
                  {"the experts' outputs", ((uint64_t)p->top_k + 1) * p->dim * 4}};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        if (ranges[i].bytes > e->max_range) {
            set_err(e,
                    "%s needs a %llu-byte binding, above maxStorageBufferRange (%llu); "
                    "use a shorter --ctx",
                    ranges[i].what, (unsigned long long)ranges[i].bytes,
                    (unsigned long long)e->max_range);
            return;
        }
    }
    uint32_t ppw = 128 / g;
    if (ceil_div(e->ctx, ppw) > e->max_groups[0] || sh->heads > e->max_groups[1] ||
        ceil_div(sh->ffn, 256) > e->max_groups[0] || e->argmax_groups > e->max_groups[0] ||
        e->argmax_groups > DEC_ARGMAX_MAX_GROUPS ||
        ceil_div((uint64_t)sh->q_dim + 2 * sh->kv_dim, 256) > e->max_groups[0]) {
        set_err(e, "the shape needs more workgroups than maxComputeWorkGroupCount (%u, %u, %u)",
                e->max_groups[0], e->max_groups[1], e->max_groups[2]);
    }
}

/* Every chunk's weights, one dispatch per (chunk, row segment) overlap, each
 * element from its global index (decode_init.comp). */
static void init_matrix(dec_engine *e, const dmat *m)
{
    for (uint32_t c = 0; c < m->nchunks && !e->fail; c++) {
        bind b[1] = {{&m->chunk[c], 0, 0}};
        VkDescriptorSet set = make_set(e, P_INIT, b);
        uint32_t first = c * m->rows_per_chunk, last = first + mat_chunk_rows(m, c);
        for (uint32_t s = 0; s < m->nseg && !e->fail; s++) {
            const dseg *g = &m->seg[s];
            uint32_t a = g->lrow > first ? g->lrow : first;
            uint32_t z = g->lrow + g->n < last ? g->lrow + g->n : last;
            if (a >= z) {
                continue;
            }
            uint32_t words = (z - a) * (m->cols / 2);
            uint32_t pc[PC_WORDS] = {
                words, (a - first) * (m->cols / 2), m->tensor, e->cfg.seed, m->shift,
                0,     g->grow + (a - g->lrow),     m->cols,   m->gcols,    m->coff};
            uint32_t groups = ceil_div(words, 256);
            dispatch(e, K_INIT, set, pc, groups < 4096 ? groups : 4096, 1);
        }
    }
}

static void init_gain(dec_engine *e, uint32_t index, uint32_t tensor)
{
    VkDeviceSize bytes = (VkDeviceSize)e->p.dim * 4;
    bind b[1] = {{&e->norms, index * bytes, bytes}};
    VkDescriptorSet set = make_set(e, P_INIT, b);
    uint32_t pc[PC_WORDS] = {e->p.dim, 0, tensor, e->cfg.seed, 0, 1, 0, 1, 1, 0};
    if (!e->fail) {
        dispatch(e, K_INIT, set, pc, ceil_div(e->p.dim, 256), 1);
    }
}

static void submit(dec_engine *e, const char *what)
{
    if (e->fail) {
        return;
    }
    if (hooks(e)->pre_submit) {
        hooks(e)->pre_submit(hooks(e)->user, e->cmd, what);
    }
    dec_prof_pre_submit(&e->prof, e->cmd);
    VkResult r = vku_submit_wait(e->dev);
    if (hooks(e)->post_wait) {
        hooks(e)->post_wait(hooks(e)->user, what);
    }
    if (r != VK_SUCCESS) {
        set_err(e, "submit (%s) failed: %s", what, vku_result_name(r));
    }
}

static void begin_cmd(dec_engine *e)
{
    if (e->fail) {
        return;
    }
    VkResult r = vku_begin(e->dev);
    if (r != VK_SUCCESS) {
        set_err(e, "vkBeginCommandBuffer failed: %s", vku_result_name(r));
        return;
    }
    e->cmd = e->dev->cmd;
    full_barrier(e->cmd);
}

static void generate_weights(dec_engine *e)
{
    /* RoPE table through a staging buffer */
    dbuf staging;
    VkResult r = buf_create(e, e->rope.size, true, &staging);
    if (r != VK_SUCCESS) {
        set_err(e, "allocating the staging buffer failed: %s", vku_result_name(r));
        buf_destroy(e, &staging);
        return;
    }
    dec_rope_table(&e->p, e->ctx, staging.map);
    begin_cmd(e);
    if (!e->fail) {
        VkBufferCopy bc = {.size = e->rope.size};
        vkCmdCopyBuffer(e->cmd, staging.buf, e->rope.buf, 1, &bc);
        init_matrix(e, &e->embed);
        if (e->lm != &e->embed) {
            init_matrix(e, e->lm);
        }
        init_gain(e, 2 * e->p.n_layers, DEC_T_NORM_FINAL);
        submit(e, "init");
    }
    for (uint32_t l = 0; l < e->p.n_layers && !e->fail; l++) {
        begin_cmd(e);
        dlayer *L = &e->layers[l];
        init_matrix(e, &L->qkv);
        init_matrix(e, &L->o);
        init_matrix(e, &L->gu);
        init_matrix(e, &L->down);
        init_matrix(e, &L->router);
        init_matrix(e, &L->sgu);
        init_matrix(e, &L->sdown);
        init_gain(e, 2 * l, DEC_T_LAYER(l) + DEC_T_NORM_ATT);
        init_gain(e, 2 * l + 1, DEC_T_LAYER(l) + DEC_T_NORM_FFN);
        submit(e, "init");
    }
    buf_destroy(e, &staging);
}

static void build_sets(dec_engine *e)
{
    const dec_preset *p = &e->p;
    VkDeviceSize gb = (VkDeviceSize)p->dim * 4;
    for (uint32_t c = 0; c < e->embed.nchunks; c++) {
        bind b[2] = {{&e->embed.chunk[c], 0, 0}, {&e->x, 0, 0}};
        e->embed_set[c] = make_set(e, P_EMBED, b);
    }
    for (uint32_t c = 0; c < e->lm->nchunks; c++) {
        bind b[3] = {{&e->lm->chunk[c], 0, 0}, {&e->xn, 0, 0}, {&e->logits, 0, 0}};
        e->lm_set[c] = make_set(e, P_MATVEC, b);
    }
    {
        bind b[3] = {{&e->x, 0, 0}, {&e->norms, 2 * p->n_layers * gb, gb}, {&e->xn, 0, 0}};
        e->norm_final = make_set(e, P_NORM, b);
        bind a1[2] = {{&e->logits, 0, 0}, {&e->part, 0, 0}};
        e->argmax1 = make_set(e, P_ARGMAX1, a1);
        bind a2[2] = {{&e->part, 0, 0}, {&e->result, 0, 0}};
        e->argmax2 = make_set(e, P_ARGMAX2, a2);
    }
    for (uint32_t l = 0; l < p->n_layers; l++) {
        dlayer *L = &e->layers[l];
        bind na[3] = {{&e->x, 0, 0}, {&e->norms, 2 * l * gb, gb}, {&e->xn, 0, 0}};
        L->norm_att = make_set(e, P_NORM, na);
        bind nf[3] = {{&e->x, 0, 0}, {&e->norms, (2 * l + 1) * gb, gb}, {&e->xn, 0, 0}};
        L->norm_ffn = make_set(e, P_NORM, nf);
        for (uint32_t c = 0; c < L->qkv.nchunks; c++) {
            bind b[3] = {{&L->qkv.chunk[c], 0, 0}, {&e->xn, 0, 0}, {&e->qkv, 0, 0}};
            L->qkv_set[c] = make_set(e, P_MATVEC, b);
        }
        for (uint32_t c = 0; c < L->o.nchunks; c++) {
            bind b[3] = {{&L->o.chunk[c], 0, 0}, {&e->ao, 0, 0}, {&e->x, 0, 0}};
            L->o_set[c] = make_set(e, P_MATVEC, b);
        }
        for (uint32_t c = 0; c < L->gu.nchunks; c++) {
            bind b[3] = {{&L->gu.chunk[c], 0, 0}, {&e->xn, 0, 0}, {&e->gu, 0, 0}};
            L->gu_set[c] = make_set(e, P_MATVEC, b);
        }
        for (uint32_t c = 0; c < L->down.nchunks; c++) {
            bind b[3] = {{&L->down.chunk[c], 0, 0}, {&e->h, 0, 0}, {L->moe ? &e->eo : &e->x, 0, 0}};
            L->down_set[c] = make_set(e, P_MATVEC, b);
        }
        for (uint32_t c = 0; c < L->router.nchunks; c++) {
            bind b[3] = {{&L->router.chunk[c], 0, 0}, {&e->xn, 0, 0}, {&e->rlog, 0, 0}};
            L->router_set[c] = make_set(e, P_MATVEC, b);
        }
        for (uint32_t c = 0; c < L->sgu.nchunks; c++) {
            bind b[3] = {{&L->sgu.chunk[c], 0, 0}, {&e->xn, 0, 0}, {&e->gu, 0, 0}};
            L->sgu_set[c] = make_set(e, P_MATVEC, b);
        }
        for (uint32_t c = 0; c < L->sdown.nchunks; c++) {
            bind b[3] = {{&L->sdown.chunk[c], 0, 0}, {&e->h, 0, 0}, {&e->eo, 0, 0}};
            L->sdown_set[c] = make_set(e, P_MATVEC, b);
        }
        if (L->moe) {
            bind tb[2] = {{&e->rlog, 0, 0}, {&e->route, 0, 0}};
            L->topk = make_set(e, P_TOPK, tb);
            bind cb[3] = {{&e->x, 0, 0}, {&e->eo, 0, 0}, {&e->route, 0, 0}};
            L->combine = make_set(e, P_COMBINE, cb);
        }
        bind rb[4] = {{&e->qkv, 0, 0}, {&L->kc, 0, 0}, {&L->vc, 0, 0}, {&e->rope, 0, 0}};
        L->rope = make_set(e, P_ROPE, rb);
        bind sb[3] = {{&e->qkv, 0, 0}, {&L->kc, 0, 0}, {&e->att, 0, 0}};
        L->scores = make_set(e, P_SCORES, sb);
        bind xb[1] = {{&e->att, 0, 0}};
        L->softmax = make_set(e, P_SOFTMAX, xb);
        bind wb[3] = {{&e->att, 0, 0}, {&L->vc, 0, 0}, {&e->ao, 0, 0}};
        L->wsum = make_set(e, P_WSUM, wb);
        bind ab[2] = {{&e->gu, 0, 0}, {&e->h, 0, 0}};
        L->act = make_set(e, P_SILU, ab);
    }
}

/* An MoE layer's matrices: the router (replicated), every expert's [gate; up]
 * and down stacked by expert, the shared expert's; a rank holds its columns
 * of each expert (rows of gate and of up, columns of down). */
static void plan_moe(dec_engine *e, dlayer *L, uint32_t l)
{
    const dec_preset *p = &e->p;
    const dshard *sh = &e->sh;
    uint32_t d = p->dim, t = DEC_T_LAYER(l), E = p->n_experts, r = sh->rank;
    uint32_t ef = sh->expert_ffn, sf = sh->shared_ffn;
    mat_plan(e, &L->router, E, d, t + DEC_T_ROUTER, dec_shift_for_fan_in(d));
    mat_plan(e, &L->gu, E * 2 * ef, d, t + DEC_T_GATE_UP, dec_shift_for_fan_in(d));
    mat_plan(e, &L->down, E * d, ef, t + DEC_T_DOWN, dec_shift_for_fan_in(p->expert_ffn));
    if (sf > 0) {
        mat_plan(e, &L->sgu, 2 * sf, d, t + DEC_T_SHARED_GATE_UP, dec_shift_for_fan_in(d));
        mat_plan(e, &L->sdown, d, sf, DEC_T_SHARED_DOWN(l), dec_shift_for_fan_in(p->shared_ffn));
    }
    if (sh->ranks <= 1) {
        return;
    }
    mat_slice(e, &L->gu, d, 0, (uint64_t)E * 2 * p->expert_ffn);
    for (uint32_t x = 0; x < E; x++) {
        mat_rows(e, &L->gu, x * 2 * ef, ef, x * 2 * p->expert_ffn + r * ef);
        mat_rows(e, &L->gu, x * 2 * ef + ef, ef, x * 2 * p->expert_ffn + p->expert_ffn + r * ef);
    }
    mat_slice(e, &L->down, p->expert_ffn, r * ef, (uint64_t)E * d);
    mat_rows(e, &L->down, 0, E * d, 0);
    if (sf > 0) {
        mat_slice(e, &L->sgu, d, 0, 2ull * p->shared_ffn);
        mat_rows(e, &L->sgu, 0, sf, r * sf);
        mat_rows(e, &L->sgu, sf, sf, p->shared_ffn + r * sf);
        mat_slice(e, &L->sdown, p->shared_ffn, r * sf, d);
        mat_rows(e, &L->sdown, 0, d, 0);
    }
}

/* This rank's share (dec_config.rank/ranks): the heads and the MLP columns
 * must divide evenly. Returns 0, or 2 with a message. */
static int shard_of(const dec_preset *p, const dec_config *cfg, dshard *sh, char *err,
                    size_t err_size)
{
    uint32_t R = cfg->ranks > 1 ? cfg->ranks : 1;
    dec_shapes s = dec_shapes_of(p);
    *sh = (dshard){.rank = R > 1 ? cfg->rank : 0, .ranks = R};
    if (R > 1 && cfg->rank >= R) {
        snprintf(err, err_size, "rank %u is not below ranks (%u)", cfg->rank, R);
        return 2;
    }
    if (p->n_heads % R || p->n_kv_heads % R) {
        snprintf(err, err_size,
                 "tensor parallelism: %u ranks do not divide the %u attention heads and %u kv "
                 "heads of %s evenly",
                 R, p->n_heads, p->n_kv_heads, p->name);
        return 2;
    }
    if (p->ffn % R) {
        snprintf(err, err_size,
                 "tensor parallelism: %u ranks do not divide the MLP width %u of %s evenly", R,
                 p->ffn, p->name);
        return 2;
    }
    sh->heads = p->n_heads / R;
    sh->kv_heads = p->n_kv_heads / R;
    sh->q_dim = s.q_dim / R;
    sh->kv_dim = s.kv_dim / R;
    sh->qkv_rows = sh->q_dim + 2 * sh->kv_dim;
    sh->ffn = p->ffn / R;
    if (p->n_experts > 0 && (p->expert_ffn % R || p->shared_ffn % R)) {
        snprintf(err, err_size,
                 "tensor parallelism: %u ranks do not divide the expert width %u (shared expert "
                 "%u) of %s evenly",
                 R, p->expert_ffn, p->shared_ffn, p->name);
        return 2;
    }
    sh->expert_ffn = p->expert_ffn / R;
    sh->shared_ffn = p->shared_ffn / R;
    if (R > 1 && (cfg->hooks == NULL || cfg->hooks->all_reduce == NULL)) {
        snprintf(err, err_size, "tensor parallelism (%u ranks) needs hooks->all_reduce", R);
        return 2;
    }
    return 0;
}

/* cfg.scope_dispatches goes only with the modes that keep one command
 * buffer and have no fixed stamps per call (off, ring), at one rank. */
static int scope_check(dec_engine *e, dec_profile profile)
{
    if (!e->cfg.scope_dispatches) {
        return 0;
    }
    if (profile != DEC_PROFILE_OFF && profile != DEC_PROFILE_RING) {
        set_err(e, "a scope per dispatch needs profile off or ring, not %s",
                dec_profile_name(profile));
        return 1;
    }
    if (e->cfg.ranks > 1) {
        set_err(e, "a scope per dispatch is for one rank (%u ranks)", e->cfg.ranks);
        return 1;
    }
    return 0;
}

int dec_create(vku_device *dev, const dec_config *cfg, dec_engine **out, char *err, size_t err_size)
{
    *out = NULL;
    if (err_size > 0) {
        err[0] = '\0';
    }
    if (cfg->preset == NULL) {
        snprintf(err, err_size, "no preset");
        return 2;
    }
    if (cfg->labels && !cfg->debug_utils) {
        snprintf(err, err_size, "debug-utils labels need VK_EXT_debug_utils on the instance");
        return 1;
    }
    dec_engine *e = calloc(1, sizeof *e);
    if (e == NULL) {
        snprintf(err, err_size, "out of host memory");
        return 1;
    }
    e->dev = dev;
    e->cfg = *cfg;
    e->p = *cfg->preset;
    e->s = dec_shapes_of(&e->p);
    e->ctx = cfg->ctx ? cfg->ctx : e->p.default_ctx;
    e->err = err;
    e->err_size = err_size;
    e->lm = &e->embed;
    const dec_preset *p = &e->p;
    if (shard_of(p, cfg, &e->sh, err, err_size) != 0) {
        dec_destroy(e);
        return 2;
    }

    if (scope_check(e, cfg->profile) != 0) {
        dec_destroy(e);
        return 1;
    }
    prof_check(e, dec_prof_init(&e->prof, dev, dec_calls_per_token(e), cfg->profile, cfg->prof));

    /* limits */
    VkPhysicalDeviceMaintenance3Properties m3 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 pp = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &m3};
    vkGetPhysicalDeviceProperties2(dev->phys, &pp);
    const VkPhysicalDeviceLimits *lim = &dev->props.limits;
    memcpy(e->max_groups, lim->maxComputeWorkGroupCount, sizeof e->max_groups);
    e->max_range = lim->maxStorageBufferRange;
    e->max_chunk = e->max_range;
    if (m3.maxMemoryAllocationSize != 0 && m3.maxMemoryAllocationSize < e->max_chunk) {
        e->max_chunk = m3.maxMemoryAllocationSize;
    }
    e->max_chunk &= ~(VkDeviceSize)255;
    e->argmax_groups = ceil_div(p->vocab, DEC_ARGMAX_BLOCK);
    {
        uint64_t dense = 2ull * e->sh.ffn;
        uint64_t moe = p->n_experts > 0
                           ? 2ull * ((uint64_t)p->top_k * e->sh.expert_ffn + e->sh.shared_ffn)
                           : 0;
        e->gu_words = dense > moe ? dense : moe;
    }

    /* memory (this rank's share) */
    dec_mem_plan plan = dec_plan_memory_tp(p, e->ctx, e->sh.ranks);
    uint64_t heap, avail;
    bool budget;
    device_heap(e, &heap, &avail, &budget);
    if (!e->fail && plan.total > avail) {
        char left[96] = "";
        if (budget) {
            snprintf(left, sizeof left, " (VK_EXT_memory_budget leaves %.2f GiB)", gib(avail));
        }
        set_err(e,
                "not enough device memory: preset %s with context %u needs %.2f GiB%s "
                "(weights %.2f GiB, KV cache %.2f GiB, activations %.3f GiB), the "
                "device-local heap has %.2f GiB%s",
                p->name, e->ctx, gib(plan.total), e->sh.ranks > 1 ? " per rank" : "",
                gib(plan.weights), gib(plan.kv_cache), gib(plan.activations), gib(heap), left);
        dec_destroy(e);
        return 2;
    }
    if (!e->fail) {
        check_limits(e);
    }

    /* matrices (split into buffers of at most max_chunk bytes) */
    e->layers = calloc(p->n_layers, sizeof *e->layers);
    if (e->layers == NULL) {
        set_err(e, "out of host memory");
    }
    uint32_t d = p->dim, total_chunks = 0;
    if (!e->fail) {
        mat_plan(e, &e->embed, p->vocab, d, DEC_T_EMBED, DEC_EMBED_SHIFT(d));
        e->lm = &e->embed;
        if (!p->tie_embeddings) {
            mat_plan(e, &e->lm_own, p->vocab, d, DEC_T_LM_HEAD, dec_shift_for_fan_in(d));
            e->lm = &e->lm_own;
        }
        total_chunks += 2 * e->embed.nchunks + e->lm_own.nchunks;
        const dshard *sh = &e->sh;
        uint32_t r = sh->rank, f = sh->ffn;
        for (uint32_t l = 0; l < p->n_layers; l++) {
            dlayer *L = &e->layers[l];
            uint32_t t = DEC_T_LAYER(l);
            /* this rank's heads: its rows of q, k and v; its columns of the
             * output projection; its rows of gate and up, its columns of down */
            mat_plan(e, &L->qkv, sh->qkv_rows, d, t + DEC_T_QKV, dec_shift_for_fan_in(d));
            mat_plan(e, &L->o, d, sh->q_dim, t + DEC_T_O, dec_shift_for_fan_in(e->s.q_dim));
            L->moe = dec_layer_is_moe(p, l);
            if (L->moe) {
                plan_moe(e, L, l);
            } else {
                mat_plan(e, &L->gu, 2 * f, d, t + DEC_T_GATE_UP, dec_shift_for_fan_in(d));
                mat_plan(e, &L->down, d, f, t + DEC_T_DOWN, dec_shift_for_fan_in(p->ffn));
            }
            if (sh->ranks > 1) {
                mat_slice(e, &L->qkv, d, 0, e->s.qkv_rows);
                mat_rows(e, &L->qkv, 0, sh->q_dim, r * sh->q_dim);
                mat_rows(e, &L->qkv, sh->q_dim, sh->kv_dim, e->s.q_dim + r * sh->kv_dim);
                mat_rows(e, &L->qkv, sh->q_dim + sh->kv_dim, sh->kv_dim,
                         e->s.q_dim + e->s.kv_dim + r * sh->kv_dim);
                mat_slice(e, &L->o, e->s.q_dim, r * sh->q_dim, d);
                mat_rows(e, &L->o, 0, d, 0);
                if (!L->moe) {
                    mat_slice(e, &L->gu, d, 0, 2ull * p->ffn);
                    mat_rows(e, &L->gu, 0, f, r * f);
                    mat_rows(e, &L->gu, f, f, p->ffn + r * f);
                    mat_slice(e, &L->down, p->ffn, r * f, d);
                    mat_rows(e, &L->down, 0, d, 0);
                }
            }
            total_chunks += L->qkv.nchunks + L->o.nchunks + L->gu.nchunks + L->down.nchunks +
                            L->router.nchunks + L->sgu.nchunks + L->sdown.nchunks;
        }
    }

    /* pipelines and the descriptor pool */
    for (uint32_t i = 0; i < P_COUNT && !e->fail; i++) {
        VkResult r = pipe_create(e, i);
        if (r != VK_SUCCESS) {
            set_err(e, "creating the layout and module of shader %u failed: %s", i,
                    vku_result_name(r));
        }
    }
    for (uint32_t k = 0; k < K_COUNT && !e->fail; k++) {
        VkResult r = kernel_create(e, k);
        if (r != VK_SUCCESS) {
            set_err(e, "creating the %s pipeline (shader %u) failed: %s", kernel_name(k),
                    kernel_info[k].shader, vku_result_name(r));
        }
    }
    if (!e->fail) {
        uint32_t sets = 16 + 16 * p->n_layers + 2 * total_chunks;
        VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                   .descriptorCount = 4 * sets};
        VkDescriptorPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                          .maxSets = sets,
                                          .poolSizeCount = 1,
                                          .pPoolSizes = &ps};
        VkResult r = vkCreateDescriptorPool(dev->device, &pci, NULL, &e->pool);
        if (r != VK_SUCCESS) {
            set_err(e, "vkCreateDescriptorPool failed: %s", vku_result_name(r));
        }
    }

    /* buffers */
    struct {
        dbuf *b;
        uint64_t size;
        bool host;
    } bufs[] = {
        {&e->norms, (2ull * p->n_layers + 1) * d * 4, false},
        {&e->rope, (uint64_t)e->ctx * p->head_dim * 4, false},
        {&e->x, (uint64_t)d * 4, false},
        {&e->xn, (uint64_t)d * 4, false},
        {&e->qkv, (uint64_t)e->sh.qkv_rows * 4, false},
        {&e->att, (uint64_t)e->sh.heads * e->ctx * 4, false},
        {&e->ao, (uint64_t)e->sh.q_dim * 4, false},
        {&e->gu, e->gu_words * 4, false},
        {&e->h, e->gu_words * 2, false},
        {&e->logits, (uint64_t)p->vocab * 4, false},
        {&e->part, (uint64_t)e->argmax_groups * 8, false},
        {&e->result, 16, true},
        {&e->logits_host, cfg->keep_logits ? (uint64_t)p->vocab * 4 : 16, true},
        {&e->stage, e->sh.ranks > 1 ? (uint64_t)d * 4 : 0, true},
        {&e->rlog, (uint64_t)p->n_experts * 4, false},
        {&e->route, p->n_experts > 0 ? 2ull * DEC_MAX_TOP_K * 4 : 0, true},
        {&e->eo, p->n_experts > 0 ? ((uint64_t)p->top_k + 1) * d * 4 : 0, false},
    };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0] && !e->fail; i++) {
        if (bufs[i].size == 0) {
            continue;
        }
        VkResult r = buf_create(e, bufs[i].size, bufs[i].host, bufs[i].b);
        if (r != VK_SUCCESS) {
            set_err(e, "allocating a buffer of %llu bytes failed: %s",
                    (unsigned long long)bufs[i].size, vku_result_name(r));
        }
    }
    mat_alloc(e, &e->embed);
    if (e->lm != &e->embed) {
        mat_alloc(e, e->lm);
    }
    for (uint32_t l = 0; l < p->n_layers && !e->fail; l++) {
        dlayer *L = &e->layers[l];
        mat_alloc(e, &L->qkv);
        mat_alloc(e, &L->o);
        mat_alloc(e, &L->gu);
        mat_alloc(e, &L->down);
        mat_alloc(e, &L->router);
        mat_alloc(e, &L->sgu);
        mat_alloc(e, &L->sdown);
        VkDeviceSize kvb = (VkDeviceSize)e->ctx * e->sh.kv_dim * 4;
        VkResult r = buf_create(e, kvb, false, &L->kc);
        if (r == VK_SUCCESS) {
            r = buf_create(e, kvb, false, &L->vc);
        }
        if (r != VK_SUCCESS) {
            set_err(e, "allocating the KV cache failed: %s", vku_result_name(r));
        }
    }
    if (!e->fail) {
        generate_weights(e);
    }
    if (!e->fail) {
        build_sets(e);
    }
    if (!e->fail) {
        prof_check(e, dec_prof_prepare(&e->prof));
    }
    if (e->fail) {
        dec_destroy(e);
        return 1;
    }
    *out = e;
    return 0;
}

void dec_destroy(dec_engine *e)
{
    if (e == NULL) {
        return;
    }
    VkDevice dv = e->dev->device;
    vkDeviceWaitIdle(dv);
    dec_prof_destroy(&e->prof);
    if (e->pool != VK_NULL_HANDLE) {
        vkDestroyDescriptorPool(dv, e->pool, NULL);
    }
    for (uint32_t k = 0; k < K_COUNT; k++) {
        if (e->kpipe[k] != VK_NULL_HANDLE) {
            vkDestroyPipeline(dv, e->kpipe[k], NULL);
        }
    }
    for (uint32_t i = 0; i < P_COUNT; i++) {
        dpipe *p = &e->pipe[i];
        if (p->mod != VK_NULL_HANDLE) {
            vkDestroyShaderModule(dv, p->mod, NULL);
        }
        if (p->layout != VK_NULL_HANDLE) {
            vkDestroyPipelineLayout(dv, p->layout, NULL);
        }
        if (p->dsl != VK_NULL_HANDLE) {
            vkDestroyDescriptorSetLayout(dv, p->dsl, NULL);
        }
    }
    mat_destroy(e, &e->embed);
    mat_destroy(e, &e->lm_own);
    for (uint32_t l = 0; e->layers != NULL && l < e->p.n_layers; l++) {
        dlayer *L = &e->layers[l];
        mat_destroy(e, &L->qkv);
        mat_destroy(e, &L->o);
        mat_destroy(e, &L->gu);
        mat_destroy(e, &L->down);
        mat_destroy(e, &L->router);
        mat_destroy(e, &L->sgu);
        mat_destroy(e, &L->sdown);
        buf_destroy(e, &L->kc);
        buf_destroy(e, &L->vc);
    }
    free(e->layers);
    dbuf *bufs[] = {&e->norms,       &e->rope,  &e->x,    &e->xn,     &e->qkv,  &e->att,
                    &e->ao,          &e->gu,    &e->h,    &e->logits, &e->part, &e->result,
                    &e->logits_host, &e->stage, &e->rlog, &e->route,  &e->eo};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        buf_destroy(e, bufs[i]);
    }
    free(e);
}

/* ---- one token ----------------------------------------------------------------------- */

/* The section a phase call is when it is its own submit: its vkprof name. */
static const char *call_section(const dec_engine *e, uint32_t phase)
{
    const char *name = vkprof_phase_name(e->prof.ctx, phase);
    return name != NULL ? name : "phase";
}

/* dec_config.labels: each phase call is a command-buffer label region of its
 * phase's name, opened after the barrier that separates calls (the stamps of
 * a profiling mode inside it). */
static void label_begin(VkCommandBuffer cmd, const char *name)
{
    VkDebugUtilsLabelEXT l = {.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT, .pLabelName = name};
    vkCmdBeginDebugUtilsLabelEXT(cmd, &l);
}

/* A phase call opens: its own command buffer (begun with the barrier that
 * otherwise separates calls), or a barrier after the previous call. */
static void phase_begin(dec_engine *e, uint32_t phase)
{
    if (e->fail) {
        return;
    }
    e->cost[phase].calls++;
    if (dec_prof_submit_per_call(&e->prof)) {
        hook_begin(e, call_section(e, phase));
        e->section_open = true;
        begin_cmd(e);
        if (!e->fail && e->upload_pending) { /* the reduced residual, before the call */
            copy_buf(e->cmd, &e->stage, &e->x, e->stage.size);
            full_barrier(e->cmd);
            e->upload_pending = false;
        }
    } else if (e->calls_in_cmd++ > 0) {
        full_barrier(e->cmd);
    }
    if (!e->fail && e->cfg.labels) {
        label_begin(e->cmd, dec_phase_label(phase));
    }
    if (!e->fail) {
        prof_check(e, dec_prof_phase_begin(&e->prof, e->cmd, phase));
    }
    e->call_open = !e->fail;
    e->call_phase = phase;
    e->call_dispatches = 0;
}

static void finish_cmd(dec_engine *e)
{
    if (e->cfg.keep_logits) {
        full_barrier(e->cmd);
        VkBufferCopy bc = {.size = e->logits.size};
        vkCmdCopyBuffer(e->cmd, e->logits.buf, e->logits_host.buf, 1, &bc);
    }
    host_barrier(e->cmd);
}

/* MoE (after the router's fence, inside host section moe_host_sync): the
 * routed experts read back, checked, and told to hooks->routed. */
static void route_read(dec_engine *e)
{
    uint32_t k = e->p.top_k, E = e->p.n_experts, l = e->tail.layer;
    const uint32_t *route = e->route.map;
    for (uint32_t j = 0; j < k; j++) {
        e->routed_ids[j] = route[j];
        memcpy(&e->routed_w[j], &route[k + j], sizeof e->routed_w[j]);
        bool dup = false;
        for (uint32_t i = 0; i < j; i++) {
            dup = dup || e->routed_ids[i] == e->routed_ids[j];
        }
        if (e->routed_ids[j] >= E || dup) {
            set_err(e, "layer %u: the router chose expert %u of %u%s (NaN logits?)", l,
                    e->routed_ids[j], E, dup ? " twice" : "");
            return;
        }
    }
    if (hooks(e)->routed) {
        hooks(e)->routed(hooks(e)->user, l, e->routed_ids, e->routed_w, k);
    }
}

/* The copy the host reads mid-token (if any) and the host barrier. */
static void record_tail(dec_engine *e)
{
    if (e->tail.src != NULL) {
        full_barrier(e->cmd);
        copy_buf(e->cmd, e->tail.src, e->tail.dst, e->tail.size);
    }
    host_barrier(e->cmd);
    e->tail.pending = false;
}

/* A phase call closes; as its own submit, it is submitted and waited for
 * (the last call of the token with what the host reads), then done. */
static void phase_end(dec_engine *e, uint32_t phase)
{
    /* one scope per dispatch: the last one's ended after it (a call without
     * a dispatch ends its one scope here) */
    bool ended = e->cfg.scope_dispatches && e->call_open && e->call_dispatches > 0;
    e->call_open = false;
    if (!dec_prof_submit_per_call(&e->prof)) {
        if (!e->fail && !ended) {
            prof_check(e, dec_prof_phase_end(&e->prof, e->cmd, phase));
        }
        if (!e->fail && e->cfg.labels) {
            vkCmdEndDebugUtilsLabelEXT(e->cmd);
        }
        return;
    }
    if (!e->section_open) {
        return;
    }
    const char *name = call_section(e, phase);
    e->section_open = false;
    if (!e->fail) {
        prof_check(e, dec_prof_phase_end(&e->prof, e->cmd, phase));
        if (!e->fail && e->cfg.labels) {
            vkCmdEndDebugUtilsLabelEXT(e->cmd);
        }
        if (phase == VKPROF_PHASE_SAMPLING) {
            finish_cmd(e);
        }
        const char *tail = NULL;
        if (e->tail.pending) { /* what the host reads next, in this call's buffer */
            record_tail(e);
            tail = e->tail.section;
            hook_begin(e, tail);
        }
        submit(e, name);
        if (tail != NULL) {
            if (!e->fail && e->tail.src == NULL && e->route.map != NULL) {
                route_read(e); /* the routed experts, inside the host section */
            }
            hook_end(e, tail);
        }
        if (!e->fail) {
            prof_check(e, dec_prof_call_done(&e->prof, phase));
        }
    }
    hook_end(e, name);
}

static void add_cost(dec_engine *e, uint32_t phase, uint32_t dispatches, double bytes, double flops)
{
    e->cost[phase].dispatches += dispatches;
    e->cost[phase].bytes += bytes;
    e->cost[phase].flops += flops;
}

/* y[y_base + i] (=|+=) (M x)[row0 + i] for rows [row0, row0 + nrows) of M, x
 * read from vec4 x_base of its buffer, with kernel k (a matvec pipeline, its
 * phase's), over the chunks holding those rows; dispatches split at
 * maxComputeWorkGroupCount. The whole matrix: row0 = 0, nrows = rows. */
static void matvec_rows(dec_engine *e, uint32_t k, const dmat *m, const VkDescriptorSet *sets,
                        bool accumulate, uint32_t row0, uint32_t nrows, uint32_t y_base,
                        uint32_t x_base)
{
    uint32_t phase = (uint32_t)kernel_info[k].phase;
    uint32_t n = 0;
    for (uint32_t c = 0; c < m->nchunks && !e->fail; c++) {
        uint32_t cf = c * m->rows_per_chunk, cl = cf + mat_chunk_rows(m, c);
        uint32_t a = row0 > cf ? row0 : cf, z = row0 + nrows < cl ? row0 + nrows : cl;
        if (a >= z) {
            continue;
        }
        if ((a - cf) % MV_ROWS != 0) {
            set_err(e, "a block of rows starts at row %u of a buffer, not a multiple of %u", a - cf,
                    MV_ROWS);
            return;
        }
        uint32_t groups = ceil_div(z - a, MV_ROWS), gb = (a - cf) / MV_ROWS;
        for (uint32_t g0 = 0; g0 < groups; g0 += e->max_groups[0]) {
            uint32_t ng = groups - g0 < e->max_groups[0] ? groups - g0 : e->max_groups[0];
            /* out_base: y's index of the chunk's row 0, mod 2^32 */
            uint32_t pc[PC_WORDS] = {z - cf,  m->cols, y_base + cf - row0, accumulate ? 1u : 0u,
                                     gb + g0, x_base};
            dispatch(e, k, sets[c], pc, ng, 1);
            n++;
        }
    }
    double r = nrows, cols = m->cols;
    add_cost(e, phase, n, r * cols * 2 + cols * 4 + r * 4 * (accumulate ? 2 : 1),
             2 * r * cols + (accumulate ? r : 0));
}

/* y (=|+=) M x over every chunk. */
static void matvec(dec_engine *e, uint32_t k, const dmat *m, const VkDescriptorSet *sets,
                   bool accumulate)
{
    matvec_rows(e, k, m, sets, accumulate, 0, m->rows, 0, 0);
}

/* ---- mid-token host synchronisation (tensor-parallel all-reduce, MoE routing) ---- */

/* The call about to end (before its phase_end) produces what the host reads
 * next: `size` bytes copied from src to the host-visible dst (src NULL: the
 * host reads dst itself, written by the call), submitted and waited for in
 * host section `section`. submit_per_call: in the call's own buffer, after
 * its end stamp (phase_end). One-buffer modes: host_sync ends the token's
 * buffer there. */
static void host_read_set(dec_engine *e, const dbuf *src, const dbuf *dst, VkDeviceSize size,
                          const char *section)
{
    e->tail.pending = true;
    e->tail.src = src;
    e->tail.dst = dst;
    e->tail.size = size;
    e->tail.section = section;
}

/* After that call: one-buffer modes end the segment (the copy, a host
 * barrier, submit and fence wait in the host section; the mode's
 * segment_done). submit_per_call: done by the call's own submit. */
static void host_sync(dec_engine *e)
{
    if (e->fail || dec_prof_submit_per_call(&e->prof) || !e->tail.pending) {
        return;
    }
    const char *section = e->tail.section;
    bool route = e->tail.src == NULL && e->route.map != NULL;
    record_tail(e);
    hook_begin(e, section);
    submit(e, section);
    if (route && !e->fail) {
        route_read(e); /* the routed experts, inside the host section */
    }
    hook_end(e, section);
    if (!e->fail) {
        prof_check(e, dec_prof_segment_done(&e->prof));
    }
}

/* The host is done: one-buffer modes begin the next segment (upload: the
 * reduced residual copied back into x first); submit_per_call copies it
 * into the next call's buffer. */
static void host_resume(dec_engine *e, bool upload)
{
    if (e->fail) {
        return;
    }
    if (dec_prof_submit_per_call(&e->prof)) {
        e->upload_pending = upload;
        return;
    }
    begin_cmd(e);
    e->prof.segment++;
    if (!e->fail) {
        prof_check(e, dec_prof_cmd_begun(&e->prof, e->cmd));
    }
    e->calls_in_cmd = 0;
    if (!e->fail && upload) {
        copy_buf(e->cmd, &e->stage, &e->x, e->stage.size);
        e->calls_in_cmd = 1; /* a barrier before the next call */
    }
}

/* Tensor parallel: after the call that wrote this rank's partial residual
 * into x (host_read_set before its end), the host all-reduce and x back. */
static void reduce_site(dec_engine *e, dec_site site, uint32_t layer)
{
    if (e->sh.ranks <= 1 || e->fail) {
        return;
    }
    host_sync(e);
    if (e->fail) {
        return;
    }
    int rc = hooks(e)->all_reduce(hooks(e)->user, site, layer, e->stage.map, e->p.dim);
    if (rc != 0) {
        set_err(e, "the all-reduce after %s of layer %u failed (%d)",
                site == DEC_SITE_ATTN ? "attention" : "the MLP", layer, rc);
        return;
    }
    host_resume(e, true);
}

static void rmsnorm(dec_engine *e, VkDescriptorSet set)
{
    float eps = e->p.norm_eps;
    uint32_t pc[PC_WORDS] = {e->p.dim, 0};
    memcpy(&pc[1], &eps, sizeof eps);
    dispatch(e, K_NORM, set, pc, 1, 1);
    double d = e->p.dim;
    add_cost(e, VKPROF_PHASE_NORM, 1, 3 * d * 4, 4 * d);
}

/* An MoE layer's MLP (after its norm): the router and top-k on the GPU, the
 * host read-back of the chosen experts (moe_host_sync), then only those
 * experts' gate/up, activation and down, the shared expert's, and the
 * weighted combine into the residual (rank 0's; a partial sum elsewhere). */
static void moe_layer(dec_engine *e, const dlayer *L, uint32_t l)
{
    const dec_preset *p = &e->p;
    const dshard *sh = &e->sh;
    uint32_t d = p->dim, E = p->n_experts, k = p->top_k, ef = sh->expert_ffn, sf = sh->shared_ffn;

    phase_begin(e, VKPROF_PHASE_MOE_ROUTER);
    if (!e->fail) {
        matvec(e, K_ROUTER, &L->router, L->router_set, false);
        full_barrier(e->cmd);
        uint32_t pc[PC_WORDS] = {E, k};
        dispatch(e, K_TOPK, L->topk, pc, 1, 1);
        /* logits read k times, ids and weights written */
        add_cost(e, VKPROF_PHASE_MOE_ROUTER, 1, 4.0 * E * k + 8.0 * k, (double)E * k + 3.0 * k);
    }
    /* the host reads the route buffer itself (src NULL): route_read, in
     * moe_host_sync after the fence */
    host_read_set(e, NULL, &e->route, 0, "moe_host_sync");
    e->tail.layer = l;
    phase_end(e, VKPROF_PHASE_MOE_ROUTER);
    host_sync(e);
    if (e->fail) {
        return;
    }
    const uint32_t *ids = e->routed_ids;
    host_resume(e, false);

    phase_begin(e, VKPROF_PHASE_MOE_EXPERTS);
    if (!e->fail) {
        /* slot j: expert ids[j]'s [gate; up] at gu[2 ef j], h at h[ef j], its
         * output at eo[d j]; the shared expert is slot k */
        for (uint32_t j = 0; j < k; j++) {
            matvec_rows(e, K_EXPERT_GU, &L->gu, L->gu_set, false, ids[j] * 2 * ef, 2 * ef,
                        j * 2 * ef, 0);
        }
        if (sf > 0) {
            matvec_rows(e, K_EXPERT_GU, &L->sgu, L->sgu_set, false, 0, 2 * sf, k * 2 * ef, 0);
        }
        full_barrier(e->cmd);
        uint32_t pa[PC_WORDS] = {ef, 0, 0};
        dispatch(e, K_EXPERT_ACT, L->act, pa, ceil_div(ef, 256), k);
        if (sf > 0) {
            uint32_t pb[PC_WORDS] = {sf, k * 2 * ef, k * ef};
            dispatch(e, K_EXPERT_ACT, L->act, pb, ceil_div(sf, 256), 1);
        }
        double hw = (double)k * ef + sf;
        add_cost(e, VKPROF_PHASE_MOE_EXPERTS, sf > 0 ? 2 : 1, 3 * 4.0 * hw, 5 * hw);
        full_barrier(e->cmd);
        for (uint32_t j = 0; j < k; j++) {
            matvec_rows(e, K_EXPERT_DOWN, &L->down, L->down_set, false, ids[j] * d, d, j * d,
                        j * ef / 4);
        }
        if (sf > 0) {
            matvec_rows(e, K_EXPERT_DOWN, &L->sdown, L->sdown_set, false, 0, d, k * d, k * ef / 4);
        }
    }
    phase_end(e, VKPROF_PHASE_MOE_EXPERTS);

    phase_begin(e, VKPROF_PHASE_MOE_COMBINE);
    if (!e->fail) {
        uint32_t residual = sh->rank == 0 ? 1u : 0u, shared = sf > 0 ? 1u : 0u;
        uint32_t pc[PC_WORDS] = {d, k, shared, residual};
        dispatch(e, K_COMBINE, L->combine, pc, ceil_div(d, 256), 1);
        /* x read (with the residual) and written, k (+ shared) outputs, k weights */
        add_cost(e, VKPROF_PHASE_MOE_COMBINE, 1, 4.0 * d * (residual + 1 + k + shared) + 4.0 * k,
                 2.0 * d * k + (double)d * shared);
    }
    if (sh->ranks > 1) {
        host_read_set(e, &e->x, &e->stage, e->stage.size, "submit_wait");
    }
    phase_end(e, VKPROF_PHASE_MOE_COMBINE);
}

static void record_token(dec_engine *e, uint32_t token)
{
    const dec_preset *p = &e->p;
    const dshard *sh = &e->sh;
    uint32_t d = p->dim, pos = e->pos, n = pos + 1, hd = p->head_dim;
    double H = sh->heads, q_dim = sh->q_dim, kv = sh->kv_dim, F = sh->ffn;
    bool tp = sh->ranks > 1, residual = sh->rank == 0; /* one rank adds the residual */

    phase_begin(e, VKPROF_PHASE_EMBEDDING);
    if (!e->fail) {
        uint32_t c = token / e->embed.rows_per_chunk;
        uint32_t pc[PC_WORDS] = {token % e->embed.rows_per_chunk, d};
        dispatch(e, K_EMBED, e->embed_set[c], pc, ceil_div(d / 2, 256), 1);
        add_cost(e, VKPROF_PHASE_EMBEDDING, 1, (double)d * 2 + (double)d * 4, 0);
    }
    phase_end(e, VKPROF_PHASE_EMBEDDING);

    for (uint32_t l = 0; l < p->n_layers && !e->fail; l++) {
        hook_begin(e, "layer");
        dlayer *L = &e->layers[l];
        phase_begin(e, VKPROF_PHASE_NORM);
        if (!e->fail) {
            rmsnorm(e, L->norm_att);
        }
        phase_end(e, VKPROF_PHASE_NORM);

        phase_begin(e, VKPROF_PHASE_QKV);
        if (!e->fail) {
            matvec(e, K_QKV, &L->qkv, L->qkv_set, false);
        }
        phase_end(e, VKPROF_PHASE_QKV);

        phase_begin(e, VKPROF_PHASE_ROPE);
        if (!e->fail) {
            uint32_t pc[PC_WORDS] = {pos, sh->heads, sh->kv_heads, hd};
            uint32_t threads = (uint32_t)(q_dim / 2 + kv / 2 + kv);
            dispatch(e, K_ROPE, L->rope, pc, ceil_div(threads, 256), 1);
            add_cost(e, VKPROF_PHASE_ROPE, 1, (q_dim + 2 * kv) * 4 * 2 + (double)hd / 2 * 8,
                     3 * (q_dim + kv));
        }
        phase_end(e, VKPROF_PHASE_ROPE);

        phase_begin(e, VKPROF_PHASE_ATTENTION);
        if (!e->fail) {
            float scale = 1.0f / sqrtf((float)hd);
            uint32_t pc[PC_WORDS] = {n, hd, sh->heads, sh->kv_heads, e->ctx, 0};
            memcpy(&pc[5], &scale, sizeof scale);
            dispatch(e, K_SCORES, L->scores, pc, ceil_div(n, 128 / (hd / 4)), sh->heads);
            full_barrier(e->cmd);
            uint32_t ps[PC_WORDS] = {n, e->ctx};
            dispatch(e, K_SOFTMAX, L->softmax, ps, sh->heads, 1);
            full_barrier(e->cmd);
            uint32_t pw[PC_WORDS] = {n, hd, sh->heads, sh->kv_heads, e->ctx};
            dispatch(e, K_WSUM, L->wsum, pw, sh->heads, 1);
            /* scores: q + K rows + scores written; softmax: 2 reads + 2 writes of
             * the scores; weighted sum: scores + V rows + output */
            double bytes = q_dim * 4 + n * kv * 4 + H * n * 4 + H * n * 4 * 4 + H * n * 4 +
                           n * kv * 4 + q_dim * 4;
            add_cost(e, VKPROF_PHASE_ATTENTION, 3, bytes, 4 * H * n * hd + 5 * H * n);
        }
        phase_end(e, VKPROF_PHASE_ATTENTION);

        phase_begin(e, VKPROF_PHASE_ATTN_OUTPUT);
        if (!e->fail) {
            matvec(e, K_ATTN_OUT, &L->o, L->o_set, residual);
        }
        if (tp) {
            host_read_set(e, &e->x, &e->stage, e->stage.size, "submit_wait");
        }
        phase_end(e, VKPROF_PHASE_ATTN_OUTPUT);
        reduce_site(e, DEC_SITE_ATTN, l);

        phase_begin(e, VKPROF_PHASE_NORM);
        if (!e->fail) {
            rmsnorm(e, L->norm_ffn);
        }
        phase_end(e, VKPROF_PHASE_NORM);

        if (L->moe) {
            moe_layer(e, L, l);
            reduce_site(e, DEC_SITE_MLP, l);
            hook_end(e, "layer");
            continue;
        }
        phase_begin(e, VKPROF_PHASE_MLP_GATE_UP);
        if (!e->fail) {
            matvec(e, K_GATE_UP, &L->gu, L->gu_set, false);
        }
        phase_end(e, VKPROF_PHASE_MLP_GATE_UP);

        phase_begin(e, VKPROF_PHASE_ACTIVATION);
        if (!e->fail) {
            uint32_t pc[PC_WORDS] = {sh->ffn};
            dispatch(e, K_SILU, L->act, pc, ceil_div(sh->ffn, 256), 1);
            add_cost(e, VKPROF_PHASE_ACTIVATION, 1, 3 * F * 4, 5 * F);
        }
        phase_end(e, VKPROF_PHASE_ACTIVATION);

        phase_begin(e, VKPROF_PHASE_MLP_DOWN);
        if (!e->fail) {
            matvec(e, K_DOWN, &L->down, L->down_set, residual);
        }
        if (tp) {
            host_read_set(e, &e->x, &e->stage, e->stage.size, "submit_wait");
        }
        phase_end(e, VKPROF_PHASE_MLP_DOWN);
        reduce_site(e, DEC_SITE_MLP, l);
        hook_end(e, "layer");
    }

    phase_begin(e, VKPROF_PHASE_NORM);
    if (!e->fail) {
        rmsnorm(e, e->norm_final);
    }
    phase_end(e, VKPROF_PHASE_NORM);

    phase_begin(e, VKPROF_PHASE_LM_HEAD);
    if (!e->fail) {
        matvec(e, K_LM_HEAD, e->lm, e->lm_set, false);
    }
    phase_end(e, VKPROF_PHASE_LM_HEAD);

    phase_begin(e, VKPROF_PHASE_SAMPLING);
    if (!e->fail) {
        uint32_t pa[PC_WORDS] = {p->vocab, DEC_ARGMAX_BLOCK};
        dispatch(e, K_ARGMAX1, e->argmax1, pa, e->argmax_groups, 1);
        full_barrier(e->cmd);
        uint32_t pb[PC_WORDS] = {e->argmax_groups};
        dispatch(e, K_ARGMAX2, e->argmax2, pb, 1, 1);
        add_cost(e, VKPROF_PHASE_SAMPLING, 2, (double)p->vocab * 4 + e->argmax_groups * 8.0 * 2 + 8,
                 (double)p->vocab);
    }
    phase_end(e, VKPROF_PHASE_SAMPLING);
}

int dec_step(dec_engine *e, uint32_t token, uint32_t *next, char *err, size_t err_size)
{
    e->err = err;
    e->err_size = err_size;
    e->fail = 0;
    if (e->pos >= e->ctx) {
        set_err(e, "the context is full (%u positions)", e->ctx);
        return 1;
    }
    if (token >= e->p.vocab) {
        set_err(e, "token %u is outside the vocabulary (%u)", token, e->p.vocab);
        return 1;
    }
    e->prof.segment = 0;
    e->tail.pending = false;
    e->upload_pending = false;
    hook_begin(e, "token");
    if (e->cfg.labels) { /* the token's submits in a queue label region */
        VkDebugUtilsLabelEXT l = {.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
                                  .pLabelName = DEC_TOKEN_LABEL};
        vkQueueBeginDebugUtilsLabelEXT(e->dev->queue, &l);
    }
    if (dec_prof_submit_per_call(&e->prof)) {
        record_token(e, token);
    } else {
        hook_begin(e, "record");
        prof_check(e, dec_prof_token_begin(&e->prof));
        begin_cmd(e);
        if (!e->fail) {
            prof_check(e, dec_prof_cmd_begun(&e->prof, e->cmd));
        }
        e->calls_in_cmd = 0;
        record_token(e, token);
        if (!e->fail) {
            finish_cmd(e);
        }
        hook_end(e, "record");
        hook_begin(e, "submit_wait");
        submit(e, "token");
        hook_end(e, "submit_wait");
        if (!e->fail) {
            prof_check(e, dec_prof_token_done(&e->prof));
        }
    }
    if (e->cfg.labels) {
        vkQueueEndDebugUtilsLabelEXT(e->dev->queue);
    }
    hook_end(e, "token");
    if (e->fail) {
        return 1;
    }
    const uint32_t *res = e->result.map;
    *next = res[0];
    if (*next >= e->p.vocab) {
        set_err(e, "argmax returned %u (NaN logits?)", *next);
        return 1;
    }
    if (hooks(e)->step) {
        hooks(e)->step(hooks(e)->user, e->pos, *next);
    }
    e->pos++;
    return 0;
}

void dec_reset(dec_engine *e)
{
    e->pos = 0;
    memset(e->cost, 0, sizeof e->cost);
    dec_prof_reset(&e->prof);
}

int dec_reconfigure(dec_engine *e, dec_profile profile, vkprof_context prof,
                    const dec_hooks *hooks_, char *err, size_t err_size)
{
    e->err = err;
    e->err_size = err_size;
    e->fail = 0;
    if (err_size > 0) {
        err[0] = '\0';
    }
    if (e->sh.ranks > 1 && (hooks_ == NULL || hooks_->all_reduce == NULL)) {
        set_err(e, "tensor parallelism (%u ranks) needs hooks->all_reduce", e->sh.ranks);
        return 1;
    }
    if (scope_check(e, profile) != 0) {
        return 1;
    }
    prof_check(e, dec_prof_switch(&e->prof, profile, prof));
    if (e->fail) {
        return 1;
    }
    e->cfg.profile = profile;
    e->cfg.prof = prof;
    e->cfg.hooks = hooks_;
    e->section_open = false;
    dec_reset(e);
    return 0;
}

uint32_t dec_calls_per_token(const dec_engine *e)
{
    return 9 * e->p.n_layers + 4;
}

const dec_prof *dec_engine_prof(const dec_engine *e)
{
    return &e->prof;
}

const float *dec_logits(const dec_engine *e)
{
    return e->cfg.keep_logits ? e->logits_host.map : NULL;
}

uint32_t dec_position(const dec_engine *e)
{
    return e->pos;
}

uint32_t dec_context(const dec_engine *e)
{
    return e->ctx;
}

const dec_phase_cost *dec_costs(const dec_engine *e, uint32_t phase_id)
{
    return phase_id < VKPROF_PHASE_DEFAULT_COUNT ? &e->cost[phase_id] : NULL;
}

uint64_t dec_allocated_bytes(const dec_engine *e)
{
    return e->allocated;
}

int dec_read_qkv_words(dec_engine *e, uint32_t *out, uint32_t n)
{
    const dbuf *src = &e->layers[0].qkv.chunk[0];
    if ((VkDeviceSize)n * 4 > src->size) {
        return 1;
    }
    dbuf tmp;
    char msg[128];
    e->err = msg;
    e->err_size = sizeof msg;
    e->fail = 0;
    VkResult r = buf_create(e, (VkDeviceSize)n * 4, true, &tmp);
    if (r == VK_SUCCESS) {
        begin_cmd(e);
        if (!e->fail) {
            VkBufferCopy bc = {.size = (VkDeviceSize)n * 4};
            vkCmdCopyBuffer(e->cmd, src->buf, tmp.buf, 1, &bc);
            host_barrier(e->cmd);
            submit(e, "readback");
        }
        if (!e->fail) {
            memcpy(out, tmp.map, (size_t)n * 4);
        }
    }
    buf_destroy(e, &tmp);
    return r != VK_SUCCESS || e->fail;
}
