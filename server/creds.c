/*
 * creds.c: the root credentials and the seal key. Root's come from
 * SHARDSTORE_ACCESS_KEY and SHARDSTORE_SECRET_KEY when set; otherwise from
 * DATA/credentials, which is generated (random, mode 0600) on first start
 * and printed once on stdout. The seal key (AES-256, for users' secrets in
 * the index) is DATA/secret.key, generated 0600 on first start, or the file
 * named by secret_key_file. Neither secret ever goes to the log. Both
 * generated files appear whole or not at all, and durably (temp file,
 * fsync, link, directory fsync) before anything sealed with them exists.
 */
#include "server/creds.h"

#include "auth/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/*
 * Creates 'path' holding 'len' bytes of 'data' (mode 0600), durably and at
 * once: written to 'path'.tmp, fsynced, linked to 'path' (which must not
 * exist: -EEXIST), then the directory is fsynced, so a crash leaves either
 * no file or the whole one. Returns 0 or -errno.
 */
static int
file_create_durable(const char *path, const void *data, size_t len)
{
    int rc = 0;
    char tmp[4300];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    errno = 0;
    if (write(fd, data, len) != (ssize_t)len || fsync(fd) != 0)
        rc = errno ? -errno : -EIO; /* a short write sets no errno */
    close(fd);
    if (rc == 0 && link(tmp, path) != 0)
        rc = -errno;
    unlink(tmp);
    if (rc == 0) {
        rc = dir_sync_parent(path);
        if (rc < 0)
            unlink(path);
    }
    return rc;
}

static int
read_file(const char *path, char *ak, size_t akcap, char *sk, size_t skcap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    int rc = -EINVAL;
    char line1[256], line2[256];
    if (fgets(line1, sizeof(line1), f) && fgets(line2, sizeof(line2), f)) {
        line1[strcspn(line1, "\r\n")] = '\0';
        line2[strcspn(line2, "\r\n")] = '\0';
        if (*line1 && *line2 && strlen(line1) < akcap && strlen(line2) < skcap) {
            memcpy(ak, line1, strlen(line1) + 1);
            memcpy(sk, line2, strlen(line2) + 1);
            rc = 0;
        }
    }
    fclose(f);
    return rc;
}

int
creds_load(const char *data_dir, char *ak, size_t akcap, char *sk, size_t skcap)
{
    const char *eak = getenv("SHARDSTORE_ACCESS_KEY");
    const char *esk = getenv("SHARDSTORE_SECRET_KEY");
    if (eak && esk && *eak && *esk) {
        if (strlen(eak) >= akcap || strlen(esk) >= skcap)
            return -EINVAL;
        memcpy(ak, eak, strlen(eak) + 1);
        memcpy(sk, esk, strlen(esk) + 1);
        return 0;
    }
    char path[4200];
    snprintf(path, sizeof(path), "%s/credentials", data_dir);
    int rc = read_file(path, ak, akcap, sk, skcap);
    if (rc != -ENOENT)
        return rc;
    if (akcap < AUTH_ACCESS_KEY_LEN + 1 || skcap < AUTH_SECRET_LEN + 1)
        return -EINVAL;
    if (auth_credentials_generate(ak, sk) != 0) {
        log_error("no randomness for the root credentials");
        return -EIO;
    }
    char content[300];
    int n = snprintf(content, sizeof(content), "%s\n%s\n", ak, sk);
    rc = file_create_durable(path, content, (size_t)n);
    memset(content, 0, sizeof(content));
    if (rc < 0)
        return rc;
    printf("shardstore: generated root credentials (stored in %s):\n"
           "  access key: %s\n  secret key: %s\n",
           path, ak, sk);
    fflush(stdout);
    return 0;
}

int
creds_load_seal_key(const char *data_dir, const char *path, uint8_t out[32])
{
    char def[4200];
    bool is_default = !path || !*path;
    if (is_default) {
        snprintf(def, sizeof(def), "%s/secret.key", data_dir);
        path = def;
    }
    int rc;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && is_default) {
        uint8_t key[32];
        if (auth_random_bytes(key, sizeof(key)) != 0)
            return -EIO;
        rc = file_create_durable(path, key, sizeof(key));
        if (rc < 0) {
            memset(key, 0, sizeof(key));
            log_error("cannot create %s: %s", path, strerror(-rc));
            return rc;
        }
        memcpy(out, key, sizeof(key));
        memset(key, 0, sizeof(key));
        log_info("created the secret key %s (keep it with the data: it unseals users' keys)", path);
        return 0;
    }
    if (fd < 0) {
        rc = -errno;
        log_error("cannot open the secret key file %s: %s", path, strerror(-rc));
        return rc;
    }
    char content[80];
    ssize_t n = read(fd, content, sizeof(content));
    close(fd);
    rc = -EINVAL;
    if (n == 32) {
        memcpy(out, content, 32);
        rc = 0;
    } else if (n >= 64 && n <= 66 && hex_decode(content, 64, out) == 0 &&
               (n == 64 || content[64] == '\n' || content[64] == '\r')) {
        rc = 0;
    }
    memset(content, 0, sizeof(content));
    if (rc != 0)
        log_error("secret key file %s: want 32 bytes or 64 hex digits", path);
    return rc;
}
