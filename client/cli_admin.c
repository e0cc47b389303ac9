/*
 * cli_admin.c: `shard admin ...` (also `shardstore admin ...`, which execs
 * it), the client of the admin API under /_/admin/ and /_/lifecycle/: each
 * subcommand is one
 * shard_request, so changes take effect at once. It keeps what `shardstore
 * admin` always did: credentials from SHARDSTORE_ACCESS_KEY/_SECRET_KEY,
 * else AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY; --endpoint (default
 * http://127.0.0.1:9000, no config files), --region, --json (else one
 * "key=value" line per record); exit 0, or 1 with the error on stderr.
 * No secret is printed but the one `key add` returns.
 */
#include "config.h"

#include "client/cli_util.h"
#include "common/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What one subcommand sends. */
struct admin_req {
    const char *method;
    const char *path;
    struct shard_param params[6];
    size_t n_params;
};

static void
usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [--endpoint URL] [--region R] [--json] COMMAND\n"
            "  user add NAME [EMAIL] [--admin]  user list       user remove NAME\n"
            "  key add USER [--read-only]    key list [USER]    key remove ACCESS_KEY\n"
            "  grant USER BUCKET read|write|admin [--prefix P]  revoke USER BUCKET\n"
            "  grant list [USER]\n"
            "  bucket public BUCKET on|off   bucket list\n"
            "  lifecycle status              lifecycle run [BUCKET]\n"
            "credentials: SHARDSTORE_ACCESS_KEY/SHARDSTORE_SECRET_KEY "
            "(or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) of root or an admin user\n",
            prog);
}

static void
param_add(struct admin_req *r, const char *name, const char *value)
{
    if (r->n_params < ARRAY_LEN(r->params))
        r->params[r->n_params++] = (struct shard_param){name, value};
}

/* Takes "--flag" out of argv[0..*argc), returning whether it was there. */
static bool
take_flag(int *argc, char **argv, const char *flag)
{
    for (int i = 0; i < *argc; i++) {
        if (!strcmp(argv[i], flag)) {
            memmove(&argv[i], &argv[i + 1], (size_t)(*argc - i - 1) * sizeof(*argv));
            (*argc)--;
            return true;
        }
    }
    return false;
}

/* Takes "--opt VALUE" (or "--opt=VALUE"); returns VALUE or NULL. */
static const char *
take_option(int *argc, char **argv, const char *opt, bool *is_bad)
{
    size_t ol = strlen(opt);
    for (int i = 0; i < *argc; i++) {
        const char *v = NULL;
        int n = 0;
        if (!strcmp(argv[i], opt)) {
            if (i + 1 >= *argc) {
                *is_bad = true;
                return NULL;
            }
            v = argv[i + 1];
            n = 2;
        } else if (!strncmp(argv[i], opt, ol) && argv[i][ol] == '=') {
            v = argv[i] + ol + 1;
            n = 1;
        } else {
            continue;
        }
        memmove(&argv[i], &argv[i + n], (size_t)(*argc - i - n) * sizeof(*argv));
        *argc -= n;
        return v;
    }
    return NULL;
}

/* Maps "NOUN VERB ARGS" to its request; returns false when it is no command. */
static bool
admin_req_of(int argc, char **argv, bool is_admin, bool is_read_only, const char *prefix,
             struct admin_req *r)
{
    const char *noun = argv[0], *verb = argv[1];
    int nargs = argc - 2;
    char **args = argv + 2;
    if (!strcmp(noun, "user") && !strcmp(verb, "add") && (nargs == 1 || nargs == 2)) {
        *r = (struct admin_req){"POST", "/_/admin/users", {{"name", args[0]}}, 1};
        if (nargs == 2)
            param_add(r, "email", args[1]);
        if (is_admin)
            param_add(r, "admin", "true");
    } else if (!strcmp(noun, "user") && !strcmp(verb, "list") && nargs == 0) {
        *r = (struct admin_req){"GET", "/_/admin/users", {{0}}, 0};
    } else if (!strcmp(noun, "user") && !strcmp(verb, "remove") && nargs == 1) {
        *r = (struct admin_req){"DELETE", "/_/admin/users", {{"name", args[0]}}, 1};
    } else if (!strcmp(noun, "key") && !strcmp(verb, "add") && nargs == 1) {
        *r = (struct admin_req){"POST", "/_/admin/keys", {{"user", args[0]}}, 1};
        if (is_read_only)
            param_add(r, "read_only", "true");
    } else if (!strcmp(noun, "key") && !strcmp(verb, "list") && nargs <= 1) {
        *r = (struct admin_req){"GET", "/_/admin/keys", {{0}}, 0};
        if (nargs == 1)
            param_add(r, "user", args[0]);
    } else if (!strcmp(noun, "key") && !strcmp(verb, "remove") && nargs == 1) {
        *r = (struct admin_req){"DELETE", "/_/admin/keys", {{"access_key", args[0]}}, 1};
    } else if (!strcmp(noun, "grant") && !strcmp(verb, "list") && nargs <= 1) {
        *r = (struct admin_req){"GET", "/_/admin/grants", {{0}}, 0};
        if (nargs == 1)
            param_add(r, "user", args[0]);
    } else if (!strcmp(noun, "grant") && nargs == 2) {
        /* grant USER BUCKET LEVEL */
        *r = (struct admin_req){
            "PUT", "/_/admin/grants", {{"user", verb}, {"bucket", args[0]}, {"level", args[1]}}, 3};
        if (prefix)
            param_add(r, "prefix", prefix);
    } else if (!strcmp(noun, "revoke") && nargs == 1) {
        *r = (struct admin_req){
            "DELETE", "/_/admin/grants", {{"user", verb}, {"bucket", args[0]}}, 2};
    } else if (!strcmp(noun, "bucket") && !strcmp(verb, "public") && nargs == 2) {
        *r = (struct admin_req){
            "PUT", "/_/admin/buckets", {{"bucket", args[0]}, {"public", args[1]}}, 2};
    } else if (!strcmp(noun, "bucket") && !strcmp(verb, "list") && nargs == 0) {
        *r = (struct admin_req){"GET", "/_/admin/buckets", {{0}}, 0};
    } else if (!strcmp(noun, "lifecycle") && !strcmp(verb, "status") && nargs == 0) {
        *r = (struct admin_req){"GET", "/_/lifecycle/status", {{0}}, 0};
    } else if (!strcmp(noun, "lifecycle") && !strcmp(verb, "run") && nargs <= 1) {
        /* A pass now (of one bucket or of all); answers when it ends. */
        *r = (struct admin_req){"POST", "/_/lifecycle/run", {{0}}, 0};
        if (nargs == 1)
            param_add(r, "bucket", args[0]);
    } else {
        return false;
    }
    return true;
}

/* The credential pair of the admin: SHARDSTORE_*, else AWS_*; false when unset. */
static bool
admin_credentials(const char **ak, const char **sk)
{
    static const char *const PAIRS[][2] = {
        {"SHARDSTORE_ACCESS_KEY", "SHARDSTORE_SECRET_KEY"},
        {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"},
    };
    for (size_t i = 0; i < ARRAY_LEN(PAIRS); i++) {
        *ak = getenv(PAIRS[i][0]);
        *sk = getenv(PAIRS[i][1]);
        if (*ak && **ak && *sk && **sk)
            return true;
    }
    return false;
}

int
cli_admin(const char *prog, const struct shard_config_in *cfg, int argc, char **argv)
{
    const char *endpoint = cfg->endpoint_url ? cfg->endpoint_url : "http://127.0.0.1:9000";
    const char *region = cfg->region ? cfg->region : "us-east-1";
    bool is_bad = false;
    const char *v;
    /* argv[0] is "admin". */
    argc--;
    argv++;
    if ((v = take_option(&argc, argv, "--endpoint", &is_bad)) ||
        (v = take_option(&argc, argv, "--endpoint-url", &is_bad)))
        endpoint = v;
    if ((v = take_option(&argc, argv, "--region", &is_bad)))
        region = v;
    bool is_json = take_flag(&argc, argv, "--json");
    bool is_admin = take_flag(&argc, argv, "--admin");
    bool is_read_only = take_flag(&argc, argv, "--read-only");
    const char *prefix = take_option(&argc, argv, "--prefix", &is_bad);
    if (take_flag(&argc, argv, "--help") || take_flag(&argc, argv, "-h")) {
        usage(stdout, prog);
        return 0;
    }
    for (int i = 0; i < argc; i++) {
        if (!strncmp(argv[i], "--", 2)) {
            fprintf(stderr, "%s: unknown option %s\n", prog, argv[i]);
            is_bad = true;
        }
    }
    struct admin_req req;
    if (is_bad || argc < 2 || !admin_req_of(argc, argv, is_admin, is_read_only, prefix, &req)) {
        usage(stderr, prog);
        return 1;
    }
    if (!is_json)
        param_add(&req, "format", "text");

    struct shard_config_in in = {.endpoint_url = endpoint, .region = region};
    if (!admin_credentials(&in.access_key, &in.secret_key)) {
        fprintf(stderr,
                "%s: set SHARDSTORE_ACCESS_KEY and SHARDSTORE_SECRET_KEY "
                "(or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)\n",
                prog);
        return 1;
    }
    /* One retry at most: an admin change is not idempotent. */
    struct shard_options opts = {.max_retries = 1};
    struct shard_error err;
    struct shard_response resp = {0};
    int code = 1;
    struct shard_client *c = shard_client_create(&in, &opts, &err);
    if (c == NULL) {
        fprintf(stderr, "%s: %s: %s\n", prog, endpoint, err.message);
        goto fail;
    }
    if (shard_request(c, req.method, req.path, req.params, req.n_params, NULL, 0, &resp, &err) !=
        0) {
        if (err.kind == SHARD_ERR_S3)
            fprintf(stderr, "%s: HTTP %ld %s: %s\n", prog, err.http_status, err.code, err.message);
        else
            fprintf(stderr, "%s: %s: %s\n", prog, endpoint, err.message);
        goto fail;
    }
    if (resp.body_len > 0)
        fwrite(resp.body, 1, resp.body_len, stdout);
    else if (is_json)
        fputs("{\"ok\":true}\n", stdout);
    code = fflush(stdout) == 0 ? 0 : 1;
fail:
    shard_response_cleanup(&resp);
    shard_client_destroy(c);
    return code;
}
