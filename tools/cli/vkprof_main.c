/* vkprof: command-line entry point. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "vkprof/vkprof.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: vkprof <command> [options]\n"
            "\n"
            "commands:\n"
            "  devices [--device INDEX|NAME] [--no-dispatch]\n"
            "      list every Vulkan device: queue families and their timestamp bits,\n"
            "      timestampPeriod, calibrated-timestamp domains, one measured dispatch\n"
            "  report TRACE.json [--svg FILE]\n"
            "      time per token of each GPU phase and host bucket in a vkprof trace;\n"
            "      --svg draws them and one token's timeline; on a merged trace, per rank:\n"
            "      collective time against arrival skew, the slowest rank, expert load\n"
            "  merge A.json B.json ... -o MERGED.json [--align rendezvous] [--names N,N,...]\n"
            "      one trace of several ranks' or processes' traces, each its own processes;\n"
            "      exact within one boot, else aligned on the rendezvous probes\n"
            "  decode [--preset P] [--tokens N] [--ctx N] [--device D] [--ranks R]\n"
            "         [--profile off|gpu|host|all|ring|ring-shared|ring-sampled|ring-rotating]\n"
            "         [--sample-every N] [--json FILE] [--trace FILE] [--seed S] [--peak-gbps X]\n"
            "      greedy decode with a Llama-shaped model on Vulkan compute (random fp16\n"
            "      weights; dense and MoE presets, see vkprof decode --help); --profile\n"
            "      gpu|ring times each kernel family with vkprof; --ranks R: tensor parallel\n"
            "  bench [--preset P] [--tokens N] [--repeats R] [--device D]\n"
            "        [--sample-every N] [--json FILE]\n"
            "      what profiling costs: the decode under each profiling configuration (off,\n"
            "      host spans, 2-slot, ring, shared, sampled, rotating, bare-Vulkan baseline)\n"
            "      side by side, ratios against the unprofiled run of the same round; host\n"
            "      costs\n"
            "  run [-o DIR] [--mode dispatch|label|cmdbuf] [--sample N] [--names FILE]\n"
            "      [--keep first|last] [--trace-events N] [--format json|pftrace|both]\n"
            "      [--layer-dir DIR] -- CMD ARGS...\n"
            "      run an unmodified Vulkan app under the vkprof layer; when it ends, how\n"
            "      each process ended, its one trace, every dispatch (timed, lost or\n"
            "      untimed, and why), per phase, steps; trace and summary JSON in DIR\n"
            "  recover DIR\n"
            "      finish what processes that died left in DIR (their traces and summaries)\n"
            "  names [-o FILE] INPUT...\n"
            "      a name map for the vkprof layer: the hash of every SPIR-V module in\n"
            "      .spv files and in ELF files that embed them (libggml-vulkan.so)\n"
            "  version\n"
            "      print the library version\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "devices") == 0) {
        return vkprof_cmd_devices(argc - 1, argv + 1);
    }
    if (strcmp(cmd, "report") == 0) {
        return vkprof_cmd_report(argc - 1, argv + 1);
    }
    if (strcmp(cmd, "merge") == 0) {
        return vkprof_cmd_merge(argc - 1, argv + 1);
    }
    if (strcmp(cmd, "decode") == 0) {
        return vkprof_cmd_decode(argc - 1, argv + 1);
    }
    if (strcmp(cmd, "bench") == 0) {
        return vkprof_cmd_bench(argc - 1, argv + 1);
    }
    if (strcmp(cmd, "run") == 0) {
        return vkprof_cmd_run(argc - 1, argv + 1);
    }
    if (strcmp(cmd, "recover") == 0) {
        return vkprof_cmd_recover(argc - 1, argv + 1);
    }
    if (strcmp(cmd, "names") == 0) {
        return vkprof_cmd_names(argc - 1, argv + 1);
    }
    if (strcmp(cmd, "version") == 0) {
        unsigned v = vkprof_version();
        printf("vkprof %u.%u.%u\n", v / 10000, (v / 100) % 100, v % 100);
        return 0;
    }
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "vkprof: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
