/*
 * test_version_scan.c: the ListVersionsResult scanner of
 * client/version_scan.c. Known pages give known entries: the XML entities
 * and character references of keys decoded, encoding-type=url keys and
 * markers decoded, Version and DeleteMarker entries in any order with
 * CommonPrefixes, Owner blocks, unknown elements, comments, CDATA and
 * attributes skipped, markers after the entries, a page of markers only.
 * Every proper prefix of a page is refused (a cut page is never a short
 * page). The head scan stops at the first entry when the markers come
 * first and reads on when they do not. A DOCTYPE goes to expat. Then a
 * differential check: thousands of generated pages (random keys with
 * entities, references, CDATA, CR LF and UTF-8; random element order,
 * spacing and comments) give the same callbacks, count and markers as the
 * expat parser of client/xml.c.
 */
#include "config.h"

#include "client/shard_int.h"
#include "tests/lib/test.h"

#include <stdlib.h>

/* Every callback of a page, as text ("V key|vid|latest|size|etag|date\n"). */
struct log {
    struct buf b;
    size_t calls;
    size_t stop_after; /* 0: never stop */
};

static int
on_version(void *ctx, const struct shard_version_entry *e)
{
    struct log *l = ctx;
    buf_printf(&l->b, "%c %s|%s|%d|%llu|%s|%s\n",
               e->is_prefix          ? 'P'
               : e->is_delete_marker ? 'D'
                                     : 'V',
               e->key, e->version_id, e->is_latest, (unsigned long long)e->info.size, e->info.etag,
               e->info.last_modified);
    l->calls++;
    return l->stop_after && l->calls == l->stop_after ? 7 : 0;
}

/* Scans 'xml' into 'l' (emptied first); returns the scan's result. */
static int
scan(struct client_version_scan *s, struct log *l, const char *xml)
{
    l->b.len = 0;
    if (l->b.ptr)
        l->b.ptr[0] = '\0';
    l->calls = 0;
    return client__version_scan_page(s, xml, strlen(xml));
}

#define HEAD "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListVersionsResult xmlns=\"x\">"

static void
test_entities(void)
{
    struct log l = {0};
    struct client_version_scan *s = client__version_scan_create(on_version, &l);
    static const char XML[] =
        HEAD "<Name>b</Name><IsTruncated>false</IsTruncated>"
             "<Version><Key>a&amp;b&lt;c&gt;d&quot;e&apos;f</Key><VersionId>v1</VersionId>"
             "<IsLatest>true</IsLatest><LastModified>2026-01-01T00:00:00.000Z</LastModified>"
             "<ETag>&quot;abc&quot;</ETag><Size>12</Size>"
             "<Owner><ID>o&amp;</ID><DisplayName>n</DisplayName></Owner>"
             "<StorageClass>STANDARD</StorageClass></Version>"
             "<DeleteMarker><Key>&#233;&#xe9;&#x1F600;&#65;&#x9;x</Key><VersionId>v2</VersionId>"
             "<IsLatest>false</IsLatest></DeleteMarker>"
             "<Version><Key>l1\r\nl2\rl3&#13;</Key><VersionId>null</VersionId>"
             "<IsLatest>false</IsLatest><Size>3</Size></Version>"
             "<Version><Key><![CDATA[<&amp;>]]>+%41</Key><VersionId>v4</VersionId></Version>"
             "</ListVersionsResult>\n";
    ASSERT_EQ(scan(s, &l, XML), 0);
    ASSERT_STR_EQ(l.b.ptr, "V a&b<c>d\"e'f|v1|1|12|\"abc\"|2026-01-01T00:00:00.000Z\n"
                           "D \xc3\xa9\xc3\xa9\xf0\x9f\x98\x80"
                           "A\tx|v2|0|0||\n"
                           "V l1\nl2\nl3\r|null|0|3||\n"
                           "V <&amp;>+%41|v4|0|0||\n");
    ASSERT_UEQ(client__version_scan_count(s), 4);
    ASSERT(!client__version_scan_truncated(s));

    /* A reference the scanner does not know, or to a character XML has not,
     * makes the page malformed. */
    static const char *const BAD[] = {"&nbsp;", "&#0;", "&#x1;", "&#xD800;", "&#x110000;",
                                      "&#;",    "&#x;", "&amp",  "&#12a;",   "& x;"};
    for (size_t i = 0; i < ARRAY_LEN(BAD); i++) {
        struct buf b;
        buf_init(&b);
        buf_printf(&b, "<R><Version><Key>k%s</Key></Version></R>", BAD[i]);
        ASSERT_EQ(scan(s, &l, b.ptr), -1);
        buf_cleanup(&b);
    }
    client__version_scan_destroy(s);
    buf_cleanup(&l.b);
}

static void
test_url_and_order(void)
{
    struct log l = {0};
    struct client_version_scan *s = client__version_scan_create(on_version, &l);
    /* EncodingType last (where AWS's documentation puts it), markers after
     * the entries, prefixes between versions, unknown elements nested,
     * comments, PIs, attributes with '>' and '/' in quotes, empty elements. */
    static const char XML[] =
        "\xef\xbb\xbf<!-- c --><?pi x?>\n<ListVersionsResult a='1>2' b = \"/\">\n"
        "  <DeleteMarker><Key>d%2Fx+y</Key><Owner><ID/><X><Y>z</Y></X></Owner>"
        "<VersionId>v1</VersionId><IsLatest>true</IsLatest></DeleteMarker>\n"
        "  <CommonPrefixes><Prefix>p%25%2F</Prefix></CommonPrefixes>\n"
        "  <Version><!-- <Key>no</Key> --><Key>k%C3%A9%zz</Key><Size>5</Size>"
        "<VersionId>v2</VersionId><Unknown attr=\"&lt;\"/></Version>\n"
        "  <Version ><Key>q</Key><Prefix>r%20s</Prefix><VersionId>v3</VersionId></Version >\n"
        "  <IsTruncated>true</IsTruncated><NextKeyMarker>k+%2B</NextKeyMarker>"
        "<NextVersionIdMarker>v3</NextVersionIdMarker>\n"
        "  <EncodingType>url</EncodingType>\n</ListVersionsResult>\n<!-- end -->\n";
    ASSERT_EQ(scan(s, &l, XML), 0);
    ASSERT_STR_EQ(l.b.ptr, "D d/x y|v1|1|0||\n"
                           "P p%/||0|0||\n"
                           "V k\xc3\xa9%zz|v2|0|5||\n"
                           "V r s|v3|0|0||\n");
    ASSERT(client__version_scan_truncated(s));
    ASSERT_STR_EQ(client__version_scan_key_marker(s), "k +");
    ASSERT_STR_EQ(client__version_scan_version_marker(s), "v3");

    /* A page of markers only (the entries were all filtered), plain keys. */
    static const char ONLY[] = "<ListVersionsResult><IsTruncated>true</IsTruncated>"
                               "<NextKeyMarker>a+b%20&amp;</NextKeyMarker>"
                               "<NextVersionIdMarker/></ListVersionsResult>";
    ASSERT_EQ(scan(s, &l, ONLY), 0);
    ASSERT_UEQ(l.calls, 0);
    ASSERT(client__version_scan_truncated(s));
    ASSERT_STR_EQ(client__version_scan_key_marker(s), "a+b%20&");
    ASSERT_STR_EQ(client__version_scan_version_marker(s), "");

    /* The callback's value stops the page. */
    l.stop_after = 2;
    ASSERT_EQ(scan(s, &l, XML), 7);
    ASSERT_UEQ(l.calls, 2);
    client__version_scan_destroy(s);
    buf_cleanup(&l.b);
}

static void
test_cut_pages(void)
{
    struct log l = {0};
    struct client_version_scan *s = client__version_scan_create(on_version, &l);
    static const char XML[] =
        "<?xml version=\"1.0\"?><ListVersionsResult><IsTruncated>true</IsTruncated>"
        "<NextKeyMarker>b</NextKeyMarker><NextVersionIdMarker>v</NextVersionIdMarker>"
        "<Version><Key>a&amp;</Key><VersionId>v</VersionId><Owner><ID>x</ID></Owner></Version>"
        "<DeleteMarker><Key><![CDATA[b]]></Key></DeleteMarker><!-- x --></ListVersionsResult>";
    size_t len = strlen(XML);
    ASSERT_EQ(client__version_scan_page(s, XML, len), 0);
    for (size_t cut = 0; cut < len; cut++) {
        char *copy = xmalloc(cut + 1); /* no slack: ASan sees any over-read */
        memcpy(copy, XML, cut);
        if (client__version_scan_page(s, copy, cut) != -1)
            TEST_FAIL("a page cut at %zu of %zu bytes was accepted", cut, len);
        free(copy);
    }
    /* Mismatched or stray end tags, text or a second element outside the root. */
    static const char *const BAD[] = {
        "<R><Version><Key>a</Version></Key></R>",
        "<R></R></R>",
        "<R><a></ab></R>",
        "<R></R>x",
        "<R></R><R></R>",
        "x<R></R>",
        "<R><a b></a></R>",
        "<R><a b=c></a></R>",
        "<R><![CDATA[x]]</R>",
        "<R><!x></R>",
        "</R>",
        "",
        "<R",
    };
    for (size_t i = 0; i < ARRAY_LEN(BAD); i++)
        if (scan(s, &l, BAD[i]) != -1)
            TEST_FAIL("malformed page accepted: %s", BAD[i]);
    client__version_scan_destroy(s);
    buf_cleanup(&l.b);
}

static void
test_head(void)
{
    struct client_version_scan *h = client__version_scan_create(NULL, NULL);
    /* Markers first: the head scan stops at the first entry, so even a
     * broken rest of the page does not concern it (the whole scan will). */
    static const char FIRST[] =
        "<R><IsTruncated>true</IsTruncated><NextKeyMarker>k%20</NextKeyMarker>"
        "<NextVersionIdMarker>v9</NextVersionIdMarker><EncodingType>url"
        "</EncodingType><Version><Key>broken</Version>";
    ASSERT_EQ(client__version_scan_head(h, FIRST, strlen(FIRST)), 0);
    ASSERT(client__version_scan_truncated(h));
    ASSERT_STR_EQ(client__version_scan_key_marker(h), "k ");
    ASSERT_STR_EQ(client__version_scan_version_marker(h), "v9");
    ASSERT_UEQ(client__version_scan_count(h), 0);
    /* Not truncated: nothing more to know. */
    static const char LAST[] = "<R><IsTruncated>false</IsTruncated><Version><Key>x";
    ASSERT_EQ(client__version_scan_head(h, LAST, strlen(LAST)), 0);
    ASSERT(!client__version_scan_truncated(h));
    /* Markers after the entries: read on to them (and the page must be whole). */
    static const char AFTER[] = "<R><IsTruncated>true</IsTruncated><Version><Key>a</Key></Version>"
                                "<CommonPrefixes><Prefix>p/</Prefix></CommonPrefixes>"
                                "<NextKeyMarker>p/</NextKeyMarker></R>";
    ASSERT_EQ(client__version_scan_head(h, AFTER, strlen(AFTER)), 0);
    ASSERT(client__version_scan_truncated(h));
    ASSERT_STR_EQ(client__version_scan_key_marker(h), "p/");
    ASSERT_STR_EQ(client__version_scan_version_marker(h), "");
    ASSERT_UEQ(client__version_scan_count(h), 2);
    ASSERT_EQ(client__version_scan_head(h, AFTER, strlen(AFTER) - 2), -1);
    /* Only the key marker first: the version marker may still follow. */
    static const char SPLIT[] = "<R><IsTruncated>true</IsTruncated><NextKeyMarker>k</NextKeyMarker>"
                                "<Version><Key>k</Key></Version>"
                                "<NextVersionIdMarker>v1</NextVersionIdMarker></R>";
    ASSERT_EQ(client__version_scan_head(h, SPLIT, strlen(SPLIT)), 0);
    ASSERT_STR_EQ(client__version_scan_key_marker(h), "k");
    ASSERT_STR_EQ(client__version_scan_version_marker(h), "v1");
    client__version_scan_destroy(h);
}

static void
test_doctype_goes_to_expat(void)
{
    struct log l = {0};
    struct client_version_scan *s = client__version_scan_create(on_version, &l);
    static const char XML[] = "<?xml version=\"1.0\"?><!DOCTYPE R [<!ENTITY e \"E!\">]>"
                              "<R><IsTruncated>true</IsTruncated><NextKeyMarker>&e;</NextKeyMarker>"
                              "<Version><Key>x&e;</Key><VersionId>v</VersionId></Version></R>";
    ASSERT_EQ(scan(s, &l, XML), 0);
    ASSERT_STR_EQ(l.b.ptr, "V xE!|v|0|0||\n");
    ASSERT_STR_EQ(client__version_scan_key_marker(s), "E!");
    ASSERT_UEQ(client__version_scan_count(s), 1);
    /* The next page is the scanner's again. */
    ASSERT_EQ(scan(s, &l, "<R><Version><Key>&amp;</Key></Version></R>"), 0);
    ASSERT_STR_EQ(l.b.ptr, "V &||0|0||\n");
    ASSERT_STR_EQ(client__version_scan_key_marker(s), "");
    /* Latin-1 too. */
    static const char LATIN1[] = "<?xml version='1.0' encoding='ISO-8859-1'?>"
                                 "<R><Version><Key>\xe9</Key></Version></R>";
    ASSERT_EQ(scan(s, &l, LATIN1), 0);
    ASSERT_STR_EQ(l.b.ptr, "V \xc3\xa9||0|0||\n");
    client__version_scan_destroy(s);
    buf_cleanup(&l.b);
}

/* ---- differential check against expat ---------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static unsigned
rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

/* Appends a random text whose XML form is well-formed: plain bytes, UTF-8,
 * the five entities, character references, CR/LF, CDATA sections. */
static void
gen_text(struct buf *b, bool is_url)
{
    unsigned n = rnd(12);
    for (unsigned i = 0; i < n; i++) {
        if (is_url) {
            static const char *const U[] = {"a",   "Z", "/",  "+", "%20", "%2F",   "%C3%A9",
                                            "%zz", "%", "%2", "-", "~",   "&amp;", "%26"};
            buf_append_str(b, U[rnd(ARRAY_LEN(U))]);
            continue;
        }
        static const char *const T[] = {"a",
                                        "Z",
                                        " ",
                                        "/",
                                        "\xc3\xa9",
                                        "\xf0\x9f\x98\x80",
                                        "&amp;",
                                        "&lt;",
                                        "&gt;",
                                        "&quot;",
                                        "&apos;",
                                        "&#38;",
                                        "&#x3C;",
                                        "&#233;",
                                        "&#x1F600;",
                                        "\r\n",
                                        "\r",
                                        "\n",
                                        "\t",
                                        "&#13;",
                                        ">",
                                        "\"",
                                        "'",
                                        "x",
                                        "<![CDATA[<&>]]>",
                                        "<![CDATA[\r\n]]>",
                                        "<!--x-->"};
        buf_append_str(b, T[rnd(ARRAY_LEN(T))]);
    }
}

static void
gen_space(struct buf *b)
{
    static const char *const S[] = {"", "", "", "\n", "  ", "\r\n\t", "<!-- - -->", "<?p i?>"};
    buf_append_str(b, S[rnd(ARRAY_LEN(S))]);
}

static void
gen_elem(struct buf *b, const char *name, bool is_url)
{
    gen_space(b);
    if (rnd(10) == 0) {
        buf_printf(b, "<%s/>", name);
        return;
    }
    buf_printf(b, rnd(5) == 0 ? "<%s a=\"x>&amp;\" >" : "<%s>", name);
    gen_text(b, is_url);
    buf_printf(b, rnd(5) == 0 ? "</%s >" : "</%s>", name);
}

static void
gen_entry(struct buf *b, bool is_url)
{
    static const char *const ENTRY[] = {"Version", "DeleteMarker", "CommonPrefixes", "Contents",
                                        "Other"};
    static const char *const FIELD[] = {"Key",   "VersionId",    "IsLatest", "LastModified",
                                        "ETag",  "Size",         "Prefix",   "StorageClass",
                                        "Other", "NextKeyMarker"};
    const char *name = ENTRY[rnd(ARRAY_LEN(ENTRY))];
    gen_space(b);
    buf_printf(b, "<%s>", name);
    unsigned n = rnd(8);
    for (unsigned i = 0; i < n; i++) {
        unsigned f = rnd(ARRAY_LEN(FIELD) + 3);
        if (f == ARRAY_LEN(FIELD)) {
            buf_append_str(b, "<Owner><ID>i</ID><DisplayName>&lt;d&gt;</DisplayName></Owner>");
        } else if (f == ARRAY_LEN(FIELD) + 1) {
            buf_append_str(b, rnd(2) ? "<IsLatest>true</IsLatest>" : "<Size>123</Size>");
        } else if (f == ARRAY_LEN(FIELD) + 2) {
            /* A field with a child element: expat's parser forgets the text. */
            buf_append_str(b, "<Key>ab<x>c</x>d</Key>");
        } else {
            gen_elem(b, FIELD[f], is_url);
        }
    }
    gen_space(b);
    buf_printf(b, "</%s>", name);
}

/* A whole parse's outcome, for comparing the two parsers. */
static void
outcome(struct buf *o, int rc, size_t count, bool is_truncated, const char *km, const char *vm,
        const struct log *l)
{
    buf_printf(o, "rc=%d count=%zu trunc=%d km=%s vm=%s\n%s", rc, count, is_truncated, km, vm,
               l->b.ptr ? l->b.ptr : "");
}

static void
test_differential(void)
{
    struct log la = {0}, lb = {0};
    struct client_version_scan *s = client__version_scan_create(on_version, &lb);
    struct client_list_parser *p = client__list_versions_parser_create(on_version, &la);
    struct client_version_scan *h = client__version_scan_create(NULL, NULL);
    size_t pages = 0, entries = 0;
    for (int round = 0; round < 3000; round++) {
        bool is_url = rnd(3) == 0;
        struct buf x;
        buf_init(&x);
        if (rnd(2))
            buf_append_str(&x, "<?xml version=\"1.0\" encoding=\"utf-8\"?>");
        gen_space(&x);
        buf_append_str(&x, "<ListVersionsResult>");
        unsigned n = rnd(30);
        bool has_head = rnd(2);
        for (unsigned i = 0; i < n + 2; i++) {
            if (i == (has_head ? 0 : n + 1)) {
                gen_elem(&x, "IsTruncated", false);
                buf_append_str(&x, rnd(2) ? "<IsTruncated>true</IsTruncated>" : "");
                gen_elem(&x, "NextKeyMarker", is_url);
                gen_elem(&x, "NextVersionIdMarker", false);
            } else if (i == n / 2 && is_url) {
                buf_append_str(&x, "<EncodingType>url</EncodingType>");
            } else {
                gen_entry(&x, is_url);
            }
        }
        gen_space(&x);
        buf_append_str(&x, "</ListVersionsResult>");
        gen_space(&x);

        la.b.len = lb.b.len = 0;
        la.calls = lb.calls = 0;
        if (la.b.ptr)
            la.b.ptr[0] = '\0';
        if (lb.b.ptr)
            lb.b.ptr[0] = '\0';
        int ra = client__list_parser_page(p, x.ptr, x.len);
        int rb = client__version_scan_page(s, x.ptr, x.len);
        struct buf oa, ob;
        buf_init(&oa);
        buf_init(&ob);
        outcome(&oa, ra, client__list_parser_count(p), client__list_parser_truncated(p),
                client__list_parser_key_marker(p), client__list_parser_version_marker(p), &la);
        outcome(&ob, rb, client__version_scan_count(s), client__version_scan_truncated(s),
                client__version_scan_key_marker(s), client__version_scan_version_marker(s), &lb);
        if (ra != 0 || strcmp(oa.ptr, ob.ptr) != 0)
            TEST_FAIL("page %d differs:\n%s\nexpat: %s\nscan:  %s", round, x.ptr, oa.ptr, ob.ptr);
        /* The head scan names the same next page. */
        ASSERT_EQ(client__version_scan_head(h, x.ptr, x.len), 0);
        ASSERT_EQ(client__version_scan_truncated(h), client__version_scan_truncated(s));
        if (client__version_scan_truncated(s)) {
            ASSERT_STR_EQ(client__version_scan_key_marker(h), client__version_scan_key_marker(s));
            ASSERT_STR_EQ(client__version_scan_version_marker(h),
                          client__version_scan_version_marker(s));
        }
        pages++;
        entries += lb.calls;
        buf_cleanup(&oa);
        buf_cleanup(&ob);
        buf_cleanup(&x);
    }
    ASSERT(entries > pages * 5); /* the generator does make entries */
    client__version_scan_destroy(h);
    client__version_scan_destroy(s);
    client__list_parser_destroy(p);
    buf_cleanup(&la.b);
    buf_cleanup(&lb.b);
}

int
main(void)
{
    test_entities();
    test_url_and_order();
    test_cut_pages();
    test_head();
    test_doctype_goes_to_expat();
    test_differential();
    return 0;
}
