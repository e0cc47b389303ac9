/*
 * test_tags.c: unit tests of server/tags.c and xml_parse_tagging: AWS's
 * limits counted in characters (128/256, multi-byte UTF-8 at the edges),
 * the character set, strict UTF-8 (overlong forms, surrogates, past
 * U+10FFFF, truncated sequences), duplicates, the x-amz-tagging header
 * form (escapes, '+', empty pairs, 11 tags, duplicates) and the stored
 * form (round trip, truncated bytes).
 */
#include "server/tags.h"
#include "server/xml_in.h"
#include "tests/lib/test.h"

#include <stdlib.h>

static struct arena *arena;

/* Validates one tag 'key'='value' (NUL-terminated). */
static enum tags_error
one(const char *key, const char *value)
{
    struct s3_tag t = {slice_from_cstr(key), slice_from_cstr(value)};
    return tags_validate(&t, 1, TAGS_OBJECT_MAX);
}

/* Returns 'n' copies of 'unit' (NUL-terminated, in the arena). */
static char *
repeat(const char *unit, size_t n)
{
    size_t ul = strlen(unit);
    char *s = arena_alloc(arena, ul * n + 1);
    for (size_t i = 0; i < n; i++)
        memcpy(s + i * ul, unit, ul);
    s[ul * n] = '\0';
    return s;
}

static void
test_validate(void)
{
    ASSERT_EQ(one("project", "llm"), TAGS_OK);
    ASSERT_EQ(one("k", ""), TAGS_OK);
    ASSERT_EQ(one("a+b-c=d._:/@ Z9", "same +-=._:/@"), TAGS_OK);
    ASSERT_EQ(one("données", "été €"), TAGS_OK);
    ASSERT_EQ(one("\xf0\x9f\x98\x80", "4-byte"), TAGS_OK);
    /* Limits count characters: 128 two-byte characters pass, 129 do not. */
    ASSERT_EQ(one(repeat("\xc3\xa9", 128), repeat("\xe2\x82\xac", 256)), TAGS_OK);
    ASSERT_EQ(one(repeat("k", 129), "v"), TAGS_KEY_TOO_LONG);
    ASSERT_EQ(one(repeat("\xc3\xa9", 129), "v"), TAGS_KEY_TOO_LONG);
    ASSERT_EQ(one("k", repeat("v", 257)), TAGS_VALUE_TOO_LONG);
    ASSERT_EQ(one("k", repeat("\xe2\x82\xac", 257)), TAGS_VALUE_TOO_LONG);
    /* Empty keys, characters outside the set, control characters. */
    ASSERT_EQ(one("", "v"), TAGS_KEY_INVALID);
    ASSERT_EQ(one("a,b", "v"), TAGS_KEY_INVALID);
    ASSERT_EQ(one("k", "a#b"), TAGS_VALUE_INVALID);
    ASSERT_EQ(one("k", "tab\t"), TAGS_VALUE_INVALID);
    ASSERT_EQ(one("k", "\xc2\x85"), TAGS_VALUE_INVALID); /* U+0085, a C1 control */
    /* Strict UTF-8. */
    ASSERT_EQ(one("\xc0\xaf", "v"), TAGS_KEY_INVALID);                 /* overlong '/' */
    ASSERT_EQ(one("\xe0\x80\xaf", "v"), TAGS_KEY_INVALID);             /* overlong */
    ASSERT_EQ(one("\xed\xa0\x80", "v"), TAGS_KEY_INVALID);             /* surrogate */
    ASSERT_EQ(one("\xf4\x90\x80\x80", "v"), TAGS_KEY_INVALID);         /* past U+10FFFF */
    ASSERT_EQ(one("k", "\xe2\x82"), TAGS_VALUE_INVALID);               /* truncated */
    ASSERT_EQ(one("k", "\x80"), TAGS_VALUE_INVALID);                   /* lone continuation */
    ASSERT_EQ(one("\xf0\x9f\x98\x80\xf0\x9f", "v"), TAGS_KEY_INVALID); /* cut 4-byte */

    struct s3_tag tags[11];
    for (int i = 0; i < 11; i++)
        tags[i] = (struct s3_tag){slice_from_cstr(arena_sprintf(arena, "k%d", i)), SLICE_LIT("v")};
    ASSERT_EQ(tags_validate(tags, 10, TAGS_OBJECT_MAX), TAGS_OK);
    ASSERT_EQ(tags_validate(tags, 11, TAGS_OBJECT_MAX), TAGS_TOO_MANY);
    tags[9].key = SLICE_LIT("k0");
    ASSERT_EQ(tags_validate(tags, 10, TAGS_OBJECT_MAX), TAGS_DUPLICATE_KEY);
    ASSERT_STR_EQ(tags_error_message(TAGS_TOO_MANY), "Object tags cannot be greater than 10");
    ASSERT_STR_EQ(tags_error_message(TAGS_KEY_TOO_LONG),
                  "The TagKey you have provided is too long, max 128");
    ASSERT_STR_EQ(tags_error_message(TAGS_DUPLICATE_KEY),
                  "Cannot provide multiple Tags with the same key");
}

/* Parses header 'h' and checks the result is 'want' ("k=v" per tag,
 * joined with '|'), or the error 'want_err'. */
static void
header_case(const char *h, enum tags_error want_err, const char *want)
{
    struct s3_tag *tags;
    size_t n;
    enum tags_error e = tags_parse_header(slice_from_cstr(h), arena, &tags, &n);
    if (e != want_err)
        TEST_FAIL("header \"%s\": error %d, want %d", h, (int)e, (int)want_err);
    if (e != TAGS_OK)
        return;
    struct buf b;
    buf_init(&b);
    for (size_t i = 0; i < n; i++) {
        if (i)
            buf_append_str(&b, "|");
        buf_append(&b, tags[i].key.ptr, tags[i].key.len);
        buf_append_str(&b, "=");
        buf_append(&b, tags[i].value.ptr, tags[i].value.len);
    }
    buf_append(&b, "", 1);
    if (strcmp(b.ptr, want) != 0)
        TEST_FAIL("header \"%s\": got \"%s\", want \"%s\"", h, b.ptr, want);
    buf_cleanup(&b);
}

static void
test_header(void)
{
    header_case("", TAGS_OK, "");
    header_case("k1=v1&k2=v%202", TAGS_OK, "k1=v1|k2=v 2");
    header_case("plus=a+b&sym=%2F%40&e=", TAGS_OK, "plus=a b|sym=/@|e=");
    header_case("&a&&b=2&", TAGS_OK, "a=|b=2");
    header_case("k=a=b", TAGS_OK, "k=a=b");
    header_case("%C3%A9t%C3%A9=%E2%82%AC", TAGS_OK, "été=€");
    header_case("a=1&a=2", TAGS_BAD_HEADER, NULL);
    header_case("a=%zz", TAGS_BAD_HEADER, NULL);
    header_case("a=%4", TAGS_BAD_HEADER, NULL);
    header_case("a=%ff", TAGS_BAD_HEADER, NULL);
    header_case("a=%ED%A0%80", TAGS_BAD_HEADER, NULL);
    header_case("=v", TAGS_KEY_INVALID, NULL);
    header_case("k=a%2Cb", TAGS_VALUE_INVALID, NULL);
    header_case("k0=&k1=&k2=&k3=&k4=&k5=&k6=&k7=&k8=&k9=", TAGS_OK,
                "k0=|k1=|k2=|k3=|k4=|k5=|k6=|k7=|k8=|k9=");
    header_case("k0=&k1=&k2=&k3=&k4=&k5=&k6=&k7=&k8=&k9=&k10=", TAGS_TOO_MANY, NULL);
    header_case(arena_sprintf(arena, "k=%s", repeat("v", 257)), TAGS_VALUE_TOO_LONG, NULL);
}

static void
test_stored_form(void)
{
    struct s3_tag in[3] = {
        {SLICE_LIT("a"), SLICE_LIT("1")},
        {SLICE_LIT("empty"), SLICE_LIT("")},
        {SLICE_LIT("\xc3\xa9t\xc3\xa9"), SLICE_LIT("\xe2\x82\xac")},
    };
    const uint8_t *p;
    size_t len;
    struct s3_tag *out;
    size_t n;
    tags_encode(arena, in, 3, &p, &len);
    ASSERT_UEQ(len, 4 * 3 + 1 + 1 + 5 + 0 + 5 + 3);
    ASSERT(tags_decode(p, len, arena, &out, &n));
    ASSERT_UEQ(n, 3);
    for (size_t i = 0; i < 3; i++) {
        ASSERT(slice_eq(out[i].key, in[i].key));
        ASSERT(slice_eq(out[i].value, in[i].value));
    }
    /* Every truncation is refused, except at a tag boundary. */
    for (size_t cut = 0; cut < len; cut++) {
        bool ok = tags_decode(p, cut, arena, &out, &n);
        ASSERT_EQ(ok, cut == 0 || cut == 6 || cut == 15);
    }
    tags_encode(arena, NULL, 0, &p, &len);
    ASSERT_UEQ(len, 0);
    ASSERT(tags_decode(p, 0, arena, &out, &n));
    ASSERT_UEQ(n, 0);
}

static enum xml_in_status
parse(const char *body, struct xml_tagging_request *out)
{
    memset(out, 0, sizeof(*out));
    return xml_parse_tagging(body, strlen(body), TAGS_OBJECT_MAX, arena, out);
}

static void
test_xml(void)
{
    struct xml_tagging_request req;
    ASSERT_EQ(parse("<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet>"
                    "<Tag><Key> k </Key><Value>a&amp;b</Value></Tag>"
                    "<Tag><Value></Value><Key>e</Key><Other>x</Other></Tag></TagSet></Tagging>",
                    &req),
              XML_IN_OK);
    ASSERT_UEQ(req.n_tags, 2);
    ASSERT(slice_eq(req.tags[0].key, SLICE_LIT(" k ")));
    ASSERT(slice_eq(req.tags[0].value, SLICE_LIT("a&b")));
    ASSERT(slice_eq(req.tags[1].key, SLICE_LIT("e")));
    ASSERT_UEQ(req.tags[1].value.len, 0);
    ASSERT_EQ(parse("<Tagging><TagSet/></Tagging>", &req), XML_IN_OK);
    ASSERT_UEQ(req.n_tags, 0);
    ASSERT_EQ(parse("<Tagging/>", &req), XML_IN_MALFORMED);
    ASSERT_EQ(parse("<Tagging><TagSet/><TagSet/></Tagging>", &req), XML_IN_MALFORMED);
    ASSERT_EQ(parse("<Tagging><TagSet><Tag><Key>k</Key></Tag></TagSet></Tagging>", &req),
              XML_IN_MALFORMED);
    ASSERT_EQ(parse("<Tagging><TagSet><Tag><Value>v</Value></Tag></TagSet></Tagging>", &req),
              XML_IN_MALFORMED);
    ASSERT_EQ(parse("<Tagging><TagSet><Tag><Key>k</Key><Key>j</Key><Value>v</Value></Tag>"
                    "</TagSet></Tagging>",
                    &req),
              XML_IN_MALFORMED);
    ASSERT_EQ(parse("<Tagging><TagSet><Tag><Key>\xff</Key><Value>v</Value></Tag></TagSet>"
                    "</Tagging>",
                    &req),
              XML_IN_MALFORMED);
    ASSERT_EQ(parse("<Tags><TagSet/></Tags>", &req), XML_IN_MALFORMED);
    char *eleven = arena_sprintf(arena, "<Tagging><TagSet>%s</TagSet></Tagging>",
                                 repeat("<Tag><Key>k</Key><Value>v</Value></Tag>", 11));
    ASSERT_EQ(parse(eleven, &req), XML_IN_TOO_MANY);
    char *ten = arena_sprintf(arena, "<Tagging><TagSet>%s</TagSet></Tagging>",
                              repeat("<Tag><Key>k</Key><Value>v</Value></Tag>", 10));
    ASSERT_EQ(parse(ten, &req), XML_IN_OK);
    ASSERT_UEQ(req.n_tags, 10);
}

int
main(void)
{
    arena = arena_create(1 << 16);
    test_validate();
    test_header();
    test_stored_form();
    test_xml();
    arena_destroy(arena);
    return 0;
}
