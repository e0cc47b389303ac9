/*
 * admin_cli.c: `shardstore admin ...`, the client of the admin API under
 * /_/admin/ (admin_users.c). Each subcommand is one SigV4-signed request
 * (auth_sigv4_sign, the signer the server verifies with) sent with
 * libcurl; the server does the work, so changes take effect at once.
 *
 * Credentials: SHARDSTORE_ACCESS_KEY/SHARDSTORE_SECRET_KEY, else
 * AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY. --endpoint (default
 * http://127.0.0.1:9000), --region (us-east-1), --json for the server's
 * JSON; otherwise one "key=value" line per record. Exit 0, or 1 with the
 * error on stderr. The secret key is never printed except the new one
 * `key add` returns, once.
 */
#include "server/admin_cli.h"
#include "auth/auth.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct cli {
    const char *endpoint;
    const char *region;
    const char *access_key;
    const char *secret_key;
    bool is_json;
};

struct request {
    const char *method;
    const char *path; /* "/_/admin/users" */
    struct buf query; /* encoded, without '?' */
};

static void
usage(FILE *f)
{
    fprintf(f, "usage: shardstore admin [--endpoint URL] [--region R] [--json] COMMAND\n"
               "  user add NAME [--admin]       user list          user remove NAME\n"
               "  key add USER [--read-only]    key list [USER]    key remove ACCESS_KEY\n"
               "  grant USER BUCKET read|write|admin [--prefix P]  revoke USER BUCKET\n"
               "  bucket public BUCKET on|off   bucket list\n"
               "credentials: SHARDSTORE_ACCESS_KEY/SHARDSTORE_SECRET_KEY "
               "(or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) of root or an admin user\n");
}

/* Appends name=value to the query, URI-encoded as SigV4 canonicalizes it. */
static void
query_add(struct buf *q, const char *name, const char *value)
{
    static const char hex[] = "0123456789ABCDEF";
    if (q->len)
        buf_append_str(q, "&");
    buf_append_str(q, name);
    buf_append_str(q, "=");
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == '~') {
            buf_append(q, p, 1);
        } else {
            char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            buf_append(q, esc, 3);
        }
    }
}

static size_t
on_data(char *ptr, size_t size, size_t n, void *ctx)
{
    buf_append(ctx, ptr, size * n);
    return size * n;
}

/* Extracts "<Message>...</Message>" of an S3 error body for stderr. */
static void
print_error(long status, const struct buf *body)
{
    const char *text = body->ptr ? body->ptr : "";
    const char *m = strstr(text, "<Message>"), *e = m ? strstr(m, "</Message>") : NULL;
    const char *c = strstr(text, "<Code>"), *ce = c ? strstr(c, "</Code>") : NULL;
    fprintf(stderr, "shardstore admin: HTTP %ld", status);
    if (c && ce)
        fprintf(stderr, " %.*s", (int)(ce - c - 6), c + 6);
    if (m && e)
        fprintf(stderr, ": %.*s", (int)(e - m - 9), m + 9);
    fprintf(stderr, "\n");
}

/* Sends 'req', prints the answer's body on stdout. Returns the exit code. */
static int
send_request(const struct cli *cli, struct request *req)
{
    int code = 1;
    CURL *curl = NULL;
    struct curl_slist *hdrs = NULL;
    struct buf url, body, hv;
    buf_init(&url);
    buf_init(&body);
    buf_init(&hv);
    if (!cli->is_json)
        query_add(&req->query, "format", "text");

    const char *hostp = strstr(cli->endpoint, "://");
    hostp = hostp ? hostp + 3 : cli->endpoint;
    size_t host_len = strcspn(hostp, "/");
    char host[256], amz_date[17], authz[1024];
    if (host_len == 0 || host_len >= sizeof(host)) {
        fprintf(stderr, "shardstore admin: bad endpoint %s\n", cli->endpoint);
        goto out;
    }
    memcpy(host, hostp, host_len);
    host[host_len] = '\0';
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(amz_date, sizeof(amz_date), "%Y%m%dT%H%M%SZ", &tm);
    static const char empty_sha[] =
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    struct auth_header ah[3] = {
        {SLICE_LIT("host"), slice_from_cstr(host)},
        {SLICE_LIT("x-amz-content-sha256"), SLICE_LIT(empty_sha)},
        {SLICE_LIT("x-amz-date"), slice_from_cstr(amz_date)},
    };
    struct auth_request ar = {
        .method = slice_from_cstr(req->method),
        .path = slice_from_cstr(req->path),
        .query = {req->query.ptr ? req->query.ptr : "", req->query.len},
        .headers = ah,
        .n_headers = 3,
        .now_s = (int64_t)now,
        .region = cli->region,
    };
    if (auth_sigv4_sign(&ar, cli->access_key, cli->secret_key, authz, sizeof(authz)) != 0) {
        fprintf(stderr, "shardstore admin: cannot sign the request\n");
        goto out;
    }
    buf_printf(&url, "%.*s%s%s%s", (int)(hostp - cli->endpoint + host_len), cli->endpoint,
               req->path, req->query.len ? "?" : "", req->query.ptr ? req->query.ptr : "");
    curl = curl_easy_init();
    if (!curl)
        goto out;
    buf_printf(&hv, "Authorization: %s", authz);
    hdrs = curl_slist_append(hdrs, hv.ptr);
    char sha_hdr[96];
    snprintf(sha_hdr, sizeof(sha_hdr), "x-amz-content-sha256: %s", empty_sha);
    hdrs = curl_slist_append(hdrs, sha_hdr);
    char date_hdr[40];
    snprintf(date_hdr, sizeof(date_hdr), "x-amz-date: %s", amz_date);
    hdrs = curl_slist_append(hdrs, date_hdr);
    hdrs = curl_slist_append(hdrs, "Expect:");
    curl_easy_setopt(curl, CURLOPT_URL, url.ptr);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, req->method);
    if (!strcmp(req->method, "POST") || !strcmp(req->method, "PUT")) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, 0L);
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    CURLcode cc = curl_easy_perform(curl);
    if (cc != CURLE_OK) {
        fprintf(stderr, "shardstore admin: %s: %s\n", cli->endpoint, curl_easy_strerror(cc));
        goto out;
    }
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status > 299) {
        print_error(status, &body);
        goto out;
    }
    if (body.len)
        fwrite(body.ptr, 1, body.len, stdout);
    else if (cli->is_json)
        printf("{\"ok\":true}\n");
    fflush(stdout);
    code = 0;

out:
    if (body.ptr)
        auth_wipe(body.ptr, body.cap);
    buf_cleanup(&body);
    buf_cleanup(&url);
    if (hv.ptr)
        auth_wipe(hv.ptr, hv.cap);
    buf_cleanup(&hv);
    curl_slist_free_all(hdrs);
    if (curl)
        curl_easy_cleanup(curl);
    return code;
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

static int
bad_usage(void)
{
    usage(stderr);
    return 1;
}

int
admin_cli_main(int argc, char **argv)
{
    struct cli cli = {.endpoint = "http://127.0.0.1:9000", .region = "us-east-1"};
    bool is_bad = false;
    const char *v;
    /* argv[0] is "admin". */
    argc--;
    argv++;
    if ((v = take_option(&argc, argv, "--endpoint", &is_bad)))
        cli.endpoint = v;
    if ((v = take_option(&argc, argv, "--region", &is_bad)))
        cli.region = v;
    cli.is_json = take_flag(&argc, argv, "--json");
    bool is_admin = take_flag(&argc, argv, "--admin");
    bool is_read_only = take_flag(&argc, argv, "--read-only");
    const char *prefix = take_option(&argc, argv, "--prefix", &is_bad);
    if (take_flag(&argc, argv, "--help") || take_flag(&argc, argv, "-h")) {
        usage(stdout);
        return 0;
    }
    if (is_bad || argc < 2)
        return bad_usage();
    for (int i = 0; i < argc; i++)
        if (!strncmp(argv[i], "--", 2)) {
            fprintf(stderr, "shardstore admin: unknown option %s\n", argv[i]);
            return bad_usage();
        }
    cli.access_key = getenv("SHARDSTORE_ACCESS_KEY");
    cli.secret_key = getenv("SHARDSTORE_SECRET_KEY");
    if (!cli.access_key || !*cli.access_key || !cli.secret_key || !*cli.secret_key) {
        cli.access_key = getenv("AWS_ACCESS_KEY_ID");
        cli.secret_key = getenv("AWS_SECRET_ACCESS_KEY");
    }
    if (!cli.access_key || !*cli.access_key || !cli.secret_key || !*cli.secret_key) {
        fprintf(stderr, "shardstore admin: set SHARDSTORE_ACCESS_KEY and SHARDSTORE_SECRET_KEY "
                        "(or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)\n");
        return 1;
    }

    struct request req = {.method = NULL};
    buf_init(&req.query);
    const char *noun = argv[0], *verb = argv[1];
    int nargs = argc - 2;
    char **args = argv + 2;
    if (!strcmp(noun, "user") && !strcmp(verb, "add") && nargs == 1) {
        req = (struct request){"POST", "/_/admin/users", req.query};
        query_add(&req.query, "name", args[0]);
        if (is_admin)
            query_add(&req.query, "admin", "true");
    } else if (!strcmp(noun, "user") && !strcmp(verb, "list") && nargs == 0) {
        req = (struct request){"GET", "/_/admin/users", req.query};
    } else if (!strcmp(noun, "user") && !strcmp(verb, "remove") && nargs == 1) {
        req = (struct request){"DELETE", "/_/admin/users", req.query};
        query_add(&req.query, "name", args[0]);
    } else if (!strcmp(noun, "key") && !strcmp(verb, "add") && nargs == 1) {
        req = (struct request){"POST", "/_/admin/keys", req.query};
        query_add(&req.query, "user", args[0]);
        if (is_read_only)
            query_add(&req.query, "read_only", "true");
    } else if (!strcmp(noun, "key") && !strcmp(verb, "list") && nargs <= 1) {
        req = (struct request){"GET", "/_/admin/keys", req.query};
        if (nargs == 1)
            query_add(&req.query, "user", args[0]);
    } else if (!strcmp(noun, "key") && !strcmp(verb, "remove") && nargs == 1) {
        req = (struct request){"DELETE", "/_/admin/keys", req.query};
        query_add(&req.query, "access_key", args[0]);
    } else if (!strcmp(noun, "grant") && nargs == 2) {
        /* grant USER BUCKET LEVEL */
        req = (struct request){"PUT", "/_/admin/grants", req.query};
        query_add(&req.query, "user", verb);
        query_add(&req.query, "bucket", args[0]);
        query_add(&req.query, "level", args[1]);
        if (prefix)
            query_add(&req.query, "prefix", prefix);
    } else if (!strcmp(noun, "revoke") && nargs == 1) {
        req = (struct request){"DELETE", "/_/admin/grants", req.query};
        query_add(&req.query, "user", verb);
        query_add(&req.query, "bucket", args[0]);
    } else if (!strcmp(noun, "grant") && !strcmp(verb, "list") && nargs <= 1) {
        req = (struct request){"GET", "/_/admin/grants", req.query};
        if (nargs == 1)
            query_add(&req.query, "user", args[0]);
    } else if (!strcmp(noun, "bucket") && !strcmp(verb, "public") && nargs == 2) {
        req = (struct request){"PUT", "/_/admin/buckets", req.query};
        query_add(&req.query, "bucket", args[0]);
        query_add(&req.query, "public", args[1]);
    } else if (!strcmp(noun, "bucket") && !strcmp(verb, "list") && nargs == 0) {
        req = (struct request){"GET", "/_/admin/buckets", req.query};
    }
    if (!req.method) {
        buf_cleanup(&req.query);
        return bad_usage();
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int code = send_request(&cli, &req);
    curl_global_cleanup();
    buf_cleanup(&req.query);
    return code;
}
