#!/usr/bin/env python3
"""check_kv.py SERVER PART: the key-value example server against real
clients.

PART is one of
  cli        every command and every error through redis-cli, compared
             with what redis-server 7 answers (its exact wording); SET's
             EX/PX honoured (polled: present at once, gone in time);
             then through raw sockets what redis-cli cannot send:
             pipelining, inline commands with quoting, binary values
             written and read back, malformed frames, a bulk length over
             the limit, a client that never reads; graceful shutdown.
  benchmark  redis-benchmark (exits non-zero on any error reply) at -P 1
             and -P 16 for SET and GET on a random keyspace, whose values
             are then read back; INCR from 20 connections on one key,
             whose final count must be exact (the sharded map's mutexes
             under contention); MSET/MGET of random values read back.
Both end with the server's descriptors back where they started and a
clean exit 0 on SIGTERM.
"""
import os
import random
import socket
import sys
import time

from server_test import (Failure, Server, fail, main, need, recv_until_closed,
                         run, wait_for)

LIMITS = {"KV_MAX_BULK": "1048576", "KV_WRITE_TIMEOUT_MS": "800"}


def resp(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


class Reader:
    """Parses RESP2 replies from a socket."""

    def __init__(self, sock, limit=5.0):
        self.sock, self.buf, self.limit = sock, b"", limit

    def _fill(self):
        self.sock.settimeout(self.limit)
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            fail("the server closed the connection")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return Exception(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        fail("unparsable reply line %r" % line)


# (arguments, what redis-cli prints for redis-server 7.0's reply)
CLI_CASES = [
    (["PING"], "PONG"),
    (["ping", "hello there"], "hello there"),
    (["PING", "a", "b"], "ERR wrong number of arguments for 'ping' command"),
    (["ECHO", "x y"], "x y"),
    (["ECHO"], "ERR wrong number of arguments for 'echo' command"),
    (["FOO"], "ERR unknown command 'FOO', with args beginning with: "),
    (["FOO", "a", "b"], "ERR unknown command 'FOO', with args beginning with: 'a' 'b' "),
    (["SET", "k1", "v1"], "OK"),
    (["GET", "k1"], "v1"),
    (["get", "nokey"], ""),
    (["GET"], "ERR wrong number of arguments for 'get' command"),
    (["GET", "a", "b"], "ERR wrong number of arguments for 'get' command"),
    (["SET", "a"], "ERR wrong number of arguments for 'set' command"),
    (["SET", "a", "b", "EX", "0"], "ERR invalid expire time in 'set' command"),
    (["SET", "a", "b", "PX", "-5"], "ERR invalid expire time in 'set' command"),
    (["SET", "a", "b", "EX", "x"], "ERR value is not an integer or out of range"),
    (["SET", "a", "b", "FOO"], "ERR syntax error"),
    (["SET", "a", "b", "EX"], "ERR syntax error"),
    (["SET", "a", "b", "EX", "10", "PX", "5"], "ERR syntax error"),
    (["SET", "a", "b", "NX", "XX"], "ERR syntax error"),
    (["SET", "a", "b", "EX", "10", "KEEPTTL"], "ERR syntax error"),
    (["SET", "a", "b", "EX", "9223372036854775"], "ERR invalid expire time in 'set' command"),
    (["SET", "a", "b", "PX", "9223372036854775807"], "ERR invalid expire time in 'set' command"),
    # Far expiries are kept (in ns they pass 64 bits: they wrapped to a
    # deadline a moment away, and the key was gone at once).
    (["SET", "far", "v", "PX", "18446744073710"], "OK"),
    (["GET", "far"], "v"),
    (["SET", "far2", "v", "EX", "1000000000001"], "OK"),
    (["GET", "far2"], "v"),
    (["SET", "rep", "v", "EX", "10", "EX", "20"], "OK"),
    (["SET", "rep", "w", "NX", "NX"], ""),
    (["GET", "rep"], "v"),
    (["SET", "nx1", "v", "NX"], "OK"),
    (["SET", "nx1", "w", "NX"], ""),
    (["GET", "nx1"], "v"),
    (["SET", "nx1", "w", "XX"], "OK"),
    (["GET", "nx1"], "w"),
    (["SET", "xx-absent", "w", "XX"], ""),
    (["EXISTS", "k1", "k1", "nokey", "nx1"], "3"),
    (["EXISTS"], "ERR wrong number of arguments for 'exists' command"),
    (["DEL", "k1", "nokey", "nx1"], "2"),
    (["DEL"], "ERR wrong number of arguments for 'del' command"),
    (["GET", "k1"], ""),
    (["INCR", "counter"], "1"),
    (["INCR", "counter"], "2"),
    (["INCR"], "ERR wrong number of arguments for 'incr' command"),
    (["SET", "s", "abc"], "OK"),
    (["INCR", "s"], "ERR value is not an integer or out of range"),
    (["SET", "s", "007"], "OK"),
    (["INCR", "s"], "ERR value is not an integer or out of range"),
    (["SET", "s", "-5"], "OK"),
    (["INCR", "s"], "-4"),
    (["SET", "big", "9223372036854775807"], "OK"),
    (["INCR", "big"], "ERR increment or decrement would overflow"),
    (["MSET", "m1", "1", "m2", "2"], "OK"),
    (["MSET", "m1"], "ERR wrong number of arguments for 'mset' command"),
    (["MSET", "m1", "1", "m2"], "ERR wrong number of arguments for 'mset' command"),
    (["MGET", "m1", "nokey", "m2"], "1\n\n2"),
    (["MGET"], "ERR wrong number of arguments for 'mget' command"),
    (["CONFIG", "GET", "appendonly"], "appendonly\nno"),
]


def check_cli(srv):
    for args, want in CLI_CASES:
        r = run(["redis-cli", "-p", str(srv.port)] + args, 10)
        got = r.stdout.rstrip("\n")  # errors end in a blank line
        if r.returncode != 0 or got != want:
            fail("redis-cli %s: %r (exit %d), redis-server says %r"
                 % (" ".join(args), got, r.returncode, want))
    print("redis-cli: %d commands answered as redis-server does"
          % len(CLI_CASES))


def cli(srv, *args):
    return run(["redis-cli", "-p", str(srv.port)] + list(args), 10).stdout


def check_expiry(srv):
    for args, lo, hi in ((["PX", "300"], 0.25, 3.0), (["EX", "1"], 0.95, 4.0)):
        t0 = time.monotonic()
        if cli(srv, "SET", "ttl", "v", *args) != "OK\n":
            fail("SET ttl v %s" % args)
        if cli(srv, "GET", "ttl") != "v\n":
            fail("SET ... %s: gone at once" % args)
        wait_for(lambda: cli(srv, "GET", "ttl") == "\n", hi,
                 "the key set with %s expiring" % " ".join(args))
        took = time.monotonic() - t0
        if took < lo:
            fail("%s expired after %.2f s" % (" ".join(args), took))
    # INCR keeps the deadline; SET without an option drops it.
    cli(srv, "SET", "t2", "5", "PX", "300")
    cli(srv, "INCR", "t2")
    wait_for(lambda: cli(srv, "GET", "t2") == "\n", 3, "INCR kept the TTL")
    cli(srv, "SET", "t3", "5", "PX", "200")
    cli(srv, "SET", "t3", "6")
    # Nothing to poll for: the key must still be there after its old TTL.
    time.sleep(0.4)
    if cli(srv, "GET", "t3") != "6\n":
        fail("SET without EX kept an old TTL")
    print("expiry: PX and EX honoured, INCR keeps the TTL, SET drops it")


def check_raw(srv):
    s = srv.connect()
    rd = Reader(s)
    # Pipelining: 1000 commands in one send, answered in order.
    batch = b"".join(resp("SET", "p%d" % i, "v%d" % i) for i in range(500))
    batch += b"".join(resp("GET", "p%d" % i) for i in range(500))
    s.sendall(batch)
    for i in range(500):
        if rd.reply() != "OK":
            fail("pipelined SET #%d" % i)
    for i in range(500):
        if rd.reply() != b"v%d" % i:
            fail("pipelined GET #%d" % i)
    # Inline commands, with Redis's quoting.
    s.sendall(b"PING\r\nSET q \"a b\\x41\\n\"\r\nGET q\nECHO 'it\\'s'\r\n"
              b"\r\nMGET q nokey\r\n")
    got = [rd.reply() for _ in range(5)]
    if got != ["PONG", "OK", b"a bA\n", b"it's", [b"a bA\n", None]]:
        fail("inline commands: %r" % got)
    # Binary-safe values: every byte, CR and LF included.
    vals = {b"bin%d" % i: os.urandom(random.randint(0, 3000)) for i in range(50)}
    s.sendall(b"".join(resp("SET", k, v) for k, v in vals.items()))
    for _ in vals:
        rd.reply()
    s.sendall(resp("MGET", *vals.keys()))
    if rd.reply() != list(vals.values()):
        fail("binary values read back differ")
    # A frame split across many sends.
    for b in resp("SET", "split", "x" * 100):
        s.sendall(bytes([b]))
    if rd.reply() != "OK":
        fail("byte-by-byte SET")
    s.sendall(b"QUIT\r\n")
    data, closed = recv_until_closed(s, 5)
    if data != b"+OK\r\n" or not closed:
        fail("QUIT: %r closed=%s" % (data, closed))

    # Malformed frames: Redis's error, then the connection closes; what
    # came before in the same send is answered first.
    for bad, err in (
            (b"*1\r\n$x\r\n", b"-ERR Protocol error: invalid bulk length"),
            (b"*abc\r\n", b"-ERR Protocol error: invalid multibulk length"),
            (b"*2\r\n$4\r\nPING\r\n:3\r\n",
             b"-ERR Protocol error: expected '$', got ':'"),
            (b"*1\r\n$4\r\nPINGxx\r\n", b"-ERR Protocol error: invalid bulk length"),
            (b"*99999999\r\n", b"-ERR Protocol error: invalid multibulk length"),
            (b"PING \"a\r\n", b"-ERR Protocol error: unbalanced quotes in request"),
            (b"*1\r\n$2000000\r\n", b"-ERR Protocol error: invalid bulk length"),
            (b"x" * 70000, b"-ERR Protocol error: too big inline request")):
        s = srv.connect()
        s.sendall(b"PING\r\n" + bad)
        data, closed = recv_until_closed(s, 5)
        if data != b"+PONG\r\n" + err + b"\r\n" or not closed:
            fail("malformed %r: %r closed=%s" % (bad[:40], data, closed))
    # A bulk string at the limit (1 MiB here) is fine.
    s = srv.connect()
    rd = Reader(s)
    big = os.urandom(1 << 20)
    s.sendall(resp("SET", "big", big) + resp("GET", "big"))
    if rd.reply() != "OK" or rd.reply() != big:
        fail("a 1 MiB value did not read back")
    s.close()
    print("raw: pipelining, inline, binary values, malformed frames, limits")
    check_never_reads(srv)


def check_never_reads(srv):
    """Pipelined GETs of a 512 KiB value, never reading the replies: memory
    stays bounded and the connection closes once a write waits 800 ms."""
    s = srv.connect()
    rd = Reader(s)
    s.sendall(resp("SET", "fat", b"f" * (512 << 10)))
    rd.reply()
    rss0 = srv.rss_kib()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.setblocking(False)
    batch = resp("GET", "fat") * 100
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
        fail("a client that never reads still connected after 10 s")
    if grown > 16384:
        fail("RSS grew %d KiB for a client that never reads" % grown)
    print("never-reads client: closed after %.2f s, %d GETs sent "
          "(%d MiB of replies asked for), RSS +%d KiB"
          % (closed_at, sent // len(resp("GET", "fat")),
             sent // len(resp("GET", "fat")) // 2, grown))


def check_benchmark(srv):
    need("redis-benchmark", "redis-tools")
    port = str(srv.port)
    for pipeline in ("1", "16"):
        r = run(["redis-benchmark", "-p", port, "-t", "set,get", "-n",
                 "20000", "-c", "20", "-P", pipeline, "-r", "1000",
                 "-d", "16", "--csv"], 60)
        if r.returncode != 0 or '"SET"' not in r.stdout or \
                '"GET"' not in r.stdout:
            fail("redis-benchmark -P %s: exit %d\n%s%s"
                 % (pipeline, r.returncode, r.stdout, r.stderr))
        print("redis-benchmark -P %s:\n%s" % (pipeline, r.stdout.strip()))
    # Every key it wrote holds the 16 bytes it writes.
    s = srv.connect()
    rd = Reader(s)
    keys = ["key:%012d" % i for i in range(1000)]
    s.sendall(resp("MGET", *keys))
    vals = rd.reply()
    found = [v for v in vals if v is not None]
    if len(found) < 900 or any(v != found[0] or len(v) != 16 for v in found):
        fail("redis-benchmark's values read back: %d found, %r"
             % (len(found), set(found)))
    # INCR on one key from 20 connections on 2 workers: exact.
    r = run(["redis-benchmark", "-p", port, "-t", "incr", "-n", "20000",
             "-c", "20", "-P", "4", "-q"], 60)
    if r.returncode != 0:
        fail("redis-benchmark -t incr: exit %d %s" % (r.returncode, r.stderr))
    s.sendall(resp("GET", "counter:__rand_int__"))
    if rd.reply() != b"20000":
        fail("INCR from 20 clients: not 20000")
    # MSET / MGET of random values from several connections at once.
    socks = [srv.connect() for _ in range(8)]
    want = {}
    for j, c in enumerate(socks):
        kv = {b"r%d-%d" % (j, i): os.urandom(random.randint(1, 200))
              for i in range(200)}
        want.update(kv)
        flat = [x for pair in kv.items() for x in pair]
        c.sendall(resp("MSET", *flat))
    for c in socks:
        if Reader(c).reply() != "OK":
            fail("MSET")
        c.close()
    s.sendall(resp("MGET", *want.keys()))
    if rd.reply() != list(want.values()):
        fail("MSET from 8 connections: MGET read back other values")
    s.close()
    print("read back: redis-benchmark's values, INCR count 20000, "
          "1600 MSET values")


def check_shutdown(srv):
    idle = srv.connect()
    Reader(idle)  # nothing sent: an idle connection
    busy = srv.connect()
    rd = Reader(busy)
    busy.sendall(resp("PING")[:-3])  # all but the end of the frame
    wait_for(lambda: srv.has_read(busy), 5, "the server reading a partial frame")
    srv.proc.send_signal(15)
    wait_for(srv.refused, 5, "new connections refused after SIGTERM")
    data, closed = recv_until_closed(idle, 3)
    if not closed or data:
        fail("idle connection after SIGTERM: closed=%s %r" % (closed, data))
    busy.sendall(b"G\r\n")
    if rd.reply() != "PONG":
        fail("busy connection after SIGTERM: no PONG")
    data, closed = recv_until_closed(busy, 3)
    if not closed:
        fail("busy connection still open after its reply and SIGTERM")
    try:
        rc = srv.proc.wait(timeout=10)
    except Exception:
        fail("still running 10 s after SIGTERM with no connection left")
    if rc != 0:
        fail("exit status %d after SIGTERM" % rc)


def body():
    if len(sys.argv) != 3 or sys.argv[2] not in ("cli", "benchmark"):
        fail("usage: check_kv.py SERVER cli|benchmark")
    need("redis-cli", "redis-tools")
    srv = Server(sys.argv[1], env=LIMITS)
    try:
        s = srv.connect()
        s.sendall(b"PING\r\n")
        Reader(s).reply()
        s.close()
        fds0 = srv.wait_idle()
        if sys.argv[2] == "cli":
            check_cli(srv)
            check_expiry(srv)
            check_raw(srv)
        else:
            check_benchmark(srv)
        if srv.wait_idle() > fds0:  # fewer is no leak
            fail("descriptors: %d, %d before the checks" % (srv.fds(), fds0))
        srv.alive()
        check_shutdown(srv)
        print("ok: %s checks, descriptors back to %d, exit 0"
              % (sys.argv[2], fds0))
    finally:
        srv.kill()


main(body)
