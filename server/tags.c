/*
 * tags.c: object tags: validation with AWS's limits and messages, the
 * x-amz-tagging header form, and the binary form stored in the metadata
 * blob (tags.h).
 *
 * Invariants: lengths are counted in Unicode characters of strictly valid
 * UTF-8 (no overlong forms, surrogates or code points past U+10FFFF);
 * every parser bounds its work by its input and allocates only from the
 * caller's arena; a header can never yield more than TAGS_OBJECT_MAX
 * tags, since counting stops the parse before anything is stored.
 */
#include "server/tags.h"

#include <string.h>

const char *
tags_error_message(enum tags_error e)
{
    switch (e) {
    case TAGS_OK:
        return "";
    case TAGS_TOO_MANY:
        return "Object tags cannot be greater than 10";
    case TAGS_KEY_TOO_LONG:
        return "The TagKey you have provided is too long, max 128";
    case TAGS_VALUE_TOO_LONG:
        return "The TagValue you have provided is too long, max 256";
    case TAGS_KEY_INVALID:
        return "The TagKey you have provided is invalid";
    case TAGS_VALUE_INVALID:
        return "The TagValue you have provided is invalid";
    case TAGS_DUPLICATE_KEY:
        return "Cannot provide multiple Tags with the same key";
    case TAGS_BAD_HEADER:
        return "The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query "
               "parameters without tag name duplicates.";
    }
    return "";
}

/* Decodes the UTF-8 character at 'p' (of 'len' > 0 bytes). Returns its
 * byte length and sets '*cp', or 0 when the bytes are not valid UTF-8. */
static size_t
utf8_next(const unsigned char *p, size_t len, uint32_t *cp)
{
    size_t n;
    uint32_t c = p[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        c &= 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        c &= 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        c &= 0x07;
    } else {
        return 0;
    }
    if (len < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (p[i] & 0x3f);
    }
    if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
        (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return n;
}

/* True for a character a tag may hold: letters, digits, spaces and
 * "+-=._:/@"; any character from U+00A0 up stands for \p{L}\p{Z}\p{N}. */
static bool
tag_char_is_allowed(uint32_t c)
{
    if (c >= 0xa0)
        return true;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c != 0 && strchr(" +-=._:/@", (int)c) != NULL;
}

/* Counts the characters of 's' into '*n_chars'. Returns false on invalid
 * UTF-8 or a character tags may not hold. */
static bool
tag_text_check(struct slice s, size_t *n_chars)
{
    const unsigned char *p = (const unsigned char *)s.ptr;
    size_t i = 0, n = 0;
    while (i < s.len) {
        uint32_t c;
        size_t l = utf8_next(p + i, s.len - i, &c);
        if (l == 0 || !tag_char_is_allowed(c))
            return false;
        i += l;
        n++;
    }
    *n_chars = n;
    return true;
}

enum tags_error
tags_validate(const struct s3_tag *tags, size_t n, size_t max)
{
    size_t chars;
    if (n > max)
        return TAGS_TOO_MANY;
    for (size_t i = 0; i < n; i++) {
        if (!tag_text_check(tags[i].key, &chars) || chars == 0)
            return TAGS_KEY_INVALID;
        if (chars > TAGS_KEY_MAX_CHARS)
            return TAGS_KEY_TOO_LONG;
        if (!tag_text_check(tags[i].value, &chars))
            return TAGS_VALUE_INVALID;
        if (chars > TAGS_VALUE_MAX_CHARS)
            return TAGS_VALUE_TOO_LONG;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (slice_eq(tags[i].key, tags[j].key))
                return TAGS_DUPLICATE_KEY;
    return TAGS_OK;
}

/* URL-query-decodes 's' into 'a' ('+' is a space, "%2B" a plus: the '+'
 * are turned to spaces before the %XX escapes are decoded). Returns false
 * on a bad %XX escape. */
static bool
query_decode(struct arena *a, struct slice s, struct slice *out)
{
    char *o = arena_alloc(a, s.len + 1);
    for (size_t i = 0; i < s.len; i++)
        o[i] = s.ptr[i] == '+' ? ' ' : s.ptr[i];
    long n = uri_decode(o, s.len, o);
    if (n < 0)
        return false;
    o[n] = '\0';
    *out = (struct slice){o, (size_t)n};
    return true;
}

enum tags_error
tags_parse_header(struct slice header, struct arena *a, struct s3_tag **tags, size_t *n)
{
    struct s3_tag *t = arena_calloc(a, TAGS_OBJECT_MAX, sizeof(*t));
    size_t count = 0, i = 0;
    *tags = NULL;
    *n = 0;
    while (i < header.len) {
        const char *amp = memchr(header.ptr + i, '&', header.len - i);
        size_t end = amp ? (size_t)(amp - header.ptr) : header.len;
        struct slice pair = {header.ptr + i, end - i};
        i = end + 1;
        if (pair.len == 0)
            continue;
        if (count == TAGS_OBJECT_MAX)
            return TAGS_TOO_MANY;
        const char *eq = memchr(pair.ptr, '=', pair.len);
        struct slice k = pair, v = SLICE_NULL;
        if (eq) {
            k.len = (size_t)(eq - pair.ptr);
            v = (struct slice){eq + 1, pair.len - k.len - 1};
        }
        if (!query_decode(a, k, &t[count].key) || !query_decode(a, v, &t[count].value))
            return TAGS_BAD_HEADER;
        /* Bad UTF-8 is a bad header; a bad character is a bad tag. */
        for (int side = 0; side < 2; side++) {
            struct slice s = side ? t[count].value : t[count].key;
            size_t o = 0;
            uint32_t c;
            while (o < s.len) {
                size_t l = utf8_next((const unsigned char *)s.ptr + o, s.len - o, &c);
                if (l == 0)
                    return TAGS_BAD_HEADER;
                o += l;
            }
        }
        for (size_t j = 0; j < count; j++)
            if (slice_eq(t[j].key, t[count].key))
                return TAGS_BAD_HEADER;
        count++;
    }
    enum tags_error e = tags_validate(t, count, TAGS_OBJECT_MAX);
    if (e != TAGS_OK)
        return e;
    *tags = count ? t : NULL;
    *n = count;
    return TAGS_OK;
}

void
tags_encode(struct arena *a, const struct s3_tag *tags, size_t n, const uint8_t **out,
            size_t *out_len)
{
    size_t len = 0, o = 0;
    for (size_t i = 0; i < n; i++)
        len += 4 + tags[i].key.len + tags[i].value.len;
    uint8_t *p = arena_alloc(a, len + 1);
    for (size_t i = 0; i < n; i++) {
        const struct slice *parts[2] = {&tags[i].key, &tags[i].value};
        for (int k = 0; k < 2; k++) {
            p[o++] = (uint8_t)parts[k]->len;
            p[o++] = (uint8_t)(parts[k]->len >> 8);
            if (parts[k]->len)
                memcpy(p + o, parts[k]->ptr, parts[k]->len);
            o += parts[k]->len;
        }
    }
    *out = p;
    *out_len = len;
}

/* Reads one u16-prefixed field at '*o'. Returns false past the end. */
static bool
field_next(const uint8_t *p, size_t len, size_t *o, struct slice *out)
{
    if (len - *o < 2)
        return false;
    size_t l = (size_t)p[*o] | (size_t)p[*o + 1] << 8;
    *o += 2;
    if (len - *o < l)
        return false;
    *out = (struct slice){(const char *)p + *o, l};
    *o += l;
    return true;
}

bool
tags_decode(const uint8_t *p, size_t len, struct arena *a, struct s3_tag **tags, size_t *n)
{
    struct slice k, v;
    size_t count = 0, o = 0;
    *tags = NULL;
    *n = 0;
    while (o < len) {
        if (!field_next(p, len, &o, &k) || !field_next(p, len, &o, &v))
            return false;
        count++;
    }
    if (count == 0)
        return true;
    struct s3_tag *t = arena_calloc(a, count, sizeof(*t));
    o = 0;
    for (size_t i = 0; i < count; i++) {
        field_next(p, len, &o, &t[i].key);
        field_next(p, len, &o, &t[i].value);
    }
    *tags = t;
    *n = count;
    return true;
}
