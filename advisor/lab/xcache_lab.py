"""The ``xcache:`` section of a lab scenario: a real XCache (Debian's xrootd with libXrdPss and
libXrdPfc) on a cache host, in front of a real origin xrootd data server on a storage host.

Both run in their lab host's network, mount, UTS and PID namespaces (entered with ``nsenter`` from the
host's pid 1, advisor.lab.hosts.enter_host), so only that host's processes see them, as the
unprivileged ``xrootd`` user, from a state directory in the lab
directory (visible inside the host at the same path). Each host gets a control script
``<state>/restart.sh`` that stops the instance by the pid in its pid file and starts it again,
waiting for "initialization completed" in its log: the lab's stand-in for ``systemctl restart
xrootd@NAME`` (there is no systemd in a lab host), given to the xcache role as
``xcache_restart_command``. The cache space is a tmpfs of ``disk`` bytes mounted in the cache
host's mount namespace (its processes and its sshd see it; the real file system never does), so
the ``xcache.usage`` probe's df reads the cache's own disk. ``lab down`` kills every process of
the lab's namespaces by pid, these included.

The site file records, for the cache host, ``xcache_config``, ``xcache_log`` and
``xcache_restart_command`` in its ``vars``.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from advisor.util.errors import StoradviseError
from advisor.lab.emulation import LabEmulation
from advisor.util.units import parse_size_bytes

XROOTD = "/usr/bin/xrootd"
RUN_AS = "xrootd"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OriginSpec(_Strict):
    host: str = Field(description="the storage host running the origin xrootd data server")
    export: str = "/store"
    #: files written under the export at up: count and size of each (names file0000 ...)
    files: int = Field(20, ge=0, le=10000)
    file_size: str = "1m"
    #: XRootD server directives written into the origin's configuration as they are ({xrd.sched: "mint 4 maxt 64"})
    directives: dict[str, str] = Field(default_factory=dict)
    #: the origin's open-files limit at every start (ulimit -n; the lab's stand-in for the unit's LimitNOFILE)
    nofile: int | None = Field(None, ge=64, le=1048576)

    @field_validator("directives")
    @classmethod
    def _server_directives(cls, v: dict[str, str]) -> dict[str, str]:
        for k, a in v.items():
            if not k.startswith(("xrd.", "xrootd.", "ofs.", "oss.", "all.")) or not all(
                    w.isidentifier() for w in k.split(".")):
                raise ValueError(f"origin.directives: {k!r} is not an xrd./xrootd./ofs./oss./all. directive")
            if "\n" in str(a) or "\\" in str(a) or not str(a).strip():
                raise ValueError(f"origin.directives: {k}: one non-empty line, no backslash")
        return v


class XCacheSpec(_Strict):
    host: str = Field(description="the cache host running the XCache")
    origin: OriginSpec
    port: int = Field(1094, ge=1, le=65535)
    #: size of the cache space (a tmpfs private to the cache host)
    disk: str = "64m"
    #: pfc directives written as they are: {directive: arguments}; a null value leaves it out
    directives: dict[str, str | None] = Field(default_factory=lambda: {
        "pfc.ram": "1g", "pfc.blocksize": "1m", "pfc.prefetch": "0",
        "pfc.diskusage": "0.90 0.95 purgeinterval 300"})

    @field_validator("directives")
    @classmethod
    def _pfc_only(cls, v: dict[str, str | None]) -> dict[str, str | None]:
        for k, a in v.items():
            if not k.startswith("pfc.") or not k[4:].isidentifier():
                raise ValueError(f"directives: {k!r} is not a pfc.* directive")
            if a is not None and ("\n" in str(a) or "\\" in str(a)):
                raise ValueError(f"directives: {k}: one line, no backslash")
        return v

    @field_validator("disk")
    @classmethod
    def _size(cls, v: str) -> str:
        try:
            ok = parse_size_bytes(v) >= 1 << 20
        except (ValueError, TypeError):
            ok = False
        if not ok:
            raise ValueError(f"disk: not a size of at least 1m: {v!r}")
        return v


def state_dir(lab_dir: Path, host: str) -> Path:
    return lab_dir / "hosts" / host / "xrootd"


def _config(spec: XCacheSpec, host: str, sd: Path, scenario_addrs: dict[str, str]) -> str:
    common = [f"xrd.port {spec.port}", f"all.adminpath {sd / 'adm'}", f"all.pidpath {sd / 'adm'}"]
    if host == spec.origin.host:
        extra = [f"{k} {a}" for k, a in spec.origin.directives.items()]
        return "\n".join([f"all.export {spec.origin.export}", f"oss.localroot {sd / 'data'}", *extra, *common, ""])
    lines = [f"all.export {spec.origin.export}", "ofs.osslib libXrdPss.so", "pss.cachelib libXrdPfc.so",
             f"pss.origin {scenario_addrs[spec.origin.host]}:{spec.port}", f"oss.localroot {sd / 'cache'}"]
    lines += [f"{k} {a}" for k, a in spec.directives.items() if a is not None]
    return "\n".join(lines + ["pfc.trace info", *common, ""])


def _restart_script(sd: Path, name: str, disk_bytes: int | None, nofile: int | None = None) -> str:
    q = shlex.quote
    mount = (f"mountpoint -q {q(str(sd / 'cache'))} || mount -n -t tmpfs -o size={disk_bytes},mode=0777 "
             f"storadvise-xcache {q(str(sd / 'cache'))}\n") if disk_bytes else ""
    log = sd / "log" / name / "xrootd.log"
    return (
        "#!/bin/sh\n"
        f"# storadvise lab: (re)start the xrootd instance {name} of this host (as systemctl restart xrootd@{name})\n"
        f"PIDF={q(str(sd / 'adm' / 'instance.pid'))}; LOG={q(str(log))}\n"
        # the recorded pid only if it is still this instance (its argv names this configuration)
        f'if [ -s "$PIDF" ] && tr "\\0" " " 2>/dev/null < /proc/$(cat "$PIDF")/cmdline | grep -qF {q(str(sd / (name + ".cfg")))}; then\n'
        '  P=$(cat "$PIDF"); kill "$P" 2>/dev/null; i=0\n'
        '  while kill -0 "$P" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done\n'
        '  kill -9 "$P" 2>/dev/null\n'
        "fi\n"
        + mount
        + (f"ulimit -n {int(nofile)}\n" if nofile else "")
        + 'N=$(grep -c "initialization completed" "$LOG" 2>/dev/null); N=${N:-0}\n'
        f"setsid {XROOTD} -R {RUN_AS} -c {q(str(sd / (name + '.cfg')))} -l {q(str(sd / 'log' / 'xrootd.log'))} "
        f"-n {name} </dev/null >/dev/null 2>&1 &\n"
        'P=$!; echo "$P" > "$PIDF"; i=0\n'
        "while [ $i -lt 200 ]; do\n"
        '  kill -0 "$P" 2>/dev/null || { echo "xrootd ' + name + ' exited at start: $(grep -i "error\\|may not" "$LOG" 2>/dev/null | tail -n 2 | tr "\\n" " ")$(tail -n 1 "$LOG" 2>/dev/null)" >&2; exit 1; }\n'
        '  M=$(grep -c "initialization completed" "$LOG" 2>/dev/null); [ "${M:-0}" -gt "$N" ] && exit 0\n'
        "  sleep 0.1; i=$((i+1))\n"
        "done\n"
        f'echo "xrootd {name} did not start within 20s (log $LOG)" >&2; exit 1\n'
    )


def _prepare(sd: Path, dirs: tuple[str, ...]) -> None:
    import pwd

    pw = pwd.getpwnam(RUN_AS)
    for d in (sd, *(sd / x for x in dirs)):
        d.mkdir(parents=True, exist_ok=True)
        os.chown(d, pw.pw_uid, pw.pw_gid)
    for parent in sd.parents:  # the service user must reach its state dir
        if parent == Path("/"):
            break
        mode = parent.stat().st_mode
        if not mode & 0o001:
            os.chmod(parent, mode | 0o001)


class XCacheLab(LabEmulation):
    section = "xcache"
    model = XCacheSpec

    def check(self, spec: XCacheSpec, scenario: Any) -> None:
        hosts = {h.name: h for h in scenario.hosts}
        for what, name, role in (("xcache.host", spec.host, "cache"), ("xcache.origin.host", spec.origin.host, "storage")):
            if name not in hosts:
                raise ValueError(f"{what}: unknown host {name!r}")
            if role not in {r.value for r in hosts[name].roles}:
                raise ValueError(f"{what}: host {name!r} lacks the role {role!r}")
        if spec.host == spec.origin.host:
            raise ValueError("xcache: the cache and the origin must be different hosts")
        try:
            parse_size_bytes(spec.origin.file_size)
        except (ValueError, TypeError):
            raise ValueError(f"xcache.origin.file_size: not a size: {spec.origin.file_size!r}") from None

    def hosts(self, spec: XCacheSpec, scenario: Any) -> list[str]:
        return []  # no emulated tools: the real xrootd, xrdcp and xrdpfc_print are in every host

    def setup(self, state_dir: Path, spec: XCacheSpec, scenario: Any) -> None:
        pass

    def install(self, host_dir: Path, state_dir: Path) -> dict[str, Path]:
        return {}

    def start(self, rec: Any, spec: XCacheSpec, scenario: Any) -> None:
        """Write both instances' configuration and start them (origin first) in their hosts."""
        from advisor.lab.hosts import enter_host, outer_pid
        from advisor.lab.records import read_pids

        addrs = {h: info["address"] for h, info in rec.hosts.items()}
        boot = {host: pid for pid, what, host in read_pids(rec.dir) if what == "sshd"}
        for host, name in ((spec.origin.host, "origin"), (spec.host, "xcache")):
            sd = state_dir(rec.dir, host)
            _prepare(sd, ("adm", "log", "data" if name == "origin" else "cache"))
            if name == "origin":
                _write_files(sd / "data" / spec.origin.export.strip("/"), spec.origin.files,
                             parse_size_bytes(spec.origin.file_size))
            (sd / f"{name}.cfg").write_text(_config(spec, host, sd, addrs))
            script = sd / "restart.sh"
            script.write_text(_restart_script(sd, name, parse_size_bytes(spec.disk) if name == "xcache" else None,
                                              spec.origin.nofile if name == "origin" else None))
            script.chmod(0o755)
            # xrootd resolves its host name: the host's own /etc/hosts, in its mount namespace only
            hosts = sd / "etc-hosts"
            hosts.write_text("127.0.0.1 localhost\n" + "".join(f"{a} {h}\n" for h, a in sorted(addrs.items())))
            hosts.chmod(0o644)
            cp = subprocess.run([*enter_host(boot[host]), "/bin/sh", "-c",
                                 f"mount -n --bind {shlex.quote(str(hosts))} /etc/hosts && exec /bin/sh {shlex.quote(str(script))}"],
                                capture_output=True, text=True, timeout=40)
            if cp.returncode:
                raise StoradviseError(f"host {host}: {cp.stderr.strip() or f'xrootd {name} did not start'}")
            # the pid file holds the pid the host sees (its own PID namespace); the lab records the machine's
            inner = int((sd / "adm" / "instance.pid").read_text().strip())
            pid = outer_pid(boot[host], inner)
            if pid is None:
                raise StoradviseError(f"host {host}: xrootd {name} (pid {inner} in the host) is not running")
            rec.add_pid(pid, f"xrootd-{name}", host)

    def reboot(self, host_dir: Path, host: str) -> str | None:
        """A rebooted host starts its xrootd instance again from its configuration file as it is now
        (restart.sh in the host's namespaces, as the unit at boot); the new pid is recorded."""
        from advisor.lab.hosts import enter_host, outer_pid
        from advisor.lab.records import append_pid, read_pids

        sd = host_dir / "xrootd"
        script = sd / "restart.sh"
        if not script.is_file():
            return None
        name = "origin" if (sd / "origin.cfg").is_file() else "xcache"
        lab = host_dir.parent.parent
        boot = [pid for pid, what, h in read_pids(lab) if what == "sshd" and h == host]
        if not boot:
            raise RuntimeError(f"no boot process recorded for {host}")
        cp = subprocess.run([*enter_host(boot[-1]), "/bin/sh", str(script)], capture_output=True, text=True, timeout=40)
        if cp.returncode:
            raise RuntimeError(cp.stderr.strip() or f"xrootd {name} did not start")
        inner = int((sd / "adm" / "instance.pid").read_text().strip())
        pid = outer_pid(boot[-1], inner)
        if pid is None:
            raise RuntimeError(f"xrootd {name} (pid {inner} in the host) is not running after its start")
        append_pid(lab, pid, f"xrootd-{name}", host)
        return f"xrootd {name} started again from {name}.cfg (pid {pid})"

    def site_host_vars(self, rec: Any, spec: XCacheSpec, scenario: Any, host: str) -> dict[str, Any]:
        if host == spec.origin.host:
            sd = state_dir(rec.dir, host)
            # the xrootd.server probe and the xrootd_tuning role read and restart the origin through these;
            # the efficiency test's xrootd clients read from xrootd_port and xrootd_export
            return {"xrootd_config": str(sd / "origin.cfg"), "xrootd_restart_command": f"/bin/sh {sd / 'restart.sh'}",
                    "xrootd_port": spec.port, "xrootd_export": spec.origin.export,
                    # the first file on the origin's disk (the lab dir: every lab host sees it), for posix
                    **({"xrootd_local_file": str(sd / "data" / spec.origin.export.strip("/") / "file0000")}
                       if spec.origin.files else {})}
        if host != spec.host:
            return {}
        sd = state_dir(rec.dir, host)
        return {"xrootd_port": spec.port, "xrootd_export": spec.origin.export, "xcache_config": str(sd / "xcache.cfg"), "xcache_log": str(sd / "log" / "xcache" / "xrootd.log"),
                "xcache_restart_command": f"/bin/sh {sd / 'restart.sh'}"}


def _write_files(d: Path, count: int, size: int) -> None:
    import pwd

    pw = pwd.getpwnam(RUN_AS)
    d.mkdir(parents=True, exist_ok=True)
    os.chown(d, pw.pw_uid, pw.pw_gid)
    block = os.urandom(min(size, 1 << 20)) if size else b""
    for i in range(count):
        p = d / f"file{i:04d}"
        with open(p, "wb") as f:
            left = size
            while left > 0:
                f.write(block[:left])
                left -= len(block)
        p.chmod(0o644)


EMULATION = XCacheLab()
