/* What the layer writes (issue 24). Per process: a folder of its own,
 * <out>/.vkprof/<base>/, claimed at the first instance, holding the index
 * (index.h: devices, families, dispatch counts, each context's spool) and
 * each context's spool (desc.trace_spool). Both are files mapped shared:
 * what they hold outlives the process whatever ends it. At a clean exit the
 * layer finishes its own process: one trace of every context and one
 * summary (finish.c), then removes the folder. A process that ends without
 * running its exit (SIGKILL, a crash, _exit, exec) leaves the folder, which
 * `vkprof run` (or `vkprof recover`) finishes the same way once the process
 * has ended. */
#define _GNU_SOURCE
#include "layer.h"

#include "finish.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint32_t lyr_live_devices(lyr_device **out, uint32_t cap);

static pthread_mutex_t proc_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool any_instance;
static bool proc_tried;  /* the folder was claimed, or tried and failed (warned) */
static lyr_index *g_ix;  /* the mapped index, NULL without one */
static char g_dir[2048]; /* <out>/.vkprof/<base> */
static char g_why[512];  /* why there is none */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static const char *exe_name(void)
{
    static char name[200];
    if (name[0] == '\0') {
        char path[4096];
        ssize_t k = readlink("/proc/self/exe", path, sizeof path - 1);
        const char *base = program_invocation_short_name;
        if (k > 0) {
            path[k] = '\0';
            const char *s = strrchr(path, '/');
            base = s != NULL ? s + 1 : path;
        }
        if (base == NULL || base[0] == '\0') {
            base = "app";
        }
        size_t len = strnlen(base, sizeof name - 1);
        memcpy(name, base, len);
        name[len] = '\0';
        for (char *c = name; *c; c++) {
            if (*c == '/' || *c == ' ' || *c == '\n') {
                *c = '_';
            }
        }
    }
    return name;
}

/* A message or name into a fixed buffer, cut short when it does not fit
 * (never a path that is then used: those are checked where they are made). */
static void fmt(char *buf, size_t cap, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *buf, size_t cap, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, cap, f, ap);
    va_end(ap);
}

/* Whether `dir` has any entry named <cand>.<anything>: every file the
 * process could write (<base>.trace.json, .pftrace, .trace.pftrace with
 * "both", .summary.json, a device's own <base>.d<N>.trace.json ...) starts
 * so, and a user's file of such a name is never written over. */
static bool prefix_taken(const char *dir, const char *cand)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        return false; /* the writes will fail and say so */
    }
    const size_t n = strlen(cand);
    bool taken = false;
    struct dirent *e;
    while (!taken && (e = readdir(d)) != NULL) {
        taken = strncmp(e->d_name, cand, n) == 0 && e->d_name[n] == '.';
    }
    closedir(d);
    return taken;
}

/* An earlier image of this very process (the same pid, the same run) that
 * never finished: exec replaced it, as no other process can hold this pid
 * while we run. Its index says so, for whoever finishes it (vkprof run). */
static void mark_replaced(const char *spool_root, const lyr_index *me)
{
    DIR *d = opendir(spool_root);
    if (d == NULL) {
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, me->base) == 0) {
            continue;
        }
        char ip[2300];
        fmt(ip, sizeof ip, "%s/%s/index", spool_root, e->d_name);
        int fd = open(ip, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) {
            continue;
        }
        struct stat st;
        void *m = MAP_FAILED;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == sizeof(lyr_index)) {
            m = mmap(NULL, sizeof(lyr_index), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        }
        close(fd);
        if (m == MAP_FAILED) {
            continue;
        }
        lyr_index *old = m;
        if (memcmp(old->magic, LYR_INDEX_MAGIC, 8) == 0 && old->version == LYR_INDEX_VERSION &&
            old->pid == me->pid && strncmp(old->run, me->run, sizeof old->run) == 0 &&
            atomic_load(&old->state) == LYR_PROC_RUNNING && atomic_load(&old->replaced_ns) == 0) {
            fmt(old->replaced_by, sizeof old->replaced_by, "%s", me->exe);
            atomic_store(&old->replaced_ns, mono_ns());
        }
        munmap(m, sizeof(lyr_index));
    }
    closedir(d);
}

/* The process's folder and index. Under proc_lock. */
static void proc_create(void)
{
    proc_tried = true;
    char spool_root[1200];
    snprintf(spool_root, sizeof spool_root, "%s/" LYR_SPOOL_DIR, lyr_cfg.out_dir);
    if (mkdir(spool_root, 0777) != 0 && errno != EEXIST) {
        fmt(g_why, sizeof g_why, "cannot create %s: %s", spool_root, strerror(errno));
        goto fail;
    }
    /* <exe>-<pid>, else .2, .3, ...: a folder no one else has, and output
     * names no file has yet (a user's own file is never written over) */
    char base[256] = "";
    for (unsigned n = 1; n < 1000 && base[0] == '\0'; n++) {
        char cand[256], p[2048];
        if (n == 1) {
            snprintf(cand, sizeof cand, "%s-%ld", exe_name(), (long)getpid());
        } else {
            snprintf(cand, sizeof cand, "%s-%ld.%u", exe_name(), (long)getpid(), n);
        }
        const bool taken = prefix_taken(lyr_cfg.out_dir, cand);
        snprintf(p, sizeof p, "%s/%s", spool_root, cand);
        if (taken) {
            continue;
        }
        if (mkdir(p, 0777) == 0) {
            snprintf(base, sizeof base, "%s", cand);
            fmt(g_dir, sizeof g_dir, "%s", p);
        } else if (errno != EEXIST) {
            fmt(g_why, sizeof g_why, "cannot create %s: %s", p, strerror(errno));
            goto fail;
        }
    }
    if (base[0] == '\0') {
        fmt(g_why, sizeof g_why, "no free name for %s-%ld in %s", exe_name(), (long)getpid(),
            spool_root);
        goto fail;
    }
    char ipath[2200];
    snprintf(ipath, sizeof ipath, "%s/index", g_dir);
    int fd = open(ipath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) {
        fmt(g_why, sizeof g_why, "cannot create %s: %s", ipath, strerror(errno));
        goto fail;
    }
    /* the whole size now: a full disk is found here, not as a SIGBUS later */
    int e = posix_fallocate(fd, 0, (off_t)sizeof(lyr_index));
    void *map = e == 0 ? mmap(NULL, sizeof(lyr_index), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                       : MAP_FAILED;
    if (e != 0 || map == MAP_FAILED) {
        fmt(g_why, sizeof g_why, "cannot %s %s: %s", e != 0 ? "reserve" : "map", ipath,
            strerror(e != 0 ? e : errno));
        close(fd);
        unlink(ipath);
        rmdir(g_dir);
        goto fail;
    }
    close(fd);
    lyr_index *ix = map;
    ix->version = LYR_INDEX_VERSION;
    ix->size = (uint32_t)sizeof *ix;
    ix->pid = (int64_t)getpid();
    ix->created_ns = mono_ns();
    snprintf(ix->exe, sizeof ix->exe, "%s", exe_name());
    snprintf(ix->run, sizeof ix->run, "%s", lyr_cfg.run);
    snprintf(ix->base, sizeof ix->base, "%s", base);
    FILE *bf = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (bf != NULL) {
        if (fgets(ix->boot_id, sizeof ix->boot_id, bf) == NULL) {
            ix->boot_id[0] = '\0';
        }
        ix->boot_id[strcspn(ix->boot_id, "\n")] = '\0';
        fclose(bf);
    }
    ix->active = lyr_cfg.on;
    ix->mode = (uint32_t)lyr_cfg.mode;
    ix->sample_every = lyr_cfg.sample;
    ix->rotate = lyr_cfg.rotate;
    ix->busy_every = lyr_cfg.busy && lyr_buffer_scopes() ? lyr_cfg.busy_every : 0;
    ix->cost_block = lyr_cfg.cost_block;
    ix->keep_last = lyr_cfg.keep_last;
    ix->trace_format = lyr_cfg.trace_format;
    ix->trace_events = lyr_cfg.trace_events;
    ix->name_map_entries = vkl_name_map_count(lyr_cfg.names);
    ix->auto_names = lyr_cfg.auto_names;
    snprintf(ix->mode_name, sizeof ix->mode_name, "%s", lyr_mode_name(lyr_cfg.mode));
    switch (lyr_cfg.steps) {
    case LYR_STEPS_NONE: snprintf(ix->steps_rule, sizeof ix->steps_rule, "none"); break;
    case LYR_STEPS_LABEL:
        snprintf(ix->steps_rule, sizeof ix->steps_rule, "label:%s", lyr_cfg.step_label);
        break;
    default: snprintf(ix->steps_rule, sizeof ix->steps_rule, "wait"); break;
    }
    atomic_store(&ix->state, LYR_PROC_RUNNING);
    atomic_thread_fence(memory_order_release);
    memcpy(ix->magic, LYR_INDEX_MAGIC, 8);
    g_ix = ix;
    mark_replaced(spool_root, ix);
    return;
fail:
    g_dir[0] = '\0';
    lyr_warn("the output folder cannot be used (%s): this process's trace and summary are "
             "not written",
             g_why);
}

void lyr_note_instance(void)
{
    atomic_store(&any_instance, true);
    pthread_mutex_lock(&proc_lock);
    if (!proc_tried) {
        proc_create();
    }
    pthread_mutex_unlock(&proc_lock);
}

const char *lyr_proc_dir(void)
{
    return g_ix != NULL ? g_dir : NULL;
}

const char *lyr_proc_why(void)
{
    return g_why;
}

void lyr_idx_device_add(lyr_device *d)
{
    pthread_mutex_lock(&proc_lock);
    lyr_index *ix = g_ix;
    if (ix != NULL) {
        uint32_t n = atomic_load(&ix->ndevices);
        if (n < LYR_IDX_DEVICES) {
            lyr_idx_device *e = &ix->dev[n];
            e->index = d->index;
            e->profiled = d->intercept;
            e->calibrated = d->calibrated;
            e->host_reset = d->host_reset;
            e->sync2 = d->sync2;
            e->nfamilies = d->nfamilies < LYR_IDX_FAMILIES ? d->nfamilies : LYR_IDX_FAMILIES;
            snprintf(e->name, sizeof e->name, "%s", d->name);
            e->created_ns = mono_ns();
            for (uint32_t f = 0; f < e->nfamilies; f++) {
                e->fam[f].flags = d->fam[f].flags;
                e->fam[f].valid_bits = d->fam[f].valid_bits;
                snprintf(e->fam[f].reason, sizeof e->fam[f].reason, "%s", d->fam[f].reason);
            }
            atomic_store_explicit(&e->state, LYR_DEV_LIVE, memory_order_release);
            atomic_store_explicit(&ix->ndevices, n + 1, memory_order_release);
            d->idx = e;
        }
    }
    pthread_mutex_unlock(&proc_lock);
}

void lyr_idx_module(lyr_name_source how)
{
    lyr_index *ix = g_ix;
    if (ix != NULL) {
        atomic_fetch_add_explicit(&ix->modules, 1, memory_order_relaxed);
        if (how == LYR_NAME_EMBEDDED) {
            atomic_fetch_add_explicit(&ix->modules_by_address, 1, memory_order_relaxed);
        } else if (how == LYR_NAME_EMBEDDED_HASH) {
            atomic_fetch_add_explicit(&ix->modules_by_content, 1, memory_order_relaxed);
        }
    }
}

/* The device's counters into its index entry (the layer's own stay where
 * the recording path counts them: this is a copy, at each collection). */
void lyr_idx_sync(lyr_device *d)
{
    lyr_idx_device *e = d->idx;
    if (e == NULL) {
        return;
    }
    atomic_store_explicit(&e->steps, atomic_load(&d->steps), memory_order_relaxed);
    if (lyr_cfg.cost_block > 0) {
        pthread_mutex_lock(&d->cost_lock);
        e->cost_pairs = d->cost_pairs;
        e->cost_d_sum_us = d->cost_d_sum_us;
        e->cost_d_sq_us2 = d->cost_d_sq_us2;
        e->cost_off_sum_us = d->cost_off_sum_us;
        pthread_mutex_unlock(&d->cost_lock);
    }
    lyr_idx_max(&e->collects_after_waits,
                atomic_load_explicit(&d->collects_after_waits, memory_order_relaxed));
    lyr_idx_max(&e->collects_at_submits,
                atomic_load_explicit(&d->collects_at_submits, memory_order_relaxed));
    for (int k = 0; k < LYR_HOST_COUNT; k++) {
        lyr_idx_max(&e->host_ns[k], atomic_load_explicit(&d->host_ns[k], memory_order_relaxed));
        lyr_idx_max(&e->host_calls[k],
                    atomic_load_explicit(&d->host_calls[k], memory_order_relaxed));
    }
    e->cost_execs = atomic_load_explicit(&d->cost_execs, memory_order_relaxed);
    e->cost_mixed = atomic_load_explicit(&d->cost_mixed, memory_order_relaxed);
    for (int k = 0; lyr_cfg.cost_block > 0 && k < 2; k++) {
        for (int h = 0; h < LYR_COST_KINDS; h++) {
            e->cost_host_ns[k][h] =
                atomic_load_explicit(&d->cost_host_ns[k][h], memory_order_relaxed);
        }
        e->cost_steps[k] = atomic_load_explicit(&d->cost[k].steps, memory_order_relaxed);
        e->cost_sum_ns[k] = atomic_load_explicit(&d->cost[k].sum_ns, memory_order_relaxed);
        e->cost_sumsq_us2[k] = atomic_load_explicit(&d->cost[k].sumsq_us2, memory_order_relaxed);
    }
    const uint32_t nf = e->nfamilies;
    for (uint32_t f = 0; f < nf; f++) {
        lyr_family *fa = &d->fam[f];
        lyr_idx_family *x = &e->fam[f];
        if (fa->used && !atomic_load_explicit(&x->used, memory_order_relaxed)) {
            atomic_store(&x->used, 1);
        }
        if (fa->reason[0] != '\0' && x->reason[0] == '\0') {
            snprintf(x->reason, sizeof x->reason, "%s", fa->reason);
        }
        /* counts only grow; submits on other threads raise them too (count_exec) */
#define CP_(a, b) lyr_idx_max(&x->a, atomic_load_explicit(&fa->b, memory_order_relaxed))
        CP_(dispatches, dispatches);
        CP_(dispatches_timed, dispatches_timed);
        CP_(submits, submits);
        CP_(exec_dispatches, exec_dispatches);
        CP_(exec_timed, exec_timed);
        CP_(record_ns, record_ns);
        CP_(recordings, recordings);
        CP_(buffers_left_out, buffers_left_out);
        for (int r = 0; r < LYR_UNTIMED_COUNT; r++) {
            CP_(exec_untimed[r], exec_untimed[r]);
            CP_(untimed[r], untimed[r]);
        }
#undef CP_
    }
    if (g_ix != NULL) {
        atomic_store_explicit(&g_ix->updated_ns, mono_ns(), memory_order_relaxed);
    }
}

/* A context's spool: <dir>/d<D>-f<F>[-sim].spool into `path`, its name into
 * the index. false (nothing written) without a folder. */
bool lyr_spool_path(lyr_device *d, uint32_t family, bool sim, char *path, size_t cap)
{
    const char *dir = lyr_proc_dir();
    if (dir == NULL || d->idx == NULL || family >= LYR_IDX_FAMILIES) {
        return false;
    }
    char name[64];
    snprintf(name, sizeof name, "d%u-f%u%s.spool", d->index, family, sim ? "-sim" : "");
    snprintf(path, cap, "%s/%s", dir, name);
    return true;
}

void lyr_idx_context(lyr_device *d, uint32_t family, bool sim, vkprof_context ctx)
{
    lyr_idx_device *e = d->idx;
    if (e == NULL || family >= LYR_IDX_FAMILIES) {
        return;
    }
    lyr_idx_family *x = &e->fam[family];
    atomic_store(&x->used, 1);
    vkprof_spool_info si;
    if (ctx != NULL && vkprof_spool_status(ctx, &si) == VKPROF_OK) {
        if (si.state == VKPROF_SPOOL_OPEN) {
            snprintf(x->spool[sim], sizeof x->spool[sim], "d%u-f%u%s.spool", d->index, family,
                     sim ? "-sim" : "");
        } else {
            fmt(x->missing[sim], sizeof x->missing[sim], "%s",
                si.reason[0] ? si.reason : "no spool");
        }
    } else if (ctx == NULL) {
        snprintf(x->missing[sim], sizeof x->missing[sim], "%s",
                 d->fam[family].reason[0] ? d->fam[family].reason : "no context");
    }
}

/* ---- the end of a device, the end of the process ------------------------- */

/* A device whose contexts are about to go, where one of them has no spool:
 * its trace now, in a file of its own (with a spool, everything it recorded
 * is in the spools, and the process's one trace at its end holds it).
 * Under d->lock. */
static void fallback_trace(lyr_device *d)
{
    vkprof_context list[2 * LYR_MAX_FAMILIES];
    uint32_t n = 0;
    bool need = false;
    for (uint32_t f = 0; f < d->nfamilies; f++) {
        for (int k = 0; k < 2; k++) {
            vkprof_context c = atomic_load(k ? &d->fam[f].ctx_sim : &d->fam[f].ctx);
            if (c == NULL) {
                continue;
            }
            list[n++] = c;
            vkprof_spool_info si;
            need |= vkprof_spool_status(c, &si) != VKPROF_OK || si.state != VKPROF_SPOOL_OPEN;
        }
    }
    if (!need || n == 0 || g_ix == NULL || d->idx == NULL) {
        return;
    }
    char name[300], path[1700];
    snprintf(name, sizeof name, "%s.d%u%s", g_ix->base, d->index,
             lyr_cfg.trace_format == VKPROF_TRACE_FORMAT_PFTRACE ? ".pftrace" : ".trace.json");
    snprintf(path, sizeof path, "%s/%s", lyr_cfg.out_dir, name);
    if (vkprof_trace_write_set(list, n, path, (vkprof_trace_format)lyr_cfg.trace_format) ==
        VKPROF_OK) {
        fmt(d->idx->fallback_trace, sizeof d->idx->fallback_trace, "%s", name);
    }
}

void lyr_finish_device(lyr_device *d)
{
    pthread_mutex_lock(&d->lock);
    if (d->finished) {
        pthread_mutex_unlock(&d->lock);
        return;
    }
    /* the app made the device idle before destroying it: collect the rest */
    for (uint32_t f = 0; f < d->nfamilies; f++) {
        vkprof_context ctx = atomic_load(&d->fam[f].ctx);
        vkprof_context sim = atomic_load(&d->fam[f].ctx_sim);
        if (ctx != NULL) {
            (void)vkprof_collect(ctx);
        }
        if (sim != NULL) {
            (void)vkprof_collect(sim);
        }
    }
    lyr_idx_sync(d);
    fallback_trace(d);
    /* destroying a context closes its spool (its last checkpoint) */
    for (uint32_t f = 0; f < d->nfamilies; f++) {
        vkprof_context sim = atomic_exchange(&d->fam[f].ctx_sim, NULL);
        vkprof_context ctx = atomic_exchange(&d->fam[f].ctx, NULL);
        if (sim != NULL) {
            vkprof_destroy(sim);
        }
        if (ctx != NULL) {
            vkprof_destroy(ctx);
        }
    }
    d->finished = true;
    if (d->idx != NULL) {
        atomic_store(&d->idx->destroyed_ns, mono_ns());
        atomic_store_explicit(&d->idx->state, LYR_DEV_DESTROYED, memory_order_release);
    }
    pthread_mutex_unlock(&d->lock);
}

/* At exit (the library's destructor), devices the app never destroyed
 * included: the process's trace and summary from its contexts (the live
 * ones; the spools of devices it destroyed), then its folder removed. No
 * Vulkan call: a teardown is no time for one; what was never collected is
 * counted as pending in the summary. */
void lyr_exit_flush(void)
{
    if (!atomic_load(&any_instance) || g_ix == NULL) {
        return;
    }
    pthread_mutex_lock(&proc_lock);
    lyr_index *ix = g_ix;
    if (ix == NULL || atomic_load(&ix->state) == LYR_PROC_FINISHED) {
        pthread_mutex_unlock(&proc_lock);
        return;
    }
    lyr_device *live[64];
    uint32_t nlive = lyr_live_devices(live, 64);
    lyr_ctx_table *ctxs = calloc(1, sizeof *ctxs);
    for (uint32_t i = 0; i < nlive; i++) {
        lyr_device *d = live[i];
        if (d->inherited) {
            continue;
        }
        pthread_mutex_lock(&d->lock);
        lyr_idx_sync(d);
        for (uint32_t f = 0; f < d->nfamilies && f < LYR_IDX_FAMILIES; f++) {
            for (int k = 0; k < 2; k++) {
                vkprof_context c = atomic_load(k ? &d->fam[f].ctx_sim : &d->fam[f].ctx);
                (void)vkprof_spool_sync(c); /* the last checkpoint, should this fail */
                if (ctxs != NULL && d->idx != NULL) {
                    (*ctxs)[d->idx - ix->dev][f][k] = c;
                }
            }
        }
        pthread_mutex_unlock(&d->lock);
    }
    atomic_store(&ix->exited_ns, mono_ns());
    atomic_store(&ix->state, LYR_PROC_EXITED);
    if (ctxs == NULL) {
        pthread_mutex_unlock(&proc_lock);
        return; /* the folder stays: `vkprof recover` finishes it */
    }
    /* the devices it destroyed: their spools */
    bool opened[LYR_IDX_DEVICES] = {false};
    const uint32_t nd = atomic_load(&ix->ndevices);
    for (uint32_t di = 0; di < nd; di++) {
        if (atomic_load(&ix->dev[di].state) != LYR_DEV_DESTROYED) {
            continue;
        }
        opened[di] = true;
        for (uint32_t f = 0; f < LYR_IDX_FAMILIES; f++) {
            for (int k = 0; k < 2; k++) {
                lyr_idx_family *fa = &ix->dev[di].fam[f];
                if (fa->spool[k][0] == '\0') {
                    continue;
                }
                char p[2200], e[512] = "";
                snprintf(p, sizeof p, "%s/%s", g_dir, fa->spool[k]);
                if (vkprof_spool_open(p, &(*ctxs)[di][f][k], e, sizeof e) != VKPROF_OK) {
                    fmt(fa->missing[k], sizeof fa->missing[k], "unreadable spool: %.120s", e);
                }
            }
        }
    }
    const lyr_ending end = {"exit", -1, 0, "the layer finished the process at its exit", "layer"};
    char err[1024] = "";
    if (lyr_finish_write(ix, lyr_cfg.out_dir, ctxs, &end, err, sizeof err) == 0) {
        lyr_remove_dir(lyr_cfg.out_dir, ix);
    } else {
        lyr_warn("%s; the spools stay in %s (vkprof recover %s finishes them)", err, g_dir,
                 lyr_cfg.out_dir);
    }
    for (uint32_t di = 0; di < nd; di++) {
        for (uint32_t f = 0; opened[di] && f < LYR_IDX_FAMILIES; f++) {
            vkprof_destroy((*ctxs)[di][f][0]);
            vkprof_destroy((*ctxs)[di][f][1]);
        }
    }
    free(ctxs);
    pthread_mutex_unlock(&proc_lock);
}

/* The child of a fork: the parent's folder and devices are the parent's.
 * Forgotten here (unmapped, never written); the child's own folder is made
 * at its own first instance. */
void lyr_proc_forked_child(void)
{
    if (g_ix != NULL) {
        (void)munmap(g_ix, sizeof(lyr_index));
        g_ix = NULL;
    }
    proc_tried = false;
    g_dir[0] = '\0';
    g_why[0] = '\0';
    atomic_store(&any_instance, false);
    pthread_mutex_init(&proc_lock, NULL);
}
