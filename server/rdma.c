/*
 * rdma.c: the server's RDMA fast path (rdma.h) on transport/.
 *
 * The control stays S3: the request was authenticated and authorized like
 * any other, and the token header was signed (auth/ refuses unsigned
 * x-amz-* headers; an anonymous request with a token is refused here).
 * GET writes the range into the client's buffer: straight from a shared
 * read-only mapping of the volume (the page cache; one copy, done by the
 * provider) when the provider needs no local registration, else through a
 * bounded pool of registered bounce buffers filled by storage reads,
 * pipelined (config rdma_get_path). PUT and UploadPart read the client's
 * buffer into pool buffers and feed them to the ordinary body pipeline,
 * so hashing, checksums, extents, group commit and the ETag are the HTTP
 * path's. Invariants: no transfer reaches outside the token's bytes
 * (transport/ checks every post; the token's length must equal the range
 * or part), and a pool buffer returns to the pool only once the provider
 * is done with it (completed, failed, or cancelled by the endpoint reset
 * that follows a timeout: a killed client never keeps a buffer).
 */
#include "config.h"

#include "common/common.h"
#include "index/index.h"
#include "server/body.h"
#include "server/conf.h"
#include "server/errors.h"
#include "server/extents.h"
#include "server/metrics.h"
#include "server/rdma.h"
#include "server/req.h"
#include "server/server.h"
#include "storage/storage.h"
#include "transport/transport.h"

#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#define RDMA_MAPS_MAX 256
#define RDMA_NONCES 4096
#define RDMA_DEPTH 4              /* transfers in flight per request */
#define RDMA_MAP_CHUNK (8u << 20) /* one write from the mapping */
#define RDMA_POOL_WAIT_MS 5000    /* then 503 SlowDown */

struct pool_buf {
    struct pool_buf *next;
    uint8_t *ptr;
    struct transport_region *region; /* NULL when the provider needs none */
};

struct vol_map {
    int fd;
    uint8_t *base;
    size_t len;
};

struct rdma_server {
    struct transport_fabric *fabric;
    bool use_mmap;  /* GET from the volume mapping */
    int timeout_ms; /* a peer that completes nothing this long has failed */
    size_t buf_len;
    size_t n_bufs;
    uint8_t *arena; /* n_bufs * buf_len, page-aligned */
    struct transport_region *arena_region;
    struct pool_buf *bufs;
    pthread_mutex_t lock; /* pool, maps, nonces */
    pthread_cond_t cond;
    struct pool_buf *free_list;
    size_t n_free;
    struct vol_map maps[RDMA_MAPS_MAX];
    size_t n_maps;
    uint64_t nonces[RDMA_NONCES];
    size_t nonce_next;
    atomic_uint_fast64_t gets, puts, bytes_out, bytes_in, declined, failed;
    atomic_int in_flight; /* transfers of requests under way */
};

/* The request's accepted token. */
struct s3_rdma {
    struct transport_token t;
};

int
rdma_server_open(const struct config *cfg, struct storage *st, struct rdma_server **out)
{
    (void)st;
    *out = NULL;
    if (!cfg->rdma)
        return 0;
    struct rdma_server *rs = xcalloc(1, sizeof(*rs));
    pthread_mutex_init(&rs->lock, NULL);
    pthread_cond_init(&rs->cond, NULL);
    struct transport_config tc = {
        .provider = cfg->rdma_provider,
        .node = cfg->rdma_address[0] ? cfg->rdma_address : NULL,
        .has_progress_thread = true, /* completes our transfers, wakes their requests */
        .post_timeout_ms = (int)MIN(MAX(cfg->rdma_timeout_s, 1u), 3600u) * 1000,
    };
    int rc = transport_fabric_open(&tc, &rs->fabric);
    if (rc < 0) {
        log_error("rdma: provider %s cannot open (%s): every token is declined", cfg->rdma_provider,
                  rc == -ELIBACC ? transport_load_error() : strerror(-rc));
        goto fail;
    }
    rs->timeout_ms = (int)MIN(MAX(cfg->rdma_timeout_s, 1u), 3600u) * 1000;
    bool needs_local = transport_fabric_needs_local_region(rs->fabric);
    rs->use_mmap = !needs_local && strcmp(cfg->rdma_get_path, "bounce") != 0;
    rs->buf_len = ALIGN_UP(MAX(cfg->rdma_buffer_size, 65536u), 4096u);
    rs->n_bufs = MAX(cfg->rdma_buffers, 2u);
    rs->arena = mmap(NULL, rs->n_bufs * rs->buf_len, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (rs->arena == MAP_FAILED) {
        rs->arena = NULL;
        rc = -ENOMEM;
        goto fail;
    }
    if (needs_local) {
        rc = transport_region_create(rs->fabric, rs->arena, rs->n_bufs * rs->buf_len,
                                     TRANSPORT_LOCAL, &rs->arena_region);
        if (rc < 0)
            goto fail;
    }
    rs->bufs = xcalloc(rs->n_bufs, sizeof(*rs->bufs));
    for (size_t i = 0; i < rs->n_bufs; i++) {
        rs->bufs[i].ptr = rs->arena + i * rs->buf_len;
        rs->bufs[i].region = rs->arena_region;
        rs->bufs[i].next = rs->free_list;
        rs->free_list = &rs->bufs[i];
    }
    rs->n_free = rs->n_bufs;
    log_info("rdma: provider %s, GET %s, %zu buffers of %zu KiB",
             transport_fabric_provider(rs->fabric),
             rs->use_mmap ? "from the volume mapping" : "through buffers", rs->n_bufs,
             rs->buf_len >> 10);
    *out = rs;
    return 0;

fail:
    rdma_server_close(rs);
    return rc;
}

void
rdma_server_close(struct rdma_server *rs)
{
    if (!rs)
        return;
    for (size_t i = 0; i < rs->n_maps; i++)
        munmap(rs->maps[i].base, rs->maps[i].len);
    transport_region_destroy(rs->arena_region);
    transport_fabric_close(rs->fabric);
    if (rs->arena)
        munmap(rs->arena, rs->n_bufs * rs->buf_len);
    free(rs->bufs);
    pthread_cond_destroy(&rs->cond);
    pthread_mutex_destroy(&rs->lock);
    free(rs);
}

void
rdma_server_metrics(struct rdma_server *rs, struct buf *b)
{
    struct {
        const char *name, *type, *help;
        uint64_t v;
    } m[] = {
        {"shardstore_rdma_gets_total", "counter", "GetObject requests served over RDMA",
         rs ? atomic_load(&rs->gets) : 0},
        {"shardstore_rdma_puts_total", "counter", "PutObject and UploadPart bodies read over RDMA",
         rs ? atomic_load(&rs->puts) : 0},
        {"shardstore_rdma_bytes_out_total", "counter", "Bytes written to clients over RDMA",
         rs ? atomic_load(&rs->bytes_out) : 0},
        {"shardstore_rdma_bytes_in_total", "counter", "Bytes read from clients over RDMA",
         rs ? atomic_load(&rs->bytes_in) : 0},
        {"shardstore_rdma_declined_total", "counter", "Tokens answered x-amz-rdma-reply: 501",
         rs ? atomic_load(&rs->declined) : 0},
        {"shardstore_rdma_failed_total", "counter", "RDMA transfers that failed (peer gone)",
         rs ? atomic_load(&rs->failed) : 0},
        {"shardstore_rdma_in_flight", "gauge", "Requests moving bytes over RDMA now",
         rs ? (uint64_t)atomic_load(&rs->in_flight) : 0},
        {"shardstore_rdma_buffers_free", "gauge", "Registered RDMA buffers in the pool",
         rs ? rs->n_free : 0},
        {"shardstore_rdma_buffers", "gauge", "Registered RDMA buffers in all", rs ? rs->n_bufs : 0},
    };
    for (size_t i = 0; i < ARRAY_LEN(m); i++)
        metrics_render_value(b, m[i].name, m[i].type, m[i].help, (double)m[i].v);
}

/* ---- pool and volume mappings --------------------------------------------- */

/* Takes a pool buffer, waiting up to RDMA_POOL_WAIT_MS. Returns NULL when
 * none freed up (503 SlowDown). */
static struct pool_buf *
pool_get(struct rdma_server *rs)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += RDMA_POOL_WAIT_MS / 1000;
    pthread_mutex_lock(&rs->lock);
    while (!rs->free_list)
        if (pthread_cond_timedwait(&rs->cond, &rs->lock, &until) != 0)
            break;
    struct pool_buf *pb = rs->free_list;
    if (pb) {
        rs->free_list = pb->next;
        rs->n_free--;
    }
    pthread_mutex_unlock(&rs->lock);
    return pb;
}

static void
pool_put(struct rdma_server *rs, struct pool_buf *pb)
{
    if (!pb)
        return;
    pthread_mutex_lock(&rs->lock);
    pb->next = rs->free_list;
    rs->free_list = pb;
    rs->n_free++;
    pthread_cond_signal(&rs->cond);
    pthread_mutex_unlock(&rs->lock);
}

/* The read-only mapping of the whole volume file 'fd' (made once, kept
 * until close: the page tables then serve every later GET). Returns NULL
 * when it cannot be mapped or does not hold 'end' bytes. */
static const uint8_t *
volume_map(struct rdma_server *rs, int fd, uint64_t end)
{
    const uint8_t *base = NULL;
    pthread_mutex_lock(&rs->lock);
    for (size_t i = 0; i < rs->n_maps; i++)
        if (rs->maps[i].fd == fd && rs->maps[i].len >= end) {
            base = rs->maps[i].base;
            goto out;
        }
    struct stat stt;
    if (rs->n_maps == RDMA_MAPS_MAX || fstat(fd, &stt) != 0 || (uint64_t)stt.st_size < end)
        goto out;
    void *p = mmap(NULL, (size_t)stt.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        goto out;
    /* An older, shorter mapping of the same fd stays: a GET may use it. */
    rs->maps[rs->n_maps++] = (struct vol_map){fd, p, (size_t)stt.st_size};
    base = p;
out:
    pthread_mutex_unlock(&rs->lock);
    return base;
}

/* ---- the token ------------------------------------------------------------ */

/* Answers the token with a decline: 501, x-amz-rdma-reply: 501. */
void
s3_rdma_decline(struct s3_req *r, const char *why)
{
    if (r->srv->rdma)
        atomic_fetch_add(&r->srv->rdma->declined, 1);
    r->rdma_reply = 501;
    char msg[200];
    snprintf(msg, sizeof(msg), "RDMA declined: %s; repeat the request without x-amz-rdma-token.",
             why);
    s3_respond_error(r, S3_ERR_NOT_IMPLEMENTED, msg);
}

/* Whether 'nonce' is among the last RDMA_NONCES tokens served. */
static bool
nonce_is_replayed(struct rdma_server *rs, uint64_t nonce)
{
    bool is_seen = false;
    pthread_mutex_lock(&rs->lock);
    for (size_t i = 0; i < RDMA_NONCES && !is_seen; i++)
        is_seen = rs->nonces[i] == nonce && nonce != 0;
    pthread_mutex_unlock(&rs->lock);
    return is_seen;
}

/* Records the nonce of a token served. Only a served one: a client that
 * retries after a 503 or a lost answer sends the same token again. */
static void
nonce_record(struct rdma_server *rs, uint64_t nonce)
{
    pthread_mutex_lock(&rs->lock);
    rs->nonces[rs->nonce_next++ % RDMA_NONCES] = nonce;
    pthread_mutex_unlock(&rs->lock);
}

bool
s3_rdma_begin(struct s3_req *r)
{
    struct slice v = s3_req_header(r, "x-amz-rdma-token");
    if (!v.ptr)
        return true;
    if (r->principal.is_anonymous || !r->is_authenticated) {
        s3_respond_error(r, S3_ERR_ACCESS_DENIED, "x-amz-rdma-token must be signed.");
        return false;
    }
    struct rdma_server *rs = r->srv->rdma;
    if (!rs) {
        s3_rdma_decline(r, "RDMA is off on this server");
        return false;
    }
    struct transport_token t;
    int rc = transport_token_parse(v.ptr, v.len, &t);
    if (rc == -EPROTONOSUPPORT) {
        s3_rdma_decline(r, "token version not supported");
        return false;
    }
    if (rc < 0) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "Malformed x-amz-rdma-token.");
        return false;
    }
    if (strcmp(t.provider, transport_fabric_provider(rs->fabric)) != 0) {
        s3_rdma_decline(r, "the token names another provider");
        return false;
    }
    if (r->has_request_body && slice_eq(r->method, SLICE_LIT("PUT"))) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                         "A request with x-amz-rdma-token sends no body over HTTP.");
        return false;
    }
    if (nonce_is_replayed(rs, t.nonce)) {
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "x-amz-rdma-token was used before.");
        return false;
    }
    r->rdma = arena_calloc(r->arena, 1, sizeof(*r->rdma));
    r->rdma->t = t;
    return true;
}

uint64_t
s3_rdma_len(const struct s3_req *r)
{
    return r->rdma ? r->rdma->t.len : 0;
}

/* ---- GET -------------------------------------------------------------------- */

/* Writes 'len' bytes of 'rd' (a storage reader) from the volume mapping,
 * RDMA_DEPTH writes in flight. Returns 0, -ENOTSUP (no mapping: use the
 * buffers) or -errno. */
static int
get_from_mapping(struct rdma_server *rs, struct transport_xfer *x, struct storage_reader *rd,
                 uint64_t len)
{
    struct transport_done done[RDMA_DEPTH] = {{0}};
    size_t k = 0, posted = 0;
    int rc = 0;
    uint64_t pos = 0;
    while (pos < len && rc == 0) {
        struct storage_send_span span;
        rc = storage_reader_span(rd, pos, &span);
        if (rc < 0)
            break;
        const uint8_t *base = volume_map(rs, span.fd, span.offset + span.len);
        if (!base) {
            rc = pos == 0 ? -ENOTSUP : -EIO;
            break;
        }
        for (uint64_t o = 0; o < span.len && rc == 0;) {
            size_t n = (size_t)MIN(span.len - o, RDMA_MAP_CHUNK);
            struct transport_done *d = &done[k++ % RDMA_DEPTH];
            if (posted >= RDMA_DEPTH)
                rc = transport_xfer_wait(x, d, rs->timeout_ms);
            if (rc == 0)
                rc = transport_xfer_write(x, pos + o, base + span.offset + o, n, NULL, d);
            if (rc == 0)
                posted++;
            o += n;
        }
        pos += span.len;
    }
    /* The completions write into 'done', on this stack: wait for every
     * write still posted before it goes away. */
    for (size_t i = 0; i < RDMA_DEPTH; i++) {
        int w = done[i].status == 1 ? transport_xfer_wait(x, &done[i], rs->timeout_ms) : 0;
        if (w != 0 && rc == 0)
            rc = w;
    }
    return rc;
}

/* Writes 'len' bytes of 'rd' (or of 'mem' when not NULL) through pool
 * buffers: storage reads into one buffer while the others are written. */
static int
get_through_buffers(struct rdma_server *rs, struct transport_xfer *x, struct storage_reader *rd,
                    const uint8_t *mem, uint64_t len)
{
    struct pool_buf *pb[2] = {pool_get(rs), NULL};
    struct transport_done done[2] = {{0}, {0}};
    int rc = pb[0] ? 0 : -EAGAIN;
    if (rc == 0 && len > rs->buf_len && !(pb[1] = pool_get(rs)))
        rc = -EAGAIN;
    uint64_t pos = 0;
    for (unsigned k = 0; pos < len && rc == 0; k ^= 1) {
        if (done[k].status == 1 && (rc = transport_xfer_wait(x, &done[k], rs->timeout_ms)) != 0)
            break;
        size_t want = (size_t)MIN(len - pos, rs->buf_len);
        ssize_t n;
        if (mem) {
            memcpy(pb[k]->ptr, mem + pos, want);
            n = (ssize_t)want;
        } else if (rd) {
            n = storage_reader_read(rd, pos, pb[k]->ptr, want);
        } else {
            n = -EINVAL;
        }
        if (n <= 0) {
            rc = n < 0 ? (int)n : -EIO;
            break;
        }
        rc = transport_xfer_write(x, pos, pb[k]->ptr, (size_t)n, pb[k]->region, &done[k]);
        pos += (uint64_t)n;
    }
    /* The buffers return only once the provider is done with them. */
    for (unsigned k = 0; k < 2; k++) {
        int w = done[k].status == 1 ? transport_xfer_wait(x, &done[k], rs->timeout_ms) : 0;
        if (w != 0 && rc == 0)
            rc = w;
        pool_put(rs, pb[k]);
    }
    return rc;
}

struct MHD_Response *
s3_rdma_get(struct s3_req *r, const struct index_object *obj, uint64_t first, uint64_t len,
            int status)
{
    struct rdma_server *rs = r->srv->rdma;
    struct transport_xfer *x = NULL;
    struct storage_reader *rd = NULL;
    if (len != r->rdma->t.len) {
        char msg[160];
        snprintf(msg, sizeof(msg),
                 "The x-amz-rdma-token describes %" PRIu64 " bytes; the response has %" PRIu64 ".",
                 r->rdma->t.len, len);
        s3_req_unpin(r);
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, msg);
        return NULL;
    }
    atomic_fetch_add(&rs->in_flight, 1);
    int rc = transport_xfer_begin(rs->fabric, &r->rdma->t, &x);
    if (rc < 0)
        goto fail;
    if (obj->inline_len) {
        s3_req_unpin(r);
        if (rs->use_mmap) {
            struct transport_done d;
            rc = transport_xfer_write(x, 0, obj->inline_data + first, len, NULL, &d);
            if (rc == 0)
                rc = transport_xfer_wait(x, &d, rs->timeout_ms);
        } else {
            rc = get_through_buffers(rs, x, NULL, obj->inline_data + first, len);
        }
    } else {
        struct storage_extent *se = arena_calloc(r->arena, obj->n_extents + 1, sizeof(*se));
        extents_from_index(obj->extents, obj->n_extents, se);
        rc = storage_reader_create(r->srv->storage, r->pin, se, obj->n_extents, first, len, &rd);
        if (rc == 0 && rs->use_mmap)
            rc = get_from_mapping(rs, x, rd, len);
        else if (rc == 0)
            rc = -ENOTSUP;
        if (rc == -ENOTSUP)
            rc = get_through_buffers(rs, x, rd, NULL, len);
    }
    int end_rc = transport_xfer_end(x, rs->timeout_ms);
    x = NULL;
    if (rc == 0)
        rc = end_rc;
    if (rc < 0)
        goto fail;
    atomic_fetch_sub(&rs->in_flight, 1);
    storage_reader_destroy(rd);
    s3_req_unpin(r);
    nonce_record(rs, r->rdma->t.nonce);
    atomic_fetch_add(&rs->gets, 1);
    atomic_fetch_add(&rs->bytes_out, len);
    r->rdma_reply = status;
    return MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);

fail:
    atomic_fetch_sub(&rs->in_flight, 1);
    transport_xfer_end(x, rs->timeout_ms);
    storage_reader_destroy(rd);
    s3_req_unpin(r);
    if (rc == -EAGAIN) {
        s3_respond_error(r, S3_ERR_SLOW_DOWN, "No RDMA buffer is free; retry later.");
        return NULL;
    }
    if (rc == -ESTALE || rc == -EIO) {
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
        return NULL;
    }
    atomic_fetch_add(&rs->failed, 1);
    log_warn("request %s: rdma write failed: %s", r->request_id, strerror(-rc));
    s3_rdma_decline(r, "the transfer failed");
    return NULL;
}

/* ---- PUT ---------------------------------------------------------------------- */

enum s3_error
s3_rdma_pull(struct s3_req *r)
{
    struct rdma_server *rs = r->srv->rdma;
    uint64_t len = r->rdma->t.len;
    struct transport_xfer *x = NULL;
    struct pool_buf *pb[2] = {pool_get(rs), NULL};
    struct transport_done done[2] = {{0}, {0}};
    size_t got[2] = {0, 0};
    enum s3_error e = S3_OK;
    int rc = pb[0] ? 0 : -EAGAIN;
    if (rc == 0 && len > rs->buf_len && !(pb[1] = pool_get(rs)))
        rc = -EAGAIN;
    atomic_fetch_add(&rs->in_flight, 1);
    if (rc == 0)
        rc = transport_xfer_begin(rs->fabric, &r->rdma->t, &x);
    /* Chunk k is read into buffer k % 2 while chunk k - 1 is delivered. */
    uint64_t posted = 0, delivered = 0;
    unsigned k = 0;
    if (rc == 0) {
        got[0] = (size_t)MIN(len, rs->buf_len);
        rc = transport_xfer_read(x, 0, pb[0]->ptr, got[0], pb[0]->region, &done[0]);
        posted = got[0];
    }
    while (rc == 0 && delivered < len) {
        rc = transport_xfer_wait(x, &done[k], rs->timeout_ms);
        if (rc != 0)
            break;
        if (posted < len) {
            unsigned j = k ^ 1;
            got[j] = (size_t)MIN(len - posted, rs->buf_len);
            rc = transport_xfer_read(x, posted, pb[j]->ptr, got[j], pb[j]->region, &done[j]);
            posted += got[j];
        }
        body_deliver(r, (const char *)pb[k]->ptr, got[k]);
        delivered += got[k];
        if (r->body_error) {
            e = r->body_error;
            break;
        }
        k ^= 1;
    }
    for (unsigned i = 0; i < 2; i++) {
        if (done[i].status == 1)
            transport_xfer_wait(x, &done[i], rs->timeout_ms);
        pool_put(rs, pb[i]);
    }
    int end_rc = transport_xfer_end(x, rs->timeout_ms);
    atomic_fetch_sub(&rs->in_flight, 1);
    if (rc == 0 && e == S3_OK)
        rc = end_rc;
    if (e != S3_OK)
        return e;
    if (rc == -EAGAIN)
        return S3_ERR_SLOW_DOWN;
    if (rc < 0) {
        atomic_fetch_add(&rs->failed, 1);
        atomic_fetch_add(&rs->declined, 1);
        log_warn("request %s: rdma read failed: %s", r->request_id, strerror(-rc));
        r->rdma_reply = 501;
        return S3_ERR_NOT_IMPLEMENTED;
    }
    nonce_record(rs, r->rdma->t.nonce);
    atomic_fetch_add(&rs->puts, 1);
    atomic_fetch_add(&rs->bytes_in, len);
    r->rdma_reply = 200;
    return S3_OK;
}
