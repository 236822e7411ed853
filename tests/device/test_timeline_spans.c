/* Host spans and the per-token report: span levels from VKPROF_HOST_PROFILE
 * (hot only, all, garbage), sync variants, the rendezvous probe, app
 * buckets, the level changed at runtime; the report's exact text and its
 * truncation; a report every N steps through the logger. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include "timeline_common.h"

/* ---- spans, levels, report --------------------------------------------- */

static int syncs;
static void count_sync(void *user)
{
    (void)user;
    syncs++;
}

static void wait_a_bit(void *user)
{
    (void)user;
    sleep_ms(2);
}

static void test_span_levels(void)
{
    vkprof_context_desc d = vku_vkprof_desc(&g.inst, &g.dev);
    d.enable = VKPROF_ENABLE_OFF;
    d.report_every = UINT32_MAX;
    d.log = th_log_fn;
    d.log_user = &logbuf;
    vkprof_context ctx;

    /* env: 2 = hot only */
    setenv("VKPROF_HOST_PROFILE", "2", 1);
    CHECK(vkprof_create(&d, &ctx) == VKPROF_OK);
    CHECK(vkprof_get_host_level(ctx) == VKPROF_HOST_HOT);
    vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_NORM);
    CHECK(s.start_ns == 0);
    CHECK(vkprof_span_end(ctx, &s) == 0);
    vkprof_span h = vkprof_span_begin_hot(ctx, VKPROF_BUCKET_ALLREDUCE_ATTN);
    CHECK(h.start_ns != 0);
    CHECK(vkprof_span_end(ctx, &h) > 0 || true);
    vkprof_bucket_stats st[VKPROF_MAX_BUCKETS];
    uint32_t n;
    CHECK(vkprof_bucket_snapshot(ctx, st, VKPROF_MAX_BUCKETS, &n) == VKPROF_OK);
    CHECK(st[VKPROF_BUCKET_NORM].calls == 0);
    CHECK(st[VKPROF_BUCKET_ALLREDUCE_ATTN].calls == 1);
    /* the rendezvous probe: charged to the probe bucket, wait called */
    uint64_t waited =
        vkprof_rendezvous(ctx, VKPROF_BUCKET_ALLREDUCE_ATTN_RENDEZVOUS, wait_a_bit, NULL);
    CHECK(waited >= 2000000);
    CHECK(vkprof_bucket_snapshot(ctx, st, VKPROF_MAX_BUCKETS, &n) == VKPROF_OK);
    CHECK(st[VKPROF_BUCKET_ALLREDUCE_ATTN_RENDEZVOUS].calls == 1);
    CHECK(st[VKPROF_BUCKET_ALLREDUCE_ATTN_RENDEZVOUS].total_ns == waited);
    CHECK(st[VKPROF_BUCKET_ALLREDUCE_ATTN].calls == 1);
    vkprof_destroy(ctx);

    /* env: 1 = everything; sync variants */
    setenv("VKPROF_HOST_PROFILE", "1", 1);
    CHECK(vkprof_create(&d, &ctx) == VKPROF_OK);
    CHECK(vkprof_get_host_level(ctx) == VKPROF_HOST_ALL);
    syncs = 0;
    s = vkprof_span_begin(ctx, VKPROF_BUCKET_MLP);
    CHECK(s.start_ns != 0);
    (void)vkprof_span_end_sync(ctx, &s, count_sync, NULL); /* may round to 0 ns */
    CHECK(syncs == 1);
    s = vkprof_span_begin(ctx, VKPROF_BUCKET_MLP);
    sleep_ms(1);
    uint64_t ns = vkprof_span_end_sync(ctx, &s, count_sync, NULL);
    CHECK(syncs == 2 && ns >= 1000000u);
    /* closing twice, or an empty token, does nothing */
    CHECK(vkprof_span_end(ctx, &s) == 0);
    CHECK(vkprof_bucket_snapshot(ctx, st, VKPROF_MAX_BUCKETS, &n) == VKPROF_OK);
    CHECK(st[VKPROF_BUCKET_MLP].calls == 2);
    /* unknown bucket: an error, an empty token */
    s = vkprof_span_begin(ctx, 5000);
    CHECK(s.start_ns == 0);
    /* app buckets */
    vkprof_bucket mine, again;
    CHECK(vkprof_register_bucket(ctx, "tokenizer", false, &mine) == VKPROF_OK);
    CHECK(mine == VKPROF_BUCKET_DEFAULT_COUNT);
    CHECK(vkprof_register_bucket(ctx, "tokenizer", true, &again) == VKPROF_OK && again == mine);
    CHECK(strcmp(vkprof_bucket_name(ctx, mine), "tokenizer") == 0);
    CHECK(vkprof_register_bucket(ctx, "", false, &again) == VKPROF_ERROR_INVALID_ARGUMENT);
    /* the level can change at runtime */
    vkprof_set_host_level(ctx, VKPROF_HOST_OFF);
    s = vkprof_span_begin_hot(ctx, VKPROF_BUCKET_ALLREDUCE_MLP);
    CHECK(s.start_ns == 0);
    syncs = 0;
    /* the app's sync still runs on an empty token: its work must happen */
    vkprof_span_end_sync(ctx, &s, count_sync, NULL);
    CHECK(syncs == 1);
    vkprof_destroy(ctx);

    /* garbage: off, with a warning */
    setenv("VKPROF_HOST_PROFILE", "verbose", 1);
    logbuf.warnings = 0;
    CHECK(vkprof_create(&d, &ctx) == VKPROF_OK);
    CHECK(vkprof_get_host_level(ctx) == VKPROF_HOST_OFF);
    CHECK(logbuf.warnings == 1 && strstr(logbuf.last, "VKPROF_HOST_PROFILE") != NULL);
    vkprof_destroy(ctx);
    unsetenv("VKPROF_HOST_PROFILE");
}

static void test_report_format(void)
{
    vkprof_report_row rows[] = {
        {"norm", 1200000, 16}, {"attention", 4800000, 16}, {"idle", 0, 0}, {"mlp", 2000000, 8}};
    char buf[2048];
    size_t n = vkprof_format_report(buf, sizeof buf, 9, 8, 16000000, rows, 4);
    CHECK(n == strlen(buf));
    const char *want =
        "vkprof host profile, steps 9-16: 2.000 ms/token under profiling (500.0 tokens/s; "
        "profiled, spans serialise the run: not a serving figure)\n"
        "  bucket                         ms/token      %  calls/token    us/call\n"
        "  attention                         0.600   30.0         2.00     300.00\n"
        "  mlp                               0.250   12.5         1.00     250.00\n"
        "  norm                              0.150    7.5         2.00      75.00\n";
    if (strcmp(buf, want) != 0) {
        fprintf(stderr, "got:\n%s\nwant:\n%s\n", buf, want);
    }
    CHECK(strcmp(buf, want) == 0);
    /* truncation: reports the size needed, never overruns */
    char small[20];
    size_t need = vkprof_format_report(small, sizeof small, 9, 8, 16000000, rows, 4);
    CHECK(need == n && strlen(small) == sizeof small - 1);
}

typedef struct report_log {
    int reports;
    char last[4096];
} report_log;

static void on_report(void *user, vkprof_log_level level, vkprof_result code, const char *msg)
{
    (void)code;
    report_log *r = user;
    if (level == VKPROF_LOG_REPORT) {
        r->reports++;
        snprintf(r->last, sizeof r->last, "%s", msg);
    }
}

static void test_report_every(void)
{
    static report_log rl;
    vkprof_context_desc d = vku_vkprof_desc(&g.inst, &g.dev);
    d.enable = VKPROF_ENABLE_OFF;
    d.host_level = VKPROF_HOST_ALL;
    d.report_every = 4;
    d.log = on_report;
    d.log_user = &rl;
    vkprof_context ctx;
    CHECK(vkprof_create(&d, &ctx) == VKPROF_OK);
    for (int step = 0; step < 9; step++) {
        vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_ATTENTION);
        vkprof_span_end(ctx, &s);
        s = vkprof_span_begin(ctx, VKPROF_BUCKET_ATTENTION);
        vkprof_span_end(ctx, &s);
        vkprof_step(ctx);
    }
    CHECK(rl.reports == 2);
    CHECK(strstr(rl.last, "steps 5-8:") != NULL);
    CHECK(strstr(rl.last, "not a serving figure") != NULL);
    /* 2 calls per token in the window */
    CHECK(strstr(rl.last, "attention") != NULL && strstr(rl.last, "2.00") != NULL);
    CHECK(vkprof_step_count(ctx) == 9);
    vkprof_destroy(ctx);
}

int main(void)
{
    tl_init();
    RUN(test_report_format);
    RUN(test_report_every);
    RUN(test_span_levels);
    return tl_finish();
}
