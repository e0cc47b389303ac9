/*
 * op_tier.c: x-amz-storage-class on PutObject, CopyObject and
 * CreateMultipartUpload. An object asked for in a tier class is written
 * to the hot volumes like any other, committed, then moved with the same
 * crash-safe move the lifecycle worker uses (tier_move), before the
 * answer; a failed move leaves it readable in STANDARD.
 */
#include "config.h"

#include "common/common.h"
#include "server/errors.h"
#include "server/req.h"
#include "server/server.h"
#include "server/tier.h"

#include <errno.h>

bool
s3_storage_class_from_request(struct s3_req *r, uint32_t *flags)
{
    struct slice v = s3_req_header(r, "x-amz-storage-class");
    *flags = 0;
    if (!v.ptr)
        return true;
    if (tier_class_parse(r->srv->tiers, v, flags) < 0) {
        s3_respond_error(r, S3_ERR_INVALID_STORAGE_CLASS, NULL);
        return false;
    }
    return true;
}

int
s3_storage_class_apply(struct s3_req *r, uint64_t bucket_id, const uint8_t etag[16], uint32_t flags)
{
    uint64_t moved;
    int rc = tier_move(r->srv, bucket_id, r->key, etag, flags, &moved);
    if (rc < 0)
        log_warn("request %s: the object stays where it is (storage class move: %d)", r->request_id,
                 rc);
    return rc < 0 ? rc : 0;
}
