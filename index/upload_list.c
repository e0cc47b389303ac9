/*
 * upload_list.c: ListMultipartUploads. A bucket's uploads are walked in
 * (key, upload id) order in its set of the key tree (keys.h), from a seek
 * to the markers (or the prefix); each one returned costs one record
 * fetch from "uploads", and each common prefix one seek past it, with the
 * same rules as ListObjects (list.c). Cost: O(page), however many uploads
 * the bucket has in progress.
 */
#include "index/index_int.h"

#include <errno.h>
#include <stdlib.h>

/* Clamp for max_uploads (S3's own limit). */
#define INDEX_UPLOAD_LIST_MAX 1000

static bool
is_lower_hex(uint8_t c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* Adds 1 to the big-endian 'raw'; returns false when it overflows. */
static bool
raw_increment(uint8_t raw[INDEX_UPLOAD_RAW_LEN])
{
    for (int i = INDEX_UPLOAD_RAW_LEN - 1; i >= 0; i--)
        if (++raw[i] != 0)
            return true;
    return false;
}

/*
 * Sets 'raw' to the smallest upload id whose hex form sorts after the
 * marker 'm' (any bytes, as S3 compares them). Returns false when no id
 * does. Ids are INDEX_UPLOAD_ID_LEN lower-case hex chars, so only the
 * marker's leading hex digits and the byte after them matter.
 */
static bool
id_lower_bound(struct slice m, uint8_t raw[INDEX_UPLOAD_RAW_LEN])
{
    char h[INDEX_UPLOAD_ID_LEN];
    size_t i = 0;
    while (i < m.len && i < INDEX_UPLOAD_ID_LEN && is_lower_hex((uint8_t)m.ptr[i])) {
        h[i] = m.ptr[i];
        i++;
    }
    bool is_after_all = false; /* ids starting with h[0..i) are all too small */
    if (i == INDEX_UPLOAD_ID_LEN) {
        is_after_all = true; /* the id equal to m[0..32) is not after m */
    } else if (i < m.len) {
        uint8_t c = (uint8_t)m.ptr[i];
        if (c > 'f')
            is_after_all = true;
        else if (c > '9')
            h[i++] = 'a'; /* the first digit after c */
    }
    /* Pad: with '0' for the smallest id of the prefix, with 'f' for the
     * largest (to step past it). */
    memset(h + i, is_after_all ? 'f' : '0', INDEX_UPLOAD_ID_LEN - i);
    hex_decode(h, INDEX_UPLOAD_ID_LEN, raw);
    return !is_after_all || raw_increment(raw);
}

/*
 * Seeks 't' to where the page starts: after the markers (S3 rules, see
 * index.h), but never before the prefix. Sets '*is_done' when nothing
 * can follow. Returns 0 or -errno.
 */
static int
uploads_seek_start(struct index__tree_iter *t, const struct index_upload_list_params *p,
                   bool *is_done)
{
    uint8_t str[INDEX_TREE_STR_MAX];
    char succ[INDEX_MAX_KEY];
    struct slice km = p->key_marker;
    size_t n;

    *is_done = false;
    if (km.len == 0 || slice_cmp(km, p->prefix) < 0) {
        n = index__key_escape(str, p->prefix);
    } else if ((n = index__rollup_len(km, p->prefix, p->delimiter)) != 0) {
        /* The marker lies in a common prefix returned on an earlier page. */
        n = index__key_succ((struct slice){km.ptr, n}, succ);
        if (n == 0) {
            *is_done = true;
            return 0;
        }
        n = index__key_escape(str, (struct slice){succ, n});
    } else {
        uint8_t raw[INDEX_UPLOAD_RAW_LEN];
        n = index__key_escape(str, km);
        str[n++] = 0;
        if (p->upload_id_marker.len && id_lower_bound(p->upload_id_marker, raw)) {
            /* esc(key) | 00 00 | first id after the marker */
            str[n++] = 0;
            memcpy(str + n, raw, INDEX_UPLOAD_RAW_LEN);
            n += INDEX_UPLOAD_RAW_LEN;
        } else {
            str[n++] = 1; /* after every upload of key_marker */
        }
    }
    return index__tree_iter_seek(t, (struct slice){(const char *)str, n});
}

/*
 * Fetches the upload record of key-tree string 's' of bucket 'bucket_id'
 * into '*rec' / '*raw' (borrowing the txn's pages and 's'). Returns 0 or
 * -EIO when the tree and the records disagree.
 */
static int
upload_fetch(struct index *ix, MDB_txn *txn, uint64_t bucket_id, struct slice s,
             struct index__upload_rec *rec, const uint8_t **raw)
{
    uint8_t want[INDEX_TREE_STR_MAX];
    if (s.len < INDEX_UPLOAD_RAW_LEN + 2)
        return CORRUPT_BKPT("upload key tree string length");
    *raw = (const uint8_t *)s.ptr + s.len - INDEX_UPLOAD_RAW_LEN;
    MDB_val k = {INDEX_UPLOAD_RAW_LEN, (void *)*raw}, v;
    int rc = index__get(txn, ix->dbi_uploads, &k, &v);
    if (rc == -ENOENT)
        return CORRUPT_BKPT("key tree holds an upload without its record");
    if (rc != 0 || (rc = index__upload_parse(v.mv_data, v.mv_size, rec)) != 0)
        return rc;
    if (rec->bucket_id != bucket_id || index__upload_tree_str(want, rec->key, *raw) != s.len ||
        memcmp(want, s.ptr, s.len) != 0)
        return CORRUPT_BKPT("upload record does not match its key tree string");
    return 0;
}

int
index_upload_list(struct index *ix, const struct index_upload_list_params *p, struct arena *a,
                  struct index_upload_list_result *out)
{
    struct index__tree_iter t;
    MDB_txn *txn = NULL;
    uint32_t max = MIN(p->max_uploads, INDEX_UPLOAD_LIST_MAX);
    struct slice last_cp = SLICE_NULL;
    bool last_is_prefix = false, is_done, has_tree = false;
    int rc;

    memset(out, 0, sizeof(*out));
    if (max == 0 || p->prefix.len > INDEX_MAX_KEY)
        return 0;
    out->uploads = arena_alloc(a, max * sizeof(*out->uploads));
    out->prefixes = arena_alloc(a, max * sizeof(*out->prefixes));
    if ((rc = index__read_begin(ix, &txn)) != 0)
        goto fail;
    rc = index__tree_iter_begin(&t, ix, txn, INDEX_TREE_ROOT_UPLOADS(p->bucket_id));
    has_tree = true;
    if (rc != 0 || (rc = uploads_seek_start(&t, p, &is_done)) != 0)
        goto fail;

    struct slice s;
    while (!is_done && (rc = index__tree_iter_next(&t, &s)) == 1) {
        struct index__upload_rec rec;
        const uint8_t *raw = NULL;
        if ((rc = upload_fetch(ix, txn, p->bucket_id, s, &rec, &raw)) != 0)
            goto fail;
        if (!slice_has_prefix(rec.key, p->prefix))
            break; /* keys under the prefix are contiguous */
        if (out->n_uploads + out->n_prefixes == max) {
            out->is_truncated = true;
            break;
        }
        size_t cp_len = index__rollup_len(rec.key, p->prefix, p->delimiter);
        if (cp_len == 0) {
            index__upload_copy(&rec, raw, a, &out->uploads[out->n_uploads++]);
            last_is_prefix = false;
            continue;
        }
        last_cp = (struct slice){arena_memdup(a, rec.key.ptr, cp_len), cp_len};
        out->prefixes[out->n_prefixes++] = last_cp;
        last_is_prefix = true;
        /* Skip the rest of the common prefix with one seek. */
        char succ[INDEX_MAX_KEY];
        uint8_t str[INDEX_TREE_STR_MAX];
        size_t n = index__key_succ(last_cp, succ);
        if (n == 0)
            break;
        n = index__key_escape(str, (struct slice){succ, n});
        if ((rc = index__tree_iter_seek(&t, (struct slice){(const char *)str, n})) != 0)
            goto fail;
    }
    if (rc < 0)
        goto fail;
    rc = 0;
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
    if (has_tree)
        index__tree_iter_end(&t);
    index__read_end(ix, txn);
    return rc;
}
