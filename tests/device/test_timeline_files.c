/* Writing the trace: atomically (a missing folder, a full disk and a
 * read-only folder leave the old file whole and no temporary behind), and
 * VKPROF_TRACE=path, written at flush and when the context is destroyed. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "timeline_common.h"

/* ---- atomic write ------------------------------------------------------ */

static int count_tmp_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL) {
        if (strstr(de->d_name, ".tmp") != NULL) {
            n++;
        }
    }
    if (d) {
        closedir(d);
    }
    return n;
}

static void test_atomic_write(void)
{
    vkprof_context ctx = make_ctx(false, false);
    CHECK(vkprof_trace_begin(ctx, 200000) == VKPROF_OK);
    for (int i = 0; i < 20000; i++) {
        vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_NORM);
        vkprof_span_end(ctx, &s);
    }
    char good[300];
    snprintf(good, sizeof good, "%s/keep.json", tmpdir);
    FILE *f = fopen(good, "w");
    fputs("{\"the\":\"old trace\"}", f);
    fclose(f);

    logbuf.errors = 0;
    /* a folder that does not exist */
    CHECK(vkprof_trace_write(ctx, "/nonexistent-vkprof-dir/t.json") == VKPROF_ERROR_IO);
    CHECK(logbuf.errors == 1 && strstr(logbuf.last, "/nonexistent-vkprof-dir/t.json") != NULL);

    /* a full disk: the file-size limit makes writes fail with EFBIG, as a
     * full file system fails them with ENOSPC */
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 64 * 1024;
    signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    vkprof_result r = vkprof_trace_write(ctx, good);
    setrlimit(RLIMIT_FSIZE, &old);
    CHECK(r == VKPROF_ERROR_IO);
    printf("  full disk: %s\n", logbuf.last);
    char *text = th_read_file(good);
    CHECK(text != NULL && strcmp(text, "{\"the\":\"old trace\"}") == 0);
    free(text);
    CHECK(count_tmp_files(tmpdir) == 0);

    /* a read-only folder (only meaningful when not root: root ignores modes) */
    if (geteuid() != 0) {
        char ro[300];
        snprintf(ro, sizeof ro, "%s/ro", tmpdir);
        mkdir(ro, 0755);
        char rofile[320];
        snprintf(rofile, sizeof rofile, "%s/t.json", ro);
        f = fopen(rofile, "w");
        fputs("old", f);
        fclose(f);
        chmod(ro, 0555);
        CHECK(vkprof_trace_write(ctx, rofile) == VKPROF_ERROR_IO);
        text = th_read_file(rofile);
        CHECK(text != NULL && strcmp(text, "old") == 0);
        free(text);
        chmod(ro, 0755);
    } else {
        /* as root, a read-only file system: /proc refuses new files */
        CHECK(vkprof_trace_write(ctx, "/proc/vkprof-trace.json") == VKPROF_ERROR_IO);
    }
    /* and it still writes once the disk has room */
    CHECK(vkprof_trace_write(ctx, good) == VKPROF_OK);
    cJSON *root = load_and_check(good);
    CHECK(meta_i64(root, "host_spans", NULL) == 20000);
    cJSON_Delete(root);
    vkprof_destroy(ctx);
}

/* VKPROF_TRACE=path: written when the context is destroyed */
static void test_env_trace(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/env.json", tmpdir);
    unlink(path);
    setenv("VKPROF_TRACE", path, 1);
    vkprof_context ctx = make_ctx(false, false);
    unsetenv("VKPROF_TRACE");
    CHECK(vkprof_tracing(ctx));
    vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_NORM);
    vkprof_span_end(ctx, &s);
    vkprof_step(ctx);
    CHECK(vkprof_trace_flush(ctx) == VKPROF_OK);
    vkprof_step(ctx);
    vkprof_destroy(ctx);
    cJSON *root = load_and_check(path);
    CHECK(root != NULL);
    CHECK(meta_i64(root, "steps", NULL) == 2);
    cJSON_Delete(root);
}

int main(void)
{
    tl_init();
    RUN(test_atomic_write);
    RUN(test_env_trace);
    return tl_finish();
}
