"""Progress bars show an estimate of the time left: the scan's bar and the mesh's whole-mesh bar."""

from __future__ import annotations

import io

from rich.console import Console
from rich.progress import Progress

from advisor.mesh.render import RoundProgress
from advisor.mesh.runner import MeshProgress
from advisor.util.progress_bars import progress_columns


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def _text(progress, console):
    console.print(progress.get_renderable())
    return console.file.getvalue()


def test_time_left_from_the_rate_so_far():
    clock = Clock()
    console = Console(file=io.StringIO(), width=160, color_system=None)
    p = Progress(*progress_columns(), console=console, get_time=clock, auto_refresh=False)
    task = p.add_task("scanning demo", total=10, last="")
    assert " left" not in _text(p, console)  # no rate yet, no estimate
    for _ in range(4):
        clock.t += 3.0
        p.update(task, advance=1, last="host done")
    text = _text(p, console)
    assert "4/10" in text and "~0:00:18 left" in text  # 6 hosts to go at 3 s each


def test_mesh_has_a_whole_mesh_bar_with_time_left():
    console = Console(file=io.StringIO(), width=160, color_system=None)
    bar = RoundProgress(console)
    clock = Clock()
    bar.progress.get_time = clock
    for rnd in (1, 2):
        bar(MeshProgress("round-start", rnd, 5, 0, 4))
        for done in range(1, 5):
            clock.t += 2.5
            bar(MeshProgress("test-done", rnd, 5, done, 4, f"path {done}"))
        bar(MeshProgress("round-done", rnd, 5, 4, 4))
    overall = bar.progress.tasks[0]
    assert overall.description == "mesh" and overall.total == 5 and overall.completed == 2
    assert "~0:00:30 left" in _text(bar.progress, console)  # 3 rounds of 10 s to go


def test_input_files_progress_follows_the_reader(tmp_path):
    from advisor.report.progress import InputFilesProgress

    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_bytes(b"x" * 1_000_000)
    b.write_bytes(b"y" * 3_000_000)
    console = Console(file=io.StringIO(), width=160, color_system=None)
    bar = InputFilesProgress([str(a), str(b)], "ingest", enabled=True, console=console)
    assert bar.poll() == 0
    with open(a, "rb", buffering=0) as f:
        f.read(400_000)
        assert bar.poll() == 400_000
    with open(b, "rb", buffering=0) as f:
        f.read(1_500_000)
        assert bar.poll() == 1_000_000 + 1_500_000  # the first file counts as read
    assert bar.poll() == 1_000_000  # nothing open: the files before the last one seen
    assert bar.progress.tasks[0].total == 4_000_000
    with bar:  # the watcher thread starts and stops cleanly
        pass
