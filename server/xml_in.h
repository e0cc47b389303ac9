/*
 * xml_in.h: parses S3 request bodies with expat. All output is in the
 * arena. Bounded: bodies are limited by the caller (s3_req_expect_xml:
 * 2 MiB for DeleteObjects and CompleteMultipartUpload, 64 KiB for others).
 *
 * Element names are matched by local name (any "prefix:" and the xmlns
 * attributes are ignored); the root element must match; unknown elements
 * inside known containers are skipped with their subtree. A DOCTYPE or
 * entity declaration, an element inside a text element, a repeated text
 * element, or text longer than XML_IN_TEXT_MAX bytes is MALFORMED. Every
 * returned slice points into the arena and is NUL-terminated (the NUL is
 * not counted), or is {NULL, 0} when absent. Thread-safe: no shared state.
 */
#ifndef SHARD_SERVER_XML_IN_H
#define SHARD_SERVER_XML_IN_H

#include "common/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest character data accepted in one text element, in bytes of UTF-8. */
#define XML_IN_TEXT_MAX 4096
#define XML_IN_DELETE_MAX 1000
#define XML_IN_PARTS_MAX 10000
#define XML_IN_BATCH_MAX 10000

enum xml_in_status {
    XML_IN_OK,
    XML_IN_MALFORMED, /* MalformedXML */
    XML_IN_TOO_MANY,  /* >1000 keys for delete, >10000 parts or entries, > max_tags tags */
};

struct xml_delete_object {
    struct slice key;
    struct slice version_id; /* {NULL, 0} when absent */
    /* Conditions (S3, 2025): the text as sent, trimmed; {NULL, 0} when
     * absent. The caller parses and checks them. */
    struct slice etag;
    struct slice last_modified;
    struct slice size;
};

struct xml_delete_request {
    bool is_quiet;
    struct xml_delete_object *objects;
    size_t n_objects;
};

/*
 * Parses a DeleteObjects body:
 *   <Delete><Quiet>true</Quiet><Object><Key>k</Key><VersionId>v</VersionId>
 *   <ETag>e</ETag><LastModifiedTime>t</LastModifiedTime><Size>n</Size></Object>...</Delete>
 * (the xmlns attribute may or may not be present). Needs 1 to 1000
 * Objects, each with one non-empty Key; Quiet is "true" or "false" (any
 * case, surrounding whitespace allowed) and defaults to false. Keys are
 * returned exactly as decoded, whitespace and all.
 * Returns XML_IN_OK and fills '*out'; XML_IN_TOO_MANY past 1000 Objects;
 * XML_IN_MALFORMED otherwise. '*out' is meaningful only on XML_IN_OK.
 */
enum xml_in_status xml_parse_delete(const char *body, size_t len, struct arena *a,
                                    struct xml_delete_request *out);

struct xml_complete_part {
    uint32_t part_number;
    struct slice etag; /* without quotes; {NULL, 0} when absent */
    struct slice checksum_crc32, checksum_crc32c, checksum_crc64nvme, checksum_sha1,
        checksum_sha256; /* {NULL, 0} when absent */
};

struct xml_complete_request {
    struct xml_complete_part *parts;
    size_t n_parts;
};

/*
 * Parses a CompleteMultipartUpload body:
 *   <CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"…"</ETag>
 *   <ChecksumCRC32>…</ChecksumCRC32>…</Part>…</CompleteMultipartUpload>
 * Each Part needs a PartNumber in 1..10000 (surrounding whitespace allowed).
 * The ETag and checksums have surrounding whitespace trimmed, and the ETag
 * loses one pair of surrounding quotes (written '"' or "&quot;"). Parts are
 * returned in document order; the caller checks ordering and matches ETags.
 * Returns XML_IN_OK for 1..10000 parts; XML_IN_TOO_MANY past 10000;
 * XML_IN_MALFORMED otherwise. '*out' is meaningful only on XML_IN_OK.
 */
enum xml_in_status xml_parse_complete(const char *body, size_t len, struct arena *a,
                                      struct xml_complete_request *out);

/*
 * Parses a CreateBucket body:
 *   <CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>
 * An empty (or all-whitespace) body, or one without LocationConstraint, is
 * XML_IN_OK with '*location' empty; surrounding whitespace is trimmed.
 * Returns XML_IN_OK or XML_IN_MALFORMED.
 */
enum xml_in_status xml_parse_create_bucket(const char *body, size_t len, struct arena *a,
                                           struct slice *location);

struct xml_tag {
    struct slice key;   /* verbatim (no trimming); may be empty */
    struct slice value; /* verbatim; may be empty */
};

struct xml_tagging_request {
    struct xml_tag *tags; /* NULL when n_tags is 0 */
    size_t n_tags;
};

/*
 * Parses a Tagging body (PutObjectTagging):
 *   <Tagging><TagSet><Tag><Key>k</Key><Value>v</Value></Tag>...</TagSet></Tagging>
 * Needs exactly one TagSet (it may be empty) and, in each Tag, one Key and
 * one Value; their text is returned verbatim (expat has checked it is
 * UTF-8). The caller validates lengths, characters and duplicates (tags.h).
 * Returns XML_IN_OK and fills '*out'; XML_IN_TOO_MANY past 'max_tags' Tags;
 * XML_IN_MALFORMED otherwise. '*out' is meaningful only on XML_IN_OK.
 */
enum xml_in_status xml_parse_tagging(const char *body, size_t len, size_t max_tags, struct arena *a,
                                     struct xml_tagging_request *out);

/* A CORS configuration: at most XML_IN_CORS_RULES_MAX rules (S3's limit)
 * and XML_IN_CORS_VALUES_MAX list entries in all. */
#define XML_IN_CORS_RULES_MAX 100
#define XML_IN_CORS_VALUES_MAX 10000

struct xml_cors_rule {
    struct slice id;      /* {NULL, 0} when absent */
    struct slice max_age; /* MaxAgeSeconds as sent, {NULL, 0} when absent */
    struct slice *origins, *methods, *headers, *expose; /* in the arena */
    size_t n_origins, n_methods, n_headers, n_expose;
};

struct xml_cors_request {
    struct xml_cors_rule *rules;
    size_t n_rules;
};

/*
 * Parses a PutBucketCors body:
 *   <CORSConfiguration><CORSRule><ID>i</ID><AllowedOrigin>o</AllowedOrigin>...
 *   <AllowedMethod>m</AllowedMethod>... <AllowedHeader>h</AllowedHeader>...
 *   <ExposeHeader>e</ExposeHeader>... <MaxAgeSeconds>n</MaxAgeSeconds></CORSRule>...
 *   </CORSConfiguration>
 * Values are trimmed and copied; nothing is validated beyond the shape
 * (cors.c does). Returns XML_IN_OK with 1..XML_IN_CORS_RULES_MAX rules,
 * XML_IN_TOO_MANY past the bounds, else XML_IN_MALFORMED.
 */
enum xml_in_status xml_parse_cors(const char *body, size_t len, struct arena *a,
                                  struct xml_cors_request *out);

struct xml_logging_request {
    bool is_enabled;            /* a LoggingEnabled element: logging on */
    struct slice target_bucket; /* trimmed, non-empty when enabled */
    struct slice target_prefix; /* as sent, may be empty */
};

/*
 * Parses a PutBucketLogging body:
 *   <BucketLoggingStatus><LoggingEnabled><TargetBucket>b</TargetBucket>
 *   <TargetPrefix>p</TargetPrefix></LoggingEnabled></BucketLoggingStatus>
 * (an empty BucketLoggingStatus turns logging off; TargetGrants and
 * TargetObjectKeyFormat are skipped). Returns XML_IN_OK or XML_IN_MALFORMED.
 */
enum xml_in_status xml_parse_logging(const char *body, size_t len, struct arena *a,
                                     struct xml_logging_request *out);

/* The most Rules an encryption configuration body may hold (S3 takes one;
 * the caller refuses more than one with its own error). */
#define XML_IN_ENCRYPTION_RULES_MAX 4

struct xml_encryption_rule {
    bool has_default;                /* an ApplyServerSideEncryptionByDefault element */
    struct slice algorithm;          /* SSEAlgorithm, trimmed; {NULL, 0} when absent */
    struct slice kms_key_id;         /* KMSMasterKeyID, trimmed; {NULL, 0} when absent */
    struct slice bucket_key_enabled; /* BucketKeyEnabled, trimmed; {NULL, 0} when absent */
};

struct xml_encryption_request {
    struct xml_encryption_rule rules[XML_IN_ENCRYPTION_RULES_MAX];
    size_t n_rules;
};

/*
 * Parses a PutBucketEncryption body:
 *   <ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>
 *   <SSEAlgorithm>AES256</SSEAlgorithm><KMSMasterKeyID>k</KMSMasterKeyID>
 *   </ApplyServerSideEncryptionByDefault><BucketKeyEnabled>true</BucketKeyEnabled>
 *   </Rule></ServerSideEncryptionConfiguration>
 * Values are returned trimmed and unchecked (the caller validates them);
 * a Rule may have at most one ApplyServerSideEncryptionByDefault.
 * Returns XML_IN_OK and fills '*out'; XML_IN_TOO_MANY past
 * XML_IN_ENCRYPTION_RULES_MAX Rules; XML_IN_MALFORMED otherwise.
 */
enum xml_in_status xml_parse_encryption(const char *body, size_t len, struct arena *a,
                                        struct xml_encryption_request *out);

struct xml_batch_entry {
    struct slice key;    /* verbatim, non-empty */
    struct slice member; /* verbatim, non-empty; {NULL, 0} when absent */
    struct slice range;  /* trimmed; {NULL, 0} when absent */
};

struct xml_batch_request {
    bool is_continue_on_error;
    struct xml_batch_entry *entries;
    size_t n_entries;
};

/*
 * Parses a batch GET body (POST /bucket?batch):
 *   <Batch><ContinueOnError>true</ContinueOnError>
 *   <Entry><Key>k</Key><Member>m</Member><Range>bytes=0-99</Range></Entry>...</Batch>
 * Needs 1 to 10000 Entries, each with one non-empty Key; Member (when
 * present) is non-empty; ContinueOnError is "true" or "false" (any case,
 * surrounding whitespace allowed) and defaults to false. Key and Member
 * are returned verbatim, Range trimmed; the caller parses the Range.
 * Returns XML_IN_OK and fills '*out' (entries in document order);
 * XML_IN_TOO_MANY past 10000 Entries; XML_IN_MALFORMED otherwise. '*out'
 * is meaningful only on XML_IN_OK.
 */
enum xml_in_status xml_parse_batch(const char *body, size_t len, struct arena *a,
                                   struct xml_batch_request *out);

/* A text element of a small fixed document, by its path of local names
 * under the root ("Rule/DefaultRetention/Mode"). */
#define XML_FIELDS_MAX 8
struct xml_field {
    const char *path;   /* in: '/'-separated, each name under 64 bytes */
    struct slice value; /* out: trimmed text, {NULL, 0} when absent */
};

/*
 * Parses a document with root element 'root' whose only interesting
 * content is the text elements 'fields' (at most XML_FIELDS_MAX, with
 * together at most 15 distinct elements): VersioningConfiguration,
 * ObjectLockConfiguration, Retention, LegalHold. Unknown elements are
 * skipped; a field given twice is MALFORMED. The caller validates the
 * values. Returns XML_IN_OK (values filled) or XML_IN_MALFORMED (all
 * values cleared).
 */
enum xml_in_status xml_parse_fields(const char *body, size_t len, const char *root,
                                    struct xml_field *fields, size_t n_fields, struct arena *a);

/*
 * Parses a PublicAccessBlockConfiguration body into 'flags' (BlockPublicAcls,
 * IgnorePublicAcls, BlockPublicPolicy, RestrictPublicBuckets; an absent
 * element is false). Returns XML_IN_OK or XML_IN_MALFORMED (a value other
 * than true/false included).
 */
enum xml_in_status xml_parse_public_access_block(const char *body, size_t len, bool flags[4]);
/* Parses OwnershipControls (one Rule with an ObjectOwnership) into
 * '*value' (in 'a', unchecked). XML_IN_OK or XML_IN_MALFORMED. */
enum xml_in_status xml_parse_ownership_controls(const char *body, size_t len, struct arena *a,
                                                struct slice *value);

#define XML_ACP_GRANTS_MAX 100
struct xml_acp_grant {
    struct slice id, uri, email; /* exactly one is set */
    struct slice permission;
};
struct xml_acp_request {
    struct slice owner_id; /* empty when absent */
    struct xml_acp_grant *grants;
    size_t n_grants;
};
/*
 * Parses an AccessControlPolicy body (PutBucketAcl, PutObjectAcl): an
 * optional Owner/ID and one AccessControlList of Grants, each with one
 * Grantee (ID, URI or EmailAddress; xsi:type is not needed) and a
 * Permission (unchecked). XML_IN_OK, XML_IN_TOO_MANY past
 * XML_ACP_GRANTS_MAX grants, or XML_IN_MALFORMED.
 */
enum xml_in_status xml_parse_acp(const char *body, size_t len, struct arena *a,
                                 struct xml_acp_request *out);

#endif
