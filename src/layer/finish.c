/* See finish.h. */
#define _GNU_SOURCE
#include "finish.h"

#include "base/json.h"
#include "export/atomic_file.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIN_PATH 4096

static const char *const untimed_keys[LYR_UNTIMED_COUNT] = {
#define LYR_X_(id, key) key,
    LYR_UNTIMED_REASONS(LYR_X_)
#undef LYR_X_
};

static void set_err(char *err, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t cap, const char *fmt, ...)
{
    if (err == NULL || cap == 0) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
}

/* ---- JSON into memory ---------------------------------------------------- */

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

/* ---- the trace's file name ------------------------------------------------- */

static const char *trace_ext(uint32_t format)
{
    return format == VKPROF_TRACE_FORMAT_PFTRACE ? ".pftrace" : ".trace.json";
}

/* ---- the summary --------------------------------------------------------- */

static bool fam_timed(const lyr_idx_device *d, const lyr_idx_family *f)
{
    return d->profiled && f->valid_bits != 0 && f->reason[0] == '\0';
}

static void untimed_obj(vkprof_json *j, const char *key, _Atomic uint64_t *v)
{
    vkprof__json_key(j, key);
    vkprof__json_obj(j);
    for (int r = 0; r < LYR_UNTIMED_COUNT; r++) {
        vkprof__json_kv_u64(j, untimed_keys[r], atomic_load(&v[r]));
    }
    vkprof__json_end(j);
}

static void device_json(vkprof_json *j, lyr_idx_device *d, lyr_ctx_table *ctxs, uint32_t di,
                        uint32_t cost_block)
{
    vkprof__json_obj(j);
    vkprof__json_kv_u64(j, "index", d->index);
    vkprof__json_kv_str(j, "name", d->name);
    vkprof__json_kv_str(j, "state",
                        atomic_load(&d->state) == LYR_DEV_DESTROYED ? "destroyed" : "live");
    vkprof__json_kv_bool(j, "profiled", d->profiled != 0);
    vkprof__json_kv_bool(j, "calibrated_timestamps", d->calibrated != 0);
    vkprof__json_kv_bool(j, "host_query_reset", d->host_reset != 0);
    vkprof__json_kv_bool(j, "synchronization2", d->sync2 != 0);
    vkprof__json_kv_str(j, "fallback_trace", d->fallback_trace[0] ? d->fallback_trace : NULL);
    vkprof__json_kv_u64(j, "steps", atomic_load(&d->steps));
    /* where the layer read results (issue 26) */
    vkprof__json_key(j, "collections");
    vkprof__json_obj(j);
    vkprof__json_kv_u64(j, "after_waits", atomic_load(&d->collects_after_waits));
    vkprof__json_kv_u64(j, "at_submits", atomic_load(&d->collects_at_submits));
    vkprof__json_end(j);
    /* the host's time in the calls the layer sees, and the layer's own (issue 26) */
    vkprof__json_key(j, "host");
    vkprof__json_obj(j);
    static const char *const host_keys[LYR_HOST_COUNT] = {
#define LYR_X_(id, key) key,
        LYR_HOST_TIMES(LYR_X_)
#undef LYR_X_
    };
    for (int k = 0; k < LYR_HOST_COUNT; k++) {
        vkprof__json_key(j, host_keys[k]);
        vkprof__json_obj(j);
        vkprof__json_kv_u64(j, "ns", atomic_load(&d->host_ns[k]));
        vkprof__json_kv_u64(j, "calls", atomic_load(&d->host_calls[k]));
        vkprof__json_end(j);
    }
    vkprof__json_end(j);
    if (cost_block > 0) {
        /* the cost probe: each state's steps, mean wall time and its spread */
        vkprof__json_key(j, "cost_probe");
        vkprof__json_obj(j);
        static const char *const key[2] = {"on", "off"};
        for (int k = 0; k < 2; k++) {
            const uint64_t n = d->cost_steps[k];
            const double mean = n ? (double)d->cost_sum_ns[k] / 1e3 / (double)n : 0.0;
            double var =
                n > 1 ? ((double)d->cost_sumsq_us2[k] - (double)n * mean * mean) / (double)(n - 1)
                      : 0.0;
            vkprof__json_key(j, key[k]);
            vkprof__json_obj(j);
            vkprof__json_kv_u64(j, "steps", n);
            vkprof__json_kv_u64(j, "sum_ns", d->cost_sum_ns[k]);
            vkprof__json_kv_f64(j, "mean_us", mean);
            vkprof__json_kv_f64(j, "sd_us", var > 0 ? sqrt(var) : 0.0);
            /* the host's time in these steps, by kind: where the cost went */
            vkprof__json_key(j, "host_ns");
            vkprof__json_obj(j);
            vkprof__json_kv_u64(j, "record", d->cost_host_ns[k][LYR_COST_RECORD]);
            for (int h = 0; h < LYR_HOST_COUNT; h++) {
                vkprof__json_kv_u64(j, host_keys[h], d->cost_host_ns[k][h]);
            }
            vkprof__json_end(j);
            vkprof__json_end(j);
        }
        /* by pairs of blocks: the mean difference of their mean step times
         * (on - off), its spread, and the blocks off's mean step time */
        const uint64_t np = d->cost_pairs;
        const double md = np ? d->cost_d_sum_us / (double)np : 0.0;
        const double vd =
            np > 1 ? (d->cost_d_sq_us2 - (double)np * md * md) / (double)(np - 1) : 0.0;
        vkprof__json_key(j, "pairs");
        vkprof__json_obj(j);
        vkprof__json_kv_u64(j, "pairs", np);
        vkprof__json_kv_f64(j, "mean_diff_us", md);
        vkprof__json_kv_f64(j, "sd_diff_us", vd > 0 ? sqrt(vd) : 0.0);
        vkprof__json_kv_f64(j, "off_mean_us", np ? d->cost_off_sum_us / (double)np : 0.0);
        vkprof__json_end(j);
        vkprof__json_kv_u64(j, "executions", d->cost_execs);
        vkprof__json_kv_u64(j, "mixed_executions", d->cost_mixed);
        vkprof__json_end(j);
    }
    vkprof__json_key(j, "queue_families");
    vkprof__json_arr(j);
    const uint32_t nf = d->nfamilies < LYR_IDX_FAMILIES ? d->nfamilies : LYR_IDX_FAMILIES;
    for (uint32_t f = 0; f < nf; f++) {
        lyr_idx_family *fa = &d->fam[f];
        if (!atomic_load(&fa->used)) {
            continue;
        }
        vkprof__json_obj(j);
        vkprof__json_kv_u64(j, "family", f);
        const bool timed = fam_timed(d, fa);
        vkprof__json_kv_bool(j, "timed", timed);
        if (timed) {
            vkprof__json_kv_u64(j, "valid_bits", fa->valid_bits);
        } else {
            vkprof__json_kv_str(j, "reason",
                                !d->profiled    ? "VKPROF_LAYER=off"
                                : fa->reason[0] ? fa->reason
                                                : "no timestamps");
        }
        vkprof__json_kv_u64(j, "submits", atomic_load(&fa->submits));
        /* every dispatch: recorded (timed or not, why), and executed */
        vkprof__json_key(j, "dispatches");
        vkprof__json_obj(j);
        vkprof__json_kv_u64(j, "recorded", atomic_load(&fa->dispatches));
        vkprof__json_kv_u64(j, "recorded_timed", atomic_load(&fa->dispatches_timed));
        untimed_obj(j, "recorded_untimed", fa->untimed);
        vkprof__json_kv_u64(j, "executed", atomic_load(&fa->exec_dispatches));
        vkprof__json_kv_u64(j, "executed_timed", atomic_load(&fa->exec_timed));
        untimed_obj(j, "executed_untimed", fa->exec_untimed);
        vkprof__json_end(j);
        /* the app's host time recording its command buffers (issue 26) */
        vkprof__json_key(j, "recording");
        vkprof__json_obj(j);
        vkprof__json_kv_u64(j, "command_buffers", atomic_load(&fa->recordings));
        vkprof__json_kv_u64(j, "host_ns", atomic_load(&fa->record_ns));
        /* executions of buffers whose own scope (busy, cmdbuf) was left out
         * by the sampling or the cost probe: counted calls, never samples */
        vkprof__json_kv_u64(j, "scopes_left_out", atomic_load(&fa->buffers_left_out));
        vkprof__json_end(j);
        vkprof__json_key(j, "labels");
        vkprof__json_obj(j);
        vkprof__json_kv_u64(j, "command_buffer", atomic_load(&fa->cmd_labels));
        vkprof__json_kv_u64(j, "queue", atomic_load(&fa->queue_labels));
        vkprof__json_end(j);
        vkprof__json_end(j);
    }
    vkprof__json_end(j);
    vkprof__json_key(j, "contexts");
    vkprof__json_arr(j);
    for (uint32_t f = 0; f < nf; f++) {
        for (int k = 0; k < 2; k++) {
            vkprof_context ctx = (*ctxs)[di][f][k];
            const lyr_idx_family *fa = &d->fam[f];
            if (ctx == NULL && fa->spool[k][0] == '\0' && fa->missing[k][0] == '\0') {
                continue;
            }
            vkprof__json_obj(j);
            vkprof__json_kv_u64(j, "family", f);
            vkprof__json_kv_bool(j, "simultaneous_use", k == 1);
            vkprof__json_kv_str(j, "spool_missing", fa->missing[k][0] ? fa->missing[k] : NULL);
            vkprof__json_key(j, "snapshot");
            char *snap = NULL;
            size_t need = 0;
            if (ctx != NULL &&
                vkprof_snapshot_json(ctx, NULL, 0, &need) == VKPROF_ERROR_BUFFER_TOO_SMALL &&
                need > 0) {
                snap = malloc(need);
                if (snap != NULL && vkprof_snapshot_json(ctx, snap, need, &need) != VKPROF_OK) {
                    free(snap);
                    snap = NULL;
                }
            }
            if (snap != NULL) {
                vkprof__json_raw(j, snap); /* the library's own document */
            } else {
                vkprof__json_null(j);
            }
            free(snap);
            /* its calibration, checked in use (issue 25) */
            vkprof_calibration cal;
            if (ctx != NULL && vkprof_get_calibration(ctx, &cal) == VKPROF_OK) {
                vkprof__json_key(j, "calibration");
                vkprof__json_obj(j);
                vkprof__json_kv_str(j, "method",
                                    cal.method == VKPROF_CALIBRATION_EXTENSION
                                        ? "calibrated_timestamps"
                                    : cal.method == VKPROF_CALIBRATION_BRACKET ? "bracket"
                                                                               : "none");
                vkprof__json_kv_u64(j, "error_bound_ns", cal.error_bound_ns);
                vkprof__json_kv_u64(j, "window_checks", cal.window_checks);
                vkprof__json_kv_u64(j, "window_violations", cal.window_violations);
                vkprof__json_kv_bool(j, "inconsistent", cal.inconsistent);
                vkprof__json_kv_i64(j, "inconsistent_offset_ns", cal.inconsistent_offset_ns);
                vkprof__json_end(j);
            }
            /* its event store: whole, or truncated where */
            vkprof_trace_info ti;
            if (ctx != NULL && vkprof_get_trace_info(ctx, &ti) == VKPROF_OK && ti.capacity > 0) {
                vkprof__json_key(j, "trace_store");
                vkprof__json_obj(j);
                vkprof__json_kv_str(j, "keep", ti.keep_last ? "last" : "first");
                vkprof__json_kv_u64(j, "capacity", ti.capacity);
                vkprof__json_kv_u64(j, "recorded", ti.recorded);
                vkprof__json_kv_u64(j, "dropped", ti.dropped);
                vkprof__json_kv_u64(j, "overwritten", ti.overwritten);
                vkprof__json_kv_u64(j, "start_monotonic_ns", ti.start_ns);
                vkprof__json_kv_u64(j, "full_at_monotonic_ns", ti.full_at_ns);
                vkprof__json_end(j);
            }
            /* what its spool says: up to when it is complete */
            vkprof_spool_info si;
            if (ctx != NULL && vkprof_spool_status(ctx, &si) == VKPROF_OK &&
                si.state != VKPROF_SPOOL_NONE) {
                vkprof__json_key(j, "spool");
                vkprof__json_obj(j);
                vkprof__json_kv_str(j, "state",
                                    si.state == VKPROF_SPOOL_CLOSED ? "closed" : "open");
                vkprof__json_kv_u64(j, "checkpoints", si.checkpoints);
                vkprof__json_kv_u64(j, "last_checkpoint_monotonic_ns", si.checkpoint_ns);
                vkprof__json_kv_u64(j, "events_after_checkpoint", si.events_after_checkpoint);
                vkprof__json_end(j);
            }
            vkprof__json_end(j);
        }
    }
    vkprof__json_end(j);
    vkprof__json_end(j);
}

static int write_file(const char *path, const char *text, char *err, size_t errcap)
{
    vkprof_afile f;
    int e = vkprof__afile_open(&f, path);
    if (e == 0) {
        vkprof__afile_write(&f, text, strlen(text));
        e = vkprof__afile_commit(&f);
    }
    if (e != 0) {
        set_err(err, errcap, "cannot write %s: %s", path, strerror(e));
        return -1;
    }
    return 0;
}

int lyr_finish_write(lyr_index *ix, const char *out_dir, lyr_ctx_table *ctxs, const lyr_ending *end,
                     char *err, size_t errcap)
{
    /* the contexts, device by device, family by family: one trace */
    vkprof_context list[VKPROF_TRACE_SET_MAX];
    uint32_t n = 0, left_out = 0;
    const uint32_t nd =
        atomic_load(&ix->ndevices) < LYR_IDX_DEVICES ? atomic_load(&ix->ndevices) : LYR_IDX_DEVICES;
    for (uint32_t d = 0; d < nd; d++) {
        for (uint32_t f = 0; f < LYR_IDX_FAMILIES; f++) {
            for (int k = 0; k < 2; k++) {
                vkprof_context c = (*ctxs)[d][f][k];
                if (c == NULL) {
                    continue;
                }
                if (n < VKPROF_TRACE_SET_MAX) {
                    list[n++] = c;
                } else {
                    left_out++;
                }
            }
        }
    }
    char trace_name[300] = "";
    int rc = 0;
    if (n > 0) {
        snprintf(trace_name, sizeof trace_name, "%s%s", ix->base, trace_ext(ix->trace_format));
        char path[FIN_PATH + 300];
        snprintf(path, sizeof path, "%s/%s", out_dir, trace_name);
        vkprof_result r = vkprof_trace_write_set(list, n, path,
                                                 ix->trace_format <= VKPROF_TRACE_FORMAT_BOTH
                                                     ? (vkprof_trace_format)ix->trace_format
                                                     : VKPROF_TRACE_FORMAT_JSON);
        if (r != VKPROF_OK) {
            set_err(err, errcap, "cannot write the trace %s: %s (see the log above)", path,
                    vkprof_result_text(r));
            trace_name[0] = '\0';
            rc = -1;
        }
    }

    sbuf b = {0};
    vkprof_json jw, *j = &jw;
    vkprof__json_to_sink(j, sb_sink, &b);
    vkprof__json_obj(j);
    vkprof__json_kv_u64(j, "vkprof_layer_summary", 2);
    vkprof__json_kv_str(j, "run", ix->run);
    vkprof__json_kv_i64(j, "pid", ix->pid);
    vkprof__json_kv_str(j, "exe", ix->exe);
    vkprof__json_kv_str(j, "base", ix->base);
    vkprof__json_kv_bool(j, "active", ix->active != 0);
    vkprof__json_kv_str(j, "mode", ix->mode_name);
    vkprof__json_kv_u64(j, "sample_every", ix->sample_every ? ix->sample_every : 1u);
    vkprof__json_kv_u64(j, "rotate", ix->rotate);
    vkprof__json_kv_u64(j, "busy_every", ix->busy_every);
    vkprof__json_kv_u64(j, "cost_block", ix->cost_block);
    vkprof__json_kv_str(j, "steps_rule", ix->steps_rule);
    vkprof__json_kv_u64(j, "name_map_entries", ix->name_map_entries);
    vkprof__json_kv_bool(j, "auto_names", ix->auto_names != 0);
    vkprof__json_kv_u64(j, "modules", atomic_load(&ix->modules));
    vkprof__json_kv_u64(j, "modules_named_by_address", atomic_load(&ix->modules_by_address));
    vkprof__json_kv_u64(j, "modules_named_by_content", atomic_load(&ix->modules_by_content));
    vkprof__json_kv_str(j, "trace_keep", ix->keep_last ? "last" : "first");
    vkprof__json_kv_u64(j, "trace_events", ix->trace_events);
    vkprof__json_kv_str(j, "trace", trace_name[0] ? trace_name : NULL);
    vkprof__json_kv_u64(j, "contexts_left_out", left_out);
    vkprof__json_key(j, "ended");
    vkprof__json_obj(j);
    vkprof__json_kv_str(j, "how", end->how);
    if (strcmp(end->how, "exit") == 0 && end->status >= 0) {
        vkprof__json_kv_i64(j, "status", end->status);
    } else if (strcmp(end->how, "signal") == 0) {
        vkprof__json_kv_i64(j, "signal", end->signo);
        vkprof__json_kv_str(j, "signal_name", strsignal(end->signo));
    }
    vkprof__json_kv_str(j, "detail", end->detail);
    vkprof__json_kv_bool(j, "layer_saw_exit", atomic_load(&ix->state) >= LYR_PROC_EXITED);
    vkprof__json_kv_str(j, "finished_by", end->finisher);
    vkprof__json_end(j);
    vkprof__json_key(j, "devices");
    vkprof__json_arr(j);
    for (uint32_t d = 0; d < nd; d++) {
        if (atomic_load(&ix->dev[d].state) != LYR_DEV_FREE) {
            device_json(j, &ix->dev[d], ctxs, d, ix->cost_block);
        }
    }
    vkprof__json_end(j);
    vkprof__json_end(j);
    vkprof__json_newline(j);
    if (b.failed || !vkprof__json_ok(j) || b.p == NULL) {
        free(b.p);
        set_err(err, errcap, "the summary of %s could not be formatted (out of memory)", ix->base);
        return -1;
    }
    char sname[300], spath[FIN_PATH + 300];
    snprintf(sname, sizeof sname, "%s.summary.json", ix->base);
    snprintf(spath, sizeof spath, "%s/%s", out_dir, sname);
    char werr[FIN_PATH + 400] = "";
    if (write_file(spath, b.p, werr, sizeof werr) != 0) {
        free(b.p);
        set_err(err, errcap, "%s", werr);
        return -1;
    }
    free(b.p);
    set_err(ix->trace, sizeof ix->trace, "%s", trace_name);
    set_err(ix->summary, sizeof ix->summary, "%s", sname);
    if (rc == 0) {
        atomic_store(&ix->state, LYR_PROC_FINISHED);
    }
    return rc;
}

/* ---- reading an index ---------------------------------------------------- */

static bool terminated(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

/* A spool's name as the layer writes it: d<N>-f<N>[-sim].spool, nothing else
 * (the index names files the reader opens and removes). */
static bool plain_spool_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 40 || strstr(s, ".spool") != s + n - 6) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '.')) {
            return false;
        }
    }
    return true;
}

lyr_index *lyr_index_read(const char *path, char *err, size_t errcap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        set_err(err, errcap, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size < sizeof(lyr_index) ||
        (size_t)st.st_size > sizeof(lyr_index) + 65536) {
        set_err(err, errcap, "%s: not a layer index (%lld bytes)", path, (long long)st.st_size);
        close(fd);
        return NULL;
    }
    lyr_index *ix = malloc(sizeof *ix);
    size_t got = 0;
    while (ix != NULL && got < sizeof *ix) {
        ssize_t r = read(fd, (char *)ix + got, sizeof *ix - got);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            break;
        }
        got += (size_t)r;
    }
    close(fd);
    if (ix == NULL || got != sizeof *ix) {
        set_err(err, errcap, "%s: cannot read it", path);
        free(ix);
        return NULL;
    }
    if (memcmp(ix->magic, LYR_INDEX_MAGIC, 8) != 0 || ix->version != LYR_INDEX_VERSION ||
        ix->size != sizeof *ix) {
        set_err(err, errcap, "%s: not a layer index of this vkprof (magic, version %u, size %u)",
                path, ix->version, ix->size);
        free(ix);
        return NULL;
    }
    bool ok =
        terminated(ix->exe, sizeof ix->exe) && terminated(ix->run, sizeof ix->run) &&
        terminated(ix->base, sizeof ix->base) && terminated(ix->boot_id, sizeof ix->boot_id) &&
        terminated(ix->mode_name, sizeof ix->mode_name) &&
        terminated(ix->steps_rule, sizeof ix->steps_rule) &&
        terminated(ix->trace, sizeof ix->trace) && terminated(ix->summary, sizeof ix->summary) &&
        terminated(ix->replaced_by, sizeof ix->replaced_by) && ix->base[0] != '\0' &&
        strchr(ix->base, '/') == NULL && atomic_load(&ix->ndevices) <= LYR_IDX_DEVICES;
    for (uint32_t d = 0; ok && d < LYR_IDX_DEVICES; d++) {
        lyr_idx_device *dv = &ix->dev[d];
        ok = terminated(dv->name, sizeof dv->name) &&
             terminated(dv->fallback_trace, sizeof dv->fallback_trace) &&
             dv->nfamilies <= LYR_IDX_FAMILIES;
        for (uint32_t f = 0; ok && f < LYR_IDX_FAMILIES; f++) {
            lyr_idx_family *fa = &dv->fam[f];
            ok = terminated(fa->reason, sizeof fa->reason);
            for (int k = 0; ok && k < 2; k++) {
                ok = terminated(fa->spool[k], sizeof fa->spool[k]) &&
                     terminated(fa->missing[k], sizeof fa->missing[k]) &&
                     (fa->spool[k][0] == '\0' || plain_spool_name(fa->spool[k]));
            }
        }
    }
    if (!ok) {
        set_err(err, errcap, "%s: a damaged layer index (a name, count or file out of bounds)",
                path);
        free(ix);
        return NULL;
    }
    return ix;
}

void lyr_remove_dir(const char *out_dir, const lyr_index *ix)
{
    char dir[FIN_PATH + 300], p[FIN_PATH + 400];
    snprintf(dir, sizeof dir, "%s/" LYR_SPOOL_DIR "/%s", out_dir, ix->base);
    for (uint32_t d = 0; d < LYR_IDX_DEVICES; d++) {
        for (uint32_t f = 0; f < LYR_IDX_FAMILIES; f++) {
            for (int k = 0; k < 2; k++) {
                const char *s = ix->dev[d].fam[f].spool[k];
                if (s[0] != '\0' && plain_spool_name(s)) {
                    snprintf(p, sizeof p, "%s/%s", dir, s);
                    (void)unlink(p);
                }
            }
        }
    }
    snprintf(p, sizeof p, "%s/index", dir);
    (void)unlink(p);
    (void)rmdir(dir); /* kept when something else is in it */
    snprintf(p, sizeof p, "%s/" LYR_SPOOL_DIR, out_dir);
    (void)rmdir(p); /* and the spool folder, when it is empty */
}

int lyr_finish_dir(const char *out_dir, const char *base, const lyr_ending *end, lyr_index **ix_out,
                   char *err, size_t errcap)
{
    if (ix_out != NULL) {
        *ix_out = NULL;
    }
    char dir[FIN_PATH + 300], p[FIN_PATH + 400];
    snprintf(dir, sizeof dir, "%s/" LYR_SPOOL_DIR "/%s", out_dir, base);
    snprintf(p, sizeof p, "%s/index", dir);
    lyr_index *ix = lyr_index_read(p, err, errcap);
    if (ix == NULL) {
        return -1;
    }
    lyr_ctx_table *ctxs = calloc(1, sizeof *ctxs);
    if (ctxs == NULL) {
        set_err(err, errcap, "out of memory");
        free(ix);
        return -1;
    }
    /* each context's spool; one that cannot be read is said in its entry */
    const uint32_t nd = atomic_load(&ix->ndevices);
    for (uint32_t d = 0; d < nd; d++) {
        for (uint32_t f = 0; f < LYR_IDX_FAMILIES; f++) {
            for (int k = 0; k < 2; k++) {
                lyr_idx_family *fa = &ix->dev[d].fam[f];
                if (fa->spool[k][0] == '\0') {
                    continue;
                }
                snprintf(p, sizeof p, "%s/%s", dir, fa->spool[k]);
                char e2[512] = "";
                if (vkprof_spool_open(p, &(*ctxs)[d][f][k], e2, sizeof e2) != VKPROF_OK) {
                    set_err(fa->missing[k], sizeof fa->missing[k], "unreadable spool: %.120s", e2);
                }
            }
        }
    }
    int rc = lyr_finish_write(ix, out_dir, ctxs, end, err, errcap);
    for (uint32_t d = 0; d < nd; d++) {
        for (uint32_t f = 0; f < LYR_IDX_FAMILIES; f++) {
            for (int k = 0; k < 2; k++) {
                vkprof_destroy((*ctxs)[d][f][k]);
            }
        }
    }
    free(ctxs);
    if (rc == 0) {
        lyr_remove_dir(out_dir, ix);
    }
    if (ix_out != NULL) {
        *ix_out = ix;
    } else {
        free(ix);
    }
    return rc;
}
