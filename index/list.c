/*
 * list.c: ListObjects with S3's prefix / delimiter / start-after rules.
 *
 * An iterator turns the LMDB order of "objects" into exact byte order of
 * the full S3 keys: direct keys come straight from the cursor; a run of
 * long keys (keys.h), whose LMDB order is the hash's, is walked in the
 * bucket's key tree instead, which holds the same keys in byte order, and
 * the cursor then seeks past the run. The lister walks that iterator from
 * max(prefix, start_after); whenever a key rolls up into a common prefix
 * CP it emits CP once and seeks to succ(CP), the smallest string greater
 * than every string starting with CP. So a page costs O(page) LMDB reads
 * however many keys each common prefix hides and however long the runs.
 */
#include "index/index_int.h"

#include <errno.h>
#include <stdlib.h>

/* Clamp for max_keys (S3's own limit). */
#define INDEX_LIST_MAX 1000

/* ---- the ordered iterator ----------------------------------------------- */

struct iter {
    struct index *ix;
    MDB_txn *txn;
    uint64_t bucket_id;
    /* "objects" under the bucket id; 'obj_rc' is 1 while it sits on an
     * entry not handed out yet, 0 past the bucket. */
    struct index__iter obj;
    int obj_rc;
    bool needs_step; /* the entry it sits on was handed out */
    /* The run of long keys being walked in the bucket's key tree. */
    bool in_run;
    bool has_tree;
    uint8_t run_prefix[INDEX_DIRECT_MAX];
    struct index__tree_iter tree;
};

/*
 * The objects cursor sits on the first LMDB key of a run of long keys:
 * walks that run in the key tree from the first key >= 't' (or from the
 * start of the run when 't' does not lie in it). Returns 0 or -errno.
 */
static int
iter_enter_run(struct iter *it, struct slice t)
{
    int rc;
    memcpy(it->run_prefix, (const uint8_t *)it->obj.k.mv_data + INDEX_BID_LEN, INDEX_DIRECT_MAX);
    if (!it->has_tree) {
        rc = index__tree_iter_begin(&it->tree, it->ix, it->txn,
                                    INDEX_TREE_ROOT_OBJECTS(it->bucket_id));
        it->has_tree = true;
        if (rc != 0)
            return rc;
    }
    struct slice run = {(const char *)it->run_prefix, INDEX_DIRECT_MAX};
    if (t.len < INDEX_DIRECT_MAX || memcmp(t.ptr, run.ptr, INDEX_DIRECT_MAX) != 0)
        t = run;
    it->in_run = true;
    return index__tree_iter_seek(&it->tree, t);
}

/*
 * Positions 'it' so that the next iter_next() returns the first key >= 't'
 * in full-key order. Returns 0 or -errno.
 */
static int
iter_seek(struct iter *it, struct slice t)
{
    uint8_t lkey[INDEX_LKEY_MAX];
    it->in_run = false;
    it->needs_step = false;
    it->obj_rc =
        index__iter_seek(&it->obj, lkey, index__objkey_seek_encode(lkey, it->bucket_id, t));
    if (it->obj_rc < 0)
        return it->obj_rc;
    if (it->obj_rc == 1 && index__objkey_is_long(it->obj.k.mv_size))
        return iter_enter_run(it, t);
    return 0;
}

/*
 * Hands out the next key in full-key order: '*key' and '*val' borrow the
 * txn's pages (a long key: the walk's buffer, until the next call).
 * Returns 1 for an entry, 0 at the end of the bucket, or -errno.
 */
static int
iter_next(struct iter *it, struct slice *key, MDB_val *val)
{
    uint8_t lkey[INDEX_LKEY_MAX + 1];
    int rc;

    for (;;) {
        if (it->in_run) {
            struct slice s;
            if ((rc = index__tree_iter_next(&it->tree, &s)) < 0)
                return rc;
            if (rc == 1 && s.len > INDEX_DIRECT_MAX &&
                memcmp(s.ptr, it->run_prefix, INDEX_DIRECT_MAX) == 0) {
                MDB_val k = {index__objkey_encode(lkey, it->bucket_id, s), lkey};
                rc = index__get(it->txn, it->ix->dbi_objects, &k, val);
                if (rc == -ENOENT)
                    return CORRUPT_BKPT("key tree holds a long key without its record");
                if (rc != 0)
                    return rc;
                *key = s;
                return 1;
            }
            /* The run is done: seek past it in "objects", to after
             * bid | prefix | FF * 16 (one byte longer than any key). */
            it->in_run = false;
            size_t n = INDEX_BID_LEN + INDEX_DIRECT_MAX;
            index__put_be64(lkey, it->bucket_id);
            memcpy(lkey + INDEX_BID_LEN, it->run_prefix, INDEX_DIRECT_MAX);
            memset(lkey + n, 0xFF, INDEX_HASH_LEN);
            lkey[n + INDEX_HASH_LEN] = 0;
            it->obj_rc = index__iter_seek(&it->obj, lkey, n + INDEX_HASH_LEN + 1);
            it->needs_step = false;
        } else if (it->needs_step) {
            it->obj_rc = index__iter_next(&it->obj);
            it->needs_step = false;
        }
        if (it->obj_rc <= 0)
            return it->obj_rc;
        if (index__objkey_is_long(it->obj.k.mv_size)) {
            if ((rc = iter_enter_run(it, SLICE_NULL)) != 0)
                return rc;
            continue;
        }
        *key = (struct slice){(const char *)it->obj.k.mv_data + INDEX_BID_LEN,
                              it->obj.k.mv_size - INDEX_BID_LEN};
        *val = it->obj.v;
        it->needs_step = true;
        return 1;
    }
}

/* ---- S3 listing ---------------------------------------------------------- */

/* Returns the offset of the first 'needle' in 'hay', or -1. */
static long
find(struct slice hay, struct slice needle)
{
    if (needle.len == 0 || needle.len > hay.len)
        return -1;
    for (size_t i = 0; i + needle.len <= hay.len; i++)
        if (hay.ptr[i] == needle.ptr[0] && memcmp(hay.ptr + i, needle.ptr, needle.len) == 0)
            return (long)i;
    return -1;
}

/*
 * Returns the length of the common prefix 'key' rolls up into under
 * 'prefix' and 'delim', or 0 when it does not roll up. Shared with the
 * upload lister (upload_list.c).
 */
size_t
index__rollup_len(struct slice key, struct slice prefix, struct slice delim)
{
    if (delim.len == 0 || !slice_has_prefix(key, prefix))
        return 0;
    long pos = find((struct slice){key.ptr + prefix.len, key.len - prefix.len}, delim);
    return pos < 0 ? 0 : prefix.len + (size_t)pos + delim.len;
}

size_t
index__key_succ(struct slice cp, char *out)
{
    size_t n = cp.len;
    while (n > 0 && (uint8_t)cp.ptr[n - 1] == 0xFF)
        n--;
    if (n == 0)
        return 0;
    memcpy(out, cp.ptr, n);
    out[n - 1] = (char)((uint8_t)out[n - 1] + 1);
    return n;
}

/* Seeks past every key starting with 'cp' (to its successor; when there
 * is none nothing in the bucket can follow). Returns 0 or -errno. */
static int
iter_seek_past(struct iter *it, struct slice cp)
{
    char succ[INDEX_MAX_KEY];
    size_t n = index__key_succ(cp, succ);
    if (n == 0) {
        it->in_run = false;
        it->needs_step = false;
        it->obj_rc = 0;
        return 0;
    }
    return iter_seek(it, (struct slice){succ, n});
}

int
index_object_list(struct index *ix, const struct index_list_params *p, struct arena *a,
                  struct index_list_result *out)
{
    struct iter it = {.ix = ix, .bucket_id = p->bucket_id};
    uint8_t bidkey[INDEX_BID_LEN];
    struct index__record r;
    struct slice key;
    MDB_val val;
    uint32_t max = MIN(p->max_keys, INDEX_LIST_MAX);
    bool skip_start_after = false;
    int rc;

    memset(out, 0, sizeof(*out));
    if (max == 0)
        return 0;
    if (p->prefix.len > INDEX_MAX_KEY)
        return 0; /* no stored key can start with it */
    /* For keys of at most INDEX_MAX_KEY bytes, K > start_after exactly when
     * K > its first INDEX_MAX_KEY bytes, and no common prefix longer than
     * that can exist: the truncated start_after lists the same. */
    struct slice start_after = p->start_after;
    start_after.len = MIN(start_after.len, INDEX_MAX_KEY);
    out->entries = arena_alloc(a, max * sizeof(*out->entries));
    index__put_be64(bidkey, p->bucket_id);

    if ((rc = index__read_begin(ix, &it.txn)) != 0)
        goto fail;
    if ((rc = index__iter_begin(&it.obj, it.txn, ix->dbi_objects, bidkey, sizeof(bidkey))) != 0)
        goto fail;

    /* Where to start: a common prefix that start_after lies in was
     * emitted on an earlier page, so skip all of it; else the first key
     * > start_after, but never before the prefix. */
    size_t cp_len = index__rollup_len(start_after, p->prefix, p->delimiter);
    if (cp_len) {
        rc = iter_seek_past(&it, (struct slice){start_after.ptr, cp_len});
    } else if (start_after.len && slice_cmp(start_after, p->prefix) >= 0) {
        rc = iter_seek(&it, start_after);
        skip_start_after = true;
    } else {
        rc = iter_seek(&it, p->prefix);
    }
    if (rc != 0)
        goto fail;

    while ((rc = iter_next(&it, &key, &val)) == 1) {
        if (skip_start_after) {
            skip_start_after = false;
            if (slice_eq(key, start_after))
                continue;
        }
        if (!slice_has_prefix(key, p->prefix))
            break;
        if (out->n_entries == max) {
            out->is_truncated = true;
            break;
        }
        struct index_list_entry *e = &out->entries[out->n_entries++];
        memset(e, 0, sizeof(*e));
        cp_len = index__rollup_len(key, p->prefix, p->delimiter);
        if (cp_len) {
            e->is_prefix = true;
            e->key = (struct slice){arena_memdup(a, key.ptr, cp_len), cp_len};
            if ((rc = iter_seek_past(&it, e->key)) != 0)
                goto fail;
            continue;
        }
        if ((rc = index__record_parse(val.mv_data, val.mv_size, &r)) != 0)
            goto fail;
        e->key = (struct slice){arena_memdup(a, key.ptr, key.len), key.len};
        e->size = r.obj.size;
        e->mtime_ns = r.obj.mtime_ns;
        memcpy(e->etag, r.obj.etag, 16);
        e->parts_count = r.obj.parts_count;
        if (r.obj.n_extents) {
            struct index_extent first;
            index__record_extent(&r, 0, &first);
            e->flags = first.flags;
        }
    }
    if (rc < 0)
        goto fail;
    rc = 0;
    if (out->is_truncated)
        out->next_marker = out->entries[out->n_entries - 1].key;

fail:
    if (rc != 0) {
        out->n_entries = 0;
        out->is_truncated = false;
    }
    if (it.has_tree)
        index__tree_iter_end(&it.tree);
    index__iter_end(&it.obj);
    index__read_end(ix, it.txn);
    return rc;
}
