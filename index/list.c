/*
 * list.c: ListObjects with S3's prefix / delimiter / start-after rules.
 *
 * An iterator turns the LMDB order of "objects" into exact byte order of
 * the full S3 keys: direct keys come straight from the cursor; a run of
 * long keys (keys.h) is read whole, sorted by full key and replayed. The
 * lister walks that iterator from max(prefix, start_after); whenever a key
 * rolls up into a common prefix CP it emits CP once and seeks to succ(CP),
 * the smallest string greater than every string starting with CP. So a
 * page costs O(page) cursor operations however many keys each common
 * prefix hides (plus the size of any long-key run it touches).
 */
#include "index/index_int.h"

#include <errno.h>
#include <stdlib.h>

/* Clamp for max_keys (S3's own limit). */
#define INDEX_LIST_MAX 1000

static _Thread_local uint64_t list_cursor_ops;

uint64_t
index__list_cursor_ops(void)
{
    return list_cursor_ops;
}

/* ---- the ordered iterator ----------------------------------------------- */

struct run_ent {
    struct slice key; /* full key, inside the record (txn pages) */
    MDB_val val;
};

struct iter {
    struct index *ix;
    MDB_cursor *cur;
    uint64_t bucket_id;
    uint8_t bidkey[INDEX_BID_LEN];
    /* The cursor sits on an entry of the bucket not yet handed out. */
    bool has_cur;
    /* The cursor ran past the bucket (or the database). */
    bool is_end;
    MDB_val cur_k, cur_v;
    /* The long-key run being replayed, sorted by full key. */
    bool has_run;
    uint8_t run_prefix[INDEX_DIRECT_MAX];
    struct run_ent *run;
    size_t run_n, run_cap, run_pos;
};

/* Positions the cursor with 'op' ('k' is the seek key for MDB_SET_RANGE)
 * and records whether it landed on an entry of the bucket. Returns 0 or
 * -errno (running off the end is not an error). */
static int
iter_fetch(struct iter *it, MDB_val *k, MDB_cursor_op op)
{
    list_cursor_ops++;
    int rc = index__err(mdb_cursor_get(it->cur, k, &it->cur_v, op));
    it->cur_k = *k;
    it->has_cur = false;
    it->is_end = true;
    if (rc == -ENOENT)
        return 0;
    if (rc != 0)
        return rc;
    if (k->mv_size < INDEX_BID_LEN || memcmp(k->mv_data, it->bidkey, INDEX_BID_LEN) != 0)
        return 0;
    it->has_cur = true;
    it->is_end = false;
    return 0;
}

static int
run_ent_cmp(const void *a, const void *b)
{
    return slice_cmp(((const struct run_ent *)a)->key, ((const struct run_ent *)b)->key);
}

/*
 * Reads the whole run of long keys starting at the cursor's entry into
 * 'it->run', sorted by full key; afterwards the cursor sits on the first
 * entry after the run. Returns 0, or -EIO on a malformed record.
 */
static int
iter_load_run(struct iter *it)
{
    struct index__record r;
    MDB_val k;
    int rc;

    memcpy(it->run_prefix, (const uint8_t *)it->cur_k.mv_data + INDEX_BID_LEN, INDEX_DIRECT_MAX);
    it->run_n = 0;
    it->run_pos = 0;
    it->has_run = true;
    while (it->has_cur && index__objkey_is_long(it->cur_k.mv_size) &&
           memcmp((const uint8_t *)it->cur_k.mv_data + INDEX_BID_LEN, it->run_prefix,
                  INDEX_DIRECT_MAX) == 0) {
        if ((rc = index__record_parse(it->cur_v.mv_data, it->cur_v.mv_size, &r)) != 0)
            return rc;
        if (r.full_key.len <= INDEX_DIRECT_MAX ||
            memcmp(r.full_key.ptr, it->run_prefix, INDEX_DIRECT_MAX) != 0)
            return CORRUPT_BKPT("long key record does not match its LMDB key");
        if (it->run_n == it->run_cap) {
            it->run_cap = it->run_cap ? it->run_cap * 2 : 64;
            it->run = xrealloc(it->run, it->run_cap * sizeof(*it->run));
        }
        it->run[it->run_n++] = (struct run_ent){r.full_key, it->cur_v};
        if ((rc = iter_fetch(it, &k, MDB_NEXT)) != 0)
            return rc;
    }
    qsort(it->run, it->run_n, sizeof(*it->run), run_ent_cmp);
    return 0;
}

/* Moves 'it->run_pos' to the first run entry >= 't'. */
static void
iter_run_lower_bound(struct iter *it, struct slice t)
{
    size_t lo = 0, hi = it->run_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (slice_cmp(it->run[mid].key, t) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    it->run_pos = lo;
}

/*
 * Positions 'it' so that the next iter_next() returns the first key >= 't'
 * in full-key order. Returns 0 or -errno.
 */
static int
iter_seek(struct iter *it, struct slice t)
{
    int rc;

    if (it->has_run && t.len > INDEX_DIRECT_MAX &&
        memcmp(t.ptr, it->run_prefix, INDEX_DIRECT_MAX) == 0) {
        /* Inside the run already loaded: every key after the run is
         * greater than 't' too, and the cursor already sits there. */
        iter_run_lower_bound(it, t);
        return 0;
    }
    it->has_run = false;
    uint8_t lkey[INDEX_LKEY_MAX];
    MDB_val k = {index__objkey_seek_encode(lkey, it->bucket_id, t), lkey};
    if ((rc = iter_fetch(it, &k, MDB_SET_RANGE)) != 0)
        return rc;
    if (it->has_cur && index__objkey_is_long(it->cur_k.mv_size)) {
        if ((rc = iter_load_run(it)) != 0)
            return rc;
        iter_run_lower_bound(it, t);
    }
    return 0;
}

/*
 * Hands out the next key in full-key order: '*key' and '*val' borrow the
 * txn's pages. Returns 1 for an entry, 0 at the end of the bucket, or
 * -errno.
 */
static int
iter_next(struct iter *it, struct slice *key, MDB_val *val)
{
    MDB_val k;
    int rc;

    if (it->has_run) {
        if (it->run_pos < it->run_n) {
            *key = it->run[it->run_pos].key;
            *val = it->run[it->run_pos].val;
            it->run_pos++;
            return 1;
        }
        it->has_run = false;
    }
    if (!it->has_cur) {
        if (it->is_end)
            return 0;
        if ((rc = iter_fetch(it, &k, MDB_NEXT)) != 0)
            return rc;
        if (!it->has_cur)
            return 0;
    }
    if (index__objkey_is_long(it->cur_k.mv_size)) {
        if ((rc = iter_load_run(it)) != 0)
            return rc;
        return iter_next(it, key, val);
    }
    *key = (struct slice){(const char *)it->cur_k.mv_data + INDEX_BID_LEN,
                          it->cur_k.mv_size - INDEX_BID_LEN};
    *val = it->cur_v;
    it->has_cur = false;
    return 1;
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

/*
 * Seeks past every key starting with 'cp': to succ(cp), which is 'cp'
 * with trailing 0xFF bytes dropped and its last byte incremented. The
 * carry stays inside the S3 key; the bucket id is never touched. When
 * 'cp' is all 0xFF nothing in the bucket can follow it. Returns 0 or
 * -errno.
 */
static int
iter_seek_past(struct iter *it, struct slice cp)
{
    char succ[INDEX_MAX_KEY];
    size_t n = cp.len;
    while (n > 0 && (uint8_t)cp.ptr[n - 1] == 0xFF)
        n--;
    if (n == 0) {
        it->has_run = false;
        it->has_cur = false;
        it->is_end = true;
        return 0;
    }
    memcpy(succ, cp.ptr, n);
    succ[n - 1] = (char)((uint8_t)succ[n - 1] + 1);
    return iter_seek(it, (struct slice){succ, n});
}

int
index_object_list(struct index *ix, const struct index_list_params *p, struct arena *a,
                  struct index_list_result *out)
{
    struct iter it = {.ix = ix, .bucket_id = p->bucket_id};
    MDB_txn *txn = NULL;
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
    index__put_be64(it.bidkey, p->bucket_id);

    if ((rc = index__read_begin(ix, &txn)) != 0)
        goto fail;
    if ((rc = index__err(mdb_cursor_open(txn, ix->dbi_objects, &it.cur))) != 0)
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
    free(it.run);
    if (it.cur)
        mdb_cursor_close(it.cur);
    index__read_end(ix, txn);
    return rc;
}
