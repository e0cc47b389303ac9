/*
 * lock_xml.h: the request bodies and dates of bucket versioning and Object
 * Lock (lock_xml.c): VersioningConfiguration, ObjectLockConfiguration,
 * Retention, LegalHold and ISO 8601 dates. Pure parsing and formatting, no
 * I/O; fuzzed by tests/fuzz/fuzz_lock_xml.c.
 */
#ifndef SHARD_SERVER_LOCK_XML_H
#define SHARD_SERVER_LOCK_XML_H

#include "common/common.h"

#include <stdbool.h>
#include <stdint.h>

/* What a parser found wrong. */
enum lock_xml_status {
    LOCK_XML_OK,
    LOCK_XML_MALFORMED,   /* MalformedXML */
    LOCK_XML_INVALID,     /* well-formed, a value S3 refuses (InvalidArgument / InvalidRequest) */
    LOCK_XML_UNSUPPORTED, /* asks for what the server does not do (MFA delete) */
};

/* Retention modes, as index.h's enum index_lock_mode. */
#define LOCK_MODE_NONE 0
#define LOCK_MODE_GOVERNANCE 1
#define LOCK_MODE_COMPLIANCE 2
/* Longest default retention S3 accepts. */
#define LOCK_MAX_DAYS 36500
#define LOCK_MAX_YEARS 100
/* Latest year of a date (2262 would overflow nanoseconds). */
#define LOCK_DATE_MAX_YEAR 2200

/* <VersioningConfiguration><Status>Enabled|Suspended</Status>
 * <MfaDelete>Disabled</MfaDelete></VersioningConfiguration>. '*status' is
 * 1 Enabled, 2 Suspended, 0 absent (S3 then changes nothing). MfaDelete
 * Enabled is UNSUPPORTED; another Status or MfaDelete value MALFORMED. */
enum lock_xml_status versioning_xml_parse(const char *body, size_t len, struct arena *a,
                                          int *status);

struct lock_conf {
    bool has_default; /* a Rule with a DefaultRetention */
    int mode;         /* LOCK_MODE_* */
    uint32_t days;    /* exactly one of days and years is non-zero */
    uint32_t years;
};

/* <ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>
 * <Rule><DefaultRetention><Mode>GOVERNANCE|COMPLIANCE</Mode><Days>N</Days>
 * or <Years>N</Years></DefaultRetention></Rule></ObjectLockConfiguration>.
 * ObjectLockEnabled is required; a Rule needs a Mode and one period of
 * 1..LOCK_MAX_DAYS days or 1..LOCK_MAX_YEARS years (INVALID otherwise). */
enum lock_xml_status lock_conf_parse(const char *body, size_t len, struct arena *a,
                                     struct lock_conf *out);
/* Appends the ObjectLockConfiguration document of 'c' to 'b'. */
void lock_conf_format(struct buf *b, const struct lock_conf *c);
/* The retain-until date of a version written at 'now_ns' under the
 * default retention of 'c' (a year is 365 days, a day 86400 s). */
int64_t lock_conf_until_ns(const struct lock_conf *c, int64_t now_ns);

/* <Retention><Mode>..</Mode><RetainUntilDate>ISO 8601</RetainUntilDate>
 * </Retention>: both, or neither (the retention is removed: mode NONE). */
enum lock_xml_status retention_xml_parse(const char *body, size_t len, struct arena *a, int *mode,
                                         int64_t *until_ns);
/* <LegalHold><Status>ON|OFF</Status></LegalHold>. */
enum lock_xml_status legal_hold_xml_parse(const char *body, size_t len, struct arena *a,
                                          bool *is_on);

/* A mode name (GOVERNANCE, COMPLIANCE) to LOCK_MODE_*, or -1. */
int lock_mode_parse(struct slice s);
/* LOCK_MODE_* to its name ("" for NONE). */
const char *lock_mode_name(int mode);
/* Parses an ISO 8601 UTC date-time, YYYY-MM-DDTHH:MM:SS with optional
 * fraction (up to 9 digits) and 'Z' or "+00:00", years 1970 to
 * LOCK_DATE_MAX_YEAR (nanoseconds since the epoch fit an int64_t).
 * Returns 0 and sets '*ns', or -1. */
int lock_date_parse(struct slice s, int64_t *ns);

#endif
