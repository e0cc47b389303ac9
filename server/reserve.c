/*
 * reserve.c: what each principal holds in uploads that are still in flight.
 *
 * A storage writer takes space and staging buffers only as bytes arrive, but
 * a client with many uploads open could still hold a step of space and a
 * staging buffer in each of them. Uploads charge what their writer holds
 * (storage_writer_held_len) to their principal (the canonical user id; all
 * anonymous callers share ""), re-charged at each reservation step, and a
 * charge that would pass reserve_max_per_principal is refused (503
 * SlowDown). Invariant: an entry exists only while its charge is non-zero,
 * so the table holds at most one entry per principal with an upload open.
 */
#include "common/common.h"
#include "server/reserve.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define RESERVE_BUCKETS 256

struct reserve_entry {
    struct reserve_entry *next;
    uint64_t held_len;
    char principal[]; /* NUL-terminated */
};

struct reserve_table {
    pthread_mutex_t lock;
    uint64_t max_len; /* per principal; 0: no cap */
    struct reserve_entry *buckets[RESERVE_BUCKETS];
};

struct reserve_table *
reserve_table_create(uint64_t max_per_principal)
{
    struct reserve_table *t = xcalloc(1, sizeof(*t));
    pthread_mutex_init(&t->lock, NULL);
    t->max_len = max_per_principal;
    return t;
}

void
reserve_table_destroy(struct reserve_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < RESERVE_BUCKETS; i++) {
        struct reserve_entry *e = t->buckets[i];
        while (e) {
            struct reserve_entry *next = e->next;
            free(e);
            e = next;
        }
    }
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* The chain slot of 'principal' (FNV-1a). */
static struct reserve_entry **
reserve_slot(struct reserve_table *t, const char *principal)
{
    uint64_t h = 14695981039346656037ull;
    for (const unsigned char *p = (const unsigned char *)principal; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    struct reserve_entry **slot = &t->buckets[h % RESERVE_BUCKETS];
    while (*slot && strcmp((*slot)->principal, principal) != 0)
        slot = &(*slot)->next;
    return slot;
}

bool
reserve_has_room(struct reserve_table *t, const char *principal)
{
    if (!t || t->max_len == 0)
        return true;
    pthread_mutex_lock(&t->lock);
    struct reserve_entry *e = *reserve_slot(t, principal);
    bool has_room = !e || e->held_len < t->max_len;
    pthread_mutex_unlock(&t->lock);
    return has_room;
}

bool
reserve_charge(struct reserve_table *t, const char *principal, uint64_t old_len, uint64_t new_len)
{
    bool is_ok = true;
    if (!t || t->max_len == 0 || old_len == new_len)
        return true;
    pthread_mutex_lock(&t->lock);
    struct reserve_entry **slot = reserve_slot(t, principal);
    struct reserve_entry *e = *slot;
    uint64_t held = e ? e->held_len : 0;
    if (old_len > held) {
        log_error("reserve: principal holds %llu bytes, uncharging %llu", (unsigned long long)held,
                  (unsigned long long)old_len);
        old_len = held;
    }
    held -= old_len;
    if (new_len > t->max_len - MIN(held, t->max_len)) {
        /* Refused: the old charge stays as it was. */
        is_ok = false;
        goto done;
    }
    held += new_len;
    if (held > 0 && !e) {
        size_t len = strlen(principal);
        e = xcalloc(1, sizeof(*e) + len + 1);
        memcpy(e->principal, principal, len + 1);
        *slot = e;
    }
    if (held == 0 && e) {
        *slot = e->next;
        free(e);
    } else if (e) {
        e->held_len = held;
    }
done:
    pthread_mutex_unlock(&t->lock);
    return is_ok;
}
