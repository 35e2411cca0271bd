"""The columns every long operation's progress bar shows (the scan's hosts, the mesh's rounds):
done/total, the time elapsed and an estimate of the time left (rich's estimate from the recent rate:
for a scan, hosts per second; for the mesh, rounds, which take the same time each)."""

from __future__ import annotations

from rich.progress import (BarColumn, MofNCompleteColumn, ProgressColumn, TextColumn, TimeElapsedColumn,
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
