/*
 * test_xml_in.c: unit tests of server/xml_in.c, the expat parsers of the
 * DeleteObjects, CompleteMultipartUpload and CreateBucket bodies: good
 * documents, namespaces, escapes, limits (1001 keys, 10001 parts), entity
 * attacks, truncated bodies and wrong roots.
 */
#include "server/xml_in.h"
#include "tests/lib/test.h"

#include <stdlib.h>

#define NS " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""

static struct arena *arena;

static void
assert_slice(struct slice s, const char *want)
{
    size_t n = strlen(want);
    if (s.len != n || (n && memcmp(s.ptr, want, n) != 0))
        TEST_FAIL("slice \"%.*s\" (%zu bytes) != \"%s\"", (int)s.len, s.ptr ? s.ptr : "", s.len,
                  want);
    /* documented: arena copies are NUL-terminated */
    if (s.ptr && s.ptr[s.len] != '\0')
        TEST_FAIL("slice \"%s\" is not NUL-terminated", want);
}

static enum xml_in_status
parse_delete(const char *body, struct xml_delete_request *out)
{
    memset(out, 0, sizeof(*out));
    return xml_parse_delete(body, strlen(body), arena, out);
}

static enum xml_in_status
parse_complete(const char *body, struct xml_complete_request *out)
{
    memset(out, 0, sizeof(*out));
    return xml_parse_complete(body, strlen(body), arena, out);
}

static enum xml_in_status
parse_create(const char *body, struct slice *loc)
{
    return xml_parse_create_bucket(body, strlen(body), arena, loc);
}

/* ------------------------------------------------------------------ */

static void
test_delete_ok(void)
{
    struct xml_delete_request d;

    ASSERT_EQ(parse_delete("<Delete><Object><Key>a</Key></Object></Delete>", &d), XML_IN_OK);
    ASSERT_EQ(d.is_quiet, false);
    ASSERT_EQ(d.n_objects, 1);
    assert_slice(d.objects[0].key, "a");
    ASSERT(d.objects[0].version_id.ptr == NULL && d.objects[0].version_id.len == 0);

    ASSERT_EQ(parse_delete("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                           "<Delete" NS ">\n  <Quiet>true</Quiet>\n"
                           "  <Object><Key>photos/2006/x.jpg</Key><VersionId>v1</VersionId>"
                           "</Object>\n"
                           "  <Object>\n    <VersionId> null </VersionId>\n    <Key>b</Key>\n"
                           "  </Object>\n</Delete>\n",
                           &d),
              XML_IN_OK);
    ASSERT_EQ(d.is_quiet, true);
    ASSERT_EQ(d.n_objects, 2);
    assert_slice(d.objects[0].key, "photos/2006/x.jpg");
    assert_slice(d.objects[0].version_id, "v1");
    assert_slice(d.objects[1].key, "b");
    assert_slice(d.objects[1].version_id, "null");
    ASSERT(d.objects[0].etag.ptr == NULL && d.objects[0].size.ptr == NULL);

    /* The 2025 conditions, trimmed. */
    ASSERT_EQ(parse_delete("<Delete><Object><Key>c</Key><ETag> \"e\" </ETag>"
                           "<LastModifiedTime>2025-01-02T03:04:05.000Z</LastModifiedTime>"
                           "<Size>12</Size></Object></Delete>",
                           &d),
              XML_IN_OK);
    assert_slice(d.objects[0].etag, "\"e\"");
    assert_slice(d.objects[0].last_modified, "2025-01-02T03:04:05.000Z");
    assert_slice(d.objects[0].size, "12");

    /* Quiet accepts any case and whitespace; false is false */
    ASSERT_EQ(
        parse_delete("<Delete><Quiet> TRUE\n</Quiet><Object><Key>a</Key></Object></Delete>", &d),
        XML_IN_OK);
    ASSERT_EQ(d.is_quiet, true);
    ASSERT_EQ(
        parse_delete("<Delete><Object><Key>a</Key></Object><Quiet>false</Quiet></Delete>", &d),
        XML_IN_OK);
    ASSERT_EQ(d.is_quiet, false);
}

static void
test_delete_keys(void)
{
    struct xml_delete_request d;

    /* escapes, a newline by character reference, CDATA, UTF-8, spaces kept */
    ASSERT_EQ(parse_delete("<Delete><Object><Key>a&amp;b&lt;c&gt;d&quot;e&apos;f</Key></Object>"
                           "<Object><Key>line1&#x0A;line2&#10;&#x0D;</Key></Object>"
                           "<Object><Key><![CDATA[<not a tag> & ]]>x</Key></Object>"
                           "<Object><Key>caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac/&#x1F600;</Key>"
                           "</Object>"
                           "<Object><Key>  padded  </Key></Object>"
                           "<Object><Key>a<!-- comment -->b</Key></Object>"
                           "</Delete>",
                           &d),
              XML_IN_OK);
    ASSERT_EQ(d.n_objects, 6);
    assert_slice(d.objects[0].key, "a&b<c>d\"e'f");
    assert_slice(d.objects[1].key, "line1\nline2\n\r");
    assert_slice(d.objects[2].key, "<not a tag> & x");
    assert_slice(d.objects[3].key, "caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac/\xf0\x9f\x98\x80");
    assert_slice(d.objects[4].key, "  padded  ");
    assert_slice(d.objects[5].key, "ab");

    /* keys up to XML_IN_TEXT_MAX bytes; longer is refused */
    size_t n = XML_IN_TEXT_MAX;
    char *body = malloc(n + 100);
    ASSERT(body);
    for (int extra = 0; extra <= 1; extra++) {
        int len = sprintf(body, "<Delete><Object><Key>");
        memset(body + len, 'k', n + (size_t)extra);
        strcpy(body + len + n + (size_t)extra, "</Key></Object></Delete>");
        ASSERT_EQ(parse_delete(body, &d), extra ? XML_IN_MALFORMED : XML_IN_OK);
        if (!extra)
            ASSERT_EQ(d.objects[0].key.len, n);
    }
    free(body);
}

static void
test_delete_namespaces(void)
{
    struct xml_delete_request d;

    ASSERT_EQ(parse_delete("<s3:Delete xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                           "<s3:Object><s3:Key>k</s3:Key></s3:Object></s3:Delete>",
                           &d),
              XML_IN_OK);
    assert_slice(d.objects[0].key, "k");
    /* a different or missing namespace URI is not checked */
    ASSERT_EQ(
        parse_delete("<Delete xmlns=\"urn:other\"><Object><Key>k</Key></Object></Delete>", &d),
        XML_IN_OK);
    /* mixed prefixes on the same local names */
    ASSERT_EQ(parse_delete("<a:Delete xmlns:a=\"x\" xmlns:b=\"x\"><b:Object><Key>k</Key>"
                           "</b:Object></a:Delete>",
                           &d),
              XML_IN_OK);
    ASSERT_EQ(d.n_objects, 1);
}

static void
test_delete_unknown(void)
{
    struct xml_delete_request d;

    /* unknown elements (and their subtrees, even ones named like ours) are skipped */
    ASSERT_EQ(parse_delete("<Delete><Extra a=\"1\"><Object><Key>hidden</Key></Object></Extra>"
                           "<Object><Key>k</Key><Owner>x</Owner><StorageClass>t"
                           "</StorageClass><Extra><Key>deep</Key></Extra></Object>"
                           "<Object><Key>k2</Key></Object>"
                           "</Delete>",
                           &d),
              XML_IN_OK);
    ASSERT_EQ(d.n_objects, 2);
    assert_slice(d.objects[0].key, "k");
    assert_slice(d.objects[1].key, "k2");
    /* a Key directly under Delete is an unknown element there */
    ASSERT_EQ(parse_delete("<Delete><Key>x</Key><Object><Key>k</Key></Object></Delete>", &d),
              XML_IN_OK);
    ASSERT_EQ(d.n_objects, 1);
    /* stray text and processing instructions between elements */
    ASSERT_EQ(parse_delete("<Delete>junk<?pi x?><Object>more<Key>k</Key></Object></Delete>", &d),
              XML_IN_OK);
}

static void
test_delete_malformed(void)
{
    static const char *const bad[] = {
        "",
        "   ",
        "not xml",
        "<Delete>",
        "<Delete></Delete>",
        "<Delete/>",
        "<Delete><Quiet>true</Quiet></Delete>",
        "<Delete><Object></Object></Delete>",
        "<Delete><Object><VersionId>v</VersionId></Object></Delete>",
        "<Delete><Object><Key></Key></Object></Delete>",
        "<Delete><Object><Key/></Object></Delete>",
        "<Delete><Object><Key>a</Key><Key>b</Key></Object></Delete>",
        "<Delete><Object><Key>a</Key><VersionId>1</VersionId><VersionId>2</VersionId></Object>"
        "</Delete>",
        "<Delete><Quiet>yes</Quiet><Object><Key>a</Key></Object></Delete>",
        "<Delete><Quiet></Quiet><Object><Key>a</Key></Object></Delete>",
        "<Delete><Quiet>true</Quiet><Quiet>true</Quiet><Object><Key>a</Key></Object></Delete>",
        "<Delete><Object><Key>a<b/></Key></Object></Delete>",
        "<Delete><Object><Key>a<Key>b</Key></Key></Object></Delete>",
        /* wrong root */
        "<Remove><Object><Key>a</Key></Object></Remove>",
        "<delete><Object><Key>a</Key></Object></delete>",
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part>"
        "</CompleteMultipartUpload>",
        "<Object><Key>a</Key></Object>",
        /* truncated */
        "<Delete><Object><Key>a</Key></Object>",
        "<Delete><Object><Key>a</Key></Object></Del",
        "<Delete><Object><Key>a</Key>",
        "<Delete><Object><Key>a",
        "<?xml version=\"1.0\"?>",
        /* not well-formed */
        "<Delete><Object><Key>a</Object></Key></Delete>",
        "<Delete><Object><Key>a&b</Key></Object></Delete>",
        "<Delete><Object><Key>&undefined;</Key></Object></Delete>",
        "<Delete><Object><Key>&#0;</Key></Object></Delete>",
        "<Delete><Object><Key>a</Key></Object></Delete><Delete/>",
        "<Delete><Object><Key>a</Key></Object></Delete>junk",
        "<Delete a=\"1\" a=\"2\"><Object><Key>a</Key></Object></Delete>",
        "<Delete><Object><Key>\xff\xfe</Key></Object></Delete>",
        "<?xml version=\"1.0\" encoding=\"x-made-up\"?><Delete><Object><Key>a</Key></Object>"
        "</Delete>",
    };
    struct xml_delete_request d;

    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        enum xml_in_status st = parse_delete(bad[i], &d);
        if (st != XML_IN_MALFORMED)
            TEST_FAIL("bad[%zu] \"%s\": status %d, want MALFORMED", i, bad[i], (int)st);
    }
    /* a NUL byte inside the body */
    static const char nul[] = "<Delete><Object><Key>a\0b</Key></Object></Delete>";
    ASSERT_EQ(xml_parse_delete(nul, sizeof(nul) - 1, arena, &d), XML_IN_MALFORMED);
    /* a body not NUL-terminated: only 'len' bytes count */
    static const char cut[] = "<Delete><Object><Key>a</Key></Object></Delete>trailing";
    ASSERT_EQ(xml_parse_delete(cut, sizeof(cut) - 1 - 8, arena, &d), XML_IN_OK);
    ASSERT_EQ(xml_parse_delete(cut, sizeof(cut) - 1 - 9, arena, &d), XML_IN_MALFORMED);
}

/* Builds a DeleteObjects body with 'n' objects; caller frees. */
static char *
make_delete(size_t n)
{
    struct buf b;
    buf_init(&b);
    buf_append_str(&b, "<Delete" NS "><Quiet>true</Quiet>");
    for (size_t i = 0; i < n; i++)
        buf_printf(&b, "<Object><Key>key-%zu</Key></Object>", i);
    buf_append_str(&b, "</Delete>");
    buf_append(&b, "", 1);
    return b.ptr;
}

static void
test_delete_limits(void)
{
    struct xml_delete_request d;
    char *body;

    body = make_delete(1000);
    ASSERT_EQ(parse_delete(body, &d), XML_IN_OK);
    ASSERT_EQ(d.n_objects, 1000);
    assert_slice(d.objects[0].key, "key-0");
    assert_slice(d.objects[999].key, "key-999");
    free(body);

    body = make_delete(1001);
    ASSERT_EQ(parse_delete(body, &d), XML_IN_TOO_MANY);
    free(body);

    body = make_delete(50000);
    ASSERT_EQ(parse_delete(body, &d), XML_IN_TOO_MANY);
    free(body);
}

/* ------------------------------------------------------------------ */

static void
test_entities(void)
{
    static const char *const attacks[] = {
        /* billion laughs */
        "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n <!ENTITY lol \"lol\">\n"
        " <!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n"
        " <!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">\n"
        " <!ENTITY lol4 \"&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;\">\n"
        " <!ENTITY lol5 \"&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;\">\n"
        " <!ENTITY lol6 \"&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;\">\n"
        " <!ENTITY lol7 \"&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;\">\n"
        " <!ENTITY lol8 \"&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;\">\n"
        " <!ENTITY lol9 \"&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;\">\n"
        "]>\n<Delete><Object><Key>&lol9;</Key></Object></Delete>",
        /* external entity (XXE) */
        "<?xml version=\"1.0\"?><!DOCTYPE d [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>"
        "<Delete><Object><Key>&xxe;</Key></Object></Delete>",
        /* parameter entity */
        "<!DOCTYPE d [<!ENTITY % p SYSTEM \"http://example.com/x.dtd\"> %p;]>"
        "<Delete><Object><Key>a</Key></Object></Delete>",
        /* a bare DOCTYPE, external DTD, and an empty internal subset */
        "<!DOCTYPE Delete><Delete><Object><Key>a</Key></Object></Delete>",
        "<!DOCTYPE Delete SYSTEM \"http://example.com/d.dtd\">"
        "<Delete><Object><Key>a</Key></Object></Delete>",
        "<!DOCTYPE Delete []><Delete><Object><Key>a</Key></Object></Delete>",
        /* an entity used without a declaration */
        "<Delete><Object><Key>&lol;</Key></Object></Delete>",
    };
    struct xml_delete_request d;
    struct xml_complete_request c;
    struct slice loc;

    for (size_t i = 0; i < ARRAY_LEN(attacks); i++) {
        if (parse_delete(attacks[i], &d) != XML_IN_MALFORMED)
            TEST_FAIL("attack %zu accepted by xml_parse_delete", i);
        if (parse_complete(attacks[i], &c) != XML_IN_MALFORMED)
            TEST_FAIL("attack %zu accepted by xml_parse_complete", i);
        if (parse_create(attacks[i], &loc) != XML_IN_MALFORMED)
            TEST_FAIL("attack %zu accepted by xml_parse_create_bucket", i);
    }
    ASSERT_EQ(parse_create("<!DOCTYPE x [<!ENTITY e \"eu-west-1\">]><CreateBucketConfiguration>"
                           "<LocationConstraint>&e;</LocationConstraint>"
                           "</CreateBucketConfiguration>",
                           &loc),
              XML_IN_MALFORMED);
}

/* ------------------------------------------------------------------ */

static void
test_complete_ok(void)
{
    struct xml_complete_request c;

    ASSERT_EQ(parse_complete("<CompleteMultipartUpload" NS ">\n"
                             " <Part><PartNumber>1</PartNumber>"
                             "<ETag>\"a54357aff0632cce46d942af68356b38\"</ETag></Part>\n"
                             " <Part><ETag>&quot;0c78aef83f66abc1fa1e8477f296d394&quot;</ETag>"
                             "<PartNumber> 2\n</PartNumber>"
                             "<ChecksumCRC32>AAAAAA==</ChecksumCRC32>"
                             "<ChecksumCRC32C>BBBBBB==</ChecksumCRC32C>"
                             "<ChecksumCRC64NVME>CCCCCCCCCCC=</ChecksumCRC64NVME>"
                             "<ChecksumSHA1>DDDD</ChecksumSHA1>"
                             "<ChecksumSHA256> EEEE </ChecksumSHA256></Part>\n"
                             " <Part><PartNumber>10000</PartNumber><ETag>noquotes</ETag></Part>\n"
                             " <Part><PartNumber>0007</PartNumber></Part>\n"
                             " <Part><PartNumber>2</PartNumber><ETag>\"</ETag></Part>\n"
                             " <Part><PartNumber>3</PartNumber><ETag>\"\"</ETag></Part>\n"
                             " <Part><PartNumber>4</PartNumber><ETag>\"half</ETag></Part>\n"
                             "</CompleteMultipartUpload>",
                             &c),
              XML_IN_OK);
    ASSERT_EQ(c.n_parts, 7);
    ASSERT_EQ(c.parts[0].part_number, 1);
    assert_slice(c.parts[0].etag, "a54357aff0632cce46d942af68356b38");
    ASSERT(c.parts[0].checksum_crc32.ptr == NULL && c.parts[0].checksum_sha256.len == 0);
    ASSERT_EQ(c.parts[1].part_number, 2);
    assert_slice(c.parts[1].etag, "0c78aef83f66abc1fa1e8477f296d394");
    assert_slice(c.parts[1].checksum_crc32, "AAAAAA==");
    assert_slice(c.parts[1].checksum_crc32c, "BBBBBB==");
    assert_slice(c.parts[1].checksum_crc64nvme, "CCCCCCCCCCC=");
    assert_slice(c.parts[1].checksum_sha1, "DDDD");
    assert_slice(c.parts[1].checksum_sha256, "EEEE");
    ASSERT_EQ(c.parts[2].part_number, 10000);
    assert_slice(c.parts[2].etag, "noquotes");
    /* document order, no sorting or dedup: that is the caller's check */
    ASSERT_EQ(c.parts[3].part_number, 7);
    ASSERT(c.parts[3].etag.ptr == NULL);
    ASSERT_EQ(c.parts[4].part_number, 2);
    assert_slice(c.parts[4].etag, "\"");
    assert_slice(c.parts[5].etag, "");
    assert_slice(c.parts[6].etag, "\"half");

    /* prefixes, unknown elements */
    ASSERT_EQ(parse_complete("<x:CompleteMultipartUpload xmlns:x=\"u\"><x:Part>"
                             "<x:PartNumber>5</x:PartNumber><x:ETag>e</x:ETag>"
                             "<x:ChecksumType>FULL_OBJECT</x:ChecksumType></x:Part>"
                             "<Other><Part><PartNumber>0</PartNumber></Part></Other>"
                             "</x:CompleteMultipartUpload>",
                             &c),
              XML_IN_OK);
    ASSERT_EQ(c.n_parts, 1);
    ASSERT_EQ(c.parts[0].part_number, 5);
    assert_slice(c.parts[0].etag, "e");
}

static void
test_complete_malformed(void)
{
    static const char *const bad[] = {
        "",
        "<CompleteMultipartUpload/>",
        "<CompleteMultipartUpload></CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part></Part></CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><ETag>e</ETag></Part></CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>0</PartNumber></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>10001</PartNumber></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>-1</PartNumber></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>+1</PartNumber></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>1x</PartNumber></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>1 2</PartNumber></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber></PartNumber></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>99999999999999999999999</PartNumber></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>18446744073709551617</PartNumber></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>4294967297</PartNumber></Part>"
        "</CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><PartNumber>2</PartNumber>"
        "</Part></CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>a</ETag><ETag>b</ETag>"
        "</Part></CompleteMultipartUpload>",
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part>",
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part></Complete",
        "<CompleteMultipartUpload><Part><PartNumber>1",
        "<Complete><Part><PartNumber>1</PartNumber></Part></Complete>",
        "<Delete><Object><Key>a</Key></Object></Delete>",
        "<Part><PartNumber>1</PartNumber></Part>",
    };
    struct xml_complete_request c;

    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        enum xml_in_status st = parse_complete(bad[i], &c);
        if (st != XML_IN_MALFORMED)
            TEST_FAIL("bad[%zu] \"%s\": status %d, want MALFORMED", i, bad[i], (int)st);
    }
}

/* Builds a CompleteMultipartUpload body with 'n' parts; caller frees. */
static char *
make_complete(size_t n)
{
    struct buf b;
    buf_init(&b);
    buf_append_str(&b, "<CompleteMultipartUpload" NS ">");
    for (size_t i = 0; i < n; i++)
        buf_printf(&b, "<Part><PartNumber>%zu</PartNumber><ETag>\"%032zx\"</ETag></Part>",
                   i % 10000 + 1, i);
    buf_append_str(&b, "</CompleteMultipartUpload>");
    buf_append(&b, "", 1);
    return b.ptr;
}

static void
test_complete_limits(void)
{
    struct xml_complete_request c;
    char *body;

    body = make_complete(10000);
    ASSERT_EQ(parse_complete(body, &c), XML_IN_OK);
    ASSERT_EQ(c.n_parts, 10000);
    ASSERT_EQ(c.parts[9999].part_number, 10000);
    assert_slice(c.parts[9999].etag, "0000000000000000000000000000270f");
    free(body);

    body = make_complete(10001);
    ASSERT_EQ(parse_complete(body, &c), XML_IN_TOO_MANY);
    free(body);
}

/* ------------------------------------------------------------------ */

static void
test_create_bucket(void)
{
    struct slice loc;

    ASSERT_EQ(parse_create("", &loc), XML_IN_OK);
    ASSERT_EQ(loc.len, 0);
    ASSERT_EQ(xml_parse_create_bucket(NULL, 0, arena, &loc), XML_IN_OK);
    ASSERT_EQ(loc.len, 0);
    ASSERT_EQ(parse_create(" \r\n\t", &loc), XML_IN_OK);
    ASSERT_EQ(loc.len, 0);

    ASSERT_EQ(parse_create("<CreateBucketConfiguration" NS "><LocationConstraint>eu-west-1"
                           "</LocationConstraint></CreateBucketConfiguration>",
                           &loc),
              XML_IN_OK);
    assert_slice(loc, "eu-west-1");
    ASSERT_EQ(parse_create("<?xml version=\"1.0\"?>\n<CreateBucketConfiguration>\n"
                           "  <LocationConstraint>\n    us-east-2\n  </LocationConstraint>\n"
                           "  <Bucket><Type>Directory</Type></Bucket>\n"
                           "</CreateBucketConfiguration>\n",
                           &loc),
              XML_IN_OK);
    assert_slice(loc, "us-east-2");
    ASSERT_EQ(parse_create("<CreateBucketConfiguration/>", &loc), XML_IN_OK);
    ASSERT_EQ(loc.len, 0);
    ASSERT_EQ(parse_create("<CreateBucketConfiguration><LocationConstraint/>"
                           "</CreateBucketConfiguration>",
                           &loc),
              XML_IN_OK);
    ASSERT_EQ(loc.len, 0);
    ASSERT_EQ(parse_create("<s3:CreateBucketConfiguration xmlns:s3=\"x\"><s3:LocationConstraint>"
                           "ap-south-1</s3:LocationConstraint></s3:CreateBucketConfiguration>",
                           &loc),
              XML_IN_OK);
    assert_slice(loc, "ap-south-1");

    static const char *const bad[] = {
        "x",
        "<CreateBucketConfiguration>",
        "<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint>",
        "<BucketConfiguration><LocationConstraint>eu</LocationConstraint></BucketConfiguration>",
        "<CreateBucketConfiguration><LocationConstraint>a</LocationConstraint>"
        "<LocationConstraint>b</LocationConstraint></CreateBucketConfiguration>",
        "<CreateBucketConfiguration><LocationConstraint><x/></LocationConstraint>"
        "</CreateBucketConfiguration>",
    };
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        if (parse_create(bad[i], &loc) != XML_IN_MALFORMED)
            TEST_FAIL("bad[%zu] \"%s\" accepted", i, bad[i]);
    }
}

static enum xml_in_status
parse_batch(const char *body, struct xml_batch_request *out)
{
    memset(out, 0, sizeof(*out));
    return xml_parse_batch(body, strlen(body), arena, out);
}

static void
test_batch(void)
{
    struct xml_batch_request r;

    ASSERT_EQ(parse_batch("<Batch><Entry><Key>k</Key></Entry></Batch>", &r), XML_IN_OK);
    ASSERT_EQ(r.is_continue_on_error, false);
    ASSERT_EQ(r.n_entries, 1);
    assert_slice(r.entries[0].key, "k");
    ASSERT(r.entries[0].member.ptr == NULL && r.entries[0].range.ptr == NULL);
    ASSERT_EQ(parse_batch("<Batch" NS "><ContinueOnError> True </ContinueOnError>"
                          "<Entry><Key> a b </Key><Member>x/y.jpg</Member>"
                          "<Range> bytes=0-9 </Range></Entry>"
                          "<Entry><Range>bytes=-5</Range><Key>c&amp;d</Key><Other>z</Other></Entry>"
                          "</Batch>",
                          &r),
              XML_IN_OK);
    ASSERT_EQ(r.is_continue_on_error, true);
    ASSERT_EQ(r.n_entries, 2);
    assert_slice(r.entries[0].key, " a b "); /* verbatim */
    assert_slice(r.entries[0].member, "x/y.jpg");
    assert_slice(r.entries[0].range, "bytes=0-9"); /* trimmed */
    assert_slice(r.entries[1].key, "c&d");
    assert_slice(r.entries[1].range, "bytes=-5");

    static const char *const bad[] = {
        "<Batch></Batch>",
        "<Batch><Entry></Entry></Batch>",
        "<Batch><Entry><Key></Key></Entry></Batch>",
        "<Batch><Entry><Key>k</Key><Member></Member></Entry></Batch>",
        "<Batch><Entry><Key>k</Key><Key>l</Key></Entry></Batch>",
        "<Batch><ContinueOnError>yes</ContinueOnError><Entry><Key>k</Key></Entry></Batch>",
        "<Delete><Object><Key>k</Key></Object></Delete>",
        "<Batch><Entry><Key>k<x/></Key></Entry></Batch>",
        "<Batch><Entry><Key>k</Key></Entry>",
    };
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        if (parse_batch(bad[i], &r) != XML_IN_MALFORMED)
            TEST_FAIL("bad[%zu] \"%s\" accepted", i, bad[i]);
    }

    struct buf b;
    buf_init(&b);
    buf_append_str(&b, "<Batch>");
    for (size_t i = 0; i < XML_IN_BATCH_MAX; i++)
        buf_printf(&b, "<Entry><Key>k%zu</Key></Entry>", i);
    size_t at_max = b.len;
    buf_append_str(&b, "</Batch>");
    ASSERT_EQ(xml_parse_batch(b.ptr, b.len, arena, &r), XML_IN_OK);
    ASSERT_EQ(r.n_entries, XML_IN_BATCH_MAX);
    b.len = at_max;
    buf_append_str(&b, "<Entry><Key>one more</Key></Entry></Batch>");
    ASSERT_EQ(xml_parse_batch(b.ptr, b.len, arena, &r), XML_IN_TOO_MANY);
    buf_cleanup(&b);
}

int
main(void)
{
    arena = arena_create(4096);
    test_delete_ok();
    test_delete_keys();
    test_delete_namespaces();
    test_delete_unknown();
    test_delete_malformed();
    test_delete_limits();
    test_entities();
    test_complete_ok();
    test_complete_malformed();
    test_complete_limits();
    test_create_bucket();
    test_batch();
    arena_destroy(arena);
    return 0;
}
