/* NULL for every pointer argument of every public function (issue 10, item
 * 9), in one table: one row per function and pointer argument, with the
 * result the header's doc promises. The test parses include/vkprof/vkprof.h
 * (VKPROF_HEADER) and fails when a declared function, a pointer parameter
 * of one, or a call-site macro has no row, so a function added to the header
 * without a row fails here. Runs on a real device, validation on. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <string.h>

#include "harness.h"

#ifndef VKPROF_HEADER
#error "VKPROF_HEADER: the path of include/vkprof/vkprof.h"
#endif

static th_gpu g;
static vku_busy busy;
static th_log logbuf;
static vkprof_context C;         /* a real context, active, host spans on, tracing */
static VkCommandBuffer CMD;      /* g.dev.cmd, recording while the rows run */
static int g_calls;              /* record / sync / wait callbacks called */
static vkprof_context g_created; /* vkprof_create's *out */
static char g_trace_path[256];

static void record_fn(VkCommandBuffer cmd, void *user)
{
    (void)cmd;
    (void)user;
    g_calls++;
}

static void sync_fn(void *user)
{
    (void)user;
    g_calls++;
}

/* ---- helpers some rows need (a real span, a real scope) ---- */

static vkprof_span open_span(void)
{
    return vkprof_span_begin(C, VKPROF_BUCKET_NORM);
}

static long long annotate_null_key(void)
{
    vkprof_span s = open_span();
    long long r = vkprof_span_annotate(&s, NULL, "v");
    vkprof_span_end(C, &s);
    return r;
}

static long long annotate_null_value(void)
{
    vkprof_span s = open_span();
    long long r = vkprof_span_annotate(&s, "k", NULL);
    vkprof_span_end(C, &s);
    return r;
}

static long long annotate_ids(const char *key, const uint32_t *ids, uint32_t count)
{
    vkprof_span s = open_span();
    long long r = vkprof_span_annotate_ids(&s, key, ids, count);
    vkprof_span_end(C, &s);
    return r;
}

static uint64_t norm_calls(void)
{
    vkprof_bucket_stats st[VKPROF_MAX_BUCKETS];
    uint32_t n = 0;
    CHECK(vkprof_bucket_snapshot(C, st, VKPROF_MAX_BUCKETS, &n) == VKPROF_OK);
    return st[VKPROF_BUCKET_NORM].calls;
}

/* A span closed with `sync` / `user` as given: 1 when it was counted and the
 * callback count is what `sync` asks for. */
static long long end_sync(vkprof_sync_fn sync, void *user)
{
    uint64_t calls = norm_calls();
    vkprof_span s = open_span();
    int before = g_calls;
    (void)vkprof_span_end_sync(C, &s, sync, user);
    return norm_calls() == calls + 1 && s.start_ns == 0 && g_calls == before + (sync != NULL);
}

/* A NULL-context call of a span closer with a callback: 0, and it is called. */
static long long end_sync_null_ctx(void)
{
    vkprof_span s = vkprof_span_begin(NULL, VKPROF_BUCKET_NORM);
    int before = g_calls;
    long long r = (long long)vkprof_span_end_sync(NULL, &s, sync_fn, NULL);
    return r == 0 && g_calls == before + 1;
}

static long long rendezvous(vkprof_context ctx, vkprof_sync_fn wait, void *user)
{
    int before = g_calls;
    (void)vkprof_rendezvous(ctx, VKPROF_BUCKET_ALLREDUCE_ATTN_RENDEZVOUS, wait, user);
    return g_calls == before + (wait != NULL);
}

static long long both(vkprof_context ctx, VkCommandBuffer cmd, vkprof_record_fn rec, void *user)
{
    int before = g_calls;
    vkprof_result r = vkprof_cmd_both(ctx, cmd, VKPROF_PHASE_NORM, rec, user);
    /* the calls made, in the thousands, then the result */
    return (long long)(g_calls - before) * 1000 + r;
}

/* vkprof__span_call_ and the span macros that call the app's sync/wait */
static long long span_call(vkprof_sync_fn fn, void *user)
{
    int before = g_calls;
    vkprof__span_call_(fn, user);
    return g_calls - before;
}

static long long macro_end_sync_null_ctx(void)
{
    int before = g_calls;
    vkprof_span s = vkprof_span_begin(C, VKPROF_BUCKET_NORM);
    uint64_t ns = VKPROF_SPAN_END_SYNC((vkprof_context)NULL, &s, sync_fn, NULL);
    vkprof_span_end(C, &s); /* closed with its own context: the frame is freed */
    return ns == 0 && g_calls == before + 1;
}

static long long macro_rendezvous_null_ctx(void)
{
    int before = g_calls;
    uint64_t ns = VKPROF_RENDEZVOUS((vkprof_context)NULL, VKPROF_BUCKET_ALLREDUCE_ATTN_RENDEZVOUS,
                                    sync_fn, NULL);
    return ns == 0 && g_calls == before + 1;
}

static long long macro_both_null_ctx(void)
{
    int before = g_calls;
    vkprof_result r = VKPROF_BOTH((vkprof_context)NULL, CMD, VKPROF_PHASE_NORM, record_fn, NULL);
    return (long long)(g_calls - before) * 1000 + r;
}

/* A whole scope on the GPU, then resolve(ctx, NULL). */
static long long scope_resolve_null(void)
{
    CHECK_VK(vkEndCommandBuffer(CMD));
    CHECK_VK(vku_begin(&g.dev));
    CHECK(vkprof_cmd_begin(C, CMD, VKPROF_PHASE_NORM) == VKPROF_OK);
    vku_busy_record(&g.dev, &busy, CMD, 10);
    CHECK(vkprof_cmd_end(C, CMD, VKPROF_PHASE_NORM) == VKPROF_OK);
    CHECK_VK(vku_submit_wait(&g.dev));
    long long r = vkprof_resolve(C, NULL);
    CHECK(vkprof_accumulate(C, VKPROF_PHASE_NORM) == VKPROF_OK);
    CHECK_VK(vku_begin(&g.dev));
    return r;
}

static long long create_null_desc(void)
{
    g_created = (vkprof_context)(void *)&g; /* must become NULL */
    long long r = vkprof_create(NULL, &g_created);
    return r == VKPROF_ERROR_INVALID_ARGUMENT && g_created == NULL ? r : 999;
}

static long long format_null_buf(size_t cap, uint32_t rows)
{
    vkprof_report_row row[2] = {{"norm", 3000, 2}, {"mlp", 5000, 1}};
    char ref[1024];
    size_t want = vkprof_format_report(ref, sizeof ref, 1, 2, 10000, row, rows);
    /* NULL buf: nothing written, the length returned is the same */
    return vkprof_format_report(NULL, cap, 1, 2, 10000, row, rows) == want && want > 0;
}

static long long format_null_rows(uint32_t count)
{
    char a[1024], b[1024];
    size_t na = vkprof_format_report(a, sizeof a, 1, 2, 10000, NULL, count);
    size_t nb = vkprof_format_report(b, sizeof b, 1, 2, 10000, NULL, 0);
    /* NULL rows: the header only, whatever count says */
    return na == nb && strcmp(a, b) == 0 && na > 0;
}

/* A NULL context names nothing: the name is in no context's trace. */
static long long thread_name_null_ctx(void)
{
    vkprof_set_thread_name(NULL, "named-without-a-context");
    vkprof_span s = open_span(); /* this thread has an event in C's trace */
    vkprof_span_end(C, &s);
    if (vkprof_trace_write(C, g_trace_path) != VKPROF_OK) {
        return -1;
    }
    char *text = th_read_file(g_trace_path);
    long long r = text != NULL && strstr(text, "traceEvents") != NULL &&
                  strstr(text, "named-without-a-context") == NULL;
    free(text);
    remove(g_trace_path);
    return r;
}

static long long trace_counts(vkprof_context ctx, bool rec, bool drop)
{
    uint64_t r = 77, d = 77;
    vkprof_trace_counts(ctx, rec ? &r : NULL, drop ? &d : NULL);
    if (ctx == NULL) {
        return r == 0 && d == 0;
    }
    return (!rec || r != 77) && (!drop || d == 0);
}

/* ---- the table ---- */

#define B(x) ((long long)(bool)(x))
#define OK_ VKPROF_OK
#define INV VKPROF_ERROR_INVALID_ARGUMENT
#define DIS VKPROF_DISABLED
#define SMALL VKPROF_ERROR_BUFFER_TOO_SMALL

/* X(function, pointer argument set to NULL ("" for none), expected, call) */
#define NULL_ROWS(X)                                                                               \
    X(vkprof_version, "", VKPROF_VERSION, vkprof_version())                                        \
    X(vkprof_result_name, "", 1, vkprof_result_name((vkprof_result)12345) != NULL)                 \
    X(vkprof_result_text, "", 1, vkprof_result_text((vkprof_result)12345) != NULL)                 \
    X(vkprof_default_desc, "", VKPROF_FEATURE_UNKNOWN, vkprof_default_desc().synchronization2)     \
    X(vkprof_create, "desc", INV, create_null_desc())                                              \
    X(vkprof_create, "out", INV, vkprof_create(&(vkprof_context_desc){0}, NULL))                   \
    X(vkprof_destroy, "ctx", 0, (vkprof_destroy(NULL), 0))                                         \
    X(vkprof_active, "ctx", 0, B(vkprof_active(NULL)))                                             \
    X(vkprof_active, "ctx", 0, B(vkprof_active(NULL)))                                             \
    X(vkprof_set_active, "ctx", 0, (vkprof_set_active(NULL, true), 0))                             \
    X(vkprof_parse_flag, "text", 0, B(vkprof_parse_flag(NULL, &(bool){false})))                    \
    X(vkprof_parse_flag, "out", 0, B(vkprof_parse_flag("1", NULL)))                                \
    X(vkprof_get_device_info, "ctx", INV, vkprof_get_device_info(NULL, &(vkprof_device_info){0}))  \
    X(vkprof_get_device_info, "out", INV, vkprof_get_device_info(C, NULL))                         \
    X(vkprof_get_desc, "ctx", INV, vkprof_get_desc(NULL, &(vkprof_context_desc){0}))               \
    X(vkprof_get_desc, "out", INV, vkprof_get_desc(C, NULL))                                       \
    X(vkprof_register_phase, "ctx", INV, vkprof_register_phase(NULL, "p", &(vkprof_phase){0}))     \
    X(vkprof_register_phase, "name", INV, vkprof_register_phase(C, NULL, &(vkprof_phase){0}))      \
    X(vkprof_register_phase, "out", INV, vkprof_register_phase(C, "p", NULL))                      \
    X(vkprof_phase_count, "ctx", 0, vkprof_phase_count(NULL))                                      \
    X(vkprof_phase_name, "ctx", 1, vkprof_phase_name(NULL, 0) == NULL)                             \
    X(vkprof_set_phase_flags, "ctx", INV, vkprof_set_phase_flags(NULL, 0, 0))                      \
    X(vkprof_phase_flags, "ctx", 0, vkprof_phase_flags(NULL, 0))                                   \
    X(vkprof_set_phase_parent, "ctx", INV, vkprof_set_phase_parent(NULL, 0, 0))                    \
    X(vkprof_cmd_begin, "ctx", DIS, vkprof_cmd_begin(NULL, CMD, VKPROF_PHASE_NORM))                \
    X(vkprof_cmd_begin, "cmd", INV, vkprof_cmd_begin(C, VK_NULL_HANDLE, VKPROF_PHASE_NORM))        \
    X(vkprof_cmd_begin_leaf, "ctx", DIS,                                                           \
      vkprof_cmd_begin_leaf(NULL, CMD, VKPROF_PHASE_NORM, &(bool){false}))                         \
    X(vkprof_cmd_begin_leaf, "cmd", INV,                                                           \
      vkprof_cmd_begin_leaf(C, VK_NULL_HANDLE, VKPROF_PHASE_NORM, &(bool){false}))                 \
    X(vkprof_cmd_begin_leaf, "left_out", INV,                                                      \
      vkprof_cmd_begin_leaf(C, CMD, VKPROF_PHASE_NORM, NULL))                                      \
    X(vkprof_cmd_end, "ctx", DIS, vkprof_cmd_end(NULL, CMD, VKPROF_PHASE_NORM))                    \
    X(vkprof_cmd_end, "cmd", INV, vkprof_cmd_end(C, VK_NULL_HANDLE, VKPROF_PHASE_NORM))            \
    X(vkprof_cmd_end_args, "ctx", DIS, vkprof_cmd_end_args(NULL, CMD, VKPROF_PHASE_NORM, NULL, 0)) \
    X(vkprof_cmd_end_args, "cmd", INV,                                                             \
      vkprof_cmd_end_args(C, VK_NULL_HANDLE, VKPROF_PHASE_NORM, NULL, 0))                          \
    X(vkprof_cmd_end_args, "args", INV, vkprof_cmd_end_args(C, CMD, VKPROF_PHASE_NORM, NULL, 1))   \
    X(vkprof_cmd_end_args, "args", INV,                                                            \
      vkprof_cmd_end_args(C, CMD, VKPROF_PHASE_NORM, &(vkprof_arg){"k", NULL}, 1))                 \
    X(vkprof_cmd_both, "ctx", 1000 + DIS, both(NULL, CMD, record_fn, NULL))                        \
    X(vkprof_cmd_both, "cmd", INV, both(C, VK_NULL_HANDLE, record_fn, NULL))                       \
    X(vkprof_cmd_both, "cmd", INV, both(NULL, VK_NULL_HANDLE, record_fn, NULL))                    \
    X(vkprof_cmd_both, "record", INV, both(C, CMD, NULL, NULL))                                    \
    X(vkprof_cmd_both, "record", INV, both(NULL, CMD, NULL, NULL))                                 \
    X(vkprof_cmd_both, "user", 1000 + OK_, both(C, CMD, record_fn, NULL))                          \
    X(vkprof_resolve, "ctx", DIS, vkprof_resolve(NULL, &(uint64_t){0}))                            \
    X(vkprof_resolve, "out_ns", OK_, scope_resolve_null())                                         \
    X(vkprof_last_scope_ticks, "ctx", INV,                                                         \
      vkprof_last_scope_ticks(NULL, &(uint64_t){0}, &(uint64_t){0}))                               \
    X(vkprof_last_scope_ticks, "begin", INV, vkprof_last_scope_ticks(C, NULL, &(uint64_t){0}))     \
    X(vkprof_last_scope_ticks, "end", INV, vkprof_last_scope_ticks(C, &(uint64_t){0}, NULL))       \
    X(vkprof_accumulate, "ctx", DIS, vkprof_accumulate(NULL, VKPROF_PHASE_NORM))                   \
    X(vkprof_collect, "ctx", DIS, vkprof_collect(NULL))                                            \
    X(vkprof_cmd_submit, "ctx", DIS,                                                               \
      vkprof_cmd_submit(NULL, VK_NULL_HANDLE, 1, &(VkCommandBuffer){CMD}))                         \
    X(vkprof_cmd_submit, "cmds", INV, vkprof_cmd_submit(C, VK_NULL_HANDLE, 1, NULL))               \
    X(vkprof_cmd_submit_flow, "ctx", DIS,                                                          \
      vkprof_cmd_submit_flow(NULL, 1, &(VkCommandBuffer){CMD}))                                    \
    X(vkprof_cmd_submit_flow, "cmds", INV, vkprof_cmd_submit_flow(C, 1, NULL))                     \
    X(vkprof_queue_submit, "ctx", 0,                                                               \
      vkprof_queue_submit(NULL, VK_NULL_HANDLE, 0, NULL, VK_NULL_HANDLE) !=                        \
          VK_ERROR_INITIALIZATION_FAILED)                                                          \
    X(vkprof_queue_submit, "submits", 0,                                                           \
      vkprof_queue_submit(C, VK_NULL_HANDLE, 1, NULL, VK_NULL_HANDLE) !=                           \
          VK_ERROR_INITIALIZATION_FAILED)                                                          \
    X(vkprof_queue_submit2, "ctx", 0,                                                              \
      vkprof_queue_submit2(NULL, VK_NULL_HANDLE, 0, NULL, VK_NULL_HANDLE) !=                       \
          VK_ERROR_INITIALIZATION_FAILED)                                                          \
    X(vkprof_queue_submit2, "submits", 0,                                                          \
      vkprof_queue_submit2(C, VK_NULL_HANDLE, 1, NULL, VK_NULL_HANDLE) !=                          \
          VK_ERROR_INITIALIZATION_FAILED)                                                          \
    X(vkprof_cmd_release, "ctx", OK_, vkprof_cmd_release(NULL, CMD))                               \
    X(vkprof_cmd_release, "cmd", OK_, vkprof_cmd_release(C, VK_NULL_HANDLE))                       \
    X(vkprof_get_timing_stats, "ctx", INV,                                                         \
      vkprof_get_timing_stats(NULL, &(vkprof_timing_stats){0}))                                    \
    X(vkprof_get_timing_stats, "out", INV, vkprof_get_timing_stats(C, NULL))                       \
    X(vkprof_step_timed, "ctx", 0, B(vkprof_step_timed(NULL)))                                     \
    X(vkprof_any_recorded, "ctx", 0, B(vkprof_any_recorded(NULL)))                                 \
    X(vkprof_reset, "ctx", 0, (vkprof_reset(NULL), 0))                                             \
    X(vkprof_snapshot, "ctx", INV, vkprof_snapshot(NULL, NULL, 0, &(uint32_t){0}, NULL))           \
    X(vkprof_snapshot, "out", SMALL, vkprof_snapshot(C, NULL, 0, &(uint32_t){0}, NULL))            \
    X(vkprof_snapshot, "out", SMALL, vkprof_snapshot(C, NULL, 8, &(uint32_t){0}, NULL))            \
    X(vkprof_snapshot, "count", INV,                                                               \
      vkprof_snapshot(C, (vkprof_phase_stats[1]){{0}}, 1, NULL, &(vkprof_error_counts){0}))        \
    X(vkprof_snapshot, "errors", SMALL,                                                            \
      vkprof_snapshot(C, (vkprof_phase_stats[1]){{0}}, 1, &(uint32_t){0}, NULL))                   \
    X(vkprof_snapshot_json, "ctx", INV, vkprof_snapshot_json(NULL, NULL, 0, &(size_t){0}))         \
    X(vkprof_snapshot_json, "buf", SMALL, vkprof_snapshot_json(C, NULL, 0, &(size_t){0}))          \
    X(vkprof_snapshot_json, "buf", SMALL, vkprof_snapshot_json(C, NULL, 64, &(size_t){0}))         \
    X(vkprof_snapshot_json, "needed", INV, vkprof_snapshot_json(C, (char[64]){0}, 64, NULL))       \
    X(vkprof_ticks_to_ns, "", 3, vkprof_ticks_to_ns(3, 1.0f))                                      \
    X(vkprof_tick_delta, "", 1, vkprof_tick_delta(1, 2, 64))                                       \
    X(vkprof_register_bucket, "ctx", INV,                                                          \
      vkprof_register_bucket(NULL, "b", false, &(vkprof_bucket){0}))                               \
    X(vkprof_register_bucket, "name", INV,                                                         \
      vkprof_register_bucket(C, NULL, false, &(vkprof_bucket){0}))                                 \
    X(vkprof_register_bucket, "out", INV, vkprof_register_bucket(C, "b", false, NULL))             \
    X(vkprof_bucket_name, "ctx", 1, vkprof_bucket_name(NULL, 0) == NULL)                           \
    X(vkprof_bucket_count, "ctx", 0, vkprof_bucket_count(NULL))                                    \
    X(vkprof_get_host_level, "ctx", VKPROF_HOST_OFF, vkprof_get_host_level(NULL))                  \
    X(vkprof_set_host_level, "ctx", 0, (vkprof_set_host_level(NULL, VKPROF_HOST_ALL), 0))          \
    X(vkprof_span_begin, "ctx", 0, vkprof_span_begin(NULL, VKPROF_BUCKET_NORM).start_ns)           \
    X(vkprof_span_begin_hot, "ctx", 0, vkprof_span_begin_hot(NULL, VKPROF_BUCKET_NORM).start_ns)   \
    X(vkprof_span_annotate, "span", 0, B(vkprof_span_annotate(NULL, "k", "v")))                    \
    X(vkprof_span_annotate, "key", 0, annotate_null_key())                                         \
    X(vkprof_span_annotate, "value", 0, annotate_null_value())                                     \
    X(vkprof_span_annotate_ids, "span", 0, B(vkprof_span_annotate_ids(NULL, "k", NULL, 0)))        \
    X(vkprof_span_annotate_ids, "key", 0, annotate_ids(NULL, (const uint32_t[1]){1}, 1))           \
    X(vkprof_span_annotate_ids, "ids", 1, annotate_ids("k", NULL, 0))                              \
    X(vkprof_span_annotate_ids, "ids", 0, annotate_ids("k", NULL, 3))                              \
    X(vkprof_span_end, "ctx", 0, vkprof_span_end(NULL, &(vkprof_span){0}))                         \
    X(vkprof_span_begin_detached, "ctx", 0,                                                        \
      vkprof_span_begin_detached(NULL, VKPROF_BUCKET_NORM).start_ns)                               \
    X(vkprof_span_end_detached, "ctx", 0, vkprof_span_end_detached(NULL, &(vkprof_span){0}))       \
    X(vkprof_span_end_detached, "span", 0, vkprof_span_end_detached(C, NULL))                      \
    X(vkprof_span_end, "span", 0, vkprof_span_end(C, NULL))                                        \
    X(vkprof_span_end_sync, "ctx", 1, end_sync_null_ctx())                                         \
    X(vkprof_span_end_sync, "span", 0, vkprof_span_end_sync(C, NULL, NULL, NULL))                  \
    X(vkprof_span_end_sync, "sync", 1, end_sync(NULL, NULL))                                       \
    X(vkprof_span_end_sync, "user", 1, end_sync(sync_fn, NULL))                                    \
    X(vkprof_rendezvous, "ctx", 1, rendezvous(NULL, sync_fn, NULL))                                \
    X(vkprof_rendezvous, "wait", 1, rendezvous(C, NULL, NULL))                                     \
    X(vkprof_rendezvous, "user", 1, rendezvous(C, sync_fn, NULL))                                  \
    X(vkprof_set_thread_name, "ctx", 1, thread_name_null_ctx())                                    \
    X(vkprof_set_thread_name, "name", 0, (vkprof_set_thread_name(C, NULL), 0))                     \
    X(vkprof_step, "ctx", 0, (vkprof_step(NULL), 0))                                               \
    X(vkprof_step_count, "ctx", 0, vkprof_step_count(NULL))                                        \
    X(vkprof_bucket_snapshot, "ctx", INV, vkprof_bucket_snapshot(NULL, NULL, 0, &(uint32_t){0}))   \
    X(vkprof_bucket_snapshot, "out", SMALL, vkprof_bucket_snapshot(C, NULL, 0, &(uint32_t){0}))    \
    X(vkprof_bucket_snapshot, "out", SMALL, vkprof_bucket_snapshot(C, NULL, 4, &(uint32_t){0}))    \
    X(vkprof_bucket_snapshot, "count", INV,                                                        \
      vkprof_bucket_snapshot(C, (vkprof_bucket_stats[1]){{0}}, 1, NULL))                           \
    X(vkprof_format_report, "buf", 1, format_null_buf(0, 2))                                       \
    X(vkprof_format_report, "buf", 1, format_null_buf(10, 2))                                      \
    X(vkprof_format_report, "rows", 1, format_null_rows(0))                                        \
    X(vkprof_format_report, "rows", 1, format_null_rows(3))                                        \
    X(vkprof_calibrate, "ctx", INV, vkprof_calibrate(NULL))                                        \
    X(vkprof_get_calibration, "ctx", INV, vkprof_get_calibration(NULL, &(vkprof_calibration){0}))  \
    X(vkprof_get_calibration, "out", INV, vkprof_get_calibration(C, NULL))                         \
    X(vkprof_device_to_host_ns, "ctx", INV, vkprof_device_to_host_ns(NULL, 1, &(uint64_t){0}))     \
    X(vkprof_device_to_host_ns, "host_ns", INV, vkprof_device_to_host_ns(C, 1, NULL))              \
    X(vkprof_host_now_ns, "", 1, vkprof_host_now_ns() > 0)                                         \
    X(vkprof_trace_begin, "ctx", INV, vkprof_trace_begin(NULL, 0))                                 \
    X(vkprof_tracing, "ctx", 0, B(vkprof_tracing(NULL)))                                           \
    X(vkprof_trace_counts, "ctx", 1, trace_counts(NULL, true, true))                               \
    X(vkprof_trace_counts, "recorded", 1, trace_counts(C, false, true))                            \
    X(vkprof_trace_counts, "dropped", 1, trace_counts(C, true, false))                             \
    X(vkprof_trace_counts, "recorded", 1, (vkprof_trace_counts(NULL, NULL, NULL), 1))              \
    X(vkprof_trace_write, "ctx", INV, vkprof_trace_write(NULL, g_trace_path))                      \
    X(vkprof_trace_write, "path", INV, vkprof_trace_write(C, NULL))                                \
    X(vkprof_trace_write_set, "ctxs", INV,                                                         \
      vkprof_trace_write_set(NULL, 1, g_trace_path, VKPROF_TRACE_FORMAT_DEFAULT))                  \
    X(vkprof_trace_write_set, "ctxs", INV,                                                         \
      vkprof_trace_write_set((vkprof_context[1]){NULL}, 1, g_trace_path,                           \
                             VKPROF_TRACE_FORMAT_DEFAULT))                                         \
    X(vkprof_trace_write_set, "path", INV,                                                         \
      vkprof_trace_write_set(&C, 1, NULL, VKPROF_TRACE_FORMAT_DEFAULT))                            \
    X(vkprof_cmd_discard, "ctx", OK_, vkprof_cmd_discard(NULL, CMD))                               \
    X(vkprof_cmd_discard, "cmd", OK_, vkprof_cmd_discard(C, VK_NULL_HANDLE))                       \
    X(vkprof_count_calls, "ctx", DIS, vkprof_count_calls(NULL, VKPROF_PHASE_NORM, 1))              \
    X(vkprof_get_trace_info, "ctx", INV, vkprof_get_trace_info(NULL, &(vkprof_trace_info){0}))     \
    X(vkprof_get_trace_info, "out", INV, vkprof_get_trace_info(C, NULL))                           \
    X(vkprof_spool_sync, "ctx", INV, vkprof_spool_sync(NULL))                                      \
    X(vkprof_spool_sync, "", DIS, vkprof_spool_sync(C))                                            \
    X(vkprof_spool_status, "ctx", INV, vkprof_spool_status(NULL, &(vkprof_spool_info){0}))         \
    X(vkprof_spool_status, "out", INV, vkprof_spool_status(C, NULL))                               \
    X(vkprof_spool_open, "path", INV, vkprof_spool_open(NULL, &(vkprof_context){NULL}, NULL, 0))   \
    X(vkprof_spool_open, "out", INV, vkprof_spool_open("x.spool", NULL, NULL, 0))                  \
    X(vkprof_spool_open, "err", VKPROF_ERROR_IO,                                                   \
      vkprof_spool_open("/nonexistent/x.spool", &(vkprof_context){NULL}, NULL, 0))                 \
    X(vkprof_trace_flush, "ctx", INV, vkprof_trace_flush(NULL))                                    \
    /* the old names (deprecated inline wrappers): as the new ones */                              \
    X(vkprof_span_start, "ctx", 0, vkprof_span_start(NULL, VKPROF_BUCKET_NORM).start_ns)           \
    X(vkprof_span_start_hot, "ctx", 0, vkprof_span_start_hot(NULL, VKPROF_BUCKET_NORM).start_ns)   \
    X(vkprof_trace_start, "ctx", INV, vkprof_trace_start(NULL, 0))                                 \
    X(vkprof_flush, "ctx", INV, vkprof_flush(NULL))                                                \
    X(VKPROF_BEGIN, "ctx", DIS, VKPROF_BEGIN((vkprof_context)NULL, CMD, VKPROF_PHASE_NORM))        \
    X(VKPROF_END, "ctx", DIS, VKPROF_END((vkprof_context)NULL, CMD, VKPROF_PHASE_NORM))            \
    X(VKPROF_BOTH, "ctx", 1000 + DIS, macro_both_null_ctx())                                       \
    X(vkprof__span_on_, "ctx", 0, B(vkprof__span_on_(NULL, true)))                                 \
    X(vkprof__span_empty_, "", 0, vkprof__span_empty_().start_ns)                                  \
    X(vkprof__span_call_, "fn", 0, span_call(NULL, NULL))                                          \
    X(vkprof__span_call_, "user", 1, span_call(sync_fn, NULL))                                     \
    X(VKPROF_SPAN, "ctx", 0, VKPROF_SPAN((vkprof_context)NULL, VKPROF_BUCKET_NORM).start_ns)       \
    X(VKPROF_SPAN_HOT, "ctx", 0,                                                                   \
      VKPROF_SPAN_HOT((vkprof_context)NULL, VKPROF_BUCKET_NORM).start_ns)                          \
    X(VKPROF_SPAN_END, "ctx", 0, VKPROF_SPAN_END((vkprof_context)NULL, &(vkprof_span){0}))         \
    X(VKPROF_SPAN_END_SYNC, "ctx", 1, macro_end_sync_null_ctx())                                   \
    X(VKPROF_RENDEZVOUS, "ctx", 1, macro_rendezvous_null_ctx())

typedef struct row {
    const char *fn;
    const char *arg;
    long long expect;
    const char *call;
} row;

static const row k_rows[] = {
#define X(fn, arg, expect, call) {#fn, arg, (long long)(expect), #call},
    NULL_ROWS(X)
#undef X
};
#define ROW_COUNT (sizeof k_rows / sizeof k_rows[0])

/* the rows of the old names call them: no deprecation warning here */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static long long run_row(size_t i)
{
    size_t k = 0;
#define X(fn, arg, expect, call)                                                                   \
    if (i == k++) {                                                                                \
        return (long long)(call);                                                                  \
    }
    NULL_ROWS(X)
#undef X
    return -12345;
}
#pragma GCC diagnostic pop

static void test_null_table(void)
{
    for (size_t i = 0; i < ROW_COUNT; i++) {
        const row *r = &k_rows[i];
        /* printed first, so a crash names its row */
        printf("  %-26s %-9s %s\n", r->fn, r->arg[0] ? r->arg : "-", r->call);
        fflush(stdout);
        long long got = run_row(i);
        if (got != r->expect) {
            fprintf(stderr, "FAIL [%s(%s = NULL)]: %s gave %lld, expected %lld\n", r->fn, r->arg,
                    r->call, got, r->expect);
            th_failures++;
        }
    }
    printf("  %zu rows\n", ROW_COUNT);
}

/* ---- the header's functions and their pointer parameters ---- */

typedef struct decl {
    char name[64];
    int params;
    char param[8][32]; /* pointer parameters only */
} decl;

static bool is_ident(int c)
{
    return isalnum(c) || c == '_';
}

/* A parameter ("const char *name", "vkprof_context ctx") is a pointer when
 * its type has a '*', or is a handle or a callback typedef. */
static bool pointer_type(const char *type)
{
    static const char *const handles[] = {"vkprof_context", "VkCommandBuffer", "vkprof_sync_fn",
                                          "vkprof_record_fn", "vkprof_log_fn"};
    if (strchr(type, '*') != NULL) {
        return true;
    }
    for (size_t i = 0; i < sizeof handles / sizeof handles[0]; i++) {
        const char *p = strstr(type, handles[i]);
        if (p != NULL && !is_ident((unsigned char)p[strlen(handles[i])])) {
            return true;
        }
    }
    return false;
}

/* Parameters between the parentheses at `open` (which is at '('). */
static void parse_params(const char *open, decl *d)
{
    const char *p = open + 1;
    int depth = 0;
    char one[256];
    size_t n = 0;
    for (;; p++) {
        char c = *p;
        if (c == '\0') {
            break;
        }
        if (c == '(') {
            depth++;
        }
        if (c == ')' && depth-- == 0) {
            c = ',';
        }
        if (c == ',' && depth <= 0) {
            one[n] = '\0';
            /* the last identifier is the name; the rest the type */
            size_t e = n;
            while (e > 0 && !is_ident((unsigned char)one[e - 1])) {
                e--;
            }
            size_t s = e;
            while (s > 0 && is_ident((unsigned char)one[s - 1])) {
                s--;
            }
            char name[32];
            snprintf(name, sizeof name, "%.*s", (int)(e - s), one + s);
            one[s] = '\0';
            if (strcmp(name, "void") != 0 && name[0] != '\0') {
                d->params++;
                if (pointer_type(one) && d->params <= 8) {
                    snprintf(d->param[d->params - 1], sizeof d->param[0], "%s", name);
                }
            }
            n = 0;
            if (*p == ')') {
                break;
            }
            continue;
        }
        if (n + 1 < sizeof one) {
            one[n++] = (c == '\n') ? ' ' : c;
        }
    }
}

/* Every function declared in the header (lines at column 0 that are not
 * preprocessor, typedef or comment lines), and the call-site macros. */
static int parse_header(const char *text, decl *out, int cap)
{
    int n = 0;
    for (const char *line = text; line != NULL && *line; line = strchr(line, '\n')) {
        if (*line == '\n') {
            line++;
        }
        bool macro = strncmp(line, "#define VKPROF_", 15) == 0;
        if (!macro && !(isalpha((unsigned char)*line) || *line == '_')) {
            continue;
        }
        if (strncmp(line, "typedef", 7) == 0) {
            continue;
        }
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        const char *name = NULL, *open = NULL;
        for (size_t i = 0; i < len; i++) {
            bool start = i == 0 || !is_ident((unsigned char)line[i - 1]);
            const char *want = macro ? "VKPROF_" : "vkprof_";
            if (start && strncmp(line + i, want, 7) == 0) {
                size_t j = i;
                while (j < len && is_ident((unsigned char)line[j])) {
                    j++;
                }
                if (j < len && line[j] == '(') {
                    name = line + i;
                    open = line + j;
                    break;
                }
            }
        }
        /* a macro counts when it takes a context first, as the call-site ones do */
        if (name == NULL || (macro && strncmp(open, "(ctx", 4) != 0)) {
            continue;
        }
        char nm[64];
        snprintf(nm, sizeof nm, "%.*s", (int)(open - name), name);
        bool seen = false;
        for (int i = 0; i < n; i++) {
            seen = seen || strcmp(out[i].name, nm) == 0;
        }
        if (seen || n >= cap) {
            continue;
        }
        memset(&out[n], 0, sizeof out[n]);
        snprintf(out[n].name, sizeof out[n].name, "%s", nm);
        parse_params(open, &out[n]);
        if (macro) {
            /* untyped: the context is the pointer a row must cover */
            memset(out[n].param, 0, sizeof out[n].param);
            snprintf(out[n].param[0], sizeof out[n].param[0], "ctx");
        }
        n++;
    }
    return n;
}

static bool has_row(const char *fn, const char *arg)
{
    for (size_t i = 0; i < ROW_COUNT; i++) {
        if (strcmp(k_rows[i].fn, fn) == 0 && (arg == NULL || strcmp(k_rows[i].arg, arg) == 0)) {
            return true;
        }
    }
    return false;
}

static void test_table_covers_header(void)
{
    char *text = th_read_file(VKPROF_HEADER);
    CHECK(text != NULL);
    if (text == NULL) {
        return;
    }
    static decl d[256];
    int n = parse_header(text, d, 256);
    printf("  %s: %d functions and call-site macros\n", VKPROF_HEADER, n);
    CHECK(n >= 50);
    int pointers = 0;
    for (int i = 0; i < n; i++) {
        if (!has_row(d[i].name, NULL)) {
            fprintf(stderr, "FAIL: %s is declared in vkprof.h but has no row in NULL_ROWS\n",
                    d[i].name);
            th_failures++;
        }
        for (int p = 0; p < d[i].params && p < 8; p++) {
            if (d[i].param[p][0] == '\0') {
                continue;
            }
            pointers++;
            if (!has_row(d[i].name, d[i].param[p])) {
                fprintf(stderr, "FAIL: %s(%s = NULL) has no row in NULL_ROWS\n", d[i].name,
                        d[i].param[p]);
                th_failures++;
            }
        }
    }
    printf("  %d pointer parameters\n", pointers);
    /* and every row names a declared function and one of its pointer parameters */
    for (size_t r = 0; r < ROW_COUNT; r++) {
        bool found = false;
        for (int i = 0; i < n && !found; i++) {
            if (strcmp(d[i].name, k_rows[r].fn) != 0) {
                continue;
            }
            found = k_rows[r].arg[0] == '\0';
            for (int p = 0; p < d[i].params && p < 8 && !found; p++) {
                found = strcmp(d[i].param[p], k_rows[r].arg) == 0;
            }
        }
        if (!found) {
            fprintf(stderr, "FAIL: row %s(%s) names no declared function / pointer parameter\n",
                    k_rows[r].fn, k_rows[r].arg);
            th_failures++;
        }
    }
    free(text);
}

/* The parser itself: a declaration added to a header is found, with its
 * pointer parameters, so the coverage check above can fail. */
static void test_parser(void)
{
    static const char hdr[] = "/* vkprof_comment(ctx) */\n"
                              " * vkprof_in_comment(ctx);\n"
                              "typedef void (*vkprof_cb_fn)(void *user);\n"
                              "#define VKPROF_VERSION_X(a) (a)\n"
                              "#define VKPROF_NEW(ctx, cmd) vkprof_new((ctx), (cmd))\n"
                              "vkprof_result vkprof_new(vkprof_context ctx, uint32_t n,\n"
                              "                         const char *name, vkprof_sync_fn sync);\n"
                              "uint32_t vkprof_plain(void);\n";
    decl d[8];
    int n = parse_header(hdr, d, 8);
    CHECK(n == 3);
    if (n != 3) {
        return;
    }
    CHECK(strcmp(d[0].name, "VKPROF_NEW") == 0);
    CHECK(strcmp(d[1].name, "vkprof_new") == 0);
    CHECK(d[1].params == 4);
    CHECK(strcmp(d[1].param[0], "ctx") == 0);
    CHECK(d[1].param[1][0] == '\0');
    CHECK(strcmp(d[1].param[2], "name") == 0);
    CHECK(strcmp(d[1].param[3], "sync") == 0);
    CHECK(strcmp(d[2].name, "vkprof_plain") == 0 && d[2].params == 0);
    CHECK(!has_row("vkprof_new", NULL));
}

int main(void)
{
    th_gpu_init(&g);
    th_busy_init(&g, &busy, 1024);
    logbuf.quiet = 1;
    snprintf(g_trace_path, sizeof g_trace_path, "%s/test_null_trace.json",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    vkprof_context_desc d = vku_vkprof_desc(&g.inst, &g.dev);
    d.enable = VKPROF_ENABLE_ON;
    d.host_level = VKPROF_HOST_ALL;
    d.report_every = UINT32_MAX;
    d.log = th_log_fn;
    d.log_user = &logbuf;
    CHECK(vkprof_create(&d, &C) == VKPROF_OK);
    CHECK(vkprof_active(C));
    CHECK(vkprof_trace_begin(C, 1024) == VKPROF_OK);
    CMD = g.dev.cmd;
    CHECK_VK(vku_begin(&g.dev));
    RUN(test_parser);
    RUN(test_table_covers_header);
    RUN(test_null_table);
    CHECK_VK(vku_submit_wait(&g.dev));
    vkprof_destroy(C);
    vku_busy_destroy(&g.dev, &busy);
    th_gpu_finish(&g);
    return th_done();
}
