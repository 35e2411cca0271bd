# -*- coding: utf-8 -*-
# storadvise: what `ethtool -g` and `ethtool -k` print, read into plain values.
# Licensed as storadvise itself.
"""The ring sizes of ``ethtool -g IF`` and the features of ``ethtool -k IF``, as plain values: the one
reading of those outputs, for the nic_tuning role's module (which sets them) and the ``nic.ports`` probe
(probes/ethtool_format.py, which reports them). Pure: text in, values out; ``ValueError`` for text that
is not the command's output.

``ethtool -g``: ``Ring parameters for IF:``, ``Pre-set maximums:`` then ``Current hardware settings:``,
each with ``RX:``, ``RX Mini:``, ``RX Jumbo:``, ``TX:`` (``n/a`` where the driver has none); ethtool 6
adds ``RX Buf Len:``, ``CQE Size:``, ``TX Push:``, ``TCP data split:``. ``ethtool -k``: ``Features for
IF:`` (``Offload parameters for IF:`` before ethtool 3.x), then ``name: on|off`` and ``[fixed]``
(the driver does not let it change), ``[requested on]`` or ``[not requested]``.
"""

from __future__ import annotations

import re

#: the short names ``ethtool -K`` takes for the offloads storadvise reads and sets
FEATURE_ALIASES = {"generic-receive-offload": "gro", "tcp-segmentation-offload": "tso",
                   "generic-segmentation-offload": "gso", "large-receive-offload": "lro"}
_FEATURE = re.compile(r"^([a-z0-9][a-z0-9_-]*):\s+(on|off)\b(.*)$")
_NUMBER = re.compile(r"\d{1,10}")


def _first(text):
    lines = (text or "").strip().splitlines()
    return lines[0][:80] if lines else ""


def ring_values(text):
    """{rx, rx_max, tx, tx_max}: ints, or None where the driver has none."""
    if "Ring parameters for" not in (text or ""):
        raise ValueError("ethtool -g: no 'Ring parameters for IF:' line: %r" % _first(text))
    out = {"rx": None, "rx_max": None, "tx": None, "tx_max": None}
    part = None
    for raw in text.splitlines():
        line = raw.strip()
        low = line.lower()
        if low.startswith("pre-set maximums"):
            part = "max"
        elif low.startswith("current hardware settings"):
            part = "now"
        elif part and (low.startswith("rx:") or low.startswith("tx:")):
            value = line.split(":", 1)[1].strip()
            key = low[:2] if part == "now" else low[:2] + "_max"
            if value.lower() in ("", "n/a"):
                out[key] = None
            elif _NUMBER.fullmatch(value):
                out[key] = int(value)
            else:
                raise ValueError("ethtool -g %s: not a number: %r" % (key, value[:20]))
    if part is None:
        raise ValueError("ethtool -g: no 'Pre-set maximums' or 'Current hardware settings' section")
    return out


def feature_states(text):
    """{long feature name: (on, fixed)}."""
    if "Features for" not in (text or "") and "Offload parameters for" not in (text or ""):
        raise ValueError("ethtool -k: no 'Features for IF:' line: %r" % _first(text))
    out = {}
    for raw in text.splitlines():
        m = _FEATURE.match(raw.strip())
        if m:
            out[m.group(1)] = (m.group(2) == "on", "[fixed]" in m.group(3))
    return out


def offload_states(text):
    """{gro|tso|gso|lro: (on, fixed)} of the features ``ethtool -k`` printed."""
    features = feature_states(text)
    return {short: features[long] for long, short in FEATURE_ALIASES.items() if long in features}
