/*
 * index_int.h: private to index/. The LMDB handles behind struct index,
 * the read-transaction pool, error mapping, the object record codec and
 * test-only counters. Nothing outside index/ (and its unit tests)
 * includes this file; <lmdb.h> stops here.
 */
#ifndef SHARD_INDEX_INT_H
#define SHARD_INDEX_INT_H

#include "index/index.h"
#include "index/keys.h"

#include <lmdb.h>
#include <pthread.h>

struct index {
    MDB_env *env;
    MDB_dbi dbi_buckets;
    MDB_dbi dbi_bucketids;
    MDB_dbi dbi_objects;
    MDB_dbi dbi_settings;
    MDB_dbi dbi_meta;
    bool is_nosync;
    /* Reset read transactions ready for mdb_txn_renew (see env.c). */
    pthread_mutex_t pool_mu;
    MDB_txn **pool;
    size_t pool_n;
    size_t pool_cap;
};

/* Maps an LMDB (or errno) return code to 0 / -errno. */
int index__err(int rc);

/* Returns a read-only transaction in '*out' (from the pool when possible);
 * release it with index__read_end. Returns 0 or -errno. */
int index__read_begin(struct index *ix, MDB_txn **out);
/* Resets 'txn' and returns it to the pool. NULL is a no-op. */
void index__read_end(struct index *ix, MDB_txn *txn);

/* ---- object records (record.c) ----------------------------------------- */

/* A parsed record; pointers borrow the LMDB value (valid for the txn).
 * 'extents_raw' is the packed on-disk extent array. */
struct index__record {
    struct index_object obj; /* extents == NULL here; see extents_raw */
    const uint8_t *extents_raw;
    struct slice full_key; /* empty for a direct key */
};

/* Bytes needed to format 'o' with a stored full key of 'key_len' bytes. */
size_t index__record_len(const struct index_object *o, size_t key_len);
/* Formats 'o' (and 'key_len' bytes of 'key' when non-zero) into 'out' of
 * exactly index__record_len() bytes. */
void index__record_format(uint8_t *out, const struct index_object *o, const char *key,
                          size_t key_len);
/* Parses the record 'p'/'len' with bounds checks. Returns 0, or -EIO
 * (through CORRUPT_BKPT) when the bytes are not a valid record. */
int index__record_parse(const uint8_t *p, size_t len, struct index__record *out);
/* Decodes extent 'i' of a parsed record. */
void index__record_extent(const struct index__record *r, uint32_t i, struct index_extent *out);
/* Copies a parsed record into 'a' as a self-contained index_object. */
void index__record_copy(const struct index__record *r, struct arena *a, struct index_object *out);

/* ---- test hooks --------------------------------------------------------- */

/* Number of LMDB cursor positioning operations (seeks and steps) made by
 * listings on the calling thread since it started. Tests use it to check
 * that a delimiter listing costs O(page), not O(keys under a prefix). */
uint64_t index__list_cursor_ops(void);
uint64_t index__list_seeks(void);

#endif
