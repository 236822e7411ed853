/* Output files of the tools, through the library's one atomic-file writer
 * (src/export/atomic_file.h): a regular file is written to a temporary file
 * beside it, checked, synced and renamed over it, so a failed write (full
 * disk, bad folder) leaves the old file as it was and no partial one; a
 * symlink is followed; a device or FIFO (/dev/stdout) is written in place; a
 * directory is refused. The first failed write is reported with its errno. */
#ifndef VKPROF_OUTFILE_H
#define VKPROF_OUTFILE_H

#include <stdio.h>

#include "base/json.h"
#include "export/atomic_file.h"

typedef struct outfile {
    FILE *f; /* stdio over the writer: fprintf and friends */
    vkprof_afile file;
    const char *path;
    const char *tool; /* for messages: "vkprof bench" */
    char *err;        /* NULL: messages go to stderr; else into this buffer */
    size_t err_size;
} outfile;

/* Open the temporary file; prints the reason and returns 1 on failure. */
int outfile_open(outfile *o, const char *tool, const char *path);
/* Flush, fsync, close, rename; prints the reason (the first errno) and
 * removes the temporary file on failure (returns 1). */
int outfile_commit(outfile *o);
/* Give up: close and remove the temporary file. */
void outfile_abort(outfile *o);

/* outfile_open for a caller that reports errors itself: the reason of a
 * failed open or commit goes into err (err_size bytes), not to stderr. */
int outfile_open_quiet(outfile *o, const char *path, char *err, size_t err_size);

/* Point the JSON writer (src/base/json.h) at the file, not through `f`:
 * write a document with one or the other. */
void outfile_json(outfile *o, vkprof_json *j);
/* outfile_commit for a JSON document: a document the writer marks as not
 * well formed (a caller's bug) is not committed, and says so (returns 1). */
int outfile_commit_json(outfile *o, const vkprof_json *j);

#endif
