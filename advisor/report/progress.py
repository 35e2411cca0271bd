"""The scan's progress bar on stderr (hidden with --json), with the columns of advisor.util.progress_bars."""

from __future__ import annotations

from rich.console import Console
from rich.progress import Progress

from advisor.util.progress_bars import progress_columns


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


class InputFilesProgress:
    """A bar over the bytes of input files read in order (logs, accounting exports), with the time left.

    It watches from outside the reader: a background thread reads this process's file offsets in
    /proc/self/fdinfo for the file being read, so parsers keep their own fast loops untouched.
    Files before the one open count as read. Without /proc (not Linux) the bar only counts files.
    """

    def __init__(self, paths: list[str], label: str, enabled: bool, console: Console | None = None,
                 interval: float = 0.5):
        import os

        self.paths = [os.path.realpath(p) for p in paths]
        self.sizes = []
        for p in self.paths:
            try:
                self.sizes.append(os.path.getsize(p))
            except OSError:
                self.sizes.append(0)
        self.interval = interval
        self.done_before = 0  # index of the newest file seen open
        console = console or Console(stderr=True)
        # only on a terminal: a pipe or a log file gets the command's own output, nothing else
        self.progress = Progress(*progress_columns("dim"), console=console, transient=True,
                                 disable=not (enabled and console.is_terminal))
        self.task = self.progress.add_task(label, total=sum(self.sizes) or None, last="")
        self._stop = None
        self._thread = None

    def _offset(self) -> tuple[int, int] | None:
        """(index of the input file open now, its offset), or None when none is open."""
        import os

        try:
            fds = os.listdir("/proc/self/fd")
        except OSError:
            return None
        for fd in fds:
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if target in self.paths:
                try:
                    with open(f"/proc/self/fdinfo/{fd}") as fh:
                        pos = int(fh.readline().split()[1])
                except (OSError, ValueError, IndexError):
                    continue
                return self.paths.index(target), pos
        return None

    def poll(self) -> int:
        """Update the bar from the file offsets now; returns the bytes counted as read."""
        seen = self._offset()
        if seen is not None:
            self.done_before = max(self.done_before, seen[0])
        done = sum(self.sizes[: self.done_before])
        if seen is not None and seen[0] == self.done_before:
            done += min(seen[1], self.sizes[seen[0]])
        name = self.paths[self.done_before].rsplit("/", 1)[-1] if self.paths else ""
        self.progress.update(self.task, completed=done, last=name)
        return done

    def __enter__(self) -> "InputFilesProgress":
        import threading

        self.progress.__enter__()
        self._stop = threading.Event()

        def watch() -> None:
            while not self._stop.wait(self.interval):
                self.poll()

        self._thread = threading.Thread(target=watch, name="input-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.progress.__exit__(*exc)
