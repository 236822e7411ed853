/* GPU slices inside their host spans with the counter clock (issue 12): on
 * lavapipe with validation, each iteration opens a host span, records a
 * timed GPU scope, submits it and waits for its fence, then closes the
 * span. In the trace every GPU slice must lie inside its span, give or take
 * the GPU calibration's bound plus the host clock's; slices nest on every
 * track (load_and_check); metadata.host_clock names the clock. Run with
 * VKPROF_HOST_CLOCK=counter, then =monotonic. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "timeline_common.h"

typedef struct slice_t {
    int64_t s, e;
} slice_t;

static void run(const char *clock, const char *want_source)
{
    setenv("VKPROF_HOST_CLOCK", clock, 1);
    vkprof_context ctx = make_ctx(false, false);
    unsetenv("VKPROF_HOST_CLOCK");
    CHECK(vkprof_trace_begin(ctx, 4096) == VKPROF_OK);
    enum { N = 40 };
    for (int i = 0; i < N; i++) {
        vkprof_span sp = vkprof_span_begin(ctx, VKPROF_BUCKET_ATTENTION);
        CHECK(sp.start_ns != 0);
        CHECK_VK(vku_begin(&g.dev));
        CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        vku_busy_record(&g.dev, &busy, g.dev.cmd, 200 + 50 * (uint32_t)(i % 5));
        CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        CHECK_VK(vkEndCommandBuffer(g.dev.cmd));
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &g.dev.cmd};
        CHECK_VK(vkResetFences(g.dev.device, 1, &g.dev.fence));
        CHECK_VK(vkQueueSubmit(g.dev.queue, 1, &si, g.dev.fence));
        CHECK_VK(vkWaitForFences(g.dev.device, 1, &g.dev.fence, VK_TRUE, UINT64_C(10000000000)));
        CHECK(vkprof_span_end(ctx, &sp) > 0);
        CHECK(vkprof_resolve(ctx, NULL) == VKPROF_OK);
        CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        vkprof_step(ctx);
    }
    char path[300];
    snprintf(path, sizeof path, "%s/hclk-%s.json", tmpdir, clock);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    vkprof_destroy(ctx);

    cJSON *root = load_and_check(path); /* structure and nesting */
    CHECK(root != NULL);
    if (root == NULL) {
        return;
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    const cJSON *hc = cJSON_GetObjectItemCaseSensitive(meta, "host_clock");
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(hc, "source");
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(hc, "reason");
    CHECK(cJSON_IsString(src) && cJSON_IsString(why));
    /* the counter asked for, or the fallback with its reason (a CPU without one) */
    CHECK(strcmp(src->valuestring, want_source) == 0 ||
          (strcmp(src->valuestring, "CLOCK_MONOTONIC") == 0 && why->valuestring[0] != '\0'));
    int64_t hbound = meta_i64(root, "host_clock", "error_bound_ns");
    int64_t gbound = meta_i64(root, "calibration", "error_bound_ns");
    CHECK(hbound >= 0 && gbound >= 0);
    slice_t host[N], gpu[N];
    int nh = 0, ng = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
    {
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
        if (!cJSON_IsString(cat) || !cJSON_IsString(ph) || strcmp(ph->valuestring, "X") != 0) {
            continue;
        }
        int64_t s = to_ns(cJSON_GetObjectItemCaseSensitive(e, "ts"));
        int64_t d = to_ns(cJSON_GetObjectItemCaseSensitive(e, "dur"));
        if (strcmp(cat->valuestring, "host") == 0 && nh < N) {
            host[nh++] = (slice_t){s, s + d};
        } else if (strcmp(cat->valuestring, "gpu") == 0 && ng < N) {
            gpu[ng++] = (slice_t){s, s + d};
        }
    }
    CHECK(nh == N && ng == N);
    /* both lists are in time order (one host thread, one queue) */
    int64_t bound = hbound + gbound, worst = INT64_MIN;
    int outside = 0, strict = 0;
    for (int k = 0; k < nh && k < ng; k++) {
        int64_t early = host[k].s - gpu[k].s, late = gpu[k].e - host[k].e;
        int64_t w = early > late ? early : late;
        worst = w > worst ? w : worst;
        strict += w <= 0;
        if (w > bound) {
            outside++;
            fprintf(stderr, "  GPU slice %d [%lld, %lld] outside its span [%lld, %lld] +- %lld\n",
                    k, (long long)gpu[k].s, (long long)gpu[k].e, (long long)host[k].s,
                    (long long)host[k].e, (long long)bound);
        }
    }
    CHECK(outside == 0);
    printf("  VKPROF_HOST_CLOCK=%s (%s): %d GPU slices, %d strictly inside their host span, "
           "worst %lld ns outside (bound %lld = host %lld + GPU %lld)\n",
           clock, src ? src->valuestring : "?", ng, strict, (long long)worst, (long long)bound,
           (long long)hbound, (long long)gbound);
    cJSON_Delete(root);
}

static void test_counter(void)
{
#if defined(__x86_64__)
    run("counter", "tsc");
#elif defined(__aarch64__)
    run("counter", "cntvct_el0");
#else
    run("counter", "CLOCK_MONOTONIC");
#endif
}

static void test_monotonic(void)
{
    run("monotonic", "CLOCK_MONOTONIC");
}

int main(void)
{
    tl_init();
    RUN(test_counter);
    RUN(test_monotonic);
    return tl_finish();
}
