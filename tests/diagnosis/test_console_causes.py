"""The console's diagnosis (advisor/report/console_causes.py): causes first, then hygiene, unexplained
and the symptoms not concluded on, each in its own section."""

from io import StringIO

from rich.console import Console

from advisor.diagnosis.model import FindingRef
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
