"""The scan's progress bar on stderr: one tick per host (hidden with --json)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class ScanProgress:
    """A rich progress bar on stderr: one tick per host."""

    def __init__(self, total: int, label: str, enabled: bool, console: Console | None = None):
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TextColumn("{task.fields[last]}"),
                                 console=console or Console(stderr=True), transient=True, disable=not enabled)
        self.task = self.progress.add_task(label, total=total, last="")

    def __enter__(self) -> "ScanProgress":
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def host_done(self, host: str, finished: bool, message: str) -> None:
        self.progress.update(self.task, advance=1 if finished else 0, last=f"{host}: {message}")
