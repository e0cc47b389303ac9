/*
 * lifecycle_xml.h: the bucket configuration bodies S3 takes as XML and
 * this server keeps: a lifecycle configuration (PutBucketLifecycle-
 * Configuration) and a bucket tag set (PutBucketTagging). Parsed with
 * expat into plain structs, validated as S3 validates them (status plus
 * S3's message), formatted back as S3's Get answers them, and, for
 * lifecycle, matched against objects. Pure: no I/O, no server state; all
 * output in the caller's arena. Fuzzed by tests/fuzz/fuzz_lifecycle.c.
 */
#ifndef SHARD_SERVER_LIFECYCLE_XML_H
#define SHARD_SERVER_LIFECYCLE_XML_H

#include "common/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LC_RULES_MAX 1000
#define LC_ID_MAX 255
#define LC_PREFIX_MAX 1024
#define LC_TAG_KEY_MAX 128
#define LC_TAG_VALUE_MAX 256
#define LC_FILTER_TAGS_MAX 50 /* tags in one And filter */
#define LC_BUCKET_TAGS_MAX 50 /* PutBucketTagging */
#define LC_STORAGE_CLASS_MAX 31
#define LC_DAYS_MAX 2147483647 /* Days, DaysAfterInitiation, NoncurrentDays */

/* The outcome of a parse; every error but LC_OK comes with S3's message. */
enum lc_status {
    LC_OK,
    LC_MALFORMED,        /* MalformedXML */
    LC_INVALID_ARGUMENT, /* InvalidArgument */
    LC_INVALID_REQUEST,  /* InvalidRequest */
    LC_INVALID_TAG,      /* InvalidTag (bucket tagging) */
    LC_INVALID_CLASS,    /* InvalidStorageClass */
};

struct lc_tag {
    struct slice key;
    struct slice value;
};

/* How a rule names the objects it applies to, as written (kept so that a
 * Get answers the same form). */
enum lc_filter_form {
    LC_FILTER_LEGACY_PREFIX, /* <Prefix> directly under <Rule> */
    LC_FILTER_EMPTY,         /* <Filter/>: every object */
    LC_FILTER_PREFIX,        /* <Filter><Prefix> */
    LC_FILTER_TAG,           /* <Filter><Tag> */
    LC_FILTER_SIZE_GT,       /* <Filter><ObjectSizeGreaterThan> */
    LC_FILTER_SIZE_LT,       /* <Filter><ObjectSizeLessThan> */
    LC_FILTER_AND,           /* <Filter><And>...</And> */
};

struct lc_filter {
    enum lc_filter_form form;
    bool has_prefix;
    struct slice prefix;
    struct lc_tag *tags;
    uint32_t n_tags;
    bool has_size_gt;
    uint64_t size_gt; /* object size > this */
    bool has_size_lt;
    uint64_t size_lt; /* object size < this */
};

/* A Transition or a NoncurrentVersionTransition. */
struct lc_transition {
    bool has_days; /* Days (or NoncurrentDays) */
    uint32_t days;
    bool has_date; /* Transition only */
    int64_t date_s;
    bool has_newer; /* NewerNoncurrentVersions (noncurrent only) */
    uint32_t newer;
    char storage_class[LC_STORAGE_CLASS_MAX + 1];
};

struct lc_rule {
    struct slice id; /* empty when absent (S3 then makes one up: see lc_parse) */
    bool is_enabled;
    struct lc_filter filter;
    /* Expiration */
    bool has_expiration;
    bool has_exp_days;
    uint32_t exp_days;
    bool has_exp_date;
    int64_t exp_date_s; /* midnight UTC */
    bool has_exp_delete_marker;
    bool exp_delete_marker; /* ExpiredObjectDeleteMarker */
    struct lc_transition *transitions;
    uint32_t n_transitions;
    /* AbortIncompleteMultipartUpload */
    bool has_abort;
    uint32_t abort_days;
    /* NoncurrentVersionExpiration: accepted and kept for versioning. */
    bool has_nc_expiration;
    bool has_nc_exp_days;
    uint32_t nc_exp_days;
    bool has_nc_exp_newer;
    uint32_t nc_exp_newer;
    struct lc_transition *nc_transitions;
    uint32_t n_nc_transitions;
};

struct lc_config {
    struct lc_rule *rules;
    uint32_t n_rules;
};

/*
 * Parses and validates a LifecycleConfiguration body of 'len' bytes
 * (1..LC_RULES_MAX rules). Returns LC_OK and fills '*out' (everything in
 * 'a'), or an error with S3's message in '*msg' (static or in 'a'). A
 * rule without an ID gets a unique generated one, as S3 does. Storage
 * classes are checked for syntax only (an upper-case name); whether a
 * tier exists for one is the caller's decision.
 */
enum lc_status lc_parse(const char *body, size_t len, struct arena *a, struct lc_config *out,
                        const char **msg);

/* Appends the configuration as S3's GetBucketLifecycleConfiguration
 * answers it (XML declaration, namespace). lc_parse of the result gives
 * the same configuration. */
void lc_format(const struct lc_config *c, struct buf *b);

/* The object facts a filter looks at. 'has_tags' says the tags are
 * known (the lifecycle worker reads them only when a rule needs them);
 * when false, a rule that filters on tags matches nothing. */
struct lc_object {
    struct slice key;
    uint64_t size;
    bool has_tags;
    const struct lc_tag *tags;
    size_t n_tags;
};

/* True when rule 'rule' (enabled or not) selects object 'o'. */
bool lc_rule_matches(const struct lc_rule *rule, const struct lc_object *o);
/* True when the rule filters on tags (so it needs the object's tags). */
bool lc_rule_has_tags(const struct lc_rule *rule);

/*
 * Parses and validates a bucket Tagging body: <Tagging><TagSet><Tag>
 * <Key>k</Key><Value>v</Value></Tag>...</TagSet></Tagging>, up to
 * LC_BUCKET_TAGS_MAX tags, keys 1..128 and values 0..256 characters
 * (UTF-8 characters, not bytes), no key twice, no "aws:" prefix.
 * Returns LC_OK and fills '*tags'/'*n_tags' in 'a', else LC_MALFORMED or
 * LC_INVALID_TAG with S3's message in '*msg'.
 */
enum lc_status lc_parse_tagging(const char *body, size_t len, struct arena *a, struct lc_tag **tags,
                                uint32_t *n_tags, const char **msg);
/* Appends the tag set as S3's GetBucketTagging answers it. */
void lc_format_tagging(const struct lc_tag *tags, uint32_t n_tags, struct buf *b);

#endif
