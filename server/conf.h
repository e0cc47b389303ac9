/*
 * conf.h: the server's configuration (config.c). Filled once at start-up
 * from the embedded defaults, the config file and the command line, then
 * read-only. (Named conf.h: config.h is autoconf's.)
 */
#ifndef SHARD_SERVER_CONF_H
#define SHARD_SERVER_CONF_H

#include <stdbool.h>
#include <stdint.h>

struct config {
    char listen_addr[64]; /* "127.0.0.1" */
    uint16_t listen_port; /* 9000; 0 = any free port */
    char data_dir[4096];
    char region[64];
    char domains[256]; /* comma-separated domains for virtual-hosted style */
    uint64_t volume_size;
    uint32_t max_volumes;
    uint64_t prezero_window; /* free volume space kept written ahead of the allocator; 0: off */
    uint64_t index_map_size;
    uint64_t write_buffer_total;
    bool group_commit;
    uint32_t group_commit_max;  /* ops per batch */
    uint32_t connection_memory; /* bytes of MHD's per-connection buffer pool */
    uint32_t connection_limit;
    uint32_t connection_timeout_s;
    /* Slow clients (guard.c); 0 turns each off. */
    uint32_t header_timeout_s;        /* request headers complete within this */
    uint64_t min_body_rate;           /* bytes/s an upload keeps up, averaged over: */
    uint32_t body_rate_window_s;      /* this many seconds */
    uint32_t send_timeout_s;          /* a client reading nothing this long is dropped */
    uint32_t connection_limit_per_ip; /* connections from one client address */
    uint32_t http_threads;            /* event-loop threads; 0 = cores + 1 */
    uint32_t worker_threads_max;      /* offload pool for blocking steps */
    bool thread_per_connection;       /* the older model: no event loop, no pool */
    uint32_t shutdown_grace_s;
    uint64_t max_object_size;
    /* Space and staging buffers one user's uploads in flight may hold
     * ahead of their bytes (reserve.c); 0 = no cap. */
    uint64_t reserve_max_per_principal;
    /* UploadPartCopy: the largest source range (S3: 5 GiB). */
    uint64_t max_copy_part_size;
    uint64_t min_part_size; /* multipart: every part but the last (S3: 5 MiB) */
    uint32_t inline_max;    /* objects up to this size are stored in the index */
    int log_level;
    bool index_nosync;             /* tests only */
    uint32_t test_commit_delay_ms; /* tests only: each commit waits this long first */
    uint32_t test_hash_delay_ms;   /* tests only: each hashing run waits this long first */
    uint32_t reader_pins_max;      /* reads (GET, copy, scrub) holding storage at once */
    uint32_t reader_pin_timeout_s; /* a streamed GET idle this long loses its pin; 0: never */
    char secret_key_file[4096];    /* key sealing access-key secrets; "" = DATA/secret.key */
    /* Lifecycle worker (lifecycle.c). */
    uint32_t lifecycle_day_s;             /* seconds in a lifecycle "day" (86400) */
    uint32_t lifecycle_interval_s;        /* seconds between background passes; 0 = none */
    uint32_t lifecycle_max_objects_per_s; /* bound on expirations + aborts per second */
    uint32_t bucket_log_interval_s;       /* server access log delivery period; 0 = none */
    uint32_t lifecycle_max_mib_per_s;     /* bound on transition bytes per second; 0: none */
    /* Tiers (tier.c, tier_cold.c). */
    char cold_dir[4096];         /* the cold tier's volumes; "" = DATA/cold */
    uint32_t cold_zstd_level;    /* zstd level of cold blocks (1..19) */
    uint32_t cold_block_size;    /* plain bytes per cold block (power of 2, 4K..16M) */
    uint64_t cold_volume_size;   /* bytes per cold volume; 0 = volume_size */
    uint32_t cold_max_volumes;   /* 0 = max_volumes */
    char tier_standard_ia[32];   /* the tier class STANDARD_IA maps to (COLD) */
    char tier_glacier_ir[32];    /* the tier class GLACIER_IR maps to (COLD) */
    uint32_t test_tier_crash_at; /* tests only: kill the process at move step N */
    /* The remote tier (tier_remote.c): on when the endpoint is set. */
    char remote_tier_class[32];       /* its storage class name */
    char remote_tier_endpoint[512];   /* http(s)://host:port of any S3 service */
    char remote_tier_bucket[64];      /* the bucket it keeps objects in */
    char remote_tier_prefix[256];     /* key prefix of those objects */
    char remote_tier_access_key[129]; /* credentials there */
    char remote_tier_secret_key[129];
    char remote_tier_region[64]; /* "" = us-east-1 */
    /* HTTPS when both are set (tls.c): PEM files, the chain (server
     * certificate first) and its private key. HTTPS goes on the listen
     * address, or with tls_listen_addr on that second address, plain HTTP
     * staying on the first. */
    char tls_cert_file[4096];
    char tls_key_file[4096];
    char tls_listen_addr[64]; /* "" = none */
    uint16_t tls_listen_port;
    /* Metrics and logs (metrics.c, access_log.c). */
    int metrics_access;    /* enum metrics_access */
    char access_log[4096]; /* JSON lines; "" off, "-" stdout */
    char audit_log[4096];  /* admin actions; "" = the access log (or the server log) */
    /* Encryption at rest (sse.c): the master key ("" = DATA/keys/sse-master.key),
     * older keys kept for reading (comma-separated), SSE-C over plain HTTP. */
    char sse_master_key_file[4096];
    char sse_old_key_files[4096];
    bool sse_c_allow_http;
    /* The RDMA fast path (rdma.c); off unless configured. */
    bool rdma;
    char rdma_provider[32];    /* auto, shm, tcp, verbs, efa */
    char rdma_address[64];     /* address the provider binds (tcp: 127.0.0.1); "" its own */
    uint32_t rdma_buffers;     /* registered buffers in the pool */
    uint32_t rdma_buffer_size; /* bytes each */
    char rdma_get_path[16];    /* auto (the volume mapping when the provider allows), bounce */
    uint32_t rdma_timeout_s;   /* a peer that completes nothing this long has failed */
};

/* Who may read /_/metrics. */
enum metrics_access {
    METRICS_ACCESS_LOCAL, /* anyone from a loopback address, else as admin */
    METRICS_ACCESS_OPEN,  /* anyone */
    METRICS_ACCESS_ADMIN, /* SigV4 by root or an admin user only (the default) */
};

/* Fills 'c' with the embedded defaults. */
void config_defaults(struct config *c);
/* Reads a config file ("key = value", '#' comments). Returns 0, or -1 after
 * printing the offending line to stderr. */
int config_load_file(struct config *c, const char *path);
/* Applies one directive; used by the file parser and the command line. */
int config_set(struct config *c, const char *key, const char *value);
/* Parses "ADDR:PORT" into the config. */
int config_set_listen(struct config *c, const char *addr_port);

#endif
