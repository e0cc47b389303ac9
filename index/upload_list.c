/*
 * upload_list.c: ListMultipartUploads. A bucket's uploads are found by a
 * range scan of "bucketuploads" (bucket id | upload id), whose records
 * are fetched from "uploads", kept when under the prefix, and sorted by
 * (key, upload id) in memory; markers, the delimiter and max_uploads are
 * then applied to that sorted array with the same rules as ListObjects
 * (list.c). Cost: O(u log u) for the u uploads in progress in the bucket,
 * which are few (keys.h explains why that trade is taken).
 */
#include "index/index_int.h"

#include <errno.h>
#include <stdlib.h>

/* Clamp for max_uploads (S3's own limit). */
#define INDEX_UPLOAD_LIST_MAX 1000

struct upload_ent {
    const uint8_t *raw;           /* upload id, in the txn's pages */
    struct index__upload_rec rec; /* borrows the txn's pages */
};

static int
upload_ent_cmp(const void *pa, const void *pb)
{
    const struct upload_ent *a = pa, *b = pb;
    int c = slice_cmp(a->rec.key, b->rec.key);
    /* Raw ids sort like their lower-case hex form. */
    return c ? c : memcmp(a->raw, b->raw, INDEX_UPLOAD_RAW_LEN);
}

/*
 * Reads into '*ents' (heap, caller frees) every upload of 'bucket_id' in
 * 'txn' whose key starts with 'prefix', sorted by (key, upload id).
 * Returns 0 or -errno.
 */
static int
uploads_collect(struct index *ix, MDB_txn *txn, uint64_t bucket_id, struct slice prefix,
                struct upload_ent **ents, size_t *n_ents)
{
    MDB_cursor *cur = NULL;
    uint8_t bidkey[INDEX_BID_LEN];
    size_t n = 0, cap = 0;
    int rc;

    *ents = NULL;
    index__put_be64(bidkey, bucket_id);
    MDB_val k = {sizeof(bidkey), bidkey}, v;
    if ((rc = index__err(mdb_cursor_open(txn, ix->dbi_bucketuploads, &cur))) != 0)
        goto fail;
    for (rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE)); rc == 0;
         rc = index__err(mdb_cursor_get(cur, &k, &v, MDB_NEXT))) {
        if (k.mv_size < INDEX_BID_LEN || memcmp(k.mv_data, bidkey, INDEX_BID_LEN) != 0)
            break;
        if (k.mv_size != INDEX_BUCKETUPLOAD_KEY_LEN) {
            rc = CORRUPT_BKPT("bucketuploads key length");
            goto fail;
        }
        struct upload_ent e = {.raw = (const uint8_t *)k.mv_data + INDEX_BID_LEN};
        MDB_val uk = {INDEX_UPLOAD_RAW_LEN, (void *)e.raw}, uv;
        rc = index__err(mdb_get(txn, ix->dbi_uploads, &uk, &uv));
        if (rc == -ENOENT)
            rc = CORRUPT_BKPT("bucketuploads entry without its upload");
        if (rc != 0 || (rc = index__upload_parse(uv.mv_data, uv.mv_size, &e.rec)) != 0)
            goto fail;
        if (e.rec.bucket_id != bucket_id) {
            rc = CORRUPT_BKPT("upload record in another bucket than its bucketuploads key");
            goto fail;
        }
        if (!slice_has_prefix(e.rec.key, prefix))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            *ents = xrealloc(*ents, cap * sizeof(**ents));
        }
        (*ents)[n++] = e;
    }
    if (rc != 0 && rc != -ENOENT)
        goto fail;
    rc = 0;
    if (n)
        qsort(*ents, n, sizeof(**ents), upload_ent_cmp);

fail:
    *n_ents = rc == 0 ? n : 0;
    if (cur)
        mdb_cursor_close(cur);
    return rc;
}

/*
 * Returns true when upload 'e' (hex id 'id') comes after the markers:
 * key > key_marker, or key == key_marker and id > upload_id_marker when
 * that is given (S3: without it, only keys after the marker). When the
 * marker lies in a common prefix, the whole prefix was returned on an
 * earlier page ('skip_cp' is its length) and nothing under it follows.
 */
static bool
upload_is_after_markers(const struct index_upload_list_params *p, size_t skip_cp,
                        const struct upload_ent *e, const char *id)
{
    if (p->key_marker.len == 0)
        return true;
    if (skip_cp && slice_has_prefix(e->rec.key, (struct slice){p->key_marker.ptr, skip_cp}))
        return false;
    int c = slice_cmp(e->rec.key, p->key_marker);
    if (c != 0)
        return c > 0;
    return p->upload_id_marker.len &&
           slice_cmp((struct slice){id, INDEX_UPLOAD_ID_LEN}, p->upload_id_marker) > 0;
}

int
index_upload_list(struct index *ix, const struct index_upload_list_params *p, struct arena *a,
                  struct index_upload_list_result *out)
{
    MDB_txn *txn = NULL;
    struct upload_ent *ents = NULL;
    size_t n_ents = 0;
    uint32_t max = MIN(p->max_uploads, INDEX_UPLOAD_LIST_MAX);
    struct slice last_cp = SLICE_NULL;
    bool last_is_prefix = false;
    int rc;

    memset(out, 0, sizeof(*out));
    if (max == 0 || p->prefix.len > INDEX_MAX_KEY)
        return 0;
    if ((rc = index__read_begin(ix, &txn)) != 0)
        goto fail;
    if ((rc = uploads_collect(ix, txn, p->bucket_id, p->prefix, &ents, &n_ents)) != 0)
        goto fail;

    out->uploads = arena_alloc(a, max * sizeof(*out->uploads));
    out->prefixes = arena_alloc(a, max * sizeof(*out->prefixes));
    size_t skip_cp = index__rollup_len(p->key_marker, p->prefix, p->delimiter);
    for (size_t i = 0; i < n_ents; i++) {
        const struct upload_ent *e = &ents[i];
        char id[INDEX_UPLOAD_ID_LEN + 1];
        hex_encode(e->raw, INDEX_UPLOAD_RAW_LEN, id);
        if (!upload_is_after_markers(p, skip_cp, e, id))
            continue;
        size_t cp_len = index__rollup_len(e->rec.key, p->prefix, p->delimiter);
        /* Keys sharing a common prefix are adjacent in key order. */
        if (cp_len && last_cp.len == cp_len && memcmp(last_cp.ptr, e->rec.key.ptr, cp_len) == 0)
            continue;
        if (out->n_uploads + out->n_prefixes == max) {
            out->is_truncated = true;
            break;
        }
        if (cp_len) {
            last_cp = (struct slice){arena_memdup(a, e->rec.key.ptr, cp_len), cp_len};
            out->prefixes[out->n_prefixes++] = last_cp;
            last_is_prefix = true;
        } else {
            index__upload_copy(&e->rec, e->raw, a, &out->uploads[out->n_uploads++]);
            last_is_prefix = false;
        }
    }
    if (out->is_truncated) {
        if (last_is_prefix) {
            out->next_key_marker = last_cp;
        } else {
            const struct index_upload *u = &out->uploads[out->n_uploads - 1];
            out->next_key_marker = u->key;
            out->next_upload_id_marker = (struct slice){u->upload_id, INDEX_UPLOAD_ID_LEN};
        }
    }

fail:
    if (rc != 0)
        memset(out, 0, sizeof(*out));
    free(ents);
    index__read_end(ix, txn);
    return rc;
}
