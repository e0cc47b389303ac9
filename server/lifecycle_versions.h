/*
 * lifecycle_versions.h: the lifecycle rules that act on versions
 * (lifecycle_versions.c): NoncurrentVersionExpiration,
 * NoncurrentVersionTransition and ExpiredObjectDeleteMarker. Called by a
 * lifecycle pass (lifecycle.c) for each versioned bucket with a
 * configuration.
 */
#ifndef SHARD_SERVER_LIFECYCLE_VERSIONS_H
#define SHARD_SERVER_LIFECYCLE_VERSIONS_H

#include <stdbool.h>
#include <stdint.h>

struct lc_config;
struct lifecycle_stats;
struct server;
struct tier_move_item;

/* Where the walk sends the moves of noncurrent versions (lifecycle.c
 * batches and paces them like transitions): 'queue' takes one move of a
 * version of 'size' bytes, its key borrowed until the next 'flush', which
 * moves what is queued (and counts it). */
struct lifecycle_mover {
    void (*queue)(void *ctx, const struct tier_move_item *it, uint64_t size);
    void (*flush)(void *ctx);
    void *ctx;
};

/* True when the pass must stop (shutdown). */
typedef bool (*lifecycle_stop_fn)(void *ctx);

/*
 * Removes the versions of bucket 'bucket_id' that the enabled rules of
 * 'cfg' expire at 'now_s' (days of 'day_s' seconds): noncurrent versions
 * NoncurrentDays after they became noncurrent (beyond the
 * NewerNoncurrentVersions newest), and delete markers that are the only
 * version left of their key (ExpiredObjectDeleteMarker, or an Expiration
 * by Days that S3 lets remove them). A version under Object Lock is never
 * removed (the index refuses it). Noncurrent versions that stay are sent
 * to 'mover' when a NoncurrentVersionTransition is due for them
 * (NoncurrentDays after they became noncurrent, beyond the
 * NewerNoncurrentVersions newest; the furthest due step) and they are not
 * in its class yet. Rules filtering on tags do not apply to versions.
 * Counts into 'st' (objects_expired, bytes_expired, errors). Does nothing
 * for an unversioned bucket.
 */
void lifecycle_expire_versions(struct server *srv, uint64_t bucket_id, const struct lc_config *cfg,
                               int64_t now_s, uint64_t day_s, lifecycle_stop_fn stop,
                               void *stop_ctx, const struct lifecycle_mover *mover,
                               struct lifecycle_stats *st);

#endif
