"""Persisted firewall rulesets in the form the kernel will hold them, computed on the CONTROLLER.

A rules file says ``--hashlimit-above 60000/sec``; once loaded, the kernel holds a period in the
match's units and ``iptables-save`` prints ``62500/sec``. Text comparison then says the runtime
rule is not persisted, and a fix that removes it only at runtime comes back at the next boot. So
the persisted file is loaded the way a boot loads it, into a scratch user and network namespace
of the controller (``unshare -rn``: works as root and as a plain user where unprivileged user
namespaces are allowed), with ``iptables-restore`` (``ip6tables-restore``), and read back with
``iptables-save``. Each rule read back is paired with the file line it came from (per table and
chain, in order: iptables-restore appends ``-A`` lines in file order).

The nft script (``/etc/nftables.conf``) is loaded with ``nft -f`` the same way and listed back
with ``nft -j list ruleset``, rendered by the probe's own renderer (probes/nftables_json.py): the
persisted and runtime rules are then compared in the same form.

The scan stays read-only: nothing of this runs on a host; the host's file text comes from the
``firewall`` probe. Where the scratch namespace cannot be used (no ``unshare``, no user
namespaces, no iptables on the controller, a file it refuses, ``-I`` lines), the pure-Python
normaliser of playbooks/module_utils/storadvise_canonical.py takes over, and the facts say so
(``persisted_canonicaliser``: ``scratch-netns`` or ``python``, with the reason).

Called by the collector right after the ``firewall`` probe's output is parsed (``CONTROLLER_STEPS``).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from typing import Any, Callable

from advisor.util.shipped_code import canonical, module_utils

SCRATCH = "scratch-netns"
PYTHON = "python"
_TOOLS = {"ip": ("iptables-restore", "iptables-save"), "ip6": ("ip6tables-restore", "ip6tables-save")}


def _files():
    return module_utils("storadvise_firewall_files")


@functools.lru_cache(maxsize=256)
def load_in_scratch_namespace(text: str, family: str) -> tuple[str | None, str | None]:
    """(iptables-save output, None) after loading ``text`` in a scratch user+network namespace,
    or (None, why it could not be done)."""
    restore, save = _TOOLS[family]
    missing = [t for t in ("unshare", restore, save) if shutil.which(t) is None]
    if missing:
        return None, f"{', '.join(missing)} not found on the controller"
    try:
        cp = subprocess.run(["unshare", "-rn", "sh", "-c", f"{restore} && {save}"], input=text,
                            capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"unshare -rn failed: {exc}"
    if cp.returncode != 0:
        err = next((ln.strip() for ln in (cp.stderr or "").splitlines() if ln.strip()), f"exit {cp.returncode}")
        return None, f"{restore} in a scratch namespace: {err[:200]}"
    return cp.stdout, None


def canonical_rules(text: str, family: str, path: str,
                    scratch: Callable[[str, str], tuple[str | None, str | None]] | None = None
                    ) -> tuple[list[dict[str, Any]], str, str | None]:
    """(rules, canonicaliser, note) of one persisted iptables-save file: each rule as
    {backend, family, table, chain, text (canonical), path, lineno, line (as written)}."""
    files = _files()
    source = files.ipt_save_rules(text)
    lines = text.splitlines()

    def rule(r: dict, canon: str) -> dict[str, Any]:
        return {"backend": "iptables", "family": family, "table": r["table"], "chain": r["chain"], "text": canon,
                "path": path, "lineno": r["line"] + 1, "line": lines[r["line"]].strip()}

    note = None
    if any(ln.strip().startswith(("-I ", "--insert ")) for ln in lines):
        note = "the file inserts rules (-I): its lines cannot be paired with the rules read back"
    else:
        saved, note = (scratch or load_in_scratch_namespace)(text, family)
        if saved is not None:
            back = files.ipt_save_rules(saved)
            by_chain: dict[tuple[str, str], list[dict]] = {}
            for r in back:
                by_chain.setdefault((r["table"], r["chain"]), []).append(r)
            src_chain: dict[tuple[str, str], list[dict]] = {}
            for r in source:
                src_chain.setdefault((r["table"], r["chain"]), []).append(r)
            if {k: len(v) for k, v in by_chain.items()} == {k: len(v) for k, v in src_chain.items()}:
                out = [rule(s, b["text"]) for k, rs in src_chain.items() for s, b in zip(rs, by_chain[k])]
                return sorted(out, key=lambda r: r["lineno"]), SCRATCH, None
            note = "the rules read back do not pair with the file's lines"
    return [rule(r, canonical.ipt_rule_canonical(r["text"])) for r in source], PYTHON, note


@functools.lru_cache(maxsize=64)
def load_nft_in_scratch_namespace(text: str) -> tuple[str | None, str | None]:
    """(``nft -j list ruleset`` output, None) after ``nft -f`` of ``text`` in a scratch user+network
    namespace, or (None, why not)."""
    missing = [t for t in ("unshare", "nft") if shutil.which(t) is None]
    if missing:
        return None, f"{', '.join(missing)} not found on the controller"
    try:
        cp = subprocess.run(["unshare", "-rn", "sh", "-c", "nft -f - && nft -j list ruleset"], input=text,
                            capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"unshare -rn failed: {exc}"
    if cp.returncode != 0:
        err = next((ln.strip() for ln in (cp.stderr or "").splitlines() if ln.strip()), f"exit {cp.returncode}")
        return None, f"nft -f in a scratch namespace: {err[:200]}"
    return cp.stdout, None


def canonical_nft_rules(text: str, path: str,
                        scratch: Callable[[str], tuple[str | None, str | None]] | None = None
                        ) -> tuple[list[dict[str, Any]], str, str | None]:
    """(rules, canonicaliser, note) of a persisted nft script: each rule rendered from
    ``nft -j list ruleset`` the way the probe renders the runtime ruleset (the same form), paired
    with its file line; else the script's rule text as written, compared under ``nft_norm``."""
    from probes.nftables_json import parse_nft_json
    from probes.probe import ProbeParseError

    source = _files().nft_conf_rules(text)
    lines = text.splitlines()

    def rule(r: dict, canon: str) -> dict[str, Any]:
        return {"backend": "nft", "family": r["family"], "table": r["table"], "chain": r["chain"], "text": canon,
                "path": path, "lineno": r["line"] + 1, "line": lines[r["line"]].strip()}

    listed, note = (scratch or load_nft_in_scratch_namespace)(text)
    if listed is not None:
        try:
            _chains, back, _skipped = parse_nft_json(listed, set())
        except ProbeParseError as exc:
            back, note = None, str(exc)
        if back is not None:
            by_chain: dict[tuple, list] = {}
            for b in back:
                by_chain.setdefault((b.family, b.table, b.chain), []).append(b)
            src_chain: dict[tuple, list[dict]] = {}
            for r in source:
                src_chain.setdefault((r["family"], r["table"], r["chain"]), []).append(r)
            if {k: len(v) for k, v in by_chain.items()} == {k: len(v) for k, v in src_chain.items()}:
                out = [rule(s, b.text) for k, rs in src_chain.items() for s, b in zip(rs, by_chain[k])]
                return sorted(out, key=lambda r: r["lineno"]), SCRATCH, None
            note = "the rules listed back do not pair with the script's rules"
    return [rule(r, r["text"]) for r in source], PYTHON, note


def canonicalise_firewall_facts(facts: dict[str, Any]) -> dict[str, Any]:
    """The ``firewall`` probe's facts with ``persisted_rules`` filled from ``persisted_files``."""
    files = facts.get("persisted_files") or []
    if not files:
        return facts
    rules: list[dict[str, Any]] = []
    methods, notes = set(), []
    for f in files:
        if f.get("backend") == "nft":
            got, method, note = canonical_nft_rules(f["text"], f["path"])
        else:
            got, method, note = canonical_rules(f["text"], f["family"], f["path"])
        rules += got
        methods.add(method)
        if note:
            notes.append(f"{f['path']}: {note}")
    out = dict(facts)
    out["persisted_rules"] = rules
    out["persisted_canonicaliser"] = PYTHON if PYTHON in methods else SCRATCH
    out["persisted_canonicaliser_note"] = "; ".join(notes) or None
    return out


def same_rule(persisted: dict[str, Any], runtime: dict[str, Any]) -> bool:
    """A persisted rule (canonical) and a runtime rule of the probe are the same rule: same
    backend, family, table and chain, and the same text once both are in the form the kernel
    prints (iptables-save; the nft JSON rendering)."""
    if (persisted.get("backend", "iptables"), persisted.get("family"), persisted.get("table"), persisted.get("chain")) != \
            (runtime.get("backend"), runtime.get("family"), runtime.get("table"), runtime.get("chain")):
        return False
    if persisted.get("backend") == "nft":
        return _files().nft_norm(persisted["text"]) == _files().nft_norm(runtime["text"])
    norm = _files().ipt_norm
    if norm(persisted["text"]) == norm(runtime["text"]):
        return True
    return canonical.ipt_rule_canonical(persisted["text"]) == canonical.ipt_rule_canonical(runtime["text"])


#: probe name -> what the controller adds to its parsed facts (local work only, never on a host)
CONTROLLER_STEPS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {"firewall": canonicalise_firewall_facts}
