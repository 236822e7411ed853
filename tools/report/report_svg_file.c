/* rpt_svg_file: the SVG through the tools' one atomic writer (tools/outfile.h
 * over src/export/atomic_file.h): a temporary file beside the target, synced
 * and renamed, a symlink followed, a FIFO or device written in place, a
 * directory refused. Apart from report_svg.c so that the fuzz target, which
 * draws to a stream, needs no file writer. */
#include <stdio.h>
#include <string.h>

#include "outfile.h"
#include "trace_reader.h"

/* ---- BEGIN: metadata the summary does not keep (issue 25) -------------------
 * These declarations belong in trace_reader.h, which issue 25's change could
 * not edit; until they move there, this same block stands in report_print.c,
 * report_svg.c, report_svg_file.c, cmd_report.c and tests/report/test_report.c.
 *
 * rpt_meta_find: where the top-level "metadata" value of a trace's JSON text
 *   is (a buffer rpt_parse accepted); 0 and *meta, *meta_len, or -1 when it
 *   has none (the JSON Array Format, or no such key).
 * rpt_meta_layer_trace: 1 when the trace was written by the vkprof Vulkan
 *   layer (`vkprof run`), whose steps are app waits, not tokens: its
 *   metadata.label is the layer's "device N, queue family F" (for a merged
 *   trace: every input's), or it has the layer's own host bucket
 *   ("vkprof layer: collect"). meta may be NULL.
 * rpt_unmapped_note: how many GPU scopes were timed but could not be placed
 *   on the host clock (metadata.unmapped_gpu_scopes; per context when the
 *   trace has several) and why, one line without a newline, written like
 *   snprintf; 0 and "" when none.
 * rpt_print_meta, rpt_svg_meta, rpt_svg_file_meta: rpt_print, rpt_svg and
 *   rpt_svg_file with the metadata's text (NULL: none). */
int rpt_meta_find(const char *buf, size_t len, const char **meta, size_t *meta_len);
int rpt_meta_layer_trace(const rpt_summary *s, const char *meta, size_t meta_len);
size_t rpt_unmapped_note(const rpt_summary *s, const char *meta, size_t meta_len, char *buf,
                         size_t size);
int rpt_print_meta(const rpt_summary *s, const char *meta, size_t meta_len, const char *path,
                   FILE *out);
int rpt_svg_meta(const rpt_summary *s, const char *meta, size_t meta_len, const char *title,
                 FILE *out);
int rpt_svg_file_meta(const rpt_summary *s, const char *meta, size_t meta_len, const char *title,
                      const char *path, char *err, size_t err_size);
/* ---- END: metadata the summary does not keep --------------------------------- */

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
