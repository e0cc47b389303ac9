"""test_shard_versions.py: libshard's shard_list_versions through
`shard ls --versions`, checked against boto3's ListObjectVersions of the
same buckets: every version and delete marker with its version id, latest
flag, size and date, in the server's order, across page boundaries (a key
whose 1,050 versions straddle the first page of 1000), with keys that need
URL encoding, a null version, CommonPrefixes without -r, and a bucket
never versioned (each object once, version "null"). The pipelined paging
of shard_list_versions (the next page fetched while one is scanned) gives
exactly the sequential paging's entries with pages of 1 to 7 entries, with
and without a delimiter, and stops cleanly when its callback says so;
the server sends IsTruncated, NextKeyMarker and NextVersionIdMarker before
the first entry of a page (what lets the next request go early). A server
whose markers do not advance ends the listing with an error."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402
import shard_util as su  # noqa: E402

B = "vers"
PLAIN = "plain-bucket"
ODD = ["sp ace+plus%pct", "ünï/cødé", "ctl\x01key", "x&<>\"'y", "dir/a", "dir/b", "dir/sub/c"]
LINE = re.compile(r"^(\S+) (\S+) +(\S+) (\S+) (latest|-) (.*)$", re.S)


def shard_versions(srv, url, *flags):
    """The entries `shard ls --versions` prints: (key, vid, latest, marker,
    size, date) tuples, or ("PRE", prefix) for a common prefix."""
    p = su.run(srv, "ls", "--versions", *flags, url)
    out = []
    for raw in p.stdout.decode("utf-8").split("\n")[:-1]:
        if raw.lstrip().startswith("PRE "):
            out.append(("PRE", raw.lstrip()[4:]))
            continue
        m = LINE.match(raw)
        h.check(m is not None, "unparsable line %r" % raw)
        date, time_, size, vid, latest, key = m.groups()
        is_marker = size == "DEL"
        out.append((key, vid, latest == "latest", is_marker, 0 if is_marker else int(size),
                    date + " " + time_))
    return out


def boto_versions(s3, bucket, prefix=""):
    """boto3's view: Versions and DeleteMarkers, each in the server's order."""
    vers, markers = [], []
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
        for v in page.get("Versions", []):
            vers.append((v["Key"], v["VersionId"], v["IsLatest"], False, v["Size"],
                         v["LastModified"].strftime("%Y-%m-%d %H:%M:%S")))
        for d in page.get("DeleteMarkers", []):
            markers.append((d["Key"], d["VersionId"], d["IsLatest"], True, 0,
                            d["LastModified"].strftime("%Y-%m-%d %H:%M:%S")))
    return vers, markers


def same_as_boto(got, vers, markers, what):
    h.check(len(got) == len(vers) + len(markers),
            "%s: %d entries, boto3 %d + %d" % (what, len(got), len(vers), len(markers)))
    h.check([e for e in got if not e[3]] == vers, "%s: versions differ from boto3's" % what)
    h.check([e for e in got if e[3]] == markers, "%s: delete markers differ from boto3's" % what)
    keys = [e[0] for e in got]
    h.check(keys == sorted(keys, key=lambda k: k.encode()), "%s: not in key order" % what)
    latest = [e[0] for e in got if e[2]]
    h.check(len(latest) == len(set(latest)) == len(set(keys)), "%s: one latest per key" % what)


def test_setup(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket=B)
    s3.put_object(Bucket=B, Key="nullkey", Body=b"before versioning")
    s3.put_bucket_versioning(Bucket=B, VersioningConfiguration={"Status": "Enabled"})
    for k in ODD:
        s3.put_object(Bucket=B, Key=k, Body=b"one")
        s3.put_object(Bucket=B, Key=k, Body=b"second")
    s3.delete_object(Bucket=B, Key="dir/b")
    s3.put_object(Bucket=B, Key="nullkey", Body=b"after")
    for i in range(1050):
        s3.put_object(Bucket=B, Key="deep", Body=b"x" * (i % 7))
    s3.delete_object(Bucket=B, Key="deep")
    s3.create_bucket(Bucket=PLAIN)
    for k in ("p/1", "p/2", "q"):
        s3.put_object(Bucket=PLAIN, Key=k, Body=k.encode())


def test_all_pages(srv):
    s3 = srv.client()
    got = shard_versions(srv, "s3://%s" % B, "-r")
    vers, markers = boto_versions(s3, B)
    same_as_boto(got, vers, markers, "whole bucket")
    h.check(len(got) == 1 + 1 + 2 * len(ODD) + 1 + 1051, "entries: %d" % len(got))
    deep = [e for e in got if e[0] == "deep"]
    h.check(deep[0][2] and deep[0][3], "deep: the newest is the latest delete marker")
    h.check(len({e[1] for e in deep}) == 1051, "deep: every version once across pages")
    null = [e for e in got if e[0] == "nullkey" and e[1] == "null"]
    h.check(len(null) == 1 and not null[0][2] and null[0][4] == len(b"before versioning"),
            "the null version: %r" % null)


def test_prefix_and_delimiter(srv):
    s3 = srv.client()
    got = shard_versions(srv, "s3://%s/dir/" % B)
    h.check(("PRE", "sub/") in got, "common prefix sub/: %r" % got)
    listed = [e for e in got if e[0] != "PRE"]
    h.check({e[0] for e in listed} == {"a", "b"}, "names under dir/ (stripped): %r" % listed)
    got = shard_versions(srv, "s3://%s/dir/" % B, "-r")
    vers, markers = boto_versions(s3, B, "dir/")
    same_as_boto(got, vers, markers, "prefix dir/")


def test_never_versioned(srv):
    got = shard_versions(srv, "s3://%s" % PLAIN, "-r")
    h.check([(e[0], e[1], e[2], e[3], e[4]) for e in got] ==
            [("p/1", "null", True, False, 3), ("p/2", "null", True, False, 3),
             ("q", "null", True, False, 1)], "unversioned bucket: %r" % got)


def driver(srv, mode, bucket, max_keys, prefix="", delimiter="", stop=0):
    """list_versions_driver: the entries (tuples, keys decoded) and the
    listing's result line ("rc=N")."""
    exe = os.path.join(su.builddir(), "tests", "integration", "list_versions_driver")
    if not os.access(exe, os.X_OK):
        raise h.Skip("list_versions_driver not built (%s)" % exe)
    p = subprocess.run([exe, mode, bucket, str(max_keys), prefix, delimiter, str(stop)],
                       capture_output=True, timeout=120, env=su.base_env(srv),
                       stdin=subprocess.DEVNULL)
    h.check(p.returncode == 0, "driver %s: exit %d: %r" % (mode, p.returncode, p.stderr[-500:]))
    entries, rc = [], None
    for line in p.stdout.decode("ascii").split("\n")[:-1]:
        f = line.split(" ")
        if f[0] in ("V", "D", "P"):
            key = "" if f[1] == "-" else bytes.fromhex(f[1]).decode("utf-8")
            entries.append(tuple([f[0], key] + f[2:]))
        elif line.startswith("rc="):
            rc = line
        else:
            rc = (rc or "") + " " + line
    return entries, rc


def test_pipelined_as_sequential(srv):
    s3 = srv.client()
    vers, markers = boto_versions(s3, B)
    for prefix, delimiter, sizes in (("", "", (3, 7, 1000)), ("dir/", "", (1, 2)),
                                     ("", "/", (1, 2, 5)), ("deep", "", (1000,))):
        first = None
        for n in sizes:
            seq, rc = driver(srv, "seq", B, n, prefix, delimiter)
            h.check(rc == "rc=0", "sequential, %r %r by %d: %s" % (prefix, delimiter, n, rc))
            pipe, rc = driver(srv, "pipe", B, n, prefix, delimiter)
            h.check(rc == "rc=0", "pipelined, %r %r by %d: %s" % (prefix, delimiter, n, rc))
            h.check(pipe == seq, "pipelined and sequential differ (%r %r by %d): %d vs %d "
                    "entries, first difference %r" % (
                        prefix, delimiter, n, len(pipe), len(seq),
                        next(((a, b) for a, b in zip(pipe, seq) if a != b), None)))
            # Pages of any size list the same versions in the same order (the
            # common prefixes of a page follow its versions, so only their set).
            view = ([e for e in seq if e[0] != "P"], sorted(e for e in seq if e[0] == "P"))
            if first is None:
                first = view
            h.check(view == first, "pages of %d list other entries (%r %r)" % (n, prefix, delimiter))
            prefixes = [e[1] for e in seq if e[0] == "P"]
            h.check(len(prefixes) == len(set(prefixes)), "a common prefix twice: %r" % prefixes)
        if prefix == "" and delimiter == "":
            # Every field against boto3's view, the ETag's quotes (&quot; on the
            # wire) and the keys' XML specials included.
            def fields(e):
                return (e[1], e[2], e[3] == "latest", e[0] == "D", int(e[4]),
                        None if e[0] == "D" else e[5])
            got = [fields(e) for e in first[0]]
            want_v = [(k, v, lt, False, sz, None) for k, v, lt, _, sz, _ in vers]
            want_d = [(k, v, lt, True, 0, None) for k, v, lt, _, _, _ in markers]
            h.check([g[:5] + (None,) for g in got if not g[3]] == want_v, "versions differ from boto3's")
            h.check([g for g in got if g[3]] == want_d, "delete markers differ from boto3's")
            etags = {(v["Key"], v["VersionId"]): v["ETag"]
                     for page in s3.get_paginator("list_object_versions").paginate(Bucket=B)
                     for v in page.get("Versions", [])}
            h.check(all(etags[(g[0], g[1])] == g[5] for g in got if not g[3]),
                    "ETags differ from boto3's")
            h.check(any(g[0] == "x&<>\"'y" for g in got), "the key of XML specials is missing")
    h.check(len(first[0]) > 1000, "the deep key spans pages: %d" % len(first[0]))


def test_pipelined_stop(srv):
    seq, rc = driver(srv, "seq", B, 2)
    h.check(rc == "rc=0", rc)
    for stop in (1, 5, 6):
        pipe, rc = driver(srv, "pipe", B, 2, "", "", stop)
        h.check(rc == "rc=42", "the callback's value: %s" % rc)
        h.check(pipe == seq[:stop], "stopped after %d: %r" % (stop, pipe))


def test_markers_before_entries(srv):
    for query in ("max-keys=2&versions=", "encoding-type=url&max-keys=1&versions=",
                  "delimiter=%2F&max-keys=2&versions="):
        r = srv.request("GET", "/" + B, query=query)
        h.check(r.status == 200, "%s: %r" % (query, r))
        body = r.body
        starts = [i for i in (body.find(b"<Version>"), body.find(b"<DeleteMarker>"),
                              body.find(b"<CommonPrefixes>")) if i >= 0]
        h.check(starts, "%s: no entry: %r" % (query, body[:300]))
        for tag in (b"<IsTruncated>true</IsTruncated>", b"<NextKeyMarker>",
                    b"<NextVersionIdMarker>"):
            at = body.find(tag)
            h.check(0 <= at < min(starts), "%s: %s not before the first entry: %r" % (
                query, tag, body[:600]))


def test_errors(srv):
    p = su.run(srv, "ls", "--versions", "-r", "s3://no-such-bucket", rc=1)
    h.check(b"NoSuchBucket" in p.stderr, "missing bucket: %r" % p.stderr)


def stuck_page(key_marker, vid_marker):
    return ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListVersionsResult>"
            "<Name>b</Name><IsTruncated>true</IsTruncated>"
            "<NextKeyMarker>%s</NextKeyMarker><NextVersionIdMarker>%s</NextVersionIdMarker>"
            "<Version><Key>k</Key><VersionId>v1</VersionId><IsLatest>true</IsLatest>"
            "<LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>\"e\"</ETag>"
            "<Size>1</Size><StorageClass>STANDARD</StorageClass></Version>"
            "</ListVersionsResult>" % (key_marker, vid_marker)).encode()


def test_server_not_advancing(srv):
    """A server that names the same next markers on every page (or markers
    before the ones asked for) ends the listing with an error, in both
    pagings, instead of asking for the same page forever."""
    cases = {"same": lambda path: stuck_page("k", "v1"),
             "back": lambda path: stuck_page("a" if "key-marker" in path else "k", "v1")}
    exe = os.path.join(su.builddir(), "tests", "integration", "list_versions_driver")
    for name, answer in cases.items():
        with su.fake_s3(answer) as (env, seen):
            p = su.run(None, "ls", "--versions", "-r", "s3://b", env=env, rc=1, timeout=60)
            h.check(b"does not advance" in p.stderr, "%s: %r" % (name, p.stderr[-300:]))
            h.check(len(seen) <= 4, "%s: %d requests" % (name, len(seen)))
            for mode in ("seq", "pipe"):
                del seen[:]
                d = subprocess.run([exe, mode, "b", "1000"], capture_output=True, timeout=60,
                                   env=env, stdin=subprocess.DEVNULL)
                h.check(b"does not advance" in d.stdout + d.stderr,
                        "%s %s: %r %r" % (name, mode, d.stdout[-300:], d.stderr[-300:]))
                h.check(len(seen) <= 4, "%s %s: %d requests" % (name, mode, len(seen)))


TESTS = [test_setup, test_all_pages, test_prefix_and_delimiter, test_never_versioned,
         test_pipelined_as_sequential, test_pipelined_stop, test_markers_before_entries,
         test_errors, test_server_not_advancing]

if __name__ == "__main__":
    h.main(TESTS)
