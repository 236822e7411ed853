/* Host clocks: CLOCK_MONOTONIC (what spans and traces use), plus RAW and
 * REALTIME for calibration bridging and cross-process anchors. */
#define _POSIX_C_SOURCE 200809L
#include "clock/clock.h"

#include <time.h>

static uint64_t read_clock(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0) {
        return 0;
    }
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

uint64_t vkprof_host_now_ns(void)
{
    return read_clock(CLOCK_MONOTONIC);
}

uint64_t vkprof__raw_now_ns(void)
{
#ifdef CLOCK_MONOTONIC_RAW
    return read_clock(CLOCK_MONOTONIC_RAW);
#else
    return 0;
#endif
}

uint64_t vkprof__realtime_ns(void)
{
    return read_clock(CLOCK_REALTIME);
}

/* The offset (MONOTONIC - other) from reads bracketed by two MONOTONIC reads;
 * the tightest of a few tries. *err_ns gets half the bracket. */
static int64_t bridge(uint64_t (*other)(void), uint64_t *err_ns)
{
    uint64_t best = UINT64_MAX;
    int64_t offset = 0;
    for (int i = 0; i < 8; i++) {
        uint64_t a = vkprof_host_now_ns();
        uint64_t o = other();
        uint64_t b = vkprof_host_now_ns();
        if (b - a < best) {
            best = b - a;
            offset = (int64_t)(a + (b - a) / 2) - (int64_t)o;
        }
    }
    *err_ns = (best + 1) / 2;
    return offset;
}

int64_t vkprof__raw_to_mono_offset(uint64_t *err_ns)
{
    return bridge(vkprof__raw_now_ns, err_ns);
}

int64_t vkprof__realtime_to_mono_offset(uint64_t *err_ns)
{
    return bridge(vkprof__realtime_ns, err_ns);
}
