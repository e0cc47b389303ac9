/*
 * test_size.c: parse_size (common/codec.c), the one size syntax of the
 * server's config and the shard tool: the forms it accepts with their
 * values, and the forms it refuses (the server used to take "64KBB", " 8M",
 * "+1" and "-1").
 */
#include "common/common.h"
#include "tests/lib/test.h"

static const struct {
    const char *text;
    uint64_t value;
} ACCEPTED[] = {
    {"0", 0},
    {"123", 123},
    {"64K", 64 << 10},
    {"64k", 64 << 10},
    {"64KB", 64 << 10},
    {"64KiB", 64 << 10},
    {"64kiB", 64 << 10},
    {"8M", 8 << 20},
    {"5MB", 5 << 20},
    {"5MiB", 5 << 20},
    {"1G", 1ull << 30},
    {"1g", 1ull << 30},
    {"2T", 2ull << 40},
    {"0K", 0},
    {"007", 7},
    {"18446744073709551615", UINT64_MAX},
    {"16777215T", 16777215ull << 40},
    {"17179869183G", 17179869183ull << 30},
};

static const char *const REFUSED[] = {
    "",
    "M",
    "KB",
    "12X",
    "1.5M",
    "-1",
    "+1",
    " 1",
    "1 ",
    "8M ",
    "8MM",
    "64KBB",
    "64KiBB",
    "64KBi",
    "64kib",
    "64iB",
    "64B",
    "0x10",
    "1P",
    "1e3",
    "18446744073709551616",
    "17179869184G", /* 2^34 G overflows */
    "16777216T",
};

int
main(void)
{
    for (size_t i = 0; i < ARRAY_LEN(ACCEPTED); i++) {
        uint64_t v = 12345;
        if (parse_size(ACCEPTED[i].text, &v) != 0 || v != ACCEPTED[i].value)
            TEST_FAIL("parse_size(\"%s\") refused or wrong", ACCEPTED[i].text);
    }
    for (size_t i = 0; i < ARRAY_LEN(REFUSED); i++) {
        uint64_t v = 12345;
        if (parse_size(REFUSED[i], &v) != -1 || v != 12345)
            TEST_FAIL("parse_size(\"%s\") accepted", REFUSED[i]);
    }
    return 0;
}
