/* `vkprof report TRACE.json [--svg FILE]`: the summary of a vkprof trace. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
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
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            report_usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--svg") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "vkprof report: --svg needs a file name\n");
                return 2;
            }
            svg = argv[++i];
        } else if (strncmp(argv[i], "--svg=", 6) == 0) {
            svg = argv[i] + 6;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "vkprof report: unknown option '%s'\n", argv[i]);
            report_usage(stderr);
            return 2;
        } else if (path == NULL) {
            path = argv[i];
        } else {
            fprintf(stderr, "vkprof report: more than one trace file\n");
            report_usage(stderr);
            return 2;
        }
    }
    if (path == NULL) {
        report_usage(stderr);
        return 2;
    }
    if (svg != NULL && *svg == '\0') {
        fprintf(stderr, "vkprof report: --svg needs a file name\n");
        return 2;
    }
    char err[512];
    vkprof_trace_summary *s = NULL;
    if (vkprof_trace_read_file(path, 0, &s, err, sizeof err) != 0) {
        fprintf(stderr, "vkprof report: %s: %s\n", path, err);
        return 1;
    }
    int rc = 0;
    FILE *text = (svg != NULL && strcmp(svg, "-") == 0) ? stderr : stdout;
    if (vkprof_trace_print(s, path, text) != 0) {
        fprintf(stderr, "vkprof report: cannot write the summary\n");
        rc = 1;
    }
    if (rc == 0 && svg != NULL) {
        const char *base = strrchr(path, '/');
        if (vkprof_trace_svg_file(s, base != NULL ? base + 1 : path, svg, err, sizeof err) != 0) {
            fprintf(stderr, "vkprof report: %s\n", err);
            rc = 1;
        } else if (text == stdout) {
            printf("\nSVG written to %s\n", svg);
        }
    }
    vkprof_trace_free(s);
    return rc;
}
