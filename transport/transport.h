/*
 * transport.h: the RDMA transport, the whole interface of transport/.
 *
 * Two halves, both used by server/ and client/ (calls only go down:
 * transport/ calls common/ and libfabric, nothing else):
 *   - the token (token.c): the versioned descriptor of a registered client
 *     buffer that travels in the signed x-amz-rdma-token header, as
 *     base64url. Pure code, no libfabric: it builds (and is fuzzed) even
 *     without libfabric.
 *   - the fabric (fabric.c): one libfabric domain and reliable-datagram
 *     endpoint of the configured provider, memory registration, and
 *     one-sided writes and reads against a peer's token. The provider is a
 *     name here ("shm", "tcp", "verbs", "efa", "auto") and never a code
 *     branch anywhere else. Built without libfabric, transport_fabric_open
 *     fails with -ENOTSUP and the rest is never reached.
 *
 * No libfabric type appears here. Functions return 0 (or a count) or a
 * negative errno. A fabric is thread-safe: every call takes its lock.
 */
#ifndef SHARD_TRANSPORT_H
#define SHARD_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- token -------------------------------------------------------------- */

#define TRANSPORT_TOKEN_VERSION 2 /* version 1 (one lane) is still read */
#define TRANSPORT_PROVIDER_MAX 32 /* provider name, with its NUL */
#define TRANSPORT_ADDR_MAX 96     /* fabric address bytes */
#define TRANSPORT_LANES_MAX 4     /* client endpoints a token names */
/* The longest encoded token accepted (base64url of the largest binary). */
#define TRANSPORT_TOKEN_MAX 256

/* What a token says: where the bytes of one request go to or come from. */
struct transport_token {
    char provider[TRANSPORT_PROVIDER_MAX]; /* "shm", "tcp;ofi_rxm", ... NUL-terminated */
    /* The fabric addresses of the client's endpoints ("lanes"; the
     * server spreads its transfers over them, so several client cores
     * take part where the provider copies on the target). */
    uint8_t addr[TRANSPORT_LANES_MAX][TRANSPORT_ADDR_MAX];
    size_t addr_len[TRANSPORT_LANES_MAX]; /* each 1..TRANSPORT_ADDR_MAX */
    size_t n_lanes;                       /* 1..TRANSPORT_LANES_MAX */
    uint64_t key;                         /* the memory key of the registered buffer */
    uint64_t remote_addr;                 /* the target address of byte 0 (see DESIGN.md) */
    uint64_t len;                         /* bytes, > 0 */
    uint64_t nonce;                       /* per request */
};

/* Encodes 't' as base64url (no padding) into 'out' ('cap' bytes, NUL
 * added). Returns the length, or -EINVAL (a field out of range: empty
 * provider or address, no lane, zero length), -ENOSPC, or -E2BIG (the
 * token would exceed TRANSPORT_TOKEN_MAX: fewer lanes or shorter
 * addresses). */
int transport_token_format(const struct transport_token *t, char *out, size_t cap);
/* Decodes 'len' bytes of 's' (untrusted). Returns 0 and fills 'out', or
 * -EINVAL (not base64url, truncated, trailing bytes, a field out of
 * range), -EPROTONOSUPPORT (another version), -E2BIG (longer than
 * TRANSPORT_TOKEN_MAX). Never reads past 'len'. */
int transport_token_parse(const char *s, size_t len, struct transport_token *out);

/* ---- fabric ------------------------------------------------------------- */

struct transport_fabric;
struct transport_region;

struct transport_config {
    const char *provider; /* "auto", "shm", "tcp", "verbs", "efa" */
    const char *node;     /* address to bind (tcp: "127.0.0.1"); NULL: the provider's */
    /* Progress threads, one per lane. A client is the passive side: its
     * endpoints must make progress while a peer writes into or reads from
     * them. On the active side (the server) lane 0's thread completes our
     * transfers and wakes their waiters (else each waiter polls). */
    bool has_progress_thread;
    /* A post the provider keeps refusing (its queue full of transfers to
     * a stalled peer) fails after this long (0: 30 s), and the endpoint
     * is reset as after a timed-out wait. */
    int post_timeout_ms;
    /* Endpoints to open (0: 1; at most TRANSPORT_LANES_MAX), each with
     * its own progress thread: a client's tokens name them all. One only
     * where the provider cannot share memory keys between endpoints or
     * has no counter of peers' accesses (FI_RMA_EVENT). */
    unsigned lanes;
};

/* Opens the domain and endpoint of cfg->provider ("auto": the first of
 * efa, verbs, shm that opens). Returns 0 and sets '*out' (close with
 * transport_fabric_close), -ENOTSUP (built without libfabric, or an
 * unknown provider name), -ENODEV (the provider is not usable here), or
 * another -errno. */
int transport_fabric_open(const struct transport_config *cfg, struct transport_fabric **out);
/* Waits for nothing: the caller has no transfer in flight. NULL is a no-op. */
void transport_fabric_close(struct transport_fabric *f);
/* The provider's full name ("shm", "tcp;ofi_rxm"), as tokens carry it. */
const char *transport_fabric_provider(const struct transport_fabric *f);
/* Whether local buffers must be registered (FI_MR_LOCAL): then a transfer
 * cannot go straight from an unregistered mapping (the server uses its
 * registered bounce buffers instead). */
bool transport_fabric_needs_local_region(const struct transport_fabric *f);
/* Whether the transport can be used at all: built with libfabric (found
 * by configure) and libfabric.so.1 loadable at run time (the first call
 * loads it; transport_fabric_open does too, and fails with -ELIBACC when
 * it cannot). */
bool transport_is_available(void);
/* Why the transport is unavailable (dlerror's text, naming the library),
 * or NULL when it is available. */
const char *transport_load_error(void);

/* Counts a client holds while it waits for peers to move bytes: the
 * progress thread polls only while the count is above zero. */
void transport_fabric_hold(struct transport_fabric *f);
void transport_fabric_release(struct transport_fabric *f);

enum {
    TRANSPORT_REMOTE_WRITE = 1, /* peers may write into it (a GET's buffer) */
    TRANSPORT_REMOTE_READ = 2,  /* peers may read it (a PUT's buffer) */
    TRANSPORT_LOCAL = 4,        /* the source or target of our own transfers */
};

/* Registers [buf, buf+len) for 'access' (TRANSPORT_*). Returns 0 and sets
 * '*out' (deregister with transport_region_destroy before freeing 'buf'),
 * or -errno. */
int transport_region_create(struct transport_fabric *f, void *buf, size_t len, unsigned access,
                            struct transport_region **out);
/* Deregisters; NULL is a no-op. Peers' later accesses fail. */
void transport_region_destroy(struct transport_region *r);
/* Fills 't' for bytes [buf, buf+len) inside region 'r' with 'nonce':
 * provider, this endpoint's address, key, remote address. Returns 0, or
 * -ERANGE when the bytes are not inside the region. */
int transport_region_token(const struct transport_region *r, const void *buf, uint64_t len,
                           uint64_t nonce, struct transport_token *t);

/* ---- transfers against a token (the server side) ------------------------- */

struct transport_xfer;

/* A transfer's completion slot, owned by the caller: 'status' is 1 while
 * in flight, then 0 or -errno. Must stay alive until it is no longer 1. */
struct transport_done {
    volatile int status;
};

/* Starts the transfers of one request against 't' (borrowed; copied):
 * resolves the peer's address (cached per address). Returns 0 and sets
 * '*out', -EPROTO (the token names another provider), or -errno. */
int transport_xfer_begin(struct transport_fabric *f, const struct transport_token *t,
                         struct transport_xfer **out);
/* Posts a write of 'len' bytes from 'src' to bytes [off, off+len) of the
 * token's buffer ('region' registers 'src' when the provider needs it,
 * else NULL). Returns 0 with 'done' in flight, -ERANGE (outside the
 * token's bytes: nothing posted), or -errno. */
int transport_xfer_write(struct transport_xfer *x, uint64_t off, const void *src, size_t len,
                         struct transport_region *region, struct transport_done *done);
/* Posts a read of bytes [off, off+len) of the token's buffer into 'dst'.
 * Returns like transport_xfer_write. */
int transport_xfer_read(struct transport_xfer *x, uint64_t off, void *dst, size_t len,
                        struct transport_region *region, struct transport_done *done);
/* Waits until 'done' completes or 'timeout_ms' passes. Returns its status,
 * or -ETIMEDOUT: then the endpoint was reset, which cancelled every
 * transfer in flight (theirs complete with -ECANCELED, this one too), so
 * no buffer stays the provider's. */
int transport_xfer_wait(struct transport_xfer *x, struct transport_done *done, int timeout_ms);
/* Waits for everything posted (at most 'timeout_ms', then the endpoint is
 * reset as above) and frees 'x'. Returns 0 or the first error seen. NULL
 * is a no-op. */
int transport_xfer_end(struct transport_xfer *x, int timeout_ms);

#endif
