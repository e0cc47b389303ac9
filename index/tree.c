/*
 * tree.c: the "keytree" database, an ordered set of byte strings of up to
 * INDEX_TREE_STR_MAX bytes under a root id, stored as a trie of chunks of
 * at most INDEX_TREE_CHUNK bytes so that each entry fits an LMDB key
 * (layout and ordering argument in keys.h). It gives the two listings
 * whose natural order LMDB keys cannot carry -- object keys longer than
 * 480 bytes, and multipart uploads by (key, upload id) -- a seek to any
 * string and an in-order walk, each step O(1) LMDB reads, so a page costs
 * O(page) whatever the set holds. Invariants: every entry has a leaf flag
 * or a child; every child node has at least one entry; only a chunk of
 * exactly INDEX_TREE_CHUNK bytes has a child.
 */
#include "index/index_int.h"

#include <errno.h>

#define TREE_VAL_LEN 9
#define TREE_LEAF 0x01
#define TREE_KEY_MAX (8 + INDEX_TREE_CHUNK)

static const char NEXT_NODE_KEY[] = "next_tree_node";

/* Formats the entry key 'node' | 'chunk' into 'out'; returns its length. */
static size_t
tree_key(uint8_t *out, uint64_t node, const void *chunk, size_t len)
{
    index__put_be64(out, node);
    if (len)
        memcpy(out + 8, chunk, len);
    return 8 + len;
}

/* Parses entry value 'v'. Returns 0 or -EIO. */
static int
tree_val_parse(const MDB_val *v, bool *is_leaf, uint64_t *child)
{
    const uint8_t *p = v->mv_data;
    if (v->mv_size != TREE_VAL_LEN || (p[0] & ~TREE_LEAF) != 0)
        return CORRUPT_BKPT("keytree entry value");
    *is_leaf = (p[0] & TREE_LEAF) != 0;
    *child = index__get_le64(p + 1);
    if (!*is_leaf && *child == 0)
        return CORRUPT_BKPT("keytree entry with neither a leaf nor a child");
    return 0;
}

/* Writes entry 'k' with 'is_leaf'/'child', or deletes it when it holds
 * neither. Returns 0 or -errno. */
static int
tree_val_put(struct index *ix, MDB_txn *txn, MDB_val *k, bool is_leaf, uint64_t child)
{
    if (!is_leaf && child == 0)
        return index__err(mdb_del(txn, ix->dbi_tree, k, NULL));
    uint8_t val[TREE_VAL_LEN];
    val[0] = is_leaf ? TREE_LEAF : 0;
    index__put_le64(val + 1, child);
    MDB_val v = {sizeof(val), val};
    return index__err(mdb_put(txn, ix->dbi_tree, k, &v, 0));
}

/* Takes a new inner node id from the counter in "meta". */
static int
tree_node_alloc(struct index *ix, MDB_txn *txn, uint64_t *out)
{
    MDB_val mk = {sizeof(NEXT_NODE_KEY) - 1, (void *)NEXT_NODE_KEY}, mv;
    uint64_t id = 1;
    int rc = index__err(mdb_get(txn, ix->dbi_meta, &mk, &mv));
    if (rc == 0) {
        if (mv.mv_size != 8)
            return CORRUPT_BKPT("meta next_tree_node");
        id = index__get_le64(mv.mv_data);
    } else if (rc != -ENOENT) {
        return rc;
    }
    if (id == 0 || id >= INDEX_TREE_ROOT_UPLOADS(0))
        return CORRUPT_BKPT("meta next_tree_node value");
    uint8_t next[8];
    index__put_le64(next, id + 1);
    MDB_val nv = {8, next};
    if ((rc = index__err(mdb_put(txn, ix->dbi_meta, &mk, &nv, 0))) != 0)
        return rc;
    *out = id;
    return 0;
}

int
index__tree_insert(struct index *ix, MDB_txn *txn, uint64_t root, struct slice s)
{
    uint8_t key[TREE_KEY_MAX];
    uint64_t node = root;
    int rc;

    if (s.len == 0 || s.len > INDEX_TREE_STR_MAX)
        return -EINVAL;
    for (size_t off = 0;; off += INDEX_TREE_CHUNK) {
        size_t clen = MIN(INDEX_TREE_CHUNK, s.len - off);
        bool is_last = off + clen == s.len;
        MDB_val k = {tree_key(key, node, s.ptr + off, clen), key}, v;
        bool is_leaf = false;
        uint64_t child = 0;
        rc = index__err(mdb_get(txn, ix->dbi_tree, &k, &v));
        if (rc == 0)
            rc = tree_val_parse(&v, &is_leaf, &child);
        else if (rc == -ENOENT)
            rc = 0;
        if (rc != 0)
            return rc;
        if (is_last)
            return is_leaf ? 0 : tree_val_put(ix, txn, &k, true, child);
        if (child == 0) {
            if ((rc = tree_node_alloc(ix, txn, &child)) != 0 ||
                (rc = tree_val_put(ix, txn, &k, is_leaf, child)) != 0)
                return rc;
        }
        node = child;
    }
}

/* Sets '*is_empty' when inner node 'node' has no entry left. */
static int
tree_node_is_empty(struct index *ix, MDB_txn *txn, uint64_t node, bool *is_empty)
{
    struct index__iter it;
    uint8_t pfx[8];
    index__put_be64(pfx, node);
    int rc = index__iter_begin(&it, txn, ix->dbi_tree, pfx, sizeof(pfx));
    if (rc == 0)
        rc = index__iter_next(&it);
    index__iter_end(&it);
    *is_empty = rc == 0;
    return rc < 0 ? rc : 0;
}

int
index__tree_remove(struct index *ix, MDB_txn *txn, uint64_t root, struct slice s)
{
    struct {
        uint64_t node;
        bool is_leaf;
        uint64_t child;
    } path[INDEX_TREE_DEPTH];
    uint8_t key[TREE_KEY_MAX];
    int depth = 0, rc;

    if (s.len == 0 || s.len > INDEX_TREE_STR_MAX)
        return -ENOENT;
    uint64_t node = root;
    for (size_t off = 0;; off += INDEX_TREE_CHUNK) {
        size_t clen = MIN(INDEX_TREE_CHUNK, s.len - off);
        MDB_val k = {tree_key(key, node, s.ptr + off, clen), key}, v;
        if ((rc = index__err(mdb_get(txn, ix->dbi_tree, &k, &v))) != 0 ||
            (rc = tree_val_parse(&v, &path[depth].is_leaf, &path[depth].child)) != 0)
            return rc;
        path[depth].node = node;
        depth++;
        if (off + clen == s.len)
            break;
        if ((node = path[depth - 1].child) == 0)
            return -ENOENT;
    }
    if (!path[depth - 1].is_leaf)
        return -ENOENT;
    path[depth - 1].is_leaf = false;
    /* Bottom up: rewrite the entry; when it holds nothing it goes, and
     * when its node is then empty the parent's child link goes too. */
    for (int d = depth - 1; d >= 0; d--) {
        size_t off = (size_t)d * INDEX_TREE_CHUNK;
        size_t clen = MIN(INDEX_TREE_CHUNK, s.len - off);
        MDB_val k = {tree_key(key, path[d].node, s.ptr + off, clen), key};
        if ((rc = tree_val_put(ix, txn, &k, path[d].is_leaf, path[d].child)) != 0)
            return rc;
        if (path[d].is_leaf || path[d].child || d == 0)
            return 0;
        bool is_empty;
        if ((rc = tree_node_is_empty(ix, txn, path[d].node, &is_empty)) != 0)
            return rc;
        if (!is_empty)
            return 0;
        path[d - 1].child = 0;
    }
    return 0;
}

/* ---- the ordered walk ----------------------------------------------------- */

/*
 * The cursor just moved ('rc' from index__iter_*): when it sits on an
 * entry of 'node', loads it as level 'd' (fresh: nothing of it handed out)
 * and makes it the top. Returns 1, 0 (not an entry of 'node') or -errno.
 */
static int
walk_load(struct index__tree_iter *t, int d, uint64_t node, int rc)
{
    t->cur_level = -1;
    if (rc <= 0)
        return rc;
    const MDB_val *k = &t->it.k;
    if (k->mv_size < 8 || index__get_be64(k->mv_data) != node)
        return 0;
    if (k->mv_size == 8 || k->mv_size > TREE_KEY_MAX)
        return CORRUPT_BKPT("keytree key length");
    struct index__tree_level *L = &t->lv[d];
    if ((rc = tree_val_parse(&t->it.v, &L->is_leaf, &L->child)) != 0)
        return rc;
    L->node = node;
    L->len = k->mv_size - 8;
    L->state = 0;
    if (L->child && (L->len != INDEX_TREE_CHUNK || d + 1 >= INDEX_TREE_DEPTH))
        return CORRUPT_BKPT("keytree child under a short chunk");
    memcpy(t->str + (size_t)d * INDEX_TREE_CHUNK, (const uint8_t *)k->mv_data + 8, L->len);
    t->depth = d + 1;
    t->cur_level = d;
    return 1;
}

/* Positions level 'd' on the first entry of 'node' >= 'chunk'/'len'. */
static int
walk_seek(struct index__tree_iter *t, int d, uint64_t node, const void *chunk, size_t len)
{
    uint8_t key[TREE_KEY_MAX];
    size_t klen = tree_key(key, node, chunk, len);
    return walk_load(t, d, node, index__iter_seek(&t->it, key, klen));
}

/* Moves level 'd' to its next entry in the same node. */
static int
walk_advance(struct index__tree_iter *t, int d)
{
    const struct index__tree_level *L = &t->lv[d];
    uint64_t node = L->node;
    int rc;
    if (t->cur_level == d) {
        rc = index__iter_next(&t->it);
    } else {
        uint8_t key[TREE_KEY_MAX];
        size_t klen = tree_key(key, node, t->str + (size_t)d * INDEX_TREE_CHUNK, L->len);
        rc = index__iter_after(&t->it, key, klen);
    }
    return walk_load(t, d, node, rc);
}

int
index__tree_iter_begin(struct index__tree_iter *t, struct index *ix, MDB_txn *txn, uint64_t root)
{
    memset(t, 0, sizeof(*t));
    t->root = root;
    t->cur_level = -1;
    return index__iter_begin(&t->it, txn, ix->dbi_tree, NULL, 0);
}

int
index__tree_iter_seek(struct index__tree_iter *t, struct slice target)
{
    uint64_t node = t->root;
    int rc;

    t->depth = 0;
    for (int d = 0; d < INDEX_TREE_DEPTH; d++) {
        size_t off = (size_t)d * INDEX_TREE_CHUNK;
        size_t clen = MIN(INDEX_TREE_CHUNK, target.len - off);
        const char *chunk = clen ? target.ptr + off : NULL;
        if ((rc = walk_seek(t, d, node, chunk, clen)) <= 0) {
            /* Every entry of this node sorts before 'target': the walk
             * resumes after the parent's entry (depth is d now). */
            t->depth = d;
            return rc;
        }
        struct index__tree_level *L = &t->lv[d];
        bool is_same = L->len == clen && (clen == 0 || memcmp(t->str + off, chunk, clen) == 0);
        if (!is_same || target.len <= off + INDEX_TREE_CHUNK)
            return 0; /* this entry and all it holds are >= target */
        /* 'target' goes on below this entry: the string ending here is
         * smaller, the child holds the rest. */
        L->state = 2;
        if (L->child == 0)
            return 0;
        node = L->child;
    }
    return CORRUPT_BKPT("keytree seek deeper than any string");
}

int
index__tree_iter_next(struct index__tree_iter *t, struct slice *out)
{
    int rc;
    while (t->depth > 0) {
        int d = t->depth - 1;
        struct index__tree_level *L = &t->lv[d];
        if (L->state == 0) {
            L->state = 1;
            if (L->is_leaf) {
                *out = (struct slice){(const char *)t->str, (size_t)d * INDEX_TREE_CHUNK + L->len};
                return 1;
            }
        }
        if (L->state == 1) {
            L->state = 2;
            if (L->child) {
                if ((rc = walk_seek(t, d + 1, L->child, NULL, 0)) < 0)
                    return rc;
                if (rc == 0)
                    return CORRUPT_BKPT("keytree node without entries");
                continue;
            }
        }
        if ((rc = walk_advance(t, d)) < 0)
            return rc;
        if (rc == 0)
            t->depth = d; /* this node is done: back to the parent */
    }
    return 0;
}

void
index__tree_iter_end(struct index__tree_iter *t)
{
    index__iter_end(&t->it);
}
