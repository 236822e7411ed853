/* See atomic_file.h. */
#if defined(__linux__)
#define _GNU_SOURCE /* sync_file_range */
#endif
#define _POSIX_C_SOURCE 200809L
#include "atomic_file.h"

#include "../base/json.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define AFILE_BUFFER VKPROF_AFILE_BLOCK
#define AFILE_MAX_LINKS 40 /* as the kernel's own limit on a chain of symlinks */

static _Atomic unsigned g_tmp_serial;

static int fail(vkprof_afile *a, int err, const char *step, const char *hint)
{
    if (a->err == 0) {
        a->err = err ? err : EIO;
        a->step = step;
        a->hint = hint;
    }
    return a->err;
}

/* `link` read from the symlink `at`: absolute, or relative to at's folder. */
static int join_link(char *out, const char *at, const char *link)
{
    size_t dir = 0;
    if (link[0] != '/') {
        const char *slash = strrchr(at, '/');
        dir = slash ? (size_t)(slash - at) + 1 : 0;
    }
    size_t n = strlen(link);
    if (dir + n + 1 > PATH_MAX) {
        return ENAMETOOLONG;
    }
    char tmp[PATH_MAX];
    memcpy(tmp, at, dir);
    memcpy(tmp + dir, link, n + 1);
    memcpy(out, tmp, dir + n + 1);
    return 0;
}

/* Follow `path` through symlinks to the name that is to be replaced. Sets
 * *through_proc when a link leads into /proc (a /dev/fd/N or /dev/stdout that
 * names an open file): that one is written in place, not replaced. */
static int resolve(const char *path, char *out, bool *through_proc)
{
    if (strlen(path) + 1 > PATH_MAX) {
        return ENAMETOOLONG;
    }
    memcpy(out, path, strlen(path) + 1);
    *through_proc = false;
    for (int hops = 0; hops <= AFILE_MAX_LINKS; hops++) {
        struct stat st;
        if (lstat(out, &st) != 0) {
            return errno == ENOENT ? 0 : errno; /* a new file, created there */
        }
        if (!S_ISLNK(st.st_mode)) {
            return 0;
        }
        char link[PATH_MAX];
        ssize_t n = readlink(out, link, sizeof link - 1);
        if (n < 0) {
            return errno;
        }
        link[n] = '\0';
        if (strncmp(link, "/proc/", 6) == 0) {
            *through_proc = true;
        }
        int e = join_link(out, out, link);
        if (e != 0) {
            return e;
        }
    }
    return ELOOP;
}

static int open_in_place(vkprof_afile *a, const char *path, bool fifo, bool truncate)
{
    int flags =
        O_WRONLY | O_CLOEXEC | O_NOCTTY | (fifo ? O_NONBLOCK : 0) | (truncate ? O_TRUNC : 0);
    int fd = open(path, flags);
    if (fd < 0) {
        int e = errno;
        return fail(a, e, "open it",
                    fifo && e == ENXIO ? "the path is a FIFO and nothing reads it" : NULL);
    }
    if (fifo) {
        /* a reader is there: from now on block as an ordinary write does */
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
            int e = errno;
            close(fd);
            return fail(a, e, "open it", NULL);
        }
    }
    a->fd = fd;
    a->in_place = true;
    return 0;
}

static int open_tmp(vkprof_afile *a)
{
    /* a short hidden name in the target's folder: rename() stays within one
     * file system, and a long target name cannot make it too long */
    const char *slash = strrchr(a->target, '/');
    size_t dir = slash ? (size_t)(slash - a->target) + 1 : 0;
    size_t cap = dir + 64;
    a->tmp = malloc(cap);
    if (a->tmp == NULL) {
        return fail(a, ENOMEM, "allocate a write buffer", NULL);
    }
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned serial = atomic_fetch_add(&g_tmp_serial, 1);
        snprintf(a->tmp, cap, "%.*s.vkprof-%ld-%u.tmp", (int)dir, a->target, (long)getpid(),
                 serial);
        /* 0666: the kernel applies the umask and any default ACL */
        int fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd >= 0) {
            a->fd = fd;
            return 0;
        }
        if (errno != EEXIST) {
            int e = errno;
            free(a->tmp);
            a->tmp = NULL;
            return fail(a, e, "create a temporary file beside it", NULL);
        }
    }
    free(a->tmp);
    a->tmp = NULL;
    return fail(a, EEXIST, "create a temporary file beside it", NULL);
}

static void release(vkprof_afile *a)
{
    free(a->buf);
    free(a->target);
    free(a->tmp);
    a->buf = NULL;
    a->target = NULL;
    a->tmp = NULL;
    a->fd = -1;
}

int vkprof__afile_open(vkprof_afile *a, const char *path)
{
    memset(a, 0, sizeof *a);
    a->fd = -1;
    if (path == NULL || path[0] == '\0') {
        return fail(a, EINVAL, "open it", "no path");
    }
    a->target = malloc(PATH_MAX);
    a->buf = malloc(AFILE_BUFFER);
    if (a->target == NULL || a->buf == NULL) {
        release(a);
        return fail(a, ENOMEM, "allocate a write buffer", NULL);
    }
    a->cap = AFILE_BUFFER;

    /* What the path finally names (stat follows every link). */
    struct stat st;
    bool exists = stat(path, &st) == 0;
    int e = 0;
    if (exists && S_ISDIR(st.st_mode)) {
        e = fail(a, EISDIR, "open it", "name a file in that folder");
    } else if (exists && S_ISBLK(st.st_mode)) {
        e = fail(a, ENOTSUP, "open it",
                 "the path is a block device: refused, a trace would overwrite a disk");
    } else if (exists && S_ISSOCK(st.st_mode)) {
        e = fail(a, ENOTSUP, "open it", "the path is a socket: refused");
    } else if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        e = open_in_place(a, path, S_ISFIFO(st.st_mode), false);
        snprintf(a->target, PATH_MAX, "%s", path);
    } else {
        bool through_proc = false;
        e = resolve(path, a->target, &through_proc);
        if (e != 0) {
            fail(a, e, "resolve its symlinks", NULL);
        } else if (through_proc && exists) {
            /* an open file named through /proc (VKPROF_TRACE=/dev/stdout with
             * stdout redirected to a file): write into it as `>` would */
            e = open_in_place(a, path, false, true);
        } else {
            e = open_tmp(a);
        }
    }
    if (e != 0) {
        int err = a->err;
        const char *step = a->step, *hint = a->hint;
        release(a);
        a->err = err;
        a->step = step;
        a->hint = hint;
        return err;
    }
    return 0;
}

static void drain_fd(vkprof_afile *a, const char *p, size_t n)
{
    while (n > 0 && a->err == 0) {
        ssize_t w = write(a->fd, p, n);
        a->write_calls++;
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            fail(a, errno, "write", NULL);
            return;
        }
        p += w;
        n -= (size_t)w;
        a->bytes += (uint64_t)w;
    }
}

/* A stream whose reader went away answers EPIPE and raises SIGPIPE, whose
 * default action ends the app. Block it in this thread only while writing,
 * and take a SIGPIPE this write raised before unblocking: the write reports
 * EPIPE instead. Nothing process-wide changes. */
static void drain(vkprof_afile *a, const char *p, size_t n)
{
    if (!a->in_place) {
        drain_fd(a, p, n);
        return;
    }
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigemptyset(&pending);
    bool masked = pthread_sigmask(SIG_BLOCK, &pipe_set, &old) == 0;
    bool was_pending = masked && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    drain_fd(a, p, n);
    if (masked) {
        if (a->err == EPIPE && !was_pending) {
            const struct timespec zero = {0, 0};
            while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
            }
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
}

/* Start the write-back of what a temporary file holds so far, every
 * AFILE_WRITEBACK bytes: the disk writes while the exporter formats the next
 * blocks, and the fsync at the commit waits for the last stretch only. A
 * hint (Linux): its errors are the fsync's to report. */
#define AFILE_WRITEBACK (8u << 20)

static void start_writeback(vkprof_afile *a)
{
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
    if (!a->in_place && a->err == 0 && a->bytes - a->written_back >= AFILE_WRITEBACK) {
        (void)sync_file_range(a->fd, (off_t)a->written_back, (off_t)(a->bytes - a->written_back),
                              SYNC_FILE_RANGE_WRITE);
        a->written_back = a->bytes;
    }
#else
    (void)a;
#endif
}

static void flush_buffer(vkprof_afile *a)
{
    if (a->len > 0) {
        drain(a, a->buf, a->len);
        a->len = 0;
        start_writeback(a);
    }
}

void vkprof__afile_flush_block(vkprof_afile *a)
{
    flush_buffer(a);
}

void vkprof__afile_write(vkprof_afile *a, const void *data, size_t n)
{
    if (a->err != 0 || n == 0) {
        return;
    }
    if (a->len + n > a->cap) {
        flush_buffer(a);
        if (n >= a->cap) {
            drain(a, data, n);
            return;
        }
    }
    memcpy(a->buf + a->len, data, n);
    a->len += n;
}

int vkprof__afile_commit(vkprof_afile *a)
{
    if (a->fd < 0) {
        int err = a->err ? a->err : EBADF;
        release(a);
        return err;
    }
    flush_buffer(a);
    if (a->err == 0 && !a->in_place && fsync(a->fd) != 0) {
        fail(a, errno, "fsync", NULL);
    }
    if (close(a->fd) != 0 && a->err == 0 && errno != EINTR) {
        fail(a, errno, "close", NULL);
    }
    a->fd = -1;
    if (a->err == 0 && a->tmp != NULL && rename(a->tmp, a->target) != 0) {
        fail(a, errno, "rename the temporary file over it", NULL);
    }
    if (a->err != 0 && a->tmp != NULL) {
        unlink(a->tmp);
    }
    int err = a->err;
    release(a);
    return err;
}

void vkprof__afile_abort(vkprof_afile *a)
{
    if (a->fd >= 0) {
        close(a->fd);
    }
    if (a->tmp != NULL) {
        unlink(a->tmp);
    }
    release(a);
}

static void json_sink(void *sink, const char *data, size_t n)
{
    vkprof__afile_write(sink, data, n);
}

void vkprof__afile_json(struct vkprof_json *j, vkprof_afile *a)
{
    vkprof__json_to_sink(j, json_sink, a);
}
