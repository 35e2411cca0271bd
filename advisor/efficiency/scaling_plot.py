"""The client-scaling plot: runtime and data rate per client against clients, one line per
protocol, each protocol's knee marked (matplotlib, Agg backend; PNG and/or SVG)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SUFFIXES = (".png", ".svg")


def plot_scaling(result: dict[str, Any], path: Path) -> list[str]:
    """Write the plot to ``path`` (.png or .svg), or to both ``path``.png and .svg without a suffix."""
    targets = [path] if path.suffix.lower() in SUFFIXES else [path.with_suffix(s) for s in SUFFIXES]
    points = [p for p in result.get("scaling") or [] if p.get("runtime_per_client_s") is not None]
    knees = {k["protocol"]: k["knee"] for k in result.get("protocols") or []}
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    protocols: list[str] = []
    for p in points:
        if p.get("protocol") not in protocols:
            protocols.append(p.get("protocol"))
    for i, proto in enumerate(protocols):
        rows = sorted((p for p in points if p.get("protocol") == proto), key=lambda p: p["clients"])
        xs = [p["clients"] for p in rows]
        color = f"C{i}"
        nodes = sorted({p.get("nodes") or 1 for p in rows})
        label = f"{proto} ({'/'.join(map(str, nodes))} node{'s' if nodes != [1] else ''})"
        for ax, key, scale in ((axes[0], "runtime_per_client_s", 1.0), (axes[1], "rate_per_client_bps", 1e-6),
                               (axes[2], "efficiency", 1.0)):
            ax.plot(xs, [p[key] * scale if p.get(key) is not None else None for p in rows], "o-", ms=4,
                    color=color, label=label)
            knee = knees.get(proto) or {}
            if knee.get("status") == "found":
                ax.axvline(knee["clients"], color=color, ls=":", lw=1)
    for ax, title in ((axes[0], "runtime per client, s"), (axes[1], "data rate per client, Mb/s"),
                      (axes[2], "CPU efficiency (CPU / wall)")):
        ax.set_xscale("log")
        ax.set_xlabel("concurrent clients")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_ylim(bottom=0)
    axes[2].set_ylim(0, 1.05)
    axes[0].legend(fontsize=8, loc="upper left")
    fig.suptitle(f"client scaling (dotted: knee; {(result.get('source') or {}).get('label', '')})", fontsize=10)
    fig.tight_layout()
    out = []
    for t in targets:
        fig.savefig(t, dpi=110)
        out.append(str(t))
    plt.close(fig)
    return out
