"""test_list_model.py: ListObjects v1/v2 against an in-memory model of S3.

A seeded random workload PUTs and DELETEs a few thousand keys with awkward
names (multi-byte UTF-8, spaces, '+', '%', XML specials, newlines and tabs,
leading/trailing/repeated delimiters, multi-char delimiters, keys of 481..1024
bytes sharing 480-byte prefixes). Then every listing of many parameter
combinations (v1/v2, prefix, delimiter, max-keys 0/1/2/7/1000/default,
start-after, marker, continuation tokens, encoding-type=url, fetch-owner) is
walked page by page until IsTruncated is false, and EVERY page is compared
element by element with what the model says S3 returns. The raw XML is
checked (signed requests on a kept-alive connection), so nothing is decoded
for us; a boto3 pass checks the same through the SDK.

Also: continuation tokens under concurrent inserts/deletes between pages,
list-after-write with concurrent writer threads, and bad tokens.
SHARD_SEED=<n> changes the seed (printed on failure).
"""

import hashlib
import http.client
import os
import random
import re
import sys
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, eq, expect_s3_error  # noqa: E402

SEED = int(os.environ.get("SHARD_SEED", "20240611"))
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
DATE_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
URL_SAFE = re.compile(r"^[A-Za-z0-9\-_.~/%]*$")
OWNER_RE = re.compile(r"^[0-9a-f]{64}$")


def bkey(s):
    return s.encode() if isinstance(s, str) else s


# --------------------------------------------------------------------------
# the model


class Model:
    """Keys (bytes) -> (size, etag); listing by S3's rules."""

    def __init__(self):
        self.objs = {}
        self._sorted = None

    def put(self, key, body):
        self.objs[bkey(key)] = (len(body), hashlib.md5(body).hexdigest())
        self._sorted = None

    def delete(self, key):
        self.objs.pop(bkey(key), None)
        self._sorted = None

    def keys(self):
        if self._sorted is None:
            self._sorted = sorted(self.objs)
        return self._sorted

    def page(self, prefix, delim, after, max_keys):
        """One page: (entries, is_truncated) where entries are ("K", key) or
        ("P", common prefix) in S3 order. 'after' is exclusive; a common
        prefix that 'after' starts with was returned already."""
        import bisect

        prefix, delim, after = bkey(prefix), bkey(delim), bkey(after)
        if max_keys == 0:
            return [], False  # as S3 (s3-tests test_bucket_list_maxkeys_zero)
        ks = self.keys()
        i = bisect.bisect_right(ks, after) if after else 0
        j = bisect.bisect_left(ks, prefix)
        i = max(i, j)
        out = []
        while i < len(ks):
            k = ks[i]
            if not k.startswith(prefix):
                break
            cp = None
            if delim:
                pos = k.find(delim, len(prefix))
                if pos >= 0:
                    cp = k[: pos + len(delim)]
            if cp is not None and after.startswith(cp):
                i += 1
                continue
            if len(out) == max_keys:
                return out, True
            if cp is not None:
                out.append(("P", cp))
                # Skip every key under cp.
                while i < len(ks) and ks[i].startswith(cp):
                    i += 1
                continue
            out.append(("K", k))
            i += 1
        return out, False


# --------------------------------------------------------------------------
# awkward keys


PIECES = ["a", "b", "ab", "/", "//", " ", "+", "%", "%2F", "&", "<", ">", '"', "'", "\n", "\t",
          "é", "日本", "😀", "~", ".", "-", "0", "z", "x y", "a+b", "?", "#", "=", ";"]
DIRS = ["", "d/", "d//", "/", "e/f/", "ab", "日/", "sp ace/", "x+y/", "%/", "<&>/"]


def random_key(rnd):
    n = rnd.randint(1, 6)
    k = rnd.choice(DIRS) + "".join(rnd.choice(PIECES) for _ in range(n))
    if rnd.random() < 0.1:
        k = k + "/"
    if rnd.random() < 0.05:
        k = "/" + k
    return k


def long_keys(rnd):
    """Keys longer than 480 bytes: runs sharing their first 480 bytes (one run
    cut inside a multi-byte character), plus direct keys at 479/480 bytes
    with the same prefixes, up to 1024 bytes."""
    out = []
    bases = ["L/" + "q" * 470 + "/", "L/" + "é" * 239 + "/", "L/" + "w" * 300 + "/" + "x" * 200]
    for base in bases:
        b = base.encode()
        head = b[:480].decode("utf-8", "ignore")
        out.append(head)
        out.append(head[:-1])
        for _ in range(12):
            tail = "".join(rnd.choice(["a", "b", "/", "é", " ", "%", "ab"]) for _ in range(rnd.randint(1, 40)))
            k = head + tail
            while len(k.encode()) > 1024:
                k = k[:-1]
            out.append(k)
        k = head + "z" * 600
        while len(k.encode()) > 1024:
            k = k[:-1]
        out.append(k)
    return out


def body_for(key, gen):
    h = hashlib.sha256(bkey(key) + b"#%d" % gen).digest()
    return h[: h[0] % 5]


# --------------------------------------------------------------------------
# a raw, kept-alive, signed client


class Raw:
    def __init__(self, srv):
        self.srv = srv
        self.conn = None
        self.requests = 0

    def get(self, path, params):
        """GET 'path' with 'params' [(name, str|bytes)], signed. Returns
        (status, body)."""
        query = "&".join("%s=%s" % (harness.quote_param(k), urllib.parse.quote(bkey(v), safe="-_.~")) for k, v in sorted(params, key=lambda kv: kv[0]))
        hdrs = self.srv.sign("GET", path, query)
        for attempt in range(2):
            if self.conn is None:
                self.conn = self.srv.connect()
            try:
                self.conn.request("GET", path + ("?" + query if query else ""), headers=hdrs)
                r = self.conn.getresponse()
                body = r.read()
                self.requests += 1
                if r.getheader("Connection", "").lower() == "close":
                    self.conn.close()
                    self.conn = None
                return r.status, body
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")


def enc(v, is_url):
    """What S3 puts in an element for value 'v' (bytes), as text."""
    if is_url:
        return urllib.parse.quote(v, safe="-_.~/")
    return v.decode("utf-8")


def children(elem):
    return [(c.tag[len(NS):] if c.tag.startswith(NS) else c.tag, c) for c in elem]


def text(e):
    return e.text or ""


def check_url_form(s, what):
    check(URL_SAFE.match(s) is not None, "%s %r is not in url-encoded form" % (what, s))


def parse_page(body, ctx):
    try:
        root = ET.fromstring(body)
    except ET.ParseError as e:
        raise harness.Failure("%s: body is not XML (%s): %r" % (ctx, e, body[:400]))
    eq(root.tag, NS + "ListBucketResult", ctx + ": root element")
    return root


def check_page(model, bucket, root, req, entries, truncated, owner_id, t_range, ctx):
    """Checks one raw page against the model's (entries, truncated)."""
    v2, is_url = req["v2"], req["url"]
    kids = children(root)
    names = [n for n, _ in kids]
    single = {}
    for n, e in kids:
        if n not in ("Contents", "CommonPrefixes"):
            check(n not in single, "%s: element <%s> twice" % (ctx, n))
            single[n] = text(e)
    eq(single.get("Name"), bucket, ctx + ": Name")
    eq(single.get("Prefix"), enc(bkey(req["prefix"]), is_url), ctx + ": Prefix")
    eq(single.get("MaxKeys"), str(req["max_keys_echo"]), ctx + ": MaxKeys")
    if req["delim"]:
        eq(single.get("Delimiter"), enc(bkey(req["delim"]), is_url), ctx + ": Delimiter")
    else:
        check("Delimiter" not in single, ctx + ": Delimiter without a delimiter")
    if is_url:
        eq(single.get("EncodingType"), "url", ctx + ": EncodingType")
    else:
        check("EncodingType" not in single, ctx + ": EncodingType without encoding-type")
    eq(single.get("IsTruncated"), "true" if truncated else "false", ctx + ": IsTruncated")
    if v2:
        eq(single.get("KeyCount"), str(len(entries)), ctx + ": KeyCount")
        if req.get("token") is not None:
            eq(single.get("ContinuationToken"), req["token"], ctx + ": ContinuationToken echoed")
        else:
            check("ContinuationToken" not in single, ctx + ": ContinuationToken not sent")
        if req.get("start_after") is not None:
            eq(single.get("StartAfter"), enc(bkey(req["start_after"]), is_url), ctx + ": StartAfter")
        else:
            check("StartAfter" not in single, ctx + ": StartAfter not sent")
        check(("NextContinuationToken" in single) == truncated, ctx + ": NextContinuationToken iff truncated")
        check("Marker" not in single and "NextMarker" not in single, ctx + ": v1 elements in v2")
    else:
        eq(single.get("Marker"), enc(bkey(req.get("marker") or b""), is_url), ctx + ": Marker")
        if truncated and req["delim"]:
            last = entries[-1][1]
            eq(single.get("NextMarker"), enc(last, is_url), ctx + ": NextMarker")
        else:
            check("NextMarker" not in single, ctx + ": NextMarker only when truncated with a delimiter")
        check("KeyCount" not in single and "NextContinuationToken" not in single, ctx + ": v2 elements in v1")
    # Contents come before CommonPrefixes; each list in S3 order.
    got_keys, got_prefixes = [], []
    for n, e in kids:
        if n == "Contents":
            check(not got_prefixes, ctx + ": Contents after CommonPrefixes")
            c = dict((cn, ce) for cn, ce in children(e))
            raw_key = text(c["Key"])
            if is_url:
                check_url_form(raw_key, ctx + ": Key")
                key = urllib.parse.unquote_to_bytes(raw_key)
            else:
                key = raw_key.encode()
            got_keys.append(key)
            size, etag = model.objs.get(key, (None, None))
            check(size is not None, "%s: listed key %r is not in the model" % (ctx, key))
            eq(text(c.get("Size")), str(size), ctx + ": Size of %r" % key)
            eq(text(c.get("ETag")), '"%s"' % etag, ctx + ": ETag of %r" % key)
            lm = text(c.get("LastModified"))
            check(DATE_RE.match(lm), "%s: LastModified %r" % (ctx, lm))
            check(t_range[0] <= lm[:19] <= t_range[1], "%s: LastModified %r outside %r" % (ctx, lm, t_range))
            eq(text(c.get("StorageClass")), "STANDARD", ctx + ": StorageClass")
            want_owner = (not v2) or req["fetch_owner"]
            if want_owner:
                check("Owner" in c, ctx + ": Owner missing")
                o = dict((on, text(oe)) for on, oe in children(c["Owner"]))
                eq(o.get("ID"), owner_id, ctx + ": Owner/ID")
                check("DisplayName" in o, ctx + ": Owner/DisplayName missing")
            else:
                check("Owner" not in c, ctx + ": Owner without fetch-owner")
        elif n == "CommonPrefixes":
            c = dict((cn, ce) for cn, ce in children(e))
            raw = text(c["Prefix"])
            if is_url:
                check_url_form(raw, ctx + ": CommonPrefixes/Prefix")
                got_prefixes.append(urllib.parse.unquote_to_bytes(raw))
            else:
                got_prefixes.append(raw.encode())
    eq(got_keys, [k for t, k in entries if t == "K"], ctx + ": Contents")
    eq(got_prefixes, [k for t, k in entries if t == "P"], ctx + ": CommonPrefixes")
    return single


def walk_raw(raw, model, bucket, combo, owner_id, t_range, max_pages=400):
    """Lists every page of one parameter combination, comparing each page
    with the model. Returns the number of pages."""
    v2 = combo["v2"]
    max_keys = combo.get("max_keys")
    mk = 1000 if max_keys is None else min(max_keys, 1000)
    after = bkey(combo.get("start") or b"")
    token = None
    marker = combo.get("start") if not v2 else None
    pages = 0
    while True:
        params = []
        if v2:
            params.append(("list-type", "2"))
        if combo["prefix"] or combo.get("send_empty_prefix"):
            params.append(("prefix", combo["prefix"]))
        if combo["delim"]:
            params.append(("delimiter", combo["delim"]))
        if max_keys is not None:
            params.append(("max-keys", str(max_keys)))
        if combo["url"]:
            params.append(("encoding-type", "url"))
        if combo["fetch_owner"]:
            params.append(("fetch-owner", "true"))
        req = dict(combo, max_keys_echo=mk, token=None, start_after=None, marker=None)
        if v2:
            if combo.get("start") is not None:
                params.append(("start-after", combo["start"]))
                req["start_after"] = combo["start"]
            if token is not None:
                params.append(("continuation-token", token))
                req["token"] = token
        elif marker is not None:
            params.append(("marker", marker))
            req["marker"] = marker
        ctx = "%s page %d of %r" % ("v2" if v2 else "v1", pages, {k: v for k, v in combo.items()})
        status, body = raw.get("/" + bucket, params)
        eq(status, 200, ctx + ": status (body %r)" % body[:300])
        root = parse_page(body, ctx)
        entries, truncated = model.page(combo["prefix"], combo["delim"], after, mk)
        single = check_page(model, bucket, root, req, entries, truncated, owner_id, t_range, ctx)
        pages += 1
        if not truncated:
            return pages
        check(pages < max_pages, ctx + ": too many pages")
        after = entries[-1][1]
        if v2:
            token = single["NextContinuationToken"]
        elif combo["delim"]:
            nm = single["NextMarker"]
            marker = urllib.parse.unquote_to_bytes(nm) if combo["url"] else nm.encode()
        else:
            marker = after


def walk_boto(s3, model, bucket, combo):
    """The same walk through boto3 (which asks for encoding-type=url and
    decodes). Compares the concatenated result with the model."""
    v2 = combo["v2"]
    max_keys = combo.get("max_keys")
    mk = 1000 if max_keys is None else min(max_keys, 1000)
    after = bkey(combo.get("start") or b"")
    kw = {"Bucket": bucket, "Prefix": bkey(combo["prefix"]).decode()}
    if combo["delim"]:
        kw["Delimiter"] = bkey(combo["delim"]).decode()
    if max_keys is not None:
        kw["MaxKeys"] = max_keys
    if combo.get("start") is not None:
        kw["StartAfter" if v2 else "Marker"] = bkey(combo["start"]).decode()
    if combo["fetch_owner"] and v2:
        kw["FetchOwner"] = True
    pages = 0
    while True:
        r = s3.list_objects_v2(**kw) if v2 else s3.list_objects(**kw)
        entries, truncated = model.page(combo["prefix"], combo["delim"], after, mk)
        ctx = "boto3 %s page %d of %r" % ("v2" if v2 else "v1", pages, combo)
        eq([bkey(o["Key"]) for o in r.get("Contents", [])], [k for t, k in entries if t == "K"], ctx + ": Contents")
        eq([bkey(p["Prefix"]) for p in r.get("CommonPrefixes", [])], [k for t, k in entries if t == "P"], ctx + ": CommonPrefixes")
        eq(r["IsTruncated"], truncated, ctx + ": IsTruncated")
        pages += 1
        if not truncated:
            return pages
        after = entries[-1][1]
        if v2:
            kw["ContinuationToken"] = r["NextContinuationToken"]
        else:
            kw["Marker"] = r.get("NextMarker") or r["Contents"][-1]["Key"]


# --------------------------------------------------------------------------
# setup: a bucket full of awkward keys


class State:
    pass


def populate(srv, rnd):
    from concurrent.futures import ThreadPoolExecutor

    s3 = srv.client(max_pool_connections=16)
    st = State()
    st.bucket = "model"
    s3.create_bucket(Bucket=st.bucket)
    st.model = Model()
    t0 = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 2))
    keys = set()
    while len(keys) < 2300:
        keys.add(random_key(rnd))
    keys.update(long_keys(rnd))
    keys = sorted(keys)
    rnd.shuffle(keys)
    bodies = {k: body_for(k, 0) for k in keys}

    def put(k):
        s3.put_object(Bucket=st.bucket, Key=k, Body=bodies[k])

    with ThreadPoolExecutor(8) as ex:
        list(ex.map(put, keys))
    for k in keys:
        st.model.put(k, bodies[k])
    # Delete a quarter, overwrite some with new bodies.
    dels = rnd.sample(keys, len(keys) // 4)
    rest = [k for k in keys if k not in set(dels)]
    over = rnd.sample(rest, 200)
    bodies2 = {k: body_for(k, 1) for k in over}

    def delete(k):
        s3.delete_object(Bucket=st.bucket, Key=k)

    def put2(k):
        s3.put_object(Bucket=st.bucket, Key=k, Body=bodies2[k])

    with ThreadPoolExecutor(8) as ex:
        list(ex.map(delete, dels))
        list(ex.map(put2, over))
    for k in dels:
        st.model.delete(k)
    for k in over:
        st.model.put(k, bodies2[k])
    st.t_range = (t0, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + 2)))
    st.all_keys = keys
    return st


def owner_of(srv, bucket):
    raw = Raw(srv)
    status, body = raw.get("/" + bucket, [("max-keys", "1")])
    eq(status, 200, "v1 listing status")
    ids = [e.text for e in ET.fromstring(body).iter(NS + "ID")]
    check(ids and OWNER_RE.match(ids[0]), "owner id %r" % ids)
    return ids[0]


def combos(st, rnd):
    """Parameter combinations. Small max-keys only where the walk is short."""
    ks = st.model.keys()
    delims = [None, "/", "//", "ab", "a", "é", " ", "+", "%", "/a", "日本"]
    prefixes = [b"", b"d/", b"d//", b"/", b"e/f/", b"ab", "日/".encode(), b"sp ace/", b"x+y/", b"%/", b"<&>/", b"L/", b"zz-none"]
    for _ in range(12):
        k = rnd.choice(ks).decode()
        prefixes.append(k[: rnd.randint(1, len(k))].encode())
    long_ks = [k for k in ks if len(k) > 480]
    prefixes.append(long_ks[0][:480])
    prefixes.append(long_ks[-1][:490].decode("utf-8", "ignore").encode())
    out = []
    for prefix in prefixes:
        for delim in rnd.sample(delims, 4) + [None, "/"]:
            for v2 in (True, False):
                mk = rnd.choice([None, 1000, 0, 7, 2, 1, 1, 2, 7])
                start = None
                r = rnd.random()
                under = [k for k in ks if k.startswith(prefix)]
                if r < 0.3 and under:
                    start = rnd.choice(under)
                elif r < 0.45:
                    start = prefix + rnd.choice([b"", b"/", b"a", b"\xff", b"%"])
                elif r < 0.55 and under:
                    k = rnd.choice(under)
                    start = k[: rnd.randint(len(prefix), len(k))]
                out.append(dict(prefix=prefix, delim=delim.encode() if delim else None, v2=v2, max_keys=mk,
                                start=start.decode("utf-8", "ignore").encode() if start is not None else None,
                                url=rnd.random() < 0.5, fetch_owner=rnd.random() < 0.3,
                                send_empty_prefix=rnd.random() < 0.3))
    return out


STATE = {}


def get_state(srv):
    if "st" not in STATE:
        STATE["st"] = populate(srv, random.Random(SEED))
    return STATE["st"]


# --------------------------------------------------------------------------
# tests


def test_model_raw(srv):
    st = get_state(srv)
    rnd = random.Random(SEED + 1)
    owner = owner_of(srv, st.bucket)
    raw = Raw(srv)
    budget = 12000  # requests; walks that would exceed their share are cut to larger pages
    total_pages = 0
    n = 0
    for c in combos(st, rnd):
        mk = c["max_keys"]
        # Estimate the walk: keep small pages to walks of <= 150 pages.
        if mk is not None and 0 < mk < 1000:
            est = len(st.model.page(c["prefix"], c["delim"], c["start"] or b"", 10**9)[0]) / mk
            if est > 100:
                c["max_keys"] = 1000
        total_pages += walk_raw(raw, st.model, st.bucket, c, owner, st.t_range)
        n += 1
        check(raw.requests < budget, "request budget exceeded")
    # Whole-bucket walks in every page size that stays bounded, both versions.
    for v2 in (True, False):
        for mk in (None, 1000, 7):
            for url in (False, True):
                total_pages += walk_raw(raw, st.model, st.bucket, dict(prefix=b"", delim=None, v2=v2, max_keys=mk, start=None, url=url, fetch_owner=v2 and url), owner, st.t_range, max_pages=2000)
                n += 1
    print("  %d listings, %d pages (%d requests), %d keys in the model" % (n, total_pages, raw.requests, len(st.model.objs)), flush=True)
    check(total_pages > 500, "the walk covered too few pages (%d)" % total_pages)


def test_model_boto3(srv):
    st = get_state(srv)
    rnd = random.Random(SEED + 2)
    s3 = srv.client()
    cs = combos(st, rnd)
    rnd.shuffle(cs)
    pages = 0
    for c in cs[:80]:
        if c["max_keys"] is not None and 0 < c["max_keys"] < 1000:
            est = len(st.model.page(c["prefix"], c["delim"], c["start"] or b"", 10**9)[0]) / c["max_keys"]
            if est > 60:
                c["max_keys"] = 1000
        pages += walk_boto(s3, st.model, st.bucket, c)
    print("  %d boto3 pages" % pages, flush=True)


def test_bad_params(srv):
    st = get_state(srv)
    raw = Raw(srv)
    path = "/" + st.bucket
    # An empty token means "from the start" (as S3 does; test_s3_answers.py).
    for tok in ["!!!", "not base64 at all", "AAAA", "Zm9v", "////", "=", "a" * 3000]:
        status, body = raw.get(path, [("list-type", "2"), ("continuation-token", tok)])
        expect_s3_error(status, body, 400, "InvalidArgument", "continuation-token %r" % tok[:20])
    # A real token, altered, is rejected too.
    status, body = raw.get(path, [("list-type", "2"), ("max-keys", "1")])
    tok = ET.fromstring(body).find(NS + "NextContinuationToken").text
    for bad in [tok[:-4], tok[::-1], "A" + tok[1:] if tok[0] != "A" else "B" + tok[1:]]:
        status, body = raw.get(path, [("list-type", "2"), ("continuation-token", bad)])
        expect_s3_error(status, body, 400, "InvalidArgument", "tampered token %r" % bad)
    for mk in ["-1", "x", "1.5", "99999999999999999999999"]:
        status, body = raw.get(path, [("list-type", "2"), ("max-keys", mk)])
        expect_s3_error(status, body, 400, "InvalidArgument", "max-keys=%s" % mk)
    status, body = raw.get(path, [("encoding-type", "base64")])
    expect_s3_error(status, body, 400, "InvalidArgument", "encoding-type=base64")
    status, body = raw.get(path, [("list-type", "3")])
    expect_s3_error(status, body, 400, "InvalidArgument", "list-type=3")
    # max-keys above 1000 is clamped.
    status, body = raw.get(path, [("list-type", "2"), ("max-keys", "5000")])
    eq(status, 200, "max-keys=5000")
    root = ET.fromstring(body)
    eq(root.find(NS + "MaxKeys").text, "1000", "MaxKeys clamped")
    eq(len(root.findall(NS + "Contents")), 1000, "a clamped page holds 1000 keys")
    status, body = raw.get("/no-such-model-bucket", [("list-type", "2")])
    expect_s3_error(status, body, 404, "NoSuchBucket", "missing bucket")


def test_token_under_writes(srv):
    """Pages continue correctly while keys before and after the token are
    inserted and deleted: no duplicate, nothing that existed throughout is
    skipped, order strictly increasing, nothing that never existed."""
    from concurrent.futures import ThreadPoolExecutor

    s3 = srv.client(max_pool_connections=8)
    rnd = random.Random(SEED + 3)
    b = "tokens"
    s3.create_bucket(Bucket=b)
    base = ["k/%04d" % i for i in range(0, 400, 2)] + ["k/%04d/sub/%d" % (i, j) for i in range(1, 400, 13) for j in range(3)]
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda k: s3.put_object(Bucket=b, Key=k, Body=b""), base))
    raw = Raw(srv)
    for v2, delim, mk in [(True, None, 7), (True, "/", 5), (False, None, 11), (False, "/", 3), (True, None, 2), (True, "/", 1)]:
        present = set(base)
        ever = set(base)
        stable = set(base)  # present from start to end of the walk
        seen = []
        token = marker = None
        pages = 0
        while True:
            params = [("prefix", "k/"), ("max-keys", str(mk))]
            if v2:
                params.append(("list-type", "2"))
                if token:
                    params.append(("continuation-token", token))
            elif marker:
                params.append(("marker", marker))
            if delim:
                params.append(("delimiter", delim))
            status, body = raw.get("/" + b, params)
            eq(status, 200, "list status")
            root = ET.fromstring(body)
            page = [e.find(NS + "Key").text for e in root.findall(NS + "Contents")]
            page += [e.find(NS + "Prefix").text for e in root.findall(NS + "CommonPrefixes")]
            page.sort(key=bkey)
            seen += page
            pages += 1
            if root.find(NS + "IsTruncated").text != "true":
                break
            if v2:
                token = root.find(NS + "NextContinuationToken").text
            else:
                nm = root.find(NS + "NextMarker")
                marker = nm.text if nm is not None else page[-1]
            last = page[-1]
            # Mutate around the position: before and after, inserts and deletes.
            for _ in range(4):
                n = rnd.randrange(400)
                k = "k/%04d%s" % (n, rnd.choice(["", "x", "/sub/9"]))
                if k in present and rnd.random() < 0.6:
                    s3.delete_object(Bucket=b, Key=k)
                    present.discard(k)
                    stable.discard(k)
                else:
                    s3.put_object(Bucket=b, Key=k, Body=b"")
                    present.add(k)
                    ever.add(k)
            # Delete the very key the token points at now and then.
            if last in present and rnd.random() < 0.3:
                s3.delete_object(Bucket=b, Key=last)
                present.discard(last)
                stable.discard(last)
            check(pages < 2000, "token walk does not end")
        ctx = "walk v2=%s delim=%r max-keys=%d" % (v2, delim, mk)
        eq(len(seen), len(set(seen)), ctx + ": duplicates")
        eq(seen, sorted(seen, key=bkey), ctx + ": order")
        if delim:
            def roll(k):
                i = k.find("/", 2)
                return k[: i + 1] if i >= 0 else k
            want_stable = {roll(k) for k in stable}
            ever_r = {roll(k) for k in ever}
        else:
            want_stable, ever_r = stable, ever
        missing = sorted(want_stable - set(seen))
        check(not missing, ctx + ": skipped %d stable entries, e.g. %r" % (len(missing), missing[:5]))
        extra = sorted(set(seen) - ever_r)
        check(not extra, ctx + ": listed entries that never existed: %r" % extra[:5])
        # Restore the bucket to 'base' for the next walk.
        with ThreadPoolExecutor(8) as ex:
            list(ex.map(lambda k: s3.delete_object(Bucket=b, Key=k), present - set(base)))
            list(ex.map(lambda k: s3.put_object(Bucket=b, Key=k, Body=b""), set(base) - present))


def test_list_after_write(srv):
    """Concurrent writers PUT and DELETE; each acknowledged change is seen by
    the next list, the writer's own and any other thread's."""
    b = "law"
    srv.client().create_bucket(Bucket=b)
    lock = threading.Lock()
    state = {}  # key -> ("present"|"absent", in_flight, version)
    errors = []
    stop = threading.Event()
    n_lists = [0]

    def writer(w):
        s3 = srv.client()
        raw = Raw(srv)
        rnd = random.Random(SEED + 100 + w)
        try:
            for i in range(120):
                k = "w%d/%03d%s" % (w, rnd.randrange(40), rnd.choice(["", " x", "/y", "é"]))
                with lock:
                    cur, _, ver = state.get(k, ("absent", False, 0))
                    state[k] = (cur, True, ver + 1)
                if cur == "absent" or rnd.random() < 0.3:
                    s3.put_object(Bucket=b, Key=k, Body=b"v")
                    new = "present"
                else:
                    s3.delete_object(Bucket=b, Key=k)
                    new = "absent"
                with lock:
                    state[k] = (new, False, ver + 2)
                # The writer's own next list (v1 or v2, prefix = the key).
                params = [("prefix", k)] + ([("list-type", "2")] if i % 2 else [])
                status, body = raw.get("/" + b, params)
                listed = [e.find(NS + "Key").text for e in ET.fromstring(body).findall(NS + "Contents")]
                if (k in listed) != (new == "present"):
                    errors.append("writer %d: after %s of %r the next list shows %r" % (w, new, k, listed))
        except Exception as e:  # noqa: BLE001
            errors.append("writer %d: %r" % (w, e))

    def lister():
        raw = Raw(srv)
        try:
            while not stop.is_set():
                with lock:
                    snap = {k: v for k, v in state.items() if not v[1]}
                keys, token = [], None
                while True:
                    params = [("list-type", "2")] + ([("continuation-token", token)] if token else [])
                    status, body = raw.get("/" + b, params)
                    root = ET.fromstring(body)
                    keys += [e.find(NS + "Key").text for e in root.findall(NS + "Contents")]
                    if root.find(NS + "IsTruncated").text != "true":
                        break
                    token = root.find(NS + "NextContinuationToken").text
                n_lists[0] += 1
                got = set(keys)
                # A key not busy at the snapshot may have been changed since
                # (by a later op), so only keys of the same version count.
                with lock:
                    for k, v in snap.items():
                        if state.get(k) != v:
                            continue
                        s = v[0]
                        if (k in got) != (s == "present"):
                            errors.append("lister: %r is %s but the list %s it" % (k, s, "shows" if k in got else "lacks"))
        except Exception as e:  # noqa: BLE001
            errors.append("lister: %r" % e)

    writers = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    listers = [threading.Thread(target=lister) for _ in range(2)]
    for t in writers + listers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in listers:
        t.join()
    check(not errors, "%d consistency errors, e.g.:\n%s" % (len(errors), "\n".join(errors[:10])))
    check(n_lists[0] >= 5, "listers ran only %d full listings" % n_lists[0])


if __name__ == "__main__":
    harness.main([test_model_raw, test_model_boto3, test_bad_params, test_token_under_writes, test_list_after_write])
