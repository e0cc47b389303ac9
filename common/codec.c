/*
 * codec.c: base64 (RFC 4648, padded) and lower-case hex. Decoders reject
 * any byte outside the alphabet; they never read past 'len'.
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

void
hex_encode(const void *in, size_t n, char *out)
{
    static const char hx[] = "0123456789abcdef";
    const unsigned char *p = in;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[p[i] >> 4];
        out[2 * i + 1] = hx[p[i] & 15];
    }
    out[2 * n] = '\0';
}

static int
hexval(unsigned char c)
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
        int hi = hexval((unsigned char)in[i]);
        int lo = hexval((unsigned char)in[i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        o[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}

/* Civil date of 'days' since 1970-01-01, proleptic Gregorian (H. Hinnant's
 * civil_from_days). */
static void
civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    unsigned doe = (unsigned)(days - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static char *
put2(char *p, unsigned v)
{
    p[0] = (char)('0' + v / 10);
    p[1] = (char)('0' + v % 10);
    return p + 2;
}

size_t
http_date_format(int64_t s, char *out)
{
    static const char wdays[] = "ThuFriSatSunMonTueWed"; /* 1970-01-01 was a Thursday */
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    int64_t days = s >= 0 ? s / 86400 : -((-s + 86399) / 86400);
    unsigned secs = (unsigned)(s - days * 86400);
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    if (y < 0)
        y = 0;
    if (y > 9999)
        y = 9999;
    unsigned wd = (unsigned)(((days % 7) + 7) % 7);
    char *p = out;
    memcpy(p, wdays + wd * 3, 3);
    p += 3;
    *p++ = ',';
    *p++ = ' ';
    p = put2(p, d);
    *p++ = ' ';
    memcpy(p, months + (m - 1) * 3, 3);
    p += 3;
    *p++ = ' ';
    p = put2(p, (unsigned)(y / 100));
    p = put2(p, (unsigned)(y % 100));
    *p++ = ' ';
    p = put2(p, secs / 3600);
    *p++ = ':';
    p = put2(p, secs / 60 % 60);
    *p++ = ':';
    p = put2(p, secs % 60);
    memcpy(p, " GMT", 5);
    return (size_t)(p + 4 - out);
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
