"""Fuzz run: every parser in probes/, the capture reader and every renderer on hostile input.

Three targets, ``--cases`` inputs each (10,000 by default; CI runs a 500-case slice through
tests/hardening/test_fuzz_slice.py):

  * parsers: each probe's ``parse`` on real outputs (tests/fixtures) cut, spliced, bit-flipped,
    with numbers blown up, and on random bytes. Allowed: facts, or ``ProbeParseError``.
  * capture reader: ``CapturedTransport.run_batch`` on random capture directories (random index
    JSON, objects, per-key files, symlinks, FIFOs, directories where files belong). Allowed:
    results, or a ``TransportError``.
  * renderers: a report whose host-supplied strings (site, host text, probe message, finding
    text, evidence, remediation) are random text with control characters, markup, Markdown,
    HTML, lone surrogates: console, PLAN.md, HTML, JUnit and Prometheus each either produce
    output that parses in its format with the text visible, or refuse with a one-line
    ``StoradviseError`` (advisor/report/safe_text.py is the layer under test).

Printed: per target, cases run, failures (tracebacks or invisible text), seconds. Exit status 1
when any case failed. Nothing here is timed against a peer: the numbers are counts.

  .venv/bin/python bench/bench_fuzz.py                 # 10,000 cases per target
  .venv/bin/python bench/bench_fuzz.py --cases 500 --seed 7
"""

from __future__ import annotations

import argparse
import collections
import io
import json
import os
import random
import re
import sys
import tempfile
import time
import traceback
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from advisor.util.errors import StoradviseError  # noqa: E402
from advisor.report.safe_text import terminal_text, xml_text  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
#: characters host text is drawn from: controls, markup, Markdown, HTML, quotes, wide and bidi
HOSTILE = ("\x00\x07\x08\t\n\r\x1b\x7f\x9b\u202e\u2066\ud800\udcff[]/\\`*_<>|&~#!():;\"'=-+.{}%$@ "
           "abcXYZ019 é漢字😀\u0301")
MARKUP = ["[/red]", "[bold red blink]", "[link=http://e.vil]", "\x1b[2J", "\x1b]0;t\x07", "## ", "\n# ",
          "<script>", "]]>", "&amp;", "|", "`", "**", ":skull:", "{{ x }}", "\r\n", "\\"]


class Tally:
    def __init__(self, name: str):
        self.name, self.cases, self.failures, self.first = name, 0, 0, []
        self.t0 = time.monotonic()

    def fail(self, what: str) -> None:
        self.failures += 1
        if len(self.first) < 50:
            self.first.append(what)

    def line(self) -> str:
        return (f"{self.name:<15} {self.cases:>7} cases  {self.failures:>4} failed  "
                f"{time.monotonic() - self.t0:7.1f} s")


def host_text(rng: random.Random, max_len: int = 30) -> str:
    parts = []
    while sum(map(len, parts)) < rng.randint(0, max_len):
        parts.append(rng.choice(MARKUP) if rng.random() < 0.3 else rng.choice(HOSTILE))
    return "".join(parts)[:max_len]


# ------------------------------------------------------------------------------------ parsers


def _samples() -> list[bytes]:
    out = []
    for p in sorted(FIXTURES.rglob("*")):
        if p.is_file() and p.stat().st_size < 200_000 and p.suffix not in (".md", ".gz", ".xz", ".bz2"):
            out.append(p.read_bytes())
    return out


def mutate(rng: random.Random, samples: list[bytes]) -> str:
    r = rng.random()
    if r < 0.1 or not samples:
        data = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 300)))
    else:
        data = bytearray(rng.choice(samples))
        for _ in range(rng.randint(1, 6)):
            op = rng.randrange(6)
            at = rng.randint(0, len(data))
            if op == 0:  # cut
                del data[at:at + rng.randint(1, 400)]
            elif op == 1 and data:  # flip
                data[min(at, len(data) - 1)] ^= 1 << rng.randrange(8)
            elif op == 2:  # blow a number up
                data[at:at] = rng.choice([b"99999999999999999999999999", b"-1", b"1e999", b"nan", b"18446744073709551616",
                                          b"0x", b"\xff\xfe", b"\x00"])
            elif op == 3:  # splice another sample in
                other = rng.choice(samples)
                a = rng.randint(0, len(other))
                data[at:at] = other[a:a + rng.randint(1, 2000)]
            elif op == 4:
                data[at:at] = host_text(rng).encode("utf-8", "surrogatepass")
            else:  # truncate
                del data[at:]
    return bytes(data).decode("utf-8", "surrogateescape" if rng.random() < 0.3 else "replace")


def fuzz_parsers(cases: int, rng: random.Random) -> Tally:
    from probes import all_probes
    from probes.probe import ProbeParseError
    from pydantic import BaseModel

    t = Tally("parsers")
    samples = _samples()
    for name, probe in sorted(all_probes().items()):
        for _ in range(cases):
            text = mutate(rng, samples)
            t.cases += 1
            try:
                facts = probe.parse(text)
                if not isinstance(facts, BaseModel):
                    t.fail(f"{name}: returned {type(facts).__name__}")
                else:
                    facts.model_dump(mode="json")  # as the collector keeps them
            except ProbeParseError as exc:
                if "\n" in str(exc):
                    t.fail(f"{name}: ProbeParseError of several lines")
            except Exception as exc:  # noqa: BLE001 - what the fuzz run is looking for
                t.fail(f"{name}: {type(exc).__name__}: {exc!s:.120} on {text[:80]!r}")
    return t


# ------------------------------------------------------------------------------ capture reader


def _random_capture(rng: random.Random, d: Path, keys: list[str]) -> None:
    from advisor.transport.capture_objects import CaptureObjects

    hd = d / "hosts" / "n1"
    hd.mkdir(parents=True)
    objects = CaptureObjects(d)
    # texts as a transport decodes them (surrogateescape: only U+DC80..U+DCFF stand for bytes)
    oids = [objects.put(re.sub("[\ud800-\udc7f]", "?", host_text(rng, 200))) for _ in range(rng.randint(0, 3))]
    if rng.random() < 0.5:
        outputs = {}
        for k in rng.sample(keys, rng.randint(0, len(keys))):
            entry = {"rc": rng.choice([0, 1, None, "x", True, 2**70]),
                     "duration_s": rng.choice([0.1, -1, "x", None, 1e308]),
                     "stdout": rng.choice(oids + ["0" * 64, "zz", None, 5]) if oids else rng.choice(["0" * 64, None]),
                     "stderr": rng.choice(oids + [None]) if oids else None,
                     "timed_out": rng.choice([True, False, "yes"]), "truncated": rng.choice([True, False, 1])}
            outputs[k] = entry if rng.random() < 0.9 else rng.choice([[], "x", 3])
        doc = {"capture_format": 2, "outputs": outputs} if rng.random() < 0.9 else rng.choice([[], {"outputs": 3}, "x"])
        text = json.dumps(doc)
        if rng.random() < 0.1:
            text = text[: rng.randint(0, len(text))]
        (hd / "outputs.json").write_text(text)
    for k in keys:
        for ext in (".out", ".err", ".json"):
            r = rng.random()
            p = hd / (k + ext)
            if r < 0.3:
                p.write_bytes(mutate(rng, []).encode("utf-8", "surrogateescape"))
            elif r < 0.35:
                p.symlink_to(rng.choice(["/etc/passwd", "/dev/zero", "../n1", str(hd), "missing"]))
            elif r < 0.38:
                os.mkfifo(p)
            elif r < 0.41:
                p.mkdir()
            elif r < 0.5 and ext == ".json":
                p.write_text(rng.choice(['{"rc": 1}', "[]", "{", '{"rc": "x", "duration_s": "y"}', "null"]))
    if oids and rng.random() < 0.2:  # an object damaged, replaced by a symlink, or by a FIFO
        path = d / "objects" / oids[0][:2] / oids[0][2:]
        path.unlink()
        rng.choice([lambda: path.write_text("edited"), lambda: path.symlink_to("/etc/passwd"),
                    lambda: os.mkfifo(path)])()


def fuzz_capture_reader(cases: int, rng: random.Random) -> Tally:
    from advisor.transport.base import Command, CommandResult, TransportError
    from advisor.transport.captured import CapturedTransport

    t = Tally("capture reader")
    keys = ["network.sysctl", "firewall", "mounts"]
    with tempfile.TemporaryDirectory(prefix="sa-fuzz-") as tmp:
        for i in range(cases):
            d = Path(tmp) / str(i)
            _random_capture(rng, d, keys)
            t.cases += 1
            try:
                results = CapturedTransport(d, "n1").run_batch([Command(key=k, script="") for k in keys])
                if [r.key for r in results] != keys or not all(isinstance(r, CommandResult) for r in results):
                    t.fail(f"case {i}: results do not pair with the commands")
                if any("root:x:0:0" in (r.stdout + r.stderr) for r in results):
                    t.fail(f"case {i}: a symlinked file was read")
            except TransportError:
                pass
            except Exception as exc:  # noqa: BLE001
                t.fail(f"case {i}: {type(exc).__name__}: {exc!s:.160}")
    return t


# ------------------------------------------------------------------------------- renderers


def report_with(text: str):
    from advisor.report.model import ScanReport

    finding = {"rule_id": "NET-TCP-SACK", "title": "title " + text, "hosts": ["n1"], "status": "fail",
               "severity": "high", "observed": text, "expected": "1", "evidence": [text], "rationale": "r",
               "references": [], "remediation": {"text": text, "role": "network_tuning"}, "changes": [],
               "subject": text, "message": text}
    error = {**finding, "rule_id": "SCAN-PROBE-ERROR", "status": "error", "severity": "medium", "subject": "firewall",
             "observed": None, "evidence": [], "remediation": {"text": "", "role": None}}
    return ScanReport.model_validate({
        "tool_version": "0", "site": text, "profiles": ["generic"], "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:00:01+00:00", "duration_s": 1.0,
        "hosts": [{"name": "n1", "roles": ["storage"], "groups": [], "address": "n1", "reachable": True, "errors": [],
                   "probes": {"firewall": "error", "network.sysctl": "ok"}, "probe_messages": {"firewall": text}}],
        "findings": [finding, error],
        "summary": {"hosts": 1, "unreachable": 0, "probe_errors": 1, "by_status": {"fail": 1, "error": 1},
                    "failed_by_severity": {"high": 1}, "worst_failed_severity": "high", "incomplete": True}})


_RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _pieces(expected: str) -> list[str]:
    """The parts of the visible text a renderer must show (tabs may become spaces, a trailing
    backslash stays Rich's escape), without leading or trailing blanks."""
    return [p.strip(" \\") for p in expected.split("\t") if p.strip(" \\")]


def check_console(text: str) -> str | None:
    from rich.console import Console

    from advisor.report.console import render_scan

    buf = io.StringIO()
    render_scan(report_with(text), Console(file=buf, width=4000, color_system=None, emoji=False), verbose=True)
    out = buf.getvalue()
    if _RAW_CONTROL.search(out):
        return f"raw control character {_RAW_CONTROL.search(out).group()!r} on the terminal"
    missing = [p for p in _pieces(terminal_text(text)) if p not in out]
    return f"not shown: {missing[0]!r}" if missing else None


def check_plan_markdown(text: str) -> str | None:
    from markdown_it import MarkdownIt

    from advisor.apply.plan_model import Plan
    from advisor.apply.project import plan_markdown

    def tokens(t: str):
        plan = Plan(site=t, scan_started_at="2026-01-01T00:00:00Z")
        plan.manual.append({"rule": "R-1", "hosts": ["n1"], "severity": "high", "subject": t, "text": t})
        plan.refused.append({"host": "n1", "reason": t})
        return MarkdownIt("commonmark").enable("table").enable("strikethrough").parse(plan_markdown(plan, Path("/p")))

    got, base = tokens(text), tokens("x")
    if text.strip() and [tk.type for tk in got] != [tk.type for tk in base]:
        return "the text changed PLAN.md's structure (a heading, a list item or a block)"
    kinds = lambda toks: collections.Counter(c.type for tk in toks if tk.children for c in tk.children  # noqa: E731
                                             if c.type != "text")
    if kinds(got) != kinds(base):
        return f"the text added inline Markdown: {kinds(got) - kinds(base)}"
    shown = ["".join(c.content for c in tk.children) for tk in got if tk.children]
    want = terminal_text(text).strip(" \t")
    if want and not any(want in s for s in shown):
        return f"not shown as written: {want!r}"
    return None


class _Html(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.text.extend(v or "" for _, v in attrs)

    def handle_data(self, data):
        self.text.append(data)


def check_html(text: str) -> str | None:
    from advisor.report.html import scan_html

    def parse(t: str) -> _Html:
        p = _Html()
        p.feed(scan_html(report_with(t)))
        p.close()
        return p

    got, base = parse(text), parse("x")
    if text.strip() and got.tags != base.tags:  # an empty subject or message leaves its element out
        return "the text added or removed HTML elements"
    want = xml_text(text).strip()
    if want and not any(want in s for s in got.text):
        return f"not shown: {want!r}"
    return None


def check_junit(text: str) -> str | None:
    from advisor.report.junit import junit_xml

    root = ET.fromstring(junit_xml(report_with(text)))
    norm = lambda s: re.sub(r"[\t\r\n ]+", " ", s)  # noqa: E731 - XML normalises these in attributes
    seen = [norm(s) for el in root.iter() for s in (el.text or "", el.tail or "", *el.attrib.values())]
    want = norm(xml_text(text)).strip()
    if want and not any(want in s for s in seen):
        return f"not shown: {want!r}"
    return None


def check_prometheus(text: str) -> str | None:
    from prometheus_client.parser import text_string_to_metric_families

    from advisor.report.prometheus import prometheus_text

    families = list(text_string_to_metric_families(prometheus_text(report_with(text))))
    want = re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)
    if not any(s.labels.get("site") == want for f in families for s in f.samples):
        return f"site label is not {want!r}"
    return None


def check_ndjson(text: str) -> str | None:
    """One JSON document per line, ASCII only, the host text read back as it was."""
    from advisor.report.ndjson import ndjson_lines

    lines = [line.removesuffix("\n") for line in ndjson_lines(report_with(text))]
    for line in lines:
        if "\n" in line or not line.isascii():
            return "a document is not one ASCII line"
    docs = [json.loads(line) for line in lines]
    if {d["site"] for d in docs} != {text}:
        return f"site is not {text!r}"
    return None


RENDERERS = {"console": check_console, "PLAN.md": check_plan_markdown, "HTML": check_html, "JUnit": check_junit,
             "Prometheus": check_prometheus, "NDJSON": check_ndjson}


def check_renderer(name: str, text: str) -> str | None:
    """None when ``name`` shows ``text`` safely or refuses it in one line; else what went wrong."""
    try:
        return RENDERERS[name](text)
    except StoradviseError as exc:
        return None if "\n" not in str(exc) else "a refusal of several lines"
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc!s:.160}\n{traceback.format_exc(limit=3)}"


def fuzz_renderers(cases: int, rng: random.Random) -> Tally:
    t = Tally("renderers")
    for name in RENDERERS:
        for _ in range(cases):
            text = host_text(rng)
            t.cases += 1
            why = check_renderer(name, text)
            if why:
                t.fail(f"{name}: {why} for {text!r}")
    return t


TARGETS = {"parsers": fuzz_parsers, "capture": fuzz_capture_reader, "renderers": fuzz_renderers}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=10_000, help="inputs per parser, per capture run, per renderer")
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--only", choices=sorted(TARGETS), action="append")
    ap.add_argument("--show", type=int, default=5, help="failures listed per target")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    failed = 0
    for name in args.only or list(TARGETS):
        t = TARGETS[name](args.cases, rng)
        print(t.line(), flush=True)
        for f in t.first[: args.show]:
            print("   ", f.replace("\n", "\n    "))
        failed += t.failures
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
