/*
 * test_list_xml.c: the ListObjectsV2 page parser of client/xml.c decodes
 * keys and prefixes when the page says <EncodingType>url</EncodingType>,
 * wherever that element stands (before the entries as shardstore and AWS
 * write it, or after them as MinIO does), and leaves them alone otherwise;
 * the longest key (1024 bytes, every one encoded) comes back whole.
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

int
main(void)
{
    test_encoded(true);
    test_encoded(false);
    test_plain();
    test_longest_key();
    return 0;
}
