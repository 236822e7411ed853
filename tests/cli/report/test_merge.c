/* `vkprof merge` and the per-rank report, on real traces: two vkprof contexts
 * on lavapipe (validation on), one thread each, meeting at a real barrier
 * through vkprof_rendezvous, with annotated MoE spans and one GPU scope each;
 * a trace per rank. Then:
 *   - same-boot traces merge exactly: every event of the merged trace sits
 *     at its input's absolute CLOCK_MONOTONIC time, to the nanosecond; flows
 *     stay paired and unique; the processes are renumbered and named;
 *   - one trace shifted by a known offset with another boot id: a plain
 *     merge refuses it (status 2); --align rendezvous recovers the offset
 *     within its stated bound, and the bound is small;
 *   - the report of the merged trace: collective time, probe wait, the
 *     slowest rank and the expert load, against figures this test computes
 *     from its own schedule and from the inputs' JSON;
 *   - malformed and hostile inputs are refused with a message.
 * usage: test_merge WORKDIR (the traces are left there for the CLI tests). */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "harness.h"
#include "merge.h"
#include "trace_reader.h"

#define RANKS 2
#define STEPS 8
#define DELAY_MS 2             /* rank 1 arrives this late at each attention rendezvous */
#define N_EXPERTS 6            /* ids 0..5; expert 5 is never routed */
#define OFFSET_NS 3000123457LL /* the injected clock offset */

static th_gpu g;
static vku_busy busy;
static th_log logbuf;
static const char *dir;
static pthread_barrier_t barrier;

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static char *path_in(const char *name)
{
    static char buf[8][512];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, sizeof buf[0], "%s/%s", dir, name);
    return p;
}

/* The router's choice of this schedule: top-2 of N_EXPERTS - 1 experts, in
 * MoE layer `layer` (0 or 1) of a token. Layer 1 routes to expert 0 every
 * time: its load is uneven, layer 0's less so. */
static void experts_of(int rank, int step, int layer, uint32_t ids[2])
{
    if (layer == 1) {
        ids[0] = 0;
        ids[1] = (uint32_t)(1 + (step + rank) % 2);
        return;
    }
    ids[0] = (uint32_t)((step + rank) % (N_EXPERTS - 1));
    ids[1] = (uint32_t)((step * 2 + 1 + rank) % (N_EXPERTS - 1));
    if (ids[1] == ids[0]) {
        ids[1] = (ids[0] + 1) % (N_EXPERTS - 1);
    }
}

static void barrier_wait(void *user)
{
    pthread_barrier_wait(user);
}

typedef struct rank_arg {
    vkprof_context ctx;
    int rank;
} rank_arg;

static void *rank_main(void *p)
{
    rank_arg *a = p;
    vkprof_context ctx = a->ctx;
    char name[32];
    snprintf(name, sizeof name, "rank %d decode", a->rank);
    vkprof_set_thread_name(ctx, name);
    for (int step = 0; step < STEPS; step++) {
        vkprof_span at = vkprof_span_begin(ctx, VKPROF_BUCKET_ATTENTION);
        sleep_us(100);
        vkprof_span_end(ctx, &at);
        if (a->rank == 1) {
            sleep_us(DELAY_MS * 1000L); /* the late rank */
        }
        vkprof_rendezvous(ctx, VKPROF_BUCKET_ALLREDUCE_ATTN_RENDEZVOUS, barrier_wait, &barrier);
        vkprof_span ar = vkprof_span_begin_hot(ctx, VKPROF_BUCKET_ALLREDUCE_ATTN);
        vkprof_span en = vkprof_span_begin_hot(ctx, VKPROF_BUCKET_ALLREDUCE_ATTN_ENQUEUE);
        sleep_us(200); /* nested: must not count twice */
        vkprof_span_end(ctx, &en);
        sleep_us(300);
        vkprof_span_end(ctx, &ar);

        for (int layer = 0; layer < 2; layer++) { /* two MoE layers a token */
            vkprof_span hs = vkprof_span_begin(ctx, VKPROF_BUCKET_MOE_HOST_SYNC);
            uint32_t ids[2];
            experts_of(a->rank, step, layer, ids);
            CHECK(vkprof_span_annotate_ids(&hs, "experts", ids, 2));
            vkprof_span_end(ctx, &hs);
            /* the same ids on another span: not counted again */
            vkprof_span ex = vkprof_span_begin(ctx, VKPROF_BUCKET_MOE_EXPERTS);
            CHECK(vkprof_span_annotate_ids(&ex, "experts", ids, 2));
            vkprof_span_end(ctx, &ex);
        }

        vkprof_rendezvous(ctx, VKPROF_BUCKET_ALLREDUCE_MLP_RENDEZVOUS, barrier_wait, &barrier);
        vkprof_span mr = vkprof_span_begin_hot(ctx, VKPROF_BUCKET_ALLREDUCE_MLP);
        sleep_us(150);
        vkprof_span_end(ctx, &mr);
        vkprof_step(ctx);
    }
    return NULL;
}

static vkprof_context make_ctx(void)
{
    vkprof_context_desc d = th_desc(&g, &logbuf, false);
    d.enable = VKPROF_ENABLE_ON;
    d.host_level = VKPROF_HOST_ALL;
    d.report_every = UINT32_MAX;
    return th_ctx(&d);
}

/* One GPU scope inside a host span, on the main thread (the queue is not
 * shared between threads). */
static void gpu_scope(vkprof_context ctx)
{
    vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_NORM);
    CHECK_VK(vku_begin(&g.dev));
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
    vku_busy_record(&g.dev, &busy, g.dev.cmd, 50);
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(vkprof_resolve(ctx, NULL) == VKPROF_OK);
    CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
    vkprof_span_end(ctx, &s);
}

static void record_traces(void)
{
    vkprof_context ctx[RANKS];
    for (int r = 0; r < RANKS; r++) {
        ctx[r] = make_ctx();
        CHECK(vkprof_trace_begin(ctx[r], 0) == VKPROF_OK);
        gpu_scope(ctx[r]);
    }
    CHECK(pthread_barrier_init(&barrier, NULL, RANKS) == 0);
    pthread_t t[RANKS];
    rank_arg a[RANKS];
    for (int r = 0; r < RANKS; r++) {
        a[r] = (rank_arg){ctx[r], r};
        CHECK(pthread_create(&t[r], NULL, rank_main, &a[r]) == 0);
    }
    for (int r = 0; r < RANKS; r++) {
        pthread_join(t[r], NULL);
    }
    pthread_barrier_destroy(&barrier);
    for (int r = 0; r < RANKS; r++) {
        char name[32];
        snprintf(name, sizeof name, "rank%d.json", r);
        CHECK(vkprof_trace_write(ctx[r], path_in(name)) == VKPROF_OK);
        vkprof_destroy(ctx[r]);
    }
}

/* ---- reading traces back, independently of the reader under test ---------- */

typedef struct trace {
    cJSON *root;
    const cJSON *events, *meta;
    int64_t start; /* trace_start_monotonic_ns, exact (from the text) */
} trace;

static int64_t raw_start(const char *text)
{
    const char *k = strstr(text, "\"trace_start_monotonic_ns\":");
    if (k == NULL) {
        return -1;
    }
    return strtoll(k + strlen("\"trace_start_monotonic_ns\":"), NULL, 10);
}

static bool load(const char *path, trace *t)
{
    memset(t, 0, sizeof *t);
    char *text = th_read_file(path);
    CHECK(text != NULL);
    if (text == NULL) {
        return false;
    }
    t->root = cJSON_Parse(text);
    t->start = raw_start(text);
    free(text);
    CHECK(t->root != NULL && t->start > 0);
    if (t->root == NULL) {
        return false;
    }
    t->events = cJSON_GetObjectItemCaseSensitive(t->root, "traceEvents");
    t->meta = cJSON_GetObjectItemCaseSensitive(t->root, "metadata");
    return cJSON_IsArray(t->events) && cJSON_IsObject(t->meta);
}

static int64_t ns_of(const cJSON *ev, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ev, key);
    return cJSON_IsNumber(v) ? (int64_t)llround(v->valuedouble * 1000.0) : -1;
}

static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static int64_t int_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}

static bool is_process_meta(const cJSON *ev)
{
    const char *ph = str_of(ev, "ph"), *name = str_of(ev, "name");
    return strcmp(ph, "M") == 0 &&
           (strcmp(name, "process_name") == 0 || strcmp(name, "process_sort_index") == 0);
}

/* Input k's events as the merge wrote them: same order, process names
 * replaced. Checks pids and that each event lies at `start + ts` of its input
 * plus `shift_back` (what the merge estimated minus the truth), within `tol`
 * ns (0: exact). Returns the worst error seen. */
static int64_t check_placement(const trace *in, const trace *out, int k, int64_t shift_back,
                               int64_t tol)
{
    int64_t hp = 2 * k + 1, gp = 2 * k + 2, worst = 0;
    const cJSON *o = out->events->child;
    size_t n = 0;
    for (const cJSON *e = in->events->child; e != NULL; e = e->next) {
        if (is_process_meta(e)) {
            continue; /* replaced by the merge's own */
        }
        /* the next event of input k in the merged trace */
        while (o != NULL &&
               ((int_of(o, "pid") != hp && int_of(o, "pid") != gp) || is_process_meta(o))) {
            o = o->next;
        }
        CHECK(o != NULL);
        if (o == NULL) {
            return INT64_MAX;
        }
        int64_t pid = int_of(e, "pid");
        CHECK(int_of(o, "pid") == (pid == 2 ? gp : hp));
        CHECK(strcmp(str_of(e, "ph"), str_of(o, "ph")) == 0);
        CHECK(strcmp(str_of(e, "name"), str_of(o, "name")) == 0);
        CHECK(ns_of(e, "dur") == ns_of(o, "dur"));
        if (ns_of(e, "ts") >= 0) {
            int64_t want = in->start + ns_of(e, "ts") + shift_back;
            int64_t got = out->start + ns_of(o, "ts");
            int64_t err = llabs(got - want);
            worst = err > worst ? err : worst;
            n++;
        }
        o = o->next;
    }
    CHECK(n > 4 * STEPS);
    CHECK(worst <= tol);
    if (worst > tol) {
        fprintf(stderr, "  input %d: an event is %" PRId64 " ns off (tolerance %" PRId64 ")\n", k,
                worst, tol);
    }
    return worst;
}

static const char *inputs2[RANKS];

static int merge(const char *a, const char *b, bool align, const char *out, rpt_merge_input *info,
                 char *err, size_t size)
{
    inputs2[0] = a;
    inputs2[1] = b;
    rpt_merge_opts o = {.inputs = inputs2, .n_inputs = 2, .align_rendezvous = align, .output = out};
    return rpt_merge(&o, info, err, size);
}

/* ---- the cases ------------------------------------------------------------- */

static void test_same_boot_exact(void)
{
    char err[1024];
    rpt_merge_input info[RANKS];
    const char *out = path_in("merged.json");
    int rc = merge(path_in("rank0.json"), path_in("rank1.json"), false, out, info, err, sizeof err);
    CHECK(rc == RPT_MERGE_OK);
    if (rc != RPT_MERGE_OK) {
        fprintf(stderr, "  %s\n", err);
        return;
    }
    CHECK(info[1].rendezvous == 0 && info[1].offset_ns == 0 && info[1].error_bound_ns == 0);
    trace in[RANKS], m;
    bool ok =
        load(path_in("rank0.json"), &in[0]) & load(path_in("rank1.json"), &in[1]) & load(out, &m);
    CHECK(ok);
    if (ok) {
        /* both traces of this process: one boot id, recorded */
        const cJSON *p0 = cJSON_GetObjectItemCaseSensitive(in[0].meta, "process");
        CHECK(strlen(str_of(p0, "boot_id")) == 36);
        for (int k = 0; k < RANKS; k++) {
            CHECK(check_placement(&in[k], &m, k, 0, 0) == 0); /* exact */
        }
        CHECK(m.start == (in[0].start < in[1].start ? in[0].start : in[1].start));
        /* process names, the scheme of pids */
        int named = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, m.events)
        {
            if (strcmp(str_of(e, "name"), "process_name") == 0) {
                const char *n = str_of(cJSON_GetObjectItemCaseSensitive(e, "args"), "name");
                int64_t pid = int_of(e, "pid");
                char want[64];
                snprintf(want, sizeof want, "rank %d", (int)((pid - 1) / 2));
                CHECK(strncmp(n, want, strlen(want)) == 0);
                CHECK(pid % 2 == 1 || strstr(n, " GPU (") != NULL);
                named++;
            }
            CHECK(int_of(e, "pid") >= 1 && int_of(e, "pid") <= 2 * RANKS);
        }
        CHECK(named == 2 * RANKS);
        /* flows: every id has one start and one end, and no id is shared */
        int64_t ids[64];
        int nids = 0, ends = 0;
        cJSON_ArrayForEach(e, m.events)
        {
            if (strcmp(str_of(e, "ph"), "s") == 0 && nids < 64) {
                for (int i = 0; i < nids; i++) {
                    CHECK(ids[i] != int_of(e, "id"));
                }
                ids[nids++] = int_of(e, "id");
            }
            ends += strcmp(str_of(e, "ph"), "f") == 0;
        }
        CHECK(nids == RANKS && ends == RANKS); /* one GPU scope per rank */
        /* the merge's metadata: per input, and the sums */
        const cJSON *mg = cJSON_GetObjectItemCaseSensitive(m.meta, "merge");
        const cJSON *ins = cJSON_GetObjectItemCaseSensitive(mg, "inputs");
        CHECK(strcmp(str_of(mg, "method"), "same_boot") == 0 && cJSON_GetArraySize(ins) == RANKS);
        uint64_t dropped = 0, samples = 0, calls = 0;
        for (int k = 0; k < RANKS; k++) {
            const cJSON *x = cJSON_GetArrayItem(ins, k);
            const cJSON *meta = cJSON_GetObjectItemCaseSensitive(x, "metadata");
            CHECK(strcmp(str_of(x, "file"), k ? path_in("rank1.json") : path_in("rank0.json")) ==
                  0);
            CHECK(strcmp(str_of(x, "method"), "same_boot") == 0);
            CHECK(int_of(x, "host_pid") == 2 * k + 1 && int_of(x, "gpu_pid") == 2 * k + 2);
            CHECK(int_of(x, "offset_ns") == 0 && int_of(x, "error_bound_ns") == 0);
            CHECK(strcmp(str_of(x, "boot_id"),
                         str_of(cJSON_GetObjectItemCaseSensitive(meta, "process"), "boot_id")) ==
                  0);
            dropped += (uint64_t)int_of(meta, "dropped_events");
            samples +=
                (uint64_t)int_of(cJSON_GetObjectItemCaseSensitive(meta, "gpu_sampling"), "samples");
            calls += (uint64_t)int_of(cJSON_GetObjectItemCaseSensitive(meta, "gpu_sampling"),
                                      "calls_executed");
        }
        /* every count is summed, the rotation's included */
        CHECK((uint64_t)int_of(cJSON_GetObjectItemCaseSensitive(m.meta, "gpu_sampling"),
                               "calls_executed") == calls);
        CHECK(calls >= RANKS);
        CHECK((uint64_t)int_of(m.meta, "dropped_events") == dropped);
        CHECK((uint64_t)int_of(cJSON_GetObjectItemCaseSensitive(m.meta, "gpu_sampling"),
                               "samples") == samples);
        CHECK(samples == RANKS);
    }
    for (int k = 0; k < RANKS; k++) {
        cJSON_Delete(in[k].root);
    }
    cJSON_Delete(m.root);
}

/* rank1.json with its clock moved by OFFSET_NS and another boot id; with
 * `no_probes`, its probes are no longer marked as probes. */
static void write_shifted(const char *name, bool no_probes)
{
    char *text = th_read_file(path_in("rank1.json"));
    CHECK(text != NULL);
    if (text == NULL) {
        return;
    }
    size_t n = strlen(text);
    char *out = malloc(n + 64);
    CHECK(out != NULL);
    const char *k = strstr(text, "\"trace_start_monotonic_ns\":");
    const char *b = strstr(text, "\"boot_id\":\"");
    CHECK(k != NULL && b != NULL);
    if (out == NULL || k == NULL || b == NULL) {
        free(out);
        free(text);
        return;
    }
    /* the boot id: same length, another value */
    char *bid = text + (b - text) + strlen("\"boot_id\":\"");
    memcpy(bid, "00000000-0000-4000-8000-0000000000", 34);
    size_t at = (size_t)(k - text) + strlen("\"trace_start_monotonic_ns\":");
    char *end;
    long long start = strtoll(text + at, &end, 10);
    int w = snprintf(out, n + 64, "%.*s%lld%s", (int)at, text, start + OFFSET_NS, end);
    CHECK(w > 0);
    if (no_probes) {
        char *p;
        while ((p = strstr(out, "\"probe\":true")) != NULL) {
            memcpy(p, "\"prob_\":true", 12); /* same length: no longer a probe */
        }
    }
    FILE *f = fopen(path_in(name), "w");
    CHECK(f != NULL);
    if (f != NULL) {
        fputs(out, f);
        fclose(f);
    }
    free(out);
    free(text);
}

static void test_other_boot(void)
{
    write_shifted("rank1_shifted.json", false);
    char err[1024];
    rpt_merge_input info[RANKS];
    const char *out = path_in("refused.json");
    remove(out);
    int rc = merge(path_in("rank0.json"), path_in("rank1_shifted.json"), false, out, info, err,
                   sizeof err);
    CHECK(rc == RPT_MERGE_REFUSED);
    CHECK(strstr(err, "different boots") != NULL && strstr(err, "--align rendezvous") != NULL);
    printf("  refused: %s\n", err);
    struct stat st;
    CHECK(stat(out, &st) != 0); /* nothing written */

    out = path_in("aligned.json");
    rc = merge(path_in("rank0.json"), path_in("rank1_shifted.json"), true, out, info, err,
               sizeof err);
    CHECK(rc == RPT_MERGE_OK);
    if (rc != RPT_MERGE_OK) {
        fprintf(stderr, "  %s\n", err);
        return;
    }
    int64_t est = info[1].offset_ns, bound = (int64_t)info[1].error_bound_ns;
    printf("  injected offset %lld ns, estimated %" PRId64 " ns, error %lld ns, bound %" PRId64
           " ns, %" PRIu64 " probes\n",
           OFFSET_NS, est, llabs(est - OFFSET_NS), bound, info[1].matched);
    CHECK(info[1].rendezvous == 1 && info[1].matched == 2 * STEPS);
    CHECK(llabs(est - OFFSET_NS) <= bound);
    CHECK(bound < 20 * 1000 * 1000); /* not absurd: under 20 ms (it is tens of us idle) */
    /* every event back at its true time, within the bound */
    trace in[RANKS], m;
    bool ok =
        load(path_in("rank0.json"), &in[0]) & load(path_in("rank1.json"), &in[1]) & load(out, &m);
    CHECK(ok);
    if (ok) {
        CHECK(check_placement(&in[0], &m, 0, 0, 0) == 0);
        /* rank1.json is the truth of the shifted trace: its events must land
         * within the bound of where they really were */
        check_placement(&in[1], &m, 1, 0, bound);
        const cJSON *x =
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
                                   cJSON_GetObjectItemCaseSensitive(m.meta, "merge"), "inputs"),
                               1);
        CHECK(strcmp(str_of(x, "method"), "rendezvous") == 0);
        CHECK(int_of(x, "offset_ns") == est && int_of(x, "error_bound_ns") == bound);
        CHECK(int_of(x, "matched_probes") == 2 * STEPS);
        CHECK(strncmp(str_of(x, "boot_id"), "00000000-0000-4000-8000-0000000000", 34) == 0);
    }
    for (int k = 0; k < RANKS; k++) {
        cJSON_Delete(in[k].root);
    }
    cJSON_Delete(m.root);

    /* no probes to align on: refused */
    write_shifted("rank1_noprobe.json", true);
    rc = merge(path_in("rank0.json"), path_in("rank1_noprobe.json"), true, path_in("x.json"), info,
               err, sizeof err);
    CHECK(rc == RPT_MERGE_REFUSED && strstr(err, "only 0 rendezvous probes match") != NULL);
    printf("  refused: %s\n", err);
}

/* The estimator on hand-written probes: the offset is the middle of the
 * intersection of the matched probes' causal intervals, the bound half its
 * width plus both host clock bounds, to the nanosecond; the k-th probe of a
 * bucket in a step matches the k-th; unmatched probes are left out. */
static void write_text(const char *name, const char *text);

static void append(char **buf, size_t *len, size_t *cap, const char *s)
{
    size_t n = strlen(s);
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        char *q = realloc(*buf, *cap);
        CHECK(q != NULL);
        if (q == NULL) {
            return;
        }
        *buf = q;
    }
    memcpy(*buf + *len, s, n + 1);
    *len += n;
}

static void probe_trace(const char *name, long long start, const char *boot, int eb,
                        const long long *ts_ns, const long long *dur_ns, const int *step,
                        const char *const *bucket, int n)
{
    char *buf = NULL, line[512];
    size_t len = 0, cap = 0;
    append(&buf, &len, &cap, "{\"traceEvents\":[");
    for (int i = 0; i < n; i++) {
        snprintf(line, sizeof line,
                 "%s{\"ph\":\"X\",\"cat\":\"host\",\"name\":\"%s\",\"ts\":%lld.%03lld,"
                 "\"dur\":%lld.%03lld,\"pid\":1,\"tid\":1,\"args\":{\"bucket\":\"%s\","
                 "\"hot\":true,\"sync\":false,\"step\":%d,\"probe\":true}}",
                 i ? "," : "", bucket[i], ts_ns[i] / 1000, ts_ns[i] % 1000, dur_ns[i] / 1000,
                 dur_ns[i] % 1000, bucket[i], step[i]);
        append(&buf, &len, &cap, line);
    }
    snprintf(line, sizeof line,
             "],\"metadata\":{\"trace_start_monotonic_ns\":%lld,\"dropped_events\":0,"
             "\"host_clock\":{\"error_bound_ns\":%d},\"process\":{\"boot_id\":\"%s\","
             "\"host\":\"h\",\"pid\":1}}}",
             start, eb, boot);
    append(&buf, &len, &cap, line);
    if (buf != NULL) {
        write_text(name, buf);
    }
    free(buf);
}

/* The estimator on probes written by hand. Six barriers, released at R[i]
 * (true time). At the even ones rank B arrives last, at the odd ones rank
 * A; A always leaves 1 us after the release and B 20 us after (B's thread
 * always wakes late: the systematic lag that biased the exits' median, and
 * made its bound false, on a loaded CI machine). */
static void test_estimator(void)
{
    static const char *const AT = "allreduce_attn_rendezvous", *const MLP =
                                                                   "allreduce_mlp_rendezvous";
    enum { N = 7 };
    const long long R[] = {100000, 200000, 300000, 350000, 400000, 500000};
    /* A: the six, two at step 3, and one MLP probe B lacks */
    const int sa[N] = {1, 2, 3, 3, 4, 5, 5};
    const char *const ba[N] = {AT, AT, AT, AT, AT, AT, MLP};
    /* B: the six, and one at step 9 A lacks */
    const int sb[N] = {1, 2, 3, 3, 4, 5, 9};
    const char *const bb[N] = {AT, AT, AT, AT, AT, AT, AT};
    long long ta[N], da[N], tb[N], db[N];
    for (int i = 0; i < 6; i++) {
        bool b_last = i % 2 == 0;
        ta[i] = R[i] - (b_last ? 50000 : 700);
        da[i] = R[i] + 1000 - ta[i];
        tb[i] = R[i] - (b_last ? 500 : 30000);
        db[i] = R[i] + 20000 - tb[i];
    }
    ta[6] = 600000, da[6] = 10000, tb[6] = 900000, db[6] = 10000;
    const long long start_a = 1000000000LL, off = 4000000007LL;
    probe_trace("est_a.json", start_a, "boot-a", 21, ta, da, sa, ba, N);
    probe_trace("est_b.json", start_a + off, "boot-b", 30, tb, db, sb, bb, N);
    char err[1024];
    rpt_merge_input info[2];
    int rc = merge(path_in("est_a.json"), path_in("est_b.json"), true, path_in("est.json"), info,
                   err, sizeof err);
    CHECK(rc == RPT_MERGE_OK);
    if (rc != RPT_MERGE_OK) {
        fprintf(stderr, "  %s\n", err);
        return;
    }
    /* off >= b.start - a.end: B last: -500 - 1000 = -1500; A last: -31000.
     * off <= b.end - a.start: B last: 20000 + 50000; A last: 20000 + 700.
     * [-1500, 20700]: the middle 9600, half the width 11100; + 21 + 30.
     * (Every exit differs by 19000: their median was 19000 off with a bound
     * of 51.) */
    CHECK_EQ_U64(info[1].matched, 6);
    CHECK(info[1].offset_ns == off + 9600);
    CHECK_EQ_U64(info[1].error_bound_ns, 11100 + 21 + 30);
    CHECK(llabs(info[1].offset_ns - off) <= (long long)info[1].error_bound_ns);

    /* B's step-4 probe after A's has ended (off >= 198500), while step 2
     * needs off <= 20700:
     * no one offset fits; refused, naming both */
    tb[4] += 200000;
    probe_trace("est_d.json", start_a + off, "boot-b", 30, tb, db, sb, bb, N);
    rc = merge(path_in("est_a.json"), path_in("est_d.json"), true, path_in("est.json"), info, err,
               sizeof err);
    CHECK(rc == RPT_MERGE_REFUSED && strstr(err, "contradict one constant clock offset") != NULL &&
          strstr(err, "step 4 needs an offset of at least 4000198507 ns") != NULL &&
          strstr(err, "step 2 at most 4000020707 ns") != NULL);
    printf("  refused: %s\n", err);
    tb[4] -= 200000;

    /* three probes fewer: below the minimum of 4 matches */
    probe_trace("est_c.json", start_a + off, "boot-b", 30, tb + 3, db + 3, sb + 3, bb + 3, 4);
    rc = merge(path_in("est_a.json"), path_in("est_c.json"), true, path_in("est.json"), info, err,
               sizeof err);
    CHECK(rc == RPT_MERGE_REFUSED && strstr(err, "only 3 rendezvous probes match") != NULL);
}

/* What the report must find, from the inputs' JSON: each rank's outermost
 * collective time and probe time. */
static void span_sums(const trace *t, uint64_t *coll, uint64_t *probe)
{
    *coll = *probe = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, t->events)
    {
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        const char *b = str_of(args, "bucket");
        if (strcmp(str_of(e, "ph"), "X") != 0 || strcmp(str_of(e, "cat"), "host") != 0) {
            continue;
        }
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args, "probe"))) {
            *probe += (uint64_t)ns_of(e, "dur");
        } else if (strcmp(b, "allreduce_attn") == 0 || strcmp(b, "allreduce_mlp") == 0) {
            *coll += (uint64_t)ns_of(e, "dur"); /* the enqueue span is inside allreduce_attn */
        }
    }
}

/* An input's probe wait per step (every probe of the step, summed, as the
 * report sums them), and its attention probes' alone; steps 1..STEPS (the
 * first step is 1), at [step - 1]. */
static void step_waits(const trace *t, uint64_t all[STEPS], uint64_t attn[STEPS])
{
    memset(all, 0, STEPS * sizeof *all);
    memset(attn, 0, STEPS * sizeof *attn);
    const cJSON *e;
    cJSON_ArrayForEach(e, t->events)
    {
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        if (strcmp(str_of(e, "ph"), "X") != 0 ||
            !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(args, "probe"))) {
            continue;
        }
        int64_t st = int_of(args, "step") - 1;
        CHECK(st >= 0 && st < STEPS);
        if (st < 0 || st >= STEPS) {
            continue;
        }
        all[st] += (uint64_t)ns_of(e, "dur");
        if (strcmp(str_of(args, "bucket"), "allreduce_attn_rendezvous") == 0) {
            attn[st] += (uint64_t)ns_of(e, "dur");
        }
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void test_report(void)
{
    char err[512];
    rpt_summary *s = NULL;
    CHECK(rpt_read_file(path_in("merged.json"), 0, &s, err, sizeof err) == 0);
    if (s == NULL) {
        fprintf(stderr, "  %s\n", err);
        return;
    }
    CHECK(s->n_ranks == RANKS && s->tokens == STEPS && s->n_token_events == STEPS);
    rpt_rank_view v;
    CHECK(rpt_rank_view_build(s, &v) == 0);
    trace in[RANKS];
    uint64_t all[RANKS][STEPS], attn[RANKS][STEPS], probe_ns[RANKS];
    for (int k = 0; k < RANKS; k++) {
        CHECK(load(path_in(k ? "rank1.json" : "rank0.json"), &in[k]));
        uint64_t coll, probe;
        span_sums(&in[k], &coll, &probe);
        step_waits(&in[k], all[k], attn[k]);
        probe_ns[k] = probe;
        CHECK_EQ_U64(v.rank[k].collective_ns, coll);
        CHECK_EQ_U64(v.rank[k].probe_ns, probe);
        CHECK_EQ_U64(v.rank[k].tokens, STEPS);
        CHECK_EQ_U64(v.rank[k].probes, 2 * STEPS);
        CHECK_EQ_U64(v.rank[k].collectives, 2 * STEPS);
        /* at least the sleeps: 300 + 200 + 150 us per step */
        CHECK(coll >= (uint64_t)STEPS * 650000u);
        cJSON_Delete(in[k].root);
    }
    /* The report's slowest rank, per step and overall, is what the inputs'
     * probe spans say, exactly (the least wait; a tie goes to the lower
     * rank), whatever the scheduler did to the threads. */
    uint64_t want_slowest[RANKS] = {0};
    for (int st = 0; st < STEPS; st++) {
        want_slowest[all[1][st] < all[0][st] ? 1 : 0]++;
    }
    CHECK(v.n_steps == STEPS);
    CHECK_EQ_U64(v.rank[0].slowest_tokens, want_slowest[0]);
    CHECK_EQ_U64(v.rank[1].slowest_tokens, want_slowest[1]);
    CHECK(v.slowest == (probe_ns[1] < probe_ns[0] ? 1 : 0));
    /* And the schedule did what it says: rank 0 waits about DELAY_MS at each
     * attention rendezvous for rank 1, less by how late rank 0 itself got
     * there and plus rank 1's own wake-up. The median over the steps, so
     * that a thread descheduled for milliseconds on a loaded machine (seen
     * in CI) spoils a step, not the test. */
    uint64_t d[STEPS];
    for (int st = 0; st < STEPS; st++) {
        d[st] = attn[0][st] > attn[1][st] ? attn[0][st] - attn[1][st] : 0;
    }
    qsort(d, STEPS, sizeof *d, cmp_u64);
    CHECK(d[STEPS / 2] >= (uint64_t)DELAY_MS * 500000u);
    if (d[STEPS / 2] < (uint64_t)DELAY_MS * 500000u) {
        fprintf(stderr, "  median attention wait difference %" PRIu64 " ns\n", d[STEPS / 2]);
    }
    /* expert load: this schedule's counts, exactly (moe_host_sync only) */
    CHECK(v.n_experts == N_EXPERTS - 1); /* the largest id routed is 4 */
    /* want[r][l][e]: rank r's tokens to expert e of MoE layer l; r == RANKS:
     * every rank */
    uint64_t want[RANKS + 1][2][N_EXPERTS] = {{{0}}};
    for (int r = 0; r < RANKS; r++) {
        for (int st = 0; st < STEPS; st++) {
            for (int l = 0; l < 2; l++) {
                uint32_t ids[2];
                experts_of(r, st, l, ids);
                for (int k = 0; k < 2; k++) {
                    want[r][l][ids[k]]++;
                    want[RANKS][l][ids[k]]++;
                }
            }
        }
    }
    CHECK(v.n_moe_layers == 2 && v.layer_imbalance != NULL && !v.layers_cut);
    for (int r = 0; r <= RANKS && v.counts != NULL && v.layer_imbalance != NULL; r++) {
        if (r < RANKS) {
            CHECK_EQ_U64(v.rank[r].routed, 4 * STEPS);
            CHECK_EQ_U64(v.rank[r].routing_spans, 2 * STEPS);
            for (uint32_t e = 0; e < v.n_experts; e++) {
                CHECK_EQ_U64(v.counts[r * v.n_experts + e], want[r][0][e] + want[r][1][e]);
            }
        }
        for (int l = 0; l < 2; l++) {
            uint64_t mx = 0, tot = 0;
            for (int e = 0; e < N_EXPERTS; e++) {
                mx = want[r][l][e] > mx ? want[r][l][e] : mx;
                tot += want[r][l][e];
            }
            double imb = (double)mx * (N_EXPERTS - 1) / (double)tot;
            CHECK(fabs(v.layer_imbalance[r * 2 + l] - imb) < 1e-12);
        }
    }
    /* layer 1 always picks expert 0: 2 of 5 slots in every token, max/mean
     * (2 / 2) * 5 = 2.50 per rank */
    CHECK(fabs(v.layer_imbalance[1] - 2.5) < 1e-12);
    /* the text: the tables and the verdict */
    FILE *f = tmpfile();
    CHECK(f != NULL && rpt_print(s, "merged.json", f) == 0);
    char text[16384] = "";
    if (f != NULL) {
        rewind(f);
        text[fread(text, 1, sizeof text - 1, f)] = '\0';
        fclose(f);
    }
    CHECK(strstr(text, "ranks: 2 (merged by vkprof merge, same_boot)") != NULL);
    CHECK(strstr(text, "slowest rank: rank 1 (") != NULL);
    CHECK(strstr(text, "expert load (args.experts of moe_host_sync spans: 2 MoE layer(s) x 5 "
                       "experts") != NULL);
    CHECK(strstr(text, "host buckets (2 ranks)") != NULL);
    /* layer #1's row: 2.50 for each rank; every rank together too */
    const char *mm = strstr(text, "\n  layer #1 ");
    double l1[3] = {0};
    CHECK(mm != NULL && sscanf(mm, "\n  layer #1 %lf %lf %lf", &l1[0], &l1[1], &l1[2]) == 3);
    CHECK(l1[0] == 2.5 && l1[1] == 2.5 && l1[2] == 2.5);
    fputs(text, stdout);
    /* the SVG of the merged trace names the ranks */
    f = tmpfile();
    CHECK(f != NULL && rpt_svg(s, "merged", f) == 0);
    if (f != NULL) {
        rewind(f);
        text[fread(text, 1, sizeof text - 1, f)] = '\0';
        fclose(f);
        CHECK(strstr(text, "rank 1") != NULL && strstr(text, "skew") != NULL);
    }
    rpt_rank_view_free(&v);
    rpt_free(s);
}

static void write_text(const char *name, const char *text)
{
    FILE *f = fopen(path_in(name), "w");
    CHECK(f != NULL);
    if (f != NULL) {
        fputs(text, f);
        fclose(f);
    }
}

static void expect_refused(const char *name, const char *text, const char *msg)
{
    write_text(name, text);
    char err[1024];
    int rc = merge(path_in("rank0.json"), path_in(name), false, path_in("bad_out.json"), NULL, err,
                   sizeof err);
    CHECK(rc == RPT_MERGE_ERROR && strstr(err, msg) != NULL && strstr(err, name) != NULL);
    if (rc != RPT_MERGE_ERROR || strstr(err, msg) == NULL) {
        fprintf(stderr, "  %s: rc %d, '%s' (wanted '%s')\n", name, rc, err, msg);
    }
}

static void test_hostile(void)
{
    remove(path_in("bad_out.json"));
    expect_refused("bad_json.json", "{\"traceEvents\":[{\"ph\":", "unexpected end of file");
    expect_refused("bad_pid.json",
                   "{\"traceEvents\":[{\"ph\":\"i\",\"cat\":\"x\",\"name\":\"y\",\"ts\":1,"
                   "\"pid\":7,\"tid\":1}],\"metadata\":{\"trace_start_monotonic_ns\":5}}",
                   "the pid is not 1 (host) or 2 (GPU) (at event #0)");
    expect_refused("no_start.json", "{\"traceEvents\":[],\"metadata\":{}}",
                   "trace_start_monotonic_ns is missing");
    expect_refused("no_meta.json", "{\"traceEvents\":[]}", "no \"metadata\"");
    expect_refused("float_start.json",
                   "{\"traceEvents\":[],\"metadata\":{\"trace_start_monotonic_ns\":1.5}}",
                   "not a non-negative integer");
    expect_refused("bad_ts.json",
                   "{\"traceEvents\":[{\"ph\":\"C\",\"name\":\"c\",\"ts\":-4,\"pid\":1,"
                   "\"tid\":1,\"args\":{}}],\"metadata\":{\"trace_start_monotonic_ns\":5}}",
                   "\"ts\" is not a time");
    expect_refused(
        "bad_id.json",
        "{\"traceEvents\":[{\"ph\":\"s\",\"cat\":\"flow\",\"name\":\"r\",\"ts\":1,"
        "\"id\":1.5,\"pid\":1,\"tid\":1}],\"metadata\":{\"trace_start_monotonic_ns\":5}}",
        "\"id\" is neither");
    expect_refused("bad_experts.json",
                   "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"host\",\"name\":\"moe_host_sync\","
                   "\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":1,\"args\":{\"experts\":\"1,,2\"}}],"
                   "\"metadata\":{\"trace_start_monotonic_ns\":5}}",
                   "is not a list of ids");
    expect_refused("merged_twice.json",
                   "{\"traceEvents\":[],\"metadata\":{\"trace_start_monotonic_ns\":5,\"merge\":{"
                   "\"inputs\":[{\"name\":\"a\",\"host_pid\":1,\"gpu_pid\":2}]}}}",
                   "is a merged trace already");
    /* a key twice (in an event, in the metadata), a Perfetto trace cut
     * short: the report's refusals, the report's messages */
    expect_refused("dup_key.json",
                   "{\"traceEvents\":[{\"ph\":\"i\",\"cat\":\"x\",\"name\":\"y\",\"ts\":1,\"ts\":2,"
                   "\"pid\":1,\"tid\":1}],\"metadata\":{\"trace_start_monotonic_ns\":5}}",
                   "the event has the key \"ts\" twice (at event #0, line 1)");
    expect_refused("dup_meta_key.json",
                   "{\"traceEvents\":[],\"metadata\":{\"trace_start_monotonic_ns\":5,"
                   "\"trace_start_monotonic_ns\":6}}",
                   "metadata has the key \"trace_start_monotonic_ns\" twice");
    expect_refused("cut.pftrace", "\n\x7fP\x01",
                   "Perfetto trace: the packet is 127 bytes long but the file ends 2 bytes after "
                   "its header: truncated or damaged (at packet #0, byte 0)");
    /* an event over the reader's bound (1 MiB) */
    size_t big = RPT_MAX_EVENT_BYTES + 100;
    char *t = malloc(big + 200);
    CHECK(t != NULL);
    if (t != NULL) {
        int n = snprintf(t, 200, "{\"traceEvents\":[{\"ph\":\"i\",\"name\":\"");
        memset(t + n, 'a', big);
        snprintf(t + n + big, 100, "\"}],\"metadata\":{\"trace_start_monotonic_ns\":5}}");
        expect_refused("big_event.json", t, "the event is larger than 1048576 bytes");
        free(t);
    }
    struct stat st;
    CHECK(stat(path_in("bad_out.json"), &st) != 0); /* never written */

    /* one boot, but the second starts so late that an event would pass the
     * reader's limit of 10^18 ns: refused, nothing written */
    write_text("far_a.json", "{\"traceEvents\":[],\"metadata\":{\"trace_start_monotonic_ns\":5,"
                             "\"process\":{\"boot_id\":\"b\"}}}");
    write_text("far_b.json",
               "{\"traceEvents\":[{\"ph\":\"i\",\"name\":\"x\",\"ts\":1000,\"pid\":1,\"tid\":1}],"
               "\"metadata\":{\"trace_start_monotonic_ns\":999999999999999000,\"process\":{"
               "\"boot_id\":\"b\"}}}");
    char ferr[1024];
    int frc = merge(path_in("far_a.json"), path_in("far_b.json"), false, path_in("bad_out.json"),
                    NULL, ferr, sizeof ferr);
    CHECK(frc == RPT_MERGE_ERROR && strstr(ferr, "past its limit of 10^18 ns (at event #0)"));
    CHECK(stat(path_in("bad_out.json"), &st) != 0);

    /* the size cap, stdin, a missing file, an unwritable output */
    char err[1024];
    inputs2[0] = path_in("rank0.json");
    inputs2[1] = path_in("rank1.json");
    rpt_merge_opts o = {
        .inputs = inputs2, .n_inputs = 2, .output = path_in("capped.json"), .max_bytes = 1000};
    CHECK(rpt_merge(&o, NULL, err, sizeof err) == RPT_MERGE_ERROR &&
          strstr(err, "too large") != NULL);
    inputs2[1] = "-";
    o.max_bytes = 0;
    CHECK(rpt_merge(&o, NULL, err, sizeof err) == RPT_MERGE_ERROR &&
          strstr(err, "stdin cannot be one") != NULL);
    inputs2[1] = path_in("no-such.json");
    CHECK(rpt_merge(&o, NULL, err, sizeof err) == RPT_MERGE_ERROR &&
          strstr(err, "cannot open") != NULL);
    inputs2[1] = path_in("rank1.json");
    o.output = "/nonexistent-vkprof-dir/m.json";
    CHECK(rpt_merge(&o, NULL, err, sizeof err) == RPT_MERGE_ERROR &&
          strstr(err, "/nonexistent-vkprof-dir/m.json") != NULL);
    printf("  unwritable: %s\n", err);
    char **names = NULL;
    CHECK(rpt_merge_split_names("a,,b", 3, &names) != 0 && names == NULL);
    CHECK(rpt_merge_split_names("a,b", 3, &names) != 0);
    CHECK(rpt_merge_split_names("a,b,c", 3, &names) == 0 && strcmp(names[2], "c") == 0);
    if (names != NULL) {
        free(names[0]);
        free(names);
    }

    /* the report's reader on hostile merge metadata and expert ids */
    static const char *const bad[][2] = {
        {"{\"traceEvents\":[],\"metadata\":{\"merge\":{\"inputs\":3}}}",
         "metadata.merge.inputs is not an array"},
        {"{\"traceEvents\":[],\"metadata\":{\"merge\":{\"inputs\":[]}}}", "has 0 entries"},
        {"{\"traceEvents\":[],\"metadata\":{\"merge\":{\"inputs\":[{\"host_pid\":1,\"gpu_pid\":2},"
         "{\"host_pid\":3,\"gpu_pid\":1}]}}}",
         "shares a pid"},
        {"{\"traceEvents\":[],\"metadata\":{\"merge\":{\"inputs\":[{\"name\":4,\"host_pid\":1,"
         "\"gpu_pid\":2}]}}}",
         "inputs[0] is not an object"},
        {"{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"host\",\"name\":\"moe_host_sync\",\"ts\":1,"
         "\"dur\":1,\"pid\":1,\"tid\":1,\"args\":{\"experts\":\"99999999\"}}]}",
         "not an integer in 0..65535"},
        {"{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"host\",\"name\":\"moe_host_sync\",\"ts\":1,"
         "\"dur\":1,\"pid\":1,\"tid\":1,\"args\":{\"experts\":[1,\"x\"]}}]}",
         "not an integer in 0..65535"},
        {"{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"host\",\"name\":\"a\",\"ts\":1,"
         "\"dur\":1,\"pid\":1,\"tid\":1,\"args\":{\"probe\":1}}]}",
         "\"args.probe\" is not true or false"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rpt_summary *s = NULL;
        int rc = rpt_parse(bad[i][0], strlen(bad[i][0]), &s, err, sizeof err);
        CHECK(rc != 0 && s == NULL && strstr(err, bad[i][1]) != NULL);
        if (rc == 0 || strstr(err, bad[i][1]) == NULL) {
            fprintf(stderr, "  case %zu: '%s'\n", i, rc ? err : "accepted");
        }
        rpt_free(s);
    }
    /* an id list as an array reads as the string does */
    const char *arr = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"host\",\"name\":\"moe_host_sync\","
                      "\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":1,\"args\":{\"experts\":[7,0,7]}}]}";
    rpt_summary *s = NULL;
    CHECK(rpt_parse(arr, strlen(arr), &s, err, sizeof err) == 0);
    if (s != NULL) {
        CHECK(s->n_expert_ids == 3 && s->expert_ids[0] == 7 && s->expert_ids[1] == 0);
        rpt_rank_view v;
        CHECK(rpt_rank_view_build(s, &v) == 0 && v.n_experts == 8 && v.counts[7] == 2);
        rpt_rank_view_free(&v);
        rpt_free(s);
    }
}

/* A slice written twice in an input: merged as written, and said (the
 * report's check, through the merge's first read). */
static void test_repeated(void)
{
    char *text = th_read_file(path_in("rank1.json"));
    CHECK(text != NULL);
    if (text == NULL) {
        return;
    }
    const char *x = strstr(text, "\n,{\"ph\":\"X\"");
    const char *end = x != NULL ? strchr(x + 1, '\n') : NULL;
    CHECK(end != NULL);
    if (end == NULL) {
        free(text);
        return;
    }
    size_t n = strlen(text), at = (size_t)(end - text), ev = (size_t)(end - x);
    char *dup = malloc(n + ev + 1);
    CHECK(dup != NULL);
    if (dup != NULL) {
        memcpy(dup, text, at);
        memcpy(dup + at, x, ev); /* the event again, right after itself */
        memcpy(dup + at + ev, text + at, n - at + 1);
        write_text("rank1_repeated.json", dup);
        rpt_merge_input info[2];
        char err[1024] = "";
        int rc = merge(path_in("rank0.json"), path_in("rank1_repeated.json"), false,
                       path_in("repeated_merged.json"), info, err, sizeof err);
        CHECK(rc == RPT_MERGE_OK);
        if (rc != RPT_MERGE_OK) {
            fprintf(stderr, "  repeated: %s\n", err);
        } else {
            CHECK(info[0].dup_events == 0 && info[1].dup_events == 1);
            CHECK(info[1].first_dup_index == info[1].first_dup_of + 1);
            rpt_summary *s = NULL;
            CHECK(rpt_read_file(path_in("repeated_merged.json"), 0, &s, err, sizeof err) == 0);
            CHECK(s != NULL && s->n_dup_events == 1);
            char warn[512];
            CHECK(s != NULL && rpt_repeat_warning(s, warn, sizeof warn) > 0 &&
                  strstr(warn, "1 slice(s) repeat an earlier one exactly") != NULL);
            rpt_free(s);
        }
        free(dup);
    }
    free(text);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_merge WORKDIR\n");
        return 2;
    }
    dir = argv[1];
    mkdir(dir, 0777);
    th_gpu_init(&g);
    th_busy_init(&g, &busy, 4096);
    logbuf.quiet = 1;
    RUN(record_traces);
    RUN(test_same_boot_exact);
    RUN(test_other_boot);
    RUN(test_estimator);
    RUN(test_report);
    RUN(test_hostile);
    RUN(test_repeated);
    vku_busy_destroy(&g.dev, &busy);
    th_gpu_finish(&g);
    return th_done();
}
