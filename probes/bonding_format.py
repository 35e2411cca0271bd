"""Pure parser of ``/proc/net/bonding/BOND`` (drivers/net/bonding/bond_procfs.c), for the ``nic.ports``
probe's bonds (probes/nic.py).

The file opens with ``Ethernet Channel Bonding Driver: vX``, then the bond's ``Key: value`` lines
(``Bonding Mode:``, ``MII Status:``, ``Currently Active Slave:``...), then one block per member, each
opening with ``Slave Interface: eth1`` and holding the member's ``MII Status:``, ``Speed:``,
``Duplex:`` and ``Link Failure Count:``.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from probes.probe import ProbeParseError, bounded_int


class BondMember(BaseModel):
    #: the bond's view of the member's link: ``up``, ``down``, ``going back``...
    mii_status: str | None = None
    speed_mbps: int | None = None
    duplex: str | None = None
    link_failures: int | None = None


class Bond(BaseModel):
    mode: str | None = None
    mii_status: str | None = None
    #: active-backup: the member carrying the traffic
    active: str | None = None
    members: dict[str, BondMember] = Field(default_factory=dict)
    #: the members whose link the bond sees down
    members_down: list[str] = Field(default_factory=list)


def parse_bonding(text: str, name: str) -> Bond:
    if "Bonding Driver" not in text and "Bonding Mode" not in text:
        raise ProbeParseError(f"/proc/net/bonding/{name}: not the bonding driver's status "
                              f"({(text.strip().splitlines() or [''])[0][:60]!r})")
    out = Bond()
    member: BondMember | None = None
    for raw in text.splitlines():
        key, sep, value = raw.strip().partition(":")
        if not sep:
            continue
        k, v = key.strip().lower(), value.strip()
        if k == "slave interface":
            member = out.members.setdefault(v, BondMember())
        elif member is None:
            if k == "bonding mode":
                out.mode = v
            elif k == "mii status":
                out.mii_status = v.lower()
            elif k == "currently active slave":
                out.active = None if v.lower() == "none" else v
        elif k == "mii status":
            member.mii_status = v.lower()
        elif k == "speed":
            m = re.match(r"(\d+)\s*Mbps", v)
            member.speed_mbps = bounded_int(m.group(1), "bonding member speed") if m else None
        elif k == "duplex":
            member.duplex = v.lower() if v.lower() in ("full", "half") else None
        elif k == "link failure count" and v.isdigit():
            member.link_failures = bounded_int(v, "bonding link failure count")
    out.members_down = sorted(n for n, m in out.members.items() if m.mii_status not in (None, "up"))
    return out
