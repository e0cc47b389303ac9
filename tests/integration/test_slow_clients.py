"""test_slow_clients.py: slow and hostile clients cannot take the server down.

Small configured limits keep every case to a few seconds. Attackers connect
from 127.0.0.2 and up (their own client addresses, so the per-address cap
applies to them and not to the health checks from 127.0.0.1).

(a) A client trickling its request headers one byte every 0.5 s is dropped
    about header_timeout after it connected, and on a keep-alive connection
    about header_timeout after the first byte of its next request.
(b) Attackers trickling headers on more connections than connection_limit
    do not keep /_/health from answering.
(c) An upload slower than min_body_rate is dropped and stores nothing; a
    fast one passes.
(d) A client that stops reading a big GET is dropped after send_timeout.
(e) The per-address cap refuses the connection past it; the others (and
    other addresses) are served.
(f) SIGTERM after hostile inputs (slow header senders, a half-sent upload,
    an over-size upload refused mid-body, requests held in their commit)
    ends the process within shutdown_grace plus a few seconds, and what was
    acknowledged before is there after a restart; connections that only
    wait for a request do not hold the stop for the grace; when a commit
    blocks past the grace, the process still ends, and still keeps what was
    acknowledged.
(g) Out of file descriptors, the accept thread backs off, logs a line now
    and then rather than a flood, and accepts again once descriptors free.
"""

import os
import resource
import select
import socket
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.environ.get("SHARD_SRCDIR", os.path.join(os.path.dirname(__file__), "..", "..")), "tests", "integration"))
import harness  # noqa: E402
from harness import check, eq  # noqa: E402

HEADER_TIMEOUT_S = 2
SEND_TIMEOUT_S = 2
WINDOW_S = 2
GRACE_S = 2
STOP_MARGIN_S = 5  # HTTP_STOP_MARGIN_S in server/http.c
PER_IP = 8
LIMIT = 32

CONFIG = """header_timeout = %d
min_body_rate = 10K
body_rate_window = %d
send_timeout = %d
connection_limit = %d
connection_limit_per_ip = %d
shutdown_grace = %d
""" % (HEADER_TIMEOUT_S, WINDOW_S, SEND_TIMEOUT_S, LIMIT, PER_IP, GRACE_S)

# A request head that never ends: one more header byte per tick.
ENDLESS_HEAD = b"GET /_/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: "


def conn_from(srv, src_ip, timeout=5.0, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.bind((src_ip, 0))
    s.settimeout(timeout)
    s.connect(("127.0.0.1", srv.port))
    return s


def is_closed(s, wait_s):
    """Whether the server closed 's' (EOF or reset) within 'wait_s'; bytes
    the server sent meanwhile are read and dropped."""
    deadline = time.monotonic() + wait_s
    while True:
        left = deadline - time.monotonic()
        r, _, _ = select.select([s], [], [], max(left, 0))
        if not r:
            return False
        try:
            if not s.recv(65536):
                return True
        except OSError:
            return True


def trickle(s, chunk, interval_s, limit_s):
    """Sends 'chunk' every 'interval_s' until the server closes 's'.
    Returns the seconds until then, or None if still open after 'limit_s'."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        try:
            s.send(chunk)
        except OSError:
            return time.monotonic() - t0
        if is_closed(s, interval_s):
            return time.monotonic() - t0
    return None


def health_on(s):
    """GET /_/health on the open keep-alive socket 's'; returns the status."""
    s.sendall(b"GET /_/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        b = s.recv(65536)
        check(b, "connection closed before the health answer")
        data += b
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        b = s.recv(65536)
        check(b, "connection closed inside the health answer")
        body += b
    return int(head.split(b" ")[1])


def raw_head(srv, method, path, headers):
    hdrs = srv.sign(method, path, headers=headers, payload_hash="UNSIGNED-PAYLOAD")
    lines = ["%s %s HTTP/1.1" % (method, path)] + ["%s: %s" % kv for kv in hdrs.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


# --------------------------------------------------------------------------


def test_header_deadline():
    with harness.Server(config=CONFIG, tag="slow-a") as srv:
        s = conn_from(srv, "127.0.0.2")
        s.send(ENDLESS_HEAD)
        took = trickle(s, b"a", 0.5, HEADER_TIMEOUT_S + 4)
        s.close()
        check(took is not None, "a header trickled one byte per 0.5 s was still open after %d s" % (HEADER_TIMEOUT_S + 4))
        check(took >= HEADER_TIMEOUT_S - 0.6, "dropped after %.1f s, before header_timeout" % took)
        # Keep-alive: the deadline runs from the first byte of the next
        # request, not from the end of the previous one.
        s = conn_from(srv, "127.0.0.2")
        eq(health_on(s), 200, "first request")
        time.sleep(HEADER_TIMEOUT_S + 0.5)
        eq(health_on(s), 200, "a request after an idle pause longer than header_timeout")
        took = trickle(s, b"G", 0.5, HEADER_TIMEOUT_S + 4)
        s.close()
        check(took is not None, "a keep-alive connection trickling its next request was still open after %d s" % (HEADER_TIMEOUT_S + 4))
        eq(srv.health(), 200, "health afterwards")


def test_health_under_attack():
    with harness.Server(config=CONFIG, tag="slow-b") as srv:
        stop = threading.Event()
        held = []

        def attacker(ip):
            socks = []
            while not stop.is_set():
                while len(socks) < PER_IP:
                    try:
                        s = conn_from(srv, ip, timeout=1)
                        s.send(ENDLESS_HEAD)
                    except OSError:
                        break
                    socks.append(s)
                for s in list(socks):
                    try:
                        s.send(b"a")
                    except OSError:
                        socks.remove(s)
                        s.close()
                held.append(len(socks))
                stop.wait(0.5)
            for s in socks:
                s.close()

        # 8 addresses x 8 connections: twice the connection limit.
        threads = [threading.Thread(target=attacker, args=("127.0.0.%d" % i,)) for i in range(2, 10)]
        for t in threads:
            t.start()
        try:
            time.sleep(1.5)
            bad = []
            n = 0
            t_end = time.monotonic() + 5
            while time.monotonic() < t_end:
                t0 = time.monotonic()
                st = srv.health(timeout=3)
                if st != 200:
                    bad.append((round(t0 - t_end + 5, 2), st))
                n += 1
                time.sleep(0.2)
        finally:
            stop.set()
            for t in threads:
                t.join()
        check(not bad, "/_/health failed %d of %d times under attack: %r" % (len(bad), n, bad[:5]))
        check(max(held) >= 4, "the attackers never held connections (%r): the test attacked nothing" % max(held))


def test_slow_upload_dropped():
    with harness.Server(config=CONFIG, tag="slow-c") as srv:
        eq(srv.request("PUT", "/slowup").status, 200, "create bucket")
        s = conn_from(srv, "127.0.0.3")
        s.sendall(raw_head(srv, "PUT", "/slowup/crawl", {"Content-Length": "1000000"}))
        # 200 bytes/s against a minimum of 10 KiB/s.
        took = trickle(s, b"x" * 100, 0.5, WINDOW_S + 5)
        s.close()
        check(took is not None, "an upload at 200 B/s was still open after %d s" % (WINDOW_S + 5))
        eq(srv.request("HEAD", "/slowup/crawl").status, 404, "the slow upload's object")
        body = harness.random_bytes(3 << 20, seed=3)
        eq(srv.request("PUT", "/slowup/fast", body=body).status, 200, "a fast upload")
        eq(srv.request("GET", "/slowup/fast").body, body, "the fast upload's object")


def test_stalled_reader_dropped():
    with harness.Server(config=CONFIG, tag="slow-d") as srv:
        eq(srv.request("PUT", "/stall").status, 200, "create bucket")
        body = harness.random_bytes(24 << 20, seed=4)
        eq(srv.request("PUT", "/stall/big", body=body).status, 200, "PUT")
        s = conn_from(srv, "127.0.0.4", rcvbuf=4096)
        s.sendall(raw_head(srv, "GET", "/stall/big", {}))
        time.sleep(SEND_TIMEOUT_S + 3)
        got = 0
        s.settimeout(5)
        try:
            while True:
                b = s.recv(1 << 20)
                if not b:
                    break
                got += len(b)
        except OSError:
            pass
        s.close()
        check(got < len(body), "a client that read nothing for %d s still got the whole %d bytes" % (SEND_TIMEOUT_S + 3, len(body)))
        eq(srv.health(), 200, "health afterwards")


def test_per_ip_cap():
    with harness.Server(config=CONFIG, tag="slow-e") as srv:
        socks = [conn_from(srv, "127.0.0.5") for _ in range(PER_IP)]
        for i, s in enumerate(socks):
            eq(health_on(s), 200, "connection %d of %d" % (i + 1, PER_IP))
        extra = conn_from(srv, "127.0.0.5")
        try:
            extra.sendall(b"GET /_/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        except OSError:
            pass
        check(is_closed(extra, 3), "connection %d from one address was not refused" % (PER_IP + 1))
        extra.close()
        eq(srv.health(), 200, "health from another address")
        eq(health_on(socks[0]), 200, "a connection within the cap, afterwards")
        socks.pop().close()
        # The server sees the close at its next turn; until then it may
        # still refuse.
        status = None
        deadline = time.monotonic() + 5
        while status != 200 and time.monotonic() < deadline:
            s = conn_from(srv, "127.0.0.5")
            try:
                status = health_on(s)
            except (OSError, harness.Failure):
                time.sleep(0.1)
            s.close()
        eq(status, 200, "a new connection once one closed")
        for s in socks:
            s.close()


# --------------------------------------------------------------------------
# shutdown


def hostile_inputs(srv, stop):
    """Starts the hostile clients of (f); returns their sockets and threads."""
    socks = []
    for _ in range(5):
        s = conn_from(srv, "127.0.0.6")
        s.send(ENDLESS_HEAD)
        socks.append(s)
    half = conn_from(srv, "127.0.0.7")
    half.sendall(raw_head(srv, "PUT", "/shut/half", {"Content-Length": "100000"}) + b"x" * 5000)
    socks.append(half)
    big = conn_from(srv, "127.0.0.7")
    big.sendall(raw_head(srv, "PUT", "/shut/big", {"Content-Length": str(64 << 20)}))
    socks.append(big)

    def pour():
        try:
            while not stop.is_set():
                big.send(b"y" * 65536)
        except OSError:
            pass

    threads = [threading.Thread(target=pour)]

    def held_put(i):
        try:
            srv.request("PUT", "/shut/held%d" % i, body=b"held", timeout=30)
        except Exception:  # the server may drop it while stopping
            pass

    threads += [threading.Thread(target=held_put, args=(i,)) for i in range(4)]
    for t in threads:
        t.daemon = True
        t.start()
    return socks, threads


def test_shutdown_bounded():
    config = CONFIG + "test_commit_delay_ms = 800\nmax_object_size = 1M\n"
    srv = harness.Server(config=config, tag="slow-f")
    stop = threading.Event()
    try:
        srv.start()
        eq(srv.request("PUT", "/shut").status, 200, "create bucket")
        eq(srv.request("PUT", "/shut/acked", body=b"acknowledged").status, 200, "PUT")
        socks, _ = hostile_inputs(srv, stop)
        time.sleep(0.5)
        t0 = time.monotonic()
        problems = srv.stop_within(GRACE_S + STOP_MARGIN_S + 3)
        stop.set()
        check(not problems, "SIGTERM after hostile inputs (%.1f s):\n%s" % (time.monotonic() - t0, "\n".join(problems)))
        for s in socks:
            s.close()
        srv.start()
        eq(srv.request("GET", "/shut/acked").body, b"acknowledged", "an acknowledged object after the restart")
        problems = srv.stop()
        check(not problems, "\n".join(problems))
    finally:
        stop.set()
        srv.cleanup()


def test_shutdown_not_held_by_waiting_clients():
    # Connections that wait for a request (slow header senders, idle
    # keep-alive ones) have nothing to finish: they must not hold SIGTERM
    # for the whole grace.
    grace_s = 8
    config = CONFIG.replace("shutdown_grace = %d" % GRACE_S, "shutdown_grace = %d" % grace_s)
    srv = harness.Server(config=config, tag="slow-i")
    socks = []
    try:
        srv.start()
        for _ in range(5):
            s = conn_from(srv, "127.0.0.8")
            s.send(ENDLESS_HEAD)
            socks.append(s)
        for _ in range(3):
            s = conn_from(srv, "127.0.0.9")
            eq(health_on(s), 200, "keep-alive request")
            socks.append(s)
        time.sleep(0.3)
        t0 = time.monotonic()
        problems = srv.stop_within(grace_s / 2)
        check(not problems, "SIGTERM with only waiting clients (%.1f s):\n%s" % (time.monotonic() - t0, "\n".join(problems)))
    finally:
        for s in socks:
            s.close()
        srv.cleanup()


def test_shutdown_last_resort():
    srv = harness.Server(config=CONFIG, tag="slow-g", allowed_errors=[r"stopping: still not done"])
    stop = threading.Event()
    try:
        srv.start()
        eq(srv.request("PUT", "/shut").status, 200, "create bucket")
        eq(srv.request("PUT", "/shut/acked", body=b"acknowledged").status, 200, "PUT")
        problems = srv.stop()
        check(not problems, "\n".join(problems))
        # Every commit now blocks far longer than the grace, as a stuck
        # disk would.
        with open(srv.config_path, "a") as f:
            f.write("test_commit_delay_ms = 60000\n")
        srv.start()
        socks, _ = hostile_inputs(srv, stop)
        time.sleep(0.5)
        t0 = time.monotonic()
        srv.proc.send_signal(harness.signal.SIGTERM)
        try:
            srv.proc.wait(timeout=GRACE_S + STOP_MARGIN_S + 3)
        except harness.subprocess.TimeoutExpired:
            raise harness.Failure("a stop blocked on a commit still ran %d s after SIGTERM" % (GRACE_S + STOP_MARGIN_S + 3))
        took = time.monotonic() - t0
        stop.set()
        for s in socks:
            s.close()
        with open(srv.stderr_path, "rb") as f:
            log = f.read().decode("utf-8", "replace")
        check("stopping: still not done" in log, "no log line says why the process ended (%.1f s)" % took)
        srv.kill()
        with open(srv.config_path, "a") as f:
            f.write("test_commit_delay_ms = 0\n")
        srv.start()
        eq(srv.request("GET", "/shut/acked").body, b"acknowledged", "an acknowledged object after the forced exit")
        problems = srv.stop()
        check(not problems, "\n".join(problems))
    finally:
        stop.set()
        srv.cleanup()


# --------------------------------------------------------------------------
# accept() out of descriptors


def test_accept_out_of_descriptors():
    with harness.Server(config=CONFIG + "log_level = info\n", tag="slow-h") as srv:
        pid = srv.proc.pid
        soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        n_open = len(os.listdir("/proc/%d/fd" % pid))
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (n_open + 3, hard))
        socks = []
        try:
            for i in range(12):
                s = conn_from(srv, "127.0.0.%d" % (10 + i))
                s.sendall(b"GET /_/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                socks.append(s)
            time.sleep(2.5)  # accept() meets EMFILE over and over
            for s in socks:
                s.close()
            socks = []
            ok = False
            deadline = time.monotonic() + 5
            while not ok and time.monotonic() < deadline:
                ok = srv.health(timeout=1) == 200
            check(ok, "no answer once descriptors were free again")
        finally:
            for s in socks:
                s.close()
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
        with open(srv.stderr_path, "rb") as f:
            log = f.read().decode("utf-8", "replace")
        n = sum(1 for line in log.splitlines() if " accept: " in line)
        check(1 <= n <= 2, "%d log lines about accept() in 2.5 s of EMFILE (expected one or two)" % n)


TESTS = [
    test_header_deadline,
    test_health_under_attack,
    test_slow_upload_dropped,
    test_stalled_reader_dropped,
    test_per_ip_cap,
    test_shutdown_bounded,
    test_shutdown_not_held_by_waiting_clients,
    test_shutdown_last_resort,
    test_accept_out_of_descriptors,
]

if __name__ == "__main__":
    harness.main(TESTS, shared_server=False)
