/*
 * reserve.h: what each principal's uploads in flight hold (space and staging
 * buffers reserved ahead of their bytes), so one user cannot take the whole
 * store with uploads that send nothing (reserve.c).
 */
#ifndef SHARD_SERVER_RESERVE_H
#define SHARD_SERVER_RESERVE_H

#include <stdbool.h>
#include <stdint.h>

struct reserve_table;

/* Creates the table; 'max_per_principal' 0 disables the cap (and the
 * bookkeeping). Destroy with reserve_table_destroy (NULL is a no-op). */
struct reserve_table *reserve_table_create(uint64_t max_per_principal);
void reserve_table_destroy(struct reserve_table *t);
/* True when 'principal' (a canonical user id, "" for anonymous) holds less
 * than the cap, so a new upload may start. Thread-safe. Both functions take
 * a NULL table as "no cap". */
bool reserve_has_room(struct reserve_table *t, const char *principal);
/* Moves one upload's charge for 'principal' from 'old_len' to 'new_len'
 * bytes. Returns true when done (a decrease always is), false when the
 * principal's total would pass the cap: nothing changes and the caller
 * refuses the upload (503 SlowDown) and later uncharges 'old_len'.
 * Thread-safe. */
bool reserve_charge(struct reserve_table *t, const char *principal, uint64_t old_len,
                    uint64_t new_len);

#endif
