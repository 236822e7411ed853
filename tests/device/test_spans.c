/* The span token and its misuse (issue 8): a small handle naming a frame in
 * the opening thread's storage. Closed twice, closed out of order, annotated
 * after close, too many open, closed from another thread or with another
 * context: never a wrong number, never a crash, counted as vkprof.h says.
 * Checks calls and counters only; nothing here is measured by timing. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <string.h>

#include "harness.h"

_Static_assert(sizeof(vkprof_span) <= 24, "the span token is small");

static th_gpu g;
static th_log logbuf;

static vkprof_context make_ctx(void)
{
    vkprof_context_desc d = th_desc(&g, &logbuf, false);
    d.enable = VKPROF_ENABLE_OFF;
    d.host_level = VKPROF_HOST_ALL;
    d.report_every = UINT32_MAX;
    return th_ctx(&d);
}

static uint64_t calls(vkprof_context ctx, vkprof_bucket b)
{
    vkprof_bucket_stats st[VKPROF_MAX_BUCKETS];
    uint32_t n = 0;
    CHECK(vkprof_bucket_snapshot(ctx, st, VKPROF_MAX_BUCKETS, &n) == VKPROF_OK);
    return b < n ? st[b].calls : UINT64_MAX;
}

static vkprof_error_counts errors(vkprof_context ctx)
{
    vkprof_error_counts e;
    uint32_t n;
    CHECK(vkprof_snapshot(ctx, NULL, 0, &n, &e) == VKPROF_ERROR_BUFFER_TOO_SMALL);
    return e;
}

static void test_nesting(void)
{
    vkprof_context ctx = make_ctx();
    vkprof_span a = vkprof_span_begin(ctx, VKPROF_BUCKET_MLP);
    vkprof_span b = vkprof_span_begin(ctx, VKPROF_BUCKET_NORM);
    CHECK(a.start_ns != 0 && b.start_ns >= a.start_ns);
    CHECK(a.bucket == VKPROF_BUCKET_MLP && b.bucket == VKPROF_BUCKET_NORM);
    uint64_t bn = vkprof_span_end(ctx, &b);
    uint64_t an = vkprof_span_end(ctx, &a);
    CHECK(an >= bn);                           /* the outer span holds the inner one */
    CHECK(a.start_ns == 0 && b.start_ns == 0); /* closed tokens are empty */
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_MLP), 1);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_NORM), 1);
    vkprof_error_counts e = errors(ctx);
    CHECK(memcmp(&e, &(vkprof_error_counts){0}, sizeof e) == 0);
    vkprof_destroy(ctx);
}

static void test_closed_twice(void)
{
    vkprof_context ctx = make_ctx();
    vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_MLP);
    vkprof_span copy = s;
    (void)vkprof_span_end(ctx, &s);
    CHECK_EQ_U64(vkprof_span_end(ctx, &s), 0); /* the same variable: an empty token */
    CHECK_EQ_U64(errors(ctx).span_closed, 0);
    CHECK_EQ_U64(vkprof_span_end(ctx, &copy), 0); /* a copy: refused, counted */
    CHECK_EQ_U64(errors(ctx).span_closed, 1);
    CHECK(copy.start_ns == 0);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_MLP), 1);
    /* a copy of a closed span whose frame was reused by a later span */
    vkprof_span t = vkprof_span_begin(ctx, VKPROF_BUCKET_MLP);
    vkprof_span stale = t;
    (void)vkprof_span_end(ctx, &t);
    vkprof_span u = vkprof_span_begin(ctx, VKPROF_BUCKET_NORM); /* same slot */
    CHECK_EQ_U64(vkprof_span_end(ctx, &stale), 0);
    CHECK(!vkprof_span_annotate(&stale, "k", "v")); /* annotate after close */
    CHECK(vkprof_span_annotate(&u, "k", "v"));      /* u is untouched */
    (void)vkprof_span_end(ctx, &u);
    CHECK_EQ_U64(errors(ctx).span_closed, 2);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_MLP), 2);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_NORM), 1);
    vkprof_destroy(ctx);
}

static void test_out_of_order(void)
{
    vkprof_context ctx = make_ctx();
    vkprof_span a = vkprof_span_begin(ctx, VKPROF_BUCKET_MLP);
    vkprof_span b = vkprof_span_begin(ctx, VKPROF_BUCKET_NORM);
    vkprof_span c = vkprof_span_begin(ctx, VKPROF_BUCKET_ATTENTION);
    (void)vkprof_span_end(ctx, &a); /* b and c are still open: given up */
    vkprof_error_counts e = errors(ctx);
    CHECK_EQ_U64(e.span_order, 2);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_MLP), 1);
    CHECK(!vkprof_span_annotate(&b, "k", "v"));
    CHECK_EQ_U64(vkprof_span_end(ctx, &c), 0);
    CHECK_EQ_U64(vkprof_span_end(ctx, &b), 0);
    e = errors(ctx);
    CHECK_EQ_U64(e.span_closed, 2);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_NORM), 0);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_ATTENTION), 0);
    /* the stack is free again: a full depth opens */
    vkprof_span s[VKPROF_SPAN_MAX_DEPTH];
    for (uint32_t i = 0; i < VKPROF_SPAN_MAX_DEPTH; i++) {
        s[i] = vkprof_span_begin(ctx, VKPROF_BUCKET_MOE_ROUTER);
        CHECK(s[i].start_ns != 0);
    }
    for (uint32_t i = VKPROF_SPAN_MAX_DEPTH; i-- > 0;) {
        (void)vkprof_span_end(ctx, &s[i]);
    }
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_MOE_ROUTER), VKPROF_SPAN_MAX_DEPTH);
    CHECK_EQ_U64(errors(ctx).span_too_deep, 0);
    /* vkprof_reset clears the span counters too */
    vkprof_reset(ctx);
    e = errors(ctx);
    CHECK(e.span_order == 0 && e.span_closed == 0);
    vkprof_destroy(ctx);
}

static void test_too_deep(void)
{
    vkprof_context ctx = make_ctx();
    vkprof_span s[VKPROF_SPAN_MAX_DEPTH];
    for (uint32_t i = 0; i < VKPROF_SPAN_MAX_DEPTH; i++) {
        s[i] = vkprof_span_begin(ctx, VKPROF_BUCKET_MLP);
    }
    vkprof_span extra = vkprof_span_begin_hot(ctx, VKPROF_BUCKET_NORM);
    CHECK(extra.start_ns == 0); /* not timed: an empty token */
    CHECK(!vkprof_span_annotate(&extra, "k", "v"));
    CHECK_EQ_U64(vkprof_span_end(ctx, &extra), 0);
    CHECK_EQ_U64(vkprof_rendezvous(ctx, VKPROF_BUCKET_ALLREDUCE_ATTN_RENDEZVOUS, NULL, NULL), 0);
    vkprof_error_counts e = errors(ctx);
    CHECK_EQ_U64(e.span_too_deep, 2);
    CHECK_EQ_U64(e.span_closed, 0);
    for (uint32_t i = VKPROF_SPAN_MAX_DEPTH; i-- > 0;) {
        (void)vkprof_span_end(ctx, &s[i]);
    }
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_MLP), VKPROF_SPAN_MAX_DEPTH);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_NORM), 0);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_ALLREDUCE_ATTN_RENDEZVOUS), 0);
    /* annotations: VKPROF_SPAN_MAX_ANNOTATIONS keys, then false; a key given
     * again takes its new value (an event never holds a key twice) */
    vkprof_span a = vkprof_span_begin(ctx, VKPROF_BUCKET_MLP);
    static const char *const keys[] = {"k0", "k1", "k2", "k3", "k4"};
    _Static_assert(VKPROF_SPAN_MAX_ANNOTATIONS == 4, "keys[] has one more");
    for (uint32_t i = 0; i < VKPROF_SPAN_MAX_ANNOTATIONS; i++) {
        CHECK(vkprof_span_annotate(&a, keys[i], "v"));
    }
    CHECK(!vkprof_span_annotate(&a, keys[VKPROF_SPAN_MAX_ANNOTATIONS], "v"));
    CHECK(vkprof_span_annotate(&a, keys[0], "again"));
    (void)vkprof_span_end(ctx, &a);
    CHECK_EQ_U64(vkprof_span_end(ctx, &a), 0); /* closed: an empty token, not counted */
    CHECK_EQ_U64(errors(ctx).span_closed, 0);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_MLP), VKPROF_SPAN_MAX_DEPTH + 1);
    vkprof_destroy(ctx);
}

/* a span is its thread's: closing it on another thread is refused */
typedef struct other {
    vkprof_context ctx;
    vkprof_span *span;
    uint64_t ns;
    bool annotated;
} other;

static void *close_elsewhere(void *arg)
{
    other *o = arg;
    vkprof_span copy = *o->span;
    o->annotated = vkprof_span_annotate(&copy, "k", "v");
    o->ns = vkprof_span_end(o->ctx, &copy);
    /* and this thread's own stack is untouched by the refused close */
    vkprof_span own = vkprof_span_begin(o->ctx, VKPROF_BUCKET_NORM);
    (void)vkprof_span_end(o->ctx, &own);
    return NULL;
}

static void test_other_thread_and_context(void)
{
    vkprof_context ctx = make_ctx();
    vkprof_context ctx2 = make_ctx();
    vkprof_span s = vkprof_span_begin(ctx, VKPROF_BUCKET_MLP);
    other o = {ctx, &s, 1, true};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, close_elsewhere, &o) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_EQ_U64(o.ns, 0);
    CHECK(!o.annotated);
    CHECK_EQ_U64(errors(ctx).span_closed, 1);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_NORM), 1);
    /* another context: refused, counted there; the span stays open */
    vkprof_span copy = s;
    CHECK_EQ_U64(vkprof_span_end(ctx2, &copy), 0);
    CHECK_EQ_U64(errors(ctx2).span_closed, 1);
    CHECK_EQ_U64(calls(ctx2, VKPROF_BUCKET_MLP), 0);
    CHECK(s.start_ns != 0);
    (void)vkprof_span_end(ctx, &s); /* still closes on its own thread and context */
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_MLP), 1);
    CHECK_EQ_U64(errors(ctx).span_closed, 1);
    vkprof_destroy(ctx2);
    vkprof_destroy(ctx);
}

static void *end_detached_elsewhere(void *arg)
{
    other *o = arg;
    o->ns = vkprof_span_end_detached(o->ctx, o->span);
    return NULL;
}

/* Detached spans (the layer's recordings): off the stack, so they may
 * interleave with each other and hold stack spans; timed into their bucket
 * only on their own thread; a stack close of one, a detached close of a
 * stack span, a second close and another thread are refused, counting
 * nothing; level 2 (hot spans) does not time them. */
static void test_detached(void)
{
    vkprof_context ctx = make_ctx();
    vkprof_span a = vkprof_span_begin_detached(ctx, VKPROF_BUCKET_MLP);
    vkprof_span inner = vkprof_span_begin(ctx, VKPROF_BUCKET_NORM);
    vkprof_span b = vkprof_span_begin_detached(ctx, VKPROF_BUCKET_MLP);
    CHECK(a.start_ns != 0 && b.start_ns >= a.start_ns);
    CHECK(!vkprof_span_annotate(&a, "k", "v"));
    (void)vkprof_span_end(ctx, &inner); /* the top of the stack: nothing given up */
    CHECK_EQ_U64(errors(ctx).span_order, 0);
    uint64_t an = vkprof_span_end_detached(ctx, &a); /* a before b: interleaved */
    CHECK(a.start_ns == 0);
    vkprof_span copy = b;
    CHECK_EQ_U64(vkprof_span_end(ctx, &copy), 0); /* not a stack span: refused, counted */
    CHECK_EQ_U64(errors(ctx).span_closed, 1);
    uint64_t bn = vkprof_span_end_detached(ctx, &b);
    CHECK(b.start_ns == 0);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_MLP), 2);
    /* the bucket holds both, as returned (b opened after a and closed after) */
    vkprof_bucket_stats bs[VKPROF_MAX_BUCKETS];
    uint32_t nb = 0;
    CHECK(vkprof_bucket_snapshot(ctx, bs, VKPROF_MAX_BUCKETS, &nb) == VKPROF_OK);
    CHECK(nb > VKPROF_BUCKET_MLP && bs[VKPROF_BUCKET_MLP].total_ns + 2 >= an + bn &&
          bs[VKPROF_BUCKET_MLP].total_ns <= an + bn + 2);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_NORM), 1);
    CHECK_EQ_U64(vkprof_span_end_detached(ctx, &b), 0); /* closed already */
    vkprof_span st = vkprof_span_begin(ctx, VKPROF_BUCKET_NORM);
    CHECK_EQ_U64(vkprof_span_end_detached(ctx, &st), 0); /* a stack span: not this way */
    CHECK(st.start_ns != 0);
    (void)vkprof_span_end(ctx, &st);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_NORM), 2);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_MLP), 2);
    /* another thread: nothing timed, the token emptied */
    vkprof_span c = vkprof_span_begin_detached(ctx, VKPROF_BUCKET_MLP);
    other o = {ctx, &c, 1, false};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, end_detached_elsewhere, &o) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_EQ_U64(o.ns, 0);
    CHECK(c.start_ns == 0);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_MLP), 2);
    /* an unknown bucket: an error; hot spans only: an empty token */
    CHECK(vkprof_span_begin_detached(ctx, VKPROF_MAX_BUCKETS + 1).start_ns == 0);
    CHECK(strstr(logbuf.last, "unknown bucket") != NULL);
    vkprof_set_host_level(ctx, VKPROF_HOST_HOT);
    CHECK(vkprof_span_begin_detached(ctx, VKPROF_BUCKET_MLP).start_ns == 0);
    CHECK(vkprof_span_begin_detached(NULL, VKPROF_BUCKET_MLP).start_ns == 0);
    CHECK_EQ_U64(errors(ctx).span_closed, 1);
    vkprof_destroy(ctx);
}

static int g_synced;
static void on_sync(void *user)
{
    (void)user;
    g_synced++;
}

/* The macros: timed per level, and the same counts as the functions. */
static void test_macros(void)
{
    vkprof_context ctx = make_ctx();
    vkprof_span s = VKPROF_SPAN(ctx, VKPROF_BUCKET_MLP);
    vkprof_span h = VKPROF_SPAN_HOT(ctx, VKPROF_BUCKET_ALLREDUCE_MLP);
    CHECK(s.start_ns != 0 && h.start_ns != 0);
    CHECK(VKPROF_SPAN_ANNOTATE(&h, "k", "v"));
    (void)VKPROF_SPAN_END(ctx, &h);
    (void)VKPROF_SPAN_END_SYNC(ctx, &s, on_sync, NULL);
    CHECK(g_synced == 1);
    CHECK_EQ_U64(VKPROF_SPAN_END(ctx, &s), 0); /* closed: empty */
    (void)VKPROF_RENDEZVOUS(ctx, VKPROF_BUCKET_ALLREDUCE_MLP_RENDEZVOUS, on_sync, NULL);
    CHECK(g_synced == 2);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_MLP), 1);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_ALLREDUCE_MLP), 1);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_ALLREDUCE_MLP_RENDEZVOUS), 1);
    /* level 2: only hot spans */
    vkprof_set_host_level(ctx, VKPROF_HOST_HOT);
    s = VKPROF_SPAN(ctx, VKPROF_BUCKET_MLP);
    h = VKPROF_SPAN_HOT(ctx, VKPROF_BUCKET_ALLREDUCE_MLP);
    CHECK(s.start_ns == 0 && h.start_ns != 0);
    CHECK(!VKPROF_SPAN_ANNOTATE(&s, "k", "v"));
    CHECK_EQ_U64(VKPROF_SPAN_END(ctx, &s), 0);
    (void)VKPROF_SPAN_END(ctx, &h);
    /* off: nothing */
    vkprof_set_host_level(ctx, VKPROF_HOST_OFF);
    h = VKPROF_SPAN_HOT(ctx, VKPROF_BUCKET_ALLREDUCE_MLP);
    CHECK(h.start_ns == 0);
    CHECK_EQ_U64(VKPROF_RENDEZVOUS(ctx, VKPROF_BUCKET_ALLREDUCE_MLP_RENDEZVOUS, on_sync, NULL), 0);
    CHECK(g_synced == 3);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_MLP), 1);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_ALLREDUCE_MLP), 2);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_ALLREDUCE_MLP_RENDEZVOUS), 1);
    vkprof_error_counts e = errors(ctx);
    CHECK(memcmp(&e, &(vkprof_error_counts){0}, sizeof e) == 0);
    vkprof_destroy(ctx);
}

/* The old names of 0.2 (issue 27: one verb for each pair) still compile,
 * with a deprecation warning silenced here, and do what the new ones do. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static void test_old_names(void)
{
    vkprof_context ctx = make_ctx();
    vkprof_span a = vkprof_span_start(ctx, VKPROF_BUCKET_MLP);
    vkprof_span h = vkprof_span_start_hot(ctx, VKPROF_BUCKET_ALLREDUCE_MLP);
    CHECK(a.start_ns != 0 && a.bucket == VKPROF_BUCKET_MLP);
    CHECK(h.start_ns != 0 && h.bucket == VKPROF_BUCKET_ALLREDUCE_MLP);
    (void)vkprof_span_end(ctx, &h);
    (void)vkprof_span_end(ctx, &a);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_MLP), 1);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_ALLREDUCE_MLP), 1);
    /* level 2: the old plain name is not timed, the old hot one is */
    vkprof_set_host_level(ctx, VKPROF_HOST_HOT);
    CHECK(vkprof_span_start(ctx, VKPROF_BUCKET_MLP).start_ns == 0);
    h = vkprof_span_start_hot(ctx, VKPROF_BUCKET_ALLREDUCE_MLP);
    CHECK(h.start_ns != 0);
    (void)vkprof_span_end(ctx, &h);
    CHECK_EQ_U64(calls(ctx, VKPROF_BUCKET_ALLREDUCE_MLP), 2);
    /* the trace: no path set, so flush says so, as vkprof_trace_flush does */
    CHECK(vkprof_flush(ctx) == vkprof_trace_flush(ctx));
    CHECK(!vkprof_tracing(ctx));
    CHECK(vkprof_trace_start(ctx, 64) == VKPROF_OK);
    CHECK(vkprof_tracing(ctx));
    CHECK(vkprof_trace_start(NULL, 0) == VKPROF_ERROR_INVALID_ARGUMENT);
    CHECK(vkprof_flush(NULL) == VKPROF_ERROR_INVALID_ARGUMENT);
    vkprof_error_counts e = errors(ctx);
    CHECK(memcmp(&e, &(vkprof_error_counts){0}, sizeof e) == 0);
    vkprof_destroy(ctx);
}
#pragma GCC diagnostic pop

int main(void)
{
    th_gpu_init(&g);
    logbuf.quiet = 1;
    RUN(test_nesting);
    RUN(test_closed_twice);
    RUN(test_out_of_order);
    RUN(test_too_deep);
    RUN(test_other_thread_and_context);
    RUN(test_detached);
    RUN(test_old_names);
    RUN(test_macros);
    th_gpu_finish(&g);
    return th_done();
}
