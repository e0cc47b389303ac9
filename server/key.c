/*
 * key.c: object keys as text (key.h). S3 keys are UTF-8: a key that is
 * not well-formed UTF-8 or holds NUL is refused when written, so no new
 * one can make a listing unparseable; keys stored before that rule stay
 * readable and deletable. Listings must stay well-formed XML whatever the
 * stored bytes, so xml_text_put replaces what XML 1.0 cannot carry.
 * Invariant: xml_text_put never writes more than XML_TEXT_EXPANSION bytes
 * per input byte, and its output is always valid XML 1.0 text.
 */
#include "server/key.h"

/* The ASCII bytes xml_text_put rewrites (bytes >= 0x80 are checked as
 * UTF-8 instead). */
static const bool text_is_special[128] = {
    [0x00] = 1, [0x01] = 1, [0x02] = 1, [0x03] = 1, [0x04] = 1, [0x05] = 1, [0x06] = 1, [0x07] = 1,
    [0x08] = 1, [0x0A] = 1, [0x0B] = 1, [0x0C] = 1, [0x0D] = 1, [0x0E] = 1, [0x0F] = 1, [0x10] = 1,
    [0x11] = 1, [0x12] = 1, [0x13] = 1, [0x14] = 1, [0x15] = 1, [0x16] = 1, [0x17] = 1, [0x18] = 1,
    [0x19] = 1, [0x1A] = 1, [0x1B] = 1, [0x1C] = 1, [0x1D] = 1, [0x1E] = 1, [0x1F] = 1, ['&'] = 1,
    ['<'] = 1,  ['>'] = 1,  ['"'] = 1,  ['\''] = 1,
};

size_t
key_utf8_len(const uint8_t *p, size_t len)
{
    if (len == 0)
        return 0;
    uint8_t c = p[0];
    if (c < 0x80)
        return 1;
    size_t n;
    uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong below U+0800 */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong below U+10000 */
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0; /* a continuation byte, C0/C1 (overlong) or F5..FF */
    }
    if (len < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

bool
key_is_writable(struct slice key)
{
    const uint8_t *p = (const uint8_t *)key.ptr;
    size_t i = 0;
    while (i < key.len) {
        if (p[i] == 0)
            return false;
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        size_t n = key_utf8_len(p + i, key.len - i);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

#define PUT_LIT(p, s) (memcpy((p), (s), sizeof(s) - 1), (p) + sizeof(s) - 1)

char *
xml_text_put(char *p, struct slice s)
{
    const uint8_t *in = (const uint8_t *)s.ptr;
    size_t start = 0, i = 0;
    while (i < s.len) {
        uint8_t c = in[i];
        if (c < 0x80 && !text_is_special[c]) {
            i++;
            continue;
        }
        size_t n = 1;
        if (c >= 0x80) {
            n = key_utf8_len(in + i, s.len - i);
            /* U+FFFE and U+FFFF are well-formed UTF-8 but not XML. */
            bool is_xml = n > 0 && !(n == 3 && c == 0xEF && in[i + 1] == 0xBF && in[i + 2] >= 0xBE);
            if (is_xml) {
                i += n;
                continue;
            }
            if (n == 0)
                n = 1; /* not UTF-8: one U+FFFD per byte */
        }
        memcpy(p, s.ptr + start, i - start);
        p += i - start;
        switch (c) {
        case '&':
            p = PUT_LIT(p, "&amp;");
            break;
        case '<':
            p = PUT_LIT(p, "&lt;");
            break;
        case '>':
            p = PUT_LIT(p, "&gt;");
            break;
        case '"':
            p = PUT_LIT(p, "&quot;");
            break;
        case '\'':
            p = PUT_LIT(p, "&apos;");
            break;
        case '\n':
            p = PUT_LIT(p, "&#xA;");
            break;
        case '\r':
            p = PUT_LIT(p, "&#xD;");
            break;
        default: /* U+FFFD REPLACEMENT CHARACTER */
            p = PUT_LIT(p, "\xEF\xBF\xBD");
        }
        i += n;
        start = i;
    }
    if (s.len > start) /* s.ptr may be NULL for an empty slice */
        memcpy(p, s.ptr + start, s.len - start);
    return p + (s.len - start);
}
