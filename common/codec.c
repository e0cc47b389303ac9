/*
 * codec.c: base64 (RFC 4648, padded), hex and decimal. Decoders reject any
 * byte outside the alphabet; they never read past 'len'. The only hex
 * digit tables of the tree live here (hex_encode, hex_digit_value); the
 * URI coder (uri.c) uses them too. parse_size (last block) is the one
 * size syntax ("64M") of the tree.
 */
#include "common/common.h"

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t
base64_encoded_len(size_t n)
{
    return (n + 2) / 3 * 4;
}

size_t
base64_encode(const void *in, size_t n, char *out)
{
    const unsigned char *p = in;
    size_t o = 0;
    size_t i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = b64[(v >> 6) & 63];
        out[o++] = b64[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        out[o++] = b64[v >> 18];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = (i + 1 < n) ? b64[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    out[o] = '\0';
    return o;
}

size_t
base64_decoded_cap(size_t len)
{
    return len / 4 * 3 + 3;
}

static int
b64val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

long
base64_decode(const char *in, size_t len, void *out)
{
    unsigned char *o = out;
    if (len % 4)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)in[i + k];
            if (c == '=' && i + 4 == len && k >= 2) {
                v[k] = 0;
                pad++;
            } else {
                if (pad)
                    return -1;
                v[k] = b64val(c);
                if (v[k] < 0)
                    return -1;
            }
        }
        uint32_t w =
            (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        o[n++] = (unsigned char)(w >> 16);
        if (pad < 2)
            o[n++] = (unsigned char)(w >> 8);
        if (pad < 1)
            o[n++] = (unsigned char)w;
    }
    return (long)n;
}

const char hex_digits_lower[16] = {'0', '1', '2', '3', '4', '5', '6', '7',
                                   '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
const char hex_digits_upper[16] = {'0', '1', '2', '3', '4', '5', '6', '7',
                                   '8', '9', 'A', 'B', 'C', 'D', 'E', 'F'};

void
hex_encode(const void *in, size_t n, char *out)
{
    const unsigned char *p = in;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex_digits_lower[p[i] >> 4];
        out[2 * i + 1] = hex_digits_lower[p[i] & 15];
    }
    out[2 * n] = '\0';
}

int
hex_digit_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int
hex_decode(const char *in, size_t len, void *out)
{
    unsigned char *o = out;
    if (len % 2)
        return -1;
    for (size_t i = 0; i < len; i += 2) {
        int hi = hex_digit_value((unsigned char)in[i]);
        int lo = hex_digit_value((unsigned char)in[i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        o[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

size_t
utf8_encode(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

size_t
u64_format(uint64_t v, char *out)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

/* ---- sizes ---------------------------------------------------------------- */

int
parse_size(const char *s, uint64_t *out)
{
    static const char UNITS[] = "KkMmGgTt";
    uint64_t v;
    size_t n = strspn(s, "0123456789");
    if (n == 0 || parse_u64((struct slice){s, n}, UINT64_MAX, &v) != 0)
        return -1;
    const char *p = s + n;
    unsigned shift = 0;
    if (*p != '\0') {
        const char *u = strchr(UNITS, *p);
        if (u == NULL)
            return -1;
        shift = 10 * (unsigned)((u - UNITS) / 2 + 1);
        p++;
        if (p[0] == 'i' && p[1] == 'B')
            p += 2;
        else if (p[0] == 'B')
            p++;
        if (*p != '\0' || v > (UINT64_MAX >> shift))
            return -1;
    }
    *out = v << shift;
    return 0;
}
