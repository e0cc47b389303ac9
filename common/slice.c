/*
 * slice.c: comparisons on (ptr, len) byte runs (exact and ASCII
 * case-insensitive: the one case folding of the tree), and checked
 * decimal parsing.
 */
#include "common/common.h"

struct slice
slice_from_cstr(const char *s)
{
    struct slice r = {s, s ? strlen(s) : 0};
    return r;
}

bool
slice_eq(struct slice a, struct slice b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

int
ascii_lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

int
slice_casecmp(struct slice a, struct slice b)
{
    size_t n = MIN(a.len, b.len);
    for (size_t i = 0; i < n; i++) {
        int c = ascii_lower((unsigned char)a.ptr[i]) - ascii_lower((unsigned char)b.ptr[i]);
        if (c != 0)
            return c;
    }
    return (a.len > b.len) - (a.len < b.len);
}

bool
slice_eq_nocase(struct slice a, const char *lit)
{
    struct slice b = slice_from_cstr(lit);
    return a.len == b.len && slice_casecmp(a, b) == 0;
}

int
slice_cmp(struct slice a, struct slice b)
{
    size_t n = MIN(a.len, b.len);
    int c = n ? memcmp(a.ptr, b.ptr, n) : 0;
    if (c)
        return c;
    return (a.len > b.len) - (a.len < b.len);
}

bool
slice_has_prefix(struct slice s, struct slice prefix)
{
    return s.len >= prefix.len && (prefix.len == 0 || memcmp(s.ptr, prefix.ptr, prefix.len) == 0);
}

struct slice
slice_trim(struct slice s)
{
    while (s.len > 0 && (s.ptr[0] == ' ' || s.ptr[0] == '\t')) {
        s.ptr++;
        s.len--;
    }
    while (s.len > 0 && (s.ptr[s.len - 1] == ' ' || s.ptr[s.len - 1] == '\t'))
        s.len--;
    return s;
}

bool
slice_split_next(struct slice *s, char sep, struct slice *head)
{
    if (s->len == 0)
        return false;
    const char *p = memchr(s->ptr, sep, s->len);
    if (p == NULL) {
        *head = *s;
        s->ptr += s->len;
        s->len = 0;
    } else {
        head->ptr = s->ptr;
        head->len = (size_t)(p - s->ptr);
        s->len -= head->len + 1;
        s->ptr = p + 1;
    }
    return true;
}

int
parse_u64(struct slice s, uint64_t max, uint64_t *out)
{
    if (s.len == 0 || s.len > 20)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < s.len; i++) {
        unsigned c = (unsigned char)s.ptr[i];
        if (c < '0' || c > '9')
            return -1;
        unsigned d = c - '0';
        if (v > (max - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}
