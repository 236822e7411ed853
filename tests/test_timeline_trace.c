/* The trace's content with everything on (lavapipe, validation on): GPU
 * scopes, host spans, annotations, rendezvous probes, steps, thread names,
 * flows and metadata; and the bounded event store: overflow is counted in
 * the trace, while the counters still see every span. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include "timeline_common.h"

/* ---- the timeline with everything on ------------------------------------ */

static void test_trace_json(void)
{
    vkprof_context ctx = make_ctx(false, false);
    CHECK(vkprof_trace_start(ctx, 0) == VKPROF_OK);
    vkprof_set_thread_name(ctx, "decode \"main\"");
    vkprof_bucket layer;
    CHECK(vkprof_register_bucket(ctx, "layer", false, &layer) == VKPROF_OK);
    for (int step = 0; step < 3; step++) {
        vkprof_span ls = vkprof_span_start(ctx, layer);
        vkprof_span as = vkprof_span_start(ctx, VKPROF_BUCKET_ATTENTION);
        CHECK_VK(vku_begin(&g.dev));
        CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        vku_busy_record(&g.dev, &busy, g.dev.cmd, 100);
        CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        CHECK_VK(vku_submit_wait(&g.dev));
        CHECK(vkprof_resolve(ctx, NULL) == VKPROF_OK);
        CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        vkprof_span_end(ctx, &as);
        vkprof_span ms = vkprof_span_start(ctx, VKPROF_BUCKET_MOE_ROUTER);
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

/* ---- bounded memory: overflow is counted ---------------------------------- */

static void test_overflow(void)
{
    vkprof_context ctx = make_ctx(false, false);
    CHECK(vkprof_trace_start(ctx, 100) == VKPROF_OK);
    for (int i = 0; i < 250; i++) {
        vkprof_span s = vkprof_span_start(ctx, VKPROF_BUCKET_NORM);
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
    return tl_finish();
}
