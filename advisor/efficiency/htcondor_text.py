"""The text forms of HTCondor job ads: ``condor_history -af`` (autoformat) and ``-l`` (long form)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import IO, Any

from advisor.efficiency.htcondor import record_from_ad
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
