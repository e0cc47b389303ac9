/*
 * test_url.c: the pure parsers of client/url.c: s3:// URLs and endpoint
 * URLs (sizes: tests/unit/common/test_size.c).
 */
#include "config.h"

#include "client/shard_int.h"
#include "tests/lib/test.h"

static void
test_s3_url(void)
{
    char b[64], k[1025];
    ASSERT_EQ(shard_parse_s3_url("s3://bucket/a/b/c.tar", b, k), 0);
    ASSERT_STR_EQ(b, "bucket");
    ASSERT_STR_EQ(k, "a/b/c.tar");
    ASSERT_EQ(shard_parse_s3_url("s3://bucket", b, k), 0);
    ASSERT_STR_EQ(k, "");
    ASSERT_EQ(shard_parse_s3_url("s3://bucket/", b, k), 0);
    ASSERT_STR_EQ(k, "");
    ASSERT_EQ(shard_parse_s3_url("s3://my.bucket-1/dir/", b, k), 0);
    ASSERT_STR_EQ(b, "my.bucket-1");
    ASSERT_STR_EQ(k, "dir/");
    ASSERT_EQ(shard_parse_s3_url("s3:/bucket/k", b, k), -1);
    ASSERT_EQ(shard_parse_s3_url("http://bucket/k", b, k), -1);
    ASSERT_EQ(shard_parse_s3_url("s3://", b, k), -1);
    ASSERT_EQ(shard_parse_s3_url("s3:///key", b, k), -1);
    ASSERT_EQ(shard_parse_s3_url("s3://bad bucket/k", b, k), -1);
    ASSERT_EQ(shard_parse_s3_url("bucket/key", b, k), -1);
    ASSERT_EQ(shard_parse_s3_url(NULL, b, k), -1);
    char long_name[80];
    memset(long_name, 'a', sizeof(long_name));
    memcpy(long_name, "s3://", 5);
    long_name[79] = '\0';
    ASSERT_EQ(shard_parse_s3_url(long_name, b, k), -1);
    static char long_key[1100];
    memset(long_key, 'k', sizeof(long_key) - 1);
    memcpy(long_key, "s3://b/", 7);
    ASSERT_EQ(shard_parse_s3_url(long_key, b, k), -1);
}

static void
test_endpoint(void)
{
    char sh[128], host[128], bp[128];
    ASSERT_EQ(client__endpoint_parse("http://127.0.0.1:9000", sh, sizeof(sh), host, sizeof(host),
                                     bp, sizeof(bp)),
              0);
    ASSERT_STR_EQ(sh, "http://127.0.0.1:9000");
    ASSERT_STR_EQ(host, "127.0.0.1:9000");
    ASSERT_STR_EQ(bp, "");
    ASSERT_EQ(client__endpoint_parse("https://s3.example.com:443/base/", sh, sizeof(sh), host,
                                     sizeof(host), bp, sizeof(bp)),
              0);
    ASSERT_STR_EQ(sh, "https://s3.example.com:443");
    ASSERT_STR_EQ(host, "s3.example.com");
    ASSERT_STR_EQ(bp, "/base");
    ASSERT_EQ(
        client__endpoint_parse("http://h:80", sh, sizeof(sh), host, sizeof(host), bp, sizeof(bp)),
        0);
    ASSERT_STR_EQ(host, "h");
    ASSERT_EQ(client__endpoint_parse("http://[::1]:9000/", sh, sizeof(sh), host, sizeof(host), bp,
                                     sizeof(bp)),
              0);
    ASSERT_STR_EQ(host, "[::1]:9000");
    ASSERT_EQ(client__endpoint_parse("ftp://h", sh, sizeof(sh), host, sizeof(host), bp, sizeof(bp)),
              -1);
    ASSERT_EQ(client__endpoint_parse("http://", sh, sizeof(sh), host, sizeof(host), bp, sizeof(bp)),
              -1);
    ASSERT_EQ(
        client__endpoint_parse("http://h:x1", sh, sizeof(sh), host, sizeof(host), bp, sizeof(bp)),
        -1);
    ASSERT_EQ(
        client__endpoint_parse("http://u:p@h/", sh, sizeof(sh), host, sizeof(host), bp, sizeof(bp)),
        -1);
    ASSERT_EQ(client__endpoint_parse("127.0.0.1:9000", sh, sizeof(sh), host, sizeof(host), bp,
                                     sizeof(bp)),
              -1);
}

int
main(void)
{
    test_s3_url();
    test_endpoint();
    return 0;
}
