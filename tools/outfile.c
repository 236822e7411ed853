/* See outfile.h. */
#define _POSIX_C_SOURCE 200809L
#include "outfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int outfile_open(outfile *o, const char *tool, const char *path)
{
    memset(o, 0, sizeof *o);
    o->tool = tool;
    o->path = path;
    size_t n = strlen(path) + 32;
    o->tmp = malloc(n);
    if (o->tmp == NULL) {
        fprintf(stderr, "%s: out of memory\n", tool);
        return 1;
    }
    snprintf(o->tmp, n, "%s.tmp.%ld", path, (long)getpid());
    o->f = fopen(o->tmp, "w");
    if (o->f == NULL) {
        fprintf(stderr, "%s: cannot write %s: %s\n", tool, o->tmp, strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        return 1;
    }
    return 0;
}

int outfile_commit(outfile *o)
{
    int bad = ferror(o->f);
    bad |= fflush(o->f) != 0;
    bad |= fsync(fileno(o->f)) != 0;
    int err = errno;
    bad |= fclose(o->f) != 0;
    o->f = NULL;
    if (bad) {
        fprintf(stderr, "%s: writing %s failed: %s\n", o->tool, o->tmp,
                strerror(err     ? err
                         : errno ? errno
                                 : EIO));
        remove(o->tmp);
    } else if (rename(o->tmp, o->path) != 0) {
        fprintf(stderr, "%s: cannot rename %s to %s: %s\n", o->tool, o->tmp, o->path,
                strerror(errno));
        remove(o->tmp);
        bad = 1;
    }
    free(o->tmp);
    o->tmp = NULL;
    return bad ? 1 : 0;
}

void outfile_abort(outfile *o)
{
    if (o->f != NULL) {
        fclose(o->f);
        o->f = NULL;
    }
    if (o->tmp != NULL) {
        remove(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
    }
}

void json_put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            fprintf(f, "\\%c", *p);
        } else if (*p < 0x20) {
            fprintf(f, "\\u%04x", *p);
        } else {
            fputc(*p, f);
        }
    }
    fputc('"', f);
}
