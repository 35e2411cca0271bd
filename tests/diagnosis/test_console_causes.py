"""The console's diagnosis (advisor/report/console_causes.py): causes first, then hygiene, unexplained
and the symptoms not concluded on, each in its own section."""

from io import StringIO

from rich.console import Console

from advisor.diagnosis.report_types import FindingRef, Predicted
from advisor.report.console_causes import render_causes
from tests.support.reports import make_report


def _text(report) -> str:
    buf = StringIO()
    render_causes(report, Console(file=buf, width=120, color_system=None))
    return buf.getvalue()


def test_symptoms_of_inconclusive_paths_are_not_concluded_never_unexplained():
    rep = make_report()
    rep.unexplained = [FindingRef(rule_id="MESH-ASYMMETRY", subject="wn02 as sender", hosts=["wn02"])]
    rep.inconclusive = [FindingRef(rule_id="MESH-PATH-SLOW", subject=f"gpfs01->{w}", hosts=["gpfs01", w])
                        for w in ("wn01", "wn02")]
    out = _text(rep)
    assert "Unexplained: 1 symptom(s)" in out
    assert "Not concluded: 2 symptom(s) of paths measured while an end was short of CPU or its NIC busy" in out
    assert "measure them again when the hosts are quieter" in out
    assert out.index("Unexplained") < out.index("Not concluded")
    # a report with nothing else diagnosed still shows them
    rep.unexplained = []
    assert "Not concluded: 2" in _text(rep)


def test_the_console_lists_the_first_causes_and_says_how_many_more_the_report_holds():
    """A 10,000-host capture gave 3,335 causes and a console of some 20,000 lines; the first screen is
    what to do first, and the report keeps every cause."""
    from advisor.diagnosis.report_types import Cause
    from advisor.report.console_causes import CONSOLE_CAUSES

    rep = make_report()
    rep.causes = [Cause(id=f"c{i}", title=f"packet loss on the way from c{i:04d}-stor01", kind="by_hand",
                        hosts=[f"c{i:04d}-wn01"], confidence=0.9, action="find where")
                  for i in range(1, CONSOLE_CAUSES + 6)]
    # the first is held further by six others: the first three shown are named, then how many more
    rep.causes[0].predicted = [Predicted(metric="throughput", subject="c0001-stor01->c0001-wn01", now=1e7, after=1e8,
                                         unit="bps", model="link", inputs={"then_held_by": ["c9", "c3", "c4", "c2", "c7", "c8"]})]
    out = _text(rep)
    assert ("the rest is held by: 2. packet loss on the way from c0002-stor01; 3. packet loss on the way from "
            "c0003-stor01; 4. packet loss on the way from c0004-stor01; and 3 more cause(s)") in " ".join(out.split()), out
    assert f"What to change first: {CONSOLE_CAUSES + 5} cause(s)" in out
    assert f"c{CONSOLE_CAUSES:04d}-stor01" in out and f"c{CONSOLE_CAUSES + 1:04d}-stor01" not in out
    rest = ", ".join(f"c{i:04d}-wn01" for i in range(CONSOLE_CAUSES + 1, CONSOLE_CAUSES + 6))
    assert f"… 5 more cause(s), on {rest}: every cause is in the JSON and HTML reports" in " ".join(out.split()), out
    rep.causes = rep.causes[:CONSOLE_CAUSES]
    assert "more cause(s), on" not in _text(rep)


def test_an_error_every_host_reports_alike_is_one_block_with_their_hosts():
    """A capture made before a probe existed lacks it on every host: one block naming the hosts, not one
    per host (10,000 blocks at 10,000 hosts)."""
    from advisor.model.findings import Finding, FindingStatus, Severity
    from advisor.report.console import render_scan

    rep = make_report()
    rep.findings = [Finding(rule_id="SCAN-PROBE-ERROR", subject="nic.ports", hosts=[h], status=FindingStatus.error,
                            severity=Severity.medium, message="not captured") for h in ("wn01", "wn02", "wn03")]
    rep.findings.append(Finding(rule_id="SCAN-PROBE-ERROR", subject="nic.ports", hosts=["wn04"],
                                status=FindingStatus.error, severity=Severity.medium, message="timed out"))
    buf = StringIO()
    render_scan(rep, Console(file=buf, width=120, color_system=None))
    out = buf.getvalue()
    assert out.count("SCAN-PROBE-ERROR [nic.ports]") == 2, out
    assert "hosts: wn[01-03]\n" in out and "hosts: wn04\n" in out
    assert out.index("wn[01-03]") < out.index("timed out")
