"""test_cors.py: bucket CORS with boto3, aws-cli and raw requests, and a real
browser.

Put/Get/DeleteBucketCors round trips and S3's errors (NoSuchCORSConfiguration,
MalformedXML, unsupported methods, two wildcards, wildcard ExposeHeader, a
missing Content-MD5); the unauthenticated OPTIONS preflight answered from
the rules (200 with the Access-Control-* headers, 403 CORSResponse when no
rule matches or the bucket has none, 400 without Origin or with a bad
method); Access-Control-* and Vary on actual responses: GET, HEAD, PUT,
presigned GET and PUT, and error responses; nothing without an Origin; a
Put replaces the cached rules at once and they survive a restart.

test_browser: headless Chromium loads a page from another origin (a
python http.server on another loopback port) whose script fetches an
object cross-origin with a presigned GET, PUTs one with a presigned URL
(a preflight, for its Content-Type application/x-test), and shows that an origin the rules do
not name is refused; the page writes its results into the DOM, which
`chromium --dump-dom` prints. Skipped when chromium is not installed.
"""

import base64
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, client_error, eq  # noqa: E402

BUCKET = "corsb"
WEB = "http://web.example"
VARY = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"

RULES = [
    {"ID": "web", "AllowedOrigins": [WEB, "http://*.apps.example"], "AllowedMethods": ["GET", "PUT", "HEAD"],
     "AllowedHeaders": ["Content-*", "x-amz-*"], "ExposeHeaders": ["ETag", "x-amz-request-id"], "MaxAgeSeconds": 600},
    {"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]},
]


def put_cors_raw(srv, body, md5=True):
    headers = {}
    if md5:
        headers["Content-MD5"] = base64.b64encode(hashlib.md5(body).digest()).decode()
    return srv.request("PUT", "/" + BUCKET, query="cors=", headers=headers, body=body)


def preflight(srv, path, origin, method, req_headers=None):
    h = {"Access-Control-Request-Method": method}
    if origin is not None:
        h["Origin"] = origin
    if req_headers:
        h["Access-Control-Request-Headers"] = req_headers
    return srv.request("OPTIONS", path, headers=h, sign=False)


def test_setup(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key="obj", Body=b"cross-origin bytes")


def test_config_round_trip_and_errors(srv):
    s3 = srv.client()
    with client_error("NoSuchCORSConfiguration", 404):
        s3.get_bucket_cors(Bucket=BUCKET)
    r = preflight(srv, "/%s/obj" % BUCKET, WEB, "GET")
    err = harness.expect_s3_error(r.status, r.body, 403, "CORSResponse", "preflight without a configuration")
    eq(err["Message"], "CORS is not enabled for this bucket.", "message")
    s3.put_bucket_cors(Bucket=BUCKET, CORSConfiguration={"CORSRules": RULES})
    got = s3.get_bucket_cors(Bucket=BUCKET)["CORSRules"]
    eq(got, RULES, "rules read back")
    bad = [
        (b"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod></CORSRule></CORSConfiguration>",
         "InvalidRequest", "Found unsupported HTTP method in CORS config. Unsupported method is PATCH"),
        (b"<CORSConfiguration><CORSRule><AllowedOrigin>http://*.*.x</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>",
         "InvalidRequest", 'AllowedOrigin "http://*.*.x" can not have more than one wildcard.'),
        (b"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod><ExposeHeader>*</ExposeHeader></CORSRule></CORSConfiguration>",
         "InvalidRequest", 'ExposeHeader "*" contains wildcard. We currently do not support wildcard for ExposeHeader.'),
        (b"<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>", "MalformedXML", None),
        (b"<CORSConfiguration></CORSConfiguration>", "MalformedXML", None),
        (b"<CORSConfiguration><CORSRule>", "MalformedXML", None),
        (b"<CORSConfiguration>" + b"<CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule>" * 101 + b"</CORSConfiguration>",
         "InvalidRequest", "The number of CORS rules should not exceed allowed limit of 100 rules."),
    ]
    for body, code, msg in bad:
        r = put_cors_raw(srv, body)
        err = harness.expect_s3_error(r.status, r.body, 400, code, "bad CORS body %r" % body[:90])
        if msg:
            eq(err["Message"], msg, "message for %r" % body[:90])
    r = put_cors_raw(srv, b"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>", md5=False)
    harness.expect_s3_error(r.status, r.body, 400, "InvalidRequest", "PutBucketCors without Content-MD5")
    eq(s3.get_bucket_cors(Bucket=BUCKET)["CORSRules"], RULES, "refused bodies leave the rules alone")
    # Only the bucket's administrators: anonymous callers are refused.
    r = srv.request("GET", "/" + BUCKET, query="cors=", sign=False)
    harness.expect_s3_error(r.status, r.body, 403, "AccessDenied", "anonymous GetBucketCors")


def test_preflight(srv):
    path = "/%s/obj" % BUCKET
    r = preflight(srv, path, WEB, "PUT", "content-type, x-amz-meta-a")
    eq(r.status, 200, "preflight allowed: %r" % r.body)
    eq(r.body, b"", "preflight body")
    eq(r.header("Access-Control-Allow-Origin"), WEB, "Allow-Origin")
    eq(r.header("Access-Control-Allow-Methods"), "GET, PUT, HEAD", "Allow-Methods")
    eq(r.header("Access-Control-Allow-Headers"), "content-type, x-amz-meta-a", "Allow-Headers")
    eq(r.header("Access-Control-Max-Age"), "600", "Max-Age")
    eq(r.header("Access-Control-Expose-Headers"), "ETag, x-amz-request-id", "Expose-Headers")
    eq(r.header("Access-Control-Allow-Credentials"), "true", "credentials for a named origin")
    eq(r.header("Vary"), VARY, "Vary")
    # A wildcard origin pattern, and the bucket level.
    r = preflight(srv, "/" + BUCKET, "http://dash.apps.example", "HEAD")
    eq((r.status, r.header("Access-Control-Allow-Origin")), (200, "http://dash.apps.example"), "wildcard origin")
    # The "*" rule: GET only, Allow-Origin *, no credentials.
    r = preflight(srv, path, "http://anyone.example", "GET")
    eq((r.status, r.header("Access-Control-Allow-Origin"), r.header("Access-Control-Allow-Credentials")), (200, "*", None), "any origin")
    for origin, method, hdrs in (("http://anyone.example", "PUT", None), (WEB, "DELETE", None), (WEB, "PUT", "authorization-x")):
        r = preflight(srv, path, origin, method, hdrs)
        harness.expect_s3_error(r.status, r.body, 403, "CORSResponse", "preflight %s %s %s" % (origin, method, hdrs))
        eq(r.header("Access-Control-Allow-Origin"), None, "no Allow-Origin on a refused preflight")
    # A presigned UploadPart (a browser's multipart upload) preflights with
    # the sub-resource in its query.
    r = srv.request("OPTIONS", path, query="uploadId=abc&partNumber=1",
                    headers={"Origin": WEB, "Access-Control-Request-Method": "PUT"}, sign=False)
    eq((r.status, r.header("Access-Control-Allow-Origin")), (200, WEB), "preflight with ?uploadId")
    r = preflight(srv, path, None, "GET")
    harness.expect_s3_error(r.status, r.body, 400, "BadRequest", "preflight without Origin")
    r = preflight(srv, path, WEB, "PATCH")
    harness.expect_s3_error(r.status, r.body, 400, "BadRequest", "preflight with PATCH")
    r = preflight(srv, "/no-such-bucket-cors/k", WEB, "GET")
    harness.expect_s3_error(r.status, r.body, 404, "NoSuchBucket", "preflight of a missing bucket")


def test_actual_responses(srv):
    s3 = srv.client()
    path = "/%s/obj" % BUCKET
    for method in ("GET", "HEAD"):
        r = srv.request(method, path, headers={"Origin": WEB})
        eq(r.status, 200, method)
        eq(r.header("Access-Control-Allow-Origin"), WEB, method + " Allow-Origin")
        eq(r.header("Access-Control-Expose-Headers"), "ETag, x-amz-request-id", method + " Expose-Headers")
        eq(r.header("Vary"), VARY, method + " Vary")
    r = srv.request("PUT", "/%s/put-cors" % BUCKET, headers={"Origin": WEB}, body=b"p")
    eq((r.status, r.header("Access-Control-Allow-Origin")), (200, WEB), "PUT")
    # No Origin: no CORS headers at all.
    r = srv.request("GET", path)
    check(not any(k.lower().startswith("access-control-") or k.lower() == "vary" for k in r.headers.keys()), "no CORS headers without Origin: %r" % dict(r.headers))
    # An origin no rule names for this method: no Access-Control-*, still Vary.
    r = srv.request("PUT", "/%s/put-cors" % BUCKET, headers={"Origin": "http://evil.example"}, body=b"p")
    eq((r.header("Access-Control-Allow-Origin"), r.header("Vary")), (None, VARY), "unlisted origin")
    # Errors carry them too (a browser can read the error), also before auth.
    r = srv.request("GET", "/%s/missing" % BUCKET, headers={"Origin": WEB})
    eq((r.status, r.header("Access-Control-Allow-Origin")), (404, WEB), "404 with CORS")
    r = srv.request("GET", path, headers={"Origin": WEB}, sign=False)
    eq((r.status, r.header("Access-Control-Allow-Origin")), (403, WEB), "anonymous 403 with CORS")
    # Presigned GET and PUT.
    url = s3.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "obj"}, ExpiresIn=300)
    u = urllib.parse.urlsplit(url)
    r = srv.request("GET", u.path, query=u.query, headers={"Origin": WEB}, sign=False)
    eq((r.status, r.body, r.header("Access-Control-Allow-Origin")), (200, b"cross-origin bytes", WEB), "presigned GET")
    url = s3.generate_presigned_url("put_object", Params={"Bucket": BUCKET, "Key": "presigned-put"}, ExpiresIn=300)
    u = urllib.parse.urlsplit(url)
    r = srv.request("PUT", u.path, query=u.query, headers={"Origin": "http://x.apps.example"}, body=b"pp", sign=False)
    eq((r.status, r.header("Access-Control-Allow-Origin")), (200, "http://x.apps.example"), "presigned PUT")


def test_replace_delete_restart(srv):
    s3 = srv.client()
    path = "/%s/obj" % BUCKET
    s3.put_bucket_cors(Bucket=BUCKET, CORSConfiguration={"CORSRules": [{"AllowedOrigins": ["http://new.example"], "AllowedMethods": ["GET"]}]})
    r = srv.request("GET", path, headers={"Origin": WEB})
    eq(r.header("Access-Control-Allow-Origin"), None, "old rules gone at once")
    r = srv.request("GET", path, headers={"Origin": "http://new.example"})
    eq(r.header("Access-Control-Allow-Origin"), "http://new.example", "new rules at once")
    srv.restart()
    r = srv.request("GET", path, headers={"Origin": "http://new.example"})
    eq(r.header("Access-Control-Allow-Origin"), "http://new.example", "rules after a restart")
    s3 = srv.client()
    s3.delete_bucket_cors(Bucket=BUCKET)
    with client_error("NoSuchCORSConfiguration", 404):
        s3.get_bucket_cors(Bucket=BUCKET)
    r = srv.request("GET", path, headers={"Origin": "http://new.example"})
    eq((r.header("Access-Control-Allow-Origin"), r.header("Vary")), (None, None), "no CORS headers after delete")
    s3.delete_bucket_cors(Bucket=BUCKET)  # 204 again
    s3.put_bucket_cors(Bucket=BUCKET, CORSConfiguration={"CORSRules": RULES})


def test_awscli(srv):
    harness.require_tool("aws")
    tmp = tempfile.mkdtemp(prefix="cors-cli-")
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(AWS_ACCESS_KEY_ID=srv.access_key, AWS_SECRET_ACCESS_KEY=srv.secret_key, AWS_DEFAULT_REGION=harness.REGION,
                   AWS_CONFIG_FILE=os.path.join(tmp, "config"), AWS_SHARED_CREDENTIALS_FILE=os.path.join(tmp, "creds"),
                   AWS_EC2_METADATA_DISABLED="true", AWS_PAGER="")
        cfg = os.path.join(tmp, "cors.json")
        with open(cfg, "w") as f:
            json.dump({"CORSRules": [{"AllowedOrigins": ["http://cli.example"], "AllowedMethods": ["GET"]}]}, f)
        base = ["aws", "--endpoint-url", srv.endpoint, "s3api"]
        subprocess.run(base + ["put-bucket-cors", "--bucket", BUCKET, "--cors-configuration", "file://" + cfg], env=env, check=True, capture_output=True, timeout=60)
        out = subprocess.run(base + ["get-bucket-cors", "--bucket", BUCKET], env=env, check=True, capture_output=True, timeout=60).stdout
        eq(json.loads(out)["CORSRules"], [{"AllowedMethods": ["GET"], "AllowedOrigins": ["http://cli.example"]}], "aws-cli get-bucket-cors")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        srv.client().put_bucket_cors(Bucket=BUCKET, CORSConfiguration={"CORSRules": RULES})


PAGE = """<!doctype html><html><body><pre id="out">running</pre><script>
const out = {};
async function run() {
  try {
    const g = await fetch(%(get_url)s);
    out.get_status = g.status; out.get_body = await g.text(); out.get_etag = g.headers.get("ETag");
  } catch (e) { out.get_error = String(e); }
  try {
    const p = await fetch(%(put_url)s, {method: "PUT", body: "from the browser", headers: {"Content-Type": "application/x-test"}});
    out.put_status = p.status;
    if (p.status != 200) out.put_body = await p.text();
  } catch (e) { out.put_error = String(e); }
  try {
    const d = await fetch(%(denied_url)s);
    out.denied_status = d.status;
  } catch (e) { out.denied_error = String(e); }
  document.getElementById("out").textContent = "RESULT" + JSON.stringify(out) + "END";
}
run();
</script></body></html>
"""


def chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def test_browser(srv):
    browser = chromium_binary()
    if not browser:
        raise harness.Skip("chromium is not installed (scripts/setup.sh --test installs it)")
    s3 = srv.client()
    s3.create_bucket(Bucket="corsdenied")
    s3.put_object(Bucket="corsdenied", Key="obj", Body=b"no")
    s3.put_bucket_cors(Bucket="corsdenied", CORSConfiguration={"CORSRules": [{"AllowedOrigins": ["http://elsewhere.example"], "AllowedMethods": ["GET"]}]})
    tmp = tempfile.mkdtemp(prefix="cors-web-")
    httpd = None
    try:
        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **k):
                super().__init__(*a, directory=tmp, **k)

            def log_message(self, *a):
                pass

        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        origin = "http://127.0.0.1:%d" % httpd.server_address[1]
        s3.put_bucket_cors(Bucket=BUCKET, CORSConfiguration={"CORSRules": [
            {"AllowedOrigins": [origin], "AllowedMethods": ["GET", "PUT"], "AllowedHeaders": ["content-type"], "ExposeHeaders": ["ETag"]}]})
        v4 = srv.client(signature_version="s3v4")  # SigV2 URLs (boto3's default) sign Content-Type
        get_url = v4.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "obj"}, ExpiresIn=300)
        put_url = v4.generate_presigned_url("put_object", Params={"Bucket": BUCKET, "Key": "from-browser"}, ExpiresIn=300)
        denied_url = v4.generate_presigned_url("get_object", Params={"Bucket": "corsdenied", "Key": "obj"}, ExpiresIn=300)
        with open(os.path.join(tmp, "index.html"), "w") as f:
            f.write(PAGE % {"get_url": json.dumps(get_url), "put_url": json.dumps(put_url), "denied_url": json.dumps(denied_url)})
        profile = os.path.join(tmp, "profile")
        cmd = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
               "--user-data-dir=" + profile, "--virtual-time-budget=10000", "--timeout=20000", "--dump-dom", origin + "/index.html"]
        p = subprocess.run(cmd, capture_output=True, timeout=90)
        dom = p.stdout.decode("utf-8", "replace")
        check("RESULT" in dom, "the page wrote no result (rc %d): %r %r" % (p.returncode, dom[-500:], p.stderr[-800:]))
        res = json.loads(dom[dom.index("RESULT") + 6:dom.index("END")])
        eq(res.get("get_status"), 200, "cross-origin presigned GET: %r" % res)
        eq(res.get("get_body"), "cross-origin bytes", "GET body read by the page")
        check(res.get("get_etag"), "ETag exposed to the page: %r" % res)
        eq(res.get("put_status"), 200, "cross-origin PUT after its preflight: %r" % res)
        eq(s3.get_object(Bucket=BUCKET, Key="from-browser")["Body"].read(), b"from the browser", "object the browser PUT")
        check("denied_error" in res and "denied_status" not in res, "an origin the rules do not name is refused by the browser: %r" % res)
    finally:
        if httpd:
            httpd.shutdown()
            httpd.server_close()
        shutil.rmtree(tmp, ignore_errors=True)


TESTS = [
    test_setup,
    test_config_round_trip_and_errors,
    test_preflight,
    test_actual_responses,
    test_replace_delete_restart,
    test_awscli,
    test_browser,
]

if __name__ == "__main__":
    harness.main(TESTS)
