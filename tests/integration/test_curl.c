/*
 * test_curl.c: the basic object lifecycle through libcurl's own SigV4 signer
 * (CURLOPT_AWS_SIGV4 "aws:amz:us-east-1:s3"), against a real shardstore.
 *
 * Create a bucket, PUT 3 MiB (streamed through a read callback, with
 * Expect: 100-continue), GET it back, ranged GET, HEAD, list, DELETE, delete
 * the bucket. curl 7.88 signs the x-amz-content-sha256 value we pass, so
 * uploads say UNSIGNED-PAYLOAD and bodiless requests the hash of "".
 */
#define _GNU_SOURCE
#include "tests/lib/harness.h"
#include "tests/lib/test.h"

#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define OBJ_LEN ((size_t)3 << 20)

struct buf {
    char *data;
    size_t len;
    size_t cap;
};

struct upload {
    const unsigned char *data;
    size_t len;
    size_t off;
};

struct resp {
    long status;
    struct buf body;
    struct buf headers;
};

static struct test_server srv;

static void
buf_append(struct buf *b, const void *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->data = realloc(b->data, cap);
        if (!b->data)
            abort();
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static size_t
on_body(char *p, size_t size, size_t nmemb, void *ud)
{
    buf_append(ud, p, size * nmemb);
    return size * nmemb;
}

static size_t
on_read(char *p, size_t size, size_t nmemb, void *ud)
{
    struct upload *u = ud;
    size_t n = size * nmemb;
    if (n > u->len - u->off)
        n = u->len - u->off;
    memcpy(p, u->data + u->off, n);
    u->off += n;
    return n;
}

static void
resp_free(struct resp *r)
{
    free(r->body.data);
    free(r->headers.data);
    memset(r, 0, sizeof(*r));
}

/* Returns the value of response header 'name' (case-insensitive) copied into
 * 'out', or NULL when absent. */
static const char *
resp_header(const struct resp *r, const char *name, char *out, size_t cap)
{
    if (!r->headers.data)
        return NULL;
    size_t nlen = strlen(name);
    const char *line = r->headers.data;
    while (line && *line) {
        const char *eol = strstr(line, "\r\n");
        size_t llen = eol ? (size_t)(eol - line) : strlen(line);
        if (llen > nlen && strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
            const char *v = line + nlen + 1;
            while (*v == ' ')
                v++;
            size_t vlen = llen - (size_t)(v - line);
            if (vlen >= cap)
                vlen = cap - 1;
            memcpy(out, v, vlen);
            out[vlen] = '\0';
            return out;
        }
        line = eol ? eol + 2 : NULL;
    }
    return NULL;
}

/* One signed request. 'path' is URL-encoded and starts with '/'; 'up' (may
 * be NULL) is the body of a PUT; 'range' (may be NULL) a Range value. */
static void
request(const char *method, const char *path, struct upload *up, const char *range, struct resp *r)
{
    memset(r, 0, sizeof(*r));
    CURL *c = curl_easy_init();
    ASSERT(c != NULL);
    char url[2048];
    snprintf(url, sizeof(url), "%s%s", srv.endpoint, path);
    struct curl_slist *h = NULL;
    char range_hdr[256];
    if (up) {
        h = curl_slist_append(h, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
        h = curl_slist_append(h, "Content-Type: application/octet-stream");
    } else {
        h = curl_slist_append(h, "x-amz-content-sha256: " EMPTY_SHA256);
    }
    if (range) {
        snprintf(range_hdr, sizeof(range_hdr), "Range: %s", range);
        h = curl_slist_append(h, range_hdr);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_AWS_SIGV4, "aws:amz:" TEST_REGION ":s3");
    curl_easy_setopt(c, CURLOPT_USERPWD, TEST_ACCESS_KEY ":" TEST_SECRET_KEY);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r->body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r->headers);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (up) {
        up->off = 0;
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, up);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)up->len);
    } else if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    }
    if (strcmp(method, "PUT") == 0 && !up) {
        /* A bodiless PUT (CreateBucket). */
        static struct upload none;
        none.data = (const unsigned char *)"";
        none.len = 0;
        none.off = 0;
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, &none);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)0);
    }
    CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK)
        TEST_FAIL("%s %s: curl error %d (%s)", method, path, (int)rc, curl_easy_strerror(rc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

static void
expect_status(const struct resp *r, long want, const char *what)
{
    if (r->status != want)
        TEST_FAIL("%s: HTTP %ld, expected %ld; body: %.400s", what, r->status, want,
                  r->body.data ? r->body.data : "");
}

static void
expect_error_code(const struct resp *r, long status, const char *code, const char *what)
{
    expect_status(r, status, what);
    char tag[128];
    snprintf(tag, sizeof(tag), "<Code>%s</Code>", code);
    if (!r->body.data || !strstr(r->body.data, tag))
        TEST_FAIL("%s: body lacks %s: %.400s", what, tag, r->body.data ? r->body.data : "");
    if (!strstr(r->body.data, "<RequestId>"))
        TEST_FAIL("%s: body lacks <RequestId>: %.400s", what, r->body.data);
}

static void
run(void)
{
    struct resp r;

    /* The data: a deterministic pseudo-random 3 MiB. */
    unsigned char *data = malloc(OBJ_LEN);
    ASSERT(data != NULL);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < OBJ_LEN; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        data[i] = (unsigned char)(x >> 24);
    }
    struct upload up = {data, OBJ_LEN, 0};

    request("PUT", "/curl-bucket", NULL, NULL, &r);
    expect_status(&r, 200, "CreateBucket");
    resp_free(&r);

    request("PUT", "/curl-bucket/dir/obj%20one", &up, NULL, &r);
    expect_status(&r, 200, "PutObject 3 MiB");
    char etag[128];
    if (!resp_header(&r, "ETag", etag, sizeof(etag)))
        TEST_FAIL("PutObject: no ETag header");
    ASSERT_EQ(strlen(etag), 34); /* "32 hex digits" */
    resp_free(&r);

    request("GET", "/curl-bucket/dir/obj%20one", NULL, NULL, &r);
    expect_status(&r, 200, "GetObject");
    ASSERT_UEQ(r.body.len, OBJ_LEN);
    ASSERT_MEM_EQ(r.body.data, data, OBJ_LEN);
    char val[256];
    ASSERT(resp_header(&r, "ETag", val, sizeof(val)) != NULL);
    ASSERT_STR_EQ(val, etag);
    resp_free(&r);

    request("GET", "/curl-bucket/dir/obj%20one", NULL, "bytes=1048576-1049599", &r);
    expect_status(&r, 206, "ranged GetObject");
    ASSERT_UEQ(r.body.len, 1024);
    ASSERT_MEM_EQ(r.body.data, data + 1048576, 1024);
    ASSERT(resp_header(&r, "Content-Range", val, sizeof(val)) != NULL);
    ASSERT_STR_EQ(val, "bytes 1048576-1049599/3145728");
    resp_free(&r);

    request("GET", "/curl-bucket/dir/obj%20one", NULL, "bytes=-100", &r);
    expect_status(&r, 206, "suffix-ranged GetObject");
    ASSERT_UEQ(r.body.len, 100);
    ASSERT_MEM_EQ(r.body.data, data + OBJ_LEN - 100, 100);
    resp_free(&r);

    request("GET", "/curl-bucket/dir/obj%20one", NULL, "bytes=3145728-", &r);
    expect_error_code(&r, 416, "InvalidRange", "unsatisfiable range");
    resp_free(&r);

    request("HEAD", "/curl-bucket/dir/obj%20one", NULL, NULL, &r);
    expect_status(&r, 200, "HeadObject");
    ASSERT(resp_header(&r, "Content-Length", val, sizeof(val)) != NULL);
    ASSERT_STR_EQ(val, "3145728");
    ASSERT(resp_header(&r, "ETag", val, sizeof(val)) != NULL);
    ASSERT_STR_EQ(val, etag);
    ASSERT(resp_header(&r, "Last-Modified", val, sizeof(val)) != NULL);
    ASSERT_UEQ(r.body.len, 0);
    resp_free(&r);

    request("GET", "/curl-bucket?list-type=2", NULL, NULL, &r);
    expect_status(&r, 200, "ListObjectsV2");
    if (!strstr(r.body.data, "<Key>dir/obj one</Key>"))
        TEST_FAIL("listing lacks the key: %.600s", r.body.data);
    if (!strstr(r.body.data, "<Size>3145728</Size>"))
        TEST_FAIL("listing lacks the size: %.600s", r.body.data);
    if (!strstr(r.body.data, "<KeyCount>1</KeyCount>"))
        TEST_FAIL("listing KeyCount: %.600s", r.body.data);
    resp_free(&r);

    /* curl 7.88 signs the query string as written: keep it sorted. */
    request("GET", "/curl-bucket?delimiter=%2F&list-type=2&prefix=dir%2F", NULL, NULL, &r);
    expect_status(&r, 200, "ListObjectsV2 with prefix");
    if (!strstr(r.body.data, "<Key>dir/obj one</Key>"))
        TEST_FAIL("prefix listing lacks the key: %.600s", r.body.data);
    resp_free(&r);

    request("DELETE", "/curl-bucket", NULL, NULL, &r);
    expect_error_code(&r, 409, "BucketNotEmpty", "DeleteBucket of a non-empty bucket");
    resp_free(&r);

    request("DELETE", "/curl-bucket/dir/obj%20one", NULL, NULL, &r);
    expect_status(&r, 204, "DeleteObject");
    resp_free(&r);

    request("GET", "/curl-bucket/dir/obj%20one", NULL, NULL, &r);
    expect_error_code(&r, 404, "NoSuchKey", "GetObject after delete");
    resp_free(&r);

    request("DELETE", "/curl-bucket", NULL, NULL, &r);
    expect_status(&r, 204, "DeleteBucket");
    resp_free(&r);

    request("GET", "/curl-bucket?list-type=2", NULL, NULL, &r);
    expect_error_code(&r, 404, "NoSuchBucket", "ListObjectsV2 after DeleteBucket");
    resp_free(&r);

    free(data);
}

/* TEST_FAIL exits: never leave the server or its temp dir behind. */
static void
at_exit(void)
{
    test_server_cleanup(&srv);
}

int
main(void)
{
    test_server_init(&srv, "curl", NULL);
    atexit(at_exit);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        TEST_FAIL("curl_global_init");
    if (test_server_start(&srv) != 0)
        TEST_FAIL("server did not start");
    run();
    int rc = test_server_stop(&srv);
    test_server_cleanup(&srv);
    curl_global_cleanup();
    if (rc != 0)
        TEST_FAIL("server teardown failed");
    printf("test_curl: ok\n");
    return 0;
}
