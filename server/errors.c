/*
 * errors.c: the table behind s3_errors.def, the one translation of
 * index/storage errnos into S3 errors, and the error response built from
 * the table (every error answer goes through s3_error_response).
 */
#include "config.h"

#include "server/errors.h"
#include "common/common.h"
#include "server/req.h"
#include "server/xml_out.h"

#include <errno.h>
#include <microhttpd.h>

struct s3_error_info {
    int status;
    const char *code;
    const char *message;
};

static const struct s3_error_info errors[S3_ERR_COUNT] = {
    [S3_OK] = {200, "OK", "OK"},
#define S3_ERROR(name, st, cd, msg) [S3_ERR_##name] = {st, cd, msg},
#include "server/s3_errors.def"
#undef S3_ERROR
};

int
s3_error_status(enum s3_error e)
{
    return errors[e].status;
}

const char *
s3_error_code(enum s3_error e)
{
    return errors[e].code;
}

const char *
s3_error_message(enum s3_error e)
{
    return errors[e].message;
}

enum s3_error
s3_error_from_errno(int err)
{
    switch (err) {
    case -ENOSPC:
        return S3_ERR_INSUFFICIENT_STORAGE;
    case -EAGAIN:
        return S3_ERR_SLOW_DOWN;
    case -EFBIG:
        return S3_ERR_ENTITY_TOO_LARGE;
    case -ENOENT:
    case -ENODATA: /* a condition named an object that is absent */
        return S3_ERR_NO_SUCH_KEY;
    case -EEXIST:
    case -ESTALE:
        return S3_ERR_PRECONDITION_FAILED;
    default:
        return S3_ERR_INTERNAL_ERROR;
    }
}

struct MHD_Response *
s3_error_response(struct s3_req *r, enum s3_error e, const char *message)
{
    struct buf b;
    buf_init(&b);
    xml_error(&b, s3_error_code(e), message ? message : s3_error_message(e), r->raw_path,
              r->request_id);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(b.len, b.ptr, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, "Content-Type", "application/xml");
    if (!r->is_responded)
        r->resp_bytes = b.len;
    return resp;
}
