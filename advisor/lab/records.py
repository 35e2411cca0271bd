"""What a lab leaves on the machine, written down before it is created.

Every lab keeps a state directory ``<labs>/<name>/`` (``<labs>`` = /run/storadvise/labs or
``$STORADVISE_LAB_DIR``). ``up`` writes ``record.json`` with the names of every namespace and
root-namespace interface *before* creating them, and appends each process id to ``pids`` the
moment it is started, so ``down`` can remove everything even after ``up`` was killed. Leftovers
are also found by the lab's own name prefix (``salab-<name>~``); processes are killed by pid.

Address allocation: one /24 per lab out of 198.18.0.0/15 (RFC 2544 benchmark range); the index
is kept in the record and allocated under a lock so several labs coexist.
"""

from __future__ import annotations

import fcntl
import hashlib
import ipaddress
import json
import os
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator

from advisor.site.lookup import lab_sites_dir

LAB_POOL = ipaddress.ip_network("198.18.0.0/15")
NS_PREFIX = "salab-"
DEFAULT_LABS_DIR = Path("/run/storadvise/labs")
#: machine-wide subnet claims, shared by every registry (one file per /24 index)
CLAIMS_DIR = Path("/run/storadvise/lab-subnets")


def labs_dir() -> Path:
    return lab_sites_dir().parent


def lab_dir(name: str) -> Path:
    return labs_dir() / name


def registry_prefix() -> str:
    """Namespace-name prefix of every lab of this registry.

    The default registry's labs are ``salab-<lab>~...``; a registry elsewhere
    (``$STORADVISE_LAB_DIR``, e.g. a test run's) gets ``salab+<tag>+<lab>~...`` so that
    ``down --all`` in one registry never touches the labs of another.
    """
    d = labs_dir().resolve()
    if d == DEFAULT_LABS_DIR:
        return NS_PREFIX
    tag = hashlib.sha1(str(d).encode()).hexdigest()[:8]
    return f"salab+{tag}+"


def ns_prefix(lab: str) -> str:
    """Namespace-name prefix of one lab ('~' and '+' cannot occur in lab or host names)."""
    return f"{registry_prefix()}{lab}~"


def host_ns(lab: str, host: str) -> str:
    return f"{ns_prefix(lab)}{host}"


def switch_ns(lab: str, switch: str) -> str:
    return f"{ns_prefix(lab)}~sw~{switch}"


def root_iface(index: int) -> str:
    return f"salab{index}"


def subnet_for(index: int) -> ipaddress.IPv4Network:
    return ipaddress.ip_network(f"{LAB_POOL.network_address + index * 256}/24")


@dataclass
class LabRecord:
    name: str
    index: int
    subnet: str
    scenario: str
    scenario_source: str | None
    created: float = field(default_factory=time.time)
    phase: str = "planned"  # planned -> building -> up | failed
    namespaces: list[str] = field(default_factory=list)
    root_ifaces: list[str] = field(default_factory=list)
    hosts: dict[str, dict] = field(default_factory=dict)  # name -> {address, ns, roles, groups}
    controller_address: str = ""
    site_file: str | None = None
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def dir(self) -> Path:
        return lab_dir(self.name)

    def save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / "record.json.tmp"
        tmp.write_text(json.dumps(asdict(self), indent=2, sort_keys=True))
        os.replace(tmp, self.dir / "record.json")

    @classmethod
    def load(cls, name: str) -> "LabRecord | None":
        p = lab_dir(name) / "record.json"
        try:
            data = json.loads(p.read_text())
        except (FileNotFoundError, ValueError):
            return None
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})

    # -- processes -------------------------------------------------------
    def add_pid(self, pid: int, what: str, host: str) -> None:
        append_pid(self.dir, pid, what, host)

    def pids(self) -> list[tuple[int, str, str]]:
        return read_pids(self.dir)


def append_pid(d: Path, pid: int, what: str, host: str) -> None:
    """Record a process of the lab in directory ``d`` the moment it is started (``down`` kills it)."""
    with open(d / "pids", "a") as f:
        f.write(f"{pid} {what} {host}\n")
        f.flush()
        os.fsync(f.fileno())


def read_pids(d: Path) -> list[tuple[int, str, str]]:
    out = []
    try:
        for line in (d / "pids").read_text().splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0].isdigit():
                out.append((int(parts[0]), parts[1], parts[2]))
    except FileNotFoundError:
        pass
    return out


@contextmanager
def labs_lock() -> Iterator[None]:
    d = labs_dir()
    d.mkdir(parents=True, exist_ok=True)
    with open(d / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def existing_lab_names() -> list[str]:
    d = labs_dir()
    if not d.is_dir():
        return []
    return sorted(p.name for p in d.iterdir() if p.is_dir() and p.name != "sites" and (p / "record.json").exists())


def used_indexes() -> set[int]:
    used = set()
    for n in existing_lab_names():
        r = LabRecord.load(n)
        if r is not None:
            used.add(r.index)
    return used


@contextmanager
def claims_lock() -> Iterator[None]:
    CLAIMS_DIR.mkdir(parents=True, exist_ok=True)
    with open(CLAIMS_DIR / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _claim_live(i: int) -> bool:
    """A claim is live while the lab that made it still has its record with that index."""
    try:
        owner = Path((CLAIMS_DIR / str(i)).read_text().strip())
    except FileNotFoundError:
        return False
    try:
        data = json.loads((owner / "record.json").read_text())
    except (FileNotFoundError, ValueError, NotADirectoryError):
        return False
    return data.get("index") == i


def allocate_index(routed: set[ipaddress.IPv4Network], owner: Path) -> int:
    """Lowest free /24 of the pool, claimed machine-wide for ``owner`` (a lab's state dir):
    not claimed by a live lab of any registry, not overlapping a root-namespace route.
    The caller must write the lab's record before releasing ``claims_lock``."""
    used = used_indexes()
    for i in range(LAB_POOL.num_addresses // 256):
        if i in used or _claim_live(i):
            continue
        net = subnet_for(i)
        if any(net.overlaps(r) for r in routed):
            continue
        (CLAIMS_DIR / str(i)).write_text(str(owner) + "\n")
        return i
    raise RuntimeError("no free /24 left in 198.18.0.0/15")


def release_index(i: int, owner: Path) -> None:
    p = CLAIMS_DIR / str(i)
    try:
        if Path(p.read_text().strip()) == owner:
            p.unlink()
    except FileNotFoundError:
        pass
