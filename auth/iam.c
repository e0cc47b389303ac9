/*
 * iam.c: bucket policies in the IAM policy language. A document is parsed
 * (common/json.c) and compiled once, when it is set, into a statement
 * array in the caller's arena: actions lower-cased, condition operators
 * and keys resolved to enums, numbers, dates and CIDRs pre-parsed. The
 * evaluation walks that structure and allocates nothing: request values
 * come from a callback, so only the keys a condition names are computed.
 *
 * Evaluation as AWS: a matching Deny statement wins over everything, then
 * a matching Allow; no match is "no opinion" (the caller falls back to
 * ACLs and grants). Principals: "*" (everyone, anonymous included),
 * arn:aws:iam::<account>:user/<name> (a shardstore user by name),
 * arn:aws:iam::<account>:root or a 12-digit account id (the root user),
 * {"CanonicalUser": "<user id>"}, {"Service": "<name>"} (an AWS service
 * acting for the account: server access log delivery). The account part
 * is not checked: one shardstore is one account.
 */
#include "auth/auth_int.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ======================================================================
 * Compiled form
 * ====================================================================== */

enum principal_kind { PR_ANY, PR_USER, PR_ROOT, PR_CANONICAL, PR_SERVICE };

struct iam_principal {
    enum principal_kind kind;
    struct slice value; /* user name, canonical id or service name */
};

enum cond_base {
    OP_STRING_EQUALS,
    OP_STRING_EQUALS_NOCASE,
    OP_STRING_LIKE,
    OP_NUMERIC_EQ,
    OP_NUMERIC_LT,
    OP_NUMERIC_LE,
    OP_NUMERIC_GT,
    OP_NUMERIC_GE,
    OP_DATE_EQ,
    OP_DATE_LT,
    OP_DATE_LE,
    OP_DATE_GT,
    OP_DATE_GE,
    OP_BOOL,
    OP_IP,
    OP_NULL,
};

enum cond_set { SET_NONE, SET_ANY, SET_ALL };

struct iam_cidr {
    int family; /* 4 or 6 */
    uint8_t addr[16];
    int bits;
};

struct iam_cond {
    enum cond_base base;
    bool is_negated;
    bool if_exists;
    enum cond_set set;
    enum auth_iam_key key;
    struct slice suffix; /* tag key of s3:ExistingObjectTag/ and s3:RequestObjectTag/ */
    struct slice *values;
    double *nums;
    int64_t *dates;
    struct iam_cidr *cidrs;
    size_t n_values;
};

struct iam_stmt {
    bool is_deny;
    bool is_not_principal, is_not_action, is_not_resource;
    struct iam_principal *principals;
    size_t n_principals;
    struct slice *actions; /* lower case */
    uint8_t *action_kinds; /* PAT_* of each, for a fast match */
    size_t n_actions;
    struct slice *resources;
    uint8_t *resource_kinds;
    size_t n_resources;
    struct iam_cond *conds;
    size_t n_conds;
};

struct auth_iam_policy {
    struct iam_stmt *stmts;
    size_t n_stmts;
    bool is_public;
};

/* ======================================================================
 * Tables: actions, condition keys
 * ====================================================================== */

/* The S3 actions a statement may name, with what they apply to: 'b' a
 * bucket ARN, 'o' an object ARN. */
static const struct {
    const char *name;
    char kind;
} actions[] = {
    {"s3:abortmultipartupload", 'o'},
    {"s3:createbucket", 'b'},
    {"s3:deletebucket", 'b'},
    {"s3:deletebucketownershipcontrols", 'b'},
    {"s3:deletebucketpolicy", 'b'},
    {"s3:deletebuckettagging", 'b'},
    {"s3:deletebucketwebsite", 'b'},
    {"s3:deleteobject", 'o'},
    {"s3:deleteobjecttagging", 'o'},
    {"s3:deleteobjectversion", 'o'},
    {"s3:deleteobjectversiontagging", 'o'},
    {"s3:getbucketacl", 'b'},
    {"s3:getbucketcors", 'b'},
    {"s3:getbucketlocation", 'b'},
    {"s3:getbucketlogging", 'b'},
    {"s3:getbucketnotification", 'b'},
    {"s3:getbucketobjectlockconfiguration", 'b'},
    {"s3:getbucketownershipcontrols", 'b'},
    {"s3:getbucketpolicy", 'b'},
    {"s3:getbucketpolicystatus", 'b'},
    {"s3:getbucketpublicaccessblock", 'b'},
    {"s3:getbuckettagging", 'b'},
    {"s3:getbucketversioning", 'b'},
    {"s3:getbucketwebsite", 'b'},
    {"s3:getencryptionconfiguration", 'b'},
    {"s3:getlifecycleconfiguration", 'b'},
    {"s3:getobject", 'o'},
    {"s3:getobjectacl", 'o'},
    {"s3:getobjectattributes", 'o'},
    {"s3:getobjectlegalhold", 'o'},
    {"s3:getobjectretention", 'o'},
    {"s3:getobjecttagging", 'o'},
    {"s3:getobjectversion", 'o'},
    {"s3:getobjectversionacl", 'o'},
    {"s3:getobjectversionattributes", 'o'},
    {"s3:getobjectversiontagging", 'o'},
    {"s3:getreplicationconfiguration", 'b'},
    {"s3:listbucket", 'b'},
    {"s3:listbucketmultipartuploads", 'b'},
    {"s3:listbucketversions", 'b'},
    {"s3:listmultipartuploadparts", 'o'},
    {"s3:putbucketacl", 'b'},
    {"s3:putbucketcors", 'b'},
    {"s3:putbucketlogging", 'b'},
    {"s3:putbucketnotification", 'b'},
    {"s3:putbucketobjectlockconfiguration", 'b'},
    {"s3:putbucketownershipcontrols", 'b'},
    {"s3:putbucketpolicy", 'b'},
    {"s3:putbucketpublicaccessblock", 'b'},
    {"s3:putbuckettagging", 'b'},
    {"s3:putbucketversioning", 'b'},
    {"s3:putbucketwebsite", 'b'},
    {"s3:putencryptionconfiguration", 'b'},
    {"s3:putlifecycleconfiguration", 'b'},
    {"s3:putobject", 'o'},
    {"s3:putobjectacl", 'o'},
    {"s3:putobjectlegalhold", 'o'},
    {"s3:putobjectretention", 'o'},
    {"s3:putobjecttagging", 'o'},
    {"s3:putobjectversionacl", 'o'},
    {"s3:putobjectversiontagging", 'o'},
    {"s3:putreplicationconfiguration", 'b'},
    {"s3:replicateobject", 'o'},
    {"s3:restoreobject", 'o'},
};

static const struct {
    const char *name; /* lower case; a prefix when it ends with '/' */
    enum auth_iam_key key;
} cond_keys[] = {
    {"aws:sourceip", AUTH_IAM_KEY_SOURCE_IP},
    {"aws:securetransport", AUTH_IAM_KEY_SECURE_TRANSPORT},
    {"aws:currenttime", AUTH_IAM_KEY_CURRENT_TIME},
    {"aws:epochtime", AUTH_IAM_KEY_EPOCH_TIME},
    {"aws:username", AUTH_IAM_KEY_USERNAME},
    {"aws:userid", AUTH_IAM_KEY_USERID},
    {"aws:principaltype", AUTH_IAM_KEY_PRINCIPAL_TYPE},
    {"aws:principalarn", AUTH_IAM_KEY_PRINCIPAL_ARN},
    {"aws:referer", AUTH_IAM_KEY_REFERER},
    {"aws:useragent", AUTH_IAM_KEY_USER_AGENT},
    {"s3:prefix", AUTH_IAM_KEY_PREFIX},
    {"s3:delimiter", AUTH_IAM_KEY_DELIMITER},
    {"s3:max-keys", AUTH_IAM_KEY_MAX_KEYS},
    {"s3:x-amz-acl", AUTH_IAM_KEY_ACL},
    {"s3:x-amz-server-side-encryption", AUTH_IAM_KEY_SSE},
    {"s3:x-amz-copy-source", AUTH_IAM_KEY_COPY_SOURCE},
    {"s3:x-amz-metadata-directive", AUTH_IAM_KEY_METADATA_DIRECTIVE},
    {"s3:x-amz-storage-class", AUTH_IAM_KEY_STORAGE_CLASS},
    {"s3:x-amz-content-sha256", AUTH_IAM_KEY_CONTENT_SHA256},
    {"s3:existingobjecttag/", AUTH_IAM_KEY_EXISTING_TAG},
    {"s3:requestobjecttag/", AUTH_IAM_KEY_REQUEST_TAG},
    {"s3:requestobjecttagkeys", AUTH_IAM_KEY_REQUEST_TAG_KEYS},
    {"s3:signatureversion", AUTH_IAM_KEY_SIGNATURE_VERSION},
    {"s3:authtype", AUTH_IAM_KEY_AUTH_TYPE},
    {"s3:versionid", AUTH_IAM_KEY_VERSION_ID},
    {"aws:sourcearn", AUTH_IAM_KEY_SOURCE_ARN},
    {"aws:sourceaccount", AUTH_IAM_KEY_SOURCE_ACCOUNT},
};

static const struct {
    const char *name;
    enum cond_base base;
    bool is_negated;
} cond_ops[] = {
    {"StringEquals", OP_STRING_EQUALS, false},
    {"StringNotEquals", OP_STRING_EQUALS, true},
    {"StringEqualsIgnoreCase", OP_STRING_EQUALS_NOCASE, false},
    {"StringNotEqualsIgnoreCase", OP_STRING_EQUALS_NOCASE, true},
    {"StringLike", OP_STRING_LIKE, false},
    {"StringNotLike", OP_STRING_LIKE, true},
    {"NumericEquals", OP_NUMERIC_EQ, false},
    {"NumericNotEquals", OP_NUMERIC_EQ, true},
    {"NumericLessThan", OP_NUMERIC_LT, false},
    {"NumericLessThanEquals", OP_NUMERIC_LE, false},
    {"NumericGreaterThan", OP_NUMERIC_GT, false},
    {"NumericGreaterThanEquals", OP_NUMERIC_GE, false},
    {"DateEquals", OP_DATE_EQ, false},
    {"DateNotEquals", OP_DATE_EQ, true},
    {"DateLessThan", OP_DATE_LT, false},
    {"DateLessThanEquals", OP_DATE_LE, false},
    {"DateGreaterThan", OP_DATE_GT, false},
    {"DateGreaterThanEquals", OP_DATE_GE, false},
    {"Bool", OP_BOOL, false},
    {"BinaryEquals", OP_STRING_EQUALS, false},
    {"IpAddress", OP_IP, false},
    {"NotIpAddress", OP_IP, true},
    {"ArnEquals", OP_STRING_LIKE, false},
    {"ArnLike", OP_STRING_LIKE, false},
    {"ArnNotEquals", OP_STRING_LIKE, true},
    {"ArnNotLike", OP_STRING_LIKE, true},
    {"Null", OP_NULL, false},
};

/* ======================================================================
 * Matching helpers
 * ====================================================================== */

/* Glob match of 's' against 'pat' ('*' any run, '?' one byte), ASCII
 * case-folded when 'is_nocase'. Iterative with one backtrack point, so
 * linear-ish and never recursive. */
bool
auth_iam_glob(struct slice pat, struct slice s, bool is_nocase)
{
    size_t p = 0, i = 0, star = SIZE_MAX, mark = 0;
    while (i < s.len) {
        if (p < pat.len && pat.ptr[p] == '*') {
            star = p++;
            mark = i;
            continue;
        }
        if (p < pat.len &&
            (pat.ptr[p] == '?' || (is_nocase ? ascii_lower((unsigned char)pat.ptr[p]) ==
                                                   ascii_lower((unsigned char)s.ptr[i])
                                             : pat.ptr[p] == s.ptr[i]))) {
            p++;
            i++;
            continue;
        }
        if (star == SIZE_MAX)
            return false;
        p = star + 1;
        i = ++mark;
    }
    while (p < pat.len && pat.ptr[p] == '*')
        p++;
    return p == pat.len;
}

/* How a pattern matches: most are a plain string or a prefix and a final
 * '*', which a memcmp decides; the rest take the glob. */
enum { PAT_EXACT, PAT_PREFIX, PAT_GLOB };

static uint8_t
pattern_kind(struct slice pat)
{
    const char *star = memchr(pat.ptr, '*', pat.len);
    if (memchr(pat.ptr, '?', pat.len))
        return PAT_GLOB;
    if (!star)
        return PAT_EXACT;
    return star == pat.ptr + pat.len - 1 ? PAT_PREFIX : PAT_GLOB;
}

static bool
pattern_match(struct slice pat, uint8_t kind, struct slice s)
{
    switch (kind) {
    case PAT_EXACT:
        return slice_eq(pat, s);
    case PAT_PREFIX:
        return s.len >= pat.len - 1 && memcmp(s.ptr, pat.ptr, pat.len - 1) == 0;
    default:
        return auth_iam_glob(pat, s, false);
    }
}

static uint8_t *
pattern_kinds(struct arena *a, const struct slice *pats, size_t n)
{
    uint8_t *k = arena_alloc(a, n + 1);
    for (size_t i = 0; i < n; i++)
        k[i] = pattern_kind(pats[i]);
    return k;
}

/* Parses an IPv4 or IPv6 address with an optional /bits into 'out'. */
static bool
cidr_parse(struct slice s, struct iam_cidr *out)
{
    char text[64];
    if (s.len == 0 || s.len >= sizeof(text))
        return false;
    memcpy(text, s.ptr, s.len);
    text[s.len] = '\0';
    char *slash = strchr(text, '/');
    memset(out, 0, sizeof(*out));
    if (slash)
        *slash = '\0';
    if (inet_pton(AF_INET, text, out->addr) == 1)
        out->family = 4;
    else if (inet_pton(AF_INET6, text, out->addr) == 1)
        out->family = 6;
    else
        return false;
    int max = out->family == 4 ? 32 : 128;
    out->bits = max;
    if (slash) {
        uint64_t v;
        if (parse_u64(slice_from_cstr(slash + 1), (uint64_t)max, &v) != 0)
            return false;
        out->bits = (int)v;
    }
    return true;
}

static bool
cidr_contains(const struct iam_cidr *net, const struct iam_cidr *ip)
{
    if (net->family != ip->family)
        return false;
    int full = net->bits / 8, rest = net->bits % 8;
    if (memcmp(net->addr, ip->addr, (size_t)full) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (net->addr[full] & mask) == (ip->addr[full] & mask);
}

/* Parses a number ("12", "1.5", "-3"). */
static bool
number_parse(struct slice s, double *out)
{
    char text[64];
    char *end;
    if (s.len == 0 || s.len >= sizeof(text))
        return false;
    memcpy(text, s.ptr, s.len);
    text[s.len] = '\0';
    *out = strtod(text, &end);
    return *end == '\0' && isfinite(*out);
}

/* ======================================================================
 * Compilation
 * ====================================================================== */

struct compiler {
    struct arena *a;
    struct slice bucket;
    auth_iam_user_exists_fn user_exists;
    void *ctx;
    const char *msg;
};

/* The string values of 'v' (a string or an array of strings). Numbers
 * and booleans count as their text when 'is_scalar_ok'. */
static bool
string_list(struct compiler *c, const struct json_value *v, bool is_scalar_ok, struct slice **out,
            size_t *n)
{
    size_t cnt = v->type == JSON_ARRAY ? v->n : 1;
    const struct json_value *it = v->type == JSON_ARRAY ? v->first : v;
    if (cnt == 0)
        return false;
    struct slice *list = arena_calloc(c->a, cnt, sizeof(*list));
    for (size_t i = 0; i < cnt; i++, it = it->next) {
        if (it->type == JSON_STRING || (is_scalar_ok && it->type == JSON_NUMBER))
            list[i] = it->str;
        else if (is_scalar_ok && it->type == JSON_BOOL)
            list[i] = it->boolean ? SLICE_LIT("true") : SLICE_LIT("false");
        else
            return false;
    }
    *out = list;
    *n = cnt;
    return true;
}

/* Resolves one AWS principal string. */
static bool
principal_aws(struct compiler *c, struct slice s, struct iam_principal *out)
{
    if (slice_eq(s, SLICE_LIT("*"))) {
        out->kind = PR_ANY;
        return true;
    }
    bool is_digits = s.len == 12;
    for (size_t i = 0; i < s.len && is_digits; i++)
        is_digits = s.ptr[i] >= '0' && s.ptr[i] <= '9';
    if (is_digits) {
        out->kind = PR_ROOT;
        return true;
    }
    if (!slice_has_prefix(s, SLICE_LIT("arn:aws:iam::")))
        return false;
    struct slice rest = {s.ptr + 13, s.len - 13};
    const char *colon = memchr(rest.ptr, ':', rest.len);
    if (!colon || colon == rest.ptr)
        return false;
    rest.len -= (size_t)(colon + 1 - rest.ptr);
    rest.ptr = colon + 1;
    if (slice_eq(rest, SLICE_LIT("root"))) {
        out->kind = PR_ROOT;
        return true;
    }
    if (!slice_has_prefix(rest, SLICE_LIT("user/")))
        return false;
    /* user/NAME or user/PATH/NAME: the name is the last segment. */
    const char *name = rest.ptr + 5;
    for (const char *q = rest.ptr + 5; q < rest.ptr + rest.len; q++)
        if (*q == '/')
            name = q + 1;
    struct slice n = {name, (size_t)(rest.ptr + rest.len - name)};
    if (n.len == 0 || (c->user_exists && !c->user_exists(c->ctx, n)))
        return false;
    out->kind = PR_USER;
    out->value = n;
    return true;
}

static bool
compile_principal(struct compiler *c, const struct json_value *v, struct iam_stmt *st)
{
    if (v->type == JSON_STRING) {
        if (!slice_eq(v->str, SLICE_LIT("*")))
            return false;
        st->principals = arena_calloc(c->a, 1, sizeof(*st->principals));
        st->principals[0].kind = PR_ANY;
        st->n_principals = 1;
        return true;
    }
    if (v->type != JSON_OBJECT || v->n == 0)
        return false;
    size_t total = 0;
    for (const struct json_value *m = v->first; m; m = m->next)
        total += m->type == JSON_ARRAY ? m->n : 1;
    st->principals = arena_calloc(c->a, total + 1, sizeof(*st->principals));
    for (const struct json_value *m = v->first; m; m = m->next) {
        struct slice *list;
        size_t n;
        bool is_aws = slice_eq(m->name, SLICE_LIT("AWS"));
        bool is_canonical = slice_eq(m->name, SLICE_LIT("CanonicalUser"));
        bool is_service = slice_eq(m->name, SLICE_LIT("Service"));
        if ((!is_aws && !is_canonical && !is_service) || !string_list(c, m, false, &list, &n))
            return false;
        for (size_t i = 0; i < n; i++) {
            struct iam_principal *p = &st->principals[st->n_principals++];
            if (is_canonical || is_service) {
                if (list[i].len == 0)
                    return false;
                p->kind = is_service ? PR_SERVICE : PR_CANONICAL;
                p->value = list[i];
            } else if (!principal_aws(c, list[i], p)) {
                return false;
            }
        }
    }
    return true;
}

static int
action_kind(struct slice name)
{
    for (size_t i = 0; i < ARRAY_LEN(actions); i++)
        if (slice_eq_nocase(name, actions[i].name))
            return actions[i].kind;
    return 0;
}

static bool
compile_actions(struct compiler *c, const struct json_value *v, struct iam_stmt *st)
{
    if (!string_list(c, v, false, &st->actions, &st->n_actions))
        return false;
    for (size_t i = 0; i < st->n_actions; i++) {
        struct slice s = st->actions[i];
        char *low = arena_strndup(c->a, s.ptr, s.len);
        for (size_t k = 0; k < s.len; k++)
            low[k] = (char)ascii_lower((unsigned char)low[k]);
        st->actions[i] = (struct slice){low, s.len};
        if (slice_eq(st->actions[i], SLICE_LIT("*")))
            continue;
        if (!slice_has_prefix(st->actions[i], SLICE_LIT("s3:")))
            return false;
        bool is_known = false;
        for (size_t k = 0; k < ARRAY_LEN(actions) && !is_known; k++)
            is_known = auth_iam_glob(st->actions[i], slice_from_cstr(actions[k].name), false);
        if (!is_known)
            return false;
    }
    st->action_kinds = pattern_kinds(c->a, st->actions, st->n_actions);
    return true;
}

/* A resource is "*" or an S3 ARN in this bucket (the bucket part may hold
 * wildcards that match the bucket's name). */
static bool
compile_resources(struct compiler *c, const struct json_value *v, struct iam_stmt *st)
{
    if (!string_list(c, v, false, &st->resources, &st->n_resources))
        return false;
    for (size_t i = 0; i < st->n_resources; i++) {
        struct slice s = st->resources[i];
        if (slice_eq(s, SLICE_LIT("*")))
            continue;
        if (!slice_has_prefix(s, SLICE_LIT("arn:aws:s3:::")) || s.len == 13)
            return false;
        struct slice b = {s.ptr + 13, s.len - 13};
        const char *slash = memchr(b.ptr, '/', b.len);
        if (slash)
            b.len = (size_t)(slash - b.ptr);
        if (c->bucket.ptr && !auth_iam_glob(b, c->bucket, false))
            return false;
    }
    st->resource_kinds = pattern_kinds(c->a, st->resources, st->n_resources);
    return true;
}

/* Whether some resource of 'st' can name a 'kind' ('b' bucket, 'o'
 * object) ARN. */
static bool
resources_cover(const struct iam_stmt *st, char kind)
{
    if (st->is_not_resource)
        return true;
    for (size_t i = 0; i < st->n_resources; i++) {
        struct slice s = st->resources[i];
        if (slice_eq(s, SLICE_LIT("*")))
            return true;
        struct slice b = {s.ptr + 13, s.len - 13};
        bool has_slash = memchr(b.ptr, '/', b.len) != NULL;
        bool has_star = memchr(b.ptr, '*', b.len) != NULL;
        if (kind == 'o' ? (has_slash || has_star) : (!has_slash))
            return true;
    }
    return false;
}

static bool
compile_values(struct compiler *c, struct iam_cond *cd, const struct json_value *v)
{
    if (!string_list(c, v, true, &cd->values, &cd->n_values))
        return false;
    size_t n = cd->n_values;
    switch (cd->base) {
    case OP_NUMERIC_EQ:
    case OP_NUMERIC_LT:
    case OP_NUMERIC_LE:
    case OP_NUMERIC_GT:
    case OP_NUMERIC_GE:
        cd->nums = arena_calloc(c->a, n, sizeof(*cd->nums));
        for (size_t i = 0; i < n; i++)
            if (!number_parse(cd->values[i], &cd->nums[i]))
                return false;
        break;
    case OP_DATE_EQ:
    case OP_DATE_LT:
    case OP_DATE_LE:
    case OP_DATE_GT:
    case OP_DATE_GE:
        cd->dates = arena_calloc(c->a, n, sizeof(*cd->dates));
        for (size_t i = 0; i < n; i++)
            if (!iso_date_parse(cd->values[i], &cd->dates[i]))
                return false;
        break;
    case OP_IP:
        cd->cidrs = arena_calloc(c->a, n, sizeof(*cd->cidrs));
        for (size_t i = 0; i < n; i++)
            if (!cidr_parse(cd->values[i], &cd->cidrs[i]))
                return false;
        break;
    case OP_BOOL:
    case OP_NULL:
        for (size_t i = 0; i < n; i++)
            if (!slice_eq_nocase(cd->values[i], "true") && !slice_eq_nocase(cd->values[i], "false"))
                return false;
        break;
    default:
        break;
    }
    return true;
}

/* Splits "ForAnyValue:StringLikeIfExists" into its parts. */
static bool
parse_operator(struct slice name, struct iam_cond *cd)
{
    if (slice_has_prefix(name, SLICE_LIT("ForAnyValue:"))) {
        cd->set = SET_ANY;
        name.ptr += 12;
        name.len -= 12;
    } else if (slice_has_prefix(name, SLICE_LIT("ForAllValues:"))) {
        cd->set = SET_ALL;
        name.ptr += 13;
        name.len -= 13;
    }
    if (name.len > 8 && memcmp(name.ptr + name.len - 8, "IfExists", 8) == 0) {
        cd->if_exists = true;
        name.len -= 8;
    }
    for (size_t i = 0; i < ARRAY_LEN(cond_ops); i++) {
        if (slice_eq(name, slice_from_cstr(cond_ops[i].name))) {
            cd->base = cond_ops[i].base;
            cd->is_negated = cond_ops[i].is_negated;
            return !(cd->base == OP_NULL && (cd->if_exists || cd->set != SET_NONE));
        }
    }
    return false;
}

static bool
parse_key(struct slice name, struct iam_cond *cd)
{
    for (size_t i = 0; i < ARRAY_LEN(cond_keys); i++) {
        size_t n = strlen(cond_keys[i].name);
        if (cond_keys[i].name[n - 1] == '/') {
            if (name.len > n && slice_eq_nocase((struct slice){name.ptr, n}, cond_keys[i].name)) {
                cd->key = cond_keys[i].key;
                cd->suffix = (struct slice){name.ptr + n, name.len - n};
                return true;
            }
        } else if (slice_eq_nocase(name, cond_keys[i].name)) {
            cd->key = cond_keys[i].key;
            return true;
        }
    }
    return false;
}

static bool
compile_conditions(struct compiler *c, const struct json_value *v, struct iam_stmt *st)
{
    if (v->type != JSON_OBJECT) {
        c->msg = "Invalid Condition block";
        return false;
    }
    size_t total = 0;
    for (const struct json_value *op = v->first; op; op = op->next) {
        if (op->type != JSON_OBJECT || op->n == 0) {
            c->msg = "Invalid Condition block";
            return false;
        }
        total += op->n;
    }
    st->conds = arena_calloc(c->a, total + 1, sizeof(*st->conds));
    for (const struct json_value *op = v->first; op; op = op->next) {
        for (const struct json_value *k = op->first; k; k = k->next) {
            struct iam_cond *cd = &st->conds[st->n_conds++];
            if (!parse_operator(op->name, cd)) {
                c->msg = arena_sprintf(c->a, "Invalid Condition type : %.*s", (int)op->name.len,
                                       op->name.ptr);
                return false;
            }
            if (!parse_key(k->name, cd)) {
                c->msg = "Policy has an invalid condition key";
                return false;
            }
            if (!compile_values(c, cd, k)) {
                c->msg = "Invalid Condition value";
                return false;
            }
        }
    }
    return true;
}

/* A statement that lets anyone in: an Allow for "*" (or everyone but
 * some, NotPrincipal) with no condition that pins the caller to known
 * addresses or identities, as AWS's "public" rule says. */
static bool
stmt_is_public(const struct iam_stmt *st)
{
    if (st->is_deny)
        return false;
    bool is_any = st->is_not_principal;
    for (size_t i = 0; i < st->n_principals; i++)
        is_any = is_any || st->principals[i].kind == PR_ANY;
    if (!is_any)
        return false;
    for (size_t i = 0; i < st->n_conds; i++) {
        const struct iam_cond *cd = &st->conds[i];
        if (cd->is_negated || cd->if_exists)
            continue;
        if (cd->base == OP_IP) {
            bool is_open = false;
            for (size_t k = 0; k < cd->n_values; k++)
                is_open = is_open || cd->cidrs[k].bits == 0;
            if (!is_open)
                return false;
        }
        if ((cd->key == AUTH_IAM_KEY_USERID || cd->key == AUTH_IAM_KEY_USERNAME ||
             cd->key == AUTH_IAM_KEY_PRINCIPAL_ARN) &&
            (cd->base == OP_STRING_EQUALS || cd->base == OP_STRING_EQUALS_NOCASE)) {
            bool has_wildcard = false;
            for (size_t k = 0; k < cd->n_values; k++)
                has_wildcard = has_wildcard || memchr(cd->values[k].ptr, '*', cd->values[k].len);
            if (!has_wildcard)
                return false;
        }
    }
    return true;
}

static bool
compile_statement(struct compiler *c, const struct json_value *v, struct iam_stmt *st)
{
    const struct json_value *effect = NULL, *principal = NULL, *action = NULL, *resource = NULL,
                            *cond = NULL;
    if (v->type != JSON_OBJECT) {
        c->msg = "Invalid policy syntax.";
        return false;
    }
    for (const struct json_value *m = v->first; m; m = m->next) {
        struct slice n = m->name;
        if (slice_eq(n, SLICE_LIT("Sid"))) {
            if (m->type != JSON_STRING) {
                c->msg = "Invalid policy syntax.";
                return false;
            }
        } else if (slice_eq(n, SLICE_LIT("Effect"))) {
            effect = m;
        } else if (slice_eq(n, SLICE_LIT("Principal")) || slice_eq(n, SLICE_LIT("NotPrincipal"))) {
            if (principal) {
                c->msg = "Invalid policy syntax.";
                return false;
            }
            principal = m;
            st->is_not_principal = n.ptr[0] == 'N';
        } else if (slice_eq(n, SLICE_LIT("Action")) || slice_eq(n, SLICE_LIT("NotAction"))) {
            if (action) {
                c->msg = "Invalid policy syntax.";
                return false;
            }
            action = m;
            st->is_not_action = n.ptr[0] == 'N';
        } else if (slice_eq(n, SLICE_LIT("Resource")) || slice_eq(n, SLICE_LIT("NotResource"))) {
            if (resource) {
                c->msg = "Invalid policy syntax.";
                return false;
            }
            resource = m;
            st->is_not_resource = n.ptr[0] == 'N';
        } else if (slice_eq(n, SLICE_LIT("Condition"))) {
            cond = m;
        } else {
            c->msg = arena_sprintf(c->a, "Unknown field %.*s", (int)n.len, n.ptr);
            return false;
        }
    }
    if (!effect) {
        c->msg = "Missing required field Effect";
        return false;
    }
    if (effect->type != JSON_STRING ||
        (!slice_eq(effect->str, SLICE_LIT("Allow")) && !slice_eq(effect->str, SLICE_LIT("Deny")))) {
        c->msg = effect->type == JSON_STRING ? arena_sprintf(c->a, "Invalid effect: %.*s",
                                                             (int)effect->str.len, effect->str.ptr)
                                             : "Invalid policy syntax.";
        return false;
    }
    st->is_deny = effect->str.ptr[0] == 'D';
    if (!principal) {
        c->msg = "Missing required field Principal";
        return false;
    }
    if (!compile_principal(c, principal, st)) {
        c->msg = "Invalid principal in policy";
        return false;
    }
    if (!action) {
        c->msg = "Missing required field Action";
        return false;
    }
    if (!compile_actions(c, action, st)) {
        c->msg = "Policy has invalid action";
        return false;
    }
    if (!resource) {
        c->msg = "Missing required field Resource";
        return false;
    }
    if (!compile_resources(c, resource, st)) {
        c->msg = "Policy has invalid resource";
        return false;
    }
    if (!st->is_not_action) {
        for (size_t i = 0; i < st->n_actions; i++) {
            int kind = action_kind(st->actions[i]);
            if (kind && !resources_cover(st, (char)kind)) {
                c->msg = "Action does not apply to any resource(s) in statement";
                return false;
            }
        }
    }
    if (cond && !compile_conditions(c, cond, st))
        return false;
    return true;
}

int
auth_iam_compile(const char *doc, size_t len, struct slice bucket, auth_iam_user_exists_fn exists,
                 void *ctx, struct arena *a, const struct auth_iam_policy **out, const char **msg)
{
    struct compiler c = {.a = a, .bucket = bucket, .user_exists = exists, .ctx = ctx};
    struct json_value root;
    struct auth_iam_policy *p = arena_calloc(a, 1, sizeof(*p));
    const struct json_value *stmts = NULL, *version = NULL;

    size_t i = 0;
    while (i < len && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r'))
        i++;
    if (i == len || doc[i] != '{') {
        c.msg = "Policies must be valid JSON and the first byte must be '{'";
        goto fail;
    }
    if (len > AUTH_IAM_POLICY_MAX) {
        c.msg = "Policy exceeds the maximum allowed document size.";
        goto fail;
    }
    if (json_parse(doc, len, a, &root) != 0) {
        c.msg = "This policy contains invalid Json";
        goto fail;
    }
    for (const struct json_value *m = root.first; m; m = m->next) {
        if (slice_eq(m->name, SLICE_LIT("Version"))) {
            version = m;
        } else if (slice_eq(m->name, SLICE_LIT("Statement"))) {
            stmts = m;
        } else if (slice_eq(m->name, SLICE_LIT("Id"))) {
            if (m->type != JSON_STRING) {
                c.msg = "Invalid policy syntax.";
                goto fail;
            }
        } else {
            c.msg = arena_sprintf(a, "Unknown field %.*s", (int)m->name.len, m->name.ptr);
            goto fail;
        }
    }
    if (version &&
        (version->type != JSON_STRING || (!slice_eq(version->str, SLICE_LIT("2012-10-17")) &&
                                          !slice_eq(version->str, SLICE_LIT("2008-10-17"))))) {
        c.msg = "The policy must contain a valid version string";
        goto fail;
    }
    if (!stmts) {
        c.msg = "Missing required field Statement";
        goto fail;
    }
    size_t n = stmts->type == JSON_ARRAY ? stmts->n : 1;
    if (n == 0 || n > AUTH_IAM_STATEMENTS_MAX) {
        c.msg = n ? "Policy has too many statements"
                  : "Could not parse the policy: Statement is empty!";
        goto fail;
    }
    p->stmts = arena_calloc(a, n, sizeof(*p->stmts));
    const struct json_value *sv = stmts->type == JSON_ARRAY ? stmts->first : stmts;
    for (; sv; sv = stmts->type == JSON_ARRAY ? sv->next : NULL) {
        struct iam_stmt *st = &p->stmts[p->n_stmts++];
        if (!compile_statement(&c, sv, st))
            goto fail;
        p->is_public = p->is_public || stmt_is_public(st);
    }
    *out = p;
    return 0;

fail:
    *msg = c.msg;
    return -1;
}

bool
auth_iam_is_public(const struct auth_iam_policy *p)
{
    return p && p->is_public;
}

/* ======================================================================
 * Evaluation
 * ====================================================================== */

static bool
principal_matches(const struct iam_stmt *st, const struct auth_iam_request *rq)
{
    bool is_match = false;
    for (size_t i = 0; i < st->n_principals && !is_match; i++) {
        const struct iam_principal *p = &st->principals[i];
        switch (p->kind) {
        case PR_ANY:
            is_match = true;
            break;
        case PR_ROOT:
            is_match = rq->is_root && !rq->service.len;
            break;
        case PR_USER:
            is_match = !rq->is_anonymous && !rq->is_root && !rq->service.len &&
                       slice_eq(p->value, rq->user_name);
            break;
        case PR_CANONICAL:
            is_match = !rq->is_anonymous && !rq->service.len && slice_eq(p->value, rq->user_id);
            break;
        case PR_SERVICE:
            is_match = rq->service.len && slice_eq(p->value, rq->service);
            break;
        }
    }
    return st->is_not_principal ? !is_match : is_match;
}

static bool
action_matches(const struct iam_stmt *st, struct slice action)
{
    bool is_match = false;
    for (size_t i = 0; i < st->n_actions && !is_match; i++)
        is_match = pattern_match(st->actions[i], st->action_kinds[i], action);
    return st->is_not_action ? !is_match : is_match;
}

static bool
resource_matches(const struct iam_stmt *st, const struct auth_iam_request *rq)
{
    bool is_match = false;
    for (size_t i = 0; i < st->n_resources && !is_match; i++)
        is_match = pattern_match(st->resources[i], st->resource_kinds[i], rq->resource);
    return st->is_not_resource ? !is_match : is_match;
}

/* Whether request value 'v' matches condition value 'k' of 'cd', before
 * negation. */
static bool
value_matches(const struct iam_cond *cd, size_t k, struct slice v)
{
    double num;
    int64_t date;
    switch (cd->base) {
    case OP_STRING_EQUALS:
        return slice_eq(cd->values[k], v);
    case OP_STRING_EQUALS_NOCASE:
        return slice_casecmp(cd->values[k], v) == 0;
    case OP_STRING_LIKE:
        return auth_iam_glob(cd->values[k], v, false);
    case OP_NUMERIC_EQ:
    case OP_NUMERIC_LT:
    case OP_NUMERIC_LE:
    case OP_NUMERIC_GT:
    case OP_NUMERIC_GE:
        if (!number_parse(v, &num))
            return false;
        return cd->base == OP_NUMERIC_EQ   ? num == cd->nums[k]
               : cd->base == OP_NUMERIC_LT ? num < cd->nums[k]
               : cd->base == OP_NUMERIC_LE ? num <= cd->nums[k]
               : cd->base == OP_NUMERIC_GT ? num > cd->nums[k]
                                           : num >= cd->nums[k];
    case OP_DATE_EQ:
    case OP_DATE_LT:
    case OP_DATE_LE:
    case OP_DATE_GT:
    case OP_DATE_GE:
        if (!iso_date_parse(v, &date))
            return false;
        return cd->base == OP_DATE_EQ   ? date == cd->dates[k]
               : cd->base == OP_DATE_LT ? date < cd->dates[k]
               : cd->base == OP_DATE_LE ? date <= cd->dates[k]
               : cd->base == OP_DATE_GT ? date > cd->dates[k]
                                        : date >= cd->dates[k];
    case OP_BOOL:
        return slice_casecmp(cd->values[k], v) == 0;
    case OP_IP: /* one_value parses the address once */
    case OP_NULL:
        break;
    }
    return false;
}

/* Whether request value 'v' satisfies 'cd' (any of its values; negated
 * operators: none of them). */
/* Per-evaluation memory: the caller's address, parsed on first use. */
struct eval_ctx {
    bool has_ip, is_ip;
    struct slice ip_text;
    struct iam_cidr ip;
};

static bool
one_value(struct eval_ctx *ec, const struct iam_cond *cd, struct slice v)
{
    bool is_match = false;
    if (cd->base == OP_IP) {
        /* The address is parsed once per evaluation. */
        if (!ec->has_ip || !slice_eq(ec->ip_text, v)) {
            ec->has_ip = true;
            ec->ip_text = v;
            ec->is_ip = cidr_parse(v, &ec->ip) && ec->ip.bits == (ec->ip.family == 4 ? 32 : 128);
        }
        bool is_ip = ec->is_ip;
        const struct iam_cidr ip = ec->ip;
        for (size_t k = 0; k < cd->n_values && is_ip && !is_match; k++)
            is_match = cidr_contains(&cd->cidrs[k], &ip);
        return cd->is_negated ? !is_match : is_match;
    }
    for (size_t k = 0; k < cd->n_values && !is_match; k++)
        is_match = value_matches(cd, k, v);
    return cd->is_negated ? !is_match : is_match;
}

static bool
cond_holds(struct eval_ctx *ec, const struct iam_cond *cd, const struct auth_iam_request *rq)
{
    struct slice v;
    bool has_value = rq->value(rq->ctx, cd->key, cd->suffix, 0, &v);
    if (cd->base == OP_NULL) {
        bool want_absent = slice_eq_nocase(cd->values[0], "true");
        return want_absent != has_value;
    }
    if (!has_value) {
        if (cd->set == SET_ALL || cd->if_exists)
            return true;
        if (cd->set == SET_ANY)
            return false;
        return cd->is_negated;
    }
    if (cd->set == SET_ALL) {
        for (size_t i = 0; rq->value(rq->ctx, cd->key, cd->suffix, i, &v); i++)
            if (!one_value(ec, cd, v))
                return false;
        return true;
    }
    for (size_t i = 0; rq->value(rq->ctx, cd->key, cd->suffix, i, &v); i++)
        if (one_value(ec, cd, v))
            return true;
    return false;
}

enum auth_iam_effect
auth_iam_evaluate(const struct auth_iam_policy *p, const struct auth_iam_request *rq)
{
    enum auth_iam_effect eff = AUTH_IAM_NONE;
    struct eval_ctx ec = {0};
    char low[96];
    if (!p)
        return eff;
    /* Actions compare without case: lower the request's once (the
     * policy's were lowered when compiled). */
    if (rq->action.len >= sizeof(low))
        return eff;
    for (size_t i = 0; i < rq->action.len; i++)
        low[i] = (char)ascii_lower((unsigned char)rq->action.ptr[i]);
    struct slice action = {low, rq->action.len};
    for (size_t i = 0; i < p->n_stmts; i++) {
        const struct iam_stmt *st = &p->stmts[i];
        /* A Deny decides; an Allow need not be evaluated once one holds. */
        if (!st->is_deny && eff == AUTH_IAM_ALLOW)
            continue;
        if (rq->skip_public_allows && !st->is_deny && stmt_is_public(st))
            continue;
        if (!principal_matches(st, rq) || !action_matches(st, action) || !resource_matches(st, rq))
            continue;
        bool is_ok = true;
        for (size_t k = 0; k < st->n_conds && is_ok; k++)
            is_ok = cond_holds(&ec, &st->conds[k], rq);
        if (!is_ok)
            continue;
        if (st->is_deny)
            return AUTH_IAM_DENY;
        eff = AUTH_IAM_ALLOW;
    }
    return eff;
}
