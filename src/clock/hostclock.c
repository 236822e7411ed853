/* The host clock of spans: the CPU's invariant counter (rdtsc on x86-64,
 * cntvct_el0 on arm64) where it is usable, calibrated against
 * CLOCK_MONOTONIC at start and again over time with the piecewise-linear
 * points of calib.c; CLOCK_MONOTONIC itself where it is not (or with
 * VKPROF_HOST_CLOCK=monotonic). Spans store raw readings; they become ns
 * only through vkprof__hclk_dur_ns (durations) and vkprof__hclk_ns (absolute
 * readings), in integers, never through floating point. */
#define _POSIX_C_SOURCE 200809L
#include "clock/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#define MS UINT64_C(1000000)
#define TRIES 16                    /* bracket reads per point; the tightest is kept */
#define START_BASELINE_NS (2 * MS)  /* the first rate, when no nominal one is known */
#define FIRST_EVERY_NS (10 * MS)    /* then points 10, 20, 40, ... ms apart */
#define NOMINAL_UNTIL_NS (100 * MS) /* a nominal rate is kept until this baseline */

static const vkprof_hclk_source *g_test_source;
static atomic_flag g_garbage_warned = ATOMIC_FLAG_INIT;

void vkprof__hclk_test_source(const vkprof_hclk_source *src)
{
    g_test_source = src;
}

/* ---- can the counter be used? ------------------------------------------ */

/* Whether `word` is one of the space-separated words of a sysfs file; -1
 * when the file cannot be read (not Linux, no sysfs). */
static int sysfs_has_word(const char *path, const char *word)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    char buf[512];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    size_t wl = strlen(word);
    for (char *p = buf; (p = strstr(p, word)) != NULL; p += wl) {
        bool start = p == buf || p[-1] == ' ' || p[-1] == '\n';
        bool end = p[wl] == '\0' || p[wl] == ' ' || p[wl] == '\n';
        if (start && end) {
            return 1;
        }
    }
    return 0;
}

#define CLOCKSOURCES "/sys/devices/system/clocksource/clocksource0/available_clocksource"

/* hw: the CPU has an invariant counter user code may read; kernel_ok: the
 * kernel has not given up on it (its clocksource is still offered: Linux
 * drops "tsc" from the list when it marks it unstable). *nominal_hz: the
 * counter's specified frequency, 0 when only a measurement can tell. */
static bool counter_usable(char *why, size_t cap, bool *kernel_ok, uint64_t *nominal_hz)
{
    *kernel_ok = true;
    *nominal_hz = 0;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) == 0 || a < 0x80000007u) {
        snprintf(why, cap, "the CPU has no CPUID leaf 0x80000007 (invariant TSC unknown)");
        return false;
    }
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    if ((d & (1u << 8)) == 0) {
        snprintf(why, cap, "the TSC is not invariant (CPUID 0x80000007 EDX bit 8 clear)");
        return false;
    }
    if (sysfs_has_word(CLOCKSOURCES, "tsc") == 0) {
        *kernel_ok = false;
        snprintf(why, cap, "the kernel does not offer the tsc clocksource (marked unstable?)");
    }
    return true;
#elif defined(__aarch64__)
    uint64_t f;
    __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
    if (f == 0) {
        snprintf(why, cap, "cntfrq_el0 reads 0: the counter's frequency is not set");
        return false;
    }
    *nominal_hz = f;
    if (sysfs_has_word(CLOCKSOURCES, "arch_sys_counter") == 0) {
        *kernel_ok = false;
        snprintf(why, cap, "the kernel does not offer the arch_sys_counter clocksource");
    }
    return true;
#else
    snprintf(why, cap, "no cycle counter on this architecture");
    return false;
#endif
}

/* ---- calibration --------------------------------------------------------- */

static uint64_t ref_now(const vkprof_hclk *c)
{
    return c->kind == VKPROF_HCLK_SIM ? c->sim.mono_ns(c->sim.user) : vkprof_host_now_ns();
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Publish num/den ns per tick for vkprof__hclk_dur_ns (under c->lock). */
static void set_rate(vkprof_hclk *c, uint64_t num, uint64_t den)
{
    if (num == 0 || den == 0) {
        return;
    }
    uint64_t g = gcd64(num, den);
    num /= g;
    den /= g;
    uint64_t ip = num / den, rem = 0;
    /* rem / den as 0.64 fixed point, rounded up: see vkprof__hclk_dur_ns */
    uint64_t fr = vkprof__div128(num % den, 0, den, &rem);
    if (rem != 0) {
        fr++;
    }
    c->rate_num = num;
    c->rate_den = den;
    uint64_t seq = atomic_load_explicit(&c->rate_seq, memory_order_relaxed);
    atomic_store_explicit(&c->rate_seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&c->rate_int, ip, memory_order_relaxed);
    atomic_store_explicit(&c->rate_frac, fr, memory_order_relaxed);
    atomic_store_explicit(&c->rate_seq, seq + 2, memory_order_release);
}

/* signed ticks -> ns at the current rate (the map's nominal slope) */
static int64_t rate_scale(uint64_t num, uint64_t den, int64_t ticks)
{
    uint64_t m = ticks < 0 ? (uint64_t)(-(ticks + 1)) + 1 : (uint64_t)ticks;
    uint64_t ns = vkprof__muldiv(m, num, den);
    if (ns > (uint64_t)INT64_MAX) {
        ns = (uint64_t)INT64_MAX;
    }
    return ticks < 0 ? -(int64_t)ns : (int64_t)ns;
}

static int64_t rate_nominal(const void *arg, int64_t ticks)
{
    const vkprof_hclk *c = arg;
    return rate_scale(c->rate_num, c->rate_den, ticks);
}

/* the same, at the rate a snapshot copied */
static int64_t snap_nominal(const void *arg, int64_t ticks)
{
    const vkprof_pl_snap *s = arg;
    return rate_scale(s->rate_num, s->rate_den, ticks);
}

/* One point: the counter read between two reference reads, the tightest
 * bracket of TRIES. Its error: half the bracket, plus one tick (a reading
 * is the floor of the counter's position). */
static vkprof_cal_point sample(const vkprof_hclk *c)
{
    vkprof_cal_point p = {0, 0, UINT64_MAX};
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < TRIES; i++) {
        uint64_t a = ref_now(c);
        uint64_t t = vkprof__hclk_read(c);
        uint64_t b = ref_now(c);
        if (b >= a && b - a < best) {
            best = b - a;
            p.ticks = t;
            p.host_ns = a + (b - a) / 2;
            p.err_ns = (b - a + 1) / 2;
        }
    }
    uint64_t tick_ns = c->rate_den ? (c->rate_num + c->rate_den - 1) / c->rate_den : 1;
    p.err_ns += tick_ns;
    return p;
}

static uint64_t point_err_max(const vkprof_hclk *c)
{
    uint64_t e = 0;
    for (uint32_t i = 0; i < c->count; i++) {
        e = c->points[i].err_ns > e ? c->points[i].err_ns : e;
    }
    return e;
}

/* Take a point and fold it in (under c->lock). */
static void take_point(vkprof_hclk *c)
{
    vkprof_cal_point p = sample(c);
    if (p.err_ns == UINT64_MAX) {
        return; /* the reference clock went backwards every time */
    }
    c->taken++;
    if (c->count >= 2) {
        /* how far the fit so far would have put it: the drift it did not
         * foresee (beyond both points' own error) */
        uint64_t pred = 0;
        if (vkprof__pl_map(c->points, c->count, UINT64_MAX, rate_nominal, c, p.ticks, &pred)) {
            uint64_t off = pred > p.host_ns ? pred - p.host_ns : p.host_ns - pred;
            uint64_t errs = p.err_ns + c->points[c->count - 1].err_ns;
            if (off > errs && off - errs > c->residual_ns) {
                c->residual_ns = off - errs;
            }
        }
    }
    if (!vkprof__pl_add(c->points, &c->count, VKPROF_HCLK_POINTS, UINT64_MAX, p)) {
        return;
    }
    const vkprof_cal_point *first = &c->points[0], *last = &c->points[c->count - 1];
    uint64_t base_ns = last->host_ns - first->host_ns;
    if (c->count >= 2 && (c->nominal_hz == 0 || base_ns >= NOMINAL_UNTIL_NS)) {
        set_rate(c, base_ns, last->ticks - first->ticks);
    }
}

static void lock(vkprof_hclk *c)
{
    while (atomic_flag_test_and_set_explicit(&c->lock, memory_order_acquire)) {
        /* points are taken in a microsecond or two */
    }
}

static void unlock(vkprof_hclk *c)
{
    atomic_flag_clear_explicit(&c->lock, memory_order_release);
}

void vkprof__hclk_init(vkprof_hclk *c, const char *env, uint64_t max_every_ns, char *warning,
                       size_t cap)
{
    memset(c, 0, sizeof *c);
    atomic_flag_clear(&c->lock);
    warning[0] = '\0';
    enum { WANT_DEFAULT, WANT_MONOTONIC, WANT_COUNTER } want = WANT_DEFAULT;
    if (env != NULL && env[0] != '\0') {
        if (strcmp(env, "monotonic") == 0) {
            want = WANT_MONOTONIC;
        } else if (strcmp(env, "counter") == 0) {
            want = WANT_COUNTER;
        } else if (!atomic_flag_test_and_set(&g_garbage_warned)) {
            snprintf(warning, cap,
                     "VKPROF_HOST_CLOCK='%.40s' is neither 'monotonic' nor 'counter'; using the "
                     "default (the CPU counter where it is usable)",
                     env);
        }
    }
    c->kind = VKPROF_HCLK_MONOTONIC;
    c->source = "CLOCK_MONOTONIC";
    if (want == WANT_MONOTONIC) {
        snprintf(c->reason, sizeof c->reason, "VKPROF_HOST_CLOCK=monotonic");
    } else if (g_test_source != NULL) {
        c->kind = VKPROF_HCLK_SIM;
        c->sim = *g_test_source;
        c->source = "simulated";
        c->nominal_hz = c->sim.nominal_hz;
    } else {
        bool kernel_ok = true;
        uint64_t nominal = 0;
        char why[120];
        why[0] = '\0';
        bool hw = counter_usable(why, sizeof why, &kernel_ok, &nominal);
        if (hw && (kernel_ok || want == WANT_COUNTER)) {
            c->kind = VKPROF_HCLK_COUNTER;
            c->source = VKPROF_HCLK_COUNTER_NAME;
            c->nominal_hz = nominal;
            if (!kernel_ok) {
                snprintf(c->reason, sizeof c->reason, "VKPROF_HOST_CLOCK=counter, although %.100s",
                         why);
            }
        } else {
            snprintf(c->reason, sizeof c->reason, "%s", why);
            if (want == WANT_COUNTER && warning[0] == '\0') {
                snprintf(warning, cap,
                         "VKPROF_HOST_CLOCK=counter, but %.119s; spans use "
                         "CLOCK_MONOTONIC",
                         why);
            }
        }
    }
    if (c->kind == VKPROF_HCLK_MONOTONIC) {
        c->rate_num = c->rate_den = 1;
        return;
    }
    /* the first rate: nominal, or measured over a short baseline */
    if (c->nominal_hz != 0) {
        set_rate(c, UINT64_C(1000000000), c->nominal_hz);
    } else {
        set_rate(c, 1, 1); /* a placeholder for the first point's tick error */
    }
    take_point(c);
    if (c->nominal_hz == 0 && c->count == 1) {
        uint64_t until = c->points[0].host_ns + START_BASELINE_NS;
        for (uint32_t i = 0; i < 100000000u && ref_now(c) < until; i++) {
        }
        take_point(c);
    }
    if (c->count == 0 || c->rate_den == 0) {
        /* no usable point (a reference clock that never advances): fall back */
        c->kind = VKPROF_HCLK_MONOTONIC;
        c->source = "CLOCK_MONOTONIC";
        snprintf(c->reason, sizeof c->reason, "the counter could not be calibrated");
        c->count = 0;
        c->rate_num = c->rate_den = 1;
        return;
    }
    c->every_ns = FIRST_EVERY_NS;
    c->max_every_ns = max_every_ns > FIRST_EVERY_NS ? max_every_ns : FIRST_EVERY_NS;
    atomic_store(&c->next_due_ns, c->points[c->count - 1].host_ns + c->every_ns);
}

void vkprof__hclk_maybe_refresh(vkprof_hclk *c)
{
    if (c->kind == VKPROF_HCLK_MONOTONIC || c->frozen) {
        return;
    }
    uint64_t now = ref_now(c);
    if (now < atomic_load_explicit(&c->next_due_ns, memory_order_relaxed)) {
        return;
    }
    if (atomic_flag_test_and_set_explicit(&c->lock, memory_order_acquire)) {
        return; /* another thread is taking it */
    }
    take_point(c);
    c->every_ns = c->every_ns * 2 < c->max_every_ns ? c->every_ns * 2 : c->max_every_ns;
    atomic_store_explicit(&c->next_due_ns, now + c->every_ns, memory_order_relaxed);
    unlock(c);
}

void vkprof__hclk_calibrate(vkprof_hclk *c)
{
    if (c->kind == VKPROF_HCLK_MONOTONIC || c->frozen) {
        return;
    }
    lock(c);
    take_point(c);
    unlock(c);
}

uint64_t vkprof__hclk_ns(vkprof_hclk *c, uint64_t ticks)
{
    if (c->kind == VKPROF_HCLK_MONOTONIC) {
        return ticks;
    }
    uint64_t ns = 0;
    lock(c);
    (void)vkprof__pl_map(c->points, c->count, UINT64_MAX, rate_nominal, c, ticks, &ns);
    unlock(c);
    return ns;
}

bool vkprof__hclk_snapshot(vkprof_hclk *c, vkprof_pl_snap *s)
{
    memset(s, 0, sizeof *s);
    s->mask = UINT64_MAX;
    s->nominal = snap_nominal;
    s->arg = NULL; /* the snapshot: its copy of the rate */
    if (c->kind == VKPROF_HCLK_MONOTONIC) {
        s->identity = true;
        return true;
    }
    s->p = malloc(VKPROF_HCLK_POINTS * sizeof *s->p);
    if (s->p == NULL) {
        return false;
    }
    lock(c);
    s->n = c->count;
    memcpy(s->p, c->points, c->count * sizeof *s->p);
    s->rate_num = c->rate_num;
    s->rate_den = c->rate_den;
    unlock(c);
    if (!vkprof__pl_snap_prepare(s)) {
        vkprof__pl_snap_free(s);
        return false;
    }
    return true;
}

void vkprof__hclk_info(vkprof_hclk *c, vkprof_hclk_info *out)
{
    memset(out, 0, sizeof *out);
    out->source = c->source ? c->source : "CLOCK_MONOTONIC";
    out->reason = c->reason;
    if (c->kind == VKPROF_HCLK_MONOTONIC) {
        out->hz = UINT64_C(1000000000);
        out->rate_num = out->rate_den = 1;
        return;
    }
    lock(c);
    out->rate_num = c->rate_num;
    out->rate_den = c->rate_den;
    out->hz = vkprof__muldiv(UINT64_C(1000000000), c->rate_den, c->rate_num);
    out->points = c->count;
    out->taken = c->taken;
    out->residual_ns = c->residual_ns;
    out->error_bound_ns = point_err_max(c) + c->residual_ns;
    unlock(c);
}

uint32_t vkprof__hclk_copy(vkprof_hclk *c, vkprof_cal_point *points, uint64_t *taken,
                           uint64_t *rate_num, uint64_t *rate_den, uint64_t *residual_ns)
{
    if (c->kind == VKPROF_HCLK_MONOTONIC) {
        *taken = 0;
        *rate_num = *rate_den = 1;
        *residual_ns = 0;
        return 0;
    }
    lock(c);
    uint32_t n = c->count;
    if (points != NULL) {
        memcpy(points, c->points, n * sizeof *points);
    }
    *taken = c->taken;
    *rate_num = c->rate_num;
    *rate_den = c->rate_den;
    *residual_ns = c->residual_ns;
    unlock(c);
    return n;
}

void vkprof__hclk_restore(vkprof_hclk *c, vkprof_hclk_kind kind, const char *source,
                          const char *reason, uint64_t nominal_hz, const vkprof_cal_point *points,
                          uint32_t count, uint64_t taken, uint64_t rate_num, uint64_t rate_den,
                          uint64_t residual_ns)
{
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->frozen = true;
    c->source = source;
    snprintf(c->reason, sizeof c->reason, "%s", reason != NULL ? reason : "");
    c->nominal_hz = nominal_hz;
    if (count > VKPROF_HCLK_POINTS) {
        count = VKPROF_HCLK_POINTS;
    }
    memcpy(c->points, points, count * sizeof *points);
    c->count = count;
    c->taken = taken;
    c->residual_ns = residual_ns;
    atomic_flag_clear(&c->lock);
    if (rate_num == 0 || rate_den == 0) {
        rate_num = rate_den = 1;
    }
    set_rate(c, rate_num, rate_den);
}
