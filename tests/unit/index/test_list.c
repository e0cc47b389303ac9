/*
 * test_list.c: index_object_list against an in-memory model of S3's
 * ListObjects (prefix, delimiter, start-after, max-keys, truncation).
 * Random keys over a hostile alphabet (delimiters, spaces, '%', '\n',
 * multi-byte UTF-8, 0xFF bytes) plus runs of keys longer than 480 bytes
 * sharing a 480-byte prefix; every page of every walk is compared. Fixed
 * seed; SHARD_SEED=<n> overrides it. Further tests check that a page
 * costs O(page) LMDB reads, for delimiter listings over many keys and for
 * a run of thousands of long keys (also after the key tree is rebuilt
 * for an environment made without it).
 */
#include "index/index.h"
#include "index/index_int.h"
#include "tests/lib/test.h"
#include "tests/lib/tmpdir.h"

#include <errno.h>
#include <inttypes.h>

static uint64_t rng_state;
static uint64_t seed;
static uint64_t n_pages, n_entries;

static uint64_t
rnd(void)
{
    /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

static size_t
rnd_below(size_t n)
{
    return (size_t)(rnd() % n);
}

static const char *const alphabet[] = {
    "a",
    "b",
    "a",
    "b",
    "c",
    "/",
    "/",
    "-",
    " ",
    "+",
    "%",
    "\n",
    "&",
    "<",
    "\xc3\xa9",         /* é */
    "\xe6\x97\xa5",     /* 日 */
    "\xf0\x9f\x98\x80", /* 😀 */
    "\xff",
};

/* ---- the model ------------------------------------------------------------ */

struct mkey {
    char *p;
    size_t len;
};

static struct mkey *model;
static size_t n_model;

static int
mkey_cmp(const void *a, const void *b)
{
    const struct mkey *x = a, *y = b;
    return slice_cmp((struct slice){x->p, x->len}, (struct slice){y->p, y->len});
}

static struct slice
mslice(const struct mkey *k)
{
    return (struct slice){k->p, k->len};
}

/* First model index with key > 's'. */
static size_t
model_upper_bound(struct slice s)
{
    size_t lo = 0, hi = n_model;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (slice_cmp(mslice(&model[mid]), s) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static long
find(struct slice hay, struct slice needle)
{
    if (needle.len == 0)
        return -1;
    for (size_t i = 0; i + needle.len <= hay.len; i++)
        if (memcmp(hay.ptr + i, needle.ptr, needle.len) == 0)
            return (long)i;
    return -1;
}

struct mentry {
    bool is_prefix;
    struct slice key;
};

/*
 * S3 by definition: the entries are the distinct roll-ups (a key, or
 * prefix + remainder through the first delimiter) of the keys that start
 * with 'prefix' and are > 'sa', restricted to roll-ups > 'sa', in byte
 * order; a page is the first 'max' of them. Returns the page size and
 * sets '*is_truncated'.
 */
static size_t
model_page(struct slice prefix, struct slice delim, struct slice sa, uint32_t max,
           struct mentry *out, bool *is_truncated)
{
    size_t n = 0;
    *is_truncated = false;
    for (size_t i = model_upper_bound(sa); i < n_model; i++) {
        struct slice k = mslice(&model[i]);
        if (!slice_has_prefix(k, prefix)) {
            if (slice_cmp(k, prefix) > 0)
                break;
            continue;
        }
        struct mentry e = {false, k};
        long pos = find((struct slice){k.ptr + prefix.len, k.len - prefix.len}, delim);
        if (pos >= 0) {
            e.is_prefix = true;
            e.key.len = prefix.len + (size_t)pos + delim.len;
            if (slice_cmp(e.key, sa) <= 0)
                continue;
            if (n > 0 && out[n - 1].is_prefix && slice_eq(out[n - 1].key, e.key))
                continue;
        }
        if (n == max) {
            *is_truncated = true;
            break;
        }
        out[n++] = e;
    }
    return n;
}

/* ---- index helpers --------------------------------------------------------- */

static struct index *ix;
static uint64_t bid;

static uint64_t
size_of_key(struct slice k)
{
    return k.len * 3 + (uint8_t)k.ptr[0];
}

static void
commit_batch(struct index_op *ops, size_t n)
{
    ASSERT_EQ(index_commit(ix, ops, n), 0);
    for (size_t i = 0; i < n; i++)
        ASSERT_EQ(ops[i].result, 0);
}

static void
put_keys(const struct mkey *keys, size_t n, struct arena *a)
{
    struct index_op ops[128];
    struct index_object *objs = arena_calloc(a, 128, sizeof(*objs));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        struct slice key = mslice(&keys[i]);
        objs[k] = (struct index_object){.size = size_of_key(key), .mtime_ns = (int64_t)key.len};
        memcpy(objs[k].etag, key.ptr, MIN(key.len, 16));
        ops[k] = (struct index_op){
            .kind = INDEX_OP_PUT, .bucket_id = bid, .key = key, .object = &objs[k], .arena = a};
        if (++k == 128 || i + 1 == n) {
            commit_batch(ops, k);
            k = 0;
        }
    }
}

static void
random_key(char *buf, size_t *len, size_t max_tokens)
{
    size_t n_tok = 1 + rnd_below(max_tokens);
    *len = 0;
    for (size_t t = 0; t < n_tok; t++) {
        const char *tok = alphabet[rnd_below(ARRAY_LEN(alphabet))];
        size_t tl = strlen(tok);
        if (*len + tl > INDEX_MAX_KEY)
            break;
        memcpy(buf + *len, tok, tl);
        *len += tl;
    }
    if (*len == 0)
        buf[(*len)++] = 'a';
}

/* Appends key 'p'/'len' to the model (duplicates are dropped later). */
static void
model_add(const char *p, size_t len)
{
    model[n_model].p = xmalloc(len);
    memcpy(model[n_model].p, p, len);
    model[n_model].len = len;
    n_model++;
}

/* Sorts the model and drops duplicate keys. */
static void
model_sort_unique(void)
{
    size_t kept = 0;
    qsort(model, n_model, sizeof(*model), mkey_cmp);
    for (size_t i = 0; i < n_model; i++) {
        if (kept && mkey_cmp(&model[kept - 1], &model[i]) == 0)
            free(model[i].p);
        else
            model[kept++] = model[i];
    }
    n_model = kept;
}

/* Fills 'buf' with the long-key base: 480 single-byte characters, with a
 * '/' at 'slash_at' when that is < 480. */
static void
long_base(char *buf, size_t slash_at)
{
    static const char chars[] = "ab-c";
    for (size_t i = 0; i < INDEX_DIRECT_MAX; i++)
        buf[i] = chars[(i * 7) % 4];
    if (slash_at < INDEX_DIRECT_MAX)
        buf[slash_at] = '/';
}

static void
build_keys(size_t n_short)
{
    char buf[INDEX_MAX_KEY];
    size_t len;

    model = xcalloc(n_short + 1000, sizeof(*model));
    n_model = 0;
    for (size_t i = 0; i < n_short; i++) {
        random_key(buf, &len, 1 + rnd_below(16));
        model_add(buf, len);
    }
    /* Long runs: base A (no '/'), base B ('/' at 470, so long keys roll up
     * into a 471-byte prefix) and base C ('/' at 100 and the tails carry
     * more), each with keys of 479..1024 bytes. */
    size_t slash[3] = {INDEX_DIRECT_MAX, 470, 100};
    for (int b = 0; b < 3; b++) {
        long_base(buf, slash[b]);
        model_add(buf, INDEX_DIRECT_MAX);
        model_add(buf, INDEX_DIRECT_MAX - 1);
        for (int i = 0; i < 80; i++) {
            size_t tail;
            random_key(buf + INDEX_DIRECT_MAX, &tail, 1 + rnd_below(i % 4 == 0 ? 200 : 8));
            if (INDEX_DIRECT_MAX + tail > INDEX_MAX_KEY)
                tail = INDEX_MAX_KEY - INDEX_DIRECT_MAX;
            model_add(buf, INDEX_DIRECT_MAX + tail);
        }
        memset(buf + INDEX_DIRECT_MAX, '/', INDEX_MAX_KEY - INDEX_DIRECT_MAX);
        model_add(buf, INDEX_MAX_KEY);
        memset(buf + INDEX_DIRECT_MAX, 0xFF, INDEX_MAX_KEY - INDEX_DIRECT_MAX);
        model_add(buf, INDEX_MAX_KEY);
        model_add(buf, INDEX_DIRECT_MAX + 1);
    }
    model_sort_unique();
}

/* Picks a string for a prefix or start-after: often a piece of a real key. */
static struct slice
pick_string(struct arena *a)
{
    switch (rnd_below(6)) {
    case 0:
        return SLICE_NULL;
    case 1: {
        char buf[INDEX_MAX_KEY];
        size_t len;
        random_key(buf, &len, 4);
        return (struct slice){arena_memdup(a, buf, len), len};
    }
    case 2:
        return mslice(&model[rnd_below(n_model)]);
    default: {
        struct slice k = mslice(&model[rnd_below(n_model)]);
        k.len = rnd_below(k.len + 1);
        if (k.len > 10 && rnd_below(2))
            k.len = rnd_below(10);
        return k;
    }
    }
}

static void
dump(const char *what, struct slice s)
{
    fprintf(stderr, "  %s (%zu bytes): \"", what, s.len);
    for (size_t i = 0; i < s.len && i < 80; i++)
        fprintf(stderr, (s.ptr[i] >= 32 && s.ptr[i] < 127) ? "%c" : "\\x%02x", (uint8_t)s.ptr[i]);
    fprintf(stderr, "%s\"\n", s.len > 80 ? "..." : "");
}

static void
check_walk(struct slice prefix, struct slice delim, struct slice start_after, uint32_t max,
           struct arena *a, struct mentry *want)
{
    struct index_list_params p = {.bucket_id = bid,
                                  .prefix = prefix,
                                  .delimiter = delim,
                                  .start_after = start_after,
                                  .max_keys = max};
    struct slice sa = start_after;
    for (int page = 0;; page++) {
        struct index_list_result r;
        bool want_trunc;
        arena_clear(a);
        p.start_after = sa;
        size_t n = model_page(prefix, delim, sa, max, want, &want_trunc);
        ASSERT_EQ(index_object_list(ix, &p, a, &r), 0);
        bool ok = r.n_entries == n && r.is_truncated == want_trunc;
        for (size_t i = 0; ok && i < n; i++) {
            const struct index_list_entry *e = &r.entries[i];
            ok = e->is_prefix == want[i].is_prefix && slice_eq(e->key, want[i].key);
            if (ok && !e->is_prefix)
                ok = e->size == size_of_key(e->key) && e->mtime_ns == (int64_t)e->key.len &&
                     memcmp(e->etag, e->key.ptr, MIN(e->key.len, 16)) == 0;
        }
        if (!ok) {
            fprintf(stderr, "mismatch on page %d (max %u): got %u%s, want %zu%s\n", page, max,
                    r.n_entries, r.is_truncated ? " truncated" : "", n,
                    want_trunc ? " truncated" : "");
            dump("prefix", prefix);
            dump("delimiter", delim);
            dump("start_after", sa);
            for (size_t i = 0; i < r.n_entries && i < 20; i++)
                dump(r.entries[i].is_prefix ? "got prefix" : "got key", r.entries[i].key);
            for (size_t i = 0; i < n && i < 20; i++)
                dump(want[i].is_prefix ? "want prefix" : "want key", want[i].key);
            TEST_FAIL("listing differs from the model (SHARD_SEED=%" PRIu64 ")", seed);
        }
        n_pages++;
        n_entries += r.n_entries;
        if (!r.is_truncated) {
            ASSERT_UEQ(r.next_marker.len, 0);
            break;
        }
        ASSERT(slice_eq(r.next_marker, r.entries[r.n_entries - 1].key));
        /* next_marker lives in 'a', which the next page clears. */
        static char marker[INDEX_MAX_KEY];
        memcpy(marker, r.next_marker.ptr, r.next_marker.len);
        sa = (struct slice){marker, r.next_marker.len};
        ASSERT(page < 100000);
    }
}

static void
run_queries(int n_queries, struct arena *qa, struct arena *pa)
{
    static const struct slice delims[] = {SLICE_LIT("/"), SLICE_LIT("-"), SLICE_LIT("ab"),
                                          SLICE_LIT("\xff"), SLICE_LIT("")};
    static const uint32_t maxes[] = {1, 2, 3, 7, 1000};
    struct mentry *want = xcalloc(1000, sizeof(*want));

    for (int q = 0; q < n_queries; q++) {
        arena_clear(qa);
        struct slice prefix = pick_string(qa);
        if (rnd_below(3) == 0)
            prefix = SLICE_NULL;
        struct slice delim = delims[rnd_below(ARRAY_LEN(delims))];
        struct slice sa = rnd_below(3) == 0 ? SLICE_NULL : pick_string(qa);
        uint32_t max = maxes[rnd_below(ARRAY_LEN(maxes))];
        /* Small pages over a big range walk thousands of pages: keep
         * those to a share of the queries. */
        if (max < 7 && prefix.len < 2 && delim.len == 0 && rnd_below(4) != 0)
            max = 1000;
        check_walk(prefix, delim, sa, max, pa, want);
    }
    /* max_keys 0 is an empty, untruncated page. */
    struct index_list_params p = {.bucket_id = bid, .max_keys = 0};
    struct index_list_result r;
    ASSERT_EQ(index_object_list(ix, &p, pa, &r), 0);
    ASSERT_UEQ(r.n_entries, 0);
    ASSERT(!r.is_truncated);
    free(want);
}

static void
delete_some(struct arena *a)
{
    struct index_op ops[128];
    struct mkey *gone = xcalloc(n_model, sizeof(*gone));
    size_t k = 0, kept = 0, n_gone = 0;
    for (size_t i = 0; i < n_model; i++) {
        if (rnd_below(4) != 0) {
            model[kept++] = model[i];
            continue;
        }
        gone[n_gone++] = model[i];
        ops[k++] = (struct index_op){
            .kind = INDEX_OP_DELETE, .bucket_id = bid, .key = mslice(&model[i]), .arena = a};
        if (k == 128) {
            commit_batch(ops, k);
            k = 0;
        }
    }
    if (k)
        commit_batch(ops, k);
    n_model = kept;
    for (size_t i = 0; i < n_gone; i++)
        free(gone[i].p);
    free(gone);
}

/* ---- O(page) check --------------------------------------------------------- */

static void
test_cursor_cost(struct arena *a)
{
    struct index_bucket b;
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("wide"), "", 1, &b), 0);
    uint64_t saved_bid = bid;
    bid = b.id;
    /* 2000 "directories" of 20 keys each under "d/". */
    struct mkey *keys = xcalloc(2000 * 20, sizeof(*keys));
    size_t n = 0;
    arena_clear(a);
    for (int d = 0; d < 2000; d++)
        for (int f = 0; f < 20; f++) {
            char *s = arena_sprintf(a, "d/%05d/f%02d", d, f);
            keys[n++] = (struct mkey){s, strlen(s)};
        }
    put_keys(keys, n, a);

    struct index_list_params p = {
        .bucket_id = bid, .prefix = SLICE_LIT("d/"), .delimiter = SLICE_LIT("/"), .max_keys = 10};
    struct index_list_result r;
    uint64_t ops0 = index__reads();
    ASSERT_EQ(index_object_list(ix, &p, a, &r), 0);
    uint64_t cost = index__reads() - ops0;
    ASSERT_UEQ(r.n_entries, 10);
    ASSERT(r.is_truncated);
    ASSERT(r.entries[9].is_prefix);
    ASSERT(slice_eq(r.entries[9].key, SLICE_LIT("d/00009/")));
    fprintf(stderr, "delimiter page of 10 over 40000 keys: %" PRIu64 " cursor ops\n", cost);
    ASSERT(cost <= 2 * 10 + 4);

    /* Resuming in the middle: start_after inside a common prefix. */
    p.start_after = SLICE_LIT("d/01000/f05");
    ops0 = index__reads();
    ASSERT_EQ(index_object_list(ix, &p, a, &r), 0);
    cost = index__reads() - ops0;
    ASSERT(slice_eq(r.entries[0].key, SLICE_LIT("d/01001/")));
    ASSERT(cost <= 2 * 10 + 4);
    p.max_keys = 1000;
    p.start_after = SLICE_NULL;
    ASSERT_EQ(index_object_list(ix, &p, a, &r), 0);
    ASSERT_UEQ(r.n_entries, 1000);
    ASSERT(slice_eq(r.next_marker, SLICE_LIT("d/00999/")));

    free(keys);
    bid = saved_bid;
}

/* ---- long-key runs in O(page) -------------------------------------------- */

#define N_RUN 3000

/* Lists every key of the bucket in pages of 'page' and checks each page
 * against 'want' (sorted) and its cost against the page size. */
static void
walk_run_pages(const struct mkey *want, size_t n_want, uint32_t page, struct arena *a)
{
    struct index_list_params p = {.bucket_id = bid, .max_keys = page};
    struct index_list_result r;
    char marker[INDEX_MAX_KEY];
    size_t at = 0;
    uint64_t worst = 0;
    do {
        arena_clear(a);
        uint64_t ops0 = index__reads();
        ASSERT_EQ(index_object_list(ix, &p, a, &r), 0);
        uint64_t cost = index__reads() - ops0;
        worst = MAX(worst, cost);
        /* Each key of a run: a step or two in the key tree and its record;
         * the run's entry and exit: a seek each. */
        ASSERT(cost <= 6 * (uint64_t)page + 30);
        for (uint32_t i = 0; i < r.n_entries; i++, at++) {
            ASSERT(at < n_want);
            ASSERT(slice_eq(r.entries[i].key, mslice(&want[at])));
            ASSERT_UEQ(r.entries[i].size, size_of_key(mslice(&want[at])));
        }
        /* The marker outlives the arena, cleared for the next page. */
        if (r.is_truncated)
            memcpy(marker, r.next_marker.ptr, r.next_marker.len);
        p.start_after = (struct slice){marker, r.next_marker.len};
    } while (r.is_truncated);
    ASSERT_UEQ(at, n_want);
    fprintf(stderr, "run of %zu long keys in pages of %u: at most %" PRIu64 " reads a page\n",
            n_want, page, worst);
}

static void
test_long_run_cost(struct arena *a, const char *dir)
{
    struct index_bucket b;
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("runs"), "", 1, &b), 0);
    uint64_t saved_bid = bid;
    bid = b.id;
    /* N_RUN keys sharing 480 bytes (one run), in an order unrelated to
     * their hashes; a third of them run past 960 bytes (three chunks),
     * some roll up under "/". A short key before and after the run. */
    size_t n = 0;
    struct mkey *keys = xcalloc(N_RUN + 2, sizeof(*keys));
    char base[INDEX_DIRECT_MAX];
    memset(base, 'r', sizeof(base));
    arena_clear(a);
    for (size_t i = 0; i < N_RUN; i++) {
        size_t j = (i * 7919) % N_RUN;
        size_t tail = j % 3 == 0 ? 500 : j % 5;
        char *k = arena_alloc(a, INDEX_MAX_KEY);
        memcpy(k, base, sizeof(base));
        size_t len = sizeof(base);
        len += (size_t)sprintf(k + len, "%s%05zu", j % 4 == 0 ? "/" : "", j);
        memset(k + len, 'z', tail);
        keys[n++] = (struct mkey){k, len + tail};
    }
    keys[n++] = (struct mkey){"a", 1};
    keys[n++] = (struct mkey){"s", 1};
    MDB_txn *txn;
    MDB_stat st0;
    ASSERT_EQ(mdb_txn_begin(ix->env, NULL, MDB_RDONLY, &txn), 0);
    ASSERT_EQ(mdb_stat(txn, ix->dbi_tree, &st0), 0);
    mdb_txn_abort(txn);
    size_t tree_entries_before = st0.ms_entries;
    put_keys(keys, n, a);
    struct mkey *want = xcalloc(n, sizeof(*want));
    for (size_t i = 0; i < n; i++) {
        want[i].p = xmalloc(keys[i].len);
        memcpy(want[i].p, keys[i].p, keys[i].len);
        want[i].len = keys[i].len;
    }
    qsort(want, n, sizeof(*want), mkey_cmp);

    walk_run_pages(want, n, 10, a);
    walk_run_pages(want, n, 1000, a);

    /* A delimiter inside the run: the keys with a '/' after the base are
     * one common prefix (listed first), skipped with one seek. */
    char prefix[INDEX_DIRECT_MAX];
    memcpy(prefix, base, sizeof(base));
    struct index_list_params p = {.bucket_id = bid,
                                  .prefix = {prefix, sizeof(prefix)},
                                  .delimiter = SLICE_LIT("/"),
                                  .max_keys = 10};
    struct index_list_result r;
    arena_clear(a);
    uint64_t ops0 = index__reads();
    ASSERT_EQ(index_object_list(ix, &p, a, &r), 0);
    ASSERT(index__reads() - ops0 <= 6 * 10 + 30);
    ASSERT_UEQ(r.n_entries, 10);
    size_t at = 0;
    bool has_cp = false;
    for (size_t i = 0; i < n && at < 10; i++) {
        struct slice k = mslice(&want[i]);
        if (!slice_has_prefix(k, p.prefix))
            continue;
        bool is_g = k.len > sizeof(base) && k.ptr[sizeof(base)] == '/';
        if (is_g && has_cp)
            continue;
        if (is_g) {
            has_cp = true;
            ASSERT(r.entries[at].is_prefix);
            ASSERT_UEQ(r.entries[at].key.len, sizeof(base) + 1);
        } else {
            ASSERT(!r.entries[at].is_prefix);
            ASSERT(slice_eq(r.entries[at].key, k));
        }
        at++;
    }
    ASSERT(has_cp);

    /* An environment made before the key tree (no "keytree" database)
     * gets it built at open, and lists the same. */
    ASSERT_EQ(mdb_txn_begin(ix->env, NULL, 0, &txn), 0);
    ASSERT_EQ(mdb_drop(txn, ix->dbi_tree, 1), 0);
    ASSERT_EQ(mdb_txn_commit(txn), 0);
    index_close(ix);
    ASSERT_EQ(index_open(&ix, dir, 1ULL << 30, true), 0);
    walk_run_pages(want, n, 100, a);

    /* Deleting every key empties the bucket's key tree. */
    struct index_op op = {.kind = INDEX_OP_DELETE, .bucket_id = bid, .arena = a};
    for (size_t i = 0; i < n; i++) {
        op.key = mslice(&want[i]);
        ASSERT_EQ(index_commit(ix, &op, 1), 0);
        ASSERT_EQ(op.result, 0);
    }
    ASSERT_EQ(mdb_txn_begin(ix->env, NULL, MDB_RDONLY, &txn), 0);
    struct index__tree_iter t;
    struct slice s;
    ASSERT_EQ(index__tree_iter_begin(&t, ix, txn, INDEX_TREE_ROOT_OBJECTS(bid)), 0);
    ASSERT_EQ(index__tree_iter_seek(&t, SLICE_NULL), 0);
    ASSERT_EQ(index__tree_iter_next(&t, &s), 0);
    index__tree_iter_end(&t);
    /* Nothing is left of its inner nodes either: the entries left are
     * the other bucket's. */
    MDB_stat st;
    ASSERT_EQ(mdb_stat(txn, ix->dbi_tree, &st), 0);
    mdb_txn_abort(txn);
    ASSERT_UEQ(st.ms_entries, tree_entries_before);
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("runs"), bid), 0);

    for (size_t i = 0; i < n; i++)
        free(want[i].p);
    free(want);
    free(keys);
    bid = saved_bid;
}

int
main(void)
{
    const char *seed_env = getenv("SHARD_SEED");
    seed = seed_env ? strtoull(seed_env, NULL, 0) : 0x5eed1234abcdULL;
    if (seed == 0)
        seed = 1;
    rng_state = seed;
    fprintf(stderr, "seed %" PRIu64 " (set SHARD_SEED to change)\n", seed);

    char *dir = test_tmpdir_create("index-list");
    struct arena *qa = arena_create(1 << 16), *pa = arena_create(1 << 16);
    struct index_bucket b;
    ASSERT_EQ(index_open(&ix, dir, 1ULL << 30, true), 0);
    /* A neighbour bucket on each side, so listings must stop at the
     * bucket boundary. */
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("before"), "", 1, &b), 0);
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("main"), "", 1, &b), 0);
    bid = b.id;
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("after"), "", 1, &b), 0);
    struct mkey edge[2] = {{"\xff\xff", 2}, {"a", 1}};
    bid = b.id - 2;
    put_keys(edge, 2, qa);
    bid = b.id;
    put_keys(edge, 2, qa);
    bid = b.id - 1;

    build_keys(6000);
    fprintf(stderr, "%zu keys\n", n_model);
    put_keys(model, n_model, qa);
    run_queries(400, qa, pa);
    delete_some(qa);
    fprintf(stderr, "%zu keys after deletes\n", n_model);
    run_queries(400, qa, pa);

    fprintf(stderr, "%" PRIu64 " pages, %" PRIu64 " entries compared\n", n_pages, n_entries);
    test_cursor_cost(qa);
    test_long_run_cost(qa, dir);
    for (size_t i = 0; i < n_model; i++)
        free(model[i].p);
    free(model);

    index_close(ix);
    arena_destroy(qa);
    arena_destroy(pa);
    test_tmpdir_remove(dir);
    return 0;
}
