/*
 * test_iam.c: bucket policy evaluation (auth/iam.c) on a table of
 * requests: explicit Deny over Allow, NotPrincipal/NotAction/NotResource,
 * wildcards, case rules (actions without case, resources with it), and
 * the condition semantics AWS documents for absent keys: a plain operator
 * is false, a negated one true, ...IfExists true, Null tests presence,
 * ForAnyValue false and ForAllValues true on no values.
 */
#include "auth/auth.h"
#include "tests/lib/test.h"

/* The request's condition values: "k=v" pairs, a key once per value. */
struct values {
    const char *pairs[8];
};

static const char *const key_names[] = {
    [AUTH_IAM_KEY_SOURCE_IP] = "ip",     [AUTH_IAM_KEY_PREFIX] = "prefix",
    [AUTH_IAM_KEY_MAX_KEYS] = "max",     [AUTH_IAM_KEY_REQUEST_TAG_KEYS] = "tagkeys",
    [AUTH_IAM_KEY_CURRENT_TIME] = "now",
};

static bool
value(void *ctx, enum auth_iam_key key, struct slice suffix, size_t i, struct slice *out)
{
    const struct values *v = ctx;
    (void)suffix;
    if ((size_t)key >= ARRAY_LEN(key_names) || !key_names[key])
        return false;
    size_t n = strlen(key_names[key]);
    for (size_t k = 0; k < ARRAY_LEN(v->pairs) && v->pairs[k]; k++) {
        if (strncmp(v->pairs[k], key_names[key], n) != 0 || v->pairs[k][n] != '=')
            continue;
        if (i-- == 0) {
            *out = slice_from_cstr(v->pairs[k] + n + 1);
            return true;
        }
    }
    return false;
}

static enum auth_iam_effect
eval(const char *doc, const char *action, const char *resource, const char *user,
     const struct values *v)
{
    struct arena *a = arena_create(4096);
    const struct auth_iam_policy *p;
    const char *msg = NULL;
    int rc = auth_iam_compile(doc, strlen(doc), SLICE_LIT("b"), NULL, NULL, a, &p, &msg);
    if (rc != 0) {
        fprintf(stderr, "compile failed: %s\n%s\n", msg, doc);
        arena_destroy(a);
        return (enum auth_iam_effect) - 1;
    }
    struct values none = {{NULL}};
    struct auth_iam_request rq = {
        .action = slice_from_cstr(action),
        .resource = slice_from_cstr(resource),
        .is_anonymous = user == NULL,
        .user_name = slice_from_cstr(user ? user : ""),
        .user_id = slice_from_cstr(user ? user : ""),
        .value = value,
        .ctx = (void *)(v ? v : &none),
    };
    enum auth_iam_effect e = auth_iam_evaluate(p, &rq);
    arena_destroy(a);
    return e;
}

/* 'doc' decided for a request by AWS service principal 'service'. */
static enum auth_iam_effect
eval_service(const char *doc, const char *service, const char *resource)
{
    struct arena *a = arena_create(4096);
    const struct auth_iam_policy *p;
    const char *msg = NULL;
    if (auth_iam_compile(doc, strlen(doc), SLICE_LIT("b"), NULL, NULL, a, &p, &msg) != 0) {
        fprintf(stderr, "compile failed: %s\n%s\n", msg, doc);
        arena_destroy(a);
        return (enum auth_iam_effect) - 1;
    }
    struct values none = {{NULL}};
    struct auth_iam_request rq = {
        .action = SLICE_LIT("s3:PutObject"),
        .resource = slice_from_cstr(resource),
        .service = slice_from_cstr(service),
        .value = value,
        .ctx = &none,
    };
    enum auth_iam_effect e = auth_iam_evaluate(p, &rq);
    arena_destroy(a);
    return e;
}

#define STMT(effect, extra)                                                                        \
    "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"" effect "\",\"Principal\":\"*\","   \
    "\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::b/*\"" extra "}]}"

static enum auth_iam_effect
cond(const char *condition, const struct values *v)
{
    char doc[1024];
    snprintf(doc, sizeof(doc),
             "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
             "\"Resource\":\"*\",\"Condition\":%s}]}",
             condition);
    return eval(doc, "s3:GetObject", "arn:aws:s3:::b/k", "u", v);
}

int
main(void)
{
    /* Deny wins; no statement is no opinion. */
    const char *both = "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*"
                       "\",\"Resource\":\"arn:aws:s3:::b/*\"},{\"Effect\":\"Deny\",\"Principal\":"
                       "{\"AWS\":\"arn:aws:iam::1:user/eve\"},\"Action\":\"s3:Get*\",\"Resource\":"
                       "\"arn:aws:s3:::b/secret/*\"}]}";
    ASSERT_EQ(eval(both, "s3:GetObject", "arn:aws:s3:::b/secret/x", "eve", NULL), AUTH_IAM_DENY);
    ASSERT_EQ(eval(both, "s3:GetObject", "arn:aws:s3:::b/secret/x", "bob", NULL), AUTH_IAM_ALLOW);
    ASSERT_EQ(eval(both, "s3:GetObject", "arn:aws:s3:::b/open", "eve", NULL), AUTH_IAM_ALLOW);
    ASSERT_EQ(eval(both, "s3:ListBucket", "arn:aws:s3:::b", "eve", NULL), AUTH_IAM_NONE);
    /* Actions compare without case, resources with it. */
    ASSERT_EQ(eval(STMT("Allow", ""), "S3:GETOBJECT", "arn:aws:s3:::b/x", NULL, NULL),
              AUTH_IAM_ALLOW);
    ASSERT_EQ(eval(STMT("Allow", ""), "s3:GetObject", "arn:aws:s3:::B/x", NULL, NULL),
              AUTH_IAM_NONE);
    /* Not* elements. */
    const char *nots = "{\"Statement\":[{\"Effect\":\"Deny\",\"NotPrincipal\":{\"AWS\":"
                       "\"arn:aws:iam::1:user/admin\"},\"NotAction\":\"s3:Get*\",\"NotResource\":"
                       "\"arn:aws:s3:::b/tmp/*\"}]}";
    ASSERT_EQ(eval(nots, "s3:PutObject", "arn:aws:s3:::b/x", "bob", NULL), AUTH_IAM_DENY);
    ASSERT_EQ(eval(nots, "s3:PutObject", "arn:aws:s3:::b/x", "admin", NULL), AUTH_IAM_NONE);
    ASSERT_EQ(eval(nots, "s3:GetObject", "arn:aws:s3:::b/x", "bob", NULL), AUTH_IAM_NONE);
    ASSERT_EQ(eval(nots, "s3:PutObject", "arn:aws:s3:::b/tmp/x", "bob", NULL), AUTH_IAM_NONE);
    /* Service principals match only that service's requests (log delivery). */
    const char *svc = "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"Service\":"
                      "\"logging.s3.amazonaws.com\"},\"Action\":\"s3:PutObject\",\"Resource\":"
                      "\"arn:aws:s3:::b/logs/*\"}]}";
    ASSERT_EQ(eval(svc, "s3:PutObject", "arn:aws:s3:::b/logs/x", "bob", NULL), AUTH_IAM_NONE);
    ASSERT_EQ(eval(svc, "s3:PutObject", "arn:aws:s3:::b/logs/x", NULL, NULL), AUTH_IAM_NONE);
    ASSERT_EQ(eval_service(svc, "logging.s3.amazonaws.com", "arn:aws:s3:::b/logs/x"),
              AUTH_IAM_ALLOW);
    ASSERT_EQ(eval_service(svc, "logging.s3.amazonaws.com", "arn:aws:s3:::b/other"), AUTH_IAM_NONE);
    ASSERT_EQ(eval_service(svc, "other.amazonaws.com", "arn:aws:s3:::b/logs/x"), AUTH_IAM_NONE);
    /* A user principal never matches a service; "*" does. */
    ASSERT_EQ(eval_service(nots, "logging.s3.amazonaws.com", "arn:aws:s3:::b/x"), AUTH_IAM_DENY);
    const char *any = "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                      "\"s3:PutObject\",\"Resource\":\"arn:aws:s3:::b/*\"}]}";
    ASSERT_EQ(eval_service(any, "logging.s3.amazonaws.com", "arn:aws:s3:::b/x"), AUTH_IAM_ALLOW);
    /* '?' and inner '*' in resources. */
    const char *glob = "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                       "\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::b/*/img?.png\"}]}";
    ASSERT_EQ(eval(glob, "s3:GetObject", "arn:aws:s3:::b/a/b/img1.png", NULL, NULL),
              AUTH_IAM_ALLOW);
    ASSERT_EQ(eval(glob, "s3:GetObject", "arn:aws:s3:::b/a/img12.png", NULL, NULL), AUTH_IAM_NONE);

    /* Absent keys. */
    struct values with_prefix = {{"prefix=data/x"}};
    ASSERT_EQ(cond("{\"StringLike\":{\"s3:prefix\":\"data/*\"}}", NULL), AUTH_IAM_NONE);
    ASSERT_EQ(cond("{\"StringLike\":{\"s3:prefix\":\"data/*\"}}", &with_prefix), AUTH_IAM_ALLOW);
    ASSERT_EQ(cond("{\"StringNotLike\":{\"s3:prefix\":\"data/*\"}}", NULL), AUTH_IAM_ALLOW);
    ASSERT_EQ(cond("{\"StringNotLike\":{\"s3:prefix\":\"data/*\"}}", &with_prefix), AUTH_IAM_NONE);
    ASSERT_EQ(cond("{\"StringLikeIfExists\":{\"s3:prefix\":\"x/*\"}}", NULL), AUTH_IAM_ALLOW);
    ASSERT_EQ(cond("{\"StringLikeIfExists\":{\"s3:prefix\":\"x/*\"}}", &with_prefix),
              AUTH_IAM_NONE);
    ASSERT_EQ(cond("{\"Null\":{\"s3:prefix\":\"true\"}}", NULL), AUTH_IAM_ALLOW);
    ASSERT_EQ(cond("{\"Null\":{\"s3:prefix\":\"false\"}}", NULL), AUTH_IAM_NONE);
    /* Multi-valued keys. */
    struct values tags = {{"tagkeys=a", "tagkeys=b"}};
    ASSERT_EQ(
        cond("{\"ForAllValues:StringEquals\":{\"s3:RequestObjectTagKeys\":[\"a\",\"b\"]}}", &tags),
        AUTH_IAM_ALLOW);
    ASSERT_EQ(cond("{\"ForAllValues:StringEquals\":{\"s3:RequestObjectTagKeys\":[\"a\"]}}", &tags),
              AUTH_IAM_NONE);
    ASSERT_EQ(cond("{\"ForAnyValue:StringEquals\":{\"s3:RequestObjectTagKeys\":[\"b\"]}}", &tags),
              AUTH_IAM_ALLOW);
    ASSERT_EQ(cond("{\"ForAllValues:StringEquals\":{\"s3:RequestObjectTagKeys\":[\"z\"]}}", NULL),
              AUTH_IAM_ALLOW);
    ASSERT_EQ(cond("{\"ForAnyValue:StringEquals\":{\"s3:RequestObjectTagKeys\":[\"z\"]}}", NULL),
              AUTH_IAM_NONE);
    /* Numbers, dates, addresses; several operators and keys all hold. */
    struct values req = {{"max=50", "ip=10.1.2.3", "now=2026-05-01T10:00:00Z", "prefix=p"}};
    ASSERT_EQ(cond("{\"NumericLessThanEquals\":{\"s3:max-keys\":\"50\"}}", &req), AUTH_IAM_ALLOW);
    ASSERT_EQ(cond("{\"NumericLessThan\":{\"s3:max-keys\":50}}", &req), AUTH_IAM_NONE);
    ASSERT_EQ(cond("{\"IpAddress\":{\"aws:SourceIp\":[\"192.168.0.0/16\",\"10.0.0.0/8\"]}}", &req),
              AUTH_IAM_ALLOW);
    ASSERT_EQ(cond("{\"NotIpAddress\":{\"aws:SourceIp\":\"10.1.2.0/24\"}}", &req), AUTH_IAM_NONE);
    ASSERT_EQ(cond("{\"DateLessThan\":{\"aws:CurrentTime\":\"2026-06-01\"},"
                   "\"StringEquals\":{\"s3:prefix\":[\"q\",\"p\"]}}",
                   &req),
              AUTH_IAM_ALLOW);
    ASSERT_EQ(cond("{\"DateLessThan\":{\"aws:CurrentTime\":\"2026-06-01\"},"
                   "\"StringEquals\":{\"s3:prefix\":\"q\"}}",
                   &req),
              AUTH_IAM_NONE);
    /* Public: an Allow for everyone, unless pinned to addresses. */
    struct arena *a = arena_create(1024);
    const struct auth_iam_policy *p;
    const char *msg;
    const char *pub = STMT("Allow", "");
    const char *pinned =
        STMT("Allow", ",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}");
    ASSERT_EQ(auth_iam_compile(pub, strlen(pub), SLICE_LIT("b"), NULL, NULL, a, &p, &msg), 0);
    ASSERT(auth_iam_is_public(p));
    ASSERT_EQ(auth_iam_compile(pinned, strlen(pinned), SLICE_LIT("b"), NULL, NULL, a, &p, &msg), 0);
    ASSERT(!auth_iam_is_public(p));
    arena_destroy(a);
    return 0;
}
