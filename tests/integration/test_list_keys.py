"""test_list_keys.py: object keys as text (issue 16 item 8).

Keys that are not UTF-8, or hold NUL, are refused when written (PUT, a
CopyObject destination, CreateMultipartUpload: 400 InvalidURI, as S3),
while reads of such a key still answer normally. Keys with control
characters are valid UTF-8 and are stored; every listing that shows them
(ListObjects v1/v2, ListObjectVersions, ListMultipartUploads) is then
well-formed XML that xml.etree parses, with encoding-type=url giving the
exact keys back, and without it the characters XML 1.0 cannot carry
replaced by U+FFFD.
"""
import os
import sys
import urllib.parse
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
BUCKET = "keytext"
# Valid UTF-8 keys with characters XML text cannot hold as they are.
KEYS = [
    "ctl\x01one", "ctl\x08bs", "ctl\x0bvt", "ctl\x1fus", "del\x7f", "tab\there",
    "cr\rlf\ncrlf\r\n", "c1\u0085\u009f", "nonchar\ufffe\uffff", "amp&lt<gt>q\"a'",
    "plain", "dir\x01/inner",
]


def put_raw(srv, path, want_status, query="", headers=None):
    r = srv.request("PUT", path, query=query, headers=headers, body=b"x")
    h.eq(r.status, want_status, "PUT %s: %r" % (path, r.body[:200]))
    return r


def listing(srv, query):
    r = srv.request("GET", "/" + BUCKET, query=query)
    h.eq(r.status, 200, "GET ?%s: %r" % (query, r.body[:200]))
    try:
        return ET.fromstring(r.body)
    except ET.ParseError as e:
        raise h.Failure("listing ?%s is not well-formed XML: %s: %r" % (query, e, r.body[:400]))


def texts(root, path):
    return [e.text or "" for e in root.iter(NS + path)]


def test_refused_keys(srv):
    srv.client().create_bucket(Bucket=BUCKET)
    for bad in ["bad%FF", "bad%00nul", "bad%C0%AF", "bad%ED%A0%80", "bad%E2%82", "%80"]:
        r = put_raw(srv, "/%s/%s" % (BUCKET, bad), 400)
        h.expect_s3_error(r.status, r.body, 400, "InvalidURI", bad)
        r = srv.request("POST", "/%s/%s" % (BUCKET, bad), query="uploads=")
        h.expect_s3_error(r.status, r.body, 400, "InvalidURI", "CreateMultipartUpload " + bad)
        r = srv.request("PUT", "/%s/%s" % (BUCKET, bad),
                        headers={"x-amz-copy-source": "/%s/plain" % BUCKET})
        h.expect_s3_error(r.status, r.body, 400, "InvalidURI", "CopyObject to " + bad)
        # Reads are not refused: a key stored before the rule stays reachable.
        r = srv.request("GET", "/%s/%s" % (BUCKET, bad))
        h.expect_s3_error(r.status, r.body, 404, "NoSuchKey", "GET " + bad)
        r = srv.request("DELETE", "/%s/%s" % (BUCKET, bad))
        h.eq(r.status, 204, "DELETE %s" % bad)
    # Multi-byte UTF-8 is fine.
    put_raw(srv, "/%s/%s" % (BUCKET, h.quote_key("caf\u00e9 \U0001F600")), 200)


def test_listings_are_well_formed(srv):
    s3 = srv.client()
    for k in KEYS:
        put_raw(srv, "/%s/%s" % (BUCKET, h.quote_key(k)), 200)
    up = s3.create_multipart_upload(Bucket=BUCKET, Key="mp\x01key")
    want = sorted(KEYS + ["caf\u00e9 \U0001F600"], key=lambda k: k.encode())
    for v1 in (False, True):
        base = "" if v1 else "list-type=2&"
        # encoding-type=url: exact keys back.
        root = listing(srv, base + "encoding-type=url")
        got = [urllib.parse.unquote(k, errors="strict") for k in texts(root, "Key")]
        h.eq(got, want, "url-encoded keys (v1=%s)" % v1)
        # Plain: parses; what XML can carry is exact, the rest is U+FFFD.
        root = listing(srv, base.rstrip("&"))
        got = texts(root, "Key")
        h.eq(len(got), len(want), "plain listing length")
        for g, w in zip(got, want):
            exp = "".join("\ufffd" if (ord(c) < 0x20 and c not in "\t\r\n") or c in "\ufffe\uffff"
                          else c for c in w)
            h.eq(g, exp, "plain key for %r" % w)
        # Delimiter inside the control characters: CommonPrefixes parse too.
        root = listing(srv, base + "delimiter=%2F&prefix=dir%01")
        h.eq(texts(root, "Prefix")[-1:], ["dir\ufffd/"], "common prefix")
        h.eq(root.find(NS + "Prefix").text, "dir\ufffd", "echoed prefix")
    root = listing(srv, "versions=")
    h.check(len(texts(root, "Key")) == len(want), "versions listing")
    root = listing(srv, "uploads=")
    h.eq(texts(root, "Key"), ["mp\ufffdkey"], "uploads listing, plain")
    root = listing(srv, "uploads=&encoding-type=url")
    h.eq([urllib.parse.unquote(k) for k in texts(root, "Key")], ["mp\x01key"], "uploads listing, url")
    s3.abort_multipart_upload(Bucket=BUCKET, Key="mp\x01key", UploadId=up["UploadId"])
    # boto3 asks encoding-type=url and gets every key exactly.
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]]
    h.eq(keys, want, "boto3 listing")


if __name__ == "__main__":
    h.main([test_refused_keys, test_listings_are_well_formed])
