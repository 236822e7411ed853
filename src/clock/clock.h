/* The clock seam: host clocks and their bridges, the exact tick arithmetic,
 * the GPU-to-host calibration with drift correction, and the host clock of
 * spans (a CPU counter calibrated the same way). Calls only base. */
#ifndef VKPROF_CLOCK_H
#define VKPROF_CLOCK_H

#include "context.h"

#include <stdatomic.h>

/* clock.c */
uint64_t vkprof__raw_now_ns(void);
uint64_t vkprof__realtime_ns(void);
int64_t vkprof__raw_to_mono_offset(uint64_t *err_ns);
int64_t vkprof__realtime_to_mono_offset(uint64_t *err_ns);

/* ticks.c */
/* round(a * b / c) for c > 0, saturating; exact in 128-bit arithmetic */
uint64_t vkprof__muldiv(uint64_t a, uint64_t b, uint64_t c);
/* floor((hi * 2^64 + lo) / d) for hi < d; *rem gets the remainder */
uint64_t vkprof__div128(uint64_t hi, uint64_t lo, uint64_t d, uint64_t *rem);
/* the high 64 bits of a * b */
uint64_t vkprof__mulhi(uint64_t a, uint64_t b);
/* A scope's stamps read backwards: end - begin, modulo the counter's valid
 * bits (`mask`), is more than half the range. Compared as the calibration
 * compares ticks (signed, half the range): a real scope is shorter than half
 * a wrap (2^35 ticks on a 36-bit counter: 30 min at 52.08 ns, 34 s at 1 ns;
 * 292 years on 64 bits), and one longer than a whole wrap cannot be told
 * from a short one at all. */
static inline bool vkprof__ticks_backwards(uint64_t begin, uint64_t end, uint64_t mask)
{
    return ((end - begin) & mask) > (mask >> 1);
}

/* calib.c: the piecewise-linear map both clocks use. Points advance on both
 * clocks; ticks are compared modulo `mask` (signed, half the range). Under
 * 100 ms of baseline (or at one point) it extrapolates with `nominal`
 * (signed ticks to signed ns). */
typedef int64_t (*vkprof_pl_nominal)(const void *arg, int64_t ticks);
/* false: the point did not advance on both clocks (noise), not added */
bool vkprof__pl_add(vkprof_cal_point *points, uint32_t *count, uint32_t cap, uint64_t mask,
                    vkprof_cal_point p);
bool vkprof__pl_map(const vkprof_cal_point *points, uint32_t n, uint64_t mask,
                    vkprof_pl_nominal nominal, const void *arg, uint64_t ticks, uint64_t *host_ns);

/* The same map on a copy of the points, taken once (an export's many
 * ticks): vkprof__pl_snap_map returns exactly what vkprof__pl_map returns on
 * the copied points (the same arithmetic; the segment found from a cursor
 * at the last one, as a thread's ticks mostly increase, else by binary
 * search), with no lock. Not thread-safe per snapshot (the cursor). */
typedef struct vkprof_pl_snap {
    vkprof_cal_point *p;
    int64_t *rel;    /* each point's ticks after p[0]; NULL: not increasing */
    uint32_t n, cur; /* cur: the segment [cur, cur + 1] last mapped in */
    uint64_t mask;
    vkprof_pl_nominal nominal;
    const void *arg;             /* the nominal's argument; NULL: the snapshot itself */
    uint64_t rate_num, rate_den; /* the host clock's rate when the copy was taken */
    bool identity;               /* the host clock's CLOCK_MONOTONIC fallback: ticks are ns */
} vkprof_pl_snap;
/* Fill the rel table (after p, n and mask are set); false when out of memory
 * (then s->rel stays NULL and the map searches as vkprof__pl_map does). */
bool vkprof__pl_snap_prepare(vkprof_pl_snap *s);
bool vkprof__pl_snap_map(vkprof_pl_snap *s, uint64_t ticks, uint64_t *host_ns);
void vkprof__pl_snap_free(vkprof_pl_snap *s);

vkprof_result vkprof__cal_init(vkprof_context ctx);
void vkprof__cal_shutdown(vkprof_context ctx);
void vkprof__cal_maybe_refresh(vkprof_context ctx);
bool vkprof__cal_map(vkprof_context ctx, uint64_t ticks, uint64_t *host_ns);
/* How far a mapped stamp near host_ns may be from the truth: the points'
 * largest error, 1000 ppm of the distance to the newest point (far above any
 * clock's drift between points), and 1 us. */
uint64_t vkprof__cal_bound(vkprof_context ctx, uint64_t host_ns);
/* The calibration checked as it is used (issue 25): one execution's first
 * begin stamp and last end stamp (device ticks) were written between
 * submit_ns (its vkprof_cmd_submit) and read_ns (the host read that found
 * them). Mapped outside that window by more than the bound, 3 executions in
 * a row, the calibration is inconsistent (a driver whose calibrated clock is
 * not the stamps' clock): logged, counted, and the map falls back to
 * bracketing by these windows (method BRACKET, the narrowest window as its
 * point). Under the ring lock. */
void vkprof__cal_window(vkprof_context ctx, uint64_t begin_ticks, uint64_t end_ticks,
                        uint64_t submit_ns, uint64_t read_ns);
/* The calibration's points now, for vkprof__cal_snap_map (== vkprof__cal_map
 * while no point is added); false when out of memory. */
bool vkprof__cal_snapshot(vkprof_context ctx, vkprof_pl_snap *s);
static inline bool vkprof__cal_snap_map(vkprof_pl_snap *s, uint64_t ticks, uint64_t *host_ns)
{
    return vkprof__pl_snap_map(s, ticks, host_ns);
}

/* ---- hostclock.c: the host clock of spans -------------------------------
 *
 * vkprof__hclk_read() is what a span reads (inline: rdtsc, cntvct_el0, or
 * clock_gettime in the fallback). Every consumer of a span's time goes
 * through one of two functions:
 *   vkprof__hclk_dur_ns(): a duration in ticks -> ns, the exact tick count
 *     scaled once by the calibrated rate (span ends' return values, bucket
 *     totals, the per-token report);
 *   vkprof__hclk_ns(): an absolute reading -> CLOCK_MONOTONIC ns, through the
 *     piecewise-linear, drift-corrected points (the trace: both ends of a
 *     span, so slices nest as their ticks do).
 * In the CLOCK_MONOTONIC fallback both are the identity. */

/* Choose the clock (env: VKPROF_HOST_CLOCK's value or NULL) and calibrate it
 * at start. `warning` gets a message for the caller to log as a warning, or
 * "". max_every_ns: recalibrate at most this far apart once settled. */
void vkprof__hclk_init(vkprof_hclk *c, const char *env, uint64_t max_every_ns, char *warning,
                       size_t cap);
/* A new point when one is due (cheap when not); any thread. */
void vkprof__hclk_maybe_refresh(vkprof_hclk *c);
/* A new point now (before an export: the events are then interpolated). */
void vkprof__hclk_calibrate(vkprof_hclk *c);
uint64_t vkprof__hclk_ns(vkprof_hclk *c, uint64_t ticks);
/* The points and the rate now, under the lock, for vkprof__hclk_snap_ns
 * (== vkprof__hclk_ns while no point is taken); false when out of memory. */
bool vkprof__hclk_snapshot(vkprof_hclk *c, vkprof_pl_snap *s);
static inline uint64_t vkprof__hclk_snap_ns(vkprof_pl_snap *s, uint64_t ticks)
{
    if (s->identity) {
        return ticks;
    }
    uint64_t ns = 0;
    (void)vkprof__pl_snap_map(s, ticks, &ns);
    return ns;
}

/* The points and rate under the lock, for a spool's checkpoint (export/spool.c):
 * copies the points into `points` (room for VKPROF_HCLK_POINTS; NULL: not
 * copied) and returns their count. */
uint32_t vkprof__hclk_copy(vkprof_hclk *c, vkprof_cal_point *points, uint64_t *taken,
                           uint64_t *rate_num, uint64_t *rate_den, uint64_t *residual_ns);
/* A host clock from a spool's copy: it maps ticks as the writer's did and
 * never reads a counter or takes a point (frozen). */
void vkprof__hclk_restore(vkprof_hclk *c, vkprof_hclk_kind kind, const char *source,
                          const char *reason, uint64_t nominal_hz, const vkprof_cal_point *points,
                          uint32_t count, uint64_t taken, uint64_t rate_num, uint64_t rate_den,
                          uint64_t residual_ns);

typedef struct vkprof_hclk_info {
    const char *source;          /* "tsc", "cntvct_el0", "CLOCK_MONOTONIC", "simulated" */
    const char *reason;          /* why, when not the default choice; "" */
    uint64_t hz;                 /* the calibrated rate as a frequency, rounded */
    uint64_t rate_num, rate_den; /* ns per tick, reduced */
    uint32_t points;
    uint64_t taken;
    uint64_t error_bound_ns; /* the worst point's error + the worst residual */
    uint64_t residual_ns;
} vkprof_hclk_info;
void vkprof__hclk_info(vkprof_hclk *c, vkprof_hclk_info *out);

/* Tests only: contexts created while it is set use this counter and
 * reference clock (unless VKPROF_HOST_CLOCK=monotonic). NULL: the real ones. */
void vkprof__hclk_test_source(const vkprof_hclk_source *src);

#if defined(__x86_64__) || defined(__i386__)
#define VKPROF_HCLK_COUNTER_NAME "tsc"
static inline uint64_t vkprof__counter_read(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}
#elif defined(__aarch64__)
#define VKPROF_HCLK_COUNTER_NAME "cntvct_el0"
static inline uint64_t vkprof__counter_read(void)
{
    uint64_t v;
    /* isb: not read ahead of the code before it (as the kernel's vDSO) */
    __asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
    return v;
}
#else
#define VKPROF_HCLK_COUNTER_NAME ""
static inline uint64_t vkprof__counter_read(void)
{
    return 0; /* never chosen: no counter on this architecture */
}
#endif

/* The span's clock read: one predictable branch, then the counter. */
static inline uint64_t vkprof__hclk_read(const vkprof_hclk *c)
{
    if (c->kind == VKPROF_HCLK_COUNTER) {
        return vkprof__counter_read();
    }
    if (c->kind == VKPROF_HCLK_SIM) {
        return c->sim.counter(c->sim.user);
    }
    return vkprof_host_now_ns();
}

/* ticks -> ns: ticks * rate_int + round(ticks * rate_frac / 2^64). Equals
 * round-half-up(ticks * rate_num / rate_den) while ticks * 2 * rate_den <
 * 2^64 (rate_frac is rounded up), and is within 1 ns of it beyond. */
static inline uint64_t vkprof__hclk_dur_ns(vkprof_hclk *c, uint64_t ticks)
{
    if (c->kind == VKPROF_HCLK_MONOTONIC) {
        return ticks;
    }
    uint64_t seq, ip, fr;
    do {
        seq = atomic_load_explicit(&c->rate_seq, memory_order_acquire);
        ip = atomic_load_explicit(&c->rate_int, memory_order_relaxed);
        fr = atomic_load_explicit(&c->rate_frac, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
    } while ((seq & 1u) != 0 || seq != atomic_load_explicit(&c->rate_seq, memory_order_relaxed));
#ifdef __SIZEOF_INT128__
    uint64_t frac_ns =
        (uint64_t)(((unsigned __int128)ticks * fr + ((unsigned __int128)1 << 63)) >> 64);
#else
    uint64_t lo = ticks * fr, hi = vkprof__mulhi(ticks, fr);
    uint64_t frac_ns = hi + ((lo + (UINT64_C(1) << 63)) < lo);
#endif
    return ticks * ip + frac_ns;
}

#endif
