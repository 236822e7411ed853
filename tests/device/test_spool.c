/* Spools (desc.trace_spool, issue 24): a context's trace that outlives its
 * process, on lavapipe with validation on.
 *
 *   roundtrip    a ring context's spool opened in the same process: the same
 *                trace (every event, byte for byte after parsing) and the same
 *                figures as the live context; an opened spool times nothing
 *                and calls no Vulkan, whatever is called on it
 *   deaths       a child process (this program, --child) records, collects
 *                and dies: SIGKILL, abort, SIGSEGV, _exit, SIGTERM, exit;
 *                every scope collected before the end is in its spool, and
 *                the spans recorded after the last checkpoint too
 *   fork         the child of a fork writes its own copy, never the parent's
 *   keep_last    a wrapping store keeps the last events and says from when
 *   keep_first   a full store says until when
 *   set          two contexts in one trace, JSON and .pftrace
 *   damaged      truncated, altered and randomly damaged spools: an error or
 *                a trace, never a crash (also under ASan in test.sh)
 *   disk_full    a spool whose size cannot be reserved: the store stays in
 *                memory, the reason is kept, no file is left
 *   environment  VKPROF_ENV_IGNORE reads none of the library's variables */
#define _GNU_SOURCE
#include "timeline_common.h"
#include "sim.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace_reader.h"

static const char *g_self;

static bool g_sim_procs; /* the child that dies inside a collection */

static vkprof_context spool_ctx(th_gpu *gg, const char *spool, uint32_t capacity,
                                vkprof_trace_keep keep, const char *label)
{
    vkprof_context_desc d = th_desc(gg, &logbuf, g_sim_procs);
    d.enable = VKPROF_ENABLE_ON;
    d.host_level = VKPROF_HOST_ALL;
    d.report_every = UINT32_MAX;
    d.timing_mode = VKPROF_TIMING_RING;
    d.shared_boundaries = true;
    d.trace_spool = spool;
    d.trace_capacity = capacity;
    d.trace_keep = keep;
    d.trace_label = label;
    d.environment = VKPROF_ENV_IGNORE;
    return th_ctx(&d);
}

/* One step: a span around two GPU scopes in one buffer, submitted and
 * collected, an annotated span, the step. */
static void step_work(th_gpu *gg, vku_busy *bb, vkprof_context ctx, int step)
{
    vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_ATTENTION);
    VkCommandBuffer cmd = th_alloc_cmd(gg);
    th_begin_cmd(cmd);
    CHECK(vkprof_cmd_begin(ctx, cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
    vku_busy_record(&gg->dev, bb, cmd, 50);
    CHECK(vkprof_cmd_end(ctx, cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
    CHECK(vkprof_cmd_begin(ctx, cmd, VKPROF_PHASE_MLP_DOWN) == VKPROF_OK);
    vku_busy_record(&gg->dev, bb, cmd, 20);
    char groups[32];
    snprintf(groups, sizeof groups, "%d,1,1", 40 + step);
    const vkprof_arg args[1] = {{"groups", groups}};
    CHECK(vkprof_cmd_end_args(ctx, cmd, VKPROF_PHASE_MLP_DOWN, args, 1) == VKPROF_OK);
    CHECK_VK(vkEndCommandBuffer(cmd));
    th_submit_wait(gg, ctx, 1, &cmd);
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    CHECK(vkprof_cmd_release(ctx, cmd) == VKPROF_OK);
    vkFreeCommandBuffers(gg->dev.device, gg->dev.cmd_pool, 1, &cmd);
    vkprof_span_end(ctx, &s);
    vkprof_span m = vkprof_span_begin(ctx, VKPROF_BUCKET_MOE_ROUTER);
    uint32_t ex[2] = {3, (uint32_t)step};
    CHECK(vkprof_span_annotate_ids(&m, "experts", ex, 2));
    vkprof_span_end(ctx, &m);
    vkprof_step(ctx);
}

/* metadata.a (or metadata.a.b) of a detached metadata object, or -1 */
static int64_t mget(const cJSON *meta, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, a);
    if (b != NULL) {
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    }
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

/* The trace's events as cJSON (caller deletes), or NULL. */
static cJSON *events_of(const char *path, cJSON **meta)
{
    cJSON *root = load_and_check(path);
    if (root == NULL) {
        return NULL;
    }
    cJSON *ev = cJSON_DetachItemFromObjectCaseSensitive(root, "traceEvents");
    if (meta != NULL) {
        *meta = cJSON_DetachItemFromObjectCaseSensitive(root, "metadata");
    }
    cJSON_Delete(root);
    return ev;
}

static int count_events(const cJSON *ev, const char *cat)
{
    int n = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "cat");
        n += cJSON_IsString(c) && strcmp(c->valuestring, cat) == 0;
    }
    return n;
}

static void test_roundtrip(void)
{
    char spool[300], a[300], b[300];
    snprintf(spool, sizeof spool, "%s/rt.spool", tmpdir);
    snprintf(a, sizeof a, "%s/rt-live.json", tmpdir);
    snprintf(b, sizeof b, "%s/rt-opened.json", tmpdir);
    vkprof_context ctx = spool_ctx(&g, spool, 4096, VKPROF_TRACE_KEEP_FIRST, "round trip");
    vkprof_spool_info si;
    CHECK(vkprof_spool_status(ctx, &si) == VKPROF_OK);
    CHECK(si.state == VKPROF_SPOOL_OPEN && si.pid == (int64_t)getpid());
    CHECK(strcmp(si.label, "round trip") == 0);
    vkprof_set_thread_name(ctx, "spool \"main\"");
    for (int step = 0; step < 5; step++) {
        step_work(&g, &busy, ctx, step);
    }
    /* the live trace first (it takes a host clock point), then a checkpoint
     * that holds that point: the opened spool maps exactly as the live one */
    CHECK(vkprof_trace_write(ctx, a) == VKPROF_OK);
    CHECK(vkprof_spool_sync(ctx) == VKPROF_OK);
    vkprof_context off = NULL;
    char err[512] = "";
    CHECK(vkprof_spool_open(spool, &off, err, sizeof err) == VKPROF_OK);
    if (off == NULL) {
        fprintf(stderr, "open: %s\n", err);
        vkprof_destroy(ctx);
        return;
    }
    CHECK(vkprof_trace_write(off, b) == VKPROF_OK);
    cJSON *ma = NULL, *mb = NULL;
    cJSON *ea = events_of(a, &ma), *eb = events_of(b, &mb);
    CHECK(ea != NULL && eb != NULL && cJSON_Compare(ea, eb, true));
    CHECK(count_events(eb, "gpu") == 10 && count_events(eb, "host") == 10);
    /* the metadata alike, but for when its clocks were read */
    cJSON_DeleteItemFromObjectCaseSensitive(ma, "clock_anchor");
    cJSON_DeleteItemFromObjectCaseSensitive(mb, "clock_anchor");
    CHECK(ma != NULL && mb != NULL && cJSON_Compare(ma, mb, true));
    CHECK(mget(mb, "process", "pid") == (int64_t)getpid());
    cJSON_Delete(ea);
    cJSON_Delete(eb);
    cJSON_Delete(ma);
    cJSON_Delete(mb);
    /* the figures */
    vkprof_phase_stats pa[VKPROF_MAX_PHASES], pb[VKPROF_MAX_PHASES];
    uint32_t na = 0, nb = 0;
    CHECK(vkprof_snapshot(ctx, pa, VKPROF_MAX_PHASES, &na, NULL) == VKPROF_OK);
    CHECK(vkprof_snapshot(off, pb, VKPROF_MAX_PHASES, &nb, NULL) == VKPROF_OK);
    CHECK(na == nb && memcmp(pa, pb, na * sizeof pa[0]) == 0);
    vkprof_timing_stats ta = th_stats(ctx), tb = th_stats(off);
    CHECK(ta.samples == tb.samples && ta.scopes_collected == tb.scopes_collected &&
          tb.scopes_collected == 10 && ta.submissions == tb.submissions);
    vkprof_bucket_stats ba[8], bb[8];
    uint32_t cba = 0, cbb = 0;
    (void)vkprof_bucket_snapshot(ctx, ba, 8, &cba);
    (void)vkprof_bucket_snapshot(off, bb, 8, &cbb);
    CHECK(cba == cbb && ba[VKPROF_BUCKET_ATTENTION].calls == 5 &&
          bb[VKPROF_BUCKET_ATTENTION].calls == 5 &&
          ba[VKPROF_BUCKET_ATTENTION].total_ns == bb[VKPROF_BUCKET_ATTENTION].total_ns);
    size_t need = 0;
    CHECK(vkprof_snapshot_json(off, NULL, 0, &need) == VKPROF_ERROR_BUFFER_TOO_SMALL);
    /* an opened spool times nothing and calls no Vulkan */
    CHECK(!vkprof_active(off));
    CHECK(vkprof_cmd_begin(off, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_DISABLED);
    CHECK(vkprof_collect(off) == VKPROF_DISABLED);
    CHECK(vkprof_calibrate(off) == VKPROF_DISABLED);
    CHECK(vkprof_trace_begin(off, 0) == VKPROF_DISABLED);
    vkprof_set_active(off, true);
    CHECK(!vkprof_active(off));
    vkprof_span sp = vkprof_span_begin(off, VKPROF_BUCKET_ATTENTION);
    CHECK(sp.start_ns == 0);
    vkprof_step(off);
    CHECK(vkprof_step_count(off) == 5);
    uint64_t ns = 0;
    vkprof_calibration cal;
    CHECK(vkprof_get_calibration(off, &cal) == VKPROF_OK);
    CHECK(vkprof_device_to_host_ns(off, cal.anchor_ticks, &ns) == VKPROF_OK &&
          ns == cal.anchor_host_ns);
    CHECK(vkprof_spool_sync(off) == VKPROF_DISABLED);
    CHECK(vkprof_spool_status(off, &si) == VKPROF_OK && si.state == VKPROF_SPOOL_OPEN &&
          si.checkpoints >= 1);
    vkprof_destroy(off);
    /* destroy closes it */
    vkprof_destroy(ctx);
    CHECK(vkprof_spool_open(spool, &off, err, sizeof err) == VKPROF_OK);
    CHECK(vkprof_spool_status(off, &si) == VKPROF_OK && si.state == VKPROF_SPOOL_CLOSED &&
          si.closed_ns > 0);
    vkprof_destroy(off);
    /* a spool is never written over: a second context on the same path has none */
    vkprof_context again = spool_ctx(&g, spool, 4096, VKPROF_TRACE_KEEP_FIRST, "");
    CHECK(vkprof_spool_status(again, &si) == VKPROF_OK && si.state == VKPROF_SPOOL_NONE &&
          strstr(si.reason, "File exists") != NULL);
    vkprof_destroy(again);
}

/* ---- deaths: a child records, collects and dies ------------------------ */

#define CHILD_STEPS 4
#define CHILD_TAIL_SPANS 7

/* The last step of the child that dies in its collection: two buffers of
 * one scope each, submitted together; the collection folds and writes the
 * first, and the process is killed reading the second's results, before any
 * checkpoint counts the first. */
static void die_in_collect(th_gpu *gg, vku_busy *bb, vkprof_context ctx)
{
    VkCommandBuffer cmd[2];
    for (int i = 0; i < 2; i++) {
        cmd[i] = th_alloc_cmd(gg);
        th_begin_cmd(cmd[i]);
        CHECK(vkprof_cmd_begin(ctx, cmd[i], VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        vku_busy_record(&gg->dev, bb, cmd[i], 50);
        CHECK(vkprof_cmd_end(ctx, cmd[i], VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        CHECK_VK(vkEndCommandBuffer(cmd[i]));
    }
    th_submit_wait(gg, ctx, 2, cmd);
    g_sim.kill_at_results_call = g_sim.results_calls + 2;
    fflush(NULL);
    (void)vkprof_collect(ctx);
    fprintf(stderr, "die_in_collect: the collection read every buffer in one call\n");
    _exit(3);
}

static int child_main(const char *how, const char *spool)
{
    th_gpu cg;
    vku_busy cb;
    g_sim_procs = strcmp(how, "in_collect") == 0;
    th_gpu_init(&cg);
    th_busy_init(&cg, &cb, 4096);
    vkprof_context ctx = spool_ctx(&cg, spool, 4096, VKPROF_TRACE_KEEP_FIRST, how);
    for (int step = 0; step < CHILD_STEPS; step++) {
        step_work(&cg, &cb, ctx, step);
    }

    /* spans after the last checkpoint: in the file as they are written */
    for (int i = 0; i < CHILD_TAIL_SPANS; i++) {
        vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_NORM);
        vkprof_span_end(ctx, &s);
    }
    if (g_sim_procs) {
        die_in_collect(&cg, &cb, ctx);
    }
    fflush(NULL);
    if (strcmp(how, "sigkill") == 0) {
        raise(SIGKILL);
    } else if (strcmp(how, "abort") == 0) {
        abort();
    } else if (strcmp(how, "segv") == 0) {
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
    } else if (strcmp(how, "sigterm") == 0) {
        signal(SIGTERM, SIG_DFL);
        raise(SIGTERM);
    } else if (strcmp(how, "_exit") == 0) {
        _exit(0);
    }
    /* exit: a clean end (the context destroyed: the spool closed) */
    vkprof_destroy(ctx);
    vku_busy_destroy(&cg.dev, &cb);
    th_gpu_finish(&cg);
    return th_done();
}

static void test_deaths(void)
{
    static const char *const hows[] = {"sigkill", "abort", "segv", "_exit", "sigterm", "exit"};
    for (size_t k = 0; k < sizeof hows / sizeof hows[0]; k++) {
        char spool[300];
        snprintf(spool, sizeof spool, "%s/death-%s.spool", tmpdir, hows[k]);
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            execl(g_self, g_self, "--child", hows[k], spool, (char *)NULL);
            _exit(127);
        }
        int ws = 0;
        CHECK(pid > 0 && waitpid(pid, &ws, 0) == pid);
        vkprof_context off = NULL;
        char err[512] = "";
        vkprof_result r = vkprof_spool_open(spool, &off, err, sizeof err);
        CHECK(r == VKPROF_OK);
        if (r != VKPROF_OK) {
            fprintf(stderr, "%s: %s\n", hows[k], err);
            continue;
        }
        vkprof_spool_info si;
        CHECK(vkprof_spool_status(off, &si) == VKPROF_OK && si.pid == (int64_t)pid);
        const bool clean = strcmp(hows[k], "exit") == 0;
        CHECK(si.state == (clean ? VKPROF_SPOOL_CLOSED : VKPROF_SPOOL_OPEN));
        /* every scope collected before the end, and its figures */
        vkprof_timing_stats ts = th_stats(off);
        CHECK(ts.scopes_collected == 2 * CHILD_STEPS);
        CHECK(th_phase(off, VKPROF_PHASE_ATTENTION).count == CHILD_STEPS);
        char path[320];
        snprintf(path, sizeof path, "%s/death-%s.json", tmpdir, hows[k]);
        CHECK(vkprof_trace_write(off, path) == VKPROF_OK);
        cJSON *meta = NULL;
        cJSON *ev = events_of(path, &meta);
        CHECK(ev != NULL && count_events(ev, "gpu") == 2 * CHILD_STEPS);
        /* 2 spans a step, and the tail after the last checkpoint */
        CHECK(count_events(ev, "host") == 2 * CHILD_STEPS + CHILD_TAIL_SPANS);
        CHECK(mget(meta, "process", "pid") == (int64_t)pid);
        if (!clean) {
            CHECK(si.events_after_checkpoint >= CHILD_TAIL_SPANS);
        }
        cJSON_Delete(ev);
        cJSON_Delete(meta);
        vkprof_destroy(off);
    }
}

/* Killed inside a collection, after it wrote a scope's event and before the
 * checkpoint that would count it: the opened spool's counts, phase table and
 * bucket sums say what its events say (the events are the record). */
static void test_death_in_collect(void)
{
    char spool[300];
    snprintf(spool, sizeof spool, "%s/death-in-collect.spool", tmpdir);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execl(g_self, g_self, "--child", "in_collect", spool, (char *)NULL);
        _exit(127);
    }
    int ws = 0;
    CHECK(pid > 0 && waitpid(pid, &ws, 0) == pid);
    CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
    vkprof_context off = NULL;
    char err[512] = "";
    CHECK(vkprof_spool_open(spool, &off, err, sizeof err) == VKPROF_OK);
    if (off == NULL) {
        fprintf(stderr, "in_collect: %s\n", err);
        return;
    }
    vkprof_spool_info si;
    CHECK(vkprof_spool_status(off, &si) == VKPROF_OK);
    CHECK(si.events_after_checkpoint >= 1 + CHILD_TAIL_SPANS);
    char path[320];
    snprintf(path, sizeof path, "%s/death-in-collect.json", tmpdir);
    CHECK(vkprof_trace_write(off, path) == VKPROF_OK);
    cJSON *meta = NULL;
    cJSON *ev = events_of(path, &meta);
    const int gpu = ev != NULL ? count_events(ev, "gpu") : -1;
    /* the steps' scopes and the first buffer of the last submit; the
     * second's results were never read */
    CHECK(gpu == 2 * CHILD_STEPS + 1);
    vkprof_timing_stats ts = th_stats(off);
    CHECK(ts.scopes_collected == (uint64_t)gpu);
    /* the second buffer was recorded and submitted after the last
     * checkpoint and never collected: the spool knows nothing of it (the
     * layer's index counts it executed and timed, so its run report shows it
     * as not collected); the first is a sample, collected */
    CHECK(ts.samples == 2 * CHILD_STEPS + 1 && ts.scopes_pending == 0);
    CHECK(th_phase(off, VKPROF_PHASE_ATTENTION).count == CHILD_STEPS + 1);
    CHECK(th_phase(off, VKPROF_PHASE_MLP_DOWN).count == CHILD_STEPS);
    /* the bucket sums count every span event, the tail's too */
    vkprof_bucket_stats bs[VKPROF_MAX_BUCKETS];
    uint32_t nbs = 0;
    CHECK(vkprof_bucket_snapshot(off, bs, VKPROF_MAX_BUCKETS, &nbs) == VKPROF_OK);
    CHECK(nbs > VKPROF_BUCKET_NORM && bs[VKPROF_BUCKET_NORM].calls == CHILD_TAIL_SPANS);
    CHECK(nbs > VKPROF_BUCKET_ATTENTION && bs[VKPROF_BUCKET_ATTENTION].calls == CHILD_STEPS);
    CHECK(count_events(ev, "host") == 2 * CHILD_STEPS + CHILD_TAIL_SPANS);
    cJSON_Delete(ev);
    cJSON_Delete(meta);
    vkprof_destroy(off);
}

/* ---- fork: the child's writes stay its own ------------------------------- */

static void test_fork(void)
{
    char spool[300];
    snprintf(spool, sizeof spool, "%s/fork.spool", tmpdir);
    vkprof_context ctx = spool_ctx(&g, spool, 4096, VKPROF_TRACE_KEEP_FIRST, "parent");
    step_work(&g, &busy, ctx, 0);
    CHECK(vkprof_spool_sync(ctx) == VKPROF_OK);
    uint64_t before = 0;
    vkprof_trace_counts(ctx, &before, NULL);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        /* the child: its copy is detached; spans land in its own memory */
        vkprof_spool_info si;
        int bad = vkprof_spool_status(ctx, &si) != VKPROF_OK || si.state != VKPROF_SPOOL_DETACHED;
        for (int i = 0; i < 1000; i++) {
            vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_NORM);
            vkprof_span_end(ctx, &s);
        }
        bad |= vkprof_spool_sync(ctx) != VKPROF_DISABLED;
        _exit(bad);
    }
    int ws = 0;
    CHECK(pid > 0 && waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    vkprof_context off = NULL;
    CHECK(vkprof_spool_open(spool, &off, NULL, 0) == VKPROF_OK);
    uint64_t seen = 0;
    vkprof_trace_counts(off, &seen, NULL);
    CHECK(seen == before);
    vkprof_destroy(off);
    vkprof_destroy(ctx);
}

/* ---- a store that wraps, a store that fills ------------------------------ */

static void keep_case(vkprof_trace_keep keep)
{
    char spool[300], path[300];
    const bool last = keep == VKPROF_TRACE_KEEP_LAST;
    snprintf(spool, sizeof spool, "%s/keep-%d.spool", tmpdir, (int)keep);
    snprintf(path, sizeof path, "%s/keep-%d.json", tmpdir, (int)keep);
    vkprof_context ctx = spool_ctx(&g, spool, 1024, keep, "");
    enum { N = 3000 };
    for (int i = 0; i < N; i++) {
        vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_ATTENTION);
        char v[16];
        snprintf(v, sizeof v, "%d", i);
        CHECK(vkprof_span_annotate(&s, "i", v));
        vkprof_span_end(ctx, &s);
    }
    uint64_t recorded = 0, lost = 0;
    vkprof_trace_counts(ctx, &recorded, &lost);
    CHECK(recorded == 1024 && lost == N - 1024);
    CHECK(vkprof_spool_sync(ctx) == VKPROF_OK);
    for (int pass = 0; pass < 2; pass++) {
        vkprof_context src = ctx;
        if (pass == 1) {
            CHECK(vkprof_spool_open(spool, &src, NULL, 0) == VKPROF_OK);
        }
        CHECK(vkprof_trace_write(src, path) == VKPROF_OK);
        cJSON *meta = NULL;
        cJSON *ev = events_of(path, &meta);
        CHECK(count_events(ev, "host") == 1024);
        CHECK(mget(meta, "events_recorded", NULL) == N);
        CHECK(mget(meta, "overwritten_events", NULL) == (last ? N - 1024 : 0));
        CHECK(mget(meta, "dropped_events", NULL) == (last ? 0 : N - 1024));
        CHECK((mget(meta, "complete_from_monotonic_ns", NULL) > 0) == last);
        CHECK((mget(meta, "complete_until_monotonic_ns", NULL) > 0) == !last);
        const cJSON *tk = cJSON_GetObjectItemCaseSensitive(meta, "trace_keep");
        CHECK(cJSON_IsString(tk) && strcmp(tk->valuestring, last ? "last" : "first") == 0);
        /* which spans: the first 1024, or the last 1024 (those whose
         * annotation is still held: the newest ones) */
        int lo = N, hi = -1, with = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, ev)
        {
            const cJSON *i =
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e, "args"), "i");
            if (cJSON_IsString(i)) {
                int v = atoi(i->valuestring);
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
                with++;
            }
        }
        /* the annotations' store holds 1024 / 16 + 64 = 128 records: the
         * first 128 spans' (the rest counted as dropped annotations), or the
         * last 128's (the older ones overwritten: their spans have none) */
        if (last) {
            CHECK(hi == N - 1 && lo == N - 128 && with == 128);
        } else {
            CHECK(lo == 0 && hi == 127 && with == 128);
            CHECK(mget(meta, "dropped_annotations", NULL) == 1024 - 128);
        }
        cJSON_Delete(ev);
        cJSON_Delete(meta);
        if (pass == 1) {
            vkprof_destroy(src);
        }
    }
    vkprof_destroy(ctx);
}

static void test_keep_last(void)
{
    keep_case(VKPROF_TRACE_KEEP_LAST);
}

static void test_keep_first(void)
{
    keep_case(VKPROF_TRACE_KEEP_FIRST);
}

/* ---- several contexts, one trace ----------------------------------------- */

static void test_set(void)
{
    char s1[300], s2[300], path[300], pf[300];
    snprintf(s1, sizeof s1, "%s/set-1.spool", tmpdir);
    snprintf(s2, sizeof s2, "%s/set-2.spool", tmpdir);
    snprintf(path, sizeof path, "%s/set.json", tmpdir);
    snprintf(pf, sizeof pf, "%s/set.pftrace", tmpdir);
    vkprof_context c[2] = {spool_ctx(&g, s1, 4096, VKPROF_TRACE_KEEP_FIRST, "first"),
                           spool_ctx(&g, s2, 4096, VKPROF_TRACE_KEEP_FIRST, "second")};
    for (int step = 0; step < 3; step++) {
        step_work(&g, &busy, c[step % 2], step);
        vkprof_step(c[(step + 1) % 2]); /* one process's tokens: every context steps */
    }
    CHECK(vkprof_trace_write_set(c, 2, path, VKPROF_TRACE_FORMAT_DEFAULT) == VKPROF_OK);
    CHECK(vkprof_trace_write_set(c, 2, pf, VKPROF_TRACE_FORMAT_DEFAULT) == VKPROF_OK);
    cJSON *meta = NULL;
    cJSON *ev = events_of(path, &meta);
    CHECK(count_events(ev, "gpu") == 6 && count_events(ev, "host") == 6);
    /* 3 tokens, once: one context's steps (both stepped each token) */
    CHECK(count_events(ev, "step") == 3);
    CHECK(mget(meta, "token_context", NULL) == 0 && mget(meta, "steps", NULL) == 3);
    int on1 = 0, on1001 = 0, names = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(e, "pid");
        const cJSON *tid = cJSON_GetObjectItemCaseSensitive(e, "tid");
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
        if (!cJSON_IsNumber(pid) || pid->valueint != 2 || !cJSON_IsNumber(tid)) {
            continue;
        }
        if (strcmp(ph->valuestring, "X") == 0) {
            on1 += tid->valueint == 1;
            on1001 += tid->valueint == 1001;
        } else if (strcmp(ph->valuestring, "M") == 0) {
            const cJSON *nm = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(e, "args"), "name");
            names += cJSON_IsString(nm) && (strstr(nm->valuestring, "(first)") != NULL ||
                                            strstr(nm->valuestring, "(second)") != NULL);
        }
    }
    CHECK(on1 == 4 && on1001 == 2 && names == 2);
    const cJSON *ctxs = cJSON_GetObjectItemCaseSensitive(meta, "contexts");
    CHECK(cJSON_GetArraySize(ctxs) == 2);
    CHECK(mget(meta, "gpu_scopes", NULL) == 6);
    CHECK(mget(meta, "gpu_sampling", "scopes_collected") == 6);
    /* the .pftrace holds the same events (the report's reader) */
    char *buf = NULL, err[512] = "";
    size_t blen = 0;
    int fmt = -1;
    CHECK(rpt_load_trace(pf, RPT_MAX_FILE_BYTES, &buf, &blen, &fmt, err, sizeof err) == 0 &&
          fmt == RPT_FORMAT_PFTRACE);
    cJSON *pr = buf != NULL ? cJSON_ParseWithLength(buf, blen) : NULL;
    CHECK(pr != NULL);
    if (pr == NULL) {
        fprintf(stderr, "set.pftrace: %s\n", err);
    }
    CHECK(count_events(cJSON_GetObjectItemCaseSensitive(pr, "traceEvents"), "gpu") == 6);
    /* the metadata the same, its contexts an array again */
    const cJSON *pm = cJSON_GetObjectItemCaseSensitive(pr, "metadata");
    CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(pm, "contexts")) &&
          cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(pm, "contexts")) == 2);
    CHECK(mget(pm, "gpu_sampling", "scopes_collected") == 6);
    cJSON_Delete(pr);
    free(buf);
    cJSON_Delete(ev);
    cJSON_Delete(meta);
    vkprof_destroy(c[0]);
    vkprof_destroy(c[1]);
}

/* ---- damaged spools ------------------------------------------------------ */

static void test_damaged(void)
{
    char spool[300], copy[320];
    snprintf(spool, sizeof spool, "%s/dmg.spool", tmpdir);
    snprintf(copy, sizeof copy, "%s/dmg-copy.spool", tmpdir);
    vkprof_context ctx = spool_ctx(&g, spool, 1024, VKPROF_TRACE_KEEP_FIRST, "damaged");
    for (int step = 0; step < 2; step++) {
        step_work(&g, &busy, ctx, step);
    }
    vkprof_destroy(ctx);
    size_t len = 0;
    char *orig = NULL;
    {
        FILE *f = fopen(spool, "rb");
        CHECK(f != NULL);
        if (f == NULL) {
            return;
        }
        fseek(f, 0, SEEK_END);
        len = (size_t)ftell(f);
        fseek(f, 0, SEEK_SET);
        orig = malloc(len);
        CHECK(orig != NULL && fread(orig, 1, len, f) == len);
        fclose(f);
    }
    uint64_t rng = 0x9e3779b97f4a7c15u;
    int opened = 0, refused = 0;
    for (int k = 0; k < 300 && orig != NULL; k++) {
        char *buf = malloc(len);
        memcpy(buf, orig, len);
        size_t n = len;
        if (k < 40) {
            n = (size_t)k * 97; /* truncated near the start */
        } else if (k < 60) {
            n = len - 1 - (size_t)(k - 40) * 4096; /* truncated near the end */
        } else {
            /* 1..8 bytes changed in the first 512 KiB (header and checkpoints) */
            int flips = 1 + k % 8;
            for (int f = 0; f < flips; f++) {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                size_t at = (size_t)(rng % (len < (512u << 10) ? len : (512u << 10)));
                buf[at] = (char)(rng >> 40);
            }
        }
        unlink(copy);
        FILE *f = fopen(copy, "wb");
        CHECK(f != NULL && fwrite(buf, 1, n, f) == n);
        fclose(f);
        free(buf);
        vkprof_context off = NULL;
        char err[512] = "";
        vkprof_result r = vkprof_spool_open(copy, &off, err, sizeof err);
        CHECK((r == VKPROF_OK) == (off != NULL));
        if (r == VKPROF_OK) {
            opened++;
            /* whatever it holds: written, never a crash */
            (void)vkprof_trace_write(off, "/dev/null");
            size_t need = 0;
            (void)vkprof_snapshot_json(off, NULL, 0, &need);
            vkprof_destroy(off);
        } else {
            refused++;
            CHECK(err[0] != '\0' && strstr(err, copy) != NULL);
        }
    }
    printf("damaged spools: %d opened, %d refused\n", opened, refused);
    CHECK(refused >= 60); /* every truncation */
    free(orig);
    /* not a spool at all */
    vkprof_context off = NULL;
    char err[512] = "";
    CHECK(vkprof_spool_open("/dev/null", &off, err, sizeof err) == VKPROF_ERROR_IO &&
          strstr(err, "not a regular file") != NULL);
    CHECK(vkprof_spool_open(g_self, &off, err, sizeof err) == VKPROF_ERROR_IO &&
          strstr(err, "not a vkprof spool") != NULL);
}

/* ---- a disk that is full ------------------------------------------------- */

static void test_disk_full(void)
{
    char spool[300];
    snprintf(spool, sizeof spool, "%s/full.spool", tmpdir);
    struct rlimit old, small = {64 << 10, 64 << 10};
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    small.rlim_max = old.rlim_max;
    signal(SIGXFSZ, SIG_IGN); /* a write past the limit: EFBIG, not a signal */
    CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0);
    vkprof_context ctx = spool_ctx(&g, spool, 1 << 16, VKPROF_TRACE_KEEP_FIRST, "");
    CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
    vkprof_spool_info si;
    CHECK(vkprof_spool_status(ctx, &si) == VKPROF_OK && si.state == VKPROF_SPOOL_NONE &&
          strstr(si.reason, "reserve") != NULL);
    struct stat st;
    CHECK(stat(spool, &st) != 0); /* no half file left */
    /* the trace still works, in memory */
    step_work(&g, &busy, ctx, 0);
    CHECK(vkprof_tracing(ctx));
    char path[300];
    snprintf(path, sizeof path, "%s/full.json", tmpdir);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    vkprof_destroy(ctx);
    signal(SIGXFSZ, SIG_DFL);
}

/* ---- keys: never twice in an event -------------------------------------- */

/* A span annotated twice with one key, or with a key the trace writes
 * itself, and GPU args with a key twice or a reserved one: every event
 * holds each key once, so the report's reader (which refuses a key given
 * twice) reads the trace. */
static void test_keys(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/keys.json", tmpdir);
    vkprof_context ctx = spool_ctx(&g, NULL, 4096, VKPROF_TRACE_KEEP_FIRST, "");
    CHECK(vkprof_trace_begin(ctx, 0) == VKPROF_OK);
    vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_ATTENTION);
    CHECK(vkprof_span_annotate(&s, "note", "first"));
    CHECK(vkprof_span_annotate(&s, "note", "second")); /* replaces */
    CHECK(!vkprof_span_annotate(&s, "step", "7"));     /* the trace's own */
    CHECK(!vkprof_span_annotate(&s, "bucket", "x"));
    /* two long keys that are one key as kept (31 bytes) */
    CHECK(vkprof_span_annotate(&s, "a_key_longer_than_thirty_one_bytes_1", "a"));
    CHECK(vkprof_span_annotate(&s, "a_key_longer_than_thirty_one_bytes_2", "b"));
    vkprof_span_end(ctx, &s);
    VkCommandBuffer cmd = th_alloc_cmd(&g);
    th_begin_cmd(cmd);
    const vkprof_arg twice[2] = {{"groups", "1,1,1"}, {"groups", "2,1,1"}};
    const vkprof_arg own[1] = {{"ns", "5"}};
    const vkprof_arg fine[2] = {{"groups", "3,1,1"}, {"local_size", "64,1,1"}};
    const vkprof_arg *sets[3] = {twice, own, fine};
    const uint32_t counts[3] = {2, 1, 2};
    for (int k = 0; k < 3; k++) {
        CHECK(vkprof_cmd_begin(ctx, cmd, VKPROF_PHASE_NORM) == VKPROF_OK);
        vku_busy_record(&g.dev, &busy, cmd, 5);
        CHECK(vkprof_cmd_end_args(ctx, cmd, VKPROF_PHASE_NORM, sets[k], counts[k]) == VKPROF_OK);
    }
    CHECK_VK(vkEndCommandBuffer(cmd));
    th_submit_wait(&g, ctx, 1, &cmd);
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    CHECK(vkprof_cmd_release(ctx, cmd) == VKPROF_OK);
    vkFreeCommandBuffers(g.dev.device, g.dev.cmd_pool, 1, &cmd);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    cJSON *meta = NULL;
    cJSON *ev = events_of(path, &meta);
    int notes = 0, grouped = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "args");
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(a, "note");
        notes += cJSON_IsString(n) && strcmp(n->valuestring, "second") == 0;
        const cJSON *gr = cJSON_GetObjectItemCaseSensitive(a, "groups");
        grouped += cJSON_IsString(gr);
        if (cJSON_IsString(gr)) {
            CHECK(strcmp(gr->valuestring, "3,1,1") == 0);
        }
    }
    CHECK(notes == 1 && grouped == 1);
    CHECK(mget(meta, "dropped_annotations", NULL) == 2);
    cJSON_Delete(ev);
    cJSON_Delete(meta);
    /* the report's reader takes it */
    char *buf = NULL, err[512] = "";
    size_t len = 0;
    CHECK(rpt_load_file(path, RPT_MAX_FILE_BYTES, &buf, &len, err, sizeof err) == 0);
    rpt_summary *sum = NULL;
    CHECK(buf != NULL && rpt_parse(buf, len, &sum, err, sizeof err) == 0);
    if (sum == NULL) {
        fprintf(stderr, "keys.json: %s\n", err);
    }
    rpt_free(sum);
    free(buf);
    vkprof_destroy(ctx);
}

/* ---- the environment ----------------------------------------------------- */

static void test_environment(void)
{
    setenv("VKPROF_RING_ROTATE", "2", 1);
    setenv("VKPROF_TRACE_FORMAT", "pftrace", 1);
    setenv("VKPROF_GPU_PROFILE", "1", 1);
    setenv("VKPROF_HOST_PROFILE", "1", 1);
    char tp[300];
    snprintf(tp, sizeof tp, "%s/env-trace.json", tmpdir);
    setenv("VKPROF_TRACE", tp, 1);
    for (int ignore = 0; ignore < 2; ignore++) {
        vkprof_context_desc d = th_desc(&g, &logbuf, false);
        d.timing_mode = VKPROF_TIMING_RING;
        d.environment = ignore ? VKPROF_ENV_IGNORE : VKPROF_ENV_READ;
        vkprof_context ctx = th_ctx(&d);
        vkprof_timing_stats ts = th_stats(ctx);
        CHECK(ts.rotate_scopes == (ignore ? 0u : 2u));
        CHECK(vkprof_active(ctx) == !ignore);
        CHECK(vkprof_get_host_level(ctx) == (ignore ? VKPROF_HOST_OFF : VKPROF_HOST_ALL));
        CHECK(vkprof_tracing(ctx) == !ignore);
        vkprof_destroy(ctx);
        struct stat st;
        /* the trace the variable names: written by the reading context only,
         * in the variable's format (Perfetto at a .json path) */
        CHECK((stat(tp, &st) == 0) == !ignore);
        if (!ignore) {
            char head[8] = {0};
            FILE *f = fopen(tp, "rb");
            CHECK(f != NULL && fread(head, 1, 1, f) == 1 && head[0] != '{');
            if (f != NULL) {
                fclose(f);
            }
            unlink(tp);
        }
    }
    unsetenv("VKPROF_RING_ROTATE");
    unsetenv("VKPROF_TRACE_FORMAT");
    unsetenv("VKPROF_GPU_PROFILE");
    unsetenv("VKPROF_HOST_PROFILE");
    unsetenv("VKPROF_TRACE");
}

int main(int argc, char **argv)
{
    g_self = argv[0];
    if (argc == 4 && strcmp(argv[1], "--child") == 0) {
        logbuf.quiet = 1;
        return child_main(argv[2], argv[3]);
    }
    tl_init();
    RUN(test_roundtrip);
    RUN(test_deaths);
    RUN(test_death_in_collect);
    RUN(test_fork);
    RUN(test_keep_last);
    RUN(test_keep_first);
    RUN(test_set);
    RUN(test_damaged);
    RUN(test_disk_full);
    RUN(test_keys);
    RUN(test_environment);
    return tl_finish();
}
