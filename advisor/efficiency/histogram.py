"""A sparse histogram: efficiency in linear steps, CPU and wall per event on a log scale."""

from __future__ import annotations

import math
from typing import Any


class Histogram:
    """A sparse histogram: ``linear`` in steps of ``step``, or ``log`` (relative steps)."""

    __slots__ = ("bins", "count", "total", "log", "step")

    def __init__(self, log: bool = False, step: float = 0.005):
        self.bins: dict[int, int] = {}
        self.count = 0
        self.total = 0.0
        self.log = log
        self.step = step

    def add(self, x: float) -> None:
        self.count += 1
        self.total += x
        if self.log:
            k = -100000 if x <= 0 else int(math.floor(math.log(x) / 0.005))
        else:
            k = int(x / self.step + 0.5)
        self.bins[k] = self.bins.get(k, 0) + 1

    def merge_bins(self, bins: dict[int, int], count: int, total: float) -> None:
        b = self.bins
        if b:
            for k, v in bins.items():
                b[k] = b.get(k, 0) + v
        else:
            b.update(bins)
        self.count += count
        self.total += total

    def merge(self, other: "Histogram") -> None:
        self.merge_bins(other.bins, other.count, other.total)

    def _value(self, k: int) -> float:
        if self.log:
            return 0.0 if k == -100000 else math.exp((k + 0.5) * 0.005)
        return k * self.step

    def quantile(self, q: float) -> float | None:
        return self.quantiles(q)[0]

    def quantiles(self, *qs: float) -> list[float | None]:
        """``quantile(q)`` for each q, the bins sorted once."""
        if not self.count:
            return [None for _ in qs]
        keys = sorted(self.bins)
        out: list[float | None] = []
        for q in qs:
            target = q * (self.count - 1)
            seen = 0
            for k in keys:
                seen += self.bins[k]
                if seen > target:
                    out.append(self._value(k))
                    break
            else:
                out.append(self._value(keys[-1]))
        return out

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def stats(self, digits: int = 4) -> dict[str, Any]:
        r = (lambda v: None if v is None else round(v, digits))
        median, p10, p90 = self.quantiles(0.5, 0.1, 0.9)
        return {
            "count": self.count,
            "mean": r(self.mean),
            "median": r(median),
            "p10": r(p10),
            "p90": r(p90),
        }
