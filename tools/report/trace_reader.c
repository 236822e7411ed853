/* Reader of the vkprof trace: see trace_reader.h and docs/report.md.
 *
 * The top-level object is walked here, byte by byte; every value in it (each
 * event, the metadata) is measured first (bracket depth and size, strings
 * skipped), then parsed on its own by cJSON with its exact length. So an event
 * never costs more than its own cJSON tree, which is freed at once, and cJSON
 * never sees a byte outside the buffer. */
#define _POSIX_C_SOURCE 200809L
#include "trace_reader.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- small helpers --------------------------------------------------------- */

typedef struct parser {
    const char *buf;
    size_t len, pos;
    char *err;
    size_t err_size;
    vkprof_trace_summary *s;
    size_t cap_gpu, cap_host, cap_tracks, cap_slices, cap_tokens;
    uint64_t gpu_sum, host_sum;
    size_t last_track;
    bool seen_events, seen_meta;
} parser;

static int fail(parser *p, const char *fmt, ...)
{
    if (p->err != NULL && p->err_size > 0 && p->err[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err, p->err_size, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Line and column (from 1) of a byte offset. */
static void line_col(const char *buf, size_t off, size_t *line, size_t *col)
{
    size_t l = 1, c = 1;
    for (size_t i = 0; i < off; i++) {
        if (buf[i] == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *col = c;
}

static int fail_syntax(parser *p, size_t off, const char *what, long event)
{
    size_t line, col;
    if (off > p->len) {
        off = p->len;
    }
    line_col(p->buf, off, &line, &col);
    const char *trunc = (off + 1 >= p->len) ? " (the file ends there: truncated?)" : "";
    if (event >= 0) {
        return fail(p, "%s at line %zu, column %zu%s (at event #%ld)", what, line, col, trunc,
                    event);
    }
    return fail(p, "%s at line %zu, column %zu%s", what, line, col, trunc);
}

static void *grow(void *arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) {
        return arr;
    }
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2 / elem) {
            return NULL;
        }
        n *= 2;
    }
    void *q = realloc(arr, n * elem);
    if (q != NULL) {
        *cap = n;
    }
    return q;
}

/* A copy that is valid UTF-8 without control characters (each bad byte
 * becomes '?'), cut to VKPROF_TRACE_MAX_NAME bytes on a character boundary. */
static char *clean_dup(const char *s)
{
    size_t n = strlen(s);
    char *o = malloc((n < VKPROF_TRACE_MAX_NAME ? n : VKPROF_TRACE_MAX_NAME) + 1);
    if (o == NULL) {
        return NULL;
    }
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, k = 0;
    while (i < n) {
        unsigned c = u[i];
        size_t cl = 0;
        uint32_t cp = 0;
        if (c >= 0x20 && c < 0x7f) {
            cl = 1;
            cp = c;
        } else if (c >= 0xc2 && c <= 0xdf) {
            cl = 2;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            cl = 3;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            cl = 4;
            cp = c & 0x07;
        }
        bool ok = cl > 0 && i + cl <= n;
        for (size_t j = 1; ok && j < cl; j++) {
            if ((u[i + j] & 0xc0) != 0x80) {
                ok = false;
            } else {
                cp = (cp << 6) | (u[i + j] & 0x3f);
            }
        }
        if (ok && cl == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff) || cp >= 0xfffe)) {
            ok = false;
        }
        if (ok && cl == 4 && (cp < 0x10000 || cp > 0x10ffff)) {
            ok = false;
        }
        if (!ok) {
            cl = 1;
        }
        if (k + cl > VKPROF_TRACE_MAX_NAME) {
            break;
        }
        if (ok) {
            memcpy(o + k, s + i, cl);
        } else {
            o[k] = '?';
        }
        k += cl;
        i += cl;
    }
    o[k] = '\0';
    return o;
}

/* ---- measuring and parsing one value ---------------------------------------- */

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void skip_ws(parser *p)
{
    while (p->pos < p->len && is_ws(p->buf[p->pos])) {
        p->pos++;
    }
}

/* End (exclusive) of the object or array at p->pos, without parsing it: counts
 * brackets outside strings. cJSON checks the text afterwards. */
static int measure(parser *p, size_t cap, const char *what, long event, size_t *end)
{
    size_t i = p->pos;
    int depth = 0;
    while (i < p->len) {
        if (i - p->pos >= cap) {
            if (event >= 0) {
                return fail(p, "%s is larger than %zu bytes (at event #%ld)", what, cap, event);
            }
            return fail(p, "%s is larger than %zu bytes", what, cap);
        }
        char c = p->buf[i++];
        if (c == '"') {
            while (i < p->len && p->buf[i] != '"') {
                i += (p->buf[i] == '\\') ? 2 : 1;
            }
            if (i >= p->len) {
                break;
            }
            i++;
        } else if (c == '{' || c == '[') {
            if (++depth > VKPROF_TRACE_MAX_DEPTH) {
                return fail_syntax(p, i - 1, "JSON nested more than 64 levels deep", event);
            }
        } else if (c == '}' || c == ']') {
            if (--depth == 0) {
                *end = i;
                return 0;
            }
        }
    }
    return fail_syntax(p, p->len, "unexpected end of file", event);
}

/* Parse the value at p->pos with cJSON and move past it. */
static int parse_value(parser *p, size_t cap, const char *what, long event, cJSON **out)
{
    *out = NULL;
    if (p->pos >= p->len) {
        return fail_syntax(p, p->len, "unexpected end of file", event);
    }
    size_t end = p->len;
    char c = p->buf[p->pos];
    if (c == '{' || c == '[') {
        if (measure(p, cap, what, event, &end) != 0) {
            return -1;
        }
    }
    const char *ep = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(p->buf + p->pos, end - p->pos, &ep, 0);
    if (v == NULL) {
        size_t off = (ep != NULL && ep >= p->buf && ep <= p->buf + p->len) ? (size_t)(ep - p->buf)
                                                                            : p->pos;
        return fail_syntax(p, off, "invalid JSON", event);
    }
    p->pos = (ep != NULL && ep > p->buf + p->pos && ep <= p->buf + end) ? (size_t)(ep - p->buf) : end;
    *out = v;
    return 0;
}

/* ---- field access ------------------------------------------------------------ */

enum { ABSENT = 0, PRESENT = 1, WRONG = -1 };

static int get_string(const cJSON *obj, const char *key, const char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = NULL;
    if (v == NULL || cJSON_IsNull(v)) {
        return ABSENT;
    }
    if (!cJSON_IsString(v) || v->valuestring == NULL) {
        return WRONG;
    }
    *out = v->valuestring;
    return PRESENT;
}

static int get_double(const cJSON *obj, const char *key, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (v == NULL) {
        return ABSENT;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
        return WRONG;
    }
    *out = v->valuedouble;
    return PRESENT;
}

/* An integer in [lo, 2^53]. */
static int get_int(const cJSON *obj, const char *key, double lo, int64_t *out)
{
    double d;
    int r = get_double(obj, key, &d);
    if (r != PRESENT) {
        return r;
    }
    if (d < lo || d > 9007199254740992.0 || (double)(int64_t)d != d) {
        return WRONG;
    }
    *out = (int64_t)d;
    return PRESENT;
}

/* A time in microseconds -> ns, rounded to the nearest ns. */
static int get_time_ns(parser *p, const cJSON *ev, const char *key, long idx, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ev, key);
    if (v == NULL) {
        return fail(p, "\"%s\" is missing (at event #%ld)", key, idx);
    }
    if (!cJSON_IsNumber(v)) {
        return fail(p, "\"%s\" is not a number (at event #%ld)", key, idx);
    }
    double d = v->valuedouble;
    if (!isfinite(d)) {
        return fail(p, "\"%s\" is not finite (at event #%ld)", key, idx);
    }
    if (d < 0) {
        return fail(p, "\"%s\" is negative (at event #%ld)", key, idx);
    }
    if (d > VKPROF_TRACE_MAX_US) {
        return fail(p, "\"%s\" is too large (%g us; the limit is %g) (at event #%ld)", key, d,
                    VKPROF_TRACE_MAX_US, idx);
    }
    *out = (int64_t)(d * 1000.0 + 0.5);
    return 0;
}

/* ---- tables ------------------------------------------------------------------- */

static int group_index(parser *p, bool gpu, const char *name, long idx, uint32_t *out)
{
    vkprof_trace_group **arr = gpu ? &p->s->gpu : &p->s->host;
    size_t *n = gpu ? &p->s->n_gpu : &p->s->n_host;
    size_t *cap = gpu ? &p->cap_gpu : &p->cap_host;
    char *clean = clean_dup(name);
    if (clean == NULL) {
        return fail(p, "out of memory");
    }
    for (size_t i = 0; i < *n; i++) {
        if (strcmp((*arr)[i].name, clean) == 0) {
            free(clean);
            *out = (uint32_t)i;
            return 0;
        }
    }
    if (*n >= VKPROF_TRACE_MAX_GROUPS) {
        free(clean);
        return fail(p, "more than %d distinct %s (at event #%ld)", VKPROF_TRACE_MAX_GROUPS,
                    gpu ? "GPU phases" : "host buckets", idx);
    }
    vkprof_trace_group *q = grow(*arr, cap, *n + 1, sizeof **arr);
    if (q == NULL) {
        free(clean);
        return fail(p, "out of memory");
    }
    *arr = q;
    memset(&q[*n], 0, sizeof q[*n]);
    q[*n].name = clean;
    *out = (uint32_t)(*n)++;
    return 0;
}

static int track_index(parser *p, int64_t pid, int64_t tid, long idx, uint32_t *out)
{
    vkprof_trace_summary *s = p->s;
    if (p->last_track < s->n_tracks && s->tracks[p->last_track].pid == pid &&
        s->tracks[p->last_track].tid == tid) {
        *out = (uint32_t)p->last_track;
        return 0;
    }
    for (size_t i = 0; i < s->n_tracks; i++) {
        if (s->tracks[i].pid == pid && s->tracks[i].tid == tid) {
            p->last_track = i;
            *out = (uint32_t)i;
            return 0;
        }
    }
    if (s->n_tracks >= VKPROF_TRACE_MAX_TRACKS) {
        return fail(p, "more than %d tracks (pid, tid) (at event #%ld)", VKPROF_TRACE_MAX_TRACKS,
                    idx);
    }
    vkprof_trace_track *q = grow(s->tracks, &p->cap_tracks, s->n_tracks + 1, sizeof *q);
    if (q == NULL) {
        return fail(p, "out of memory");
    }
    s->tracks = q;
    memset(&q[s->n_tracks], 0, sizeof q[s->n_tracks]);
    q[s->n_tracks].pid = pid;
    q[s->n_tracks].tid = tid;
    p->last_track = s->n_tracks;
    *out = (uint32_t)s->n_tracks++;
    return 0;
}

static int add_u64(parser *p, uint64_t *acc, uint64_t v, long idx)
{
    if (*acc > UINT64_MAX - v) {
        return fail(p, "the durations add up to more than 2^64 ns (at event #%ld)", idx);
    }
    *acc += v;
    return 0;
}

/* ---- events ------------------------------------------------------------------- */

static int event_pid_tid(parser *p, const cJSON *ev, long idx, int64_t *pid, int64_t *tid)
{
    *pid = 0;
    *tid = 0;
    if (get_int(ev, "pid", -9007199254740992.0, pid) == WRONG) {
        return fail(p, "\"pid\" is not an integer (at event #%ld)", idx);
    }
    if (get_int(ev, "tid", -9007199254740992.0, tid) == WRONG) {
        return fail(p, "\"tid\" is not an integer (at event #%ld)", idx);
    }
    return 0;
}

static int event_args(parser *p, const cJSON *ev, long idx, const cJSON **args)
{
    *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
    if (*args != NULL && !cJSON_IsObject(*args)) {
        return fail(p, "\"args\" is not an object (at event #%ld)", idx);
    }
    return 0;
}

static int on_slice(parser *p, const cJSON *ev, long idx, const char *name, bool gpu)
{
    vkprof_trace_summary *s = p->s;
    int64_t ts, dur, pid, tid, step = -1;
    const cJSON *args;
    if (get_time_ns(p, ev, "ts", idx, &ts) != 0 || get_time_ns(p, ev, "dur", idx, &dur) != 0 ||
        event_pid_tid(p, ev, idx, &pid, &tid) != 0 || event_args(p, ev, idx, &args) != 0) {
        return -1;
    }
    const char *key = gpu ? "phase" : "bucket";
    const char *gname = NULL;
    if (args != NULL) {
        if (get_string(args, key, &gname) == WRONG) {
            return fail(p, "\"args.%s\" is not a string (at event #%ld)", key, idx);
        }
        if (get_int(args, "step", 0, &step) == WRONG) {
            return fail(p, "\"args.step\" is not a non-negative integer (at event #%ld)", idx);
        }
    }
    if (gname == NULL) {
        gname = name;
    }
    uint32_t g, t;
    if (group_index(p, gpu, gname, idx, &g) != 0 || track_index(p, pid, tid, idx, &t) != 0) {
        return -1;
    }
    vkprof_trace_group *grp = gpu ? &s->gpu[g] : &s->host[g];
    if (add_u64(p, &grp->total_ns, (uint64_t)dur, idx) != 0 ||
        add_u64(p, gpu ? &p->gpu_sum : &p->host_sum, (uint64_t)dur, idx) != 0) {
        return -1;
    }
    grp->calls++;
    if (gpu) {
        s->tracks[t].is_gpu = 1;
    }
    vkprof_trace_slice *q = grow(s->slices, &p->cap_slices, s->n_slices + 1, sizeof *q);
    if (q == NULL) {
        return fail(p, "out of memory");
    }
    s->slices = q;
    q[s->n_slices] = (vkprof_trace_slice){.ts_ns = ts, .dur_ns = dur, .step = step, .group = g,
                                           .track = t, .depth = 0, .seq = (uint32_t)s->n_slices,
                                           .is_gpu = gpu};
    s->n_slices++;
    return 0;
}
