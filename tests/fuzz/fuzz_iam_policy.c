/*
 * fuzz_iam_policy.c: libFuzzer target for auth/iam.c (bucket policies) and
 * common/json.c under it.
 *
 * Input: a policy document for bucket "bkt". Properties checked beyond "no
 * crash": a document auth_iam_compile accepts is well-formed JSON; a
 * rejected one always comes with a message; evaluating a compiled policy
 * is deterministic (the same request twice gives the same effect), and
 * compiling the same document again gives the same verdict.
 */
#include "auth/auth.h"
#include "common/common.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_iam_fail(const char *what)
{
    fprintf(stderr, "fuzz_iam_policy: %s\n", what);
    abort();
}

static bool
always(void *ctx, struct slice name)
{
    (void)ctx;
    return name.len > 0;
}

/* A fixed request context: every key has one value except the tags. */
static bool
value(void *ctx, enum auth_iam_key key, struct slice suffix, size_t i, struct slice *out)
{
    (void)ctx;
    (void)suffix;
    if (i > 0 && key != AUTH_IAM_KEY_REQUEST_TAG_KEYS)
        return false;
    if (i > 1)
        return false;
    switch (key) {
    case AUTH_IAM_KEY_SOURCE_IP:
        *out = SLICE_LIT("127.0.0.1");
        return true;
    case AUTH_IAM_KEY_CURRENT_TIME:
        *out = SLICE_LIT("2026-01-02T03:04:05Z");
        return true;
    case AUTH_IAM_KEY_MAX_KEYS:
        *out = SLICE_LIT("100");
        return true;
    case AUTH_IAM_KEY_EXISTING_TAG:
        return false;
    default:
        *out = i ? SLICE_LIT("b") : SLICE_LIT("a*b");
        return true;
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct arena *a = arena_create(4096);
    const struct auth_iam_policy *p = NULL;
    const char *msg = NULL;
    struct json_value root;
    int rc =
        auth_iam_compile((const char *)data, size, SLICE_LIT("bkt"), always, NULL, a, &p, &msg);
    if (rc != 0 && !msg)
        fuzz_iam_fail("rejected without a message");
    if (rc == 0 && json_parse((const char *)data, size, a, &root) != 0)
        fuzz_iam_fail("accepted a document that is not JSON");
    const struct auth_iam_policy *again = NULL;
    const char *msg2 = NULL;
    if ((auth_iam_compile((const char *)data, size, SLICE_LIT("bkt"), always, NULL, a, &again,
                          &msg2) == 0) != (rc == 0))
        fuzz_iam_fail("compiling twice disagrees");
    if (rc == 0) {
        static const char *const actions[] = {"s3:GetObject", "s3:ListBucket", "s3:PutObject"};
        static const char *const resources[] = {"arn:aws:s3:::bkt", "arn:aws:s3:::bkt/a/b"};
        for (size_t i = 0; i < 3; i++) {
            for (size_t k = 0; k < 2; k++) {
                struct auth_iam_request rq = {
                    .action = slice_from_cstr(actions[i]),
                    .resource = slice_from_cstr(resources[k]),
                    .is_anonymous = k == 0,
                    .user_name = SLICE_LIT("alice"),
                    .user_id = SLICE_LIT("0123"),
                    .value = value,
                };
                enum auth_iam_effect e1 = auth_iam_evaluate(p, &rq);
                enum auth_iam_effect e2 = auth_iam_evaluate(p, &rq);
                if (e1 != e2)
                    fuzz_iam_fail("evaluation is not deterministic");
            }
        }
        (void)auth_iam_is_public(p);
    }
    arena_destroy(a);
    return 0;
}
