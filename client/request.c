/*
 * request.c: one signed S3 request. client__prepare builds the path-style
 * URL and the SigV4 headers with auth_sigv4_sign (the signer auth/ verifies
 * with); client__perform sends a request whose body is in memory, collects a
 * small answer, and retries network errors and 500/502/503/504 with
 * exponential backoff. Streaming transfers (reader.c, upload.c) use prepare
 * directly on their own handles.
 */
#include "config.h"

#include "auth/auth.h"
#include "client/shard_int.h"

#include <stdlib.h>
#include <strings.h>
#include <time.h>

/* Answers larger than this are not kept (a list page is ~300 KiB). */
#define RESP_BODY_CAP (64u << 20)

void
client__crc32_b64(const void *data, size_t len, char out[16])
{
    struct auth_checksum ck;
    uint8_t digest[AUTH_CK_MAX_DIGEST];
    auth_checksum_init(&ck, AUTH_CK_CRC32);
    auth_checksum_update(&ck, data, len);
    size_t n = auth_checksum_final(&ck, digest);
    base64_encode(digest, n, out);
}

void
client__prepared_cleanup(struct client_prepared *p)
{
    if (p == NULL)
        return;
    free(p->url);
    curl_slist_free_all(p->headers);
    p->url = NULL;
    p->headers = NULL;
}

int
client__prepare(struct shard_client *c, CURL *e, const struct client_req *req,
                struct client_prepared *p)
{
    struct buf path, url, line;
    buf_init(&path);
    buf_init(&url);
    buf_init(&line);
    struct auth_header hdrs[16];
    size_t n = 0;
    char amz_date[17], authz[1024];
    int rc = -1;

    memset(p, 0, sizeof(*p));
    buf_append_str(&path, c->base_path);
    if (req->path != NULL) {
        uri_encode(&path, req->path, strlen(req->path), true);
    } else {
        buf_append(&path, "/", 1);
        if (req->bucket != NULL)
            buf_append_str(&path, req->bucket);
        if (req->bucket != NULL && req->key != NULL && req->key[0] != '\0') {
            buf_append(&path, "/", 1);
            uri_encode(&path, req->key, strlen(req->key), true);
        }
    }
    const char *query = req->query ? req->query : "";
    buf_printf(&url, "%s%s%s%s", c->scheme_host, path.ptr, query[0] ? "?" : "", query);

    amz_date_format(clock_now_ns() / 1000000000, amz_date);
    hdrs[n++] = (struct auth_header){SLICE_LIT("host"), slice_from_cstr(c->host)};
    hdrs[n++] = (struct auth_header){SLICE_LIT("x-amz-date"), slice_from_cstr(amz_date)};
    hdrs[n++] = (struct auth_header){
        SLICE_LIT("x-amz-content-sha256"),
        slice_from_cstr(req->payload_hash ? req->payload_hash : CLIENT_EMPTY_SHA256)};
    if (c->cfg.session_token != NULL)
        hdrs[n++] = (struct auth_header){SLICE_LIT("x-amz-security-token"),
                                         slice_from_cstr(c->cfg.session_token)};
    for (size_t i = 0; i < req->n_headers && n < ARRAY_LEN(hdrs); i++) {
        const char *h = req->headers[i];
        const char *colon = strchr(h, ':');
        if (colon == NULL)
            goto fail;
        const char *v = colon + 1;
        while (*v == ' ')
            v++;
        hdrs[n++] = (struct auth_header){{h, (size_t)(colon - h)}, slice_from_cstr(v)};
    }
    struct auth_request ar = {
        .method = slice_from_cstr(req->method),
        .path = {path.ptr, path.len},
        .query = slice_from_cstr(query),
        .headers = hdrs,
        .n_headers = n,
        .now_s = clock_now_ns() / 1000000000,
        .region = c->cfg.region,
    };
    if (auth_sigv4_sign(&ar, c->cfg.access_key, c->cfg.secret_key, authz, sizeof(authz)) != 0)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        line.len = 0;
        buf_printf(&line, "%.*s: %.*s", (int)hdrs[i].name.len, hdrs[i].name.ptr,
                   (int)hdrs[i].value.len, hdrs[i].value.ptr);
        p->headers = curl_slist_append(p->headers, line.ptr);
    }
    line.len = 0;
    buf_printf(&line, "Authorization: %s", authz);
    p->headers = curl_slist_append(p->headers, line.ptr);
    /* No 100-continue round trip, and no form content type on POST. */
    p->headers = curl_slist_append(p->headers, "Expect:");
    bool has_type = false;
    for (size_t i = 0; i < req->n_headers; i++)
        has_type |= strncasecmp(req->headers[i], "content-type:", 13) == 0;
    if (strcmp(req->method, "POST") == 0 && !has_type)
        p->headers = curl_slist_append(p->headers, "Content-Type: application/xml");
    p->url = url.ptr;
    url.ptr = NULL;

    curl_easy_setopt(e, CURLOPT_URL, p->url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, p->headers);
    if (strcmp(req->method, "HEAD") == 0)
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    else if (strcmp(req->method, "PUT") == 0)
        curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
    else if (strcmp(req->method, "POST") == 0)
        curl_easy_setopt(e, CURLOPT_POST, 1L);
    else if (strcmp(req->method, "GET") != 0)
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
    rc = 0;
fail:
    if (rc != 0)
        client__prepared_cleanup(p);
    buf_cleanup(&path);
    buf_cleanup(&url);
    buf_cleanup(&line);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Retries                                                                   */
/* ------------------------------------------------------------------------ */

bool
client__is_retryable_status(long status)
{
    return status == 500 || status == 502 || status == 503 || status == 504;
}

bool
client__is_retryable_curl(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2_STREAM:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_WEIRD_SERVER_REPLY:
        return true;
    default:
        return false;
    }
}

uint64_t
client__backoff_ms(const struct shard_client *c, unsigned attempt)
{
    uint64_t ms = c->opts.retry_base_ms;
    for (unsigned i = 1; i < attempt && ms < 2000; i++)
        ms *= 2;
    if (ms > 2000)
        ms = 2000;
    /* Jitter in [ms/2, ms] so that parallel retries spread out. */
    uint64_t r = (uint64_t)clock_mono_ns();
    r ^= r >> 17;
    return ms / 2 + (ms / 2 ? r % (ms / 2 + 1) : 0);
}

void
client__backoff(const struct shard_client *c, unsigned attempt)
{
    uint64_t ms = client__backoff_ms(c, attempt);
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* ------------------------------------------------------------------------ */
/* One request with a body in memory                                         */
/* ------------------------------------------------------------------------ */

void
client__resp_init(struct client_resp *r)
{
    memset(r, 0, sizeof(*r));
    buf_init(&r->body);
}

void
client__resp_cleanup(struct client_resp *r)
{
    if (r != NULL)
        buf_cleanup(&r->body);
}

static void
resp_reset(struct client_resp *r)
{
    r->status = 0;
    r->body.len = 0;
    r->etag[0] = r->last_modified[0] = r->content_range_total[0] = '\0';
    r->length = 0;
    r->sunk = 0;
    r->has_sink_failed = false;
    r->rdma_reply = 0;
}

static size_t
collect_body(char *p, size_t size, size_t n, void *ctx)
{
    struct client_resp *r = ctx;
    size_t len = size * n;
    if (r->sink != NULL && r->status >= 200 && r->status < 300) {
        if (r->sink(r->sink_ctx, p, len) != 0) {
            r->has_sink_failed = true;
            return 0; /* curl stops with CURLE_WRITE_ERROR */
        }
        r->sunk += len;
        return len;
    }
    if (r->body.len + len <= RESP_BODY_CAP)
        buf_append(&r->body, p, len);
    return len;
}

/* Copies the value of header line 'p[0..len)' named 'name' into 'out'. */
static bool
header_value(const char *p, size_t len, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    if (len <= nl || strncasecmp(p, name, nl) != 0 || p[nl] != ':')
        return false;
    p += nl + 1;
    len -= nl + 1;
    while (len > 0 && (*p == ' ' || *p == '\t')) {
        p++;
        len--;
    }
    while (len > 0 && (p[len - 1] == '\r' || p[len - 1] == '\n' || p[len - 1] == ' '))
        len--;
    if (len >= cap)
        len = cap - 1;
    memcpy(out, p, len);
    out[len] = '\0';
    return true;
}

static size_t
collect_header(char *p, size_t size, size_t n, void *ctx)
{
    struct client_resp *r = ctx;
    size_t len = size * n;
    char tmp[64];
    if (len > 5 && strncmp(p, "HTTP/", 5) == 0) {
        /* A new response (after a redirect or 100): forget the last one's headers. */
        r->etag[0] = r->last_modified[0] = r->content_range_total[0] = '\0';
        /* The status decides where a streamed body goes (collect_body). */
        const char *sp = memchr(p, ' ', len);
        if (sp != NULL && (size_t)(sp - p) + 4 <= len)
            r->status = strtol(sp + 1, NULL, 10);
        r->rdma_reply = 0;
        return len;
    }
    header_value(p, len, "etag", r->etag, sizeof(r->etag));
    if (header_value(p, len, "x-amz-rdma-reply", tmp, sizeof(tmp)))
        r->rdma_reply = atoi(tmp);
    header_value(p, len, "last-modified", r->last_modified, sizeof(r->last_modified));
    if (header_value(p, len, "content-length", tmp, sizeof(tmp)))
        r->length = strtoull(tmp, NULL, 10);
    if (header_value(p, len, "content-range", tmp, sizeof(tmp))) {
        const char *slash = strrchr(tmp, '/');
        if (slash != NULL)
            snprintf(r->content_range_total, sizeof(r->content_range_total), "%s", slash + 1);
    }
    return len;
}

struct mem_src {
    const char *p;
    size_t len, off;
};

static size_t
read_mem(char *dst, size_t size, size_t n, void *ctx)
{
    struct mem_src *m = ctx;
    size_t len = MIN(size * n, m->len - m->off);
    memcpy(dst, m->p + m->off, len);
    m->off += len;
    return len;
}

static int
seek_mem(void *ctx, curl_off_t off, int origin)
{
    struct mem_src *m = ctx;
    if (origin != SEEK_SET || off < 0 || (size_t)off > m->len)
        return CURL_SEEKFUNC_FAIL;
    m->off = (size_t)off;
    return CURL_SEEKFUNC_OK;
}

int
client__perform(struct shard_client *c, const struct client_req *req, const void *body,
                size_t body_len, struct client_resp *resp, struct shard_error *err)
{
    int rc = SHARD_ERR_NET;
    char errbuf[CURL_ERROR_SIZE];
    for (unsigned attempt = 1;; attempt++) {
        struct client_prepared p;
        struct mem_src src = {body, body_len, 0};
        CURL *e = client__handle_get(c);
        resp_reset(resp);
        errbuf[0] = '\0';
        if (client__prepare(c, e, req, &p) != 0) {
            client__handle_put(c, e);
            return client__err(err, SHARD_ERR_ARG, 0, "SigningFailed",
                               "cannot sign the request (header too long?)");
        }
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect_body);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, resp);
        curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, collect_header);
        curl_easy_setopt(e, CURLOPT_HEADERDATA, resp);
        /* A long streamed answer goes to its sink in larger pieces (fewer
         * calls into a Python callback, for one); small answers keep curl's
         * default buffer, which costs nothing to set up per request. */
        if (resp->sink != NULL && resp->sink_buffer_len > 0)
            curl_easy_setopt(e, CURLOPT_BUFFERSIZE, resp->sink_buffer_len);
        if (strcmp(req->method, "PUT") == 0) {
            curl_easy_setopt(e, CURLOPT_READFUNCTION, read_mem);
            curl_easy_setopt(e, CURLOPT_READDATA, &src);
            curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, seek_mem);
            curl_easy_setopt(e, CURLOPT_SEEKDATA, &src);
            curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)body_len);
        } else if (strcmp(req->method, "POST") == 0) {
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, body_len ? (const char *)body : "");
        }
        CURLcode cc = curl_easy_perform(e);
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &resp->status);
        client__handle_put(c, e);
        client__prepared_cleanup(&p);
        /* A streamed body cannot be taken back: once any went out, no retry. */
        bool can_retry = attempt <= c->opts.max_retries && resp->sunk == 0;
        if (resp->has_sink_failed)
            return client__err(err, SHARD_ERR_IO, resp->status, "WriteFailed",
                               "the receiver of the answer stopped");
        if (cc != CURLE_OK) {
            rc = client__err_curl(err, cc, errbuf);
            if (can_retry && client__is_retryable_curl(cc)) {
                client__backoff(c, attempt);
                continue;
            }
            return rc;
        }
        if (resp->status >= 200 && resp->status < 300)
            return 0;
        rc = client__err_from_resp(err, resp);
        if (can_retry && client__is_retryable_status(resp->status)) {
            client__backoff(c, attempt);
            continue;
        }
        return rc;
    }
}
