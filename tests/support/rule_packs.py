"""Rule packs for tests: a one-rule pack with a profile (``write_rules``), and a new sysctl rule added as one YAML
entry, in a site-local directory or in a copy of the shipped rules/."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from tests.support.paths import REPO


def write_rules(tmp_path: Path, pack: str, profiles: dict[str, str] | None = None) -> Path:
    (tmp_path / "profiles").mkdir(exist_ok=True)
    (tmp_path / "test.yml").write_text(textwrap.dedent(pack))
    (tmp_path / "profiles" / "generic.yml").write_text("name: generic\nselect: ['*']\n")
    for name, text in (profiles or {}).items():
        (tmp_path / "profiles" / f"{name}.yml").write_text(textwrap.dedent(text))
    return tmp_path


SACK_PACK = """
vars:
  sack_expected: 1
rules:
  - id: T-SACK
    title: sack on
    roles: [storage, worker]
    probe: network.sysctl
    fact: sysctls."net.ipv4.tcp_sack".runtime
    operator: eq
    expected: "${sack_expected}"
    severity: high
    rationale: IFCA
    remediation: {text: set it, changes: [{adapter: sysctl, key: net.ipv4.tcp_sack, target: "1"}]}
"""


NEW_KEY = "net.ipv4.tcp_slow_start_after_idle"
NEW_RULE = """\
  - id: NET-TCP-SLOW-START-IDLE
    title: TCP keeps its window across idle periods
    probe: network.sysctl
    fact: sysctls."net.ipv4.tcp_slow_start_after_idle".runtime
    operator: eq
    expected: 0
    severity: low
    rationale: >-
      With tcp_slow_start_after_idle=1 a connection idle for one retransmission timeout restarts from
      the initial window, so a long-lived data connection that pauses between files ramps up again.
    references: ["man 7 tcp: tcp_slow_start_after_idle", "RFC 2861 (TCP congestion window validation)"]
    remediation:
      text: Set net.ipv4.tcp_slow_start_after_idle = 0 and persist it.
      changes:
        - {adapter: sysctl, key: net.ipv4.tcp_slow_start_after_idle, target: "0"}
"""


def site_pack(tmp_path: Path) -> Path:
    """A site-local rules directory holding the new rule, and nothing else."""
    d = tmp_path / "site-rules"
    d.mkdir()
    (d / "local.yml").write_text("rules:\n" + NEW_RULE)
    return d


def rules_copy(tmp_path: Path) -> Path:
    """A copy of the shipped rules/ with the new rule appended to network.yml (no other edit)."""
    d = tmp_path / "rules"
    shutil.copytree(REPO / "rules", d)
    net = d / "network.yml"
    net.write_text(net.read_text().rstrip("\n") + "\n\n" + NEW_RULE)
    return d
