"""Pure parsers for GPFS / IBM Storage Scale command output (no I/O; used by probes/gpfs.py).

``mmlsconfig`` (IBM Storage Scale Command and Programming Reference, mmlsconfig)
--------------------------------
* Optional header ``Configuration data for cluster <name>:`` plus a dashed rule; optional
  trailer ``File systems in cluster <name>:`` plus a dashed rule and one ``/dev/<fs>`` per line
  (``complete`` says whether the trailer was seen: the ANNOTATED training sample lacks it).
* Body lines are ``<attribute> <value...>``: the value is the rest of the line, kept verbatim
  except for surrounding blanks (``verbsPorts mlx5_0/1/0  hfi1_0/1/1``, ``tiebreakerDisks A;B;C``,
  ``cesCidrPool <IP=...>+<IP=...>``). Unknown and misspelled attributes are kept.
* ``[a,b,c]`` starts a scope: a list of node names and/or node classes; the same header may
  repeat; ``[common]`` returns to cluster-wide (scope ``None``).
* The ``mmlsconfig <attr>`` form has no header; when a node override exists it prints the scope
  after the value (``maxFilesToCache 128k [nsdserver]``, seen in a community install note, not
  in IBM's reference). A trailing `` [..]`` is read as a scope only in header-less text.
* Lines starting with ``#`` are never mmlsconfig output (shell prompts/comments in captured
  transcripts) and are skipped. Trailing author annotations (``value ## note``) can't be told
  apart from a value and are NOT stripped: the test strips them from the ANNOTATED sample.
* A line ``mm<cmd>: ...`` that is not a success message is the tool's error (daemon down,
  permission denied): ``ProbeParseError`` with that line.

Effective value for one node (derived rule; documented in the report):
1. the node's *scopes* are its name (as given and its short name) and its node classes
   (from ``mmlsnodeclass`` when available; the system class ``all`` always);
2. among scoped lines whose scope list intersects them, the **last one in file order** wins;
3. else the last cluster-wide line wins (later lines override earlier ones: the ``mmlsconfig
   pagepool`` transcript prints 1G, then 8G after an ``mmchconfig``);
4. when the node's class membership is unknown (no ``mmlsnodeclass`` output), a scoped line that
   does not name the node may name one of its classes: if such a line could win (it comes after
   the last line known to apply), the attribute's value is *unknown* (``value`` None, ``unknown``
   says why, ``line`` is that scoped line), never the cluster-wide value or a default.

Sizes are binary (pagepool, maxblocksize ...; IBM: "default 1 GiB"): ``bytes`` is set only for
size attributes. Counts (``maxFilesToCache 128K``) keep the value as written; ``count`` is set
only when the value has no suffix, since IBM's reference does not confirm K/M for counts.

``mmdiag --config -Y`` (IBM Storage Scale Command and Programming Reference, mmdiag)
-----------------------------------------
Colon-separated, columns named by the ``HEADER`` row, ``%XX`` URL-decoded (``%3A`` is ``:``).
A line that does not start with ``mmdiag:`` continues the previous row (the captured sample
wraps one long value over two lines). Active values of sizes are plain bytes.

``mmlsnodeclass`` (format looked up in public code, tolerant)
--------------------------------------------------------------------------------
``-Y`` form: ``mmlsnodeclass:<record>:HEADER:...`` with columns looked up by name (class name:
a column whose name contains ``classname``; members: ``allMembers`` (includes nested classes),
else ``memberNodes``, else ``members``). Human form: ``Node Class Name  Members`` header, dashed
rule, ``<class>  <member,member,...>`` rows. Both are community-documented only; fixtures are
marked CONSTRUCTED.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

from advisor.util.units import parse_size_bytes
from probes.legal_values import GPFS_ATTRIBUTE, check_name
from probes.probe import ProbeParseError, bounded_int

#: attributes whose value is a size in bytes with binary suffixes
SIZE_ATTRIBUTES = frozenset(
    {
        "pagepool",
        "maxblocksize",
        "nsdInlineWriteMax",
        "tokenMemLimit",
        "seqDiscardThreshold",
        "seqDiscardThreshhold",
        "writebehindThreshold",
        "maxBufferDescs_size",
        "prefetchLargeBlockThreshold",
        "verbsSendBufferMemoryMB_bytes",
    }
)
#: attributes whose value is a count (suffix meaning unverified: no normalisation of K/M)
COUNT_ATTRIBUTES = frozenset(
    {
        "prefetchThreads",
        "worker1Threads",
        "workerThreads",
        "maxMBpS",
        "maxFilesToCache",
        "maxStatCache",
        "nsdMaxWorkerThreads",
        "nsdMinWorkerThreads",
        "nsdThreadsPerDisk",
        "nsdThreadsPerQueue",
        "maxReceiverThreads",
        "prefetchPct",
        "nsdbufspace",
    }
)
#: the tunables the rules name (all other keys are kept raw as well)
NAMED_ATTRIBUTES = (
    "pagepool",
    "prefetchThreads",
    "worker1Threads",
    "workerThreads",
    "maxMBpS",
    "maxFilesToCache",
    "maxStatCache",
    "nsdMaxWorkerThreads",
    "ignorePrefetchLUNCount",
)

_HEADER_RE = re.compile(r"^Configuration data for cluster\s+(?P<name>.*?):?\s*$")
_TRAILER_RE = re.compile(r"^File systems in cluster\s+(?P<name>.*?):?\s*$")
_RULE_RE = re.compile(r"^-{3,}\s*$")
_SCOPE_RE = re.compile(r"^\[(?P<body>[^\[\]]*)\]\s*$")
_ATTR_RE = re.compile(r"^(?P<attr>[A-Za-z_][A-Za-z0-9_.\-]*)(?:[ \t]+(?P<value>.*?))?\s*$")
_TRAILING_SCOPE_RE = re.compile(r"^(?P<value>.*?)\s+\[(?P<scope>[^\[\]]+)\]$")
_MM_MESSAGE_RE = re.compile(r"^(?P<cmd>mm[a-z]+|sudo|sh|bash|ksh):\s*(?P<msg>.*)$")
_SUCCESS_RE = re.compile(r"(successfully completed|Propagating the cluster configuration|affected nodes)", re.I)
_FAIL_HINT_RE = re.compile(
    r"(not running|permission denied|not permitted|must be root|no such file|not found|cannot|failed|error)",
    re.I,
)
_YESNO = {"yes": True, "no": False, "true": True, "false": False, "enable": True, "disable": False}


def _scope_list(body: str) -> list[str] | None:
    names = [n.strip() for n in body.split(",") if n.strip()]
    if not names or (len(names) == 1 and names[0].lower() == "common"):
        return None
    return names


def _error_line(line: str) -> str | None:
    """The tool's own error message, or None for an ordinary line."""
    m = _MM_MESSAGE_RE.match(line.strip())
    if not m:
        return None
    if _SUCCESS_RE.search(line):
        return None
    return line.strip()


def parse_mmlsconfig(text: str) -> dict[str, Any]:
    """``mmlsconfig`` text -> ``{cluster_name, filesystems, entries, complete, unparsed}``."""
    cluster_name: str | None = None
    filesystems: list[str] = []
    entries: list[dict[str, Any]] = []
    unparsed: list[str] = []
    scope: list[str] | None = None
    in_trailer = False
    has_header = bool(re.search(r"^Configuration data for cluster", text, re.M))
    complete = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#") or _RULE_RE.match(line):
            continue
        if raw[:1].isspace():  # mmlsconfig never indents; wrapped chatter in transcripts
            unparsed.append(raw)
            continue
        err = _error_line(line)
        if err is not None:
            raise ProbeParseError(f"mmlsconfig failed: {err}")
        if _MM_MESSAGE_RE.match(line):
            continue  # success chatter of mmchconfig in a transcript
        m = _HEADER_RE.match(line)
        if m:
            cluster_name = m.group("name").strip() or None
            scope, in_trailer = None, False
            continue
        m = _TRAILER_RE.match(line)
        if m:
            in_trailer = complete = True
            cluster_name = cluster_name or (m.group("name").strip() or None)
            continue
        if in_trailer:
            if line.startswith("/") or len(line.split()) == 1:
                filesystems.append(line.split()[0])
            else:
                unparsed.append(raw)
            continue
        m = _SCOPE_RE.match(line)
        if m:
            scope = _scope_list(m.group("body"))
            continue
        m = _ATTR_RE.match(line)
        if not m:
            unparsed.append(raw)
            continue
        attr, value = m.group("attr"), (m.group("value") or "")
        entry_scope = scope
        if not has_header:
            t = _TRAILING_SCOPE_RE.match(value)
            if t:
                value, entry_scope = t.group("value"), _scope_list(t.group("scope"))
        entries.append({"attribute": attr, "value": value, "scope": entry_scope, "line": raw.rstrip(), "lineno": lineno})
    if not entries and cluster_name is None:
        hint = next((ln.strip() for ln in text.splitlines() if _FAIL_HINT_RE.search(ln)), None)
        if hint:
            raise ProbeParseError(f"mmlsconfig failed: {hint}")
        raise ProbeParseError("mmlsconfig: no configuration lines in the output")
    return {
        "cluster_name": cluster_name,
        "filesystems": filesystems,
        "entries": entries,
        "complete": complete,
        "unparsed": unparsed,
    }


def normalise_value(attribute: str, value: str) -> dict[str, Any]:
    """``{value, bytes, count, enabled}``: numbers only where the unit is certain."""
    out: dict[str, Any] = {"value": value, "bytes": None, "count": None, "enabled": None}
    v = value.strip()
    if attribute in SIZE_ATTRIBUTES:
        try:
            out["bytes"] = parse_size_bytes(v)
        except ValueError:
            pass
    elif attribute in COUNT_ATTRIBUTES and re.fullmatch(r"\d+", v):
        out["count"] = bounded_int(v, f"{attribute} value")
    if v.lower() in _YESNO:
        out["enabled"] = _YESNO[v.lower()]
    return out


def node_scopes(node: str | None, node_classes: list[str]) -> set[str]:
    names: set[str] = set()
    if node:
        names.add(node)
        names.add(node.split(".")[0])
    names.update(node_classes)
    names.add("all")
    return names


def _scope_matches(scope: list[str], names: set[str]) -> bool:
    for s in scope:
        if s in names or s.split(".")[0] in names:
            return True
    return False


def resolve_effective(entries: list[dict[str, Any]], node: str | None, node_classes: list[str],
                      classes_known: bool = True) -> dict[str, Any]:
    """Effective value per attribute for ``node`` (rules 1-4 in the module docstring)."""
    names = node_scopes(node, node_classes)
    cluster: dict[str, dict[str, Any]] = {}
    scoped: dict[str, dict[str, Any]] = {}
    #: per attribute, the last scoped line that may name one of the node's (unknown) classes
    maybe: dict[str, dict[str, Any]] = {}
    for e in entries:
        if e["scope"] is None:
            cluster[e["attribute"]] = e
        elif _scope_matches(e["scope"], names):
            scoped[e["attribute"]] = e
        elif not classes_known:
            maybe[e["attribute"]] = e
    effective: dict[str, Any] = {}
    attrs = list(cluster) + [a for a in scoped if a not in cluster] + [a for a in maybe if a not in cluster and a not in scoped]
    for attr in attrs:
        known = scoped.get(attr)
        doubt = maybe.get(attr)
        if doubt is not None and (known is None or doubt["lineno"] > known["lineno"]):
            who = f"node {node}" if node else "this node (its name is unknown)"
            item = {"value": None, "bytes": None, "count": None, "enabled": None,
                    "unknown": f"set for [{','.join(doubt['scope'])}]; whether {who} belongs to it is unknown "
                               "(no mmlsnodeclass output)"}
            item.update({"scope": doubt["scope"], "line": doubt["line"], "lineno": doubt["lineno"]})
            effective[attr] = item
            continue
        e = known or cluster[attr]
        item = normalise_value(attr, e["value"])
        item.update({"scope": e["scope"], "line": e["line"], "lineno": e["lineno"]})
        effective[attr] = item
    return effective


# ------------------------------------------------------------------------------------------
# -Y (colon-separated, HEADER-indexed) output
# ------------------------------------------------------------------------------------------


def parse_y_rows(text: str, command: str) -> tuple[dict[str, list[str]], list[dict[str, str]]]:
    """Rows of ``<command>:<record>:...`` -Y output as dicts keyed by header name.

    Returns ``(headers by record, rows)``; each row carries ``_record``. Values are URL-decoded.
    A line not starting with ``<command>:`` continues the previous (wrapped) line.
    """
    prefix = command + ":"
    logical: list[str] = []
    for line in text.splitlines():
        if line.startswith(prefix):
            logical.append(line)
        elif logical and line.strip() and not line.startswith("@@"):
            logical[-1] += line.strip("\r\n")
    headers: dict[str, list[str]] = {}
    rows: list[dict[str, str]] = []
    for line in logical:
        fields = line.split(":")
        if len(fields) < 3:
            continue
        record = fields[1]
        if fields[2] == "HEADER":
            headers[record] = fields[3:]
            continue
        names = headers.get(record)
        if names is None:
            continue
        row = {"_record": record}
        for i, name in enumerate(names):
            if not name or name == "reserved":
                continue
            row[name] = unquote(fields[3 + i]) if 3 + i < len(fields) else ""
        rows.append(row)
    return headers, rows


def parse_mmdiag_config(text: str) -> dict[str, Any]:
    """``mmdiag --config -Y`` -> ``{active: {name: {value, changed, bytes, count}}}``."""
    headers, rows = parse_y_rows(text, "mmdiag")
    if "config" not in headers:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("@@")), "")
        if first:
            raise ProbeParseError(f"mmdiag --config -Y: no HEADER line; output starts: {first[:200]}")
        raise ProbeParseError("mmdiag --config -Y: empty output")
    cols = headers["config"]
    if "name" not in cols or "value" not in cols:
        raise ProbeParseError("mmdiag --config -Y: HEADER has no name/value columns")
    active: dict[str, Any] = {}
    for row in rows:
        if row["_record"] != "config" or not row.get("name"):
            continue
        name, value = check_name(row["name"], GPFS_ATTRIBUTE, "mmdiag --config: attribute"), row.get("value", "")
        item: dict[str, Any] = {"value": value, "changed": row.get("changed") or None, "bytes": None, "count": None}
        if re.fullmatch(r"\d+", value.strip()):
            if name in SIZE_ATTRIBUTES:
                item["bytes"] = bounded_int(value, f"mmdiag --config: {name} value")
            elif name in COUNT_ATTRIBUTES:
                item["count"] = bounded_int(value, f"mmdiag --config: {name} value")
        elif name in SIZE_ATTRIBUTES:
            try:
                item["bytes"] = parse_size_bytes(value)
            except ValueError:
                pass
        active[name] = item
    return {"active": active}


def parse_mmlsnodeclass(text: str) -> dict[str, list[str]]:
    """``{class: [member nodes]}`` from ``mmlsnodeclass`` -Y or human output (tolerant)."""
    classes: dict[str, list[str]] = {}
    headers, rows = parse_y_rows(text, "mmlsnodeclass")
    if headers:
        for row in rows:
            keys = {k.lower(): k for k in row if k != "_record"}
            name_key = next((keys[k] for k in keys if "classname" in k), None)
            member_key = None
            for want in ("allmembers", "membernodes", "members"):
                if want in keys:
                    member_key = keys[want]
                    break
            if not name_key or not row.get(name_key):
                continue
            members = [m.strip() for m in (row.get(member_key, "") if member_key else "").split(",") if m.strip()]
            classes.setdefault(row[name_key], []).extend(members)
        return classes
    lines = text.splitlines()
    in_table = False
    last: str | None = None
    for line in lines:
        if re.match(r"^\s*Node Class Name\s+Members", line):
            in_table = True
            continue
        if not in_table or re.match(r"^[\s-]+$", line) or not line.strip():
            continue
        if line[:1].isspace() and last is not None:  # wrapped member list
            classes[last].extend(m.strip() for m in line.strip().split(",") if m.strip())
            continue
        parts = line.split(None, 1)
        last = parts[0]
        members = parts[1] if len(parts) > 1 else ""
        classes.setdefault(last, []).extend(m.strip() for m in members.split(",") if m.strip())
    return classes


def classes_of(node: str | None, classes: dict[str, list[str]]) -> list[str]:
    """Node classes whose members include ``node`` (full or short name)."""
    if not node:
        return []
    wanted = {node, node.split(".")[0]}
    out = []
    for cls, members in classes.items():
        if any(m in wanted or m.split(".")[0] in wanted for m in members):
            out.append(cls)
    return sorted(out)
