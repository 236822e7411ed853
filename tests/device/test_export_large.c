/* A large trace through the streaming exporter (issue 12), on lavapipe with
 * validation on: 2 threads record 3-deep nested spans (about 260k events,
 * a bucket whose name needs escaping, annotations), the main thread GPU
 * scopes inside spans (flows) and steps. The file must be one valid JSON
 * document (checked by a strict validator here, the whole file at once),
 * every event line must parse (cJSON, line by line: a whole-document cJSON
 * tree of 260k events would take hundreds of MiB), every recorded event
 * must be there once, tracks in order and nested, the counts equal to the
 * metadata's, one flow per GPU scope. With VKPROF_HOST_CLOCK=monotonic (the
 * second registration) every span's ts and dur must equal, to the ns, what
 * the span's token and vkprof_span_end said. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "timeline_common.h"

#include "base/json.h"
#include "export/trace_format.h"

#define THREADS 2
#define TOKENS_PER_THREAD 21700 /* 6 spans a token: 130200 spans a thread */
#define SPANS_PER_TOKEN 6
#define GPU_SCOPES 40
#define CAPACITY (THREADS * TOKENS_PER_THREAD * SPANS_PER_TOKEN + 4 * GPU_SCOPES + 64)

static const char k_weird[] = "we\"ird\\ na\tme \x01 \xc3\xa9";

typedef struct expect {
    uint64_t start; /* the token's start_ns: CLOCK_MONOTONIC ns in the fallback */
    uint64_t dur;   /* what vkprof_span_end returned */
} expect;

typedef struct worker {
    vkprof_context ctx;
    vkprof_bucket weird;
    expect *spans;
    uint32_t count;
    char name[32];
} worker;

static void span_done(worker *w, vkprof_span *s)
{
    uint64_t start = s->start_ns;
    uint64_t dur = vkprof_span_end(w->ctx, s);
    w->spans[w->count++] = (expect){start, dur};
}

static void *work(void *arg)
{
    worker *w = arg;
    vkprof_set_thread_name(w->ctx, w->name);
    for (uint32_t t = 0; t < TOKENS_PER_THREAD; t++) {
        vkprof_span a = vkprof_span_begin(w->ctx, VKPROF_BUCKET_ATTENTION);
        if (t % 64 == 0) {
            CHECK(vkprof_span_annotate(&a, "token", w->name));
        }
        for (int k = 0; k < 2; k++) {
            vkprof_span b = vkprof_span_begin(w->ctx, k ? w->weird : VKPROF_BUCKET_MLP);
            vkprof_span c = vkprof_span_begin(w->ctx, VKPROF_BUCKET_NORM);
            span_done(w, &c);
            span_done(w, &b);
        }
        vkprof_span d = vkprof_span_begin(w->ctx, VKPROF_BUCKET_ATTN_PROJ);
        span_done(w, &d);
        span_done(w, &a);
    }
    return NULL;
}

/* ---- a strict JSON validator (RFC 8259), the whole document ------------- */

typedef struct jv {
    const char *p, *end;
    int depth;
} jv;

static void ws(jv *v)
{
    while (v->p < v->end && (*v->p == ' ' || *v->p == '\n' || *v->p == '\r' || *v->p == '\t')) {
        v->p++;
    }
}

static bool lit(jv *v, const char *s)
{
    size_t n = strlen(s);
    if ((size_t)(v->end - v->p) < n || memcmp(v->p, s, n) != 0) {
        return false;
    }
    v->p += n;
    return true;
}

static bool string(jv *v)
{
    if (v->p >= v->end || *v->p != '"') {
        return false;
    }
    for (v->p++; v->p < v->end; v->p++) {
        unsigned char c = (unsigned char)*v->p;
        if (c == '"') {
            v->p++;
            return true;
        }
        if (c < 0x20) {
            return false;
        }
        if (c == '\\') {
            v->p++;
            if (v->p >= v->end) {
                return false;
            }
            if (*v->p == 'u') {
                for (int i = 0; i < 4; i++) {
                    v->p++;
                    if (v->p >= v->end || strchr("0123456789abcdefABCDEF", *v->p) == NULL) {
                        return false;
                    }
                }
            } else if (strchr("\"\\/bfnrt", *v->p) == NULL) {
                return false;
            }
        }
    }
    return false;
}

static bool digits(jv *v)
{
    const char *s = v->p;
    while (v->p < v->end && *v->p >= '0' && *v->p <= '9') {
        v->p++;
    }
    return v->p > s;
}

static bool number(jv *v)
{
    if (v->p < v->end && *v->p == '-') {
        v->p++;
    }
    if (v->p < v->end && *v->p == '0') {
        v->p++;
    } else if (!digits(v)) {
        return false;
    }
    if (v->p < v->end && *v->p == '.') {
        v->p++;
        if (!digits(v)) {
            return false;
        }
    }
    if (v->p < v->end && (*v->p == 'e' || *v->p == 'E')) {
        v->p++;
        if (v->p < v->end && (*v->p == '+' || *v->p == '-')) {
            v->p++;
        }
        if (!digits(v)) {
            return false;
        }
    }
    return true;
}

static bool value(jv *v);

static bool container(jv *v, char close, bool object)
{
    if (++v->depth > 64) {
        return false;
    }
    v->p++;
    ws(v);
    if (v->p < v->end && *v->p == close) {
        v->p++;
        v->depth--;
        return true;
    }
    for (;;) {
        ws(v);
        if (object) {
            if (!string(v)) {
                return false;
            }
            ws(v);
            if (v->p >= v->end || *v->p != ':') {
                return false;
            }
            v->p++;
        }
        if (!value(v)) {
            return false;
        }
        ws(v);
        if (v->p < v->end && *v->p == ',') {
            v->p++;
            continue;
        }
        if (v->p < v->end && *v->p == close) {
            v->p++;
            v->depth--;
            return true;
        }
        return false;
    }
}

static bool value(jv *v)
{
    ws(v);
    if (v->p >= v->end) {
        return false;
    }
    switch (*v->p) {
    case '{': return container(v, '}', true);
    case '[': return container(v, ']', false);
    case '"': return string(v);
    case 't': return lit(v, "true");
    case 'f': return lit(v, "false");
    case 'n': return lit(v, "null");
    default: return number(v);
    }
}

static bool valid_json(const char *buf, size_t len)
{
    jv v = {buf, buf + len, 0};
    if (!value(&v)) {
        return false;
    }
    ws(&v);
    return v.p == v.end;
}

/* ---- the events, line by line -------------------------------------------- */

typedef struct got {
    int pid, tid;
    int64_t ts, dur; /* ns */
} got;

static int cmp_got(const void *a, const void *b)
{
    const got *x = a, *y = b;
    if (x->pid != y->pid) {
        return x->pid - y->pid;
    }
    if (x->tid != y->tid) {
        return x->tid - y->tid;
    }
    if (x->ts != y->ts) {
        return x->ts < y->ts ? -1 : 1;
    }
    return x->dur > y->dur ? -1 : x->dur < y->dur;
}

static int cmp_expect(const void *a, const void *b)
{
    const expect *x = a, *y = b;
    if (x->start != y->start) {
        return x->start < y->start ? -1 : 1;
    }
    return x->dur > y->dur ? -1 : x->dur < y->dur;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n > 0 ? malloc((size_t)n + 1) : NULL;
    if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf != NULL) {
        buf[n] = '\0';
        *len = (size_t)n;
    }
    return buf;
}

static void test_large(void)
{
    vkprof_context ctx = make_ctx(false, false);
    CHECK(vkprof_trace_begin(ctx, CAPACITY) == VKPROF_OK);
    worker w[THREADS];
    vkprof_bucket weird;
    CHECK(vkprof_register_bucket(ctx, k_weird, false, &weird) == VKPROF_OK);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){ctx, weird, NULL, 0, ""};
        w[i].spans = malloc(TOKENS_PER_THREAD * SPANS_PER_TOKEN * sizeof(expect));
        CHECK(w[i].spans != NULL);
        snprintf(w[i].name, sizeof w[i].name, "worker %d", i);
    }
    for (int i = 0; i < THREADS; i++) {
        CHECK(pthread_create(&th[i], NULL, work, &w[i]) == 0);
    }
    /* meanwhile on this thread: GPU scopes, each inside a span (a flow) */
    uint32_t main_spans = 0;
    for (int s = 0; s < GPU_SCOPES; s++) {
        vkprof_span rs = vkprof_span_begin(ctx, VKPROF_BUCKET_MLP);
        CHECK_VK(vku_begin(&g.dev));
        CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        vku_busy_record(&g.dev, &busy, g.dev.cmd, 2);
        CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        CHECK_VK(vku_submit_wait(&g.dev));
        CHECK(vkprof_resolve(ctx, NULL) == VKPROF_OK);
        CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_ATTENTION) == VKPROF_OK);
        vkprof_span_end(ctx, &rs);
        main_spans++;
        vkprof_step(ctx);
    }
    for (int i = 0; i < THREADS; i++) {
        CHECK(pthread_join(th[i], NULL) == 0);
    }
    uint64_t recorded = 0, dropped = 0;
    vkprof_trace_counts(ctx, &recorded, &dropped);
    CHECK(dropped == 0);
    CHECK(recorded >= 200000);

    char path[300];
    snprintf(path, sizeof path, "%s/large.json", tmpdir);
    CHECK(vkprof_trace_write(ctx, path) == VKPROF_OK);
    size_t len = 0;
    char *buf = read_all(path, &len);
    CHECK(buf != NULL);
    if (buf == NULL) {
        vkprof_destroy(ctx);
        return;
    }
    CHECK(valid_json(buf, len));

    /* the metadata: the last line */
    char *meta_line = buf + len;
    while (meta_line > buf && meta_line[-1] == '\n') {
        meta_line--;
    }
    while (meta_line > buf && meta_line[-1] != '\n') {
        meta_line--;
    }
    CHECK(*meta_line == ',');
    char *wrapped = malloc(strlen(meta_line) + 2);
    wrapped[0] = '{';
    strcpy(wrapped + 1, meta_line + 1); /* ,"metadata":{...}}\n -> {"metadata":{...}} */
    cJSON *root = cJSON_Parse(wrapped);
    free(wrapped);
    CHECK(root != NULL);
    const bool monotonic =
        root != NULL &&
        strcmp(cJSON_GetObjectItemCaseSensitive(
                   cJSON_GetObjectItemCaseSensitive(
                       cJSON_GetObjectItemCaseSensitive(root, "metadata"), "host_clock"),
                   "source")
                   ->valuestring,
               "CLOCK_MONOTONIC") == 0;
    int64_t meta_spans = meta_i64(root, VKPROF_TF_META_HOST_SPANS, NULL);
    int64_t meta_gpu = meta_i64(root, VKPROF_TF_META_GPU_SCOPES, NULL);
    int64_t meta_flows = meta_i64(root, VKPROF_TF_META_FLOWS, NULL);
    int64_t t0 = meta_i64(root, VKPROF_TF_META_TRACE_START, NULL);
    CHECK(meta_i64(root, VKPROF_TF_META_UNMAPPED_GPU_SCOPES, NULL) == 0);
    CHECK(meta_i64(root, VKPROF_TF_META_DROPPED_EVENTS, NULL) == 0);

    /* every event line */
    const uint64_t host_spans = THREADS * TOKENS_PER_THREAD * SPANS_PER_TOKEN + main_spans;
    got *x = malloc((size_t)recorded * sizeof *x);
    uint64_t nx = 0, spans = 0, gpu = 0, steps = 0, flow_s = 0, flow_f = 0, weird_seen = 0;
    uint64_t annotated = 0, bad_lines = 0, prev_kind = 0, order_bad = 0;
    int named = 0, worker_tid[THREADS];
    for (int i = 0; i < THREADS; i++) {
        worker_tid[i] = -1;
    }
    got prev = {0, 0, 0, 0};
    char *line = strchr(buf, '\n');
    CHECK(line != NULL && strncmp(buf, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 38) == 0);
    while (line != NULL && line + 1 < meta_line) {
        char *s = line + 1;
        line = strchr(s, '\n');
        if (line == NULL) {
            break;
        }
        if (s[0] == ']') {
            continue;
        }
        if (s[0] == ',') {
            s++;
        }
        cJSON *e = cJSON_ParseWithLength(s, (size_t)(line - s));
        if (e == NULL) {
            bad_lines++;
            continue;
        }
        const char *ph = cJSON_GetObjectItemCaseSensitive(e, "ph")->valuestring;
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
        int pid = cJSON_GetObjectItemCaseSensitive(e, "pid")->valueint;
        int tid = cJSON_GetObjectItemCaseSensitive(e, "tid")->valueint;
        uint64_t kind = 0;
        if (strcmp(ph, "X") == 0) {
            got gv = {pid, tid, to_ns(cJSON_GetObjectItemCaseSensitive(e, "ts")),
                      to_ns(cJSON_GetObjectItemCaseSensitive(e, "dur"))};
            kind = strcmp(cat->valuestring, "gpu") == 0 ? 2 : 1;
            if (kind == 2) {
                gpu++;
                CHECK(cJSON_GetObjectItemCaseSensitive(args, "ns")->valuedouble == (double)gv.dur);
            } else {
                spans++;
                const char *nm = cJSON_GetObjectItemCaseSensitive(e, "name")->valuestring;
                weird_seen += strcmp(nm, k_weird) == 0;
                CHECK(strcmp(nm, cJSON_GetObjectItemCaseSensitive(args, "bucket")->valuestring) ==
                      0);
                annotated += cJSON_GetObjectItemCaseSensitive(args, "token") != NULL;
            }
            /* the order: spans, GPU scopes, steps; by track, by start, the
             * longer first */
            if (kind == prev_kind && cmp_got(&prev, &gv) > 0) {
                order_bad++;
            }
            prev = gv;
            if (nx < recorded) {
                x[nx++] = gv;
            }
        } else if (strcmp(ph, "i") == 0) {
            kind = 3;
            steps++;
        } else if (strcmp(ph, "s") == 0) {
            flow_s++;
        } else if (strcmp(ph, "f") == 0) {
            flow_f++;
        } else if (strcmp(ph, "M") == 0) {
            const cJSON *an = cJSON_GetObjectItemCaseSensitive(args, "name");
            if (cJSON_IsString(an) && strncmp(an->valuestring, "worker ", 7) == 0) {
                int k = atoi(an->valuestring + 7);
                if (k >= 0 && k < THREADS && worker_tid[k] < 0) {
                    worker_tid[k] = tid;
                    named++;
                }
            }
        }
        if (kind != 0) {
            CHECK(kind >= prev_kind);
            prev_kind = kind;
        }
        cJSON_Delete(e);
    }
    CHECK(bad_lines == 0);
    CHECK(order_bad == 0);
    CHECK(spans == host_spans);
    CHECK(gpu == GPU_SCOPES);
    CHECK(steps == GPU_SCOPES);
    CHECK(spans + gpu + steps == recorded);
    CHECK((int64_t)spans == meta_spans && (int64_t)gpu == meta_gpu);
    CHECK(flow_s == GPU_SCOPES && flow_f == GPU_SCOPES && (int64_t)flow_s == meta_flows);
    CHECK(weird_seen == THREADS * TOKENS_PER_THREAD);
    CHECK(annotated == THREADS * ((TOKENS_PER_THREAD + 63) / 64));
    CHECK(named == THREADS);

    /* nesting: on one track a slice ends before the next one that starts
     * inside it ends (a stack per track, in the file's order) */
    uint64_t nest_bad = 0;
    int64_t stack[16];
    int depth = 0;
    for (uint64_t i = 0; i < nx; i++) {
        if (i > 0 && (x[i].pid != x[i - 1].pid || x[i].tid != x[i - 1].tid)) {
            depth = 0;
        }
        while (depth > 0 && stack[depth - 1] <= x[i].ts) {
            depth--;
        }
        if (depth > 0 && x[i].ts + x[i].dur > stack[depth - 1]) {
            nest_bad++;
        }
        if (depth < 16) {
            stack[depth++] = x[i].ts + x[i].dur;
        }
    }
    CHECK(nest_bad == 0);

    /* exact values: the fallback's spans are CLOCK_MONOTONIC ns */
    if (monotonic) {
        for (int i = 0; i < THREADS; i++) {
            qsort(w[i].spans, w[i].count, sizeof(expect), cmp_expect);
        }
        /* worker i's track: the tid its thread_name event names */
        uint64_t matched = 0;
        for (int i = 0; i < THREADS; i++) {
            uint64_t first = 0;
            while (first < nx && !(x[first].pid == 1 && x[first].tid == worker_tid[i])) {
                first++;
            }
            CHECK(first + w[i].count <= nx);
            bool same = first + w[i].count <= nx;
            for (uint32_t k = 0; same && k < w[i].count; k++) {
                const got *gv = &x[first + k];
                same = gv->tid == x[first].tid &&
                       gv->ts == (int64_t)(w[i].spans[k].start - (uint64_t)t0) &&
                       gv->dur == (int64_t)w[i].spans[k].dur;
                if (!same) {
                    fprintf(stderr,
                            "worker %d span %u: trace ts %lld dur %lld, recorded %lld %lld\n", i, k,
                            (long long)gv->ts, (long long)gv->dur,
                            (long long)(w[i].spans[k].start - (uint64_t)t0),
                            (long long)w[i].spans[k].dur);
                }
            }
            CHECK(same);
            matched += same ? w[i].count : 0;
        }
        CHECK(matched == THREADS * TOKENS_PER_THREAD * SPANS_PER_TOKEN);
        printf("  exact: %llu spans of %d threads at their recorded ns\n",
               (unsigned long long)matched, THREADS);
    }
    printf("  %llu events, %zu bytes, one valid document\n", (unsigned long long)recorded, len);
    free(x);
    for (int i = 0; i < THREADS; i++) {
        free(w[i].spans);
    }
    cJSON_Delete(root);
    free(buf);
    remove(path); /* 40 MB: not kept with the other trace files */
    vkprof_destroy(ctx);
}

/* The streaming writer's escapes equal the writer's, byte for byte. */
static void test_escape(void)
{
    char s[256];
    for (int i = 1; i < 256; i++) {
        s[i - 1] = (char)i;
    }
    s[255] = '\0';
    char fast[6 * 256], slow[6 * 256 + 8];
    char *end = vkprof__json_escape(fast, s);
    vkprof_json j;
    vkprof__json_to_buffer(&j, slow, sizeof slow);
    vkprof__json_str(&j, s);
    size_t n = (size_t)(end - fast);
    CHECK(vkprof__json_len(&j) == n + 2);
    CHECK(memcmp(slow + 1, fast, n) == 0);
}

int main(void)
{
    tl_init();
    RUN(test_escape);
    RUN(test_large);
    return tl_finish();
}
