/* `vkprof bench`: what profiling costs. The decode workload runs side by
 * side in one process on one device (one engine, its weights kept, switched
 * between modes with dec_reconfigure) under each profiling configuration, in
 * interleaved rounds; each figure is compared with the unprofiled run of the
 * same round. Plus the host costs (an off call site, a span, the clock) and
 * the trace export of a full 1M-event store. See docs/performance.md.
 *
 * This file is the command: its options and the order of the steps. The
 * steps live in tools/bench/ (bench.h): runs, host costs, statistics,
 * output. */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "cli_opts.h"
#include "outfile.h"

static void bench_usage(FILE *f)
{
    fprintf(f,
            "usage: vkprof bench [--preset P] [--tokens N] [--repeats R]\n"
            "                    [--device INDEX|NAME] [--sample-every N] [--json FILE]\n"
            "                    [--host-iterations N] [--trace-events N]\n"
            "       vkprof bench --layer [--layer-dir D] [--preset P] [--tokens N] [--repeats R]\n"
            "                    [--device D] [--sample-every N] [--json FILE]\n"
            "  What profiling costs: the decode workload under each profiling configuration\n"
            "  (off, host spans, 2-slot, ring, ring with shared boundaries, ring sampled 1 in\n"
            "  N, ring-rotating: %u phase calls stamped a token, a phase's time estimated as\n"
            "  the mean of its timed calls x its calls, and the bare-Vulkan baseline with the\n"
            "  ring's stamps, with and without shared boundaries), one engine on one device,\n"
            "  in R interleaved rounds after one warm-up run each; every figure is compared\n"
            "  with the unprofiled run of the same round: tokens/s and the token times' p50\n"
            "  and p99 (every token of every round pooled, nearest rank). Then the host\n"
            "  costs (an off call site, a span, the clock) and the export of a full trace\n"
            "  store.\n"
            "  --layer: what the Vulkan layer costs an unedited app instead: `vkprof decode`\n"
            "  runs as a child per configuration (no layer; the layer loaded but off; the\n"
            "  layer stamping every dispatch, against the in-app ring-shared; the layer\n"
            "  sampling 1 submit in N), in rotating interleaved rounds. The layer is found\n"
            "  as vkprof run finds it: --layer-dir, $VKPROF_LAYER_DIR, <bin>/layer, or an\n"
            "  installed <bin>/../share/vulkan/explicit_layer.d.\n"
            "  Presets (P): %s.\n"
            "  Defaults: tiny, 32 tokens, 5 rounds, sample every %u, 100000000 host\n"
            "  iterations, 1048576 trace events.\n",
            VKPROF_DEFAULT_ROTATE_SCOPES, dec_preset_names(), VKPROF_DEFAULT_SAMPLE_EVERY);
}

int vkprof_cmd_bench(int argc, char **argv)
{
    const char *preset_name = "tiny", *device = NULL, *json = NULL;
    uint32_t tokens = 32, repeats = 5, sample_every = VKPROF_DEFAULT_SAMPLE_EVERY;
    uint32_t host_iters = 100000000u, trace_events = 1u << 20;
    bool layer = false;
    const char *layer_dir = NULL;
    const cli_opt opts[] = {
        {"--preset", CLI_STR, .str = &preset_name},
        {"--tokens", CLI_U32, .u32 = &tokens, .min = 1, .max = 1u << 20},
        {"--repeats", CLI_U32, .u32 = &repeats, .min = 1, .max = 1000},
        {"--device", CLI_STR, .str = &device},
        {"--sample-every", CLI_U32, .u32 = &sample_every, .min = 1, .max = 1u << 20},
        {"--json", CLI_STR, .str = &json},
        {"--host-iterations", CLI_U32, .u32 = &host_iters, .min = 1000, .max = UINT32_MAX},
        {"--trace-events", CLI_U32, .u32 = &trace_events, .min = 1, .max = 1u << 24},
        {"--layer", CLI_FLAG, .flag = &layer},
        {"--layer-dir", CLI_STR, .str = &layer_dir},
    };
    const cli_spec spec = {.tool = "vkprof bench",
                           .opts = opts,
                           .n_opts = sizeof opts / sizeof opts[0],
                           .usage = bench_usage};
    int parsed = cli_parse(&spec, argc, argv);
    if (parsed != CLI_OK) {
        return cli_exit_status(parsed);
    }
    const dec_preset *p = dec_find_preset(preset_name);
    if (p == NULL) {
        fprintf(stderr, "vkprof bench: unknown preset '%s' (known: %s)\n", preset_name,
                dec_preset_names());
        return 2;
    }
    if (tokens > p->default_ctx) {
        fprintf(stderr, "vkprof bench: --tokens %u exceeds the context of %s (%u)\n", tokens,
                p->name, p->default_ctx);
        return 2;
    }

    if (layer) {
        const bench_layer_opts lo = {.preset = p->name,
                                     .device = device,
                                     .json = json,
                                     .layer_dir = layer_dir,
                                     .tokens = tokens,
                                     .repeats = repeats,
                                     .sample_every = sample_every};
        return bench_layer(&lo);
    }
    if (json != NULL) {
        /* fail now rather than after the whole run */
        outfile probe;
        if (outfile_open(&probe, "vkprof bench", json) != 0) {
            return 1;
        }
        outfile_abort(&probe);
    }

    vku_instance inst;
    if (vku_instance_create(&inst, false, "vkprof bench") != VK_SUCCESS) {
        return 1;
    }
    int rc = 1;
    vku_device dev;
    memset(&dev, 0, sizeof dev);
    bench b; /* the host configuration's hooks point into it: it stays here */
    memset(&b, 0, sizeof b);
    host_costs h = {.off_iters = host_iters,
                    .span_iters = host_iters / 50 > 1000 ? host_iters / 50 : 1000,
                    .clock_iters = host_iters / 10 > 1000 ? host_iters / 10 : 1000,
                    .trace_capacity = trace_events,
                    .file_bytes = -1};
    char err[512] = "";
    if (bench_alloc(&b, tokens, repeats) != 0) {
        goto done;
    }
    VkPhysicalDevice phys;
    if (vku_pick_device(inst.instance, device, &phys, err, sizeof err) != VK_SUCCESS) {
        fprintf(stderr, "vkprof bench: %s\n", err);
        goto done;
    }
    uint32_t fam = vku_compute_family(phys);
    if (fam == UINT32_MAX || vku_device_create(&dev, phys, fam) != VK_SUCCESS) {
        fprintf(stderr, "vkprof bench: cannot create a device with a compute queue\n");
        goto done;
    }
    printf("vkprof bench: preset %s on %s, %u tokens per run, %u rounds, sample every %u\n",
           p->name, dev.props.deviceName, tokens, repeats, sample_every);
    fflush(stdout);

    /* host costs first: the memory figures then see only the trace store */
    if (bench_measure_host(&inst, &dev, &h) != 0) {
        goto done;
    }
    /* the contexts, one per profiled configuration */
    if (bench_create_configs(&b, &inst, &dev, sample_every) != 0) {
        goto done;
    }
    dec_config cfg = {.preset = p, .ctx = p->default_ctx, .seed = 1};
    if (dec_create(&dev, &cfg, &b.eng, err, sizeof err) != 0) {
        fprintf(stderr, "vkprof bench: %s\n", err);
        goto done;
    }
    if (bench_run_rounds(&b) != 0) {
        goto done;
    }

    /* the ring's host path on its own (issue 12's p99), before the figures'
     * convergence run; the same calls per token as the decode */
    ring_path rp = {.calls = dec_calls_per_token(b.eng),
                    .tokens = tokens,
                    .rounds = repeats,
                    .rotate_scopes = VKPROF_DEFAULT_ROTATE_SCOPES};
    bench_measure_ring_path(&inst, &dev, &rp);
    /* figures */
    bench_gather(&b);
    bench_figures(&b);
    summary s = {.p = p,
                 .device = dev.props.deviceName,
                 .tokens = tokens,
                 .repeats = repeats,
                 .sample_every = sample_every,
                 .calls_per_token = dec_calls_per_token(b.eng),
                 .c = b.conf,
                 .h = &h,
                 .rp = &rp};
    if (bench_summarise(&b, &s) != 0) {
        goto done;
    }
    bench_print_report(&s);
    bench_print_notes(&s);
    if (json != NULL) {
        if (bench_write_json(json, &s) != 0) {
            goto done;
        }
        printf("json:      %s\n", json);
    }
    if (b.mismatches != 0) {
        fprintf(stderr, "vkprof bench: profiling changed the tokens in %u run(s)\n", b.mismatches);
        goto done;
    }
    rc = 0;

done:
    bench_free(&b);
    vku_device_destroy(&dev);
    vku_instance_destroy(&inst);
    return rc;
}
