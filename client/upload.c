/*
 * upload.c: an object from a file descriptor, as one PUT below the part
 * size or as a parallel multipart upload on one curl multi handle.
 *
 * Each of 'parallel' slots owns a part_size buffer: a part is read into it
 * (pread at the part's offset for a file, sequential reads for a stream),
 * its CRC32 computed, then sent as UploadPart with x-amz-checksum-crc32 and
 * retried from the buffer on network errors and 5xx. Memory is
 * parallel * part_size whatever the object size. Complete lists every
 * part's ETag and checksum; any failure aborts the upload so no parts leak.
 */
#include "config.h"

#include "auth/auth.h"
#include "client/shard_int.h"
#include "transport/transport.h"

#include <errno.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#define MAX_PARTS 10000

enum part_state { PART_IDLE, PART_RUNNING, PART_WAITING };

struct part_slot {
    struct upload *u;
    CURL *e;
    struct client_prepared prep;
    char *buf;
    size_t len, sent;
    unsigned number; /* 1-based */
    unsigned attempts;
    int64_t retry_at_ns;
    enum part_state state;
    long status;
    struct client_resp resp;
    char crc_hdr[64];
    char query[1200];
    struct transport_region *region; /* RDMA: the part's buffer, registered */
    char rdma_hdr[CLIENT_RDMA_HDR_CAP];
};

struct part_done {
    char etag[80];
    char crc[16];
};

struct upload {
    struct shard_client *c;
    const char *bucket, *key;
    int fd;
    uint64_t size; /* UINT64_MAX for a stream */
    uint64_t part_size;
    unsigned parallel;
    bool is_eof;
    unsigned next_part; /* 1-based number of the next part to read */
    uint64_t read_off;
    uint64_t bytes_done;
    char upload_id[1024];
    char *upload_id_enc;
    struct part_done *done;
    size_t done_cap;
    unsigned n_parts;
    CURLM *multi;
    struct part_slot *slots;
    shard_progress_fn progress;
    void *progress_ctx;
    struct shard_error *err;
};

/*
 * Reads up to 'len' bytes into 'buf' at 'off' (pread for a file) or next
 * (stream). Returns the count (less than 'len' only at the end) or -1.
 */
static ssize_t
source_read(struct upload *u, char *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = u->size == UINT64_MAX ? read(u->fd, buf + got, len - got)
                                          : pread(u->fd, buf + got, len - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

static size_t
part_read_body(char *dst, size_t size, size_t n, void *ctx)
{
    struct part_slot *s = ctx;
    size_t len = MIN(size * n, s->len - s->sent);
    memcpy(dst, s->buf + s->sent, len);
    s->sent += len;
    return len;
}

static int
part_seek(void *ctx, curl_off_t off, int origin)
{
    struct part_slot *s = ctx;
    if (origin != SEEK_SET || off < 0 || (size_t)off > s->len)
        return CURL_SEEKFUNC_FAIL;
    s->sent = (size_t)off;
    return CURL_SEEKFUNC_OK;
}

static size_t
part_body(char *p, size_t size, size_t n, void *ctx)
{
    struct part_slot *s = ctx;
    if (s->resp.body.len < 65536)
        buf_append(&s->resp.body, p, size * n);
    return size * n;
}

static size_t
part_header(char *p, size_t size, size_t n, void *ctx)
{
    struct part_slot *s = ctx;
    size_t len = size * n;
    if (len > 5 && strncasecmp(p, "etag:", 5) == 0) {
        size_t i = 5, k = 0;
        while (i < len && p[i] == ' ')
            i++;
        for (; i < len && p[i] != '\r' && p[i] != '\n' && k + 1 < sizeof(s->resp.etag); i++)
            s->resp.etag[k++] = p[i];
        s->resp.etag[k] = '\0';
    } else if (len > 17 && strncasecmp(p, "x-amz-rdma-reply:", 17) == 0) {
        s->resp.rdma_reply = atoi(p + 17);
    }
    return len;
}

static int
part_start(struct part_slot *s)
{
    struct upload *u = s->u;
    snprintf(s->query, sizeof(s->query), "partNumber=%u&uploadId=%s", s->number, u->upload_id_enc);
    struct client_req req = {.method = "PUT",
                             .bucket = u->bucket,
                             .key = u->key,
                             .query = s->query,
                             .payload_hash = CLIENT_UNSIGNED,
                             .headers = {s->crc_hdr},
                             .n_headers = 1};
    transport_region_destroy(s->region);
    s->region = NULL;
    if (client__rdma_wanted(u->c)) {
        /* The server reads the part out of s->buf; the HTTP body is empty. */
        int rc = client__rdma_prepare(u->c, s->buf, s->len, true, &s->region, s->rdma_hdr, u->err);
        if (rc < 0)
            return rc;
        if (rc == 0)
            req.headers[req.n_headers++] = s->rdma_hdr;
    }
    client__prepared_cleanup(&s->prep);
    curl_easy_reset(s->e);
    client__handle_defaults(u->c, s->e);
    if (client__prepare(u->c, s->e, &req, &s->prep) != 0)
        return client__err(u->err, SHARD_ERR_ARG, 0, "SigningFailed", "cannot sign a part");
    curl_easy_setopt(s->e, CURLOPT_READFUNCTION, part_read_body);
    curl_easy_setopt(s->e, CURLOPT_READDATA, s);
    curl_easy_setopt(s->e, CURLOPT_SEEKFUNCTION, part_seek);
    curl_easy_setopt(s->e, CURLOPT_SEEKDATA, s);
    curl_easy_setopt(s->e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)(s->region ? 0 : s->len));
    curl_easy_setopt(s->e, CURLOPT_UPLOAD_BUFFERSIZE, 512L * 1024);
    curl_easy_setopt(s->e, CURLOPT_WRITEFUNCTION, part_body);
    curl_easy_setopt(s->e, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->e, CURLOPT_HEADERFUNCTION, part_header);
    curl_easy_setopt(s->e, CURLOPT_HEADERDATA, s);
    curl_easy_setopt(s->e, CURLOPT_PRIVATE, s);
    s->sent = 0;
    s->resp.body.len = 0;
    s->resp.etag[0] = '\0';
    s->resp.rdma_reply = 0;
    s->state = PART_RUNNING;
    if (s->region)
        client__rdma_hold(u->c);
    curl_multi_add_handle(u->multi, s->e);
    return 0;
}

/* Reads the next part into idle slot 's' and starts it; leaves 's' idle at the end. */
static int
part_next(struct part_slot *s)
{
    struct upload *u = s->u;
    if (u->is_eof)
        return 0;
    ssize_t n = source_read(u, s->buf, u->part_size, u->read_off);
    if (n < 0)
        return client__err(u->err, SHARD_ERR_IO, 0, "ReadError", "cannot read the source: %s",
                           strerror(errno));
    if ((uint64_t)n < u->part_size)
        u->is_eof = true;
    if (u->size != UINT64_MAX && u->read_off + (uint64_t)n >= u->size)
        u->is_eof = true;
    if (n == 0 && u->next_part > 1)
        return 0; /* the stream ended on a part boundary */
    if (u->next_part > MAX_PARTS)
        return client__err(u->err, SHARD_ERR_ARG, 0, "TooManyParts",
                           "more than %d parts: use a larger --part-size", MAX_PARTS);
    s->len = (size_t)n;
    s->number = u->next_part++;
    u->read_off += (uint64_t)n;
    s->attempts = 0;
    strcpy(s->crc_hdr, "x-amz-checksum-crc32: ");
    client__crc32_b64(s->buf, s->len, s->crc_hdr + strlen(s->crc_hdr));
    if (s->number > u->done_cap) {
        size_t cap = u->done_cap ? u->done_cap * 2 : 64;
        while (cap < s->number)
            cap *= 2;
        u->done = xrealloc(u->done, cap * sizeof(*u->done));
        memset(u->done + u->done_cap, 0, (cap - u->done_cap) * sizeof(*u->done));
        u->done_cap = cap;
    }
    return part_start(s);
}

static int
part_finish(struct part_slot *s, CURLcode cc)
{
    struct upload *u = s->u;
    curl_multi_remove_handle(u->multi, s->e);
    curl_easy_getinfo(s->e, CURLINFO_RESPONSE_CODE, &s->status);
    s->resp.status = s->status;
    int rc;
    if (s->region) {
        client__rdma_release(u->c);
        transport_region_destroy(s->region);
        s->region = NULL;
        if (cc == CURLE_OK) {
            rc = client__rdma_judge(u->c, s->status, s->resp.rdma_reply, s->len, u->err);
            if (rc < 0)
                return rc;
            if (rc == CLIENT_RDMA_FALLBACK)
                return part_start(s); /* the same part, over HTTP */
        }
    }
    if (cc == CURLE_OK && s->status >= 200 && s->status < 300) {
        struct part_done *d = &u->done[s->number - 1];
        snprintf(d->etag, sizeof(d->etag), "%s", s->resp.etag);
        memcpy(d->crc, s->crc_hdr + strlen("x-amz-checksum-crc32: "), sizeof(d->crc));
        if (s->number > u->n_parts)
            u->n_parts = s->number;
        u->bytes_done += s->len;
        s->state = PART_IDLE;
        if (u->progress != NULL)
            u->progress(u->progress_ctx, u->bytes_done, u->size);
        return part_next(s);
    }
    if (cc != CURLE_OK) {
        rc = client__err_curl(u->err, cc, NULL);
        if (!client__is_retryable_curl(cc))
            return rc;
    } else {
        rc = client__err_from_resp(u->err, &s->resp);
        if (!client__is_retryable_status(s->status))
            return rc;
    }
    if (++s->attempts > u->c->opts.max_retries)
        return rc;
    s->state = PART_WAITING;
    s->retry_at_ns = clock_mono_ns() + (int64_t)client__backoff_ms(u->c, s->attempts) * 1000000;
    return 0;
}

static bool
any_busy(const struct upload *u)
{
    for (unsigned i = 0; i < u->parallel; i++)
        if (u->slots[i].state != PART_IDLE)
            return true;
    return false;
}

static int
parts_run(struct upload *u)
{
    int rc = 0;
    for (unsigned i = 0; i < u->parallel && rc == 0; i++)
        if (u->slots[i].state == PART_IDLE)
            rc = part_next(&u->slots[i]);
    while (rc == 0 && any_busy(u)) {
        int wait_ms = 1000, running;
        int64_t now = clock_mono_ns();
        for (unsigned i = 0; i < u->parallel && rc == 0; i++) {
            struct part_slot *s = &u->slots[i];
            if (s->state != PART_WAITING)
                continue;
            int64_t left_ms = (s->retry_at_ns - now) / 1000000;
            if (left_ms <= 0)
                rc = part_start(s);
            else if (left_ms < wait_ms)
                wait_ms = (int)left_ms;
        }
        curl_multi_poll(u->multi, NULL, 0, wait_ms, NULL);
        curl_multi_perform(u->multi, &running);
        CURLMsg *msg;
        int left;
        while (rc == 0 && (msg = curl_multi_info_read(u->multi, &left)) != NULL) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            struct part_slot *s;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
            rc = part_finish(s, msg->data.result);
        }
    }
    return rc;
}

static int
upload_create(struct upload *u)
{
    struct client_req req = {
        .method = "POST",
        .bucket = u->bucket,
        .key = u->key,
        .query = "uploads=",
        .headers = {"x-amz-checksum-algorithm: CRC32", "Content-Type: application/octet-stream"},
        .n_headers = 2};
    struct client_resp resp;
    client__resp_init(&resp);
    int rc = client__perform(u->c, &req, NULL, 0, &resp, u->err);
    if (rc == 0 && client__xml_text(resp.body.ptr, resp.body.len, "UploadId", u->upload_id,
                                    sizeof(u->upload_id)) != 0)
        rc = client__err(u->err, SHARD_ERR_PROTO, resp.status, "MalformedXML",
                         "CreateMultipartUpload answer without an UploadId");
    client__resp_cleanup(&resp);
    if (rc == 0) {
        struct buf b;
        buf_init(&b);
        uri_encode(&b, u->upload_id, strlen(u->upload_id), false);
        u->upload_id_enc = b.ptr;
    }
    return rc;
}

static int
upload_complete(struct upload *u)
{
    struct buf body, q;
    buf_init(&body);
    buf_init(&q);
    buf_append_str(&body, "<CompleteMultipartUpload>");
    for (unsigned i = 0; i < u->n_parts; i++)
        buf_printf(&body,
                   "<Part><ChecksumCRC32>%s</ChecksumCRC32><ETag>%s</ETag>"
                   "<PartNumber>%u</PartNumber></Part>",
                   u->done[i].crc, u->done[i].etag, i + 1);
    buf_append_str(&body, "</CompleteMultipartUpload>");
    buf_printf(&q, "uploadId=%s", u->upload_id_enc);
    uint8_t sha[32];
    char sha_hex[65];
    auth_sha256(body.ptr, body.len, sha);
    hex_encode(sha, 32, sha_hex);
    struct client_req req = {.method = "POST",
                             .bucket = u->bucket,
                             .key = u->key,
                             .query = q.ptr,
                             .payload_hash = sha_hex};
    struct client_resp resp;
    client__resp_init(&resp);
    int rc = client__perform(u->c, &req, body.ptr, body.len, &resp, u->err);
    /* Complete may answer 200 and still fail: the error is then in the body. */
    char code[64], message[256];
    if (rc == 0 && client__xml_error(resp.body.ptr, resp.body.len, code, sizeof(code), message,
                                     sizeof(message)) == 0)
        rc = client__err(u->err, SHARD_ERR_S3, resp.status, code, "%s", message);
    client__resp_cleanup(&resp);
    buf_cleanup(&body);
    buf_cleanup(&q);
    return rc;
}

static void
upload_abort(struct upload *u)
{
    struct buf q;
    buf_init(&q);
    buf_printf(&q, "uploadId=%s", u->upload_id_enc);
    struct client_req req = {
        .method = "DELETE", .bucket = u->bucket, .key = u->key, .query = q.ptr};
    struct client_resp resp;
    client__resp_init(&resp);
    client__perform(u->c, &req, NULL, 0, &resp, NULL);
    client__resp_cleanup(&resp);
    buf_cleanup(&q);
}

int
shard_put_fd(struct shard_client *c, const char *bucket, const char *key, int fd, uint64_t size,
             const struct shard_options *opts, shard_progress_fn progress, void *progress_ctx,
             struct shard_error *err)
{
    struct upload u = {.c = c, .bucket = bucket, .key = key, .fd = fd, .size = size};
    u.part_size = opts && opts->part_size ? opts->part_size : c->opts.part_size;
    u.parallel = opts && opts->parallel ? opts->parallel : c->opts.parallel;
    u.progress = progress;
    u.progress_ctx = progress_ctx;
    u.err = err;
    u.next_part = 1;
    if (u.part_size < 5u << 20 || u.part_size > (5ull << 30))
        return client__err(err, SHARD_ERR_ARG, 0, "InvalidPartSize",
                           "the part size must be between 5M and 5G");
    if (size != UINT64_MAX && size <= u.part_size)
        u.parallel = 1;
    else if (size != UINT64_MAX && (size + u.part_size - 1) / u.part_size < u.parallel)
        u.parallel = (unsigned)((size + u.part_size - 1) / u.part_size);
    int rc = 0;
    u.slots = xcalloc(u.parallel, sizeof(*u.slots));
    for (unsigned i = 0; i < u.parallel; i++) {
        u.slots[i].u = &u;
        client__resp_init(&u.slots[i].resp);
    }
    /* The first part decides: a short one is the whole object, sent as one PUT. */
    struct part_slot *s0 = &u.slots[0];
    s0->buf = xmalloc(size != UINT64_MAX ? MAX(1, MIN(size, u.part_size)) : u.part_size);
    ssize_t n =
        source_read(&u, s0->buf, size != UINT64_MAX ? MIN(size, u.part_size) : u.part_size, 0);
    if (n < 0) {
        rc = client__err(err, SHARD_ERR_IO, 0, "ReadError", "cannot read the source: %s",
                         strerror(errno));
        goto done;
    }
    if ((uint64_t)n < u.part_size || (size != UINT64_MAX && size <= u.part_size)) {
        rc = shard_put_buffer(c, bucket, key, s0->buf, (size_t)n, err);
        if (rc == 0 && progress != NULL)
            progress(progress_ctx, (uint64_t)n, (uint64_t)n);
        goto done;
    }
    if ((rc = upload_create(&u)) != 0)
        goto done;
    u.multi = curl_multi_init();
    for (unsigned i = 0; i < u.parallel; i++) {
        u.slots[i].e = curl_easy_init();
        if (i > 0)
            u.slots[i].buf = xmalloc(u.part_size);
    }
    /* Part 1 is already in slot 0. */
    s0->len = (size_t)n;
    s0->number = u.next_part++;
    u.read_off = (uint64_t)n;
    if (size != UINT64_MAX && u.read_off >= size)
        u.is_eof = true;
    u.done_cap = 64;
    u.done = xcalloc(u.done_cap, sizeof(*u.done));
    strcpy(s0->crc_hdr, "x-amz-checksum-crc32: ");
    client__crc32_b64(s0->buf, s0->len, s0->crc_hdr + strlen(s0->crc_hdr));
    rc = part_start(s0);
    if (rc == 0)
        rc = parts_run(&u);
    if (rc == 0)
        rc = upload_complete(&u);
    if (rc != 0)
        upload_abort(&u);
done:
    for (unsigned i = 0; i < u.parallel; i++) {
        struct part_slot *s = &u.slots[i];
        if (s->e != NULL) {
            if (s->state == PART_RUNNING)
                curl_multi_remove_handle(u.multi, s->e);
            curl_easy_cleanup(s->e);
        }
        client__prepared_cleanup(&s->prep);
        client__resp_cleanup(&s->resp);
        if (s->region) {
            client__rdma_release(c);
            transport_region_destroy(s->region);
        }
        free(s->buf);
    }
    if (u.multi != NULL)
        curl_multi_cleanup(u.multi);
    free(u.slots);
    free(u.done);
    free(u.upload_id_enc);
    return rc;
}
