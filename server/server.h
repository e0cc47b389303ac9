/*
 * server.h: the server object every part of server/ reaches through a
 * request (r->srv): configuration, the index, storage and committer
 * handles, the root credentials and the metrics. server/ is the top layer:
 * it owns libmicrohttpd, the configuration and the mapping of every error
 * to an S3 status and code, and it coordinates auth/, index/ and storage/.
 * The other headers of server/ each cover one file or one concern.
 */
#ifndef SHARD_SERVER_H
#define SHARD_SERVER_H

#include "auth/auth.h"
#include "server/conf.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct MHD_Daemon;
struct committer;
struct guard;
struct hasher;
struct index;
struct lifecycle;
struct bucket_log;
struct bucket_access_cache;
struct listener;
struct offload;
struct reserve_table;
struct sse_keys;
struct part_layout;
struct storage;
struct tier_set;

struct metrics {
    atomic_uint_fast64_t requests;
    atomic_uint_fast64_t errors_4xx;
    atomic_uint_fast64_t errors_5xx;
    atomic_uint_fast64_t bytes_in;
    atomic_uint_fast64_t body_pieces; /* pieces the body bytes came in (one per read) */
    atomic_uint_fast64_t bytes_out;
    atomic_uint_fast64_t puts;
    atomic_uint_fast64_t gets;
    atomic_uint_fast64_t gets_zero_copy; /* GET bodies sent from one span (sendfile) */
    atomic_uint_fast64_t gets_streamed;  /* GET bodies read through a buffer */
    atomic_uint_fast64_t gets_buffered;  /* of those, read whole before the answer */
    atomic_uint_fast64_t commits;        /* index transactions */
    atomic_uint_fast64_t committed_ops;  /* ops in them */
    atomic_uint_fast64_t auth_failures;
    atomic_uint_fast64_t offloaded; /* request steps run on a worker */
};

/* One listening address and the MHD daemon behind it (http.c). */
struct http_endpoint {
    struct server *srv;
    struct listener *listener;
    struct MHD_Daemon *daemon;
    bool is_tls;
    char addr[64];
    uint16_t port;
};

struct server {
    struct config cfg;
    struct index *index;
    struct storage *storage;
    struct committer *committer;
    /* What listens: [0] 'listen' (HTTPS when TLS is on without
     * tls_listen), [1] 'tls_listen' when set. Owned by http.c. */
    struct http_endpoint endpoints[2];
    struct offload *offload;         /* NULL with thread_per_connection */
    struct guard *guard;             /* slow-client rules (guard.c) */
    struct hasher *hasher;           /* hashing threads of uploads (hasher.c) */
    struct reserve_table *reserves;  /* what each principal's uploads hold */
    struct part_layout *part_layout; /* where multipart parts go (part_layout.c) */
    struct lifecycle *lifecycle;     /* the lifecycle worker (lifecycle.c) */
    struct bucket_log *bucket_log;   /* server access logging (bucket_log.c) */
    /* Compiled bucket policies, ACLs, ownership, PAB (bucket_access.c). */
    struct bucket_access_cache *access;
    struct rdma_server *rdma; /* the RDMA fast path (rdma.c); NULL: off */
    struct tier_set *tiers;   /* the cold and remote tiers (tier.c) */
    char access_key[129];
    char secret_key[129];
    char owner_id[65]; /* canonical user id of the root user */
    /* The AES-256 key that seals users' access-key secrets in the index. */
    uint8_t secret_seal_key[AUTH_SECRET_KEY_LEN];
    struct sse_keys *sse_keys; /* master keys of encryption at rest (sse.c) */
    struct metrics metrics;
    atomic_bool is_stopping;
    atomic_uint_fast64_t request_seq;
    atomic_uint_fast64_t in_flight;
    int64_t start_mono_ns; /* when the server started (the console's uptime) */
};

#endif
