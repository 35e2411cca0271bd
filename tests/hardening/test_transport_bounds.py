"""What one host sends is bounded, and nothing one host does aborts the others."""

from __future__ import annotations

import pytest

from advisor.collect.collector import collect_site_facts, interpret
from advisor.site.model import Host, Site
from advisor.transport.base import MAX_OUTPUT_BYTES, Command, CommandResult, Transport
from advisor.transport.factory import SshOptions
from advisor.transport.ssh import BatchScript, SshTransport
from probes import all_probes
from tests.support.sshd import sshd_available


@pytest.mark.skipif(not sshd_available(), reason="needs /usr/sbin/sshd")
def test_output_past_the_cap_is_cut_and_marked_truncated(sshd):  # noqa: F811
    opts = SshOptions(ssh_config_path=None, use_agent=False, look_for_keys=False, system_known_hosts_path=None)
    with SshTransport(sshd.host(), opts) as t:
        big, small = t.run_batch([Command(key="big", script=f"head -c {MAX_OUTPUT_BYTES + 5000} /dev/zero"),
                                  Command(key="small", script="echo fine")])
    assert big.truncated and len(big.stdout) == MAX_OUTPUT_BYTES
    assert not small.truncated and small.stdout == "fine\n"
    r = interpret(all_probes()["network.sysctl"], big)
    assert r.status.value == "error" and "truncated" in r.message


def test_forged_frames_do_not_raise():
    script = BatchScript.build([Command(key="a", script="true")])
    p = script.parser("h", "u")
    tok = script.token
    p.feed(f"@@SA {tok} BEGIN uid=0 enc=b64\n".encode())
    for line in (f"@@SA {tok} R x y z w v", f"@@SA {tok} R 99 0 1 2 0", f"@@SA {tok} R -1 0 1 2 0 5 5",
                 f"@@SA {tok} R {'9' * 5000} 0 1 2 0", f"@@SA {tok} O", "!!!not base64!!!", f"@@SA {tok} Z"):
        p.feed(line.encode() + b"\n")
    p.feed(b"x" * (1 << 17))  # a line without end
    [r] = p.results()
    assert r.rc is None and p.garbled >= 3


class _Exploding(Transport):
    def __init__(self, exc: BaseException):
        self.exc = exc

    def run_batch(self, commands: list[Command]) -> list[CommandResult]:
        raise self.exc


class _Fine(Transport):
    is_local = False

    def run_batch(self, commands: list[Command]) -> list[CommandResult]:
        return [CommandResult(key=c.key, rc=0, stdout="@@storadvise-not-applicable: test\n") for c in commands]


def test_no_exception_of_one_host_aborts_the_others():
    bad = {"v": ValueError("forged frame"), "u": UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad"),
           "m": MemoryError(), "k": KeyError("x")}
    site = Site(name="s", hosts=[Host(name=n) for n in [*bad, "ok1", "ok2"]])
    facts = collect_site_facts(site, lambda h: _Exploding(bad[h.name]) if h.name in bad else _Fine(), parallel=4)
    for n, exc in bad.items():
        hf = facts.hosts[n]
        assert not hf.reachable and type(exc).__name__ in hf.errors[0] and "\n" not in hf.errors[0]
    assert facts.hosts["ok1"].reachable and facts.hosts["ok2"].reachable
    assert all(r.status.value == "not_applicable" for r in facts.hosts["ok1"].probes.values())
