/*
 * test_url.c: the pure parsers of client/url.c: s3:// URLs, sizes with
 * suffixes, endpoint URLs.
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
test_size(void)
{
    uint64_t v;
    ASSERT_EQ(shard_parse_size("0", &v), 0);
    ASSERT_UEQ(v, 0);
    ASSERT_EQ(shard_parse_size("123", &v), 0);
    ASSERT_UEQ(v, 123);
    ASSERT_EQ(shard_parse_size("64K", &v), 0);
    ASSERT_UEQ(v, 65536);
    ASSERT_EQ(shard_parse_size("64k", &v), 0);
    ASSERT_UEQ(v, 65536);
    ASSERT_EQ(shard_parse_size("8M", &v), 0);
    ASSERT_UEQ(v, 8u << 20);
    ASSERT_EQ(shard_parse_size("1G", &v), 0);
    ASSERT_UEQ(v, 1u << 30);
    ASSERT_EQ(shard_parse_size("2T", &v), 0);
    ASSERT_UEQ(v, 2ull << 40);
    ASSERT_EQ(shard_parse_size("5MiB", &v), 0);
    ASSERT_UEQ(v, 5u << 20);
    ASSERT_EQ(shard_parse_size("5MB", &v), 0);
    ASSERT_UEQ(v, 5u << 20);
    ASSERT_EQ(shard_parse_size("", &v), -1);
    ASSERT_EQ(shard_parse_size("M", &v), -1);
    ASSERT_EQ(shard_parse_size("12X", &v), -1);
    ASSERT_EQ(shard_parse_size("1.5M", &v), -1);
    ASSERT_EQ(shard_parse_size("-1", &v), -1);
    ASSERT_EQ(shard_parse_size("8MM", &v), -1);
    ASSERT_EQ(shard_parse_size("18446744073709551615", &v), 0);
    ASSERT_UEQ(v, UINT64_MAX);
    ASSERT_EQ(shard_parse_size("18446744073709551616", &v), -1);
    ASSERT_EQ(shard_parse_size("17179869184G", &v), -1); /* 2^34 G overflows */
    ASSERT_EQ(shard_parse_size("16777215T", &v), 0);
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
    test_size();
    test_endpoint();
    return 0;
}
