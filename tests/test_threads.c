/* Many threads open and close spans at once, annotate them and count steps,
 * while the trace store overflows: every counter must come out exact, and the
 * store must account for every event (kept + dropped). Run under TSan in CI. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static th_gpu g;
static vkprof_context ctx;

#define THREADS 8
#define ITERS 4000

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    char name[32];
    snprintf(name, sizeof name, "worker %d", id);
    vkprof_set_thread_name(ctx, name);
    for (int i = 0; i < ITERS; i++) {
        vkprof_span outer = vkprof_span_start_hot(ctx, VKPROF_BUCKET_ALLREDUCE_ATTN);
        vkprof_span inner = vkprof_span_start(ctx, VKPROF_BUCKET_MOE_ROUTER);
        uint32_t ids[2] = {(uint32_t)id, (uint32_t)i};
        vkprof_span_annotate_ids(&inner, "experts", ids, 2);
        vkprof_span_end(ctx, &inner);
        vkprof_span_end(ctx, &outer);
        if (i % 100 == 0) {
            vkprof_step(ctx);
        }
    }
    return NULL;
}

int main(void)
{
    th_gpu_init(&g);
    vkprof_context_desc d = vku_vkprof_desc(&g.inst, &g.dev);
    d.host_level = VKPROF_HOST_ALL;
    d.report_every = 1000000;
    CHECK(vkprof_create(&d, &ctx) == VKPROF_OK);
    const uint32_t capacity = 50000;
    CHECK(vkprof_trace_start(ctx, capacity) == VKPROF_OK);
    th_case = "threads";
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        CHECK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
    }
    vkprof_bucket_stats st[VKPROF_MAX_BUCKETS];
    uint32_t n;
    CHECK(vkprof_bucket_snapshot(ctx, st, VKPROF_MAX_BUCKETS, &n) == VKPROF_OK);
    CHECK_EQ_U64(st[VKPROF_BUCKET_ALLREDUCE_ATTN].calls, THREADS * ITERS);
    CHECK_EQ_U64(st[VKPROF_BUCKET_MOE_ROUTER].calls, THREADS * ITERS);
    CHECK(st[VKPROF_BUCKET_ALLREDUCE_ATTN].total_ns >= st[VKPROF_BUCKET_MOE_ROUTER].total_ns);
    uint64_t steps = THREADS * (ITERS / 100);
    CHECK_EQ_U64(vkprof_step_count(ctx), steps);
    uint64_t rec = 0, drop = 0;
    vkprof_trace_counts(ctx, &rec, &drop);
    CHECK_EQ_U64(rec, capacity);
    CHECK_EQ_U64(rec + drop, 2ull * THREADS * ITERS + steps);
    char path[] = "/tmp/vkprof-threads-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    unlink(path);
    printf("ok   %d threads x %d nested spans: counters exact, %llu kept + %llu dropped\n", THREADS,
           ITERS, (unsigned long long)rec, (unsigned long long)drop);
    vkprof_destroy(ctx);
    th_gpu_finish(&g);
    return th_done();
}
