/*
 * test_list_xml.c: the ListObjectsV2 page parser of client/xml.c decodes
 * keys and prefixes when the page says <EncodingType>url</EncodingType>,
 * wherever that element stands (before the entries as shardstore and AWS
 * write it, or after them as MinIO does), and leaves them alone otherwise;
 * the longest key (1024 bytes, every one encoded) comes back whole.
 * The ListObjectVersions mode reports Version, DeleteMarker and
 * CommonPrefixes entries with their version id, latest and marker flags,
 * and the next page's markers (the key marker decoded).
 */
#include "config.h"

#include "client/shard_int.h"
#include "tests/lib/test.h"

struct seen {
    char keys[8][1100];
    bool is_prefix[8];
    size_t n;
};

static int
on_entry(void *ctx, const struct shard_list_entry *e)
{
    struct seen *s = ctx;
    ASSERT(s->n < ARRAY_LEN(s->keys));
    ASSERT(strlen(e->key) < sizeof(s->keys[0]));
    strcpy(s->keys[s->n], e->key);
    s->is_prefix[s->n++] = e->is_prefix;
    return 0;
}

static void
parse(const char *xml, struct seen *s)
{
    struct client_list_parser *p = client__list_parser_create(on_entry, s);
    memset(s, 0, sizeof(*s));
    ASSERT_EQ(client__list_parser_page(p, xml, strlen(xml)), 0);
    client__list_parser_destroy(p);
}

static const char ENTRIES[] =
    "<Contents><Key>a%20b+c%2Bd%25e%01f%C3%A9</Key><Size>1</Size></Contents>"
    "<Contents><Key>bad%zz%4</Key><Size>2</Size></Contents>"
    "<CommonPrefixes><Prefix>dir+x%2F/</Prefix></CommonPrefixes>";

static void
test_encoded(bool is_tag_first)
{
    struct seen s;
    struct buf b;
    buf_init(&b);
    buf_printf(&b, "<ListBucketResult>%s%s%s</ListBucketResult>",
               is_tag_first ? "<EncodingType>url</EncodingType>" : "", ENTRIES,
               is_tag_first ? "" : "<EncodingType>url</EncodingType>");
    parse(b.ptr, &s);
    ASSERT_UEQ(s.n, 3);
    ASSERT_STR_EQ(s.keys[0], "a b c+d%e\001f\xc3\xa9");
    ASSERT_STR_EQ(s.keys[1], "bad%zz%4");
    ASSERT_STR_EQ(s.keys[2], "dir x//");
    ASSERT(s.is_prefix[2]);
    buf_cleanup(&b);
}

static void
test_plain(void)
{
    struct seen s;
    parse("<ListBucketResult>"
          "<Contents><Key>a%20b+c &amp; d</Key></Contents></ListBucketResult>",
          &s);
    ASSERT_UEQ(s.n, 1);
    ASSERT_STR_EQ(s.keys[0], "a%20b+c & d");
}

static void
test_longest_key(void)
{
    struct seen s;
    struct buf b;
    buf_init(&b);
    buf_append_str(&b, "<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>");
    for (int i = 0; i < 1024; i++)
        buf_append_str(&b, "%C3");
    buf_append_str(&b, "</Key></Contents></ListBucketResult>");
    parse(b.ptr, &s);
    ASSERT_UEQ(s.n, 1);
    ASSERT_UEQ(strlen(s.keys[0]), 1024);
    for (int i = 0; i < 1024; i++)
        ASSERT_EQ((unsigned char)s.keys[0][i], 0xc3);
    buf_cleanup(&b);
}

struct vseen {
    char keys[8][64];
    char vids[8][64];
    bool is_latest[8], is_marker[8], is_prefix[8];
    uint64_t sizes[8];
    size_t n;
};

static int
on_version(void *ctx, const struct shard_version_entry *e)
{
    struct vseen *s = ctx;
    ASSERT(s->n < ARRAY_LEN(s->keys));
    snprintf(s->keys[s->n], sizeof(s->keys[0]), "%s", e->key);
    snprintf(s->vids[s->n], sizeof(s->vids[0]), "%s", e->version_id);
    s->is_latest[s->n] = e->is_latest;
    s->is_marker[s->n] = e->is_delete_marker;
    s->is_prefix[s->n] = e->is_prefix;
    s->sizes[s->n++] = e->info.size;
    return 0;
}

static void
test_versions(void)
{
    static const char XML[] =
        "<ListVersionsResult><Name>b</Name><Prefix></Prefix><KeyMarker></KeyMarker>"
        "<VersionIdMarker></VersionIdMarker><MaxKeys>3</MaxKeys>"
        "<EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>"
        "<NextKeyMarker>k+2%2B</NextKeyMarker><NextVersionIdMarker>v3</NextVersionIdMarker>"
        "<Version><Key>k%201</Key><VersionId>v1</VersionId><IsLatest>true</IsLatest>"
        "<LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>\"e\"</ETag>"
        "<Size>7</Size><Owner><ID>o</ID><DisplayName>o</DisplayName></Owner></Version>"
        "<DeleteMarker><Key>k 2+</Key><VersionId>v2</VersionId><IsLatest>true</IsLatest>"
        "<LastModified>2026-01-01T00:00:00.000Z</LastModified></DeleteMarker>"
        "<Version><Key>k 2+</Key><VersionId>null</VersionId><IsLatest>false</IsLatest>"
        "<Size>9</Size></Version>"
        "<Contents><Key>not-a-version</Key></Contents>"
        "<CommonPrefixes><Prefix>d%2F</Prefix></CommonPrefixes></ListVersionsResult>";
    struct vseen s = {0};
    struct client_list_parser *p = client__list_versions_parser_create(on_version, &s);
    ASSERT_EQ(client__list_parser_page(p, XML, strlen(XML)), 0);
    ASSERT_UEQ(s.n, 4);
    ASSERT_UEQ(client__list_parser_count(p), 4);
    ASSERT_STR_EQ(s.keys[0], "k 1");
    ASSERT_STR_EQ(s.vids[0], "v1");
    ASSERT(s.is_latest[0] && !s.is_marker[0] && !s.is_prefix[0]);
    ASSERT_UEQ(s.sizes[0], 7);
    ASSERT_STR_EQ(s.keys[1], "k 2 ");
    ASSERT(s.is_latest[1] && s.is_marker[1]);
    ASSERT_STR_EQ(s.vids[2], "null");
    ASSERT(!s.is_latest[2] && !s.is_marker[2]);
    ASSERT_UEQ(s.sizes[2], 9);
    ASSERT_STR_EQ(s.keys[3], "d/");
    ASSERT_STR_EQ(s.vids[3], "");
    ASSERT(s.is_prefix[3] && !s.is_latest[3]);
    ASSERT(client__list_parser_truncated(p));
    ASSERT_STR_EQ(client__list_parser_key_marker(p), "k 2+");
    ASSERT_STR_EQ(client__list_parser_version_marker(p), "v3");
    /* The next page starts clean: no markers carried over. */
    static const char LAST[] = "<ListVersionsResult><IsTruncated>false</IsTruncated>"
                               "</ListVersionsResult>";
    ASSERT_EQ(client__list_parser_page(p, LAST, strlen(LAST)), 0);
    ASSERT(!client__list_parser_truncated(p));
    ASSERT_STR_EQ(client__list_parser_key_marker(p), "");
    client__list_parser_destroy(p);

    /* Its query: canonical order, values encoded. */
    struct buf q;
    buf_init(&q);
    client__list_versions_query(&q, "p/", "/", 1000, "k 2+", "v3");
    ASSERT_STR_EQ(q.ptr, "delimiter=%2F&encoding-type=url&key-marker=k%202%2B&max-keys=1000&"
                         "prefix=p%2F&version-id-marker=v3&versions=");
    buf_cleanup(&q);
}

int
main(void)
{
    test_encoded(true);
    test_encoded(false);
    test_plain();
    test_longest_key();
    test_versions();
    return 0;
}
