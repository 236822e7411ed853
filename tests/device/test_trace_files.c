/* Where a trace goes (issue 10, items 1-5 and 12), on a real device with
 * validation on: symlinks are followed, devices and FIFOs are written in
 * place, directories are refused, the umask is never touched, two contexts on
 * one VKPROF_TRACE each keep their trace, a full disk is ENOSPC after one
 * write, a level put in VKPROF_TRACE is warned about, and a context's trace
 * names only its own threads. The tools' output files use the same writer.
 *
 * Linked with -Wl,--wrap=umask,--wrap=write: every umask() and write() call of
 * the library is counted here (the test itself calls __real_*). */
#define _GNU_SOURCE /* mknod's makedev, pthread */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "outfile.h"

#include "export/trace_format.h"

mode_t __real_umask(mode_t mask);
mode_t __wrap_umask(mode_t mask);
ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n);

static _Atomic int g_umask_calls;
static _Atomic int g_write_calls;

mode_t __wrap_umask(mode_t mask)
{
    atomic_fetch_add(&g_umask_calls, 1);
    return __real_umask(mask);
}

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
    atomic_fetch_add(&g_write_calls, 1);
    return __real_write(fd, buf, n);
}

static th_gpu g;
static th_log logbuf;
static char dir[256];
/* our own device nodes where we may make them (root), else the system's */
static char full_dev[300] = "/dev/full", null_dev[300] = "/dev/null";

static vkprof_context make_ctx(void)
{
    vkprof_context_desc d = th_desc(&g, &logbuf, false);
    d.enable = VKPROF_ENABLE_ON;
    d.host_level = VKPROF_HOST_ALL;
    d.report_every = UINT32_MAX;
    return th_ctx(&d);
}

static void spans(vkprof_context ctx, int n)
{
    for (int i = 0; i < n; i++) {
        vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_NORM);
        vkprof_span_end(ctx, &s);
    }
}

static vkprof_context traced_ctx(int n)
{
    vkprof_context ctx = make_ctx();
    CHECK(vkprof_trace_begin(ctx, (uint32_t)n + 64) == VKPROF_OK);
    spans(ctx, n);
    return ctx;
}

static char *at(const char *name)
{
    static char buf[4][512];
    static int k;
    char *p = buf[k++ % 4];
    snprintf(p, sizeof buf[0], "%s/%s", dir, name);
    return p;
}

/* host_spans of a trace file, or -1 when it is not a valid trace */
static int64_t spans_in(const char *path)
{
    char *text = th_read_file(path);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "host_spans");
    int64_t n = cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
    cJSON_Delete(root);
    return n;
}

static int tmp_files(const char *folder)
{
    DIR *d = opendir(folder);
    int n = 0;
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL) {
        n += strstr(de->d_name, ".tmp") != NULL;
    }
    if (d) {
        closedir(d);
    }
    return n;
}

static bool is_link(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0 && S_ISLNK(st.st_mode);
}

static mode_t kind_of(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0 ? (st.st_mode & S_IFMT) : 0;
}

/* ---- item 1: symlinks are followed ------------------------------------ */

static void test_symlinks(void)
{
    mkdir(at("real"), 0755);
    CHECK(symlink("real/out.json", at("link.json")) == 0);   /* relative */
    CHECK(symlink(at("link.json"), at("chain.json")) == 0);  /* absolute, to a link */
    CHECK(symlink("real/new.json", at("dangle.json")) == 0); /* target missing */
    FILE *f = fopen(at("real/out.json"), "w");
    fputs("old", f);
    fclose(f);

    vkprof_context ctx = traced_ctx(10);
    CHECK(vkprof_trace_write(ctx, at("chain.json")) == VKPROF_OK);
    CHECK(is_link(at("chain.json")) && is_link(at("link.json")));
    CHECK(kind_of(at("real/out.json")) == S_IFREG);
    CHECK(spans_in(at("real/out.json")) == 10);

    CHECK(vkprof_trace_write(ctx, at("dangle.json")) == VKPROF_OK);
    CHECK(is_link(at("dangle.json")));
    CHECK(spans_in(at("real/new.json")) == 10);
    CHECK(spans_in(at("dangle.json")) == 10); /* read through the link */

    /* a loop of links is an error, not a hang; the links stay */
    CHECK(symlink("loop-b", at("loop-a")) == 0);
    CHECK(symlink("loop-a", at("loop-b")) == 0);
    logbuf.errors = 0;
    CHECK(vkprof_trace_write(ctx, at("loop-a")) == VKPROF_ERROR_IO);
    CHECK(logbuf.errors == 1);
    CHECK(is_link(at("loop-a")) && is_link(at("loop-b")));
    CHECK(tmp_files(dir) == 0 && tmp_files(at("real")) == 0);
    vkprof_destroy(ctx);
}

/* ---- items 1 and 4: devices are written in place; a full one is ENOSPC --- */

static void test_devices(void)
{
    const char *full = full_dev, *null = null_dev;
    printf("  devices: %s, %s\n", full, null);
    /* a trace of several MiB: many buffers' worth of JSON */
    vkprof_context ctx = traced_ctx(100000);
    logbuf.errors = 0;
    atomic_store(&g_write_calls, 0);
    CHECK(vkprof_trace_write(ctx, full) == VKPROF_ERROR_IO);
    int calls = atomic_load(&g_write_calls);
    CHECK_EQ_U64(calls, 1); /* stopped at the first failed write */
    CHECK(logbuf.errors == 1);
    CHECK(strstr(logbuf.last, strerror(ENOSPC)) != NULL);
    printf("  %s: %s (%d write call)\n", full, logbuf.last, calls);
    CHECK(kind_of(full) == S_IFCHR);

    atomic_store(&g_write_calls, 0);
    CHECK(vkprof_trace_write(ctx, null) == VKPROF_OK);
    CHECK(atomic_load(&g_write_calls) > 1);
    CHECK(kind_of(null) == S_IFCHR);
    CHECK(tmp_files(dir) == 0 && tmp_files("/dev") == 0);

    /* through VKPROF_TRACE, as a user would */
    setenv("VKPROF_TRACE", null, 1);
    vkprof_context c2 = make_ctx();
    vkprof_context c3 = make_ctx(); /* a stream: no per-context suffix */
    unsetenv("VKPROF_TRACE");
    spans(c2, 3);
    logbuf.errors = 0;
    vkprof_destroy(c2);
    vkprof_destroy(c3);
    CHECK(logbuf.errors == 0);
    CHECK(kind_of(null) == S_IFCHR);
    vkprof_destroy(ctx);
}

/* ---- item 1: a FIFO is written in place; without a reader, an error ---- */

typedef struct reader {
    int fd;
    _Atomic int stop;
    char *data;
    size_t len, cap;
} reader;

static void *read_fifo(void *arg)
{
    reader *r = arg;
    for (;;) {
        if (r->len + 65536 > r->cap) {
            r->cap = r->cap * 2 + 65536;
            r->data = realloc(r->data, r->cap + 1);
        }
        ssize_t n = read(r->fd, r->data + r->len, r->cap - r->len);
        if (n > 0) {
            r->len += (size_t)n;
            continue;
        }
        if (n == 0 && atomic_load(&r->stop)) {
            break; /* the writer closed, and the test says it is done */
        }
        struct pollfd p = {r->fd, POLLIN, 0};
        poll(&p, 1, 5);
    }
    r->data[r->len] = '\0';
    return NULL;
}

static void test_fifo(void)
{
    const char *fifo = at("trace.fifo");
    CHECK(mkfifo(fifo, 0644) == 0);
    vkprof_context ctx = traced_ctx(20000); /* more than a pipe buffer */

    /* no reader: a clear error at once, never a hang */
    logbuf.errors = 0;
    CHECK(vkprof_trace_write(ctx, fifo) == VKPROF_ERROR_IO);
    CHECK(logbuf.errors == 1 && strstr(logbuf.last, "FIFO") != NULL);
    CHECK(kind_of(fifo) == S_IFIFO);

    reader r = {.fd = open(fifo, O_RDONLY | O_NONBLOCK)};
    CHECK(r.fd >= 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, read_fifo, &r) == 0);
    CHECK(vkprof_trace_write(ctx, fifo) == VKPROF_OK);
    atomic_store(&r.stop, 1);
    pthread_join(t, NULL);
    close(r.fd);
    CHECK(kind_of(fifo) == S_IFIFO);
    cJSON *root = cJSON_Parse(r.data);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "host_spans");
    CHECK(cJSON_IsNumber(v) && v->valuedouble == 20000);
    printf("  FIFO: %zu bytes read in place\n", r.len);
    cJSON_Delete(root);
    free(r.data);
    CHECK(tmp_files(dir) == 0);
    vkprof_destroy(ctx);
}

/* ---- item 1: a directory is refused ------------------------------------ */

static void test_directory(void)
{
    const char *d = at("a-folder");
    CHECK(mkdir(d, 0755) == 0);
    vkprof_context ctx = traced_ctx(5);
    logbuf.errors = 0;
    CHECK(vkprof_trace_write(ctx, d) == VKPROF_ERROR_IO);
    CHECK(logbuf.errors == 1 && strstr(logbuf.last, "directory") != NULL);
    CHECK(kind_of(d) == S_IFDIR);
    CHECK(tmp_files(dir) == 0 && tmp_files(d) == 0);
    vkprof_destroy(ctx);
}

/* ---- item 2: the umask is applied, never changed ----------------------- */

typedef struct creator {
    _Atomic int stop;
    int files, bad;
} creator;

static void *create_files(void *arg)
{
    creator *c = arg;
    char p[600];
    snprintf(p, sizeof p, "%s/created", dir);
    while (!atomic_load(&c->stop)) {
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0) {
            c->files++;
            c->bad += (st.st_mode & 0022) != 0; /* umask 022 lost */
        }
        if (fd >= 0) {
            close(fd);
        }
        unlink(p);
    }
    return NULL;
}

static void test_umask(void)
{
    vkprof_context ctx = traced_ctx(50);
    mode_t old = __real_umask(027);
    atomic_store(&g_umask_calls, 0);
    CHECK(vkprof_trace_write(ctx, at("mask027.json")) == VKPROF_OK);
    __real_umask(077);
    CHECK(vkprof_trace_write(ctx, at("mask077.json")) == VKPROF_OK);
    struct stat st;
    CHECK(stat(at("mask027.json"), &st) == 0 && (st.st_mode & 0777) == 0640);
    CHECK(stat(at("mask077.json"), &st) == 0 && (st.st_mode & 0777) == 0600);

    /* files created by another thread meanwhile keep the process's umask */
    __real_umask(022);
    creator c = {0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, create_files, &c) == 0);
    for (int i = 0; i < 40; i++) {
        CHECK(vkprof_trace_write(ctx, at("stress.json")) == VKPROF_OK);
    }
    atomic_store(&c.stop, 1);
    pthread_join(t, NULL);
    printf("  umask: %d files made beside 40 trace writes, %d with a lost umask\n", c.files, c.bad);
    CHECK(c.bad == 0);
    CHECK_EQ_U64(atomic_load(&g_umask_calls), 0);
    __real_umask(old);
    vkprof_destroy(ctx);
}

/* ---- item 3: two contexts on one VKPROF_TRACE ------------------------- */

static void test_two_contexts(void)
{
    const char *path = at("multi.json");
    setenv("VKPROF_TRACE", path, 1);
    logbuf.warnings = 0;
    vkprof_context a = make_ctx();
    CHECK(logbuf.warnings == 0);
    vkprof_context b = make_ctx();
    CHECK(logbuf.warnings == 1 && strstr(logbuf.last, "multi.ctx2.json") != NULL);
    unsetenv("VKPROF_TRACE");
    spans(a, 3);
    spans(b, 5);
    vkprof_destroy(b); /* the second one first: nothing may be overwritten */
    vkprof_destroy(a);
    CHECK(spans_in(path) == 3);
    CHECK(spans_in(at("multi.ctx2.json")) == 5);

    /* a later context never takes a number again, and "./" names one file */
    char rel[600];
    char cwd[512];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(chdir(dir) == 0);
    snprintf(rel, sizeof rel, "./multi.json");
    setenv("VKPROF_TRACE", rel, 1);
    vkprof_context c = make_ctx();
    unsetenv("VKPROF_TRACE");
    spans(c, 7);
    vkprof_destroy(c);
    CHECK(chdir(cwd) == 0);
    CHECK(spans_in(path) == 3);
    CHECK(spans_in(at("multi.ctx3.json")) == 7);

    /* an explicit trace_path counts too */
    vkprof_context_desc d = vku_vkprof_desc(&g.inst, &g.dev);
    d.host_level = VKPROF_HOST_ALL;
    d.report_every = UINT32_MAX;
    d.log = th_log_fn;
    d.log_user = &logbuf;
    d.trace_path = at("noext");
    vkprof_context e = NULL, f = NULL;
    CHECK(vkprof_create(&d, &e) == VKPROF_OK);
    CHECK(vkprof_create(&d, &f) == VKPROF_OK);
    spans(e, 1);
    spans(f, 2);
    vkprof_destroy(e);
    vkprof_destroy(f);
    CHECK(spans_in(at("noext")) == 1);
    CHECK(spans_in(at("noext.ctx2")) == 2);
}

/* ---- item 5: a level in VKPROF_TRACE ----------------------------------- */

static void test_flag_value(void)
{
    char cwd[512];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(chdir(dir) == 0);
    static const char *const values[] = {"2", "1", "on", "TRUE", "0"};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        setenv("VKPROF_TRACE", values[i], 1);
        logbuf.warnings = 0;
        vkprof_context ctx = make_ctx();
        CHECK(logbuf.warnings == 1 && strstr(logbuf.last, "looks like a level or a flag") != NULL);
        vkprof_destroy(ctx);
        struct stat st;
        CHECK(stat(values[i], &st) == 0); /* still written: it may be meant */
    }
    /* real relative paths: no warning */
    static const char *const paths[] = {"trace.json", "run-2", "out/../t2.json", "on.json"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        if (strchr(paths[i], '/') != NULL) {
            mkdir("out", 0755);
        }
        setenv("VKPROF_TRACE", paths[i], 1);
        logbuf.warnings = 0;
        vkprof_context ctx = make_ctx();
        CHECK(logbuf.warnings == 0);
        spans(ctx, 2);
        vkprof_destroy(ctx);
        CHECK(spans_in(paths[i]) == 2);
    }
    unsetenv("VKPROF_TRACE");
    CHECK(chdir(cwd) == 0);
}

/* ---- item 12: a context's trace names only its threads ----------------- */

typedef struct worker_arg {
    vkprof_context ctx;
    const char *name;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *w = p;
    vkprof_set_thread_name(w->ctx, w->name);
    spans(w->ctx, 4);
    return NULL;
}

static bool names_thread(const char *path, const char *name)
{
    char *text = th_read_file(path);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    bool found = false;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        const cJSON *an = cJSON_GetObjectItemCaseSensitive(args, "name");
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(e, "pid");
        if (cJSON_IsString(n) && strcmp(n->valuestring, "thread_name") == 0 && cJSON_IsString(an) &&
            strcmp(an->valuestring, name) == 0) {
            /* a host thread: on the host's track (trace_format.h) */
            CHECK(cJSON_IsNumber(pid) && pid->valuedouble == VKPROF_TF_PID_HOST);
            found = true;
        }
    }
    /* the format version of trace_format.h, for the reader */
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "metadata"), "trace_format");
    CHECK(cJSON_IsNumber(fmt) && fmt->valuedouble == VKPROF_TF_VERSION);
    cJSON_Delete(root);
    return found;
}

static void test_thread_names(void)
{
    vkprof_context a = traced_ctx(0), b = traced_ctx(0);
    worker_arg wa = {a, "worker-a"}, wb = {b, "worker-b"};
    pthread_t ta, tb;
    CHECK(pthread_create(&ta, NULL, worker, &wa) == 0);
    CHECK(pthread_join(ta, NULL) == 0);
    CHECK(pthread_create(&tb, NULL, worker, &wb) == 0);
    CHECK(pthread_join(tb, NULL) == 0);
    vkprof_set_thread_name(a, "main-a");
    spans(a, 1);
    CHECK(vkprof_trace_write(a, at("threads-a.json")) == VKPROF_OK);
    CHECK(vkprof_trace_write(b, at("threads-b.json")) == VKPROF_OK);
    CHECK(names_thread(at("threads-a.json"), "worker-a"));
    CHECK(names_thread(at("threads-a.json"), "main-a"));
    CHECK(!names_thread(at("threads-a.json"), "worker-b"));
    CHECK(names_thread(at("threads-b.json"), "worker-b"));
    CHECK(!names_thread(at("threads-b.json"), "worker-a"));
    CHECK(!names_thread(at("threads-b.json"), "main-a"));
    vkprof_destroy(a);
    vkprof_destroy(b);
}

/* ---- the tools' output files: the same writer -------------------------- */

static void test_tool_outfile(void)
{
    mkdir(at("tool"), 0755);
    CHECK(symlink("tool/report.json", at("report-link.json")) == 0);
    outfile o;
    CHECK(outfile_open(&o, "test", at("report-link.json")) == 0);
    fprintf(o.f, "{\"x\":1}\n");
    CHECK(outfile_commit(&o) == 0);
    CHECK(is_link(at("report-link.json")));
    char *text = th_read_file(at("tool/report.json"));
    CHECK(text != NULL && strcmp(text, "{\"x\":1}\n") == 0);
    free(text);

    /* a full device: the tool says ENOSPC */
    CHECK(outfile_open(&o, "test", full_dev) == 0);
    for (int i = 0; i < 100000; i++) {
        fprintf(o.f, "{\"line\":%d}\n", i);
    }
    CHECK(outfile_commit(&o) == 1);
    CHECK(kind_of(full_dev) == S_IFCHR);
    CHECK(outfile_open(&o, "test", at("tool")) == 1); /* a directory */
    CHECK(tmp_files(at("tool")) == 0 && tmp_files(dir) == 0);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/vkprof-files-XXXXXX");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    char node[300];
    snprintf(node, sizeof node, "%s/full", dir);
    if (mknod(node, S_IFCHR | 0666, makedev(1, 7)) == 0) {
        memcpy(full_dev, node, sizeof node);
    }
    snprintf(node, sizeof node, "%s/null", dir);
    if (mknod(node, S_IFCHR | 0666, makedev(1, 3)) == 0) {
        memcpy(null_dev, node, sizeof node);
    }
    th_gpu_init(&g);
    logbuf.quiet = 1;
    RUN(test_symlinks);
    RUN(test_devices);
    RUN(test_fifo);
    RUN(test_directory);
    RUN(test_umask);
    RUN(test_two_contexts);
    RUN(test_flag_value);
    RUN(test_thread_names);
    RUN(test_tool_outfile);
    th_gpu_finish(&g);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (th_failures == 0 && system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", dir);
    }
    return th_done();
}
