/*
 * tags.h: object tags (tags.c), the S3 TagSet of an object: AWS's limits
 * and validation, the x-amz-tagging header form ("k1=v1&k2=v2", URL query
 * encoded) and the binary form kept in the object's metadata blob under
 * META_TAGS (meta.h; meta_tags_get reads it). Pure functions on slices and
 * an arena: no I/O, thread-safe, fuzzed (tests/fuzz/fuzz_xml_tagging.c).
 */
#ifndef SHARD_SERVER_TAGS_H
#define SHARD_SERVER_TAGS_H

#include "common/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* AWS's limits for object tags (Unicode characters, not bytes). */
#define TAGS_OBJECT_MAX 10
#define TAGS_KEY_MAX_CHARS 128
#define TAGS_VALUE_MAX_CHARS 256

struct s3_tag {
    struct slice key;   /* UTF-8, 1..TAGS_KEY_MAX_CHARS characters once validated */
    struct slice value; /* UTF-8, 0..TAGS_VALUE_MAX_CHARS characters once validated */
};

/* Why a tag set is refused. server/ maps each to an S3 error and
 * tags_error_message() gives AWS's message. */
enum tags_error {
    TAGS_OK,
    TAGS_TOO_MANY,       /* more than the limit (BadRequest on AWS) */
    TAGS_KEY_TOO_LONG,   /* InvalidTag */
    TAGS_VALUE_TOO_LONG, /* InvalidTag */
    TAGS_KEY_INVALID,    /* InvalidTag: empty, bad UTF-8 or a character tags may not hold */
    TAGS_VALUE_INVALID,  /* InvalidTag */
    TAGS_DUPLICATE_KEY,  /* InvalidTag */
    TAGS_BAD_HEADER,     /* InvalidArgument: x-amz-tagging not URL query encoded UTF-8,
                            or a key twice */
};

/* AWS's message for 'e' (a static string; "" for TAGS_OK). */
const char *tags_error_message(enum tags_error e);

/*
 * Validates 'n' tags as S3 does for an object: at most 'max' tags; each key
 * 1..128 and each value 0..256 characters of valid UTF-8 drawn from
 * letters, digits, spaces and "+-=._:/@" (any non-ASCII character from
 * U+00A0 up counts as a letter: an approximation of AWS's \p{L}\p{Z}\p{N});
 * no key twice (byte comparison). Returns the first problem found (tags in
 * order, the count first), or TAGS_OK.
 */
enum tags_error tags_validate(const struct s3_tag *tags, size_t n, size_t max);

/*
 * Parses an x-amz-tagging header value "k1=v1&k2=v2" (URL query encoding:
 * %XX escapes, '+' is a space; empty pairs are skipped; "k" alone is k
 * with an empty value) into '*tags'/'*n' (in 'a') and validates the set
 * with tags_validate(..., TAGS_OBJECT_MAX). A bad escape, bad UTF-8 or a
 * duplicate key is TAGS_BAD_HEADER. Returns TAGS_OK or the error; the
 * output is meaningful only on TAGS_OK.
 */
enum tags_error tags_parse_header(struct slice header, struct arena *a, struct s3_tag **tags,
                                  size_t *n);

/*
 * The stored form: for each tag, u16 key_len | key | u16 value_len | value
 * (little-endian), in order; zero tags is zero bytes. encode writes into
 * 'a' (lengths must fit u16: validated tags always do).
 */
void tags_encode(struct arena *a, const struct s3_tag *tags, size_t n, const uint8_t **out,
                 size_t *out_len);
/* Decodes the stored form into '*tags'/'*n' (slices point into 'p', the
 * array is in 'a'). Returns false when the bytes are not a valid
 * encoding. */
bool tags_decode(const uint8_t *p, size_t len, struct arena *a, struct s3_tag **tags, size_t *n);

#endif
