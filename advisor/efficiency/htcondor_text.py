"""The text forms of HTCondor job ads: ``condor_history -af`` (autoformat) and ``-l`` (long form)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import IO, Any

from advisor.efficiency.htcondor import ATTRIBUTES, record_from_ad
from advisor.efficiency.records import JobRecord, ParseIssue, RowError

# --- condor_history -af:h (autoformat with a header) ---------------------------------------

_UNDEF = {"undefined", "UNDEFINED", "Undefined", "error", "ERROR"}
_JOBID_HEADERS = {"id", "jobid", "job_id"}
_LABEL_PAIR = re.compile(r"(\w+) = (.*?)(?=\s+\w+ = |$)")


def _af_value(tok: str) -> Any:
    tok = tok.strip()
    if tok in _UNDEF or tok == "":
        return None
    if len(tok) >= 2 and tok[0] == tok[-1] == '"':
        return tok[1:-1]
    if tok in ("true", "TRUE", "True"):
        return True
    if tok in ("false", "FALSE", "False"):
        return False
    try:
        return int(tok)
    except ValueError:
        pass
    try:
        return float(tok)
    except ValueError:
        return tok


def _af_split(text: str, sep: str | None) -> list[str]:
    if sep is None:
        return text.split()
    return [t.strip() for t in text.split(sep)]


def _af_row_to_ad(cols: list[str], vals: list[str]) -> dict[str, Any]:
    ad: dict[str, Any] = {}
    for name, tok in zip(cols, vals):
        if name.lower() in _JOBID_HEADERS:
            cid, _, pid = tok.partition(".")
            if not (cid.isdigit() and pid.isdigit()):
                raise RowError(f"job id {tok!r} is not ClusterId.ProcId")
            ad["ClusterId"], ad["ProcId"] = int(cid), int(pid)
        else:
            ad[name] = _af_value(tok)
    return ad


_KNOWN = {a.lower() for a in ATTRIBUTES} | _JOBID_HEADERS


def looks_like_autoformat(first: bytes) -> bool:
    """``condor_history -af:h``'s header (attribute names, at least one the record is built from) or
    an ``-af:l`` labelled line (``Attr = value``)."""
    text = first.decode("utf-8", "replace").strip()
    if " = " in text and _LABEL_PAIR.match(text):
        return text.split(" = ", 1)[0].lower() in _KNOWN
    cols = _af_split(text, af_separator(text))
    return (all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", c) for c in cols)
            and any(c.lower() in _KNOWN for c in cols))


def af_separator(header: str) -> str | None:
    """``-af:t`` tabs, ``-af:,`` commas, default spaces (None = any run of whitespace)."""
    if "\t" in header:
        return "\t"
    if "," in header:
        return ","
    return None


def iter_autoformat(f: IO[bytes], source: str) -> Iterator[JobRecord | ParseIssue]:
    """``condor_history -af:h Attr...`` (also ``:jh``, ``:,h``, ``:th``): a header line of
    attribute names, then one job per line. ``-af:l`` (``Attr = value`` labels, no header) is
    read too. Values: ``undefined`` is unknown; strings are unquoted in -af output, so a string
    value holding the separator makes its row unparseable (reported, not guessed)."""
    cols: list[str] | None = None
    sep: str | None = None
    lineno = 0
    for raw in f:
        lineno += 1
        text = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        if " = " in text and _LABEL_PAIR.match(text.strip()):
            pairs = _LABEL_PAIR.findall(text.strip().replace(", ", " ").replace("\t", " "))
            try:
                ad = _af_row_to_ad([k for k, _ in pairs], [v.rstrip(",") for _, v in pairs])
                yield record_from_ad(ad, source, lineno)
            except RowError as e:
                yield ParseIssue(source, lineno, str(e))
            continue
        if cols is None:
            sep = af_separator(text)
            cols = _af_split(text, sep)
            if not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", c) for c in cols):
                yield ParseIssue(source, lineno, "-af output needs a header of attribute names (use condor_history -af:h)")
                return
            continue
        vals = _af_split(text, sep)
        if len(vals) != len(cols):
            yield ParseIssue(source, lineno, f"{len(vals)} fields where the header has {len(cols)}")
            continue
        try:
            yield record_from_ad(_af_row_to_ad(cols, vals), source, lineno)
        except RowError as e:
            yield ParseIssue(source, lineno, str(e))


# --- condor_history -l / condor_q -l (the long form: one "Attr = value" per line) ----------

_LONG_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*=\s?(.*)$")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_MAX_DEPTH = 32


class _Expr(Exception):
    """The value is an expression, not a literal."""


def _literal(text: str, i: int, depth: int) -> tuple[Any, int]:
    """One ClassAd literal at ``text[i:]`` (after spaces): number, string, boolean, undefined, list
    ``{a, b}`` or record ``[x = 1; y = 2]``; raises _Expr for anything else."""
    if depth > _MAX_DEPTH:
        raise _Expr
    n = len(text)
    while i < n and text[i] == " ":
        i += 1
    if i >= n:
        raise _Expr
    c = text[i]
    if c == '"':
        out, j = [], i + 1
        while j < n and text[j] != '"':
            if text[j] == "\\" and j + 1 < n:
                j += 1
            out.append(text[j])
            j += 1
        if j >= n:
            raise _Expr
        return "".join(out), j + 1
    if c == "{":
        items, j = [], i + 1
        while True:
            while j < n and text[j] == " ":
                j += 1
            if j < n and text[j] == "}":
                return items, j + 1
            v, j = _literal(text, j, depth + 1)
            items.append(v)
            while j < n and text[j] == " ":
                j += 1
            if j < n and text[j] == ",":
                j += 1
            elif not (j < n and text[j] == "}"):
                raise _Expr
    if c == "[":
        rec: dict[str, Any] = {}
        j = i + 1
        while True:
            m = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*").match(text, j)
            if m is None:
                m2 = re.compile(r"\s*\]").match(text, j)
                if m2 is None:
                    raise _Expr
                return rec, m2.end()
            v, j = _literal(text, m.end(), depth + 1)
            rec[m.group(1)] = v
            m3 = re.compile(r"\s*;").match(text, j)
            if m3:
                j = m3.end()
    m = re.compile(r"[A-Za-z0-9_.+\-]+").match(text, i)
    if m is None:
        raise _Expr
    tok = m.group(0)
    low = tok.lower()
    if low in ("true", "false"):
        return low == "true", m.end()
    if low in ("undefined", "error"):
        return None, m.end()
    if _NUMBER.fullmatch(tok):
        return (int(tok) if re.fullmatch(r"[-+]?\d+", tok) else float(tok)), m.end()
    raise _Expr


def classad_value(text: str) -> Any:
    """A long-form value: the literal it is, else an expression as ``condor_history -json`` writes
    it (``/Expr(...)/``), which the record reads as unknown."""
    text = text.strip()
    try:
        v, end = _literal(text, 0, 0)
    except (_Expr, ValueError, OverflowError):
        return f"/Expr({text})/"
    if text[end:].strip():
        return f"/Expr({text})/"
    return v


def looks_like_long_form(lines: list[bytes]) -> bool:
    """The first two meaningful lines are adjacent single ``Attr = value`` lines (not ``-af:l``,
    whose lines hold one job's several pairs)."""
    texts = [ln.decode("utf-8", "replace").strip() for ln in lines]
    texts = [t for t in texts if not t.startswith("#") and not t.startswith("-- ")]
    while texts and not texts[0]:
        texts.pop(0)
    if len(texts) < 2 or not texts[1]:
        return False
    return all(_LONG_LINE.match(t) for t in texts[:2]) and len(_LABEL_PAIR.findall(texts[0])) == 1


def iter_long(f: IO[bytes], source: str) -> Iterator[JobRecord | ParseIssue]:
    """``condor_history -l`` / ``condor_q -l``: ads of ``Attr = value`` lines separated by blank
    lines (``-- Schedd: ...`` banners and ``#`` lines are skipped). A line that is not
    ``Attr = value`` is reported with its number and the ad is read without it."""
    ad: dict[str, Any] = {}
    first = 0
    lineno = 0

    def finish() -> Iterator[JobRecord | ParseIssue]:
        if ad:
            try:
                yield record_from_ad(ad, source, first)
            except RowError as e:
                yield ParseIssue(source, first, str(e))

    for raw in f:
        lineno += 1
        text = raw.decode("utf-8", "replace").rstrip("\r\n")
        s = text.strip()
        if not s:
            yield from finish()
            ad = {}
            continue
        if s.startswith("#") or s.startswith("-- "):
            continue
        m = _LONG_LINE.match(text)
        if m is None:
            yield ParseIssue(source, lineno, f"not an 'Attr = value' line: {s[:60]!r}")
            continue
        if not ad:
            first = lineno
        ad[m.group(1)] = classad_value(m.group(2))
    yield from finish()
