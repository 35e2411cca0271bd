"""The NIC-layer faults ``lab generate`` draws (advisor/lab/generate.py): an emulated NIC on one or two hosts
with one or two faults each, and sometimes the powersave governor on a storage host
(advisor/lab/emulators/nic_lab.py). Drawn from a generator of their own, seeded by the seed, so that every
other draw of a seed stays what it was before they joined the catalogue.

The faults keep the measured paths as they were (a NIC that negotiated 1000 of its 10000 Mb/s on the lab's
1 Gb/s links carries what the link does): the mesh's own faults stay the only path faults of a site.
"""

from __future__ import annotations

import random
from typing import Any

NIC_FAULT_SHARE = 0.5
#: fault -> (the host's ``nic:`` keys, the rule it fails, fixable by a plan, in words)
NIC_FAULTS: dict[str, tuple[dict[str, Any], str, bool, str]] = {
    "speed": ({"speed": 1000, "max_speed": 10000}, "NIC-SPEED-BELOW-MAX", False, "negotiated 1000 of its 10000 Mb/s"),
    "duplex": ({"speed": 1000, "duplex": "half"}, "NIC-HALF-DUPLEX", False, "half duplex"),
    "crc": ({"speed": 1000, "counters": {"rx_crc_errors": 30}}, "NIC-ERRORS-RISING", False, "rx_crc_errors 30/s"),
    "ring": ({"speed": 10000, "ring": {"rx": 256, "rx_max": 4096}, "counters": {"rx_missed_errors": 20}},
             "NIC-RING-BELOW-MAX", True, "RX ring 256 of 4096 while rx_missed_errors rise"),
    "gro": ({"speed": 10000, "offloads": {"gro": "off"}}, "NIC-GRO-OFF", True, "GRO off"),
    "tso": ({"speed": 10000, "offloads": {"tso": "off"}}, "NIC-TSO-OFF", True, "TSO off"),
    "irq": ({"speed": 10000, "irq_cpus": [0]}, "NIC-IRQ-ONE-CPU", False, "every queue interrupt on CPU 0"),
}
#: faults that need a 10G NIC, and those a 1G one: a host draws from one family
_TEN_G = ("ring", "gro", "tso", "irq")
_ONE_G = ("speed", "duplex", "crc")


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = {**out[k], **v} if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def draw_nic_faults(seed: int, hosts: list[dict[str, Any]], storage: list[dict[str, Any]],
                    expect: list[dict[str, Any]], forced: bool = False) -> list[str]:
    """Give one or two hosts an emulated NIC with its faults (and a storage host the powersave governor);
    returns the kinds injected (``nic``) and adds the findings they must produce to ``expect``."""
    rng = random.Random(f"nic-{seed}")
    if not forced and rng.random() >= NIC_FAULT_SHARE:
        return []
    for h in rng.sample(hosts, rng.randint(1, min(2, len(hosts)))):
        family = _TEN_G if rng.random() < 0.5 else _ONE_G
        spec: dict[str, Any] = {}
        for fault in rng.sample(family, rng.randint(1, 2)):
            keys, rule, fixable, words = NIC_FAULTS[fault]
            spec = _merge(spec, keys)
            entry = {"rule": rule, "host": h["name"], "subject": "eth0", "fault": words}
            if not fixable:
                entry.update(fixable=False, by_hand=True)
            expect.append(entry)
        h["nic"] = spec
    if storage and rng.random() < 0.5:
        h = rng.choice(storage)
        h["cpu"] = {"governor": "powersave"}
        expect.append({"rule": "CPU-GOVERNOR", "host": h["name"], "fault": "the powersave governor"})
    return ["nic"]
