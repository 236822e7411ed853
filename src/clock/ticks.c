/* Exact timestamp arithmetic: masking across counter wraps, and tick -> ns
 * scaling without ever turning absolute ticks into floating point. */
#include "clock/clock.h"

#include <math.h>

uint64_t vkprof_tick_delta(uint64_t begin, uint64_t end, uint32_t valid_bits)
{
    if (valid_bits == 0) {
        return 0;
    }
    uint64_t mask = valid_bits >= 64 ? UINT64_MAX : ((UINT64_C(1) << valid_bits) - 1u);
    return (end - begin) & mask;
}

/* 64 x 64 -> 128-bit product as (hi, lo), portable C11. */
static void mul_64x64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
    uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32;
    uint64_t b_lo = b & 0xffffffffu, b_hi = b >> 32;
    uint64_t p0 = a_lo * b_lo;
    uint64_t p1 = a_lo * b_hi;
    uint64_t p2 = a_hi * b_lo;
    uint64_t p3 = a_hi * b_hi;
    uint64_t mid = (p0 >> 32) + (p1 & 0xffffffffu) + (p2 & 0xffffffffu);
    *lo = (p0 & 0xffffffffu) | (mid << 32);
    *hi = p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
}

/* The float period as an unsigned 32.32 fixed-point number. A float has a
 * 24-bit mantissa, so for any period >= 2^-8 ns this is exact; smaller
 * periods round to the nearest 2^-32 ns. Negative/NaN periods give 0. */
static uint64_t period_q32(float period)
{
    double p = (double)period;
    if (!(p > 0.0)) {
        return 0;
    }
    double q = ldexp(p, 32);
    if (q >= 18446744073709551615.0) {
        return UINT64_MAX;
    }
    return (uint64_t)(q + 0.5);
}

uint64_t vkprof_ticks_to_ns(uint64_t ticks, float timestamp_period)
{
    uint64_t hi, lo;
    mul_64x64(ticks, period_q32(timestamp_period), &hi, &lo);
    /* result = (hi:lo) >> 32 */
    if ((hi >> 32) != 0) {
        return UINT64_MAX;
    }
    return (hi << 32) | (lo >> 32);
}

uint64_t vkprof__mulhi(uint64_t a, uint64_t b)
{
    uint64_t hi, lo;
    mul_64x64(a, b, &hi, &lo);
    return hi;
}

uint64_t vkprof__div128(uint64_t hi, uint64_t lo, uint64_t d, uint64_t *rem)
{
    /* 128 / 64 division; hi < d keeps the quotient in 64 bits. A product
     * that fits in 64 bits (hi == 0, the common case: a span of ticks times
     * a rate) is one hardware division; otherwise the compiler's 128-bit
     * division where it has one (x86-64, arm64), else long division one bit
     * at a time. All three give the same quotient and remainder. */
    if (hi == 0) {
        if (rem != NULL) {
            *rem = lo % d;
        }
        return lo / d;
    }
#if defined(__SIZEOF_INT128__)
    __extension__ const unsigned __int128 n = ((unsigned __int128)hi << 64) | lo;
    if (rem != NULL) {
        *rem = (uint64_t)(n % d);
    }
    return (uint64_t)(n / d);
#else
    uint64_t q = 0;
    for (int i = 63; i >= 0; i--) {
        uint64_t carry = hi >> 63;
        hi = (hi << 1) | (lo >> 63);
        lo <<= 1;
        q <<= 1;
        if (carry || hi >= d) {
            hi -= d;
            q |= 1;
        }
    }
    if (rem != NULL) {
        *rem = hi;
    }
    return q;
#endif
}

uint64_t vkprof__muldiv(uint64_t a, uint64_t b, uint64_t c)
{
    if (c == 0) {
        return UINT64_MAX;
    }
    uint64_t hi, lo;
    mul_64x64(a, b, &hi, &lo);
    /* add c/2 for rounding to nearest */
    uint64_t half = c / 2;
    lo += half;
    if (lo < half) {
        hi++;
    }
    if (hi >= c) {
        return UINT64_MAX; /* the quotient does not fit */
    }
    return vkprof__div128(hi, lo, c, NULL);
}
