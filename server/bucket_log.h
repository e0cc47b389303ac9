/*
 * bucket_log.h: S3 server access logging (bucket_log.c): records in S3's
 * server access log format for requests on buckets with a logging
 * configuration, spooled durably and delivered as objects to the target
 * bucket and prefix.
 */
#ifndef SHARD_SERVER_BUCKET_LOG_H
#define SHARD_SERVER_BUCKET_LOG_H

#include <stdint.h>

struct bucket_log;
struct s3_req;
struct server;

/* Creates the spool directory (DATA/bucketlogs), loads which buckets log
 * and starts the delivery thread (every cfg.bucket_log_interval_s; files
 * left by an earlier run are delivered in its first pass). Returns NULL
 * (logged) on failure. */
struct bucket_log *bucket_log_create(struct server *srv);
/* Stops the thread; undelivered records stay in the spool for the next
 * start. NULL is a no-op. */
void bucket_log_destroy(struct bucket_log *bl);
/* Appends the record of completed request 'r' (any thread) when its bucket
 * logs; costs one atomic load when no bucket does. 'end_ns' is
 * clock_mono_ns() at completion. */
void bucket_log_request(struct bucket_log *bl, const struct s3_req *r, int64_t end_ns);
/* Re-reads which buckets log, after a Put or Delete of a configuration. */
void bucket_log_reload(struct bucket_log *bl);

/* Put/GetBucketLogging (?logging). */
void op_put_bucket_logging(struct s3_req *r);
void op_get_bucket_logging(struct s3_req *r);

#endif
