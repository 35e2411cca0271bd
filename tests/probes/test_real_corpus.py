"""Every probe over the corpus of real outputs in tests/fixtures/real/<probe>/.

Each input file ``NAME`` has ``NAME.expected.json``: ``{"error": "..."}`` (the probe must refuse it with a
ProbeParseError containing that text) or ``{"count": {path: n}, "facts": {path: value}, "rounded": {path: value}}`` (fact paths as the
rules write them, list items by index; "rounded" compares to the given value's decimals). ``SOURCES.md`` names each file's public source on a line
``- `NAME`: <source> ...`` where <source> is ``github:owner/name`` or a URL; a probe with fewer than three
inputs or fewer than two independent sources says why on a line starting ``Not found publicly:``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from advisor.rules.fact_paths import MISSING, get_path
from probes import all_probes, get_probe
from probes.probe import ProbeParseError

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
_SOURCE_LINE = re.compile(r"^- `([^`]+)`: (\S+)")


def _inputs(probe_dir: Path) -> list[Path]:
    return sorted(p for p in probe_dir.iterdir() if p.is_file() and not p.name.endswith(".expected.json")
                  and p.name != "SOURCES.md")


def _sources(probe_dir: Path) -> tuple[dict[str, str], str]:
    text = (probe_dir / "SOURCES.md").read_text()
    found = {m.group(1): m.group(2) for line in text.splitlines() if (m := _SOURCE_LINE.match(line))}
    return found, text


def _origin(source: str) -> str:
    """github:owner/name -> owner/name; a URL -> its host (two files from one place are one source)."""
    if source.startswith("github:"):
        return source[7:].split()[0].lower()
    m = re.match(r"https?://([^/]+)", source)
    return m.group(1).lower() if m else source


CASES = [(d.name, f) for d in sorted(REAL.iterdir()) if d.is_dir() for f in _inputs(d)]


def test_every_probe_has_a_corpus_with_named_sources():
    missing = []
    for name in sorted(all_probes()):
        d = REAL / name
        if not d.is_dir():
            missing.append(f"{name}: no directory")
            continue
        files = _inputs(d)
        sources, text = _sources(d)
        assert set(sources) == {f.name for f in files}, f"{name}: SOURCES.md and the files differ"
        origins = {_origin(s) for s in sources.values()}
        if (len(files) < 3 or len(origins) < 2) and "Not found publicly:" not in text:
            missing.append(f"{name}: {len(files)} files from {len(origins)} sources and no 'Not found publicly:' line")
        for f in files:
            assert (d / (f.name + ".expected.json")).is_file(), f"{name}/{f.name}: no expected-facts file"
    assert missing == []


@pytest.mark.parametrize("probe_name,path", CASES, ids=[f"{p}/{f.name}" for p, f in CASES])
def test_probe_on_real_output(probe_name, path):
    expected = json.loads((path.parent / (path.name + ".expected.json")).read_text())
    probe = get_probe(probe_name)
    text = path.read_text()
    if "error" in expected:
        with pytest.raises(ProbeParseError) as err:
            probe.parse(text)
        assert expected["error"] in str(err.value)
        return
    facts = probe.parse(text).model_dump(mode="json")
    for fact_path, n in expected.get("count", {}).items():
        value = get_path(facts, fact_path)
        assert value is not MISSING and len(value) == n, f"{fact_path}: {value!r}"
    for fact_path, want in expected.get("facts", {}).items():
        assert get_path(facts, fact_path) == want, fact_path
    for fact_path, want in expected.get("rounded", {}).items():
        decimals = len(str(want).partition(".")[2])
        assert round(get_path(facts, fact_path), decimals) == want, fact_path
