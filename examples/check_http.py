#!/usr/bin/env python3
"""check_http.py SERVER PART: the HTTP example server against real clients.

PART is one of
  curl   every route and rule through curl (routes, HEAD, 404, 405, query
         strings, Date and Content-Length on every response, keep-alive
         reuse, HTTP/1.0 close, 431), then through raw sockets what curl
         cannot send (pipelining, malformed requests, slowloris, idle
         keep-alive timeout, a client that never reads), and graceful
         shutdown with an idle and a busy connection open;
  wrk    wrk -t1 for 2 s on /plaintext and /json with a Lua script that
         checks every response's status and body: zero socket errors,
         zero wrong responses.
Both end with the server's descriptors back to where they started and a
clean exit 0 on SIGTERM.  The server runs with short limits (below) so
that the timeouts can be seen in a second.
"""
import re
import socket
import sys
import tempfile
import time

from server_test import (Failure, Server, fail, main, need, recv_until_closed,
                         run, wait_for)

LIMITS = {
    "HTTP_HEADER_TIMEOUT_MS": "800",
    "HTTP_KEEPALIVE_TIMEOUT_MS": "800",
    "HTTP_WRITE_TIMEOUT_MS": "800",
    "HTTP_OUTPUT_LIMIT": "65536",
}
PLAIN = b"Hello, World!"
JSON = b'{"message":"Hello, World!"}'
DATE = re.compile(r"^[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT$")


def parse_responses(data, head_only=()):
    """Splits raw bytes into (status, headers, body) responses; a response
    whose index is in head_only has no body (HEAD).  Returns the list and
    the bytes left over."""
    out = []
    while True:
        end = data.find(b"\r\n\r\n")
        if end < 0:
            return out, data
        lines = data[:end].decode("latin-1").split("\r\n")
        m = re.match(r"HTTP/1\.[01] (\d{3}) ", lines[0])
        if m is None:
            fail("bad status line %r" % lines[0])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        if "content-length" not in headers:
            fail("no Content-Length in %r" % lines)
        if not DATE.match(headers.get("date", "")):
            fail("no valid Date in %r" % lines)
        n = 0 if len(out) in head_only else int(headers["content-length"])
        if len(data) < end + 4 + n:
            return out, data
        out.append((int(m.group(1)), headers, data[end + 4:end + 4 + n]))
        data = data[end + 4 + n:]


def read_responses(sock, count, limit=5.0, head_only=()):
    """Reads exactly `count` responses from sock (failing after limit)."""
    deadline = time.monotonic() + limit
    data = b""
    while True:
        got, _ = parse_responses(data, head_only)
        if len(got) >= count:
            return got
        left = deadline - time.monotonic()
        if left <= 0:
            fail("%d of %d responses within %g s" % (len(got), count, limit))
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            fail("closed after %d of %d responses" % (len(got), count))
        data += chunk


def request(path, method="GET", version="1.1", extra=""):
    return ("%s %s HTTP/%s\r\nHost: test\r\n%s\r\n"
            % (method, path, version, extra)).encode()


def curl(url, *args):
    r = run(["curl", "-s", "-i", "--max-time", "5"] + list(args) + [url], 10,
            text=False)
    if r.returncode != 0:
        fail("curl %s %s: exit %d %s" % (" ".join(args), url, r.returncode,
                                         r.stderr))
    got, rest = parse_responses(r.stdout,
                                head_only=(0,) if "-I" in args else ())
    if len(got) != 1 or rest:
        fail("curl %s: not one response: %r" % (url, r.stdout))
    return got[0]


def expect(resp, status, body=None, ctype=None, what=""):
    st, headers, b = resp
    if st != status:
        fail("%s: status %d, expected %d" % (what, st, status))
    if body is not None and b != body:
        fail("%s: body %r, expected %r" % (what, b, body))
    if ctype is not None and headers.get("content-type") != ctype:
        fail("%s: Content-Type %r" % (what, headers.get("content-type")))


def check_routes(srv):
    base = "http://127.0.0.1:%d" % srv.port
    expect(curl(base + "/plaintext"), 200, PLAIN, "text/plain", "/plaintext")
    expect(curl(base + "/json"), 200, JSON, "application/json", "/json")
    expect(curl(base + "/plaintext?x=1"), 200, PLAIN, None, "query string")
    head = curl(base + "/plaintext", "-I")
    expect(head, 200, b"", None, "HEAD /plaintext")
    if head[1]["content-length"] != "13":
        fail("HEAD: Content-Length %r" % head[1]["content-length"])
    for method in ("POST", "PUT", "DELETE"):
        for path in ("/plaintext", "/json"):
            r = curl(base + path, "-X", method, "-d", "x")
            expect(r, 405, None, None, "%s %s" % (method, path))
            if r[1].get("allow") != "GET, HEAD":
                fail("405 without Allow: GET, HEAD: %r" % r[1])
    for path in ("/", "/nope", "/plaintextx", "/json/", "/PLAINTEXT"):
        expect(curl(base + path), 404, None, None, path)
    expect(curl(base + "/nope", "-X", "POST", "-d", "x"), 404, None, None,
           "POST /nope")
    # Keep-alive: curl reuses its one connection for both URLs.
    r = run(["curl", "-sv", "--max-time", "5", base + "/plaintext",
             base + "/json"], 10)
    if r.stdout != (PLAIN + JSON).decode():
        fail("two URLs on one curl: %r" % r.stdout)
    if "Re-using existing connection" not in r.stderr:
        fail("curl did not reuse the connection:\n" + r.stderr)
    # HTTP/1.0: the response says close, and the server closes.
    r = curl(base + "/plaintext", "-0")
    expect(r, 200, PLAIN, None, "HTTP/1.0")
    if r[1].get("connection", "").lower() != "close":
        fail("HTTP/1.0 response without Connection: close: %r" % r[1])
    # A head over 8 KiB: 431.
    big = "X-Big: " + "a" * 9000
    r = curl(base + "/plaintext", "-H", big)
    expect(r, 431, None, None, "9000-byte header")
    r = curl(base + "/plaintext", "-H", "X-Fine: " + "a" * 7000)
    expect(r, 200, PLAIN, None, "7000-byte header")


def trickle_until_closed(s, piece, period):
    """Send piece every period seconds until the server closes s (or 5 s
    pass); the seconds it took, or None if it stayed open."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < 5:
        try:
            s.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            return time.monotonic() - t0
        s.settimeout(period)
        try:
            if s.recv(100) == b"":
                return time.monotonic() - t0
        except socket.timeout:
            pass
        except ConnectionResetError:
            return time.monotonic() - t0
    return None


def check_raw(srv):
    # HTTP/1.0 without keep-alive: closed after the response.
    s = srv.connect()
    s.sendall(request("/plaintext", version="1.0"))
    data, closed = recv_until_closed(s, 5)
    got, rest = parse_responses(data)
    if not closed or len(got) != 1 or rest or got[0][2] != PLAIN:
        fail("HTTP/1.0: %r, closed=%s" % (data, closed))
    # HTTP/1.0 asking for keep-alive gets it.
    s = srv.connect()
    s.sendall(request("/json", version="1.0", extra="Connection: keep-alive\r\n"))
    r = read_responses(s, 1)[0]
    if r[1].get("connection", "").lower() != "keep-alive":
        fail("HTTP/1.0 keep-alive not granted: %r" % (r,))
    s.sendall(request("/plaintext"))
    expect(read_responses(s, 1)[0], 200, PLAIN, None, "second 1.0 request")
    s.close()
    # Connection: close from an HTTP/1.1 client.
    s = srv.connect()
    s.sendall(request("/json", extra="Connection: close\r\n"))
    data, closed = recv_until_closed(s, 5)
    if not closed or parse_responses(data)[0][0][2] != JSON:
        fail("Connection: close: %r, closed=%s" % (data, closed))

    # Pipelining: ten requests in one send, answered in order; then a
    # HEAD in the middle of a second batch (no body to skip).
    s = srv.connect()
    paths = ["/plaintext", "/json", "/nope"] * 3 + ["/json"]
    s.sendall(b"".join(request(p) for p in paths))
    want = {"/plaintext": (200, PLAIN), "/json": (200, JSON),
            "/nope": (404, b"Not Found")}
    for i, (p, r) in enumerate(zip(paths, read_responses(s, len(paths)))):
        expect(r, want[p][0], want[p][1], None, "pipelined #%d %s" % (i, p))
    s.sendall(request("/json") + request("/plaintext", "HEAD") +
              request("/json"))
    rs = read_responses(s, 3, head_only=(1,))
    expect(rs[0], 200, JSON, None, "pipelined before HEAD")
    expect(rs[1], 200, b"", None, "pipelined HEAD")
    expect(rs[2], 200, JSON, None, "pipelined after HEAD")
    # A request split across many sends, a byte at a time.
    for b in request("/plaintext"):
        s.sendall(bytes([b]))
    expect(read_responses(s, 1)[0], 200, PLAIN, None, "byte by byte")
    # A request with a body (POST: 405), then one more on the connection.
    s.sendall(b"POST /json HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\n"
              b"hello" + request("/json"))
    rs = read_responses(s, 2)
    expect(rs[0], 405, None, None, "POST with a body")
    expect(rs[1], 200, JSON, None, "after a POST body")
    s.close()

    # Malformed requests: 400, then closed; what came before is answered.
    for bad, status in ((b"GARBAGE\r\n\r\n", 400),
                        (b"GET / HTTP/9.9\r\n\r\n", 505),
                        (b"GET /plaintext HTTP/1.1\r\nBad Header\r\n\r\n", 400),
                        (b"GET /json HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400),
                        (b"GET /json HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400),
                        (b"\x00\x01\x02\x03\r\n\r\n", 400)):
        s = srv.connect()
        s.sendall(request("/plaintext") + bad + request("/json"))
        data, closed = recv_until_closed(s, 5)
        got, rest = parse_responses(data)
        if not closed or len(got) != 2 or got[0][0] != 200 or \
                got[1][0] != status:
            fail("malformed %r: %r closed=%s" % (bad, data, closed))
    # A head over 8 KiB from a raw client: 431, closed.
    s = srv.connect()
    s.sendall(b"GET /plaintext HTTP/1.1\r\n" +
              b"".join(b"X-H%d: %s\r\n" % (i, b"b" * 100) for i in range(90)) +
              b"\r\n")
    data, closed = recv_until_closed(s, 5)
    got, _ = parse_responses(data)
    if not closed or len(got) != 1 or got[0][0] != 431:
        fail("90 headers of 100 bytes: %r closed=%s" % (data[:200], closed))

    # Slowloris: a head trickling in a byte every 50 ms is cut off at the
    # header deadline (800 ms), though bytes keep coming.
    s = srv.connect()
    s.sendall(b"GET /plaintext HTTP/1.1\r\n")
    closed_at = trickle_until_closed(s, b"X", 0.05)
    if closed_at is None or not 0.6 <= closed_at <= 3.0:
        fail("slowloris closed after %s s (header deadline 0.8 s)" % closed_at)

    # Idle past the keep-alive timeout (800 ms): closed.
    s = srv.connect()
    s.sendall(request("/plaintext"))
    read_responses(s, 1)
    t0 = time.monotonic()
    data, closed = recv_until_closed(s, 5)
    idle = time.monotonic() - t0
    if not closed or data or not 0.6 <= idle <= 3.0:
        fail("idle connection: closed=%s after %.2f s (keep-alive 0.8 s)"
             % (closed, idle))

    # Idle but for an empty line every 100 ms (which a parser skips before
    # a request, and which starts none): still closed at the keep-alive
    # timeout, not kept open by each line.
    s = srv.connect()
    s.sendall(request("/plaintext"))
    read_responses(s, 1)
    closed_at = trickle_until_closed(s, b"\r\n", 0.1)
    if closed_at is None or not 0.6 <= closed_at <= 3.0:
        fail("empty lines kept an idle connection: closed after %s s "
             "(keep-alive 0.8 s)" % closed_at)

    check_never_reads(srv)


def check_never_reads(srv):
    """A client that pipelines requests and never reads: the server's
    memory stays bounded and the connection is closed once a write has
    waited 800 ms."""
    rss0 = srv.rss_kib()
    s = srv.connect()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.setblocking(False)
    batch = request("/json") * 200
    sent, closed_at, t0 = 0, None, time.monotonic()
    while time.monotonic() - t0 < 10:
        try:
            sent += s.send(batch)
        except BlockingIOError:
            time.sleep(0.01)  # the server is not reading either: retry
        except (BrokenPipeError, ConnectionResetError):
            closed_at = time.monotonic() - t0
            break
    s.close()
    grown = srv.rss_kib() - rss0
    if closed_at is None:
        fail("a client that never reads still connected after 10 s "
             "(%d bytes of requests sent)" % sent)
    if grown > 8192:
        fail("RSS grew %d KiB for a client that never reads" % grown)
    print("never-reads client: closed after %.2f s, %d KiB of requests "
          "sent, RSS +%d KiB" % (closed_at, sent // 1024, grown))


def check_shutdown(srv):
    """SIGTERM with an idle keep-alive connection and one mid-request: the
    idle one is closed at once, the busy one gets its response (saying
    close), new connections are refused, and the server exits 0."""
    idle = srv.connect()
    idle.sendall(request("/plaintext"))
    read_responses(idle, 1)
    busy = srv.connect()
    busy.sendall(b"GET /json HTTP/1.1\r\nHost: t\r\n")
    wait_for(lambda: srv.has_read(busy), 5, "the server reading a partial head")
    srv.proc.send_signal(15)
    wait_for(srv.refused, 5, "new connections refused after SIGTERM")
    data, closed = recv_until_closed(idle, 3)
    if not closed or data:
        fail("idle connection after SIGTERM: closed=%s %r" % (closed, data))
    busy.sendall(b"\r\n")
    data, closed = recv_until_closed(busy, 3)
    got, _ = parse_responses(data)
    if not closed or len(got) != 1 or got[0][2] != JSON or \
            got[0][1].get("connection") != "close":
        fail("busy connection after SIGTERM: %r closed=%s" % (data, closed))
    try:
        rc = srv.proc.wait(timeout=10)
    except Exception:
        fail("still running 10 s after SIGTERM with no connection left")
    if rc != 0:
        fail("exit status %d after SIGTERM" % rc)


WRK_SCRIPT = r"""
-- Checks every response: status 200 and the route's exact body.
local want = "%s"
local threads = {}
bad = 0
function setup(thread) table.insert(threads, thread) end
function response(status, headers, body)
  if status ~= 200 or body ~= want or headers["Date"] == nil then
    bad = bad + 1
  end
end
function done(summary, latency, requests)
  local b = 0
  for _, t in ipairs(threads) do b = b + t:get("bad") end
  local e = summary.errors
  io.write(string.format("requests=%%d bad=%%d connect=%%d read=%%d " ..
    "write=%%d timeout=%%d status=%%d\n", summary.requests, b, e.connect,
    e.read, e.write, e.timeout, e.status))
end
"""


def check_wrk(srv):
    need("wrk", "wrk")
    for path, body in (("/plaintext", PLAIN), ("/json", JSON)):
        with tempfile.NamedTemporaryFile("w", suffix=".lua") as f:
            f.write(WRK_SCRIPT % body.decode().replace('"', '\\"'))
            f.flush()
            r = run(["wrk", "-t1", "-c50", "-d2s", "--timeout", "2s",
                     "-s", f.name, "http://127.0.0.1:%d%s" % (srv.port, path)],
                    30)
        m = re.search(r"requests=(\d+) bad=(\d+) connect=(\d+) read=(\d+) "
                      r"write=(\d+) timeout=(\d+) status=(\d+)", r.stdout)
        if r.returncode != 0 or m is None:
            fail("wrk %s: exit %d\n%s%s" % (path, r.returncode, r.stdout,
                                           r.stderr))
        n = [int(x) for x in m.groups()]
        print("wrk %s: %d requests, %d wrong, errors connect %d read %d "
              "write %d timeout %d status %d" % (path, *n))
        if n[0] < 1000 or any(n[1:]):
            fail("wrk %s: %s" % (path, m.group(0)))


def body():
    if len(sys.argv) != 3 or sys.argv[2] not in ("curl", "wrk"):
        fail("usage: check_http.py SERVER curl|wrk")
    part = sys.argv[2]
    need("curl" if part == "curl" else "wrk",
         "curl" if part == "curl" else "wrk")
    srv = Server(sys.argv[1], env=LIMITS)
    try:
        # One request first: weft makes its netpoller's descriptors when
        # the first task waits, so the count to return to is known then.
        s = srv.connect()
        s.sendall(request("/plaintext"))
        read_responses(s, 1)
        s.close()
        fds0 = srv.wait_idle()
        if part == "curl":
            check_routes(srv)
            check_raw(srv)
        else:
            check_wrk(srv)
        if srv.wait_idle() > fds0:  # fewer is no leak
            fail("descriptors: %d, %d before the checks" % (srv.fds(), fds0))
        srv.alive()
        check_shutdown(srv)
        print("ok: %s checks, descriptors back to %d, exit 0" % (part, fds0))
    finally:
        srv.kill()


main(body)
