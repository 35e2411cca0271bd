"""Scenario parts that describe faults between hosts and what they must produce: firewalls
between two groups (expanded into the receivers' own firewall rulesets by advisor/lab/scenario.py)
and the findings a scenario expects (``expect:``). Schema in docs/lab.md."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class GroupFirewall(BaseModel):
    """A firewall between two groups: every receiver host drops (or rate-limits) what the senders
    send it. Expanded at load time into the receivers' own ``firewall`` rulesets (an nft table
    ``storadvise_lab_gfw<N>``, or ``*filter`` INPUT rules for iptables), so it is the host's
    firewall like any other."""

    src: list[str] = Field(alias="from", min_length=1)
    dst: list[str] = Field(alias="to", min_length=1)
    action: Literal["drop", "limit"] = "drop"
    #: packets per second above which a ``limit`` drops
    rate: int = Field(2000, ge=1, le=10_000_000)
    backend: Literal["nft", "iptables"] = "nft"
    #: only this TCP destination port (default: every packet from the senders)
    port: int | None = Field(None, ge=1, le=65535)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("src", "dst", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    def nft_table(self, index: int, senders: list[str]) -> str:
        addrs = ", ".join(f"{{{{ addr:{s} }}}}" for s in senders)
        port = f" tcp dport {self.port}" if self.port else ""
        verdict = f"limit rate over {self.rate}/second drop" if self.action == "limit" else "drop"
        return (f"table inet storadvise_lab_gfw{index} {{\n  chain input {{\n"
                f"    type filter hook input priority 0; policy accept;\n"
                f"    ip saddr {{ {addrs} }}{port} counter {verdict}\n  }}\n}}\n")

    def iptables_rules(self, index: int, senders: list[str]) -> list[str]:
        port = f" -p tcp -m tcp --dport {self.port}" if self.port else ""  # as iptables-save writes it
        out = []
        for s in senders:
            if self.action == "limit":
                out.append(f"-A INPUT -s {{{{ addr:{s} }}}}/32{port} -m hashlimit --hashlimit-above {self.rate}/sec "
                           f"--hashlimit-burst {self.rate * 2} --hashlimit-mode srcip --hashlimit-name gfw{index} -j DROP")
            else:
                out.append(f"-A INPUT -s {{{{ addr:{s} }}}}/32{port} -j DROP")
        return out


def merge_iptables(existing: str | None, rules: list[str]) -> str:
    """Add INPUT rules to an iptables-restore text's ``*filter`` table (a new one when none)."""
    if not existing or "*filter" not in existing:
        head = (existing.rstrip() + "\n") if existing else ""
        return head + "*filter\n:INPUT ACCEPT [0:0]\n" + "\n".join(rules) + "\nCOMMIT\n"
    lines = existing.splitlines()
    start = lines.index("*filter") if "*filter" in lines else next(i for i, ln in enumerate(lines) if ln.strip() == "*filter")
    commit = next(i for i in range(start, len(lines)) if lines[i].strip() == "COMMIT")
    return "\n".join(lines[:commit] + rules + lines[commit:]) + "\n"


class ExpectedFinding(BaseModel):
    """A finding the scenario's faults must produce (tests and ``lab generate`` read these)."""

    model_config = ConfigDict(extra="forbid")

    #: the rule of the finding (None only for an ``inconclusive`` entry, which names no finding)
    rule: str | None = None
    host: str
    subject: str | None = None
    #: False: no plan can fix it on this host; the plan must list it under "Cannot apply here"
    fixable: bool = True
    #: no remediation exists (a failing disk is replaced by hand): the plan holds nothing for it and
    #: it is still failing after apply (with ``fixable: false``; not listed under "Cannot apply here")
    by_hand: bool = False
    #: the site waives it: the scan reports it waived and the plan leaves it alone
    waived: bool = False
    #: the fault that causes it, in words
    fault: str = ""
    #: a measured symptom (a slow path): the diagnosis must name a cause on ``host`` for it, of kind
    #: ``cause`` (docs/diagnosis.md); whether a fix clears it is a measurement (bench/bench_diagnosis_lab.py)
    symptom: bool = False
    cause: str | None = None
    #: a fault of the measurement, not of the network (the host's CPUs busy during the tests): the
    #: paths measured with it are ``cpu`` (inconclusive) or fine, and no cause names the host for it
    inconclusive: bool = False

    @model_validator(mode="after")
    def _rule_unless_inconclusive(self) -> "ExpectedFinding":
        if self.rule is None and not self.inconclusive:
            raise ValueError(f"expected finding on {self.host!r}: 'rule' is required (unless inconclusive: true)")
        return self
