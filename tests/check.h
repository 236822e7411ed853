/* Checks for tests, with no Vulkan: CHECK, CHECK_EQ_U64 and the failure
 * count. Tests without a device include this alone; harness.h (the lavapipe
 * harness) includes it with its own counter and case name. */
#ifndef VKPROF_TEST_CHECK_H
#define VKPROF_TEST_CHECK_H

#include <stdio.h>

#ifndef CHECK_FAILURES
/* a test of one file: the counter and the case name are its own */
static int check_failures;
static const char *check_case = "";
#define CHECK_FAILURES check_failures
#define CHECK_CASE check_case
#endif

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d [%s]: %s\n", __FILE__, __LINE__, CHECK_CASE, #cond);       \
            CHECK_FAILURES++;                                                                      \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                         \
    do {                                                                                           \
        unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b);             \
        if (a_ != b_) {                                                                            \
            fprintf(stderr, "FAIL %s:%d [%s]: %s == %s (%llu != %llu)\n", __FILE__, __LINE__,      \
                    CHECK_CASE, #a, #b, a_, b_);                                                   \
            CHECK_FAILURES++;                                                                      \
        }                                                                                          \
    } while (0)

#endif
