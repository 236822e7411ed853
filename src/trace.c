/* The timeline: a bounded, lock-free event store filled by spans, steps and
 * GPU scopes from any thread, and its export as Chrome Trace Event JSON
 * (docs/trace-format.md), written atomically. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "internal.h"

#include "export/atomic_file.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define VKPROF_DEFAULT_TRACE_ENV "VKPROF_TRACE"
#define PID_HOST 1
#define PID_GPU 2

/* ---- which file a context's trace goes to ------------------------------
 *
 * Several contexts of one process (one per queue, as the docs recommend) are
 * often configured from the same VKPROF_TRACE. The first context that names
 * a file writes it; the k-th one writes `<stem>.ctx<k><ext>` beside it
 * (trace.json, trace.ctx2.json, ...), and says so in the log. Numbers are not
 * reused within a process, so a context created after another was destroyed
 * never overwrites that trace either. A device or FIFO (/dev/null, a pipe) is
 * a stream: every context writes its document into it, in destroy order. */

#define TRACE_PATHS 32

typedef struct trace_path_use {
    char key[sizeof(((vkprof_trace *)0)->path)];
    uint32_t users;
} trace_path_use;

static trace_path_use g_paths[TRACE_PATHS];
static uint32_t g_path_count;
static uint32_t g_overflow_users;
static atomic_flag g_paths_lock = ATOMIC_FLAG_INIT;

/* The folder made absolute (from this process's working directory), so
 * "t.json" and "./t.json" are one file. Falls back to the text itself. */
static void path_key(const char *path, char *key, size_t cap)
{
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    const char *base = slash ? slash + 1 : path;
    if (slash == path) {
        snprintf(dir, sizeof dir, "/");
    } else if (slash) {
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    } else {
        snprintf(dir, sizeof dir, ".");
    }
    char real[PATH_MAX];
    size_t rn = 0, bn = strlen(base);
    if (realpath(dir, real) != NULL &&
        (rn = strcmp(real, "/") == 0 ? 0 : strlen(real)) + bn + 2 <= cap) {
        memcpy(key, real, rn);
        key[rn] = '/';
        memcpy(key + rn + 1, base, bn + 1);
    } else {
        snprintf(key, cap, "%s", path);
    }
}

/* How many contexts of this process named this file before, this one
 * included (1: the first). */
static uint32_t claim_path(const char *path)
{
    char key[sizeof g_paths[0].key];
    path_key(path, key, sizeof key);
    while (atomic_flag_test_and_set_explicit(&g_paths_lock, memory_order_acquire)) {
    }
    uint32_t users = 0;
    for (uint32_t i = 0; i < g_path_count && users == 0; i++) {
        if (strcmp(g_paths[i].key, key) == 0) {
            users = ++g_paths[i].users;
        }
    }
    if (users == 0 && g_path_count < TRACE_PATHS) {
        memcpy(g_paths[g_path_count].key, key, sizeof key);
        g_paths[g_path_count].users = users = 1;
        g_path_count++;
    } else if (users == 0) {
        /* more distinct files than the table holds: number them apart from
         * the counted ones, so no two can meet */
        users = 1000u + ++g_overflow_users;
    }
    atomic_flag_clear_explicit(&g_paths_lock, memory_order_release);
    return users;
}

/* `path` with ".ctx<k>" before the extension of its last component. */
static bool suffixed(const char *path, uint32_t k, char *out, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    if (dot == NULL || dot == base) {
        dot = path + strlen(path); /* no extension (or a dot file): append */
    }
    int n = snprintf(out, cap, "%.*s.ctx%u%s", (int)(dot - path), path, k, dot);
    return n > 0 && (size_t)n < cap;
}

static bool is_stream(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode));
}

/* "1", "2", "on", "true", ...: a level or flag put in the trace variable. */
static bool looks_like_a_value(const char *v)
{
    static const char *const words[] = {"on",      "off",      "true", "false",  "yes",
                                        "no",      "y",        "n",    "enable", "enabled",
                                        "disable", "disabled", "all",  "hot",    "none"};
    bool digits = v[0] != '\0';
    for (const char *c = v; *c; c++) {
        digits = digits && *c >= '0' && *c <= '9';
    }
    if (digits) {
        return true;
    }
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t j = 0;
        while (words[i][j] && v[j] && (v[j] | 0x20) == words[i][j]) {
            j++;
        }
        if (words[i][j] == '\0' && v[j] == '\0') {
            return true;
        }
    }
    return false;
}

vkprof_result vkprof__trace_init(vkprof_context ctx)
{
    vkprof_trace *t = &ctx->trace;
    const char *env = ctx->desc.trace_env_var && ctx->desc.trace_env_var[0]
                          ? ctx->desc.trace_env_var
                          : VKPROF_DEFAULT_TRACE_ENV;
    if (strlen(env) >= sizeof t->env_var) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT, "trace_env_var is too long");
    }
    memcpy(t->env_var, env, strlen(env) + 1);
    const char *path = ctx->desc.trace_path;
    const char *from = "desc.trace_path";
    if (path == NULL) {
        path = getenv(t->env_var);
        from = t->env_var;
    }
    if (path == NULL || path[0] == '\0') {
        return VKPROF_OK;
    }
    if (strlen(path) >= sizeof t->path) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT, "trace path is too long");
    }
    if (looks_like_a_value(path)) {
        vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_ERROR_INVALID_ARGUMENT,
                    "%s='%s' looks like a level or a flag, not a trace path; writing the trace "
                    "to the file '%s' in the working directory anyway (levels are "
                    "VKPROF_GPU_PROFILE and VKPROF_HOST_PROFILE; %s names the trace file, "
                    "e.g. trace.json)",
                    from, path, path, from);
    }
    uint32_t k = is_stream(path) ? 1 : claim_path(path);
    if (k == 1) {
        memcpy(t->path, path, strlen(path) + 1);
    } else if (suffixed(path, k, t->path, sizeof t->path)) {
        vkprof__log(ctx, VKPROF_LOG_WARN, VKPROF_OK,
                    "%s='%s' is already the trace of another context in this process; this "
                    "context (#%u on that path) writes '%s'",
                    from, path, k, t->path);
    } else {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT,
                            "trace path '%s' is too long for a per-context suffix", path);
    }
    return vkprof_trace_start(ctx, 0);
}

void vkprof__trace_shutdown(vkprof_context ctx)
{
    vkprof_trace *t = &ctx->trace;
    atomic_store(&t->on, 0);
    free(t->events);
    free(t->annots);
    t->events = NULL;
    t->annots = NULL;
}

vkprof_result vkprof_trace_start(vkprof_context ctx, uint32_t capacity)
{
    if (ctx == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    vkprof_trace *t = &ctx->trace;
    if (t->events != NULL) {
        atomic_store(&t->on, 1);
        return VKPROF_OK;
    }
    if (capacity == 0) {
        capacity = ctx->desc.trace_capacity ? ctx->desc.trace_capacity : (1u << 20);
    }
    t->events = calloc(capacity, sizeof *t->events);
    t->annot_capacity = capacity / 16 + 64;
    t->annots = calloc(t->annot_capacity, sizeof *t->annots);
    if (t->events == NULL || t->annots == NULL) {
        free(t->events);
        free(t->annots);
        t->events = NULL;
        t->annots = NULL;
        return vkprof__fail(ctx, VKPROF_ERROR_OUT_OF_MEMORY, "trace: cannot allocate %u events",
                            capacity);
    }
    /* Touch every page now: the store is bounded and paid for up front, so a
     * span does not pay a page fault the first time it lands on a page. */
    memset(t->events, 0, (size_t)capacity * sizeof *t->events);
    memset(t->annots, 0, (size_t)t->annot_capacity * sizeof *t->annots);
    t->capacity = capacity;
    t->start_ns = vkprof_host_now_ns();
    atomic_store(&t->on, 1);
    return VKPROF_OK;
}

bool vkprof_tracing(vkprof_context ctx)
{
    return ctx != NULL && atomic_load(&ctx->trace.on) != 0;
}

void vkprof_trace_counts(vkprof_context ctx, uint64_t *recorded, uint64_t *dropped)
{
    uint64_t n = 0, d = 0;
    if (ctx != NULL) {
        n = atomic_load(&ctx->trace.next);
        d = atomic_load(&ctx->trace.dropped);
        if (n > ctx->trace.capacity) {
            n = ctx->trace.capacity;
        }
    }
    if (recorded != NULL) {
        *recorded = n;
    }
    if (dropped != NULL) {
        *dropped = d;
    }
}

static vkprof_event *claim(vkprof_trace *t)
{
    uint64_t i = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
    if (i >= t->capacity) {
        atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed);
        return NULL;
    }
    return &t->events[i];
}

static void publish(vkprof_event *e)
{
    atomic_store_explicit(&e->ready, 1, memory_order_release);
}

void vkprof__trace_span(vkprof_context ctx, const vkprof_span *span, uint64_t end_ns)
{
    vkprof_trace *t = &ctx->trace;
    vkprof_event *e = claim(t);
    if (e == NULL) {
        return;
    }
    e->kind = VKPROF_EV_SPAN;
    e->start = span->start_ns;
    e->end = end_ns;
    e->id = span->id;
    e->step = atomic_load_explicit(&ctx->host.steps, memory_order_relaxed) + 1;
    e->name = span->bucket;
    e->tid = vkprof__thread_index();
    e->flags = (uint8_t)(((span->flags & 1u) ? VKPROF_EVF_HOT : 0) |
                         ((span->flags & 2u) ? VKPROF_EVF_PROBE : 0) |
                         ((span->flags & 0x100u) ? VKPROF_EVF_SYNC : 0));
    e->annot = 0;
    if (span->annotation_count > 0) {
        uint64_t a = atomic_fetch_add_explicit(&t->annot_next, 1, memory_order_relaxed);
        if (a < t->annot_capacity) {
            vkprof_annot *an = &t->annots[a];
            an->count = span->annotation_count;
            for (uint32_t i = 0; i < an->count; i++) {
                an->key[i] = span->annotation_key[i];
                memcpy(an->value[i], span->annotation_value[i], sizeof an->value[i]);
            }
            e->annot = (uint32_t)a + 1;
        } else {
            atomic_fetch_add_explicit(&t->annot_dropped, 1, memory_order_relaxed);
        }
    }
    publish(e);
}

void vkprof__trace_gpu(vkprof_context ctx, vkprof_phase phase, uint64_t begin_ticks,
                       uint64_t end_ticks, uint64_t flow, uint64_t step)
{
    vkprof_event *e = claim(&ctx->trace);
    if (e == NULL) {
        return;
    }
    e->kind = VKPROF_EV_GPU;
    e->start = begin_ticks;
    e->end = end_ticks;
    e->id = flow;
    e->step = step;
    e->name = phase;
    e->tid = (uint16_t)(ctx->desc.queue_family_index * 100u + ctx->desc.queue_index + 1u);
    e->flags = 0;
    e->annot = 0;
    publish(e);
}

void vkprof__trace_step(vkprof_context ctx, uint64_t step, uint64_t now_ns)
{
    vkprof_event *e = claim(&ctx->trace);
    if (e == NULL) {
        return;
    }
    e->kind = VKPROF_EV_STEP;
    e->start = e->end = now_ns;
    e->id = 0;
    e->step = step;
    e->name = 0;
    e->tid = vkprof__thread_index();
    e->flags = 0;
    e->annot = 0;
    publish(e);
}

/* ---- export ----------------------------------------------------------- */

typedef struct out_event {
    uint64_t start, end; /* host ns */
    const vkprof_event *src;
} out_event;

static void put_json_string(vkprof_afile *f, const char *s)
{
    vkprof__afile_putc(f, '"');
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        switch (*c) {
        case '"': vkprof__afile_puts(f, "\\\""); break;
        case '\\': vkprof__afile_puts(f, "\\\\"); break;
        case '\n': vkprof__afile_puts(f, "\\n"); break;
        case '\r': vkprof__afile_puts(f, "\\r"); break;
        case '\t': vkprof__afile_puts(f, "\\t"); break;
        default:
            if (*c < 0x20) {
                vkprof__afile_printf(f, "\\u%04x", *c);
            } else {
                vkprof__afile_putc(f, *c);
            }
        }
    }
    vkprof__afile_putc(f, '"');
}

/* ns after the trace start, as microseconds with three decimals */
static void put_us(vkprof_afile *f, uint64_t ns)
{
    vkprof__afile_printf(f, "%" PRIu64 ".%03u", ns / 1000u, (unsigned)(ns % 1000u));
}

static int cmp_out(const void *a, const void *b)
{
    const out_event *x = a, *y = b;
    if (x->src->kind != y->src->kind) {
        return x->src->kind < y->src->kind ? -1 : 1;
    }
    if (x->src->tid != y->src->tid) {
        return x->src->tid < y->src->tid ? -1 : 1;
    }
    if (x->start != y->start) {
        return x->start < y->start ? -1 : 1;
    }
    /* same start: the longer (the parent) first */
    if (x->end != y->end) {
        return x->end > y->end ? -1 : 1;
    }
    return 0;
}

static const char *name_of(vkprof_context ctx, const vkprof_event *e)
{
    const char *n = NULL;
    if (e->kind == VKPROF_EV_GPU) {
        n = vkprof_phase_name(ctx, e->name);
    } else if (e->kind == VKPROF_EV_SPAN) {
        n = vkprof_bucket_name(ctx, e->name);
    }
    return n ? n : "?";
}

static int write_json(vkprof_context ctx, vkprof_afile *f)
{
    vkprof_trace *t = &ctx->trace;
    uint64_t n = atomic_load(&t->next);
    if (n > t->capacity) {
        n = t->capacity;
    }
    out_event *ev = n ? malloc(n * sizeof *ev) : NULL;
    if (n && ev == NULL) {
        errno = ENOMEM;
        return -1;
    }
    uint64_t kept = 0, unmapped = 0;
    uint64_t t0 = t->start_ns;
    for (uint64_t i = 0; i < n; i++) {
        const vkprof_event *e = &t->events[i];
        if (!atomic_load_explicit(&((vkprof_event *)e)->ready, memory_order_acquire)) {
            continue; /* still being written by another thread */
        }
        out_event o = {e->start, e->end, e};
        if (e->kind == VKPROF_EV_GPU) {
            uint64_t hs, he;
            if (!vkprof__cal_map(ctx, e->start, &hs) || !vkprof__cal_map(ctx, e->end, &he)) {
                unmapped++;
                continue;
            }
            /* the duration is exact from the ticks; the start is mapped */
            o.start = hs;
            o.end = hs + vkprof_ticks_to_ns(
                             vkprof_tick_delta(e->start, e->end, ctx->info.timestamp_valid_bits),
                             ctx->info.timestamp_period);
            (void)he;
        }
        if (o.start < t0) {
            t0 = o.start;
        }
        ev[kept++] = o;
    }
    if (kept > 1) {
        qsort(ev, kept, sizeof *ev, cmp_out);
    }

    vkprof__afile_printf(f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    /* track names and order; every later event starts with ",\n" */
    vkprof__afile_printf(f,
                         "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,"
                         "\"args\":{\"name\":\"vkprof host (pid %ld)\"}}",
                         PID_HOST, (long)getpid());
    vkprof__afile_printf(f,
                         ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,"
                         "\"args\":{\"sort_index\":0}}",
                         PID_HOST);
    vkprof__afile_printf(
        f, ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":",
        PID_GPU);
    char gpu_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE + 8];
    snprintf(gpu_name, sizeof gpu_name, "GPU: %s", ctx->info.device_name);
    put_json_string(f, gpu_name);
    vkprof__afile_printf(f,
                         "}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"tid\":0,"
                         "\"args\":{\"sort_index\":1}}",
                         PID_GPU);
    vkprof__afile_printf(f,
                         ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%u,"
                         "\"args\":{\"name\":\"queue family %u, queue %u\"}}",
                         PID_GPU, ctx->desc.queue_family_index * 100u + ctx->desc.queue_index + 1u,
                         ctx->desc.queue_family_index, ctx->desc.queue_index);
    /* Only the threads that recorded into this context: the thread registry
     * is process-wide, a trace is not. */
    uint32_t threads = vkprof__thread_count();
    unsigned char *used = calloc((size_t)threads + 1, 1);
    if (used == NULL) {
        free(ev);
        errno = ENOMEM;
        return -1;
    }
    for (uint64_t i = 0; i < kept; i++) {
        if (ev[i].src->kind != VKPROF_EV_GPU && ev[i].src->tid <= threads) {
            used[ev[i].src->tid] = 1;
        }
    }
    for (uint32_t tid = 1; tid <= threads; tid++) {
        if (!used[tid]) {
            continue;
        }
        const char *tn = vkprof__thread_name((uint16_t)tid);
        char fallback[32];
        if (tn == NULL) {
            snprintf(fallback, sizeof fallback, "thread %u", tid);
            tn = fallback;
        }
        vkprof__afile_printf(
            f,
            ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":",
            PID_HOST, tid);
        put_json_string(f, tn);
        vkprof__afile_printf(
            f,
            "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,\"tid\":%u,"
            "\"args\":{\"sort_index\":%u}}",
            PID_HOST, tid, tid);
    }
    free(used);

    uint64_t host_spans = 0, gpu_scopes = 0, flows = 0;
    for (uint64_t i = 0; i < kept && !vkprof__afile_failed(f); i++) {
        const vkprof_event *e = ev[i].src;
        uint64_t ts = ev[i].start - t0;
        uint64_t dur = ev[i].end >= ev[i].start ? ev[i].end - ev[i].start : 0;
        if (e->kind == VKPROF_EV_STEP) {
            vkprof__afile_printf(
                f,
                ",\n{\"ph\":\"i\",\"cat\":\"step\",\"name\":\"token\",\"s\":\"p\",\"pid\":%d,"
                "\"tid\":%u,\"ts\":",
                PID_HOST, e->tid);
            put_us(f, ts);
            vkprof__afile_printf(f, ",\"args\":{\"step\":%" PRIu64 "}}", e->step);
            continue;
        }
        bool gpu = e->kind == VKPROF_EV_GPU;
        const char *name = name_of(ctx, e);
        vkprof__afile_printf(f, ",\n{\"ph\":\"X\",\"cat\":\"%s\",\"name\":", gpu ? "gpu" : "host");
        put_json_string(f, name);
        vkprof__afile_printf(f, ",\"pid\":%d,\"tid\":%u,\"ts\":", gpu ? PID_GPU : PID_HOST, e->tid);
        put_us(f, ts);
        vkprof__afile_printf(f, ",\"dur\":");
        put_us(f, dur);
        if (gpu) {
            gpu_scopes++;
            vkprof__afile_printf(f, ",\"args\":{\"phase\":");
            put_json_string(f, name);
            vkprof__afile_printf(f, ",\"ns\":%" PRIu64 ",\"step\":%" PRIu64 "}}", dur, e->step);
        } else {
            host_spans++;
            vkprof__afile_printf(f, ",\"args\":{\"bucket\":");
            put_json_string(f, name);
            vkprof__afile_printf(f, ",\"hot\":%s,\"sync\":%s,\"step\":%" PRIu64,
                                 (e->flags & VKPROF_EVF_HOT) ? "true" : "false",
                                 (e->flags & VKPROF_EVF_SYNC) ? "true" : "false", e->step);
            if (e->flags & VKPROF_EVF_PROBE) {
                vkprof__afile_printf(f, ",\"probe\":true");
            }
            if (e->annot != 0) {
                const vkprof_annot *an = &t->annots[e->annot - 1];
                for (uint32_t k = 0; k < an->count; k++) {
                    vkprof__afile_putc(f, ',');
                    put_json_string(f, an->key[k]);
                    vkprof__afile_putc(f, ':');
                    put_json_string(f, an->value[k]);
                }
            }
            vkprof__afile_printf(f, "}}");
        }
    }

    if (vkprof__afile_failed(f)) {
        free(ev); /* a write failed: the rest would be formatted for nothing */
        return 0;
    }

    /* Flow arrows: sort span ids, then look each GPU scope's parent up. */
    typedef struct {
        uint64_t id;
        uint64_t start;
        uint16_t tid;
    } span_ref;
    span_ref *refs = host_spans ? malloc(host_spans * sizeof *refs) : NULL;
    uint64_t nrefs = 0;
    for (uint64_t i = 0; refs != NULL && i < kept && nrefs < host_spans; i++) {
        const vkprof_event *e = ev[i].src;
        if (e->kind == VKPROF_EV_SPAN && e->id != 0) {
            refs[nrefs].id = e->id;
            refs[nrefs].start = ev[i].start - t0;
            refs[nrefs].tid = e->tid;
            nrefs++;
        }
    }
    /* ids are handed out increasing, but spans are recorded at their end:
     * sort by id (shell sort, in place) */
    for (uint64_t gap = nrefs / 2; gap > 0; gap /= 2) {
        for (uint64_t i = gap; i < nrefs; i++) {
            span_ref tmp = refs[i];
            uint64_t j = i;
            for (; j >= gap && refs[j - gap].id > tmp.id; j -= gap) {
                refs[j] = refs[j - gap];
            }
            refs[j] = tmp;
        }
    }
    for (uint64_t i = 0; i < kept && !vkprof__afile_failed(f); i++) {
        const vkprof_event *e = ev[i].src;
        if (e->kind != VKPROF_EV_GPU || e->id == 0 || nrefs == 0) {
            continue;
        }
        uint64_t lo = 0, hi = nrefs;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (refs[mid].id < e->id) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if (lo >= nrefs || refs[lo].id != e->id) {
            continue; /* the span is still open or was dropped */
        }
        flows++;
        vkprof__afile_printf(
            f,
            ",\n{\"ph\":\"s\",\"cat\":\"flow\",\"name\":\"recorded\",\"id\":%" PRIu64
            ",\"pid\":%d,\"tid\":%u,\"ts\":",
            flows, PID_HOST, refs[lo].tid);
        put_us(f, refs[lo].start);
        vkprof__afile_printf(
            f,
            "},\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"flow\",\"name\":\"recorded\","
            "\"id\":%" PRIu64 ",\"pid\":%d,\"tid\":%u,\"ts\":",
            flows, PID_GPU, e->tid);
        put_us(f, ev[i].start - t0);
        vkprof__afile_printf(f, "}");
    }
    free(refs);
    free(ev);

    vkprof__afile_printf(f, "\n],\n");
    vkprof_calibration cal;
    vkprof_get_calibration(ctx, &cal);
    uint64_t aerr = 0;
    int64_t rt_off = vkprof__realtime_to_mono_offset(&aerr);
    uint64_t mono_now = vkprof_host_now_ns();
    static const char *const methods[] = {"none", "calibrated_timestamps", "bracket"};
    vkprof__afile_printf(f, "\"metadata\":{\"vkprof_version\":%u,\"device\":", vkprof_version());
    put_json_string(f, ctx->info.device_name);
    vkprof__afile_printf(f, ",\"driver\":");
    put_json_string(f, ctx->driver_name);
    vkprof__afile_printf(
        f,
        ",\"calibration\":{\"method\":\"%s\",\"extension\":\"%s\",\"host_domain\":\"%s\","
        "\"error_bound_ns\":%" PRIu64 ",\"points\":%u,\"recalibrations\":%" PRIu64
        ",\"drift_ppm\":%.4f},",
        methods[cal.method], cal.extension ? cal.extension : "",
        cal.host_domain ? cal.host_domain : "", cal.error_bound_ns, cal.points, cal.recalibrations,
        cal.drift_ppm);
    vkprof__afile_printf(f,
                         "\"dropped_events\":%" PRIu64 ",\"dropped_annotations\":%" PRIu64
                         ",\"unmapped_gpu_scopes\":%" PRIu64 ",\"event_capacity\":%u,"
                         "\"host_spans\":%" PRIu64 ",\"gpu_scopes\":%" PRIu64 ",\"flows\":%" PRIu64
                         ",",
                         atomic_load(&t->dropped), atomic_load(&t->annot_dropped), unmapped,
                         t->capacity, host_spans, gpu_scopes, flows);
    vkprof__afile_printf(f,
                         "\"clock_anchor\":{\"realtime_ns\":%" PRIu64 ",\"monotonic_ns\":%" PRIu64
                         ",\"error_ns\":%" PRIu64 "},",
                         (uint64_t)((int64_t)mono_now - rt_off), mono_now, aerr);
    /* GPU sampling: only the public accounting (one source for every exporter) */
    vkprof_timing_stats ts;
    vkprof_get_timing_stats(ctx, &ts);
    vkprof__afile_printf(f,
                         "\"trace_start_monotonic_ns\":%" PRIu64 ",\"steps\":%" PRIu64
                         ",\"timestamp_period_ns\":%.9g,\"timestamp_valid_bits\":%u,",
                         t0, atomic_load(&ctx->host.steps), (double)ctx->info.timestamp_period,
                         ctx->info.timestamp_valid_bits);
    vkprof__afile_printf(
        f,
        "\"gpu_sampling\":{\"mode\":\"%s\",\"every_n_steps\":%u,\"timed_steps\":%" PRIu64
        ",\"scopes_recorded\":%" PRIu64 ",\"samples\":%" PRIu64 ",\"submissions\":%" PRIu64
        ",\"scopes_collected\":%" PRIu64 ",\"scopes_dropped\":%" PRIu64
        ",\"scopes_pending\":%" PRIu64 ",\"lost\":{\"ring_full\":%" PRIu64
        ",\"overwritten\":%" PRIu64 ",\"never_submitted\":%" PRIu64 ",\"reset\":%" PRIu64
        ",\"misuse\":%" PRIu64 "}}}}\n",
        ts.mode == VKPROF_TIMING_RING ? "ring" : "2slot",
        ts.sample_every > 1 ? ts.sample_every : 1u, ts.timed_steps, ts.scopes_recorded, ts.samples,
        ts.submissions, ts.scopes_collected, ts.scopes_dropped, ts.scopes_pending,
        ts.lost_ring_full, ts.lost_overwritten, ts.lost_never_submitted, ts.lost_reset,
        ts.lost_misuse);
    return 0;
}

vkprof_result vkprof_trace_write(vkprof_context ctx, const char *path)
{
    if (ctx == NULL || path == NULL || path[0] == '\0') {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT, "trace_write: no path");
    }
    if (ctx->trace.events == NULL) {
        return vkprof__fail(ctx, VKPROF_ERROR_NOT_TRACING,
                            "trace_write('%s'): tracing was never started", path);
    }
    vkprof_afile out;
    int err = vkprof__afile_open(&out, path);
    if (err == 0) {
        if (write_json(ctx, &out) != 0 && !vkprof__afile_failed(&out)) {
            out.err = errno ? errno : ENOMEM;
            out.step = "format the trace";
        }
        /* the first failure of any step; out.step and out.hint stay valid */
        err = vkprof__afile_commit(&out);
    }
    if (err != 0) {
        const bool in_place = out.in_place;
        return vkprof__fail(ctx, VKPROF_ERROR_IO, "trace_write('%s'): cannot %s: %s%s%s; %s", path,
                            out.step ? out.step : "write", strerror(err), out.hint ? ": " : "",
                            out.hint ? out.hint : "",
                            in_place ? "the trace is incomplete"
                                     : "the previous file, if any, is untouched");
    }
    return VKPROF_OK;
}

vkprof_result vkprof_flush(vkprof_context ctx)
{
    if (ctx == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    if (ctx->trace.path[0] == '\0') {
        return VKPROF_ERROR_NOT_TRACING;
    }
    return vkprof_trace_write(ctx, ctx->trace.path);
}
