"""test_users.py: users, access keys, bucket ownership and grants (issue 6),
through the admin API (/_/admin/, signed with the root key) and boto3.

Two users (alice: a read-write and a read-only key; bob: one key) each see
only their buckets; grants (read, write, prefix) take effect and are
revoked on the next request; read-only keys cannot write; anonymous
requests are denied unless the bucket is public-read; a removed key or
user stops working at once; secrets are neither logged (debug log grepped)
nor stored in clear (data dir grepped); ListObjectVersions pages; a restart
keeps everything.
"""
import json
import os
import sys
import urllib.parse

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402

SECRETS = []  # every secret handed out, grepped for in the log at the end
USERS = {}    # name -> {"keys": [(ak, sk, read_only)], "id": ...}


def admin(srv, method, what, ok=True, **params):
    q = urllib.parse.urlencode(sorted(params.items()), quote_via=urllib.parse.quote)
    r = srv.request(method, "/_/admin/" + what, query=q)
    if ok:
        h.check(200 <= r.status < 300, "%s /_/admin/%s?%s: HTTP %d %r" % (method, what, q, r.status, r.body[:300]))
    return r


def add_user(srv, name, is_admin=False):
    params = {"name": name}
    if is_admin:
        params["admin"] = "true"
    u = json.loads(admin(srv, "POST", "users", **params).body)
    h.eq(u["name"], name, "user name")
    h.eq(len(u["id"]), 64, "user id length")
    USERS[name] = {"id": u["id"], "keys": []}
    return u


def add_key(srv, user, read_only=False):
    params = {"user": user}
    if read_only:
        params["read_only"] = "true"
    k = json.loads(admin(srv, "POST", "keys", **params).body)
    h.eq(k["user"], user, "key's user")
    h.eq(k["read_only"], read_only, "read_only flag")
    SECRETS.append(k["secret_key"])
    USERS[user]["keys"].append((k["access_key"], k["secret_key"], read_only))
    return k["access_key"], k["secret_key"]


def client_for(srv, user, i=0):
    ak, sk, _ = USERS[user]["keys"][i]
    return srv.client(access_key=ak, secret_key=sk)


def bucket_names(s3):
    return sorted(b["Name"] for b in s3.list_buckets()["Buckets"])


def setup_users(srv):
    if "alice" in USERS:
        return
    add_user(srv, "alice")
    add_user(srv, "bob")
    add_key(srv, "alice")
    add_key(srv, "alice", read_only=True)
    add_key(srv, "bob")


def test_two_users_see_only_their_buckets(srv):
    setup_users(srv)
    alice, bob = client_for(srv, "alice"), client_for(srv, "bob")
    alice.create_bucket(Bucket="alice-data")
    bob.create_bucket(Bucket="bob-ckpt")
    h.eq(bucket_names(alice), ["alice-data"], "alice's buckets")
    h.eq(bucket_names(bob), ["bob-ckpt"], "bob's buckets")
    h.eq(bucket_names(client_for(srv, "alice", 1)), ["alice-data"], "alice's read-only key sees hers")
    root = srv.client()
    names = bucket_names(root)
    h.check("alice-data" in names and "bob-ckpt" in names, "root sees all: %r" % names)
    out = alice.list_buckets()
    h.eq(out["Owner"]["ID"], USERS["alice"]["id"], "ListBuckets Owner ID")
    h.eq(out["Owner"]["DisplayName"], "alice", "ListBuckets DisplayName")
    # Owner in listings is the bucket's owner.
    alice.put_object(Bucket="alice-data", Key="k1", Body=b"one")
    v2 = alice.list_objects_v2(Bucket="alice-data", FetchOwner=True)
    h.eq(v2["Contents"][0]["Owner"]["DisplayName"], "alice", "ListObjectsV2 fetch-owner")
    h.eq(v2["Contents"][0]["Owner"]["ID"], USERS["alice"]["id"], "ListObjectsV2 owner id")
    h.check("Owner" not in alice.list_objects_v2(Bucket="alice-data")["Contents"][0], "no Owner without fetch-owner")
    v1 = root.list_objects(Bucket="alice-data")
    h.eq(v1["Contents"][0]["Owner"]["DisplayName"], "alice", "ListObjects v1 owner (as root)")
    # Each user is denied the other's bucket.
    with h.client_error("AccessDenied", 403):
        bob.list_objects_v2(Bucket="alice-data")
    with h.client_error("AccessDenied", 403):
        bob.get_object(Bucket="alice-data", Key="k1")
    with h.client_error("AccessDenied", 403):
        bob.put_object(Bucket="alice-data", Key="x", Body=b"x")
    with h.client_error("AccessDenied", 403):
        bob.delete_bucket(Bucket="alice-data")
    with h.client_error("BucketAlreadyExists", 409):
        bob.create_bucket(Bucket="alice-data")
    # Her own bucket again: 200 in us-east-1 (AWS's legacy answer).
    alice.create_bucket(Bucket="alice-data")


def test_grant_read_then_revoke(srv):
    setup_users(srv)
    alice, bob = client_for(srv, "alice"), client_for(srv, "bob")
    alice.put_object(Bucket="alice-data", Key="shared", Body=b"shared bytes")
    with h.client_error("AccessDenied", 403):
        bob.get_object(Bucket="alice-data", Key="shared")
    admin(srv, "PUT", "grants", user="bob", bucket="alice-data", level="read")
    h.eq(bob.get_object(Bucket="alice-data", Key="shared")["Body"].read(), b"shared bytes", "granted GET")
    bob.head_bucket(Bucket="alice-data")
    h.check("alice-data" in bucket_names(bob), "a granted bucket is listed")
    keys = [o["Key"] for o in bob.list_objects_v2(Bucket="alice-data")["Contents"]]
    h.check("shared" in keys, "granted list: %r" % keys)
    with h.client_error("AccessDenied", 403):
        bob.put_object(Bucket="alice-data", Key="nope", Body=b"x")
    grants = json.loads(admin(srv, "GET", "grants", user="bob").body)["grants"]
    h.eq([(g["bucket"], g["level"]) for g in grants], [("alice-data", "read")], "grant list")
    admin(srv, "DELETE", "grants", user="bob", bucket="alice-data")
    with h.client_error("AccessDenied", 403):
        bob.get_object(Bucket="alice-data", Key="shared")
    h.eq(bucket_names(bob), ["bob-ckpt"], "revoked bucket no longer listed")


def test_read_only_key(srv):
    setup_users(srv)
    ro = client_for(srv, "alice", 1)
    client_for(srv, "alice").put_object(Bucket="alice-data", Key="ro-visible", Body=b"ro")
    h.eq(ro.get_object(Bucket="alice-data", Key="ro-visible")["Body"].read(), b"ro", "read-only GET")
    with h.client_error("AccessDenied", 403):
        ro.put_object(Bucket="alice-data", Key="ro-put", Body=b"x")
    with h.client_error("AccessDenied", 403):
        ro.delete_object(Bucket="alice-data", Key="ro-visible")
    with h.client_error("AccessDenied", 403):
        ro.create_bucket(Bucket="alice-ro-bucket")
    with h.client_error("AccessDenied", 403):
        ro.create_multipart_upload(Bucket="alice-data", Key="ro-mp")
    # The read-only check comes before the bucket lookup: a write into a
    # bucket that does not exist (yet) is denied, not NoSuchBucket.
    with h.client_error("AccessDenied", 403):
        ro.put_object(Bucket="alice-nobucket", Key="ro-put", Body=b"x")
    with h.client_error("AccessDenied", 403):
        ro.delete_bucket(Bucket="alice-nobucket")
    with h.client_error("AccessDenied", 403):
        ro.create_multipart_upload(Bucket="alice-nobucket", Key="ro-mp")


def test_prefix_grant(srv):
    setup_users(srv)
    alice, bob = client_for(srv, "alice"), client_for(srv, "bob")
    alice.put_object(Bucket="alice-data", Key="dataset/shard-0.tar", Body=b"shard")
    alice.put_object(Bucket="alice-data", Key="private/ckpt", Body=b"secret weights")
    admin(srv, "PUT", "grants", user="bob", bucket="alice-data", level="read", prefix="dataset/")
    h.eq(bob.get_object(Bucket="alice-data", Key="dataset/shard-0.tar")["Body"].read(), b"shard", "GET under prefix")
    with h.client_error("AccessDenied", 403):
        bob.get_object(Bucket="alice-data", Key="private/ckpt")
    with h.client_error(("AccessDenied", "403"), 403):  # HEAD: no body, no code
        bob.head_object(Bucket="alice-data", Key="private/ckpt")
    keys = [o["Key"] for o in bob.list_objects_v2(Bucket="alice-data", Prefix="dataset/")["Contents"]]
    h.eq(keys, ["dataset/shard-0.tar"], "list under prefix")
    with h.client_error("AccessDenied", 403):
        bob.list_objects_v2(Bucket="alice-data", Prefix="private/")
    with h.client_error("AccessDenied", 403):
        bob.list_objects_v2(Bucket="alice-data")
    with h.client_error("AccessDenied", 403):
        bob.put_object(Bucket="alice-data", Key="dataset/new", Body=b"x")
    # A write grant on the prefix: PUT under it, not outside it.
    admin(srv, "PUT", "grants", user="bob", bucket="alice-data", level="write", prefix="dataset/")
    bob.put_object(Bucket="alice-data", Key="dataset/new", Body=b"x")
    with h.client_error("AccessDenied", 403):
        bob.put_object(Bucket="alice-data", Key="private/new", Body=b"x")
    out = bob.delete_objects(Bucket="alice-data", Delete={"Objects": [{"Key": "dataset/new"}, {"Key": "private/ckpt"}]})
    h.eq([d["Key"] for d in out.get("Deleted", [])], ["dataset/new"], "DeleteObjects allowed key")
    h.eq([(e["Key"], e["Code"]) for e in out.get("Errors", [])], [("private/ckpt", "AccessDenied")], "DeleteObjects denied key")
    h.eq(alice.get_object(Bucket="alice-data", Key="private/ckpt")["Body"].read(), b"secret weights", "denied key survives")
    # Copying out of the private prefix into the granted one is a read of private/.
    with h.client_error("AccessDenied", 403):
        bob.copy_object(Bucket="alice-data", Key="dataset/stolen", CopySource={"Bucket": "alice-data", "Key": "private/ckpt"})
    admin(srv, "DELETE", "grants", user="bob", bucket="alice-data")


def test_write_grant(srv):
    setup_users(srv)
    alice, bob = client_for(srv, "alice"), client_for(srv, "bob")
    admin(srv, "PUT", "grants", user="bob", bucket="alice-data", level="write")
    bob.put_object(Bucket="alice-data", Key="by-bob", Body=b"bob wrote this")
    h.eq(alice.get_object(Bucket="alice-data", Key="by-bob")["Body"].read(), b"bob wrote this", "alice reads bob's PUT")
    bob.delete_object(Bucket="alice-data", Key="by-bob")
    with h.client_error("NoSuchKey", 404):
        alice.get_object(Bucket="alice-data", Key="by-bob")
    mp = bob.create_multipart_upload(Bucket="alice-data", Key="bob-mp")
    part = bob.upload_part(Bucket="alice-data", Key="bob-mp", UploadId=mp["UploadId"], PartNumber=1, Body=b"p" * 1000)
    bob.complete_multipart_upload(Bucket="alice-data", Key="bob-mp", UploadId=mp["UploadId"],
                                  MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    h.eq(alice.get_object(Bucket="alice-data", Key="bob-mp")["Body"].read(), b"p" * 1000, "multipart by grantee")
    # Write is not bucket admin.
    with h.client_error("AccessDenied", 403):
        bob.delete_bucket(Bucket="alice-data")
    with h.client_error("AccessDenied", 403):
        bob.put_bucket_acl(Bucket="alice-data", ACL="public-read")
    admin(srv, "DELETE", "grants", user="bob", bucket="alice-data")
    with h.client_error("AccessDenied", 403):
        bob.put_object(Bucket="alice-data", Key="by-bob", Body=b"x")


def test_anonymous_and_public_read(srv):
    setup_users(srv)
    alice = client_for(srv, "alice")
    alice.create_bucket(Bucket="alice-pub", ObjectOwnership="ObjectWriter")  # ACLs on
    alice.put_object(Bucket="alice-pub", Key="open.txt", Body=b"for everyone")
    r = srv.request("GET", "/alice-pub/open.txt", sign=False)
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "anonymous GET of a private bucket")
    alice.put_bucket_acl(Bucket="alice-pub", ACL="public-read")
    acl = alice.get_bucket_acl(Bucket="alice-pub")
    h.check(any(g["Grantee"].get("URI", "").endswith("/AllUsers") and g["Permission"] == "READ" for g in acl["Grants"]),
            "GetBucketAcl shows AllUsers READ: %r" % acl["Grants"])
    h.eq(acl["Owner"]["DisplayName"], "alice", "acl owner")
    # public-read grants READ (listings, objects), not READ_ACP: the ACL,
    # which names the owner's canonical id, stays the owner's (issue 16).
    r = srv.request("GET", "/alice-pub", query="acl", sign=False)
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "anonymous GetBucketAcl of a public-read bucket")
    h.check(USERS["alice"]["id"].encode() not in r.body, "the owner's id leaked to an anonymous caller")
    with h.client_error("AccessDenied", 403):
        client_for(srv, "bob").get_bucket_acl(Bucket="alice-pub")
    r = srv.request("HEAD", "/alice-pub", sign=False)
    h.eq(r.status, 200, "anonymous HeadBucket of a public-read bucket")
    r = srv.request("GET", "/alice-pub/open.txt", sign=False)
    h.eq(r.status, 200, "anonymous GET of a public-read bucket")
    h.eq(r.body, b"for everyone", "anonymous body")
    r = srv.request("GET", "/alice-pub", query="list-type=2", sign=False)
    h.eq(r.status, 200, "anonymous list of a public-read bucket")
    r = srv.request("PUT", "/alice-pub/evil", body=b"x", sign=False)
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "anonymous PUT on public-read")
    r = srv.request("DELETE", "/alice-pub/open.txt", sign=False)
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "anonymous DELETE on public-read")
    # bob (signed, no grant) may read a public bucket but not write it.
    bob = client_for(srv, "bob")
    h.eq(bob.get_object(Bucket="alice-pub", Key="open.txt")["Body"].read(), b"for everyone", "bob reads public")
    with h.client_error("AccessDenied", 403):
        bob.put_object(Bucket="alice-pub", Key="bob", Body=b"x")
    alice.put_bucket_acl(Bucket="alice-pub", ACL="private")
    r = srv.request("GET", "/alice-pub/open.txt", sign=False)
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "anonymous GET after private")
    # Created public-read with the canned ACL header; the admin API flips it too.
    alice.create_bucket(Bucket="alice-pub2", ACL="public-read", ObjectOwnership="ObjectWriter")
    alice.put_object(Bucket="alice-pub2", Key="o", Body=b"o")
    h.eq(srv.request("GET", "/alice-pub2/o", sign=False).status, 200, "public-read from CreateBucket")
    admin(srv, "PUT", "buckets", bucket="alice-pub2", public="off")
    h.eq(srv.request("GET", "/alice-pub2/o", sign=False).status, 403, "admin public off")
    # Service-level and unknown anonymous requests are denied.
    h.eq(srv.request("GET", "/", sign=False).status, 403, "anonymous ListBuckets")
    # A bucket that does not exist: NoSuchBucket, as S3 answers anyone.
    r = srv.request("GET", "/no-such-bucket/x", sign=False)
    h.expect_s3_error(r.status, r.body, 404, "NoSuchBucket", "anonymous GET, no bucket")


def test_removed_key_and_user_stop_at_once(srv):
    setup_users(srv)
    add_user(srv, "carol")
    ak1, sk1 = add_key(srv, "carol")
    ak2, sk2 = add_key(srv, "carol")
    c1 = srv.client(access_key=ak1, secret_key=sk1)
    c2 = srv.client(access_key=ak2, secret_key=sk2)
    c1.create_bucket(Bucket="carol-b")
    c1.list_objects_v2(Bucket="carol-b")  # warms the signing-key cache of a thread
    keys = json.loads(admin(srv, "GET", "keys", user="carol").body)["keys"]
    h.eq(sorted(k["access_key"] for k in keys), sorted([ak1, ak2]), "key list")
    h.check(all("secret" not in json.dumps(k) for k in keys), "key list shows no secret")
    admin(srv, "DELETE", "keys", access_key=ak1)
    for _ in range(3):
        with h.client_error("InvalidAccessKeyId", 403):
            c1.list_objects_v2(Bucket="carol-b")
    c2.list_objects_v2(Bucket="carol-b")
    # The same connection (keep-alive, same server thread) is refused too.
    r = srv.request("GET", "/carol-b", query="list-type=2", access_key=ak1, secret_key=sk1)
    h.eq(r.status, 403, "removed key, raw request")
    admin(srv, "DELETE", "users", name="carol")
    with h.client_error("InvalidAccessKeyId", 403):
        c2.list_objects_v2(Bucket="carol-b")
    # The bucket stays; root still reaches it.
    srv.client().head_bucket(Bucket="carol-b")
    h.eq(admin(srv, "DELETE", "users", ok=False, name="carol").status, 400, "removing twice")


def test_admin_api_is_for_admins(srv):
    setup_users(srv)
    ak, sk, _ = USERS["bob"]["keys"][0]
    r = srv.request("GET", "/_/admin/users", access_key=ak, secret_key=sk)
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "non-admin user on the admin API")
    r = srv.request("GET", "/_/admin/users", sign=False)
    h.eq(r.status, 403, "anonymous admin API")
    add_user(srv, "ops", is_admin=True)
    oak, osk = add_key(srv, "ops")
    r = srv.request("POST", "/_/admin/users", query="name=dave", access_key=oak, secret_key=osk)
    h.eq(r.status, 200, "admin user adds a user (%r)" % r.body[:200])
    r = srv.request("DELETE", "/_/admin/users", query="name=dave", access_key=oak, secret_key=osk)
    h.eq(r.status, 204, "admin user removes a user")
    h.eq(admin(srv, "POST", "users", ok=False, name="root").status, 400, "root is reserved")
    h.eq(admin(srv, "POST", "users", ok=False, name="bad name").status, 400, "bad name")
    h.eq(admin(srv, "POST", "users", ok=False, name="alice").status, 400, "duplicate user")
    h.eq(admin(srv, "PUT", "grants", ok=False, user="bob", bucket="alice-data", level="owner").status, 400, "bad level")


def test_versions_listing_and_unversioned_apis(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket="versions")
    keys = ["a/1", "a/2", "b", "c", "d/x/y"]
    for k in keys:
        s3.put_object(Bucket="versions", Key=k, Body=k.encode())
    got = []
    pages = 0
    for page in s3.get_paginator("list_object_versions").paginate(Bucket="versions", PaginationConfig={"PageSize": 2}):
        pages += 1
        for v in page.get("Versions", []):
            h.eq(v["VersionId"], "null", "VersionId")
            h.eq(v["IsLatest"], True, "IsLatest")
            h.eq(v["Owner"]["DisplayName"], "root", "version owner")
            got.append(v["Key"])
    h.eq(got, keys, "all versions, in order")
    h.eq(pages, 3, "pages of 2")
    out = s3.list_object_versions(Bucket="versions", Delimiter="/", Prefix="")
    h.eq([v["Key"] for v in out["Versions"]], ["b", "c"], "versions with delimiter")
    h.eq([p["Prefix"] for p in out["CommonPrefixes"]], ["a/", "d/"], "common prefixes")
    out = s3.list_object_versions(Bucket="versions", KeyMarker="b", VersionIdMarker="null")
    h.eq([v["Key"] for v in out["Versions"]], ["c", "d/x/y"], "after key-marker")
    with h.client_error("InvalidArgument", 400):
        s3.list_object_versions(Bucket="versions", KeyMarker="b", VersionIdMarker="v123")
    vc = s3.get_bucket_versioning(Bucket="versions")
    h.check("Status" not in vc, "unversioned bucket: %r" % vc)
    out = s3.delete_objects(Bucket="versions", BypassGovernanceRetention=True,
                            Delete={"Objects": [{"Key": "a/1"}, {"Key": "a/2", "VersionId": "null"}]})
    h.eq(sorted(d["Key"] for d in out["Deleted"]), ["a/1", "a/2"], "DeleteObjects with bypass-governance")
    s3.delete_object(Bucket="versions", Key="b", VersionId="null")
    with h.client_error(("NoSuchKey", "404"), 404):  # HEAD: no body, no code
        s3.head_object(Bucket="versions", Key="b")
    with h.client_error("InvalidArgument", 400):
        s3.delete_object(Bucket="versions", Key="c", VersionId="3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY")
    # Versions listing follows the caller's grants like any listing.
    setup_users(srv)
    with h.client_error("AccessDenied", 403):
        client_for(srv, "bob").list_object_versions(Bucket="versions")


def test_secrets_not_in_clear_on_disk(srv):
    setup_users(srv)
    secrets = [s.encode() for s in SECRETS]
    h.check(secrets, "secrets were issued")
    for root, _, files in os.walk(srv.data_dir):
        for f in files:
            path = os.path.join(root, f)
            if os.path.getsize(path) > 256 << 20:
                continue  # volume files hold object data only; the index is small
            with open(path, "rb") as fh:
                data = fh.read()
            for s in secrets:
                h.check(s not in data, "a secret in clear in %s" % path)
    key_file = os.path.join(srv.data_dir, "secret.key")
    h.eq(os.stat(key_file).st_mode & 0o777, 0o600, "secret.key mode")
    h.eq(os.path.getsize(key_file), 32, "secret.key size")


def test_restart_keeps_users_keys_grants(srv):
    setup_users(srv)
    admin(srv, "PUT", "grants", user="bob", bucket="alice-data", level="read", prefix="dataset/")
    srv.restart()
    alice, bob = client_for(srv, "alice"), client_for(srv, "bob")
    h.eq(bucket_names(alice)[:1], ["alice-data"], "alice's buckets after restart")
    h.eq(bob.get_object(Bucket="alice-data", Key="dataset/shard-0.tar")["Body"].read(), b"shard", "grant after restart")
    with h.client_error("AccessDenied", 403):
        client_for(srv, "alice", 1).put_object(Bucket="alice-data", Key="x", Body=b"x")
    users = json.loads(admin(srv, "GET", "users").body)["users"]
    h.check({"alice", "bob"} <= {u["name"] for u in users}, "users after restart: %r" % users)
    admin(srv, "DELETE", "grants", user="bob", bucket="alice-data")


def test_secrets_never_logged(srv):
    """Runs last: the debug log of the whole run must not hold any secret."""
    setup_users(srv)
    h.check(SECRETS, "secrets were issued")
    text = b""
    for name in os.listdir(srv.tmp):
        if name.startswith("stderr."):
            with open(os.path.join(srv.tmp, name), "rb") as f:
                text += f.read()
    h.check(b" DEBUG " in text or b"DEBUG" in text, "the server logged at debug level")
    h.check(b"access key" in text, "the log mentions key changes")
    for s in SECRETS + [srv.secret_key]:
        h.check(s.encode() not in text, "a secret reached the log")


if __name__ == "__main__":
    h.main([
        test_two_users_see_only_their_buckets,
        test_grant_read_then_revoke,
        test_read_only_key,
        test_prefix_grant,
        test_write_grant,
        test_anonymous_and_public_read,
        test_removed_key_and_user_stop_at_once,
        test_admin_api_is_for_admins,
        test_versions_listing_and_unversioned_apis,
        test_secrets_not_in_clear_on_disk,
        test_restart_keeps_users_keys_grants,
        test_secrets_never_logged,
    ], config="log_level = debug\n")
