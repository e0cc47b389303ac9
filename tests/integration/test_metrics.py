"""test_metrics.py: /_/metrics, the access log and the audit log.

- /_/metrics parses with a strict reader of the Prometheus text format
  0.0.4 (HELP/TYPE once per family and before its samples, a family's
  samples together, name and label syntax, counters named *_total,
  histogram buckets ascending and cumulative with +Inf equal to _count).
- Per-operation counters and histograms move for PUT, GET and errors;
  auth failures are counted by reason; commit and index figures fill.
- metrics_access: admin (the default) refuses anonymous scrapes, open and
  local (from 127.0.0.1) serve them.
- access_log: one valid JSON object per request with the documented
  fields, also for keys with control bytes and invalid UTF-8; SIGHUP
  reopens the file after a rename (logrotate); "-" writes to stdout.
- Admin changes (a user added) are audit records with actor, action and
  target, and never hold a secret.
"""
import json
import math
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402

NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


def parse_value(s, line):
    if s in ("+Inf", "-Inf", "NaN"):
        return float(s.replace("Inf", "inf"))
    if not re.match(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\Z", s):
        raise h.Failure("bad sample value %r in %r" % (s, line))
    return float(s)


def parse_labels(text, line):
    """'a="x",b="y"' -> (("a","x"),("b","y")), strictly."""
    out = []
    pos = 0
    while pos < len(text):
        m = LABEL_RE.match(text, pos)
        if not m:
            raise h.Failure("bad label syntax at %r in %r" % (text[pos:], line))
        out.append((m.group(1), m.group(2)))
        pos = m.end()
        if pos < len(text):
            if text[pos] != ",":
                raise h.Failure("expected ',' in labels of %r" % line)
            pos += 1
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise h.Failure("repeated label in %r" % line)
    return tuple(out)


def family_of(name, types):
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and types.get(base) == "histogram":
            return base
    return name


def parse_exposition(text):
    """Strict reader of the text format. Returns (types, samples) with
    samples {(name, labels): value}."""
    if not text.endswith("\n"):
        raise h.Failure("exposition does not end with a newline")
    types, helps, samples = {}, {}, {}
    seen_families, current = set(), None
    for line in text.split("\n")[:-1]:
        if line == "":
            continue
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not NAME_RE.match(name):
                    raise h.Failure("bad metric name in %r" % line)
                if parts[1] == "HELP":
                    if name in helps:
                        raise h.Failure("second HELP for %s" % name)
                    helps[name] = parts[3] if len(parts) > 3 else ""
                else:
                    if name in types:
                        raise h.Failure("second TYPE for %s" % name)
                    if len(parts) != 4 or parts[3] not in TYPES:
                        raise h.Failure("bad TYPE line %r" % line)
                    if name in seen_families:
                        raise h.Failure("TYPE of %s after its samples" % name)
                    types[name] = parts[3]
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?\Z", line)
        if not m:
            raise h.Failure("bad sample line %r" % line)
        name, labels = m.group(1), parse_labels(m.group(2) or "", line)
        fam = family_of(name, types)
        if fam not in types:
            raise h.Failure("sample %r without a TYPE for %s" % (line, fam))
        if fam != current:
            if fam in seen_families:
                raise h.Failure("samples of %s are not together" % fam)
            seen_families.add(fam)
            current = fam
        key = (name, labels)
        if key in samples:
            raise h.Failure("duplicate series %r" % line)
        samples[key] = parse_value(m.group(3), line)
    # Conventions: counters end in _total; histograms are consistent.
    for fam, t in types.items():
        if t == "counter" and not fam.endswith("_total"):
            raise h.Failure("counter %s does not end in _total" % fam)
        if t == "histogram":
            check_histogram(fam, samples)
    return types, samples


def check_histogram(fam, samples):
    series = {}
    for (name, labels), v in samples.items():
        if name == fam + "_bucket":
            rest = tuple(l for l in labels if l[0] != "le")
            le = [x for n, x in labels if n == "le"]
            if len(le) != 1:
                raise h.Failure("%s bucket without le" % fam)
            series.setdefault(rest, []).append((parse_value(le[0], fam), v))
    for rest, buckets in series.items():
        les = [le for le, _ in buckets]
        if les != sorted(les) or les[-1] != math.inf:
            raise h.Failure("%s%r: buckets not ascending or no +Inf: %r" % (fam, rest, les))
        counts = [c for _, c in buckets]
        if any(b < a for a, b in zip(counts, counts[1:])):
            raise h.Failure("%s%r: bucket counts not cumulative: %r" % (fam, rest, counts))
        count = samples.get((fam + "_count", rest))
        total = samples.get((fam + "_sum", rest))
        if count is None or total is None:
            raise h.Failure("%s%r lacks _count or _sum" % (fam, rest))
        if counts[-1] != count:
            raise h.Failure("%s%r: +Inf %s != _count %s" % (fam, rest, counts[-1], count))


def scrape(srv, sign=True):
    r = srv.request("GET", "/_/metrics", sign=sign)
    h.eq(r.status, 200, "GET /_/metrics")
    h.check(r.header("Content-Type", "").startswith("text/plain; version=0.0.4"),
            "content type %r" % r.header("Content-Type"))
    return parse_exposition(r.body.decode("utf-8"))[1]


def op_val(samples, name, op, code=None):
    want = (("op", op),) + ((("code", code),) if code else ())
    return samples.get((name, want), 0.0)


def find_field(doc, name):
    """The first value of 'name' anywhere in a JSON document."""
    if isinstance(doc, dict):
        if name in doc:
            return doc[name]
        doc = list(doc.values())
    if isinstance(doc, list):
        for x in doc:
            v = find_field(x, name)
            if v is not None:
                return v
    return None


def hist_count(samples, name, **labels):
    return samples.get((name + "_count", tuple(labels.items())), 0.0)


# --------------------------------------------------------------------------


def test_metrics_format_and_counters():
    with h.Server(tag="metrics") as srv:
        before = scrape(srv)
        h.eq(srv.request("PUT", "/mbucket").status, 200, "create bucket")
        for i in range(3):
            h.eq(srv.request("PUT", "/mbucket/obj%d" % i, body=b"x" * 1000).status, 200, "put")
        for i in range(3):
            h.eq(srv.request("GET", "/mbucket/obj%d" % i).status, 200, "get")
        h.eq(srv.request("GET", "/mbucket/missing").status, 404, "get missing")
        h.eq(srv.request("GET", "/mbucket/obj0", secret_key="wrong").status, 403, "bad signature")
        req = "shardstore_http_requests_total"
        # A request is counted when MHD reports it complete, which may be
        # just after its answer reached the client (another event thread
        # then serves the scrape): wait until all nine have been counted.
        deadline = time.monotonic() + 10
        while True:
            after = scrape(srv)
            done = sum(op_val(after, req, op, code) - op_val(before, req, op, code)
                       for op, code in (("PutObject", "2xx"), ("GetObject", "2xx"),
                                        ("GetObject", "4xx"), ("CreateBucket", "2xx")))
            if done >= 9 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        diff = lambda name, op, code: op_val(after, name, op, code) - op_val(before, name, op, code)
        h.eq(diff(req, "PutObject", "2xx"), 3, "PutObject 2xx")
        h.eq(diff(req, "GetObject", "2xx"), 3, "GetObject 2xx")
        h.eq(diff(req, "GetObject", "4xx"), 2, "GetObject 4xx (404 and 403)")
        h.eq(diff(req, "CreateBucket", "2xx"), 1, "CreateBucket 2xx")
        for fam in ("shardstore_http_request_duration_seconds",
                    "shardstore_http_request_first_byte_seconds"):
            h.check(hist_count(after, fam, op="GetObject") >= 5, "%s GetObject filled" % fam)
            h.check(hist_count(after, fam, op="PutObject") >= 3, "%s PutObject filled" % fam)
        h.check(op_val(after, "shardstore_http_request_bytes_total", "PutObject") >= 3000,
                "request bytes of PutObject")
        h.check(op_val(after, "shardstore_http_response_bytes_total", "GetObject") >= 3000,
                "response bytes of GetObject")
        bad_sig = ("shardstore_auth_failures_by_reason_total", (("reason", "bad_signature"),))
        h.check(after.get(bad_sig, 0) >= 1, "auth failure by reason bad_signature")
        for fam in ("shardstore_commit_batch_ops", "shardstore_storage_sync_seconds",
                    "shardstore_index_commit_seconds"):
            h.check(hist_count(after, fam) >= 1, "%s filled" % fam)
        h.check(after[("shardstore_commit_batch_ops_sum", ())] >= 3, "3 PUTs committed")
        h.check(after[("shardstore_index_map_size_bytes", ())] > 0, "index map size")
        h.check(0 < after[("shardstore_index_map_used_bytes", ())] <=
                after[("shardstore_index_map_size_bytes", ())], "index map used")
        free = after[("shardstore_volume_free_bytes", (("tier", "hot"),))]
        used = after[("shardstore_volume_used_bytes", (("tier", "hot"),))]
        h.eq(free + used, after[("shardstore_storage_total_bytes", ())], "used + free = total")
        h.check(after[("shardstore_http_connections", ())] >= 1, "open connections")
        h.check(after[("shardstore_requests_in_flight", ())] >= 1, "in flight (this scrape)")
        h.eq(after[("shardstore_scrub_runs_total", ())], 0, "no scrub yet")
        h.eq(srv.request("POST", "/_/scrub").status, 200, "scrub")
        h.eq(scrape(srv)[("shardstore_scrub_runs_total", ())], 1, "scrub counted")


def test_metrics_parser_rejects_bad_text():
    """The strict reader fails on what a real scraper would reject."""
    good = ("# HELP a_total x\n# TYPE a_total counter\na_total 1\n"
            "# HELP h y\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\n"
            "h_sum 3\nh_count 2\n")
    parse_exposition(good)
    for bad in (good.replace("h_count 2", "h_count 3"),            # +Inf != count
                good.replace('le="1"} 1', 'le="1"} 5'),             # not cumulative
                good.replace("a_total 1", "a_total{x=y} 1"),        # label syntax
                good + "a_total 2\n",                               # family split / duplicate
                good.replace("# TYPE a_total counter\n", ""),      # no TYPE
                good.replace("a_total", "a_count")):                # counter without _total
        try:
            parse_exposition(bad)
        except h.Failure:
            continue
        raise h.Failure("accepted bad exposition:\n" + bad)


def test_metrics_access_modes():
    with h.Server(tag="metrics-admin") as srv:  # default: admin
        h.eq(srv.request("GET", "/_/metrics", sign=False).status, 403, "default: anonymous refused")
        scrape(srv, sign=True)
    with h.Server(config="metrics_access = admin\n", tag="metrics-admin") as srv:
        h.eq(srv.request("GET", "/_/metrics", sign=False).status, 403, "admin: anonymous refused")
        h.eq(srv.request("GET", "/_/metrics", secret_key="wrong").status, 403, "admin: bad signature")
        scrape(srv, sign=True)
        # A user without the admin flag is refused too.
        h.eq(srv.request("POST", "/_/admin/users", query="name=bob").status, 200, "add bob")
        r = srv.request("POST", "/_/admin/keys", query="user=bob")
        h.eq(r.status, 200, "key for bob")
        ak, sk = find_field(json.loads(r.body), "access_key"), find_field(json.loads(r.body), "secret_key")
        h.check(ak and sk, "key answer %r" % r.body[:200])
        h.eq(srv.request("GET", "/_/metrics", access_key=ak, secret_key=sk).status, 403,
             "admin: a plain user is refused")
    for mode in ("open", "local"):
        with h.Server(config="metrics_access = %s\n" % mode, tag="metrics-open") as srv:
            scrape(srv, sign=False)
    srv = h.Server(config="metrics_access = sometimes\n", tag="metrics-bad")
    try:
        r = h.run_cmd([srv.binary, "--listen", "127.0.0.1:0", "--data", srv.data_dir, "--config",
                       srv.config_path], timeout=20, check_rc=False)
        h.check(r.returncode != 0 and b"metrics_access" in r.stderr,
                "a bad metrics_access value is refused: %d %r" % (r.returncode, r.stderr[-300:]))
    finally:
        srv.cleanup()


# --------------------------------------------------------------------------
# access log

FIELDS = ("time", "request_id", "remote_addr", "principal", "operation", "bucket", "key",
          "range", "status", "error", "bytes_in", "bytes_out", "duration_ms", "ttfb_ms",
          "user_agent")


def read_log(path):
    """Every line of the log as a JSON object; the file must be valid UTF-8."""
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8")  # strict: invalid UTF-8 fails here
    h.check(text == "" or text.endswith("\n"), "log ends with a newline")
    return [json.loads(line) for line in text.split("\n") if line]


def wait_lines(path, pred, what, timeout=5):
    deadline = time.monotonic() + timeout
    while True:
        lines = read_log(path) if os.path.exists(path) else []
        hit = [x for x in lines if pred(x)]
        if hit:
            return hit
        if time.monotonic() > deadline:
            raise h.Failure("no log line for %s in %s: %r" % (what, path, lines[-3:]))
        time.sleep(0.05)


def test_access_log_fields_and_escaping():
    srv = h.Server(tag="access-log")
    log = os.path.join(srv.tmp, "access.log")
    with open(os.path.join(srv.tmp, "c.conf"), "w") as f:
        f.write("access_log = %s\n" % log)
    srv.config_path = os.path.join(srv.tmp, "c.conf")
    with srv:
        h.eq(srv.request("PUT", "/logb").status, 200, "create bucket")
        h.eq(srv.request("PUT", "/logb/plain", body=b"y" * 100).status, 200, "put")
        r = srv.request("GET", "/logb/plain", headers={"Range": "bytes=10-19", "User-Agent": 'ua "x"\\'})
        h.eq(r.status, 206, "range get")
        rid = r.header("x-amz-request-id")
        # Control bytes, a quote, a backslash, invalid UTF-8 and a valid
        # multibyte character in one key.
        raw_key = b"k\x01\x1f\"\\\xff\xc3(\xe2\x82\xac\x7f"
        quoted = "".join("%%%02X" % c for c in raw_key)
        # Such a key is refused when written (400) and not found when read:
        # either way its request is logged.
        h.eq(srv.request("PUT", "/logb/" + quoted, body=b"z").status, 400, "put odd key")
        h.eq(srv.request("GET", "/logb/" + quoted).status, 404, "get odd key")
        h.eq(srv.request("GET", "/logb/nothere").status, 404, "missing")
        lines = wait_lines(log, lambda x: x.get("error") == "NoSuchKey", "the 404")
        lines = read_log(log)
        for x in lines:
            for f in FIELDS:
                h.check(f in x, "field %s missing in %r" % (f, x))
            h.check(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\Z", x["time"]), "time %r" % x["time"])
            h.check("testsecret" not in json.dumps(x), "a secret in the log")
        get = [x for x in lines if x["request_id"] == rid]
        h.eq(len(get), 1, "one line for the range GET")
        g = get[0]
        h.eq((g["operation"], g["bucket"], g["key"], g["range"], g["status"], g["error"]),
             ("GetObject", "logb", "plain", "bytes=10-19", 206, None), "range GET line")
        h.eq((g["principal"], g["remote_addr"], g["bytes_out"]), ("root", "127.0.0.1", 10), "who and bytes")
        h.eq(g["user_agent"], 'ua "x"\\', "user agent")
        h.check(0 <= g["ttfb_ms"] <= g["duration_ms"], "ttfb <= duration")
        put = [x for x in lines if x["operation"] == "PutObject" and x["key"] == "plain"][0]
        h.eq(put["bytes_in"], 100, "bytes in of the PUT")
        odd = [x for x in lines if x.get("key_hex")]
        h.eq(len(odd), 2, "two lines with key_hex")
        h.eq(bytes.fromhex(odd[0]["key_hex"]), raw_key, "key_hex holds the exact key")
        h.eq(odd[0]["key"], 'k\x01\x1f"\\\ufffd\ufffd(\u20ac\x7f', "key text (invalid bytes as U+FFFD)")
        miss = [x for x in lines if x["key"] == "nothere"][0]
        h.eq((miss["status"], miss["error"], miss["principal"]), (404, "NoSuchKey", "root"), "404 line")


def test_access_log_reopen_on_sighup():
    srv = h.Server(tag="access-log")
    log = os.path.join(srv.tmp, "access.log")
    with open(os.path.join(srv.tmp, "c.conf"), "w") as f:
        f.write("access_log = %s\n" % log)
    srv.config_path = os.path.join(srv.tmp, "c.conf")
    with srv:
        srv.request("GET", "/_/health", sign=False)
        wait_lines(log, lambda x: x["operation"] == "AdminHealth", "health")
        os.rename(log, log + ".1")  # logrotate
        srv.request("GET", "/before-hup", sign=False)
        wait_lines(log + ".1", lambda x: x["bucket"] == "before-hup", "a request before SIGHUP")
        os.kill(srv.proc.pid, signal.SIGHUP)
        # The reopen happens on the signal thread: poll until new lines land
        # in the new file.
        deadline = time.monotonic() + 5
        while not os.path.exists(log) or not read_log(log):
            h.check(time.monotonic() < deadline, "no new access.log after SIGHUP")
            srv.request("GET", "/after-hup", sign=False)
            time.sleep(0.05)
        new = read_log(log)
        # (A line is written once the response is out, so the health
        # request's line may land on either side: only the order of the
        # two marked requests is certain.)
        h.check(any(x["bucket"] == "after-hup" for x in new), "new requests in the new file: %r" % new)
        h.check(not any(x["bucket"] == "before-hup" for x in new), "old request in the new file")
        h.check(srv.running(), "server alive after SIGHUP")


def test_access_log_stdout():
    with h.Server(config="access_log = -\n", tag="access-stdout") as srv:
        srv.request("GET", "/stdoutbucket/k", sign=False)
        deadline = time.monotonic() + 5
        while True:
            try:
                line = srv._stdout_lines.get(timeout=0.2)
            except Exception:
                line = ""
            if line and "stdoutbucket" in line:
                x = json.loads(line)
                h.eq((x["bucket"], x["key"], x["principal"]), ("stdoutbucket", "k", "anonymous"), "stdout line")
                break
            h.check(time.monotonic() < deadline, "no access line on stdout")


def test_access_log_off_by_default():
    with h.Server(tag="access-off") as srv:
        srv.request("GET", "/offbucket/k", sign=False)
        srv.request("GET", "/_/health", sign=False)
        left = []
        while not srv._stdout_lines.empty():
            left.append(srv._stdout_lines.get())
        h.check(not any("offbucket" in (x or "") for x in left), "access lines without access_log")
        h.check(not [f for f in os.listdir(srv.tmp) if "access" in f], "a log file appeared")


def test_audit_records():
    srv = h.Server(tag="audit")
    log = os.path.join(srv.tmp, "access.log")
    audit = os.path.join(srv.tmp, "audit.log")
    with open(os.path.join(srv.tmp, "c.conf"), "w") as f:
        f.write("access_log = %s\naudit_log = %s\n" % (log, audit))
    srv.config_path = os.path.join(srv.tmp, "c.conf")
    with srv:
        h.eq(srv.request("POST", "/_/admin/users", query="name=alice&admin=true").status, 200, "add alice")
        r = srv.request("POST", "/_/admin/keys", query="user=alice")
        h.eq(r.status, 200, "key for alice")
        secret = find_field(json.loads(r.body), "secret_key") or ""
        h.eq(srv.request("GET", "/_/admin/users").status, 200, "list users (not audited)")
        h.eq(srv.request("DELETE", "/_/admin/users", query="name=nobody").status // 100, 4, "remove unknown")
        recs = wait_lines(audit, lambda x: x.get("action") == "user.remove", "user.remove")
        recs = read_log(audit)
        h.check(all(x.get("audit") is True for x in recs), "audit: true on every record")
        add = [x for x in recs if x["action"] == "user.add"]
        h.eq(len(add), 1, "one user.add record")
        h.eq((add[0]["actor"], add[0]["target"], add[0]["status"]),
             ("root", {"name": "alice", "admin": "true"}, 200), "user.add record")
        key = [x for x in recs if x["action"] == "key.create"]
        h.eq(key[0]["target"], {"user": "alice"}, "key.create target")
        rm = [x for x in recs if x["action"] == "user.remove"][0]
        h.check(rm["status"] >= 400 and rm.get("error"), "a failed change is audited with its error")
        h.check(not any(x["action"] == "other" for x in recs), "reads are not audited")
        with open(audit, "rb") as f:
            h.check(not secret or secret.encode() not in f.read(), "the new secret is not logged")
        h.check(not [x for x in read_log(log) if x.get("audit")], "audit records only in audit_log")


if __name__ == "__main__":
    h.main([test_metrics_parser_rejects_bad_text, test_metrics_format_and_counters,
            test_metrics_access_modes, test_access_log_fields_and_escaping,
            test_access_log_reopen_on_sighup, test_access_log_stdout,
            test_access_log_off_by_default, test_audit_records], shared_server=False)
