/* See decode_tp.h. */
#define _POSIX_C_SOURCE 200809L
#include "decode_tp.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- barrier ---------------------------------------------------------------- */

int dec_tp_barrier_init(dec_tp_barrier *b, uint32_t n, bool spin)
{
    memset(b, 0, sizeof *b);
    if (n == 0 || pthread_mutex_init(&b->mu, NULL) != 0) {
        return 1;
    }
    if (pthread_cond_init(&b->cv, NULL) != 0) {
        pthread_mutex_destroy(&b->mu);
        return 1;
    }
    b->n = n;
    b->spin = spin;
    atomic_init(&b->gen, 0);
    atomic_init(&b->aborted, 0);
    return 0;
}

int dec_tp_barrier_wait(dec_tp_barrier *b)
{
    pthread_mutex_lock(&b->mu);
    if (atomic_load_explicit(&b->aborted, memory_order_relaxed)) {
        pthread_mutex_unlock(&b->mu);
        return -1;
    }
    unsigned g = atomic_load_explicit(&b->gen, memory_order_relaxed);
    if (++b->waiting == b->n) {
        /* the last one: every other arrival happened before (the mutex), and
         * the release store hands all of them to the spinners' acquire */
        b->waiting = 0;
        atomic_store_explicit(&b->gen, g + 1u, memory_order_release);
        pthread_cond_broadcast(&b->cv);
        pthread_mutex_unlock(&b->mu);
        return 0;
    }
    if (b->spin) {
        pthread_mutex_unlock(&b->mu);
        uint64_t t0 = mono_ns();
        for (uint32_t i = 1;; i++) {
            if (atomic_load_explicit(&b->gen, memory_order_acquire) != g) {
                return 0;
            }
            if (atomic_load_explicit(&b->aborted, memory_order_relaxed)) {
                return -1;
            }
            if ((i & 63u) == 0 && mono_ns() - t0 > DEC_TP_SPIN_NS) {
                break;
            }
        }
        pthread_mutex_lock(&b->mu);
    }
    while (atomic_load_explicit(&b->gen, memory_order_relaxed) == g &&
           !atomic_load_explicit(&b->aborted, memory_order_relaxed)) {
        pthread_cond_wait(&b->cv, &b->mu);
    }
    int rc = atomic_load_explicit(&b->gen, memory_order_relaxed) != g ? 0 : -1;
    pthread_mutex_unlock(&b->mu);
    return rc;
}

void dec_tp_barrier_abort(dec_tp_barrier *b)
{
    pthread_mutex_lock(&b->mu);
    atomic_store_explicit(&b->aborted, 1, memory_order_relaxed);
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

bool dec_tp_barrier_aborted(dec_tp_barrier *b)
{
    return atomic_load_explicit(&b->aborted, memory_order_relaxed) != 0;
}

void dec_tp_barrier_destroy(dec_tp_barrier *b)
{
    if (b->n != 0) {
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
        b->n = 0;
    }
}

/* ---- exchange ------------------------------------------------------------------ */

int dec_tp_comm_init(dec_tp_comm *c, uint32_t ranks, uint32_t cap, bool spin)
{
    memset(c, 0, sizeof *c);
    if (ranks == 0 || cap == 0) {
        return 1;
    }
    c->slots = calloc(2u * (size_t)ranks * cap, sizeof *c->slots);
    if (c->slots == NULL || dec_tp_barrier_init(&c->bar, ranks, spin) != 0) {
        free(c->slots);
        c->slots = NULL;
        return 1;
    }
    c->ranks = ranks;
    c->cap = cap;
    return 0;
}

void dec_tp_comm_destroy(dec_tp_comm *c)
{
    dec_tp_barrier_destroy(&c->bar);
    free(c->slots);
    memset(c, 0, sizeof *c);
}

/* ---- one rank's collective ---------------------------------------------------------- */

static void rank_log(dec_tp_rank *r, vkprof_log_level level, vkprof_result code, const char *fmt,
                     ...)
{
    char msg[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (r->log != NULL) {
        r->log(r->log_user, r->rank, level, code, msg);
    } else {
        fputs(msg, stderr);
    }
}

static int rank_fail(dec_tp_rank *r, const char *what)
{
    if (dec_tp_barrier_aborted(&r->comm->bar)) {
        r->peer_failed = true;
        /* what is a message of at most r->err's size: cut so the suffix fits */
        snprintf(r->err, sizeof r->err, "%.*s: stopped, another rank failed",
                 (int)(sizeof r->err - 32), what);
    } else {
        snprintf(r->err, sizeof r->err, "%.*s", (int)(sizeof r->err - 1), what);
        dec_tp_barrier_abort(&r->comm->bar);
    }
    r->rc = 1;
    return 1;
}

typedef struct sync_arg {
    dec_tp_rank *r;
    float *data;
    uint32_t n;
    int rc;
    uint64_t waited_ns;
} sync_arg;

/* The probe's wait: every rank has reached this site. */
static void probe_wait(void *user)
{
    sync_arg *a = user;
    uint64_t t0 = mono_ns();
    a->rc = dec_tp_barrier_wait(&a->r->comm->bar);
    a->waited_ns = mono_ns() - t0;
}

/* The collective's synchronisation: every partial is in, then the sum in
 * rank order (the same additions in the same order on every rank). */
static void reduce_sync(void *user)
{
    sync_arg *a = user;
    dec_tp_comm *c = a->r->comm;
    a->rc = dec_tp_barrier_wait(&c->bar);
    if (a->rc != 0) {
        return;
    }
    const float *half = c->slots + (size_t)(a->r->parity & 1u) * c->ranks * c->cap;
    for (uint32_t i = 0; i < a->n; i++) {
        float s = half[i];
        for (uint32_t k = 1; k < c->ranks; k++) {
            s += half[(size_t)k * c->cap + i];
        }
        a->data[i] = s;
    }
}

static const vkprof_bucket site_bucket[2][3] = {
    {VKPROF_BUCKET_ALLREDUCE_ATTN_RENDEZVOUS, VKPROF_BUCKET_ALLREDUCE_ATTN_ENQUEUE,
     VKPROF_BUCKET_ALLREDUCE_ATTN},
    {VKPROF_BUCKET_ALLREDUCE_MLP_RENDEZVOUS, VKPROF_BUCKET_ALLREDUCE_MLP_ENQUEUE,
     VKPROF_BUCKET_ALLREDUCE_MLP}};

static bool layer_is_moe(const dec_preset *p, uint32_t layer)
{
    return p != NULL && p->n_experts > 0 && layer >= p->first_moe;
}

static void route_line(dec_tp_rank *r, dec_site site, uint32_t layer, bool probed)
{
    char ids[DEC_TP_MAX_ROUTED * 11 + 1] = "-";
    if (r->routed_any) {
        size_t len = 0;
        for (uint32_t i = 0; i < r->routed_k && len + 12 < sizeof ids; i++) {
            len += (size_t)snprintf(ids + len, sizeof ids - len, "%s%u", i ? "," : "",
                                    r->routed_ids[i]);
        }
    }
    char rdv[32] = "-", from[16] = "-";
    if (probed) {
        snprintf(rdv, sizeof rdv, "%.3f", (double)r->last_rendezvous_ns * 1e-3);
    }
    if (r->routed_any) {
        snprintf(from, sizeof from, "%u", r->routed_layer);
    }
    rank_log(r, VKPROF_LOG_REPORT, VKPROF_OK,
             "route: step=%u rank=%u site=%s layer=%u moe=%d rendezvous_us=%s experts=%s "
             "experts_layer=%s\n",
             r->step, r->rank, site == DEC_SITE_ATTN ? "attn" : "mlp", layer,
             layer_is_moe(r->preset, layer) ? 1 : 0, rdv, ids, from);
}

int dec_tp_all_reduce(dec_tp_rank *r, dec_site site, uint32_t layer, float *data, uint32_t n)
{
    dec_tp_comm *c = r->comm;
    if ((site != DEC_SITE_ATTN && site != DEC_SITE_MLP) || data == NULL || n > c->cap) {
        char m[128];
        snprintf(m, sizeof m, "all-reduce of %u floats at site %d: the exchange holds %u", n,
                 (int)site, c->cap);
        return rank_fail(r, m);
    }
    const vkprof_bucket *b = site_bucket[site];
    if (site == DEC_SITE_ATTN && r->skew_us > 0) {
        uint64_t t0 = mono_ns();
        struct timespec ts = {.tv_sec = r->skew_us / 1000000u,
                              .tv_nsec = (long)(r->skew_us % 1000000u) * 1000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        r->skew_slept_ns += mono_ns() - t0;
        r->skew_sleeps++;
    }
    sync_arg a = {.r = r, .data = data, .n = n};
    if (r->probe) {
        vkprof_rendezvous(r->prof, b[0], probe_wait, &a);
        if (a.rc != 0) {
            return rank_fail(r, "all-reduce rendezvous");
        }
        r->last_rendezvous_ns = a.waited_ns;
        r->rendezvous_ns += a.waited_ns;
    }
    /* enqueue: this rank's partial into its slot of this collective's half */
    vkprof_span s = VKPROF_SPAN_HOT(r->prof, b[1]);
    float *mine = c->slots + ((size_t)(r->parity & 1u) * c->ranks + r->rank) * c->cap;
    memcpy(mine, data, (size_t)n * sizeof *data);
    VKPROF_SPAN_END(r->prof, &s);
    /* sync: wait for every partial, sum in rank order */
    s = VKPROF_SPAN_HOT(r->prof, b[2]);
    VKPROF_SPAN_END_SYNC(r->prof, &s, reduce_sync, &a);
    if (a.rc != 0) {
        return rank_fail(r, "all-reduce");
    }
    r->parity++;
    r->collectives++;
    if (r->route_trace) {
        route_line(r, site, layer, r->probe);
    }
    return 0;
}

void dec_tp_routed(dec_tp_rank *r, uint32_t layer, const uint32_t *ids, uint32_t k)
{
    r->routed_calls++;
    r->routed_any = true;
    r->routed_layer = layer;
    r->routed_k = k < DEC_TP_MAX_ROUTED ? k : DEC_TP_MAX_ROUTED;
    if (ids != NULL) {
        memcpy(r->routed_ids, ids, r->routed_k * sizeof *ids);
    } else {
        r->routed_k = 0;
    }
    if (dec_span_annotate_ids(&r->glue, "moe_host_sync", "experts", r->routed_ids, r->routed_k)) {
        r->annotated++;
    }
    if (r->hooks.section_begin != NULL && !dec_span_in_section(&r->glue, "moe_host_sync")) {
        r->routed_outside++;
    }
}

static void hk_begin(void *user, const char *name)
{
    dec_span_section_begin(&((dec_tp_rank *)user)->glue, name);
}

static void hk_end(void *user, const char *name)
{
    dec_span_section_end(&((dec_tp_rank *)user)->glue, name);
}

static void hk_step(void *user, uint32_t index, uint32_t token)
{
    (void)index;
    (void)token;
    dec_span_step(&((dec_tp_rank *)user)->glue);
}

static int hk_all_reduce(void *user, dec_site site, uint32_t layer, float *data, uint32_t n)
{
    return dec_tp_all_reduce(user, site, layer, data, n);
}

static void hk_routed(void *user, uint32_t layer, const uint32_t *ids, const float *weights,
                      uint32_t k)
{
    (void)weights;
    dec_tp_routed(user, layer, ids, k);
}

dec_hooks dec_tp_hooks(dec_tp_rank *r, bool spans)
{
    /* the glue's own hooks say what it needs (spans, steps) */
    dec_hooks g = dec_span_hooks(&r->glue, r->prof, spans);
    dec_hooks h = {.user = r,
                   .section_begin = g.section_begin != NULL ? hk_begin : NULL,
                   .section_end = g.section_end != NULL ? hk_end : NULL,
                   .step = g.step != NULL ? hk_step : NULL,
                   .all_reduce = hk_all_reduce,
                   .routed = hk_routed};
    return h;
}

bool dec_tp_route_trace_env(dec_tp_log_fn log, void *user)
{
    static atomic_int warned;
    const char *v = getenv(DEC_TP_ROUTE_TRACE_ENV);
    bool on = false;
    if (v == NULL || vkprof_parse_flag(v, &on)) {
        return on;
    }
    if (atomic_exchange(&warned, 1) == 0) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "%s='%.64s' is not a flag (1/on/true/yes, 0/off/false/no): "
                 "ignored, the route trace is off",
                 DEC_TP_ROUTE_TRACE_ENV, v);
        if (log != NULL) {
            log(user, 0, VKPROF_LOG_WARN, VKPROF_ERROR_INVALID_ARGUMENT, msg);
        } else {
            fprintf(stderr, "vkprof warning: %s\n", msg);
        }
    }
    return false;
}

/* ---- the driver ------------------------------------------------------------------------ */

typedef struct rank_thread {
    dec_tp_run *run;
    dec_tp_rank *r;
    const vku_instance *inst;
} rank_thread;

static void ctx_log(void *user, vkprof_log_level level, vkprof_result code, const char *msg)
{
    dec_tp_rank *r = user;
    if (r->log != NULL) {
        r->log(r->log_user, r->rank, level, code, msg);
    } else {
        fprintf(stderr, "rank %u: %s\n", r->rank, msg);
    }
}

static void *rank_main(void *arg)
{
    rank_thread *t = arg;
    dec_tp_run *run = t->run;
    const dec_tp_config *cfg = &run->cfg;
    dec_tp_rank *r = t->r;
    char err[512] = "";
    char name[32];
    snprintf(name, sizeof name, "rank %u", r->rank);
    bool spans = cfg->host_level != VKPROF_HOST_OFF;
    if (cfg->timed || spans || cfg->trace || cfg->need_context) {
        vkprof_context_desc d = vku_vkprof_desc(t->inst, &r->dev);
        d.enable = cfg->timed ? VKPROF_ENABLE_ON : VKPROF_ENABLE_OFF;
        if (cfg->mode == DEC_PROFILE_RING) {
            d.timing_mode = VKPROF_TIMING_RING;
            d.shared_boundaries = cfg->ring_shared;
            d.sample_every = cfg->sample_every;
            d.rotate_scopes = cfg->rotate_scopes;
        }
        d.host_level = spans ? cfg->host_level : VKPROF_HOST_OFF;
        d.queue = r->dev.queue;
        d.trace_path = "";
        d.log = ctx_log;
        d.log_user = r;
        vkprof_result pr = vkprof_create(&d, &r->prof);
        if (pr != VKPROF_OK) {
            snprintf(err, sizeof err, "vkprof_create: %s", vkprof_result_text(pr));
            rank_fail(r, err);
            return NULL;
        }
        vkprof_set_thread_name(r->prof, name);
        if (cfg->trace && vkprof_trace_begin(r->prof, 0) != VKPROF_OK) {
            rank_fail(r, "cannot start the trace");
            return NULL;
        }
        if (cfg->timed && !vkprof_active(r->prof)) {
            snprintf(err, sizeof err,
                     "the compute queue of %s has no timestamps: this profile is not possible",
                     r->dev.props.deviceName);
            rank_fail(r, err);
            return NULL;
        }
    }
    r->hooks = dec_tp_hooks(r, spans);
    dec_config ec = {.preset = cfg->preset,
                     .ctx = cfg->ctx,
                     .seed = cfg->seed,
                     .profile = cfg->mode,
                     .prof = r->prof,
                     .hooks = &r->hooks,
                     .debug_utils = cfg->debug_utils,
                     .labels = cfg->labels,
                     .rank = r->rank,
                     .ranks = cfg->ranks};
    if (dec_create(&r->dev, &ec, &r->eng, err, sizeof err) != 0) {
        rank_fail(r, err);
        return NULL;
    }
    if (dec_tp_barrier_wait(&run->comm.bar) != 0) {
        rank_fail(r, "start");
        return NULL;
    }
    uint64_t t1 = mono_ns();
    uint32_t token = cfg->first_token;
    for (uint32_t i = 0; i < cfg->tokens; i++) {
        r->step = i;
        uint32_t next = 0;
        if (dec_step(r->eng, token, &next, err, sizeof err) != 0) {
            char m[560];
            snprintf(m, sizeof m, "token %u: %s", i, err);
            if (r->rc == 0) {
                rank_fail(r, m);
            } else if (!r->peer_failed) {
                /* the hook failed first and said why; keep its message */
            }
            return NULL;
        }
        r->ids[i] = next;
        /* every rank's token of this step is in: they must agree */
        if (dec_tp_barrier_wait(&run->comm.bar) != 0) {
            rank_fail(r, "token check");
            return NULL;
        }
        for (uint32_t k = 0; k < cfg->ranks; k++) {
            if (run->r[k].ids[i] != next) {
                snprintf(err, sizeof err,
                         "token %u: rank %u chose %u, rank %u chose %u: the ranks disagree", i,
                         r->rank, next, k, run->r[k].ids[i]);
                /* every rank sees the mismatch: each fails on its own */
                r->rc = 1;
                snprintf(r->err, sizeof r->err, "%s", err);
                dec_tp_barrier_abort(&run->comm.bar);
                return NULL;
            }
        }
        token = next;
    }
    if (r->rank == 0) {
        run->seconds = (double)(mono_ns() - t1) * 1e-9;
    }
    return NULL;
}

int dec_tp_run_decode(dec_tp_run *run, const dec_tp_config *cfg, const vku_instance *inst,
                      VkPhysicalDevice phys, uint32_t family, char *err, size_t err_size)
{
    memset(run, 0, sizeof *run);
    run->cfg = *cfg;
    run->failed_rank = UINT32_MAX;
    uint32_t R = cfg->ranks;
    if (R == 0 || cfg->preset == NULL || cfg->tokens == 0) {
        snprintf(err, err_size, "bad tensor-parallel configuration");
        return 1;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    /* spinning pays only where each rank has a core to itself, and more */
    if (dec_tp_comm_init(&run->comm, R, cfg->preset->dim, cpus > (long)R) != 0) {
        snprintf(err, err_size, "out of memory");
        return 1;
    }
    run->r = calloc(R, sizeof *run->r);
    if (run->r == NULL) {
        snprintf(err, err_size, "out of memory");
        return 1;
    }
    for (uint32_t k = 0; k < R; k++) {
        dec_tp_rank *r = &run->r[k];
        r->rank = k;
        r->comm = &run->comm;
        r->preset = cfg->preset;
        r->probe = cfg->probe && (cfg->host_level != VKPROF_HOST_OFF || cfg->route_trace);
        r->skew_us = cfg->skew_us > 0 && cfg->skew_rank == k ? cfg->skew_us : 0;
        r->route_trace = cfg->route_trace;
        r->log = cfg->log;
        r->log_user = cfg->log_user;
        r->ids = calloc(cfg->tokens, sizeof *r->ids);
        if (r->ids == NULL) {
            snprintf(err, err_size, "out of memory");
            return 1;
        }
        /* one VkDevice per rank, on the same physical device (a per-rank
         * device list would go here for one GPU per rank) */
        if (vku_device_create(&r->dev, phys, family) != VK_SUCCESS) {
            snprintf(err, err_size, "rank %u: cannot create a device with a compute queue", k);
            return 1;
        }
        r->dev_ok = true;
    }
    if (R > 1) {
        /* vku_device_create loaded volk's device-level pointers from the
         * last device; the loader's trampolines serve every device */
        volkLoadInstance(inst->instance);
    }
    rank_thread *th = calloc(R, sizeof *th);
    pthread_t *tid = calloc(R, sizeof *tid);
    bool *started = calloc(R, sizeof *started);
    if (th == NULL || tid == NULL || started == NULL) {
        free(th);
        free(tid);
        free(started);
        snprintf(err, err_size, "out of memory");
        return 1;
    }
    uint64_t t0 = mono_ns();
    for (uint32_t k = 0; k < R; k++) {
        th[k] = (rank_thread){.run = run, .r = &run->r[k], .inst = inst};
        if (pthread_create(&tid[k], NULL, rank_main, &th[k]) != 0) {
            rank_fail(&run->r[k], "cannot start its thread");
            break;
        }
        started[k] = true;
    }
    for (uint32_t k = 0; k < R; k++) {
        if (started[k]) {
            pthread_join(tid[k], NULL);
        }
    }
    free(th);
    free(tid);
    free(started);
    run->init_seconds = (double)(mono_ns() - t0) * 1e-9 - run->seconds;
    /* the rank whose failure stopped the others */
    for (uint32_t k = 0; k < R; k++) {
        if (run->r[k].rc != 0 && !run->r[k].peer_failed) {
            run->failed_rank = k;
            snprintf(err, err_size, "rank %u: %s", k, run->r[k].err);
            return 1;
        }
    }
    for (uint32_t k = 0; k < R; k++) {
        if (run->r[k].rc != 0) {
            run->failed_rank = k;
            snprintf(err, err_size, "rank %u: %s", k, run->r[k].err);
            return 1;
        }
    }
    return 0;
}

void dec_tp_cleanup(dec_tp_run *run)
{
    if (run->r != NULL) {
        for (uint32_t k = 0; k < run->cfg.ranks; k++) {
            dec_tp_rank *r = &run->r[k];
            dec_destroy(r->eng);
            vkprof_destroy(r->prof);
            if (r->dev_ok) {
                vku_device_destroy(&r->dev);
            }
            free(r->ids);
        }
        free(run->r);
    }
    dec_tp_comm_destroy(&run->comm);
    memset(run, 0, sizeof *run);
}

int dec_tp_rank_path(char *out, size_t size, const char *path, uint32_t rank)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    size_t stem = dot != NULL && dot > (slash != NULL ? slash + 1 : path) ? (size_t)(dot - path)
                                                                          : strlen(path);
    int n = snprintf(out, size, "%.*s.rank%u%s", (int)stem, path, rank, path + stem);
    return n < 0 || (size_t)n >= size ? 1 : 0;
}
