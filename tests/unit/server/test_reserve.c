/*
 * test_reserve.c: unit tests of server/reserve.c, what each principal's
 * uploads hold. Covers charging up to exactly the cap, a refused charge
 * leaving the old one in place, principals kept apart, entries dropped at
 * zero, and a cap of 0 (or no table) admitting everything.
 */
#include "server/reserve.h"
#include "tests/lib/test.h"

#define MIB (1ull << 20)

static void
test_cap(void)
{
    struct reserve_table *t = reserve_table_create(10 * MIB);
    ASSERT(reserve_has_room(t, "alice"));
    ASSERT(reserve_charge(t, "alice", 0, 4 * MIB));
    ASSERT(reserve_charge(t, "alice", 0, 4 * MIB));
    /* 12 MiB would pass the cap: refused, the 8 MiB stay. */
    ASSERT(!reserve_charge(t, "alice", 0, 4 * MIB));
    ASSERT(reserve_has_room(t, "alice"));
    /* An upload growing from 4 to 6 MiB reaches exactly the cap. */
    ASSERT(reserve_charge(t, "alice", 4 * MIB, 6 * MIB));
    ASSERT(!reserve_has_room(t, "alice"));
    ASSERT(!reserve_charge(t, "alice", 6 * MIB, 6 * MIB + 4096));
    /* Another principal (and anonymous) has a cap of its own. */
    ASSERT(reserve_has_room(t, "bob"));
    ASSERT(reserve_charge(t, "bob", 0, 10 * MIB));
    ASSERT(!reserve_has_room(t, "bob"));
    ASSERT(reserve_has_room(t, ""));
    /* Decreases always succeed; at zero the principal has room again. */
    ASSERT(reserve_charge(t, "alice", 6 * MIB, 0));
    ASSERT(reserve_has_room(t, "alice"));
    ASSERT(reserve_charge(t, "alice", 4 * MIB, 0));
    ASSERT(reserve_charge(t, "alice", 0, 10 * MIB));
    ASSERT(reserve_charge(t, "alice", 10 * MIB, 0));
    ASSERT(reserve_charge(t, "bob", 10 * MIB, 0));
    reserve_table_destroy(t);
}

static void
test_no_cap(void)
{
    struct reserve_table *t = reserve_table_create(0);
    ASSERT(reserve_charge(t, "alice", 0, UINT64_MAX));
    ASSERT(reserve_charge(t, "alice", 0, UINT64_MAX));
    ASSERT(reserve_has_room(t, "alice"));
    reserve_table_destroy(t);
    ASSERT(reserve_has_room(NULL, "alice"));
    ASSERT(reserve_charge(NULL, "alice", 0, MIB));
    reserve_table_destroy(NULL);
}

static void
test_many_principals(void)
{
    /* More principals than hash buckets: chains work, and every entry is
     * dropped when its charge returns to zero (ASan reports a leak if not). */
    struct reserve_table *t = reserve_table_create(2 * MIB);
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof(name), "user-%d", i);
        ASSERT(reserve_charge(t, name, 0, 2 * MIB));
    }
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof(name), "user-%d", i);
        ASSERT(!reserve_has_room(t, name));
        ASSERT(reserve_charge(t, name, 2 * MIB, 0));
        ASSERT(reserve_has_room(t, name));
    }
    reserve_table_destroy(t);
}

int
main(void)
{
    test_cap();
    test_no_cap();
    test_many_principals();
    return 0;
}
