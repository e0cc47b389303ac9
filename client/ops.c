/*
 * ops.c: the small S3 calls: HEAD, DELETE, DeleteObjects (batches of 1000
 * with Content-MD5), bucket create/delete, ListObjectsV2 paging (that of
 * ListObjectVersions is list_versions.c) and a single PUT from memory, and
 * shard_request (any signed request: the admin API). Each is one
 * client__perform (retried there).
 */
#include "config.h"

#include "auth/auth.h"
#include "client/shard_int.h"
#include "transport/transport.h"

#include <stdlib.h>

int
shard_head(struct shard_client *c, const char *bucket, const char *key,
           struct shard_object_info *out, struct shard_error *err)
{
    struct client_req req = {.method = "HEAD", .bucket = bucket, .key = key};
    struct client_resp resp;
    client__resp_init(&resp);
    int rc = client__perform(c, &req, NULL, 0, &resp, err);
    if (rc == 0 && out != NULL) {
        memset(out, 0, sizeof(*out));
        out->size = resp.length;
        snprintf(out->etag, sizeof(out->etag), "%s", resp.etag);
        snprintf(out->last_modified, sizeof(out->last_modified), "%s", resp.last_modified);
    }
    client__resp_cleanup(&resp);
    return rc;
}

int
shard_delete(struct shard_client *c, const char *bucket, const char *key, struct shard_error *err)
{
    struct client_req req = {.method = "DELETE", .bucket = bucket, .key = key};
    struct client_resp resp;
    client__resp_init(&resp);
    int rc = client__perform(c, &req, NULL, 0, &resp, err);
    client__resp_cleanup(&resp);
    return rc;
}

/* Escapes 's' for XML character data. */
static void
xml_escape(struct buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            buf_append_str(b, "&lt;");
            break;
        case '>':
            buf_append_str(b, "&gt;");
            break;
        case '&':
            buf_append_str(b, "&amp;");
            break;
        case '"':
            buf_append_str(b, "&quot;");
            break;
        case '\r':
            buf_append_str(b, "&#13;");
            break;
        default:
            buf_append(b, s, 1);
        }
    }
}

/* True when 'key' holds a byte XML 1.0 cannot carry even as a reference
 * (a control character but tab, LF and CR): DeleteObjects cannot name it. */
static bool
is_xml_unsafe(const char *key)
{
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')
            return true;
    return false;
}

int
shard_delete_many(struct shard_client *c, const char *bucket, const char *const *keys, size_t n,
                  struct shard_error *err)
{
    int failed = 0;
    struct buf body;
    struct client_resp resp;
    buf_init(&body);
    client__resp_init(&resp);
    for (size_t start = 0; start < n; start += 1000) {
        size_t end = MIN(n, start + 1000), n_batch = 0;
        body.len = 0;
        buf_append_str(&body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
                              "<Delete><Quiet>true</Quiet>");
        for (size_t i = start; i < end; i++) {
            if (is_xml_unsafe(keys[i])) {
                /* One DeleteObject; an S3 refusal counts as one failed key. */
                struct shard_error one;
                int rc = shard_delete(c, bucket, keys[i], &one);
                if (rc != 0 && err != NULL && (failed == 0 || rc != SHARD_ERR_S3))
                    *err = one;
                if (rc != 0 && rc != SHARD_ERR_S3) {
                    failed = rc;
                    goto done;
                }
                failed += rc != 0;
                continue;
            }
            buf_append_str(&body, "<Object><Key>");
            xml_escape(&body, keys[i]);
            buf_append_str(&body, "</Key></Object>");
            n_batch++;
        }
        buf_append_str(&body, "</Delete>");
        if (n_batch == 0)
            continue;

        uint8_t md5[AUTH_CK_MAX_DIGEST], sha[32];
        char md5_hdr[64] = "Content-MD5: ", sha_hex[65];
        struct auth_checksum ck;
        auth_checksum_init(&ck, AUTH_CK_MD5);
        auth_checksum_update(&ck, body.ptr, body.len);
        size_t md5_len = auth_checksum_final(&ck, md5);
        base64_encode(md5, md5_len, md5_hdr + strlen(md5_hdr));
        auth_sha256(body.ptr, body.len, sha);
        hex_encode(sha, 32, sha_hex);
        struct client_req req = {.method = "POST",
                                 .bucket = bucket,
                                 .query = "delete=",
                                 .payload_hash = sha_hex,
                                 .headers = {md5_hdr},
                                 .n_headers = 1};
        int rc = client__perform(c, &req, body.ptr, body.len, &resp, err);
        if (rc != 0) {
            failed = rc;
            break;
        }
        int bad = client__xml_delete_result(resp.body.ptr, resp.body.len, failed == 0 ? err : NULL);
        if (bad < 0) {
            failed = client__err(err, SHARD_ERR_PROTO, resp.status, "MalformedXML",
                                 "cannot parse the DeleteObjects answer");
            break;
        }
        failed += bad;
    }
done:
    buf_cleanup(&body);
    client__resp_cleanup(&resp);
    return failed;
}

int
shard_bucket_create(struct shard_client *c, const char *bucket, struct shard_error *err)
{
    struct buf body;
    buf_init(&body);
    struct client_req req = {.method = "PUT", .bucket = bucket};
    char sha_hex[65];
    if (strcmp(c->cfg.region, "us-east-1") != 0) {
        buf_printf(&body,
                   "<CreateBucketConfiguration "
                   "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                   "<LocationConstraint>%s</LocationConstraint></CreateBucketConfiguration>",
                   c->cfg.region);
        uint8_t sha[32];
        auth_sha256(body.ptr, body.len, sha);
        hex_encode(sha, 32, sha_hex);
        req.payload_hash = sha_hex;
    }
    struct client_resp resp;
    client__resp_init(&resp);
    int rc = client__perform(c, &req, body.ptr, body.len, &resp, err);
    client__resp_cleanup(&resp);
    buf_cleanup(&body);
    return rc;
}

int
shard_bucket_delete(struct shard_client *c, const char *bucket, struct shard_error *err)
{
    struct client_req req = {.method = "DELETE", .bucket = bucket};
    struct client_resp resp;
    client__resp_init(&resp);
    int rc = client__perform(c, &req, NULL, 0, &resp, err);
    client__resp_cleanup(&resp);
    return rc;
}

void
client__list_query(struct buf *q, const char *prefix, const char *delimiter, unsigned max_keys,
                   const char *token)
{
    /* Parameters in canonical (sorted) order; values URI-encoded. */
    if (token != NULL && token[0] != '\0') {
        buf_append_str(q, "continuation-token=");
        uri_encode(q, token, strlen(token), false);
        buf_append_str(q, "&");
    }
    if (delimiter != NULL && delimiter[0] != '\0') {
        buf_append_str(q, "delimiter=");
        uri_encode(q, delimiter, strlen(delimiter), false);
        buf_append_str(q, "&");
    }
    /* Keys come back URI-encoded: any byte a key may hold (control
     * characters have no XML 1.0 form) survives the XML page. */
    buf_append_str(q, "encoding-type=url&list-type=2");
    if (max_keys > 0)
        buf_printf(q, "&max-keys=%u", max_keys);
    if (prefix != NULL && prefix[0] != '\0') {
        buf_append_str(q, "&prefix=");
        uri_encode(q, prefix, strlen(prefix), false);
    }
}

int
client__list_page(struct shard_client *c, const char *bucket, const char *prefix,
                  const char *delimiter, unsigned max_keys, const char *token,
                  struct client_list_parser *p, struct client_resp *resp, struct shard_error *err)
{
    struct buf q;
    buf_init(&q);
    client__list_query(&q, prefix, delimiter, max_keys, token);
    struct client_req req = {.method = "GET", .bucket = bucket, .query = q.ptr};
    int rc = client__perform(c, &req, NULL, 0, resp, err);
    buf_cleanup(&q);
    if (rc != 0)
        return rc;
    rc = client__list_parser_page(p, resp->body.ptr, resp->body.len);
    if (rc < 0)
        return client__err(err, SHARD_ERR_PROTO, resp->status, "MalformedXML",
                           "cannot parse the ListObjectsV2 answer");
    return rc;
}

int
shard_list(struct shard_client *c, const char *bucket, const char *prefix, const char *delimiter,
           shard_list_fn fn, void *ctx, struct shard_error *err)
{
    struct client_list_parser *p = client__list_parser_create(fn, ctx);
    struct client_resp resp;
    client__resp_init(&resp);
    char *token = NULL;
    int rc;
    for (;;) {
        rc = client__list_page(c, bucket, prefix, delimiter, 1000, token, p, &resp, err);
        if (rc != 0)
            break;
        if (!client__list_parser_truncated(p))
            break;
        const char *next = client__list_parser_token(p);
        if (next[0] == '\0') {
            rc = client__err(err, SHARD_ERR_PROTO, resp.status, "MalformedXML",
                             "truncated listing without a continuation token");
            break;
        }
        /* The same token again would ask for the same page forever. */
        if (token != NULL && strcmp(next, token) == 0) {
            rc = client__err(err, SHARD_ERR_PROTO, resp.status, "MalformedXML",
                             "the listing does not advance (continuation token repeated)");
            break;
        }
        free(token);
        token = xstrdup(next);
    }
    free(token);
    client__resp_cleanup(&resp);
    client__list_parser_destroy(p);
    return rc;
}

int
shard_put_buffer(struct shard_client *c, const char *bucket, const char *key, const void *data,
                 size_t len, struct shard_error *err)
{
    char crc_hdr[64] = "x-amz-checksum-crc32: ";
    client__crc32_b64(data, len, crc_hdr + strlen(crc_hdr));
    struct client_req req = {.method = "PUT",
                             .bucket = bucket,
                             .key = key,
                             .payload_hash = CLIENT_UNSIGNED,
                             .headers = {crc_hdr, "Content-Type: application/octet-stream"},
                             .n_headers = 2};
    struct client_resp resp;
    client__resp_init(&resp);
    int rc = CLIENT_RDMA_FALLBACK;
    if (len > 0 && client__rdma_wanted(c)) {
        /* The server reads the body out of 'data' (checksum as over HTTP). */
        struct transport_region *region;
        char hdr[CLIENT_RDMA_HDR_CAP];
        rc = client__rdma_prepare(c, (void *)data, len, true, &region, hdr, err);
        if (rc == 0) {
            req.headers[req.n_headers++] = hdr;
            client__rdma_hold(c);
            int prc = client__perform(c, &req, NULL, 0, &resp, err);
            client__rdma_release(c);
            transport_region_destroy(region);
            req.n_headers--;
            rc = client__rdma_judge(c, resp.status, resp.rdma_reply, len, err);
            if (rc == CLIENT_RDMA_OTHER)
                rc = prc;
        }
    }
    if (rc == CLIENT_RDMA_FALLBACK)
        rc = client__perform(c, &req, data, len, &resp, err);
    client__resp_cleanup(&resp);
    return rc;
}

int
shard_list_buckets(struct shard_client *c, shard_list_fn fn, void *ctx, struct shard_error *err)
{
    struct client_req req = {.method = "GET"};
    struct client_resp resp;
    client__resp_init(&resp);
    int rc = client__perform(c, &req, NULL, 0, &resp, err);
    if (rc == 0) {
        rc = client__xml_buckets(resp.body.ptr, resp.body.len, fn, ctx);
        if (rc < 0)
            rc = client__err(err, SHARD_ERR_PROTO, resp.status, "MalformedXML",
                             "cannot parse the ListBuckets answer");
    }
    client__resp_cleanup(&resp);
    return rc;
}

int
shard_request(struct shard_client *c, const char *method, const char *path,
              const struct shard_param *params, size_t n_params, const void *body, size_t body_len,
              struct shard_response *resp, struct shard_error *err)
{
    struct buf q;
    struct client_resp r;
    char sha_hex[65];
    int rc;
    buf_init(&q);
    client__resp_init(&r);
    if (resp != NULL)
        memset(resp, 0, sizeof(*resp));
    bool can_have_body = method != NULL && (!strcmp(method, "PUT") || !strcmp(method, "POST"));
    if (method == NULL || path == NULL || path[0] != '/' || (body_len > 0 && !can_have_body)) {
        rc = client__err(err, SHARD_ERR_ARG, 0, "InvalidArgument",
                         "shard_request wants a method, a path from '/', and a body "
                         "only with PUT or POST");
        goto fail;
    }
    for (size_t i = 0; i < n_params; i++) {
        if (i > 0)
            buf_append(&q, "&", 1);
        uri_encode(&q, params[i].name, strlen(params[i].name), false);
        buf_append(&q, "=", 1);
        if (params[i].value != NULL)
            uri_encode(&q, params[i].value, strlen(params[i].value), false);
    }
    struct client_req req = {.method = method, .path = path, .query = q.ptr};
    if (body_len > 0) {
        uint8_t sha[32];
        auth_sha256(body, body_len, sha);
        hex_encode(sha, 32, sha_hex);
        req.payload_hash = sha_hex;
    }
    rc = client__perform(c, &req, body, body_len, &r, err);
    if (resp != NULL) {
        resp->http_status = r.status;
        resp->body = xmalloc(r.body.len + 1);
        if (r.body.len > 0)
            memcpy(resp->body, r.body.ptr, r.body.len);
        resp->body[r.body.len] = '\0';
        resp->body_len = r.body.len;
    }
fail:
    if (r.body.ptr != NULL)
        auth_wipe(r.body.ptr, r.body.cap);
    client__resp_cleanup(&r);
    buf_cleanup(&q);
    return rc;
}

void
shard_response_cleanup(struct shard_response *resp)
{
    if (resp == NULL)
        return;
    if (resp->body != NULL)
        auth_wipe(resp->body, resp->body_len);
    free(resp->body);
    memset(resp, 0, sizeof(*resp));
}
