/*
 * test_key.c: unit tests of server/key.c. key_is_writable accepts UTF-8
 * without NUL and refuses the rest (stray, truncated, overlong, surrogate,
 * out-of-range sequences); xml_text_put keeps any byte string well-formed
 * XML 1.0 (checked with expat over every byte, every byte pair and random
 * strings), round-trips text XML can carry, and stays within
 * XML_TEXT_EXPANSION bytes per input byte.
 */
#include "server/key.h"
#include "tests/lib/test.h"

#include <expat.h>
#include <stdlib.h>

struct text {
    char buf[8192];
    size_t len;
};

static void XMLCALL
on_text(void *ctx, const XML_Char *s, int len)
{
    struct text *t = ctx;
    if (t->len + (size_t)len <= sizeof(t->buf)) {
        memcpy(t->buf + t->len, s, (size_t)len);
        t->len += (size_t)len;
    }
}

/* Escapes 's' inside <k>...</k>, parses it with expat and returns the
 * parsed text in '*out'; fails the test when the document is not
 * well-formed or the output overran its bound. */
static void
parse_escaped(struct slice s, struct text *out)
{
    size_t cap = 16 + s.len * XML_TEXT_EXPANSION;
    char *doc = malloc(cap + 1);
    memcpy(doc, "<k>", 3);
    char *end = xml_text_put(doc + 3, s);
    ASSERT((size_t)(end - (doc + 3)) <= s.len * XML_TEXT_EXPANSION);
    memcpy(end, "</k>", 4);
    end += 4;
    XML_Parser xp = XML_ParserCreate("UTF-8");
    out->len = 0;
    XML_SetUserData(xp, out);
    XML_SetCharacterDataHandler(xp, on_text);
    if (XML_Parse(xp, doc, (int)(end - doc), 1) != XML_STATUS_OK) {
        fprintf(stderr, "input:");
        for (size_t i = 0; i < s.len; i++)
            fprintf(stderr, " %02x", (unsigned char)s.ptr[i]);
        fprintf(stderr, "\n");
        TEST_FAIL("not well-formed: %s", XML_ErrorString(XML_GetErrorCode(xp)));
    }
    XML_ParserFree(xp);
    free(doc);
}

static void
assert_round_trip(const char *s)
{
    struct text t;
    parse_escaped(slice_from_cstr(s), &t);
    ASSERT_UEQ(t.len, strlen(s));
    ASSERT_MEM_EQ(t.buf, s, t.len);
}

static void
test_writable(void)
{
    ASSERT(key_is_writable(SLICE_LIT("plain/key.txt")));
    ASSERT(key_is_writable(SLICE_LIT("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80")));
    ASSERT(key_is_writable(SLICE_LIT("ctl\x01\x1f\x7f\ttab\r\n")));
    ASSERT(key_is_writable(SLICE_LIT("\xEF\xBF\xBF")));     /* U+FFFF is UTF-8 */
    ASSERT(key_is_writable(SLICE_LIT("\xF4\x8F\xBF\xBF"))); /* U+10FFFF */
    ASSERT(!key_is_writable((struct slice){"a\0b", 3}));
    ASSERT(!key_is_writable(SLICE_LIT("\xFF")));
    ASSERT(!key_is_writable(SLICE_LIT("a\x80")));            /* stray continuation */
    ASSERT(!key_is_writable(SLICE_LIT("\xC3")));             /* truncated */
    ASSERT(!key_is_writable(SLICE_LIT("\xE2\x82")));         /* truncated */
    ASSERT(!key_is_writable(SLICE_LIT("\xC0\xAF")));         /* overlong '/' */
    ASSERT(!key_is_writable(SLICE_LIT("\xE0\x80\xAF")));     /* overlong */
    ASSERT(!key_is_writable(SLICE_LIT("\xF0\x80\x80\xAF"))); /* overlong */
    ASSERT(!key_is_writable(SLICE_LIT("\xED\xA0\x80")));     /* surrogate */
    ASSERT(!key_is_writable(SLICE_LIT("\xF4\x90\x80\x80"))); /* > U+10FFFF */
    ASSERT(!key_is_writable(SLICE_LIT("\xF8\x88\x80\x80\x80")));
    ASSERT(!key_is_writable(SLICE_LIT("ok\xC3\xA9then\xC3(")));
    ASSERT_UEQ(key_utf8_len((const uint8_t *)"\xE2\x82\xAC", 3), 3);
    ASSERT_UEQ(key_utf8_len((const uint8_t *)"\xE2\x82\xAC", 2), 0);
}

static void
test_text(void)
{
    struct text t;
    assert_round_trip("a&b<c>d\"e'f");
    assert_round_trip("tab\there, cr\rlf\ncrlf\r\n");
    assert_round_trip("del\x7f c1 \xC2\x85 \xC2\x9F euro \xE2\x82\xAC \xF0\x9F\x98\x80");
    /* What XML cannot carry becomes U+FFFD: one per character, and one per
     * byte that is not UTF-8. */
    parse_escaped(SLICE_LIT("a\x01z"), &t);
    ASSERT_UEQ(t.len, 5);
    ASSERT_MEM_EQ(t.buf, "a\xEF\xBF\xBDz", 5);
    parse_escaped((struct slice){"\0", 1}, &t);
    ASSERT_MEM_EQ(t.buf, "\xEF\xBF\xBD", 3);
    parse_escaped(SLICE_LIT("x\xFFy"), &t);
    ASSERT_MEM_EQ(t.buf, "x\xEF\xBF\xBDy", 5);
    parse_escaped(SLICE_LIT("\xEF\xBF\xBE\xEF\xBF\xBF"), &t); /* U+FFFE U+FFFF */
    ASSERT_UEQ(t.len, 6);
    ASSERT_MEM_EQ(t.buf, "\xEF\xBF\xBD\xEF\xBF\xBD", 6);

    /* Every byte, every pair of bytes, and random strings parse. */
    char s[64];
    for (int a = 0; a < 256; a++) {
        s[0] = (char)a;
        parse_escaped((struct slice){s, 1}, &t);
        for (int b = 0; b < 256; b++) {
            s[1] = (char)b;
            parse_escaped((struct slice){s, 2}, &t);
        }
    }
    srand(42);
    for (int n = 0; n < 20000; n++) {
        size_t len = 1 + (size_t)rand() % sizeof(s);
        for (size_t i = 0; i < len; i++)
            s[i] = (char)(rand() % 4 == 0 ? 0x80 + rand() % 0x80 : rand() % 0x100);
        parse_escaped((struct slice){s, len}, &t);
    }
    /* The worst case stays within the bound. */
    char quotes[300];
    memset(quotes, '"', sizeof(quotes));
    parse_escaped((struct slice){quotes, sizeof(quotes)}, &t);
    ASSERT_UEQ(t.len, sizeof(quotes));
}

int
main(void)
{
    test_writable();
    test_text();
    return 0;
}
