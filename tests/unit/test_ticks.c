/* Pure arithmetic: masking across wraps and exact tick -> ns scaling, checked
 * against an independent exact reference (the float period decomposed into
 * mantissa * 2^exponent, multiplied in 128-bit integers). No GPU needed. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vkprof/vkprof.h"

#include "check.h"
#include "clock/clock.h"

__extension__ typedef unsigned __int128 u128;

/* floor(ticks * period) exactly: period = m * 2^e with integer m < 2^24. */
static uint64_t reference_ns(uint64_t ticks, float period)
{
    int e = 0;
    float frac = frexpf(period, &e); /* period = frac * 2^e, frac in [0.5, 1) */
    uint64_t m = (uint64_t)ldexpf(frac, 24);
    e -= 24;
    u128 p = (u128)ticks * m;
    if (e >= 0) {
        p <<= e;
    } else {
        p >>= -e;
    }
    return p > (u128)UINT64_MAX ? UINT64_MAX : (uint64_t)p;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void test_delta(void)
{
    static const uint32_t bits[] = {36, 40, 48, 56, 63, 64};
    for (size_t b = 0; b < sizeof bits / sizeof bits[0]; b++) {
        uint64_t mask = bits[b] == 64 ? UINT64_MAX : (UINT64_C(1) << bits[b]) - 1;
        /* plain */
        CHECK(vkprof_tick_delta(100, 350, bits[b]) == 250);
        /* across the wrap: begin just below the top, end just past zero */
        CHECK(vkprof_tick_delta(mask - 9, 5, bits[b]) == 15);
        CHECK(vkprof_tick_delta(mask, 0, bits[b]) == 1);
        for (int i = 0; i < 10000; i++) {
            uint64_t begin = rng() & mask, d = rng() & (mask >> 1);
            uint64_t end = (begin + d) & mask;
            CHECK(vkprof_tick_delta(begin, end, bits[b]) == d);
        }
    }
    CHECK(vkprof_tick_delta(5, 10, 0) == 0);
}

static void test_scale(void)
{
    static const float periods[] = {1.0f,    52.083f, 38.46f, 52.08333206f, 0.5f,
                                    83.333f, 10.0f,   1.25f,  0.03125f,     1000.0f};
    for (size_t p = 0; p < sizeof periods / sizeof periods[0]; p++) {
        float per = periods[p];
        CHECK(vkprof_ticks_to_ns(0, per) == 0);
        for (int i = 0; i < 20000; i++) {
            uint64_t t = rng() >> (rng() % 64);
            uint64_t got = vkprof_ticks_to_ns(t, per), want = reference_ns(t, per);
            if (got != want) {
                fprintf(stderr, "ticks %llu period %.9g: got %llu want %llu\n",
                        (unsigned long long)t, (double)per, (unsigned long long)got,
                        (unsigned long long)want);
                check_failures++;
                break;
            }
        }
    }
    /* The H200 case: absolute ticks ~1.8e18 with period 1.0. A double keeps
     * only 256 ns steps there; exact integer scaling keeps every ns. */
    uint64_t abs_ticks = UINT64_C(1800000000123456789);
    CHECK(vkprof_ticks_to_ns(abs_ticks, 1.0f) == abs_ticks);
    CHECK((uint64_t)((double)abs_ticks * 1.0) != abs_ticks); /* why doubles are not used */
    /* 19.2 MHz mobile counter: 52.083332 ns/tick, one second of ticks */
    CHECK(vkprof_ticks_to_ns(19200000, 52.08333206f) == reference_ns(19200000, 52.08333206f));
    /* Saturates instead of wrapping. */
    CHECK(vkprof_ticks_to_ns(UINT64_MAX, 52.083f) == UINT64_MAX);
    /* Nonsense periods give 0, never garbage. */
    CHECK(vkprof_ticks_to_ns(1000, -1.0f) == 0);
    CHECK(vkprof_ticks_to_ns(1000, nanf("")) == 0);
}

static void test_flags_and_names(void)
{
    static const struct {
        const char *s;
        bool ok, val;
    } cases[] = {{"1", true, true},      {"on", true, true},       {"TRUE", true, true},
                 {" yes ", true, true},  {"0", true, false},       {"off", true, false},
                 {"False", true, false}, {"no", true, false},      {"", true, false},
                 {"2", false, false},    {"enable", false, false}, {"1x", false, false},
                 {"tru", false, false},  {"yess", false, false},   {"-1", false, false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool v = !cases[i].val;
        bool ok = vkprof_parse_flag(cases[i].s, &v);
        CHECK(ok == cases[i].ok);
        if (ok) {
            CHECK(v == cases[i].val);
        }
    }
    CHECK(!vkprof_parse_flag(NULL, &(bool){false}));
    CHECK(strcmp(vkprof_result_name(VKPROF_ERROR_NOT_READY), "VKPROF_ERROR_NOT_READY") == 0);
    CHECK(strcmp(vkprof_result_name(VKPROF_OK), "VKPROF_OK") == 0);
    CHECK(strcmp(vkprof_result_name((vkprof_result)12345), "VKPROF_RESULT_UNKNOWN") == 0);
    CHECK(strlen(vkprof_result_text(VKPROF_ERROR_BEGIN_TWICE)) > 0);
    CHECK(vkprof_version() == VKPROF_VERSION);
}

static void test_null_safety(void)
{
    /* Every entry point accepts a NULL context without crashing. */
    CHECK(!vkprof_active(NULL));
    CHECK(!vkprof_active(NULL));
    CHECK(vkprof_cmd_begin(NULL, VK_NULL_HANDLE, 0) == VKPROF_DISABLED);
    CHECK(vkprof_cmd_end(NULL, VK_NULL_HANDLE, 0) == VKPROF_DISABLED);
    CHECK(vkprof_resolve(NULL, NULL) == VKPROF_DISABLED);
    CHECK(vkprof_accumulate(NULL, 0) == VKPROF_DISABLED);
    CHECK(!vkprof_any_recorded(NULL));
    vkprof_reset(NULL);
    vkprof_set_active(NULL, true);
    vkprof_destroy(NULL);
    vkprof_context ctx = (vkprof_context)(void *)1;
    CHECK(vkprof_create(NULL, &ctx) == VKPROF_ERROR_INVALID_ARGUMENT && ctx == NULL);
    vkprof_context_desc d = vkprof_default_desc();
    CHECK(vkprof_create(&d, &ctx) == VKPROF_ERROR_INVALID_ARGUMENT && ctx == NULL);
    uint32_t n = 0;
    CHECK(vkprof_snapshot(NULL, NULL, 0, &n, NULL) == VKPROF_ERROR_INVALID_ARGUMENT);
}

/* vkprof__div128 (its one-division, 128-bit and long-division paths) and
 * vkprof__muldiv against u128 arithmetic: quotient, remainder, rounding to
 * nearest, and the overflow answer. */
static void test_div128(void)
{
    static const uint64_t edge[] = {1,
                                    2,
                                    3,
                                    24,
                                    1000000000u,
                                    UINT64_C(0xffffffff),
                                    UINT64_C(0x100000000),
                                    UINT64_MAX / 3,
                                    UINT64_MAX - 1,
                                    UINT64_MAX};
    const size_t n_edge = sizeof edge / sizeof edge[0];
    for (int i = 0; i < 200000; i++) {
        uint64_t d = i < 1000 ? edge[(size_t)i % n_edge] : rng() >> (rng() % 64);
        if (d == 0) {
            d = 1;
        }
        uint64_t lo = rng();
        /* a third with hi == 0 (the fast path), the rest any hi < d */
        uint64_t hi = (i % 3 == 0) ? 0 : rng() % d;
        const u128 n = ((u128)hi << 64) | lo;
        uint64_t rem = UINT64_MAX;
        const uint64_t q = vkprof__div128(hi, lo, d, &rem);
        if (q != (uint64_t)(n / d) || rem != (uint64_t)(n % d)) {
            CHECK(0 && "vkprof__div128 differs from 128-bit division");
            return;
        }
        const uint64_t a = rng() >> (rng() % 64), b = rng() >> (rng() % 64);
        const u128 r = ((u128)a * b + d / 2) / d;
        const uint64_t want = r > (u128)UINT64_MAX ? UINT64_MAX : (uint64_t)r;
        if (vkprof__muldiv(a, b, d) != want) {
            CHECK(0 && "vkprof__muldiv differs from 128-bit arithmetic");
            return;
        }
    }
    CHECK_EQ_U64(vkprof__muldiv(5, 7, 0), UINT64_MAX);
    CHECK_EQ_U64(vkprof__div128(0, 7, 7, NULL), 1);
}

int main(void)
{
    test_div128();
    test_delta();
    test_scale();
    test_flags_and_names();
    test_null_safety();
    printf("%s: %d failure(s)\n", check_failures ? "FAILED" : "PASSED", check_failures);
    return check_failures ? 1 : 0;
}
