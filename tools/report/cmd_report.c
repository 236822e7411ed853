/* `vkprof report TRACE.json [--svg FILE]`: the summary of a vkprof trace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_opts.h"
#include "trace_reader.h"

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
