"""Host lists as ranges, the way pdsh, ClusterShell and Slurm write them: ``wn[0001-0950,0952]``.

A name's last run of digits is its index; names that differ only there fold into one bracket.
Zero padding is kept (``wn[0009-0010]`` is wn0009, wn0010); ``wn[9-10]`` is wn9, wn10. Names
without digits, and names whose digits cannot fold, are listed as they are. Folding never loses
or invents a host: ``expand_hosts(fold_hosts(names))`` gives the names back, sorted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_LAST_DIGITS = re.compile(r"^(.*?)(\d+)(\D*)$")
_BRACKET = re.compile(r"^(.*?)\[([0-9,\-]+)\](\D*)$")


def _split(name: str) -> tuple[str, str, str] | None:
    m = _LAST_DIGITS.match(name)
    return (m.group(1), m.group(2), m.group(3)) if m else None


def fold_hosts(names: Iterable[str]) -> list[str]:
    """``["wn0001", "wn0002", "wn0003", "gpfs01"]`` -> ``["gpfs01", "wn[0001-0003]"]`` (sorted, each
    name once)."""
    plain: set[str] = set()
    #: (prefix, suffix, width) -> numbers; width 0 = not zero-padded
    groups: dict[tuple[str, str, int], set[int]] = {}
    for name in set(names):
        parts = _split(name)
        if parts is None or "[" in name or "]" in name:
            plain.add(name)
            continue
        prefix, digits, suffix = parts
        width = len(digits) if digits.startswith("0") and len(digits) > 1 else 0
        groups.setdefault((prefix, suffix, width), set()).add(int(digits))
    # unpadded numbers as long as a padded group's width join it (wn0999 and wn1000: wn[0999-1000])
    for (prefix, suffix, width), numbers in list(groups.items()):
        if width:
            natural = groups.get((prefix, suffix, 0))
            if natural:
                fit = {n for n in natural if len(str(n)) == width}
                numbers |= fit
                natural -= fit
    out: list[tuple[str, str]] = [(n, n) for n in plain]
    for (prefix, suffix, width), numbers in groups.items():
        if not numbers:
            continue
        ordered = sorted(numbers)
        if len(ordered) == 1:
            name = f"{prefix}{ordered[0]:0{width}d}{suffix}" if width else f"{prefix}{ordered[0]}{suffix}"
            out.append((name, name))
            continue
        runs: list[tuple[int, int]] = []
        start = prev = ordered[0]
        for n in ordered[1:]:
            if n != prev + 1:
                runs.append((start, prev))
                start = n
            prev = n
        runs.append((start, prev))

        def fmt(n: int) -> str:
            return f"{n:0{width}d}" if width else str(n)

        inner = ",".join(fmt(a) if a == b else f"{fmt(a)}-{fmt(b)}" for a, b in runs)
        out.append((f"{prefix}{ordered[0]:0{width}d}", f"{prefix}[{inner}]{suffix}"))
    return [text for _key, text in sorted(out)]


def expand_hosts(folded: Iterable[str]) -> list[str]:
    """The names a folded list stands for (``wn[01-03]`` -> wn01, wn02, wn03), sorted."""
    names: list[str] = []
    for item in folded:
        m = _BRACKET.match(item)
        if not m:
            names.append(item)
            continue
        prefix, inner, suffix = m.groups()
        for part in inner.split(","):
            lo, _, hi = part.partition("-")
            hi = hi or lo
            width = len(lo) if lo.startswith("0") and len(lo) > 1 else 0
            names.extend(f"{prefix}{n:0{width}d}{suffix}" for n in range(int(lo), int(hi) + 1))
    return sorted(names)


def hosts_text(names: Iterable[str], limit: int = 0) -> str:
    """Folded names joined by ", "; with ``limit``, at most that many items and a count of the rest."""
    items = fold_hosts(names)
    if limit and len(items) > limit:
        return ", ".join(items[:limit]) + f", … {len(items) - limit} more"
    return ", ".join(items)
