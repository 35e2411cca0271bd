"""A NIC's error and drop counters over a sample window: which counters are which, and their rises
(the ``nic.ports`` probe, probes/nic.py; the mesh's per-test readings, advisor/mesh/sampling.py).

Two sources name them: the kernel's ``/sys/class/net/IF/statistics/*`` (Documentation/ABI/testing/
sysfs-class-net-statistics: the same names on every driver) and the driver's ``ethtool -S`` (names of
its own: igb/e1000e ``rx_no_buffer_count``, ixgbe ``rx_missed_errors``, mlx5 ``rx_out_of_buffer``,
be2net ``rx_drops_no_pbuf``). A counter of both sources with one name is counted once.

* **errors**: frames damaged on the wire or a transmitter that failed: CRC/FCS, alignment, symbol,
  frame and length errors, jabbers, carrier errors, transmit timeouts and aborts. Rising, they mean a
  cable, an optic, a port or the NIC itself.
* **drops**: frames the NIC received whole but had no room for: missed, no-buffer, FIFO and overrun
  counters. Rising, they mean the receive ring is too short or the CPU that serves it too slow.

``rx_errors``/``tx_errors`` sum the kernel's specific error counters: they count only when no
specific counter rose. ``rx_dropped``/``tx_dropped`` (the stack's drops: unknown protocols, a full
backlog, a veth whose peer's MTU is smaller) are kept as evidence, never as a NIC fault. Per-queue
counters (``rxq0: ...``, ``rx_queue_3_...``) repeat the totals and are left out, as are flow-director
"misses" and pause frames (flow control, not loss).
"""

from __future__ import annotations

import re

from pydantic import BaseModel

ERROR_COUNTER = re.compile(
    r"crc|fcs|align|symbol_err|frame_err|jabber|undersize|oversize|length_err|carrier_err|tx_timeout|"
    r"tx_abort|tx_fifo_err|late_col|excess_col|heartbeat|window_err|in_range_err|out_range_err")
DROP_COUNTER = re.compile(
    r"rx_missed|no_buffer|no_pbuf|rx_fifo_err|rx_over_err|out_of_buffer|rx_discards_phy|fifo_overflow|"
    r"rx_drops_no")
AGGREGATE_ERRORS = frozenset({"rx_errors", "tx_errors"})
STACK_DROPS = frozenset({"rx_dropped", "tx_dropped"})
_PER_QUEUE = re.compile(r"^(rx|tx)?q(ueue)?_?\d+[:_]|queue_\d+|^(rx|tx)\d+_|^ch\d+_|fdir|pause|xon|xoff")


def counter_class(name: str) -> str | None:
    """``errors``, ``drops``, ``aggregate``, ``stack`` or None (not a fault counter)."""
    n = name.lower()
    if _PER_QUEUE.search(n):
        return None
    if n in AGGREGATE_ERRORS:
        return "aggregate"
    if n in STACK_DROPS:
        return "stack"
    if DROP_COUNTER.search(n):
        return "drops"
    if ERROR_COUNTER.search(n):
        return "errors"
    return None


class CounterRise(BaseModel):
    #: how much it rose over the window
    delta: int
    #: per second
    per_s: float
    #: errors, drops, aggregate or stack (see the module doc)
    kind: str


def counter_rises(before: dict[str, int], after: dict[str, int], seconds: float | None) -> dict[str, CounterRise]:
    """Every fault counter of both readings with its rise (0 when it fell: the device was reset)."""
    out: dict[str, CounterRise] = {}
    for name, new in after.items():
        kind = counter_class(name)
        old = before.get(name)
        if kind is None or old is None:
            continue
        delta = max(0, new - old)
        out[name] = CounterRise(delta=delta, per_s=round(delta / seconds, 3) if seconds else 0.0, kind=kind)
    return out


def fault_rates(rises: dict[str, CounterRise], seconds: float | None) -> tuple[float | None, float | None]:
    """(errors per second, drops per second) over the window; None without a window."""
    if not seconds:
        return None, None
    errors = sum(r.delta for r in rises.values() if r.kind == "errors")
    aggregate = sum(r.delta for r in rises.values() if r.kind == "aggregate")
    drops = sum(r.delta for r in rises.values() if r.kind == "drops")
    return round(max(errors, aggregate) / seconds, 3), round(drops / seconds, 3)


def rising_lines(rises: dict[str, CounterRise], kinds: tuple[str, ...] = ("errors", "drops", "aggregate")) -> list[str]:
    """``rx_crc_errors +3,112 (40/s)`` for each counter of ``kinds`` that rose, the largest first."""
    up = sorted(((n, r) for n, r in rises.items() if r.delta > 0 and r.kind in kinds), key=lambda t: (-t[1].delta, t[0]))
    return [f"{n} +{r.delta:,} ({r.per_s:g}/s)" for n, r in up]
