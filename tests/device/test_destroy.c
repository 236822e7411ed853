/* vkprof_destroy with GPU work that finished but was never collected (issue
 * 8): the work is collected and lands in the trace; work that never ran is
 * counted as lost and logged, never silently gone. Lavapipe, validation on. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static th_gpu g;
static vku_busy busy;
static th_log logbuf;
static char dir[] = "/tmp/vkprof-destroy-XXXXXX";
static char path[300]; /* one file per context: a second context on one path writes .ctx2 */
static int serial;

static vkprof_context make(vkprof_timing_mode mode)
{
    vkprof_context_desc d = th_desc(&g, &logbuf, false);
    d.enable = VKPROF_ENABLE_ON;
    d.timing_mode = mode;
    d.report_every = UINT32_MAX;
    snprintf(path, sizeof path, "%s/trace%d.json", dir, ++serial);
    d.trace_path = path;
    return th_ctx(&d);
}

static void record(vkprof_context ctx, int n)
{
    for (int i = 0; i < n; i++) {
        if (i) {
            vku_compute_barrier(g.dev.cmd);
        }
        CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        vku_busy_record(&g.dev, &busy, g.dev.cmd, 20);
        CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
    }
}

/* metadata.<a>[.<b>] of the trace file, or -1 */
static int64_t meta(const char *a, const char *b)
{
    char *text = th_read_file(path);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "metadata"), a);
    if (b != NULL) {
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    }
    int64_t n = cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
    cJSON_Delete(root);
    return n;
}

/* Submitted and finished, never collected: destroy folds them into the trace. */
static void test_finished_uncollected(void)
{
    vkprof_context ctx = make(VKPROF_TIMING_RING);
    CHECK_VK(vku_begin(&g.dev));
    record(ctx, 5);
    CHECK_VK(vku_submit_wait(&g.dev));
    logbuf.warnings = 0;
    vkprof_destroy(ctx);
    CHECK_EQ_U64(meta("gpu_scopes", NULL), 5);
    CHECK_EQ_U64(meta("gpu_sampling", "scopes_dropped"), 0);
    CHECK(logbuf.warnings == 0);
}

/* Some ran, some were recorded into a command buffer never submitted: the
 * ones that ran are in the trace, the others are counted and logged. */
static void test_never_submitted(void)
{
    vkprof_context ctx = make(VKPROF_TIMING_RING);
    CHECK_VK(vku_begin(&g.dev));
    record(ctx, 3);
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK_VK(vku_begin(&g.dev));
    record(ctx, 2); /* never submitted */
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_MLP_DOWN) == VKPROF_OK); /* left open */
    logbuf.warnings = 0;
    vkprof_destroy(ctx);
    CHECK_EQ_U64(meta("gpu_scopes", NULL), 3);
    CHECK_EQ_U64(meta("gpu_sampling", "scopes_dropped"), 3);
    /* the first-loss warning, then destroy's own count */
    CHECK(logbuf.warnings == 2 && strstr(logbuf.last, "3 GPU scope(s) had not run") != NULL);
    printf("  %s\n", logbuf.last);
}

/* 2-slot: an ended scope never accumulated is reported, not silently gone. */
static void test_two_slot_unaccumulated(void)
{
    vkprof_context ctx = make(VKPROF_TIMING_2SLOT);
    CHECK_VK(vku_begin(&g.dev));
    record(ctx, 1);
    CHECK_VK(vku_submit_wait(&g.dev));
    logbuf.warnings = 0;
    vkprof_destroy(ctx);
    CHECK(logbuf.warnings == 1 && strstr(logbuf.last, "never accumulated") != NULL);
}

int main(void)
{
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    th_gpu_init(&g);
    th_busy_init(&g, &busy, 4096);
    logbuf.quiet = 1;
    RUN(test_finished_uncollected);
    RUN(test_never_submitted);
    RUN(test_two_slot_unaccumulated);
    vku_busy_destroy(&g.dev, &busy);
    th_gpu_finish(&g);
    for (int i = 1; i <= serial; i++) {
        snprintf(path, sizeof path, "%s/trace%d.json", dir, i);
        unlink(path);
    }
    rmdir(dir);
    return th_done();
}
