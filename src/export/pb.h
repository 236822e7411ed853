/* A small protobuf encoder (the wire format only: no schema, no reflection),
 * for the Perfetto exporter (trace_pftrace.c). Internal, like atomic_file.h.
 *
 * A vkprof_pb is a growable byte buffer. Scalars are appended as
 * tag + varint / fixed64 / double; a string or bytes field as tag + length +
 * bytes. A nested message is opened with vkprof__pb_open(), which writes the
 * tag and reserves ONE byte for the length, and closed with
 * vkprof__pb_close(), which back-patches the length: a body under 128 bytes
 * (every event of a trace) costs no copy; a longer one is moved up by the
 * extra varint bytes (descriptors, the metadata: rare and small).
 *
 * Out of memory is sticky: `oom` is set, later appends do nothing, and the
 * caller checks vkprof__pb_ok() once at the end. Not thread-safe per object.
 *
 * Why not protobuf-c: the exporter writes ~15 message types, all append-only,
 * from data it already holds; protobuf-c would build a tree of structs per
 * packet (an allocation or a struct fill per field), pack it, and add a
 * library dependency to a library that has none but Vulkan. This encoder is
 * ~150 lines, allocates one buffer, and is verified field by field against
 * Debian's `protoc --decode` in the tests (tests/device/). */
#ifndef VKPROF_EXPORT_PB_H
#define VKPROF_EXPORT_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum vkprof_pb_wire {
    VKPROF_PB_VARINT = 0,
    VKPROF_PB_FIXED64 = 1,
    VKPROF_PB_LEN = 2,
    VKPROF_PB_FIXED32 = 5
};

typedef struct vkprof_pb {
    uint8_t *buf;
    size_t len, cap;
    bool oom;
} vkprof_pb;

/* The most bytes one scalar field can take: a 5-byte tag and a 10-byte varint. */
#define VKPROF_PB_MAX_SCALAR 16u

/* An empty buffer of `cap` bytes reserved (0: grows on first use). */
void vkprof__pb_init(vkprof_pb *b, size_t cap);
void vkprof__pb_free(vkprof_pb *b);
/* Room for n more bytes; false (and oom) when it cannot grow. */
bool vkprof__pb_grow(vkprof_pb *b, size_t n);

static inline bool vkprof__pb_ok(const vkprof_pb *b)
{
    return !b->oom;
}

static inline bool vkprof__pb_room(vkprof_pb *b, size_t n)
{
    return b->cap - b->len >= n || vkprof__pb_grow(b, n);
}

/* The bytes of v as a varint, written at p; returns how many (1..10). */
static inline size_t vkprof__pb_put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80u) {
        p[n++] = (uint8_t)(v | 0x80u);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

static inline size_t vkprof__pb_varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80u) {
        v >>= 7;
        n++;
    }
    return n;
}

/* A varint field (uint32/uint64/int32/int64/bool/enum). A negative int64 or
 * int32 is its two's complement as uint64 (10 bytes), as protobuf says. */
static inline void vkprof__pb_uint(vkprof_pb *b, uint32_t field, uint64_t v)
{
    if (!vkprof__pb_room(b, VKPROF_PB_MAX_SCALAR)) {
        return;
    }
    uint8_t *p = b->buf + b->len;
    size_t n = vkprof__pb_put_varint(p, ((uint64_t)field << 3) | VKPROF_PB_VARINT);
    n += vkprof__pb_put_varint(p + n, v);
    b->len += n;
}

static inline void vkprof__pb_int(vkprof_pb *b, uint32_t field, int64_t v)
{
    vkprof__pb_uint(b, field, (uint64_t)v);
}

static inline void vkprof__pb_fixed64(vkprof_pb *b, uint32_t field, uint64_t v)
{
    if (!vkprof__pb_room(b, VKPROF_PB_MAX_SCALAR)) {
        return;
    }
    uint8_t *p = b->buf + b->len;
    size_t n = vkprof__pb_put_varint(p, ((uint64_t)field << 3) | VKPROF_PB_FIXED64);
    for (int i = 0; i < 8; i++) {
        p[n++] = (uint8_t)(v >> (8 * i)); /* little-endian on every host */
    }
    b->len += n;
}

static inline void vkprof__pb_double(vkprof_pb *b, uint32_t field, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    vkprof__pb_fixed64(b, field, v);
}

/* A string or bytes field. */
void vkprof__pb_bytes(vkprof_pb *b, uint32_t field, const void *data, size_t n);

static inline void vkprof__pb_string(vkprof_pb *b, uint32_t field, const char *s)
{
    vkprof__pb_bytes(b, field, s, strlen(s));
}

/* Open a nested message of `field`; returns the token for vkprof__pb_close
 * (the offset of the reserved length byte). */
static inline size_t vkprof__pb_open(vkprof_pb *b, uint32_t field)
{
    if (!vkprof__pb_room(b, 8)) {
        return SIZE_MAX;
    }
    b->len += vkprof__pb_put_varint(b->buf + b->len, ((uint64_t)field << 3) | VKPROF_PB_LEN);
    b->buf[b->len] = 0;
    return b->len++;
}

/* Close it: back-patch the length (moving the body when it is >= 128 bytes). */
void vkprof__pb_close_long(vkprof_pb *b, size_t at);

static inline void vkprof__pb_close(vkprof_pb *b, size_t at)
{
    if (b->oom || at == SIZE_MAX) {
        b->oom = true;
        return;
    }
    size_t body = b->len - at - 1;
    if (body < 0x80u) {
        b->buf[at] = (uint8_t)body;
        return;
    }
    vkprof__pb_close_long(b, at);
}

#endif
