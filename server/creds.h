/*
 * creds.h: loading (or generating on first start) the root credentials.
 */
#ifndef SHARD_SERVER_CREDS_H
#define SHARD_SERVER_CREDS_H

#include "common/common.h"

/* Fills 'ak'/'sk' from the environment, DATA/credentials, or freshly
 * generated ones (written 0600 and printed once). Returns 0 or -errno. */
int creds_load(const char *data_dir, char *ak, size_t akcap, char *sk, size_t skcap);

/*
 * Loads the 32-byte key that seals users' access-key secrets: from 'path'
 * when non-empty (32 raw bytes, or 64 hex digits and an optional newline;
 * it must exist), else from DATA/secret.key, which is created (random,
 * mode 0600) on first start. Returns 0 or -errno (logged, without the key).
 */
int creds_load_seal_key(const char *data_dir, const char *path, uint8_t out[32]);

#endif
