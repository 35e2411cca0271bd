"""Progress bars on stderr (hidden with --json): the columns every long operation shows, and the scan's bar.

Every bar shows done/total, the time elapsed and an estimate of the time left (rich's estimate from
the recent rate: for a scan, hosts per second; for the mesh, rounds, which take the same time each).
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)
from rich.text import Text


class TimeLeftColumn(ProgressColumn):
    """``~1:23 left`` while the task runs (blank until there is a rate to estimate from)."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = TimeRemainingColumn()

    def render(self, task) -> Text:
        if task.finished or task.time_remaining is None:
            return Text("")
        return Text("~" + self.inner.render(task).plain + " left", style="progress.remaining")


def progress_columns(last_style: str = "") -> tuple[ProgressColumn, ...]:
    """Description, bar, done/total, elapsed, time left, and the last event (``task.fields['last']``)."""
    return (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeLeftColumn(),
            TextColumn("{task.fields[last]}", style=last_style))


class ScanProgress:
    """A rich progress bar on stderr: one tick per host."""

    def __init__(self, total: int, label: str, enabled: bool, console: Console | None = None):
        self.progress = Progress(*progress_columns(), console=console or Console(stderr=True), transient=True,
                                 disable=not enabled)
        self.task = self.progress.add_task(label, total=total, last="")

    def __enter__(self) -> "ScanProgress":
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def host_done(self, host: str, finished: bool, message: str) -> None:
        self.progress.update(self.task, advance=1 if finished else 0, last=f"{host}: {message}")


class StepProgress:
    """A bar over steps whose count is known once the operation starts (``update(done, total, what)``)."""

    def __init__(self, label: str, enabled: bool, console: Console | None = None):
        self.progress = Progress(*progress_columns("dim"), console=console or Console(stderr=True), transient=True,
                                 disable=not enabled)
        self.task = self.progress.add_task(label, total=None, last="")

    def __enter__(self) -> "StepProgress":
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def update(self, done: int, total: int, what: str) -> None:
        self.progress.update(self.task, completed=done, total=total, last=what)
