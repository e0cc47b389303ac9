/*
 * admin_users.c: the user admin API under /_/admin/ (SigV4, root or a user
 * with the admin flag; op_admin authorized the request already):
 *
 *   GET    /_/admin/users                          list users
 *   POST   /_/admin/users?name=N[&admin=true][&email=E]  add a user
 *   DELETE /_/admin/users?name=N                   remove it, its keys and grants
 *   GET    /_/admin/keys[?user=N]                  list access keys (never secrets)
 *   POST   /_/admin/keys?user=N[&read_only=true]   new key; the answer holds the
 *                                                  secret, the only time it is shown
 *   DELETE /_/admin/keys?access_key=AK             remove a key
 *   GET    /_/admin/grants[?user=N]                list grants
 *   PUT    /_/admin/grants?user=N&bucket=B&level=read|write|admin[&prefix=P]
 *   DELETE /_/admin/grants?user=N&bucket=B
 *   GET    /_/admin/buckets                        buckets with owner and public flag
 *   PUT    /_/admin/buckets?bucket=B&public=on|off
 *
 * Input is query parameters, not a JSON body: they are parsed by the
 * request parser every route already uses and they are covered by the
 * SigV4 signature (the canonical query), so no new parser of untrusted
 * input exists here. Output is JSON ({"users":[...]}, ...), or one
 * "key=value ..." line per record with format=text (the CLI's human
 * output). Every change is one index transaction, seen by the next request.
 */
#include "config.h"

#include "auth/auth.h"
#include "common/common.h"
#include "index/index.h"
#include "server/access.h"
#include "server/acl.h"
#include "server/errors.h"
#include "server/ops.h"
#include "server/req.h"
#include "server/server.h"
#include "server/xml_out.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

/* ======================================================================
 * Output: JSON objects or text lines
 * ====================================================================== */

struct out {
    struct buf b;
    bool is_text;
    size_t n_records;
    size_t n_fields;
};

static void
out_begin(struct out *o, struct s3_req *r, const char *list_name)
{
    buf_init(&o->b);
    const struct s3_param *f = s3_req_param(r, "format");
    o->is_text = f && slice_eq(f->value, SLICE_LIT("text"));
    o->n_records = 0;
    if (!o->is_text && list_name)
        buf_printf(&o->b, "{\"%s\":[", list_name);
}

static void
out_record_begin(struct out *o)
{
    if (!o->is_text)
        buf_append_str(&o->b, o->n_records ? ",{" : "{");
    o->n_records++;
    o->n_fields = 0;
}

static void
out_record_end(struct out *o)
{
    buf_append_str(&o->b, o->is_text ? "\n" : "}");
}

/* A field whose value is a string; in text mode values with a space or
 * an '=' are quoted so a line stays splittable. */
static void
out_str(struct out *o, const char *name, struct slice v)
{
    if (o->is_text) {
        buf_printf(&o->b, "%s%s=", o->n_fields ? " " : "", name);
        bool quote = v.len == 0 || memchr(v.ptr, ' ', v.len) || memchr(v.ptr, '=', v.len);
        if (quote)
            json_string(&o->b, v);
        else
            buf_append(&o->b, v.ptr, v.len);
    } else {
        buf_printf(&o->b, "%s\"%s\":", o->n_fields ? "," : "", name);
        json_string(&o->b, v);
    }
    o->n_fields++;
}

static void
out_bool(struct out *o, const char *name, bool v)
{
    if (o->is_text)
        buf_printf(&o->b, "%s%s=%s", o->n_fields ? " " : "", name, v ? "true" : "false");
    else
        buf_printf(&o->b, "%s\"%s\":%s", o->n_fields ? "," : "", name, v ? "true" : "false");
    o->n_fields++;
}

static void
out_send(struct out *o, struct s3_req *r, const char *list_name, int status)
{
    if (!o->is_text && list_name)
        buf_append_str(&o->b, "]}");
    if (!o->is_text)
        buf_append_str(&o->b, "\n");
    s3_respond_body(r, status, o->is_text ? "text/plain" : "application/json",
                    o->b.ptr ? o->b.ptr : "", o->b.len);
    auth_wipe(o->b.ptr, o->b.cap); /* may hold a new secret */
    buf_cleanup(&o->b);
}

/* ======================================================================
 * Helpers
 * ====================================================================== */

static struct slice
param(const struct s3_req *r, const char *name)
{
    const struct s3_param *p = s3_req_param(r, name);
    return p ? p->value : SLICE_NULL;
}

static bool
param_true(const struct s3_req *r, const char *name)
{
    struct slice v = param(r, name);
    return slice_eq(v, SLICE_LIT("true")) || slice_eq(v, SLICE_LIT("1")) ||
           slice_eq(v, SLICE_LIT("on")) || slice_eq(v, SLICE_LIT("yes"));
}

/* User names: 1..64 of [A-Za-z0-9._@+=-], not "root" (root's display name). */
static bool
user_name_is_valid(struct slice n)
{
    if (n.len == 0 || n.len > INDEX_USER_NAME_MAX || slice_eq(n, SLICE_LIT("root")))
        return false;
    for (size_t i = 0; i < n.len; i++) {
        char c = n.ptr[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-' || c == '@' || c == '+' || c == '='))
            return false;
    }
    return true;
}

static void
respond_errno(struct s3_req *r, int rc, const char *what)
{
    char msg[160];
    if (rc == -ENOENT) {
        snprintf(msg, sizeof(msg), "No such %s", what);
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, msg);
    } else if (rc == -EEXIST) {
        snprintf(msg, sizeof(msg), "The %s already exists", what);
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, msg);
    } else if (rc == -EINVAL) {
        snprintf(msg, sizeof(msg), "Invalid %s", what);
        s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, msg);
    } else {
        s3_respond_error(r, s3_error_from_errno(rc), NULL);
    }
}

/* Resolves ?user=NAME (required when 'is_required'). Responds on failure. */
static bool
user_param(struct s3_req *r, bool is_required, struct index_user *u, bool *has_user)
{
    struct slice name = param(r, "user");
    *has_user = name.len > 0;
    if (!name.len) {
        if (is_required)
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "Missing parameter user");
        return !is_required;
    }
    int rc = index_user_get(r->srv->index, name, u);
    if (rc != 0) {
        respond_errno(r, rc, "user");
        return false;
    }
    return true;
}

/* ======================================================================
 * Users
 * ====================================================================== */

static void
user_fields(struct out *o, const struct index_user *u)
{
    out_str(o, "name", slice_from_cstr(u->name));
    out_str(o, "id", slice_from_cstr(u->id));
    out_bool(o, "admin", u->is_admin);
    if (u->email[0])
        out_str(o, "email", slice_from_cstr(u->email));
}

static int
list_user_one(void *ctx, const struct index_user *u)
{
    struct out *o = ctx;
    out_record_begin(o);
    user_fields(o, u);
    out_record_end(o);
    return 0;
}

static void
users(struct s3_req *r, bool is_get, bool is_post, bool is_delete)
{
    struct out o;
    struct slice name = param(r, "name");
    if (is_get) {
        out_begin(&o, r, "users");
        int rc = index_user_list(r->srv->index, list_user_one, &o);
        if (rc < 0) {
            buf_cleanup(&o.b);
            respond_errno(r, rc, "user");
            return;
        }
        out_send(&o, r, "users", 200);
        return;
    }
    if (is_post) {
        if (!user_name_is_valid(name)) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                             "Invalid user name (1-64 of A-Z a-z 0-9 . _ - @ + =, not root)");
            return;
        }
        struct index_user u = {.is_admin = param_true(r, "admin"), .created_ns = clock_now_ns()};
        struct slice email = param(r, "email");
        struct index_user other;
        if (email.len > INDEX_USER_EMAIL_MAX || (email.len && !memchr(email.ptr, '@', email.len))) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "Invalid e-mail address");
            return;
        }
        if (index_user_get_by_email(r->srv->index, email, &other) == 0) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "Another user has this e-mail address");
            return;
        }
        memcpy(u.email, email.ptr ? email.ptr : "", email.len);
        uint8_t id[32];
        if (auth_random_bytes(id, sizeof(id)) != 0) {
            s3_respond_error(r, S3_ERR_INTERNAL_ERROR, NULL);
            return;
        }
        hex_encode(id, sizeof(id), u.id);
        memcpy(u.name, name.ptr, name.len);
        int rc = index_user_create(r->srv->index, &u);
        if (rc != 0) {
            respond_errno(r, rc, "user");
            return;
        }
        log_info("admin: user '%s' added%s by %s", u.name, u.is_admin ? " (admin)" : "",
                 r->user_name);
        out_begin(&o, r, NULL);
        out_record_begin(&o);
        user_fields(&o, &u);
        out_record_end(&o);
        out_send(&o, r, NULL, 200);
        return;
    }
    if (is_delete) {
        int rc = index_user_delete(r->srv->index, name);
        if (rc != 0) {
            respond_errno(r, rc, "user");
            return;
        }
        log_info("admin: user '%.*s' removed by %s", (int)name.len, name.ptr, r->user_name);
        s3_respond_empty(r, 204);
        return;
    }
    s3_respond_error(r, S3_ERR_METHOD_NOT_ALLOWED, NULL);
}

/* ======================================================================
 * Access keys
 * ====================================================================== */

struct key_list_ctx {
    struct out *o;
    struct index *ix;
};

static int
list_key_one(void *ctx, const struct index_key *k)
{
    struct key_list_ctx *c = ctx;
    struct index_user u;
    if (index_user_get_by_id(c->ix, slice_from_cstr(k->user_id), &u) != 0)
        snprintf(u.name, sizeof(u.name), "%s", k->user_id);
    out_record_begin(c->o);
    out_str(c->o, "access_key", slice_from_cstr(k->access_key));
    out_str(c->o, "user", slice_from_cstr(u.name));
    out_bool(c->o, "read_only", k->is_read_only);
    out_record_end(c->o);
    return 0;
}

static void
keys(struct s3_req *r, bool is_get, bool is_post, bool is_delete)
{
    struct out o;
    struct index_user u;
    bool has_user;
    if (is_get) {
        if (!user_param(r, false, &u, &has_user))
            return;
        out_begin(&o, r, "keys");
        struct key_list_ctx c = {&o, r->srv->index};
        int rc = index_key_list(r->srv->index, has_user ? slice_from_cstr(u.id) : SLICE_NULL,
                                list_key_one, &c);
        if (rc < 0) {
            buf_cleanup(&o.b);
            respond_errno(r, rc, "key");
            return;
        }
        out_send(&o, r, "keys", 200);
        return;
    }
    if (is_post) {
        if (!user_param(r, true, &u, &has_user))
            return;
        struct index_key k;
        char secret[AUTH_SECRET_LEN + 1];
        memset(&k, 0, sizeof(k));
        memcpy(k.user_id, u.id, sizeof(k.user_id));
        k.is_read_only = param_true(r, "read_only");
        k.created_ns = clock_now_ns();
        int rc = -EIO;
        for (int attempt = 0; attempt < 4 && rc != 0; attempt++) {
            if (auth_credentials_generate(k.access_key, secret) != 0) {
                rc = -EIO;
                break;
            }
            long n =
                auth_secret_seal(r->srv->secret_seal_key, slice_from_cstr(k.access_key), secret,
                                 AUTH_SECRET_LEN, k.secret_blob, sizeof(k.secret_blob));
            if (n < 0) {
                rc = -EIO;
                break;
            }
            k.secret_blob_len = (size_t)n;
            rc = index_key_create(r->srv->index, &k);
            if (rc != -EEXIST || !strcmp(k.access_key, r->srv->access_key))
                break;
        }
        if (rc == 0 && !strcmp(k.access_key, r->srv->access_key)) {
            /* Astronomically unlikely; never shadow root's key. */
            index_key_delete(r->srv->index, slice_from_cstr(k.access_key));
            rc = -EIO;
        }
        if (rc != 0) {
            auth_wipe(secret, sizeof(secret));
            respond_errno(r, rc, "key");
            return;
        }
        log_info("admin: access key %s added for user '%s'%s by %s", k.access_key, u.name,
                 k.is_read_only ? " (read-only)" : "", r->user_name);
        out_begin(&o, r, NULL);
        out_record_begin(&o);
        out_str(&o, "access_key", slice_from_cstr(k.access_key));
        out_str(&o, "secret_key", slice_from_cstr(secret));
        out_str(&o, "user", slice_from_cstr(u.name));
        out_bool(&o, "read_only", k.is_read_only);
        out_record_end(&o);
        auth_wipe(secret, sizeof(secret));
        out_send(&o, r, NULL, 200);
        return;
    }
    if (is_delete) {
        struct slice ak = param(r, "access_key");
        int rc = index_key_delete(r->srv->index, ak);
        if (rc != 0) {
            respond_errno(r, rc, "access key");
            return;
        }
        log_info("admin: access key %.*s removed by %s", (int)ak.len, ak.ptr, r->user_name);
        s3_respond_empty(r, 204);
        return;
    }
    s3_respond_error(r, S3_ERR_METHOD_NOT_ALLOWED, NULL);
}

/* ======================================================================
 * Grants and bucket flags
 * ====================================================================== */

static const char *level_names[] = {"none", "read", "write", "admin"};

struct grant_list_ctx {
    struct out *o;
    struct index *ix;
};

static int
list_grant_one(void *ctx, const struct index_grant *g)
{
    struct grant_list_ctx *c = ctx;
    struct index_user u;
    if (index_user_get_by_id(c->ix, slice_from_cstr(g->user_id), &u) != 0)
        return 0;
    out_record_begin(c->o);
    out_str(c->o, "user", slice_from_cstr(u.name));
    out_str(c->o, "bucket", slice_from_cstr(g->bucket));
    out_str(c->o, "level", slice_from_cstr(level_names[g->level]));
    out_str(c->o, "prefix", slice_from_cstr(g->prefix));
    out_record_end(c->o);
    return 0;
}

static void
grants(struct s3_req *r, bool is_get, bool is_put, bool is_delete)
{
    struct out o;
    struct index_user u;
    bool has_user;
    if (!user_param(r, !is_get, &u, &has_user))
        return;
    if (is_get) {
        out_begin(&o, r, "grants");
        struct grant_list_ctx c = {&o, r->srv->index};
        int rc = index_grant_list(r->srv->index, has_user ? slice_from_cstr(u.id) : SLICE_NULL,
                                  list_grant_one, &c);
        if (rc < 0) {
            buf_cleanup(&o.b);
            respond_errno(r, rc, "grant");
            return;
        }
        out_send(&o, r, "grants", 200);
        return;
    }
    struct slice bucket = param(r, "bucket");
    struct index_bucket bk;
    int rc = index_bucket_get(r->srv->index, bucket, &bk);
    if (rc != 0) {
        respond_errno(r, rc, "bucket");
        return;
    }
    if (is_put) {
        struct index_grant g;
        memset(&g, 0, sizeof(g));
        memcpy(g.user_id, u.id, sizeof(g.user_id));
        struct slice level = param(r, "level"), prefix = param(r, "prefix");
        for (int l = INDEX_GRANT_READ; l <= INDEX_GRANT_ADMIN; l++)
            if (slice_eq(level, slice_from_cstr(level_names[l])))
                g.level = (enum index_grant_level)l;
        if (g.level == INDEX_GRANT_NONE || prefix.len > INDEX_GRANT_PREFIX_MAX ||
            memchr(prefix.ptr ? prefix.ptr : "", '\0', prefix.len)) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT,
                             "level must be read, write or admin; prefix at most 512 bytes");
            return;
        }
        if (prefix.len)
            memcpy(g.prefix, prefix.ptr, prefix.len);
        rc = index_grant_put(r->srv->index, &g, bucket);
        if (rc != 0) {
            respond_errno(r, rc, "user or bucket");
            return;
        }
        log_info("admin: user '%s' granted %s on %s (%zu-byte prefix) by %s", u.name,
                 level_names[g.level], bk.name, prefix.len, r->user_name);
        s3_respond_empty(r, 204);
        return;
    }
    if (is_delete) {
        rc = index_grant_delete(r->srv->index, slice_from_cstr(u.id), bk.id);
        if (rc != 0) {
            respond_errno(r, rc, "grant");
            return;
        }
        log_info("admin: grant of user '%s' on %s revoked by %s", u.name, bk.name, r->user_name);
        s3_respond_empty(r, 204);
        return;
    }
    s3_respond_error(r, S3_ERR_METHOD_NOT_ALLOWED, NULL);
}

struct bucket_list_ctx {
    struct out *o;
    struct s3_req *r;
};

static int
list_bucket_one(void *ctx, const struct index_bucket *bk)
{
    struct bucket_list_ctx *c = ctx;
    char name[INDEX_USER_NAME_MAX + 1];
    s3_owner_name(c->r, s3_bucket_owner_id(c->r, bk), name, sizeof(name));
    out_record_begin(c->o);
    out_str(c->o, "bucket", slice_from_cstr(bk->name));
    out_str(c->o, "owner", slice_from_cstr(name));
    out_bool(c->o, "public_read", bk->is_public_read);
    out_record_end(c->o);
    return 0;
}

static void
buckets(struct s3_req *r, bool is_get, bool is_put)
{
    struct out o;
    if (is_get) {
        out_begin(&o, r, "buckets");
        struct bucket_list_ctx c = {&o, r};
        int rc = index_bucket_list(r->srv->index, list_bucket_one, &c);
        if (rc < 0) {
            buf_cleanup(&o.b);
            respond_errno(r, rc, "bucket");
            return;
        }
        out_send(&o, r, "buckets", 200);
        return;
    }
    if (is_put) {
        struct slice bucket = param(r, "bucket"), pub = param(r, "public");
        bool is_on = param_true(r, "public");
        if (!is_on && !slice_eq(pub, SLICE_LIT("off")) && !slice_eq(pub, SLICE_LIT("false"))) {
            s3_respond_error(r, S3_ERR_INVALID_ARGUMENT, "public must be on or off");
            return;
        }
        int rc = s3_bucket_public_set(r, bucket, is_on);
        if (rc != 0) {
            respond_errno(r, rc, "bucket");
            return;
        }
        log_info("admin: bucket %.*s public-read %s by %s", (int)bucket.len, bucket.ptr,
                 is_on ? "on" : "off", r->user_name);
        s3_respond_empty(r, 204);
        return;
    }
    s3_respond_error(r, S3_ERR_METHOD_NOT_ALLOWED, NULL);
}

void
admin_users_handle(struct s3_req *r, struct slice what)
{
    bool is_get = slice_eq(r->method, SLICE_LIT("GET"));
    bool is_post = slice_eq(r->method, SLICE_LIT("POST"));
    bool is_put = slice_eq(r->method, SLICE_LIT("PUT"));
    bool is_delete = slice_eq(r->method, SLICE_LIT("DELETE"));
    if (slice_eq(what, SLICE_LIT("users")))
        users(r, is_get, is_post, is_delete);
    else if (slice_eq(what, SLICE_LIT("keys")))
        keys(r, is_get, is_post, is_delete);
    else if (slice_eq(what, SLICE_LIT("grants")))
        grants(r, is_get, is_put, is_delete);
    else if (slice_eq(what, SLICE_LIT("buckets")))
        buckets(r, is_get, is_put);
    else
        s3_respond_error(r, S3_ERR_INVALID_REQUEST, "Unknown admin endpoint");
}
