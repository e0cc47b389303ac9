"""test_list_buckets.py: ListBuckets with many buckets.

Without max-buckets every visible bucket comes back in one answer; with it
the answer is paged by an opaque continuation token (boto3's paginator and
raw requests), filtered by prefix and bucket-region, and a user's pages
hold only its own buckets and those granted to it.
"""
import json
import os
import sys
import urllib.parse
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
N = 230


def names_of(resp):
    return [b["Name"] for b in resp.get("Buckets", [])]


def test_many_buckets_paged(srv):
    s3 = srv.client()
    want = sorted("lb-%04d" % i for i in range(N)) + ["other-1", "other-2"]
    for name in want:
        s3.create_bucket(Bucket=name)
    want.sort()
    everything = names_of(s3.list_buckets())
    h.eq([n for n in everything if n in want], want, "one unpaged answer")

    pages = list(s3.get_paginator("list_buckets").paginate(PaginationConfig={"PageSize": 37}))
    got = [n for p in pages for n in names_of(p)]
    h.eq([n for n in got if n in want], want, "paginated names")
    h.eq(len(got), len(set(got)), "no name twice across pages")
    h.check(len(pages) >= (N + 2) // 37, "%d pages of 37" % len(pages))
    for p in pages[:-1]:
        h.eq(len(p["Buckets"]), 37, "a full page")
        h.check(p.get("ContinuationToken"), "a token on a truncated page")
    h.check(not pages[-1].get("ContinuationToken"), "no token on the last page")
    h.eq(pages[0]["Buckets"][0]["BucketRegion"], "us-east-1", "BucketRegion")

    r = s3.list_buckets(Prefix="lb-01", MaxBuckets=1000)
    h.eq(names_of(r), ["lb-%04d" % i for i in range(100, 200)], "prefix filter")
    h.eq(r.get("Prefix"), "lb-01", "prefix echoed")
    h.eq(names_of(s3.list_buckets(BucketRegion="eu-west-1", MaxBuckets=10)), [], "other region")

    # A bucket created behind the token shows up; one before it does not repeat.
    p1 = s3.list_buckets(Prefix="lb-", MaxBuckets=5)
    h.eq(names_of(p1), want[:5], "first page")
    s3.create_bucket(Bucket="lb-0002x")
    s3.create_bucket(Bucket="lb-9999")
    p2 = s3.list_buckets(Prefix="lb-", MaxBuckets=1000, ContinuationToken=p1["ContinuationToken"])
    rest = names_of(p2)
    h.eq(rest[0], "lb-0005", "resumes after the token")
    h.check("lb-9999" in rest and "lb-0002x" not in rest, "token is a position, not a snapshot")
    for name in ("lb-0002x", "lb-9999"):
        s3.delete_bucket(Bucket=name)


def test_bad_parameters(srv):
    for q in ("max-buckets=0", "max-buckets=10001", "max-buckets=x", "continuation-token=%25%25"):
        r = srv.request("GET", "/", query=q)
        h.expect_s3_error(r.status, r.body, 400, "InvalidArgument", q)
    r = srv.request("GET", "/", query="max-buckets=2")
    h.eq(r.status, 200, "max-buckets=2")
    root = ET.fromstring(r.body)
    h.eq(len(root.findall("%sBuckets/%sBucket" % (NS, NS))), 2, "two buckets")
    h.check(root.find(NS + "ContinuationToken") is not None, "token present")


def admin(srv, method, what, **params):
    q = urllib.parse.urlencode(sorted(params.items()), quote_via=urllib.parse.quote)
    r = srv.request(method, "/_/admin/" + what, query=q)
    h.check(200 <= r.status < 300, "%s %s: HTTP %d %r" % (method, what, r.status, r.body[:200]))
    return json.loads(r.body) if r.body else None


def test_user_pages_hold_only_visible_buckets(srv):
    admin(srv, "POST", "users", name="pager")
    k = admin(srv, "POST", "keys", user="pager")
    s3u = srv.client(access_key=k["access_key"], secret_key=k["secret_key"])
    mine = ["pg-%03d" % i for i in range(12)]
    for name in mine:
        s3u.create_bucket(Bucket=name)
    admin(srv, "PUT", "grants", user="pager", bucket="lb-0100", level="read")
    pages = list(s3u.get_paginator("list_buckets").paginate(PaginationConfig={"PageSize": 5}))
    got = [n for p in pages for n in names_of(p)]
    h.eq(got, sorted(mine + ["lb-0100"]), "the user's buckets and the granted one")
    h.eq(len(pages), 3, "13 buckets in pages of 5")


TESTS = [test_many_buckets_paged, test_bad_parameters, test_user_pages_hold_only_visible_buckets]

if __name__ == "__main__":
    h.main(TESTS)
