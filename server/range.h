/*
 * range.h: parses the Range header of a GET (RFC 9110 §14, S3 subset).
 *
 * Only one "bytes" range is honoured, as S3 does; anything else the
 * caller ignores and serves the whole object with 200. Pure functions: no
 * allocation, no I/O, safe from any thread.
 */
#ifndef SHARD_SERVER_RANGE_H
#define SHARD_SERVER_RANGE_H

#include "common/common.h"

#include <stddef.h>
#include <stdint.h>

enum range_status {
    RANGE_NONE,          /* no header: serve the object with 200 */
    RANGE_OK,            /* serve '*out' with 206 */
    RANGE_UNSATISFIABLE, /* 416 InvalidRange */
    RANGE_IGNORE,        /* not a range we honour: serve the whole object with 200 */
};

struct range {
    uint64_t first;
    uint64_t last; /* inclusive */
};

/* Buffer length that fits either formatter's output for any uint64 values,
 * NUL included. 64 bytes suffice for objects smaller than 10^18 bytes. */
#define RANGE_FORMAT_LEN 72

/*
 * Resolves header value 'h' against an object of 'size' bytes.
 *
 * RANGE_NONE: 'h' is empty (no header).
 * RANGE_OK: '*out' is the single range, clamped to the object: "bytes=a-b"
 *   with b >= size gives last = size-1; "bytes=a-" runs to the end; the
 *   suffix "bytes=-n" with n > size gives the whole object. A number too
 *   large for uint64 means "beyond the end" and is clamped the same way.
 *   On RANGE_OK, first <= last < size always holds.
 * RANGE_UNSATISFIABLE: syntactically valid but first >= size, the suffix
 *   "-0", or 'size' 0 with any valid range; answer 416 InvalidRange.
 * RANGE_IGNORE: syntactically invalid, multiple ranges ("bytes=0-1,5-6"),
 *   a unit other than bytes, or last < first; serve the whole object.
 *
 * The unit is matched without regard to case (RFC 9110 §14.1). Optional
 * whitespace (SP, HTAB) is accepted around the whole value, after '=' and
 * after the range; none is accepted before '=' or around '-'.
 * '*out' is written only on RANGE_OK.
 */
enum range_status range_parse(struct slice h, uint64_t size, struct range *out);

/*
 * Formats the Content-Range value "bytes first-last/size" into 'out',
 * NUL-terminated; 'cap' should be at least 64 (RANGE_FORMAT_LEN for any
 * size). Returns the length without the NUL, or -1 when 'cap' is too small
 * (the output is then truncated but still terminated).
 */
int range_format_content_range(const struct range *r, uint64_t size, char *out, size_t cap);

/*
 * Formats the Range header value "bytes=first-last" into 'out',
 * NUL-terminated (used by the fuzzer's format-then-parse check and by
 * tests); 'cap' should be at least 64 (RANGE_FORMAT_LEN for any values).
 * Returns the length without the NUL, or -1 when 'cap' is too small.
 */
int range_format_header(const struct range *r, char *out, size_t cap);

#endif
