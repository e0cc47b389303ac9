/*
 * lifecycle.h: bucket lifecycle (lifecycle.c, op_lifecycle.c): the S3
 * handlers for ?lifecycle and bucket-level ?tagging, the per-bucket cache
 * of parsed rules that x-amz-expiration is computed from, and the worker
 * that applies Expiration and AbortIncompleteMultipartUpload.
 */
#ifndef SHARD_SERVER_LIFECYCLE_H
#define SHARD_SERVER_LIFECYCLE_H

#include "common/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lifecycle;
struct s3_req;
struct s3_tag;
struct server;

/* Handlers of the route table (op_lifecycle.c); each runs authorized for
 * the bucket's admin action. */
void op_put_bucket_lifecycle(struct s3_req *r);
void op_get_bucket_lifecycle(struct s3_req *r);
void op_delete_bucket_lifecycle(struct s3_req *r);
void op_put_bucket_tagging(struct s3_req *r);
void op_get_bucket_tagging(struct s3_req *r);
void op_delete_bucket_tagging(struct s3_req *r);

/* What the worker did since start (lifecycle_stats_get). */
struct lifecycle_stats {
    uint64_t passes;               /* passes completed */
    int64_t last_pass_end_ns;      /* wall clock; 0 before the first */
    int64_t last_pass_ms;          /* duration of the last pass */
    uint64_t objects_scanned;      /* objects looked at */
    uint64_t objects_expired;      /* deleted by an Expiration rule */
    uint64_t bytes_expired;        /* their sizes */
    uint64_t uploads_aborted;      /* by AbortIncompleteMultipartUpload */
    uint64_t errors;               /* failed index or commit steps (retried next pass) */
    uint64_t tags_read;            /* object records read for a Tag filter's sake */
    uint64_t objects_transitioned; /* moved to another storage class by a Transition */
    uint64_t bytes_transitioned;   /* their sizes */
    uint64_t transition_errors;    /* moves that failed (also in 'errors'; retried) */
};

/*
 * Starts the worker thread of 'srv' (srv->index and srv->committer must
 * exist): a pass over every bucket with a lifecycle configuration every
 * cfg.lifecycle_interval_s seconds (0: none; passes only on demand).
 * Returns the worker, or NULL when the thread cannot start.
 */
struct lifecycle *lifecycle_create(struct server *srv);
/* Stops the thread (a pass in progress stops between two objects) and
 * frees everything. NULL is a no-op. No other call may be in progress. */
void lifecycle_destroy(struct lifecycle *lc);

/*
 * Runs one pass now, over bucket 'bucket_id' only (0: every bucket with a
 * configuration), serialized with the background passes, on a thread at a
 * lower CPU priority than requests (the caller's when none can start);
 * blocks until it ends. Fills '*out' (may be NULL) with what this
 * pass did. Returns 0, or -ECANCELED when the server is stopping.
 */
int lifecycle_run(struct lifecycle *lc, uint64_t bucket_id, struct lifecycle_stats *out);
/* Copies the totals since start. Thread-safe. */
void lifecycle_stats_get(struct lifecycle *lc, struct lifecycle_stats *out);

/* Forgets the cached rules of 'bucket_id' (its configuration changed). */
void lifecycle_invalidate(struct lifecycle *lc, uint64_t bucket_id);

/* Room for an x-amz-expiration value (a date and a rule ID of up to 255). */
#define LIFECYCLE_HEADER_MAX 320

/*
 * The x-amz-expiration value for object 'key' ('size' bytes, last
 * modified 'mtime_ns', tagged with the 'n_tags' 'tags', which may be NULL
 * when 'n_tags' is 0) of bucket 'bucket_id' when an enabled rule will
 * expire it: 'expiry-date="<IMF-fixdate>", rule-id="<id>"' (the earliest
 * rule wins; a rule's Tag filters are matched against 'tags') into 'out'
 * of 'cap' bytes. Returns false when no rule applies (then 'out' is
 * untouched). Reads the index only the first time a bucket is seen after
 * a change (the parsed rules are cached). Thread-safe; NULL 'lc' returns
 * false.
 */
bool lifecycle_expiration_header(struct lifecycle *lc, uint64_t bucket_id, struct slice key,
                                 uint64_t size, int64_t mtime_ns, const struct s3_tag *tags,
                                 size_t n_tags, char *out, size_t cap);

#endif
