/* What the layer writes: per device and context the library's trace
 * (vkprof_trace_write), and one summary JSON per process, rewritten
 * atomically at vkDestroyDevice, vkDestroyInstance and process exit. */
#define _GNU_SOURCE
#include "layer.h"

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

/* ---- a growable string ---------------------------------------------------- */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool failed;
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(sbuf *b, const char *fmt, ...)
{
    if (b->failed) {
        return;
    }
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k =
            vsnprintf(b->p != NULL ? b->p + b->n : NULL, b->p != NULL ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->failed = true;
            return;
        }
        if (b->p != NULL && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->n + (size_t)k + 1) {
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
}

static void sb_str(sbuf *b, const char *s)
{
    sb_add(b, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') {
            sb_add(b, "\\%c", *c);
        } else if (*c < 0x20) {
            sb_add(b, "\\u%04x", *c);
        } else {
            sb_add(b, "%c", *c);
        }
    }
    sb_add(b, "\"");
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

static bool write_atomic(const char *path, const char *data, size_t n)
{
    char tmp[1600];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        lyr_warn("cannot write %s: %s", tmp, strerror(errno));
        return false;
    }
    size_t off = 0;
    while (off < n) {
        ssize_t k = write(fd, data + off, n - off);
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            lyr_warn("cannot write %s: %s", tmp, strerror(errno));
            close(fd);
            unlink(tmp);
            return false;
        }
        off += (size_t)k;
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        lyr_warn("cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return false;
    }
    return true;
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
    sb_add(&b, "{\"index\": %u, \"name\": ", d->index);
    sb_str(&b, d->name);
    sb_add(&b, ", \"trace\": ");
    if (prim >= 0 && d->fam[prim].trace_file[0] != '\0') {
        sb_str(&b, d->fam[prim].trace_file);
    } else {
        sb_add(&b, "null");
    }
    sb_add(&b,
           ", \"profiled\": %s, \"calibrated_timestamps\": %s, \"host_query_reset\": %s, "
           "\"synchronization2\": %s",
           d->intercept ? "true" : "false", d->calibrated ? "true" : "false",
           d->host_reset ? "true" : "false", d->sync2 ? "true" : "false");
    sb_add(&b, ", \"queue_families\": [");
    bool first = true;
    for (uint32_t f = 0; f < d->nfamilies; f++) {
        lyr_family *fa = &d->fam[f];
        if (!fa->used) {
            continue;
        }
        vkprof_context ctx = atomic_load(&fa->ctx);
        bool timed = d->intercept && !fa->ctx_failed && fa->valid_bits != 0 &&
                     (ctx == NULL || vkprof_active(ctx));
        sb_add(&b, "%s{\"family\": %u, \"timed\": %s", first ? "" : ", ", f,
               timed ? "true" : "false");
        if (timed) {
            sb_add(&b, ", \"valid_bits\": %u", fa->valid_bits);
        } else {
            sb_add(&b, ", \"reason\": ");
            sb_str(&b, !d->intercept   ? "VKPROF_LAYER=off"
                       : fa->reason[0] ? fa->reason
                                       : "no timestamps");
        }
        sb_add(&b, "}");
        first = false;
    }
    sb_add(&b, "], \"steps\": %llu, \"contexts\": [", (unsigned long long)atomic_load(&d->steps));
    first = true;
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
        sb_add(&b, "%s{\"family\": %u, \"simultaneous_use\": %s, \"trace\": ", first ? "" : ", ", f,
               sim ? "true" : "false");
        if (tf[0]) {
            sb_str(&b, tf);
        } else {
            sb_add(&b, "null");
        }
        if (!sim) {
            /* the family's counts (both contexts' recordings) */
            sb_add(&b,
                   ", \"dispatches\": %llu, \"dispatches_timed\": %llu, "
                   "\"untimed\": {\"phase_table_full\": %llu, \"simultaneous_use\": %llu}, "
                   "\"untimed_phase_table_full\": %llu, \"submits\": %llu",
                   (unsigned long long)atomic_load(&fa->dispatches),
                   (unsigned long long)atomic_load(&fa->dispatches_timed),
                   (unsigned long long)atomic_load(&fa->phase_full),
                   (unsigned long long)atomic_load(&fa->simultaneous),
                   (unsigned long long)atomic_load(&fa->phase_full), /* read by older checks */
                   (unsigned long long)atomic_load(&fa->submits));
        }
        sb_add(&b, ", \"snapshot\": %s}", snap != NULL ? snap : "null");
        free(snap);
        first = false;
    }
    sb_add(&b, "]}");
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    return b.p;
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
    sb_add(&b, "{\"vkprof_layer_summary\": 1, \"pid\": %ld, \"exe\": ", (long)getpid());
    sb_str(&b, exe_name());
    sb_add(&b, ", \"active\": %s, \"mode\": \"%s\", \"sample_every\": %u, \"steps_rule\": ",
           lyr_cfg.on ? "true" : "false", lyr_mode_name(lyr_cfg.mode), lyr_cfg.sample);
    sb_str(&b, steps_text(st, sizeof st));
    sb_add(&b, ", \"name_map_entries\": %zu, \"devices\": [", vkl_name_map_count(lyr_cfg.names));
    pthread_mutex_lock(&out_lock);
    bool first = true;
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
            sb_add(&b, "%s%s", first ? "" : ", ", json);
            first = false;
        }
        if (owned) {
            free(json);
        }
    }
    pthread_mutex_unlock(&out_lock);
    sb_add(&b, "]}\n");
    if (!b.failed) {
        char path[1400];
        snprintf(path, sizeof path, "%s/%s-%ld.summary.json", lyr_cfg.out_dir, exe_name(),
                 (long)getpid());
        (void)write_atomic(path, b.p, b.n);
    }
    free(b.p);
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
