"""Reading JSON a host printed, with a bound on how deeply it may nest.

``json.loads`` recurses once per nesting level: a hostile or broken tool that prints
``[[[[...`` a hundred thousand deep raises ``RecursionError`` (and our own walkers over the
document would recurse just as deep). Real tool output (``nft -j``, ``ip -j``, ``iperf3 -J``)
nests fewer than 20 levels; anything past ``MAX_JSON_DEPTH`` is refused as a parse error.
"""

from __future__ import annotations

import json
import re
from typing import Any

from probes.probe import ProbeParseError

MAX_JSON_DEPTH = 64
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


def json_depth(text: str) -> int:
    """The deepest nesting of arrays/objects in ``text`` (strings skipped; text need not be valid)."""
    depth = deepest = 0
    for m in _BRACKET.finditer(_STRING.sub("", text)):
        if m.group() in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        else:
            depth -= 1
    return deepest


def load_host_json(text: str, what: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` for tool output: ``ProbeParseError`` (naming ``what``) on anything but JSON
    nested at most ``max_depth`` deep."""
    depth = json_depth(text)
    if depth > max_depth:
        raise ProbeParseError(f"{what}: JSON nested {depth} deep (at most {max_depth})")
    try:
        return json.loads(text)
    except RecursionError:
        raise ProbeParseError(f"{what}: JSON nested too deep") from None
    except ValueError as e:
        raise ProbeParseError(f"{what}: not JSON ({e.__class__.__name__} at char {getattr(e, 'pos', '?')})") from None
