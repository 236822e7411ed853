/* Shared by the timeline tests: see timeline_common.h. */
#define _POSIX_C_SOURCE 200809L
#include "timeline_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"

th_gpu g;
vku_busy busy;
th_log logbuf;
char tmpdir[256];

void tl_init(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vkprof-timeline-XXXXXX");
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        exit(1);
    }
    th_gpu_init(&g);
    th_busy_init(&g, &busy, 4096);
    logbuf.quiet = 1;
}

int tl_finish(void)
{
    vku_busy_destroy(&g.dev, &busy);
    th_gpu_finish(&g);
    printf("trace files kept in %s\n", tmpdir);
    return th_done();
}

void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

vkprof_context make_ctx(bool sim, bool give_queue)
{
    vkprof_context_desc d = th_desc(&g, &logbuf, false);
    if (sim) {
        d.get_instance_proc_addr = sim_get_instance_proc_addr;
        d.get_device_proc_addr = sim_get_device_proc_addr;
    }
    d.enable = VKPROF_ENABLE_ON;
    d.host_level = VKPROF_HOST_ALL;
    d.report_every = UINT32_MAX;
    d.queue = give_queue ? g.dev.queue : VK_NULL_HANDLE;
    return th_ctx(&d);
}

int64_t to_ns(const cJSON *v)
{
    return cJSON_IsNumber(v) ? (int64_t)llround(v->valuedouble * 1000.0) : -1;
}

typedef struct slice {
    int pid, tid;
    int64_t ts, end;
} slice;

static int cmp_slice(const void *a, const void *b)
{
    const slice *x = a, *y = b;
    if (x->pid != y->pid) {
        return x->pid - y->pid;
    }
    if (x->tid != y->tid) {
        return x->tid - y->tid;
    }
    if (x->ts != y->ts) {
        return x->ts < y->ts ? -1 : 1;
    }
    return x->end > y->end ? -1 : x->end < y->end;
}

cJSON *load_and_check(const char *path)
{
    char *text = th_read_file(path);
    CHECK(text != NULL);
    if (text == NULL) {
        return NULL;
    }
    cJSON *root = cJSON_Parse(text);
    free(text);
    CHECK(root != NULL);
    if (root == NULL) {
        return NULL;
    }
    const cJSON *unit = cJSON_GetObjectItemCaseSensitive(root, "displayTimeUnit");
    CHECK(cJSON_IsString(unit) && strcmp(unit->valuestring, "ns") == 0);
    const cJSON *events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    CHECK(cJSON_IsArray(events));
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    CHECK(cJSON_IsObject(meta));
    static const char *const meta_keys[] = {"device",       "driver",
                                            "calibration",  "dropped_events",
                                            "clock_anchor", "trace_start_monotonic_ns"};
    for (size_t i = 0; i < sizeof meta_keys / sizeof meta_keys[0]; i++) {
        CHECK(cJSON_GetObjectItemCaseSensitive(meta, meta_keys[i]) != NULL);
    }
    const cJSON *cal = cJSON_GetObjectItemCaseSensitive(meta, "calibration");
    CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(cal, "error_bound_ns")));
    CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(cal, "method")));

    int n = cJSON_GetArraySize(events);
    slice *sl = calloc((size_t)n + 1, sizeof *sl);
    int ns = 0, gpu_named = 0, flows_s = 0, flows_f = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, events)
    {
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
        CHECK(cJSON_IsString(ph));
        if (!cJSON_IsString(ph)) {
            continue;
        }
        CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "pid")));
        CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "tid")));
        const char *p = ph->valuestring;
        if (strcmp(p, "X") == 0) {
            CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "name")));
            int64_t ts = to_ns(cJSON_GetObjectItemCaseSensitive(e, "ts"));
            int64_t dur = to_ns(cJSON_GetObjectItemCaseSensitive(e, "dur"));
            CHECK(ts >= 0 && dur >= 0);
            sl[ns].pid = cJSON_GetObjectItemCaseSensitive(e, "pid")->valueint;
            sl[ns].tid = cJSON_GetObjectItemCaseSensitive(e, "tid")->valueint;
            sl[ns].ts = ts;
            sl[ns].end = ts + dur;
            ns++;
        } else if (strcmp(p, "M") == 0) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
            CHECK(cJSON_IsObject(args));
            if (cJSON_IsString(name) && strcmp(name->valuestring, "process_name") == 0) {
                const cJSON *an = cJSON_GetObjectItemCaseSensitive(args, "name");
                if (cJSON_IsString(an) && strncmp(an->valuestring, "GPU: ", 5) == 0) {
                    gpu_named++;
                    CHECK(strcmp(an->valuestring + 5, g.dev.props.deviceName) == 0);
                }
            }
        } else if (strcmp(p, "s") == 0) {
            flows_s++;
        } else if (strcmp(p, "f") == 0) {
            flows_f++;
            CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "bp")));
        } else {
            CHECK(strcmp(p, "i") == 0 || strcmp(p, "C") == 0);
        }
    }
    CHECK(gpu_named == 1);
    CHECK(flows_s == flows_f);
    /* proper nesting: on each track, a slice starting inside another ends inside it */
    qsort(sl, (size_t)ns, sizeof *sl, cmp_slice);
    int bad = 0;
    for (int i = 0; i < ns;) {
        int j = i;
        slice stack[64];
        int depth = 0;
        for (; j < ns && sl[j].pid == sl[i].pid && sl[j].tid == sl[i].tid; j++) {
            while (depth > 0 && stack[depth - 1].end <= sl[j].ts) {
                depth--;
            }
            if (depth > 0 && sl[j].end > stack[depth - 1].end) {
                bad++;
            }
            if (depth < 64) {
                stack[depth++] = sl[j];
            }
        }
        i = j;
    }
    CHECK(bad == 0);
    free(sl);
    return root;
}

int64_t meta_i64(const cJSON *root, const char *a, const char *b)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, a);
    if (b != NULL) {
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    }
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : -1;
}
