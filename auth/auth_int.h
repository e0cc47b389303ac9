/*
 * auth_int.h: declarations shared between the files of auth/ and nothing
 * else. Names here use the auth__ prefix; callers outside auth/ include
 * auth/auth.h only.
 */
#ifndef SHARD_AUTH_INT_H
#define SHARD_AUTH_INT_H

#include "auth/auth.h"

/* Hex SHA-256 of the empty string (chunk string-to-sign, empty payloads). */
#define AUTH__EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* Writes the lower-case hex of HMAC-SHA256('key', 'data') (64 chars + NUL)
 * into 'out'. */
void auth__hmac_hex(const uint8_t key[32], const void *data, size_t len, char out[65]);

/* Returns true when 's' is exactly 64 hex digits; copies them lower-cased
 * and NUL-terminated into 'out'. */
bool auth__parse_sig(struct slice s, char out[65]);

/* Test hook: the calling thread's SigV4 signing-key cache as raw bytes
 * ('*len' gets its size), so a test can check that it holds no secret. */
const void *auth__key_cache_bytes(size_t *len);

#endif
