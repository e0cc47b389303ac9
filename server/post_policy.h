/*
 * post_policy.h: the policy document of a POST Object form (post_policy.c):
 * base64 JSON with an expiration and conditions (exact match, "eq",
 * "starts-with", "content-length-range") that every form field must meet.
 * Pure: no I/O, the clock is a parameter.
 */
#ifndef SHARD_SERVER_POST_POLICY_H
#define SHARD_SERVER_POST_POLICY_H

#include "common/common.h"

#include <stdbool.h>
#include <stdint.h>

/* A form field (name compared case-insensitively), or the bucket (passed
 * by the caller as a field named "bucket"). */
struct post_field {
    struct slice name;
    struct slice value;
};

enum post_policy_status {
    POST_POLICY_OK,
    POST_POLICY_INVALID, /* InvalidPolicyDocument: not base64 JSON of the right shape */
    POST_POLICY_DENIED,  /* AccessDenied: expired, a condition failed, an extra field */
};

/* The policy's limits on the file's size (content-length-range). */
struct post_policy_limits {
    bool has_range;
    uint64_t min_len, max_len;
};

/*
 * Checks the base64 policy 'b64' against 'fields' ('n', the bucket among
 * them as "bucket") at time 'now_s'. Returns POST_POLICY_OK with
 * 'limits' filled, or an error with '*msg' set to AWS's message (static or
 * in 'a'). Every field but policy, signature, x-amz-signature,
 * AWSAccessKeyId, file and x-ignore-* must be named by a condition.
 */
enum post_policy_status post_policy_check(struct slice b64, int64_t now_s,
                                          const struct post_field *fields, size_t n,
                                          struct arena *a, struct post_policy_limits *limits,
                                          const char **msg);

#endif
