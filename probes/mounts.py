"""``mounts``: every mount with its file-system type and options (every host).

Sections: ``mounts`` -- /proc/self/mounts (fstab-like: ``device mountpoint fstype options 0 0``,
blanks and specials escaped as octal ``\\040``; proc(5)); ``filesystems`` -- /proc/filesystems
(the kernel file systems available now, ``nodev`` flagged); ``ceph-module`` -- whether a ``ceph``
kernel module exists (``modinfo -n ceph``), so a rule can tell whether a Ceph kernel mount is
possible where ceph-fuse is used. ``parse`` also accepts /proc/self/mountinfo lines (``id parent
major:minor root mountpoint options ... - fstype source super-options``) and raw /proc/mounts.
From mountinfo, ``options`` are the mount point's own options and ``super_options`` those of the
file system's superblock (a read-only bind mount of a read-write file system: ``ro`` / ``rw``).
Options are split at commas outside double quotes (SELinux ``context="u:r:t:s0:c1,c2"``).
A line of neither format (``mount -l`` prints ``dev on /dir type fs (opts)``) is a parse error
naming the line: the parser never guesses mounts out of another format.

Kinds: ``parallel`` (gpfs, lustre, beegfs, ceph kernel client, glusterfs, panfs, orangefs),
``network`` (nfs, nfs4, cifs/smb3, 9p), ``fuse`` storage clients (fuse.ceph-fuse, fuse.ceph,
fuse.glusterfs, fuse.xrootdfs, fuse.eosxd, fuse.beegfs, fuse.s3fs) -- all three are
``storage_mounts``; CVMFS (software distribution) and other fuse mounts are kept as ``fuse-other``.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from probes.probe import SECTION_MARKER, Probe, ProbeContext, ProbeParseError, section, split_sections

PARALLEL = {"gpfs", "lustre", "beegfs", "ceph", "glusterfs", "panfs", "orangefs", "pvfs2", "cephfs"}
NETWORK = {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "davfs"}
FUSE_STORAGE = {
    "fuse.ceph-fuse", "fuse.ceph", "fuse.glusterfs", "fuse.xrootdfs", "fuse.eosxd", "fuse.eos",
    "fuse.beegfs", "fuse.s3fs", "fuse.gcsfuse", "fuse.sshfs", "fuse.rclone",
}
LOCAL = {"xfs", "ext2", "ext3", "ext4", "btrfs", "zfs", "jfs", "reiserfs", "vfat", "f2fs", "ntfs", "ntfs3", "exfat"}
CEPH_FUSE = {"fuse.ceph-fuse", "fuse.ceph"}

_OCTAL_RE = re.compile(r"\\([0-7]{3})")


def _unescape(s: str) -> str:
    return _OCTAL_RE.sub(lambda m: chr(int(m.group(1), 8)), s)


def classify(fstype: str) -> str:
    if fstype in PARALLEL:
        return "parallel"
    if fstype in NETWORK:
        return "network"
    if fstype in FUSE_STORAGE:
        return "fuse"
    if fstype == "fuse" or fstype.startswith("fuse."):
        return "fuse-other"
    if fstype in LOCAL:
        return "local"
    return "virtual"


class Mount(BaseModel):
    device: str
    mountpoint: str
    fstype: str
    #: this mount's options (from mountinfo: the per-mount ones; from /proc/mounts: all of them)
    options: list[str] = Field(default_factory=list)
    #: the superblock's options (mountinfo only; empty from /proc/mounts)
    super_options: list[str] = Field(default_factory=list)
    #: mountinfo's major:minor of the device (None from /proc/mounts)
    dev_id: str | None = None
    kind: str
    #: for Ceph: "kernel" or "fuse"
    ceph_client: str | None = None
    line: str


class MountsFacts(BaseModel):
    mounts: list[Mount] = Field(default_factory=list)
    #: network / parallel / fuse-storage mounts by mount point (the last mount on a point wins)
    storage_mounts: dict[str, Mount] = Field(default_factory=dict)
    #: file systems from /proc/filesystems (None when not printed)
    kernel_filesystems: list[str] | None = None
    #: a ``ceph`` kernel module is installed (None when unknown)
    ceph_kernel_module: bool | None = None
    #: a Ceph kernel mount is possible here: ``ceph`` in /proc/filesystems or the module exists
    ceph_kernel_possible: bool | None = None


_MOUNT_CMD_RE = re.compile(r"^\S+ on \S.* type \S+ \(")


def split_options(text: str) -> list[str]:
    """``rw,context="u:r:t:s0:c1,c2",noatime`` -> three options: commas inside double quotes do not split."""
    out: list[str] = []
    cur: list[str] = []
    quoted = False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [o for o in out if o]


def _parse_mount_line(line: str) -> Mount | None:
    """One mountinfo or /proc/mounts line; None when it is neither."""
    parts = line.split()
    if " - " in line and len(parts) >= 10 and parts[0].isdigit() and re.fullmatch(r"\d+:\d+", parts[2]):
        left, _, right = line.partition(" - ")
        lp, rp = left.split(), right.split()
        if len(lp) < 6 or len(rp) < 2:
            return None
        mountpoint, opts = _unescape(lp[4]), split_options(lp[5])
        fstype, device = rp[0], _unescape(rp[1])
        super_opts = split_options(rp[2]) if len(rp) >= 3 else []
        dev_id = parts[2]
    elif len(parts) == 6 and parts[1].startswith("/") and parts[4].isdigit() and parts[5].isdigit():
        device, mountpoint, fstype, opts = _unescape(parts[0]), _unescape(parts[1]), parts[2], split_options(parts[3])
        super_opts, dev_id = [], None
    else:
        return None
    kind = classify(fstype)
    ceph = "kernel" if fstype in ("ceph", "cephfs") else ("fuse" if fstype in CEPH_FUSE else None)
    return Mount(device=device, mountpoint=mountpoint, fstype=fstype, options=opts, super_options=super_opts,
                 dev_id=dev_id, kind=kind, ceph_client=ceph, line=line)


def parse_mounts(text: str) -> MountsFacts:
    if SECTION_MARKER in text:
        sections = split_sections(text)
        body = sections.get("mounts", "")
        fs_text = sections.get("filesystems")
        mod = sections.get("ceph-module")
    else:
        body, fs_text, mod = text, None, None
    facts = MountsFacts()
    for lineno, raw in enumerate(body.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        m = _parse_mount_line(line)
        if m is None:
            what = ("the output of mount(8), not /proc/self/mounts or mountinfo" if _MOUNT_CMD_RE.match(line)
                    else "not a /proc/self/mounts or mountinfo line")
            raise ProbeParseError(f"mounts: line {lineno}: {what}: {line[:120]!r}")
        facts.mounts.append(m)
        if m.kind in ("parallel", "network", "fuse"):
            facts.storage_mounts[m.mountpoint] = m
    if not facts.mounts:
        raise ProbeParseError("mounts: no mount lines")
    if fs_text is not None:
        facts.kernel_filesystems = [ln.split()[-1] for ln in fs_text.splitlines() if ln.strip()]
    if mod is not None:
        v = mod.strip()
        facts.ceph_kernel_module = True if v.startswith("yes") else False if v.startswith("no") else None
    if facts.kernel_filesystems is not None and "ceph" in facts.kernel_filesystems:
        facts.ceph_kernel_possible = True
    else:
        facts.ceph_kernel_possible = facts.ceph_kernel_module
    return facts


class MountsProbe(Probe):
    name = "mounts"
    title = "Mounted file systems: type (gpfs, ceph kernel/fuse, beegfs, lustre, nfs ...) and options"
    facts_model = MountsFacts

    def script(self, ctx: ProbeContext) -> str:
        return (
            section("mounts")
            + "cat /proc/self/mounts 2>/dev/null || cat /proc/mounts\n"
            + section("filesystems")
            + "cat /proc/filesystems 2>/dev/null\n"
            + section("ceph-module")
            + "if grep -qw ceph /proc/filesystems 2>/dev/null; then echo yes loaded;\n"
            + "elif command -v modinfo >/dev/null 2>&1; then "
            + "if modinfo -n ceph >/dev/null 2>&1; then echo yes; else echo no; fi;\n"
            + 'elif [ -d "/lib/modules/$(uname -r)" ]; then '
            + 'if find "/lib/modules/$(uname -r)" -name "ceph.ko*" 2>/dev/null | grep -q .; then echo yes; else echo no; fi;\n'
            + "else echo unknown; fi\n"
        )

    def parse(self, text: str) -> MountsFacts:
        return parse_mounts(text)
