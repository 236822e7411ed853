/* Native Perfetto traces (issue 12, docs/trace-format.md "Native Perfetto
 * traces"), on lavapipe with validation on. Every .pftrace this test writes
 * is decoded by Debian's `protoc --decode=perfetto.protos.Trace` against
 * src/export/perfetto_trace.proto, and its events, tracks, flows and clock
 * snapshots are counted in protoc's text and matched with the JSON trace the
 * same context wrote (VKPROF_TRACE_FORMAT=both); `vkprof report`'s summary
 * of the .pftrace equals that of the .json; the bytes per event of a
 * spans-only store (vkprof bench's export) are at most 32.
 *
 * Usage: test_pftrace PROTO_FILE  (skips, exit 77, only when protoc is
 * missing: scripts/setup.sh installs protobuf-compiler). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sim.h"
#include "timeline_common.h"
#include "trace_reader.h"

static const char *proto_file;

/* ---- protoc's decode, counted ------------------------------------------- */

typedef struct pf_counts {
    int packets, begins, ends, instants, descriptors, thread_descriptors, process_descriptors,
        snapshots, boottime_clocks, gpu_clocks, delta_clocks, flow_ids, terminating, cleared,
        interned_names, unknown_fields, metadata, counters, counter_tracks;
} pf_counts;

/* The line [q, q + n) is `text` (exact) or starts with it (prefix). */
static bool line_is(const char *q, size_t n, const char *text, bool prefix)
{
    size_t m = strlen(text);
    return prefix ? n >= m && memcmp(q, text, m) == 0 : n == m && memcmp(q, text, m) == 0;
}

/* protoc's text of `path`, or NULL (the failure is checked). */
static char *protoc_decode(const char *path)
{
    char dir[512], base[256], cmd[2048];
    snprintf(dir, sizeof dir, "%s", proto_file);
    char *slash = strrchr(dir, '/');
    CHECK(slash != NULL);
    if (slash == NULL) {
        return NULL;
    }
    *slash = '\0';
    snprintf(base, sizeof base, "%s", slash + 1);
    snprintf(cmd, sizeof cmd, "protoc --decode=perfetto.protos.Trace -I '%s' '%s' < '%s' 2>&1", dir,
             base, path);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    if (p == NULL) {
        return NULL;
    }
    size_t cap = 1 << 20, len = 0;
    char *text = malloc(cap);
    size_t r;
    while (text != NULL && (r = fread(text + len, 1, cap - len - 1, p)) > 0) {
        len += r;
        if (cap - len < 2) {
            char *q = realloc(text, cap * 2);
            if (q == NULL) {
                free(text);
                text = NULL;
                break;
            }
            text = q;
            cap *= 2;
        }
    }
    int st = pclose(p);
    CHECK(text != NULL);
    if (text == NULL) {
        return NULL;
    }
    text[len] = '\0';
    CHECK(st == 0);
    if (st != 0) {
        fprintf(stderr, "protoc failed on %s:\n%.2000s\n", path, text);
        free(text);
        return NULL;
    }
    return text;
}

static pf_counts decode_counts(const char *path)
{
    pf_counts c = {0};
    char *t = protoc_decode(path);
    if (t == NULL) {
        c.packets = -1;
        return c;
    }
    /* one pass over the lines, no libc search (a sanitizer's strstr
     * measures the whole rest of the text at every call) */
    for (const char *line = t; *line != '\0';) {
        const char *q = line;
        while (*q == ' ') {
            q++;
        }
        const char *nl = q;
        while (*nl != '\0' && *nl != '\n') {
            nl++;
        }
        const size_t n = (size_t)(nl - q);
        c.packets += q == line && line_is(q, n, "packet {", false);
        c.begins += line_is(q, n, "type: TYPE_SLICE_BEGIN", false);
        c.ends += line_is(q, n, "type: TYPE_SLICE_END", false);
        c.instants += line_is(q, n, "type: TYPE_INSTANT", false);
        c.counters += line_is(q, n, "type: TYPE_COUNTER", false);
        c.counter_tracks += line_is(q, n, "counter {", false);
        c.descriptors += line_is(q, n, "track_descriptor {", false);
        c.thread_descriptors += line_is(q, n, "thread {", false);
        c.process_descriptors += line_is(q, n, "process {", false);
        c.snapshots += line_is(q, n, "clock_snapshot {", false);
        c.boottime_clocks += line_is(q, n, "clock_id: 6", false);
        c.gpu_clocks += line_is(q, n, "clock_id: 65", false);
        c.delta_clocks += line_is(q, n, "is_incremental: true", false);
        c.flow_ids += line_is(q, n, "flow_ids: ", true);
        c.terminating += line_is(q, n, "terminating_flow_ids: ", true);
        c.cleared += line_is(q, n, "sequence_flags: 1", false);
        c.interned_names += line_is(q, n, "event_names {", false);
        c.metadata += line_is(q, n, "name: \"vkprof metadata\"", false);
        /* a field the .proto does not name prints as its number: "123: ..." */
        c.unknown_fields += *q >= '0' && *q <= '9';
        line = *nl == '\n' ? nl + 1 : nl;
    }
    free(t);
    return c;
}

/* ---- the JSON trace, counted ---------------------------------------------- */

typedef struct json_counts {
    int x_host, x_gpu, instants, flow_s, flow_f, host_threads, gpu_queues, counters;
    long long flows_meta;
} json_counts;

static json_counts json_count(const char *path)
{
    json_counts c = {0};
    cJSON *root = load_and_check(path);
    CHECK(root != NULL);
    if (root == NULL) {
        return c;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
    {
        const char *ph = cJSON_GetObjectItemCaseSensitive(e, "ph")->valuestring;
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
        const int pid = cJSON_GetObjectItemCaseSensitive(e, "pid")->valueint;
        if (strcmp(ph, "X") == 0) {
            if (strcmp(cat->valuestring, "gpu") == 0) {
                c.x_gpu++;
            } else {
                c.x_host++;
            }
        } else if (strcmp(ph, "i") == 0) {
            c.instants++;
        } else if (strcmp(ph, "s") == 0) {
            c.flow_s++;
        } else if (strcmp(ph, "f") == 0) {
            c.flow_f++;
        } else if (strcmp(ph, "C") == 0) {
            c.counters++;
        } else if (strcmp(ph, "M") == 0 && strcmp(name->valuestring, "thread_name") == 0) {
            if (pid == 1) {
                c.host_threads++;
            } else {
                c.gpu_queues++;
            }
        }
    }
    c.flows_meta = (long long)meta_i64(root, "flows", NULL);
    cJSON_Delete(root);
    return c;
}

/* ---- vkprof report, both formats ------------------------------------------- */

/* The text summary without its "vkprof report: PATH" line. */
static char *summary_of(const char *path)
{
    rpt_summary *s = NULL;
    char err[512] = "";
    int rc = rpt_read_file(path, 0, &s, err, sizeof err);
    CHECK(rc == 0);
    if (rc != 0) {
        fprintf(stderr, "rpt_read_file(%s): %s\n", path, err);
        return NULL;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    CHECK(m != NULL);
    if (m == NULL) {
        rpt_free(s);
        return NULL;
    }
    CHECK(rpt_print(s, "TRACE", m) == 0);
    fclose(m);
    rpt_free(s);
    return text;
}

/* vkprof report --svg of a trace, as text (NULL: it failed) */
static char *svg_of(const char *path)
{
    rpt_summary *s = NULL;
    char err[512] = "";
    if (rpt_read_file(path, 0, &s, err, sizeof err) != 0) {
        fprintf(stderr, "rpt_read_file(%s): %s\n", path, err);
        return NULL;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    int rc = m != NULL ? rpt_svg(s, "TRACE", m) : -1;
    if (m != NULL) {
        fclose(m);
    }
    rpt_free(s);
    if (rc != 0) {
        free(text);
        return NULL;
    }
    return text;
}

static void check_same_report(const char *json, const char *pftrace)
{
    char *a = summary_of(json), *b = summary_of(pftrace);
    if (a != NULL && b != NULL) {
        CHECK(strlen(a) > 100);
        CHECK(strcmp(a, b) == 0);
        if (strcmp(a, b) != 0) {
            fprintf(stderr, "--- report of %s:\n%s\n--- report of %s:\n%s\n", json, a, pftrace, b);
        }
    }
    free(a);
    free(b);
}

/* One slice or instant as a line: its track by name (the two formats number
 * tracks apart), its times in ns, its name, category and args. */
typedef struct ev_lines {
    char **v;
    int n;
} ev_lines;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static const char *track_name(const cJSON *events, int pid, int tid)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, events)
    {
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (cJSON_IsString(ph) && strcmp(ph->valuestring, "M") == 0 && cJSON_IsString(nm) &&
            strcmp(nm->valuestring, tid == 0 ? "process_name" : "thread_name") == 0 &&
            cJSON_GetObjectItemCaseSensitive(e, "pid")->valueint == pid &&
            cJSON_GetObjectItemCaseSensitive(e, "tid")->valueint == tid) {
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(e, "args"), "name");
            return cJSON_IsString(a) ? a->valuestring : "?";
        }
    }
    return "(unnamed)";
}

/* An object's members as "key=value" lines, sorted: the same whatever the
 * order the writer put them in (a .pftrace's annotations come back in their
 * own order). */
static char *sorted_members(const cJSON *obj)
{
    if (!cJSON_IsObject(obj)) {
        return cJSON_PrintUnformatted(obj);
    }
    int n = cJSON_GetArraySize(obj), k = 0;
    char **kv = calloc((size_t)n + 1, sizeof *kv);
    size_t total = 3;
    const cJSON *m;
    cJSON_ArrayForEach(m, obj)
    {
        char *v = cJSON_IsObject(m) ? sorted_members(m) : cJSON_PrintUnformatted(m);
        size_t len = strlen(m->string) + strlen(v != NULL ? v : "") + 2;
        kv[k] = malloc(len);
        snprintf(kv[k], len, "%s=%s", m->string, v != NULL ? v : "");
        total += len + 1;
        free(v);
        k++;
    }
    qsort(kv, (size_t)k, sizeof *kv, cmp_str);
    char *out = calloc(total, 1);
    strcat(out, "{");
    for (int i = 0; i < k; i++) {
        strcat(out, kv[i]);
        strcat(out, i + 1 < k ? "," : "");
        free(kv[i]);
    }
    strcat(out, "}");
    free(kv);
    return out;
}

static ev_lines lines_of(const cJSON *root)
{
    ev_lines l = {NULL, 0};
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    l.v = calloc((size_t)cJSON_GetArraySize(events) + 1, sizeof *l.v);
    const cJSON *e;
    cJSON_ArrayForEach(e, events)
    {
        const char *ph = cJSON_GetObjectItemCaseSensitive(e, "ph")->valuestring;
        if (l.v == NULL || (strcmp(ph, "X") != 0 && strcmp(ph, "i") != 0 && strcmp(ph, "C") != 0)) {
            continue;
        }
        const int pid = cJSON_GetObjectItemCaseSensitive(e, "pid")->valueint;
        const int tid = cJSON_GetObjectItemCaseSensitive(e, "tid")->valueint;
        char *args = sorted_members(cJSON_GetObjectItemCaseSensitive(e, "args"));
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        char line[2048];
        snprintf(line, sizeof line, "%s | %s / %s | %s %lld +%lld | %s | %s", ph,
                 track_name(events, pid, 0), track_name(events, pid, tid),
                 cJSON_IsString(cat) ? cat->valuestring : "-",
                 (long long)to_ns(cJSON_GetObjectItemCaseSensitive(e, "ts")),
                 (long long)to_ns(cJSON_GetObjectItemCaseSensitive(e, "dur")),
                 cJSON_IsString(nm) ? nm->valuestring : "-", args != NULL ? args : "null");
        free(args);
        l.v[l.n++] = strdup(line);
    }
    qsort(l.v, (size_t)l.n, sizeof *l.v, cmp_str);
    return l;
}

/* The two formats of one store: the same slices and instants, ns for ns, on
 * the same named tracks, with the same args, and the same metadata (the
 * .pftrace read back by vkprof report's reader). One export walk feeds both
 * writers; this is what that promises. */
static void check_identical(const char *json, const char *pftrace)
{
    char *jt = th_read_file(json);
    char *buf = NULL, err[512] = "";
    size_t blen = 0;
    int fmt = -1;
    CHECK(rpt_load_trace(pftrace, RPT_MAX_FILE_BYTES, &buf, &blen, &fmt, err, sizeof err) == 0);
    CHECK(fmt == RPT_FORMAT_PFTRACE);
    cJSON *a = jt != NULL ? cJSON_Parse(jt) : NULL;
    cJSON *b = buf != NULL ? cJSON_ParseWithLength(buf, blen) : NULL;
    CHECK(a != NULL && b != NULL);
    if (a != NULL && b != NULL) {
        ev_lines la = lines_of(a), lb = lines_of(b);
        CHECK(la.n > 0 && la.n == lb.n);
        int diff = 0;
        for (int i = 0; i < la.n && i < lb.n; i++) {
            if (strcmp(la.v[i], lb.v[i]) != 0 && diff++ < 5) {
                fprintf(stderr, "  json:    %s\n  pftrace: %s\n", la.v[i], lb.v[i]);
            }
        }
        CHECK(diff == 0);
        for (int i = 0; i < la.n; i++) {
            free(la.v[i]);
        }
        for (int i = 0; i < lb.n; i++) {
            free(lb.v[i]);
        }
        free(la.v);
        free(lb.v);
        const cJSON *ma = cJSON_GetObjectItemCaseSensitive(a, "metadata");
        cJSON *mb = cJSON_GetObjectItemCaseSensitive(b, "metadata");
        /* the .pftrace's own (its clocks and sequences): the only member
         * the JSON trace has no use for */
        CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(mb, "perfetto")));
        cJSON_DeleteItemFromObjectCaseSensitive(mb, "perfetto");
        char *x = sorted_members(ma), *y = sorted_members(mb);
        CHECK(cJSON_IsObject(ma) && x != NULL && y != NULL && strcmp(x, y) == 0);
        if (x != NULL && y != NULL && strcmp(x, y) != 0) {
            fprintf(stderr, "metadata differ:\n%s\n%s\n", x, y);
        }
        free(x);
        free(y);
        printf("%s and %s: %d slices and instants alike, ns for ns; metadata alike\n", json,
               pftrace, la.n);
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
    free(jt);
    free(buf);
}

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* ---- the reader on damaged files ---------------------------------------------- */

/* Every truncation and a few thousand byte changes of a real .pftrace: the
 * reader returns a trace or an error, never reads outside the buffer (the
 * sanitizer builds run this), and what it returns parses. */
static void check_reader_robust(const char *path)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (f == NULL) {
        return;
    }
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    CHECK(n > 0 && n < sizeof buf);
    CHECK(rpt_is_pftrace(buf, n));
    int ok = 0, refused = 0;
    char err[256];
    for (size_t cut = 0; cut <= n; cut++) {
        char *copy = malloc(cut ? cut : 1);
        memcpy(copy, buf, cut);
        char *json = NULL;
        size_t jlen = 0;
        if (rpt_pftrace_to_json(copy, cut, &json, &jlen, err, sizeof err) == 0) {
            rpt_summary *sm = NULL;
            if (rpt_parse(json, jlen, &sm, err, sizeof err) == 0) {
                rpt_free(sm);
            }
            ok++;
        } else {
            CHECK(err[0] != '\0');
            refused++;
        }
        free(json);
        free(copy);
    }
    CHECK(ok >= 1); /* the whole file */
    unsigned seed = 12345;
    for (int k = 0; k < 3000; k++) {
        char *copy = malloc(n);
        memcpy(copy, buf, n);
        for (int m = 0; m < 1 + k % 3; m++) {
            seed = seed * 1103515245u + 12345u;
            copy[(seed >> 8) % n] = (char)(seed >> 20);
        }
        char *json = NULL;
        size_t jlen = 0;
        if (rpt_pftrace_to_json(copy, n, &json, &jlen, err, sizeof err) == 0) {
            rpt_summary *sm = NULL;
            if (rpt_parse(json, jlen, &sm, err, sizeof err) == 0) {
                rpt_free(sm);
            }
        }
        free(json);
        free(copy);
    }
    printf("%s: %zu truncations: %d read, %d refused; 3000 damaged copies read or refused\n", path,
           n + 1, ok, refused);
}

/* ---- the GPU busy counter (issue 26) ------------------------------------------- */

/* Every counter point of the JSON trace against the trace's own slices,
 * recomputed here: for each pair of consecutive step instants, the union of
 * the queue's GPU slices inside it, as a percentage with 3 decimals.
 * Returns the number of points (each checked). */
static int check_busy(const char *path, int want_points, bool overlapping)
{
    /* (a trace with overlapping slices fails load_and_check's own check) */
    char *text = overlapping ? th_read_file(path) : NULL;
    cJSON *root = overlapping ? (text != NULL ? cJSON_Parse(text) : NULL) : load_and_check(path);
    free(text);
    CHECK(root != NULL);
    if (root == NULL) {
        return 0;
    }
    long long st[64], gs[64], ge[64];
    int ns = 0, ng = 0, points = 0, bad = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
    {
        const char *ph = cJSON_GetObjectItemCaseSensitive(e, "ph")->valuestring;
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        if (strcmp(ph, "i") == 0 && cJSON_IsString(cat) && strcmp(cat->valuestring, "step") == 0 &&
            ns < 64) {
            st[ns++] = to_ns(cJSON_GetObjectItemCaseSensitive(e, "ts"));
        } else if (strcmp(ph, "X") == 0 && strcmp(cat->valuestring, "gpu") == 0 && ng < 64) {
            gs[ng] = to_ns(cJSON_GetObjectItemCaseSensitive(e, "ts"));
            ge[ng] = gs[ng] + to_ns(cJSON_GetObjectItemCaseSensitive(e, "dur"));
            ng++;
        }
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
    {
        if (strcmp(cJSON_GetObjectItemCaseSensitive(e, "ph")->valuestring, "C") != 0) {
            continue;
        }
        points++;
        const long long t = to_ns(cJSON_GetObjectItemCaseSensitive(e, "ts"));
        const cJSON *v =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e, "args"), "%");
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
        CHECK(cJSON_IsString(nm) && strncmp(nm->valuestring, "GPU busy, ", 10) == 0);
        /* its step: from this step instant to the next */
        long long end = -1;
        for (int k = 0; k < ns; k++) {
            if (st[k] > t && (end < 0 || st[k] < end)) {
                end = st[k];
            }
        }
        /* the union of the slices clipped to [t, end): sorted, swept */
        long long cs[64], ce[64];
        int nc = 0;
        for (int g2 = 0; g2 < ng && end > t; g2++) {
            long long s2 = gs[g2] > t ? gs[g2] : t, e2 = ge[g2] < end ? ge[g2] : end;
            if (e2 > s2) {
                int at = nc++;
                while (at > 0 && cs[at - 1] > s2) {
                    cs[at] = cs[at - 1];
                    ce[at] = ce[at - 1];
                    at--;
                }
                cs[at] = s2;
                ce[at] = e2;
            }
        }
        long long busy_ns = 0, run_s = 0, run_e = -1;
        for (int k = 0; k < nc; k++) {
            if (run_e >= 0 && cs[k] <= run_e) {
                run_e = ce[k] > run_e ? ce[k] : run_e;
                continue;
            }
            busy_ns += run_e >= 0 ? run_e - run_s : 0;
            run_s = cs[k];
            run_e = ce[k];
        }
        busy_ns += run_e >= 0 ? run_e - run_s : 0;
        const long long milli =
            end > t ? (long long)((double)busy_ns * 100000.0 / (double)(end - t) + 0.5) : -1;
        const long long got = cJSON_IsNumber(v) ? (long long)(v->valuedouble * 1000.0 + 0.5) : -2;
        if (got != milli && bad++ < 3) {
            fprintf(stderr, "busy at %lld ns: the trace says %lld, the slices %lld (/1000 %%)\n", t,
                    got, milli);
        }
        CHECK(milli > 0); /* every step here ran GPU work */
    }
    CHECK(bad == 0);
    CHECK(points == want_points);
    printf("%s: %d GPU busy points, each the union of its step's slices\n", path, points);
    cJSON_Delete(root);
    return points;
}

/* ---- the traces ------------------------------------------------------------- */

static void *worker(void *arg)
{
    vkprof_context ctx = arg;
    vkprof_set_thread_name(ctx, "worker");
    for (int i = 0; i < 5; i++) {
        vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_MLP);
        vkprof_span in = vkprof_span_begin(ctx, VKPROF_BUCKET_ATTENTION);
        vkprof_span_end(ctx, &in);
        vkprof_span_end(ctx, &s);
    }
    return NULL;
}

/* Both formats of one context, matched event for event. */
static void check_pair(const char *json, const char *pftrace, int host_threads_expected)
{
    json_counts j = json_count(json);
    pf_counts p = decode_counts(pftrace);
    CHECK(p.packets > 0);
    if (p.packets <= 0) {
        return;
    }
    printf("%s: %d packets, %d slices (JSON: %d host + %d GPU), %d instants, %d flows, %d "
           "track descriptors, %d clock snapshots; %lld bytes (JSON %lld)\n",
           pftrace, p.packets, p.begins, j.x_host, j.x_gpu, p.instants, p.flow_ids, p.descriptors,
           p.snapshots, file_size(pftrace), file_size(json));
    CHECK(p.unknown_fields == 0);
    CHECK(p.counters == j.counters);
    CHECK(p.counter_tracks == (j.counters > 0 ? j.gpu_queues : 0));
    CHECK(p.begins == j.x_host + j.x_gpu);
    CHECK(p.ends == p.begins);
    CHECK(p.instants == j.instants + 1); /* the steps and the metadata */
    CHECK(p.metadata == 1);
    CHECK(p.flow_ids == j.flow_s);
    CHECK(p.terminating == j.flow_f);
    CHECK(p.flow_ids == p.terminating);
    CHECK((long long)p.flow_ids == j.flows_meta);
    CHECK(p.thread_descriptors == j.host_threads);
    CHECK(j.host_threads == host_threads_expected);
    CHECK(p.process_descriptors == 1);
    /* the host process, the GPU, each host thread, each queue (+ overlaps) */
    CHECK(p.descriptors >= 2 + j.host_threads + j.gpu_queues);
    /* one BOOTTIME snapshot; one per track sequence anchoring the delta clock */
    CHECK(p.boottime_clocks == 1);
    CHECK(p.delta_clocks >= j.host_threads);
    CHECK(p.cleared == 1 + p.delta_clocks); /* every sequence starts cleared, once */
    check_same_report(json, pftrace);
}

static void test_gpu_trace(void)
{
    vkprof_context ctx = make_ctx(false, false);
    CHECK(vkprof_trace_begin(ctx, 0) == VKPROF_OK);
    vkprof_set_thread_name(ctx, "decode \"main\"");
    vkprof_bucket layer;
    CHECK(vkprof_register_bucket(ctx, "layer", false, &layer) == VKPROF_OK);
    for (int step = 0; step < 4; step++) {
        vkprof_span ls = vkprof_span_begin(ctx, layer);
        vkprof_span as = vkprof_span_begin(ctx, VKPROF_BUCKET_ATTENTION);
        static const vkprof_phase phases[2] = {VKPROF_PHASE_ATTENTION, VKPROF_PHASE_MLP_DOWN};
        for (int k = 0; k < 2; k++) {
            CHECK_VK(vku_begin(&g.dev));
            CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, phases[k]) == VKPROF_OK);
            vku_busy_record(&g.dev, &busy, g.dev.cmd, 100);
            /* the second scope of a step carries args (vkprof_cmd_end_args) */
            char groups[32];
            snprintf(groups, sizeof groups, "%d,1,1", 40 + step);
            const vkprof_arg args[2] = {{"groups", groups}, {"note", "a \"q\""}};
            CHECK(vkprof_cmd_end_args(ctx, g.dev.cmd, phases[k], args, k == 1 ? 2u : 0u) ==
                  VKPROF_OK);
            CHECK_VK(vku_submit_wait(&g.dev));
            CHECK(vkprof_resolve(ctx, NULL) == VKPROF_OK);
            CHECK(vkprof_accumulate(ctx, phases[k]) == VKPROF_OK);
        }
        vkprof_span_end(ctx, &as);
        vkprof_span ms = vkprof_span_begin(ctx, VKPROF_BUCKET_MOE_ROUTER);
        uint32_t experts[3] = {3, 17, (uint32_t)(40 + step)};
        CHECK(vkprof_span_annotate_ids(&ms, "experts", experts, 3));
        CHECK(vkprof_span_annotate(&ms, "note", "tab\there \"q\""));
        vkprof_span_end(ctx, &ms);
        vkprof_rendezvous(ctx, VKPROF_BUCKET_ALLREDUCE_MLP_RENDEZVOUS, NULL, NULL);
        vkprof_span_end(ctx, &ls);
        vkprof_step(ctx);
    }
    pthread_t th;
    CHECK(pthread_create(&th, NULL, worker, ctx) == 0);
    pthread_join(th, NULL);

    char json[300], pf[300];
    snprintf(json, sizeof json, "%s/both.json", tmpdir);
    snprintf(pf, sizeof pf, "%s/both.pftrace", tmpdir);
    CHECK(vkprof_trace_write_set(&ctx, 1, json, VKPROF_TRACE_FORMAT_BOTH) == VKPROF_OK);
    CHECK(file_size(json) > 0 && file_size(pf) > 0);
    check_pair(json, pf, 2);
    /* 4 step instants: 3 steps between them, each a counter point */
    check_busy(json, 3, false);
    check_identical(json, pf);
    check_reader_robust(pf);
    pf_counts p = decode_counts(pf);
    /* the GPU scopes were recorded inside host spans: each has its flow */
    CHECK(p.terminating == 8);
    /* each mlp_down slice has its args as string debug annotations, the
     * keys interned once ("note" is a span annotation's key as well) */
    char *text = protoc_decode(pf);
    CHECK(text != NULL);
    for (int step = 0; text != NULL && step < 4; step++) {
        char want[64];
        snprintf(want, sizeof want, "string_value: \"%d,1,1\"\n", 40 + step);
        const char *at = strstr(text, want);
        CHECK(at != NULL && strstr(at + 1, want) == NULL);
    }
    int quoted = 0, groups_names = 0;
    for (const char *q = text;
         q != NULL && (q = strstr(q, "string_value: \"a \\\"q\\\"\"")) != NULL; q++) {
        quoted++;
    }
    for (const char *q = text; q != NULL && (q = strstr(q, "name: \"groups\"")) != NULL; q++) {
        groups_names++;
    }
    CHECK(quoted == 4);
    CHECK(groups_names == 1);
    free(text);
    /* the GPU clock: one snapshot per calibration point */
    vkprof_calibration cal;
    vkprof_get_calibration(ctx, &cal);
    CHECK(cal.points > 0);
    CHECK(p.gpu_clocks >= 1 && (uint32_t)p.gpu_clocks <= cal.points);

    /* the extension alone picks the format; the other file is not written */
    char pf2[300], side[300];
    snprintf(pf2, sizeof pf2, "%s/only.perfetto-trace", tmpdir);
    snprintf(side, sizeof side, "%s/only.json", tmpdir);
    CHECK(vkprof_trace_write(ctx, pf2) == VKPROF_OK);
    CHECK(file_size(pf2) > 0 && file_size(side) < 0);
    pf_counts p2 = decode_counts(pf2);
    CHECK(p2.begins == p.begins && p2.flow_ids == p.flow_ids);
    /* and the Perfetto format asked for is written at any path */
    char forced[300];
    snprintf(forced, sizeof forced, "%s/forced.json", tmpdir);
    CHECK(vkprof_trace_write_set(&ctx, 1, forced, VKPROF_TRACE_FORMAT_PFTRACE) == VKPROF_OK);
    pf_counts p3 = decode_counts(forced);
    CHECK(p3.begins == p.begins);
    vkprof_destroy(ctx);
}

/* vkprof bench's export: a store of spans only; at most 32 bytes each. */
static void test_bytes_per_event(void)
{
    enum { N = 200000 };
    vkprof_context ctx = make_ctx(false, false);
    CHECK(vkprof_trace_begin(ctx, N) == VKPROF_OK);
    for (int i = 0; i < N; i++) {
        vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_ATTENTION);
        vkprof_span_end(ctx, &s);
    }
    uint64_t recorded = 0, dropped = 0;
    vkprof_trace_counts(ctx, &recorded, &dropped);
    CHECK(recorded == N);
    char json[300], pf[300];
    snprintf(json, sizeof json, "%s/spans.json", tmpdir);
    snprintf(pf, sizeof pf, "%s/spans.pftrace", tmpdir);
    CHECK(vkprof_trace_write_set(&ctx, 1, json, VKPROF_TRACE_FORMAT_BOTH) == VKPROF_OK);
    long long bytes = file_size(pf);
    double per = (double)bytes / (double)recorded;
    printf("spans only: %llu events, %lld bytes: %.2f bytes per event (JSON %.1f)\n",
           (unsigned long long)recorded, bytes, per, (double)file_size(json) / (double)recorded);
    CHECK(bytes > 0 && per <= 32.0);
    check_pair(json, pf, 1);
    vkprof_destroy(ctx);
}

/* GPU scopes that overlap on their queue (two executions at once; lavapipe
 * runs one at a time, so the simulated table reports chosen timestamps):
 * the one that does not nest goes to an overlap track, and reads back onto
 * its queue, as the JSON trace has it. */
static void test_overlap(void)
{
    sim_reset();
    vkprof_context ctx = make_ctx(true, false);
    CHECK(vkprof_trace_begin(ctx, 0) == VKPROF_OK);
    /* the fake stamps sit 1 ms after the device's own clock now (lavapipe's
     * ticks are host ns; a GPU's are not), so that they map into the trace */
    uint64_t base = vkprof_host_now_ns() + 1000000u;
    {
        const VkCalibratedTimestampInfoEXT ci = {
            .sType = VK_STRUCTURE_TYPE_CALIBRATED_TIMESTAMP_INFO_EXT,
            .timeDomain = VK_TIME_DOMAIN_DEVICE_EXT};
        uint64_t now = 0, dev = 0;
        if (g.dev.calibrated_ext && vkGetCalibratedTimestampsEXT != NULL &&
            vkGetCalibratedTimestampsEXT(g.dev.device, 1, &ci, &now, &dev) == VK_SUCCESS) {
            const double period = g.dev.props.limits.timestampPeriod;
            base = now + (uint64_t)(1e6 / (period > 0 ? period : 1.0));
        }
    }
    static const uint64_t at[3][2] = {{0, 3000}, {2000, 4000}, {2500, 2600}};
    /* a step around them (the busy counter: their union, 4000 ticks, not
     * their sum, 5100) */
    vkprof_step(ctx);
    g_sim.fake_results = true;
    for (int k = 0; k < 3; k++) {
        g_sim.fake_value[0] = base + at[k][0];
        g_sim.fake_value[1] = base + at[k][1];
        CHECK_VK(vku_begin(&g.dev));
        CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        vku_busy_record(&g.dev, &busy, g.dev.cmd, 10);
        CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        CHECK_VK(vku_submit_wait(&g.dev));
        CHECK(vkprof_resolve(ctx, NULL) == VKPROF_OK);
        CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
    }
    g_sim.fake_results = false;
    struct timespec pause = {0, 5 * 1000000L}; /* past the fake stamps (1 ms ahead) */
    nanosleep(&pause, NULL);
    vkprof_step(ctx);
    char json[300], pf[300];
    snprintf(json, sizeof json, "%s/overlap.json", tmpdir);
    snprintf(pf, sizeof pf, "%s/overlap.pftrace", tmpdir);
    CHECK(vkprof_trace_write_set(&ctx, 1, json, VKPROF_TRACE_FORMAT_BOTH) == VKPROF_OK);
    /* (not load_and_check: it fails the JSON trace's overlapping slices) */
    FILE *jf = fopen(json, "rb");
    CHECK(jf != NULL);
    static char jt[1 << 16];
    size_t jn = jf ? fread(jt, 1, sizeof jt - 1, jf) : 0;
    if (jf != NULL) {
        fclose(jf);
    }
    jt[jn] = '\0';
    int x_gpu = 0;
    for (const char *q = strstr(jt, "\"cat\":\"gpu\""); q != NULL;
         q = strstr(q + 1, "\"cat\":\"gpu\"")) {
        x_gpu++;
    }
    CHECK(x_gpu == 3);
    pf_counts p = decode_counts(pf);
    CHECK(p.begins == 3 && p.ends == 3);
    char *t = protoc_decode(pf);
    CHECK(t != NULL && strstr(t, "(overlap 1)") != NULL && strstr(t, "(overlap 2)") == NULL);
    CHECK(t != NULL && strstr(t, "uint_value: 1\n        name: \"overlapping_slices\"\n") != NULL);
    free(t);
    check_same_report(json, pf);
    check_identical(json, pf);
    check_busy(json, 1, true);
    vkprof_destroy(ctx);
}

/* Rotation with an outer phase (issue 26): each step's command buffer is a
 * scope of an outer phase, stamped in every step, around K = 1 stamped call
 * of 3. The busy counter is written from them (desc.trace_gpu_busy
 * ENABLED): each point the union of its step's slices, in both formats;
 * the metadata names the outer phase and says busy is measured while the
 * steps are not whole. Without ENABLED, or with no outer phase, neither. */
static uint64_t json_u64(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 ? (uint64_t)v->valuedouble : UINT64_MAX;
}

static void rotate_outer_trace(const char *name, vkprof_feature busy_flag, bool outer)
{
    vkprof_context_desc d = th_desc(&g, &logbuf, false);
    d.enable = VKPROF_ENABLE_ON;
    d.host_level = VKPROF_HOST_ALL;
    d.report_every = UINT32_MAX;
    d.timing_mode = VKPROF_TIMING_RING;
    d.shared_boundaries = true;
    d.rotate_scopes = 1;
    d.host_query_reset = g.dev.host_query_reset;
    d.trace_gpu_busy = busy_flag;
    vkprof_context ctx = th_ctx(&d);
    CHECK(ctx != NULL);
    if (ctx == NULL) {
        return;
    }
    CHECK(vkprof_trace_begin(ctx, 0) == VKPROF_OK);
    vkprof_phase cb;
    CHECK(vkprof_register_phase(ctx, "command_buffer", &cb) == VKPROF_OK);
    if (outer) {
        CHECK(vkprof_set_phase_flags(ctx, cb, VKPROF_PHASE_FLAG_OUTER) == VKPROF_OK);
    }
    static const vkprof_phase inner[3] = {VKPROF_PHASE_NORM, VKPROF_PHASE_ATTENTION,
                                          VKPROF_PHASE_MLP_DOWN};
    enum { STEPS = 7 };
    vkprof_step(ctx); /* the first step event: 7 steps, 7 points */
    for (int step = 0; step < STEPS; step++) {
        vkprof_span sp = vkprof_span_begin(ctx, VKPROF_BUCKET_ATTENTION);
        CHECK_VK(vku_begin(&g.dev));
        const vkprof_result r0 = vkprof_cmd_begin(ctx, g.dev.cmd, cb);
        CHECK(r0 == VKPROF_OK || (!outer && r0 == VKPROF_DISABLED));
        for (int k = 0; k < 3; k++) {
            if (k) {
                vku_compute_barrier(g.dev.cmd);
            }
            vkprof_result r = vkprof_cmd_begin(ctx, g.dev.cmd, inner[k]);
            CHECK(r == VKPROF_OK || r == VKPROF_DISABLED);
            vku_busy_record(&g.dev, &busy, g.dev.cmd, 20);
            r = vkprof_cmd_end(ctx, g.dev.cmd, inner[k]);
            CHECK(r == VKPROF_OK || r == VKPROF_DISABLED);
        }
        (void)vkprof_cmd_end(ctx, g.dev.cmd, cb);
        CHECK_VK(vkEndCommandBuffer(g.dev.cmd));
        th_submit_wait(&g, ctx, 1, &g.dev.cmd);
        CHECK(vkprof_collect(ctx) == VKPROF_OK);
        vkprof_span_end(ctx, &sp);
        vkprof_step(ctx);
    }
    /* the outer phase: every step, exact, and flagged in the snapshot */
    vkprof_phase_stats st = th_phase(ctx, cb);
    CHECK(!outer || st.count == STEPS);
    CHECK_EQ_U64(st.flags, outer ? VKPROF_PHASE_FLAG_OUTER : 0u);
    CHECK(!outer || st.est_total_ns == st.total_ns);
    char json[300], pf[300];
    snprintf(json, sizeof json, "%s/%s.json", tmpdir, name);
    snprintf(pf, sizeof pf, "%s/%s.pftrace", tmpdir, name);
    CHECK(vkprof_trace_write_set(&ctx, 1, json, VKPROF_TRACE_FORMAT_BOTH) == VKPROF_OK);
    const bool measured = outer && busy_flag == VKPROF_FEATURE_ENABLED;
    check_pair(json, pf, 1);
    check_busy(json, measured ? STEPS : 0, false);
    cJSON *root = load_and_check(json);
    CHECK(root != NULL);
    const cJSON *samp = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(root, "metadata"), "gpu_sampling");
    CHECK(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(samp, "whole_steps")));
    CHECK(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(samp, "busy_measured")) &&
          cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(samp, "busy_measured")) == measured);
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(samp, "outer_phases");
    CHECK(outer ? cJSON_IsArray(op) && cJSON_GetArraySize(op) == 1 : op == NULL);
    CHECK(!outer || (cJSON_IsString(cJSON_GetArrayItem(op, 0)) &&
                     strcmp(cJSON_GetArrayItem(op, 0)->valuestring, "command_buffer") == 0));
    /* the slices are a sample: each phase's estimate, as the snapshot has
     * it (issue 26: vkprof report read them as the whole) */
    const cJSON *est = cJSON_GetObjectItemCaseSensitive(samp, "estimates");
    CHECK(cJSON_IsObject(est) && cJSON_GetArraySize(est) == 4);
    uint64_t timed = 0;
    for (int k = 0; k < 4; k++) {
        const vkprof_phase ph = k < 3 ? inner[k] : cb;
        const vkprof_phase_stats ps = th_phase(ctx, ph);
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(est, ps.name);
        CHECK(cJSON_IsObject(e));
        CHECK_EQ_U64(json_u64(e, "calls"), STEPS);
        CHECK_EQ_U64(json_u64(e, "timed"), ps.count);
        CHECK_EQ_U64(json_u64(e, "est_total_ns"), ps.est_total_ns);
        CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "outer")) == (outer && k == 3));
        timed += (outer && k == 3) ? 0 : ps.count;
    }
    CHECK_EQ_U64(timed, STEPS); /* one call a step (K = 1) */
    cJSON_Delete(root);
    /* vkprof report: busy and idle from the outer scopes, or not measured */
    char *rep = summary_of(pf);
    CHECK(rep != NULL);
    if (rep != NULL) {
        CHECK((strstr(rep, ": not measured (only part of each") == NULL) == measured);
        CHECK((strstr(rep, "idle) over 7 token(s) with timed GPU work") != NULL) == measured);
        CHECK((strstr(rep, "from the outer scopes around all of a token's work, over the "
                           "tokens that hold them: command_buffer;") != NULL) == measured);
        /* the slices called a sample, and the estimates after them */
        CHECK(strstr(rep, "GPU phases (the trace's slices: a sample)") != NULL);
        CHECK(strstr(rep, outer ? "GPU phases, estimated: the slices above are a sample (7 of 21 "
                                  "calls timed, a rotating window); each phase's mean times its "
                                  "calls, over 8 token(s)"
                                : "GPU phases, estimated: the slices above are a sample (7 of 28 "
                                  "calls timed, a rotating window)") != NULL);
        CHECK((strstr(rep, "command_buffer (outer: stamped in every timed token, exact): ") !=
               NULL) == outer);
        free(rep);
    }
    /* the SVG's GPU bars: the estimates, not the slices */
    char *svg = svg_of(pf);
    CHECK(svg != NULL);
    if (svg != NULL) {
        CHECK(strstr(svg, ">GPU phases, estimated (the trace's slices are a sample) (ms per "
                          "token~; % of their sum)<") != NULL);
        CHECK(strstr(svg, ">GPU phases (ms per") == NULL);
        free(svg);
    }
    vkprof_destroy(ctx);
}

/* Two contexts in one trace: a phase registered in the first but run only
 * in the second still has its estimate (it was dropped: the name was
 * taken as written with the first context's figures) */
static void estimates_across_contexts(void)
{
    vkprof_context c[2];
    for (int k = 0; k < 2; k++) {
        vkprof_context_desc d = th_desc(&g, &logbuf, false);
        d.enable = VKPROF_ENABLE_ON;
        d.report_every = UINT32_MAX;
        d.timing_mode = VKPROF_TIMING_RING;
        d.rotate_scopes = 1;
        d.host_query_reset = g.dev.host_query_reset;
        c[k] = th_ctx(&d);
        CHECK(c[k] != NULL);
        if (c[k] == NULL) {
            return;
        }
        CHECK(vkprof_trace_begin(c[k], 0) == VKPROF_OK);
    }
    vkprof_phase a, b;
    CHECK(vkprof_register_phase(c[0], "late", &a) == VKPROF_OK); /* never run there */
    CHECK(vkprof_register_phase(c[1], "late", &b) == VKPROF_OK);
    enum { STEPS = 4 };
    for (int step = 0; step < STEPS; step++) {
        CHECK_VK(vku_begin(&g.dev));
        for (int k = 0; k < 2; k++) {
            vkprof_result r = vkprof_cmd_begin(c[1], g.dev.cmd, b);
            CHECK(r == VKPROF_OK || r == VKPROF_DISABLED);
            vku_busy_record(&g.dev, &busy, g.dev.cmd, 4);
            (void)vkprof_cmd_end(c[1], g.dev.cmd, b);
        }
        CHECK_VK(vkEndCommandBuffer(g.dev.cmd));
        th_submit_wait(&g, c[1], 1, &g.dev.cmd);
        CHECK(vkprof_collect(c[1]) == VKPROF_OK);
        vkprof_step(c[1]);
    }
    char json[300];
    snprintf(json, sizeof json, "%s/estimates2.json", tmpdir);
    CHECK(vkprof_trace_write_set(c, 2, json, VKPROF_TRACE_FORMAT_JSON) == VKPROF_OK);
    cJSON *root = load_and_check(json);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "metadata"),
                                             "gpu_sampling"),
            "estimates"),
        "late");
    const vkprof_phase_stats ps = th_phase(c[1], b);
    CHECK(cJSON_IsObject(e));
    CHECK_EQ_U64(json_u64(e, "calls"), 2 * STEPS);
    CHECK_EQ_U64(json_u64(e, "timed"), ps.count);
    CHECK_EQ_U64(json_u64(e, "est_total_ns"), ps.est_total_ns);
    cJSON_Delete(root);
    vkprof_destroy(c[0]);
    vkprof_destroy(c[1]);
}

static void test_rotate_outer(void)
{
    estimates_across_contexts();
    rotate_outer_trace("outer", VKPROF_FEATURE_ENABLED, true);
    rotate_outer_trace("outer-unknown", VKPROF_FEATURE_UNKNOWN, true);
    rotate_outer_trace("no-outer", VKPROF_FEATURE_ENABLED, false);
}

/* A trace with nothing in it still decodes and reads. */
static void test_empty(void)
{
    vkprof_context ctx = make_ctx(false, false);
    CHECK(vkprof_trace_begin(ctx, 0) == VKPROF_OK);
    char pf[300];
    snprintf(pf, sizeof pf, "%s/empty.pftrace", tmpdir);
    CHECK(vkprof_trace_write(ctx, pf) == VKPROF_OK);
    pf_counts p = decode_counts(pf);
    CHECK(p.packets > 0 && p.begins == 0 && p.metadata == 1 && p.boottime_clocks == 1);
    char *s = summary_of(pf);
    CHECK(s != NULL);
    free(s);
    vkprof_destroy(ctx);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_pftrace PROTO_FILE\n");
        return 2;
    }
    proto_file = argv[1];
    if (system("protoc --version > /dev/null 2>&1") != 0) {
        printf("SKIP: protoc is not installed (apt-get install protobuf-compiler; "
               "scripts/setup.sh does)\n");
        return 77;
    }
    tl_init();
    test_gpu_trace();
    test_bytes_per_event();
    test_overlap();
    test_rotate_outer();
    test_empty();
    return tl_finish();
}
