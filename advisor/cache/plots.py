"""Efficiency vs capacity, per policy: PNG and SVG beside the JSON (matplotlib, Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot_efficiency(result: dict[str, Any], stem: Path) -> list[str]:
    """Write ``<stem>.png`` and ``<stem>.svg``: hit and transfer efficiency vs capacity."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharex=True)
    policies: dict[str, list[dict]] = {}
    for c in result["configurations"]:
        policies.setdefault(c["policy"], []).append(c)
    curve = result.get("curve")
    for ax, metric, title in ((axes[0], "hit_efficiency", "Hit efficiency (hits / accesses)"),
                              (axes[1], "transfer_efficiency", "Transfer efficiency (bytes from cache / bytes read)")):
        if curve:
            label = "LRU, one pass" + (f" (sample {curve['sample_rate']:g})" if curve["sample_rate"] < 1 else "")
            ax.plot(curve["capacities_bytes"], curve[metric], "-", color="0.35", lw=1.5, label=label)
            if "knee" in curve:
                k = curve["knee"]
                ax.axvline(k["capacity_bytes"], color="0.6", ls=":", lw=1)
        for pol, rows in sorted(policies.items()):
            rows = sorted(rows, key=lambda r: r["capacity_bytes"])
            ax.plot([r["capacity_bytes"] for r in rows], [r[metric] for r in rows], "o-", ms=4,
                    label=pol.upper() if pol != "xcache" else "XCache purge")
        ax.set_xscale("log")
        ax.set_ylim(0, 1)
        ax.set_xlabel(f"capacity per cache area, bytes ({result['areas']})")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8, loc="upper left")
    fig.suptitle(f"{result['requests']:,} reads of {result['distinct_files']:,} files", fontsize=10)
    fig.tight_layout()
    out = []
    for ext in ("png", "svg"):
        p = stem.with_suffix("." + ext)
        fig.savefig(p, dpi=110)
        out.append(str(p))
    plt.close(fig)
    return out
