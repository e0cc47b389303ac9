/*
 * access_log.h: the access log and the audit log (access_log.c). One JSON
 * object per line, written with one write() per line to a file opened
 * O_APPEND (or to stdout), so lines from concurrent threads never
 * interleave. Off unless configured: the request path then pays one
 * branch on the configuration.
 */
#ifndef SHARD_SERVER_ACCESS_LOG_H
#define SHARD_SERVER_ACCESS_LOG_H

#include <stdbool.h>
#include <stdint.h>

struct s3_req;

/* Opens the access log 'access_path' ("" off, "-" stdout) and the audit
 * log 'audit_path' ("" = the access log, or the server log when that is
 * off too; "-" stdout). Files are created 0640 and opened O_APPEND.
 * Returns 0, or -errno (nothing is left open then). */
int access_log_open(const char *access_path, const char *audit_path);
/* Reopens both files by name (SIGHUP, after logrotate renamed them); a
 * log that cannot be reopened keeps its old file. Async-signal-unsafe:
 * call from a normal thread. */
void access_log_reopen(void);
/* Writes out the buffered lines and closes the files. Call once the
 * threads that serve requests are gone. */
void access_log_close(void);

/* Writes the access record of 'r', which ended at 'end_ns' (monotonic);
 * 'is_complete' false when the response was cut short. Call only when the
 * access log is on. */
void access_log_request(const struct s3_req *r, int64_t end_ns, bool is_complete);
/* Writes an audit record for the admin request 'r' (a change made under
 * /_/admin/ or /_/scrub), whatever its outcome. */
void access_log_audit(const struct s3_req *r);

#endif
