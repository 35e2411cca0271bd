"""Real XRootD services for the lab: an origin data server and an XCache (proxy file cache).

Debian's ``xrootd-server`` (``xrootd``), ``xrootd-server-plugins`` (``libXrdPss``/``libXrdPfc``)
and ``xrootd-client`` (``xrdcp``, ``xrdpfc_print``). Each service runs as the unprivileged
``xrootd`` user (xrootd refuses to run as root), from a state directory of its own (config,
admin path, log), on one port (xrootd listens on every address of its network namespace: run it
in a lab host's or a test's namespace, ``netns``). The cache's
disk can be a private tmpfs of a given size, mounted in a mount namespace of the cache process
only (``unshare --mount``): the real filesystem never sees it and it vanishes with the process.
Processes are stopped by pid.

``cache_records`` reads the cache's ``.cinfo`` files through ``/proc/<pid>/root`` (the cache's
own mount namespace) with ``xrdpfc_print -j``: per file its access records (attach, bytes hit,
missed, bypassed).
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from advisor.util.errors import StoradviseError

XROOTD = shutil.which("xrootd") or "/usr/bin/xrootd"
XRDCP = shutil.which("xrdcp") or "/usr/bin/xrdcp"
XRDPFC_PRINT = shutil.which("xrdpfc_print") or "/usr/bin/xrdpfc_print"
RUN_AS = "xrootd"
_PURGE = re.compile(r"^(\d{6} \d\d:\d\d:\d\d) \d+ XrdPfc_Cache: info Purge\(\) Started")


class XrootdServiceError(StoradviseError):
    pass


@dataclass
class XrootdProcess:
    name: str
    pid: int
    address: str
    port: int
    state_dir: Path
    log: Path
    cmd: tuple[str, ...] = ()

    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def stop(self, grace: float = 5.0) -> None:
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        end = time.monotonic() + grace
        while time.monotonic() < end:
            try:
                if os.waitpid(self.pid, os.WNOHANG)[0]:
                    return
            except ChildProcessError:
                if not self.alive():
                    return
            time.sleep(0.05)
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


    def restart(self) -> None:
        """Stop and start the same command again (its configuration re-read): as a unit restart."""
        done = self.log.read_text(errors="replace").count("initialization completed") if self.log.exists() else 0
        self.stop()
        proc = subprocess.Popen(list(self.cmd), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        _wait_started(proc, self.log, f"{self.name} restart", after=done)
        self.pid = proc.pid


def _prefix(netns: str | None) -> list[str]:
    return ["ip", "netns", "exec", netns] if netns else []


def _prepare(state_dir: Path) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    pw = pwd.getpwnam(RUN_AS)
    for d in (state_dir, state_dir / "adm", state_dir / "log"):
        d.mkdir(exist_ok=True)
        os.chown(d, pw.pw_uid, pw.pw_gid)
    # the service user must reach its state dir through every parent
    for parent in state_dir.parents:
        if parent == Path("/"):
            break
        mode = parent.stat().st_mode
        if not mode & 0o001:
            os.chmod(parent, mode | 0o001)


def _wait_started(proc: subprocess.Popen, log: Path, what: str, timeout: float = 20.0, after: int = 0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
            raise XrootdServiceError(f"{what} exited at start ({proc.returncode}): {' | '.join(tail) or 'no log'}")
        if log.exists() and log.read_text(errors="replace").count("initialization completed") > after:
            return
        time.sleep(0.1)
    proc.kill()
    raise XrootdServiceError(f"{what} did not start within {timeout:g}s (log {log})")


def start_origin(state_dir: Path, data_dir: Path, address: str, port: int, export: str = "/store",
                 netns: str | None = None) -> XrootdProcess:
    """An xrootd data server exporting ``export`` from ``data_dir`` (files under data_dir/export)."""
    _prepare(state_dir)
    cfg = state_dir / "origin.cfg"
    cfg.write_text("\n".join([
        f"all.export {export}", f"oss.localroot {data_dir}", f"xrd.port {port}",
        f"all.adminpath {state_dir / 'adm'}", f"all.pidpath {state_dir / 'adm'}", ""]))
    cmd = _prefix(netns) + [XROOTD, "-R", RUN_AS, "-c", str(cfg), "-l", str(state_dir / "log" / "xrootd.log"),
                            "-n", "origin"]
    log = state_dir / "log" / "origin" / "xrootd.log"
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_started(proc, log, f"xrootd origin on {address}:{port}")
    return XrootdProcess("origin", proc.pid, address, port, state_dir, log, tuple(cmd))


def start_xcache(state_dir: Path, origin: str, address: str, port: int, *, disk_bytes: int | None = None,
                 low: float = 0.90, high: float = 0.95, purge_interval: int = 300, blocksize: str = "1m",
                 ram: str = "1g", prefetch: int = 0, export: str = "/store",
                 netns: str | None = None) -> XrootdProcess:
    """An XCache: ``xrootd`` with ``libXrdPss`` + ``libXrdPfc`` in front of ``origin`` (host:port),
    its cache in state_dir/cache (a private tmpfs of ``disk_bytes`` when given)."""
    _prepare(state_dir)
    cache_dir = state_dir / "cache"
    cache_dir.mkdir(exist_ok=True)
    os.chmod(cache_dir, 0o777)
    cfg = state_dir / "xcache.cfg"
    cfg.write_text("\n".join([
        f"all.export {export}", "ofs.osslib libXrdPss.so", "pss.cachelib libXrdPfc.so", f"pss.origin {origin}",
        f"oss.localroot {cache_dir}", f"pfc.ram {ram}", f"pfc.blocksize {blocksize}", f"pfc.prefetch {prefetch}",
        f"pfc.diskusage {low:g} {high:g} purgeinterval {int(purge_interval)}", "pfc.trace info",
        f"xrd.port {port}", f"all.adminpath {state_dir / 'adm'}",
        f"all.pidpath {state_dir / 'adm'}", ""]))
    xrd = [XROOTD, "-R", RUN_AS, "-c", str(cfg), "-l", str(state_dir / "log" / "xrootd.log"), "-n", "xcache"]
    if disk_bytes:
        inner = (f"mount -t tmpfs -o size={int(disk_bytes)},mode=0777 storadvise-xcache {cache_dir} && exec "
                 + " ".join(xrd))
        cmd = _prefix(netns) + ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", inner]
    else:
        cmd = _prefix(netns) + xrd
    log = state_dir / "log" / "xcache" / "xrootd.log"
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_started(proc, log, f"XCache on {address}:{port}")
    return XrootdProcess("xcache", proc.pid, address, port, state_dir, log, tuple(cmd))


def purge_times(cache: XrootdProcess) -> list[str]:
    """The 'Purge() Started' times the cache logged (``YYMMDD HH:MM:SS``, its local time)."""
    if not cache.log.exists():
        return []
    return [m.group(1) for line in cache.log.read_text(errors="replace").splitlines() if (m := _PURGE.match(line))]


def cache_records(cache: XrootdProcess) -> list[dict]:
    """``xrdpfc_print -j`` of every .cinfo file in the cache, read in the cache's mount namespace."""
    root = Path(f"/proc/{cache.pid}/root") / str(cache.state_dir / "cache").lstrip("/")
    files = sorted(str(p) for p in root.rglob("*.cinfo"))
    if not files:
        return []
    cp = subprocess.run([XRDPFC_PRINT, "-j", *files], capture_output=True, text=True, timeout=60)
    out = []
    for line in cp.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            rec = json.loads(line)
            rec["file"] = "/" + str(Path(rec["file"]).relative_to(root)).removesuffix(".cinfo")
            out.append(rec)
    return out


def xrdcp(url: str, netns: str | None = None, timeout: float = 60) -> None:
    cp = subprocess.run(_prefix(netns) + [XRDCP, "-f", "-s", url, "/dev/null"], capture_output=True, text=True,
                        timeout=timeout)
    if cp.returncode:
        raise XrootdServiceError(f"xrdcp {url}: {cp.stderr.strip().splitlines()[-1] if cp.stderr.strip() else cp.returncode}")
