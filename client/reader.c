/*
 * reader.c: parallel range reads on one curl multi handle (one thread).
 *
 * The object span [start, start+len) is cut into chunks of chunk_size. Chunk
 * i lives in slot i % parallel, so at most 'parallel' chunks are in flight and
 * buffered: memory = parallel * chunk_size whatever the object size. The
 * reader hands bytes out strictly in order from the head chunk; a slot is
 * refilled with chunk i + parallel only after chunk i was fully delivered.
 *
 *   delivered   received            len
 *   |-----------|~~~~~~~~~~~~~~~~~~~|   one slot's buffer
 *   handed out   in the buffer, next  still to come (retried from 'received')
 *
 * A failed or short range is re-requested from its first byte not yet
 * received, with If-Match on the ETag, so bytes are neither duplicated nor
 * mixed from two versions. In buffer mode (shard_read_range) each slot
 * writes straight into the caller's buffer and nothing is delivered.
 */
#include "config.h"

#include "client/shard_int.h"
#include "transport/transport.h"

#include <stdlib.h>
#include <strings.h>

enum slot_state { SLOT_IDLE, SLOT_RUNNING, SLOT_WAITING, SLOT_DONE };

/* Deliver a running chunk's bytes once this many have arrived (fewer, larger writes). */
#define DELIVER_MIN (1u << 20)
#define ERRBODY_CAP 4096

struct slot {
    struct shard_reader *r;
    CURL *e;
    struct client_prepared prep;
    char *buf;           /* chunk_size bytes (window mode) or a window into the caller's buffer */
    uint64_t index, off; /* chunk number, absolute offset of its first byte */
    size_t len, received, delivered;
    size_t received_at_start; /* 'received' when the current attempt began */
    unsigned attempts;
    int64_t retry_at_ns;
    enum slot_state state;
    bool is_overflow;
    long status;
    struct buf errbody;
    char range_hdr[80];
    char total[24]; /* Content-Range "/N" */
    char etag[80];
};

struct shard_reader {
    struct shard_client *c;
    char *bucket, *key;
    char *query; /* "member=..." for a member reader, else NULL */
    char etag[80];
    char if_match[100];
    uint64_t start, len, object_size;
    uint64_t chunk_size;
    unsigned parallel;
    CURLM *multi;
    struct slot *slots;
    uint64_t n_chunks, next_chunk, head_chunk, done_chunks;
    char *dest; /* buffer mode: the caller's buffer */
    int error;  /* sticky: once set, every call returns it */
    struct shard_error err;
};

static size_t
slot_header(char *p, size_t size, size_t n, void *ctx)
{
    struct slot *s = ctx;
    size_t len = size * n;
    if (len > 14 && strncasecmp(p, "content-range:", 14) == 0) {
        const char *slash = memchr(p, '/', len);
        if (slash != NULL) {
            size_t k = 0;
            for (const char *q = slash + 1; q < p + len && *q >= '0' && *q <= '9'; q++)
                if (k + 1 < sizeof(s->total))
                    s->total[k++] = *q;
            s->total[k] = '\0';
        }
    } else if (len > 5 && strncasecmp(p, "etag:", 5) == 0) {
        size_t i = 5, k = 0;
        while (i < len && p[i] == ' ')
            i++;
        for (; i < len && p[i] != '\r' && p[i] != '\n' && k + 1 < sizeof(s->etag); i++)
            s->etag[k++] = p[i];
        s->etag[k] = '\0';
    }
    return len;
}

static size_t
slot_write(char *p, size_t size, size_t n, void *ctx)
{
    struct slot *s = ctx;
    size_t len = size * n;
    if (s->status == 0)
        curl_easy_getinfo(s->e, CURLINFO_RESPONSE_CODE, &s->status);
    bool is_whole = s->status == 200 && s->off + s->received == 0 &&
                    s->r->object_size != UINT64_MAX && s->len == s->r->object_size;
    if (s->status != 206 && !is_whole) {
        /* An error answer (or a 200 we cannot use): keep its body for the message. */
        if (s->errbody.len + len <= ERRBODY_CAP)
            buf_append(&s->errbody, p, len);
        return len;
    }
    if (len > s->len - s->received) {
        s->is_overflow = true;
        return 0; /* more bytes than asked for: abort, never deliver them */
    }
    memcpy(s->buf + s->received, p, len);
    s->received += len;
    return len;
}

/* Starts (or restarts) the request of slot 's' from its first byte not received. */
static int
slot_start(struct slot *s)
{
    struct shard_reader *r = s->r;
    uint64_t first = s->off + s->received, last = s->off + s->len - 1;
    snprintf(s->range_hdr, sizeof(s->range_hdr), "Range: bytes=%llu-%llu",
             (unsigned long long)first, (unsigned long long)last);
    struct client_req req = {
        .method = "GET", .bucket = r->bucket, .key = r->key, .query = r->query};
    req.headers[req.n_headers++] = s->range_hdr;
    if (r->if_match[0] != '\0')
        req.headers[req.n_headers++] = r->if_match;
    client__prepared_cleanup(&s->prep);
    curl_easy_reset(s->e);
    client__handle_defaults(r->c, s->e);
    if (client__prepare(r->c, s->e, &req, &s->prep) != 0)
        return client__err(&r->err, SHARD_ERR_ARG, 0, "SigningFailed", "cannot sign a range");
    curl_easy_setopt(s->e, CURLOPT_WRITEFUNCTION, slot_write);
    curl_easy_setopt(s->e, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(s->e, CURLOPT_HEADERFUNCTION, slot_header);
    curl_easy_setopt(s->e, CURLOPT_HEADERDATA, s);
    curl_easy_setopt(s->e, CURLOPT_PRIVATE, s);
    s->status = 0;
    s->errbody.len = 0;
    s->is_overflow = false;
    s->received_at_start = s->received;
    s->state = SLOT_RUNNING;
    curl_multi_add_handle(r->multi, s->e);
    return 0;
}

/* Gives the next unassigned chunk to idle slot 's', if any. */
static int
slot_assign(struct slot *s)
{
    struct shard_reader *r = s->r;
    if (r->next_chunk >= r->n_chunks) {
        s->state = SLOT_IDLE;
        return 0;
    }
    s->index = r->next_chunk++;
    s->off = r->start + s->index * r->chunk_size;
    s->len = (size_t)MIN(r->chunk_size, r->start + r->len - s->off);
    s->received = s->delivered = 0;
    s->attempts = 0;
    if (r->dest != NULL)
        s->buf = r->dest + (s->off - r->start);
    return slot_start(s);
}

/* Schedules a retry of 's', or fails the reader when its retries are spent. */
static int
slot_retry(struct slot *s, enum shard_errkind kind, const char *code, const char *what)
{
    struct shard_reader *r = s->r;
    if (s->received > s->received_at_start)
        s->attempts = 0; /* progress was made: a flaky link is not a dead one */
    s->attempts++;
    if (s->attempts > r->c->opts.max_retries)
        return client__err(&r->err, kind, s->status, code, "range at %llu: %s (after %u retries)",
                           (unsigned long long)(s->off + s->received), what,
                           r->c->opts.max_retries);
    s->state = SLOT_WAITING;
    s->retry_at_ns = clock_mono_ns() + (int64_t)client__backoff_ms(r->c, s->attempts) * 1000000;
    return 0;
}

/* Handles the end of one transfer of slot 's' with curl result 'cc'. */
static int
slot_finish(struct slot *s, CURLcode cc)
{
    struct shard_reader *r = s->r;
    curl_multi_remove_handle(r->multi, s->e);
    if (s->status == 0)
        curl_easy_getinfo(s->e, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->is_overflow)
        return client__err(&r->err, SHARD_ERR_PROTO, s->status, "TooManyBytes",
                           "the server sent more bytes than the range asked for");
    if (r->if_match[0] == '\0' && s->etag[0] != '\0')
        snprintf(r->if_match, sizeof(r->if_match), "If-Match: %s", s->etag);
    if (cc != CURLE_OK) {
        if (!client__is_retryable_curl(cc))
            return client__err_curl(&r->err, cc, NULL);
        return slot_retry(s, SHARD_ERR_NET, "ConnectionError", curl_easy_strerror(cc));
    }
    if (s->status == 206 || (s->status == 200 && s->errbody.len == 0)) {
        if (s->received == s->len) {
            s->state = SLOT_DONE;
            r->done_chunks++;
            return 0;
        }
        /* A short range: past the end of the object, or a dropped body. */
        if (s->total[0] != '\0' && strtoull(s->total, NULL, 10) < s->off + s->len)
            return client__err(&r->err, SHARD_ERR_ARG, s->status, "InvalidRange",
                               "the range ends past the end of the object (%s bytes)", s->total);
        return slot_retry(s, SHARD_ERR_NET, "ShortRead", "short read");
    }
    struct client_resp resp = {.status = s->status, .body = s->errbody};
    if (client__is_retryable_status(s->status)) {
        client__err_from_resp(&r->err, &resp);
        return slot_retry(s, SHARD_ERR_S3, r->err.code, r->err.message);
    }
    if (s->status == 416)
        return client__err(&r->err, SHARD_ERR_ARG, 416, "InvalidRange",
                           "the range starts past the end of the object");
    return client__err_from_resp(&r->err, &resp);
}

/*
 * Runs the transfers once: waits up to 'wait_ms' for activity, reaps finished
 * transfers, restarts retries that are due, and refills idle slots. Returns 0
 * or the reader's (sticky) error.
 */
static int
reader_drive(struct shard_reader *r, int wait_ms)
{
    int running = 0;
    int64_t now = clock_mono_ns();
    for (unsigned i = 0; i < r->parallel; i++) {
        struct slot *s = &r->slots[i];
        if (s->state == SLOT_WAITING) {
            int64_t left_ms = (s->retry_at_ns - now) / 1000000;
            if (left_ms <= 0) {
                if ((r->error = slot_start(s)) != 0)
                    return r->error;
            } else if (left_ms < wait_ms) {
                wait_ms = (int)left_ms;
            }
        }
    }
    curl_multi_poll(r->multi, NULL, 0, wait_ms, NULL);
    curl_multi_perform(r->multi, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(r->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        struct slot *s;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
        if ((r->error = slot_finish(s, msg->data.result)) != 0)
            return r->error;
        /* Buffer mode: a done chunk frees its slot at once. */
        if (r->dest != NULL && s->state == SLOT_DONE && (r->error = slot_assign(s)) != 0)
            return r->error;
    }
    return 0;
}

static struct shard_reader *
reader_create(struct shard_client *c, const char *bucket, const char *key, uint64_t start,
              uint64_t len, const struct shard_options *opts, char *dest)
{
    struct shard_reader *r = xcalloc(1, sizeof(*r));
    r->c = c;
    r->bucket = xstrdup(bucket);
    r->key = xstrdup(key);
    r->start = start;
    r->len = len;
    r->object_size = UINT64_MAX;
    r->chunk_size = opts && opts->chunk_size ? opts->chunk_size : c->opts.chunk_size;
    r->parallel = opts && opts->parallel ? opts->parallel : c->opts.parallel;
    r->n_chunks = (len + r->chunk_size - 1) / r->chunk_size;
    if (r->n_chunks < r->parallel)
        r->parallel = r->n_chunks ? (unsigned)r->n_chunks : 1;
    r->dest = dest;
    r->multi = curl_multi_init();
    curl_multi_setopt(r->multi, CURLMOPT_MAXCONNECTS, (long)r->parallel);
    r->slots = xcalloc(r->parallel, sizeof(*r->slots));
    for (unsigned i = 0; i < r->parallel; i++) {
        struct slot *s = &r->slots[i];
        s->r = r;
        s->e = curl_easy_init();
        buf_init(&s->errbody);
        if (dest == NULL)
            s->buf = xmalloc(MIN(r->chunk_size, len ? len : 1));
    }
    return r;
}

static int
reader_start(struct shard_reader *r)
{
    for (unsigned i = 0; i < r->parallel; i++)
        if ((r->error = slot_assign(&r->slots[i])) != 0)
            return r->error;
    return 0;
}

/* A reader needs a bucket and a key: without them the HEAD before it
 * would name the bucket (or nothing) and succeed. */
static int
reader_args_ok(const char *bucket, const char *key, struct shard_error *err)
{
    if (bucket != NULL && bucket[0] != '\0' && key != NULL && key[0] != '\0')
        return 1;
    client__err(err, SHARD_ERR_ARG, 0, "InvalidArgument", "a bucket and a key are required");
    return 0;
}

struct shard_reader *
shard_reader_open(struct shard_client *c, const char *bucket, const char *key, uint64_t off,
                  uint64_t len, const struct shard_options *opts, struct shard_error *err)
{
    struct shard_object_info info;
    if (!reader_args_ok(bucket, key, err))
        return NULL;
    if (shard_head(c, bucket, key, &info, err) != 0) {
        /* HEAD has no body: name the likely cause like S3's GET would. */
        if (err != NULL && err->http_status == 404)
            client__err(err, SHARD_ERR_S3, 404, "NoSuchKey", "The specified key does not exist.");
        return NULL;
    }
    if (off > info.size) {
        client__err(err, SHARD_ERR_ARG, 416, "InvalidRange",
                    "offset %llu is past the end of the object (%llu bytes)",
                    (unsigned long long)off, (unsigned long long)info.size);
        return NULL;
    }
    if (len > info.size - off)
        len = info.size - off;
    struct shard_reader *r = reader_create(c, bucket, key, off, len, opts, NULL);
    r->object_size = info.size;
    snprintf(r->etag, sizeof(r->etag), "%s", info.etag);
    if (info.etag[0] != '\0')
        snprintf(r->if_match, sizeof(r->if_match), "If-Match: %s", info.etag);
    if (reader_start(r) != 0) {
        if (err != NULL)
            *err = r->err;
        shard_reader_close(r);
        return NULL;
    }
    return r;
}

struct shard_reader *
shard_member_reader_open(struct shard_client *c, const char *bucket, const char *key,
                         const char *member, uint64_t off, uint64_t len,
                         const struct shard_options *opts, struct shard_error *err)
{
    struct shard_object_info info;
    if (!reader_args_ok(bucket, key, err))
        return NULL;
    if (shard_member_head(c, bucket, key, member, &info, err) != 0)
        return NULL;
    if (off > info.size) {
        client__err(err, SHARD_ERR_ARG, 416, "InvalidRange",
                    "offset %llu is past the end of the member (%llu bytes)",
                    (unsigned long long)off, (unsigned long long)info.size);
        return NULL;
    }
    if (len > info.size - off)
        len = info.size - off;
    struct shard_reader *r = reader_create(c, bucket, key, off, len, opts, NULL);
    struct buf q;
    buf_init(&q);
    client__member_query(&q, member);
    r->query = xstrdup(q.ptr);
    buf_cleanup(&q);
    r->object_size = info.size;
    snprintf(r->etag, sizeof(r->etag), "%s", info.etag);
    if (info.etag[0] != '\0')
        snprintf(r->if_match, sizeof(r->if_match), "If-Match: %s", info.etag);
    if (reader_start(r) != 0) {
        if (err != NULL)
            *err = r->err;
        shard_reader_close(r);
        return NULL;
    }
    return r;
}

uint64_t
shard_reader_length(const struct shard_reader *r)
{
    return r->len;
}

uint64_t
shard_reader_object_size(const struct shard_reader *r)
{
    return r->object_size;
}

int
shard_reader_next(struct shard_reader *r, const void **ptr, size_t *len, struct shard_error *err)
{
    for (;;) {
        if (r->error != 0)
            break;
        if (r->head_chunk >= r->n_chunks)
            return 0;
        struct slot *s = &r->slots[r->head_chunk % r->parallel];
        if (s->delivered == s->len && s->state == SLOT_DONE) {
            r->head_chunk++;
            if ((r->error = slot_assign(s)) != 0)
                break;
            continue;
        }
        size_t ready = s->received - s->delivered;
        if (ready > 0 && (s->state == SLOT_DONE || ready >= MIN(DELIVER_MIN, s->len))) {
            *ptr = s->buf + s->delivered;
            *len = ready;
            s->delivered = s->received;
            return 1;
        }
        if (reader_drive(r, 1000) != 0)
            break;
    }
    if (err != NULL)
        *err = r->err;
    return r->error;
}

long
shard_reader_read(struct shard_reader *r, void *buf, size_t cap, struct shard_error *err)
{
    /* Copies from the head chunk only what fits; the rest stays for the next call. */
    for (;;) {
        if (r->error != 0 || r->head_chunk >= r->n_chunks)
            break;
        struct slot *s = &r->slots[r->head_chunk % r->parallel];
        size_t ready = s->received - s->delivered;
        if (ready > 0) {
            size_t n = MIN(ready, cap);
            memcpy(buf, s->buf + s->delivered, n);
            s->delivered += n;
            return (long)n;
        }
        if (s->delivered == s->len && s->state == SLOT_DONE) {
            r->head_chunk++;
            if ((r->error = slot_assign(s)) != 0)
                break;
            continue;
        }
        if (reader_drive(r, 1000) != 0)
            break;
    }
    if (r->error != 0 && err != NULL)
        *err = r->err;
    return r->error;
}

void
shard_reader_close(struct shard_reader *r)
{
    if (r == NULL)
        return;
    for (unsigned i = 0; i < r->parallel; i++) {
        struct slot *s = &r->slots[i];
        if (s->state == SLOT_RUNNING)
            curl_multi_remove_handle(r->multi, s->e);
        curl_easy_cleanup(s->e);
        client__prepared_cleanup(&s->prep);
        buf_cleanup(&s->errbody);
        if (r->dest == NULL)
            free(s->buf);
    }
    curl_multi_cleanup(r->multi);
    free(r->slots);
    free(r->bucket);
    free(r->key);
    free(r->query);
    free(r);
}

/* shard_read_range over RDMA: one GET whose range the server writes into
 * 'buf' itself. Returns 0, CLIENT_RDMA_FALLBACK, or a negative error. */
static int
read_range_rdma(struct shard_client *c, const char *bucket, const char *key, uint64_t off,
                uint64_t len, void *buf, struct shard_error *err)
{
    struct transport_region *region;
    char hdr[CLIENT_RDMA_HDR_CAP], range[80];
    int rc = client__rdma_prepare(c, buf, len, false, &region, hdr, err);
    if (rc != 0)
        return rc;
    snprintf(range, sizeof(range), "Range: bytes=%llu-%llu", (unsigned long long)off,
             (unsigned long long)(off + len - 1));
    struct client_req req = {.method = "GET", .bucket = bucket, .key = key};
    req.headers[req.n_headers++] = range;
    req.headers[req.n_headers++] = hdr;
    struct client_resp resp;
    client__resp_init(&resp);
    client__rdma_hold(c);
    int prc = client__perform(c, &req, NULL, 0, &resp, err);
    client__rdma_release(c);
    transport_region_destroy(region);
    rc = client__rdma_judge(c, resp.status, resp.rdma_reply, len, err);
    if (rc == CLIENT_RDMA_OTHER) {
        rc = prc;
        if (resp.status == 416)
            rc = client__err(err, SHARD_ERR_ARG, 416, "InvalidRange",
                             "the range starts past the end of the object");
    }
    client__resp_cleanup(&resp);
    return rc;
}

int
shard_read_range(struct shard_client *c, const char *bucket, const char *key, uint64_t off,
                 uint64_t len, void *buf, struct shard_error *err)
{
    if (!reader_args_ok(bucket, key, err))
        return -1;
    if (len == 0)
        return 0;
    if (off > UINT64_MAX - len)
        return client__err(err, SHARD_ERR_ARG, 0, "InvalidRange", "range overflows");
    if (client__rdma_wanted(c)) {
        int rc = read_range_rdma(c, bucket, key, off, len, buf, err);
        if (rc != CLIENT_RDMA_FALLBACK)
            return rc;
    }
    struct shard_reader *r = reader_create(c, bucket, key, off, len, NULL, buf);
    int rc = reader_start(r);
    while (rc == 0 && r->done_chunks < r->n_chunks)
        rc = reader_drive(r, 1000);
    if (rc != 0 && err != NULL)
        *err = r->err;
    shard_reader_close(r);
    return rc;
}
