/*
 * uri.c: URI percent-encoding and decoding, the one copy every module
 * uses: SigV4 canonical requests (auth/), the request parser and
 * encoding-type=url listings (server/), and the client's request paths
 * and queries (client/). The encoder keeps RFC 3986's unreserved bytes
 * (A-Z a-z 0-9 - _ . ~) and, when asked, '/'; everything else becomes %XX
 * with upper-case hex, as SigV4 requires. The decoder is strict: a '%'
 * not followed by two hex digits is an error, never passed through, so
 * that every reader of a query sees the same parameters.
 */
#include "common/common.h"

/* unreserved[c]: byte c stays as is. */
static const bool unreserved[256] = {
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1,
    ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1,
    ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
    ['Y'] = 1, ['Z'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1,
    ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1,
    ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1,
    ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1,
    ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1, ['-'] = 1, ['_'] = 1,
    ['.'] = 1, ['~'] = 1,
};

char *
uri_encode_to(char *out, const char *in, size_t len, bool keep_slash)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];
        if (unreserved[c] || (c == '/' && keep_slash)) {
            *out++ = (char)c;
        } else {
            out[0] = '%';
            out[1] = hex_digits_upper[c >> 4];
            out[2] = hex_digits_upper[c & 15];
            out += 3;
        }
    }
    return out;
}

void
uri_encode(struct buf *b, const char *in, size_t len, bool keep_slash)
{
    buf_reserve(b, len * 3);
    char *end = uri_encode_to(b->ptr + b->len, in, len, keep_slash);
    b->len = (size_t)(end - b->ptr);
    b->ptr[b->len] = '\0';
}

long
uri_decode(const char *in, size_t len, char *out)
{
    size_t o = 0, i = 0;
    while (i < len) {
        const char *pct = memchr(in + i, '%', len - i);
        size_t run = pct ? (size_t)(pct - (in + i)) : len - i;
        memmove(out + o, in + i, run);
        o += run;
        i += run;
        if (i >= len)
            break;
        if (len - i < 3)
            return -1;
        int hi = hex_digit_value((unsigned char)in[i + 1]);
        int lo = hex_digit_value((unsigned char)in[i + 2]);
        if (hi < 0 || lo < 0)
            return -1;
        out[o++] = (char)(hi << 4 | lo);
        i += 3;
    }
    return (long)o;
}
