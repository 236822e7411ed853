/* See outfile.h. */
#define _GNU_SOURCE /* fopencookie */
#include "outfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ssize_t cookie_write(void *cookie, const char *buf, size_t size)
{
    vkprof_afile *a = cookie;
    vkprof__afile_write(a, buf, size);
    if (vkprof__afile_failed(a)) {
        errno = a->err;
        return -1;
    }
    return (ssize_t)size;
}

static int cookie_close(void *cookie)
{
    (void)cookie; /* outfile_commit / outfile_abort finish the file */
    return 0;
}

static void report(const outfile *o)
{
    const char *step = o->file.step ? o->file.step : "write";
    const char *sep = o->file.hint ? ": " : "", *hint = o->file.hint ? o->file.hint : "";
    if (o->err != NULL) {
        snprintf(o->err, o->err_size, "%s: cannot %s: %s%s%s", o->path, step, strerror(o->file.err),
                 sep, hint);
        return;
    }
    fprintf(stderr, "%s: cannot write %s: could not %s: %s%s%s\n", o->tool, o->path, step,
            strerror(o->file.err), sep, hint);
}

static int open_file(outfile *o)
{
    if (vkprof__afile_open(&o->file, o->path) != 0) {
        report(o);
        return 1;
    }
    cookie_io_functions_t io = {
        .read = NULL, .write = cookie_write, .seek = NULL, .close = cookie_close};
    o->f = fopencookie(&o->file, "w", io);
    if (o->f == NULL) {
        if (o->err != NULL) {
            snprintf(o->err, o->err_size, "out of memory");
        } else {
            fprintf(stderr, "%s: out of memory\n", o->tool);
        }
        vkprof__afile_abort(&o->file);
        return 1;
    }
    return 0;
}

int outfile_open(outfile *o, const char *tool, const char *path)
{
    memset(o, 0, sizeof *o);
    o->tool = tool;
    o->path = path;
    return open_file(o);
}

int outfile_open_quiet(outfile *o, const char *path, char *err, size_t err_size)
{
    memset(o, 0, sizeof *o);
    o->tool = "";
    o->path = path;
    o->err = err;
    o->err_size = err_size;
    return open_file(o);
}

int outfile_commit(outfile *o)
{
    if (o->f != NULL) {
        (void)fflush(o->f); /* a failure is in o->file.err, with its errno */
        fclose(o->f);
        o->f = NULL;
    }
    if (vkprof__afile_commit(&o->file) != 0) {
        report(o);
        return 1;
    }
    return 0;
}

void outfile_abort(outfile *o)
{
    if (o->f != NULL) {
        fclose(o->f);
        o->f = NULL;
    }
    vkprof__afile_abort(&o->file);
}

void outfile_json(outfile *o, vkprof_json *j)
{
    vkprof__afile_json(j, &o->file);
}

int outfile_commit_json(outfile *o, const vkprof_json *j)
{
    if (!vkprof__json_ok(j)) {
        fprintf(stderr, "%s: internal error: the JSON for %s is not well formed; not written\n",
                o->tool, o->path);
        outfile_abort(o);
        return 1;
    }
    return outfile_commit(o);
}
