"""test_batch_get.py: batch GET (POST /bucket?batch), answered as one
streamed tar.

Checked: whole objects, ranges and tar members (long and UTF-8 names, pax
headers) come back in request order with the right names and bytes; a
member larger than the server's ring and a batch of thousands of entries
stream through it; missing entries become __error__/ members with
ContinueOnError, while without it a missing first entry is a plain S3 error
and a later one truncates the stream (the chunked body never ends); an
entry outside a prefix grant is AccessDenied on its own; malformed and
over-long bodies are MalformedXML; a member of a tar with no index yet is
served (built on first use). The read-ahead window: hundreds of entries of
tar members and plain objects of mixed sizes (empty, below, at and above
the server's read chunk, above its direct-read limit), ranges and missing
entries come back in order with the right bytes; an entry deleted while
the batch runs is either the bytes it had when the window opened it or a
NoSuchKey placeholder; a client hanging up mid-batch leaves no pin, read or
fd behind.
"""
import collections
import http.client
import io
import json
import os
import random
import sys
import time
import tarfile
import urllib.parse
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402

B = "batch"


def make_tar(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mtime = 1700000000
            tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def batch_body(entries, cont=None):
    out = ["<Batch>"]
    if cont is not None:
        out.append("<ContinueOnError>%s</ContinueOnError>" % ("true" if cont else "false"))
    for e in entries:
        if isinstance(e, str):
            e = (e,)
        out.append("<Entry><Key>%s</Key>" % escape(e[0]))
        if len(e) > 1 and e[1] is not None:
            out.append("<Member>%s</Member>" % escape(e[1]))
        if len(e) > 2 and e[2] is not None:
            out.append("<Range>%s</Range>" % e[2])
        out.append("</Entry>")
    out.append("</Batch>")
    return "".join(out).encode()


def batch(srv, entries, cont=None, bucket=B, **kw):
    return srv.request("POST", "/%s" % bucket, "batch", body=batch_body(entries, cont), **kw)


def untar(raw):
    """[(name, bytes)] of a tar answer, in order."""
    out = []
    with tarfile.open(fileobj=io.BytesIO(raw)) as tf:
        for m in tf:
            out.append((m.name, tf.extractfile(m).read()))
    return out


def test_setup(srv):
    s3 = srv.client()
    s3.create_bucket(Bucket=B)


def test_objects_members_ranges(srv):
    s3 = srv.client()
    long_name = "d/" + "n" * 180 + ".bin"
    utf8 = "échantillon-日本.txt"
    members = [("000001.jpg", h.random_bytes(3000, 1)), ("000001.cls", b"7"),
               (long_name, h.random_bytes(777, 2)), (utf8, "données".encode())]
    s3.put_object(Bucket=B, Key="shard.tar", Body=make_tar(members))
    s3.put_object(Bucket=B, Key="plain", Body=b"0123456789")
    s3.put_object(Bucket=B, Key="empty", Body=b"")
    big = h.random_bytes(1500 * 1024, 3)
    s3.put_object(Bucket=B, Key="big", Body=big)
    m = dict(members)
    entries = [("shard.tar", "000001.jpg"), ("plain",), ("plain", None, "bytes=2-4"),
               ("shard.tar", "000001.cls"), ("shard.tar", long_name), ("shard.tar", utf8),
               ("shard.tar", "000001.jpg", "bytes=-10"), ("empty",), ("big",), ("plain",)]
    r = batch(srv, entries)
    h.eq(r.status, 200, "batch status %r" % r.body[:300])
    h.eq(r.header("Content-Type"), "application/x-tar", "Content-Type")
    got = untar(r.body)
    want = [("shard.tar/000001.jpg", m["000001.jpg"]), ("plain", b"0123456789"),
            ("plain", b"234"), ("shard.tar/000001.cls", b"7"),
            ("shard.tar/" + long_name, m[long_name]), ("shard.tar/" + utf8, m[utf8]),
            ("shard.tar/000001.jpg", m["000001.jpg"][-10:]), ("empty", b""), ("big", big),
            ("plain", b"0123456789")]
    h.eq([n for n, _ in got], [n for n, _ in want], "member names in request order")
    for (n, data), (_, w) in zip(got, want):
        h.same_bytes(data, w, "bytes of %s" % n)


def test_missing_entries(srv):
    s3 = srv.client()
    s3.put_object(Bucket=B, Key="there", Body=b"here")
    s3.put_object(Bucket=B, Key="t.tar", Body=make_tar([("a.txt", b"A")]))
    s3.put_object(Bucket=B, Key="notatar.tar", Body=b"x" * 700)
    entries = [("there",), ("gone",), ("t.tar", "nope.txt"), ("notatar.tar", "a"),
               ("there", None, "bytes=100-200"), ("t.tar", "a.txt")]
    r = batch(srv, entries, cont=True)
    h.eq(r.status, 200, "ContinueOnError batch")
    got = untar(r.body)
    names = [n for n, _ in got]
    h.eq(names, ["there", "__error__/gone", "__error__/t.tar/nope.txt",
                 "__error__/notatar.tar/a", "__error__/there", "t.tar/a.txt"], "placeholders")
    codes = [ET.fromstring(d).findtext("Code") for n, d in got if n.startswith("__error__/")]
    h.eq(codes, ["NoSuchKey", "NoSuchMember", "InvalidArchive", "InvalidRange"], "error codes")
    h.eq(ET.fromstring(got[2][1]).findtext("Member"), "nope.txt", "error names the member")
    # Without ContinueOnError a failing first entry is a plain S3 error...
    r = batch(srv, [("gone",), ("there",)])
    h.expect_s3_error(r.status, r.body, 404, "NoSuchKey", "first entry missing")
    r = batch(srv, [("t.tar", "nope.txt")], cont=False)
    h.expect_s3_error(r.status, r.body, 404, "NoSuchMember", "first member missing")
    # ... and a later one ends the 200 stream without its terminator.
    conn = srv.connect()
    body = batch_body([("there",), ("gone",), ("there",)])
    hdrs = srv.sign("POST", "/%s" % B, "batch", {}, body)
    conn.request("POST", "/%s?batch" % B, body=body, headers=hdrs)
    resp = conn.getresponse()
    h.eq(resp.status, 200, "status before the failure")
    try:
        data = resp.read()
        raise h.Failure("truncated batch read whole: %d bytes" % len(data))
    except http.client.IncompleteRead as e:
        h.check(len(e.partial) >= 1024, "the first entry came before the cut")
    finally:
        conn.close()


def test_encrypted_entry(srv):
    """An SSE-S3 object's extents hold ciphertext: a batch refuses the entry
    (a NotImplemented placeholder) and never streams the stored bytes."""
    s3 = srv.client()
    secret = b"batch-sse-marker " * 64
    s3.put_object(Bucket=B, Key="enc", Body=secret, ServerSideEncryption="AES256")
    s3.put_object(Bucket=B, Key="clear", Body=b"clear bytes")
    r = batch(srv, [("enc",), ("clear",)], cont=True)
    h.eq(r.status, 200, "ContinueOnError batch with an encrypted entry")
    got = untar(r.body)
    h.eq([n for n, _ in got], ["__error__/enc", "clear"], "encrypted entry is a placeholder")
    h.eq(ET.fromstring(got[0][1]).findtext("Code"), "NotImplemented", "placeholder code")
    h.same_bytes(got[1][1], b"clear bytes", "the plain entry after it")
    r = batch(srv, [("enc",)])
    h.expect_s3_error(r.status, r.body, 501, "NotImplemented", "encrypted first entry")


def test_many_entries(srv):
    """Thousands of entries stream through the bounded ring; the answer
    starts before the whole batch is read."""
    s3 = srv.client()
    members = [("%06d.bin" % i, h.random_bytes(100 + i % 50, i)) for i in range(300)]
    s3.put_object(Bucket=B, Key="many.tar", Body=make_tar(members))
    entries = [("many.tar", members[i % 300][0]) for i in range(3000)]
    r = batch(srv, entries)
    h.eq(r.status, 200, "3000 entries")
    h.eq(r.header("x-amz-batch-entries"), "3000", "entry count header")
    got = untar(r.body)
    h.eq(len(got), 3000, "3000 members")
    for i in (0, 1, 299, 300, 2999):
        h.eq(got[i][0], "many.tar/" + members[i % 300][0], "name %d" % i)
        h.same_bytes(got[i][1], members[i % 300][1], "bytes %d" % i)
    r = batch(srv, ["x"] * 10001)
    h.expect_s3_error(r.status, r.body, 400, "MalformedXML", "10001 entries")


def raw_batch(srv, entries, cont=None):
    """Sends a batch on a raw socket; returns the socket after the request."""
    import socket
    body = batch_body(entries, cont)
    hdrs = srv.sign("POST", "/%s" % B, "batch", {}, body)
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    head = "POST /%s?batch HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d\r\n" % (
        B, srv.port, len(body))
    head += "".join("%s: %s\r\n" % kv for kv in hdrs.items() if kv[0].lower() != "host")
    s.sendall(head.encode() + b"\r\n" + body)
    return s


def test_slow_reader_and_hangup(srv):
    """A client that reads slowly gets every byte (the producer pauses on a
    full ring and resumes when drained); one that hangs up mid-stream
    leaves the server serving (the batch is freed by whoever runs last)."""
    import time
    entries = [("big",)] * 3 + [("many.tar", "%06d.bin" % i) for i in range(300)]
    s = raw_batch(srv, entries)
    got = b""
    for _ in range(25):  # about 0.5 s of trickling while the ring fills
        got += s.recv(4096)
        time.sleep(0.02)
    s.settimeout(30)
    while not got.endswith(b"\r\n0\r\n\r\n"):
        b = s.recv(1 << 20)
        if not b:
            break
        got += b
    s.close()
    head, _, chunked = got.partition(b"\r\n\r\n")
    h.check(head.startswith(b"HTTP/1.1 200"), "status %r" % head[:40])
    body, rest = b"", chunked
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        n = int(size_line, 16)
        if n == 0:
            break
        body, rest = body + rest[:n], rest[n + 2:]
    want = batch(srv, entries).body
    h.same_bytes(body, want, "slowly read batch")
    for _ in range(3):
        s = raw_batch(srv, [("big",)] * 20)
        s.recv(65536)
        s.close()
    r = srv.request("GET", "/%s/plain" % B)
    h.eq(r.status, 200, "server still serving after hang-ups")


def test_unindexed_member(srv):
    """A tar stored under a name without .tar has no index until first use:
    the batch builds it on its worker."""
    s3 = srv.client()
    s3.put_object(Bucket=B, Key="noext", Body=make_tar([("x.txt", b"xx"), ("y.txt", b"yyy")]))
    r = batch(srv, [("noext", "y.txt"), ("noext", "x.txt")])
    h.eq(r.status, 200, "unindexed")
    h.eq(untar(r.body), [("noext/y.txt", b"yyy"), ("noext/x.txt", b"xx")], "built on first use")


def test_malformed(srv):
    for body in (b"", b"<Batch></Batch>", b"<Batch><Entry><Member>m</Member></Entry></Batch>",
                 b"<Batch><Entry><Key>k</Key><Member></Member></Entry></Batch>",
                 b"<Batch><ContinueOnError>maybe</ContinueOnError><Entry><Key>k</Key></Entry></Batch>",
                 b"<Delete><Object><Key>k</Key></Object></Delete>", b"<Batch><Entry>"):
        r = srv.request("POST", "/%s" % B, "batch", body=body)
        h.expect_s3_error(r.status, r.body, 400, "MalformedXML", "body %r" % body[:60])
    r = srv.request("POST", "/nosuchbucket", "batch", body=batch_body(["k"]))
    h.expect_s3_error(r.status, r.body, 404, "NoSuchBucket", "no bucket")
    r = srv.request("POST", "/%s" % B, "batch", body=batch_body(["there"]), sign=False)
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "anonymous")


def admin(srv, method, what, **params):
    q = urllib.parse.urlencode(sorted(params.items()), quote_via=urllib.parse.quote)
    r = srv.request(method, "/_/admin/" + what, query=q)
    h.check(200 <= r.status < 300, "%s /_/admin/%s: HTTP %d %r" % (method, what, r.status, r.body[:300]))
    return r


def test_per_entry_grant(srv):
    """Each entry is authorized on its own: a prefix grant reads its keys
    and gets AccessDenied for the others."""
    s3 = srv.client()
    s3.put_object(Bucket=B, Key="pub/a", Body=b"open")
    s3.put_object(Bucket=B, Key="priv/b", Body=b"secret")
    admin(srv, "POST", "users", name="reader")
    k = json.loads(admin(srv, "POST", "keys", user="reader").body)
    admin(srv, "PUT", "grants", user="reader", bucket=B, level="read", prefix="pub/")
    ak, sk = k["access_key"], k["secret_key"]
    r = batch(srv, [("pub/a",), ("priv/b",)], cont=True, access_key=ak, secret_key=sk)
    h.eq(r.status, 200, "prefix grant batch %r" % r.body[:300])
    got = untar(r.body)
    h.eq(got[0], ("pub/a", b"open"), "granted entry")
    h.eq(got[1][0], "__error__/priv/b", "denied entry")
    h.eq(ET.fromstring(got[1][1]).findtext("Code"), "AccessDenied", "denied code")
    h.check(b"secret" not in r.body, "no byte of the denied object")
    r = batch(srv, [("priv/b",)], access_key=ak, secret_key=sk)
    h.expect_s3_error(r.status, r.body, 403, "AccessDenied", "denied first entry")


# The server reads entries below 1 MiB in reads of at most 128 KiB, many at
# once, and larger ones through a storage reader when their turn comes.
KIB = 1024
WINDOW_SIZES = [0, 1, 511, 512, 513, 10 * KIB, 128 * KIB - 1, 128 * KIB, 128 * KIB + 1,
                300 * KIB + 7, 900 * KIB, 1200 * KIB]


def window_objects(srv, prefix):
    """Three tar shards and plain objects of every size in WINDOW_SIZES;
    returns {(key, member or None): bytes}."""
    s3 = srv.client()
    objs = {}
    for sh in range(3):
        members = [("%02d-%04d.bin" % (sh, i),
                    h.random_bytes(WINDOW_SIZES[(i + sh) % len(WINDOW_SIZES)], 100 * sh + i))
                   for i in range(2 * len(WINDOW_SIZES))]
        key = "%sshard-%d.tar" % (prefix, sh)
        s3.put_object(Bucket=B, Key=key, Body=make_tar(members))
        objs.update({(key, n): d for n, d in members})
    for i, size in enumerate(WINDOW_SIZES):
        key = "%splain-%02d" % (prefix, i)
        objs[(key, None)] = h.random_bytes(size, 500 + i)
        s3.put_object(Bucket=B, Key=key, Body=objs[(key, None)])
    # A multipart object: one extent per part, so a small range across a
    # part boundary is read as two reads.
    key = prefix + "multipart"
    parts = [h.random_bytes(5 * 1024 * KIB, 600), h.random_bytes(5 * 1024 * KIB + 3, 601),
             h.random_bytes(KIB, 602)]
    up = s3.create_multipart_upload(Bucket=B, Key=key)["UploadId"]
    done = [{"PartNumber": n + 1, "ETag": s3.upload_part(
        Bucket=B, Key=key, UploadId=up, PartNumber=n + 1, Body=p)["ETag"]}
        for n, p in enumerate(parts)]
    s3.complete_multipart_upload(Bucket=B, Key=key, UploadId=up,
                                 MultipartUpload={"Parts": done})
    objs[(key, None)] = b"".join(parts)
    return objs


def multipart_entries(objs, prefix):
    """Ranges of the multipart object across its part boundaries."""
    key = prefix + "multipart"
    data = objs[(key, None)]
    entries, want = [], []
    for edge in (5 * 1024 * KIB, 10 * 1024 * KIB + 3):
        for before, after in ((1, 1), (1000, 5000), (300 * KIB, 300 * KIB), (100, 200 * KIB)):
            first, last = edge - before, edge + after - 1
            entries.append((key, None, "bytes=%d-%d" % (first, last)))
            want.append((key, data[first:last + 1]))
    return entries, want


def window_entries(objs, prefix, n, seed):
    """'n' random entries over 'objs' (a fifth with a Range, some missing)
    and what the batch must answer for each: (name, bytes) or (name, code)."""
    rng = random.Random(seed)
    keys = sorted(objs, key=lambda k: (k[0], k[1] or ""))
    entries, want = [], []
    for _ in range(n):
        key, member = rng.choice(keys)
        data = objs[(key, member)]
        name = key + ("/" + member if member else "")
        roll = rng.random()
        if roll < 0.04:
            entries.append((prefix + "missing-%d" % rng.randrange(9),))
            want.append(("__error__/" + entries[-1][0], "NoSuchKey"))
        elif roll < 0.08:
            member = "%02d-9999.bin" % rng.randrange(3)
            entries.append((prefix + "shard-0.tar", member))
            want.append(("__error__/%sshard-0.tar/%s" % (prefix, member), "NoSuchMember"))
        elif roll < 0.28 and data:
            first = rng.randrange(len(data))
            last = first + rng.choice([0, 1, 4095, 128 * KIB, 300 * KIB, 10 ** 7])
            entries.append((key, member, "bytes=%d-%d" % (first, last)))
            want.append((name, data[first:last + 1]))
        elif roll < 0.31 and data:
            entries.append((key, member, "bytes=%d-" % len(data)))
            want.append(("__error__/" + name, "InvalidRange"))
        else:
            entries.append((key, member))
            want.append((name, data))
    return entries, want


def check_batch_answer(got, want, what):
    h.eq([n for n, _ in got], [n for n, _ in want], "%s: names in request order" % what)
    for i, ((n, data), (_, w)) in enumerate(zip(got, want)):
        if n.startswith("__error__/"):
            h.eq(ET.fromstring(data).findtext("Code"), w, "%s: entry %d code" % (what, i))
        else:
            h.same_bytes(data, w, "%s: entry %d (%s, %d bytes)" % (what, i, n, len(w)))


def test_window_order_and_bytes(srv):
    """Entries whose reads complete out of order still leave in request
    order, each with its own bytes; also on a server that keeps small
    objects inline in the index."""
    objs = window_objects(srv, "w/")
    entries, want = window_entries(objs, "w/", 260, 1)
    more = multipart_entries(objs, "w/")
    entries, want = more[0] + entries + more[0], more[1] + want + more[1]
    r = batch(srv, entries, cont=True)
    h.eq(r.status, 200, "window batch %r" % r.body[:300])
    check_batch_answer(untar(r.body), want, "window batch")
    # The same entries twice over (the second pass from the page cache).
    r = batch(srv, entries + entries, cont=True)
    check_batch_answer(untar(r.body), want + want, "window batch twice")
    with h.Server(config="inline_max = 2048\n", tag="batch-inline") as srv2:
        srv2.client().create_bucket(Bucket=B)
        objs = window_objects(srv2, "i/")
        entries, want = window_entries(objs, "i/", 200, 2)
        more = multipart_entries(objs, "i/")
        entries, want = entries + more[0], want + more[1]
        r = batch(srv2, entries, cont=True)
        check_batch_answer(untar(r.body), want, "batch with inline objects")


def recv_chunked(s, got=b""):
    """Reads the rest of a chunked HTTP answer from socket 's' ('got': its
    bytes read so far); returns (head, body)."""
    while not got.endswith(b"\r\n0\r\n\r\n"):
        b = s.recv(1 << 20)
        if not b:
            break
        got += b
    head, _, rest = got.partition(b"\r\n\r\n")
    body = []
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        n = int(size_line, 16)
        if n == 0:
            break
        body.append(rest[:n])
        rest = rest[n + 2:]
    return head, b"".join(body)


def test_window_entry_deleted(srv):
    """An entry the window opened (pinned, looked up) before its object was
    deleted and new objects written is sent with the bytes it had; one the
    window had not reached is a NoSuchKey placeholder."""
    s3 = srv.client()
    big = h.random_bytes(1200 * KIB, 41)
    near, far = h.random_bytes(50 * KIB, 42), h.random_bytes(50 * KIB, 43)
    s3.put_object(Bucket=B, Key="del/big", Body=big)
    s3.put_object(Bucket=B, Key="del/near", Body=near)
    s3.put_object(Bucket=B, Key="del/far", Body=far)
    # The first window opens entries 0-63 before the answer starts; the
    # twenty big entries (23 MiB) keep it far from entry 200 until the
    # client reads them.
    entries = ([("del/big",), ("del/near",)] + [("del/big",)] * 20 +
               [("many.tar", "%06d.bin" % i) for i in range(178)] + [("del/far",), ("del/near",)])
    s = raw_batch(srv, entries, cont=True)
    s.settimeout(30)
    got = s.recv(65536)
    h.check(got.startswith(b"HTTP/1.1 200"), "status %r" % got[:40])
    s3.delete_object(Bucket=B, Key="del/near")
    s3.delete_object(Bucket=B, Key="del/far")
    for i in range(40):  # freed space goes to new objects unless a pin holds it
        s3.put_object(Bucket=B, Key="del/filler-%d" % i, Body=h.random_bytes(50 * KIB, 900 + i))
    _, body = recv_chunked(s, got)
    s.close()
    got = untar(body)
    h.eq(len(got), len(entries), "every entry answered")
    h.eq(got[1][0], "del/near", "the opened entry is sent")
    h.same_bytes(got[1][1], near, "the opened entry's bytes as they were")
    h.same_bytes(got[21][1], big, "a big entry after it")
    h.eq(got[200][0], "__error__/del/far", "the entry not yet opened")
    h.eq(ET.fromstring(got[200][1]).findtext("Code"), "NoSuchKey", "its code")
    h.eq(got[201][0], "__error__/del/near", "the deleted entry asked again")


def open_fds(srv):
    """The server's open fds, but for the io_uring of each worker thread
    (a worker started by one of the batches keeps its ring)."""
    d = "/proc/%d/fd" % srv.proc.pid
    links = []
    for f in os.listdir(d):
        try:
            links.append(os.readlink(os.path.join(d, f)))
        except FileNotFoundError:
            pass
    return sorted(x for x in links if x != "anon_inode:[io_uring]")


def test_window_hangup(srv):
    """Clients that hang up while the window has reads in flight and pins
    held leave nothing behind: the pins go back to what they were, the fds
    too, and the next batch is whole."""
    s3 = srv.client()
    s3.put_object(Bucket=B, Key="hup/big", Body=h.random_bytes(1200 * KIB, 44))
    s3.put_object(Bucket=B, Key="hup/s.tar", Body=make_tar(
        [("%04d.bin" % i, h.random_bytes(WINDOW_SIZES[i % 11], 700 + i)) for i in range(200)]))
    pins0, fds0 = srv.metric("shardstore_storage_reader_pins"), open_fds(srv)
    entries = [("hup/big",)] * 3 + [("hup/s.tar", "%04d.bin" % (i % 200)) for i in range(600)]
    for cut in (0, 100, 65536, 4 << 20):
        s = raw_batch(srv, entries, cont=True)
        s.settimeout(30)
        got = b""
        while len(got) < cut:
            got += s.recv(cut - len(got))
        s.close()
    # Earlier clients' keep-alive sockets may close meanwhile: only new fds count.
    deadline = time.monotonic() + 15
    while True:
        pins = srv.metric("shardstore_storage_reader_pins")
        more = collections.Counter(open_fds(srv))
        more.subtract(fds0)
        more = sorted(+more)
        if (pins == pins0 and not more) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    h.eq(pins, pins0, "reader pins after the hang-ups")
    h.eq(more, [], "fds opened and not closed after the hang-ups")
    r = batch(srv, entries, cont=True)
    h.eq(len(untar(r.body)), len(entries), "a whole batch after the hang-ups")


TESTS = [
    test_setup,
    test_objects_members_ranges,
    test_missing_entries,
    test_many_entries,
    test_slow_reader_and_hangup,
    test_unindexed_member,
    test_malformed,
    test_per_entry_grant,
    test_window_order_and_bytes,
    test_window_entry_deleted,
    test_window_hangup,
]

if __name__ == "__main__":
    h.main(TESTS)
