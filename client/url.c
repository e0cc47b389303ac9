/*
 * url.c: the pure string parsers of the client: s3://bucket/key URLs and
 * endpoint URLs (sizes are common/'s parse_size). No I/O, no allocation; unit-tested in
 * tests/unit/client/test_url.c.
 */
#include "config.h"

#include "client/shard_int.h"

#include <stdio.h>

/* S3 bucket names: 3..63 of [a-z0-9.-_] (underscores and capitals are legacy
 * names some servers still accept, so only the characters that cannot work in
 * a path are refused), starting with a letter or digit. */
static bool
is_bucket_name(const char *s, size_t n)
{
    if (n < 1 || n > 63)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' ||
                  ch == '_' || (ch >= 'A' && ch <= 'Z');
        if (!ok)
            return false;
    }
    return true;
}

int
shard_parse_s3_url(const char *url, char bucket[64], char key[1025])
{
    if (url == NULL || strncmp(url, "s3://", 5) != 0)
        return -1;
    const char *b = url + 5;
    const char *slash = strchr(b, '/');
    size_t blen = slash ? (size_t)(slash - b) : strlen(b);
    if (!is_bucket_name(b, blen))
        return -1;
    const char *k = slash ? slash + 1 : "";
    size_t klen = strlen(k);
    if (klen > 1024)
        return -1;
    memcpy(bucket, b, blen);
    bucket[blen] = '\0';
    memcpy(key, k, klen + 1);
    return 0;
}

int
client__endpoint_parse(const char *url, char *scheme_host, size_t sh_cap, char *host,
                       size_t host_cap, char *base_path, size_t bp_cap)
{
    const char *rest;
    const char *default_port;
    if (strncmp(url, "http://", 7) == 0) {
        rest = url + 7;
        default_port = "80";
    } else if (strncmp(url, "https://", 8) == 0) {
        rest = url + 8;
        default_port = "443";
    } else {
        return -1;
    }
    size_t alen = strcspn(rest, "/?#");
    if (alen == 0 || strchr(rest, '@') != NULL)
        return -1;
    const char *path = rest + alen;
    if (*path == '?' || *path == '#')
        return -1;
    size_t plen = strlen(path);
    while (plen > 0 && path[plen - 1] == '/')
        plen--;
    size_t scheme_len = (size_t)(rest - url);
    if (scheme_len + alen + 1 > sh_cap || alen + 1 > host_cap || plen + 1 > bp_cap)
        return -1;
    memcpy(scheme_host, url, scheme_len + alen);
    scheme_host[scheme_len + alen] = '\0';
    /* The host as curl sends it: without a default port. IPv6 literals keep
     * their brackets; the port is after the last ':' following ']'. */
    const char *colon = NULL;
    for (size_t i = alen; i > 0; i--) {
        if (rest[i - 1] == ']')
            break;
        if (rest[i - 1] == ':') {
            colon = rest + i - 1;
            break;
        }
    }
    size_t hlen = alen;
    if (colon != NULL) {
        const char *port = colon + 1;
        size_t port_len = (size_t)(rest + alen - port);
        for (size_t i = 0; i < port_len; i++)
            if (port[i] < '0' || port[i] > '9')
                return -1;
        if (port_len == 0 ||
            (port_len == strlen(default_port) && memcmp(port, default_port, port_len) == 0))
            hlen = (size_t)(colon - rest);
    }
    if (hlen == 0)
        return -1;
    memcpy(host, rest, hlen);
    host[hlen] = '\0';
    memcpy(base_path, path, plen);
    base_path[plen] = '\0';
    return 0;
}
