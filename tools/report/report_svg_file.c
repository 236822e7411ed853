/* rpt_svg_file: the SVG through the tools' one atomic writer (tools/common/outfile.h
 * over src/export/atomic_file.h): a temporary file beside the target, synced
 * and renamed, a symlink followed, a FIFO or device written in place, a
 * directory refused. Apart from report_svg.c so that the fuzz target, which
 * draws to a stream, needs no file writer. */
#include <stdio.h>
#include <string.h>

#include "outfile.h"
#include "trace_reader.h"

int rpt_svg_file(const rpt_summary *s, const char *title, const char *path, char *err,
                 size_t err_size)
{
    return rpt_svg_file_meta(s, NULL, 0, title, path, err, err_size);
}

int rpt_svg_file_meta(const rpt_summary *s, const char *meta, size_t meta_len, const char *title,
                      const char *path, char *err, size_t err_size)
{
    if (strcmp(path, "-") == 0) {
        if (rpt_svg_meta(s, meta, meta_len, title, stdout) != 0) {
            snprintf(err, err_size, "cannot write the SVG to stdout");
            return -1;
        }
        return 0;
    }
    outfile o;
    if (outfile_open_quiet(&o, path, err, err_size) != 0) {
        return -1;
    }
    if (rpt_svg_meta(s, meta, meta_len, title, o.f) != 0 && o.file.err == 0) {
        snprintf(err, err_size, "%s: cannot draw the SVG", path);
        outfile_abort(&o);
        return -1;
    }
    return outfile_commit(&o) == 0 ? 0 : -1;
}
