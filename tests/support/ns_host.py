"""A real host for the apply tests (the ``ns_hosts`` fixture): a network namespace of our own with sshd
started inside ``unshare --mount`` and a private directory bind-mounted over /etc/sysctl.d.

Only the namespace's sysctls change (net.* are per network namespace); the private sysctl.d is
seen by the host's sshd and everything it runs, nothing else. The controller side (scan,
ansible-playbook) runs in the same network namespace (``nsenter --net``) to reach the host's
loopback sshd. Everything is removed at the end, even on failure: every process in the
namespace is killed by its pid, the namespace deleted, the temporary directory removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.ansible import ANSIBLE_PLAYBOOK, VENV_BIN
from tests.support.sshd import generate_key, public_key_text

REPO = Path(__file__).resolve().parents[2]
STORADVISE = shutil.which("storadvise", path=str(VENV_BIN))
SSHD = "/usr/sbin/sshd"


def requirements_missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "nsenter", "unshare", "nft"):
        if not shutil.which(tool):
            return f"{tool} not found"
    if not os.access(SSHD, os.X_OK):
        return "sshd not found"
    if not ANSIBLE_PLAYBOOK:
        return "ansible-playbook not found (pip install ansible-core)"
    return None


def sh(cmd: list[str], input: str | None = None, check: bool = True, env: dict | None = None,
       timeout: float = 300) -> subprocess.CompletedProcess:
    cp = subprocess.run(cmd, input=input, capture_output=True, text=True, env=env, timeout=timeout)
    if check and cp.returncode != 0:
        raise AssertionError(f"{' '.join(cmd[:6])} -> {cp.returncode}\nstdout:\n{cp.stdout[-3000:]}\nstderr:\n{cp.stderr[-3000:]}")
    return cp


@dataclass
class NsHost:
    name: str
    ns: str
    dir: Path
    sshd_pid: int
    key: Path
    known_hosts: Path

    @property
    def sysctl_d(self) -> Path:
        return self.dir / "sysctl.d"

    @property
    def backup_dir(self) -> Path:
        return self.dir / "backup"

    def on_host(self, script: str, check: bool = True) -> subprocess.CompletedProcess:
        """Run a shell script as the host sees the world (its network and mount namespaces)."""
        return sh(["nsenter", "-t", str(self.sshd_pid), "-n", "-m", "--", "/bin/sh", "-c", script], check=check)

    def sysctl(self, key: str) -> str:
        return self.on_host(f"cat /proc/sys/{key.replace('.', '/')}").stdout.strip()

    def controller(self, argv: list[str], cwd: Path | None = None, check: bool = True,
                   env_extra: dict | None = None) -> subprocess.CompletedProcess:
        """Run a controller command (scan, ansible-playbook) in the host's network namespace."""
        env = dict(os.environ)
        env.update({
            "ANSIBLE_HOME": str(self.dir / "ansible-home"),
            "ANSIBLE_LOCAL_TEMP": str(self.dir / "ansible-home" / "tmp"),
            "ANSIBLE_REMOTE_TEMP": str(self.dir / "remote-tmp"),
            "ANSIBLE_SSH_CONTROL_PATH_DIR": str(self.dir / "cp"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "PATH": f"{VENV_BIN}:{env.get('PATH', '/usr/bin:/bin')}",
        })
        env.update(env_extra or {})
        cmd = ["nsenter", f"--net=/run/netns/{self.ns}", "--"]
        if cwd is not None:
            cmd += ["/bin/sh", "-c", 'cd "$0" && exec "$@"', str(cwd)]
        return sh(cmd + argv, check=check, env=env)

    def site_file(self, path: Path, roles: list[str], extra: dict | None = None, host_vars: dict | None = None) -> Path:
        import yaml

        doc = {
            "name": "applytest",
            "profiles": ["generic"],
            "storage_network": {"prefixes": ["10.77.0.0/24"]},
            "hosts": [{
                "name": self.name, "address": "127.0.0.1", "port": 22, "user": "root",
                "key": str(self.key), "known_hosts": str(self.known_hosts), "roles": roles,
                # the firewall role's persisted ruleset: private paths, never the machine's /etc
                "vars": {"storadvise_backup_dir": str(self.backup_dir),
                         "firewall_nftables_conf": str(self.dir / "etc" / "nftables.conf"),
                         "firewall_iptables_files": {"ip": [str(self.dir / "etc" / "iptables" / "rules.v4")],
                                                     "ip6": [str(self.dir / "etc" / "iptables" / "rules.v6")]},
                         "firewall_firewalld_dir": str(self.dir / "etc" / "firewalld"),
                         # the sysctl files the role reads and may edit: only the private /etc/sysctl.d
                         # (never the machine's /etc/sysctl.conf or /run/sysctl.d; vendor dirs are read)
                         "network_tuning_conf_paths": ["/etc/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d",
                                                       "/lib/sysctl.d"],
                         "network_tuning_editable_prefixes": ["/etc/sysctl.d/"],
                         **(host_vars or {})},
            }],
        }
        doc.update(extra or {})
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path


def _kill_namespace_processes(ns: str) -> None:
    for _ in range(3):
        pids = [int(p) for p in sh(["ip", "netns", "pids", ns], check=False).stdout.split() if p.isdigit()]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        time.sleep(0.3)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


def start_ns_host(name: str, sysctl_files: dict[str, str], own_sysfs: bool = False,
                  prepare: Callable[[Path], list[str]] | None = None) -> tuple[NsHost, callable]:
    """A host: sshd in its own network namespace and private mount namespace. ``own_sysfs``: a
    fresh /sys there, so /sys/class/net lists the namespace's interfaces, not the machine's.
    ``prepare(dir)``: writes files into the host's private directory and returns more boot commands
    (bind mounts made in the host's mount namespace only, before sshd starts)."""
    tmp = Path(tempfile.mkdtemp(prefix="storadvise-apply-"))
    os.chmod(tmp, 0o755)
    ns = f"sa-apply-{os.getpid()}-{name}"
    created = False
    proc = None

    def cleanup() -> None:
        if created:
            _kill_namespace_processes(ns)
            if proc is not None:
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            sh(["ip", "netns", "del", ns], check=False)
        shutil.rmtree(tmp, ignore_errors=True)

    try:
        sh(["ip", "netns", "add", ns])
        created = True
        sh(["ip", "-n", ns, "link", "set", "lo", "up"])
        (tmp / "sysctl.d").mkdir()
        for fname, text in sysctl_files.items():
            (tmp / "sysctl.d" / fname).write_text(text)
        (tmp / "empty").write_text("")
        host_key = generate_key(tmp / "ssh_host_ed25519_key")
        client_key = generate_key(tmp / "client_key")
        (tmp / "authorized_keys").write_text(public_key_text(client_key) + "\n")
        (tmp / "known_hosts").write_text(f"127.0.0.1 {public_key_text(host_key)}\n")
        (tmp / "sshd_config").write_text("\n".join([
            "ListenAddress 127.0.0.1", "Port 22", f"HostKey {host_key}", f"PidFile {tmp / 'sshd.pid'}",
            f"AuthorizedKeysFile {tmp / 'authorized_keys'}", "PermitRootLogin prohibit-password",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
            "UseDNS no", "MaxStartups 100:30:200", "MaxSessions 100", "PrintMotd no",
            "Subsystem sftp internal-sftp", "LogLevel VERBOSE", ""]))
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        boot = [f"mount -n --bind {tmp / 'sysctl.d'} /etc/sysctl.d"]
        if own_sysfs:
            boot.append("mount -n -t sysfs sysfs /sys")
        if Path("/root/.bashrc").exists():
            boot.append(f"mount -n --bind {tmp / 'empty'} /root/.bashrc")
        if prepare is not None:
            boot += prepare(tmp)
        boot.append(f"exec {SSHD} -D -e -f {tmp / 'sshd_config'}")
        log = open(tmp / "sshd.log", "ab")
        try:
            proc = subprocess.Popen(
                ["nsenter", f"--net=/run/netns/{ns}", "--", "unshare", "--mount", "--propagation", "private", "--",
                 "/bin/sh", "-ec", " && ".join(boot)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        finally:
            log.close()
        host = NsHost(name=name, ns=ns, dir=tmp, sshd_pid=proc.pid, key=client_key, known_hosts=tmp / "known_hosts")
        deadline = time.monotonic() + 15
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {(tmp / 'sshd.log').read_text()[-1500:]}")
            probe = sh(["nsenter", f"--net=/run/netns/{ns}", "--", sys.executable, "-c",
                        "import socket;s=socket.create_connection(('127.0.0.1',22),0.5);print(s.recv(4))"],
                       check=False)
            if "SSH-" in probe.stdout:
                break
            if time.monotonic() > deadline:
                raise RuntimeError("sshd did not listen within 15 s")
            time.sleep(0.05)
        return host, cleanup
    except BaseException:
        cleanup()
        raise


def file_digests(paths: list[str]) -> dict[str, str]:
    """sha256 of every regular file under the paths (for 'nothing in the real /etc changed')."""
    out = {}
    for p in paths:
        pp = Path(p)
        files = [pp] if pp.is_file() else sorted(x for x in pp.rglob("*") if x.is_file()) if pp.is_dir() else []
        for f in files:
            try:
                out[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
            except OSError:
                out[str(f)] = "unreadable"
    return out


def root_sysctls(keys: list[str]) -> dict[str, str]:
    return {k: Path("/proc/sys/" + k.replace(".", "/")).read_text().strip() for k in keys}


def load_json(path: Path):
    return json.loads(Path(path).read_text())


@pytest.fixture(scope="session")
def ns_hosts() -> Callable[..., tuple[NsHost, Callable[[], None]]]:
    """``start_ns_host``, once the machine can run it (root, ip, nsenter, unshare, nft, sshd, ansible-playbook):
    the test calls it and runs the returned cleanup in a ``finally``. Taking this fixture marks a test
    ``netns`` and ``root`` (tests/support/tiers.py)."""
    missing = requirements_missing()
    if missing:
        pytest.skip(missing)
    return start_ns_host
