/*
 * config.c: endpoint, region and credentials resolved the way aws-cli does
 * (flags, then environment, then ~/.aws/credentials and ~/.aws/config; see
 * shard.h for the order). Reads at most two small files; keeps no global
 * state. Secrets are never printed: errors name only the files and profiles.
 */
#include "config.h"

#include "client/shard_int.h"

#include <errno.h>
#include <stdlib.h>
#include <strings.h>

#define FILE_MAX_LEN (1u << 20)

/* What one file contributed for the chosen profile. */
struct profile_values {
    const char *want_section; /* "default", "profile x", or "x" for credentials */
    bool found_section;
    char access_key[256], secret_key[256], session_token[2048];
    char region[256], endpoint_url[256], s3_endpoint_url[256], ca_bundle[256];
};

static void
set_value(char *dst, size_t cap, const char *v)
{
    size_t n = strlen(v);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

static int
on_value(void *ctx, const char *section, const char *subsection, const char *key, const char *value)
{
    struct profile_values *pv = ctx;
    if (strcmp(section, pv->want_section) != 0)
        return 0;
    pv->found_section = true;
    if (subsection[0] != '\0') {
        if (strcasecmp(subsection, "s3") == 0 && strcasecmp(key, "endpoint_url") == 0)
            set_value(pv->s3_endpoint_url, sizeof(pv->s3_endpoint_url), value);
        return 0;
    }
    if (strcasecmp(key, "aws_access_key_id") == 0)
        set_value(pv->access_key, sizeof(pv->access_key), value);
    else if (strcasecmp(key, "aws_secret_access_key") == 0)
        set_value(pv->secret_key, sizeof(pv->secret_key), value);
    else if (strcasecmp(key, "aws_session_token") == 0)
        set_value(pv->session_token, sizeof(pv->session_token), value);
    else if (strcasecmp(key, "region") == 0)
        set_value(pv->region, sizeof(pv->region), value);
    else if (strcasecmp(key, "endpoint_url") == 0)
        set_value(pv->endpoint_url, sizeof(pv->endpoint_url), value);
    else if (strcasecmp(key, "ca_bundle") == 0)
        set_value(pv->ca_bundle, sizeof(pv->ca_bundle), value);
    return 0;
}

/*
 * Reads 'path' (at most FILE_MAX_LEN bytes) and collects the values of
 * 'pv->want_section'. A missing file is not an error. Returns 0, or -1 when
 * the file exists but cannot be read.
 */
static int
read_profile_file(const char *path, struct profile_values *pv)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
    char *text = xmalloc(FILE_MAX_LEN);
    size_t n = fread(text, 1, FILE_MAX_LEN, f);
    int rc = ferror(f) ? -1 : 0;
    fclose(f);
    if (rc == 0)
        client__ini_parse(text, n, on_value, pv);
    free(text);
    return rc;
}

static const char *
env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

/* Path of a shared file: the environment override, else ~/.aws/NAME. */
static char *
shared_file_path(const char *env_name, const char *name)
{
    const char *p = env(env_name);
    if (p != NULL) {
        if (p[0] == '~' && p[1] == '/' && env("HOME") != NULL) {
            struct buf b;
            buf_init(&b);
            buf_printf(&b, "%s%s", env("HOME"), p + 1);
            return b.ptr;
        }
        return xstrdup(p);
    }
    const char *home = env("HOME");
    if (home == NULL)
        return NULL;
    struct buf b;
    buf_init(&b);
    buf_printf(&b, "%s/.aws/%s", home, name);
    return b.ptr;
}

static char *
first_of(const char *a, const char *b, const char *c, const char *d)
{
    const char *v = a && a[0] ? a : b && b[0] ? b : c && c[0] ? c : d && d[0] ? d : NULL;
    return v ? xstrdup(v) : NULL;
}

void
client__config_cleanup(struct client_config *cfg)
{
    if (cfg == NULL)
        return;
    free(cfg->endpoint_url);
    free(cfg->region);
    if (cfg->secret_key != NULL)
        memset(cfg->secret_key, 0, strlen(cfg->secret_key));
    free(cfg->access_key);
    free(cfg->secret_key);
    free(cfg->session_token);
    free(cfg->profile);
    free(cfg->ca_bundle);
    memset(cfg, 0, sizeof(*cfg));
}

int
client__config_resolve(const struct shard_config_in *in, struct client_config *out,
                       struct shard_error *err)
{
    static const struct shard_config_in none;
    struct profile_values *creds = xcalloc(1, sizeof(*creds));
    struct profile_values *conf = xcalloc(1, sizeof(*conf));
    char *creds_path = NULL, *conf_path = NULL, *conf_section = NULL;
    int rc = SHARD_ERR_CONFIG;

    if (in == NULL)
        in = &none;
    memset(out, 0, sizeof(*out));
    bool is_profile_explicit = in->profile != NULL && in->profile[0] != '\0';
    out->profile = first_of(in->profile, env("AWS_PROFILE"), "default", NULL);

    creds_path = shared_file_path("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    conf_path = shared_file_path("AWS_CONFIG_FILE", "config");
    creds->want_section = out->profile;
    if (strcmp(out->profile, "default") == 0) {
        conf_section = xstrdup("default");
    } else {
        struct buf b;
        buf_init(&b);
        buf_printf(&b, "profile %s", out->profile);
        conf_section = b.ptr;
    }
    conf->want_section = conf_section;
    if (creds_path != NULL && read_profile_file(creds_path, creds) != 0) {
        client__err(err, SHARD_ERR_CONFIG, 0, "ConfigUnreadable", "cannot read %s: %s", creds_path,
                    strerror(errno));
        goto fail;
    }
    if (conf_path != NULL && read_profile_file(conf_path, conf) != 0) {
        client__err(err, SHARD_ERR_CONFIG, 0, "ConfigUnreadable", "cannot read %s: %s", conf_path,
                    strerror(errno));
        goto fail;
    }
    if (is_profile_explicit && !creds->found_section && !conf->found_section) {
        client__err(err, SHARD_ERR_CONFIG, 0, "ProfileNotFound",
                    "the config profile (%s) could not be found", out->profile);
        goto fail;
    }

    /* Credentials come as a pair from one source: env (unless --profile),
     * then the credentials file, then the config file. */
    const char *ak = env("AWS_ACCESS_KEY_ID"), *sk = env("AWS_SECRET_ACCESS_KEY");
    if (in->access_key != NULL && in->access_key[0] && in->secret_key != NULL &&
        in->secret_key[0]) {
        out->access_key = xstrdup(in->access_key);
        out->secret_key = xstrdup(in->secret_key);
        out->session_token = first_of(in->session_token, NULL, NULL, NULL);
    } else if (!is_profile_explicit && ak != NULL && sk != NULL) {
        out->access_key = xstrdup(ak);
        out->secret_key = xstrdup(sk);
        out->session_token =
            first_of(env("AWS_SESSION_TOKEN"), env("AWS_SECURITY_TOKEN"), NULL, NULL);
    } else if (creds->access_key[0] && creds->secret_key[0]) {
        out->access_key = xstrdup(creds->access_key);
        out->secret_key = xstrdup(creds->secret_key);
        out->session_token = first_of(creds->session_token, NULL, NULL, NULL);
    } else if (conf->access_key[0] && conf->secret_key[0]) {
        out->access_key = xstrdup(conf->access_key);
        out->secret_key = xstrdup(conf->secret_key);
        out->session_token = first_of(conf->session_token, NULL, NULL, NULL);
    } else {
        client__err(err, SHARD_ERR_CONFIG, 0, "NoCredentials",
                    "unable to locate credentials (set AWS_ACCESS_KEY_ID and "
                    "AWS_SECRET_ACCESS_KEY, or configure profile '%s' in %s)",
                    out->profile, creds_path ? creds_path : "~/.aws/credentials");
        goto fail;
    }

    out->region = first_of(in->region, env("AWS_REGION"), env("AWS_DEFAULT_REGION"),
                           conf->region[0] ? conf->region : "us-east-1");
    out->endpoint_url =
        first_of(in->endpoint_url, env("AWS_ENDPOINT_URL_S3"), env("AWS_ENDPOINT_URL"),
                 conf->s3_endpoint_url[0] ? conf->s3_endpoint_url : conf->endpoint_url);
    if (out->endpoint_url == NULL) {
        struct buf b;
        buf_init(&b);
        buf_printf(&b, "https://s3.%s.amazonaws.com", out->region);
        out->endpoint_url = b.ptr;
    }
    /* As aws-cli: $AWS_CA_BUNDLE, then the profile's ca_bundle. */
    out->ca_bundle =
        first_of(env("AWS_CA_BUNDLE"), conf->ca_bundle[0] ? conf->ca_bundle : NULL, NULL, NULL);
    rc = 0;
fail:
    if (rc != 0)
        client__config_cleanup(out);
    memset(creds, 0, sizeof(*creds));
    memset(conf, 0, sizeof(*conf));
    free(creds);
    free(conf);
    free(creds_path);
    free(conf_path);
    free(conf_section);
    return rc;
}
