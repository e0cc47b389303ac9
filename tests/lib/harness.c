/*
 * harness.c: spawn shardstore on a loopback port for C integration tests.
 *
 * The server runs with posix_spawn(); its stdout is a pipe from which the
 * port line is read (poll() with a deadline, so a silent server cannot hang
 * the test), its stderr goes to a file in the temp dir that teardown scans
 * for sanitizer reports. Only PIDs spawned here are ever signalled.
 */
#define _GNU_SOURCE
#include "tests/lib/harness.h"
#include "tests/lib/tmpdir.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define START_TIMEOUT_MS 20000
#define STOP_TIMEOUT_MS 30000
#define PORT_PREFIX "shardstore: listening on http://127.0.0.1:"

static const char *const sanitizer_patterns[] = {
    "ERROR: AddressSanitizer",  "LeakSanitizer", "runtime error:", "ERROR: ThreadSanitizer",
    "WARNING: ThreadSanitizer",
};

static long long
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static char *
path_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    if (!p)
        abort();
    snprintf(p, n, "%s/%s", a, b);
    return p;
}

/* Prints the last 'max' bytes of the server's current stderr log. */
static void
print_stderr_tail(const struct test_server *srv, long max)
{
    FILE *f = fopen(srv->stderr_path, "rb");
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size > max ? size - max : 0, SEEK_SET);
    fprintf(stderr, "--- server stderr (tail) ---\n");
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        fwrite(buf, 1, n, stderr);
    fprintf(stderr, "\n--- end of server stderr ---\n");
    fclose(f);
}

/* Returns 1 and prints the report if the stderr log holds a sanitizer
 * report, else 0. */
static int
stderr_has_sanitizer_report(const struct test_server *srv)
{
    FILE *f = fopen(srv->stderr_path, "rb");
    if (!f)
        return 0;
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap + 1);
    if (!text)
        abort();
    size_t n;
    while ((n = fread(text + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            cap *= 2;
            text = realloc(text, cap + 1);
            if (!text)
                abort();
        }
    }
    fclose(f);
    text[len] = '\0';
    int found = 0;
    for (size_t i = 0; i < sizeof(sanitizer_patterns) / sizeof(sanitizer_patterns[0]); i++) {
        /* The log is text but may hold NULs; search line by line would be
         * overkill, memmem covers it. */
        const char *hit = memmem(text, len, sanitizer_patterns[i], strlen(sanitizer_patterns[i]));
        if (hit) {
            size_t off = (size_t)(hit - text);
            size_t from = off > 200 ? off - 200 : 0;
            size_t to = off + 3000 < len ? off + 3000 : len;
            fprintf(stderr, "server stderr contains \"%s\":\n%.*s\n", sanitizer_patterns[i],
                    (int)(to - from), text + from);
            found = 1;
            break;
        }
    }
    free(text);
    return found;
}

int
test_server_init(struct test_server *srv, const char *tag, const char *config_text)
{
    memset(srv, 0, sizeof(*srv));
    srv->stdout_fd = -1;
    const char *bin = getenv("SHARDSTORE_BIN");
    if (!bin || !*bin || access(bin, X_OK) != 0) {
        fprintf(stderr, "skip: SHARDSTORE_BIN is not set or not executable (%s)\n",
                bin ? bin : "unset");
        exit(77);
    }
    srv->dir = test_tmpdir_create(tag);
    srv->data_dir = path_join(srv->dir, "data");
    if (mkdir(srv->data_dir, 0700) != 0) {
        perror("mkdir data dir");
        abort();
    }
    if (config_text) {
        srv->config_path = path_join(srv->dir, "shardstore.conf");
        FILE *f = fopen(srv->config_path, "w");
        if (!f || fputs(config_text, f) == EOF || fclose(f) != 0) {
            perror("write config");
            abort();
        }
    }
    return 0;
}

/* Reads one line from 'fd' into 'buf' before the deadline. Returns its
 * length, or -1 on EOF/timeout. */
static int
read_line(int fd, char *buf, size_t cap, long long deadline_ms)
{
    size_t len = 0;
    while (len + 1 < cap) {
        long long left = deadline_ms - now_ms();
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        ssize_t n = read(fd, buf + len, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        if (buf[len] == '\n') {
            buf[len] = '\0';
            return (int)len;
        }
        len++;
    }
    buf[len] = '\0';
    return (int)len;
}

static void
reap(struct test_server *srv)
{
    if (srv->stdout_fd >= 0)
        close(srv->stdout_fd);
    srv->stdout_fd = -1;
    srv->pid = 0;
    srv->port = 0;
}

int
test_server_start(struct test_server *srv)
{
    const char *bin = getenv("SHARDSTORE_BIN");
    char *argv[8];
    int argc = 0;
    argv[argc++] = (char *)bin;
    argv[argc++] = "--listen";
    argv[argc++] = "127.0.0.1:0";
    argv[argc++] = "--data";
    argv[argc++] = srv->data_dir;
    if (srv->config_path) {
        argv[argc++] = "--config";
        argv[argc++] = srv->config_path;
    }
    argv[argc] = NULL;

    srv->generation++;
    snprintf(srv->stderr_path, sizeof(srv->stderr_path), "%s/stderr.%d.log", srv->dir,
             srv->generation);
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        perror("pipe2");
        return -1;
    }
    setenv("SHARDSTORE_ACCESS_KEY", TEST_ACCESS_KEY, 1);
    setenv("SHARDSTORE_SECRET_KEY", TEST_SECRET_KEY, 1);

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, srv->stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int err = posix_spawn(&pid, bin, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pipefd[1]);
    if (err != 0) {
        fprintf(stderr, "posix_spawn %s: %s\n", bin, strerror(err));
        close(pipefd[0]);
        return -1;
    }
    srv->pid = pid;
    srv->stdout_fd = pipefd[0];

    long long deadline = now_ms() + START_TIMEOUT_MS;
    char line[512];
    const char *why = NULL;
    int len = read_line(srv->stdout_fd, line, sizeof(line), deadline);
    if (len < 0) {
        why = "no port line on stdout";
        goto fail;
    }
    if (strncmp(line, PORT_PREFIX, strlen(PORT_PREFIX)) != 0) {
        fprintf(stderr, "first stdout line: \"%s\"\n", line);
        why = "unexpected first stdout line";
        goto fail;
    }
    char *end;
    long port = strtol(line + strlen(PORT_PREFIX), &end, 10);
    if (port <= 0 || port > 65535 || (*end && *end != '\r')) {
        fprintf(stderr, "first stdout line: \"%s\"\n", line);
        why = "bad port in the stdout line";
        goto fail;
    }
    srv->port = (int)port;
    snprintf(srv->endpoint, sizeof(srv->endpoint), "http://127.0.0.1:%d", srv->port);
    for (;;) {
        int status;
        if (waitpid(srv->pid, &status, WNOHANG) == srv->pid) {
            srv->pid = 0;
            why = "server exited before /_/health answered";
            goto fail;
        }
        if (test_server_get_status(srv, "/_/health") == 200)
            return 0;
        if (now_ms() > deadline) {
            why = "/_/health not 200 in time";
            goto fail;
        }
        sleep_ms(50);
    }
fail:
    fprintf(stderr, "server did not start: %s\n", why);
    print_stderr_tail(srv, 4000);
    test_server_kill(srv);
    return -1;
}

/* Waits up to 'timeout_ms' for the child; returns 1 with '*status' set once
 * it exited, 0 on timeout. */
static int
wait_exit(pid_t pid, int *status, int timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            return 1;
        if (r < 0 && errno != EINTR)
            return 1;
        if (now_ms() > deadline)
            return 0;
        sleep_ms(10);
    }
}

int
test_server_stop(struct test_server *srv)
{
    if (srv->pid == 0)
        return 0;
    int rc = 0, status = 0;
    kill(srv->pid, SIGTERM);
    if (!wait_exit(srv->pid, &status, STOP_TIMEOUT_MS)) {
        fprintf(stderr, "server did not exit within %d ms of SIGTERM\n", STOP_TIMEOUT_MS);
        kill(srv->pid, SIGKILL);
        wait_exit(srv->pid, &status, 10000);
        rc = -1;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFSIGNALED(status))
            fprintf(stderr, "server died of signal %d after SIGTERM\n", WTERMSIG(status));
        else
            fprintf(stderr, "server exit status after SIGTERM is %d, expected 0\n",
                    WEXITSTATUS(status));
        rc = -1;
    }
    reap(srv);
    if (stderr_has_sanitizer_report(srv))
        rc = -1;
    if (rc != 0)
        print_stderr_tail(srv, 4000);
    return rc;
}

int
test_server_kill(struct test_server *srv)
{
    if (srv->pid != 0) {
        int status;
        kill(srv->pid, SIGKILL);
        wait_exit(srv->pid, &status, 10000);
    }
    reap(srv);
    return stderr_has_sanitizer_report(srv) ? -1 : 0;
}

void
test_server_cleanup(struct test_server *srv)
{
    if (srv->pid != 0)
        test_server_kill(srv);
    test_tmpdir_remove(srv->dir);
    srv->dir = NULL;
    free(srv->data_dir);
    srv->data_dir = NULL;
    free(srv->config_path);
    srv->config_path = NULL;
}

int
test_server_get_status(const struct test_server *srv, const char *path)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)srv->port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int status = -1;
    char req[1024];
    int n = snprintf(req, sizeof(req),
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n", path,
                     srv->port);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        goto out;
    if (n < 0 || (size_t)n >= sizeof(req) || write(fd, req, (size_t)n) != n)
        goto out;
    char resp[64];
    size_t got = 0;
    while (got < sizeof(resp) - 1) {
        ssize_t r = read(fd, resp + got, sizeof(resp) - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    resp[got] = '\0';
    int code;
    if (sscanf(resp, "HTTP/1.%*d %d", &code) == 1)
        status = code;
out:
    close(fd);
    return status;
}
