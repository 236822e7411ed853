/* The decode engine's ring and bare-Vulkan baseline modes (tiny preset,
 * validation layer on): the same tokens as the unprofiled engine, the right
 * scope and stamp counts per mode (every token, shared boundaries, sampled),
 * and the mode switch of one engine (dec_reconfigure). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "harness.h"

#define T 5u
#define SEED 7u

static th_gpu g;
static uint32_t ref_ids[T];

static void on_step(void *user, uint32_t index, uint32_t token)
{
    (void)index;
    (void)token;
    vkprof_step((vkprof_context)user);
}

/* Runs T tokens from position 0 and checks them against the reference. */
static int run_tokens(dec_engine *e, uint32_t *ids)
{
    uint32_t tok = 1;
    for (uint32_t i = 0; i < T; i++) {
        char err[512] = "";
        uint32_t next = 0;
        if (dec_step(e, tok, &next, err, sizeof err) != 0) {
            fprintf(stderr, "  dec_step %u: %s\n", i, err);
            return 1;
        }
        ids[i] = next;
        tok = next;
    }
    return 0;
}

static void expected_calls(const dec_preset *p, uint64_t *expect)
{
    uint64_t L = p->n_layers;
    memset(expect, 0, sizeof(uint64_t) * VKPROF_PHASE_DEFAULT_COUNT);
    expect[VKPROF_PHASE_EMBEDDING] = 1;
    expect[VKPROF_PHASE_NORM] = 2 * L + 1;
    expect[VKPROF_PHASE_QKV] = L;
    expect[VKPROF_PHASE_ROPE] = L;
    expect[VKPROF_PHASE_ATTENTION] = L;
    expect[VKPROF_PHASE_ATTN_OUTPUT] = L;
    expect[VKPROF_PHASE_MLP_GATE_UP] = L;
    expect[VKPROF_PHASE_ACTIVATION] = L;
    expect[VKPROF_PHASE_MLP_DOWN] = L;
    expect[VKPROF_PHASE_LM_HEAD] = 1;
    expect[VKPROF_PHASE_SAMPLING] = 1;
}

static dec_engine *engine(void)
{
    dec_config cfg = {.preset = dec_find_preset("tiny"), .seed = SEED};
    dec_engine *e = NULL;
    char err[512] = "";
    if (dec_create(&g.dev, &cfg, &e, err, sizeof err) != 0) {
        fprintf(stderr, "  dec_create: %s\n", err);
    }
    CHECK(e != NULL);
    return e;
}

static void test_reference(void)
{
    dec_engine *e = engine();
    if (e != NULL) {
        CHECK(run_tokens(e, ref_ids) == 0);
        CHECK_EQ_U64(dec_calls_per_token(e), 9 * 4 + 4);
    }
    dec_destroy(e);
}

/* One ring context: every token, shared boundaries or sampled. */
static void ring_case(bool shared, uint32_t sample_every)
{
    const dec_preset *p = dec_find_preset("tiny");
    vkprof_context_desc d = th_desc(&g, NULL, false);
    d.enable = VKPROF_ENABLE_ON;
    d.timing_mode = VKPROF_TIMING_RING;
    d.shared_boundaries = shared;
    d.sample_every = sample_every;
    d.trace_path = "";
    vkprof_context prof = th_ctx(&d);
    CHECK(vkprof_active(prof));
    dec_engine *e = engine();
    dec_hooks hooks = {.user = prof, .step = on_step};
    char err[512] = "";
    if (e == NULL || prof == NULL ||
        dec_reconfigure(e, DEC_PROFILE_RING, prof, &hooks, err, sizeof err) != 0) {
        fprintf(stderr, "  %s\n", err);
        CHECK(0);
        dec_destroy(e);
        vkprof_destroy(prof);
        return;
    }
    uint32_t ids[T];
    CHECK(run_tokens(e, ids) == 0);
    for (uint32_t i = 0; i < T; i++) {
        CHECK_EQ_U64(ids[i], ref_ids[i]); /* profiling does not change the tokens */
    }
    uint64_t every = sample_every > 1 ? sample_every : 1;
    uint64_t timed = (T + every - 1) / every; /* steps 0, N, 2N, ... */
    vkprof_timing_stats ts;
    CHECK(vkprof_get_timing_stats(prof, &ts) == VKPROF_OK);
    uint64_t calls = dec_calls_per_token(e);
    printf("  ring shared=%d every=%u: timed steps %llu, scopes %llu recorded / %llu collected, "
           "%llu stamps (%llu shared), %llu dropped, %llu pending\n",
           (int)shared, sample_every, (unsigned long long)ts.timed_steps,
           (unsigned long long)ts.scopes_recorded, (unsigned long long)ts.scopes_collected,
           (unsigned long long)ts.stamps_written, (unsigned long long)ts.shared_stamps,
           (unsigned long long)ts.scopes_dropped, (unsigned long long)ts.scopes_pending);
    CHECK_EQ_U64(ts.timed_steps, timed);
    CHECK_EQ_U64(ts.scopes_recorded, calls * timed);
    CHECK_EQ_U64(ts.scopes_collected, calls * timed);
    CHECK_EQ_U64(ts.scopes_dropped, 0);
    CHECK_EQ_U64(ts.scopes_pending, 0);
    /* one stamp per boundary within a token (a new token starts a new chain) */
    CHECK_EQ_U64(ts.stamps_written, shared ? (calls + 1) * timed : 2 * calls * timed);
    CHECK_EQ_U64(ts.shared_stamps, shared ? (calls - 1) * timed : 0);

    vkprof_phase_stats st[VKPROF_PHASE_DEFAULT_COUNT];
    uint32_t n = 0;
    vkprof_error_counts ec;
    CHECK(vkprof_snapshot(prof, st, VKPROF_PHASE_DEFAULT_COUNT, &n, &ec) == VKPROF_OK);
    uint64_t expect[VKPROF_PHASE_DEFAULT_COUNT];
    expected_calls(p, expect);
    for (uint32_t k = 0; k < VKPROF_PHASE_DEFAULT_COUNT; k++) {
        th_case = st[k].name;
        CHECK_EQ_U64(st[k].count, expect[k] * timed);        /* timed steps only */
        CHECK_EQ_U64(dec_costs(e, k)->calls, expect[k] * T); /* every call was made */
        if (expect[k] != 0) {
            CHECK(st[k].total_ns > 0);
        }
    }
    th_case = "ring_case";
    CHECK_EQ_U64(ec.vulkan_errors + ec.not_ready + ec.discarded + ec.begin_twice +
                     ec.end_without_begin + ec.phase_mismatch,
                 0);
    dec_destroy(e);
    vkprof_destroy(prof);
}

static void test_ring_every(void)
{
    ring_case(false, 0);
}

static void test_ring_shared(void)
{
    ring_case(true, 0);
}

static void test_ring_sampled(void)
{
    ring_case(false, 2);
}

static void baseline_case(dec_engine *e, dec_profile mode)
{
    const dec_preset *p = dec_find_preset("tiny");
    char err[512] = "";
    if (dec_reconfigure(e, mode, NULL, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "  %s\n", err);
        CHECK(0);
        return;
    }
    uint32_t ids[T];
    CHECK(run_tokens(e, ids) == 0);
    for (uint32_t i = 0; i < T; i++) {
        CHECK_EQ_U64(ids[i], ref_ids[i]);
    }
    uint64_t calls = dec_calls_per_token(e);
    bool shared = mode == DEC_PROFILE_BASELINE_SHARED;
    CHECK_EQ_U64(dec_baseline_stamps(e), shared ? (calls + 1) * T : 2 * calls * T);
    uint64_t expect[VKPROF_PHASE_DEFAULT_COUNT];
    expected_calls(p, expect);
    uint64_t sum = 0;
    for (uint32_t k = 0; k < VKPROF_PHASE_DEFAULT_COUNT; k++) {
        uint64_t count = 0, ns = 0;
        CHECK(dec_baseline_phase(e, k, &count, &ns) == 0);
        CHECK_EQ_U64(count, expect[k] * T);
        if (expect[k] != 0) {
            CHECK(ns > 0);
        }
        sum += ns;
    }
    CHECK(dec_baseline_phase(e, VKPROF_PHASE_DEFAULT_COUNT, NULL, NULL) != 0);
    printf("  %s: %llu stamps, %.3f ms/token of stamped GPU time\n", dec_profile_name(mode),
           (unsigned long long)dec_baseline_stamps(e), (double)sum * 1e-6 / T);
}

/* One engine through every mode (weights kept), then back to off. */
static void test_baseline_and_switch(void)
{
    dec_engine *e = engine();
    if (e == NULL) {
        return;
    }
    baseline_case(e, DEC_PROFILE_BASELINE);
    baseline_case(e, DEC_PROFILE_BASELINE_SHARED);
    char err[512] = "";
    /* ring needs a context; gpu an active one; nothing changes on failure */
    CHECK(dec_reconfigure(e, DEC_PROFILE_RING, NULL, NULL, err, sizeof err) != 0);
    CHECK(strstr(err, "vkprof context") != NULL);
    CHECK(dec_reconfigure(e, DEC_PROFILE_GPU, NULL, NULL, err, sizeof err) != 0);
    CHECK(dec_reconfigure(e, DEC_PROFILE_OFF, NULL, NULL, err, sizeof err) == 0);
    CHECK_EQ_U64(dec_position(e), 0);
    uint32_t ids[T];
    CHECK(run_tokens(e, ids) == 0);
    for (uint32_t i = 0; i < T; i++) {
        CHECK_EQ_U64(ids[i], ref_ids[i]);
    }
    CHECK_EQ_U64(dec_baseline_stamps(e), 0);
    CHECK(strcmp(dec_profile_name(DEC_PROFILE_BASELINE_SHARED), "baseline-shared") == 0);
    dec_destroy(e);
}

/* The older paths: vkCmdWriteTimestamp(BOTTOM_OF_PIPE) without
 * synchronization2, and query resets in the command buffer without
 * hostQueryReset (the device has both features; the engine and the library
 * are told it has neither). */
static void test_old_paths(void)
{
    vku_device saved = g.dev;
    g.dev.sync2 = false;
    g.dev.host_query_reset = false;
    ring_case(false, 0);
    ring_case(true, 3);
    test_baseline_and_switch();
    g.dev = saved;
}

int main(void)
{
    th_gpu_init(&g);
    RUN(test_reference);
    RUN(test_ring_every);
    RUN(test_ring_shared);
    RUN(test_ring_sampled);
    RUN(test_baseline_and_switch);
    RUN(test_old_paths);
    th_gpu_finish(&g);
    return th_done();
}
