/*
 * hasher.h: the hashing service of uploads (hasher.c). A PUT or UploadPart
 * stream copies its payload into the service on the event loop; hashing
 * threads compute its MD5 (in a lane of a multi-buffer MD5, up to 8 streams
 * per thread together) and its x-amz-checksum CRC/SHA behind the receive
 * path, so receiving and hashing use different cores.
 */
#ifndef SHARD_SERVER_HASHER_H
#define SHARD_SERVER_HASHER_H

#include "auth/auth.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hasher;
struct hasher_stream;

/* Called with the stream's lock held: 'pause' when the stream has too many
 * bytes queued (the caller stops reading its connection), 'resume' from a
 * hashing thread once it drained enough. Neither may call into the stream. */
typedef void (*hasher_flow_fn)(void *arg);

/* Starts 'n_threads' (>= 1) hashing threads; 'delay_ms' (tests only, else
 * 0) is slept before each hashing run, as a slow CPU would. NULL when no
 * thread could start. */
struct hasher *hasher_create(unsigned n_threads, uint32_t delay_ms);
/* Joins the threads and frees the service; every stream must be destroyed
 * first. Accepts NULL. */
void hasher_destroy(struct hasher *h);

/*
 * Opens a stream on the least loaded thread: in a free lane of its
 * multi-buffer MD5, or with a plain MD5 when every lane is taken. 'ck' is
 * the extra checksum (AUTH_CK_NONE: none). With 'pause' NULL, a writer that
 * is too far ahead waits in hasher_stream_write instead (a thread of its
 * own per connection). Returns NULL on allocation failure.
 */
struct hasher_stream *hasher_stream_create(struct hasher *h, enum auth_checksum_algo ck,
                                           hasher_flow_fn pause, hasher_flow_fn resume, void *arg);
/* Queues a copy of 'len' payload bytes (a copying stream). Calls 'pause' (once until the next
 * 'resume') when the queue is past its limit. */
void hasher_stream_write(struct hasher_stream *s, const void *data, size_t len);
/* Gives lent bytes back to their owner (see hasher_stream_lend). */
typedef void (*hasher_release_fn)(void *arg);
/*
 * Makes 's' (before its first byte) a borrowing stream: its bytes come by
 * hasher_stream_lend, from a writer that holds at most 'n_max' buffers and
 * needs one free to go on. The writer is paused (the 'pause' of
 * hasher_stream_create) once it has lent all but one of them, and resumed
 * when half of those are back.
 */
void hasher_stream_borrow(struct hasher_stream *s, size_t n_max);
/*
 * Queues 'len' bytes at 'data' of a borrowing stream without copying them:
 * they stay the caller's, untouched, until 'release'('release_arg') is
 * called (from a hashing thread, or from hasher_stream_destroy) once they
 * are hashed or dropped ('release' may be NULL). Every piece but the last
 * holds a multiple of 64 bytes; 'is_last' ends the stream ('len' may be 0,
 * 'data' NULL then). Calls 'pause' like hasher_stream_write.
 */
void hasher_stream_lend(struct hasher_stream *s, const void *data, size_t len, bool is_last,
                        hasher_release_fn release, void *release_arg);
/* The writer is about to wait for a release: hashes the stream's queue
 * without waiting for its lane neighbours. Never blocks on hashing. */
void hasher_stream_hurry(struct hasher_stream *s);
/*
 * Ends the stream and waits until every byte is hashed: writes the MD5 to
 * 'md5' and the checksum to 'ck_out' (when the stream has one; returns its
 * length, else 0). Blocks: call it off the event loop.
 */
size_t hasher_stream_finish(struct hasher_stream *s, uint8_t md5[16],
                            uint8_t ck_out[AUTH_CK_MAX_DIGEST]);
/* Closes the stream (finished or not), waiting for a running hash job on
 * it, and frees it. Accepts NULL. */
void hasher_stream_destroy(struct hasher_stream *s);

/* Since start: streams bound to a multi-buffer lane, streams with a plain
 * MD5, and pauses of writers that were too far ahead (metrics, tests). */
void hasher_counts(struct hasher *h, uint64_t *n_lane, uint64_t *n_plain, uint64_t *n_pauses);
/* Since start: runs of the multi-buffer lanes and the lane slices they
 * hashed (their ratio is the lanes busy per run, at most 8). */
void hasher_run_counts(struct hasher *h, uint64_t *n_runs, uint64_t *n_lane_jobs);

#endif
