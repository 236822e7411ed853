/* The reader of the vkprof trace (rpt_load_file, rpt_parse, rpt_read_file): see
 * trace_reader.h and docs/report.md.
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
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- small helpers --------------------------------------------------------- */

/* Where a slice's event is, for the check for repeated slices (rpt_parse). */
typedef struct slice_at {
    size_t off; /* where the event starts in the buffer */
    long idx;   /* its index in traceEvents */
} slice_at;

typedef struct parser {
    const char *buf;
    size_t len, pos;
    char *err;
    size_t err_size;
    rpt_summary *s;
    size_t cap_gpu, cap_host, cap_tracks, cap_slices, cap_tokens, cap_token_pids, cap_experts,
        cap_flows;
    const rpt_walk_fns *walk; /* rpt_walk: the callbacks instead of the summary */
    uint64_t gpu_sum, host_sum;
    size_t last_track;
    bool seen_events, seen_meta;
    size_t ev_off;      /* where the event being read starts */
    slice_at *slice_at; /* by slice (rpt_slice.seq) */
    size_t cap_slice_at;
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

/* The first non-blank byte (at off) is neither '{' nor '[': say what the
 * bytes are not. */
static int fail_not_trace(parser *p, size_t off)
{
    size_t line, col;
    line_col(p->buf, off, &line, &col);
    if (rpt_trace_format(NULL, p->buf, p->len) == RPT_FORMAT_PFTRACE) {
        return fail(p, "a Perfetto trace (protobuf), not JSON text: rpt_load_file converts it");
    }
    unsigned char c = (unsigned char)p->buf[off];
    char shown[8] = "";
    if (c > 0x20 && c < 0x7f) {
        snprintf(shown, sizeof shown, " ('%c')", c);
    }
    return fail(p,
                "neither a JSON trace nor a Perfetto trace: byte 0x%02x%s at line %zu, column "
                "%zu, where a JSON trace has '{' or '[' (and a Perfetto trace starts with byte "
                "0x0a)",
                c, shown, line, col);
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
 * becomes '?'), cut to RPT_MAX_NAME bytes on a character boundary. */
char *rpt_clean_string(const char *s)
{
    size_t n = strlen(s);
    char *o = malloc((n < RPT_MAX_NAME ? n : RPT_MAX_NAME) + 1);
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
        if (k + cl > RPT_MAX_NAME) {
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
            if (++depth > RPT_MAX_DEPTH) {
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
        size_t off =
            (ep != NULL && ep >= p->buf && ep <= p->buf + p->len) ? (size_t)(ep - p->buf) : p->pos;
        return fail_syntax(p, off, "invalid JSON", event);
    }
    p->pos =
        (ep != NULL && ep > p->buf + p->pos && ep <= p->buf + end) ? (size_t)(ep - p->buf) : end;
    *out = v;
    return 0;
}

/* ---- keys given twice ------------------------------------------------------------ */

/* cJSON keeps every member of an object, so a key given twice would be
 * read as whichever a lookup finds first: no object the reader reads (an
 * event and everything in it, the metadata) may have one. Objects of up to
 * 16 members (events, args) are checked pair by pair; larger ones sorted
 * (n log n). */

#define SMALL_OBJECT 16

static int cmp_key_ptr(const void *a, const void *b)
{
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

static size_t n_members(const cJSON *o)
{
    size_t n = 0;
    for (const cJSON *c = o->child; c != NULL; c = c->next) {
        n++;
    }
    return n;
}

/* o's members with a key, sorted by key (malloc'd; NULL when out of memory). */
static const cJSON **sorted_members(const cJSON *o, size_t n, size_t *m)
{
    const cJSON **k = malloc((n ? n : 1) * sizeof *k);
    *m = 0;
    if (k == NULL) {
        return NULL;
    }
    for (const cJSON *c = o->child; c != NULL; c = c->next) {
        if (c->string != NULL) {
            k[(*m)++] = c;
        }
    }
    qsort(k, *m, sizeof *k, cmp_key_ptr);
    return k;
}

#define JSON_TYPE(v) ((v)->type & 0xff) /* cJSON_Is*() without a call */

/* strcmp(x, y) == 0, the first two bytes inline (keys mostly differ there) */
static inline bool same_key(const char *x, const char *y)
{
    return x[0] == y[0] &&
           (x[0] == '\0' || (x[1] == y[1] && (x[1] == '\0' || strcmp(x + 2, y + 2) == 0)));
}

/* A key of the object o given twice, or NULL (*oom: out of memory). Up to
 * SMALL_OBJECT members: a member is compared only with the earlier ones
 * that share its first byte (events' keys mostly differ there). */
static const char *twice_in(const cJSON *o, bool *oom)
{
    uint64_t first[4] = {0, 0, 0, 0};
    size_t n = 0;
    for (const cJSON *a = o->child; a != NULL; a = a->next) {
        if (++n > SMALL_OBJECT) {
            break;
        }
        if (a->string == NULL) {
            continue;
        }
        unsigned char c = (unsigned char)a->string[0];
        uint64_t bit = (uint64_t)1 << (c & 63);
        if (first[c >> 6] & bit) {
            for (const cJSON *b = o->child; b != a; b = b->next) {
                if (b->string != NULL && same_key(b->string, a->string)) {
                    return a->string;
                }
            }
        }
        first[c >> 6] |= bit;
    }
    if (n <= SMALL_OBJECT) {
        return NULL;
    }
    size_t m;
    const cJSON **k = sorted_members(o, n_members(o), &m);
    if (k == NULL) {
        *oom = true;
        return NULL;
    }
    const char *dup = NULL;
    for (size_t i = 1; i < m && dup == NULL; i++) {
        if (strcmp(k[i - 1]->string, k[i]->string) == 0) {
            dup = k[i]->string;
        }
    }
    free(k);
    return dup;
}

/* The first object in v (v itself, then depth first) with a key given
 * twice: returns the key, with chain[0 .. *depth) the values from v's child
 * down to that object; NULL when there is none. Nesting is at most
 * RPT_MAX_DEPTH (measure), so chain needs RPT_MAX_DEPTH entries. */
static const char *key_twice(const cJSON *v, const cJSON **chain, int level, int *depth, bool *oom)
{
    if (JSON_TYPE(v) == cJSON_Object) {
        const char *k = twice_in(v, oom);
        if (k != NULL || *oom) {
            *depth = level;
            return k;
        }
    }
    for (const cJSON *c = v->child; c != NULL && level < RPT_MAX_DEPTH; c = c->next) {
        if (JSON_TYPE(c) != cJSON_Object && JSON_TYPE(c) != cJSON_Array) {
            continue;
        }
        chain[level] = c;
        const char *k = key_twice(c, chain, level + 1, depth, oom);
        if (k != NULL || *oom) {
            return k;
        }
    }
    return NULL;
}

/* The key given twice in root or in something in it, cleaned, and the path of
 * its object from root ("" for root itself, "args", "args.list[2]"), cleaned;
 * *key NULL when there is none. -1: out of memory. */
static int find_key_twice(const cJSON *root, char **key, char **path)
{
    const cJSON *chain[RPT_MAX_DEPTH];
    int depth = 0;
    bool oom = false;
    *key = *path = NULL;
    const char *k = key_twice(root, chain, 0, &depth, &oom);
    if (oom) {
        return -1;
    }
    if (k == NULL) {
        return 0;
    }
    char buf[256];
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < depth && at < sizeof buf; i++) {
        const cJSON *parent = i == 0 ? root : chain[i - 1];
        int w;
        if (JSON_TYPE(parent) == cJSON_Array) {
            long n = 0;
            for (const cJSON *c = parent->child; c != chain[i]; c = c->next) {
                n++;
            }
            w = snprintf(buf + at, sizeof buf - at, "[%ld]", n);
        } else {
            w = snprintf(buf + at, sizeof buf - at, "%s%s", at > 0 ? "." : "",
                         chain[i]->string != NULL ? chain[i]->string : "");
        }
        at += w > 0 ? (size_t)w : 0;
    }
    *key = rpt_clean_string(k);
    *path = rpt_clean_string(buf);
    if (*key == NULL || *path == NULL) {
        free(*key);
        free(*path);
        *key = *path = NULL;
        return -1;
    }
    return 0;
}

/* An event with a key twice: an error naming the event, its line and the key. */
static int check_event_keys(parser *p, const cJSON *ev, long idx)
{
    char *k, *path;
    if (find_key_twice(ev, &k, &path) != 0) {
        return fail(p, "out of memory");
    }
    if (k == NULL) {
        return 0;
    }
    size_t line, col;
    line_col(p->buf, p->ev_off, &line, &col);
    int r =
        path[0] == '\0'
            ? fail(p, "the event has the key \"%s\" twice (at event #%ld, line %zu)", k, idx, line)
            : fail(p, "the event's \"%s\" has the key \"%s\" twice (at event #%ld, line %zu)", path,
                   k, idx, line);
    free(k);
    free(path);
    return r;
}

/* The same for the metadata: "metadata.gpu_sampling has the key ... twice". */
static int check_meta_keys(parser *p, const cJSON *m)
{
    char *k, *path;
    if (find_key_twice(m, &k, &path) != 0) {
        return fail(p, "out of memory");
    }
    if (k == NULL) {
        return 0;
    }
    int r = fail(p, "%s%s%s has the key \"%s\" twice", VKPROF_TF_META, path[0] ? "." : "", path, k);
    free(k);
    free(path);
    return r;
}

/* ---- JSON values: hashes and equality (find_repeats) ------------------------------ */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t hash_str(const char *s, uint64_t seed)
{
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    for (const unsigned char *u = (const unsigned char *)s; *u != '\0'; u++) {
        h = (h ^ *u) * 0x100000001b3ull;
    }
    return h;
}

/* A JSON value's hash: objects by their members in any order, numbers by
 * value (1 and 1.0 alike). */
static uint64_t hash_value(const cJSON *v)
{
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble == 0 ? 0.0 : v->valuedouble; /* -0 is 0 */
        uint64_t b;
        memcpy(&b, &d, sizeof b);
        return mix64(b ^ 1);
    }
    if (cJSON_IsString(v)) {
        return hash_str(v->valuestring != NULL ? v->valuestring : "", 2);
    }
    if (cJSON_IsArray(v)) {
        uint64_t h = 3;
        for (const cJSON *c = v->child; c != NULL; c = c->next) {
            h = mix64(h + hash_value(c));
        }
        return h;
    }
    if (cJSON_IsObject(v)) {
        uint64_t h = 0;
        for (const cJSON *c = v->child; c != NULL; c = c->next) {
            h += mix64(hash_str(c->string != NULL ? c->string : "", 4) ^ hash_value(c));
        }
        return mix64(h ^ 5);
    }
    return (uint64_t)(v->type & 0xff) + 6; /* true, false, null */
}

/* Equal JSON values (objects: the same keys with equal values, in any order;
 * no key is there twice: checked before). */
static bool same_value(const cJSON *a, const cJSON *b, bool *oom)
{
    if ((a->type & 0xff) != (b->type & 0xff)) {
        return false;
    }
    if (cJSON_IsNumber(a)) {
        return a->valuedouble == b->valuedouble;
    }
    if (cJSON_IsString(a)) {
        return strcmp(a->valuestring != NULL ? a->valuestring : "",
                      b->valuestring != NULL ? b->valuestring : "") == 0;
    }
    if (cJSON_IsArray(a)) {
        const cJSON *x = a->child, *y = b->child;
        for (; x != NULL && y != NULL; x = x->next, y = y->next) {
            if (!same_value(x, y, oom)) {
                return false;
            }
        }
        return x == NULL && y == NULL;
    }
    if (!cJSON_IsObject(a)) {
        return true; /* true, false, null */
    }
    size_t n = n_members(a);
    if (n != n_members(b)) {
        return false;
    }
    if (n <= SMALL_OBJECT) {
        for (const cJSON *x = a->child; x != NULL; x = x->next) {
            const cJSON *y =
                x->string != NULL ? cJSON_GetObjectItemCaseSensitive(b, x->string) : NULL;
            if (y == NULL || !same_value(x, y, oom)) {
                return false;
            }
        }
        return true;
    }
    size_t ma, mb;
    const cJSON **ka = sorted_members(a, n, &ma), **kb = sorted_members(b, n, &mb);
    bool same = ka != NULL && kb != NULL && ma == mb;
    *oom |= ka == NULL || kb == NULL;
    for (size_t i = 0; same && i < ma; i++) {
        same = strcmp(ka[i]->string, kb[i]->string) == 0 && same_value(ka[i], kb[i], oom);
    }
    free(ka);
    free(kb);
    return same;
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
    if (d > RPT_MAX_US) {
        return fail(p, "\"%s\" is too large (%g us; the limit is %g) (at event #%ld)", key, d,
                    RPT_MAX_US, idx);
    }
    *out = (int64_t)(d * 1000.0 + 0.5);
    return 0;
}

/* ---- tables ------------------------------------------------------------------- */

static int group_index(parser *p, bool gpu, const char *name, long idx, uint32_t *out)
{
    rpt_group **arr = gpu ? &p->s->gpu : &p->s->host;
    size_t *n = gpu ? &p->s->n_gpu : &p->s->n_host;
    size_t *cap = gpu ? &p->cap_gpu : &p->cap_host;
    char *clean = rpt_clean_string(name);
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
    if (*n >= RPT_MAX_GROUPS) {
        free(clean);
        return fail(p, "more than %d distinct %s (at event #%ld)", RPT_MAX_GROUPS,
                    gpu ? "GPU phases" : "host buckets", idx);
    }
    rpt_group *q = grow(*arr, cap, *n + 1, sizeof **arr);
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
    rpt_summary *s = p->s;
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
    if (s->n_tracks >= RPT_MAX_TRACKS) {
        return fail(p, "more than %d tracks (pid, tid) (at event #%ld)", RPT_MAX_TRACKS, idx);
    }
    rpt_track *q = grow(s->tracks, &p->cap_tracks, s->n_tracks + 1, sizeof *q);
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

static int push_expert(parser *p, int64_t id, long idx)
{
    rpt_summary *s = p->s;
    if (id < 0 || id > RPT_MAX_EXPERT_ID) {
        return fail(p, "\"args.%s\" holds an id that is not an integer in 0..%d (at event #%ld)",
                    VKPROF_TF_ARG_EXPERTS, RPT_MAX_EXPERT_ID, idx);
    }
    uint32_t *q = grow(s->expert_ids, &p->cap_experts, s->n_expert_ids + 1, sizeof *q);
    if (q == NULL) {
        return fail(p, "out of memory");
    }
    s->expert_ids = q;
    q[s->n_expert_ids++] = (uint32_t)id;
    return 0;
}

/* args.experts: "3,17,42" (vkprof_span_annotate_ids) or [3,17,42]; appended
 * to s->expert_ids, *n of them. */
static int expert_ids(parser *p, const cJSON *ex, long idx, uint32_t *n)
{
    *n = 0;
    if (cJSON_IsArray(ex)) {
        for (const cJSON *v = ex->child; v != NULL; v = v->next) {
            if (*n >= RPT_MAX_EXPERT_IDS) {
                return fail(p, "\"args.%s\" has more than %d ids (at event #%ld)",
                            VKPROF_TF_ARG_EXPERTS, RPT_MAX_EXPERT_IDS, idx);
            }
            double d = cJSON_IsNumber(v) ? v->valuedouble : -1.0;
            if (!isfinite(d) || d != floor(d) || d < 0 || d > RPT_MAX_EXPERT_ID) {
                d = -1.0;
            }
            if (push_expert(p, (int64_t)d, idx) != 0) {
                return -1;
            }
            (*n)++;
        }
        return 0;
    }
    if (!cJSON_IsString(ex) || ex->valuestring == NULL) {
        return fail(p, "\"args.%s\" is neither a string of ids nor an array (at event #%ld)",
                    VKPROF_TF_ARG_EXPERTS, idx);
    }
    const char *c = ex->valuestring;
    if (*c == '\0') {
        return 0; /* the empty list */
    }
    for (;;) {
        if (*c < '0' || *c > '9') {
            return fail(p, "\"args.%s\" is not a list of ids like \"3,17,42\" (at event #%ld)",
                        VKPROF_TF_ARG_EXPERTS, idx);
        }
        int64_t v = 0;
        while (*c >= '0' && *c <= '9') {
            v = v * 10 + (*c++ - '0');
            if (v > RPT_MAX_EXPERT_ID) {
                v = -1;
                break;
            }
        }
        if (*n >= RPT_MAX_EXPERT_IDS) {
            return fail(p, "\"args.%s\" has more than %d ids (at event #%ld)",
                        VKPROF_TF_ARG_EXPERTS, RPT_MAX_EXPERT_IDS, idx);
        }
        if (push_expert(p, v, idx) != 0) {
            return -1;
        }
        (*n)++;
        if (*c == '\0') {
            return 0;
        }
        if (*c++ != ',') {
            return fail(p, "\"args.%s\" is not a list of ids like \"3,17,42\" (at event #%ld)",
                        VKPROF_TF_ARG_EXPERTS, idx);
        }
    }
}

static int on_slice(parser *p, const cJSON *ev, long idx, const char *name, bool gpu)
{
    rpt_summary *s = p->s;
    int64_t ts, dur, pid, tid, step = -1;
    const cJSON *args;
    if (get_time_ns(p, ev, "ts", idx, &ts) != 0 || get_time_ns(p, ev, "dur", idx, &dur) != 0 ||
        event_pid_tid(p, ev, idx, &pid, &tid) != 0 || event_args(p, ev, idx, &args) != 0) {
        return -1;
    }
    const char *key = gpu ? VKPROF_TF_ARG_PHASE : VKPROF_TF_ARG_BUCKET;
    const char *gname = NULL;
    if (args != NULL) {
        if (get_string(args, key, &gname) == WRONG) {
            return fail(p, "\"args.%s\" is not a string (at event #%ld)", key, idx);
        }
        if (get_int(args, VKPROF_TF_ARG_STEP, 0, &step) == WRONG) {
            return fail(p, "\"args.%s\" is not a non-negative integer (at event #%ld)",
                        VKPROF_TF_ARG_STEP, idx);
        }
    }
    if (gname == NULL) {
        gname = name;
    }
    int probe = 0;
    uint32_t n_ids = 0;
    size_t ids_at = s->n_expert_ids;
    if (!gpu && args != NULL) {
        const cJSON *pr = cJSON_GetObjectItemCaseSensitive(args, VKPROF_TF_ARG_PROBE);
        if (pr != NULL && !cJSON_IsBool(pr)) {
            return fail(p, "\"args.%s\" is not true or false (at event #%ld)", VKPROF_TF_ARG_PROBE,
                        idx);
        }
        probe = cJSON_IsTrue(pr);
        const cJSON *ex = cJSON_GetObjectItemCaseSensitive(args, VKPROF_TF_ARG_EXPERTS);
        if (ex != NULL && strcmp(gname, VKPROF_TF_EXPERTS_BUCKET) == 0 &&
            expert_ids(p, ex, idx, &n_ids) != 0) {
            return -1;
        }
    }
    uint32_t g = 0, t = 0;
    if (group_index(p, gpu, gname, idx, &g) != 0 || track_index(p, pid, tid, idx, &t) != 0) {
        return -1;
    }
    rpt_group *grp = gpu ? &s->gpu[g] : &s->host[g];
    if (add_u64(p, &grp->total_ns, (uint64_t)dur, idx) != 0 ||
        add_u64(p, gpu ? &p->gpu_sum : &p->host_sum, (uint64_t)dur, idx) != 0) {
        return -1;
    }
    grp->calls++;
    if (gpu) {
        s->tracks[t].is_gpu = 1;
    }
    rpt_slice *q = grow(s->slices, &p->cap_slices, s->n_slices + 1, sizeof *q);
    if (q == NULL) {
        return fail(p, "out of memory");
    }
    s->slices = q;
    slice_at *at = grow(p->slice_at, &p->cap_slice_at, s->n_slices + 1, sizeof *at);
    if (at == NULL) {
        return fail(p, "out of memory");
    }
    p->slice_at = at;
    at[s->n_slices] = (slice_at){.off = p->ev_off, .idx = idx};
    q[s->n_slices] = (rpt_slice){.ts_ns = ts,
                                 .dur_ns = dur,
                                 .step = step,
                                 .group = g,
                                 .track = t,
                                 .depth = 0,
                                 .seq = (uint32_t)s->n_slices,
                                 .parent = RPT_NO_PARENT,
                                 .is_gpu = gpu,
                                 .probe = probe,
                                 .n_experts = n_ids,
                                 .experts_at = ids_at};
    s->n_slices++;
    return 0;
}

/* Keep the first name; count a different second one. */
static void set_name(parser *p, char **slot, const char *name)
{
    char *c = rpt_clean_string(name);
    if (c == NULL) {
        return;
    }
    if (*slot == NULL) {
        *slot = c;
        return;
    }
    if (strcmp(*slot, c) != 0) {
        p->s->n_dup_meta++;
    }
    free(c);
}

static int on_meta(parser *p, const cJSON *ev, long idx, const char *name)
{
    int64_t pid, tid;
    const cJSON *args;
    if (event_pid_tid(p, ev, idx, &pid, &tid) != 0 || event_args(p, ev, idx, &args) != 0) {
        return -1;
    }
    p->s->n_meta_events++;
    bool proc = strcmp(name, VKPROF_TF_M_PROCESS_NAME) == 0;
    bool thread = strcmp(name, VKPROF_TF_M_THREAD_NAME) == 0;
    if (!proc && !thread) {
        return 0; /* sort indices and others: only the order of tracks */
    }
    const char *value = NULL;
    if (args == NULL || get_string(args, VKPROF_TF_M_ARG_NAME, &value) != PRESENT) {
        return fail(p, "%s without a string \"args.%s\" (at event #%ld)", name,
                    VKPROF_TF_M_ARG_NAME, idx);
    }
    if (proc) {
        if (pid == VKPROF_TF_PID_GPU) {
            set_name(p, &p->s->process_name_gpu, value);
        }
        return 0;
    }
    uint32_t t;
    if (track_index(p, pid, tid, idx, &t) != 0) {
        return -1;
    }
    set_name(p, &p->s->tracks[t].name, value);
    return 0;
}

static int on_instant(parser *p, const cJSON *ev, long idx, const char *name, const char *cat)
{
    rpt_summary *s = p->s;
    if (name == NULL || cat == NULL || strcmp(name, VKPROF_TF_STEP_NAME) != 0 ||
        strcmp(cat, VKPROF_TF_CAT_STEP) != 0) {
        s->n_other_instants++;
        return 0;
    }
    int64_t ts, pid, tid;
    if (get_time_ns(p, ev, "ts", idx, &ts) != 0 || event_pid_tid(p, ev, idx, &pid, &tid) != 0) {
        return -1;
    }
    int64_t *pq = grow(s->token_pids, &p->cap_token_pids, s->n_token_pids + 1, sizeof *pq);
    if (pq == NULL) {
        return fail(p, "out of memory");
    }
    s->token_pids = pq;
    pq[s->n_token_pids++] = pid;
    int64_t *q = grow(s->token_ts_ns, &p->cap_tokens, s->n_token_events + 1, sizeof *q);
    if (q == NULL) {
        return fail(p, "out of memory");
    }
    s->token_ts_ns = q;
    q[s->n_token_events++] = ts;
    return 0;
}

/* A flow's id as rpt_flow keeps it: a number by its value (an integer in
 * 0..2^64 as itself, any other number by its double's bits), a string by its
 * FNV-1a hash, tagged (id_str) so that it never equals a number's. */
static int flow_id(parser *p, const cJSON *v, long idx, uint64_t *id, uint8_t *id_str)
{
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d >= 0 && d < 18446744073709551616.0 && d == floor(d)) {
            *id = (uint64_t)d; /* -0 too: 0 */
        } else {
            memcpy(id, &d, sizeof *id);
        }
        *id_str = 0;
        return 0;
    }
    if (cJSON_IsString(v) && v->valuestring != NULL) {
        *id = hash_str(v->valuestring, 0);
        *id_str = 1;
        return 0;
    }
    return fail(p, "\"id\" is neither a number nor a string (at event #%ld)", idx);
}

/* An "s" or "f" event: counted ("s"), and kept with its id, time and track
 * (flows without an "id", e.g. other tools' "bind_id", are not kept). */
static int on_flow(parser *p, const cJSON *ev, long idx, bool start)
{
    rpt_summary *s = p->s;
    if (start) {
        s->n_flows++;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ev, "id");
    if (v == NULL) {
        return 0;
    }
    uint64_t id = 0;
    uint8_t id_str = 0;
    int64_t ts = 0, pid = 0, tid = 0;
    uint32_t t = 0;
    if (flow_id(p, v, idx, &id, &id_str) != 0 || get_time_ns(p, ev, "ts", idx, &ts) != 0 ||
        event_pid_tid(p, ev, idx, &pid, &tid) != 0 || track_index(p, pid, tid, idx, &t) != 0) {
        return -1;
    }
    rpt_flow *q = grow(s->flows, &p->cap_flows, s->n_flows_read + 1, sizeof *q);
    if (q == NULL) {
        return fail(p, "out of memory");
    }
    s->flows = q;
    q[s->n_flows_read++] =
        (rpt_flow){.ts_ns = ts, .id = id, .track = t, .id_str = id_str, .start = start};
    return 0;
}

static int on_event(parser *p, const cJSON *ev, long idx)
{
    rpt_summary *s = p->s;
    s->n_events++;
    if (!cJSON_IsObject(ev)) {
        return fail(p, "the event is not an object (at event #%ld)", idx);
    }
    const char *ph, *name, *cat;
    int r = get_string(ev, "ph", &ph);
    if (r != PRESENT) {
        return fail(p, "%s (at event #%ld)",
                    r == ABSENT ? "\"ph\" is missing" : "\"ph\" is not a string", idx);
    }
    if (get_string(ev, "name", &name) == WRONG) {
        return fail(p, "\"name\" is not a string (at event #%ld)", idx);
    }
    if (get_string(ev, "cat", &cat) == WRONG) {
        return fail(p, "\"cat\" is not a string (at event #%ld)", idx);
    }
    if (strcmp(ph, "X") == 0) {
        bool gpu = cat != NULL && strcmp(cat, VKPROF_TF_CAT_GPU) == 0;
        bool host = cat != NULL && strcmp(cat, VKPROF_TF_CAT_HOST) == 0;
        if (!gpu && !host) {
            s->n_other_x++;
            return 0;
        }
        if (name == NULL) {
            return fail(p, "an X event without a \"name\" (at event #%ld)", idx);
        }
        return on_slice(p, ev, idx, name, gpu);
    }
    if (strcmp(ph, "M") == 0) {
        if (name == NULL) {
            return fail(p, "an M event without a \"name\" (at event #%ld)", idx);
        }
        return on_meta(p, ev, idx, name);
    }
    if (strcmp(ph, "i") == 0) {
        return on_instant(p, ev, idx, name, cat);
    }
    if (strcmp(ph, "s") == 0 || strcmp(ph, "f") == 0) {
        return on_flow(p, ev, idx, ph[0] == 's');
    }
    if (strcmp(ph, "C") == 0) {
        s->n_counters++;
        return 0;
    }
    if (s->n_unknown_ph++ == 0) {
        char *c = rpt_clean_string(ph);
        if (c != NULL) {
            snprintf(s->first_unknown_ph, sizeof s->first_unknown_ph, "%s", c);
            free(c);
        }
        s->first_unknown_index = (uint64_t)idx;
    }
    return 0;
}

static int parse_events(parser *p)
{
    if (p->pos >= p->len) {
        return fail_syntax(p, p->len, "unexpected end of file", -1);
    }
    if (p->buf[p->pos] != '[') {
        return fail_syntax(p, p->pos, "\"traceEvents\" is not an array", -1);
    }
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && p->buf[p->pos] == ']') {
        p->pos++;
        return 0;
    }
    for (long idx = 0;; idx++) {
        skip_ws(p);
        if (p->pos < p->len && p->buf[p->pos] != '{') {
            cJSON *v = NULL;
            if (parse_value(p, RPT_MAX_EVENT_BYTES, "the event", idx, &v) != 0) {
                return -1;
            }
            cJSON_Delete(v);
            return fail(p, "the event is not an object (at event #%ld)", idx);
        }
        cJSON *ev = NULL;
        p->ev_off = p->pos;
        if (parse_value(p, RPT_MAX_EVENT_BYTES, "the event", idx, &ev) != 0) {
            return -1;
        }
        int r = check_event_keys(p, ev, idx);
        if (r == 0) {
            r = p->walk != NULL
                    ? (p->walk->event != NULL ? p->walk->event(p->walk->user, ev, idx) : 0)
                    : on_event(p, ev, idx);
        }
        cJSON_Delete(ev);
        if (r != 0) {
            return -1;
        }
        skip_ws(p);
        if (p->pos >= p->len) {
            return fail_syntax(p, p->len, "unexpected end of file", idx);
        }
        char c = p->buf[p->pos++];
        if (c == ']') {
            return 0;
        }
        if (c != ',') {
            return fail_syntax(p, p->pos - 1, "expected ',' or ']' after the event", idx);
        }
    }
}

/* ---- metadata ------------------------------------------------------------------ */

static int meta_string(parser *p, const cJSON *obj, const char *path, const char *key, char **out)
{
    const char *v;
    int r = get_string(obj, key, &v);
    if (r == WRONG) {
        return fail(p, "%s%s is not a string", path, key);
    }
    if (r == PRESENT) {
        free(*out);
        *out = rpt_clean_string(v);
        if (*out == NULL) {
            return fail(p, "out of memory");
        }
    }
    return 0;
}

static int meta_uint(parser *p, const cJSON *obj, const char *path, const char *key, int *has,
                     uint64_t *out)
{
    int64_t v;
    int r = get_int(obj, key, 0, &v);
    if (r == WRONG) {
        return fail(p, "%s%s is not a non-negative integer", path, key);
    }
    if (r == PRESENT) {
        *has = 1;
        *out = (uint64_t)v;
    }
    return 0;
}

static int meta_bool(parser *p, const cJSON *obj, const char *path, const char *key, int *has,
                     int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (v == NULL) {
        return 0;
    }
    if (!cJSON_IsBool(v)) {
        return fail(p, "%s%s is not true or false", path, key);
    }
    *has = 1;
    *out = cJSON_IsTrue(v) ? 1 : 0;
    return 0;
}

/* An array of names, joined by ", " into *out (NULL when empty) */
static int meta_names(parser *p, const cJSON *obj, const char *path, const char *key, char **out)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (a == NULL) {
        return 0;
    }
    if (!cJSON_IsArray(a)) {
        return fail(p, "%s%s is not an array", path, key);
    }
    size_t len = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, a)
    {
        if (!cJSON_IsString(v)) {
            return fail(p, "%s%s holds something other than a string", path, key);
        }
        len += strlen(v->valuestring) + 2;
    }
    free(*out);
    *out = NULL;
    if (len == 0) {
        return 0;
    }
    char *joined = malloc(len + 1);
    if (joined == NULL) {
        return fail(p, "out of memory");
    }
    joined[0] = '\0';
    size_t at = 0;
    cJSON_ArrayForEach(v, a)
    {
        char *clean = rpt_clean_string(v->valuestring);
        if (clean == NULL) {
            free(joined);
            return fail(p, "out of memory");
        }
        at += (size_t)snprintf(joined + at, len + 1 - at, "%s%s", at > 0 ? ", " : "", clean);
        free(clean);
    }
    *out = joined;
    return 0;
}

static int meta_object(parser *p, const cJSON *obj, const char *path, const char *key,
                       const cJSON **out)
{
    *out = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (*out != NULL && !cJSON_IsObject(*out)) {
        return fail(p, "%s%s is not an object", path, key);
    }
    return 0;
}

/* metadata.gpu_sampling.estimates: {name: {calls, timed, est_total_ns[,
 * outer]}}, each number a uint, at most RPT_MAX_ESTIMATES names */
static int meta_estimates(parser *p, const cJSON *obj, const char *path, const char *key)
{
    rpt_summary *s = p->s;
    const cJSON *e;
    if (meta_object(p, obj, path, key, &e) != 0 || e == NULL) {
        return e == NULL ? 0 : -1;
    }
    size_t n = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, e)
    {
        n++;
    }
    if (n > RPT_MAX_ESTIMATES) {
        return fail(p, "%s%s holds %zu phases, more than %d", path, key, n, RPT_MAX_ESTIMATES);
    }
    for (size_t i = 0; i < s->n_estimates; i++) {
        free(s->estimates[i].name);
    }
    free(s->estimates);
    s->estimates = NULL;
    s->n_estimates = 0;
    if (n == 0) {
        return 0;
    }
    if ((s->estimates = calloc(n, sizeof *s->estimates)) == NULL) {
        return fail(p, "out of memory");
    }
    char sub[160];
    cJSON_ArrayForEach(v, e)
    {
        rpt_estimate *x = &s->estimates[s->n_estimates];
        snprintf(sub, sizeof sub, "%s%s.<phase>.", path, key);
        if (!cJSON_IsObject(v)) {
            return fail(p, "%s%s.\"%.64s\" is not an object", path, key, v->string);
        }
        int has_c = 0, has_t = 0, has_e = 0, outer = 0, has_o = 0;
        if (meta_uint(p, v, sub, VKPROF_TF_EST_CALLS, &has_c, &x->calls) != 0 ||
            meta_uint(p, v, sub, VKPROF_TF_EST_TIMED, &has_t, &x->timed) != 0 ||
            meta_uint(p, v, sub, VKPROF_TF_EST_TOTAL, &has_e, &x->est_ns) != 0 ||
            meta_bool(p, v, sub, VKPROF_TF_EST_OUTER, &has_o, &outer) != 0) {
            return -1;
        }
        if (!has_c || !has_t || !has_e) {
            return fail(p, "%s%s.\"%.64s\" lacks calls, timed or est_total_ns", path, key,
                        v->string);
        }
        x->outer = has_o && outer;
        if ((x->name = rpt_clean_string(v->string)) == NULL) {
            return fail(p, "out of memory");
        }
        s->n_estimates++;
    }
    return 0;
}

/* The paths of the objects the report reads, for messages. */
#define META_ VKPROF_TF_META
#define CAL_ VKPROF_TF_META "." VKPROF_TF_META_CALIBRATION
#define SAMP_ VKPROF_TF_META "." VKPROF_TF_META_SAMPLING
#define LOST_ SAMP_ "." VKPROF_TF_SAMP_LOST

/* metadata.gpu_sampling's sample accounting (issue 8); every field optional,
 * so older traces (scopes_dropped alone, or nothing) still read. */
static int on_gpu_samples(parser *p, const cJSON *samp)
{
    rpt_summary *s = p->s;
    static const char *const why[VKPROF_TF_LOST_COUNT] = {
#define LOST_KEY_(id, key, text) key,
        VKPROF_TF_LOST_REASONS(LOST_KEY_)
#undef LOST_KEY_
    };
    const char *path = SAMP_ ".";
    const cJSON *lost;
    if (meta_uint(p, samp, path, VKPROF_TF_SAMP_RECORDED, &s->has_scopes_recorded,
                  &s->scopes_recorded) != 0 ||
        meta_uint(p, samp, path, VKPROF_TF_SAMP_SAMPLES, &s->has_samples, &s->samples) != 0 ||
        meta_uint(p, samp, path, VKPROF_TF_SAMP_SUBMISSIONS, &s->has_submissions,
                  &s->submissions) != 0 ||
        meta_uint(p, samp, path, VKPROF_TF_SAMP_COLLECTED, &s->has_scopes_collected,
                  &s->scopes_collected) != 0 ||
        meta_uint(p, samp, path, VKPROF_TF_SAMP_DROPPED, &s->has_scopes_dropped,
                  &s->scopes_dropped) != 0 ||
        meta_uint(p, samp, path, VKPROF_TF_SAMP_PENDING, &s->has_scopes_pending,
                  &s->scopes_pending) != 0 ||
        meta_object(p, samp, path, VKPROF_TF_SAMP_LOST, &lost) != 0) {
        return -1;
    }
    uint64_t sum = 0; /* each at most 2^53 (get_int): a few cannot overflow */
    if (lost != NULL) {
        s->has_lost = 1;
        for (size_t i = 0; i < VKPROF_TF_LOST_COUNT; i++) {
            int has = 0;
            if (meta_uint(p, lost, LOST_ ".", why[i], &has, &s->lost[i]) != 0) {
                return -1;
            }
            sum += s->lost[i];
        }
    }
    s->samples_lost = s->has_scopes_dropped ? s->scopes_dropped : sum;
    s->samples_lost_mismatch = s->has_scopes_dropped && s->has_lost && s->scopes_dropped != sum;
    s->samples_unbalanced =
        s->has_samples && s->has_scopes_collected && s->has_scopes_dropped &&
        s->has_scopes_pending &&
        s->samples != s->scopes_collected + s->scopes_dropped + s->scopes_pending;
    return 0;
}

/* metadata.merge: the inputs' names and pids (the rest is for people). */
static int on_merge(parser *p, const cJSON *mg)
{
    rpt_summary *s = p->s;
    const char *path = META_ "." VKPROF_TF_META_MERGE ".";
    const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(mg, VKPROF_TF_MERGE_INPUTS);
    if (meta_string(p, mg, path, VKPROF_TF_MERGE_METHOD, &s->merge_method) != 0) {
        return -1;
    }
    if (!cJSON_IsArray(inputs)) {
        return fail(p, "%s%s is not an array", path, VKPROF_TF_MERGE_INPUTS);
    }
    int n = cJSON_GetArraySize(inputs);
    if (n < 1 || n > RPT_MAX_RANKS) {
        return fail(p, "%s%s has %d entries (1..%d are read)", path, VKPROF_TF_MERGE_INPUTS, n,
                    RPT_MAX_RANKS);
    }
    s->ranks = calloc((size_t)n, sizeof *s->ranks);
    if (s->ranks == NULL) {
        return fail(p, "out of memory");
    }
    int k = 0;
    for (const cJSON *in = inputs->child; in != NULL; in = in->next, k++) {
        rpt_rank *r = &s->ranks[k];
        s->n_ranks = (size_t)k + 1;
        const char *name = NULL;
        if (!cJSON_IsObject(in) || get_string(in, VKPROF_TF_MERGE_NAME, &name) == WRONG ||
            get_int(in, VKPROF_TF_MERGE_HOST_PID_KEY, 0, &r->host_pid) != PRESENT ||
            get_int(in, VKPROF_TF_MERGE_GPU_PID_KEY, 0, &r->gpu_pid) != PRESENT) {
            return fail(p,
                        "%s%s[%d] is not an object with a string \"%s\" and integers \"%s\", "
                        "\"%s\"",
                        path, VKPROF_TF_MERGE_INPUTS, k, VKPROF_TF_MERGE_NAME,
                        VKPROF_TF_MERGE_HOST_PID_KEY, VKPROF_TF_MERGE_GPU_PID_KEY);
        }
        for (int j = 0; j < k; j++) {
            if (s->ranks[j].host_pid == r->host_pid || s->ranks[j].gpu_pid == r->gpu_pid ||
                s->ranks[j].host_pid == r->gpu_pid || s->ranks[j].gpu_pid == r->host_pid ||
                r->host_pid == r->gpu_pid) {
                return fail(p, "%s%s[%d] shares a pid with another input", path,
                            VKPROF_TF_MERGE_INPUTS, k);
            }
        }
        if (r->host_pid == r->gpu_pid) {
            return fail(p, "%s%s[%d] shares a pid with another input", path, VKPROF_TF_MERGE_INPUTS,
                        k);
        }
        char dflt[32];
        snprintf(dflt, sizeof dflt, "rank %d", k);
        r->name = rpt_clean_string(name != NULL ? name : dflt);
        if (r->name == NULL) {
            return fail(p, "out of memory");
        }
    }
    return 0;
}

static int on_metadata(parser *p, const cJSON *m)
{
    rpt_summary *s = p->s;
    if (!cJSON_IsObject(m)) {
        return fail(p, "\"" META_ "\" is not an object");
    }
    const cJSON *cal, *samp;
    const char *path = META_ ".";
    if (meta_uint(p, m, path, VKPROF_TF_META_FORMAT, &s->has_format, &s->format) != 0 ||
        meta_uint(p, m, path, VKPROF_TF_META_VERSION, &s->has_version, &s->version) != 0 ||
        meta_string(p, m, path, VKPROF_TF_META_DEVICE, &s->device) != 0 ||
        meta_string(p, m, path, VKPROF_TF_META_DRIVER, &s->driver) != 0 ||
        meta_uint(p, m, path, VKPROF_TF_META_DROPPED_EVENTS, &s->has_dropped, &s->dropped_events) !=
            0 ||
        meta_uint(p, m, path, VKPROF_TF_META_EVENT_CAPACITY, &s->has_capacity,
                  &s->event_capacity) != 0 ||
        meta_uint(p, m, path, VKPROF_TF_META_STEPS, &s->has_steps, &s->steps) != 0 ||
        meta_object(p, m, path, VKPROF_TF_META_CALIBRATION, &cal) != 0 ||
        meta_object(p, m, path, VKPROF_TF_META_SAMPLING, &samp) != 0) {
        return -1;
    }
    if (cal != NULL) {
        double eb;
        int r = get_double(cal, VKPROF_TF_CAL_ERROR_BOUND, &eb);
        if (r == WRONG || (r == PRESENT && (eb < 0 || eb > 1e18))) {
            return fail(p, CAL_ "." VKPROF_TF_CAL_ERROR_BOUND " is not a non-negative number");
        }
        if (r == PRESENT) {
            s->has_error_bound = 1;
            s->error_bound_ns = (uint64_t)(eb + 0.5);
        }
        if (meta_string(p, cal, CAL_ ".", VKPROF_TF_CAL_METHOD, &s->cal_method) != 0) {
            return -1;
        }
    }
    const cJSON *mg;
    if (meta_object(p, m, path, VKPROF_TF_META_MERGE, &mg) != 0 ||
        (mg != NULL && on_merge(p, mg) != 0)) {
        return -1;
    }
    if (samp != NULL) {
        if (meta_string(p, samp, SAMP_ ".", VKPROF_TF_SAMP_MODE, &s->sampling_mode) != 0 ||
            meta_uint(p, samp, SAMP_ ".", VKPROF_TF_SAMP_EVERY_N, &s->has_every_n,
                      &s->every_n_steps) != 0 ||
            meta_uint(p, samp, SAMP_ ".", VKPROF_TF_SAMP_ROTATE_SCOPES, &s->has_rotate,
                      &s->rotate_scopes) != 0 ||
            meta_bool(p, samp, SAMP_ ".", VKPROF_TF_SAMP_WHOLE_STEPS, &s->has_whole_steps,
                      &s->whole_steps) != 0 ||
            meta_bool(p, samp, SAMP_ ".", VKPROF_TF_SAMP_BUSY_MEASURED, &s->has_busy_measured,
                      &s->busy_measured) != 0 ||
            meta_names(p, samp, SAMP_ ".", VKPROF_TF_SAMP_OUTER_PHASES, &s->outer_phases) != 0 ||
            meta_estimates(p, samp, SAMP_ ".", VKPROF_TF_SAMP_ESTIMATES) != 0 ||
            on_gpu_samples(p, samp) != 0) {
            return -1;
        }
    }
    return 0;
}

/* ---- the top level ---------------------------------------------------------------- */

static int parse_top(parser *p)
{
    if (p->len >= 3 && memcmp(p->buf, "\xef\xbb\xbf", 3) == 0) {
        p->pos = 3;
    }
    skip_ws(p);
    if (p->pos >= p->len) {
        return fail(p, "the file is empty");
    }
    if (p->buf[p->pos] == '[') { /* the JSON Array Format: events only */
        p->seen_events = true;
        if (parse_events(p) != 0) {
            return -1;
        }
    } else if (p->buf[p->pos] != '{') {
        return fail_not_trace(p, p->pos);
    } else {
        p->pos++;
        skip_ws(p);
        bool first = true;
        for (;;) {
            if (p->pos >= p->len) {
                return fail_syntax(p, p->len, "unexpected end of file", -1);
            }
            if (first && p->buf[p->pos] == '}') {
                p->pos++;
                break;
            }
            first = false;
            if (p->buf[p->pos] != '"') {
                return fail_syntax(p, p->pos, "expected a key", -1);
            }
            cJSON *key = NULL;
            size_t key_pos = p->pos;
            if (parse_value(p, RPT_MAX_VALUE_BYTES, "a key", -1, &key) != 0) {
                return -1;
            }
            if (!cJSON_IsString(key) || key->valuestring == NULL) {
                cJSON_Delete(key);
                return fail_syntax(p, key_pos, "expected a key", -1);
            }
            bool is_events = strcmp(key->valuestring, "traceEvents") == 0;
            bool is_meta = strcmp(key->valuestring, VKPROF_TF_META) == 0;
            cJSON_Delete(key);
            skip_ws(p);
            if (p->pos >= p->len || p->buf[p->pos] != ':') {
                return fail_syntax(p, p->pos, "expected ':'", -1);
            }
            p->pos++;
            skip_ws(p);
            if (is_events) {
                if (p->seen_events) {
                    return fail(p, "the top-level object has \"traceEvents\" twice");
                }
                p->seen_events = true;
                if (parse_events(p) != 0) {
                    return -1;
                }
            } else {
                if (is_meta && p->seen_meta) {
                    return fail(p, "the top-level object has \"" META_ "\" twice");
                }
                cJSON *v = NULL;
                size_t value_at = p->pos;
                if (parse_value(p, RPT_MAX_VALUE_BYTES,
                                is_meta ? "\"" META_ "\"" : "a top-level value", -1, &v) != 0) {
                    return -1;
                }
                int r = 0;
                if (is_meta) {
                    p->seen_meta = true;
                    if (check_meta_keys(p, v) != 0) {
                        r = -1;
                    } else if (p->walk == NULL) {
                        r = on_metadata(p, v);
                    } else if (p->walk->metadata != NULL) {
                        r = p->walk->metadata(p->walk->user, v, p->buf + value_at,
                                              p->pos - value_at);
                    }
                }
                cJSON_Delete(v);
                if (r != 0) {
                    return -1;
                }
            }
            skip_ws(p);
            if (p->pos >= p->len) {
                return fail_syntax(p, p->len, "unexpected end of file", -1);
            }
            char c = p->buf[p->pos++];
            if (c == '}') {
                break;
            }
            if (c != ',') {
                return fail_syntax(p, p->pos - 1, "expected ',' or '}'", -1);
            }
            skip_ws(p);
        }
    }
    skip_ws(p);
    if (p->pos < p->len) {
        return fail_syntax(p, p->pos, "unexpected data after the JSON value", -1);
    }
    if (!p->seen_events) {
        return fail(p, "no \"traceEvents\" array");
    }
    return 0;
}

/* ---- after the last event ----------------------------------------------------------- */

static int cmp_slice(const void *a, const void *b)
{
    const rpt_slice *x = a, *y = b;
    if (x->track != y->track) {
        return x->track < y->track ? -1 : 1;
    }
    if (x->ts_ns != y->ts_ns) {
        return x->ts_ns < y->ts_ns ? -1 : 1;
    }
    if (x->dur_ns != y->dur_ns) {
        return x->dur_ns > y->dur_ns ? -1 : 1; /* the parent first */
    }
    return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : (x > y);
}

static int cmp_pair(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0]) {
        return x[0] < y[0] ? -1 : 1;
    }
    return x[1] < y[1] ? -1 : (x[1] > y[1]);
}

static const rpt_group *g_sort_groups; /* qsort has no context argument */

static int cmp_group_idx(const void *a, const void *b)
{
    const rpt_group *x = &g_sort_groups[*(const uint32_t *)a];
    const rpt_group *y = &g_sort_groups[*(const uint32_t *)b];
    if (x->total_ns != y->total_ns) {
        return x->total_ns > y->total_ns ? -1 : 1;
    }
    return strcmp(x->name, y->name);
}

/* Sort groups by total time and renumber the slices' group ids. */
static int sort_groups(rpt_summary *s, bool gpu)
{
    rpt_group *g = gpu ? s->gpu : s->host;
    size_t n = gpu ? s->n_gpu : s->n_host;
    if (n == 0) {
        return 0;
    }
    uint32_t *order = malloc(n * sizeof *order), *rank = malloc(n * sizeof *rank);
    rpt_group *sorted = malloc(n * sizeof *sorted);
    if (order == NULL || rank == NULL || sorted == NULL) {
        free(order);
        free(rank);
        free(sorted);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        order[i] = (uint32_t)i;
    }
    g_sort_groups = g;
    qsort(order, n, sizeof *order, cmp_group_idx);
    for (size_t i = 0; i < n; i++) {
        sorted[i] = g[order[i]];
        rank[order[i]] = (uint32_t)i;
    }
    memcpy(g, sorted, n * sizeof *g);
    for (size_t i = 0; i < s->n_slices; i++) {
        if ((s->slices[i].is_gpu != 0) == gpu) {
            s->slices[i].group = rank[s->slices[i].group];
        }
    }
    free(order);
    free(rank);
    free(sorted);
    return 0;
}

/* ---- repeated slices ------------------------------------------------------------ */

/* A slice of a run (the same track, ts and dur), read again from its event. */
typedef struct run_member {
    uint64_t hash; /* of name, cat and args */
    size_t off;
    long idx;
} run_member;

static int cmp_run_member(const void *a, const void *b)
{
    const run_member *x = a, *y = b;
    if (x->hash != y->hash) {
        return x->hash < y->hash ? -1 : 1;
    }
    return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

/* The event at off again (it was read before: this cannot fail), with its
 * name, whether its cat is gpu, and its args (NULL: none). */
static cJSON *reread(parser *p, size_t off, const char **name, bool *gpu, const cJSON **args)
{
    size_t pos = p->pos;
    p->pos = off;
    cJSON *ev = NULL;
    if (parse_value(p, RPT_MAX_EVENT_BYTES, "the event", -1, &ev) != 0) {
        ev = NULL;
    }
    p->pos = pos;
    const char *cat = NULL;
    *name = NULL;
    if (ev != NULL) {
        get_string(ev, "name", name);
        get_string(ev, "cat", &cat);
    }
    if (*name == NULL || cat == NULL) { /* cannot be: on_slice read them */
        cJSON_Delete(ev);
        return NULL;
    }
    *gpu = strcmp(cat, VKPROF_TF_CAT_GPU) == 0;
    *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
    return ev;
}

/* Slices that repeat an earlier one exactly: the same pid, tid, ts, dur (as
 * read, in ns), name, cat and args. The slices are sorted by track, ts and
 * dur, so the candidates are runs of neighbours, almost always of one slice:
 * nothing is read again for those. A longer run has its events read again
 * once each, sorted by a hash of name, cat and args, and each one whose hash
 * equals an earlier one's is compared with the earliest of them (read
 * again). At most two more reads of each slice's event, whatever the trace;
 * a real one pays for a few. */
static int find_repeats(parser *p)
{
    rpt_summary *s = p->s;
    run_member *m = NULL;
    size_t cap = 0;
    int rc = 0;
    for (size_t i = 0, j; rc == 0 && i < s->n_slices; i = j) {
        const rpt_slice *a = &s->slices[i];
        for (j = i + 1; j < s->n_slices && s->slices[j].track == a->track &&
                        s->slices[j].ts_ns == a->ts_ns && s->slices[j].dur_ns == a->dur_ns;
             j++) {
        }
        if (j - i < 2) {
            continue;
        }
        run_member *q = grow(m, &cap, j - i, sizeof *m);
        if (q == NULL) {
            rc = fail(p, "out of memory");
            break;
        }
        m = q;
        for (size_t k = i; k < j; k++) {
            const slice_at *at = &p->slice_at[s->slices[k].seq];
            const char *name;
            const cJSON *args;
            bool gpu;
            cJSON *ev = reread(p, at->off, &name, &gpu, &args);
            uint64_t h = 0;
            if (ev != NULL) {
                h = mix64(hash_str(name, gpu ? 7 : 8) ^ (args != NULL ? hash_value(args) : 9));
            }
            cJSON_Delete(ev);
            m[k - i] = (run_member){.hash = h, .off = at->off, .idx = at->idx};
        }
        qsort(m, j - i, sizeof *m, cmp_run_member);
        for (size_t g = 0, h; rc == 0 && g < j - i; g = h) {
            for (h = g + 1; h < j - i && m[h].hash == m[g].hash; h++) {
            }
            if (h - g < 2) {
                continue;
            }
            const char *n0;
            const cJSON *a0;
            bool g0;
            cJSON *e0 = reread(p, m[g].off, &n0, &g0, &a0);
            for (size_t k = g + 1; e0 != NULL && rc == 0 && k < h; k++) {
                const char *n1;
                const cJSON *a1;
                bool g1, oom = false;
                cJSON *e1 = reread(p, m[k].off, &n1, &g1, &a1);
                bool same = e1 != NULL && g0 == g1 && strcmp(n0, n1) == 0 &&
                            (a0 == NULL || a1 == NULL ? a0 == a1 : same_value(a0, a1, &oom));
                cJSON_Delete(e1);
                if (oom) {
                    rc = fail(p, "out of memory");
                } else if (same &&
                           (s->n_dup_events++ == 0 || (uint64_t)m[k].idx < s->first_dup_index)) {
                    s->first_dup_index = (uint64_t)m[k].idx;
                    s->first_dup_of = (uint64_t)m[g].idx;
                }
            }
            cJSON_Delete(e0);
        }
    }
    free(m);
    return rc;
}

static int finish(parser *p)
{
    rpt_summary *s = p->s;
    if (s->n_slices > 0) {
        qsort(s->slices, s->n_slices, sizeof *s->slices, cmp_slice);
    }
    if (find_repeats(p) != 0) {
        return -1;
    }
    /* A merged trace has every rank's token events: its tokens are those of
     * the first rank that has any (the ranks decode the same tokens).
     * token_ts_ns is still in file order here, as token_pids. */
    if (s->n_ranks > 0 && s->n_token_events == s->n_token_pids) {
        int64_t pid = -1;
        for (size_t r = 0; r < s->n_ranks && pid < 0; r++) {
            for (size_t i = 0; i < s->n_token_pids; i++) {
                if (s->token_pids[i] == s->ranks[r].host_pid) {
                    pid = s->ranks[r].host_pid;
                    break;
                }
            }
        }
        if (pid >= 0) {
            size_t n = 0;
            for (size_t i = 0; i < s->n_token_pids; i++) {
                if (s->token_pids[i] == pid) {
                    s->token_ts_ns[n++] = s->token_ts_ns[i];
                }
            }
            s->n_token_events = n;
        }
    }
    if (s->n_token_events > 0) {
        qsort(s->token_ts_ns, s->n_token_events, sizeof *s->token_ts_ns, cmp_i64);
    }

    /* Nesting on each track: depth and self time. */
    size_t *stack = malloc((s->n_slices ? s->n_slices : 1) * sizeof *stack);
    int64_t *self = malloc((s->n_slices ? s->n_slices : 1) * sizeof *self);
    if (stack == NULL || self == NULL) {
        free(stack);
        free(self);
        return fail(p, "out of memory");
    }
    size_t sp = 0;
    for (size_t i = 0; i < s->n_slices; i++) {
        rpt_slice *x = &s->slices[i];
        self[i] = x->dur_ns;
        if (i == 0 || s->slices[i - 1].track != x->track) {
            sp = 0;
        }
        int64_t end = x->ts_ns + x->dur_ns;
        while (sp > 0) {
            rpt_slice *top = &s->slices[stack[sp - 1]];
            if (top->ts_ns + top->dur_ns <= x->ts_ns) {
                sp--;
            } else {
                break;
            }
        }
        if (sp > 0) {
            rpt_slice *top = &s->slices[stack[sp - 1]];
            if (end <= top->ts_ns + top->dur_ns) {
                self[stack[sp - 1]] -= x->dur_ns; /* a child */
            }
        }
        x->depth = (uint32_t)sp;
        x->parent = sp > 0 ? (uint32_t)stack[sp - 1] : RPT_NO_PARENT;
        if (x->depth > s->tracks[x->track].max_depth) {
            s->tracks[x->track].max_depth = x->depth;
        }
        stack[sp++] = i;
        if (end > s->end_ns) {
            s->end_ns = end;
        }
    }
    for (size_t i = 0; i < s->n_slices; i++) {
        rpt_slice *x = &s->slices[i];
        uint64_t v = self[i] > 0 ? (uint64_t)self[i] : 0;
        rpt_group *g = x->is_gpu ? &s->gpu[x->group] : &s->host[x->group];
        g->self_ns += v;
        if (x->is_gpu) {
            s->gpu_busy_ns += v;
        } else {
            s->host_busy_ns += v;
        }
    }
    free(self);

    if (s->n_token_events > 0) {
        s->tokens = s->n_token_events;
        s->token_source = RPT_TOKENS_FROM_EVENTS;
        if (s->token_ts_ns[s->n_token_events - 1] > s->end_ns) {
            s->end_ns = s->token_ts_ns[s->n_token_events - 1];
        }
    } else if (s->has_steps && s->steps > 0) {
        s->tokens = s->steps;
        s->token_source = RPT_TOKENS_FROM_METADATA;
    } else {
        s->tokens = 1;
        s->token_source = RPT_TOKENS_DEFAULT;
    }
    s->gpu_tokens = s->tokens;
    if (s->has_every_n && s->every_n_steps > 1) {
        /* Only some steps carry GPU scopes: divide by the steps seen. */
        size_t n = 0;
        int64_t *steps = malloc((s->n_slices ? s->n_slices : 1) * sizeof *steps);
        if (steps == NULL) {
            free(stack);
            return fail(p, "out of memory");
        }
        for (size_t i = 0; i < s->n_slices; i++) {
            if (s->slices[i].is_gpu && s->slices[i].step >= 0) {
                steps[n++] = s->slices[i].step;
            }
        }
        if (n > 0) {
            qsort(steps, n, sizeof *steps, cmp_i64);
            uint64_t distinct = 1;
            for (size_t i = 1; i < n; i++) {
                distinct += steps[i] != steps[i - 1];
            }
            s->gpu_tokens = distinct;
        } else {
            free(steps);
            steps = NULL;
            s->gpu_tokens = (s->tokens + s->every_n_steps - 1) / s->every_n_steps;
        }
        free(steps);
    }
    free(stack);
    if (s->gpu_tokens == 0) {
        s->gpu_tokens = 1;
    }
    if (sort_groups(s, true) != 0 || sort_groups(s, false) != 0) {
        return fail(p, "out of memory");
    }
    return 0;
}

/* ---- public ----------------------------------------------------------------------------- */

void rpt_free(rpt_summary *s)
{
    if (s == NULL) {
        return;
    }
    for (size_t i = 0; i < s->n_gpu; i++) {
        free(s->gpu[i].name);
    }
    for (size_t i = 0; i < s->n_host; i++) {
        free(s->host[i].name);
    }
    for (size_t i = 0; i < s->n_tracks; i++) {
        free(s->tracks[i].name);
    }
    free(s->gpu);
    free(s->host);
    free(s->tracks);
    free(s->slices);
    free(s->token_ts_ns);
    free(s->process_name_gpu);
    free(s->device);
    free(s->driver);
    free(s->cal_method);
    free(s->sampling_mode);
    free(s->outer_phases);
    for (size_t i = 0; i < s->n_estimates; i++) {
        free(s->estimates[i].name);
    }
    free(s->estimates);
    for (size_t i = 0; i < s->n_ranks; i++) {
        free(s->ranks[i].name);
    }
    free(s->ranks);
    free(s->merge_method);
    free(s->token_pids);
    free(s->expert_ids);
    free(s->flows);
    free(s);
}

int rpt_parse(const char *buf, size_t len, rpt_summary **out, char *err, size_t err_size)
{
    *out = NULL;
    if (err != NULL && err_size > 0) {
        err[0] = '\0';
    }
    parser p = {.buf = buf, .len = len, .err = err, .err_size = err_size};
    if (buf == NULL || len == 0) {
        return fail(&p, "the file is empty");
    }
    p.s = calloc(1, sizeof *p.s);
    if (p.s == NULL) {
        return fail(&p, "out of memory");
    }
    int rc = parse_top(&p) != 0 || finish(&p) != 0 ? -1 : 0;
    free(p.slice_at);
    if (rc != 0) {
        rpt_free(p.s);
        return -1;
    }
    *out = p.s;
    return 0;
}

int rpt_walk(const char *buf, size_t len, const rpt_walk_fns *fns, char *err, size_t err_size)
{
    if (err != NULL && err_size > 0) {
        err[0] = '\0';
    }
    static const rpt_walk_fns none = {0};
    parser p = {
        .buf = buf, .len = len, .err = err, .err_size = err_size, .walk = fns ? fns : &none};
    if (buf == NULL || len == 0) {
        return fail(&p, "the file is empty");
    }
    return parse_top(&p);
}

/* The name ends in .pftrace or .perfetto-trace (any case). */
static bool named_pftrace(const char *name)
{
    static const char *const ext[] = {".pftrace", ".perfetto-trace"};
    size_t n = name != NULL ? strlen(name) : 0;
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        size_t m = strlen(ext[i]);
        if (n > m && strncasecmp(name + n - m, ext[i], m) == 0) {
            return true;
        }
    }
    return false;
}

int rpt_trace_format(const char *name, const char *buf, size_t len)
{
    if (buf == NULL || len == 0) {
        return RPT_FORMAT_JSON; /* its reader: "the file is empty" */
    }
    if (rpt_is_pftrace(buf, len)) {
        return RPT_FORMAT_PFTRACE;
    }
    bool packet = (unsigned char)buf[0] == 0x0a; /* Trace field 1, length-delimited */
    bool named = name != NULL && strcmp(name, "-") != 0 && named_pftrace(name);
    size_t i = len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
    while (i < len && is_ws(buf[i])) {
        i++;
    }
    if (i == len) {
        return packet && named ? RPT_FORMAT_PFTRACE : RPT_FORMAT_JSON;
    }
    char c = buf[i];
    if (c == '{' || c == '[') {
        if (!packet) {
            return RPT_FORMAT_JSON;
        }
        /* "\n{" or "\n[": JSON after a line break, or a TracePacket of 123
         * or 91 bytes; what a JSON trace has next decides */
        size_t j = i + 1;
        while (j < len && is_ws(buf[j])) {
            j++;
        }
        if (j == len) {
            return named ? RPT_FORMAT_PFTRACE : RPT_FORMAT_JSON;
        }
        bool json = c == '{' ? buf[j] == '"' || buf[j] == '}' : buf[j] == '{' || buf[j] == ']';
        return json ? RPT_FORMAT_JSON : RPT_FORMAT_PFTRACE;
    }
    return packet || named ? RPT_FORMAT_PFTRACE : RPT_FORMAT_NONE;
}

void rpt_pftrace_json_error(char *err, size_t err_size)
{
    static const char pre[] = "Perfetto trace, as converted to JSON: ";
    if (err == NULL || err_size <= sizeof pre) {
        return;
    }
    size_t n = strnlen(err, err_size - 1);
    if (n + sizeof pre > err_size) {
        n = err_size - sizeof pre; /* cut: the prefix and what fits */
    }
    memmove(err + sizeof pre - 1, err, n);
    memcpy(err, pre, sizeof pre - 1);
    err[sizeof pre - 1 + n] = '\0';
}

int rpt_load_file(const char *path, size_t max_bytes, char **buf_out, size_t *len_out, char *err,
                  size_t err_size)
{
    return rpt_load_trace(path, max_bytes, buf_out, len_out, NULL, err, err_size);
}

int rpt_load_trace(const char *path, size_t max_bytes, char **buf_out, size_t *len_out, int *format,
                   char *err, size_t err_size)
{
    parser p = {.err = err, .err_size = err_size};
    *buf_out = NULL;
    *len_out = 0;
    if (format != NULL) {
        *format = RPT_FORMAT_NONE;
    }
    if (err != NULL && err_size > 0) {
        err[0] = '\0';
    }
    if (max_bytes == 0) {
        max_bytes = RPT_MAX_FILE_BYTES;
    }
    bool is_stdin = strcmp(path, "-") == 0;
    int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return fail(&p, "cannot open: %s", strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        if (!is_stdin) {
            close(fd);
        }
        return fail(&p, "cannot stat: %s", strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        if (!is_stdin) {
            close(fd);
        }
        return fail(&p, "is a directory, not a trace file");
    }
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > (uint64_t)max_bytes) {
        if (!is_stdin) {
            close(fd);
        }
        return fail(&p, "the file is too large (%lld bytes; the limit is %zu)",
                    (long long)st.st_size, max_bytes);
    }
    size_t cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 65536;
    size_t n = 0;
    char *buf = malloc(cap);
    int rc = 0;
    while (buf != NULL) {
        if (n == cap) {
            if (cap > max_bytes) {
                rc = fail(&p, "the file is too large (more than %zu bytes)", max_bytes);
                break;
            }
            size_t ncap = cap * 2 > max_bytes + 1 ? max_bytes + 1 : cap * 2;
            char *q = realloc(buf, ncap);
            if (q == NULL) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = q;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0) {
            if (errno == EINTR) {
                continue;
            }
            rc = fail(&p, "read error: %s", strerror(errno));
            break;
        }
        if (r == 0) {
            break;
        }
        n += (size_t)r;
    }
    if (!is_stdin) {
        close(fd);
    }
    if (buf == NULL) {
        return fail(&p, "out of memory");
    }
    if (rc != 0) {
        free(buf);
        return -1;
    }
    if (n == 0) {
        free(buf);
        return fail(&p, "the file is empty");
    }
    if (n > max_bytes) {
        free(buf);
        return fail(&p, "the file is too large (more than %zu bytes)", max_bytes);
    }
    int fmt = rpt_trace_format(is_stdin ? NULL : path, buf, n);
    if (fmt == RPT_FORMAT_NONE) {
        /* what the JSON reader says of it (the first non-blank byte) */
        size_t i = n >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
        while (i < n && is_ws(buf[i])) {
            i++;
        }
        p.buf = buf;
        p.len = n;
        fail_not_trace(&p, i);
        free(buf);
        return -1;
    }
    if (format != NULL) {
        *format = fmt;
    }
    if (fmt == RPT_FORMAT_PFTRACE) {
        /* a native Perfetto trace: its JSON text, which rpt_parse reads; a
         * damaged one is refused with the converter's message */
        char *json = NULL;
        size_t jlen = 0;
        int crc = rpt_pftrace_to_json(buf, n, &json, &jlen, err, err_size);
        free(buf);
        if (crc != 0) {
            return -1;
        }
        buf = json;
        n = jlen;
    }
    *buf_out = buf;
    *len_out = n;
    return 0;
}

int rpt_read_file(const char *path, size_t max_bytes, rpt_summary **out, char *err, size_t err_size)
{
    char *buf = NULL;
    size_t n = 0;
    int fmt = RPT_FORMAT_NONE;
    *out = NULL;
    if (rpt_load_trace(path, max_bytes, &buf, &n, &fmt, err, err_size) != 0) {
        return -1;
    }
    int rc = rpt_parse(buf, n, out, err, err_size);
    free(buf);
    if (rc != 0 && fmt == RPT_FORMAT_PFTRACE) {
        rpt_pftrace_json_error(err, err_size);
    }
    return rc;
}

long rpt_pick_token(const rpt_summary *s, int64_t *t0, int64_t *t1)
{
    int64_t start = s->end_ns;
    for (size_t i = 0; i < s->n_slices; i++) {
        if (s->slices[i].ts_ns < start) {
            start = s->slices[i].ts_ns;
        }
    }
    size_t nt = s->n_token_events;
    if (nt == 0) {
        *t0 = start;
        *t1 = s->end_ns > start ? s->end_ns : start + 1;
        return -1;
    }
    const int64_t *tk = s->token_ts_ns;
    if (nt == 1) {
        *t0 = tk[0];
        *t1 = s->end_ns > tk[0] ? s->end_ns : tk[0] + 1;
        return 0;
    }
    /* Windows [tk[i], tk[i+1]): the median-duration one among those that hold
     * GPU work (all of them when none does). */
    size_t nw = nt - 1;
    size_t *cand = malloc(nw * sizeof *cand);
    int64_t *gstart = malloc((s->n_slices ? s->n_slices : 1) * sizeof *gstart);
    if (cand == NULL || gstart == NULL) {
        free(cand);
        free(gstart);
        *t0 = tk[nt - 2];
        *t1 = tk[nt - 1];
        return (long)(nt - 2);
    }
    size_t ng = 0;
    for (size_t i = 0; i < s->n_slices; i++) {
        if (s->slices[i].is_gpu) {
            gstart[ng++] = s->slices[i].ts_ns;
        }
    }
    qsort(gstart, ng, sizeof *gstart, cmp_i64);
    size_t nc = 0, g = 0;
    for (size_t w = 0; w < nw; w++) {
        while (g < ng && gstart[g] < tk[w]) {
            g++;
        }
        if (g < ng && gstart[g] < tk[w + 1]) {
            cand[nc++] = w;
        }
    }
    if (nc == 0) {
        for (size_t w = 0; w < nw; w++) {
            cand[nc++] = w;
        }
    }
    /* Sort the candidates by duration (ties: the earlier one first). */
    int64_t(*key)[2] = malloc(nc * sizeof *key);
    if (key != NULL) {
        for (size_t i = 0; i < nc; i++) {
            key[i][0] = tk[cand[i] + 1] - tk[cand[i]];
            key[i][1] = (int64_t)cand[i];
        }
        qsort(key, nc, sizeof *key, cmp_pair);
        for (size_t i = 0; i < nc; i++) {
            cand[i] = (size_t)key[i][1];
        }
        free(key);
    }
    size_t w = cand[(nc - 1) / 2];
    free(cand);
    free(gstart);
    *t0 = tk[w];
    *t1 = tk[w + 1];
    return (long)w;
}
