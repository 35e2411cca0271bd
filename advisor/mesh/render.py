"""Console views of the mesh: the plan (rounds) and the src x dst grid coloured by ratio."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from advisor.mesh.results import GREEN_RATIO, YELLOW_RATIO, path_ratio, summary
from advisor.util.units import format_bps


def _mbps(bps: float | None) -> str:
    if bps is None:
        return "-"
    if bps >= 10**10:
        return f"{bps / 1e9:.1f}G"
    return f"{bps / 1e6:.0f}"


def cell(p: dict[str, Any] | None) -> Text:
    """One grid cell: Mb/s, coloured green >= 0.9, yellow >= 0.5, red below; failed = grey ERR."""
    if p is None:
        return Text("·", style="dim")
    if p.get("status") != "ok":
        return Text("ERR", style="grey50")
    r = path_ratio(p)
    txt = _mbps(p.get("measured_bps"))
    if r is None:
        return Text(txt)
    style = "green" if r >= GREEN_RATIO else "yellow" if r >= YELLOW_RATIO else "bold red"
    return Text(txt, style=style)


def mesh_grid(mesh: dict[str, Any]) -> Table:
    paths = mesh.get("paths") or []
    srcs = sorted({p["src"] for p in paths})
    dsts = sorted({p["dst"] for p in paths})
    by = {(p["src"], p["dst"]): p for p in paths}
    s = summary(mesh)
    title = (f"Throughput mesh (Mb/s; rows send, columns receive): {s['paths']} paths in "
             f"{mesh.get('rounds', 0)} rounds, {mesh.get('wall_seconds', 0):.1f} s")
    t = Table(title=title, caption="green >= 0.9, yellow >= 0.5, red < 0.5 of expected; ERR = test failed",
              show_lines=False)
    t.add_column("src \\ dst", style="bold")
    for d in dsts:
        t.add_column(d, justify="right")
    for s_ in srcs:
        t.add_row(s_, *[cell(by.get((s_, d))) for d in dsts])
    return t


def limited_by_counts(paths: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """(limited_by, paths) over the measured paths, most frequent first (paths of older scans
    have no limited_by: none)."""
    counts: dict[str, int] = {}
    for p in paths:
        if p.get("limited_by"):
            counts[p["limited_by"]] = counts.get(p["limited_by"], 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def failures_table(mesh: dict[str, Any]) -> Table | None:
    failed = [p for p in mesh.get("paths") or [] if p.get("status") != "ok"]
    if not failed:
        return None
    t = Table(title="Failed tests")
    t.add_column("path")
    t.add_column("error")
    for p in failed:
        t.add_row(f"{p['src']} -> {p['dst']}", str(p.get("error")))
    return t


def slow_table(mesh: dict[str, Any], min_ratio: float = 0.8) -> Table | None:
    rows = []
    for p in mesh.get("paths") or []:
        r = path_ratio(p)
        if r is not None and r < min_ratio:
            rows.append((r, p))
    if not rows:
        return None
    t = Table(title=f"Paths below {min_ratio:g} of expected")
    for c in ("path", "measured", "expected", "ratio", "retransmits", "rtt ms", "limited by"):
        t.add_column(c, justify="left" if c in ("path", "limited by") else "right")
    for r, p in sorted(rows, key=lambda x: x[0]):
        t.add_row(
            f"{p['src']} -> {p['dst']}", format_bps(p.get("measured_bps")),
            format_bps(p.get("expected_bps")) if p.get("expected_bps") else "(median)",
            f"{r:.2f}", str(p.get("retransmits") if p.get("retransmits") is not None else "-"),
            f"{p['rtt_us'] / 1000:.2f}" if p.get("rtt_us") is not None else "-",
            _limited(p),
        )
    return t


def _limited(p: dict[str, Any]) -> Text:
    """``limited_by`` (dim when inconclusive), with its evidence."""
    lb = p.get("limited_by")
    if not lb:
        return Text("-")
    style = "dim" if lb in ("cpu", "contended", "unknown") else "bold"
    out = Text(lb, style=style)
    if p.get("limited_evidence"):
        out.append(f": {p['limited_evidence']}", style="dim")
    return out


def mesh_view(mesh: dict[str, Any], min_ratio: float = 0.8, slow_paths: bool = True) -> Group:
    """The grid, what limited the paths, the slow paths (``slow_paths``: the scan's console leaves
    them to its causes unless --verbose) and the failed tests."""
    parts: list[Any] = [mesh_grid(mesh)]
    limits = limited_by_counts(mesh.get("paths") or [])
    if limits:
        parts.append(Text("limited by: " + ", ".join(f"{k} {n}" for k, n in limits)))
    for extra in (slow_table(mesh, min_ratio) if slow_paths else None, failures_table(mesh)):
        if extra is not None:
            parts.append(extra)
    return Group(*parts)


#: rounds the plan table shows (a 2,000-worker mesh has 2,000 rounds of 1,000 tests: --json has them all)
PLAN_ROUNDS_SHOWN = 20
#: tests shown per round of the plan table
PLAN_TESTS_SHOWN = 40


def plan_table(rounds: list[list[tuple[str, str]]], methods: list[str], bidir_note: str) -> Table:
    t = Table(title=f"Mesh plan: {sum(len(r) for r in rounds)} paths in {len(rounds)} rounds "
                    f"({', '.join(sorted(set(methods))) or 'empty'}); {bidir_note}",
              caption=f"first {PLAN_ROUNDS_SHOWN} of {len(rounds)} rounds shown; --json lists every round"
              if len(rounds) > PLAN_ROUNDS_SHOWN else None)
    t.add_column("round", justify="right")
    t.add_column("tests (at the same time)")
    for i, rnd in enumerate(rounds[:PLAN_ROUNDS_SHOWN], start=1):
        seen: dict[frozenset, list[tuple[str, str]]] = {}
        for d in rnd:
            seen.setdefault(frozenset(d), []).append(d)
        slots = []
        for dirs in seen.values():
            a, b = dirs[0]
            slots.append(f"{a} <-> {b}" if len(dirs) == 2 else f"{a} -> {b}")
        more = f" ... and {len(slots) - PLAN_TESTS_SHOWN} more" if len(slots) > PLAN_TESTS_SHOWN else ""
        t.add_row(str(i), ", ".join(slots[:PLAN_TESTS_SHOWN]) + more)
    return t


def render_grid(mesh: dict[str, Any] | None, console, min_ratio: float = 0.8, slow_paths: bool = True) -> None:
    """Print the grid (and the slow / failed tables) to a rich console."""
    if mesh:
        console.print(mesh_view(mesh, min_ratio, slow_paths))


class RoundProgress:
    """A rich progress bar per round, fed by run_mesh's ``progress`` callback."""

    def __init__(self, console, enabled: bool = True):
        from rich.progress import Progress

        from advisor.util.progress_bars import progress_columns

        self.enabled = enabled
        self.progress = Progress(*progress_columns("dim"), console=console, transient=False, disable=not enabled)
        self.tasks: dict[int, Any] = {}
        #: the whole mesh, one tick per round (rounds take the same time: the time-left estimate holds)
        self.overall: Any = None

    def __enter__(self) -> "RoundProgress":
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(*exc)

    def __call__(self, ev) -> None:
        if ev.event == "round-start":
            if self.overall is None:
                self.overall = self.progress.add_task("mesh", total=ev.rounds, last="")
            self.tasks[ev.round] = self.progress.add_task(
                f"mesh round {ev.round}/{ev.rounds}", total=ev.tests_in_round, last="")
        elif ev.event == "round-done" and self.overall is not None:
            self.progress.update(self.overall, completed=ev.round, last=f"round {ev.round} of {ev.rounds} done")
        elif ev.event == "retest-start":
            self.tasks[ev.round] = self.progress.add_task(
                "slow paths again, alone", total=ev.tests_in_round, last="")
        elif ev.event == "test-done" and ev.round in self.tasks:
            self.progress.update(self.tasks[ev.round], completed=ev.tests_done, last=ev.message)
