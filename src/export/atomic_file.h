/* The one writer of output files, for the library (traces) and the tools
 * (their JSON reports). A shared internal (src/internal.cmake): the tools
 * and the layer include it through vkprof_internal; it is not part of the
 * public API and the shared library does not export it.
 *
 * What a path may name, and what happens (docs/trace-format.md, "Where the
 * trace goes"):
 *   - a regular file, or nothing yet: written to a temporary file in the same
 *     folder, checked, fsync'ed and renamed over the target, so a failed write
 *     leaves the old file as it was and no partial one;
 *   - a symlink (a chain of them, dangling or not): followed; the temporary
 *     file and the rename live in the final target's folder, and the link
 *     stays a link;
 *   - a character device or a FIFO (/dev/null, /dev/stdout, a pipe to a
 *     compressor): written in place, because it cannot be replaced and the
 *     user pointed at a stream. A FIFO with no reader is an error (ENXIO),
 *     never a hang;
 *   - a directory, a block device or a socket: refused with a clear error
 *     (a block device would be a disk; nothing useful is a socket path).
 *
 * The file is created with mode 0666, so the kernel applies the process's
 * umask (and default ACLs) exactly as for fopen(): no process-wide state is
 * read or changed. Writes are buffered in blocks of VKPROF_AFILE_BLOCK (2 MiB):
 * a block is handed to write() whole; the first failing write()
 * records its errno and every later write is a no-op, so a full disk costs one
 * failed write and is reported as ENOSPC, not as a generic I/O error.
 *
 * Not thread-safe per object; distinct objects are independent. */
#ifndef VKPROF_EXPORT_ATOMIC_FILE_H
#define VKPROF_EXPORT_ATOMIC_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct vkprof_afile {
    int fd;
    int err;          /* the first errno; 0 while every step succeeded */
    const char *step; /* the step that failed: "open", "write", "fsync", "rename", ... */
    const char *hint; /* a sentence for special cases (a directory, a FIFO), or NULL */
    bool in_place;    /* a device or FIFO, written directly */
    char *target;     /* the file that is replaced (symlinks followed) */
    char *tmp;        /* the temporary file beside it, or NULL when in place */
    char *buf;
    size_t len, cap;
    uint64_t bytes;        /* bytes write() accepted */
    uint64_t written_back; /* bytes whose write-back was started (Linux) */
    uint32_t write_calls;  /* write() calls made, the failed one included */
} vkprof_afile;

/* Resolve `path` and open the temporary file (or the stream in place).
 * Returns 0, or the errno (a->step and a->hint say more). On failure the
 * object holds nothing and needs no abort. */
int vkprof__afile_open(vkprof_afile *a, const char *path);

/* Bytes to the file (buffered). Text goes through the JSON writer
 * (base/json.h, vkprof__afile_json below): there is no printf here. */
void vkprof__afile_write(vkprof_afile *a, const void *data, size_t n);

#define VKPROF_AFILE_BLOCK (2u << 20)

/* Write the block buffer out now (a no-op after a failure, which also
 * empties it). */
void vkprof__afile_flush_block(vkprof_afile *a);

/* Direct formatting into the block buffer, for an exporter that writes
 * megabytes: room for `n` bytes (n <= VKPROF_AFILE_BLOCK) at the returned
 * place, the block written out first when it lacks them; then
 * vkprof__afile_wrote() with the end of what was formatted there. After a
 * failure the bytes go nowhere (the buffer is emptied at each block). */
static inline char *vkprof__afile_room(vkprof_afile *a, size_t n)
{
    if (a->cap - a->len < n) {
        vkprof__afile_flush_block(a);
    }
    return a->buf + a->len;
}

static inline void vkprof__afile_wrote(vkprof_afile *a, const char *end)
{
    a->len = (size_t)(end - a->buf);
}

/* True once any step failed: formatting can stop there. */
static inline bool vkprof__afile_failed(const vkprof_afile *a)
{
    return a->err != 0;
}

/* Flush, fsync, close and rename over the target (streams: flush and close).
 * Returns 0 or the first errno of the whole write; on failure the temporary
 * file is removed and the target is untouched. Frees everything. */
int vkprof__afile_commit(vkprof_afile *a);

/* Give up: close and remove the temporary file. Frees everything. */
void vkprof__afile_abort(vkprof_afile *a);

/* Point the JSON writer (base/json.h) at this file. */
struct vkprof_json;
void vkprof__afile_json(struct vkprof_json *j, vkprof_afile *a);

#endif
