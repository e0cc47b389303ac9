/*
 * error_ring.h: the last error responses, for the console (error_ring.c).
 * A fixed ring of ERROR_RING_SIZE records (time, request id, operation,
 * bucket, key, status, S3 code), overwritten oldest first; process-wide.
 */
#ifndef SHARD_SERVER_ERROR_RING_H
#define SHARD_SERVER_ERROR_RING_H

#include "common/common.h"

#define ERROR_RING_SIZE 64

struct s3_req;

/* Records 'r' when it was answered with a status >= 400 (else does
 * nothing). Copies what it keeps (a key is cut at 256 bytes); takes a
 * mutex held for the copy only. Any thread. */
void error_ring_add(const struct s3_req *r);
/* Appends a JSON array of up to 'max' records, newest first, to 'b':
 * [{"time":"2026-01-02T03:04:05.678Z","request_id":..,"op":..,"method":..,
 *   "bucket":..,"key":..,"key_cut":bool,"status":N,"code":..},...].
 * Any thread. */
void error_ring_format_json(struct buf *b, size_t max);
/* Forgets every record (tests). */
void error_ring_clear(void);

#endif
