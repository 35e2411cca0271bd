"""Block devices: queue tunables (``block.queue``) and kernel I/O error lines (``block.ioerrors``).

``block.queue`` reads ``/sys/block/<dev>/queue/*`` (Documentation/block/queue-sysfs.rst, see
shared/reference/FORMATS.md §3.1). Sysfs spells a ``/`` in a device name as ``!``
(``cciss!c0d0``); facts use the ``/proc/diskstats`` spelling (``cciss/c0d0``) so the two
probes' device keys match.

``block.ioerrors`` scans the kernel log (``dmesg``, else ``journalctl -k -b``) for the
block layer's, the page cache's and libata's error lines. An unreadable log is an error,
never an empty pass.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from probes.probe import (
    NOT_APPLICABLE_MARKER,
    Probe,
    ProbeContext,
    ProbeParseError,
    section,
    split_sections,
)

END_SECTION = "end"

# ----------------------------------------------------------------------------------------
# block.queue


class BlockDevice(BaseModel):
    """One entry of /sys/block. A file the kernel does not provide for the device is None."""

    read_ahead_kb: int | None = None
    #: the active scheduler: the bracketed token, or the only token (``none`` on some devices)
    scheduler: str | None = None
    #: every scheduler the kernel offers for the device, active one included
    schedulers: list[str] = Field(default_factory=list)
    nr_requests: int | None = None
    max_sectors_kb: int | None = None
    max_hw_sectors_kb: int | None = None
    rotational: bool | None = None
    size_bytes: int | None = None
    model: str | None = None
    vendor: str | None = None
    #: loop, ram, zram, dm-*, md*, or anything under /sys/devices/virtual: not a physical disk
    virtual: bool = False


class BlockQueueFacts(BaseModel):
    devices: dict[str, BlockDevice] = Field(default_factory=dict)


QUEUE_FILES = ("read_ahead_kb", "scheduler", "nr_requests", "max_sectors_kb", "max_hw_sectors_kb", "rotational")
INT_FIELDS = ("read_ahead_kb", "nr_requests", "max_sectors_kb", "max_hw_sectors_kb")
VIRTUAL_NAME = re.compile(r"^(loop|ram|zram|dm-|md)\d*")
DEVICE_SECTION = "device "
SCHEDULER_TOKEN = re.compile(r"^\[?([A-Za-z0-9_-]+)\]?$")


def parse_scheduler(text: str) -> tuple[str | None, list[str]]:
    """``[mq-deadline] kyber bfq none`` -> ("mq-deadline", [all four]); ``none`` -> ("none", ["none"]).

    Several unbracketed tokens leave the active one unknown (None)."""
    tokens = text.split()
    names: list[str] = []
    active: list[str] = []
    for token in tokens:
        match = SCHEDULER_TOKEN.match(token)
        if not match or token.startswith("[") != token.endswith("]"):
            raise ProbeParseError(f"scheduler: unexpected token {token!r} in {text.strip()[:80]!r}")
        names.append(match.group(1))
        if token.startswith("["):
            active.append(match.group(1))
    if len(active) > 1:
        raise ProbeParseError(f"scheduler: more than one active scheduler in {text.strip()[:80]!r}")
    if active:
        return active[0], names
    return (names[0] if len(names) == 1 else None), names


def _int_value(device: str, key: str, value: str) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise ProbeParseError(f"{device}: {key} is not an integer: {value.strip()[:40]!r}") from None
    if number < 0:
        raise ProbeParseError(f"{device}: {key} is negative: {number}")
    return number


def parse_block_device(name: str, body: str) -> BlockDevice:
    values: dict[str, str] = {}
    for line in body.splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ProbeParseError(f"{name}: expected key=value, got {line.strip()[:60]!r}")
        values[key.strip()] = value
    device = BlockDevice(virtual=bool(VIRTUAL_NAME.match(name)) or "/devices/virtual/" in values.get("link", ""))
    for key in INT_FIELDS:
        if key in values:
            setattr(device, key, _int_value(name, key, values[key]))
    if "scheduler" in values:
        device.scheduler, device.schedulers = parse_scheduler(values["scheduler"])
    if "rotational" in values:
        flag = values["rotational"].strip()
        if flag not in ("0", "1"):
            raise ProbeParseError(f"{name}: rotational is not 0 or 1: {flag[:20]!r}")
        device.rotational = flag == "1"
    if "size" in values:
        device.size_bytes = _int_value(name, "size", values["size"]) * 512
    for key in ("model", "vendor"):
        if values.get(key, "").strip():
            setattr(device, key, values[key].strip())
    return device


class BlockQueueProbe(Probe):
    name = "block.queue"
    title = "Block device queue tunables (read-ahead, scheduler, request sizes)"
    facts_model = BlockQueueFacts

    def script(self, ctx: ProbeContext) -> str:
        files = " ".join(QUEUE_FILES)
        return (
            f'[ -d /sys/block ] || {{ echo "{NOT_APPLICABLE_MARKER} no /sys/block"; exit 0; }}\n'
            "for d in /sys/block/*; do\n"
            '  [ -e "$d" ] || continue\n'
            '  echo "@@section device ${d##*/}"\n'
            '  printf \'link=%s\\n\' "$(readlink "$d" 2>/dev/null)"\n'
            f"  for f in {files}; do\n"
            '    [ -r "$d/queue/$f" ] && printf \'%s=%s\\n\' "$f" "$(cat "$d/queue/$f" 2>/dev/null)"\n'
            "  done\n"
            '  [ -r "$d/size" ] && printf \'size=%s\\n\' "$(cat "$d/size" 2>/dev/null)"\n'
            "  for f in model vendor; do\n"
            '    [ -r "$d/device/$f" ] && printf \'%s=%s\\n\' "$f" "$(cat "$d/device/$f" 2>/dev/null)"\n'
            "  done\n"
            "done\n" + section(END_SECTION)
        )

    def parse(self, text: str) -> BlockQueueFacts:
        sections = split_sections(text)
        if END_SECTION not in sections:
            raise ProbeParseError("block.queue output truncated: no end marker")
        stray = sections.get("", "").strip()
        if stray:
            raise ProbeParseError(f"block.queue: unexpected output before the first device: {stray[:60]!r}")
        facts = BlockQueueFacts()
        for key, body in sections.items():
            if key in ("", END_SECTION):
                continue
            if not key.startswith(DEVICE_SECTION) or not key[len(DEVICE_SECTION):].strip():
                raise ProbeParseError(f"block.queue: unexpected section {key[:60]!r}")
            name = key[len(DEVICE_SECTION):].strip().replace("!", "/")
            facts.devices[name] = parse_block_device(name, body)
        return facts
