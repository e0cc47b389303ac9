/*
 * extref.c: extents shared by several records (CopyObject without copying
 * bytes).
 *
 * Most extents belong to exactly one record and are not listed anywhere
 * but in that record. When a copy makes a second record point at the same
 * extents, each extent gets an entry in the "extrefs" database:
 * (volume, offset[, flags]) -> (count of records holding it, length); the
 * flags (the tier, server/tier.h) are in the key only when non-zero, so
 * hot extents keep the original 12-byte key and an extent of another tier
 * at the same volume and offset is another key. Dropping a
 * record's extents goes through index__extrefs_release, which only hands
 * an extent back to storage when no other record still holds it; an entry
 * whose count falls to one is deleted (the last holder owns the extent
 * plainly again). Everything happens inside the batch's write transaction,
 * so counts and records never disagree, crash or not.
 */
#include "index/index_int.h"

#include <errno.h>

#define EXTREF_KEY_LEN 12 /* be32 volume, be64 offset */
#define EXTREF_KEY_MAX 16 /* + be32 flags when non-zero */
#define EXTREF_VAL_LEN 12 /* be32 count, be64 length */

static void
put_be32(uint8_t *out, uint32_t v)
{
    out[0] = (uint8_t)(v >> 24);
    out[1] = (uint8_t)(v >> 16);
    out[2] = (uint8_t)(v >> 8);
    out[3] = (uint8_t)v;
}

/* Formats the key of 'e' into 'out'; returns its length. */
static size_t
extref_key(uint8_t out[EXTREF_KEY_MAX], const struct index_extent *e)
{
    put_be32(out, e->volume);
    index__put_be64(out + 4, e->offset);
    if (e->flags == 0)
        return EXTREF_KEY_LEN;
    put_be32(out + EXTREF_KEY_LEN, e->flags);
    return EXTREF_KEY_MAX;
}

static uint32_t
get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void
extref_val(uint8_t out[EXTREF_VAL_LEN], uint32_t count, uint64_t len)
{
    out[0] = (uint8_t)(count >> 24);
    out[1] = (uint8_t)(count >> 16);
    out[2] = (uint8_t)(count >> 8);
    out[3] = (uint8_t)count;
    index__put_be64(out + 4, len);
}

/* True when no extent is shared, so callers can skip the lookups. */
static bool
extrefs_empty(struct index *ix, MDB_txn *txn)
{
    MDB_stat st;
    return mdb_stat(txn, ix->dbi_extrefs, &st) != 0 || st.ms_entries == 0;
}

int
index__extrefs_share(struct index *ix, MDB_txn *txn, const struct index_extent *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (e[i].len == 0)
            continue;
        uint8_t kb[EXTREF_KEY_MAX], vb[EXTREF_VAL_LEN];
        MDB_val k = {extref_key(kb, &e[i]), kb}, v;
        int rc = index__err(mdb_get(txn, ix->dbi_extrefs, &k, &v));
        uint32_t count = 1;
        if (rc == 0) {
            if (v.mv_size != EXTREF_VAL_LEN)
                return CORRUPT_BKPT("extref value length");
            count = get_be32(v.mv_data);
            if (index__get_be64((const uint8_t *)v.mv_data + 4) != e[i].len)
                return CORRUPT_BKPT("shared extent with two lengths");
        } else if (rc != -ENOENT) {
            return rc;
        }
        if (count == UINT32_MAX)
            return -EOVERFLOW;
        extref_val(vb, count + 1, e[i].len);
        v = (MDB_val){sizeof(vb), vb};
        if ((rc = index__err(mdb_put(txn, ix->dbi_extrefs, &k, &v, 0))) != 0)
            return rc;
    }
    return 0;
}

int
index__extrefs_release(struct index *ix, MDB_txn *txn, struct index_extent *e, uint32_t *n)
{
    if (*n == 0 || extrefs_empty(ix, txn))
        return 0;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < *n; i++) {
        uint8_t kb[EXTREF_KEY_MAX], vb[EXTREF_VAL_LEN];
        MDB_val k = {extref_key(kb, &e[i]), kb}, v;
        int rc = index__err(mdb_get(txn, ix->dbi_extrefs, &k, &v));
        if (rc == -ENOENT) {
            e[kept++] = e[i]; /* held by this record only: free it */
            continue;
        }
        if (rc != 0)
            return rc;
        if (v.mv_size != EXTREF_VAL_LEN)
            return CORRUPT_BKPT("extref value length");
        uint32_t count = get_be32(v.mv_data);
        if (count <= 2) {
            rc = index__err(mdb_del(txn, ix->dbi_extrefs, &k, NULL));
        } else {
            extref_val(vb, count - 1, index__get_be64((const uint8_t *)v.mv_data + 4));
            v = (MDB_val){sizeof(vb), vb};
            rc = index__err(mdb_put(txn, ix->dbi_extrefs, &k, &v, 0));
        }
        if (rc != 0)
            return rc;
    }
    *n = kept;
    return 0;
}

int
index__extrefs_is_shared(struct index *ix, MDB_txn *txn, const struct index_extent *e, bool *shared)
{
    uint8_t kb[EXTREF_KEY_MAX];
    MDB_val k = {extref_key(kb, e), kb}, v;
    int rc = index__err(mdb_get(txn, ix->dbi_extrefs, &k, &v));
    *shared = rc == 0;
    return rc == -ENOENT ? 0 : rc;
}

int
index__extrefs_scan(struct index *ix, MDB_txn *txn, index_extent_fn fn, void *ctx)
{
    struct index__iter it;
    int rc = index__iter_begin(&it, txn, ix->dbi_extrefs, NULL, 0);
    while (rc == 0 && (rc = index__iter_next(&it)) == 1) {
        if ((it.k.mv_size != EXTREF_KEY_LEN && it.k.mv_size != EXTREF_KEY_MAX) ||
            it.v.mv_size != EXTREF_VAL_LEN) {
            rc = CORRUPT_BKPT("extref record length");
            break;
        }
        const uint8_t *kp = it.k.mv_data;
        struct index_extent e = {
            .volume = get_be32(kp),
            .offset = index__get_be64(kp + 4),
            .len = index__get_be64((const uint8_t *)it.v.mv_data + 4),
        };
        if (it.k.mv_size == EXTREF_KEY_MAX)
            e.flags = get_be32(kp + EXTREF_KEY_LEN);
        fn(ctx, &e);
        rc = 0;
    }
    index__iter_end(&it);
    return rc;
}

uint64_t
index_shared_extents(struct index *ix)
{
    MDB_txn *txn = NULL;
    uint64_t n = 0;
    MDB_stat st;
    if (index__read_begin(ix, &txn) == 0 && mdb_stat(txn, ix->dbi_extrefs, &st) == 0)
        n = st.ms_entries;
    index__read_end(ix, txn);
    return n;
}
