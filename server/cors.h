/*
 * cors.h: bucket CORS configurations (cors.c): validation with S3's errors,
 * the form stored and answered by GetBucketCors, and rule matching for
 * preflight (OPTIONS) and actual requests. In libs3parse: no server state.
 */
#ifndef SHARD_SERVER_CORS_H
#define SHARD_SERVER_CORS_H

#include "common/common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The methods a rule may allow (AllowedMethod). */
enum cors_method {
    CORS_GET = 1,
    CORS_PUT = 2,
    CORS_POST = 4,
    CORS_DELETE = 8,
    CORS_HEAD = 16,
};

/* S3's limit on a PutBucketCors body. */
#define CORS_BODY_MAX (64 * 1024)

struct cors_rule {
    struct slice id; /* may be empty */
    struct slice *origins;
    size_t n_origins;           /* >= 1; each has at most one '*' */
    unsigned methods;           /* CORS_* bits, at least one */
    struct slice *method_names; /* as sent, in order (for Get) */
    size_t n_method_names;
    struct slice *headers; /* AllowedHeader as sent (matched without case); one '*' at most */
    size_t n_headers;
    struct slice *expose; /* ExposeHeader, as sent */
    size_t n_expose;
    int64_t max_age_s; /* -1: none */
};

struct cors_config {
    struct cors_rule *rules;
    size_t n_rules; /* 1..100 */
};

enum cors_status {
    CORS_OK,
    CORS_MALFORMED,       /* MalformedXML */
    CORS_INVALID_REQUEST, /* InvalidRequest, with a message */
};

/*
 * Parses and validates a PutBucketCors body into 'out' (in 'a'). On an
 * error other than CORS_MALFORMED, '*msg' is S3's message (static or in
 * 'a'). Invariant (fuzzed): cors_parse(cors_format(c)) gives c back.
 */
enum cors_status cors_parse(const char *body, size_t len, struct arena *a, struct cors_config *out,
                            const char **msg);

/* Appends the CORSConfiguration document GetBucketCors answers. */
void cors_format(const struct cors_config *c, struct buf *b);

/* The CORS_* bit of an HTTP method name, or 0 when it is none of them. */
unsigned cors_method_bit(struct slice method);

/*
 * The first rule of 'c' that allows 'origin' with 'method' (a CORS_* bit)
 * and every header named in 'request_headers' (the comma-separated value
 * of Access-Control-Request-Headers; empty for an actual request), as S3
 * evaluates them; NULL when none does.
 */
const struct cors_rule *cors_match(const struct cors_config *c, struct slice origin,
                                   unsigned method, struct slice request_headers);

/* Whether the rule allows every origin ("*" among its AllowedOrigin): the
 * answer is then "Access-Control-Allow-Origin: *" without credentials. */
bool cors_rule_is_any_origin(const struct cors_rule *rule);

/* Writes the rule's methods as S3 lists them ("GET, PUT") into 'out' of
 * 'cap' bytes (48 are always enough). */
void cors_methods_format(const struct cors_rule *rule, char *out, size_t cap);

#endif
