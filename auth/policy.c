/*
 * policy.c: the access decision, pure: principal x bucket x grant x action
 * x key -> allow or deny. No lookups happen here; server/ gathers the facts
 * (who signed, the bucket's owner and public flag, the caller's grant) and
 * asks. Deny is the default: every allow below is one explicit rule.
 */
#include "auth/auth_int.h"

bool
auth_action_is_write(enum auth_action action)
{
    switch (action) {
    case AUTH_ACTION_CREATE_BUCKET:
    case AUTH_ACTION_WRITE:
    case AUTH_ACTION_BUCKET_ADMIN:
    case AUTH_ACTION_ADMIN_WRITE:
        return true;
    case AUTH_ACTION_SERVICE:
    case AUTH_ACTION_BUCKET_INFO:
    case AUTH_ACTION_READ_ACP:
    case AUTH_ACTION_LIST:
    case AUTH_ACTION_READ:
    case AUTH_ACTION_ADMIN_READ:
        return false;
    }
    return true;
}

/* The grant level an action needs (1 read, 2 write, 3 admin). READ_ACP
 * is not part of READ in S3: only an admin (FULL_CONTROL) grant gives it. */
static int
level_needed(enum auth_action action)
{
    switch (action) {
    case AUTH_ACTION_BUCKET_INFO:
    case AUTH_ACTION_LIST:
    case AUTH_ACTION_READ:
        return 1;
    case AUTH_ACTION_WRITE:
        return 2;
    default:
        return 3;
    }
}

static bool
is_owner(const struct auth_principal *who, const struct auth_bucket_view *bucket,
         const char *root_id)
{
    const char *owner = bucket->owner && bucket->owner[0] ? bucket->owner : root_id;
    return who->user_id && owner && who->user_id[0] && strcmp(who->user_id, owner) == 0;
}

bool
auth_policy_allows(const struct auth_principal *who, const struct auth_bucket_view *bucket,
                   const struct auth_grant_view *grant, enum auth_action action, struct slice key,
                   const char *root_id)
{
    if (who->is_anonymous) {
        /* Only a public-read bucket is open, and only for reading. */
        return bucket && bucket->is_public_read &&
               (action == AUTH_ACTION_READ || action == AUTH_ACTION_LIST ||
                action == AUTH_ACTION_BUCKET_INFO);
    }
    if (who->is_read_only && auth_action_is_write(action))
        return false;
    if (who->is_root)
        return true;
    switch (action) {
    case AUTH_ACTION_SERVICE:
    case AUTH_ACTION_CREATE_BUCKET:
        return true;
    case AUTH_ACTION_ADMIN_READ:
    case AUTH_ACTION_ADMIN_WRITE:
        return who->is_admin;
    default:
        break;
    }
    if (!bucket)
        return false;
    if (is_owner(who, bucket, root_id))
        return true;
    if (bucket->is_public_read && (action == AUTH_ACTION_READ || action == AUTH_ACTION_LIST ||
                                   action == AUTH_ACTION_BUCKET_INFO))
        return true;
    if (!grant || grant->level < level_needed(action))
        return false;
    /* A prefix grant covers the keys under it; a listing must stay under
     * it too (its prefix must extend the grant's). Bucket-wide actions
     * other than HEAD/location need a whole-bucket grant. */
    if (grant->prefix.len == 0 || action == AUTH_ACTION_BUCKET_INFO)
        return true;
    if (action == AUTH_ACTION_BUCKET_ADMIN || action == AUTH_ACTION_READ_ACP)
        return false;
    return slice_has_prefix(key, grant->prefix);
}
