/* Output files of the tools: written to a temporary file beside the target,
 * checked, synced and renamed over it, so a failed write (full disk, bad
 * folder) leaves the old file as it was and no partial one. */
#ifndef VKPROF_OUTFILE_H
#define VKPROF_OUTFILE_H

#include <stdio.h>

typedef struct outfile {
    FILE *f;
    char *tmp;
    const char *path;
    const char *tool; /* for messages: "vkprof bench" */
} outfile;

/* Open the temporary file; prints the reason and returns 1 on failure. */
int outfile_open(outfile *o, const char *tool, const char *path);
/* Check every write, fsync, close, rename; prints the reason and removes the
 * temporary file on failure (returns 1). */
int outfile_commit(outfile *o);
/* Give up: close and remove the temporary file. */
void outfile_abort(outfile *o);

/* A JSON string literal (RFC 8259 escapes). */
void json_put_string(FILE *f, const char *s);

#endif
