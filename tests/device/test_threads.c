/* Many threads open and close spans at once, annotate them and count steps,
 * while the trace store overflows: every counter must come out exact, and the
 * store must account for every event (kept + dropped); every span's flow id
 * is unique in the process (each thread takes blocks of ids), and the
 * thread's open span follows the spans. Run under TSan in CI. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "host/host.h" /* the accumulators' list, to count it */

static th_gpu g;
static vkprof_context ctx;

#define THREADS 8
#define ITERS 4000

/* base/thread.c (the library's internal, linked statically here): the flow
 * id of this thread's innermost open span that has one, 0: none */
uint64_t vkprof__current_span(void);

/* per thread and iteration: the open span after opening the outer span,
 * after the inner, after closing the inner, after closing the outer */
static uint64_t g_flow[THREADS][ITERS][4];

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    char name[32];
    snprintf(name, sizeof name, "worker %d", id);
    vkprof_set_thread_name(ctx, name);
    for (int i = 0; i < ITERS; i++) {
        vkprof_span outer = vkprof_span_begin_hot(ctx, VKPROF_BUCKET_ALLREDUCE_ATTN);
        g_flow[id][i][0] = vkprof__current_span();
        vkprof_span inner = vkprof_span_begin(ctx, VKPROF_BUCKET_MOE_ROUTER);
        g_flow[id][i][1] = vkprof__current_span();
        uint32_t ids[2] = {(uint32_t)id, (uint32_t)i};
        vkprof_span_annotate_ids(&inner, "experts", ids, 2);
        vkprof_span_end(ctx, &inner);
        g_flow[id][i][2] = vkprof__current_span();
        vkprof_span_end(ctx, &outer);
        g_flow[id][i][3] = vkprof__current_span();
        if (i % 100 == 0) {
            vkprof_step(ctx);
        }
    }
    return NULL;
}

enum { SPANS_IN = 500 };

/* SPANS_IN spans in the context `arg`, then the thread ends */
static void *spans_in(void *arg)
{
    vkprof_context c = arg;
    for (int i = 0; i < SPANS_IN; i++) {
        vkprof_span s = vkprof_span_begin(c, VKPROF_BUCKET_MLP);
        vkprof_span_end(c, &s);
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
    CHECK(vkprof_trace_begin(ctx, capacity) == VKPROF_OK);
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
    /* flow ids: never 0, unique over all threads, increasing on each; the
     * open span is the innermost traced one, the outer again after the
     * inner closed, none after both */
    th_case = "flow ids";
    static uint64_t all[THREADS * ITERS * 2];
    size_t na = 0;
    int bad_nesting = 0, bad_order = 0;
    for (int w = 0; w < THREADS; w++) {
        for (int i = 0; i < ITERS; i++) {
            const uint64_t *f = g_flow[w][i];
            bad_nesting += f[0] == 0 || f[1] == 0 || f[1] == f[0] || f[2] != f[0] || f[3] != 0;
            bad_order += f[1] <= f[0] || (i > 0 && f[0] <= g_flow[w][i - 1][1]);
            all[na++] = f[0];
            all[na++] = f[1];
        }
    }
    CHECK_EQ_U64((uint64_t)bad_nesting, 0);
    CHECK_EQ_U64((uint64_t)bad_order, 0);
    qsort(all, na, sizeof all[0], cmp_u64);
    size_t dup = 0;
    for (size_t i = 1; i < na; i++) {
        dup += all[i] == all[i - 1];
    }
    CHECK_EQ_U64(dup, 0);
    CHECK(all[0] != 0);

    /* the open span on one thread across contexts: a span of a context that
     * is not tracing (no flow id) leaves the traced one open around it; an
     * outer span closed first gives up the inner one and leaves none */
    th_case = "open span";
    vkprof_context quiet = NULL;
    CHECK(vkprof_create(&d, &quiet) == VKPROF_OK);
    vkprof_span a = vkprof_span_begin(ctx, VKPROF_BUCKET_NORM);
    uint64_t fa = vkprof__current_span();
    CHECK(fa != 0);
    vkprof_span q = vkprof_span_begin(quiet, VKPROF_BUCKET_NORM);
    CHECK(q.start_ns != 0);
    CHECK_EQ_U64(vkprof__current_span(), fa);
    vkprof_span_end(quiet, &q);
    CHECK_EQ_U64(vkprof__current_span(), fa);
    vkprof_span b = vkprof_span_begin(ctx, VKPROF_BUCKET_NORM);
    CHECK(vkprof__current_span() != fa && vkprof__current_span() != 0);
    vkprof_span qq = vkprof_span_begin(quiet, VKPROF_BUCKET_NORM);
    vkprof_span_end(ctx, &b); /* gives up qq (no flow id): a is open again */
    CHECK_EQ_U64(vkprof__current_span(), fa);
    CHECK(vkprof_span_end(quiet, &qq) == 0); /* given up: refused */
    vkprof_span c = vkprof_span_begin(ctx, VKPROF_BUCKET_NORM);
    CHECK(vkprof__current_span() != fa);
    vkprof_span_end(ctx, &a); /* gives up c, which had a flow id */
    CHECK_EQ_U64(vkprof__current_span(), 0);
    CHECK(vkprof_span_end(ctx, &c) == 0);
    vkprof_destroy(quiet);

    /* the per-thread accumulators: one thread round-robin over more
     * contexts than its cache holds (each keeps exact counts and one
     * accumulator, not one per switch); threads that end and new ones in
     * their place (every count kept, the list bounded by the threads alive
     * at once); a context destroyed and another created, likely at the same
     * address (a thread's cached accumulator of the old one is not used) */
    th_case = "accumulators";
    enum { NCTX = 6, ROUNDS = 1000 };
    vkprof_context cs[NCTX];
    for (int k = 0; k < NCTX; k++) {
        CHECK(vkprof_create(&d, &cs[k]) == VKPROF_OK);
    }
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < NCTX; k++) {
            vkprof_span s = vkprof_span_begin(cs[k], VKPROF_BUCKET_NORM);
            vkprof_span_end(cs[k], &s);
        }
    }
    for (int k = 0; k < NCTX; k++) {
        CHECK(vkprof_bucket_snapshot(cs[k], st, VKPROF_MAX_BUCKETS, &n) == VKPROF_OK);
        CHECK_EQ_U64(st[VKPROF_BUCKET_NORM].calls, ROUNDS);
        uint32_t accs = 0;
        for (const vkprof_span_acc *x = cs[k]->host.accs; x != NULL; x = x->next) {
            accs++;
        }
        CHECK_EQ_U64(accs, 1);
    }
    for (int wave = 0; wave < 4; wave++) {
        for (int i = 0; i < THREADS; i++) {
            CHECK(pthread_create(&t[i], NULL, spans_in, cs[0]) == 0);
        }
        for (int i = 0; i < THREADS; i++) {
            pthread_join(t[i], NULL);
        }
    }
    CHECK(vkprof_bucket_snapshot(cs[0], st, VKPROF_MAX_BUCKETS, &n) == VKPROF_OK);
    CHECK_EQ_U64(st[VKPROF_BUCKET_NORM].calls, ROUNDS);
    CHECK_EQ_U64(st[VKPROF_BUCKET_MLP].calls, 4ull * THREADS * SPANS_IN);
    uint32_t accs0 = 0;
    for (const vkprof_span_acc *x = cs[0]->host.accs; x != NULL; x = x->next) {
        accs0++;
    }
    printf("  %u accumulators for 1 + 4 waves of %d threads\n", accs0, THREADS);
    CHECK(accs0 >= 2 && accs0 <= 1 + 4 * THREADS);
    for (int k = 0; k < NCTX; k++) {
        vkprof_destroy(cs[k]);
    }
    for (int k = 0; k < NCTX; k++) { /* new contexts, this thread's cache still full */
        CHECK(vkprof_create(&d, &cs[k]) == VKPROF_OK);
        vkprof_span s = vkprof_span_begin(cs[k], VKPROF_BUCKET_NORM);
        vkprof_span_end(cs[k], &s);
        CHECK(vkprof_bucket_snapshot(cs[k], st, VKPROF_MAX_BUCKETS, &n) == VKPROF_OK);
        CHECK_EQ_U64(st[VKPROF_BUCKET_NORM].calls, 1);
    }
    for (int k = 0; k < NCTX; k++) {
        vkprof_destroy(cs[k]);
    }

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
