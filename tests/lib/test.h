/*
 * test.h: assertions for unit tests. A failed assertion prints both values
 * and the location and exits 1; exit 77 means skip (automake convention).
 */
#ifndef SHARD_TEST_H
#define SHARD_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_FAIL(...)                                                                             \
    do {                                                                                           \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                            \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
        exit(1);                                                                                   \
    } while (0)

#define TEST_SKIP(why)                                                                             \
    do {                                                                                           \
        fprintf(stderr, "skip: %s\n", why);                                                        \
        exit(77);                                                                                  \
    } while (0)

#define ASSERT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond))                                                                               \
            TEST_FAIL("assertion failed: %s", #cond);                                              \
    } while (0)

#define ASSERT_EQ(a, b)                                                                            \
    do {                                                                                           \
        int64_t a_ = (int64_t)(a), b_ = (int64_t)(b);                                              \
        if (a_ != b_)                                                                              \
            TEST_FAIL("%s == %s: %" PRId64 " != %" PRId64, #a, #b, a_, b_);                        \
    } while (0)

#define ASSERT_UEQ(a, b)                                                                           \
    do {                                                                                           \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                           \
        if (a_ != b_)                                                                              \
            TEST_FAIL("%s == %s: %" PRIu64 " != %" PRIu64, #a, #b, a_, b_);                        \
    } while (0)

#define ASSERT_STR_EQ(a, b)                                                                        \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (strcmp(a_, b_) != 0)                                                                   \
            TEST_FAIL("%s == %s: \"%s\" != \"%s\"", #a, #b, a_, b_);                               \
    } while (0)

#define ASSERT_MEM_EQ(a, b, n)                                                                     \
    do {                                                                                           \
        if (memcmp((a), (b), (n)) != 0)                                                            \
            TEST_FAIL("%s and %s differ in their first %zu bytes", #a, #b, (size_t)(n));           \
    } while (0)

#endif
