/* `vkprof report TRACE.json [--svg FILE]`: the summary of a vkprof trace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_opts.h"
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

static void report_usage(FILE *f)
{
    fprintf(f, "usage: vkprof report TRACE.json [--svg FILE]\n"
               "  print time per token of each GPU phase and host bucket from a vkprof trace\n"
               "  (\"-\" reads stdin); --svg also draws them and one token's timeline\n");
}

int vkprof_cmd_report(int argc, char **argv)
{
    const char *path = NULL, *svg = NULL;
    const cli_opt opts[] = {{"--svg", CLI_STR, .str = &svg}};
    const cli_spec spec = {.tool = "vkprof report",
                           .opts = opts,
                           .n_opts = 1,
                           .usage = report_usage,
                           .pos = &path,
                           .max_pos = 1,
                           .too_many = "more than one trace file"};
    int parsed = cli_parse(&spec, argc, argv);
    if (parsed != CLI_OK) {
        return cli_exit_status(parsed);
    }
    if (path == NULL) {
        report_usage(stderr);
        return 2;
    }
    char err[512];
    rpt_summary *s = NULL;
    char *buf = NULL;
    size_t len = 0;
    int format = RPT_FORMAT_JSON;
    if (rpt_load_trace(path, 0, &buf, &len, &format, err, sizeof err) != 0) {
        fprintf(stderr, "vkprof report: %s: %s\n", path, err);
        return 1;
    }
    if (rpt_parse(buf, len, &s, err, sizeof err) != 0) {
        if (format == RPT_FORMAT_PFTRACE) {
            rpt_pftrace_json_error(err, sizeof err);
        }
        fprintf(stderr, "vkprof report: %s: %s\n", path, err);
        free(buf);
        return 1;
    }
    /* what the summary does not keep: which writer (the layer's steps are
     * not tokens), the GPU scopes it could not map (issue 25) */
    const char *meta = NULL;
    size_t meta_len = 0;
    if (rpt_meta_find(buf, len, &meta, &meta_len) != 0) {
        meta = NULL;
        meta_len = 0;
    }
    int rc = 0;
    FILE *text = (svg != NULL && strcmp(svg, "-") == 0) ? stderr : stdout;
    if (rpt_print_meta(s, meta, meta_len, path, text) != 0) {
        fprintf(stderr, "vkprof report: cannot write the summary\n");
        rc = 1;
    }
    if (rc == 0 && svg != NULL) {
        const char *base = strrchr(path, '/');
        if (rpt_svg_file_meta(s, meta, meta_len, base != NULL ? base + 1 : path, svg, err,
                              sizeof err) != 0) {
            fprintf(stderr, "vkprof report: %s\n", err);
            rc = 1;
        } else if (text == stdout) {
            printf("\nSVG written to %s\n", svg);
        }
    }
    rpt_free(s);
    free(buf);
    return rc;
}
