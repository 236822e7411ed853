/* The trace exporters on a full store, as `vkprof bench` fills it (spans of
 * one bucket, one thread), with no Vulkan (a fake device of the two
 * functions vkprof_create needs): the JSON and the native Perfetto trace of
 * one context, each written and timed `repeats` times (the best is kept),
 * with events/s and bytes per event. docs/performance.md has the figures.
 *
 * Usage: bench_pftrace [EVENTS [REPEATS [json|pftrace]]]   (default 1048576
 * events, 5 repeats, both formats)
 * Exit status 1 when a write fails. */
#define _GNU_SOURCE
#include <vkprof/vkprof.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nodevice.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    unsigned long events = argc > 1 ? strtoul(argv[1], NULL, 10) : 1048576ul;
    int repeats = argc > 2 ? atoi(argv[2]) : 5;
    const char *only = argc > 3 ? argv[3] : NULL;
    if (events == 0 || events > 0xffffffffu || repeats < 1) {
        fprintf(stderr, "usage: bench_pftrace [EVENTS [REPEATS]]\n");
        return 2;
    }
    vkprof_context_desc d = th_nodevice_desc("no device (bench_pftrace)");
    d.enable = VKPROF_ENABLE_OFF;
    d.host_level = VKPROF_HOST_ALL;
    d.report_every = UINT32_MAX;
    d.trace_path = "";
    vkprof_context ctx = NULL;
    if (vkprof_create(&d, &ctx) != VKPROF_OK ||
        vkprof_trace_begin(ctx, (uint32_t)events) != VKPROF_OK) {
        fprintf(stderr, "bench_pftrace: cannot create a context with a %lu-event store\n", events);
        return 1;
    }
    for (unsigned long i = 0; i < events; i++) {
        vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_ATTENTION);
        vkprof_span_end(ctx, &s);
    }
    uint64_t recorded = 0, dropped = 0;
    vkprof_trace_counts(ctx, &recorded, &dropped);

    char dir[] = "/tmp/vkprof-bench-pftrace-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    static const char *const names[2] = {"trace.json", "trace.pftrace"};
    static const char *const labels[2] = {"JSON", "Perfetto"};
    static const char *const formats[2] = {"json", "pftrace"};
    int rc = 0;
    printf("bench_pftrace: %llu events (spans, one bucket, one thread), best of %d writes;\n"
           "  to a file: the whole vkprof_trace_write (temporary file, fsync, rename);\n"
           "  to /dev/null: the exporter alone (written in place, nothing to sync)\n",
           (unsigned long long)recorded, repeats);
    for (int k = 0; k < 2 && rc == 0; k++) {
        if (only != NULL && strcmp(only, formats[k]) != 0) {
            continue;
        }
        char path[128];
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        const vkprof_trace_format fmt = strcmp(formats[k], "json") == 0
                                            ? VKPROF_TRACE_FORMAT_JSON
                                            : VKPROF_TRACE_FORMAT_PFTRACE;
        double best[2] = {0, 0};
        for (int where = 0; where < 2 && rc == 0; where++) {
            const char *target = where == 0 ? path : "/dev/null";
            for (int r = 0; r < repeats; r++) {
                uint64_t t0 = now_ns();
                vkprof_result wr = vkprof_trace_write_set(&ctx, 1, target, fmt);
                uint64_t t1 = now_ns();
                if (wr != VKPROF_OK) {
                    fprintf(stderr, "bench_pftrace: writing %s: %s\n", target,
                            vkprof_result_text(wr));
                    rc = 1;
                    break;
                }
                double s = (double)(t1 - t0) * 1e-9;
                if (r == 0 || s < best[where]) {
                    best[where] = s;
                }
            }
        }
        struct stat st;
        long long bytes = stat(path, &st) == 0 ? (long long)st.st_size : -1;
        if (rc == 0) {
            printf("  %-8s file %8.3f ms %7.2f M events/s | /dev/null %8.3f ms %7.2f M events/s | "
                   "%11lld bytes %7.2f bytes/event\n",
                   labels[k], best[0] * 1e3, (double)recorded / best[0] * 1e-6, best[1] * 1e3,
                   (double)recorded / best[1] * 1e-6, bytes, (double)bytes / (double)recorded);
        }
        remove(path);
    }
    rmdir(dir);
    vkprof_destroy(ctx);
    return rc;
}
