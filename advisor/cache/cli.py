"""``storadvise cache``: size and place a cache by replaying the site's own transfer logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from advisor.util.errors import ERROR_PREFIX, StoradviseError, UsageError
from advisor.util.help_format import HELP_FORMAT
from advisor.util.units import parse_size_bytes

app = typer.Typer(
    **HELP_FORMAT,
    help="Cache sizing from transfer logs: hit and transfer efficiency vs capacity, policy and areas.\n\n"
    "Example: storadvise cache simulate billing-2024.05.* --capacity 1T,10T --policy lru,arc --curve --json",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _split(values: list[str]) -> list[str]:
    return [v.strip() for s in values for v in s.split(",") if v.strip()]


def _capacities(values: list[str]) -> list[int]:
    out = []
    for v in _split(values):
        try:
            n = parse_size_bytes(v)
        except ValueError:
            raise UsageError(f"--capacity {v!r}: give a size such as 500G, 1T or 10T") from None
        if n <= 0:
            raise UsageError(f"--capacity {v!r}: must be positive")
        out.append(n)
    if not out:
        raise UsageError("--capacity: give at least one size, e.g. 1T,10T")
    return sorted(set(out))


def _human(n: float) -> str:
    """A size as computed, in binary units named as such: ``17.37 GiB`` (2**30 bytes), never ``GB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.4g} {unit}"
        n /= 1024
    return str(n)


@app.command("simulate")
def simulate_cmd(
    logs: list[str] = typer.Argument(..., help="Transfer logs, replayed in the order given."),
    capacity: list[str] = typer.Option(..., "--capacity", "-c", help="Capacities per cache area, e.g. 1T,10T (binary units)."),
    policy: list[str] = typer.Option(["lru"], "--policy", help="lru, lfu, arc, xcache (comma-separated)."),
    areas: str = typer.Option("shared", "--areas", help="shared (one cache) or per-server (one area per file server)."),
    curve: bool = typer.Option(False, "--curve", help="Whole LRU curve over all capacities in one pass, and its knee."),
    sample: float = typer.Option(1.0, "--sample", help="SHARDS spatial sampling rate for the curve (0 < R <= 1)."),
    fmt: str = typer.Option("auto", "--format", help="auto, csv, dcache-billing, wlcg-json, xcache-gstream."),
    year: Optional[int] = typer.Option(None, "--year", help="Year of dCache billing files whose name has none."),
    file_type: list[str] = typer.Option([], "--type", help="File type NAME=REGEX on the path (repeatable; replaces the defaults)."),
    csv_time: str = typer.Option("timestamp", "--csv-time", help="CSV column: epoch seconds or ISO 8601 time."),
    csv_file: str = typer.Option("file", "--csv-file", help="CSV column: file name / path."),
    csv_size: str = typer.Option("size", "--csv-size", help="CSV column: file size in bytes."),
    csv_server: str = typer.Option("server", "--csv-server", help="CSV column: file server (optional)."),
    csv_bytes: Optional[str] = typer.Option(None, "--csv-bytes", help="CSV column: bytes read (default: the file size)."),
    csv_op: Optional[str] = typer.Option(None, "--csv-op", help="CSV column: operation; rows not 'read' are skipped."),
    csv_delimiter: str = typer.Option(",", "--csv-delimiter", help="CSV field delimiter."),
    high: float = typer.Option(0.95, "--high-watermark", help="xcache: purge above this fraction of the disk."),
    low: float = typer.Option(0.90, "--low-watermark", help="xcache: purge down to this fraction."),
    purge_interval: float = typer.Option(300.0, "--purge-interval", help="xcache: seconds between purge checks."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the JSON result to FILE, and PNG/SVG plots beside it."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Replay logs through simulated caches: hit and transfer efficiency per configuration and file type.

    Example: storadvise cache simulate transfers.csv --capacity 1T,10T,100T --policy lru,lfu,arc,xcache
    --areas per-server --curve --output sim.json
    """
    from advisor.report.progress import InputFilesProgress

    try:
        with InputFilesProgress(logs, "replaying transfer logs", enabled=not json_out):
            result = _run(logs, capacity, policy, areas, curve, sample, fmt, year, file_type,
                          (csv_time, csv_file, csv_size, csv_server, csv_bytes, csv_op, csv_delimiter),
                          high, low, purge_interval, output)
    except StoradviseError as e:
        typer.echo(f"{ERROR_PREFIX}{e}", err=True)
        raise typer.Exit(e.exit_code) from None
    if json_out:
        typer.echo(json.dumps(result, separators=(",", ":")))
        return
    _print(result)


def _run(logs, capacity, policy, areas, curve, sample, fmt, year, file_type, csvc, high, low, purge_interval, output):
    import os

    from advisor.util.atomic_files import check_output_paths
    from advisor.cache import jit

    check_output_paths({"--output": output})
    # a small input replays interpreted: no seconds of compiling first (advisor/cache/jit.py)
    jit.choose(sum(os.path.getsize(p) for p in logs if os.path.isfile(p)))
    from advisor.cache.csv_log import CsvColumns
    from advisor.cache.inputs import FORMATS
    from advisor.cache.policies import POLICIES
    from advisor.cache.simulate import AREAS, SimulateOptions, simulate
    from advisor.cache.trace import DEFAULT_TYPES, FileTypes, Trace

    caps = _capacities(capacity)
    pols = _split(policy)
    bad = [p for p in pols if p not in POLICIES]
    if bad or not pols:
        raise UsageError(f"--policy {','.join(bad) or '(none)'}: use lru, lfu, arc or xcache")
    if areas not in AREAS:
        raise UsageError(f"--areas {areas!r}: use shared or per-server")
    if not (0 < sample <= 1):
        raise UsageError(f"--sample {sample}: a rate in (0, 1]")
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")
    if not (0 < low < high <= 1):
        raise UsageError(f"--low-watermark {low} / --high-watermark {high}: need 0 < low < high <= 1")
    if not (purge_interval > 0):
        raise UsageError(f"--purge-interval {purge_interval}: must be positive")
    if len(csvc[6]) != 1:
        raise UsageError(f"--csv-delimiter {csvc[6]!r}: one character")
    types = []
    for t in file_type:
        name, eq, rx = t.partition("=")
        if not eq or not name.strip() or not rx:
            raise UsageError(f"--type {t!r}: give NAME=REGEX, e.g. AOD=/AOD(SIM)?/")
        types.append((name.strip(), rx))
    trace = Trace(FileTypes(types or DEFAULT_TYPES))
    cols = CsvColumns(time=csvc[0], file=csvc[1], size=csvc[2], server=csvc[3] or None, nbytes=csvc[4],
                      op=csvc[5], delimiter=csvc[6])
    opts = SimulateOptions(capacities=caps, policies=list(dict.fromkeys(pols)), areas=areas, curve=curve,
                           sample=sample, high=high, low=low, purge_interval=purge_interval)
    result = simulate([(p, fmt) for p in logs], opts, trace, cols, year)
    if not result["requests"]:
        bad_lines = sum(i["bad_lines"] for i in result["inputs"])
        raise StoradviseError(f"{', '.join(logs)}: no read requests found ({bad_lines} bad lines)")
    if output is not None:
        from advisor.util.atomic_files import write_atomic
        from advisor.cache.plots import plot_efficiency

        try:
            result["plots"] = plot_efficiency(result, output.with_suffix(""))
            write_atomic(output, json.dumps(result, indent=1) + "\n")
        except OSError as e:
            raise StoradviseError(f"{output}: cannot write: {e.strerror}") from None
        result["output"] = str(output)
    return result


def _print(r: dict) -> None:
    typer.echo(f"{r['requests']:,} reads of {r['distinct_files']:,} files on {r['servers']} server(s), "
               f"areas: {r['areas']}")
    for i in r["inputs"]:
        extra = f", {i['bad_lines']} bad line(s)" if i["bad_lines"] else ""
        if i["first_bad_lines"]:
            extra += " (first: line " + ", ".join(str(b["line"]) + ": " + b["reason"] for b in i["first_bad_lines"][:3]) + ")"
        sk = ", ".join(f"{v} {k}" for k, v in i["skipped"].items())
        typer.echo(f"  {i['path']}: {i['requests']:,} reads{extra}" + (f"; skipped {sk}" if sk else ""))
    typer.echo(f"  {'policy':8} {'capacity':>11} {'hit eff':>8} {'transfer eff':>13}")
    for c in r["configurations"]:
        typer.echo(f"  {c['policy']:8} {_human(c['capacity_bytes']):>11} {c['hit_efficiency']:8.3f} "
                   f"{c['transfer_efficiency']:13.3f}")
        for name, t in c["by_type"].items():
            typer.echo(f"    {name:>14} {t['accesses']:>10,} reads  hit {t['hit_efficiency']:.3f}  "
                       f"transfer {t['transfer_efficiency']:.3f}")
    cv = r.get("curve")
    if cv:
        typer.echo(f"  LRU curve in one pass over {len(cv['capacities_bytes'])} capacities"
                   + (f" (sample {cv['sample_rate']:g})" if cv["sample_rate"] < 1 else ""))
        if "knee" in cv:
            k = cv["knee"]
            typer.echo(f"  recommended capacity (knee): {_human(k['capacity_bytes'])} per area -> "
                       f"hit {k['hit_efficiency']:.3f}, transfer {k['transfer_efficiency']:.3f}")
    if r.get("output"):
        typer.echo(f"  written: {r['output']} " + " ".join(r.get("plots", [])))
