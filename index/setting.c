/*
 * setting.c: the small named values of the "settings" database
 * (credentials, persisted config). Values are opaque bytes.
 */
#include "index/index_int.h"

#include <errno.h>
#include <limits.h>

static bool
name_is_valid(const char *name, size_t len)
{
    (void)name;
    return len > 0 && len <= 511;
}

int
index_setting_put(struct index *ix, const char *name, const void *val, size_t len)
{
    size_t name_len = name ? strlen(name) : 0;

    if (!name_is_valid(name, name_len) || (len && !val) || len > INT_MAX)
        return -EINVAL;
    MDB_val k = {name_len, (void *)name}, v = {len, (void *)val};
    return index__write_one(ix, ix->dbi_settings, &k, &v);
}

int
index_setting_get(struct index *ix, const char *name, struct arena *a, const void **val,
                  size_t *len)
{
    MDB_txn *txn = NULL;
    size_t name_len = name ? strlen(name) : 0;
    int rc;

    if (!name_is_valid(name, name_len))
        return -ENOENT;
    MDB_val k = {name_len, (void *)name}, v;
    if ((rc = index__read_begin(ix, &txn)) != 0)
        goto fail;
    if ((rc = index__err(mdb_get(txn, ix->dbi_settings, &k, &v))) != 0)
        goto fail;
    if (v.mv_size > INT_MAX) {
        rc = CORRUPT_BKPT("setting larger than INT_MAX");
        goto fail;
    }
    *val = arena_memdup(a, v.mv_data, v.mv_size);
    if (len)
        *len = v.mv_size;
    rc = (int)v.mv_size;

fail:
    index__read_end(ix, txn);
    return rc;
}
