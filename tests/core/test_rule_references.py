"""Rule references cite public sources; the lint refuses a reference to a file storadvise does not ship."""

from __future__ import annotations

import shutil
import textwrap

from advisor.util.resources import rules_dir
from advisor.rules.references import unshipped_files
from advisor.rules.specs import load_catalog, load_profile_file, available_profiles
from advisor.rules.lint import lint


def test_every_shipped_reference_is_public_or_shipped():
    catalog = load_catalog()
    bad = {rid: [r for r in rule.references if unshipped_files(r)] for rid, rule in catalog.rules.items()}
    assert {rid: refs for rid, refs in bad.items() if refs} == {}
    for name in available_profiles():
        assert unshipped_files(load_profile_file(name).description or "") == [], name
    # every rule that has a rationale also says where it comes from
    assert [rid for rid, rule in catalog.rules.items() if not rule.references] == []


def test_unshipped_files_tells_internal_notes_from_public_sources():
    assert unshipped_files("IFCA study (shared/seeds/003): iptables") == ["shared/seeds/003"]
    assert unshipped_files("sysstat iostat %util (FORMATS.md §3.3)") == ["FORMATS.md"]
    assert unshipped_files("docs/lab.md: the ifca scenario") == ["docs/lab.md"]
    assert unshipped_files("rules/no-such-pack.yml") == ["rules/no-such-pack.yml"]
    assert unshipped_files("rules/gpfs.yml") == []
    assert unshipped_files("xrootd src/XrdPfc/XrdPfcConfiguration.cc: pfc.ram") == []
    assert unshipped_files("Linux Documentation/block/queue-sysfs.rst: read_ahead_kb") == []
    assert unshipped_files("RFC 7323 section 2.2") == []
    assert unshipped_files("IBM DS3000/DS4000/DS5000 CLI guide p. 3-226") == []
    assert unshipped_files("https://fasterdata.es.net/host-tuning/linux/") == []


def test_lint_refuses_a_reference_to_an_internal_note(tmp_path):
    rules = tmp_path / "rules"
    shutil.copytree(rules_dir(), rules)
    (rules / "extra.yml").write_text(textwrap.dedent("""\
        rules:
          - id: EXTRA-SACK
            title: SACK on
            probe: network.sysctl
            fact: sysctls."net.ipv4.tcp_sack".runtime
            operator: eq
            expected: 1
            severity: low
            rationale: x
            references: ["IFCA study (shared/seeds/003): tcp_sack=0"]
            remediation: {text: set it}
        """))
    problems, _ = lint(directory=rules)
    assert problems == ["extra.yml: EXTRA-SACK: reference 'IFCA study (shared/seeds/003): tcp_sack=0' cites "
                        "shared/seeds/003, which storadvise does not ship (cite the public source: paper, vendor "
                        "guide, RFC, man page)"]


def test_findings_built_in_python_cite_public_sources():
    """The efficiency aggregates' findings and latency findings are built in Python, outside the rule packs' lint."""
    from advisor.efficiency import aggregate_findings, latency

    refs = [v for m in (aggregate_findings, latency) for k, v in vars(m).items()
            if isinstance(v, str) and (k.startswith("REF_") or k.endswith("_REFERENCE"))]
    assert len(refs) >= 3
    assert [r for r in refs if unshipped_files(r)] == []


def test_nothing_shipped_points_the_reader_at_internal_notes():
    """Code, rule packs, playbooks and docs name public sources; the development notes beside the repository
    (shared/, FORMATS.md, DOMAIN.md, DESIGN.md, LAB-TRIAL.md, the seeds) are not shipped and not public."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    note = re.compile(r"shared/|\bFORMATS\.md|\bDOMAIN\.md|\bDESIGN\.md|\bLAB-TRIAL\.md|\bseeds/\d")
    # the two places that explain the rule itself name what it refuses
    explained = {root / "advisor/rules/references.py", root / "docs/rules.md"}
    files = [root / "README.md"] + [p for d in ("advisor", "probes", "rules", "playbooks", "docs")
                                    for p in (root / d).rglob("*") if p.suffix in {".py", ".yml", ".yaml", ".md", ".j2"}]
    hits = [f"{p.relative_to(root)}:{n}" for p in files if p not in explained
            for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1) if note.search(line)]
    assert hits == []
