"""test_post_object.py: POST Object (browser form uploads, issue 13):
boto3's generate_presigned_post (SigV4) encoded by the standard library,
SigV2 forms, policy conditions and their AWS errors, ${filename},
success_action_status/redirect, anonymous POST under a bucket policy, and,
when chromium is installed, a real browser submitting the form.
"""

import base64
import datetime
import hashlib
import hmac
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import urllib.parse
import uuid

sys.path.insert(0, os.environ.get("SHARD_SRCDIR", os.path.dirname(__file__)))
import harness as h  # noqa: E402


def encode_form(fields, file_data, filename="upload.bin", file_type="application/octet-stream",
                after=()):
    """multipart/form-data with 'fields' (list of pairs) then the file,
    then the 'after' fields (which S3 ignores)."""
    boundary = "----shardform" + uuid.uuid4().hex
    out = []
    for name, value in fields:
        out.append(("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n" % (boundary, name)).encode())
        out.append(value.encode() if isinstance(value, str) else value)
        out.append(b"\r\n")
    out.append(("--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n"
                "Content-Type: %s\r\n\r\n" % (boundary, filename, file_type)).encode())
    out.append(file_data)
    out.append(b"\r\n")
    for name, value in after:
        out.append(("--%s\r\nContent-Disposition: form-data; name=\"%s\"\r\n\r\n%s\r\n" % (boundary, name, value)).encode())
    out.append(("--%s--\r\n" % boundary).encode())
    return b"".join(out), "multipart/form-data; boundary=" + boundary


def post(srv, bucket, fields, data, **kw):
    body, ctype = encode_form(fields, data, **kw)
    return srv.request("POST", "/" + bucket, body=body, headers={"Content-Type": ctype}, sign=False)


def presigned(srv, bucket, key, conditions=None, fields=None, expires=600, version="s3v4"):
    """boto3's generate_presigned_post: SigV4 with "s3v4", else SigV2."""
    s3 = srv.client(signature_version=version)
    p = s3.generate_presigned_post(bucket, key, Fields=fields, Conditions=conditions, ExpiresIn=expires)
    return list(p["fields"].items())


def sigv2_form(bucket, key, conditions, expiration=None):
    exp = expiration or (datetime.datetime.utcnow() + datetime.timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    pol = base64.b64encode(json.dumps({"expiration": exp, "conditions": conditions}).encode()).decode()
    sig = base64.b64encode(hmac.new(h.SECRET_KEY.encode(), pol.encode(), hashlib.sha1).digest()).decode()
    return [("key", key), ("AWSAccessKeyId", h.ACCESS_KEY), ("policy", pol), ("signature", sig)]


def test_presigned_post_sigv4(srv):
    s3 = srv.client()
    b = "post-v4"
    s3.create_bucket(Bucket=b)
    data = os.urandom(300000)
    fields = presigned(srv, b, "up/${filename}",
                       conditions=[["starts-with", "$key", "up/"], {"Content-Type": "image/png"},
                                   ["starts-with", "$x-amz-meta-who", ""], {"success_action_status": "201"}],
                       fields={"Content-Type": "image/png", "success_action_status": "201"})
    fields.append(("x-amz-meta-who", "browser"))
    r = post(srv, b, fields, data, filename="C:\\photos\\cat.png", after=[("ignored", "x")])
    h.eq(r.status, 201, "POST answer (%r)" % r.body[:300])
    h.check(b"<Key>up/cat.png</Key>" in r.body, "PostResponse names the key: %r" % r.body)
    got = s3.get_object(Bucket=b, Key="up/cat.png")
    h.same_bytes(got["Body"].read(), data)
    h.eq(got["ContentType"], "image/png", "content type from the form")
    h.eq(got["Metadata"], {"who": "browser"}, "metadata from the form")
    h.eq(got["ETag"], '"%s"' % hashlib.md5(data).hexdigest(), "ETag is the MD5 as for a PUT")
    h.eq(r.header("ETag"), got["ETag"], "POST's ETag header")
    # boto3's SigV2 flavour of the same.
    fields = presigned(srv, b, "v2/${filename}", version="s3")
    h.check(("AWSAccessKeyId", h.ACCESS_KEY) in fields, "a SigV2 form: %r" % fields)
    h.eq(post(srv, b, fields, b"two", filename="b.txt").status, 204, "SigV2 POST")
    h.eq(s3.get_object(Bucket=b, Key="v2/b.txt")["Body"].read(), b"two", "SigV2 upload")


def test_policy_violations(srv):
    s3 = srv.client()
    b = "post-bad"
    s3.create_bucket(Bucket=b)
    # A field the policy does not name.
    fields = presigned(srv, b, "k1")
    r = post(srv, b, fields + [("x-amz-meta-extra", "1")], b"x")
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "extra field")
    h.check(b"Extra input fields: x-amz-meta-extra" in r.body, "extra field message: %r" % r.body)
    # A condition that fails.
    fields = presigned(srv, b, "k2", conditions=[["starts-with", "$key", "only/"]])
    r = post(srv, b, fields, b"x")
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "failed condition")
    h.check(b"Policy Condition failed" in r.body, "condition message: %r" % r.body)
    # content-length-range.
    fields = presigned(srv, b, "k3", conditions=[["content-length-range", 10, 20]])
    r = post(srv, b, fields, b"x" * 21)
    h.expect_s3_error(r.status, r.body, 400, "EntityTooLarge", "too large")
    r = post(srv, b, fields, b"x" * 9)
    h.expect_s3_error(r.status, r.body, 400, "EntityTooSmall", "too small")
    h.eq(post(srv, b, fields, b"x" * 15).status, 204, "in range")
    # Expired policy.
    r = post(srv, b, sigv2_form(b, "k4", [{"bucket": b}, {"key": "k4"}], expiration="2001-01-01T00:00:00Z"), b"x")
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "expired")
    h.check(b"Policy expired" in r.body, "expired message")
    # A tampered policy or signature.
    fields = dict(presigned(srv, b, "k5"))
    fields["x-amz-signature"] = "0" * 64
    r = post(srv, b, list(fields.items()), b"x")
    h.expect_s3_error(r.status, r.body, 403, "SignatureDoesNotMatch", "bad signature")
    # The policy's bucket condition: another bucket's form.
    s3.create_bucket(Bucket="post-other")
    fields = presigned(srv, "post-other", "k6")
    r = post(srv, b, fields, b"x")
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "other bucket's policy")
    # No key, no file, not a form.
    r = post(srv, b, [f for f in presigned(srv, b, "k7") if f[0] != "key"], b"x")
    h.expect_s3_error(r.status, r.body, 400, "InvalidArgument", "no key")
    r = srv.request("POST", "/" + b, body=b"plain", headers={"Content-Type": "text/plain"}, sign=False)
    h.eq(r.status in (400, 412), True, "not a form: %d" % r.status)
    # Anonymous without a bucket policy.
    r = post(srv, b, [("key", "anon")], b"x")
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "anonymous POST")
    r = post(srv, "post-missing-bucket", [("key", "anon")], b"x")
    h.expect_s3_error(r.status, r.body, 404, "NoSuchBucket", "anonymous POST, missing bucket")
    for k in ("k1", "k2", "k4", "k5", "k7", "anon"):
        with h.client_error("NoSuchKey", 404):
            s3.get_object(Bucket=b, Key=k)


def test_sigv2_redirect_tagging_acl_checksum(srv):
    s3 = srv.client()
    b = "post-v2"
    s3.create_bucket(Bucket=b, ObjectOwnership="ObjectWriter")  # the form sets an ACL
    data = b"hello form"
    crc = h.checksum_b64("CRC32", data) if hasattr(h, "checksum_b64") else None
    tagging = "<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag></TagSet></Tagging>"
    conds = [{"bucket": b}, {"key": "v2/obj"}, {"acl": "public-read"}, {"tagging": tagging},
             ["starts-with", "$success_action_redirect", "http://example.com/"],
             {"x-amz-checksum-crc32": crc}]
    fields = sigv2_form(b, "v2/obj", conds) + [
        ("acl", "public-read"), ("tagging", tagging),
        ("success_action_redirect", "http://example.com/done?x=1"), ("x-amz-checksum-crc32", crc)]
    r = post(srv, b, fields, data)
    h.eq(r.status, 303, "redirect (%r)" % r.body[:300])
    loc = urllib.parse.urlparse(r.header("Location"))
    q = urllib.parse.parse_qs(loc.query)
    h.eq((loc.netloc, q["bucket"], q["key"]), ("example.com", [b], ["v2/obj"]), "redirect target")
    h.eq(srv.request("GET", "/%s/v2/obj" % b, sign=False).status, 200, "acl public-read applied")
    h.eq(s3.get_object_tagging(Bucket=b, Key="v2/obj")["TagSet"], [{"Key": "a", "Value": "1"}], "tags")
    # A checksum that does not match.
    fields = sigv2_form(b, "v2/bad", [{"bucket": b}, {"key": "v2/bad"}, {"x-amz-checksum-crc32": "AAAAAA=="}])
    r = post(srv, b, fields + [("x-amz-checksum-crc32", "AAAAAA==")], data)
    h.expect_s3_error(r.status, r.body, 400, "BadDigest", "checksum mismatch")


def test_acl_field_with_acls_off(srv):
    """A default bucket (BucketOwnerEnforced) refuses a form's acl field as
    it refuses x-amz-acl, but for bucket-owner-full-control."""
    s3 = srv.client()
    b = "post-acl-off"
    s3.create_bucket(Bucket=b)
    conds = [{"bucket": b}, {"key": "a"}, {"acl": "public-read"}]
    r = post(srv, b, sigv2_form(b, "a", conds) + [("acl", "public-read")], b"x")
    h.expect_s3_error(r.status, r.body, 400, "AccessControlListNotSupported", "acl field, ACLs off")
    conds = [{"bucket": b}, {"key": "a"}, {"acl": "bucket-owner-full-control"}]
    r = post(srv, b, sigv2_form(b, "a", conds) + [("acl", "bucket-owner-full-control")], b"x")
    h.eq(r.status, 204, "bucket-owner-full-control (%r)" % r.body[:300])


def test_failure_answered_before_the_body(srv):
    """A POST whose form fails (here: anonymous, no policy allows it) is
    answered as soon as that is known, with Connection: close, while most
    of its declared body was never sent; from a browser's page (Origin) the
    answer carries the bucket's CORS headers, so the page can read it."""
    s3 = srv.client()
    b = "post-early"
    s3.create_bucket(Bucket=b)
    origin = "http://uploader.example"
    s3.put_bucket_cors(Bucket=b, CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": [origin], "AllowedMethods": ["POST"], "ExposeHeaders": ["x-amz-request-id"]}]})
    boundary = "----shardearly" + uuid.uuid4().hex
    head = ("--%s\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nbig\r\n"
            "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n" % (boundary, boundary)).encode()
    declared = 256 * 1024 * 1024
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=20)
    try:
        sock.sendall(("POST /%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                      "Origin: %s\r\n"
                      "Content-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n"
                      % (b, srv.port, origin, boundary, len(head) + declared)).encode())
        sock.sendall(head + b"x" * 65536)
        # Send no more: the answer must come anyway.
        got = b""
        while b"\r\n\r\n" not in got or b"</Error>" not in got:
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
    except socket.timeout:
        raise h.Failure("no answer while the body was still owed (%d of %d bytes sent): %r"
                        % (len(head) + 65536, len(head) + declared, got[:300]))
    finally:
        sock.close()
    status_line, _, rest = got.partition(b"\r\n")
    h.check(status_line.startswith(b"HTTP/1.1 403"), "early answer: %r" % got[:300])
    h.check(b"connection: close" in rest.lower(), "Connection: close: %r" % got[:400])
    h.check(b"<Code>AccessDenied</Code>" in got, "AccessDenied: %r" % got[:400])
    head_lines = rest.partition(b"\r\n\r\n")[0].lower().split(b"\r\n")
    h.check(b"access-control-allow-origin: " + origin.encode() in head_lines,
            "the early answer's CORS headers: %r" % head_lines)
    h.check(b"access-control-expose-headers: x-amz-request-id" in head_lines,
            "the rule's exposed headers: %r" % head_lines)
    with h.client_error("NoSuchKey", 404):
        s3.get_object(Bucket=b, Key="big")
    # The server still serves.
    s3.put_object(Bucket=b, Key="after", Body=b"ok")


def test_anonymous_post_allowed_by_policy(srv):
    s3 = srv.client()
    b = "post-anon"
    s3.create_bucket(Bucket=b)
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": "*", "Action": "s3:PutObject",
        "Resource": "arn:aws:s3:::%s/drop/*" % b}]}))
    r = post(srv, b, [("key", "drop/${filename}"), ("success_action_status", "200")], b"anon data",
             filename="a.txt")
    h.eq(r.status, 200, "anonymous POST under the policy (%r)" % r.body[:300])
    h.eq(s3.get_object(Bucket=b, Key="drop/a.txt")["Body"].read(), b"anon data", "stored")
    r = post(srv, b, [("key", "elsewhere")], b"x")
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "outside the policy's prefix")


def test_chromium_form_upload(srv):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        raise h.Skip("chromium is not installed: the browser form upload is not tested")
    s3 = srv.client()
    b = "post-browser"
    s3.create_bucket(Bucket=b)
    done = {}

    class Page(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            u = urllib.parse.urlparse(self.path)
            if u.path == "/done":
                done.update(urllib.parse.parse_qs(u.query))
                body = b"<html><body>done</body></html>"
            else:
                fields = presigned(srv, b, "browser/${filename}",
                                   conditions=[["starts-with", "$key", "browser/"],
                                               ["starts-with", "$success_action_redirect", redirect]],
                                   fields={"success_action_redirect": redirect + "/done"})
                inputs = "".join('<input type="hidden" name="%s" value="%s">' % (n, v.replace('"', "&quot;"))
                                 for n, v in fields)
                # The file input gets its content from a DataTransfer (no user here).
                body = ("""<html><body><form id="f" method="post" enctype="multipart/form-data" action="%s/%s">
%s<input type="file" name="file" id="file"></form><script>
const dt = new DataTransfer();
dt.items.add(new File(["from chromium"], "page.txt", {type: "text/plain"}));
document.getElementById("file").files = dt.files;
document.getElementById("f").submit();
</script></body></html>""" % (srv.endpoint, b, inputs)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    redirect = "http://127.0.0.1:%d" % httpd.server_address[1]
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    profile = tempfile.mkdtemp(prefix="shard-chromium-")
    try:
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + profile,
                        "--virtual-time-budget=10000", "--dump-dom", redirect + "/"],
                       capture_output=True, timeout=60)
    finally:
        httpd.shutdown()
        shutil.rmtree(profile, ignore_errors=True)
    h.eq(done.get("key"), ["browser/page.txt"], "the browser was redirected after the upload (%r)" % done)
    h.eq(s3.get_object(Bucket=b, Key="browser/page.txt")["Body"].read(), b"from chromium", "browser upload")


TESTS = [
    test_presigned_post_sigv4,
    test_policy_violations,
    test_sigv2_redirect_tagging_acl_checksum,
    test_anonymous_post_allowed_by_policy,
    test_acl_field_with_acls_off,
    test_failure_answered_before_the_body,
    test_chromium_form_upload,
]

if __name__ == "__main__":
    h.main(TESTS)
