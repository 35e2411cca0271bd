"""lustre.params: the probe's script over a stand-in lctl on PATH, the parser on real captures, the rule pack."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.model.findings import FindingStatus
from advisor.rules.engine import evaluate
from advisor.storage_kinds import get_storage_kind
from probes import get_probe
from probes.probe import NOT_APPLICABLE_MARKER, ProbeContext, ProbeParseError

PROBE = get_probe("lustre.params")
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "lustre.params"


def _run_script(tmp_path: Path, body: str) -> str:
    tool = tmp_path / "lctl"
    tool.write_text("#!/bin/sh\n" + body)
    tool.chmod(0o755)
    out = subprocess.run(["sh", "-c", PROBE.script(ProbeContext(host="wn1"))], capture_output=True, text=True,
                         env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_script_without_lctl_is_not_applicable():
    out = subprocess.run(["sh", "-c", PROBE.script(ProbeContext(host="x"))], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin"})
    assert out.stdout.startswith(NOT_APPLICABLE_MARKER)


def test_script_asks_for_the_client_tunables_and_keeps_lctl_errors(tmp_path):
    """lctl exits non-zero when one pattern matches nothing (no llite: not mounted); the rest is still read."""
    (tmp_path / "args").write_text("")
    text = _run_script(tmp_path, (
        f'echo "$@" >> {tmp_path / "args"}\n'
        "cat " + str(REAL / "lustre-qos-notes-osc-max_rpcs_in_flight.txt") + "\n"
        "echo \"error: get_param: param_path 'llite/*/max_read_ahead_mb': No such file or directory\" >&2\n"
        "exit 2\n"))
    args = (tmp_path / "args").read_text().splitlines()[0].split()
    assert args[0] == "get_param" and "osc.*.max_rpcs_in_flight" in args and "llite.*.max_read_ahead_mb" in args
    facts = PROBE.parse(text)
    assert len(facts.osc) == 16 and facts.errors == [
        "error: get_param: param_path 'llite/*/max_read_ahead_mb': No such file or directory"]


def _lctl_with_log(tmp_path: Path, llog: str) -> str:
    """A stand-in lctl: get_param finds no client mount (a server), llog_print runs ``llog``."""
    return _run_script(tmp_path, (
        'if [ "$1" = llog_print ]; then\n' + llog + 'fi\n'
        "echo \"error: get_param: param_path 'osc/*/max_rpcs_in_flight': No such file or directory\" >&2\n"
        "exit 2\n"))


def test_the_mgs_permanent_parameters_are_read_from_its_params_log(tmp_path):
    """On the MGS, ``lctl llog_print params`` prints the set_param -P records (lctl-llog_print(8)'s example)."""
    text = _lctl_with_log(tmp_path, f'[ "$2" = params ] && cat {REAL / "lctl-llog_print-8-params-example.llog"} && exit 0\n')
    facts = PROBE.parse(text)
    assert facts.mgs is True and not facts.client_mounted
    assert [(r.index, r.parameter, r.value) for r in facts.permanent] == [
        (2, "osc.*.max_dirty_mb", "32"), (4, "osc.*.checksum_type", "crc32c")]


def test_a_client_is_not_the_mgs_and_a_denied_log_is_unknown(tmp_path):
    text = _lctl_with_log(tmp_path, 'echo "error: llog_print: no MGS device: No such device" >&2; exit 19\n')
    assert PROBE.parse(text).mgs is False
    text = _lctl_with_log(tmp_path, 'echo "error: llog_print: open /dev/obd: Permission denied" >&2; exit 13\n')
    facts = PROBE.parse(text)
    assert facts.mgs is None and facts.permanent == []
    # a capture made before the probe read the log: the permanent values are not known
    old = text.split("@@section llog")[0]
    assert PROBE.parse(old).mgs is None


def test_a_params_log_that_is_not_records_is_refused(tmp_path):
    text = _lctl_with_log(tmp_path, 'echo "osc.*.max_dirty_mb=32"; exit 0\n')
    with pytest.raises(ProbeParseError, match="llog_print params, record 1"):
        PROBE.parse(text)


def test_lctl_that_prints_nothing_and_fails_is_an_error(tmp_path):
    text = _run_script(tmp_path, "exit 1\n")
    with pytest.raises(ProbeParseError, match="exited with status 1"):
        PROBE.parse(text)


def test_storage_kind_lustre_names_the_probe_and_the_pack():
    kind = get_storage_kind("lustre")
    assert kind.probe_module == "probes.lustre" and kind.rule_pack == "lustre.yml"


def _findings(text: str, rule_prefix: str = "LUSTRE-"):
    facts = PROBE.parse(text)
    h = HostFacts(name="wn1", roles=["worker"], probes={
        "lustre.params": ProbeResult(probe="lustre.params", status=ProbeStatus.ok, facts=facts.model_dump())})
    return [f for f in evaluate(FactSet(site="t", hosts={"wn1": h}), profiles=["generic"]).findings
            if f.rule_id.startswith(rule_prefix)]


def test_default_rpcs_in_flight_fails_on_client_oscs_only():
    """The real capture: 8 client OSCs and 8 MDT-side OSCs at the default of 8; only the client ones are judged."""
    found = _findings((REAL / "lustre-qos-notes-osc-max_rpcs_in_flight.txt").read_text(), "LUSTRE-OSC-RPCS")
    failed = [f for f in found if f.status == FindingStatus.fail]
    assert failed, found
    subjects = {f.subject for f in failed}
    assert subjects == {f"lustrefs-OST000{i}-osc-ffff9552e4e09000" for i in range(8)}
    assert all(f.observed == 8 and f.expected == 16 for f in failed)
    assert any("osc.lustrefs-OST0000-osc-ffff9552e4e09000.max_rpcs_in_flight=8" in str(f.evidence) for f in failed)


def test_tuned_client_passes():
    """The real AWS FSx capture (32 RPCs per OST, 64 per MDT) passes; parameters it lacks are not judged."""
    found = _findings((REAL / "aws-fsx-client-tuning-walk-log-verify.txt").read_text())
    by_rule = {}
    for f in found:
        by_rule.setdefault(f.rule_id, set()).add(f.status)
    assert by_rule["LUSTRE-OSC-RPCS-IN-FLIGHT"] == {FindingStatus.passed}
    assert by_rule["LUSTRE-MDC-RPCS-IN-FLIGHT"] == {FindingStatus.passed}
    assert FindingStatus.fail not in by_rule["LUSTRE-READ-AHEAD"] | by_rule["LUSTRE-OSC-MAX-DIRTY"]


def test_small_read_ahead_and_checksums_off_fail():
    text = ("llite.atlas-ffff88203b1e4000.max_read_ahead_mb=64\n"
            "osc.atlas-OST0001-osc-ffff88203b1e4000.checksums=0\n"
            "osc.atlas-OST0001-osc-ffff88203b1e4000.max_dirty_mb=32\n")
    found = {f.rule_id: f for f in _findings(text) if f.status == FindingStatus.fail}
    assert set(found) == {"LUSTRE-READ-AHEAD", "LUSTRE-OSC-CHECKSUMS", "LUSTRE-OSC-MAX-DIRTY"}
    assert found["LUSTRE-READ-AHEAD"].observed == 64


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["osc.a-OST0000-osc-ffff88203b1e4000.max_dirty_mb=32", "llite.a-ffff1234abcd.x=1",
                                 "mdc.=1", "a.b.c=", "=", "error: get_param: x", "x", "", "osc..p=9" + "9" * 40,
                                 "osc.a.b.c=d=e"]), max_size=12) | st.text())
def test_parser_raises_only_parse_error(lines):
    text = lines if isinstance(lines, str) else "\n".join(lines)
    try:
        PROBE.parse(text)
    except ProbeParseError:
        pass
