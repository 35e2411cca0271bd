"""Values compared by meaning (playbooks/module_utils/storadvise_canonical.py) and persisted
iptables rulesets canonicalised on the controller (advisor/adapters/firewall_canonical.py), on real rulesets
and configurations from other people's machines (tests/fixtures/firewall_persisted/README.md and
tests/fixtures/real/*/SOURCES.md name the sources).

The scratch-namespace tests need ``unshare -rn`` with iptables-nft: root (CI) or a user allowed
unprivileged user namespaces."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from advisor.adapters.firewall_canonical import PYTHON, SCRATCH, canonical_rules, canonicalise_firewall_facts, same_rule
from advisor.util.shipped_code import canonical as cn
from advisor.util.shipped_code import module_utils

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "fixtures"
PERSISTED = FIX / "firewall_persisted"
REAL_RULES = sorted(PERSISTED.glob("rules.v4-*")) + [FIX / "firewall" / "iptables-save-nft-backend.txt"]
#: the ifca scenario's rule as its rules.v4 spells it, and as iptables-save prints it once loaded
IFCA_FILE_RULE = ("-A INPUT -s 198.18.2.11/32 -p tcp -m hashlimit --hashlimit-above 60000/sec --hashlimit-burst 4000 "
                  "--hashlimit-mode srcip --hashlimit-name gpfs -j DROP")
IFCA_RUNTIME_RULE = IFCA_FILE_RULE.replace("60000/sec", "62500/sec")


def scratch_works() -> bool:
    if not shutil.which("unshare") or not shutil.which("iptables-restore"):
        return False
    cp = subprocess.run(["unshare", "-rn", "iptables-save"], capture_output=True, text=True)
    return cp.returncode == 0


def load_back(text: str) -> list[str]:
    cp = subprocess.run(["unshare", "-rn", "sh", "-c", "iptables-restore && iptables-save"], input=text,
                        capture_output=True, text=True)
    return [ln for ln in cp.stdout.splitlines() if ln.startswith("-A ")] if cp.returncode == 0 else []


# --- scalar values -------------------------------------------------------------------------------


def test_sysctl_triplets_compare_by_meaning_on_a_real_capture() -> None:
    # tests/fixtures/real/network.sysctl: /proc/sys prints tcp_rmem with tabs, sysctl.d files with spaces
    assert cn.same_value("4096\t87380\t6291456", "4096 87380 6291456")
    assert cn.sysctl_value("4096\t131072   6291456 ") == "4096 131072 6291456"
    assert not cn.same_value("4096 87380 6291456", "4096 87380 4194304")


@pytest.mark.parametrize("a,b,same", [
    ("1G", "1024M", True), ("512M", "536870912", True), ("4KiB", "4096", True), ("1g", "1024m", True),
    ("1G", "1000M", False), ("TRUE", "true", True), ("1", "yes", True), ("Enabled", "TRUE", True),
    ("Disabled", "0", True), ("Enabled", "no", False), ("off", "FALSE", True), ("cubic", "Cubic", True),
])
def test_sizes_and_booleans_compare_by_meaning(a: str, b: str, same: bool) -> None:
    assert cn.same_value(a, b) is same
    assert cn.same_value(b, a) is same


def test_the_adapters_compare_with_the_shipped_module() -> None:
    from advisor.adapters.base import same_value

    assert same_value is cn.same_value
    assert same_value("Enabled", "1")  # the adapters' own table had no "Enabled"


def test_xrootd_directives_ignore_spacing_comments_and_continuation_lines() -> None:
    real = (FIX / "real" / "xcache.config" / "slateci-XCache-xcache.cfg.txt").read_text()
    directives = cn.xrootd_directives(real)
    assert directives and all("  " not in args and "\\" not in args for _n, args in directives)
    # one directive, three spellings
    a = cn.xrootd_directive("pfc.diskusage 0.90 0.95")
    assert a == cn.xrootd_directive("pfc.diskusage   0.90\t0.95   # cache high/low water marks")
    assert a == cn.xrootd_directive("pfc.diskusage 0.90 \\\n    0.95")
    assert cn.xrootd_directives("all.export /store \\\n  stage\n# x\nxrd.port 1094\n") == [
        ("all.export", "/store stage"), ("xrd.port", "1094")]


# --- iptables: the pure-Python normaliser ----------------------------------------------------------


def test_hashlimit_and_limit_rates_read_back_as_iptables_prints_them() -> None:
    """libxt_hashlimit stores 1e6*unit/rate (integer) and prints the rate back from that period:
    60000/sec -> 62500/sec; libxt_limit does the same with 1e4 (3000/sec -> 3333/sec)."""
    assert cn.ipt_rate("60000/sec") == "62500/sec"
    assert cn.ipt_rate("3000/sec", cn.LIMIT_SCALE) == "3333/sec"
    assert cn.ipt_rate("5/minute") == "5/min" and cn.ipt_rate("100/s") == "100/sec"
    assert cn.ipt_rule_canonical(IFCA_FILE_RULE) == IFCA_RUNTIME_RULE
    assert cn.same_ipt_rule(IFCA_FILE_RULE, IFCA_RUNTIME_RULE)
    assert not cn.same_ipt_rule(IFCA_FILE_RULE, IFCA_RUNTIME_RULE.replace("-j DROP", "-j ACCEPT"))


@pytest.mark.skipif(not scratch_works(), reason="needs unshare -rn with iptables (root in CI)")
@pytest.mark.parametrize("path", REAL_RULES, ids=lambda p: p.name)
def test_the_python_normaliser_agrees_with_iptables_on_every_line_of_real_files(path: Path) -> None:
    """Each rule line of a real rules file, loaded alone into a scratch namespace and read back
    with iptables-save: the pure-Python normaliser gives the same text (lines the scratch
    namespace refuses, such as an ipset that does not exist there, are left out)."""
    text = path.read_text()
    lines = text.splitlines()
    files = module_utils("storadvise_firewall_files")
    decl: dict[str, list[str]] = {}
    table = None
    for ln in lines:
        s = ln.strip()
        if s.startswith("*"):
            table = s[1:].strip()
        elif s.startswith(":") and table:
            decl.setdefault(table, []).append(s)
    compared = 0
    for r in files.ipt_save_rules(text):
        src = lines[r["line"]].strip()
        back = load_back(f"*{r['table']}\n" + "\n".join(decl.get(r["table"], [])) + f"\n{src}\nCOMMIT\n")
        if back:
            assert cn.ipt_rule_canonical(src) == " ".join(back[0].split()), src
            compared += 1
    assert compared >= 6


# --- iptables: the scratch namespace on the controller ------------------------------------------


def ifca_rules_v4() -> str:
    return "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n" + IFCA_FILE_RULE + "\nCOMMIT\n"


@pytest.mark.skipif(not scratch_works(), reason="needs unshare -rn with iptables (root in CI)")
def test_scratch_namespace_pairs_each_rule_read_back_with_its_file_line() -> None:
    rules, how, note = canonical_rules(ifca_rules_v4(), "ip", "/etc/iptables/rules.v4")
    assert (how, note) == (SCRATCH, None)
    assert [(r["text"], r["lineno"], r["line"]) for r in rules] == [(IFCA_RUNTIME_RULE, 5, IFCA_FILE_RULE)]
    runtime = {"backend": "iptables", "family": "ip", "table": "filter", "chain": "INPUT", "text": IFCA_RUNTIME_RULE}
    assert same_rule(rules[0], runtime)
    # a real file (hand spelled, counters, comments) gives one canonical rule per -A line
    text = (PERSISTED / "rules.v4-debian-raspi3-image-spec").read_text()
    rules, how, _ = canonical_rules(text, "ip", "rules.v4")
    assert how == SCRATCH and len(rules) == len([ln for ln in text.splitlines() if ln.startswith("-A ")])
    assert all(text.splitlines()[r["lineno"] - 1].strip() == r["line"] for r in rules)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not scratch_works(),
                    reason="needs root to drop to an unprivileged user")
@pytest.mark.root  # drops to another user
def test_scratch_namespace_also_works_as_a_plain_user() -> None:
    """`scan --from` as a plain user: unshare -rn needs no privilege where user namespaces are allowed."""
    cp = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "unshare", "-rn", "sh", "-c",
                         "iptables-restore && iptables-save"], input=ifca_rules_v4(), capture_output=True, text=True,
                        cwd="/")
    assert cp.returncode == 0, cp.stderr
    assert IFCA_RUNTIME_RULE in cp.stdout


def test_the_python_normaliser_takes_over_and_says_why() -> None:
    """No scratch namespace (no unshare, no user namespaces): the documented normaliser pairs the
    same rule, and the facts say which canonicaliser was used and why."""
    rules, how, note = canonical_rules(ifca_rules_v4(), "ip", "rules.v4", scratch=lambda t, f: (None, "unshare not found"))
    assert (how, note) == (PYTHON, "unshare not found")
    assert rules[0]["text"] == IFCA_RUNTIME_RULE and rules[0]["lineno"] == 5
    facts = {"rules": [], "persisted_files": [{"family": "ip", "path": str(PERSISTED / "rules.v4-soulsymphonies-debian-setup"),
                                               "text": (PERSISTED / "rules.v4-soulsymphonies-debian-setup").read_text()}]}
    out = canonicalise_firewall_facts(facts)
    # a real file the scratch namespace refuses (an ipset it does not have), or no scratch at all
    assert out["persisted_canonicaliser"] == PYTHON and out["persisted_canonicaliser_note"]
    limit = next(r for r in out["persisted_rules"] if "--limit 5/min" in r["line"])
    assert limit["lineno"] == 18 and limit["text"].startswith("-A INPUT -m limit --limit 5/min -j LOG")


def test_the_xrootd_role_keeps_a_directive_that_already_says_the_target() -> None:
    """The xcache/xrootd_tuning module's edit (set_directive): a directive already right by meaning
    (other spacing, a comment, continuation lines) is left as written; a wrong one spread over
    continuation lines is replaced whole (not its first line only, which left the rest dangling)."""
    import importlib.util
    import sys

    for name in ("storadvise_canonical", "storadvise_state"):
        spec = importlib.util.spec_from_file_location(f"ansible.module_utils.{name}",
                                                      REPO / "playbooks" / "module_utils" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[f"ansible.module_utils.{name}"] = mod
        spec.loader.exec_module(mod)
    spec = importlib.util.spec_from_file_location(
        "storadvise_xrootd_directives", REPO / "playbooks" / "roles" / "xcache" / "library" / "storadvise_xrootd_directives.py")
    xd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(xd)
    real = [ln for ln in (FIX / "real" / "xcache.config" / "slateci-XCache-xcache.cfg.txt").read_text().splitlines()
            if not ln.startswith("@@section")]  # the probe's layout around the file
    name, args = next((n, a) for n, a in cn.xrootd_directives("\n".join(real)) if a)
    respaced = [ln.replace(" ", "   ") if ln.split() and ln.split()[0] == name else ln for ln in real]
    assert xd.set_directive(respaced, name, args) == (respaced, True)
    lines = ["all.export /store", "pfc.diskusage 0.90 \\", "    0.95  # water marks", "xrd.port 1094"]
    assert xd.set_directive(lines, "pfc.diskusage", "0.90   0.95") == (lines, True)
    out, found = xd.set_directive(lines, "pfc.diskusage", "0.80 0.90")
    assert found and out == ["all.export /store", "pfc.diskusage 0.80 0.90", "xrd.port 1094"]


@pytest.mark.skipif(not scratch_works() or not shutil.which("nft"), reason="needs unshare -rn with nft (root in CI)")
def test_a_persisted_nft_script_is_compared_in_the_probe_s_own_rendering() -> None:
    """A real capture (tests/fixtures/firewall/capture.sh): the ruleset as `nft list ruleset` saved
    it (what /etc/nftables.conf holds) and as `nft -j list ruleset` gave it at runtime. Loaded with
    nft -f into a scratch namespace and listed back, every persisted rule renders exactly as the
    probe renders its runtime twin, paired with its file line (``ct state related,established``
    in the file is ``established,related`` at runtime: text comparison alone missed it)."""
    from advisor.adapters.firewall_canonical import canonical_nft_rules
    from probes.nftables_json import parse_nft_json

    text = (FIX / "firewall" / "nft-list-ruleset.txt").read_text()
    rules, how, note = canonical_nft_rules(text, "/etc/nftables.conf")
    assert (how, note) == (SCRATCH, None)
    _chains, runtime, _ = parse_nft_json((FIX / "firewall" / "nft-j-list-ruleset.json").read_text(), set())
    native = [r.model_dump() for r in runtime if " xt " not in f" {r.text} "]
    assert len(native) >= 15
    for r in native:
        hits = [p for p in rules if same_rule(p, r)]
        assert len(hits) == 1 and text.splitlines()[hits[0]["lineno"] - 1].strip() == hits[0]["line"], r["text"]
        assert hits[0]["text"] == r["text"]
    state = next(p for p in rules if "ct state" in p["line"])
    assert "related,established" in state["line"] and "established,related" in state["text"]


def test_gpfs_drift_compares_booleans_with_the_shared_table() -> None:
    """GPFS-RESTART-PENDING's persisted-vs-active comparison uses the same boolean spellings."""
    from advisor.rules.analytic.storage import gpfs_drift

    def drift(p: str, a: str) -> list:
        return gpfs_drift({"effective": {"x": {"value": p}}}, {"active": {"x": {"value": a}}}, ["x"])

    assert drift("yes", "1") == [] and drift("Enabled", "yes") == [] and drift("TRUE", "true") == []
    assert drift("no", "yes") and drift("Disabled", "1")
    assert drift("2", "2") == [] and drift("2", "3")
