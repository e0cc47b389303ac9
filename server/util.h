/*
 * util.h: small helpers of server/ (util.c): S3 naming rules, ETags,
 * HTTP and ISO dates, URI decoding into the request's arena, the check of
 * writable keys, and starting threads with a given stack size.
 */
#ifndef SHARD_SERVER_UTIL_H
#define SHARD_SERVER_UTIL_H

#include "common/common.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* S3 bucket naming rules. */
bool s3_bucket_name_is_valid(struct slice name);
/* Formats an ETag with quotes: "\"hex\"" or "\"hex-N\"". 'out' >= 48 bytes. */
void s3_format_etag(const uint8_t md5[16], uint32_t parts, char *out);
/* Parses an ETag with or without quotes (and without -N suffix). */
bool s3_parse_etag(struct slice s, uint8_t md5[16]);
/* "Wed, 21 Oct 2015 07:28:00 GMT" / "2015-10-21T07:28:00.000Z". 'out' >= 40 bytes. */
void s3_format_http_date(int64_t ns, char *out);
void s3_format_iso_date(int64_t ns, char *out);

/* URI percent-decoding (common/'s uri_decode) into a NUL-terminated copy
 * in arena 'a'. Returns false on a malformed escape. HTTP dates are parsed
 * with common/'s http_date_parse, URL encoding is common/'s uri_encode. */
bool s3_uri_decode(struct arena *a, struct slice in, struct slice *out);

/* Starts thread '*t' named 'name' (at most 15 characters: what top -H, perf
 * and /proc/PID/task/N/comm show; a thread otherwise inherits its creator's
 * name, e.g. libmicrohttpd's "MHD-worker") running fn(arg) with a stack of
 * 'stack_len' bytes (0: the default). Returns 0 or -errno. */
int server_thread_start(pthread_t *t, const char *name, size_t stack_len, void *(*fn)(void *),
                        void *arg);

struct s3_req;
/* Refuses (400 InvalidURI, answered here) a PUT or POST whose object key
 * may not be written (key.h: not UTF-8, or holds NUL); reads and deletes
 * pass, so keys stored before the rule stay reachable. Returns false when
 * it answered. */
bool s3_req_key_check(struct s3_req *r);

#endif
