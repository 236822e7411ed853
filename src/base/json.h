/* The one JSON writer, for the library (trace, snapshot) and the tools
 * (their JSON reports). A shared internal (src/internal.cmake): the tools and the layer include
 * it as "base/json.h" through vkprof_internal; the shared library does not
 * export it.
 *
 * A streaming writer: values go straight to a sink (a vkprof_afile, a
 * caller's buffer, a stdio FILE), nothing is built in memory. Commas between
 * members and elements are placed by the writer, so a caller writes
 *
 *     vkprof__json_obj(j);
 *     vkprof__json_key(j, "count"); vkprof__json_u64(j, n);
 *     vkprof__json_key(j, "name");  vkprof__json_str(j, name);
 *     vkprof__json_end(j);
 *
 * Numbers are formatted without printf (integers exactly; doubles with up to
 * 17 significant digits through "%.17g" only where a fractional value needs
 * it: see vkprof__json_f64). Strings are escaped as RFC 8259 asks (quote,
 * backslash, control characters); other bytes pass unchanged, so UTF-8 stays
 * UTF-8. Nesting is bounded (VKPROF_JSON_MAX_DEPTH); deeper opens, and
 * closes with nothing open, set `bad` and write nothing, so a caller's bug
 * cannot produce a silently malformed document: vkprof__json_ok() says false.
 *
 * Not thread-safe per object. */
#ifndef VKPROF_BASE_JSON_H
#define VKPROF_BASE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define VKPROF_JSON_MAX_DEPTH 32

/* Where the bytes go: write(sink, data, n). */
typedef void (*vkprof_json_write_fn)(void *sink, const char *data, size_t n);

typedef struct vkprof_json {
    vkprof_json_write_fn write;
    void *sink;
    uint32_t depth;
    bool after_key;                       /* a key was written; its value comes next */
    bool bad;                             /* misuse seen: the document is not valid */
    bool has_item[VKPROF_JSON_MAX_DEPTH]; /* the open container has a member already */
    char closer[VKPROF_JSON_MAX_DEPTH];   /* '}' or ']' */
    /* for the buffer sink */
    char *buf;
    size_t cap, len;
} vkprof_json;

/* Sinks. (A vkprof_afile: vkprof__afile_json() in export/atomic_file.h.) */
void vkprof__json_to_sink(vkprof_json *j, vkprof_json_write_fn write, void *sink);
void vkprof__json_to_file(vkprof_json *j, FILE *f);
/* A caller's buffer of `cap` bytes (buf may be NULL with cap 0: a size
 * query). The text is cut at cap - 1 and always NUL-terminated when cap > 0;
 * vkprof__json_len() gives the full length it needs, without the NUL. */
void vkprof__json_to_buffer(vkprof_json *j, char *buf, size_t cap);
size_t vkprof__json_len(const vkprof_json *j);

/* Containers. */
void vkprof__json_obj(vkprof_json *j);
void vkprof__json_arr(vkprof_json *j);
void vkprof__json_end(vkprof_json *j); /* closes the innermost container */

/* A member name inside an object (escaped like a string). */
void vkprof__json_key(vkprof_json *j, const char *key);

/* Values. */
void vkprof__json_str(vkprof_json *j, const char *s); /* NULL writes null */
void vkprof__json_u64(vkprof_json *j, uint64_t v);
void vkprof__json_i64(vkprof_json *j, int64_t v);
/* A double: integral values in [-2^53, 2^53] exactly as integers, others
 * with "%.17g" (round-trips); NaN and infinities, which JSON lacks, as null. */
void vkprof__json_f64(vkprof_json *j, double v);
/* A fixed-point value `v / 10^decimals` with exactly `decimals` digits after
 * the point (0..9), no printf: e.g. (12345, 3) writes 12.345. Trace
 * timestamps in microseconds from ns use decimals 3. */
void vkprof__json_fixed(vkprof_json *j, int64_t v, unsigned decimals);
void vkprof__json_bool(vkprof_json *j, bool v);
void vkprof__json_null(vkprof_json *j);
/* Text that is already valid JSON for one value (e.g. a nested document made
 * by this writer). The caller vouches for it. */
void vkprof__json_raw(vkprof_json *j, const char *text);

/* Layout: a newline (and nothing else) between values, for documents meant
 * to be read line by line; the writer never needs it. */
void vkprof__json_newline(vkprof_json *j);

/* Shorthands for one member: key then value. */
void vkprof__json_kv_str(vkprof_json *j, const char *key, const char *s);
void vkprof__json_kv_u64(vkprof_json *j, const char *key, uint64_t v);
void vkprof__json_kv_i64(vkprof_json *j, const char *key, int64_t v);
void vkprof__json_kv_f64(vkprof_json *j, const char *key, double v);
void vkprof__json_kv_bool(vkprof_json *j, const char *key, bool v);

/* True when every open was closed and nothing was misused. */
bool vkprof__json_ok(const vkprof_json *j);

/* The bytes of `s` escaped as the writer escapes a string's (no quotes, no
 * NUL) into `out`, which has room for 6 * strlen(s); returns the end. For an
 * exporter that formats into its own buffer. */
char *vkprof__json_escape(char *out, const char *s);

/* Decimal digits of v into out (no NUL); returns the count (1..20). */
size_t vkprof__u64_to_dec(uint64_t v, char out[20]);

#endif
