/*
 * harness.h: run a real shardstore for integration tests written in C.
 *
 * test_server_start() spawns $SHARDSTORE_BIN with `--listen 127.0.0.1:0
 * --data DIR` on a fresh temp dir, reads the port from the one line the
 * server prints on stdout ("shardstore: listening on http://127.0.0.1:PORT"),
 * and waits until GET /_/health answers 200. test_server_stop() sends SIGTERM
 * and checks the exit status is 0 and the server's stderr holds no sanitizer
 * report. Nothing here uses libcurl, so unit tests can link this library.
 */
#ifndef SHARD_TEST_HARNESS_H
#define SHARD_TEST_HARNESS_H

#include <sys/types.h>

#define TEST_ACCESS_KEY "testkey"
#define TEST_SECRET_KEY "testsecret"
#define TEST_REGION "us-east-1"

struct test_server {
    pid_t pid;         /* 0 when not running */
    int port;          /* valid while running */
    int stdout_fd;     /* read end of the server's stdout, -1 if closed */
    int generation;    /* how many times it was started */
    char *dir;         /* temp dir holding data/, stderr logs and config */
    char *data_dir;    /* dir/data */
    char *config_path; /* dir/shardstore.conf or NULL */
    char stderr_path[4096];
    char endpoint[64]; /* "http://127.0.0.1:PORT" */
};

/* Prepares 'srv' with a new temp dir named after 'tag'; 'config_text' (may
 * be NULL) is written to a config file passed with --config. Does not start
 * the server. Exits 77 (skip) when SHARDSTORE_BIN is unset or not
 * executable. Returns 0. */
int test_server_init(struct test_server *srv, const char *tag, const char *config_text);

/* Starts the server on srv's data dir (again, after a stop or kill) and waits
 * up to 20 s for the port line and /_/health. Returns 0, or -1 after
 * printing why and killing the process. */
int test_server_start(struct test_server *srv);

/* SIGTERM, then waits up to 30 s. Returns 0 when the server exited with
 * status 0 and its stderr has no sanitizer report; otherwise prints the
 * problem and the tail of stderr and returns -1. No-op (0) if not running. */
int test_server_stop(struct test_server *srv);

/* kill -9 and reap the server. Returns -1 if its stderr so far holds a
 * sanitizer report, else 0. */
int test_server_kill(struct test_server *srv);

/* Kills the server if it is still running and removes the temp dir. */
void test_server_cleanup(struct test_server *srv);

/* GET 'path' (e.g. "/_/health") without auth on a fresh connection; returns
 * the HTTP status or -1 on a connection error. Times out after 5 s. */
int test_server_get_status(const struct test_server *srv, const char *path);

#endif
