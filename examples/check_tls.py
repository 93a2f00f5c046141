#!/usr/bin/env python3
"""check_tls.py TLS_ECHO: the TLS echo example (meson test 'tls_echo',
suite examples).

A throwaway self-signed certificate for 127.0.0.1 (and a second one, a
wrong CA) made with the openssl command in a temporary folder; the
server started on a free port (TLS_ECHO_HANDSHAKE_MS=3000), then:

1. its arguments: --help names both forms; a bad port and a missing
   certificate are refused with a message.
2. a mixed load, on a server with 1 worker and on one with 2: 8 TLS
   connections (Python's ssl) echo once, 8 others fail with junk, then
   the 8 echo twice more (a failure's OpenSSL errors must not reach the
   connections that run after it on the same worker).
3. on a 2-worker server, handshake failures, each ending its own
   connection with one line on the server's stderr, while a connection
   that says nothing holds a handshake open on the server all along: a
   plain TCP client sending junk (its connection is closed), openssl
   s_client and the example's own client verifying against the wrong CA
   (both fail, saying so).
4. echoes, with that silent handshake still open: 64 KiB through the
   example's client, a line through openssl s_client.
5. the silent connection is dropped when its handshake time runs out
   ("timed out" on stderr), and the server still serves a new client.
6. SIGTERM to the server's pid ends it (each server of the test).

Run with no argument (meson does, in a build without OpenSSL), or without
the openssl command, it is skipped (exit 77) naming the packages.  Every
wait is bounded; the first failure ends the test with exit status 1.
"""
import os
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_test import (SKIP, fail, main, recv_until_closed,  # noqa: E402
                         run, wait_for)

LIMIT = 10.0
HANDSHAKE_MS = 3000


def skip(why):
    print("skipped: %s (install openssl libssl-dev)" % why)
    sys.exit(SKIP)


def make_cert(openssl, folder, name):
    """A self-signed certificate for 127.0.0.1 and localhost: (cert, key)."""
    cert = os.path.join(folder, name + ".pem")
    key = os.path.join(folder, name + ".key")
    r = run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
             "-subj", "/CN=weft tls_echo test " + name,
             "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
             "-keyout", key, "-out", cert], LIMIT)
    if r.returncode != 0:
        fail("openssl req for %s: %s" % (name, r.stderr))
    return cert, key


def still_open(sock):
    """True while the peer has neither closed nor reset sock (and sent
    nothing: a silent client's server has nothing to say)."""
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except BlockingIOError:
        return True
    except ConnectionResetError:
        return False
    finally:
        sock.setblocking(True)


class Log:
    """The server's stderr, a file read as it grows."""

    def __init__(self, path):
        self.path = path

    def text(self):
        with open(self.path, errors="replace") as f:
            return f.read()

    def wait_line(self, *words):
        """Waits for a line holding every one of `words`; returns it."""
        def found():
            for line in self.text().splitlines():
                if all(w in line for w in words):
                    return line
            return None
        return wait_for(found, LIMIT, "a server line with %r" % (words,))


def check_arguments(prog, cert, key):
    r = run([prog, "--help"], LIMIT)
    if r.returncode != 0 or "tls_echo server PORT CERT KEY" not in r.stdout \
            or "tls_echo client HOST PORT" not in r.stdout:
        fail("--help: exit %d, %r" % (r.returncode, r.stdout))
    r = run([prog, "server", "http", cert, key], LIMIT)
    if r.returncode != 2 or "bad port 'http'" not in r.stderr:
        fail("a bad port: exit %d, %r" % (r.returncode, r.stderr))
    missing = cert + ".missing"
    r = run([prog, "server", "0", missing, key], LIMIT)
    if r.returncode != 1 or "cannot use certificate " + missing not in r.stderr:
        fail("a missing certificate: exit %d, %r" % (r.returncode, r.stderr))
    r = run([prog, "client", "127.0.0.1"], LIMIT)
    if r.returncode != 2 or "usage:" not in r.stderr:
        fail("client without a port: exit %d, %r" % (r.returncode, r.stderr))
    print("ok: --help, bad arguments refused")


def s_client(openssl, port, cafile):
    return [openssl, "s_client", "-connect", "127.0.0.1:%d" % port,
            "-CAfile", cafile, "-verify_return_error", "-verify_ip",
            "127.0.0.1"]


def echo_through_s_client(openssl, port, cafile):
    """A line through openssl s_client; it is stopped once the echo is
    back (-quiet keeps it from ending at the end of its input)."""
    line = b"a line through openssl s_client\n"
    p = subprocess.Popen(s_client(openssl, port, cafile) + ["-quiet"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        p.stdin.write(line)
        p.stdin.flush()
        got = b""
        deadline = time.monotonic() + LIMIT
        while line not in got:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([p.stdout], [], [], max(left, 0))
            if not ready:
                fail("s_client: no echo within %g s (got %r)" % (LIMIT, got))
            chunk = os.read(p.stdout.fileno(), 4096)
            if not chunk:
                fail("s_client ended (%s) before the echo: %r" %
                     (p.wait(), p.stderr.read()))
            got += chunk
    finally:
        p.kill()
        p.wait()
        for f in (p.stdin, p.stdout, p.stderr):
            f.close()


def mixed(port, cert, addr, log):
    """Failing handshakes between a good connection's reads, on the
    server's few workers: 8 TLS connections (Python's ssl) echo once, 8
    connections send junk and fail while the 8 wait for their next read,
    then each of the 8 echoes twice more.  Every echo must come back: a
    failed handshake's errors left on a worker's OpenSSL error queue (see
    tls_wait in tls_echo.c) would be taken, at its next read that has to
    wait, by whichever connection runs on that worker next.
    """
    ctx = ssl.create_default_context(cafile=cert)
    good = [ctx.wrap_socket(socket.create_connection(addr, timeout=LIMIT),
                            server_hostname="127.0.0.1") for _ in range(8)]

    def echo(i, sock, round_):
        data = ("connection %d, round %d\n" % (i, round_)).encode() * 50
        sock.sendall(data)
        got = b""
        while len(got) < len(data):
            try:
                chunk = sock.recv(len(data) - len(got))
            except (OSError, ssl.SSLError) as e:
                fail("mixed load, connection %d round %d: %s" % (i, round_, e))
            if not chunk:
                fail("mixed load: the server closed connection %d in round "
                     "%d; its stderr: %s" % (i, round_, log.text()))
            got += chunk
        if got != data:
            fail("mixed load, connection %d: a wrong echo" % i)

    for i, g in enumerate(good):
        echo(i, g, 1)
    before = log.text().count("handshake failed")
    junks = [socket.create_connection(addr, timeout=LIMIT) for _ in range(8)]
    for j in junks:
        j.sendall(b"\x16\x03\x01\x00\x05junk!" * 4)
    for j in junks:
        _, closed = recv_until_closed(j, LIMIT)
        if not closed:
            fail("a junk connection of the mixed load still open")
        j.close()
    wait_for(lambda: log.text().count("handshake failed") >= before + 8,
             LIMIT, "the server's lines for the 8 junk connections")
    for round_ in (2, 3):
        for i, g in enumerate(good):
            echo(i, g, round_)
    for g in good:
        g.close()


def start(prog, cert, key, folder, name, threads):
    """The server with `threads` workers, its stderr in a file: (process,
    port, Log)."""
    errpath = os.path.join(folder, name + ".err")
    env = dict(os.environ, TLS_ECHO_HANDSHAKE_MS=str(HANDSHAKE_MS))
    with open(errpath, "wb") as err:
        srv = subprocess.Popen([prog, "server", "0", cert, key, str(threads)],
                               stdout=subprocess.PIPE, stderr=err, env=env)
    log = Log(errpath)
    ready, _, _ = select.select([srv.stdout], [], [], LIMIT)
    line = srv.stdout.readline().decode() if ready else ""
    if not line.startswith("listening on "):
        srv.kill()
        srv.wait()
        fail("no 'listening on PORT' line: %r; stderr %r" % (line, log.text()))
    return srv, int(line.split()[2]), log


def stop(srv, log):
    """SIGTERM to the server's pid: it must end, by that signal."""
    srv.send_signal(signal.SIGTERM)
    try:
        rc = srv.wait(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        fail("still running %g s after SIGTERM" % LIMIT)
    srv.stdout.close()
    if rc != -signal.SIGTERM:
        fail("exit status %d after SIGTERM; stderr %r" % (rc, log.text()))


def check(prog):
    openssl = shutil.which("openssl")
    if openssl is None:
        skip("the openssl command is not installed")
    folder = tempfile.mkdtemp(prefix="weft-tls-")
    servers = []
    try:
        cert, key = make_cert(openssl, folder, "server")
        wrong_ca, _ = make_cert(openssl, folder, "wrong")
        check_arguments(prog, cert, key)

        # The mixed load on one worker first, where every connection runs
        # on the worker that the failures ran on, then on two.
        for threads in (1, 2):
            srv, port, log = start(prog, cert, key, folder,
                                   "mixed%d" % threads, threads)
            servers.append(srv)
            mixed(port, cert, ("127.0.0.1", port), log)
            stop(srv, log)
        print("ok: 8 connections echo around 8 failing ones, on 1 and on 2 "
              "workers")

        srv, port, log = start(prog, cert, key, folder, "server", 2)
        servers.append(srv)
        addr = ("127.0.0.1", port)

        # A handshake that the server holds open through what follows.
        silent = socket.create_connection(addr, timeout=LIMIT)
        silent_since = time.monotonic()

        junk = socket.create_connection(addr, timeout=LIMIT)
        junk.sendall(b"GET / HTTP/1.0\r\n\r\nthis is no TLS\r\n")
        _, closed = recv_until_closed(junk, LIMIT)
        if not closed:
            fail("a client sending junk: its connection still open")
        log.wait_line("127.0.0.1:%d" % junk.getsockname()[1],
                      "handshake failed")
        junk.close()
        print("ok: junk ended its connection with an error")

        r = run(s_client(openssl, port, wrong_ca), LIMIT,
                stdin=subprocess.DEVNULL)
        if r.returncode == 0 or "verify" not in r.stdout + r.stderr:
            fail("s_client against the wrong CA: exit %d, %r" %
                 (r.returncode, r.stderr))
        log.wait_line("handshake failed", "unknown ca")
        r = run([prog, "client", "127.0.0.1", str(port), wrong_ca], LIMIT,
                input="never sent\n")
        if r.returncode != 1 or "certificate verify failed" not in r.stderr:
            fail("tls_echo client against the wrong CA: exit %d, %r" %
                 (r.returncode, r.stderr))
        wait_for(lambda: log.text().count("unknown ca") >= 2, LIMIT,
                 "the server's line for the second wrong-CA client")
        print("ok: clients verifying against the wrong CA failed, and the "
              "server said so")

        # The good clients, with the silent handshake still pending.
        if not still_open(silent):
            fail("the silent connection was dropped after %.1f s, before "
                 "its %d ms" % (time.monotonic() - silent_since,
                                HANDSHAKE_MS))
        data = "".join("line %05d of the echo through tls_echo client\n" % i
                       for i in range(1400))
        r = run([prog, "client", "127.0.0.1", str(port), cert], LIMIT,
                input=data)
        if r.returncode != 0 or r.stdout != data:
            fail("tls_echo client: exit %d, %d of %d bytes back, %r" %
                 (r.returncode, len(r.stdout), len(data), r.stderr))
        echo_through_s_client(openssl, port, cert)
        if time.monotonic() - silent_since < HANDSHAKE_MS / 1000 and \
                not still_open(silent):
            fail("the silent connection was dropped early")
        print("ok: %d bytes through tls_echo client, a line through "
              "s_client, a handshake pending meanwhile" % len(data))

        _, closed = recv_until_closed(silent, HANDSHAKE_MS / 1000 + LIMIT)
        if not closed:
            fail("the silent connection still open %g s after its "
                 "handshake time" % LIMIT)
        log.wait_line("handshake failed", "timed out")
        silent.close()
        r = run([prog, "client", "localhost", str(port), cert], LIMIT,
                input="after the failures\n")
        if r.returncode != 0 or r.stdout != "after the failures\n":
            fail("tls_echo client after the failures: exit %d, %r" %
                 (r.returncode, r.stderr))
        if srv.poll() is not None:
            fail("the server exited (%d)" % srv.returncode)
        print("ok: the silent handshake timed out; the server serves on")

        stop(srv, log)
        print("ok: stopped by SIGTERM; the server's stderr:")
        sys.stdout.write(log.text())
    finally:
        for srv in servers:
            if srv.poll() is None:
                srv.kill()
                srv.wait()
            if not srv.stdout.closed:
                srv.stdout.close()
        shutil.rmtree(folder, ignore_errors=True)


def body():
    if len(sys.argv) == 1:
        skip("weft was built without OpenSSL's headers")
    if len(sys.argv) != 2:
        fail("usage: check_tls.py TLS_ECHO")
    check(sys.argv[1])


main(body)
