/* Ring mode from many threads at once (issue 8), on lavapipe with validation
 * on, and under TSan in scripts/test.sh: THREADS threads each record their
 * OWN command buffer (own pool, own fence, own busy pipeline and buffer) into
 * ONE ring context and submit it to the one queue, which a mutex guards as
 * Vulkan requires; each waits its own fence and calls vkprof_collect (no
 * lock of ours). Half the threads submit one pre-recorded buffer TOKENS
 * times, the other half re-record it every token (two of them telling the
 * library with vkprof_cmd_release first, two relying on the next submit);
 * half nest the token's other two scopes inside the first. Submits go three
 * ways: vkprof_queue_submit, vkprof_cmd_submit outside the queue lock then
 * vkQueueSubmit, and vkprof_queue_submit2. Every execution of every scope is
 * one sample: the counts must come out exact, none lost, none pending. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define THREADS 8
#define TOKENS 20
#define SCOPES 3

static th_gpu g;
static vkprof_context ctx;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;
static atomic_int log_warnings, log_errors;
/* lavapipe (Mesa 22.3) is not thread-safe here: its vkGetQueryPoolResults
 * starts with vkDeviceWaitIdle, which submits to the queue (vk_common
 * QueueWaitIdle) without the queue's external synchronization, and its
 * vkResetQueryPool uses the queue's context. Raced against another thread's
 * vkQueueSubmit it loses submissions and hangs. On lavapipe the test
 * therefore also takes the queue lock around the vkprof calls that read or
 * reset queries (collect, cmd_submit, cmd_release); recording stays
 * unlocked. VKPROF_TEST_SERIALIZE_RESULTS=0/1 overrides. */
static bool serialize_results;

static const vkprof_phase phases[SCOPES] = {VKPROF_PHASE_QKV, VKPROF_PHASE_ATTENTION,
                                            VKPROF_PHASE_MLP_DOWN};

typedef struct worker {
    int id;
    bool resubmit; /* record once, submit TOKENS times; else re-record each token */
    bool release;  /* re-recording: vkprof_cmd_release before each reset */
    bool nested;   /* scopes 1 and 2 inside scope 0 */
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    vku_busy busy;
    int failures; /* th_failures is the main thread's */
    uint64_t submits;
} worker;

/* CHECK for worker threads: counted in the worker, summed after join. */
#define W_CHECK(w, cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d [thread %d]: %s\n", __FILE__, __LINE__, (w)->id, #cond);   \
            (w)->failures++;                                                                       \
        }                                                                                          \
    } while (0)
#define W_CHECK_VK(w, expr) W_CHECK(w, (expr) == VK_SUCCESS)

static void log_fn(void *user, vkprof_log_level level, vkprof_result code, const char *msg)
{
    (void)user;
    if (level == VKPROF_LOG_ERROR) {
        atomic_fetch_add(&log_errors, 1);
    } else if (level == VKPROF_LOG_WARN) {
        atomic_fetch_add(&log_warnings, 1);
    } else {
        return;
    }
    fprintf(stderr, "  log: %s (%s)\n", msg, vkprof_result_name(code));
}

static void results_lock(void)
{
    if (serialize_results) {
        pthread_mutex_lock(&queue_lock);
    }
}

static void results_unlock(void)
{
    if (serialize_results) {
        pthread_mutex_unlock(&queue_lock);
    }
}

static void scope_begin(worker *w, int s)
{
    W_CHECK(w, vkprof_cmd_begin(ctx, w->cmd, phases[s]) == VKPROF_OK);
    vku_busy_record(&g.dev, &w->busy, w->cmd, 10 + 10 * (uint32_t)s);
}

static void scope_end(worker *w, int s)
{
    W_CHECK(w, vkprof_cmd_end(ctx, w->cmd, phases[s]) == VKPROF_OK);
}

/* One token: three scopes, each around a busy dispatch, barriers between. */
static void record(worker *w)
{
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    W_CHECK_VK(w, vkBeginCommandBuffer(w->cmd, &bi));
    scope_begin(w, 0);
    if (!w->nested) {
        scope_end(w, 0);
    }
    for (int s = 1; s < SCOPES; s++) {
        vku_compute_barrier(w->cmd);
        scope_begin(w, s);
        scope_end(w, s);
    }
    if (w->nested) {
        scope_end(w, 0);
    }
    W_CHECK_VK(w, vkEndCommandBuffer(w->cmd));
}

static void submit(worker *w, int token)
{
    W_CHECK_VK(w, vkResetFences(g.dev.device, 1, &w->fence));
    int how = token % 3;
    if (how == 2 && !g.dev.sync2) {
        how = 0; /* vkQueueSubmit2 needs the synchronization2 feature */
    }
    if (how == 0) {
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &w->cmd};
        pthread_mutex_lock(&queue_lock);
        VkResult vr = vkprof_queue_submit(ctx, g.dev.queue, 1, &si, w->fence);
        pthread_mutex_unlock(&queue_lock);
        W_CHECK_VK(w, vr);
    } else if (how == 1) {
        /* the library's half needs no queue lock; the real submit does */
        results_lock();
        vkprof_result res = vkprof_cmd_submit(ctx, g.dev.queue, 1, &w->cmd);
        results_unlock();
        W_CHECK(w, res == VKPROF_OK);
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &w->cmd};
        pthread_mutex_lock(&queue_lock);
        VkResult vr = vkQueueSubmit(g.dev.queue, 1, &si, w->fence);
        pthread_mutex_unlock(&queue_lock);
        W_CHECK_VK(w, vr);
    } else {
        VkCommandBufferSubmitInfo ci = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
                                        .commandBuffer = w->cmd};
        VkSubmitInfo2 si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
                            .commandBufferInfoCount = 1,
                            .pCommandBufferInfos = &ci};
        pthread_mutex_lock(&queue_lock);
        VkResult vr = vkprof_queue_submit2(ctx, g.dev.queue, 1, &si, w->fence);
        pthread_mutex_unlock(&queue_lock);
        W_CHECK_VK(w, vr);
    }
    w->submits++;
    W_CHECK_VK(w, vkWaitForFences(g.dev.device, 1, &w->fence, VK_TRUE, UINT64_C(60000000000)));
    results_lock();
    vkprof_result res = vkprof_collect(ctx);
    results_unlock();
    W_CHECK(w, res == VKPROF_OK);
}

static void release(worker *w)
{
    results_lock();
    vkprof_result res = vkprof_cmd_release(ctx, w->cmd);
    results_unlock();
    W_CHECK(w, res == VKPROF_OK);
}

/* Phases registered while other threads record and collect (as the layer
 * does at a pipeline's first use): a name shared by every thread, and one of
 * the thread's own. Each must come back with its own name, the same id for
 * the same name. */
#define SHARED_NAMES 6
static void register_names(worker *w, int token)
{
    char name[32];
    vkprof_phase id, again;
    snprintf(name, sizeof name, "shared-%d", token % SHARED_NAMES);
    W_CHECK(w, vkprof_register_phase(ctx, name, &id) == VKPROF_OK);
    const char *got = vkprof_phase_name(ctx, id);
    W_CHECK(w, got != NULL && strcmp(got, name) == 0);
    snprintf(name, sizeof name, "thread-%d", w->id);
    W_CHECK(w, vkprof_register_phase(ctx, name, &id) == VKPROF_OK);
    W_CHECK(w, vkprof_register_phase(ctx, name, &again) == VKPROF_OK && again == id);
    got = vkprof_phase_name(ctx, id);
    W_CHECK(w, got != NULL && strcmp(got, name) == 0);
}

static void *run(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(&start);
    if (w->resubmit) {
        record(w);
    }
    for (int token = 0; token < TOKENS; token++) {
        register_names(w, token);
        if (!w->resubmit) {
            if (token > 0) {
                if (w->release) {
                    release(w);
                }
                W_CHECK_VK(w, vkResetCommandBuffer(w->cmd, 0));
            }
            record(w);
        }
        submit(w, token);
    }
    /* the app is done with the buffer: it is freed after join */
    release(w);
    return NULL;
}

static void check_final(const char *when)
{
    printf("  %s\n", when);
    const uint64_t resubmitters = THREADS / 2, rerecorders = THREADS - resubmitters;
    vkprof_timing_stats t = th_stats(ctx);
    CHECK_EQ_U64(t.scopes_recorded, (resubmitters + rerecorders * TOKENS) * SCOPES);
    /* calls, counted by each recording thread in its own slot and summed,
     * and a re-submitted recording's again at each later execution: every
     * execution's, not the recordings' ((resubmitters + rerecorders *
     * TOKENS) * SCOPES, 252, before issue 26) */
    CHECK_EQ_U64(t.calls_executed, (uint64_t)THREADS * TOKENS * SCOPES);
    CHECK_EQ_U64(t.calls_unstamped, 0);
    CHECK_EQ_U64(t.samples, (uint64_t)THREADS * TOKENS * SCOPES);
    CHECK_EQ_U64(t.scopes_collected, (uint64_t)THREADS * TOKENS * SCOPES);
    CHECK_EQ_U64(t.scopes_dropped, 0);
    CHECK_EQ_U64(t.scopes_pending, 0);
    CHECK_EQ_U64(t.submissions, (uint64_t)THREADS * TOKENS);
    CHECK_EQ_U64(t.lost_ring_full, 0);
    CHECK_EQ_U64(t.lost_overwritten, 0);
    CHECK_EQ_U64(t.lost_never_submitted, 0);
    CHECK_EQ_U64(t.lost_reset, 0);
    CHECK_EQ_U64(t.lost_misuse, 0);
    vkprof_phase_stats st[VKPROF_MAX_PHASES];
    vkprof_error_counts err;
    uint32_t n = 0;
    CHECK(vkprof_snapshot(ctx, st, VKPROF_MAX_PHASES, &n, &err) == VKPROF_OK);
    uint64_t folded = 0;
    for (uint32_t p = 0; p < n; p++) {
        folded += st[p].count;
    }
    CHECK_EQ_U64(folded, (uint64_t)THREADS * TOKENS * SCOPES); /* no other phase got any */
    for (int s = 0; s < SCOPES; s++) {
        const vkprof_phase_stats *ps = &st[phases[s]];
        CHECK_EQ_U64(ps->count, (uint64_t)THREADS * TOKENS);
        CHECK(ps->min_ns > 0);
        CHECK(ps->max_ns >= ps->min_ns);
        CHECK(ps->total_ns >= ps->count * ps->min_ns);
        printf("  %-12s count %llu, min %llu ns, max %llu ns\n", ps->name,
               (unsigned long long)ps->count, (unsigned long long)ps->min_ns,
               (unsigned long long)ps->max_ns);
    }
    vkprof_error_counts zero;
    memset(&zero, 0, sizeof zero);
    CHECK(memcmp(&err, &zero, sizeof err) == 0);
}

static bool is_lavapipe(void)
{
    VkPhysicalDeviceDriverProperties drv = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                      .pNext = &drv};
    vkGetPhysicalDeviceProperties2(g.dev.phys, &p2);
    return drv.driverID == VK_DRIVER_ID_MESA_LLVMPIPE;
}

int main(void)
{
    th_gpu_init(&g);
    const char *ser = getenv("VKPROF_TEST_SERIALIZE_RESULTS");
    serialize_results = ser != NULL && ser[0] != '\0' ? ser[0] == '1' : is_lavapipe();
    printf("results calls %s the queue lock\n", serialize_results ? "under" : "outside");
    vkprof_context_desc d = vku_vkprof_desc(&g.inst, &g.dev);
    d.enable = VKPROF_ENABLE_ON;
    d.timing_mode = VKPROF_TIMING_RING;
    d.report_every = UINT32_MAX;
    d.log = log_fn;
    CHECK(vkprof_create(&d, &ctx) == VKPROF_OK);
    th_case = "submit_threads";

    static worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i].id = i;
        w[i].resubmit = i < THREADS / 2;
        w[i].release = !w[i].resubmit && i >= THREADS - 2;
        w[i].nested = i % 2 == 1;
        VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                       .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                       .queueFamilyIndex = g.dev.family};
        CHECK_VK(vkCreateCommandPool(g.dev.device, &pci, NULL, &w[i].pool));
        VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                          .commandPool = w[i].pool,
                                          .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                          .commandBufferCount = 1};
        CHECK_VK(vkAllocateCommandBuffers(g.dev.device, &ai, &w[i].cmd));
        VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        CHECK_VK(vkCreateFence(g.dev.device, &fi, NULL, &w[i].fence));
        /* its own storage buffer: no hazard between threads' dispatches */
        th_busy_init(&g, &w[i].busy, 64);
    }

    /* VKPROF_TEST_PRIME_SUBMIT=1: one empty vkprof_cmd_submit before the
     * threads start, so the context is in the explicit-submit model before
     * any scope is recorded (the library's seed-to-explicit switch at the
     * first real submit walks every tracker while other threads record). */
    const char *prime = getenv("VKPROF_TEST_PRIME_SUBMIT");
    if (prime != NULL && prime[0] == '1') {
        CHECK(vkprof_cmd_submit(ctx, g.dev.queue, 0, NULL) == VKPROF_OK);
        printf("primed: explicit submits before any scope\n");
    }
    CHECK(pthread_barrier_init(&start, NULL, THREADS) == 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        CHECK(pthread_create(&t[i], NULL, run, &w[i]) == 0);
    }
    uint64_t submits = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        th_failures += w[i].failures;
        submits += w[i].submits;
    }
    pthread_barrier_destroy(&start);
    CHECK_EQ_U64(submits, (uint64_t)THREADS * TOKENS);
    /* each name registered once, whichever thread came first */
    CHECK_EQ_U64(vkprof_phase_count(ctx), VKPROF_PHASE_DEFAULT_COUNT + SHARED_NAMES + THREADS);

    /* every thread collected after its own fence: nothing is left */
    check_final("after join");
    CHECK(vkprof_collect(ctx) == VKPROF_OK);
    check_final("after one more vkprof_collect");
    CHECK_EQ_U64(atomic_load(&log_warnings), 0);
    CHECK_EQ_U64(atomic_load(&log_errors), 0);

    for (int i = 0; i < THREADS; i++) {
        vkFreeCommandBuffers(g.dev.device, w[i].pool, 1, &w[i].cmd);
        vkDestroyCommandPool(g.dev.device, w[i].pool, NULL);
        vkDestroyFence(g.dev.device, w[i].fence, NULL);
        vku_busy_destroy(&g.dev, &w[i].busy);
    }
    vkprof_destroy(ctx);
    CHECK_EQ_U64(atomic_load(&log_warnings), 0); /* destroy found nothing lost */
    printf("%s %d threads x %d tokens x %d scopes\n", th_failures ? "FAIL" : "ok  ", THREADS,
           TOKENS, SCOPES);
    th_gpu_finish(&g);
    return th_done();
}
