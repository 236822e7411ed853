/* The library's contract on a real device: every misuse is reported, counted
 * and never folded; the enable flag; the snapshot and its JSON form. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static th_gpu g;
static vku_busy busy;
static th_log logbuf;

static vkprof_context make_ctx(vkprof_enable_mode mode, const char *env_var)
{
    vkprof_context_desc d = th_desc(&g, &logbuf, false);
    d.enable = mode;
    d.env_var = env_var;
    return th_ctx(&d);
}

static vkprof_error_counts errors_of(vkprof_context ctx)
{
    vkprof_error_counts e;
    uint32_t n;
    vkprof_snapshot(ctx, NULL, 0, &n, &e);
    return e;
}

/* One good cycle; returns the resolve result. */
static vkprof_result good_cycle(vkprof_context ctx, vkprof_phase p)
{
    CHECK_VK(vku_begin(&g.dev));
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, p) == VKPROF_OK);
    vku_busy_record(&g.dev, &busy, g.dev.cmd, 50);
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, p) == VKPROF_OK);
    CHECK_VK(vku_submit_wait(&g.dev));
    vkprof_result r = vkprof_resolve(ctx, NULL);
    CHECK(r == VKPROF_OK);
    CHECK(vkprof_accumulate(ctx, p) == VKPROF_OK);
    return r;
}

static void test_misuse(void)
{
    vkprof_context ctx = make_ctx(VKPROF_ENABLE_ON, NULL);
    logbuf.calls = 0;
    logbuf.errors = 0;
    CHECK_VK(vku_begin(&g.dev));

    /* begin twice: both scopes dropped */
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK);
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_QKV) == VKPROF_ERROR_BEGIN_TWICE);
    CHECK(logbuf.last_code == VKPROF_ERROR_BEGIN_TWICE);
    CHECK(strstr(logbuf.last, "norm") != NULL && strstr(logbuf.last, "qkv_proj") != NULL);
    /* ...so the following end has nothing to end */
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_ERROR_END_WITHOUT_BEGIN);
    /* end without begin */
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_ERROR_END_WITHOUT_BEGIN);
    /* accumulate without end */
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_ROPE) == VKPROF_OK);
    CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_ROPE) == VKPROF_ERROR_NOT_ENDED);
    CHECK(vkprof_resolve(ctx, NULL) == VKPROF_ERROR_NOT_ENDED);
    /* end naming another phase drops the scope */
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_ATTENTION) == VKPROF_ERROR_PHASE_MISMATCH);
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_ROPE) == VKPROF_ERROR_END_WITHOUT_BEGIN);
    /* unknown phase ids */
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, 9999) == VKPROF_ERROR_UNKNOWN_PHASE);
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_DEFAULT_COUNT) == VKPROF_ERROR_UNKNOWN_PHASE);
    CHECK(vkprof_accumulate(ctx, 0xffffffffu) == VKPROF_ERROR_UNKNOWN_PHASE);
    /* nothing pending */
    CHECK(vkprof_resolve(ctx, NULL) == VKPROF_ERROR_NOTHING_PENDING);
    CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_ROPE) == VKPROF_ERROR_NOTHING_PENDING);
    /* NULL command buffer */
    CHECK(vkprof_cmd_begin(ctx, VK_NULL_HANDLE, VKPROF_PHASE_ROPE) ==
          VKPROF_ERROR_INVALID_ARGUMENT);
    CHECK_VK(vkEndCommandBuffer(g.dev.cmd));

    CHECK(!vkprof_any_recorded(ctx));
    vkprof_error_counts e = errors_of(ctx);
    CHECK_EQ_U64(e.begin_twice, 1);
    CHECK_EQ_U64(e.end_without_begin, 3);
    CHECK_EQ_U64(e.not_ended, 2);
    CHECK_EQ_U64(e.phase_mismatch, 1);
    CHECK_EQ_U64(e.unknown_phase, 3);
    CHECK_EQ_U64(e.nothing_pending, 2);
    CHECK_EQ_U64(e.invalid_argument, 1);
    CHECK(logbuf.errors == 13);

    /* accumulate into another phase than the scope's: refused, still pending */
    CHECK_VK(vku_begin(&g.dev));
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_LM_HEAD) == VKPROF_OK);
    vku_busy_record(&g.dev, &busy, g.dev.cmd, 50);
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_LM_HEAD) == VKPROF_OK);
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_LM_HEAD) == VKPROF_ERROR_NOT_RESOLVED);
    CHECK(vkprof_resolve(ctx, NULL) == VKPROF_OK);
    CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_SAMPLING) == VKPROF_ERROR_PHASE_MISMATCH);
    CHECK(!vkprof_any_recorded(ctx));
    CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_LM_HEAD) == VKPROF_OK);
    CHECK(vkprof_any_recorded(ctx));
    /* accumulating twice folds once */
    CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_LM_HEAD) == VKPROF_ERROR_NOTHING_PENDING);

    /* a scope ended but never accumulated is discarded (counted) by the next begin */
    CHECK_VK(vku_begin(&g.dev));
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK);
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK);
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK);
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK);
    CHECK_VK(vku_submit_wait(&g.dev));
    CHECK(vkprof_resolve(ctx, NULL) == VKPROF_OK);
    CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_NORM) == VKPROF_OK);
    e = errors_of(ctx);
    CHECK_EQ_U64(e.discarded, 1);

    vkprof_phase_stats st[VKPROF_MAX_PHASES];
    uint32_t n;
    CHECK(vkprof_snapshot(ctx, st, VKPROF_MAX_PHASES, &n, NULL) == VKPROF_OK);
    CHECK_EQ_U64(st[VKPROF_PHASE_LM_HEAD].count, 1);
    CHECK_EQ_U64(st[VKPROF_PHASE_NORM].count, 1);
    CHECK_EQ_U64(st[VKPROF_PHASE_SAMPLING].count, 0);
    CHECK_EQ_U64(st[VKPROF_PHASE_ROPE].count, 0);
    CHECK_EQ_U64(st[VKPROF_PHASE_QKV].count, 0);

    /* a small snapshot buffer is an error, with the count still given */
    CHECK(vkprof_snapshot(ctx, st, 3, &n, NULL) == VKPROF_ERROR_BUFFER_TOO_SMALL);
    CHECK(n == VKPROF_PHASE_DEFAULT_COUNT);

    /* reset clears figures and errors but keeps phases */
    vkprof_reset(ctx);
    CHECK(!vkprof_any_recorded(ctx));
    e = errors_of(ctx);
    CHECK(memcmp(&e, &(vkprof_error_counts){0}, sizeof e) == 0);

    /* turning off mid-scope abandons it: nothing folds, counted */
    CHECK_VK(vku_begin(&g.dev));
    CHECK(vkprof_cmd_begin(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_OK);
    vkprof_set_active(ctx, false);
    CHECK(!vkprof_active(ctx));
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_DISABLED);
    vkprof_set_active(ctx, true);
    CHECK(vkprof_resolve(ctx, NULL) == VKPROF_ERROR_NOTHING_PENDING);
    CHECK_VK(vku_submit_wait(&g.dev));
    e = errors_of(ctx);
    CHECK_EQ_U64(e.discarded, 1);
    vkprof_destroy(ctx);
}

/* A misuse repeated every token is logged VKPROF_LOG_REPEATS times, then one
 * line says the rest are only counted; the counter keeps every one, and a
 * reset starts the logging again. */
static void test_log_repeats(void)
{
    vkprof_context ctx = make_ctx(VKPROF_ENABLE_ON, NULL);
    logbuf = (th_log){.quiet = 1};
    const unsigned n = 3 * VKPROF_LOG_REPEATS;
    for (unsigned i = 0; i < n; i++) {
        CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_ERROR_END_WITHOUT_BEGIN);
    }
    CHECK_EQ_U64(errors_of(ctx).end_without_begin, n);
    CHECK_EQ_U64(logbuf.errors, VKPROF_LOG_REPEATS + 1);
    CHECK(strstr(logbuf.last, "VKPROF_ERROR_END_WITHOUT_BEGIN seen 8 times") != NULL);
    /* another kind has its own budget */
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, 9999) == VKPROF_ERROR_UNKNOWN_PHASE);
    CHECK_EQ_U64(logbuf.errors, VKPROF_LOG_REPEATS + 2);
    vkprof_reset(ctx);
    CHECK(vkprof_cmd_end(ctx, g.dev.cmd, VKPROF_PHASE_NORM) == VKPROF_ERROR_END_WITHOUT_BEGIN);
    CHECK_EQ_U64(logbuf.errors, VKPROF_LOG_REPEATS + 3);
    logbuf = (th_log){0};
    vkprof_destroy(ctx);
}

static void test_phases(void)
{
    vkprof_context ctx = make_ctx(VKPROF_ENABLE_ON, NULL);
    CHECK(vkprof_phase_count(ctx) == VKPROF_PHASE_DEFAULT_COUNT);
    CHECK(strcmp(vkprof_phase_name(ctx, VKPROF_PHASE_MOE_ROUTER), "moe_router") == 0);
    CHECK(strcmp(vkprof_phase_name(ctx, VKPROF_PHASE_SAMPLING), "sampling") == 0);
    CHECK(vkprof_phase_name(ctx, VKPROF_PHASE_DEFAULT_COUNT) == NULL);
    vkprof_phase a, b, c;
    CHECK(vkprof_register_phase(ctx, "rope", &a) == VKPROF_OK && a == VKPROF_PHASE_ROPE);
    CHECK(vkprof_register_phase(ctx, "my_kernel", &b) == VKPROF_OK);
    CHECK(b == VKPROF_PHASE_DEFAULT_COUNT);
    CHECK(vkprof_register_phase(ctx, "my_kernel", &c) == VKPROF_OK && c == b);
    CHECK(vkprof_register_phase(ctx, "", &c) == VKPROF_ERROR_INVALID_ARGUMENT);
    char longname[VKPROF_MAX_NAME + 2];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CHECK(vkprof_register_phase(ctx, longname, &c) == VKPROF_ERROR_INVALID_ARGUMENT);
    /* fill the table: the limit is an error, not a crash or an overwrite */
    vkprof_result r = VKPROF_OK;
    char name[32];
    for (uint32_t i = 0; r == VKPROF_OK && i < 2 * VKPROF_MAX_PHASES; i++) {
        snprintf(name, sizeof name, "p%u", i);
        r = vkprof_register_phase(ctx, name, &c);
    }
    CHECK(r == VKPROF_ERROR_TOO_MANY_PHASES);
    CHECK(vkprof_phase_count(ctx) == VKPROF_MAX_PHASES);
    CHECK(strcmp(vkprof_phase_name(ctx, b), "my_kernel") == 0);
    /* a full table: every name, defaults included, still finds its own id
     * (names are looked up by hash; colliding names probe on) */
    uint32_t found = 0;
    for (vkprof_phase i = 0; i < VKPROF_MAX_PHASES; i++) {
        char again[VKPROF_MAX_NAME + 1];
        snprintf(again, sizeof again, "%s", vkprof_phase_name(ctx, i));
        found += vkprof_register_phase(ctx, again, &c) == VKPROF_OK && c == i;
    }
    CHECK_EQ_U64(found, VKPROF_MAX_PHASES);
    good_cycle(ctx, VKPROF_MAX_PHASES - 1);
    vkprof_destroy(ctx);
}

/* Phase nesting (vkprof_set_phase_parent, issue 26): one parent, told
 * again; two different ones, several for good; itself, ignored; and the
 * snapshot and its JSON say so */
static void test_phase_parent(void)
{
    vkprof_context ctx = make_ctx(VKPROF_ENABLE_ON, NULL);
    vkprof_phase graph, node, disp, twice, top;
    CHECK(vkprof_register_phase(ctx, "graph", &graph) == VKPROF_OK);
    CHECK(vkprof_register_phase(ctx, "node", &node) == VKPROF_OK);
    CHECK(vkprof_register_phase(ctx, "disp", &disp) == VKPROF_OK);
    CHECK(vkprof_register_phase(ctx, "twice", &twice) == VKPROF_OK);
    CHECK(vkprof_register_phase(ctx, "top", &top) == VKPROF_OK);
    CHECK(vkprof_set_phase_parent(ctx, graph, VKPROF_PHASE_NO_PARENT) == VKPROF_OK);
    CHECK(vkprof_set_phase_parent(ctx, node, graph) == VKPROF_OK);
    CHECK(vkprof_set_phase_parent(ctx, node, graph) == VKPROF_OK); /* the same: kept */
    CHECK(vkprof_set_phase_parent(ctx, disp, node) == VKPROF_OK);
    CHECK(vkprof_set_phase_parent(ctx, disp, disp) == VKPROF_OK); /* itself: ignored */
    CHECK(vkprof_set_phase_parent(ctx, twice, graph) == VKPROF_OK);
    CHECK(vkprof_set_phase_parent(ctx, twice, node) == VKPROF_OK);  /* another: several */
    CHECK(vkprof_set_phase_parent(ctx, twice, graph) == VKPROF_OK); /* for good */
    CHECK(vkprof_set_phase_parent(ctx, top, VKPROF_PHASE_NO_PARENT) == VKPROF_OK);
    CHECK(vkprof_set_phase_parent(ctx, top, graph) == VKPROF_OK); /* top and nested: several */
    const uint32_t n = vkprof_phase_count(ctx);
    CHECK(vkprof_set_phase_parent(NULL, node, graph) == VKPROF_ERROR_INVALID_ARGUMENT);
    CHECK(vkprof_set_phase_parent(ctx, n, graph) == VKPROF_ERROR_INVALID_ARGUMENT);
    CHECK(vkprof_set_phase_parent(ctx, node, n) == VKPROF_ERROR_INVALID_ARGUMENT);
    vkprof_phase_stats st[VKPROF_MAX_PHASES];
    uint32_t got = 0;
    CHECK(vkprof_snapshot(ctx, st, VKPROF_MAX_PHASES, &got, NULL) == VKPROF_OK);
    CHECK_EQ_U64(got, n);
    CHECK_EQ_U64(st[graph].parent, VKPROF_PHASE_NO_PARENT);
    CHECK_EQ_U64(st[node].parent, graph);
    CHECK_EQ_U64(st[disp].parent, node);
    CHECK_EQ_U64(st[twice].parent, VKPROF_PHASE_SEVERAL_PARENTS);
    CHECK_EQ_U64(st[top].parent, VKPROF_PHASE_SEVERAL_PARENTS);
    CHECK_EQ_U64(st[VKPROF_PHASE_NORM].parent, VKPROF_PHASE_NO_PARENT); /* never told */
    size_t need = 0;
    CHECK(vkprof_snapshot_json(ctx, NULL, 0, &need) == VKPROF_ERROR_BUFFER_TOO_SMALL);
    char *buf = malloc(need);
    CHECK(buf != NULL && vkprof_snapshot_json(ctx, buf, need, &need) == VKPROF_OK);
    cJSON *root = buf != NULL ? cJSON_Parse(buf) : NULL;
    const cJSON *phases = cJSON_GetObjectItemCaseSensitive(root, "phases");
    CHECK(cJSON_IsArray(phases) && cJSON_GetArraySize(phases) == (int)n);
    uint32_t parents = 0, several = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, phases)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
        const cJSON *par = cJSON_GetObjectItemCaseSensitive(p, "parent");
        if (cJSON_IsString(par)) {
            parents++;
            CHECK(
                (strcmp(name->valuestring, "node") == 0 &&
                 strcmp(par->valuestring, "graph") == 0) ||
                (strcmp(name->valuestring, "disp") == 0 && strcmp(par->valuestring, "node") == 0));
        }
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "parent_several"))) {
            several++;
            CHECK(strcmp(name->valuestring, "twice") == 0 || strcmp(name->valuestring, "top") == 0);
        }
    }
    CHECK_EQ_U64(parents, 2);
    CHECK_EQ_U64(several, 2);
    cJSON_Delete(root);
    free(buf);
    vkprof_destroy(ctx);
}

static void test_env(void)
{
    logbuf.warnings = 0;
    unsetenv("VKPROF_GPU_PROFILE");
    vkprof_context ctx = make_ctx(VKPROF_ENABLE_FROM_ENV, NULL);
    CHECK(!vkprof_active(ctx));
    vkprof_destroy(ctx);

    setenv("VKPROF_GPU_PROFILE", "1", 1);
    ctx = make_ctx(VKPROF_ENABLE_FROM_ENV, NULL);
    CHECK(vkprof_active(ctx));
    /* read once: a later change does not matter */
    setenv("VKPROF_GPU_PROFILE", "0", 1);
    CHECK(vkprof_active(ctx));
    vkprof_destroy(ctx);

    /* explicit modes override the environment */
    setenv("VKPROF_GPU_PROFILE", "1", 1);
    ctx = make_ctx(VKPROF_ENABLE_OFF, NULL);
    CHECK(!vkprof_active(ctx));
    vkprof_set_active(ctx, true);
    CHECK(vkprof_active(ctx));
    vkprof_destroy(ctx);

    /* garbage: off, with a warning that names the variable and the value */
    setenv("VKPROF_GPU_PROFILE", "definitely", 1);
    ctx = make_ctx(VKPROF_ENABLE_FROM_ENV, NULL);
    CHECK(!vkprof_active(ctx));
    CHECK(logbuf.warnings == 1);
    CHECK(strstr(logbuf.last, "VKPROF_GPU_PROFILE") && strstr(logbuf.last, "definitely"));
    vkprof_destroy(ctx);

    /* the app's own variable name */
    unsetenv("VKPROF_GPU_PROFILE");
    setenv("MYRUNTIME_VK_PERF", "on", 1);
    ctx = make_ctx(VKPROF_ENABLE_FROM_ENV, "MYRUNTIME_VK_PERF");
    CHECK(vkprof_active(ctx));
    vkprof_device_info info;
    CHECK(vkprof_get_device_info(ctx, &info) == VKPROF_OK);
    CHECK(info.requested && info.supported && info.timestamp_valid_bits >= 36);
    CHECK(strcmp(info.device_name, g.dev.props.deviceName) == 0);
    vkprof_destroy(ctx);
    unsetenv("MYRUNTIME_VK_PERF");

    /* invalid desc fields */
    vkprof_context_desc d = vku_vkprof_desc(&g.inst, &g.dev);
    d.reserved[2] = 1;
    CHECK(vkprof_create(&d, &ctx) == VKPROF_ERROR_INVALID_ARGUMENT && ctx == NULL);
    d = vku_vkprof_desc(&g.inst, &g.dev);
    d.enable = (vkprof_enable_mode)7;
    CHECK(vkprof_create(&d, &ctx) == VKPROF_ERROR_INVALID_ARGUMENT && ctx == NULL);
    d = vku_vkprof_desc(&g.inst, &g.dev);
    d.trace_gpu_busy = (vkprof_feature)3;
    CHECK(vkprof_create(&d, &ctx) == VKPROF_ERROR_INVALID_ARGUMENT && ctx == NULL);
    d = vku_vkprof_desc(&g.inst, &g.dev);
    d.submit_collect = (vkprof_submit_collect)2;
    CHECK(vkprof_create(&d, &ctx) == VKPROF_ERROR_INVALID_ARGUMENT && ctx == NULL);
    d = vku_vkprof_desc(&g.inst, &g.dev);
    d.device = VK_NULL_HANDLE;
    CHECK(vkprof_create(&d, &ctx) == VKPROF_ERROR_INVALID_ARGUMENT && ctx == NULL);
    /* a queue family that does not exist: created, but inactive */
    d = vku_vkprof_desc(&g.inst, &g.dev);
    d.queue_family_index = 77;
    d.enable = VKPROF_ENABLE_ON;
    d.log = th_log_fn;
    d.log_user = &logbuf;
    CHECK(vkprof_create(&d, &ctx) == VKPROF_OK);
    CHECK(!vkprof_active(ctx));
    vkprof_destroy(ctx);
}

static uint64_t json_u64(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    CHECK(cJSON_IsNumber(v));
    return cJSON_IsNumber(v) ? (uint64_t)v->valuedouble : UINT64_MAX;
}

static void test_json(void)
{
    vkprof_context ctx = make_ctx(VKPROF_ENABLE_ON, NULL);
    vkprof_phase odd;
    const char *odd_name = "we\"ird\\na\tme\x01";
    CHECK(vkprof_register_phase(ctx, odd_name, &odd) == VKPROF_OK);
    good_cycle(ctx, odd);
    good_cycle(ctx, odd);
    good_cycle(ctx, VKPROF_PHASE_ATTENTION);
    CHECK(vkprof_accumulate(ctx, VKPROF_PHASE_ATTENTION) == VKPROF_ERROR_NOTHING_PENDING);

    size_t need = 0;
    CHECK(vkprof_snapshot_json(ctx, NULL, 0, &need) == VKPROF_ERROR_BUFFER_TOO_SMALL);
    CHECK(need > 100);
    char small[16];
    CHECK(vkprof_snapshot_json(ctx, small, sizeof small, &need) == VKPROF_ERROR_BUFFER_TOO_SMALL);
    CHECK(small[0] == '\0');
    char *buf = malloc(need);
    size_t need2 = 0;
    CHECK(vkprof_snapshot_json(ctx, buf, need, &need2) == VKPROF_OK);
    CHECK(need2 == need && strlen(buf) + 1 == need);

    cJSON *root = cJSON_Parse(buf);
    CHECK(root != NULL);
    if (root == NULL) {
        fprintf(stderr, "unparsable JSON: %s\n", buf);
        free(buf);
        vkprof_destroy(ctx);
        return;
    }
    vkprof_phase_stats st[VKPROF_MAX_PHASES];
    uint32_t n;
    CHECK(vkprof_snapshot(ctx, st, VKPROF_MAX_PHASES, &n, NULL) == VKPROF_OK);
    const cJSON *phases = cJSON_GetObjectItemCaseSensitive(root, "phases");
    CHECK(cJSON_IsArray(phases) && cJSON_GetArraySize(phases) == (int)n);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "enabled")));
    CHECK(json_u64(root, "timestamp_valid_bits") == 64 ||
          json_u64(root, "timestamp_valid_bits") >= 36);
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(root, "device");
    CHECK(cJSON_IsString(dev) && strcmp(dev->valuestring, g.dev.props.deviceName) == 0);
    for (uint32_t i = 0; i < n && cJSON_IsArray(phases); i++) {
        const cJSON *p = cJSON_GetArrayItem(phases, (int)i);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
        CHECK(cJSON_IsString(name) && strcmp(name->valuestring, st[i].name) == 0);
        CHECK(json_u64(p, "id") == i);
        CHECK(json_u64(p, "count") == st[i].count);
        /* ns values below 2^53 survive a double exactly */
        CHECK(json_u64(p, "total_ns") == st[i].total_ns);
        CHECK(json_u64(p, "min_ns") == st[i].min_ns);
        CHECK(json_u64(p, "max_ns") == st[i].max_ns);
    }
    const cJSON *op = cJSON_GetArrayItem(phases, (int)odd);
    CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(op, "name")->valuestring, odd_name) == 0);
    CHECK(json_u64(op, "count") == 2);
    const cJSON *errs = cJSON_GetObjectItemCaseSensitive(root, "errors");
    CHECK(cJSON_IsObject(errs));
    CHECK(json_u64(errs, "nothing_pending") == 1);
    CHECK(json_u64(errs, "begin_twice") == 0);
    /* one key per VKPROF_ERROR_COUNTERS row, in its order, each the struct's value */
    vkprof_error_counts ec = errors_of(ctx);
    const cJSON *item = errs != NULL ? errs->child : NULL;
    int rows = 0;
#define VKPROF_X_(field, result, meaning)                                                          \
    rows++;                                                                                        \
    CHECK(item != NULL && item->string != NULL && strcmp(item->string, #field) == 0);              \
    CHECK(json_u64(errs, #field) == ec.field);                                                     \
    item = item != NULL ? item->next : NULL;
    VKPROF_ERROR_COUNTERS(VKPROF_X_)
#undef VKPROF_X_
    CHECK(item == NULL);
    CHECK(cJSON_GetArraySize(errs) == rows);
    CHECK(sizeof(vkprof_error_counts) == (size_t)rows * sizeof(uint64_t));
    cJSON_Delete(root);
    free(buf);
    vkprof_destroy(ctx);
}

int main(void)
{
    th_gpu_init(&g);
    th_busy_init(&g, &busy, 4096);
    logbuf.quiet = 1;
    RUN(test_misuse);
    RUN(test_log_repeats);
    RUN(test_phases);
    RUN(test_phase_parent);
    RUN(test_env);
    RUN(test_json);
    vku_busy_destroy(&g.dev, &busy);
    th_gpu_finish(&g);
    return th_done();
}
