"""server_test.py: what the server tests (check_http.py, check_kv.py,
check_faults.py, check_soak.py, check_idle.py) share.

Every wait is bounded: `wait_for` polls a condition until a deadline and
fails the test with what it was waiting for; nothing sleeps in place of a
condition.  A test fails by raising Failure (main() turns it into exit 1)
and is skipped, with exit 77 (meson's "skipped"), when a client program it
needs is missing, naming the Debian package that brings it.
"""
import os
import resource
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

SKIP = 77
START_LIMIT = 10.0
STOP_LIMIT = 15.0


class Failure(Exception):
    pass


def fail(msg):
    raise Failure(msg)


def need(program, package):
    """The path of `program`, or exit 77 naming the package to install."""
    path = shutil.which(program)
    if path is None:
        print("skipped: %s not found (install %s)" % (program, package))
        sys.exit(SKIP)
    return path


def raise_fd_limit(want):
    """Lifts this process's soft descriptor limit towards `want`; returns
    the limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def wait_for(cond, limit, what, step=0.01):
    """Polls cond() until it returns a true value (returned) or `limit`
    seconds pass (a failure naming `what`)."""
    deadline = time.monotonic() + limit
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            fail("%s: not within %g s" % (what, limit))
        time.sleep(step)


class Server:
    """A server process: `prog 0 threads`, its port from the first line."""

    def __init__(self, prog, threads=2, env=None, nofile=None):
        e = dict(os.environ)
        e.update(env or {})

        def limit():
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        # Through the exe wrapper meson test names (qemu-aarch64 in the
        # cross build): qemu-user runs the program in its own process, so
        # the pid, its /proc/PID/fd and its signals are still the server's.
        wrap = shlex.split(os.environ.get("MESON_EXE_WRAPPER", ""))
        self.proc = subprocess.Popen(wrap + [prog, "0", str(threads)],
                                     stdout=subprocess.PIPE, env=e,
                                     preexec_fn=limit)
        ready, _, _ = select.select([self.proc.stdout], [], [], START_LIMIT)
        line = self.proc.stdout.readline().decode() if ready else ""
        if not line.startswith("listening on "):
            self.kill()
            fail("%s: no 'listening on PORT' line: %r" % (prog, line))
        self.port = int(line.split()[2])
        self.pid = self.proc.pid

    def fds(self):
        return len(os.listdir("/proc/%d/fd" % self.pid))

    def sockets(self):
        """How many sockets the server has open: its listener and one per
        connection (its epoll, eventfd and signalfd are not sockets)."""
        n = 0
        for fd in os.listdir("/proc/%d/fd" % self.pid):
            try:
                if os.readlink("/proc/%d/fd/%s" % (self.pid, fd)).startswith(
                        "socket:"):
                    n += 1
            except OSError:
                pass  # closed meanwhile
        return n

    def wait_idle(self, limit=10.0):
        """Polls until the server holds no connection (only its listener
        is left among its sockets); returns its fd count then."""
        try:
            wait_for(lambda: self.sockets() <= 1, limit, "connections closed")
        except Failure:
            fail("%d connections still open after %g s; the server's TCP "
                 "sockets by state: %s" % (self.sockets() - 1, limit,
                                           self.tcp_states()))
        return self.fds()

    def rss_kib(self):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def cpu_seconds(self):
        with open("/proc/%d/stat" % self.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def alive(self):
        if self.proc.poll() is not None:
            fail("the server exited (status %d)" % self.proc.returncode)

    def wait_fds(self, count, limit=10.0, what="open descriptors"):
        """Polls until the server has at most `count` fds open."""
        try:
            wait_for(lambda: self.fds() <= count, limit, what)
        except Failure:
            fail("%s: %d, not back to %d within %g s; the server's TCP "
                 "sockets by state: %s" % (what, self.fds(), count, limit,
                                           self.tcp_states()))

    def tcp_states(self):
        """How many of the server's connections (from /proc/net/tcp) are
        in each TCP state, e.g. {'ESTABLISHED': 3, 'CLOSE_WAIT': 1}."""
        names = {1: "ESTABLISHED", 2: "SYN_SENT", 3: "SYN_RECV",
                 4: "FIN_WAIT1", 5: "FIN_WAIT2", 6: "TIME_WAIT", 7: "CLOSE",
                 8: "CLOSE_WAIT", 9: "LAST_ACK", 10: "LISTEN", 11: "CLOSING"}
        srv = "%08X:%04X" % (0x0100007F, self.port)
        states = {}
        with open("/proc/net/tcp") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[1] == srv:
                    name = names.get(int(fields[3], 16), fields[3])
                    states[name] = states.get(name, 0) + 1
        return states

    def has_read(self, client):
        """True once the server has read everything `client` (a connected
        socket) sent it, by /proc/net/tcp: the client's send queue is empty
        (the server's kernel has acknowledged every byte: they are in its
        receive queue or read) and the server side's receive queue is
        empty.  The receive queue alone is empty too before the bytes
        reach it (loopback delivers them in a softirq, which a loaded
        machine defers): a check on it alone once let the SIGTERM come
        before the server had read the partial request it was to answer."""
        me = "%08X:%04X" % (0x0100007F, client.getsockname()[1])
        srv = "%08X:%04X" % (0x0100007F, self.port)
        sent = received = None
        with open("/proc/net/tcp") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                tx, rx = (int(q, 16) for q in fields[4].split(":"))
                if fields[1] == srv and fields[2] == me:
                    received = rx == 0
                elif fields[1] == me and fields[2] == srv:
                    sent = tx == 0
        return bool(sent and received)

    def connect(self, timeout=10.0):
        return socket.create_connection(("127.0.0.1", self.port),
                                        timeout=timeout)

    def refused(self):
        try:
            socket.create_connection(("127.0.0.1", self.port),
                                     timeout=2).close()
        except ConnectionRefusedError:
            return True
        except ConnectionResetError:
            # It slipped in before the listener closed and was reset with
            # the backlog: not refused yet, ask again.
            return False
        return False

    def stop(self):
        """SIGTERM; the server must exit 0 (graceful shutdown)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=STOP_LIMIT)
        except subprocess.TimeoutExpired:
            self.kill()
            fail("still running %g s after SIGTERM" % STOP_LIMIT)
        if rc != 0:
            fail("exit status %d after SIGTERM" % rc)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def recv_until_closed(sock, limit):
    """Everything the peer sends until it closes (or resets) the
    connection, within `limit` seconds; (data, closed)."""
    deadline = time.monotonic() + limit
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return data, False
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            return data, False
        except ConnectionResetError:
            return data, True
        if not chunk:
            return data, True
        data += chunk


def run(argv, limit, text=True, **kw):
    """Runs a client program; its CompletedProcess (stdout and stderr as
    text).  A client that outlives `limit` fails the test."""
    try:
        return subprocess.run(argv, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=limit,
                              universal_newlines=text, **kw)
    except subprocess.TimeoutExpired:
        fail("%s: still running after %g s" % (argv[0], limit))


def main(body):
    """Runs body(); a Failure is printed and exits 1."""
    name = os.path.basename(sys.argv[0])
    try:
        body()
    except Failure as e:
        print("%s: FAILED: %s" % (name, e), file=sys.stderr)
        sys.exit(1)
