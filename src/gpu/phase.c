/* The phase table, per-phase accumulators, snapshots and their JSON form. */
#include "base/base.h"
#include "clock/clock.h"
#include "gpu/gpu.h"

#include "base/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const default_names[VKPROF_PHASE_DEFAULT_COUNT] = {
#define VKPROF_X_(id, name) name,
    VKPROF_DEFAULT_PHASES(VKPROF_X_)
#undef VKPROF_X_
};

static void acc_clear(vkprof_phase_acc *a)
{
    a->count = 0;
    a->total_ticks = 0;
    a->min_ticks = UINT64_MAX;
    a->max_ticks = 0;
    a->first_count = 0;
    a->first_ticks = 0;
}

vkprof_result vkprof__phases_init(vkprof_context ctx)
{
    ctx->gpu.phases = calloc(VKPROF_MAX_PHASES, sizeof *ctx->gpu.phases);
    if (ctx->gpu.phases == NULL) {
        return VKPROF_ERROR_OUT_OF_MEMORY;
    }
    for (uint32_t i = 0; i < VKPROF_PHASE_DEFAULT_COUNT; i++) {
        snprintf(ctx->gpu.phases[i].name, sizeof ctx->gpu.phases[i].name, "%s", default_names[i]);
        acc_clear(&ctx->gpu.phases[i]);
    }
    atomic_flag_clear(&ctx->gpu.phase_lock);
    memset(ctx->gpu.phase_hash, 0, sizeof ctx->gpu.phase_hash);
    ctx->gpu.phase_hashed = 0;
    atomic_store_explicit(&ctx->gpu.phase_count, VKPROF_PHASE_DEFAULT_COUNT, memory_order_release);
    return VKPROF_OK;
}

void vkprof__phases_free(vkprof_context ctx)
{
    free(ctx->gpu.phases);
    ctx->gpu.phases = NULL;
    atomic_store(&ctx->gpu.phase_count, 0);
}

bool vkprof__phase_valid(vkprof_context ctx, vkprof_phase phase)
{
    return phase < atomic_load_explicit(&ctx->gpu.phase_count, memory_order_acquire);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void vkprof__phase_fold(vkprof_context ctx, vkprof_phase phase, uint64_t ticks, bool first)
{
    vkprof_phase_acc *a = &ctx->gpu.phases[phase];
    a->count++;
    a->total_ticks = sat_add(a->total_ticks, ticks);
    if (first) {
        a->first_count++;
        a->first_ticks = sat_add(a->first_ticks, ticks);
    }
    if (ticks < a->min_ticks) {
        a->min_ticks = ticks;
    }
    if (ticks > a->max_ticks) {
        a->max_ticks = ticks;
    }
}

/* FNV-1a: the name's slot in phase_hash */
static uint32_t name_slot(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s != '\0'; s++) {
        h = (h ^ (uint8_t)*s) * 16777619u;
    }
    return h & (2 * VKPROF_MAX_PHASES - 1);
}

/* Under phase_lock: the phases registered since the last call (or restored
 * from a spool) into the hash. Names are unique, so each finds an empty
 * slot (the table holds twice the phases there can be). */
static void hash_catch_up(vkprof_context ctx, uint32_t n)
{
    for (; ctx->gpu.phase_hashed < n; ctx->gpu.phase_hashed++) {
        uint32_t i = name_slot(ctx->gpu.phases[ctx->gpu.phase_hashed].name);
        while (ctx->gpu.phase_hash[i] != 0) {
            i = (i + 1) & (2 * VKPROF_MAX_PHASES - 1);
        }
        ctx->gpu.phase_hash[i] = (uint16_t)(ctx->gpu.phase_hashed + 1);
    }
}

vkprof_result vkprof_register_phase(vkprof_context ctx, const char *name, vkprof_phase *out)
{
    if (ctx == NULL || name == NULL || out == NULL || name[0] == '\0' ||
        strlen(name) > VKPROF_MAX_NAME) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT,
                            "vkprof_register_phase: name must be 1..%u bytes", VKPROF_MAX_NAME);
    }
    while (atomic_flag_test_and_set_explicit(&ctx->gpu.phase_lock, memory_order_acquire)) {
        /* another thread is registering: a few dozen instructions */
    }
    uint32_t n = atomic_load_explicit(&ctx->gpu.phase_count, memory_order_relaxed);
    hash_catch_up(ctx, n);
    for (uint32_t i = name_slot(name); ctx->gpu.phase_hash[i] != 0;
         i = (i + 1) & (2 * VKPROF_MAX_PHASES - 1)) {
        const uint32_t p = ctx->gpu.phase_hash[i] - 1u;
        if (strcmp(ctx->gpu.phases[p].name, name) == 0) {
            atomic_flag_clear_explicit(&ctx->gpu.phase_lock, memory_order_release);
            *out = p;
            return VKPROF_OK;
        }
    }
    if (n >= VKPROF_MAX_PHASES) {
        atomic_flag_clear_explicit(&ctx->gpu.phase_lock, memory_order_release);
        return vkprof__fail(ctx, VKPROF_ERROR_TOO_MANY_PHASES,
                            "vkprof_register_phase('%s'): %u phases already", name,
                            VKPROF_MAX_PHASES);
    }
    vkprof_phase_acc *a = &ctx->gpu.phases[n];
    memset(a, 0, sizeof *a);
    memcpy(a->name, name, strlen(name) + 1);
    acc_clear(a);
    atomic_store_explicit(&ctx->gpu.phase_count, n + 1, memory_order_release);
    atomic_flag_clear_explicit(&ctx->gpu.phase_lock, memory_order_release);
    *out = n;
    return VKPROF_OK;
}

uint32_t vkprof_phase_count(vkprof_context ctx)
{
    return ctx == NULL ? 0 : ctx->gpu.phase_count;
}

const char *vkprof_phase_name(vkprof_context ctx, vkprof_phase phase)
{
    if (ctx == NULL || phase >= ctx->gpu.phase_count) {
        return NULL;
    }
    return ctx->gpu.phases[phase].name;
}

vkprof_result vkprof_set_phase_flags(vkprof_context ctx, vkprof_phase phase, uint32_t flags)
{
    if (ctx == NULL || phase >= atomic_load_explicit(&ctx->gpu.phase_count, memory_order_acquire) ||
        (flags & ~(uint32_t)VKPROF_PHASE_FLAG_OUTER) != 0) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT,
                            "vkprof_set_phase_flags: an unknown phase (%u) or flag (0x%x)", phase,
                            flags);
    }
    atomic_store_explicit(&ctx->gpu.phases[phase].flags, flags, memory_order_relaxed);
    return VKPROF_OK;
}

uint32_t vkprof_phase_flags(vkprof_context ctx, vkprof_phase phase)
{
    if (ctx == NULL || phase >= atomic_load_explicit(&ctx->gpu.phase_count, memory_order_acquire)) {
        return 0;
    }
    return atomic_load_explicit(&ctx->gpu.phases[phase].flags, memory_order_relaxed);
}

vkprof_result vkprof_set_phase_parent(vkprof_context ctx, vkprof_phase phase, vkprof_phase parent)
{
    const uint32_t n =
        ctx == NULL ? 0 : atomic_load_explicit(&ctx->gpu.phase_count, memory_order_acquire);
    if (ctx == NULL || phase >= n || (parent >= n && parent != VKPROF_PHASE_NO_PARENT)) {
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT,
                            "vkprof_set_phase_parent: an unknown phase (%u) or parent (%u)", phase,
                            parent);
    }
    if (parent == phase) {
        return VKPROF_OK; /* a region in one of its own name: the same row */
    }
    const uint32_t want = parent == VKPROF_PHASE_NO_PARENT ? VKPROF__PARENT_ROOT : parent + 1u;
    _Atomic uint32_t *slot = &ctx->gpu.phases[phase].parent;
    uint32_t cur = atomic_load_explicit(slot, memory_order_relaxed);
    /* the recording path tells it at every region: one load when known */
    while (cur != want && cur != VKPROF__PARENT_SEVERAL) {
        const uint32_t next = cur == 0 ? want : VKPROF__PARENT_SEVERAL;
        if (atomic_compare_exchange_weak_explicit(slot, &cur, next, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            break;
        }
    }
    return VKPROF_OK;
}

bool vkprof_any_recorded(vkprof_context ctx)
{
    if (ctx == NULL) {
        return false;
    }
    for (uint32_t i = 0; i < ctx->gpu.phase_count; i++) {
        if (ctx->gpu.phases[i].count != 0) {
            return true;
        }
    }
    return false;
}

void vkprof_reset(vkprof_context ctx)
{
    if (ctx == NULL) {
        return;
    }
    for (uint32_t i = 0; i < ctx->gpu.phase_count; i++) {
        acc_clear(&ctx->gpu.phases[i]);
    }
    vkprof__errors_clear(ctx);
    atomic_store(&ctx->gpu.timed_steps, 0);
    ctx->gpu.scopes_recorded = ctx->gpu.scopes_collected = 0;
    ctx->gpu.lost_ring_full = ctx->gpu.lost_overwritten = ctx->gpu.lost_never_submitted = 0;
    ctx->gpu.lost_reset = ctx->gpu.lost_misuse = ctx->gpu.lost_backwards = ctx->gpu.lost_stale = 0;
    ctx->gpu.extra_samples = ctx->gpu.submissions = ctx->gpu.scopes_discarded = 0;
    ctx->gpu.stamps_written = ctx->gpu.shared_stamps = 0;
    vkprof__ring_reset_counts(ctx);
}

static void fill_stats(vkprof_context ctx, uint32_t i, vkprof_phase_stats *s)
{
    const vkprof_phase_acc *a = &ctx->gpu.phases[i];
    float period = ctx->info.timestamp_period;
    memset(s, 0, sizeof *s);
    s->id = i;
    memcpy(s->name, a->name, sizeof s->name);
    s->count = a->count;
    s->total_ticks = a->total_ticks;
    s->total_ns = vkprof_ticks_to_ns(a->total_ticks, period);
    s->min_ns = a->count ? vkprof_ticks_to_ns(a->min_ticks, period) : 0;
    s->max_ns = a->count ? vkprof_ticks_to_ns(a->max_ticks, period) : 0;
    uint64_t calls = vkprof__ring_phase_calls(ctx, i);
    s->calls = calls == UINT64_MAX ? a->count : calls;
    s->first_calls = a->first_count;
    s->first_ns = vkprof_ticks_to_ns(a->first_ticks, period);
    s->flags = atomic_load_explicit(&a->flags, memory_order_relaxed);
    const uint32_t par = atomic_load_explicit(&a->parent, memory_order_relaxed);
    s->parent = par == VKPROF__PARENT_SEVERAL            ? VKPROF_PHASE_SEVERAL_PARENTS
                : par == 0 || par == VKPROF__PARENT_ROOT ? VKPROF_PHASE_NO_PARENT
                                                         : par - 1u;
    /* The estimator: the mean of the timed calls times the calls executed.
     * Every call timed (or lost): calls == count, the exact total. A
     * phase's first calls (a driver's compile) count once, and the mean of
     * the others is scaled to the calls that are not first calls. */
    if (a->count == 0) {
        s->est_total_ns = 0;
    } else if (s->calls == a->count) {
        s->est_total_ns = s->total_ns;
    } else if (a->first_count > 0 && a->first_count < a->count && s->calls > a->first_count &&
               s->first_ns <= s->total_ns) {
        uint64_t rest = vkprof__muldiv(s->total_ns - s->first_ns, s->calls - a->first_count,
                                       a->count - a->first_count);
        s->est_total_ns = sat_add(s->first_ns, rest);
    } else {
        s->est_total_ns = vkprof__muldiv(s->total_ns, s->calls, a->count);
    }
}

vkprof_result vkprof_snapshot(vkprof_context ctx, vkprof_phase_stats *out, uint32_t cap,
                              uint32_t *count, vkprof_error_counts *errors)
{
    if (ctx == NULL || count == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    if (out == NULL) {
        cap = 0; /* a size query */
    }
    *count = ctx->gpu.phase_count;
    uint32_t n = cap < ctx->gpu.phase_count ? cap : ctx->gpu.phase_count;
    for (uint32_t i = 0; i < n; i++) {
        fill_stats(ctx, i, &out[i]);
    }
    if (errors != NULL) {
        vkprof__errors_read(ctx, errors);
    }
    return cap < ctx->gpu.phase_count ? VKPROF_ERROR_BUFFER_TOO_SMALL : VKPROF_OK;
}

/* The snapshot as JSON, through the one JSON writer (base/json.h) into the
 * caller's buffer; the writer counts what it would write past the end, so
 * a size query and a short buffer need no second pass. */
vkprof_result vkprof_snapshot_json(vkprof_context ctx, char *buf, size_t cap, size_t *needed)
{
    if (ctx == NULL || needed == NULL) {
        return VKPROF_ERROR_INVALID_ARGUMENT;
    }
    if (buf == NULL) {
        cap = 0; /* a size query */
    }
    vkprof_json jw;
    vkprof_json *j = &jw;
    vkprof__json_to_buffer(j, buf, cap);
    const vkprof_device_info *info = &ctx->info;
    vkprof__json_obj(j);
    vkprof__json_kv_u64(j, "vkprof_version", vkprof_version());
    vkprof__json_kv_str(j, "device", info->device_name);
    vkprof__json_kv_u64(j, "queue_family", info->queue_family_index);
    vkprof__json_kv_u64(j, "timestamp_valid_bits", info->timestamp_valid_bits);
    /* the float period's exact value */
    vkprof__json_kv_f64(j, "timestamp_period_ns", (double)info->timestamp_period);
    vkprof__json_kv_bool(j, "enabled", ctx->head.active != 0);
    vkprof__json_kv_bool(j, "requested", ctx->requested);
    vkprof__json_kv_bool(j, "supported", info->supported);
    vkprof__json_key(j, "phases");
    vkprof__json_arr(j);
    for (uint32_t i = 0; i < ctx->gpu.phase_count; i++) {
        vkprof_phase_stats s;
        fill_stats(ctx, i, &s);
        vkprof__json_obj(j);
        vkprof__json_kv_u64(j, "id", s.id);
        vkprof__json_kv_str(j, "name", s.name);
        vkprof__json_kv_u64(j, "count", s.count);
        vkprof__json_kv_u64(j, "total_ns", s.total_ns);
        vkprof__json_kv_u64(j, "min_ns", s.min_ns);
        vkprof__json_kv_u64(j, "max_ns", s.max_ns);
        /* total / count with 3 decimals, rounded, in integers */
        uint64_t mean_milli = s.count ? vkprof__muldiv(s.total_ns, 1000, s.count) : 0;
        vkprof__json_key(j, "mean_ns");
        vkprof__json_fixed(j, mean_milli > INT64_MAX ? INT64_MAX : (int64_t)mean_milli, 3);
        vkprof__json_kv_u64(j, "total_ticks", s.total_ticks);
        vkprof__json_kv_u64(j, "calls", s.calls);
        vkprof__json_kv_u64(j, "est_total_ns", s.est_total_ns);
        if (s.first_calls > 0) {
            vkprof__json_kv_u64(j, "first_calls", s.first_calls);
            vkprof__json_kv_u64(j, "first_ns", s.first_ns);
        }
        if (s.flags & VKPROF_PHASE_FLAG_OUTER) {
            vkprof__json_kv_bool(j, "outer", true);
        }
        if (s.parent == VKPROF_PHASE_SEVERAL_PARENTS) {
            vkprof__json_kv_bool(j, "parent_several", true);
        } else if (s.parent < ctx->gpu.phase_count) {
            vkprof__json_kv_str(j, "parent", ctx->gpu.phases[s.parent].name);
        }
        vkprof__json_end(j);
    }
    vkprof__json_end(j);

    vkprof_timing_stats ts;
    vkprof_get_timing_stats(ctx, &ts);
    vkprof__json_key(j, "timing");
    vkprof__json_obj(j);
    vkprof__json_kv_str(j, "mode", ts.mode == VKPROF_TIMING_RING ? "ring" : "2slot");
    vkprof__json_kv_u64(j, "queries", ts.ring_queries);
    vkprof__json_kv_u64(j, "sample_every", ts.sample_every);
    vkprof__json_kv_u64(j, "rotate_scopes", ts.rotate_scopes);
    if (ts.rotate_scopes > 0) {
        vkprof__json_kv_bool(j, "rotate_first_calls", ts.rotate_first_calls);
    }
    vkprof__json_kv_u64(j, "timed_steps", ts.timed_steps);
    vkprof__json_kv_u64(j, "scopes_recorded", ts.scopes_recorded);
    vkprof__json_kv_u64(j, "scopes_collected", ts.scopes_collected);
    vkprof__json_kv_u64(j, "scopes_dropped", ts.scopes_dropped);
    vkprof__json_kv_u64(j, "scopes_pending", ts.scopes_pending);
    vkprof__json_kv_u64(j, "stamps_written", ts.stamps_written);
    vkprof__json_kv_u64(j, "shared_stamps", ts.shared_stamps);
    vkprof__json_kv_bool(j, "host_reset", ts.host_reset);
    /* one accounting: samples == scopes_collected + scopes_dropped + scopes_pending */
    vkprof__json_kv_u64(j, "samples", ts.samples);
    vkprof__json_kv_u64(j, "submissions", ts.submissions);
    vkprof__json_kv_u64(j, "scopes_discarded", ts.scopes_discarded);
    /* the estimator's inputs: calls executed, those left out (not samples) */
    vkprof__json_kv_u64(j, "calls_executed", ts.calls_executed);
    vkprof__json_kv_u64(j, "calls_unstamped", ts.calls_unstamped);
    if (ts.rotate_scopes > 0) {
        vkprof__json_key(j, "rotation");
        vkprof__json_obj(j);
        vkprof__json_kv_u64(j, "cycles", ts.rotate_cycles);
        vkprof__json_kv_u64(j, "calls_per_step", ts.rotate_calls_per_step);
        vkprof__json_kv_u64(j, "period_steps", ts.rotate_period);
        vkprof__json_kv_u64(j, "changed_steps", ts.rotate_changed_steps);
        vkprof__json_end(j);
    }
    vkprof__json_key(j, "lost");
    vkprof__json_obj(j);
    vkprof__json_kv_u64(j, "ring_full", ts.lost_ring_full);
    vkprof__json_kv_u64(j, "overwritten", ts.lost_overwritten);
    vkprof__json_kv_u64(j, "never_submitted", ts.lost_never_submitted);
    vkprof__json_kv_u64(j, "reset", ts.lost_reset);
    vkprof__json_kv_u64(j, "misuse", ts.lost_misuse);
    vkprof__json_kv_u64(j, "backwards", ts.lost_backwards);
    vkprof__json_kv_u64(j, "stale", ts.lost_stale);
    vkprof__json_end(j);
    vkprof__json_end(j);

    vkprof_error_counts e;
    vkprof__errors_read(ctx, &e);
    vkprof__json_key(j, "errors");
    vkprof__json_obj(j);
#define VKPROF_X_(field, result, meaning) vkprof__json_kv_u64(j, #field, e.field);
    VKPROF_ERROR_COUNTERS(VKPROF_X_)
#undef VKPROF_X_
    vkprof__json_end(j);
    vkprof__json_end(j);

    size_t len = vkprof__json_len(j);
    *needed = len + 1;
    if (!vkprof__json_ok(j)) { /* a bug here, never a half document */
        if (cap > 0) {
            buf[0] = '\0';
        }
        return vkprof__fail(ctx, VKPROF_ERROR_INVALID_ARGUMENT, "snapshot JSON: writer misuse");
    }
    if (len + 1 > cap) {
        if (cap > 0) {
            buf[0] = '\0';
        }
        return VKPROF_ERROR_BUFFER_TOO_SMALL;
    }
    return VKPROF_OK;
}
