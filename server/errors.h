/*
 * errors.h: the S3 errors the server answers with. Every error a handler
 * sends is one of s3_errors.def, which gives its HTTP status, S3 code and
 * default message; errno values from index/ and storage/ are mapped here
 * and nowhere else.
 */
#ifndef SHARD_SERVER_ERRORS_H
#define SHARD_SERVER_ERRORS_H

enum s3_error {
    S3_OK = 0,
#define S3_ERROR(name, status, code, msg) S3_ERR_##name,
#include "server/s3_errors.def"
#undef S3_ERROR
    S3_ERR_COUNT
};

int s3_error_status(enum s3_error e);
const char *s3_error_code(enum s3_error e);
const char *s3_error_message(enum s3_error e);
/* Maps a negative errno from index/ or storage/ to an S3 error. */
enum s3_error s3_error_from_errno(int err);

struct s3_req;
struct MHD_Response;
/* Builds the S3 error response for 'e' (the table's status and code,
 * 'message' or the default). Caller queues it with s3_respond and
 * s3_error_status(e), and may add headers first. */
struct MHD_Response *s3_error_response(struct s3_req *r, enum s3_error e, const char *message);

#endif
