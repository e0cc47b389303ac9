/*
 * meta.h: object metadata, the opaque 'meta' blob of index_object
 * (meta.c): the stored headers (Content-Type, x-amz-meta-*, ...) as a
 * versioned list of name/value pairs.
 */
#ifndef SHARD_SERVER_META_H
#define SHARD_SERVER_META_H

#include "common/common.h"
#include "server/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct s3_req;
struct s3_tag;

/* Metadata entries whose names start with this are internal (never sent
 * as headers): "x-shard-part-sizes" holds a multipart object's part sizes
 * as little-endian u64s. */
#define META_INTERNAL_PREFIX "x-shard-"
#define META_PART_SIZES "x-shard-part-sizes"
/* "x-shard-tags" holds the object's tags in tags.h's stored form; absent
 * when the object has none. */
#define META_TAGS "x-shard-tags"
/* A multipart object's part checksums, for GetObjectAttributes: the raw
 * digests of the upload's algorithm, one per part in order (absent when
 * the upload had none, or a part lacked it). */
#define META_PART_CHECKSUMS "x-shard-part-checksums"

struct meta_entry {
    struct slice name; /* lower-case header name, e.g. "content-type", "x-amz-meta-foo" */
    struct slice value;
};
struct meta {
    struct meta_entry *entries;
    size_t n;
};
/* Encodes 'm' into the arena. */
void meta_encode(struct arena *a, const struct meta *m, const uint8_t **out, size_t *out_len);
/* Decodes; returns false when the blob is corrupt. */
bool meta_decode(struct arena *a, const uint8_t *p, size_t len, struct meta *out);
/* Returns the value of 'name' or an empty slice with ptr NULL. */
struct slice meta_get(const struct meta *m, const char *name);
/* Collects the storable headers of a request (Content-Type, x-amz-meta-*, ...).
 * Returns S3_OK or an error (metadata too large). */
enum s3_error meta_from_request(struct s3_req *r, struct meta *out);

/* The META_PART_SIZES value of a multipart object: its 'n' part sizes
 * (little-endian u64s), allocated in 'a'. */
struct slice meta_part_sizes_format(struct arena *a, const uint64_t *sizes, size_t n);
/* Finds part 'number' (1-based, <= n_parts) in the META_PART_SIZES value
 * 'blob' of an object of 'n_parts' parts: sets '*first' (its object
 * offset) and '*len'. Returns false when the blob is corrupt. */
bool meta_part_sizes_parse(struct slice blob, uint32_t n_parts, uint32_t number, uint64_t *first,
                           uint64_t *len);
/*
 * The object's tags, for anyone who needs them (GetObjectTagging, the
 * x-amz-tagging-count header, lifecycle Tag filters in the worker and in
 * x-amz-expiration). Sets '*tags' (an
 * array in 'a' whose slices point into 'm's values) and '*n' (0 and NULL
 * when the object has no tags). Returns false when the stored tags are
 * corrupt (then '*n' is 0). Pure; any thread.
 */
bool meta_tags_get(const struct meta *m, struct arena *a, struct s3_tag **tags, size_t *n);
/* Makes '*out' (in 'a') a copy of 'm' whose tags are the 'n' 'tags' (none:
 * no META_TAGS entry), keeping every other entry in order. 'out' may not
 * be 'm'. */
void meta_tags_set(struct arena *a, const struct meta *m, const struct s3_tag *tags, size_t n,
                   struct meta *out);

#endif
