"""Pure parsers of ``ethtool``'s text outputs (the ``nic.ports`` probe, probes/nic.py).

The layouts are ethtool's own (ethtool.c and netlink/*.c of ethtool 4.x-6.x), as real hosts print them
(the fixtures under tests/fixtures/nic/ name their sources):

* ``ethtool IF``: ``Settings for IF:`` then ``Key: value`` lines, tab-indented; the link-mode lists
  (``Supported link modes:``, ``Advertised link modes:``, ``Link partner advertised link modes:``) go on
  over continuation lines holding only modes. ``Speed: 1000Mb/s`` or ``Unknown!``; ``Duplex: Full``,
  ``Half`` or ``Unknown! (255)``. Lines a non-root user gets instead of some fields (``netlink error:
  Operation not permitted``, ``Cannot get wake-on-lan settings``) are not settings and are skipped.
* ``ethtool -g IF`` and ``ethtool -k IF``: read by playbooks/module_utils/storadvise_ethtool.py (the
  nic_tuning role's module reads them the same way), wrapped here in models;
* ``ethtool -S IF``: ``NIC statistics:`` then ``name: value``; some drivers' names hold ``": "``
  themselves (be2net's ``rxq0: rx_bytes: 12``): the value is after the last one.

Each parser refuses text that is not its command's output (``ProbeParseError``, one line).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from probes.probe import ProbeParseError, bounded_int

_MODE_SPEED = re.compile(r"^(\d+)base", re.I)
_MODE_LISTS = {"supported link modes": "supported", "advertised link modes": "advertised",
               "link partner advertised link modes": "partner"}
#: lines ethtool prints in place of a setting it could not read (non-root, a driver without the call)
_NOT_A_SETTING = re.compile(r"^(netlink error|cannot get|no data available|operation not)", re.I)


class LinkSettings(BaseModel):
    """``ethtool IF``."""

    #: Mb/s; None when ethtool says ``Unknown!`` (link down, a virtio NIC)
    speed_mbps: int | None = None
    #: ``full``, ``half``; None when unknown
    duplex: str | None = None
    autoneg: bool | None = None
    port: str | None = None
    link_detected: bool | None = None
    supported_modes: list[str] = Field(default_factory=list)
    advertised_modes: list[str] = Field(default_factory=list)
    #: what the other end (the switch port) advertises, when the driver reports it
    partner_modes: list[str] = Field(default_factory=list)

    @staticmethod
    def fastest(modes: list[str]) -> int | None:
        """The fastest of ``modes`` in Mb/s (``10000baseT/Full`` -> 10000); None without a speed."""
        speeds = [int(m.group(1)) for mode in modes if (m := _MODE_SPEED.match(mode))]
        return max(speeds) if speeds else None


def _modes(value: str) -> list[str]:
    v = value.strip()
    if not v or v.lower().startswith("not reported"):
        return []
    return v.split()


def parse_link_settings(text: str) -> LinkSettings:
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.strip().startswith("Settings for ")), None)
    if start is None:
        raise ProbeParseError(f"ethtool: no 'Settings for IF:' line: {(text.strip().splitlines() or [''])[0][:80]!r}")
    out = LinkSettings()
    current: str | None = None  # the mode list continuation lines belong to
    for raw in lines[start + 1:]:
        line = raw.strip()
        if not line or _NOT_A_SETTING.match(line):
            continue
        key, sep, value = line.partition(":")
        if not sep:  # a continuation line: more modes of the list above (or of the message level)
            if current:
                getattr(out, f"{current}_modes").extend(line.split())
            continue
        k = key.strip().lower()
        current = None
        if k in _MODE_LISTS:
            current = _MODE_LISTS[k]
            getattr(out, f"{current}_modes").extend(_modes(value))
        elif k == "speed":
            m = re.match(r"\s*(\d+)\s*Mb/s", value)
            out.speed_mbps = bounded_int(m.group(1), "ethtool speed") if m else None
        elif k == "duplex":
            d = value.strip().lower()
            out.duplex = d if d in ("full", "half") else None
        elif k == "auto-negotiation":
            out.autoneg = value.strip().lower() == "on"
        elif k == "port":
            out.port = value.strip() or None
        elif k == "link detected":
            out.link_detected = value.strip().lower() == "yes"
    return out


class Rings(BaseModel):
    """``ethtool -g IF``: current ring sizes and their maxima (None: the driver has none)."""

    rx: int | None = None
    rx_max: int | None = None
    tx: int | None = None
    tx_max: int | None = None


def parse_rings(text: str) -> Rings:
    try:
        return Rings(**_ethtool_text().ring_values(text))
    except ValueError as exc:
        raise ProbeParseError(str(exc)) from None


class Feature(BaseModel):
    on: bool
    #: ``[fixed]``: the driver does not let it change
    fixed: bool = False


#: the short names ``ethtool -K`` takes for the offloads the NIC rules read
FEATURE_ALIASES: dict[str, str] = {}


def parse_features(text: str) -> dict[str, Feature]:
    """``ethtool -k IF``: every feature by its long name (``generic-receive-offload``)."""
    try:
        states = _ethtool_text().feature_states(text)
    except ValueError as exc:
        raise ProbeParseError(str(exc)) from None
    return {name: Feature(on=on, fixed=fixed) for name, (on, fixed) in states.items()}


def _ethtool_text():
    """playbooks/module_utils/storadvise_ethtool.py: the one reading of ``ethtool -g``/``-k``, shared with
    the nic_tuning role's module."""
    from advisor.util.shipped_code import module_utils

    return module_utils("storadvise_ethtool")


FEATURE_ALIASES.update(_ethtool_text().FEATURE_ALIASES)


def parse_nic_statistics(text: str) -> dict[str, int]:
    """``ethtool -S IF``: counter name -> value. A line whose value is not a number is left out."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.strip() == "NIC statistics:"), None)
    if start is None:
        raise ProbeParseError(f"ethtool -S: no 'NIC statistics:' line: {(text.strip().splitlines() or [''])[0][:80]!r}")
    out: dict[str, int] = {}
    for raw in lines[start + 1:]:
        name, sep, value = raw.strip().rpartition(": ")
        if not sep or not name:
            name, sep, value = raw.strip().rpartition(":")
        v = value.strip()
        if sep and name and v.isdigit() and v.isascii():
            out[name.strip()] = bounded_int(v, f"ethtool -S {name.strip()[:40]}")
    return out
