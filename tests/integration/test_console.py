"""test_console.py: the status console at /_/console, in a real browser.

Headless Chromium (Debian `chromium`, installed by scripts/setup.sh --test)
is driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
JSON messages separated by NUL bytes on fds 3 and 4), so only the standard
library is needed. The test makes buckets and objects and provokes an error,
then in the page:
- a wrong secret is refused (the server's SignatureDoesNotMatch shown);
- the right admin key logs in; the page shows the version the server
  prints with --version, health "ok", each bucket with its object count and
  bytes, the provoked error (op, bucket, key, code) and the lifecycle table;
- nothing is stored in the browser (no cookie, localStorage or
  sessionStorage entry) and the secret field is cleared;
- the page ran under its Content-Security-Policy without a violation or a
  script error.
Over plain HTTP it also checks that the API refuses unsigned requests and
that the page carries the CSP. The screenshot of the logged-in page is
written to console.png beside this test's log (build/<dir>/tests/
integration/console.png). Skips (77) when chromium is not installed.
"""
import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", "."), "tests", "integration"))
import harness as h  # noqa: E402

BROWSER_TIMEOUT_S = 15.0


class Browser:
    """Headless Chromium with the DevTools protocol on a pipe."""

    def __init__(self, binary):
        self.profile = tempfile.mkdtemp(prefix="shard-chromium-")
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()
        argv = [binary, "--headless=new", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-sync",
                "--password-store=basic", "--window-size=1280,1100",
                "--user-data-dir=" + self.profile, "--remote-debugging-pipe", "about:blank"]
        # The browser reads commands on fd 3 and writes answers on fd 4.
        script = 'exec "$0" "$@" 3<&%d 4>&%d' % (to_r, from_w)
        self.proc = subprocess.Popen(["sh", "-c", script] + argv, pass_fds=(to_r, from_w),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None

    def send(self, method, params=None, session=True, timeout=BROWSER_TIMEOUT_S):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise h.Failure("DevTools %s: %s" % (method, m["error"]))
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def _read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_r], [], [], left)[0]:
                raise h.Failure("the browser did not answer in time")
            chunk = os.read(self.from_r, 1 << 16)
            if not chunk:
                raise h.Failure("the browser closed its DevTools pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def open_page(self):
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        att = self.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True},
                        session=False)
        self.session = att["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(domain + ".enable")

    def eval(self, expr):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            raise h.Failure("page script %r failed: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def wait_for(self, expr, what, timeout=BROWSER_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        while True:
            v = self.eval(expr)
            if v:
                return v
            if time.monotonic() > deadline:
                raise h.Failure("timed out waiting for %s (%s)" % (what, expr))
            time.sleep(0.1)

    def problems(self):
        """Script exceptions and console/CSP errors the page reported."""
        out = []
        for e in self.events:
            if e["method"] == "Runtime.exceptionThrown":
                out.append(e["params"]["exceptionDetails"].get("text", "exception"))
            elif e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] == "error":
                entry = e["params"]["entry"]
                # The deliberate wrong-secret login is a 403 fetch: expected.
                if entry.get("source") == "network" and "403" in entry.get("text", ""):
                    continue
                out.append("%s: %s" % (entry.get("source"), entry.get("text")))
        return out

    def close(self):
        try:
            self.send("Browser.close", session=False, timeout=5)
        except h.Failure:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_w)
        os.close(self.from_r)
        shutil.rmtree(self.profile, ignore_errors=True)


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def js_str(s):
    return json.dumps(s)


def table_rows(b, table_id):
    return b.eval("Array.from(document.querySelectorAll('#%s tbody tr'))"
                  ".map(tr => Array.from(tr.cells).map(td => td.textContent))" % table_id)


def test_http_side(srv):
    """Without a browser: the page is public, the API is not."""
    r = srv.request("GET", "/_/console", sign=False)
    h.eq(r.status, 200, "the page without login")
    csp = r.header("Content-Security-Policy") or ""
    h.check("script-src 'self'" in csp and "frame-ancestors 'none'" in csp, "CSP header: %r" % csp)
    h.check(b'content="us-east-1"' in r.body, "the page names the region to sign for")
    for path in ("/_/console/api/summary", "/_/console/api/buckets"):
        r = srv.request("GET", path, sign=False)
        h.eq(r.status, 403, "unsigned %s" % path)
        h.eq(srv.request("GET", path).status, 200, "signed %s" % path)
    h.eq(srv.request("GET", "/_/console/api/nothing").status, 400, "unknown API path")
    h.eq(srv.request("GET", "/_/console/secret.txt", sign=False).status, 403,
         "unknown console file: as any unauthenticated admin path")

    # The error ring keeps the last 64 errors, newest first; long keys are
    # cut at 256 bytes and say so; odd bytes are escaped as JSON.
    srv.client().create_bucket(Bucket="ring-bucket")
    for i in range(70):
        key = ("k%03d-" % i) + ("x" * 300 if i == 69 else "\x01")
        h.eq(srv.request("GET", "/ring-bucket/" + h.quote_key(key)).status, 404, "missing key %d" % i)
    ring = json.loads(srv.request("GET", "/_/console/api/summary").body)["recent_errors"]
    h.eq(len(ring), 64, "ring size")
    h.eq([e["key"][:4] for e in ring[:2]], ["k069", "k068"], "newest first")
    h.eq((len(ring[0]["key"]), ring[0]["key_cut"]), (256, True), "long key cut")
    h.eq((ring[1]["key"], ring[1]["key_cut"], ring[1]["code"], ring[1]["op"], ring[1]["bucket"]),
         ("k068-\x01", False, "NoSuchKey", "GetObject", "ring-bucket"), "a record")
    h.check(all(e["status"] == 404 for e in ring), "the oldest were overwritten")


def test_console_in_browser(srv):
    chromium = find_chromium()
    if not chromium:
        raise h.Skip("chromium is not installed (scripts/setup.sh --test installs it)")
    c = srv.client()
    c.create_bucket(Bucket="console-alpha")
    c.create_bucket(Bucket="console-beta")
    for i in range(3):
        c.put_object(Bucket="console-alpha", Key="obj-%d" % i, Body=b"x" * 1000)
    c.put_object(Bucket="console-beta", Key="one", Body=b"y" * 2048)
    try:
        c.get_object(Bucket="console-beta", Key="missing-key-for-console")
        raise h.Failure("GET of a missing key succeeded")
    except Exception as e:  # botocore ClientError
        h.check("NoSuchKey" in str(e), "provoked error: %s" % e)
    version = subprocess.run([srv.binary, "--version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    h.check(version.startswith("shardstore "), "--version: %r" % version)
    version = version[len("shardstore "):]

    b = Browser(chromium)
    try:
        b.open_page()
        b.send("Page.navigate", {"url": srv.endpoint + "/_/console"})
        b.wait_for("document.readyState === 'complete' && !!document.getElementById('login')",
                   "the login form")

        def log_in(secret):
            b.eval("document.getElementById('access-key').value = %s;"
                   "document.getElementById('secret-key').value = %s;"
                   "document.getElementById('login-button').click(); true"
                   % (js_str(srv.access_key), js_str(secret)))

        log_in("not-the-secret")
        err = b.wait_for("document.getElementById('login-error').textContent", "login error")
        h.check("SignatureDoesNotMatch" in err, "wrong secret refused: %r" % err)
        h.eq(b.eval("document.body.dataset.state"), "login", "still on the login form")

        log_in(srv.secret_key)
        b.wait_for("document.body.dataset.state === 'dashboard'", "the dashboard")
        h.eq(b.eval("document.getElementById('version').textContent"), version, "version shown")
        h.eq(b.eval("document.getElementById('health').textContent"), "ok", "health shown")
        h.check(b.eval("document.getElementById('uptime').textContent").endswith("s"), "uptime")
        rows = {r[0]: r for r in table_rows(b, "buckets")}
        h.eq(sorted(n for n in rows if n.startswith("console-")), ["console-alpha", "console-beta"],
             "buckets listed")
        h.eq(rows["console-alpha"][1], "3", "objects in console-alpha")
        h.eq(rows["console-alpha"][2], "2.9 KiB", "bytes of console-alpha")
        h.check(all(r[1] != "?" for r in rows.values()), "counts known")
        h.eq((rows["console-beta"][1], rows["console-beta"][2]), ("1", "2.0 KiB"), "console-beta")
        errors = table_rows(b, "errors")
        hits = [e for e in errors if e[3] == "missing-key-for-console"]
        h.check(hits, "the provoked error is listed: %r" % errors)
        h.eq((hits[0][1], hits[0][2], hits[0][4], hits[0][5]),
             ("GetObject", "console-beta", "404", "NoSuchKey"), "error row")
        lc = dict((r[0], r[1]) for r in table_rows(b, "lifecycle"))
        h.eq(lc.get("Passes"), "0", "lifecycle passes")
        # Two more polls (2 s apart) give the graphs a line to draw; the
        # page's own polls make the rate positive. Some traffic meanwhile
        # gives the throughput graph (and the screenshot) something to show.
        body = b"z" * (1 << 20)
        t_end = time.monotonic() + 3
        while time.monotonic() < t_end:
            c.put_object(Bucket="console-alpha", Key="traffic", Body=body)
            c.get_object(Bucket="console-alpha", Key="traffic")["Body"].read()
            time.sleep(0.1)
        b.wait_for("Number(document.getElementById('rate-graph').dataset.points) >= 2",
                   "two points on the request-rate graph")
        rate = b.eval("document.getElementById('rate-now').textContent")
        h.check(rate.startswith("(now ") and float(rate[5:-1]) > 0, "request rate: %r" % rate)
        stored = b.eval("[document.cookie, localStorage.length, sessionStorage.length,"
                        " document.getElementById('secret-key').value]")
        h.eq(stored, ["", 0, 0, ""], "cookie, localStorage, sessionStorage, secret field")
        h.eq(b.problems(), [], "script errors or CSP violations in the page")
        shot = b.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        out_dir = os.path.join(os.environ.get("SHARD_BUILDDIR", "."), "tests", "integration")
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "console.png")
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        print("screenshot: %s" % path, flush=True)

        # Log out: the dashboard goes and the API is not called again.
        b.eval("document.getElementById('logout').click(); true")
        h.eq(b.eval("document.body.dataset.state"), "login", "logged out")
        h.eq(b.eval("document.querySelectorAll('#buckets tbody tr').length"), 0, "tables cleared")
    finally:
        b.close()


if __name__ == "__main__":
    h.main([test_http_side, test_console_in_browser])
