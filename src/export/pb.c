/* The protobuf encoder's out-of-line part (pb.h): growing, bytes, long
 * nested messages. */
#include "export/pb.h"

#include <stdlib.h>

void vkprof__pb_init(vkprof_pb *b, size_t cap)
{
    b->buf = NULL;
    b->len = b->cap = 0;
    b->oom = false;
    if (cap > 0) {
        (void)vkprof__pb_grow(b, cap);
    }
}

void vkprof__pb_free(vkprof_pb *b)
{
    free(b->buf);
    b->buf = NULL;
    b->len = b->cap = 0;
}

bool vkprof__pb_grow(vkprof_pb *b, size_t n)
{
    if (b->oom) {
        return false;
    }
    if (b->cap - b->len >= n) {
        return true;
    }
    size_t need = b->len + n;
    if (need < b->len) {
        b->oom = true;
        return false;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            b->oom = true;
            return false;
        }
        cap *= 2;
    }
    uint8_t *p = realloc(b->buf, cap);
    if (p == NULL) {
        b->oom = true;
        return false;
    }
    b->buf = p;
    b->cap = cap;
    return true;
}

void vkprof__pb_bytes(vkprof_pb *b, uint32_t field, const void *data, size_t n)
{
    if (!vkprof__pb_room(b, VKPROF_PB_MAX_SCALAR + n)) {
        return;
    }
    uint8_t *p = b->buf + b->len;
    size_t k = vkprof__pb_put_varint(p, ((uint64_t)field << 3) | VKPROF_PB_LEN);
    k += vkprof__pb_put_varint(p + k, n);
    if (n > 0) {
        memcpy(p + k, data, n);
    }
    b->len += k + n;
}

void vkprof__pb_close_long(vkprof_pb *b, size_t at)
{
    size_t body = b->len - at - 1;
    size_t extra = vkprof__pb_varint_size(body) - 1;
    if (!vkprof__pb_room(b, extra)) {
        return;
    }
    memmove(b->buf + at + 1 + extra, b->buf + at + 1, body);
    (void)vkprof__pb_put_varint(b->buf + at, body);
    b->len += extra;
}
