/* `vkprof merge A.json B.json ... -o OUT [--align rendezvous] [--names a,b]`:
 * per-rank or per-process traces into one (merge.h). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_opts.h"
#include "merge.h"

static void merge_usage(FILE *f)
{
    fprintf(f, "usage: vkprof merge A.json B.json ... -o MERGED.json [--align rendezvous]\n"
               "                    [--names NAME,NAME,...]\n"
               "  merge vkprof traces (one per rank or process) into one trace: input k becomes\n"
               "  host pid 2k+1 and GPU pid 2k+2, named \"rank k\" or by --names. Traces of one\n"
               "  boot (metadata.process.boot_id) share CLOCK_MONOTONIC and merge exactly;\n"
               "  others are refused (exit status 2) unless --align rendezvous, which estimates\n"
               "  each one's clock offset from the rendezvous probes (no rank leaves a barrier\n"
               "  before the last enters) and writes it, with its error bound, into\n"
               "  metadata.merge\n");
}

int vkprof_cmd_merge(int argc, char **argv)
{
    const char *pos[RPT_MAX_RANKS + 1] = {0};
    size_t n_pos = 0;
    const char *out = NULL, *align = NULL, *names = NULL;
    const cli_opt opts[] = {{"--output", CLI_STR, .str = &out},
                            {"--align", CLI_STR, .str = &align},
                            {"--names", CLI_STR, .str = &names}};
    const cli_spec spec = {.tool = "vkprof merge",
                           .opts = opts,
                           .n_opts = sizeof opts / sizeof opts[0],
                           .usage = merge_usage,
                           .pos = pos,
                           .max_pos = RPT_MAX_RANKS,
                           .n_pos = &n_pos,
                           .too_many = "more than 256 traces"};
    /* "-o FILE" is "--output FILE" (the option parser reads long options only);
     * after "--" every argument is a trace. */
    char **args = calloc((size_t)argc + 1, sizeof *args);
    if (args == NULL) {
        fprintf(stderr, "vkprof merge: out of memory\n");
        return 1;
    }
    bool after_dashes = false;
    for (int i = 0; i < argc; i++) {
        after_dashes |= strcmp(argv[i], "--") == 0;
        args[i] = (!after_dashes && strcmp(argv[i], "-o") == 0) ? (char *)"--output" : argv[i];
    }
    int parsed = cli_parse(&spec, argc, args);
    free(args);
    if (parsed != CLI_OK) {
        return cli_exit_status(parsed);
    }
    if (n_pos == 0 || out == NULL) {
        fprintf(stderr, "vkprof merge: %s\n", n_pos == 0 ? "no trace to merge" : "no -o OUTPUT");
        merge_usage(stderr);
        return 2;
    }
    if (align != NULL && strcmp(align, "rendezvous") != 0) {
        fprintf(stderr, "vkprof merge: --align '%s': the one alignment is 'rendezvous'\n", align);
        return 2;
    }
    char **name_v = NULL;
    if (names != NULL && rpt_merge_split_names(names, n_pos, &name_v) != 0) {
        fprintf(stderr,
                "vkprof merge: --names '%s': %zu non-empty names separated by ',' are needed, one "
                "per trace\n",
                names, n_pos);
        return 2;
    }
    rpt_merge_opts o = {.inputs = pos,
                        .n_inputs = n_pos,
                        .names = (const char *const *)name_v,
                        .align_rendezvous = align != NULL,
                        .output = out};
    rpt_merge_input *info = calloc(n_pos, sizeof *info);
    char err[1024];
    int rc = info != NULL ? rpt_merge(&o, info, err, sizeof err) : RPT_MERGE_ERROR;
    if (info == NULL) {
        snprintf(err, sizeof err, "out of memory");
    }
    if (rc != RPT_MERGE_OK) {
        fprintf(stderr, "vkprof merge: %s\n", err);
    } else {
        printf("vkprof merge: %zu traces into %s\n", n_pos, out);
        for (size_t k = 0; k < n_pos; k++) {
            if (info[k].dup_events > 0) {
                /* the report's warning (its input's event numbers) */
                rpt_summary s = {.n_dup_events = info[k].dup_events,
                                 .first_dup_index = info[k].first_dup_index,
                                 .first_dup_of = info[k].first_dup_of};
                char warn[512];
                rpt_repeat_warning(&s, warn, sizeof warn);
                fprintf(stderr, "vkprof merge: %s: %s\n", pos[k], warn);
            }
            if (info[k].rendezvous) {
                printf("  %s: offset %" PRId64 " ns +- %" PRIu64 " ns (rendezvous, %" PRIu64
                       " probes)\n",
                       pos[k], info[k].offset_ns, info[k].error_bound_ns, info[k].matched);
            } else {
                printf("  %s: %s\n", pos[k],
                       k == 0 ? "the reference clock" : "the same boot: exact");
            }
        }
    }
    free(info);
    if (name_v != NULL) {
        free(name_v[0]);
        free(name_v);
    }
    return rc;
}
