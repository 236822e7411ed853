/* Profiling modes "baseline" and "baseline-shared": the bare-Vulkan floor
 * for `vkprof bench`. The same stamps as the ring, at the same places,
 * without the library: the mode's own timestamp query pool, 2 stamps per
 * phase call (shared: one per boundary, a call beginning at the previous
 * one's end), written with vkCmdWriteTimestamp2(ALL_COMMANDS), or
 * vkCmdWriteTimestamp(BOTTOM_OF_PIPE) without synchronization2. The pool is
 * reset from the host before each token (hostQueryReset), else at the start
 * of the token's first command buffer; a token of several segments (several
 * submits) goes on in the same pool, and a segment's first call has its own
 * begin stamp also when shared (as the ring: calls + segments stamps per
 * token); after the token's last fence all results are read with
 * one vkGetQueryPoolResults(64_BIT | WAIT) and end - begin, masked with
 * timestampValidBits, summed in ticks per phase (ns once, when asked). */
#include <stdlib.h>
#include <string.h>

#include "decode_internal.h"
#include "decode_profile.h"

typedef struct bl_call {
    uint32_t phase, begin, end; /* query indices */
} bl_call;

typedef struct bl_state {
    bool shared;
    VkQueryPool pool;
    uint32_t qcap, qnext;       /* queries in the pool; next free one this token */
    uint32_t calls_cap, ncalls; /* phase calls per token; recorded this token */
    bool segment_start;         /* no call yet in the current segment */
    bl_call *calls;
    uint64_t *results;
    uint64_t mask;
    float period;
    uint64_t ticks[VKPROF_PHASE_DEFAULT_COUNT], count[VKPROF_PHASE_DEFAULT_COUNT];
    uint64_t stamps;
} bl_state;

static void destroy(dec_prof *p, void *state)
{
    bl_state *s = state;
    if (s->pool != VK_NULL_HANDLE) {
        vkDestroyQueryPool(p->dev->device, s->pool, NULL);
    }
    free(s->calls);
    free(s->results);
    free(s);
}

/* The pool, arrays and clock facts (once per engine and mode). */
static int create(dec_prof *p, const dec_prof_mode *mode, void **out)
{
    vku_device *dev = p->dev;
    uint32_t nf = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(dev->phys, &nf, NULL);
    VkQueueFamilyProperties *fp = calloc(nf ? nf : 1, sizeof *fp);
    if (fp == NULL) {
        return dec_prof_fail(p, "out of host memory");
    }
    vkGetPhysicalDeviceQueueFamilyProperties(dev->phys, &nf, fp);
    uint32_t bits = dev->family < nf ? fp[dev->family].timestampValidBits : 0;
    free(fp);
    float period = dev->props.limits.timestampPeriod;
    if (bits == 0 || bits > 64 || !(period > 0.0f)) {
        return dec_prof_fail(p,
                             "the baseline needs timestamps, and the compute queue of %s has none",
                             dev->props.deviceName);
    }
    bl_state *s = calloc(1, sizeof *s);
    if (s == NULL) {
        return dec_prof_fail(p, "out of host memory");
    }
    s->shared = mode->id == DEC_PROFILE_BASELINE_SHARED;
    s->mask = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    s->period = period;
    s->calls_cap = p->calls_per_token;
    s->qcap = 2 * s->calls_cap;
    s->calls = calloc(s->calls_cap, sizeof *s->calls);
    s->results = calloc(s->qcap, sizeof *s->results);
    if (s->calls == NULL || s->results == NULL) {
        destroy(p, s);
        return dec_prof_fail(p, "out of host memory");
    }
    VkQueryPoolCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                 .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                 .queryCount = s->qcap};
    VkResult r = vkCreateQueryPool(dev->device, &qci, NULL, &s->pool);
    if (r != VK_SUCCESS) {
        s->pool = VK_NULL_HANDLE;
        destroy(p, s);
        return dec_prof_fail(p, "baseline: vkCreateQueryPool failed: %s", vku_result_name(r));
    }
    if (dev->host_query_reset) {
        vkResetQueryPool(dev->device, s->pool, 0, s->qcap);
    }
    *out = s;
    return 0;
}

static void reset(dec_prof *p)
{
    bl_state *s = p->state;
    if (s != NULL) {
        memset(s->ticks, 0, sizeof s->ticks);
        memset(s->count, 0, sizeof s->count);
        s->stamps = 0;
    }
}

/* The stamp the library writes, without the library. */
static void stamp(dec_prof *p, VkCommandBuffer cmd, uint32_t query)
{
    bl_state *s = p->state;
    if (p->dev->sync2) {
        vkCmdWriteTimestamp2(cmd, VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, s->pool, query);
    } else {
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, s->pool, query);
    }
}

/* Before recording a token: reset the pool from the host where allowed (the
 * previous token's fence has been waited on, so no query is in use). */
static int token_begin(dec_prof *p)
{
    bl_state *s = p->state;
    s->qnext = 0;
    s->ncalls = 0;
    if (p->dev->host_query_reset) {
        vkResetQueryPool(p->dev->device, s->pool, 0, s->qcap);
    }
    return 0;
}

/* The buffer is begun: reset in it when the host may not. */
static int cmd_begun(dec_prof *p, VkCommandBuffer cmd)
{
    bl_state *s = p->state;
    if (!p->dev->host_query_reset && p->segment == 0) {
        vkCmdResetQueryPool(cmd, s->pool, 0, s->qcap);
    }
    s->segment_start = true;
    return 0;
}

static int phase_begin(dec_prof *p, VkCommandBuffer cmd, uint32_t phase)
{
    bl_state *s = p->state;
    if (s->ncalls >= s->calls_cap || s->qnext + 2 > s->qcap) {
        return dec_prof_fail(p, "baseline: more phase calls in a token than planned (%u)",
                             s->calls_cap);
    }
    bl_call *c = &s->calls[s->ncalls];
    c->phase = phase;
    if (s->shared && s->ncalls > 0 && !s->segment_start) {
        c->begin = s->calls[s->ncalls - 1].end; /* one stamp per boundary */
    } else {
        c->begin = s->qnext++;
        stamp(p, cmd, c->begin);
    }
    c->end = UINT32_MAX;
    s->segment_start = false;
    return 0;
}

static int phase_end(dec_prof *p, VkCommandBuffer cmd, uint32_t phase)
{
    (void)phase;
    bl_state *s = p->state;
    bl_call *c = &s->calls[s->ncalls++]; /* phase_begin checked the room */
    c->end = s->qnext++;
    stamp(p, cmd, c->end);
    return 0;
}

/* After the token's fence: every result in one read, summed per phase. */
static int token_done(dec_prof *p)
{
    bl_state *s = p->state;
    if (s->qnext == 0) {
        return 0;
    }
    VkResult r = vkGetQueryPoolResults(
        p->dev->device, s->pool, 0, s->qnext, (size_t)s->qnext * sizeof(uint64_t), s->results,
        sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (r != VK_SUCCESS) {
        return dec_prof_fail(p, "baseline: vkGetQueryPoolResults failed: %s", vku_result_name(r));
    }
    for (uint32_t i = 0; i < s->ncalls; i++) {
        const bl_call *c = &s->calls[i];
        s->ticks[c->phase] += (s->results[c->end] - s->results[c->begin]) & s->mask;
        s->count[c->phase]++;
    }
    s->stamps += s->qnext;
    return 0;
}

const dec_prof_mode dec_mode_baseline = {.id = DEC_PROFILE_BASELINE,
                                         .name = "baseline",
                                         .create = create,
                                         .destroy = destroy,
                                         .reset = reset,
                                         .token_begin = token_begin,
                                         .cmd_begun = cmd_begun,
                                         .phase_begin = phase_begin,
                                         .phase_end = phase_end,
                                         .token_done = token_done};

const dec_prof_mode dec_mode_baseline_shared = {.id = DEC_PROFILE_BASELINE_SHARED,
                                                .name = "baseline-shared",
                                                .create = create,
                                                .destroy = destroy,
                                                .reset = reset,
                                                .token_begin = token_begin,
                                                .cmd_begun = cmd_begun,
                                                .phase_begin = phase_begin,
                                                .phase_end = phase_end,
                                                .token_done = token_done};

/* ---- the figures (decode.h) ---------------------------------------------------- */

/* The current mode's sums; NULL in any other mode (nothing stamped since the
 * last reset, as every switch resets). */
static const bl_state *current(const dec_engine *e)
{
    const dec_prof *p = dec_engine_prof(e);
    bool baseline = p->mode == &dec_mode_baseline || p->mode == &dec_mode_baseline_shared;
    return baseline ? p->state : NULL;
}

int dec_baseline_phase(const dec_engine *e, uint32_t phase_id, uint64_t *count, uint64_t *ns)
{
    if (phase_id >= VKPROF_PHASE_DEFAULT_COUNT) {
        return 1;
    }
    const bl_state *s = current(e);
    if (count != NULL) {
        *count = s != NULL ? s->count[phase_id] : 0;
    }
    if (ns != NULL) {
        *ns = s != NULL ? vkprof_ticks_to_ns(s->ticks[phase_id], s->period) : 0;
    }
    return 0;
}

uint64_t dec_baseline_stamps(const dec_engine *e)
{
    const bl_state *s = current(e);
    return s != NULL ? s->stamps : 0;
}
