/*
 * fuzz_range.c: libFuzzer target for server/range.c (the Range header).
 *
 * Input: an optional object size in decimal and a newline, then the header
 * value ("1000\nbytes=0-5"); without a size line the whole input is the
 * header and the size is 1000. Properties checked beyond "no crash":
 * RANGE_NONE exactly for an empty header; on RANGE_OK first <= last < size;
 * formatting the range as "bytes=first-last" and parsing it again gives
 * the same range; Content-Range always fits RANGE_FORMAT_LEN.
 */
#include "server/range.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reports a broken property and aborts, so libFuzzer keeps the input. */
static void
fuzz_range_fail(const char *what, struct slice h, uint64_t obj_size)
{
    fprintf(stderr, "fuzz_range: %s (header \"%.*s\", size %llu)\n", what, (int)h.len,
            h.ptr ? h.ptr : "", (unsigned long long)obj_size);
    abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct slice h = {(const char *)data, size};
    const char *nl = size ? memchr(data, '\n', size) : NULL;
    uint64_t obj_size = 1000;
    struct range r, back;
    char text[RANGE_FORMAT_LEN];
    enum range_status st;
    int n;

    if (nl && parse_u64((struct slice){h.ptr, (size_t)(nl - h.ptr)}, UINT64_MAX, &obj_size) == 0) {
        h.len -= (size_t)(nl - h.ptr) + 1;
        h.ptr = nl + 1;
    }

    st = range_parse(h, obj_size, &r);
    if ((st == RANGE_NONE) != (h.len == 0))
        fuzz_range_fail("RANGE_NONE iff the header is empty", h, obj_size);
    if (st != RANGE_NONE && st != RANGE_OK && st != RANGE_UNSATISFIABLE && st != RANGE_IGNORE)
        fuzz_range_fail("unknown status", h, obj_size);
    if (st != RANGE_OK)
        return 0;

    if (!(r.first <= r.last && r.last < obj_size))
        fuzz_range_fail("RANGE_OK outside first <= last < size", h, obj_size);
    n = range_format_content_range(&r, obj_size, text, sizeof(text));
    if (n <= 0 || (size_t)n != strlen(text))
        fuzz_range_fail("Content-Range did not fit", h, obj_size);
    n = range_format_header(&r, text, sizeof(text));
    if (n <= 0 || (size_t)n != strlen(text))
        fuzz_range_fail("Range did not fit", h, obj_size);
    if (range_parse((struct slice){text, (size_t)n}, obj_size, &back) != RANGE_OK ||
        back.first != r.first || back.last != r.last)
        fuzz_range_fail("format-then-parse changed the range", h, obj_size);
    return 0;
}
