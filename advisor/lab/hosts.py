"""What runs inside a lab host: keys, sshd config, private mounts, the boot script and its processes.

Each host is a network namespace plus, for its processes, a private mount, UTS and PID namespace
(``ip netns exec NS unshare --mount --uts --pid --fork --kill-child --mount-proc --propagation private
-- /bin/sh boot.sh``): the host's processes see only each other in their own ``/proc``, as on a real
machine, so a probe of processes, limits or services on one host never sees another host's daemons.
The pid ``up`` records for the host ("sshd") is the ``unshare`` process, outside the host's PID
namespace (in its mount, UTS and network namespaces); its only child, the boot script exec'ed into
sshd, is the host's pid 1 (``host_init_pid``). Killing either by pid takes the whole host down: the
kernel kills every process of a PID namespace whose init dies, and ``--kill-child`` kills the init
when ``unshare`` dies. The boot script, run in those namespaces only:

1. sets the host name (UTS namespace);
2. mounts the emulator directories (and files) where the real tools live. A mountpoint that does not exist
   on the real filesystem (/usr/lpp/mmfs/bin, /opt/SMgr/client, /etc/ceph) is made inside a private
   overlay of its deepest existing ancestor (e.g. /usr, upper layer in the host's state dir),
   so the real filesystem is never changed;
   A host without an emulated /sys/block (the ``disks`` emulation) gets an empty private one, so
   that nothing run on the host (a scan's probes, the block_tuning role) sees or writes the
   machine's real block devices;
3. bind-mounts the host's private ``sysctl.d`` directory over /etc/sysctl.d (a directory, not a
   file: Ansible's atomic rename must work inside it), after step 2 so an overlay of /etc keeps it;
4. bind-mounts an empty file over /root/.bashrc (this machine's bashrc runs ``pyenv init``);
5. builds a private tmpfs for /run (with /run/sshd, the host's own directory at
   /run/storadvise-lab-host, and the lab's state dir bound back at its own path) and moves it over /run;
6. starts ``iperf3 -s`` in the background and execs sshd in the foreground, so the host's pid 1
   *is* its sshd (``up`` records the ``unshare`` process above it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from advisor.lab.netns import run
from probes.sysctl_conf import sysctl_proc_path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
#: where a host sees its own directory of the lab (``hosts/NAME``), in its private /run
HOST_DIR_IN_HOST = "/run/storadvise-lab-host"
IPERF3 = shutil.which("iperf3") or "/usr/bin/iperf3"



def keygen(path: Path, comment: str) -> str:
    """An ed25519 key pair (no passphrase); returns the public key line."""
    if not path.exists():
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)])
    path.chmod(0o600)
    return Path(str(path) + ".pub").read_text().strip()


def sshd_config(hdir: Path, lab_dir: Path, address: str) -> str:
    return "\n".join([
        "# storadvise lab sshd (lab only)",
        f"ListenAddress {address}",
        "Port 22",
        f"HostKey {hdir / 'ssh_host_ed25519_key'}",
        f"PidFile {hdir / 'sshd.pid'}",
        f"AuthorizedKeysFile {lab_dir / 'authorized_keys'}",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "UseDNS no",
        "MaxStartups 100:30:200",
        "MaxSessions 100",
        "PrintMotd no",
        "Subsystem sftp internal-sftp",
        "",
    ])


def _deepest_existing(path: str) -> str:
    p = Path(path)
    while not p.exists():
        p = p.parent
    return str(p)


def boot_script(lab_dir: Path, hdir: Path, host: str, address: str, emulators: dict[str, Path], iperf3: bool,
                read_only_sysctls: list[str] | tuple[str, ...] = (), cpu_load: int = 0) -> str:
    q = lambda s: "'" + str(s).replace("'", "'\\''") + "'"  # noqa: E731
    L, H = str(lab_dir), str(hdir)
    lines = [
        "#!/bin/sh",
        f"# storadvise lab: boot of host {host} (in its own network, mount and UTS namespaces only)",
        "set -eu",
        f"hostname {q(host)}",
    ]
    # emulators first: an overlay they need on a parent (/etc for /etc/dcache) would hide a bind made
    # below it before (the host's /etc/sysctl.d)
    overlays: dict[str, int] = {}
    for target, src in emulators.items():
        # an existing file (/proc/diskstats) or directory is bound over as it is; a missing one is made
        if not Path(target).exists():
            anc = _deepest_existing(target)
            if anc == "/":
                raise RuntimeError(f"cannot make {target}: no existing parent other than /")
            if anc not in overlays:
                n = overlays[anc] = len(overlays)
                up, work = f"{H}/ovl/{n}/upper", f"{H}/ovl/{n}/work"
                Path(up).mkdir(parents=True, exist_ok=True)
                Path(work).mkdir(parents=True, exist_ok=True)
                lines.append(f"mount -n -t overlay storadvise-lab -o lowerdir={anc},upperdir={up},workdir={work} {q(anc)}")
            lines.append(f"mkdir -p {q(target)}")
        lines.append(f"mount -n --bind {q(src)} {q(target)}")
    if "/sys/block" not in emulators:
        lines += [f"mkdir -p {q(H + '/sys-block')}", f"mount -n --bind {q(H + '/sys-block')} /sys/block"]
    lines.append(f"mount -n --bind {q(H + '/sysctl.d')} /etc/sysctl.d")
    if Path("/root/.bashrc").exists():
        lines.append(f"mount -n --bind {q(H + '/empty-bashrc')} /root/.bashrc")
    lines += [
        f"mount -n -t tmpfs -o mode=0755,size=16m storadvise-lab-run {q(H + '/run')}",
        f"mkdir -p {q(H + '/run/sshd')}",
        f"chmod 0755 {q(H + '/run/sshd')}",
    ]
    # the host's own directory at one path in every host (its private /run): the site file names the
    # host's files there, so hosts of one kind run the same probe scripts and share a collection batch
    lines += [f"mkdir -p {q(H + '/run' + HOST_DIR_IN_HOST[len('/run'):])}",
              f"mount -n --bind {q(H)} {q(H + '/run' + HOST_DIR_IN_HOST[len('/run'):])}"]
    if Path(L).resolve().is_relative_to("/run"):
        # the lab's state dir lives under /run: bind it back at its own path inside the new /run
        inner = H + "/run/" + str(Path(L).resolve().relative_to("/run"))
        lines += [f"mkdir -p {q(inner)}", f"mount -n --bind {q(L)} {q(inner)}"]
    lines.append(f"mount -n --move {q(H + '/run')} /run")
    for key in read_only_sysctls:
        # the key's /proc/sys file bound read-only onto itself in the host's mount namespace: what
        # the host's processes (sshd, its sessions) see; a write fails as in a container
        path = q(sysctl_proc_path(key))
        lines.append(f"mount -n --bind {path} {path} && mount -n -o remount,bind,ro {path}")
    if iperf3:
        lines += [
            f"{IPERF3} -s -B {address} --logfile {q(H + '/iperf3.log')} </dev/null >/dev/null 2>&1 &",
            f"echo $! > {q(H + '/iperf3.pid')}",
        ]
    # the host's other jobs: each pinned to one CPU, in the host's PID namespace (they end with it)
    for i in range(cpu_load):
        lines.append(f"taskset -c {i % (os.cpu_count() or 1)} /bin/sh -c 'while :; do :; done' </dev/null >/dev/null 2>&1 &")
    lines.append(f"exec {SSHD} -D -f {q(H + '/sshd_config')} -E {q(H + '/sshd.log')}")
    return "\n".join(lines) + "\n"


def prepare_host_dir(hdir: Path, lab_dir: Path, host: str, address: str, persisted: dict[str, str]) -> str:
    """Create the host's private directories and files; returns its host public key line."""
    hdir.mkdir(parents=True, exist_ok=True)
    (hdir / "run").mkdir(exist_ok=True)
    (hdir / "etc" / "udev" / "rules.d").mkdir(parents=True, exist_ok=True)  # block_tuning's udev rule (site vars)
    sysd = hdir / "sysctl.d"
    if not sysd.exists():
        # start from what the real /etc/sysctl.d holds (copied, never changed), plus the scenario's files
        if Path("/etc/sysctl.d").is_dir():
            shutil.copytree("/etc/sysctl.d", sysd, symlinks=True)
        else:
            sysd.mkdir()
    for fname, text in persisted.items():
        (sysd / fname).write_text(text)
    (hdir / "empty-bashrc").write_text("")
    pub = keygen(hdir / "ssh_host_ed25519_key", f"root@{host}")
    (hdir / "sshd_config").write_text(sshd_config(hdir, lab_dir, address))
    return pub


def spawn_host(ns: str, hdir: Path) -> subprocess.Popen:
    log = open(hdir / "boot.log", "ab")
    try:
        return subprocess.Popen(
            ["ip", "netns", "exec", ns, "unshare", "--mount", "--uts", "--pid", "--fork", "--kill-child",
             "--mount-proc", "--propagation", "private", "--", "/bin/sh", str(hdir / "boot.sh")],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True,
        )
    finally:
        log.close()




def host_init_pid(boot_pid: int) -> int | None:
    """The host's pid 1 (sshd), as the root namespace numbers it: the only child of the ``unshare``
    process whose pid ``up`` recorded; None when the host is down."""
    try:
        kids = Path(f"/proc/{boot_pid}/task/{boot_pid}/children").read_text().split()
    except OSError:
        return None
    return int(kids[0]) if kids else None


def enter_host(boot_pid: int) -> list[str]:
    """argv prefix that runs a command inside a lab host: its network, mount, UTS and PID namespaces
    (what the host's own sshd sessions see), entered from its pid 1."""
    init = host_init_pid(boot_pid)
    if init is None:
        raise RuntimeError(f"the host of boot process {boot_pid} is down (no pid 1)")
    return ["nsenter", "-t", str(init), "-m", "-n", "-u", "-p", "--"]


def outer_pid(boot_pid: int, inner_pid: int) -> int | None:
    """The root namespace's pid of the process a lab host knows as ``inner_pid`` (a pid file written
    inside the host), or None when no such process runs there. By pid only: /proc/*/status's NSpid."""
    init = host_init_pid(boot_pid)
    if init is None:
        return None
    try:
        pidns = os.stat(f"/proc/{init}/ns/pid").st_ino
    except OSError:
        return None
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if os.stat(d / "ns" / "pid").st_ino != pidns:
                continue
            for line in (d / "status").read_text().splitlines():
                if line.startswith("NSpid:"):
                    if int(line.split()[-1]) == inner_pid:
                        return int(d.name)
                    break
        except (OSError, ValueError):
            continue
    return None
