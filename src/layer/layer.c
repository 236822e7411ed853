/* The loader interface (v2), instances, devices and the env config of
 * VK_LAYER_vkprof. See layer.h for the map of the files. */
#define _GNU_SOURCE
#include "layer.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define LYR_EXPORT __attribute__((visibility("default")))

lyr_config lyr_cfg;
lyr_map lyr_cmds;

static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

#define MAX_INSTANCES 64u
#define MAX_DEVICES 64u
static lyr_instance *_Atomic g_inst[MAX_INSTANCES];
static _Atomic(void *) g_inst_key[MAX_INSTANCES];
static lyr_device *_Atomic g_dev[MAX_DEVICES];
static _Atomic(void *) g_dev_key[MAX_DEVICES];
static uint32_t g_device_count; /* devices created in the process (index) */

static void *dispatch_key(const void *h)
{
    return *(void *const *)h;
}

void lyr_warn(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "vkprof layer: %s\n", buf);
}

bool lyr_buffer_scopes(void)
{
    return lyr_cfg.mode == LYR_MODE_CMDBUF || lyr_cfg.busy;
}

const char *lyr_mode_name(lyr_mode m)
{
    switch (m) {
    case LYR_MODE_LABEL: return "label";
    case LYR_MODE_CMDBUF: return "cmdbuf";
    default: return "dispatch";
    }
}

/* ---- env config ---------------------------------------------------------- */

static bool parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
    if (s == NULL || *s < '0' || *s > '9') {
        return false;
    }
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

static void load_config(void)
{
    lyr_config *c = &lyr_cfg;
    memset(c, 0, sizeof *c);
    c->on = true;
    c->busy = true;
    c->busy_every = 1;
    c->mode = LYR_MODE_DISPATCH;
    c->sample = 1;
    c->steps = LYR_STEPS_WAIT;
    c->trace_events = 1u << 18;
    snprintf(c->out_dir, sizeof c->out_dir, ".");

    const char *v = getenv("VKPROF_LAYER");
    if (v != NULL && !vkprof_parse_flag(v, &c->on)) {
        lyr_warn("VKPROF_LAYER='%s' is not on/off (1, on, true, yes / 0, off, false, no); "
                 "using on",
                 v);
        c->on = true;
    }
    v = getenv("VKPROF_LAYER_MODE");
    if (v != NULL && *v != '\0') {
        if (strcmp(v, "dispatch") == 0) {
            c->mode = LYR_MODE_DISPATCH;
        } else if (strcmp(v, "label") == 0) {
            c->mode = LYR_MODE_LABEL;
        } else if (strcmp(v, "cmdbuf") == 0) {
            c->mode = LYR_MODE_CMDBUF;
        } else {
            lyr_warn("VKPROF_LAYER_MODE='%s' is not dispatch, label or cmdbuf; using dispatch", v);
        }
    }
    v = getenv("VKPROF_LAYER_SAMPLE");
    if (v != NULL && *v != '\0' && !parse_u32(v, 1, 1000000, &c->sample)) {
        lyr_warn("VKPROF_LAYER_SAMPLE='%s' is not a whole number 1..1000000; using 1", v);
        c->sample = 1;
    }
    v = getenv("VKPROF_LAYER_ROTATE");
    if (v != NULL && *v != '\0' && !parse_u32(v, 0, 1u << 20, &c->rotate)) {
        lyr_warn("VKPROF_LAYER_ROTATE='%s' is not a whole number 0..1048576; using 0 (every "
                 "dispatch)",
                 v);
        c->rotate = 0;
    }
    v = getenv("VKPROF_LAYER_BUSY");
    bool busy_asked = false; /* on, said so: label mode's busy scopes are asked for */
    if (v != NULL && *v != '\0') {
        if (strcmp(v, "1") == 0 || strcmp(v, "on") == 0) {
            c->busy = true;
            busy_asked = true;
        } else if (strcmp(v, "0") == 0 || strcmp(v, "off") == 0) {
            c->busy = false;
        } else {
            lyr_warn("VKPROF_LAYER_BUSY='%s' is not on or off; using on", v);
        }
    }
    v = getenv("VKPROF_LAYER_BUSY_EVERY");
    if (v != NULL && *v != '\0' && !parse_u32(v, 1, 1000000, &c->busy_every)) {
        lyr_warn("VKPROF_LAYER_BUSY_EVERY='%s' is not a whole number 1..1000000; using 1 (the "
                 "busy scopes in every step)",
                 v);
        c->busy_every = 1;
    }
    v = getenv("VKPROF_LAYER_BUSY_BEGIN");
    if (v != NULL && *v != '\0') {
        if (strcmp(v, "top") == 0) {
            c->busy_top = true;
        } else if (strcmp(v, "all") == 0) {
            c->busy_top = false;
        } else {
            lyr_warn("VKPROF_LAYER_BUSY_BEGIN='%s' is not top or all; using all", v);
        }
    }
    v = getenv("VKPROF_LAYER_DIAG_STAMPS");
    if (v != NULL && *v != '\0') {
        if (strcmp(v, "top") == 0) {
            c->diag_top = true;
            lyr_warn("VKPROF_LAYER_DIAG_STAMPS=top: every stamp waits for nothing; the times "
                     "of this run are meaningless (a diagnostic of what the stamps cost)");
        } else if (strcmp(v, "none") == 0) {
            c->diag_top = c->diag_none = true;
            lyr_warn("VKPROF_LAYER_DIAG_STAMPS=none: no stamp is recorded; nothing of this run "
                     "is timed and every scope is lost (a diagnostic of what the stamps cost)");
        } else if (strcmp(v, "off") != 0) {
            lyr_warn("VKPROF_LAYER_DIAG_STAMPS='%s' is not top, none or off; using off", v);
        }
    }
    v = getenv("VKPROF_LAYER_COST_BLOCK");
    if (v != NULL && *v != '\0' && !parse_u32(v, 0, 1u << 20, &c->cost_block)) {
        lyr_warn("VKPROF_LAYER_COST_BLOCK='%s' is not a whole number 0..1048576; using 0 (no cost "
                 "probe)",
                 v);
        c->cost_block = 0;
    }
    v = getenv("VKPROF_LAYER_TRACE_EVENTS");
    if (v != NULL && *v != '\0' && !parse_u32(v, 1024, 1u << 26, &c->trace_events)) {
        lyr_warn("VKPROF_LAYER_TRACE_EVENTS='%s' is not a whole number 1024..67108864; "
                 "using %u",
                 v, 1u << 18);
        c->trace_events = 1u << 18;
    }
    v = getenv("VKPROF_LAYER_OUTPUT_DIR");
    if (v != NULL && *v != '\0') {
        struct stat st;
        if (strlen(v) >= sizeof c->out_dir - 80) {
            lyr_warn("VKPROF_LAYER_OUTPUT_DIR is too long; using the current directory");
        } else {
            if (stat(v, &st) != 0) {
                (void)mkdir(v, 0777);
            }
            if (stat(v, &st) != 0 || !S_ISDIR(st.st_mode)) {
                lyr_warn("VKPROF_LAYER_OUTPUT_DIR='%s' is not a directory; using the current "
                         "directory",
                         v);
            } else {
                snprintf(c->out_dir, sizeof c->out_dir, "%s", v);
            }
        }
    }
    v = getenv("VKPROF_LAYER_STEPS");
    if (v != NULL && *v != '\0') {
        if (strcmp(v, "wait") == 0) {
            c->steps = LYR_STEPS_WAIT;
        } else if (strcmp(v, "none") == 0) {
            c->steps = LYR_STEPS_NONE;
        } else if (strncmp(v, "label:", 6) == 0 && v[6] != '\0' &&
                   strlen(v + 6) < sizeof c->step_label) {
            c->steps = LYR_STEPS_LABEL;
            snprintf(c->step_label, sizeof c->step_label, "%s", v + 6);
        } else {
            lyr_warn("VKPROF_LAYER_STEPS='%s' is not wait, none or label:<text>; using wait", v);
        }
    }
    v = getenv("VKPROF_LAYER_TRACE_KEEP");
    if (v != NULL && *v != '\0') {
        if (strcmp(v, "first") == 0 || strcmp(v, "last") == 0) {
            c->keep_last = strcmp(v, "last") == 0;
        } else {
            lyr_warn("VKPROF_LAYER_TRACE_KEEP='%s' is not first or last; using first", v);
        }
    }
    c->trace_format = VKPROF_TRACE_FORMAT_JSON;
    v = getenv("VKPROF_LAYER_TRACE_FORMAT");
    if (v != NULL && *v != '\0') {
        if (strcmp(v, "json") == 0) {
            c->trace_format = VKPROF_TRACE_FORMAT_JSON;
        } else if (strcmp(v, "pftrace") == 0 || strcmp(v, "perfetto") == 0) {
            c->trace_format = VKPROF_TRACE_FORMAT_PFTRACE;
        } else if (strcmp(v, "both") == 0) {
            c->trace_format = VKPROF_TRACE_FORMAT_BOTH;
        } else {
            lyr_warn("VKPROF_LAYER_TRACE_FORMAT='%s' is not json, pftrace or both; using json", v);
        }
    }
    v = getenv("VKPROF_LAYER_RUN");
    if (v != NULL && *v != '\0') {
        bool plain = strlen(v) < sizeof c->run;
        for (const char *p = v; plain && *p; p++) {
            plain = (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
                    (*p >= 'A' && *p <= 'Z') || *p == '-' || *p == '.' || *p == '_';
        }
        if (plain) {
            snprintf(c->run, sizeof c->run, "%s", v);
        } else {
            lyr_warn("VKPROF_LAYER_RUN='%.80s' is not a run id ([0-9A-Za-z._-], < 64 bytes); "
                     "ignored",
                     v);
        }
    }
    c->auto_names = true;
    v = getenv("VKPROF_LAYER_AUTO_NAMES");
    if (v != NULL && *v != '\0') {
        if (strcmp(v, "1") == 0 || strcmp(v, "on") == 0) {
            c->auto_names = true;
        } else if (strcmp(v, "0") == 0 || strcmp(v, "off") == 0) {
            c->auto_names = false;
        } else {
            lyr_warn("VKPROF_LAYER_AUTO_NAMES='%s' is not on or off; using on", v);
        }
    }
    /* The rotating window moves at each step, over the dispatches' stamps:
     * with no steps it would never move, and other modes stamp regions. */
    if (c->rotate > 0 && (c->mode != LYR_MODE_DISPATCH || c->steps == LYR_STEPS_NONE)) {
        lyr_warn("VKPROF_LAYER_ROTATE=%u needs --mode dispatch and steps (not "
                 "VKPROF_LAYER_STEPS=none); every dispatch is timed instead",
                 c->rotate);
        c->rotate = 0;
    }
    /* the buffers' busy scopes: beside the rotating window (by default), and
     * around label mode's regions where asked for (VKPROF_LAYER_BUSY=on: the
     * regions' shares are then of the busy time; issue 26) */
    c->busy = c->busy && (c->rotate > 0 || (c->mode == LYR_MODE_LABEL && busy_asked));
    if (!c->busy || c->rotate == 0) {
        c->busy_every = 1; /* busy steps of their own only beside the window */
    }
    /* the probe's blocks are of steps: with none, every step would be one */
    if (c->cost_block > 0 && c->steps == LYR_STEPS_NONE) {
        lyr_warn("VKPROF_LAYER_COST_BLOCK=%u needs steps (not VKPROF_LAYER_STEPS=none); no cost "
                 "probe",
                 c->cost_block);
        c->cost_block = 0;
    }
    v = getenv("VKPROF_LAYER_NAMES");
    if (v != NULL && *v != '\0' && c->on) {
        char err[512] = "";
        c->names = vkl_name_map_load(v, err, sizeof err);
        if (c->names == NULL) {
            lyr_warn("VKPROF_LAYER_NAMES: %s; no name map is used", err);
        }
    }
    lyr_map_init(&lyr_cmds, 4096);
}

/* The child of a fork: Vulkan objects do not cross a fork, and the parent's
 * devices, contexts and files are the parent's. They are forgotten here
 * (never timed, never written); the child's own instances and devices, if
 * it makes any, are its own process's. Only plain stores: another thread
 * may have held any lock at the fork. */
static void forked_child(void)
{
    for (uint32_t i = 0; i < MAX_DEVICES; i++) {
        lyr_device *d = atomic_load(&g_dev[i]);
        if (d == NULL || atomic_load(&g_dev_key[i]) == NULL) {
            continue;
        }
        d->inherited = true;
        d->intercept = false;
        d->idx = NULL;
        for (uint32_t f = 0; f < d->nfamilies; f++) {
            atomic_store(&d->fam[f].ctx, NULL);
            atomic_store(&d->fam[f].ctx_sim, NULL);
        }
    }
    pthread_mutex_init(&g_lock, NULL);
    lyr_embedded_forked_child();
    lyr_proc_forked_child();
}

static void register_atfork(void)
{
    load_config();
    (void)pthread_atfork(NULL, NULL, forked_child);
}

static void config_once(void)
{
    pthread_once(&cfg_once, register_atfork);
}

/* ---- tables of instances and devices ------------------------------------- */

static lyr_instance *instance_get(const void *h)
{
    void *key = dispatch_key(h);
    for (uint32_t i = 0; i < MAX_INSTANCES; i++) {
        if (atomic_load_explicit(&g_inst_key[i], memory_order_acquire) == key) {
            return atomic_load_explicit(&g_inst[i], memory_order_acquire);
        }
    }
    return NULL;
}

lyr_device *lyr_device_get(const void *h)
{
    void *key = dispatch_key(h);
    for (uint32_t i = 0; i < MAX_DEVICES; i++) {
        if (atomic_load_explicit(&g_dev_key[i], memory_order_acquire) == key) {
            return atomic_load_explicit(&g_dev[i], memory_order_acquire);
        }
    }
    return NULL;
}

static bool slot_put(_Atomic(void *) *keys, void *_Atomic *vals, uint32_t n, void *key, void *val)
{
    for (uint32_t i = 0; i < n; i++) {
        if (atomic_load(&keys[i]) == NULL) {
            atomic_store(&vals[i], val);
            atomic_store_explicit(&keys[i], key, memory_order_release);
            return true;
        }
    }
    return false;
}

static void *slot_take(_Atomic(void *) *keys, void *_Atomic *vals, uint32_t n, void *key)
{
    for (uint32_t i = 0; i < n; i++) {
        if (atomic_load(&keys[i]) == key) {
            void *v = atomic_load(&vals[i]);
            atomic_store(&keys[i], NULL);
            atomic_store(&vals[i], NULL);
            return v;
        }
    }
    return NULL;
}

/* ---- contexts and phases ------------------------------------------------ */

vkprof_context lyr_family_ctx(lyr_device *d, uint32_t family)
{
    if (family >= d->nfamilies) {
        return NULL;
    }
    return atomic_load_explicit(&d->fam[family].ctx, memory_order_acquire);
}

static PFN_vkVoidFunction VKAPI_CALL lib_gdpa(VkDevice device, const char *name);

static void lib_log(void *user, vkprof_log_level level, vkprof_result code, const char *message)
{
    (void)user;
    (void)code;
    if (level <= VKPROF_LOG_WARN) {
        lyr_warn("%s", message);
    }
}

static const char *const span_names[LYR_SPAN_COUNT] = {
    "vkQueueSubmit",         "vkWaitForFences",      "vkGetFenceStatus",
    "vkWaitSemaphores",      "vkQueueWaitIdle",      "vkDeviceWaitIdle",
    "vkprof layer: collect", "vkprof layer: submit", "vkBeginCommandBuffer..vkEndCommandBuffer"};

/* Under d->lock. */
static vkprof_context create_ctx(lyr_device *d, uint32_t family, bool sim)
{
    lyr_family *f = &d->fam[family];
    vkprof_context_desc desc = vkprof_default_desc();
    desc.instance = d->inst->handle;
    desc.physical_device = d->phys;
    desc.device = d->handle;
    desc.queue_family_index = family;
    desc.get_instance_proc_addr = d->inst->gipa;
    desc.get_device_proc_addr = lib_gdpa;
    desc.enable = VKPROF_ENABLE_ON;
    desc.host_query_reset = d->host_reset && !sim;
    desc.synchronization2 = d->sync2 ? VKPROF_FEATURE_ENABLED : VKPROF_FEATURE_DISABLED;
    desc.log = lib_log;
    desc.log_level = VKPROF_LOG_WARN;
    desc.timing_mode = VKPROF_TIMING_RING;
    desc.shared_boundaries = lyr_cfg.mode == LYR_MODE_DISPATCH;
    desc.sample_every = 1;               /* the layer samples submits itself */
    desc.rotate_scopes = lyr_cfg.rotate; /* the library's window, moved by vkprof_step */
    desc.rotate_first_calls = true;      /* a pipeline's compile counts once */
    /* results are read after the app's waits (queue.c), not in its submits */
    desc.submit_collect = VKPROF_SUBMIT_COLLECT_OWN;
    /* the trace's GPU busy counter only where every dispatch of a step is
     * timed (the library knows its own rotation; not the layer's sampling,
     * its cost probe's unprofiled blocks, or label mode's unlabelled work) */
    desc.trace_gpu_busy = lyr_cfg.sample > 1 || lyr_cfg.cost_block > 0 ? VKPROF_FEATURE_DISABLED
                          /* rotating, or label regions: every step's work lies in its buffers'
                           * outer scopes */
                          : lyr_cfg.busy                   ? VKPROF_FEATURE_ENABLED
                          : lyr_cfg.mode == LYR_MODE_LABEL ? VKPROF_FEATURE_DISABLED
                                                           : VKPROF_FEATURE_UNKNOWN;
    desc.outer_begin_top = lyr_cfg.busy_top ? VKPROF_FEATURE_ENABLED : VKPROF_FEATURE_UNKNOWN;
    desc.host_level = VKPROF_HOST_ALL;
    desc.report_every = UINT32_MAX;
    desc.trace_path = "";
    desc.trace_capacity = lyr_cfg.trace_events;
    desc.trace_keep = lyr_cfg.keep_last ? VKPROF_TRACE_KEEP_LAST : VKPROF_TRACE_KEEP_FIRST;
    desc.trace_format = (vkprof_trace_format)lyr_cfg.trace_format;
    /* the layer reads only VKPROF_LAYER_*: none of the library's variables */
    desc.environment = VKPROF_ENV_IGNORE;
    char spool[2200], label[128];
    if (lyr_spool_path(d, family, sim, spool, sizeof spool)) {
        desc.trace_spool = spool;
    }
    snprintf(label, sizeof label, "device %u, queue family %u%s", d->index, family,
             sim ? ", simultaneous use" : "");
    desc.trace_label = label;
    vkprof_context ctx = NULL;
    vkprof_result r = vkprof_create(&desc, &ctx);
    lyr_idx_context(d, family, sim, r == VKPROF_OK ? ctx : NULL);
    if (r != VKPROF_OK && sim) {
        lyr_warn("device '%s' family %u: vkprof_create failed (%s); simultaneous-use command "
                 "buffers are untimed",
                 d->name, family, vkprof_result_name(r));
        return NULL;
    }
    if (r != VKPROF_OK) {
        f->ctx_failed = true;
        snprintf(f->reason, sizeof f->reason, "vkprof_create: %s", vkprof_result_name(r));
        lyr_warn("device '%s' family %u: vkprof_create failed (%s); the family is untimed", d->name,
                 family, vkprof_result_name(r));
        return NULL;
    }
    if (!vkprof_active(ctx) && !sim) {
        snprintf(f->reason, sizeof f->reason, "no timestamps");
    }
    (void)vkprof_trace_begin(ctx, 0);
    if (sim) {
        atomic_store_explicit(&f->ctx_sim, ctx, memory_order_release);
        return ctx;
    }
    for (uint32_t i = 0; i < LYR_SPAN_COUNT; i++) {
        (void)vkprof_register_bucket(ctx, span_names[i], true, &f->spans[i]);
    }
    atomic_store_explicit(&f->ctx, ctx, memory_order_release);
    return ctx;
}

vkprof_context lyr_ensure_ctx(lyr_device *d, uint32_t family)
{
    if (family >= d->nfamilies || !d->intercept) {
        return NULL;
    }
    vkprof_context ctx = lyr_family_ctx(d, family);
    if (ctx != NULL || d->fam[family].ctx_failed) {
        return ctx;
    }
    pthread_mutex_lock(&d->lock);
    d->fam[family].used = true;
    ctx = lyr_family_ctx(d, family);
    if (ctx == NULL && !d->fam[family].ctx_failed && !d->finished) {
        ctx = create_ctx(d, family, false);
    }
    pthread_mutex_unlock(&d->lock);
    return ctx;
}

vkprof_context lyr_ensure_sim_ctx(lyr_device *d, uint32_t family)
{
    if (family >= d->nfamilies || lyr_family_ctx(d, family) == NULL) {
        return NULL;
    }
    vkprof_context ctx = atomic_load_explicit(&d->fam[family].ctx_sim, memory_order_acquire);
    if (ctx != NULL) {
        return ctx;
    }
    pthread_mutex_lock(&d->lock);
    ctx = atomic_load(&d->fam[family].ctx_sim);
    if (ctx == NULL && !d->finished) {
        ctx = create_ctx(d, family, true);
    }
    pthread_mutex_unlock(&d->lock);
    return ctx;
}

uint32_t lyr_phase_locked(vkprof_context ctx, const char *name)
{
    if (ctx == NULL || name == NULL || name[0] == '\0') {
        return LYR_NO_PHASE;
    }
    char cut[VKPROF_MAX_NAME + 1];
    snprintf(cut, sizeof cut, "%s", name);
    vkprof_phase p;
    if (vkprof_register_phase(ctx, cut, &p) != VKPROF_OK) {
        return LYR_NO_PHASE;
    }
    return p;
}

uint32_t lyr_phase(lyr_device *d, vkprof_context ctx, const char *name)
{
    pthread_mutex_lock(&d->lock);
    uint32_t p = lyr_phase_locked(ctx, name);
    pthread_mutex_unlock(&d->lock);
    return p;
}

/* VKPROF_LAYER_DIAG_STAMPS=top: the library's stamps, at the top of the
 * pipe (a diagnostic: they wait for nothing and measure nothing) */
static VKAPI_ATTR void VKAPI_CALL diag_ts2(VkCommandBuffer cb, VkPipelineStageFlags2 stage,
                                           VkQueryPool pool, uint32_t query)
{
    (void)stage;
    if (!lyr_cfg.diag_none) {
        lyr_device_get(cb)->diag_ts2(cb, VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT, pool, query);
    }
}

static VKAPI_ATTR void VKAPI_CALL diag_ts(VkCommandBuffer cb, VkPipelineStageFlagBits stage,
                                          VkQueryPool pool, uint32_t query)
{
    (void)stage;
    if (!lyr_cfg.diag_none) {
        lyr_device_get(cb)->diag_ts(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool, query);
    }
}

/* ---- the library's function table ---------------------------------------
 * The library calls down the chain through the next layer's pointers; what
 * the device does not have enabled is withheld, so the library never calls
 * a function of an extension or feature that is off. */
static PFN_vkVoidFunction VKAPI_CALL lib_gdpa(VkDevice device, const char *name)
{
    lyr_device *d = lyr_device_get(device);
    if (d == NULL || name == NULL) {
        return NULL;
    }
    if (strncmp(name, "vkGetCalibratedTimestamps", 25) == 0) {
        /* only the name of an extension the device has enabled */
        bool khr = strcmp(name + 25, "KHR") == 0, ext = strcmp(name + 25, "EXT") == 0;
        if (!((khr && d->cal_khr) || (ext && d->cal_ext))) {
            return NULL;
        }
    }
    if (!d->host_reset && strncmp(name, "vkResetQueryPool", 16) == 0) {
        return NULL;
    }
    if (!d->sync2 && (strncmp(name, "vkCmdWriteTimestamp2", 20) == 0 ||
                      strncmp(name, "vkQueueSubmit2", 14) == 0)) {
        return NULL;
    }
    if (lyr_cfg.diag_top && strncmp(name, "vkCmdWriteTimestamp", 19) == 0) {
        PFN_vkVoidFunction f = d->gdpa(device, name);
        if (f == NULL) {
            return NULL;
        }
        if (name[19] == '2') {
            d->diag_ts2 = (PFN_vkCmdWriteTimestamp2)f;
            return (PFN_vkVoidFunction)diag_ts2;
        }
        d->diag_ts = (PFN_vkCmdWriteTimestamp)f;
        return (PFN_vkVoidFunction)diag_ts;
    }
    return d->gdpa(device, name);
}

/* ---- instance ------------------------------------------------------------ */

static VkLayerInstanceCreateInfo *instance_link(const VkInstanceCreateInfo *ci)
{
    for (const VkBaseInStructure *p = ci->pNext; p != NULL; p = p->pNext) {
        if (p->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO &&
            ((const VkLayerInstanceCreateInfo *)(const void *)p)->function == VK_LAYER_LINK_INFO) {
            return (VkLayerInstanceCreateInfo *)(uintptr_t)(const void *)p;
        }
    }
    return NULL;
}

static VKAPI_ATTR VkResult VKAPI_CALL lyr_CreateInstance(const VkInstanceCreateInfo *ci,
                                                         const VkAllocationCallbacks *alloc,
                                                         VkInstance *out)
{
    config_once();
    VkLayerInstanceCreateInfo *link = instance_link(ci);
    if (link == NULL || link->u.pLayerInfo == NULL) {
        return VK_ERROR_INITIALIZATION_FAILED;
    }
    PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    PFN_vkCreateInstance create =
        (PFN_vkCreateInstance)(void (*)(void))gipa(VK_NULL_HANDLE, "vkCreateInstance");
    if (create == NULL) {
        return VK_ERROR_INITIALIZATION_FAILED;
    }
    link->u.pLayerInfo = link->u.pLayerInfo->pNext;
    VkResult vr = create(ci, alloc, out);
    if (vr != VK_SUCCESS) {
        return vr;
    }
    lyr_instance *in = calloc(1, sizeof *in);
    if (in == NULL) {
        return vr; /* the app's instance works; we just do not see it */
    }
    in->handle = *out;
    in->key = dispatch_key(*out);
    in->gipa = gipa;
    in->api_version = ci->pApplicationInfo != NULL && ci->pApplicationInfo->apiVersion != 0
                          ? ci->pApplicationInfo->apiVersion
                          : VK_API_VERSION_1_0;
    for (uint32_t i = 0; i < ci->enabledExtensionCount; i++) {
        if (strcmp(ci->ppEnabledExtensionNames[i],
                   VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME) == 0) {
            in->props2_ext = true;
        }
    }
#define LOAD_I(field, name) in->field = (void *)gipa(*out, name)
    LOAD_I(DestroyInstance, "vkDestroyInstance");
    LOAD_I(GetPhysicalDeviceProperties, "vkGetPhysicalDeviceProperties");
    LOAD_I(GetPhysicalDeviceQueueFamilyProperties, "vkGetPhysicalDeviceQueueFamilyProperties");
    LOAD_I(EnumerateDeviceExtensionProperties, "vkEnumerateDeviceExtensionProperties");
    if (in->api_version >= VK_API_VERSION_1_1) {
        LOAD_I(GetPhysicalDeviceFeatures2, "vkGetPhysicalDeviceFeatures2");
    } else if (in->props2_ext) {
        LOAD_I(GetPhysicalDeviceFeatures2, "vkGetPhysicalDeviceFeatures2KHR");
    }
#undef LOAD_I
    pthread_mutex_lock(&g_lock);
    if (!slot_put(g_inst_key, (void *_Atomic *)g_inst, MAX_INSTANCES, in->key, in)) {
        free(in);
    }
    pthread_mutex_unlock(&g_lock);
    lyr_note_instance();
    return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL lyr_DestroyInstance(VkInstance instance,
                                                      const VkAllocationCallbacks *alloc)
{
    if (instance == VK_NULL_HANDLE) {
        return;
    }
    lyr_instance *in = instance_get(instance);
    if (in == NULL) {
        return;
    }
    PFN_vkDestroyInstance destroy = in->DestroyInstance;
    pthread_mutex_lock(&g_lock);
    (void)slot_take(g_inst_key, (void *_Atomic *)g_inst, MAX_INSTANCES, in->key);
    pthread_mutex_unlock(&g_lock);
    destroy(instance, alloc);
    free(in);
}

/* ---- device creation ------------------------------------------------------- */

static VkLayerDeviceCreateInfo *device_link(const VkDeviceCreateInfo *ci)
{
    for (const VkBaseInStructure *p = ci->pNext; p != NULL; p = p->pNext) {
        if (p->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO &&
            ((const VkLayerDeviceCreateInfo *)(const void *)p)->function == VK_LAYER_LINK_INFO) {
            return (VkLayerDeviceCreateInfo *)(uintptr_t)(const void *)p;
        }
    }
    return NULL;
}

/* Sizes of the structs the layer may copy while rewriting a chain up to the
 * app's VkPhysicalDeviceVulkan12Features; another struct before it: no copy,
 * and the library resets its queries in the command buffer instead. */
static size_t known_size(VkStructureType t)
{
    switch (t) {
    case VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO: return sizeof(VkLayerDeviceCreateInfo);
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2: return sizeof(VkPhysicalDeviceFeatures2);
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES:
        return sizeof(VkPhysicalDeviceVulkan11Features);
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES:
        return sizeof(VkPhysicalDeviceVulkan12Features);
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES:
        return sizeof(VkPhysicalDeviceVulkan13Features);
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES:
        return sizeof(VkPhysicalDevice16BitStorageFeatures);
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES:
        return sizeof(VkPhysicalDeviceSubgroupSizeControlFeatures);
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES:
        return sizeof(VkPhysicalDeviceMaintenance4Features);
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES:
        return sizeof(VkPhysicalDeviceShaderFloat16Int8Features);
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES:
        return sizeof(VkPhysicalDeviceSynchronization2Features);
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES:
        return sizeof(VkPhysicalDeviceTimelineSemaphoreFeatures);
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES:
        return sizeof(VkPhysicalDevice8BitStorageFeatures);
    case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES:
        return sizeof(VkPhysicalDeviceBufferDeviceAddressFeatures);
    default: return 0;
    }
}

#define MAX_COPIED 16
typedef struct create_edit {
    VkDeviceCreateInfo ci;
    bool app_calibrated, app_host_reset; /* what the app's own info enables */
    const char *exts[256];
    _Alignas(16) unsigned char copies[MAX_COPIED][512];
} create_edit;

static bool device_supports_ext(lyr_instance *in, VkPhysicalDevice phys, const char *name)
{
    uint32_t n = 0;
    if (in->EnumerateDeviceExtensionProperties == NULL ||
        in->EnumerateDeviceExtensionProperties(phys, NULL, &n, NULL) != VK_SUCCESS || n == 0) {
        return false;
    }
    VkExtensionProperties *p = calloc(n, sizeof *p);
    bool found = false;
    if (p != NULL && in->EnumerateDeviceExtensionProperties(phys, NULL, &n, p) == VK_SUCCESS) {
        for (uint32_t i = 0; i < n && !found; i++) {
            found = strcmp(p[i].extensionName, name) == 0;
        }
    }
    free(p);
    return found;
}

static bool host_reset_supported(lyr_instance *in, VkPhysicalDevice phys)
{
    if (in->GetPhysicalDeviceFeatures2 == NULL) {
        return false;
    }
    VkPhysicalDeviceVulkan12Features f12;
    memset(&f12, 0, sizeof f12);
    f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    VkPhysicalDeviceFeatures2 f2;
    memset(&f2, 0, sizeof f2);
    f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    f2.pNext = &f12;
    in->GetPhysicalDeviceFeatures2(phys, &f2);
    return f12.hostQueryReset == VK_TRUE;
}

/* Edit the app's create info as little as the layer needs: calibrated
 * timestamps, and hostQueryReset inside the app's own Vulkan 1.2 features.
 * Records what the device then has in d. Returns the info to pass down. */
static const VkDeviceCreateInfo *edit_create_info(lyr_device *d, const VkDeviceCreateInfo *app,
                                                  create_edit *e, uint32_t dev_api)
{
    lyr_instance *in = d->inst;
    e->ci = *app;
    bool edited = false;
    /* what the app enabled */
    bool has_khr = false, has_ext = false, sync2_ext = false, hqr_ext = false;
    for (uint32_t i = 0; i < app->enabledExtensionCount; i++) {
        const char *n = app->ppEnabledExtensionNames[i];
        has_khr |= strcmp(n, "VK_KHR_calibrated_timestamps") == 0;
        has_ext |= strcmp(n, "VK_EXT_calibrated_timestamps") == 0;
        sync2_ext |= strcmp(n, "VK_KHR_synchronization2") == 0;
        hqr_ext |= strcmp(n, "VK_EXT_host_query_reset") == 0;
    }
    uint32_t api = in->api_version < dev_api ? in->api_version : dev_api;
    const VkBaseInStructure *v12 = NULL;
    for (const VkBaseInStructure *p = app->pNext; p != NULL; p = p->pNext) {
        if (p->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES) {
            v12 = p;
            if (((const VkPhysicalDeviceVulkan12Features *)(const void *)p)->hostQueryReset) {
                d->host_reset = true;
            }
        } else if (p->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES) {
            if (((const VkPhysicalDeviceHostQueryResetFeatures *)(const void *)p)->hostQueryReset &&
                (hqr_ext || api >= VK_API_VERSION_1_2)) {
                d->host_reset = true;
            }
        } else if (p->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES) {
            if (((const VkPhysicalDeviceVulkan13Features *)(const void *)p)->synchronization2) {
                d->sync2 = true;
            }
        } else if (p->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES) {
            if (((const VkPhysicalDeviceSynchronization2Features *)(const void *)p)
                    ->synchronization2 &&
                (sync2_ext || api >= VK_API_VERSION_1_3)) {
                d->sync2 = true;
            }
        }
    }
    e->app_host_reset = d->host_reset;
    e->app_calibrated = has_khr || has_ext;
    /* calibrated timestamps: needs Vulkan 1.1 or the properties2 instance extension */
    if (has_khr || has_ext) {
        d->calibrated = true;
        d->cal_khr = has_khr;
        d->cal_ext = has_ext;
    } else if ((api >= VK_API_VERSION_1_1 || in->props2_ext) && app->enabledExtensionCount < 255) {
        /* EXT first where both are offered: the same function, and a
         * validation layer older than the KHR promotion (Vulkan 1.3.270,
         * Debian 12 ships 1.3.239) knows only EXT; it warns that an
         * extension it does not know "may adversely affect validation" */
        const char *want = NULL;
        if (device_supports_ext(in, d->phys, "VK_EXT_calibrated_timestamps")) {
            want = "VK_EXT_calibrated_timestamps";
            d->cal_ext = true;
        } else if (device_supports_ext(in, d->phys, "VK_KHR_calibrated_timestamps")) {
            want = "VK_KHR_calibrated_timestamps";
            d->cal_khr = true;
        }
        if (want != NULL) {
            for (uint32_t i = 0; i < app->enabledExtensionCount; i++) {
                e->exts[i] = app->ppEnabledExtensionNames[i];
            }
            e->exts[app->enabledExtensionCount] = want;
            e->ci.enabledExtensionCount = app->enabledExtensionCount + 1;
            e->ci.ppEnabledExtensionNames = e->exts;
            d->calibrated = true;
            edited = true;
        }
    }
    /* hostQueryReset inside the app's VkPhysicalDeviceVulkan12Features */
    if (!d->host_reset && v12 != NULL && api >= VK_API_VERSION_1_2 &&
        host_reset_supported(in, d->phys)) {
        /* copy every struct from the head of the chain to v12, relinked */
        const VkBaseInStructure *path[MAX_COPIED];
        uint32_t n = 0;
        bool ok = true;
        for (const VkBaseInStructure *p = app->pNext; ok; p = p->pNext) {
            size_t sz = known_size(p->sType);
            if (n == MAX_COPIED || sz == 0 || sz > sizeof e->copies[0]) {
                ok = false;
                break;
            }
            path[n++] = p;
            if (p == v12) {
                break;
            }
        }
        if (ok) {
            const void *tail = v12->pNext;
            for (uint32_t i = n; i-- > 0;) {
                memcpy(e->copies[i], path[i], known_size(path[i]->sType));
                ((VkBaseOutStructure *)(void *)e->copies[i])->pNext = (VkBaseOutStructure *)tail;
                tail = e->copies[i];
            }
            ((VkPhysicalDeviceVulkan12Features *)(void *)e->copies[n - 1])->hostQueryReset =
                VK_TRUE;
            e->ci.pNext = tail;
            d->host_reset = true;
            edited = true;
        }
    }
    return edited ? &e->ci : app;
}

static void load_device_funcs(lyr_device *d)
{
#define LYR_X_(name) d->next.name = (PFN_vk##name)(void *)d->gdpa(d->handle, "vk" #name);
    LYR_DEVICE_FUNCS(LYR_X_)
#undef LYR_X_
}

static VKAPI_ATTR VkResult VKAPI_CALL lyr_CreateDevice(VkPhysicalDevice phys,
                                                       const VkDeviceCreateInfo *ci,
                                                       const VkAllocationCallbacks *alloc,
                                                       VkDevice *out)
{
    config_once();
    VkLayerDeviceCreateInfo *link = device_link(ci);
    lyr_instance *in = instance_get(phys);
    if (link == NULL || link->u.pLayerInfo == NULL || in == NULL) {
        return VK_ERROR_INITIALIZATION_FAILED;
    }
    PFN_vkGetInstanceProcAddr gipa = link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
    PFN_vkGetDeviceProcAddr gdpa = link->u.pLayerInfo->pfnNextGetDeviceProcAddr;
    PFN_vkCreateDevice create =
        (PFN_vkCreateDevice)(void (*)(void))gipa(in->handle, "vkCreateDevice");
    if (create == NULL) {
        return VK_ERROR_INITIALIZATION_FAILED;
    }
    link->u.pLayerInfo = link->u.pLayerInfo->pNext;

    lyr_device *d = calloc(1, sizeof *d);
    create_edit *e = calloc(1, sizeof *e);
    if (d == NULL || e == NULL) {
        free(d);
        free(e);
        return create(phys, ci, alloc, out);
    }
    d->inst = in;
    d->phys = phys;
    d->gdpa = gdpa;
    d->intercept = lyr_cfg.on;
    VkPhysicalDeviceProperties props;
    memset(&props, 0, sizeof props);
    in->GetPhysicalDeviceProperties(phys, &props);
    memcpy(d->name, props.deviceName, sizeof d->name);
    d->name[sizeof d->name - 1] = '\0';

    const VkDeviceCreateInfo *pass =
        d->intercept ? edit_create_info(d, ci, e, props.apiVersion) : ci;
    VkResult vr = create(phys, pass, alloc, out);
    if (vr != VK_SUCCESS && pass != ci) {
        lyr_warn("vkCreateDevice with calibrated timestamps / hostQueryReset failed (%d); "
                 "creating the app's device unchanged",
                 (int)vr);
        d->calibrated = e->app_calibrated;
        if (!e->app_calibrated) {
            d->cal_khr = d->cal_ext = false; /* only what the layer added is gone */
        }
        d->host_reset = e->app_host_reset;
        vr = create(phys, ci, alloc, out);
    }
    free(e);
    if (vr != VK_SUCCESS) {
        free(d);
        return vr;
    }
    d->handle = *out;
    d->key = dispatch_key(*out);
    load_device_funcs(d);
    pthread_mutex_init(&d->lock, NULL);
    pthread_mutex_init(&d->cost_lock, NULL);

    uint32_t nf = 0;
    in->GetPhysicalDeviceQueueFamilyProperties(phys, &nf, NULL);
    VkQueueFamilyProperties fp[LYR_MAX_FAMILIES];
    if (nf > LYR_MAX_FAMILIES) {
        nf = LYR_MAX_FAMILIES;
    }
    in->GetPhysicalDeviceQueueFamilyProperties(phys, &nf, fp);
    d->nfamilies = nf;
    for (uint32_t i = 0; i < nf; i++) {
        d->fam[i].index = i;
        d->fam[i].flags = fp[i].queueFlags;
        d->fam[i].valid_bits = fp[i].timestampValidBits;
        d->fam[i].unknown_phase[0] = d->fam[i].unknown_phase[1] = LYR_NO_PHASE;
        atomic_init(&d->fam[i].outer_phase[0], LYR_NO_PHASE);
        atomic_init(&d->fam[i].outer_phase[1], LYR_NO_PHASE);
        if (fp[i].timestampValidBits == 0) {
            snprintf(d->fam[i].reason, sizeof d->fam[i].reason, "no timestamps");
        }
    }
    for (uint32_t i = 0; i < ci->queueCreateInfoCount; i++) {
        uint32_t f = ci->pQueueCreateInfos[i].queueFamilyIndex;
        if (f < nf) {
            d->fam[f].used = true;
        }
    }
    lyr_map_init(&d->pools, 256);
    lyr_map_init(&d->pipes, 1024);
    lyr_map_init(&d->modules, 1024);
    lyr_map_init(&d->fences, 1024);

    pthread_mutex_lock(&g_lock);
    d->index = g_device_count++;
    bool ok = slot_put(g_dev_key, (void *_Atomic *)g_dev, MAX_DEVICES, d->key, d);
    pthread_mutex_unlock(&g_lock);
    if (!ok) {
        d->intercept = false;
        lyr_warn("more than %u devices at once; device '%s' is not profiled", MAX_DEVICES, d->name);
    }
    lyr_idx_device_add(d);
    return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL lyr_DestroyDevice(VkDevice device,
                                                    const VkAllocationCallbacks *alloc)
{
    if (device == VK_NULL_HANDLE) {
        return;
    }
    lyr_device *d = lyr_device_get(device);
    if (d == NULL) {
        return;
    }
    PFN_vkDestroyDevice destroy = d->next.DestroyDevice;
    if (!d->inherited) {
        lyr_finish_device(d); /* collected, indexed, contexts destroyed (spools closed) */
    }
    pthread_mutex_lock(&g_lock);
    (void)slot_take(g_dev_key, (void *_Atomic *)g_dev, MAX_DEVICES, d->key);
    pthread_mutex_unlock(&g_lock);
    destroy(device, alloc);
    lyr_map_free(&d->pools, free);
    lyr_map_free(&d->pipes, free);
    lyr_map_free(&d->modules, free);
    lyr_map_free(&d->fences, free);
    pthread_mutex_destroy(&d->lock);
    pthread_mutex_destroy(&d->cost_lock);
    free(d);
}

/* Devices alive now, for the summary and the exit flush (under g_lock). */
uint32_t lyr_live_devices(lyr_device **out, uint32_t cap);
uint32_t lyr_live_devices(lyr_device **out, uint32_t cap)
{
    uint32_t n = 0;
    pthread_mutex_lock(&g_lock);
    for (uint32_t i = 0; i < MAX_DEVICES && n < cap; i++) {
        lyr_device *d = atomic_load(&g_dev[i]);
        if (atomic_load(&g_dev_key[i]) != NULL && d != NULL) {
            out[n++] = d;
        }
    }
    pthread_mutex_unlock(&g_lock);
    return n;
}

/* ---- proc addrs ------------------------------------------------------------ */

static PFN_vkVoidFunction find_proc(const lyr_proc *t, const char *name, const lyr_next *next,
                                    bool *known)
{
    for (; t->name != NULL; t++) {
        if (strcmp(t->name, name) == 0) {
            *known = true;
            PFN_vkVoidFunction n;
            memcpy(&n, (const char *)next + t->next_offset, sizeof n);
            return n != NULL ? t->fn : NULL;
        }
    }
    return NULL;
}

/* The loader interface's two proc-addr functions. The layer's own code, and
 * what it hands to the loader, are these static functions, never the
 * exported names: in an app linked to the loader (cc app.c -lvulkan), the
 * loader's vkGetInstanceProcAddr is in the global scope, and a call or an
 * address taken by the exported name inside this library would bind to the
 * loader's function (negotiation would then hand the loader its own
 * function, which re-enters vkCreateInstance under the loader's lock: a hang).
 * The exported names below only forward to these. The library is also
 * linked with -Bsymbolic (CMakeLists.txt), so that no reference inside it
 * can bind elsewhere; test_layer_linked checks apps linked to the loader. */
static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL lyr_GetDeviceProcAddr(VkDevice device,
                                                                      const char *name);
static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL lyr_GetInstanceProcAddr(VkInstance instance,
                                                                        const char *name);

PFN_vkVoidFunction lyr_device_proc(lyr_device *d, const char *name)
{

    if (strcmp(name, "vkGetDeviceProcAddr") == 0) {
        return (PFN_vkVoidFunction)lyr_GetDeviceProcAddr;
    }
    if (strcmp(name, "vkDestroyDevice") == 0) {
        return d->next.DestroyDevice != NULL ? (PFN_vkVoidFunction)lyr_DestroyDevice : NULL;
    }
    if (d->intercept) {
        bool known = false;
        PFN_vkVoidFunction f = find_proc(lyr_record_procs, name, &d->next, &known);
        if (!known) {
            f = find_proc(lyr_queue_procs, name, &d->next, &known);
        }
        if (known) {
            return f;
        }
    }
    return d->gdpa(d->handle, name);
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL lyr_GetDeviceProcAddr(VkDevice device,
                                                                      const char *name)
{
    if (device == VK_NULL_HANDLE || name == NULL) {
        return NULL;
    }
    lyr_device *d = lyr_device_get(device);
    if (d == NULL) {
        return NULL;
    }
    return lyr_device_proc(d, name);
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL lyr_GetInstanceProcAddr(VkInstance instance,
                                                                        const char *name)
{
    if (name == NULL) {
        return NULL;
    }
    if (strcmp(name, "vkGetInstanceProcAddr") == 0) {
        return (PFN_vkVoidFunction)lyr_GetInstanceProcAddr;
    }
    if (strcmp(name, "vkCreateInstance") == 0) {
        return (PFN_vkVoidFunction)lyr_CreateInstance;
    }
    if (instance == VK_NULL_HANDLE) {
        return NULL;
    }
    lyr_instance *in = instance_get(instance);
    if (in == NULL) {
        return NULL;
    }
    if (strcmp(name, "vkDestroyInstance") == 0) {
        return (PFN_vkVoidFunction)lyr_DestroyInstance;
    }
    if (strcmp(name, "vkCreateDevice") == 0) {
        return (PFN_vkVoidFunction)lyr_CreateDevice;
    }
    if (strcmp(name, "vkGetDeviceProcAddr") == 0) {
        return (PFN_vkVoidFunction)lyr_GetDeviceProcAddr;
    }
    PFN_vkVoidFunction next = in->gipa(instance, name);
    if (next == NULL) {
        return NULL;
    }
    if (strcmp(name, "vkDestroyDevice") == 0) {
        return (PFN_vkVoidFunction)lyr_DestroyDevice;
    }
    /* The loader fills a device's debug-utils entries (an instance
     * extension's device commands) through vkGetInstanceProcAddr: ours, which
     * find their device by the handle. Every other device function comes
     * from vkGetDeviceProcAddr. */
    config_once();
    if (lyr_cfg.on && strstr(name, "DebugUtils") != NULL) {
        for (const lyr_proc *t = lyr_record_procs; t->name != NULL; t++) {
            if (strcmp(t->name, name) == 0) {
                return t->fn;
            }
        }
        for (const lyr_proc *t = lyr_queue_procs; t->name != NULL; t++) {
            if (strcmp(t->name, name) == 0) {
                return t->fn;
            }
        }
    }
    return next;
}

/* The exported names (for loaders that look them up in the library rather
 * than take them from negotiation): forwarders only. */
LYR_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetDeviceProcAddr(VkDevice device,
                                                                        const char *name);
LYR_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetDeviceProcAddr(VkDevice device,
                                                                        const char *name)
{
    return lyr_GetDeviceProcAddr(device, name);
}

LYR_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetInstanceProcAddr(VkInstance instance,
                                                                          const char *name);
LYR_EXPORT VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL vkGetInstanceProcAddr(VkInstance instance,
                                                                          const char *name)
{
    return lyr_GetInstanceProcAddr(instance, name);
}

LYR_EXPORT VKAPI_ATTR VkResult VKAPI_CALL
vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v)
{
    if (v == NULL || v->sType != LAYER_NEGOTIATE_INTERFACE_STRUCT) {
        return VK_ERROR_INITIALIZATION_FAILED;
    }
    if (v->loaderLayerInterfaceVersion < 2) {
        return VK_ERROR_INITIALIZATION_FAILED;
    }
    v->loaderLayerInterfaceVersion = 2;
    v->pfnGetInstanceProcAddr = lyr_GetInstanceProcAddr;
    v->pfnGetDeviceProcAddr = lyr_GetDeviceProcAddr;
    v->pfnGetPhysicalDeviceProcAddr = NULL;
    return VK_SUCCESS;
}

/* ---- introspection, for loaders that read no manifest (Android) ----------
 * Android's loader dlopens libVkLayer_*.so and asks each library for its
 * layers and their extensions through these four exports; the desktop
 * loader reads the manifest and never calls them. The layer adds no
 * extension of its own. */
LYR_EXPORT VKAPI_ATTR VkResult VKAPI_CALL vkEnumerateInstanceLayerProperties(uint32_t *count,
                                                                             VkLayerProperties *p);
LYR_EXPORT VKAPI_ATTR VkResult VKAPI_CALL vkEnumerateInstanceExtensionProperties(
    const char *layer, uint32_t *count, VkExtensionProperties *props);
LYR_EXPORT VKAPI_ATTR VkResult VKAPI_CALL vkEnumerateDeviceLayerProperties(VkPhysicalDevice phys,
                                                                           uint32_t *count,
                                                                           VkLayerProperties *p);
LYR_EXPORT VKAPI_ATTR VkResult VKAPI_CALL vkEnumerateDeviceExtensionProperties(
    VkPhysicalDevice phys, const char *layer, uint32_t *count, VkExtensionProperties *props);

static VkResult one_layer(uint32_t *count, VkLayerProperties *props)
{
    if (count == NULL) {
        return VK_ERROR_INITIALIZATION_FAILED;
    }
    if (props == NULL) {
        *count = 1;
        return VK_SUCCESS;
    }
    if (*count < 1) {
        return VK_INCOMPLETE;
    }
    memset(&props[0], 0, sizeof props[0]);
    snprintf(props[0].layerName, sizeof props[0].layerName, "%s", LYR_NAME);
    props[0].specVersion = VK_MAKE_API_VERSION(0, 1, 3, 239); /* the manifest's api_version */
    props[0].implementationVersion = vkprof_version();
    snprintf(props[0].description, sizeof props[0].description, "%s",
             "vkprof: per-dispatch GPU timing of Vulkan compute work on a drift-corrected "
             "host timeline");
    *count = 1;
    return VK_SUCCESS;
}

static VkResult no_extensions(const char *layer, uint32_t *count)
{
    if (count == NULL) {
        return VK_ERROR_INITIALIZATION_FAILED;
    }
    if (layer == NULL || strcmp(layer, LYR_NAME) != 0) {
        return VK_ERROR_LAYER_NOT_PRESENT;
    }
    *count = 0;
    return VK_SUCCESS;
}

LYR_EXPORT VKAPI_ATTR VkResult VKAPI_CALL vkEnumerateInstanceLayerProperties(uint32_t *count,
                                                                             VkLayerProperties *p)
{
    return one_layer(count, p);
}

LYR_EXPORT VKAPI_ATTR VkResult VKAPI_CALL vkEnumerateInstanceExtensionProperties(
    const char *layer, uint32_t *count, VkExtensionProperties *props)
{
    (void)props;
    return no_extensions(layer, count);
}

LYR_EXPORT VKAPI_ATTR VkResult VKAPI_CALL vkEnumerateDeviceLayerProperties(VkPhysicalDevice phys,
                                                                           uint32_t *count,
                                                                           VkLayerProperties *p)
{
    (void)phys;
    return one_layer(count, p);
}

LYR_EXPORT VKAPI_ATTR VkResult VKAPI_CALL vkEnumerateDeviceExtensionProperties(
    VkPhysicalDevice phys, const char *layer, uint32_t *count, VkExtensionProperties *props)
{
    if (layer == NULL || strcmp(layer, LYR_NAME) != 0) {
        /* the driver's or another layer's: down the chain, where the
         * physical device belongs to an instance the layer knows */
        lyr_instance *in = phys != VK_NULL_HANDLE ? instance_get(phys) : NULL;
        if (in != NULL && in->EnumerateDeviceExtensionProperties != NULL) {
            return in->EnumerateDeviceExtensionProperties(phys, layer, count, props);
        }
    }
    return no_extensions(layer, count);
}

__attribute__((destructor)) static void lyr_at_exit(void)
{
    lyr_exit_flush();
}
