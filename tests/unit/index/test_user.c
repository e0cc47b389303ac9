/*
 * test_user.c: users, access keys and grants in the index: name and id
 * lookups, duplicate refusal, a user's keys and grants deleted with it
 * (and only its own), grants that follow the bucket id, the public-read
 * flag, and everything surviving close/reopen.
 */
#include "index/index.h"
#include "tests/lib/test.h"
#include "tests/lib/tmpdir.h"

#include <errno.h>

#define ID_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define ID_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static int
count_key(void *ctx, const struct index_key *k)
{
    (void)k;
    (*(int *)ctx)++;
    return 0;
}

static int
count_user(void *ctx, const struct index_user *u)
{
    (void)u;
    (*(int *)ctx)++;
    return 0;
}

static int
count_grant(void *ctx, const struct index_grant *g)
{
    (void)g;
    (*(int *)ctx)++;
    return 0;
}

static void
add_key(struct index *ix, const char *ak, const char *uid, bool ro, int want)
{
    struct index_key k;
    memset(&k, 0, sizeof(k));
    snprintf(k.access_key, sizeof(k.access_key), "%s", ak);
    snprintf(k.user_id, sizeof(k.user_id), "%s", uid);
    k.is_read_only = ro;
    k.created_ns = 7;
    memcpy(k.secret_blob, "\x01\x02\x03opaque", 9);
    k.secret_blob_len = 9;
    ASSERT_EQ(index_key_create(ix, &k), want);
}

int
main(void)
{
    char *dir = test_tmpdir_create("index-user");
    struct index *ix;
    struct index_user u;
    struct index_key k;
    struct index_grant g;
    struct index_bucket b;

    ASSERT_EQ(index_open(&ix, dir, 64 << 20, true), 0);
    struct index_user alice = {.id = ID_A, .name = "alice", .is_admin = true, .created_ns = 5};
    struct index_user bob = {.id = ID_B, .name = "bob", .created_ns = 6};
    ASSERT_EQ(index_user_create(ix, &alice), 0);
    ASSERT_EQ(index_user_create(ix, &bob), 0);
    ASSERT_EQ(index_user_create(ix, &bob), -EEXIST);
    struct index_user bad = {.id = "xyz", .name = "carol"};
    ASSERT_EQ(index_user_create(ix, &bad), -EINVAL);
    ASSERT_EQ(index_user_get(ix, SLICE_LIT("alice"), &u), 0);
    ASSERT_STR_EQ(u.id, ID_A);
    ASSERT(u.is_admin);
    ASSERT_EQ(u.created_ns, 5);
    ASSERT_EQ(index_user_get_by_id(ix, SLICE_LIT(ID_B), &u), 0);
    ASSERT_STR_EQ(u.name, "bob");
    ASSERT(!u.is_admin);
    ASSERT_EQ(index_user_get(ix, SLICE_LIT("nobody"), &u), -ENOENT);

    add_key(ix, "AKALICE1", ID_A, false, 0);
    add_key(ix, "AKALICE2", ID_A, true, 0);
    add_key(ix, "AKBOB1", ID_B, false, 0);
    add_key(ix, "AKBOB1", ID_B, false, -EEXIST);
    add_key(ix, "AKNOBODY", "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc",
            false, -ENOENT);
    ASSERT_EQ(index_key_get(ix, SLICE_LIT("AKALICE2"), &k), 0);
    ASSERT_STR_EQ(k.user_id, ID_A);
    ASSERT(k.is_read_only);
    ASSERT_UEQ(k.secret_blob_len, 9);
    ASSERT_MEM_EQ(k.secret_blob, "\x01\x02\x03opaque", 9);
    int n = 0;
    ASSERT_EQ(index_key_list(ix, SLICE_LIT(ID_A), count_key, &n), 0);
    ASSERT_EQ(n, 2);
    n = 0;
    ASSERT_EQ(index_key_list(ix, SLICE_NULL, count_key, &n), 0);
    ASSERT_EQ(n, 3);

    /* Grants follow the bucket id. */
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("data"), ID_A, 1, &b), 0);
    ASSERT(!b.is_public_read);
    struct index_grant want = {.user_id = ID_B, .level = INDEX_GRANT_READ, .prefix = "dataset/"};
    ASSERT_EQ(index_grant_put(ix, &want, SLICE_LIT("data")), 0);
    ASSERT_EQ(index_grant_put(ix, &want, SLICE_LIT("nope")), -ENOENT);
    ASSERT_EQ(index_grant_get(ix, SLICE_LIT(ID_B), b.id, &g), 0);
    ASSERT_EQ(g.level, INDEX_GRANT_READ);
    ASSERT_STR_EQ(g.prefix, "dataset/");
    ASSERT_STR_EQ(g.bucket, "data");
    ASSERT_EQ(index_grant_get(ix, SLICE_LIT(ID_A), b.id, &g), -ENOENT);
    want.level = INDEX_GRANT_WRITE;
    want.prefix[0] = '\0';
    ASSERT_EQ(index_grant_put(ix, &want, SLICE_LIT("data")), 0);
    ASSERT_EQ(index_grant_get(ix, SLICE_LIT(ID_B), b.id, &g), 0);
    ASSERT_EQ(g.level, INDEX_GRANT_WRITE);
    ASSERT_STR_EQ(g.prefix, "");
    n = 0;
    ASSERT_EQ(index_grant_list(ix, SLICE_LIT(ID_B), count_grant, &n), 0);
    ASSERT_EQ(n, 1);
    ASSERT_EQ(index_bucket_delete(ix, SLICE_LIT("data"), b.id), 0);
    ASSERT_EQ(index_bucket_create(ix, SLICE_LIT("data"), ID_A, 2, &b), 0);
    ASSERT_EQ(index_grant_get(ix, SLICE_LIT(ID_B), b.id, &g), -ENOENT);
    n = 0;
    ASSERT_EQ(index_grant_list(ix, SLICE_LIT(ID_B), count_grant, &n), 0);
    ASSERT_EQ(n, 0);
    ASSERT_EQ(index_grant_put(ix, &want, SLICE_LIT("data")), 0);
    ASSERT_EQ(index_grant_delete(ix, SLICE_LIT(ID_B), b.id), 0);
    ASSERT_EQ(index_grant_delete(ix, SLICE_LIT(ID_B), b.id), -ENOENT);
    ASSERT_EQ(index_grant_put(ix, &want, SLICE_LIT("data")), 0);

    /* Public-read flag. */
    ASSERT_EQ(index_bucket_set_public(ix, SLICE_LIT("data"), true), 0);
    ASSERT_EQ(index_bucket_get(ix, SLICE_LIT("data"), &b), 0);
    ASSERT(b.is_public_read);
    ASSERT_STR_EQ(b.owner, ID_A);
    ASSERT_EQ(index_bucket_set_public(ix, SLICE_LIT("nope"), true), -ENOENT);

    /* Reopen: all kept. */
    index_close(ix);
    ASSERT_EQ(index_open(&ix, dir, 64 << 20, false), 0);
    ASSERT_EQ(index_bucket_get(ix, SLICE_LIT("data"), &b), 0);
    ASSERT(b.is_public_read);
    ASSERT_EQ(index_key_get(ix, SLICE_LIT("AKBOB1"), &k), 0);
    ASSERT_EQ(index_grant_get(ix, SLICE_LIT(ID_B), b.id, &g), 0);

    /* Deleting bob takes his key and grant, not alice's. */
    ASSERT_EQ(index_user_delete(ix, SLICE_LIT("bob")), 0);
    ASSERT_EQ(index_user_delete(ix, SLICE_LIT("bob")), -ENOENT);
    ASSERT_EQ(index_key_get(ix, SLICE_LIT("AKBOB1"), &k), -ENOENT);
    ASSERT_EQ(index_key_get(ix, SLICE_LIT("AKALICE1"), &k), 0);
    ASSERT_EQ(index_key_get(ix, SLICE_LIT("AKALICE2"), &k), 0);
    ASSERT_EQ(index_grant_get(ix, SLICE_LIT(ID_B), b.id, &g), -ENOENT);
    ASSERT_EQ(index_user_get_by_id(ix, SLICE_LIT(ID_B), &u), -ENOENT);
    n = 0;
    ASSERT_EQ(index_user_list(ix, count_user, &n), 0);
    ASSERT_EQ(n, 1);

    /* Deleting alice removes both her keys (consecutive entries). */
    ASSERT_EQ(index_key_delete(ix, SLICE_LIT("AKALICE1")), 0);
    ASSERT_EQ(index_key_delete(ix, SLICE_LIT("AKALICE1")), -ENOENT);
    add_key(ix, "AKALICE3", ID_A, false, 0);
    ASSERT_EQ(index_user_delete(ix, SLICE_LIT("alice")), 0);
    n = 0;
    ASSERT_EQ(index_key_list(ix, SLICE_NULL, count_key, &n), 0);
    ASSERT_EQ(n, 0);

    index_close(ix);
    test_tmpdir_remove(dir);
    return 0;
}
