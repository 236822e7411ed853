/* What the layer writes: per device and context the library's trace
 * (vkprof_trace_write), and one summary JSON per process, rewritten
 * atomically at vkDestroyDevice, vkDestroyInstance and process exit. */
#define _GNU_SOURCE
#include "layer.h"

#include "base/json.h"
#include "export/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint32_t lyr_live_devices(lyr_device **out, uint32_t cap);

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool any_instance;
/* finished devices' JSON, in creation order */
typedef struct done_dev {
    uint32_t index;
    char *json;
    struct done_dev *next;
} done_dev;
static done_dev *done_list;

/* ---- JSON into memory (base/json.h writes it, one writer for all) -------- */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool failed;
} sbuf;

static void sb_sink(void *sink, const char *data, size_t n)
{
    sbuf *b = sink;
    if (b->failed) {
        return;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1) {
            cap *= 2;
        }
        char *p = realloc(b->p, cap);
        if (p == NULL) {
            b->failed = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = '\0';
}

/* The text, or NULL (freed) when the writer or the memory failed. */
static char *sb_take(sbuf *b, const vkprof_json *j)
{
    if (b->failed || !vkprof__json_ok(j) || b->p == NULL) {
        free(b->p);
        return NULL;
    }
    return b->p;
}

/* ---- names -------------------------------------------------------------------- */

static const char *exe_name(void)
{
    static char name[256];
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
            if (*c == '/' || *c == ' ') {
                *c = '_';
            }
        }
    }
    return name;
}

static void trace_name(char *out, size_t cap, const lyr_device *d, uint32_t family, bool primary,
                       bool sim)
{
    char dev[24] = "", fam[48] = "";
    if (d->index > 0) {
        snprintf(dev, sizeof dev, "-d%u", d->index);
    }
    if (!primary || sim) {
        snprintf(fam, sizeof fam, "-f%u%s", family, sim ? "-simultaneous" : "");
    }
    snprintf(out, cap, "%s-%ld%s%s.trace.json", exe_name(), (long)getpid(), dev, fam);
}

/* ---- one device ------------------------------------------------------------------ */

static int primary_family(const lyr_device *d)
{
    for (uint32_t f = 0; f < d->nfamilies; f++) {
        if (atomic_load(&d->fam[f].ctx) != NULL) {
            return (int)f;
        }
    }
    return -1;
}

/* Under d->lock. write_traces: write each context's trace file now. */
static char *device_json(lyr_device *d, bool write_traces)
{
    sbuf b = {0};
    int prim = primary_family(d);
    if (write_traces) {
        for (uint32_t k = 0; k < 2 * d->nfamilies; k++) {
            uint32_t f = k / 2;
            bool sim = k % 2 == 1;
            vkprof_context ctx = atomic_load(sim ? &d->fam[f].ctx_sim : &d->fam[f].ctx);
            if (ctx == NULL) {
                continue;
            }
            char name[300], path[1400];
            trace_name(name, sizeof name, d, f, (int)f == prim, sim);
            snprintf(path, sizeof path, "%s/%s", lyr_cfg.out_dir, name);
            char *into = sim ? d->fam[f].trace_file_sim : d->fam[f].trace_file;
            if (vkprof_trace_write(ctx, path) == VKPROF_OK) {
                snprintf(into, sizeof d->fam[f].trace_file, "%s", name);
            }
        }
    }
    vkprof_json jw, *j = &jw;
    vkprof__json_to_sink(j, sb_sink, &b);
    vkprof__json_obj(j);
    vkprof__json_kv_u64(j, "index", d->index);
    vkprof__json_kv_str(j, "name", d->name);
    vkprof__json_kv_str(j, "trace",
                        prim >= 0 && d->fam[prim].trace_file[0] != '\0' ? d->fam[prim].trace_file
                                                                        : NULL);
    vkprof__json_kv_bool(j, "profiled", d->intercept);
    vkprof__json_kv_bool(j, "calibrated_timestamps", d->calibrated);
    vkprof__json_kv_bool(j, "host_query_reset", d->host_reset);
    vkprof__json_kv_bool(j, "synchronization2", d->sync2);
    vkprof__json_key(j, "queue_families");
    vkprof__json_arr(j);
    for (uint32_t f = 0; f < d->nfamilies; f++) {
        lyr_family *fa = &d->fam[f];
        if (!fa->used) {
            continue;
        }
        vkprof_context ctx = atomic_load(&fa->ctx);
        bool timed = d->intercept && !fa->ctx_failed && fa->valid_bits != 0 &&
                     (ctx == NULL || vkprof_active(ctx));
        vkprof__json_obj(j);
        vkprof__json_kv_u64(j, "family", f);
        vkprof__json_kv_bool(j, "timed", timed);
        if (timed) {
            vkprof__json_kv_u64(j, "valid_bits", fa->valid_bits);
        } else {
            vkprof__json_kv_str(j, "reason",
                                !d->intercept   ? "VKPROF_LAYER=off"
                                : fa->reason[0] ? fa->reason
                                                : "no timestamps");
        }
        vkprof__json_end(j);
    }
    vkprof__json_end(j);
    vkprof__json_kv_u64(j, "steps", atomic_load(&d->steps));
    vkprof__json_key(j, "contexts");
    vkprof__json_arr(j);
    for (uint32_t k = 0; k < 2 * d->nfamilies; k++) {
        uint32_t f = k / 2;
        bool sim = k % 2 == 1;
        lyr_family *fa = &d->fam[f];
        vkprof_context ctx = atomic_load(sim ? &fa->ctx_sim : &fa->ctx);
        if (ctx == NULL) {
            continue;
        }
        size_t need = 0;
        char *snap = NULL;
        if (vkprof_snapshot_json(ctx, NULL, 0, &need) == VKPROF_ERROR_BUFFER_TOO_SMALL &&
            need > 0) {
            snap = malloc(need);
            if (snap != NULL && vkprof_snapshot_json(ctx, snap, need, &need) != VKPROF_OK) {
                free(snap);
                snap = NULL;
            }
        }
        const char *tf = sim ? fa->trace_file_sim : fa->trace_file;
        vkprof__json_obj(j);
        vkprof__json_kv_u64(j, "family", f);
        vkprof__json_kv_bool(j, "simultaneous_use", sim);
        vkprof__json_kv_str(j, "trace", tf[0] ? tf : NULL);
        if (!sim) {
            /* the family's counts (both contexts' recordings) */
            vkprof__json_kv_u64(j, "dispatches", atomic_load(&fa->dispatches));
            vkprof__json_kv_u64(j, "dispatches_timed", atomic_load(&fa->dispatches_timed));
            vkprof__json_key(j, "untimed");
            vkprof__json_obj(j);
            vkprof__json_kv_u64(j, "phase_table_full", atomic_load(&fa->phase_full));
            vkprof__json_kv_u64(j, "simultaneous_use", atomic_load(&fa->simultaneous));
            vkprof__json_end(j);
            /* read by older checks */
            vkprof__json_kv_u64(j, "untimed_phase_table_full", atomic_load(&fa->phase_full));
            vkprof__json_kv_u64(j, "submits", atomic_load(&fa->submits));
        }
        vkprof__json_key(j, "snapshot");
        if (snap != NULL) {
            vkprof__json_raw(j, snap); /* the library's own document */
        } else {
            vkprof__json_null(j);
        }
        vkprof__json_end(j);
        free(snap);
    }
    vkprof__json_end(j);
    vkprof__json_end(j);
    return sb_take(&b, j);
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
    char *json = device_json(d, d->intercept);
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
    pthread_mutex_unlock(&d->lock);

    done_dev *n = calloc(1, sizeof *n);
    if (n == NULL) {
        free(json);
        return;
    }
    n->index = d->index;
    n->json = json;
    pthread_mutex_lock(&out_lock);
    done_dev **at = &done_list;
    while (*at != NULL && (*at)->index < n->index) {
        at = &(*at)->next;
    }
    n->next = *at;
    *at = n;
    pthread_mutex_unlock(&out_lock);
}

void lyr_note_instance(void)
{
    atomic_store(&any_instance, true);
}

static const char *steps_text(char *buf, size_t cap)
{
    switch (lyr_cfg.steps) {
    case LYR_STEPS_NONE: return "none";
    case LYR_STEPS_LABEL: snprintf(buf, cap, "label:%s", lyr_cfg.step_label); return buf;
    default: return "wait";
    }
}

static void write_summary(bool write_live_traces)
{
    lyr_device *live[64];
    uint32_t nlive = lyr_live_devices(live, 64);
    sbuf b = {0};
    char st[160];
    vkprof_json jw, *j = &jw;
    vkprof__json_to_sink(j, sb_sink, &b);
    vkprof__json_obj(j);
    vkprof__json_kv_u64(j, "vkprof_layer_summary", 1);
    vkprof__json_kv_i64(j, "pid", (int64_t)getpid());
    vkprof__json_kv_str(j, "exe", exe_name());
    vkprof__json_kv_bool(j, "active", lyr_cfg.on);
    vkprof__json_kv_str(j, "mode", lyr_mode_name(lyr_cfg.mode));
    vkprof__json_kv_u64(j, "sample_every", lyr_cfg.sample);
    vkprof__json_kv_str(j, "steps_rule", steps_text(st, sizeof st));
    vkprof__json_kv_u64(j, "name_map_entries", vkl_name_map_count(lyr_cfg.names));
    vkprof__json_key(j, "devices");
    vkprof__json_arr(j);
    pthread_mutex_lock(&out_lock);
    done_dev *dn = done_list;
    /* merge finished and live devices by index */
    uint32_t li = 0;
    for (;;) {
        /* the next live device by index */
        lyr_device *next_live = NULL;
        for (uint32_t i = 0; i < nlive; i++) {
            if (live[i] != NULL && (next_live == NULL || live[i]->index < next_live->index)) {
                next_live = live[i];
                li = i;
            }
        }
        if (dn == NULL && next_live == NULL) {
            break;
        }
        char *json = NULL;
        bool owned = false;
        if (dn != NULL && (next_live == NULL || dn->index < next_live->index)) {
            json = dn->json;
            dn = dn->next;
        } else {
            pthread_mutex_lock(&next_live->lock);
            if (!next_live->finished) {
                json = device_json(next_live, write_live_traces && next_live->intercept);
                owned = true;
            }
            pthread_mutex_unlock(&next_live->lock);
            live[li] = NULL;
        }
        if (json != NULL) {
            vkprof__json_raw(j, json); /* written by device_json with the same writer */
        }
        if (owned) {
            free(json);
        }
    }
    pthread_mutex_unlock(&out_lock);
    vkprof__json_end(j);
    vkprof__json_end(j);
    vkprof__json_newline(j);
    char *doc = sb_take(&b, j);
    if (doc == NULL) {
        lyr_warn("the summary could not be written: out of memory");
        return;
    }
    char path[1400];
    snprintf(path, sizeof path, "%s/%s-%ld.summary.json", lyr_cfg.out_dir, exe_name(),
             (long)getpid());
    /* the library's one atomic writer: a temporary file of its own beside
     * the target, fsync, rename (two threads writing at once each replace
     * the file whole) */
    vkprof_afile f;
    int e = vkprof__afile_open(&f, path);
    if (e == 0) {
        vkprof__afile_write(&f, doc, strlen(doc));
        e = vkprof__afile_commit(&f);
    }
    if (e != 0) {
        lyr_warn("cannot write %s: %s", path, strerror(e));
    }
    free(doc);
}

void lyr_write_summary(void)
{
    if (atomic_load(&any_instance)) {
        write_summary(false);
    }
}

void lyr_exit_flush(void)
{
    if (atomic_load(&any_instance)) {
        write_summary(true); /* devices never destroyed: their traces too */
    }
}
