/*
 * range.c: the Range header of GetObject (RFC 9110 §14.1-14.2), S3 subset.
 *
 *   Range: bytes=0-499      first 500 bytes     -> first=0,      last=499
 *   Range: bytes=500-       from 500 to the end -> first=500,    last=size-1
 *   Range: bytes=-500       last 500 bytes      -> first=size-500, last=size-1
 *
 * One range only; a list is ignored, as S3 ignores it. Numbers are parsed
 * with an explicit overflow check (nginx ngx_http_range_filter_module.c
 * cutoff/cutlim) and a value past UINT64_MAX saturates, which is exact for
 * our purposes: it lies beyond the end of any object. Invariant on
 * RANGE_OK: first <= last < size.
 */
#include "server/range.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* A run of decimal digits: its text and its value, saturated at UINT64_MAX. */
struct range_num {
    struct slice digits;
    uint64_t value;
    bool is_overflow;
};

static bool
range_is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/*
 * Scans the digits at '*p' (not past 'end') into 'num' and advances '*p'.
 * Returns false when there is no digit at '*p'.
 */
static bool
range_scan_num(const char **p, const char *end, struct range_num *num)
{
    const uint64_t cutoff = UINT64_MAX / 10;
    const unsigned cutlim = UINT64_MAX % 10;
    const char *s = *p;
    uint64_t v = 0;
    bool is_overflow = false;

    while (*p < end && **p >= '0' && **p <= '9') {
        unsigned d = (unsigned)(**p - '0');
        if (is_overflow || v > cutoff || (v == cutoff && d > cutlim))
            is_overflow = true;
        else
            v = v * 10 + d;
        (*p)++;
    }
    num->digits = (struct slice){s, (size_t)(*p - s)};
    num->value = is_overflow ? UINT64_MAX : v;
    num->is_overflow = is_overflow;
    return num->digits.len > 0;
}

/*
 * Compares the numbers written in 'a' and 'b' exactly, whatever their
 * length (both all digits, leading zeros allowed). Returns <0, 0 or >0.
 */
static int
range_num_cmp(const struct range_num *a, const struct range_num *b)
{
    struct slice x = a->digits, y = b->digits;

    if (!a->is_overflow && !b->is_overflow)
        return a->value < b->value ? -1 : a->value > b->value;
    while (x.len > 1 && x.ptr[0] == '0') {
        x.ptr++;
        x.len--;
    }
    while (y.len > 1 && y.ptr[0] == '0') {
        y.ptr++;
        y.len--;
    }
    if (x.len != y.len)
        return x.len < y.len ? -1 : 1;
    return memcmp(x.ptr, y.ptr, x.len);
}

enum range_status
range_parse(struct slice h, uint64_t size, struct range *out)
{
    static const char unit[] = "bytes";
    const char *p = h.ptr, *end = h.ptr + h.len;
    struct range_num first = {0}, last = {0};
    bool is_suffix = false, has_last = false;

    if (h.len == 0)
        return RANGE_NONE;

    /* Field values arrive trimmed from MHD, but a raw value may not be. */
    while (p < end && range_is_ows(*p))
        p++;
    while (end > p && range_is_ows(end[-1]))
        end--;

    if ((size_t)(end - p) < sizeof(unit) ||
        !slice_eq_nocase((struct slice){p, sizeof(unit) - 1}, unit) || p[sizeof(unit) - 1] != '=')
        return RANGE_IGNORE;
    p += sizeof(unit);
    while (p < end && range_is_ows(*p))
        p++;

    if (p < end && *p == '-') {
        p++;
        is_suffix = true;
        if (!range_scan_num(&p, end, &last))
            return RANGE_IGNORE;
    } else {
        if (!range_scan_num(&p, end, &first))
            return RANGE_IGNORE;
        if (p == end || *p != '-')
            return RANGE_IGNORE;
        p++;
        has_last = range_scan_num(&p, end, &last);
    }
    /* Trailing OWS was trimmed above; anything left, a ',' included, is not one range. */
    if (p != end)
        return RANGE_IGNORE;
    if (has_last && range_num_cmp(&last, &first) < 0)
        return RANGE_IGNORE;

    if (size == 0)
        return RANGE_UNSATISFIABLE;
    if (is_suffix) {
        if (last.value == 0)
            return RANGE_UNSATISFIABLE;
        out->first = last.value >= size ? 0 : size - last.value;
        out->last = size - 1;
        return RANGE_OK;
    }
    if (first.value >= size)
        return RANGE_UNSATISFIABLE;
    out->first = first.value;
    out->last = has_last && last.value < size ? last.value : size - 1;
    return RANGE_OK;
}

/* Returns 'n' from snprintf when the text fit in 'cap' bytes, else -1. */
static int
range_fit(int n, size_t cap)
{
    return n >= 0 && (size_t)n < cap ? n : -1;
}

int
range_format_content_range(const struct range *r, uint64_t size, char *out, size_t cap)
{
    char tmp[6 + 3 * 20 + 2 + 1];
    char *p = tmp;
    memcpy(p, "bytes ", 6);
    p += 6;
    p += u64_format(r->first, p);
    *p++ = '-';
    p += u64_format(r->last, p);
    *p++ = '/';
    p += u64_format(size, p);
    /* snprintf's contract, without its cost on every 206: the text is cut
     * to fit and always terminated, and a cut is reported as -1. */
    size_t n = (size_t)(p - tmp);
    if (cap == 0)
        return -1;
    size_t k = MIN(n, cap - 1);
    memcpy(out, tmp, k);
    out[k] = '\0';
    return k == n ? (int)n : -1;
}

int
range_format_header(const struct range *r, char *out, size_t cap)
{
    int n = snprintf(out, cap, "bytes=%" PRIu64 "-%" PRIu64, r->first, r->last);
    return range_fit(n, cap);
}
