"""test_shard_members.py: the `shard` tool (and so libshard's member and
batch calls) on shardstore's tar extensions: `cat --member` (whole, a
range, a suffix, streamed in parallel ranges larger than the chunk size),
`ls --members` paged over 2500 members with long and UTF-8 names, and
`shard batch` from a file and from stdin, with missing entries (with and
without --continue-on-error) and bad entry lines."""
import io
import os
import sys
import tarfile

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402
import shard_util as su  # noqa: E402

B = "members"


def make_tar(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


LONG = "deep/" + "x" * 150 + "/000001.json"
UTF8 = "ünïcødé/样本-000002.txt"
BIG = h.random_bytes(3 * 1024 * 1024 + 17, seed=5)
MEMBERS = [("000001.jpg", h.random_bytes(5000, 1)), ("000001.cls", b"3"), (LONG, b"{}"),
           (UTF8, "текст".encode()), ("big.bin", BIG)]


def untar(raw):
    with tarfile.open(fileobj=io.BytesIO(raw)) as tf:
        return [(m.name, tf.extractfile(m).read()) for m in tf]


def test_setup(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket=B)
    s3.put_object(Bucket=B, Key="s.tar", Body=make_tar(MEMBERS))
    s3.put_object(Bucket=B, Key="plain", Body=b"abcdefghij")


def test_cat_member(srv):
    m = dict(MEMBERS)
    url = "s3://%s/s.tar" % B
    for name in ("000001.jpg", LONG, UTF8):
        p = su.run(srv, "cat", url, "--member", name)
        h.same_bytes(p.stdout, m[name], "cat --member %s" % name)
    p = su.run(srv, "cat", url, "--member", "000001.jpg", "--range", "10-19")
    h.same_bytes(p.stdout, m["000001.jpg"][10:20], "member range")
    p = su.run(srv, "cat", url, "--member", "000001.jpg", "--range", "-7")
    h.same_bytes(p.stdout, m["000001.jpg"][-7:], "member suffix")
    # Larger than chunk * parallel: several rounds of parallel member ranges.
    p = su.run(srv, "--chunk-size", "256K", "--parallel", "4", "cat", url, "--member", "big.bin")
    h.same_bytes(p.stdout, BIG, "big member in parallel ranges")
    p = su.run(srv, "cat", url, "--member", "nope", rc=1)
    h.check(b"NoSuchMember" in p.stderr, "NoSuchMember named: %r" % p.stderr)
    p = su.run(srv, "cat", "s3://%s/plain" % B, "--member", "x", rc=1)
    h.check(b"InvalidArchive" in p.stderr, "InvalidArchive named: %r" % p.stderr)


def test_ls_members(srv):
    p = su.run(srv, "ls", "--members", "s3://%s/s.tar" % B)
    lines = p.stdout.decode().splitlines()
    names = [ln.split(None, 2)[2] for ln in lines]
    h.eq(names, [n for n, _ in MEMBERS], "member names in archive order")
    raw = make_tar(MEMBERS)
    with tarfile.open(fileobj=io.BytesIO(raw)) as tf:
        want = ["%12d %10d %s" % (t.offset_data, t.size, t.name) for t in tf]
    h.eq(lines, want, "offsets and sizes")
    # Paged: 2500 members take three pages of 1000.
    many = [("%05d.cls" % i, b"%d" % i) for i in range(2500)]
    srv.client().put_object(Bucket=B, Key="many.tar", Body=make_tar(many))
    p = su.run(srv, "ls", "--members", "s3://%s/many.tar" % B)
    got = [ln.split(None, 2)[2] for ln in p.stdout.decode().splitlines()]
    h.eq(got, [n for n, _ in many], "2500 members over pages")
    p = su.run(srv, "ls", "--members", "s3://%s/plain" % B, rc=1)
    h.check(b"InvalidArchive" in p.stderr, "not a tar: %r" % p.stderr)


def test_batch(srv):
    m = dict(MEMBERS)
    lines = ["s.tar\t000001.jpg", "plain", "plain\t\t2-4", "s.tar\t%s" % UTF8,
             "s.tar\t000001.jpg\tbytes=0-9", "s.tar\t%s" % LONG]
    text = ("\n".join(lines) + "\n").encode()
    p = su.run(srv, "batch", "s3://%s" % B, "-", input=text)
    got = untar(p.stdout)
    h.eq([n for n, _ in got], ["s.tar/000001.jpg", "plain", "plain", "s.tar/" + UTF8,
                               "s.tar/000001.jpg", "s.tar/" + LONG], "names")
    h.eq([d for _, d in got], [m["000001.jpg"], b"abcdefghij", b"cde", m[UTF8],
                               m["000001.jpg"][:10], m[LONG]], "bytes")
    path = os.path.join(srv.tmp, "entries.txt")
    with open(path, "wb") as f:
        f.write(b"plain\nmissing\ns.tar\tnope\n")
    p = su.run(srv, "batch", "s3://%s" % B, path, "--continue-on-error")
    got = untar(p.stdout)
    h.eq([n for n, _ in got], ["plain", "__error__/missing", "__error__/s.tar/nope"], "errors")
    # Without it: the first entry missing is the S3 error, a later one cuts the tar.
    p = su.run(srv, "batch", "s3://%s" % B, "-", input=b"missing\nplain\n", rc=1)
    h.check(b"NoSuchKey" in p.stderr, "first entry error: %r" % p.stderr)
    p = su.run(srv, "batch", "s3://%s" % B, "-", input=b"plain\nmissing\nplain\n", rc=1)
    h.check(b"BatchCut" in p.stderr, "cut named: %r" % p.stderr)
    h.check(p.stdout.startswith(make_tar([("plain", b"abcdefghij")])[:512 + 10]) or
            p.stdout[:5] == b"plain", "the first entry came out")
    su.run(srv, "batch", "s3://%s" % B, "-", input=b"\tm\n", rc=2)
    su.run(srv, "batch", "s3://%s" % B, "-", input=b"", rc=2)
    su.run(srv, "batch", "s3://%s/key" % B, "-", input=b"plain\n", rc=2)


TESTS = [test_setup, test_cat_member, test_ls_members, test_batch]

if __name__ == "__main__":
    h.main(TESTS)
