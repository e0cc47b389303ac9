/*
 * post_policy.c: POST Object policy documents. The base64 text decodes to
 *   {"expiration": "2030-01-01T00:00:00.000Z",
 *    "conditions": [{"bucket": "b"}, ["starts-with", "$key", "up/"],
 *                   ["content-length-range", 1, 1048576], ...]}
 * A condition names a field with "$name" (or as the object's key) and
 * field names compare without case, values with it. Each field of the
 * form must be covered by some condition (AWS: "Extra input fields"), so
 * a signed policy says exactly what may be uploaded. The file size is
 * only known at the end: the range is handed back to the caller.
 */
#include "server/post_policy.h"

#include <stdio.h>
#include <stdlib.h>

/* Fields the policy does not have to name. */
static bool
field_is_exempt(struct slice name)
{
    return slice_eq_nocase(name, "policy") || slice_eq_nocase(name, "signature") ||
           slice_eq_nocase(name, "x-amz-signature") || slice_eq_nocase(name, "awsaccesskeyid") ||
           slice_eq_nocase(name, "file") ||
           (name.len >= 9 && slice_eq_nocase((struct slice){name.ptr, 9}, "x-ignore-"));
}

static const struct post_field *
field_find(const struct post_field *fields, size_t n, struct slice name)
{
    for (size_t i = 0; i < n; i++)
        if (slice_casecmp(fields[i].name, name) == 0)
            return &fields[i];
    return NULL;
}

/* A condition's value as text (strings; numbers keep their text). */
static bool
value_text(const struct json_value *v, struct slice *out)
{
    if (v->type != JSON_STRING && v->type != JSON_NUMBER)
        return false;
    *out = v->str;
    return true;
}

/* Reads a non-negative integer from a JSON number or numeric string. */
static bool
value_u64(const struct json_value *v, uint64_t *out)
{
    struct slice s;
    return value_text(v, &s) && parse_u64(s, UINT64_MAX, out) == 0;
}

enum post_policy_status
post_policy_check(struct slice b64, int64_t now_s, const struct post_field *fields, size_t n,
                  struct arena *a, struct post_policy_limits *limits, const char **msg)
{
    struct json_value root;
    bool *is_covered = arena_calloc(a, n + 1, sizeof(*is_covered));
    memset(limits, 0, sizeof(*limits));
    char *json = arena_alloc(a, base64_decoded_cap(b64.len) + 1);
    long len = b64.len ? base64_decode(b64.ptr, b64.len, json) : -1;
    if (len <= 0 || json_parse(json, (size_t)len, a, &root) != 0 || root.type != JSON_OBJECT) {
        *msg = "Invalid Policy: Invalid JSON.";
        return POST_POLICY_INVALID;
    }
    const struct json_value *exp = json_member(&root, "expiration");
    const struct json_value *conds = json_member(&root, "conditions");
    int64_t exp_s;
    if (!exp) {
        *msg = "Invalid Policy: Policy missing expiration.";
        return POST_POLICY_INVALID;
    }
    if (exp->type != JSON_STRING || !iso_date_parse(exp->str, &exp_s) || exp->str.len < 10) {
        *msg = "Invalid Policy: Invalid 'expiration' value: must be an ISO8601 date.";
        return POST_POLICY_INVALID;
    }
    if (!conds || conds->type != JSON_ARRAY) {
        *msg = "Invalid Policy: Policy missing conditions.";
        return POST_POLICY_INVALID;
    }
    if (now_s >= exp_s) {
        *msg = "Invalid according to Policy: Policy expired.";
        return POST_POLICY_DENIED;
    }
    for (const struct json_value *c = conds->first; c; c = c->next) {
        struct slice name, want, op;
        bool is_prefix = false;
        if (c->type == JSON_OBJECT) {
            if (c->n != 1 || !value_text(c->first, &want)) {
                *msg = "Invalid Policy: Invalid Simple-Condition: Simple-Conditions must have "
                       "exactly one property specified.";
                return POST_POLICY_INVALID;
            }
            name = c->first->name;
            op = SLICE_LIT("eq");
        } else if (c->type == JSON_ARRAY && c->n == 3 && c->first->type == JSON_STRING) {
            op = c->first->str;
            const struct json_value *a1 = c->first->next, *a2 = a1->next;
            if (slice_eq_nocase(op, "content-length-range")) {
                if (!value_u64(a1, &limits->min_len) || !value_u64(a2, &limits->max_len) ||
                    limits->min_len > limits->max_len) {
                    *msg = "Invalid Policy: Invalid content-length-range condition.";
                    return POST_POLICY_INVALID;
                }
                limits->has_range = true;
                continue;
            }
            if (a1->type != JSON_STRING || a1->str.len < 2 || a1->str.ptr[0] != '$' ||
                !value_text(a2, &want)) {
                *msg = "Invalid Policy: Invalid Condition: each condition must name a $field.";
                return POST_POLICY_INVALID;
            }
            name = (struct slice){a1->str.ptr + 1, a1->str.len - 1};
            if (slice_eq_nocase(op, "starts-with"))
                is_prefix = true;
            else if (!slice_eq_nocase(op, "eq")) {
                *msg =
                    arena_sprintf(a, "Invalid Policy: Invalid Condition: unknown operation %.*s.",
                                  (int)MIN(op.len, 64), op.ptr);
                return POST_POLICY_INVALID;
            }
        } else {
            *msg = "Invalid Policy: Invalid Condition.";
            return POST_POLICY_INVALID;
        }
        const struct post_field *f = field_find(fields, n, name);
        struct slice got = f ? f->value : SLICE_NULL;
        bool is_ok = is_prefix ? slice_has_prefix(got, want) : (f && slice_eq(got, want));
        if (!is_ok) {
            *msg = arena_sprintf(a,
                                 "Invalid according to Policy: Policy Condition failed: "
                                 "[\"%s\", \"$%.*s\", \"%.*s\"]",
                                 is_prefix ? "starts-with" : "eq", (int)MIN(name.len, 128),
                                 name.ptr, (int)MIN(want.len, 256), want.ptr);
            return POST_POLICY_DENIED;
        }
        if (f)
            is_covered[f - fields] = true;
    }
    for (size_t i = 0; i < n; i++) {
        if (!is_covered[i] && !field_is_exempt(fields[i].name) &&
            !slice_eq_nocase(fields[i].name, "bucket")) {
            *msg = arena_sprintf(a, "Invalid according to Policy: Extra input fields: %.*s",
                                 (int)MIN(fields[i].name.len, 128), fields[i].name.ptr);
            return POST_POLICY_DENIED;
        }
    }
    return POST_POLICY_OK;
}
