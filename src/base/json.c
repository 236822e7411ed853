/* See json.h. */
#include "json.h"

#include <math.h>
#include <string.h>

static void buf_write(void *sink, const char *data, size_t n)
{
    vkprof_json *j = sink;
    if (j->len < j->cap) {
        size_t room = j->cap - 1 - j->len; /* keep one byte for the NUL */
        size_t k = n < room ? n : room;
        memcpy(j->buf + j->len, data, k);
        j->buf[j->len + k] = '\0';
    }
    j->len += n;
}

static void file_write(void *sink, const char *data, size_t n)
{
    (void)fwrite(data, 1, n, (FILE *)sink); /* the caller checks ferror() */
}

static void init(vkprof_json *j)
{
    memset(j, 0, sizeof *j);
}

void vkprof__json_to_sink(vkprof_json *j, vkprof_json_write_fn write, void *sink)
{
    init(j);
    j->write = write;
    j->sink = sink;
}

void vkprof__json_to_file(vkprof_json *j, FILE *f)
{
    vkprof__json_to_sink(j, file_write, f);
}

void vkprof__json_to_buffer(vkprof_json *j, char *buf, size_t cap)
{
    init(j);
    j->write = buf_write;
    j->sink = j;
    j->buf = buf;
    j->cap = buf != NULL ? cap : 0;
    if (j->cap > 0) {
        buf[0] = '\0';
    }
}

size_t vkprof__json_len(const vkprof_json *j)
{
    return j->len;
}

static void put(vkprof_json *j, const char *s, size_t n)
{
    j->write(j->sink, s, n);
}

/* Before a value (or a key): the comma, and the check that an object gets a
 * key first. Returns false (and marks the document bad) on misuse. */
static bool before_value(vkprof_json *j, bool is_key)
{
    if (j->depth > 0 && j->closer[j->depth - 1] == '}' && !is_key && !j->after_key) {
        j->bad = true; /* a value in an object without its key */
        return false;
    }
    if (is_key && (j->depth == 0 || j->closer[j->depth - 1] != '}' || j->after_key)) {
        j->bad = true; /* a key outside an object, or two keys in a row */
        return false;
    }
    if (j->after_key) {
        j->after_key = false;
        return true; /* the comma came before the key */
    }
    if (j->depth > 0) {
        if (j->has_item[j->depth - 1]) {
            put(j, ",", 1);
        }
        j->has_item[j->depth - 1] = true;
    }
    return true;
}

static void open_container(vkprof_json *j, char open, char close)
{
    if (j->depth >= VKPROF_JSON_MAX_DEPTH) {
        j->bad = true;
        return;
    }
    if (!before_value(j, false)) {
        return;
    }
    put(j, &open, 1);
    j->closer[j->depth] = close;
    j->has_item[j->depth] = false;
    j->depth++;
}

void vkprof__json_obj(vkprof_json *j)
{
    open_container(j, '{', '}');
}

void vkprof__json_arr(vkprof_json *j)
{
    open_container(j, '[', ']');
}

void vkprof__json_end(vkprof_json *j)
{
    if (j->depth == 0 || j->after_key) {
        j->bad = true;
        return;
    }
    j->depth--;
    put(j, &j->closer[j->depth], 1);
}

static void put_escaped(vkprof_json *j, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    put(j, "\"", 1);
    const char *run = s; /* bytes that need no escape are written in runs */
    for (const char *p = s;; p++) {
        unsigned char c = (unsigned char)*p;
        if (c != 0 && c != '"' && c != '\\' && c >= 0x20) {
            continue;
        }
        if (p > run) {
            put(j, run, (size_t)(p - run));
        }
        if (c == 0) {
            break;
        }
        char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        switch (c) {
        case '"': put(j, "\\\"", 2); break;
        case '\\': put(j, "\\\\", 2); break;
        case '\n': put(j, "\\n", 2); break;
        case '\r': put(j, "\\r", 2); break;
        case '\t': put(j, "\\t", 2); break;
        default: put(j, e, 6); break;
        }
        run = p + 1;
    }
    put(j, "\"", 1);
}

char *vkprof__json_escape(char *out, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    for (const unsigned char *p = (const unsigned char *)s; *p != 0; p++) {
        const unsigned char c = *p;
        if (c != '"' && c != '\\' && c >= 0x20) {
            *out++ = (char)c;
            continue;
        }
        *out++ = '\\';
        switch (c) {
        case '"': *out++ = '"'; break;
        case '\\': *out++ = '\\'; break;
        case '\n': *out++ = 'n'; break;
        case '\r': *out++ = 'r'; break;
        case '\t': *out++ = 't'; break;
        default:
            out[0] = 'u';
            out[1] = '0';
            out[2] = '0';
            out[3] = hex[c >> 4];
            out[4] = hex[c & 15];
            out += 5;
            break;
        }
    }
    return out;
}

void vkprof__json_key(vkprof_json *j, const char *key)
{
    if (key == NULL || !before_value(j, true)) {
        j->bad = true;
        return;
    }
    put_escaped(j, key);
    put(j, ":", 1);
    j->after_key = true;
}

void vkprof__json_str(vkprof_json *j, const char *s)
{
    if (!before_value(j, false)) {
        return;
    }
    if (s == NULL) {
        put(j, "null", 4);
    } else {
        put_escaped(j, s);
    }
}

size_t vkprof__u64_to_dec(uint64_t v, char out[20])
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0);
    for (size_t i = 0; i < n; i++) {
        out[i] = tmp[n - 1 - i];
    }
    return n;
}

static void put_u64(vkprof_json *j, uint64_t v)
{
    char d[20];
    put(j, d, vkprof__u64_to_dec(v, d));
}

static void put_i64(vkprof_json *j, int64_t v)
{
    if (v < 0) {
        put(j, "-", 1);
        put_u64(j, (uint64_t)0 - (uint64_t)v); /* exact also for INT64_MIN */
    } else {
        put_u64(j, (uint64_t)v);
    }
}

void vkprof__json_u64(vkprof_json *j, uint64_t v)
{
    if (before_value(j, false)) {
        put_u64(j, v);
    }
}

void vkprof__json_i64(vkprof_json *j, int64_t v)
{
    if (before_value(j, false)) {
        put_i64(j, v);
    }
}

void vkprof__json_f64(vkprof_json *j, double v)
{
    if (!before_value(j, false)) {
        return;
    }
    if (isnan(v) || isinf(v)) {
        put(j, "null", 4);
        return;
    }
    if (v == floor(v) && fabs(v) <= 9007199254740992.0) {
        if (v == 0.0 && signbit(v)) {
            put(j, "0", 1); /* -0 is 0 to every reader */
            return;
        }
        put_i64(j, (int64_t)v);
        return;
    }
    char s[32];
    int n = snprintf(s, sizeof s, "%.17g", v);
    put(j, s, n > 0 ? (size_t)n : 0);
}

void vkprof__json_fixed(vkprof_json *j, int64_t v, unsigned decimals)
{
    if (decimals > 9) {
        j->bad = true;
        return;
    }
    if (!before_value(j, false)) {
        return;
    }
    uint64_t scale = 1;
    for (unsigned i = 0; i < decimals; i++) {
        scale *= 10u;
    }
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (v < 0) {
        put(j, "-", 1);
    }
    put_u64(j, mag / scale);
    if (decimals == 0) {
        return;
    }
    char frac[10];
    frac[0] = '.';
    uint64_t f = mag % scale;
    for (unsigned i = decimals; i > 0; i--) {
        frac[i] = (char)('0' + f % 10u);
        f /= 10u;
    }
    put(j, frac, decimals + 1);
}

void vkprof__json_bool(vkprof_json *j, bool v)
{
    if (before_value(j, false)) {
        put(j, v ? "true" : "false", v ? 4 : 5);
    }
}

void vkprof__json_null(vkprof_json *j)
{
    if (before_value(j, false)) {
        put(j, "null", 4);
    }
}

void vkprof__json_raw(vkprof_json *j, const char *text)
{
    if (text == NULL || text[0] == '\0') {
        j->bad = true;
        return;
    }
    if (before_value(j, false)) {
        put(j, text, strlen(text));
    }
}

void vkprof__json_newline(vkprof_json *j)
{
    put(j, "\n", 1);
}

void vkprof__json_kv_str(vkprof_json *j, const char *key, const char *s)
{
    vkprof__json_key(j, key);
    vkprof__json_str(j, s);
}

void vkprof__json_kv_u64(vkprof_json *j, const char *key, uint64_t v)
{
    vkprof__json_key(j, key);
    vkprof__json_u64(j, v);
}

void vkprof__json_kv_i64(vkprof_json *j, const char *key, int64_t v)
{
    vkprof__json_key(j, key);
    vkprof__json_i64(j, v);
}

void vkprof__json_kv_f64(vkprof_json *j, const char *key, double v)
{
    vkprof__json_key(j, key);
    vkprof__json_f64(j, v);
}

void vkprof__json_kv_bool(vkprof_json *j, const char *key, bool v)
{
    vkprof__json_key(j, key);
    vkprof__json_bool(j, v);
}

bool vkprof__json_ok(const vkprof_json *j)
{
    return !j->bad && j->depth == 0 && !j->after_key;
}
