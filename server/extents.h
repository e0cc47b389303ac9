/*
 * extents.h: the one place index extents and storage extents are converted
 * (extents.c). server/ is the only module that knows both types; index/ and
 * storage/ never see each other's.
 */
#ifndef SHARD_SERVER_EXTENTS_H
#define SHARD_SERVER_EXTENTS_H

#include <stddef.h>

struct arena;
struct index_extent;
struct storage_extent;

/* Index extents -> storage extents: fills out[0..n). */
void extents_from_index(const struct index_extent *in, size_t n, struct storage_extent *out);
/* Storage extents -> index extents, allocated in 'a' (never NULL, even for n = 0). */
struct index_extent *extents_to_index(struct arena *a, const struct storage_extent *in, size_t n);

#endif
