/*
 * rdma.c: libshard's side of the RDMA fast path, on transport/. The client
 * is the passive side: it registers the caller's memory (a GET's target, a
 * PUT's source), signs the token into the request, and lets the server move
 * the bytes; its fabric's progress thread runs while a request is in
 * flight (the tcp provider moves emulated RMA only when polled).
 *
 * Fallback: under SHARD_TRANSPORT_AUTO a fabric that will not open, a 501
 * decline, or a 2xx answer without x-amz-rdma-reply (a server that ignored
 * the token) sends the request again over HTTP, counted in the transport
 * stats with the reason, and the client stops asking that endpoint for
 * RDMA; under SHARD_TRANSPORT_RDMA each is an error
 * (SHARD_ERR_NET, code "RdmaDeclined"), so a caller can prove which path
 * moved the bytes. The fabric opens once per client, on first use.
 */
#include "config.h"

#include "client/shard_int.h"
#include "transport/transport.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static uint64_t
nonce_next(void)
{
    /* Unique per token: a random base drawn once per process, plus a
     * counter (the server refuses a nonce it served before). */
    static _Atomic uint64_t base, counter;
    uint64_t b = atomic_load(&base);
    if (b == 0) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
            r = (uint64_t)clock_now_ns() ^ ((uint64_t)getpid() << 32);
        uint64_t zero = 0;
        atomic_compare_exchange_strong(&base, &zero, r | 1);
        b = atomic_load(&base);
    }
    uint64_t n = b + atomic_fetch_add(&counter, 1) * 0x9E3779B97F4A7C15ull;
    return n ? n : 1;
}

/* Counts a fallback with 'why'. Caller holds rdma_lock. */
static void
note_fallback(struct shard_client *c, const char *why)
{
    c->rdma_stats.http_fallbacks++;
    snprintf(c->rdma_stats.last_fallback, sizeof(c->rdma_stats.last_fallback), "%s", why);
}

/* Opens the fabric on first use. Returns it, or NULL (unusable). */
static struct transport_fabric *
fabric_get(struct shard_client *c, char *why, size_t why_cap)
{
    pthread_mutex_lock(&c->rdma_lock);
    if (c->rdma_state == 0) {
        const char *prov =
            c->opts.rdma_provider ? c->opts.rdma_provider : getenv("AWS_RDMA_PROVIDER");
        const char *node = c->opts.rdma_address ? c->opts.rdma_address : getenv("AWS_RDMA_ADDRESS");
        struct transport_config tc = {
            .provider = prov && *prov ? prov : "auto",
            .node = node && *node ? node : NULL,
            .has_progress_thread = true,
            /* Over shm the client's progress threads do the copies: one
             * lane (endpoint and thread) per core, up to 2. */
            .lanes = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 2 : 1,
        };
        int rc = transport_fabric_open(&tc, &c->fabric);
        c->rdma_state = rc == 0 ? 1 : -1;
        if (rc != 0)
            snprintf(c->rdma_stats.last_fallback, sizeof(c->rdma_stats.last_fallback),
                     "RDMA provider %s cannot open: %s", tc.provider,
                     rc == -ENOTSUP   ? "not built with libfabric or unknown provider"
                     : rc == -ELIBACC ? transport_load_error()
                                      : strerror(-rc));
    }
    struct transport_fabric *f = c->rdma_state == 1 ? c->fabric : NULL;
    if (!f)
        snprintf(why, why_cap, "%s", c->rdma_stats.last_fallback);
    pthread_mutex_unlock(&c->rdma_lock);
    return f;
}

bool
client__rdma_wanted(struct shard_client *c)
{
    if (c->opts.transport == SHARD_TRANSPORT_HTTP)
        return false;
    pthread_mutex_lock(&c->rdma_lock);
    bool is_wanted = c->rdma_state >= 0;
    pthread_mutex_unlock(&c->rdma_lock);
    return is_wanted;
}

int
client__rdma_prepare(struct shard_client *c, void *buf, size_t len, bool is_put,
                     struct transport_region **region, char hdr[CLIENT_RDMA_HDR_CAP],
                     struct shard_error *err)
{
    char why[160];
    *region = NULL;
    struct transport_fabric *f = fabric_get(c, why, sizeof(why));
    int rc = f ? 0 : -ENODEV;
    if (rc == 0)
        rc = transport_region_create(
            f, buf, len, is_put ? TRANSPORT_REMOTE_READ : TRANSPORT_REMOTE_WRITE, region);
    if (rc != 0 && f)
        snprintf(why, sizeof(why), "cannot register %zu bytes: %s", len, strerror(-rc));
    struct transport_token t;
    if (rc == 0 && (rc = transport_region_token(*region, buf, len, nonce_next(), &t)) == 0) {
        int n = snprintf(hdr, CLIENT_RDMA_HDR_CAP, "x-amz-rdma-token: ");
        rc = transport_token_format(&t, hdr + n, (size_t)(CLIENT_RDMA_HDR_CAP - n));
        if (rc > 0)
            return 0;
        snprintf(why, sizeof(why), "cannot encode the token");
    }
    transport_region_destroy(*region);
    *region = NULL;
    if (c->opts.transport == SHARD_TRANSPORT_RDMA)
        return client__err(err, SHARD_ERR_NET, 0, "RdmaDeclined", "%s", why);
    pthread_mutex_lock(&c->rdma_lock);
    note_fallback(c, why);
    pthread_mutex_unlock(&c->rdma_lock);
    return CLIENT_RDMA_FALLBACK;
}

int
client__rdma_judge(struct shard_client *c, long status, int rdma_reply, uint64_t len,
                   struct shard_error *err)
{
    bool is_ok = status >= 200 && status < 300;
    if (is_ok && (rdma_reply == 200 || rdma_reply == 206)) {
        pthread_mutex_lock(&c->rdma_lock);
        c->rdma_stats.rdma_requests++;
        c->rdma_stats.rdma_bytes += len;
        pthread_mutex_unlock(&c->rdma_lock);
        return 0;
    }
    const char *why = NULL;
    if (status == 501 && rdma_reply == 501)
        why = "the server declined RDMA (x-amz-rdma-reply: 501)";
    else if (is_ok)
        why = "the server ignored x-amz-rdma-token (no x-amz-rdma-reply)";
    if (!why)
        return CLIENT_RDMA_OTHER;
    if (c->opts.transport == SHARD_TRANSPORT_RDMA)
        return client__err(err, SHARD_ERR_NET, status, "RdmaDeclined", "%s", why);
    pthread_mutex_lock(&c->rdma_lock);
    note_fallback(c, why);
    /* This endpoint does not serve RDMA: stop asking for the client's life. */
    c->rdma_state = -1;
    pthread_mutex_unlock(&c->rdma_lock);
    return CLIENT_RDMA_FALLBACK;
}

void
client__rdma_hold(struct shard_client *c)
{
    if (c->fabric)
        transport_fabric_hold(c->fabric);
}

void
client__rdma_release(struct shard_client *c)
{
    if (c->fabric)
        transport_fabric_release(c->fabric);
}

void
client__rdma_cleanup(struct shard_client *c)
{
    transport_fabric_close(c->fabric);
    c->fabric = NULL;
    pthread_mutex_destroy(&c->rdma_lock);
}

void
shard_client_transport_stats(struct shard_client *c, struct shard_transport_stats *out)
{
    pthread_mutex_lock(&c->rdma_lock);
    *out = c->rdma_stats;
    pthread_mutex_unlock(&c->rdma_lock);
}
