/*
 * iter.c: the one cursor loop of index/. An iterator walks the entries of
 * one database whose keys start with a given prefix, in key order, from a
 * seek target at or after that prefix; every scan, listing and range
 * delete in index/ is written with it. It also counts the LMDB reads made
 * on each thread (cursor positionings and gets), the test hook that bounds
 * what one listing page costs.
 */
#include "index/index_int.h"

#include <errno.h>

static _Thread_local uint64_t index_reads;

uint64_t
index__reads(void)
{
    return index_reads;
}

int
index__get(MDB_txn *txn, MDB_dbi dbi, MDB_val *k, MDB_val *v)
{
    index_reads++;
    return index__err(mdb_get(txn, dbi, k, v));
}

int
index__iter_begin(struct index__iter *it, MDB_txn *txn, MDB_dbi dbi, const void *prefix,
                  size_t prefix_len)
{
    memset(it, 0, sizeof(*it));
    if (prefix_len > sizeof(it->prefix))
        return -EINVAL;
    if (prefix_len)
        memcpy(it->prefix, prefix, prefix_len);
    it->prefix_len = prefix_len;
    return index__err(mdb_cursor_open(txn, dbi, &it->cur));
}

/* Positions the cursor with 'op' (for MDB_SET_RANGE / MDB_SET at 'it->k')
 * and checks that it landed under the prefix. Returns 1, 0 (past the
 * prefix or the end of the database) or -errno. */
static int
iter_get(struct index__iter *it, MDB_cursor_op op)
{
    index_reads++;
    it->is_started = true;
    int rc = index__err(mdb_cursor_get(it->cur, &it->k, &it->v, op));
    /* After deleting the last entry there is no current one. */
    if (rc == -ENOENT || (op == MDB_GET_CURRENT && rc == -EINVAL)) {
        it->is_end = true;
        return 0;
    }
    if (rc != 0)
        return rc;
    if (it->k.mv_size < it->prefix_len || memcmp(it->k.mv_data, it->prefix, it->prefix_len) != 0) {
        it->is_end = true;
        return 0;
    }
    it->is_end = false;
    return 1;
}

int
index__iter_seek(struct index__iter *it, const void *key, size_t len)
{
    if (len < it->prefix_len) {
        key = it->prefix;
        len = it->prefix_len;
    }
    it->is_deleted = false;
    it->k = (MDB_val){len, (void *)key};
    if (len == 0)
        return iter_get(it, MDB_FIRST);
    return iter_get(it, MDB_SET_RANGE);
}

int
index__iter_next(struct index__iter *it)
{
    if (!it->is_started)
        return index__iter_seek(it, it->prefix, it->prefix_len);
    if (it->is_end)
        return 0;
    if (it->is_deleted) {
        /* mdb_cursor_del left the cursor on the entry that followed. */
        it->is_deleted = false;
        return iter_get(it, MDB_GET_CURRENT);
    }
    return iter_get(it, MDB_NEXT);
}

int
index__iter_del(struct index__iter *it)
{
    int rc = index__err(mdb_cursor_del(it->cur, 0));
    if (rc == 0)
        it->is_deleted = true;
    return rc;
}

int
index__iter_after(struct index__iter *it, const void *key, size_t len)
{
    int rc = index__iter_seek(it, key, len);
    if (rc == 1 && it->k.mv_size == len && memcmp(it->k.mv_data, key, len) == 0)
        rc = iter_get(it, MDB_NEXT);
    return rc;
}

void
index__iter_end(struct index__iter *it)
{
    if (it->cur)
        mdb_cursor_close(it->cur);
    it->cur = NULL;
}
