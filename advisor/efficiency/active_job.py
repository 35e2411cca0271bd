#!/usr/bin/env python3
"""The active efficiency test's programs: a data server and an analysis-like job (stdlib only).

This file is sent verbatim to the hosts (``python3 - job ...`` on a worker, a temp copy run
as ``python3 FILE serve ...`` on a storage host): it must not import anything from storadvise
and must run on any Python >= 3.6.

``serve``: a TCP data server. Protocol, per connection: the client first sends the run's one-time
secret (``--auth-file`` on the server, ``SA_EFF_AUTH`` in the client's environment: 32 hex
characters); a connection that does not start with it within 10 s is closed unanswered. Then the
client sends an 8-byte big-endian length N; the server answers exactly N bytes (from a 1 MiB
random buffer); N = 0 ends the connection. It serves any number of connections (one thread each) until ``--lifetime``
seconds pass or it is killed; it writes ``PORT PID`` to ``--portfile`` once listening.

``job``: calibrate, then read ``--mb`` MiB from the source in blocks and spend a calibrated
amount of CPU on every 64 KiB "event" (SHA-256 passes over it). I/O and compute overlap only
by ``--readahead`` blocks: during the compute of block i the requests for blocks
i+1 .. i+readahead are outstanding (0 = fully synchronous read-then-compute, like an event
loop without prefetch; 1 = double buffering, like a one-cluster TTreeCache prefetch).
``--clients C`` forks C concurrent clients. Prints one JSON object: per client its own
rusage (ru_utime + ru_stime over the read/compute loop), wall time, bytes, events, time
blocked waiting for data; and the calibration.

Sources: ``tcp:HOST:PORT`` (the data server above), ``path:PATH`` (a file, plain reads) and
``xrd:root://HOST:PORT//DIR`` (a real XRootD server or XCache: the job lists DIR once with
``xrdfs ls``; each client reads whole files of it in turn, starting at its own place in the
list, streamed by ``xrdcp -s URL -`` through a pipe, with xrdcp's chunk size set to the block
size and ``readahead + 1`` chunks in flight; xrdcp's own CPU time is the client's too, as an
in-process XRootD client's would be). ``--start-at EPOCH`` starts the clients at that time (the
jobs of several nodes start together).
"""

import argparse
import hashlib
import hmac
import json
import os
import resource
import signal
import subprocess
import socket
import struct
import sys
import threading
import time

MIB = 1 << 20
EVENT_BYTES = 64 * 1024
MAX_REQUEST = 64 * MIB


# ---------------------------------------------------------------- the data server


def _recv_exact(conn, n):
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = conn.recv_into(view[got:], n - got)
        if k == 0:
            return None
        got += k
    return buf


AUTH_BYTES = 32
AUTH_TIMEOUT = 10.0


def _serve_conn(conn, data, secret):
    view = memoryview(data)
    try:
        conn.settimeout(AUTH_TIMEOUT)
        hello = _recv_exact(conn, AUTH_BYTES)
        if hello is None or not hmac.compare_digest(bytes(hello), secret):
            return
        conn.settimeout(120.0)
        while True:
            hdr = _recv_exact(conn, 8)
            if hdr is None:
                return
            (n,) = struct.unpack("!Q", bytes(hdr))
            if n == 0 or n > MAX_REQUEST:
                return
            while n > 0:
                k = min(n, len(data))
                conn.sendall(view[:k])
                n -= k
    except OSError:
        return
    finally:
        try:
            conn.close()
        except OSError:
            pass


def _read_secret(text):
    secret = (text or "").strip().encode("ascii", "replace")
    if len(secret) != AUTH_BYTES:
        raise ValueError("the data server's one-time secret (SA_EFF_AUTH, --auth-file) must be %d characters"
                         % AUTH_BYTES)
    return secret


def serve(args):
    with open(args.auth_file) as f:
        secret = _read_secret(f.read())
    data = os.urandom(MIB)
    srv = socket.socket(socket.AF_INET6 if ":" in args.bind else socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((args.bind, args.port))
    srv.listen(256)
    srv.settimeout(0.5)
    port = srv.getsockname()[1]
    tmp = args.portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d %d\n" % (port, os.getpid()))
    os.rename(tmp, args.portfile)
    deadline = time.monotonic() + args.lifetime
    while time.monotonic() < deadline:
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        except OSError:
            time.sleep(0.05)
            continue
        threading.Thread(target=_serve_conn, args=(conn, data, secret), daemon=True).start()
    srv.close()
    return 0


# ---------------------------------------------------------------- the job


def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def _child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def compute(block, nbytes, passes_int, frac_bytes):
    """The per-block work: ``passes_int`` SHA-256 passes over every 64 KiB event, plus a
    partial pass over its first ``frac_bytes``. Returns the number of events."""
    view = memoryview(block)
    events = 0
    sha = hashlib.sha256
    for off in range(0, nbytes, EVENT_BYTES):
        ev = view[off:min(off + EVENT_BYTES, nbytes)]
        for _ in range(passes_int):
            sha(ev).digest()
        if frac_bytes:
            sha(ev[:frac_bytes]).digest()
        events += 1
    return events


def calibrate(seconds):
    """CPU seconds one SHA-256 pass over 1 MiB (in 64 KiB events) costs on this host."""
    block = bytearray(os.urandom(MIB))
    compute(block, MIB, 1, 0)  # warm up
    c0 = time.process_time()
    n = 0
    while True:
        compute(block, MIB, 4, 0)
        n += 4
        used = time.process_time() - c0
        if used >= seconds and n >= 8:
            break
    return used / n, used


def work_plan(passes_per_mb):
    passes_int = int(passes_per_mb)
    frac_bytes = int(round((passes_per_mb - passes_int) * EVENT_BYTES))
    return passes_int, frac_bytes


class TcpSource:
    def __init__(self, host, port, timeout):
        secret = _read_secret(os.environ.get("SA_EFF_AUTH"))
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(secret)

    def request(self, n):
        self.sock.sendall(struct.pack("!Q", n))

    def read_into(self, view, n):
        got = 0
        while got < n:
            k = self.sock.recv_into(view[got:], n - got)
            if k == 0:
                raise IOError("server closed the connection after %d of %d bytes" % (got, n))
            got += k
        return got

    def close(self):
        try:
            self.sock.sendall(struct.pack("!Q", 0))
        except OSError:
            pass
        self.sock.close()


class PathSource:
    def __init__(self, path):
        self.f = open(path, "rb", buffering=0)

    def request(self, n):  # a file has no request step: the kernel's read-ahead applies
        pass

    def read_into(self, view, n):
        got = 0
        while got < n:
            k = self.f.readinto(view[got:n])
            if not k:
                break
            got += k
        return got

    def close(self):
        self.f.close()


def xrd_split(url):
    """``root://HOST:PORT//DIR`` -> (``root://HOST:PORT``, ``/DIR``)."""
    if not url.startswith("root://"):
        raise ValueError("not an XRootD URL (root://HOST:PORT//DIR): %r" % url)
    server, sep, path = url[len("root://"):].partition("/")
    if not server or not sep:
        raise ValueError("not an XRootD URL (root://HOST:PORT//DIR): %r" % url)
    return "root://" + server, "/" + path.lstrip("/")


def xrd_list(url, xrdfs, timeout):
    """The files of the directory of ``url`` (``xrdfs SERVER ls DIR``: one absolute path a line)."""
    server, path = xrd_split(url)
    try:
        cp = subprocess.run([xrdfs, server, "ls", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            timeout=timeout)
    except OSError as e:
        raise IOError("%s: %s (install xrootd-client)" % (xrdfs, e))
    if cp.returncode:
        why = cp.stderr.decode(errors="replace").strip().splitlines()
        raise IOError("xrdfs %s ls %s: %s" % (server, path, why[-1] if why else "exit %d" % cp.returncode))
    files = []
    for line in cp.stdout.decode(errors="replace").splitlines():
        line = line.strip()
        if not line:
            continue
        if not line.startswith("/"):
            raise IOError("xrdfs ls %s: not a path: %r" % (path, line[:80]))
        files.append(line)
    if not files:
        raise IOError("xrdfs %s ls %s: no files to read" % (server, path))
    return server, sorted(files)


class XrdSource:
    """Whole files of an XRootD directory in turn, each streamed by ``xrdcp -s URL -``."""

    def __init__(self, server, files, start, xrdcp, block_bytes, readahead):
        self.server, self.files, self.next, self.xrdcp = server, files, start % len(files), xrdcp
        self.env = dict(os.environ, XRD_CPCHUNKSIZE=str(block_bytes), XRD_CPPARALLELCHUNKS=str(max(1, readahead + 1)))
        self.proc = None
        self.files_read = 0
        self.files_opened = 0

    def _open_next(self):
        url = "%s/%s" % (self.server, self.files[self.next])
        self.next = (self.next + 1) % len(self.files)
        try:
            self.proc = subprocess.Popen([self.xrdcp, "-s", "-f", url, "-"], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
        except OSError as e:
            raise IOError("%s: %s (install xrootd-client)" % (self.xrdcp, e))
        self.url = url
        self.files_opened += 1

    def _finish(self):
        proc, self.proc = self.proc, None
        err = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
        if proc.wait() != 0:
            why = err.decode(errors="replace").strip().splitlines()
            raise IOError("xrdcp %s: %s" % (self.url, why[-1] if why else "exit %d" % proc.returncode))
        self.files_read += 1

    def request(self, n):  # xrdcp keeps its own chunks in flight
        pass

    def read_into(self, view, n):
        got = 0
        empty_files = 0
        while got < n:
            if self.proc is None:
                self._open_next()
            k = self.proc.stdout.readinto(view[got:n])
            if k:
                got += k
                empty_files = 0
                continue
            self._finish()  # end of this file: the next one
            empty_files += 1
            if empty_files > len(self.files):
                raise IOError("every file under %s is empty" % self.server)
        return got

    def close(self):
        proc, self.proc = self.proc, None
        if proc is not None:  # stopped mid-file: our own child, by pid
            try:
                os.kill(proc.pid, signal.SIGTERM)
            except OSError:
                pass
            proc.stdout.close()
            proc.stderr.close()
            proc.wait()


def open_source(spec, timeout, args=None, index=0):
    kind, _, rest = spec.partition(":")
    if kind == "tcp":
        host, _, port = rest.rpartition(":")
        return TcpSource(host.strip("[]"), int(port), timeout)
    if kind == "path":
        return PathSource(rest)
    if kind == "xrd":
        server, files = args.xrd_files
        # client k of all the test's clients starts at its share of the list: distinct files first
        start = (index * len(files)) // max(1, args.total_clients)
        return XrdSource(server, files, start, args.xrdcp, args.block_kb * 1024, max(0, args.readahead))
    raise ValueError("unknown source %r (tcp:HOST:PORT, path:PATH or xrd:root://HOST:PORT//DIR)" % spec)


def run_client(args, passes_per_mb, index=0):
    block_bytes = args.block_kb * 1024
    nblocks = max(1, int(round(args.mb * MIB / block_bytes)))
    passes_int, frac_bytes = work_plan(passes_per_mb)
    block = bytearray(block_bytes)
    view = memoryview(block)
    ra = max(0, args.readahead)
    w0 = time.monotonic()
    u0, s0 = _cpu()
    c0 = _child_cpu()
    src = open_source(args.source, args.io_timeout, args, args.first_client + index)
    wait = 0.0
    comp = 0.0
    nbytes = 0
    events = 0
    short = False
    try:
        for j in range(min(ra, nblocks - 1) + 1):  # blocks 0 .. readahead
            src.request(block_bytes)
        for i in range(nblocks):
            t = time.monotonic()
            got = src.read_into(view, block_bytes)
            t2 = time.monotonic()
            wait += t2 - t
            nbytes += got
            events += compute(block, got, passes_int, frac_bytes)
            comp += time.monotonic() - t2
            if got < block_bytes:
                short = True  # end of file
                break
            if i + ra + 1 < nblocks:
                src.request(block_bytes)
    finally:
        src.close()
    u1, s1 = _cpu()
    tool_cpu = _child_cpu() - c0  # xrdcp's CPU (the client library's work)
    wall = time.monotonic() - w0
    out = {
        "cpu_seconds": (u1 - u0) + (s1 - s0) + tool_cpu,
        "user_seconds": u1 - u0,
        "sys_seconds": s1 - s0,
        "wall_seconds": wall,
        "bytes": nbytes,
        "events": events,
        "read_wait_seconds": wait,
        "compute_seconds": comp,
        "end_of_file": short,
        "start": time.time() - wall,
    }
    if isinstance(src, XrdSource):
        out["client_tool_cpu_seconds"] = tool_cpu
        out["files_opened"] = src.files_opened
    return out


def _client_in_child(args, passes_per_mb, wfd, start_fd, index):
    code = 0
    try:
        os.read(start_fd, 1)  # start together
        out = run_client(args, passes_per_mb, index)
    except Exception as e:  # reported, never hidden
        out = {"error": "%s: %s" % (type(e).__name__, e)}
        code = 1
    data = json.dumps(out).encode()
    with os.fdopen(wfd, "wb") as f:
        f.write(data)
    os._exit(code)


def job(args):
    load0 = os.getloadavg()
    pass_cpu, cal_used = calibrate(args.calibrate_seconds)
    if args.passes is not None:
        passes = args.passes
    else:
        passes = max(0.0, args.cpu_per_mb / pass_cpu)
    result = {
        "ok": True,
        "hostname": socket.gethostname(),
        "python": sys.version.split()[0],
        "cpu_count": os.cpu_count(),
        "source": args.source,
        "mb_per_client": args.mb,
        "block_kb": args.block_kb,
        "readahead": args.readahead,
        "calibration": {
            "pass_cpu_s_per_mb": pass_cpu,
            "passes_per_mb": passes,
            "cpu_s_per_mb": passes * pass_cpu,
            "calibration_cpu_s": cal_used,
            "event_kb": EVENT_BYTES // 1024,
        },
        "loadavg_start": list(load0),
    }
    if args.total_clients < args.clients:
        args.total_clients = args.clients
    if args.source.startswith("xrd:"):
        args.xrd_files = xrd_list(args.source[4:], args.xrdfs, args.io_timeout)
        result["xrd_files"] = len(args.xrd_files[1])
    if args.start_at:
        late = time.time() - args.start_at
        if late < 0:
            time.sleep(-late)
        result["start_late_s"] = max(0.0, late)
    if args.clients <= 1:
        clients = [run_client(args, passes)]
    else:
        start_r, start_w = os.pipe()
        kids = []
        for _ in range(args.clients):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                os.close(start_w)
                _client_in_child(args, passes, w, start_r, len(kids))
            os.close(w)
            kids.append((pid, r))
        os.close(start_r)
        os.write(start_w, b"x" * args.clients)
        os.close(start_w)
        clients = []
        for pid, r in kids:
            chunks = []
            while True:
                b = os.read(r, 65536)
                if not b:
                    break
                chunks.append(b)
            os.close(r)
            os.waitpid(pid, 0)
            try:
                clients.append(json.loads(b"".join(chunks).decode() or "{}"))
            except ValueError:
                clients.append({"error": "client %d wrote no result" % pid})
    result["clients"] = clients
    result["loadavg_end"] = list(os.getloadavg())
    errors = [c["error"] for c in clients if "error" in c]
    if errors:
        result["ok"] = False
        result["error"] = errors[0]
    print(json.dumps(result))
    return 0 if not errors else 2


def main(argv=None):
    p = argparse.ArgumentParser(prog="storadvise-efficiency-job")
    sub = p.add_subparsers(dest="cmd")
    s = sub.add_parser("serve")
    s.add_argument("--bind", default="0.0.0.0")
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--portfile", required=True)
    s.add_argument("--lifetime", type=float, default=600.0)
    s.add_argument("--token", default="")  # marks the process (found in /proc/PID/cmdline before kill)
    s.add_argument("--auth-file", required=True, help="file holding the one-time secret clients must send first")
    j = sub.add_parser("job")
    j.add_argument("--source", required=True, help="tcp:HOST:PORT or path:PATH")
    j.add_argument("--mb", type=float, default=64.0, help="MiB per client")
    j.add_argument("--block-kb", type=int, default=1024)
    j.add_argument("--readahead", type=int, default=1, help="blocks requested ahead of the one computed")
    j.add_argument("--cpu-per-mb", type=float, default=0.0128, help="CPU seconds to spend per MiB read")
    j.add_argument("--passes", type=float, default=None, help="SHA-256 passes per MiB (overrides --cpu-per-mb)")
    j.add_argument("--clients", type=int, default=1)
    j.add_argument("--calibrate-seconds", type=float, default=0.3)
    j.add_argument("--io-timeout", type=float, default=30.0)
    j.add_argument("--first-client", type=int, default=0, help="index of this job's first client among all")
    j.add_argument("--total-clients", type=int, default=0, help="clients of the point on all nodes")
    j.add_argument("--start-at", type=float, default=0.0, help="epoch seconds at which the clients start")
    j.add_argument("--xrdcp", default="xrdcp")
    j.add_argument("--xrdfs", default="xrdfs")
    args = p.parse_args(argv)
    if args.cmd == "serve":
        return serve(args)
    if args.cmd == "job":
        try:
            return job(args)
        except Exception as e:
            print(json.dumps({"ok": False, "error": "%s: %s" % (type(e).__name__, e)}))
            return 2
    p.print_usage(sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main())
