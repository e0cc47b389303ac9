"""test_versioning.py: bucket versioning with boto3 and raw requests.

Put/GetBucketVersioning (Enabled, Suspended, MFA delete refused, malformed
bodies); versioned PUT, CopyObject and CompleteMultipartUpload return
x-amz-version-id; GET/HEAD by versionId with ranges, partNumber,
conditionals and checksums per version; DELETE adds a delete marker (GET 404
with x-amz-delete-marker, 405 with its id); DELETE ?versionId removes a
version for good and frees its space; Suspended writes replace the null
version; objects from before versioning become the null version; tagging by
version; ListObjectVersions (order, IsLatest, prefix, delimiter, paging,
encoding-type); DeleteObjects with VersionIds; a bucket with versions is not
empty.
"""

import os
import sys
import urllib.parse

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, client_error, eq  # noqa: E402

B = "vers"


def enable(s3, bucket=B, status="Enabled"):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": status})


def versions(s3, bucket=B, **kw):
    """All (key, version id, is latest, is marker) of the bucket, page by page."""
    out = []
    args = dict(Bucket=bucket, **kw)
    while True:
        r = s3.list_object_versions(**args)
        items = [(v["Key"], v["VersionId"], v["IsLatest"], False) for v in r.get("Versions", [])]
        items += [(m["Key"], m["VersionId"], m["IsLatest"], True) for m in r.get("DeleteMarkers", [])]
        out += items
        if not r["IsTruncated"]:
            return out
        args["KeyMarker"] = r["NextKeyMarker"]
        args["VersionIdMarker"] = r.get("NextVersionIdMarker", "")


def versions_raw(srv, bucket, max_keys=1000, **params):
    """All entries of ListObjectVersions in document order, paging with the
    Next markers: (key, version id, is latest, is marker)."""
    import xml.etree.ElementTree as ET
    ns = "{http://s3.amazonaws.com/doc/2006-03-01/}"
    out, km, vm = [], None, None
    while True:
        q = dict(params, **{"versions": "", "max-keys": str(max_keys)})
        if km is not None:
            q["key-marker"] = km
            q["version-id-marker"] = vm or ""
        r = srv.request("GET", "/" + bucket, query=urllib.parse.urlencode(q, quote_via=urllib.parse.quote, safe=""))
        eq(r.status, 200, "ListObjectVersions")
        root = ET.fromstring(r.body)
        for el in root:
            tag = el.tag.replace(ns, "")
            if tag in ("Version", "DeleteMarker"):
                out.append((el.find(ns + "Key").text, el.find(ns + "VersionId").text, el.find(ns + "IsLatest").text == "true", tag == "DeleteMarker"))
        if root.find(ns + "IsTruncated").text != "true":
            return out
        km = root.find(ns + "NextKeyMarker").text
        nv = root.find(ns + "NextVersionIdMarker")
        vm = nv.text if nv is not None else ""


def used_bytes(srv):
    m = srv.metric
    return m("shardstore_storage_total_bytes") - m("shardstore_storage_free_bytes") - m("shardstore_storage_pending_bytes")


def test_setup(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket=B)
    eq(s3.get_bucket_versioning(Bucket=B).get("Status"), None, "never configured: no Status")
    s3.put_object(Bucket=B, Key="old", Body=b"before versioning")
    enable(s3)
    eq(s3.get_bucket_versioning(Bucket=B)["Status"], "Enabled", "Enabled")


def test_versioning_config_errors(srv):
    s3 = srv.client()
    with client_error("NotImplemented", 501):
        s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Enabled", "MFADelete": "Enabled"})
    body = b"<VersioningConfiguration><Status>On</Status></VersioningConfiguration>"
    r = srv.request("PUT", "/" + B, query="versioning=", body=body)
    harness.expect_s3_error(r.status, r.body, 400, "MalformedXML", "bad Status")
    with client_error("NoSuchBucket", 404):
        enable(s3, bucket="no-such-bucket")
    eq(s3.get_bucket_versioning(Bucket=B)["Status"], "Enabled", "unchanged by errors")


def test_put_get_versions(srv):
    s3 = srv.client()
    v1 = s3.put_object(Bucket=B, Key="k", Body=b"one")["VersionId"]
    v2 = s3.put_object(Bucket=B, Key="k", Body=b"two!")["VersionId"]
    check(v1 != v2 and len(v1) == 32 and v1 < v2, "ids unique and time-ordered: %s %s" % (v1, v2))
    eq(s3.get_object(Bucket=B, Key="k")["Body"].read(), b"two!", "latest")
    g = s3.get_object(Bucket=B, Key="k", VersionId=v1)
    eq(g["Body"].read(), b"one", "by version")
    eq(g["VersionId"], v1, "x-amz-version-id on GET")
    eq(s3.head_object(Bucket=B, Key="k", VersionId=v1)["ContentLength"], 3, "HEAD by version")
    eq(s3.get_object(Bucket=B, Key="k", VersionId=v1, Range="bytes=1-")["Body"].read(), b"ne", "range of a version")
    etag1 = s3.head_object(Bucket=B, Key="k", VersionId=v1)["ETag"]
    with client_error("PreconditionFailed", 412):
        s3.get_object(Bucket=B, Key="k", VersionId=v2, IfMatch=etag1)
    eq(s3.get_object(Bucket=B, Key="k", VersionId=v1, IfMatch=etag1)["Body"].read(), b"one", "If-Match on a version")
    with client_error("NoSuchVersion", 404):
        s3.get_object(Bucket=B, Key="k", VersionId="0" * 31 + "1")
    with client_error("InvalidArgument", 400):
        s3.get_object(Bucket=B, Key="k", VersionId="nope")
    # The object from before versioning is the null version.
    eq(s3.get_object(Bucket=B, Key="old", VersionId="null")["Body"].read(), b"before versioning", "null version")
    eq(s3.head_object(Bucket=B, Key="old")["VersionId"], "null", "null id on HEAD")


def test_checksum_per_version(srv):
    s3 = srv.client()
    a = s3.put_object(Bucket=B, Key="ck", Body=b"aaaa", ChecksumAlgorithm="SHA256")
    s3.put_object(Bucket=B, Key="ck", Body=b"bbbbbb", ChecksumAlgorithm="CRC32")
    h = s3.head_object(Bucket=B, Key="ck", VersionId=a["VersionId"], ChecksumMode="ENABLED")
    eq(h.get("ChecksumSHA256"), a["ChecksumSHA256"], "the old version keeps its checksum")


def test_delete_marker(srv):
    s3 = srv.client()
    v1 = s3.put_object(Bucket=B, Key="d", Body=b"x")["VersionId"]
    r = s3.delete_object(Bucket=B, Key="d")
    eq(r.get("DeleteMarker"), True, "x-amz-delete-marker")
    mid = r["VersionId"]
    check(mid != v1, "the marker has its own id")
    r = srv.request("GET", "/%s/d" % B)
    eq(r.status, 404, "GET of a marker")
    eq(r.header("x-amz-delete-marker"), "true", "marker header on 404")
    eq(r.header("x-amz-version-id"), mid, "marker id on 404")
    r = srv.request("GET", "/%s/d" % B, query="versionId=" + mid)
    eq(r.status, 405, "GET naming a marker")
    eq(r.header("x-amz-delete-marker"), "true", "marker header on 405")
    eq(s3.get_object(Bucket=B, Key="d", VersionId=v1)["Body"].read(), b"x", "old version still readable")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=B).get("Contents", [])]
    check("d" not in keys, "ListObjects hides a deleted key")
    # Removing the marker brings the object back.
    r = s3.delete_object(Bucket=B, Key="d", VersionId=mid)
    eq(r.get("DeleteMarker"), True, "removed version was a marker")
    eq(r["VersionId"], mid, "removed id")
    eq(s3.get_object(Bucket=B, Key="d")["Body"].read(), b"x", "back")


def test_delete_version_frees_space(srv):
    s3 = srv.client()
    used0 = used_bytes(srv)
    vs = [s3.put_object(Bucket=B, Key="big", Body=os.urandom(1 << 20))["VersionId"] for _ in range(3)]
    used1 = used_bytes(srv)
    check(used1 - used0 >= 3 << 20, "three versions use space: %s -> %s" % (used0, used1))
    for v in vs:
        s3.delete_object(Bucket=B, Key="big", VersionId=v)
    with client_error("NoSuchKey", 404):
        s3.get_object(Bucket=B, Key="big")
    used2 = used_bytes(srv)
    check(used2 - used0 < 1 << 20, "removed versions free their space: %s -> %s" % (used1, used2))
    eq([v for v in versions(s3) if v[0] == "big"], [], "no versions left")


def test_suspended(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="susp")
    enable(s3, "susp")
    v1 = s3.put_object(Bucket="susp", Key="k", Body=b"v1")["VersionId"]
    enable(s3, "susp", "Suspended")
    eq(s3.get_bucket_versioning(Bucket="susp")["Status"], "Suspended", "Suspended")
    eq(s3.put_object(Bucket="susp", Key="k", Body=b"n1").get("VersionId"), "null", "null id while suspended")
    s3.put_object(Bucket="susp", Key="k", Body=b"n2")
    vs = versions(s3, "susp")
    eq([(v[1], v[2]) for v in vs], [("null", True), (v1, False)], "the null version is replaced")
    eq(s3.get_object(Bucket="susp", Key="k", VersionId="null")["Body"].read(), b"n2", "null reads the last")
    r = s3.delete_object(Bucket="susp", Key="k")
    eq((r.get("DeleteMarker"), r.get("VersionId")), (True, "null"), "null marker")
    eq([(v[1], v[3]) for v in versions(s3, "susp")], [(v1, False), ("null", True)], "marker replaced null")
    enable(s3, "susp")
    s3.delete_object(Bucket="susp", Key="k", VersionId="null")
    s3.delete_object(Bucket="susp", Key="k", VersionId=v1)
    eq(versions(s3, "susp"), [], "all gone")
    s3.delete_bucket(Bucket="susp")


def test_copy_and_multipart(srv):
    s3 = srv.client()
    v1 = s3.put_object(Bucket=B, Key="src", Body=b"first source")["VersionId"]
    s3.put_object(Bucket=B, Key="src", Body=b"second")
    r = s3.copy_object(Bucket=B, Key="dst", CopySource={"Bucket": B, "Key": "src", "VersionId": v1})
    eq(r.get("CopySourceVersionId"), v1, "x-amz-copy-source-version-id")
    check(len(r.get("VersionId", "")) == 32, "copy made a version")
    eq(s3.get_object(Bucket=B, Key="dst")["Body"].read(), b"first source", "copied the old version")
    # Copying an old version onto its own key restores it as the latest.
    r = s3.copy_object(Bucket=B, Key="src", CopySource={"Bucket": B, "Key": "src", "VersionId": v1})
    eq(s3.get_object(Bucket=B, Key="src")["Body"].read(), b"first source", "restored by copy")
    with client_error("InvalidRequest", 400):
        s3.copy_object(Bucket=B, Key="src", CopySource={"Bucket": B, "Key": "src"})
    # Deleting the source version keeps the copy's bytes (shared extents).
    s3.delete_object(Bucket=B, Key="src", VersionId=v1)
    eq(s3.get_object(Bucket=B, Key="dst")["Body"].read(), b"first source", "copy survives")
    up = s3.create_multipart_upload(Bucket=B, Key="mp")
    part = b"p" * (5 << 20)
    e1 = s3.upload_part(Bucket=B, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=part)["ETag"]
    e2 = s3.upload_part(Bucket=B, Key="mp", UploadId=up["UploadId"], PartNumber=2, Body=b"tail")["ETag"]
    r = s3.complete_multipart_upload(Bucket=B, Key="mp", UploadId=up["UploadId"], MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    vmp = r["VersionId"]
    s3.put_object(Bucket=B, Key="mp", Body=b"small")
    g = s3.get_object(Bucket=B, Key="mp", VersionId=vmp, PartNumber=2)
    eq(g["Body"].read(), b"tail", "partNumber of an old version")
    # UploadPartCopy from a version.
    up = s3.create_multipart_upload(Bucket=B, Key="mpc")
    pc = s3.upload_part_copy(Bucket=B, Key="mpc", UploadId=up["UploadId"], PartNumber=1, CopySource={"Bucket": B, "Key": "mp", "VersionId": vmp}, CopySourceRange="bytes=0-9")
    s3.complete_multipart_upload(Bucket=B, Key="mpc", UploadId=up["UploadId"], MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": pc["CopyPartResult"]["ETag"]}]})
    eq(s3.get_object(Bucket=B, Key="mpc")["Body"].read(), b"p" * 10, "UploadPartCopy of a version")


def test_tagging_by_version(srv):
    s3 = srv.client()
    v1 = s3.put_object(Bucket=B, Key="t", Body=b"1")["VersionId"]
    s3.put_object(Bucket=B, Key="t", Body=b"2")
    s3.put_object_tagging(Bucket=B, Key="t", VersionId=v1, Tagging={"TagSet": [{"Key": "a", "Value": "b"}]})
    eq(s3.get_object_tagging(Bucket=B, Key="t", VersionId=v1)["TagSet"], [{"Key": "a", "Value": "b"}], "tags of v1")
    eq(s3.get_object_tagging(Bucket=B, Key="t")["TagSet"], [], "latest untouched")
    s3.delete_object_tagging(Bucket=B, Key="t", VersionId=v1)
    eq(s3.get_object_tagging(Bucket=B, Key="t", VersionId=v1)["TagSet"], [], "deleted tags of v1")


def test_list_versions(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="listv")
    enable(s3, "listv")
    ids = {}
    for k in ["a/1", "a/2", "b", "c d+e"]:
        ids[k] = [s3.put_object(Bucket="listv", Key=k, Body=k.encode() * n)["VersionId"] for n in (1, 2, 3)]
    m = s3.delete_object(Bucket="listv", Key="b")["VersionId"]
    r = s3.list_object_versions(Bucket="listv")
    vs = [(v["Key"], v["VersionId"], v["IsLatest"]) for v in r["Versions"]]
    want = []
    for k in ["a/1", "a/2", "b", "c d+e"]:
        for i, v in enumerate(reversed(ids[k])):
            want.append((k, v, i == 0 and k != "b"))
    eq(vs, want, "versions in key order, newest first")
    eq([(d["Key"], d["VersionId"], d["IsLatest"]) for d in r["DeleteMarkers"]], [("b", m, True)], "marker")
    eq(r["Versions"][0]["Size"], 9, "size of the newest")
    # Paging: every page size gives the same sequence.
    full = versions_raw(srv, "listv")
    eq(len(full), 13, "12 versions and a marker")
    for n in (1, 2, 5):
        eq(versions_raw(srv, "listv", n), full, "pages of %d" % n)
    r = s3.list_object_versions(Bucket="listv", Delimiter="/")
    eq([p["Prefix"] for p in r["CommonPrefixes"]], ["a/"], "common prefix")
    eq(len(r["Versions"]), 6, "versions outside the prefix")
    r = s3.list_object_versions(Bucket="listv", Prefix="a/", MaxKeys=4)
    eq(len(r["Versions"]), 4, "max-keys")
    check(r["IsTruncated"], "truncated")
    eq((r["NextKeyMarker"], r["NextVersionIdMarker"]), ("a/2", ids["a/2"][2]), "next markers")
    r = s3.list_object_versions(Bucket="listv", KeyMarker="a/2")
    eq(r["Versions"][0]["Key"], "b", "key-marker skips all versions of the key")
    r = srv.request("GET", "/listv", query="versions=&encoding-type=url&prefix=c")
    check(b"<Key>c%20d%2Be</Key>" in r.body, "encoding-type=url: %r" % r.body[:400])
    # DeleteObjects with version ids and markers.
    r = s3.delete_objects(Bucket="listv", Delete={"Objects": [{"Key": "a/1", "VersionId": ids["a/1"][0]}, {"Key": "a/2"}, {"Key": "b", "VersionId": m}]})
    d = {(x["Key"], x.get("VersionId")): x for x in r["Deleted"]}
    check(("a/1", ids["a/1"][0]) in d, "version deleted: %r" % r["Deleted"])
    check(d[("b", m)].get("DeleteMarker") is True, "removing a marker says so")
    new_marker = [x for x in r["Deleted"] if x["Key"] == "a/2"][0]
    check(new_marker.get("DeleteMarker") is True and len(new_marker.get("DeleteMarkerVersionId", "")) == 32, "new marker: %r" % new_marker)
    eq(s3.get_object(Bucket="listv", Key="b")["Body"].read(), b"bbb", "b back")
    with client_error("BucketNotEmpty", 409):
        s3.delete_bucket(Bucket="listv")


TESTS = [
    test_setup,
    test_versioning_config_errors,
    test_put_get_versions,
    test_checksum_per_version,
    test_delete_marker,
    test_delete_version_frees_space,
    test_suspended,
    test_copy_and_multipart,
    test_tagging_by_version,
    test_list_versions,
]

if __name__ == "__main__":
    harness.main(TESTS)
