/*
 * creds.h: loading (or generating on first start) the root credentials.
 */
#ifndef SHARD_SERVER_CREDS_H
#define SHARD_SERVER_CREDS_H

#include "common/common.h"

/* Fills 'ak'/'sk' from the environment, DATA/credentials, or freshly
 * generated ones (written 0600 and printed once). Returns 0 or -errno. */
int creds_load(const char *data_dir, char *ak, size_t akcap, char *sk, size_t skcap);

#endif
