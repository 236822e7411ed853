/* vkprof_clock_probe: how well GPU scopes land on the host timeline, on the
 * default device (or --device). Two measurements:
 *   1. containment: N submits of one timed dispatch; each scope's begin/end
 *      ticks are mapped to host ns and compared with the host window from just
 *      before vkQueueSubmit to just after vkWaitForFences returns;
 *   2. drift: a calibration point every --every ms for --seconds; prints how
 *      far the device clock has moved against CLOCK_MONOTONIC since the first
 *      point (what one calibration at start would get wrong), and each
 *      point's error bound.
 * Usage: vkprof_clock_probe [--device D] [--scopes N] [--seconds S] [--every MS] */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_opts.h"
#include "vkutil.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: vkprof_clock_probe [--device D] [--scopes N] [--seconds S] [--every MS]\n"
               "  containment of N timed scopes (default 500) in their submit..fence windows;\n"
               "  with --seconds S, the clock drift every MS milliseconds (default 10000)\n");
}

int main(int argc, char **argv)
{
    const char *sel = NULL;
    uint32_t scopes_u = 500, seconds_u = 0, every_u = 10000;
    const cli_opt opts[] = {
        {"--device", CLI_STR, .str = &sel},
        {"--scopes", CLI_U32, .u32 = &scopes_u, .min = 1, .max = 10000000},
        {"--seconds", CLI_U32, .u32 = &seconds_u, .min = 0, .max = 100u * 86400u},
        {"--every", CLI_U32, .u32 = &every_u, .min = 1, .max = 86400000},
    };
    const cli_spec spec = {.tool = "vkprof_clock_probe",
                           .opts = opts,
                           .n_opts = sizeof opts / sizeof opts[0],
                           .usage = usage};
    int parsed = cli_parse(&spec, argc, argv);
    if (parsed != CLI_OK) {
        return cli_exit_status(parsed);
    }
    int scopes = (int)scopes_u, seconds = (int)seconds_u, every_ms = (int)every_u;
    vku_instance inst;
    if (vku_instance_create(&inst, false, "vkprof clock probe") != VK_SUCCESS) {
        return 1;
    }
    VkPhysicalDevice phys;
    char err[256];
    if (vku_pick_device(inst.instance, sel, &phys, err, sizeof err) != VK_SUCCESS) {
        fprintf(stderr, "clock_probe: %s\n", err);
        return 1;
    }
    vku_device dev;
    if (vku_device_create(&dev, phys, vku_compute_family(phys)) != VK_SUCCESS) {
        return 1;
    }
    vku_busy busy;
    if (vku_busy_create(&dev, 64 * 1024, &busy) != VK_SUCCESS) {
        return 1;
    }
    vkprof_context_desc d = vku_vkprof_desc(&inst, &dev);
    d.enable = VKPROF_ENABLE_ON;
    d.queue = dev.queue;
    d.recalibrate_ms = 200;
    vkprof_context ctx;
    if (vkprof_create(&d, &ctx) != VKPROF_OK || !vkprof_active(ctx)) {
        fprintf(stderr, "clock_probe: no timestamps on this device\n");
        return 1;
    }
    vkprof_calibration cal;
    if (vkprof_get_calibration(ctx, &cal) != VKPROF_OK) {
        fprintf(stderr, "clock_probe: no calibration method on this device\n");
        return 1;
    }
    printf("device: %s\ncalibration: %s %s, host domain %s, first point bound %" PRIu64 " ns\n",
           dev.props.deviceName,
           cal.method == VKPROF_CALIBRATION_EXTENSION ? "calibrated timestamps" : "bracket",
           cal.extension, cal.host_domain, cal.error_bound_ns);

    /* 1. containment */
    int inside = 0, within = 0;
    uint64_t *early = calloc((size_t)scopes, sizeof *early);
    uint64_t *late = calloc((size_t)scopes, sizeof *late);
    for (int i = 0; i < scopes; i++) {
        vku_begin(&dev);
        vkprof_cmd_begin(ctx, dev.cmd, VKPROF_PHASE_ATTENTION);
        vku_busy_record(&dev, &busy, dev.cmd, 50 + (uint32_t)(i % 7) * 100);
        vkprof_cmd_end(ctx, dev.cmd, VKPROF_PHASE_ATTENTION);
        vkEndCommandBuffer(dev.cmd);
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &dev.cmd};
        vkResetFences(dev.device, 1, &dev.fence);
        uint64_t t_sub = vkprof_host_now_ns();
        vkQueueSubmit(dev.queue, 1, &si, dev.fence);
        vkWaitForFences(dev.device, 1, &dev.fence, VK_TRUE, UINT64_C(10000000000));
        uint64_t t_fence = vkprof_host_now_ns();
        uint64_t b = 0, e = 0, hb = 0, he = 0;
        if (vkprof_resolve(ctx, NULL) != VKPROF_OK ||
            vkprof_accumulate(ctx, VKPROF_PHASE_ATTENTION) != VKPROF_OK ||
            vkprof_last_scope_ticks(ctx, &b, &e) != VKPROF_OK ||
            vkprof_device_to_host_ns(ctx, b, &hb) != VKPROF_OK ||
            vkprof_device_to_host_ns(ctx, e, &he) != VKPROF_OK) {
            fprintf(stderr, "clock_probe: scope %d failed\n", i);
            return 1;
        }
        vkprof_get_calibration(ctx, &cal);
        early[i] = hb < t_sub ? t_sub - hb : 0;
        late[i] = he > t_fence ? he - t_fence : 0;
        inside += hb >= t_sub && he <= t_fence;
        within += early[i] <= cal.error_bound_ns && late[i] <= cal.error_bound_ns;
    }
    qsort(early, (size_t)scopes, sizeof *early, cmp_u64);
    qsort(late, (size_t)scopes, sizeof *late, cmp_u64);
    vkprof_get_calibration(ctx, &cal);
    printf("containment: %d scopes; %d (%.1f%%) strictly inside submit..fence; %d (%.1f%%) within "
           "the error bound (%" PRIu64 " ns); worst early %" PRIu64 " ns, worst late %" PRIu64
           " ns; %u calibration points\n",
           scopes, inside, 100.0 * inside / scopes, within, 100.0 * within / scopes,
           cal.error_bound_ns, early[scopes - 1], late[scopes - 1], cal.points);
    free(early);
    free(late);

    /* 2. drift against the first point of a fresh context */
    if (seconds > 0) {
        vkprof_destroy(ctx);
        d.recalibrate_ms = 0;
        vkprof_create(&d, &ctx);
        vkprof_calibration first;
        vkprof_get_calibration(ctx, &first);
        printf(
            "drift: elapsed_s  drift_us(device vs CLOCK_MONOTONIC since start)  ppm  bound_ns\n");
        uint64_t t0 = vkprof_host_now_ns();
        for (;;) {
            struct timespec ts = {every_ms / 1000, (long)(every_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
            if (vkprof_calibrate(ctx) != VKPROF_OK) {
                fprintf(stderr, "clock_probe: calibration failed\n");
                break;
            }
            vkprof_calibration now;
            vkprof_get_calibration(ctx, &now);
            vkprof_device_info info;
            vkprof_get_device_info(ctx, &info);
            int64_t dev_ns = (int64_t)vkprof_ticks_to_ns(
                vkprof_tick_delta(first.anchor_ticks, now.anchor_ticks, info.timestamp_valid_bits),
                info.timestamp_period);
            int64_t host_ns = (int64_t)(now.anchor_host_ns - first.anchor_host_ns);
            double el = (double)(now.anchor_host_ns - t0) / 1e9;
            printf("drift: %8.1f  %+10.3f  %+8.3f  %" PRIu64 "\n", el,
                   (double)(dev_ns - host_ns) / 1e3,
                   host_ns ? (double)(dev_ns - host_ns) / (double)host_ns * 1e6 : 0.0,
                   now.last_error_ns);
            fflush(stdout);
            if (vkprof_host_now_ns() - t0 >= (uint64_t)seconds * 1000000000u) {
                break;
            }
        }
    }
    vkprof_destroy(ctx);
    vku_busy_destroy(&dev, &busy);
    vku_device_destroy(&dev);
    vku_instance_destroy(&inst);
    return 0;
}
