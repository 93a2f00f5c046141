#!/usr/bin/env python3
"""check_echo.py SERVER LOADGEN: the echo example (meson test 'echo_server').

1. Under load: LOADGEN opens 50 connections that send 200 messages of 64
   bytes each, one at a time, and checks every byte that comes back; it
   must exit 0 having counted all 10,000 echoes.
2. Graceful shutdown: with one connection open, SIGTERM.  The server must
   stop accepting (a new connection is refused), keep serving the open
   connection, and exit 0 once that connection closes.

Every wait is bounded (10 s, the load 120 s); the first failure ends the
test with exit status 1.  In a cross build both programs run through the
exe wrapper that meson test names in MESON_EXE_WRAPPER (qemu-aarch64).
"""
import os
import select
import shlex
import signal
import socket
import subprocess
import sys
import time

LIMIT = 10.0


def fail(msg):
    print("check_echo: " + msg, file=sys.stderr)
    sys.exit(1)


def echo_once(sock, data):
    sock.sendall(data)
    got = b""
    sock.settimeout(LIMIT)
    while len(got) < len(data):
        chunk = sock.recv(len(data) - len(got))
        if not chunk:
            fail("the server closed an open connection")
        got += chunk
    if got != data:
        fail("echo %r for %r" % (got, data))


def main():
    if len(sys.argv) != 3:
        fail("usage: check_echo.py SERVER LOADGEN")
    server, loadgen = sys.argv[1], sys.argv[2]
    wrap = shlex.split(os.environ.get("MESON_EXE_WRAPPER", ""))
    srv = subprocess.Popen(wrap + [server, "0", "2"], stdout=subprocess.PIPE)
    try:
        ready, _, _ = select.select([srv.stdout], [], [], LIMIT)
        line = srv.stdout.readline().decode() if ready else ""
        if not line.startswith("listening on "):
            fail("no 'listening on PORT' line: %r" % line)
        port = int(line.split()[2])

        r = subprocess.run(wrap + [loadgen, "127.0.0.1", str(port), "50",
                                   "200", "2"],
                           stdout=subprocess.PIPE, timeout=120)
        out = r.stdout.decode()
        sys.stdout.write(out)
        if r.returncode != 0:
            fail("loadgen exited %d" % r.returncode)
        if not out.startswith("messages=10000 "):
            fail("loadgen did not count 10000 echoes: %r" % out)

        conn = socket.create_connection(("127.0.0.1", port), timeout=LIMIT)
        echo_once(conn, b"before the signal")
        srv.send_signal(signal.SIGTERM)
        # New connections are refused once the listener is closed.  One
        # that slips in before that is accepted or reset: close it, retry.
        deadline = time.monotonic() + LIMIT
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=LIMIT).close()
            except ConnectionRefusedError:
                break
            except ConnectionResetError:
                pass  # slipped in and was reset with the backlog: retry
            if time.monotonic() > deadline:
                fail("still accepting %g s after SIGTERM" % LIMIT)
            time.sleep(0.01)
        echo_once(conn, b"after the signal")
        if srv.poll() is not None:
            fail("exited (%d) with a connection still open" % srv.returncode)
        conn.close()
        try:
            rc = srv.wait(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            fail("still running %g s after its last connection closed" % LIMIT)
        if rc != 0:
            fail("exit status %d after SIGTERM" % rc)
        print("ok: 10000 echoes checked, graceful shutdown, exit 0")
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()


main()
