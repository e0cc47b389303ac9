"""test_auth_hardening.py: signatures that must not be enough (issue 16).

- SigV2 and presigned URLs (either version) are refused on the admin
  endpoints: the replay of a root-signed SigV2 URL for
  POST /_/admin/users?name=alice as ?name=mallory&admin=true creates
  nobody; header-signed SigV4 still works there and /_/health stays open.
- A SigV2 URL whose Expires is more than 7 days ahead is refused, and so is
  one that carries a query parameter SigV2 does not sign.
- SigV4 without host in SignedHeaders is refused (header and presigned).
- Anonymous requests may not use response-* header overrides.
"""
import base64
import datetime
import hashlib
import hmac
import json
import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402

BUCKET = "hardening"


def sigv2_query(srv, method, path, signed_query="", expires=None, content_type=""):
    """The query of a SigV2 presigned URL for 'path' (path-style), signed
    with the root key; 'signed_query' is put in front unchanged (SigV2
    signs only its sub-resources)."""
    expires = int(time.time()) + 300 if expires is None else expires
    resource = path
    subs = sorted(p for p in signed_query.split("&") if p and p.split("=")[0] in ("acl", "versionId", "uploadId", "partNumber", "uploads", "delete") or p.startswith("response-"))
    if subs:
        resource += "?" + "&".join(urllib.parse.unquote(s) for s in subs)
    sts = "%s\n\n%s\n%d\n%s" % (method, content_type, expires, resource)
    sig = base64.b64encode(hmac.new(srv.secret_key.encode(), sts.encode(), hashlib.sha1).digest()).decode()
    q = "AWSAccessKeyId=%s&Signature=%s&Expires=%d" % (srv.access_key, urllib.parse.quote(sig, safe=""), expires)
    return (signed_query + "&" + q) if signed_query else q


def sigv4_headers(srv, method, path, query, signed, extra=None):
    """Header-signed SigV4 by hand, signing exactly the header names in
    'signed' (so that host can be left out)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    hdrs = {"host": "127.0.0.1:%d" % srv.port, "x-amz-date": amz_date, "x-amz-content-sha256": hashlib.sha256(b"").hexdigest()}
    hdrs.update(extra or {})
    names = sorted(signed)
    canon_q = "&".join(sorted(query.split("&"))) if query else ""
    cr = "\n".join([method, path, canon_q, "".join("%s:%s\n" % (n, hdrs[n]) for n in names), ";".join(names), hdrs["x-amz-content-sha256"]])
    scope = "%s/%s/s3/aws4_request" % (amz_date[:8], h.REGION)
    sts = "AWS4-HMAC-SHA256\n%s\n%s\n%s" % (amz_date, scope, hashlib.sha256(cr.encode()).hexdigest())
    k = ("AWS4" + srv.secret_key).encode()
    for part in (amz_date[:8], h.REGION, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    hdrs["Authorization"] = "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (srv.access_key, scope, ";".join(names), sig)
    return hdrs


def user_names(srv):
    r = srv.request("GET", "/_/admin/users")
    h.eq(r.status, 200, "list users (%r)" % r.body[:200])
    return sorted(u["name"] for u in json.loads(r.body)["users"])


def test_admin_refuses_sigv2_and_presigned(srv):
    before = user_names(srv)
    # The URL as signed, and as replayed with other (unsigned) parameters.
    for q in (sigv2_query(srv, "POST", "/_/admin/users", "name=alice"),
              sigv2_query(srv, "POST", "/_/admin/users", "name=alice").replace("name=alice", "name=mallory&admin=true"),
              sigv2_query(srv, "POST", "/_/admin/keys", "user=mallory")):
        r = srv.request("POST", "/_/admin/users", query=q, sign=False)
        h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "SigV2 admin URL %s" % q)
    # SigV4 presigned: signed correctly, still refused on /_/.
    v4q = urllib.parse.urlsplit(srv.client(signature_version="s3v4").generate_presigned_url("list_buckets", ExpiresIn=300)).query
    h.check("X-Amz-Signature" in v4q, "not a SigV4 URL: " + v4q)
    r = srv.request("GET", "/_/metrics", query=v4q, sign=False)
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "SigV4 presigned URL on /_/metrics")
    h.eq(user_names(srv), before, "users after the replays")
    # Header-signed SigV4 still administers; health needs nothing.
    r = srv.request("POST", "/_/admin/users", query="name=hardening-ok")
    h.eq(r.status, 200, "header-signed admin POST (%r)" % r.body[:200])
    h.check("hardening-ok" in user_names(srv), "header-signed admin POST created the user")
    h.eq(srv.request("GET", "/_/health", sign=False).status, 200, "health")


def test_sigv2_expiry_capped(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key="k", Body=b"data")
    path = "/%s/k" % BUCKET
    r = srv.request("GET", path, query=sigv2_query(srv, "GET", path), sign=False)
    h.eq(r.status, 200, "SigV2 GET valid for 5 minutes (%r)" % r.body[:200])
    h.eq(r.body, b"data", "SigV2 GET body")
    week = int(time.time()) + 7 * 86400 - 60
    r = srv.request("GET", path, query=sigv2_query(srv, "GET", path, expires=week), sign=False)
    h.eq(r.status, 200, "SigV2 GET valid for just under 7 days")
    for when in (int(time.time()) + 7 * 86400 + 3600, int(time.time()) + 100 * 365 * 86400):
        r = srv.request("GET", path, query=sigv2_query(srv, "GET", path, expires=when), sign=False)
        h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "SigV2 Expires %d s ahead" % (when - time.time()))
    r = srv.request("GET", path, query=sigv2_query(srv, "GET", path, expires=int(time.time()) - 10), sign=False)
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "expired SigV2 URL")
    h.check(b"Request has expired" in r.body, "expired SigV2 message: %r" % r.body)


def test_sigv2_unsigned_params_refused(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket=BUCKET + "-p")
    s3.put_object(Bucket=BUCKET + "-p", Key="k", Body=b"data")
    path = "/%s-p/k" % BUCKET
    q = sigv2_query(srv, "GET", path, "response-content-type=text%2Fx-ok")
    r = srv.request("GET", path, query=q, sign=False)
    h.eq(r.status, 200, "SigV2 GET with a signed override (%r)" % r.body[:200])
    h.eq(r.header("Content-Type"), "text/x-ok", "signed override applied")
    for extra in ("x-id=GetObject", "partNumber=1&partNumber=2", "%72esponse-content-type=text%2Fhtml"):
        r = srv.request("GET", path, query=q + "&" + extra, sign=False)
        h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "SigV2 GET with unsigned %s" % extra)
    # A listing's prefix is not signed by SigV2: refused, not widened.
    bpath = "/%s-p" % BUCKET
    r = srv.request("GET", bpath, query=sigv2_query(srv, "GET", bpath, "prefix=mine%2F"), sign=False)
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "SigV2 listing with a prefix")


def test_host_must_be_signed(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket=BUCKET + "-h")
    s3.put_object(Bucket=BUCKET + "-h", Key="k", Body=b"data")
    path = "/%s-h/k" % BUCKET
    hdrs = sigv4_headers(srv, "GET", path, "", ["host", "x-amz-content-sha256", "x-amz-date"])
    r = srv.request("GET", path, headers=hdrs, sign=False)
    h.eq(r.status, 200, "hand-signed GET with host (%r)" % r.body[:300])
    hdrs = sigv4_headers(srv, "GET", path, "", ["x-amz-content-sha256", "x-amz-date"])
    r = srv.request("GET", path, headers=hdrs, sign=False)
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "SigV4 without host in SignedHeaders")


def test_anonymous_response_overrides_refused(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket=BUCKET + "-pub", ACL="public-read", ObjectOwnership="ObjectWriter")
    s3.put_object(Bucket=BUCKET + "-pub", Key="page", Body=b"<script>alert(1)</script>", ContentType="text/plain")
    path = "/%s-pub/page" % BUCKET
    r = srv.request("GET", path, sign=False)
    h.eq(r.status, 200, "anonymous GET of a public object")
    h.eq(r.header("Content-Type"), "text/plain", "stored content type")
    for q in ("response-content-type=text%2Fhtml", "response-content-disposition=inline",
              "response-cache-control=no-cache", "response-expires=0",
              "response-content-language=en", "response-content-encoding=gzip"):
        r = srv.request("GET", path, query=q, sign=False)
        h.expect_s3_error(r.status, r.body, 400, "InvalidRequest", "anonymous GET ?%s" % q)
        h.check(b"anonymous" in r.body, "message names the reason: %r" % r.body)
    got = s3.get_object(Bucket=BUCKET + "-pub", Key="page", ResponseContentType="text/x-signed")
    h.eq(got["ContentType"], "text/x-signed", "signed override still works")


if __name__ == "__main__":
    h.main([
        test_admin_refuses_sigv2_and_presigned,
        test_sigv2_expiry_capped,
        test_sigv2_unsigned_params_refused,
        test_host_must_be_signed,
        test_anonymous_response_overrides_refused,
    ])
