/* The trace's content with everything on (lavapipe, validation on): GPU
 * scopes, host spans, annotations, rendezvous probes, steps, thread names,
 * flows and metadata; and the bounded event store: overflow is counted in
 * the trace, while the counters still see every span; a GPU scope's args
 * (vkprof_cmd_end_args): kept, shared, cut, or counted as dropped. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <string.h>
#include "timeline_common.h"
#include "timeline/store.h" /* vkprof__trace_args and the store, for the threaded check */

/* ---- the timeline with everything on ------------------------------------ */

static void test_trace_json(void)
{
    vkprof_context ctx = make_ctx(false, false);
    CHECK(vkprof_trace_begin(ctx, 0) == VKPROF_OK);
    vkprof_set_thread_name(ctx, "decode \"main\"");
    vkprof_bucket layer;
    CHECK(vkprof_register_bucket(ctx, "layer", false, &layer) == VKPROF_OK);
    for (int step = 0; step < 3; step++) {
        vkprof_span ls = vkprof_span_begin(ctx, layer);
        vkprof_span as = vkprof_span_begin(ctx, VKPROF_BUCKET_ATTENTION);
        CHECK_VK(vku_begin(&g.dev));
        CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        vku_busy_record(&g.dev, &busy, g.dev.cmd, 100);
        CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        CHECK_VK(vku_submit_wait(&g.dev));
        CHECK(vkprof_resolve(ctx, NULL) == VKPROF_OK);
        CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        vkprof_span_end(ctx, &as);
        vkprof_span ms = vkprof_span_begin(ctx, VKPROF_BUCKET_MOE_ROUTER);
        uint32_t experts[3] = {3, 17, (uint32_t)(40 + step)};
        CHECK(vkprof_span_annotate_ids(&ms, "experts", experts, 3));
        CHECK(vkprof_span_annotate(&ms, "note", "tab\there"));
        vkprof_span_end(ctx, &ms);
        vkprof_rendezvous(ctx, VKPROF_BUCKET_ALLREDUCE_MLP_RENDEZVOUS, NULL, NULL);
        vkprof_span_end(ctx, &ls);
        vkprof_step(ctx);
    }
    char path[300];
    snprintf(path, sizeof path, "%s/trace.json", tmpdir);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    /* a second write replaces the first */
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    cJSON *root = load_and_check(path);
    if (root == NULL) {
        vkprof_destroy(ctx);
        return;
    }
    int gpu = 0, host = 0, steps = 0, annotated = 0, probes = 0, named = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
    {
        const char *ph = cJSON_GetObjectItemCaseSensitive(e, "ph")->valuestring;
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        if (strcmp(ph, "X") == 0 && strcmp(cat->valuestring, "gpu") == 0) {
            gpu++;
            CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(args, "ns")));
        } else if (strcmp(ph, "X") == 0) {
            host++;
            const cJSON *ex = cJSON_GetObjectItemCaseSensitive(args, "experts");
            if (cJSON_IsString(ex)) {
                annotated++;
                CHECK(strncmp(ex->valuestring, "3,17,4", 6) == 0);
                CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(args, "note")->valuestring,
                             "tab\there") == 0);
            }
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args, "probe"))) {
                probes++;
            }
        } else if (strcmp(ph, "i") == 0) {
            steps++;
        } else if (strcmp(ph, "M") == 0) {
            const cJSON *an = cJSON_GetObjectItemCaseSensitive(args, "name");
            if (cJSON_IsString(an) && strcmp(an->valuestring, "decode \"main\"") == 0) {
                named++;
            }
        }
    }
    CHECK(gpu == 3);
    CHECK(host == 3 * 4);
    CHECK(steps == 3);
    CHECK(annotated == 3);
    CHECK(probes == 3);
    CHECK(named == 1);
    CHECK(meta_i64(root, "flows", NULL) == 3);
    CHECK(meta_i64(root, "dropped_events", NULL) == 0);
    CHECK(meta_i64(root, "steps", NULL) == 3);
    CHECK(meta_i64(root, "clock_anchor", "realtime_ns") > 1600000000000000000LL);
    cJSON_Delete(root);
    vkprof_destroy(ctx);
}

/* ---- a GPU scope's args (vkprof_cmd_end_args) ----------------------------- */

/* One 2-slot scope ended with `args`; the result of the end. */
static vkprof_result args_scope(vkprof_context ctx, const vkprof_arg *args, uint32_t n)
{
    CHECK_VK(vku_begin(&g.dev));
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_MLP_DOWN) == VKPROF_OK);
    vku_busy_record(&g.dev, &busy, g.dev.cmd, 1);
    vkprof_result r = vkprof_cmd_end_args(ctx, g.dev.cmd, VKPROF_PHASE_MLP_DOWN, args, n);
    if (r != VKPROF_OK) {
        /* the scope stays open: a plain end closes it */
        CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_MLP_DOWN) == VKPROF_OK);
    }
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(vkprof_resolve(ctx, NULL) == VKPROF_OK);
    CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_MLP_DOWN) == VKPROF_OK);
    return r;
}

/* The args of each GPU slice, in time order, come back as given: equal
 * records share one entry of the store; five args, or the store full: the
 * slice has no args and the record is counted as dropped, never another
 * scope's args. */
static void test_gpu_args(void)
{
    vkprof_context ctx = make_ctx(false, false);
    /* not tracing yet: the args are not kept, the scope is timed */
    static const vkprof_arg same[2] = {{"groups", "4,1,1"}, {"local_size", "64,1,1"}};
    CHECK(args_scope(ctx, same, 2) == VKPROF_OK);
    const uint32_t cap = 200, annot_cap = 200 / 16 + 64; /* the store's rule (store.c) */
    CHECK(vkprof_trace_begin(ctx, cap) == VKPROF_OK);
    for (int i = 0; i < 3; i++) {
        CHECK(args_scope(ctx, same, 2) == VKPROF_OK); /* one entry for the three */
    }
    static const vkprof_arg five[5] = {{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}, {"e", "5"}};
    CHECK(args_scope(ctx, five, 5) == VKPROF_OK); /* dropped */
    char longv[80];
    memset(longv, 'x', sizeof longv - 1);
    longv[sizeof longv - 1] = '\0';
    vkprof_arg lng = {"spec", longv};
    CHECK(args_scope(ctx, &lng, 1) == VKPROF_OK); /* cut at VKPROF_ANNOTATION_MAX */
    /* misuse: the scope stays open and is ended without args */
    CHECK(args_scope(ctx, NULL, 1) == VKPROF_ERROR_INVALID_ARGUMENT);
    vkprof_arg nullv = {"k", NULL};
    CHECK(args_scope(ctx, &nullv, 1) == VKPROF_ERROR_INVALID_ARGUMENT);
    CHECK(args_scope(ctx, NULL, 0) == VKPROF_OK); /* no args: vkprof_cmd_end */
    /* distinct records until the store is full, and beyond */
    const uint32_t used = 2, distinct = annot_cap - used + 5;
    char val[VKPROF_GPU_MAX_ARGS][32];
    for (uint32_t i = 0; i < distinct; i++) {
        snprintf(val[0], sizeof val[0], "%u", i);
        vkprof_arg a = {"i", val[0]};
        CHECK(args_scope(ctx, &a, 1) == VKPROF_OK);
    }
    char path[300];
    snprintf(path, sizeof path, "%s/args.json", tmpdir);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    cJSON *root = load_and_check(path);
    if (root == NULL) {
        vkprof_destroy(ctx);
        return;
    }
    CHECK(meta_i64(root, "dropped_annotations", NULL) == 1 + 5);
    /* the GPU slices in time order (one track, scopes one after another) */
    const cJSON *e;
    uint32_t k = 0, with_i = 0, without = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
    {
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        if (!cJSON_IsString(cat) || strcmp(cat->valuestring, "gpu") != 0) {
            continue;
        }
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        const cJSON *gr = cJSON_GetObjectItemCaseSensitive(args, "groups");
        const cJSON *ls = cJSON_GetObjectItemCaseSensitive(args, "local_size");
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(args, "spec");
        const cJSON *iv = cJSON_GetObjectItemCaseSensitive(args, "i");
        const int n_extra = cJSON_GetArraySize(args) - 3; /* phase, ns, step */
        if (k < 3) {
            CHECK(cJSON_IsString(gr) && strcmp(gr->valuestring, "4,1,1") == 0);
            CHECK(cJSON_IsString(ls) && strcmp(ls->valuestring, "64,1,1") == 0);
            CHECK(n_extra == 2);
        } else if (k == 4) {
            CHECK(cJSON_IsString(sp) && strlen(sp->valuestring) == VKPROF_ANNOTATION_MAX &&
                  strncmp(sp->valuestring, longv, VKPROF_ANNOTATION_MAX) == 0);
            CHECK(n_extra == 1);
        } else if (k == 3 || (k >= 5 && k < 8)) {
            CHECK(n_extra == 0); /* five args (dropped), misuse, none */
        } else if (cJSON_IsString(iv)) {
            char want[32];
            snprintf(want, sizeof want, "%u", k - 8);
            CHECK(strcmp(iv->valuestring, want) == 0); /* never another scope's */
            CHECK(n_extra == 1);
            CHECK(without == 0); /* the kept ones come first */
            with_i++;
        } else {
            CHECK(n_extra == 0);
            without++;
        }
        k++;
    }
    CHECK(k == 3 + 1 + 1 + 3 + distinct); /* the scope before tracing is not in it */
    CHECK(with_i == annot_cap - used);
    CHECK(without == 5);
    cJSON_Delete(root);
    vkprof_destroy(ctx);
    /* inactive: DISABLED, as vkprof_cmd_end */
    CHECK(vkprof_cmd_end_args(NULL, g.dev.cmd, 0, same, 2) == VKPROF_DISABLED);
}

/* ---- the args store from several threads at once ------------------------- */

enum { ARG_THREADS = 4, ARG_CALLS = 3000, ARG_KINDS = 50 };

typedef struct args_worker {
    vkprof_context ctx;
    int id;
    int wrong, kept;
} args_worker;

static void *args_thread(void *p)
{
    args_worker *w = p;
    vkprof_trace *t = &w->ctx->trace;
    for (int i = 0; i < ARG_CALLS; i++) {
        char tv[16], iv[16];
        snprintf(tv, sizeof tv, "%d", w->id);
        snprintf(iv, sizeof iv, "%d", i % ARG_KINDS);
        /* a record of this thread's own, and one every thread gives */
        const vkprof_arg own[2] = {{"t", tv}, {"i", iv}}, common[1] = {{"same", "x"}};
        const bool mine = i % 3 != 0;
        uint32_t a =
            mine ? vkprof__trace_args(w->ctx, own, 2) : vkprof__trace_args(w->ctx, common, 1);
        if (a == 0 || a > t->annot_capacity) {
            w->wrong++;
            continue;
        }
        const vkprof_annot *r = &t->annots[a - 1];
        bool ok =
            mine ? r->count == 2 && strcmp(r->key[0], "t") == 0 && strcmp(r->value[0], tv) == 0 &&
                       strcmp(r->key[1], "i") == 0 && strcmp(r->value[1], iv) == 0
                 : r->count == 1 && strcmp(r->key[0], "same") == 0 && strcmp(r->value[0], "x") == 0;
        w->wrong += !ok;
        w->kept++;
    }
    return NULL;
}

/* Threads interning at once each get a record equal to what they gave,
 * and equal records are mostly shared (the store's cache is lossy: a record
 * may be written again, never another's returned). */
static void test_gpu_args_threads(void)
{
    vkprof_context ctx = make_ctx(false, false);
    CHECK(vkprof_trace_begin(ctx, 1u << 16) == VKPROF_OK);
    pthread_t th[ARG_THREADS];
    args_worker w[ARG_THREADS];
    for (int i = 0; i < ARG_THREADS; i++) {
        w[i] = (args_worker){ctx, i, 0, 0};
        CHECK(pthread_create(&th[i], NULL, args_thread, &w[i]) == 0);
    }
    for (int i = 0; i < ARG_THREADS; i++) {
        pthread_join(th[i], NULL);
        CHECK(w[i].wrong == 0);
        CHECK(w[i].kept == ARG_CALLS);
    }
    /* 4 x 50 own records and the common one; far fewer than the calls */
    uint64_t made = atomic_load(&ctx->trace.annot_next);
    printf("args from %d threads: %llu records for %d calls\n", ARG_THREADS,
           (unsigned long long)made, ARG_THREADS * ARG_CALLS);
    CHECK(made >= ARG_THREADS * ARG_KINDS + 1);
    CHECK(made < ARG_THREADS * ARG_CALLS / 4);
    CHECK(atomic_load(&ctx->trace.annot_dropped) == 0);
    vkprof_destroy(ctx);
}

/* ---- bounded memory: overflow is counted ---------------------------------- */

static void test_overflow(void)
{
    vkprof_context ctx = make_ctx(false, false);
    CHECK(vkprof_trace_begin(ctx, 100) == VKPROF_OK);
    for (int i = 0; i < 250; i++) {
        vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_NORM);
        vkprof_span_end(ctx, &s);
    }
    uint64_t rec = 0, drop = 0;
    vkprof_trace_counts(ctx, &rec, &drop);
    CHECK(rec == 100 && drop == 150);
    char path[300];
    snprintf(path, sizeof path, "%s/overflow.json", tmpdir);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    cJSON *root = load_and_check(path);
    CHECK(meta_i64(root, "dropped_events", NULL) == 150);
    CHECK(meta_i64(root, "event_capacity", NULL) == 100);
    cJSON_Delete(root);
    /* the counters still saw every span */
    vkprof_bucket_stats st[VKPROF_MAX_BUCKETS];
    uint32_t n;
    vkprof_bucket_snapshot(ctx, st, VKPROF_MAX_BUCKETS, &n);
    CHECK(st[VKPROF_BUCKET_NORM].calls == 250);
    vkprof_destroy(ctx);
}

int main(void)
{
    tl_init();
    RUN(test_trace_json);
    RUN(test_overflow);
    RUN(test_gpu_args);
    RUN(test_gpu_args_threads);
    return tl_finish();
}
