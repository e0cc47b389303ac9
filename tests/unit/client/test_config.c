/*
 * test_config.c: the aws-cli shared-file parser and the resolution order of
 * endpoint, region and credentials (flags, environment, files, profiles),
 * with the environment and a temp HOME set up per case.
 */
#include "config.h"

#include "client/shard_int.h"
#include "tests/lib/test.h"
#include "tests/lib/tmpdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

struct seen {
    char text[4096];
};

static int
record(void *ctx, const char *section, const char *sub, const char *key, const char *value)
{
    struct seen *s = ctx;
    size_t n = strlen(s->text);
    snprintf(s->text + n, sizeof(s->text) - n, "[%s|%s] %s=%s\n", section, sub, key, value);
    return 0;
}

static void
test_ini(void)
{
    const char *text = "top = 1\n"
                       "# comment\n"
                       "; comment\n"
                       "[default]\r\n"
                       "aws_access_key_id = AK \n"
                       "  region=eu-west-1\n"
                       "[profile  x ]\n"
                       "s3 =\n"
                       "  endpoint_url = http://h:1\n"
                       "  addressing_style = path\n"
                       "endpoint_url=http://g\n"
                       "garbage line\n"
                       "[broken\n"
                       "k = v = w\n";
    struct seen s = {""};
    ASSERT_EQ(client__ini_parse(text, strlen(text), record, &s), 0);
    ASSERT_STR_EQ(s.text, "[|] top=1\n"
                          "[default|] aws_access_key_id=AK\n"
                          "[default|] region=eu-west-1\n"
                          "[profile  x|s3] endpoint_url=http://h:1\n"
                          "[profile  x|s3] addressing_style=path\n"
                          "[profile  x|] endpoint_url=http://g\n"
                          "[profile  x|] k=v = w\n");
    /* Truncated input: nothing past 'len' is read. */
    struct seen t = {""};
    ASSERT_EQ(client__ini_parse("[a]\nk = value", 9, record, &t), 0);
    ASSERT_STR_EQ(t.text, "[a|] k=v\n");
}

static char *home;

static void
write_file(const char *name, const char *text)
{
    char path[700];
    snprintf(path, sizeof(path), "%s/.aws/%s", home, name);
    FILE *f = fopen(path, "w");
    ASSERT(f != NULL);
    fputs(text, f);
    fclose(f);
}

static void
clear_env(void)
{
    const char *vars[] = {
        "AWS_ACCESS_KEY_ID",           "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",          "AWS_PROFILE",           "AWS_REGION",
        "AWS_DEFAULT_REGION",          "AWS_ENDPOINT_URL",      "AWS_ENDPOINT_URL_S3",
        "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",       "AWS_CA_BUNDLE"};
    for (size_t i = 0; i < ARRAY_LEN(vars); i++)
        unsetenv(vars[i]);
    setenv("HOME", home, 1);
}

static void
test_resolve(void)
{
    struct client_config cfg;
    struct shard_error err;
    char path[700];

    home = test_tmpdir_create("client-config");
    ASSERT(home != NULL);
    snprintf(path, sizeof(path), "%s/.aws", home);
    ASSERT(mkdir(path, 0700) == 0);
    clear_env();

    /* Nothing anywhere: missing credentials. */
    ASSERT_EQ(client__config_resolve(NULL, &cfg, &err), SHARD_ERR_CONFIG);
    ASSERT_STR_EQ(err.code, "NoCredentials");

    /* Environment only; defaults for region and endpoint. */
    setenv("AWS_ACCESS_KEY_ID", "envak", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "envsk", 1);
    setenv("AWS_SESSION_TOKEN", "envtok", 1);
    ASSERT_EQ(client__config_resolve(NULL, &cfg, &err), 0);
    ASSERT_STR_EQ(cfg.access_key, "envak");
    ASSERT_STR_EQ(cfg.secret_key, "envsk");
    ASSERT_STR_EQ(cfg.session_token, "envtok");
    ASSERT_STR_EQ(cfg.region, "us-east-1");
    ASSERT_STR_EQ(cfg.endpoint_url, "https://s3.us-east-1.amazonaws.com");
    ASSERT(cfg.ca_bundle == NULL);
    client__config_cleanup(&cfg);

    /* Files: env keys win over [default]; region/endpoint from config. */
    write_file("credentials", "[default]\naws_access_key_id = fileak\n"
                              "aws_secret_access_key = filesk\n"
                              "[work]\naws_access_key_id=workak\naws_secret_access_key=worksk\n");
    write_file("config", "[default]\nregion = eu-west-3\nendpoint_url = http://def:1\n"
                         "ca_bundle = /etc/def-ca.pem\n"
                         "[profile work]\nregion = ap-south-1\ns3 =\n"
                         "  endpoint_url = http://work-s3:2\n"
                         "[profile cfgonly]\naws_access_key_id = cfgak\n"
                         "aws_secret_access_key = cfgsk\n");
    ASSERT_EQ(client__config_resolve(NULL, &cfg, &err), 0);
    ASSERT_STR_EQ(cfg.access_key, "envak");
    ASSERT_STR_EQ(cfg.region, "eu-west-3");
    ASSERT_STR_EQ(cfg.endpoint_url, "http://def:1");
    ASSERT_STR_EQ(cfg.ca_bundle, "/etc/def-ca.pem");
    client__config_cleanup(&cfg);
    /* $AWS_CA_BUNDLE wins over the profile's ca_bundle. */
    setenv("AWS_CA_BUNDLE", "/env/ca.pem", 1);
    ASSERT_EQ(client__config_resolve(NULL, &cfg, &err), 0);
    ASSERT_STR_EQ(cfg.ca_bundle, "/env/ca.pem");
    client__config_cleanup(&cfg);
    unsetenv("AWS_CA_BUNDLE");

    /* AWS_PROFILE does not override env keys; an explicit --profile does. */
    setenv("AWS_PROFILE", "work", 1);
    ASSERT_EQ(client__config_resolve(NULL, &cfg, &err), 0);
    ASSERT_STR_EQ(cfg.access_key, "envak");
    ASSERT_STR_EQ(cfg.region, "ap-south-1");
    ASSERT_STR_EQ(cfg.endpoint_url, "http://work-s3:2");
    client__config_cleanup(&cfg);
    struct shard_config_in in = {.profile = "work"};
    ASSERT_EQ(client__config_resolve(&in, &cfg, &err), 0);
    ASSERT_STR_EQ(cfg.access_key, "workak");
    ASSERT_STR_EQ(cfg.secret_key, "worksk");
    ASSERT(cfg.session_token == NULL);
    client__config_cleanup(&cfg);

    /* Explicit credentials win over the environment (its session token too)
     * and the files; half a pair is ignored. */
    struct shard_config_in keys_in = {.access_key = "inak", .secret_key = "insk"};
    ASSERT_EQ(client__config_resolve(&keys_in, &cfg, &err), 0);
    ASSERT_STR_EQ(cfg.access_key, "inak");
    ASSERT_STR_EQ(cfg.secret_key, "insk");
    ASSERT(cfg.session_token == NULL);
    client__config_cleanup(&cfg);
    keys_in.session_token = "intok";
    ASSERT_EQ(client__config_resolve(&keys_in, &cfg, &err), 0);
    ASSERT_STR_EQ(cfg.session_token, "intok");
    client__config_cleanup(&cfg);
    keys_in.secret_key = NULL;
    ASSERT_EQ(client__config_resolve(&keys_in, &cfg, &err), 0);
    ASSERT_STR_EQ(cfg.access_key, "envak");
    client__config_cleanup(&cfg);

    /* Without env keys: the credentials file, then the config file. */
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_PROFILE");
    ASSERT_EQ(client__config_resolve(NULL, &cfg, &err), 0);
    ASSERT_STR_EQ(cfg.access_key, "fileak");
    client__config_cleanup(&cfg);
    in.profile = "cfgonly";
    ASSERT_EQ(client__config_resolve(&in, &cfg, &err), 0);
    ASSERT_STR_EQ(cfg.access_key, "cfgak");
    ASSERT_STR_EQ(cfg.region, "us-east-1");
    client__config_cleanup(&cfg);
    in.profile = "nosuch";
    ASSERT_EQ(client__config_resolve(&in, &cfg, &err), SHARD_ERR_CONFIG);
    ASSERT_STR_EQ(err.code, "ProfileNotFound");

    /* Region and endpoint: flag > env > file. */
    setenv("AWS_DEFAULT_REGION", "r-default", 1);
    ASSERT_EQ(client__config_resolve(NULL, &cfg, &err), 0);
    ASSERT_STR_EQ(cfg.region, "r-default");
    client__config_cleanup(&cfg);
    setenv("AWS_REGION", "r-region", 1);
    setenv("AWS_ENDPOINT_URL", "http://env:3", 1);
    ASSERT_EQ(client__config_resolve(NULL, &cfg, &err), 0);
    ASSERT_STR_EQ(cfg.region, "r-region");
    ASSERT_STR_EQ(cfg.endpoint_url, "http://env:3");
    client__config_cleanup(&cfg);
    setenv("AWS_ENDPOINT_URL_S3", "http://env-s3:4", 1);
    ASSERT_EQ(client__config_resolve(NULL, &cfg, &err), 0);
    ASSERT_STR_EQ(cfg.endpoint_url, "http://env-s3:4");
    client__config_cleanup(&cfg);
    in = (struct shard_config_in){.endpoint_url = "http://flag:5", .region = "r-flag"};
    ASSERT_EQ(client__config_resolve(&in, &cfg, &err), 0);
    ASSERT_STR_EQ(cfg.endpoint_url, "http://flag:5");
    ASSERT_STR_EQ(cfg.region, "r-flag");
    client__config_cleanup(&cfg);

    /* File locations from the environment. */
    clear_env();
    snprintf(path, sizeof(path), "%s/other-creds", home);
    FILE *f = fopen(path, "w");
    ASSERT(f != NULL);
    fputs("[default]\naws_access_key_id=otherak\naws_secret_access_key=othersk\n"
          "aws_session_token=othertok\n",
          f);
    fclose(f);
    setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
    setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
    ASSERT_EQ(client__config_resolve(NULL, &cfg, &err), 0);
    ASSERT_STR_EQ(cfg.access_key, "otherak");
    ASSERT_STR_EQ(cfg.session_token, "othertok");
    ASSERT_STR_EQ(cfg.region, "us-east-1");
    client__config_cleanup(&cfg);
    test_tmpdir_remove(home);
}

int
main(void)
{
    test_ini();
    test_resolve();
    return 0;
}
