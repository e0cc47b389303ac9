/*
 * test_policy.c: the access decision table: root, owner, read-only keys,
 * grant levels, prefix grants (keys and listing prefixes), public-read
 * buckets for anonymous callers, admin actions and old buckets without an
 * owner (root's).
 */
#include "auth/auth.h"
#include "tests/lib/test.h"

#define ROOT "0000000000000000000000000000000000000000000000000000000000000000"
#define ALICE "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define BOB "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static bool
allows(const struct auth_principal *p, const struct auth_bucket_view *b,
       const struct auth_grant_view *g, enum auth_action a, const char *key)
{
    return auth_policy_allows(p, b, g, a, slice_from_cstr(key), ROOT);
}

int
main(void)
{
    struct auth_principal root = {.is_root = true, .user_id = ROOT};
    struct auth_principal alice = {.user_id = ALICE};
    struct auth_principal alice_ro = {.user_id = ALICE, .is_read_only = true};
    struct auth_principal bob = {.user_id = BOB};
    struct auth_principal bob_admin = {.user_id = BOB, .is_admin = true};
    struct auth_principal anon = {.is_anonymous = true, .user_id = ""};
    struct auth_bucket_view alices = {.owner = ALICE};
    struct auth_bucket_view old = {.owner = ""};
    struct auth_bucket_view pub = {.owner = ALICE, .is_public_read = true};

    /* Root and owners. */
    ASSERT(allows(&root, &alices, NULL, AUTH_ACTION_WRITE, "k"));
    ASSERT(allows(&root, NULL, NULL, AUTH_ACTION_ADMIN_WRITE, ""));
    ASSERT(allows(&root, &old, NULL, AUTH_ACTION_BUCKET_ADMIN, ""));
    ASSERT(allows(&alice, &alices, NULL, AUTH_ACTION_WRITE, "k"));
    ASSERT(allows(&alice, &alices, NULL, AUTH_ACTION_BUCKET_ADMIN, ""));
    ASSERT(!allows(&alice, &old, NULL, AUTH_ACTION_READ, "k"));
    ASSERT(!allows(&bob, &alices, NULL, AUTH_ACTION_READ, "k"));
    ASSERT(!allows(&bob, &alices, NULL, AUTH_ACTION_BUCKET_INFO, ""));
    ASSERT(allows(&bob, NULL, NULL, AUTH_ACTION_SERVICE, ""));
    ASSERT(allows(&bob, NULL, NULL, AUTH_ACTION_CREATE_BUCKET, ""));

    /* Read-only keys never write, even for root and owners. */
    ASSERT(allows(&alice_ro, &alices, NULL, AUTH_ACTION_READ, "k"));
    ASSERT(allows(&alice_ro, &alices, NULL, AUTH_ACTION_LIST, ""));
    ASSERT(!allows(&alice_ro, &alices, NULL, AUTH_ACTION_WRITE, "k"));
    ASSERT(!allows(&alice_ro, NULL, NULL, AUTH_ACTION_CREATE_BUCKET, ""));
    struct auth_principal root_ro = {.is_root = true, .is_read_only = true, .user_id = ROOT};
    ASSERT(!allows(&root_ro, &alices, NULL, AUTH_ACTION_WRITE, "k"));

    /* The bucket ACL (READ_ACP): the owner and root, and an admin grant on
     * the whole bucket; neither public-read (anonymous or signed) nor a
     * read, write or prefix grant gives it. */
    ASSERT(allows(&alice, &pub, NULL, AUTH_ACTION_READ_ACP, ""));
    ASSERT(allows(&alice_ro, &pub, NULL, AUTH_ACTION_READ_ACP, ""));
    ASSERT(allows(&root, &pub, NULL, AUTH_ACTION_READ_ACP, ""));
    ASSERT(!allows(&anon, &pub, NULL, AUTH_ACTION_READ_ACP, ""));
    ASSERT(allows(&anon, &pub, NULL, AUTH_ACTION_BUCKET_INFO, ""));
    ASSERT(!allows(&bob, &pub, NULL, AUTH_ACTION_READ_ACP, ""));
    {
        struct auth_grant_view g_rd = {.level = 1}, g_wr = {.level = 2}, g_ad = {.level = 3};
        struct auth_grant_view g_pre = {.level = 3, .prefix = SLICE_LIT("p/")};
        ASSERT(!allows(&bob, &alices, &g_rd, AUTH_ACTION_READ_ACP, ""));
        ASSERT(!allows(&bob, &alices, &g_wr, AUTH_ACTION_READ_ACP, ""));
        ASSERT(allows(&bob, &alices, &g_ad, AUTH_ACTION_READ_ACP, ""));
        ASSERT(!allows(&bob, &alices, &g_pre, AUTH_ACTION_READ_ACP, "p/"));
    }
    ASSERT(!auth_action_is_write(AUTH_ACTION_READ_ACP));

    /* Grant levels include the lower ones. */
    struct auth_grant_view rd = {.level = 1}, wr = {.level = 2}, ad = {.level = 3};
    ASSERT(allows(&bob, &alices, &rd, AUTH_ACTION_READ, "k"));
    ASSERT(allows(&bob, &alices, &rd, AUTH_ACTION_LIST, ""));
    ASSERT(allows(&bob, &alices, &rd, AUTH_ACTION_BUCKET_INFO, ""));
    ASSERT(!allows(&bob, &alices, &rd, AUTH_ACTION_WRITE, "k"));
    ASSERT(allows(&bob, &alices, &wr, AUTH_ACTION_WRITE, "k"));
    ASSERT(allows(&bob, &alices, &wr, AUTH_ACTION_READ, "k"));
    ASSERT(!allows(&bob, &alices, &wr, AUTH_ACTION_BUCKET_ADMIN, ""));
    ASSERT(allows(&bob, &alices, &ad, AUTH_ACTION_BUCKET_ADMIN, ""));

    /* Prefix grants. */
    struct auth_grant_view pre = {.level = 1, .prefix = SLICE_LIT("dataset/")};
    ASSERT(allows(&bob, &alices, &pre, AUTH_ACTION_READ, "dataset/a"));
    ASSERT(!allows(&bob, &alices, &pre, AUTH_ACTION_READ, "private/a"));
    ASSERT(!allows(&bob, &alices, &pre, AUTH_ACTION_READ, "dataset"));
    ASSERT(allows(&bob, &alices, &pre, AUTH_ACTION_LIST, "dataset/"));
    ASSERT(allows(&bob, &alices, &pre, AUTH_ACTION_LIST, "dataset/sub"));
    ASSERT(!allows(&bob, &alices, &pre, AUTH_ACTION_LIST, ""));
    ASSERT(!allows(&bob, &alices, &pre, AUTH_ACTION_LIST, "private/"));
    ASSERT(allows(&bob, &alices, &pre, AUTH_ACTION_BUCKET_INFO, ""));
    struct auth_grant_view prew = {.level = 3, .prefix = SLICE_LIT("dataset/")};
    ASSERT(allows(&bob, &alices, &prew, AUTH_ACTION_WRITE, "dataset/x"));
    ASSERT(!allows(&bob, &alices, &prew, AUTH_ACTION_WRITE, "private/x"));
    ASSERT(!allows(&bob, &alices, &prew, AUTH_ACTION_BUCKET_ADMIN, ""));

    /* Anonymous: only reads of public-read buckets. */
    ASSERT(!allows(&anon, &alices, NULL, AUTH_ACTION_READ, "k"));
    ASSERT(!allows(&anon, NULL, NULL, AUTH_ACTION_SERVICE, ""));
    ASSERT(allows(&anon, &pub, NULL, AUTH_ACTION_READ, "k"));
    ASSERT(allows(&anon, &pub, NULL, AUTH_ACTION_LIST, ""));
    ASSERT(!allows(&anon, &pub, NULL, AUTH_ACTION_WRITE, "k"));
    ASSERT(!allows(&anon, &pub, NULL, AUTH_ACTION_BUCKET_ADMIN, ""));
    ASSERT(allows(&bob, &pub, NULL, AUTH_ACTION_READ, "k"));
    ASSERT(!allows(&bob, &pub, NULL, AUTH_ACTION_WRITE, "k"));

    /* Admin actions. */
    ASSERT(!allows(&bob, NULL, NULL, AUTH_ACTION_ADMIN_READ, ""));
    ASSERT(allows(&bob_admin, NULL, NULL, AUTH_ACTION_ADMIN_WRITE, ""));
    struct auth_principal admin_ro = bob_admin;
    admin_ro.is_read_only = true;
    ASSERT(allows(&admin_ro, NULL, NULL, AUTH_ACTION_ADMIN_READ, ""));
    ASSERT(!allows(&admin_ro, NULL, NULL, AUTH_ACTION_ADMIN_WRITE, ""));
    ASSERT(!allows(&bob_admin, &alices, NULL, AUTH_ACTION_READ, "k"));
    return 0;
}
