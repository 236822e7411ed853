/* The timeline store: a bounded, lock-free event store filled by spans,
 * steps and GPU scopes (raw device ticks) from any thread; which file a
 * context's trace goes to. Spans keep the host clock's raw ticks (ctx->hclk),
 * steps CLOCK_MONOTONIC ns, GPU scopes device ticks; src/export/trace_json.c
 * maps them. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "base/base.h"
#include "timeline/store.h"

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
    const char *path = ctx->desc.trace_path; /* resolved: desc or env, NULL: off */
    const char *from = ctx->trace_from;
    if (path == NULL) {
        return VKPROF_OK;
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
    return vkprof_trace_begin(ctx, 0);
}

void vkprof__trace_shutdown(vkprof_context ctx)
{
    vkprof_trace *t = &ctx->trace;
    atomic_store(&t->on, 0);
    if (!t->external) {
        free(t->events);
        free(t->annots);
    }
    free((void *)t->args_cache);
    t->events = NULL;
    t->annots = NULL;
    t->args_cache = NULL;
    t->external = false;
}

uint32_t vkprof__trace_annot_capacity(uint32_t capacity)
{
    return capacity / 16 + 64;
}

vkprof_result vkprof__trace_attach(vkprof_context ctx, vkprof_event *events, uint32_t capacity,
                                   vkprof_annot *annots, uint32_t annot_capacity)
{
    vkprof_trace *t = &ctx->trace;
    if (t->events != NULL || capacity == 0 || annot_capacity == 0) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    t->args_cache = calloc(VKPROF_ARGS_CACHE, sizeof *t->args_cache);
    if (t->args_cache == NULL) {
        return VKPROF_ERROR_OUT_OF_MEMORY;
    }
    t->events = events;
    t->annots = annots;
    t->capacity = capacity;
    t->annot_capacity = annot_capacity;
    t->external = true;
    t->keep_last = ctx->desc.trace_keep == VKPROF_TRACE_KEEP_LAST;
    t->start_ns = vkprof_host_now_ns();
    return VKPROF_OK;
}

vkprof_result vkprof_trace_begin(vkprof_context ctx, uint32_t capacity)
{
    if (ctx == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    if (ctx->offline) {
        return VKPROF_DISABLED; /* an opened spool records nothing */
    }
    vkprof_trace *t = &ctx->trace;
    if (t->events != NULL) {
        atomic_store(&t->on, 1);
        return VKPROF_OK;
    }
    if (capacity == 0) {
        capacity = ctx->desc.trace_capacity; /* resolved: never 0 */
    }
    t->events = calloc(capacity, sizeof *t->events);
    t->annot_capacity = vkprof__trace_annot_capacity(capacity);
    t->annots = calloc(t->annot_capacity, sizeof *t->annots);
    t->args_cache = calloc(VKPROF_ARGS_CACHE, sizeof *t->args_cache);
    if (t->events == NULL || t->annots == NULL || t->args_cache == NULL) {
        free(t->events);
        free(t->annots);
        free((void *)t->args_cache);
        t->events = NULL;
        t->annots = NULL;
        t->args_cache = NULL;
        return vkprof__fail(ctx, VKPROF_ERROR_OUT_OF_MEMORY, "trace: cannot allocate %u events",
                            capacity);
    }
    /* Touch every page now: the store is bounded and paid for up front, so a
     * span does not pay a page fault the first time it lands on a page. */
    memset(t->events, 0, (size_t)capacity * sizeof *t->events);
    memset(t->annots, 0, (size_t)t->annot_capacity * sizeof *t->annots);
    t->capacity = capacity;
    t->keep_last = ctx->desc.trace_keep == VKPROF_TRACE_KEEP_LAST;
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
        const vkprof_trace *t = &ctx->trace;
        n = atomic_load(&t->next);
        if (t->keep_last) {
            d = n > t->capacity ? n - t->capacity : 0; /* overwritten */
        } else {
            d = atomic_load(&t->dropped);
        }
        if (n > t->capacity) {
            n = t->capacity;
        }
    }
    if (recorded != NULL) {
        *recorded = n;
    }
    if (dropped != NULL) {
        *dropped = d;
    }
}

/* A slot for the next event, and the `ready` value that publishes it
 * (KEEP_FIRST: 1; KEEP_LAST: its lap + 1, the slot first marked not ready,
 * so a reader never takes the half-written event for the older one). */
vkprof_result vkprof_get_trace_info(vkprof_context ctx, vkprof_trace_info *out)
{
    if (ctx == NULL || out == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    memset(out, 0, sizeof *out);
    const vkprof_trace *t = &ctx->trace;
    if (t->events == NULL) {
        return VKPROF_OK;
    }
    out->tracing = atomic_load(&t->on) != 0;
    out->keep_last = t->keep_last;
    out->capacity = t->capacity;
    out->recorded = atomic_load(&t->next);
    out->kept = out->recorded < t->capacity ? out->recorded : t->capacity;
    if (t->keep_last) {
        out->overwritten = out->recorded - out->kept;
    } else {
        out->dropped = atomic_load(&t->dropped);
        out->full_at_ns = atomic_load(&t->full_at_ns);
    }
    out->start_ns = t->start_ns;
    return VKPROF_OK;
}

static vkprof_event *claim(vkprof_trace *t, uint32_t *ready)
{
    uint64_t i = atomic_fetch_add_explicit(&t->next, 1, memory_order_relaxed);
    if (t->keep_last) {
        vkprof_event *e = &t->events[i % t->capacity];
        *ready = (uint32_t)(i / t->capacity) + 1u;
        atomic_store_explicit(&e->ready, 0, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        return e;
    }
    if (i >= t->capacity) {
        if (atomic_fetch_add_explicit(&t->dropped, 1, memory_order_relaxed) == 0) {
            atomic_store_explicit(&t->full_at_ns, vkprof_host_now_ns(), memory_order_relaxed);
        }
        return NULL;
    }
    *ready = 1;
    return &t->events[i];
}

static void publish(vkprof_event *e, uint32_t ready)
{
    atomic_store_explicit(&e->ready, ready, memory_order_release);
}

uint32_t vkprof__trace_expect(const vkprof_trace *t, uint64_t next, uint32_t slot)
{
    if (!t->keep_last || next <= t->capacity) {
        return 1;
    }
    /* the event of the window [next - capacity, next) that lives in `slot` */
    uint64_t lap = next / t->capacity;
    uint64_t i = lap * t->capacity + slot;
    if (i >= next) {
        i -= t->capacity;
    }
    return (uint32_t)(i / t->capacity) + 1u;
}

/* An annotation's place: KEEP_FIRST its index; KEEP_LAST its index modulo
 * the capacity (the event holds the low 32 bits of the full index, + 1). */
static uint32_t annot_claim(vkprof_trace *t, uint32_t *ref)
{
    uint64_t a = atomic_fetch_add_explicit(&t->annot_next, 1, memory_order_relaxed);
    if (t->keep_last) {
        *ref = (uint32_t)a + 1u;
        if (*ref == 0) { /* 0 means none: that one index in 2^32 is not used */
            atomic_fetch_add_explicit(&t->annot_dropped, 1, memory_order_relaxed);
            return UINT32_MAX;
        }
        return (uint32_t)(a % t->annot_capacity);
    }
    if (a >= t->annot_capacity) {
        atomic_fetch_add_explicit(&t->annot_dropped, 1, memory_order_relaxed);
        return UINT32_MAX;
    }
    *ref = (uint32_t)a + 1u;
    return (uint32_t)a;
}

const vkprof_annot *vkprof__trace_annot(const vkprof_trace *t, uint64_t annot_next, uint32_t ref)
{
    if (ref == 0 || t->annots == NULL) {
        return NULL;
    }
    if (!t->keep_last) {
        return ref <= t->annot_capacity ? &t->annots[ref - 1] : NULL;
    }
    /* the full index whose low 32 bits are ref - 1, at most annot_next - 1 */
    if (annot_next == 0) {
        return NULL;
    }
    uint64_t last = annot_next - 1;
    uint64_t a = (last & ~(uint64_t)UINT32_MAX) | (uint64_t)(ref - 1u);
    if (a > last) {
        if (a < (UINT64_C(1) << 32)) {
            return NULL;
        }
        a -= UINT64_C(1) << 32;
    }
    if (last - a >= t->annot_capacity) {
        return NULL; /* overwritten since */
    }
    return &t->annots[a % t->annot_capacity];
}

static void copy_key(char *dst, const char *key)
{
    size_t n = 0;
    while (n < VKPROF_ANNOTATION_KEY_MAX && key[n] != '\0') {
        dst[n] = key[n];
        n++;
    }
    dst[n] = '\0';
}

void vkprof__trace_span(vkprof_context ctx, const vkprof_span_frame *span, uint32_t flags,
                        uint64_t end_ticks)
{
    vkprof_trace *t = &ctx->trace;
    uint32_t ready = 0;
    vkprof_event *e = claim(t, &ready);
    if (e == NULL) {
        return;
    }
    e->kind = VKPROF_EV_SPAN;
    e->start = span->start; /* host clock ticks: mapped at export */
    e->end = end_ticks;
    e->id = span->id;
    e->step = vkprof__steps_done(ctx) + 1;
    e->name = span->bucket;
    e->tid = vkprof__thread_index();
    e->flags = (uint8_t)(flags & (VKPROF_EVF_HOT | VKPROF_EVF_PROBE | VKPROF_EVF_SYNC));
    e->annot = 0;
    if (span->annot.count > 0) {
        uint32_t ref = 0;
        uint32_t a = annot_claim(t, &ref);
        if (a != UINT32_MAX) {
            t->annots[a] = span->annot;
            e->annot = ref;
        }
    }
    publish(e, ready);
}

_Static_assert(VKPROF_GPU_MAX_ARGS == VKPROF_SPAN_MAX_ANNOTATIONS,
               "a GPU scope's args are one annotation record");

static bool args_equal(const vkprof_annot *a, const vkprof_annot *b)
{
    if (a->count != b->count) {
        return false;
    }
    for (uint32_t k = 0; k < a->count; k++) {
        if (strcmp(a->key[k], b->key[k]) != 0 || strcmp(a->value[k], b->value[k]) != 0) {
            return false;
        }
    }
    return true;
}

uint32_t vkprof__trace_args(vkprof_context ctx, const vkprof_arg *args, uint32_t count)
{
    vkprof_trace *t = &ctx->trace;
    if (count == 0 || atomic_load_explicit(&t->on, memory_order_acquire) == 0) {
        return 0;
    }
    if (count > VKPROF_GPU_MAX_ARGS) {
        atomic_fetch_add_explicit(&t->annot_dropped, 1, memory_order_relaxed);
        return 0;
    }
    /* a key given twice, or one a GPU slice's args carry already: no reader
     * can take an event with a key twice, so the scope goes without args */
    static const char *const reserved[] = {"phase", "ns", "step"};
    for (uint32_t k = 0; k < count; k++) {
        bool bad = false;
        for (size_t r = 0; r < sizeof reserved / sizeof reserved[0] && !bad; r++) {
            bad = strncmp(args[k].key, reserved[r], VKPROF_ANNOTATION_KEY_MAX) == 0;
        }
        for (uint32_t m = 0; m < k && !bad; m++) {
            bad = strncmp(args[k].key, args[m].key, VKPROF_ANNOTATION_KEY_MAX) == 0;
        }
        if (bad) {
            atomic_fetch_add_explicit(&t->annot_dropped, 1, memory_order_relaxed);
            return 0;
        }
    }
    vkprof_annot a;
    a.count = count;
    /* FNV-1a over the keys' addresses and the values: an equal record whose
     * keys are other copies of the same text is only not shared */
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (uint32_t k = 0; k < count; k++) {
        copy_key(a.key[k], args[k].key);
        h = (h ^ (uint64_t)(uintptr_t)args[k].key) * UINT64_C(0x100000001b3);
        const char *v = args[k].value;
        size_t n = 0;
        while (n < VKPROF_ANNOTATION_MAX && v[n] != '\0') {
            a.value[k][n] = v[n];
            h = (h ^ (uint8_t)v[n]) * UINT64_C(0x100000001b3);
            n++;
        }
        a.value[k][n] = '\0';
        h = (h ^ 0xffu) * UINT64_C(0x100000001b3);
    }
    h ^= h >> 29; /* the places below take low and high bits */
    /* An equal record written before (by any thread: the entry is stored
     * with release after the record, and records never change) is shared.
     * Two places per hash, so that two records that meet in one place do
     * not take turns being written anew. */
    _Atomic uint32_t *slot[2] = {&t->args_cache[h % VKPROF_ARGS_CACHE],
                                 &t->args_cache[(h >> 32) % VKPROF_ARGS_CACHE]};
    uint32_t seen[2];
    const uint64_t now = atomic_load_explicit(&t->annot_next, memory_order_relaxed);
    for (int k = 0; k < 2; k++) {
        seen[k] = atomic_load_explicit(slot[k], memory_order_acquire);
        const vkprof_annot *r = seen[k] != 0 ? vkprof__trace_annot(t, now, seen[k]) : NULL;
        if (r != NULL && args_equal(r, &a)) {
            /* KEEP_LAST: only a record of the newer half of the store is
             * shared, so that it outlives (nearly always) the events that
             * name it; an older one is written anew */
            if (!t->keep_last || (uint32_t)now - seen[k] < t->annot_capacity / 2) {
                return seen[k];
            }
        }
    }
    uint32_t ref = 0;
    uint32_t i = annot_claim(t, &ref);
    if (i == UINT32_MAX) {
        return 0;
    }
    t->annots[i] = a;
    /* an empty place first, else the one the older entry holds */
    int k = seen[0] == 0 ? 0 : seen[1] == 0 ? 1 : seen[0] < seen[1] ? 0 : 1;
    atomic_store_explicit(slot[k], ref, memory_order_release);
    return ref;
}

void vkprof__trace_gpu(vkprof_context ctx, vkprof_phase phase, uint64_t begin_ticks,
                       uint64_t end_ticks, uint64_t flow, uint64_t step, uint32_t annot)
{
    uint32_t ready = 0;
    vkprof_event *e = claim(&ctx->trace, &ready);
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
    e->annot = annot;
    publish(e, ready);
}

void vkprof__trace_step(vkprof_context ctx, uint64_t step, uint64_t now_ns)
{
    uint32_t ready = 0;
    vkprof_event *e = claim(&ctx->trace, &ready);
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
    publish(e, ready);
}
