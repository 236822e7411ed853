/* Lost GPU samples reach every exporter (issue 8, one accounting): a ring too
 * small for a token's scopes loses samples as "ring full"; the trace metadata
 * and the snapshot JSON count them by reason, the per-token report says so,
 * and `vkprof report` (text and SVG) warns on its first line. A run that
 * loses nothing carries no warning anywhere. Lavapipe, validation on: any
 * validation message fails the test. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* the report library (tools/report) when the tools are built */
#if defined(__has_include)
#if __has_include("trace_reader.h")
#include "trace_reader.h"
#define HAVE_REPORT 1
#endif
#endif

static th_gpu g;
static vku_busy busy;
static char dir[] = "/tmp/vkprof-lost-XXXXXX";

typedef struct logs {
    th_log log;
    int reports;
    char report[4096]; /* the last per-token report */
} logs;
static logs logbuf;

static void on_log(void *user, vkprof_log_level level, vkprof_result code, const char *msg)
{
    logs *l = user;
    if (level == VKPROF_LOG_REPORT) {
        l->reports++;
        snprintf(l->report, sizeof l->report, "%s", msg);
        return;
    }
    th_log_fn(&l->log, level, code, msg);
}

static vkprof_context make_ring(uint32_t queries)
{
    vkprof_context_desc d = th_desc(&g, NULL, false);
    d.enable = VKPROF_ENABLE_ON;
    d.timing_mode = VKPROF_TIMING_RING;
    d.ring_queries = queries;
    d.host_level = VKPROF_HOST_ALL;
    d.report_every = 1; /* a per-token report at every step */
    d.log = on_log;
    d.log_user = &logbuf;
    return th_ctx(&d);
}

/* One token of `n` scopes in one command buffer, submitted once, collected,
 * the step counted, and the trace written to `path`. */
static void run_token(vkprof_context ctx, int n, const char *path)
{
    CHECK(vkprof_trace_begin(ctx, 4096) == VKPROF_OK);
    CHECK_VK(vku_begin(&g.dev));
    for (int i = 0; i < n; i++) {
        if (i) {
            vku_compute_barrier(g.dev.cmd);
        }
        CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        vku_busy_record(&g.dev, &busy, g.dev.cmd, 20);
        CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
    }
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    vkprof_step(ctx);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
}

static int64_t num(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

/* The accounting of an exporter's object: by reason, the sum, the balance. */
static void check_accounting(const cJSON *o, int64_t samples, int64_t collected, int64_t ring_full)
{
    CHECK(cJSON_IsObject(o));
    const cJSON *lost = cJSON_GetObjectItemCaseSensitive(o, "lost");
    CHECK(cJSON_IsObject(lost));
    CHECK_EQ_U64(num(lost, "ring_full"), ring_full);
    int64_t sum = 0;
    static const char *const why[] = {
        "ring_full", "overwritten", "never_submitted", "reset", "misuse", "backwards", "stale"};
    for (size_t i = 0; i < sizeof why / sizeof why[0]; i++) {
        CHECK(num(lost, why[i]) >= 0);
        sum += num(lost, why[i]);
    }
    CHECK_EQ_U64(num(o, "scopes_dropped"), sum);
    CHECK_EQ_U64(num(o, "samples"), samples);
    CHECK_EQ_U64(num(o, "scopes_collected"), collected);
    CHECK_EQ_U64(num(o, "scopes_pending"), 0);
    CHECK_EQ_U64(num(o, "samples"),
                 num(o, "scopes_collected") + num(o, "scopes_dropped") + num(o, "scopes_pending"));
    CHECK(num(o, "scopes_recorded") >= 0);
    CHECK(num(o, "submissions") >= 0); /* present */
}

/* (a) the trace metadata and the snapshot JSON */
static void check_metadata(vkprof_context ctx, const char *path, int64_t samples, int64_t collected,
                           int64_t ring_full)
{
    char *text = th_read_file(path);
    CHECK(text != NULL);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    CHECK(root != NULL);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    const cJSON *samp = cJSON_GetObjectItemCaseSensitive(meta, "gpu_sampling");
    check_accounting(samp, samples, collected, ring_full);
    /* the old readers' fields stay */
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(samp, "mode");
    CHECK(cJSON_IsString(mode) && strcmp(mode->valuestring, "ring") == 0);
    CHECK_EQ_U64(num(samp, "every_n_steps"), 1);
    CHECK_EQ_U64(num(samp, "timed_steps"), 1);
    CHECK_EQ_U64(num(meta, "gpu_scopes"), collected); /* what was collected is in the trace */
    cJSON_Delete(root);

    size_t need = 0;
    vkprof_snapshot_json(ctx, NULL, 0, &need);
    char *buf = malloc(need);
    CHECK(buf != NULL && vkprof_snapshot_json(ctx, buf, need, &need) == VKPROF_OK);
    root = buf ? cJSON_Parse(buf) : NULL;
    free(buf);
    CHECK(root != NULL);
    check_accounting(cJSON_GetObjectItemCaseSensitive(root, "timing"), samples, collected,
                     ring_full);
    cJSON_Delete(root);
}

#ifdef HAVE_REPORT
/* (b) `vkprof report` on the file: the whole text and the SVG */
static char *report_text(const char *path, int svg)
{
    char err[256];
    rpt_summary *s = NULL;
    if (rpt_read_file(path, 0, &s, err, sizeof err) != 0) {
        fprintf(stderr, "cannot read %s: %s\n", path, err);
        CHECK(!"the trace reads back");
        return NULL;
    }
    FILE *f = tmpfile();
    CHECK(f != NULL);
    char *out = NULL;
    if (f != NULL) {
        CHECK((svg ? rpt_svg(s, "t", f) : rpt_print(s, path, f)) == 0);
        long n = ftell(f);
        out = n >= 0 ? malloc((size_t)n + 1) : NULL;
        rewind(f);
        if (out != NULL) {
            out[fread(out, 1, (size_t)n, f)] = '\0';
        }
        fclose(f);
    }
    rpt_free(s);
    CHECK(out != NULL);
    return out;
}

/* The reader on hand-written metadata: the new fields are optional (older
 * traces read), typed, duplicate-free; the warning names every reason. */
static rpt_summary *parse(const char *meta, char *err, size_t size)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "{\"traceEvents\":[],\"metadata\":{\"gpu_sampling\":%s}}", meta);
    rpt_summary *s = NULL;
    err[0] = '\0';
    if (rpt_parse(buf, strlen(buf), &s, err, size) != 0) {
        return NULL;
    }
    return s;
}

static void expect_warning(const char *meta, const char *want)
{
    char err[256], warn[512];
    rpt_summary *s = parse(meta, err, sizeof err);
    CHECK(s != NULL);
    if (s == NULL) {
        fprintf(stderr, "  %s: %s\n", meta, err);
        return;
    }
    size_t n = rpt_loss_warning(s, warn, sizeof warn);
    CHECK(n == strlen(warn) && strcmp(warn, want) == 0);
    if (strcmp(warn, want) != 0) {
        fprintf(stderr, "  got  '%s'\n  want '%s'\n", warn, want);
    }
    /* a short buffer: cut, terminated, the length still the whole line */
    char small[12];
    CHECK(rpt_loss_warning(s, small, sizeof small) == n &&
          strlen(small) == (n < sizeof small ? n : sizeof small - 1));
    rpt_free(s);
}

static void expect_error(const char *meta, const char *want)
{
    char err[256];
    rpt_summary *s = parse(meta, err, sizeof err);
    CHECK(s == NULL && strstr(err, want) != NULL);
    if (s != NULL || strstr(err, want) == NULL) {
        fprintf(stderr, "  %s: got '%s', want '%s'\n", meta, err, want);
    }
    rpt_free(s);
}

static void test_reader_fields(void)
{
    const char *tail = "; the GPU split below covers the rest only";
    char want[256];
    expect_warning("{\"mode\":\"2slot\",\"every_n_steps\":1}", ""); /* older: no counts */
    expect_warning("{\"scopes_dropped\":0,\"samples\":5,\"lost\":{\"ring_full\":0}}", "");
    snprintf(want, sizeof want, "WARNING: 3 GPU samples lost%s", tail); /* older: dropped only */
    expect_warning("{\"mode\":\"ring\",\"scopes_dropped\":3}", want);
    snprintf(want, sizeof want,
             "WARNING: 4 of 10 GPU samples lost (ring full 2, never submitted 1, misuse 1)%s",
             tail);
    expect_warning("{\"samples\":10,\"scopes_collected\":6,\"scopes_dropped\":4,"
                   "\"scopes_pending\":0,\"lost\":{\"ring_full\":2,\"overwritten\":0,"
                   "\"never_submitted\":1,\"reset\":0,\"misuse\":1}}",
                   want);
    snprintf(want, sizeof want, "WARNING: 2 GPU samples lost (overwritten 1, reset 1)%s", tail);
    expect_warning("{\"lost\":{\"overwritten\":1,\"reset\":1}}", want);
    expect_error("{\"lost\":3}", "metadata.gpu_sampling.lost is not an object");
    expect_error("{\"samples\":-1}", "metadata.gpu_sampling.samples is not a non-negative integer");
    expect_error("{\"scopes_pending\":1.5}", "metadata.gpu_sampling.scopes_pending is not a");
    expect_error("{\"lost\":{\"reset\":\"x\"}}",
                 "metadata.gpu_sampling.lost.reset is not a non-negative integer");
    expect_error("{\"samples\":1,\"samples\":2}",
                 "metadata.gpu_sampling has the key \"samples\" twice");
    expect_error("{\"lost\":{\"misuse\":1,\"misuse\":1}}",
                 "metadata.gpu_sampling.lost has the key \"misuse\" twice");
    expect_error("{\"lost\":{},\"lost\":{}}", "metadata.gpu_sampling has the key \"lost\" twice");
    /* counts that do not add up are said, not hidden */
    char err[256];
    rpt_summary *s = parse("{\"samples\":9,\"scopes_collected\":1,\"scopes_dropped\":5,"
                           "\"scopes_pending\":2,\"lost\":{\"ring_full\":3}}",
                           err, sizeof err);
    CHECK(s != NULL && s->samples_lost_mismatch && s->samples_unbalanced);
    rpt_free(s);
}
#endif

/* 20 scopes into a ring of 8 queries: 4 scopes fill it, 16 find no slot. */
static void test_ring_full(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/lossy.json", dir);
    vkprof_context ctx = make_ring(8);
    logbuf.reports = 0;
    run_token(ctx, 20, path);
    vkprof_timing_stats ts;
    CHECK(vkprof_get_timing_stats(ctx, &ts) == VKPROF_OK);
    CHECK_EQ_U64(ts.lost_ring_full, 16);
    CHECK_EQ_U64(ts.samples, ts.scopes_collected + ts.scopes_dropped + ts.scopes_pending);
    check_metadata(ctx, path, 20, 4, 16);

    /* the per-token report: the host table as before, then the loss line */
    CHECK(logbuf.reports == 1);
    const char *want = "GPU samples lost so far: 16 of 20 (ring full 16); GPU phase figures "
                       "cover the rest only\n";
    const char *at = strstr(logbuf.report, "GPU samples lost");
    CHECK(at != NULL && strcmp(at, want) == 0);
    CHECK(strncmp(logbuf.report, "vkprof host profile, steps 1-1:", 31) == 0);
    printf("  per-token report: %s", at != NULL ? at : "(no loss line)\n");

#ifdef HAVE_REPORT
    const char *first = "WARNING: 16 of 20 GPU samples lost (ring full 16); the GPU split below "
                        "covers the rest only\n";
    char *text = report_text(path, 0);
    if (text != NULL) {
        CHECK(strncmp(text, first, strlen(first)) == 0);
        CHECK(strncmp(text + strlen(first), "vkprof report: ", 15) == 0); /* then the header */
        CHECK(strstr(text, "\n  gpu samples   20 (4 collected, 16 lost, 0 pending, ") != NULL);
        const char *nl = strchr(text, '\n');
        printf("  report, first line: %.*s\n", nl ? (int)(nl - text) : 0, text);
        if (strncmp(text, first, strlen(first)) != 0) {
            fprintf(stderr, "report:\n%s", text);
        }
    }
    free(text);
    char *svg = report_text(path, 1);
    if (svg != NULL) {
        const char *w = strstr(svg, "class=\"warn\">WARNING: 16 of 20 GPU samples lost (ring full "
                                    "16); the GPU split below covers the rest only</text>");
        const char *title = strstr(svg, "class=\"h1\">vkprof report");
        CHECK(w != NULL && title != NULL && w < title); /* the top line, above the title */
    }
    free(svg);
#endif
    vkprof_destroy(ctx);
}

/* 5 scopes into the default ring: nothing lost, no warning anywhere. */
static void test_no_loss(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/clean.json", dir);
    vkprof_context ctx = make_ring(0);
    logbuf.reports = 0;
    run_token(ctx, 5, path);
    check_metadata(ctx, path, 5, 5, 0);
    CHECK(logbuf.reports == 1);
    CHECK(strstr(logbuf.report, "lost") == NULL);
#ifdef HAVE_REPORT
    char *text = report_text(path, 0);
    if (text != NULL) {
        CHECK(strncmp(text, "vkprof report: ", 15) == 0);
        CHECK(strstr(text, "WARNING") == NULL);
        CHECK(strstr(text, "\n  gpu samples   5 (5 collected, 0 lost, 0 pending, ") != NULL);
    }
    free(text);
    char *svg = report_text(path, 1);
    if (svg != NULL) {
        CHECK(strstr(svg, "WARNING") == NULL);
        CHECK(strstr(svg, "<text x=\"16\" y=\"28\" class=\"h1\">vkprof report") != NULL);
    }
    free(svg);
#endif
    vkprof_destroy(ctx);
}

int main(void)
{
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    th_gpu_init(&g);
    th_busy_init(&g, &busy, 4096);
    logbuf.log.quiet = 1;
#ifndef HAVE_REPORT
    printf("note: tools/report is not built: the report checks are skipped\n");
#endif
#ifdef HAVE_REPORT
    RUN(test_reader_fields);
#endif
    RUN(test_ring_full);
    RUN(test_no_loss);
    CHECK(logbuf.log.errors == 0);
    vku_busy_destroy(&g.dev, &busy);
    th_gpu_finish(&g);
    const char *names[] = {"lossy.json", "clean.json"};
    for (size_t i = 0; i < 2; i++) {
        char path[300];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
    return th_done();
}
