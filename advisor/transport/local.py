"""The local transport: each command's script through ``sh -c`` on this machine."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time

from advisor.transport.base import Command, CommandResult, Transport, sudo_flag


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class LocalTransport(Transport):
    """Runs commands with ``sh -c`` in their own process group, stdin from /dev/null.

    ``sudo``: None (auto) runs the commands that ask for it through ``sudo -n`` when not root;
    False never uses sudo; True runs every command through it (when not root). ``sudo -n`` never
    prompts: a password requirement fails at once with an explanation in the result's stderr.
    On timeout the whole process group gets SIGTERM, then SIGKILL after ``kill_grace`` seconds.
    """

    is_local = True

    def __init__(self, sudo: bool | None = None, command_timeout: float | None = None, kill_grace: float = 1.0):
        self.sudo = sudo
        self.command_timeout = command_timeout
        self.kill_grace = kill_grace

    def _argv(self, cmd: Command) -> tuple[list[str], bool]:
        use_sudo = sudo_flag(cmd, self.sudo) and os.geteuid() != 0
        argv = ["sh", "-c", cmd.script]
        return (["sudo", "-n", "--", *argv] if use_sudo else argv), use_sudo

    def _run_one(self, cmd: Command) -> CommandResult:
        timeout = float(self.command_timeout if self.command_timeout is not None else cmd.timeout)
        argv, use_sudo = self._argv(cmd)
        # files, not pipes: a grandchild that outlives the group cannot block us on a pipe
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            start = time.monotonic()
            try:
                proc = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
                )
            except FileNotFoundError as e:
                what = "sudo is not installed" if use_sudo else f"cannot run sh: {e}"
                return CommandResult(key=cmd.key, rc=127, stderr=what + "\n")
            timed_out = False
            try:
                rc: int | None = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=self.kill_grace)
                except subprocess.TimeoutExpired:
                    _kill_group(proc.pid, signal.SIGKILL)
                    proc.wait()
                _kill_group(proc.pid, signal.SIGKILL)  # stragglers that ignored TERM
                rc = None
            duration = time.monotonic() - start
            out.seek(0)
            err.seek(0)
            stdout = out.read().decode("utf-8", "replace")
            stderr = err.read().decode("utf-8", "replace")
        if timed_out:
            sep = "" if not stderr or stderr.endswith("\n") else "\n"
            stderr += f"{sep}storadvise: timed out after {timeout:g}s (killed)\n"
        elif use_sudo and rc not in (0, None):
            from advisor.transport.batch_framing import explain_sudo

            stderr = explain_sudo(stderr, rc, "localhost", "") or stderr
        return CommandResult(
            key=cmd.key, rc=rc, stdout=stdout, stderr=stderr, duration_s=round(duration, 6), timed_out=timed_out
        )

    def run_batch(self, commands: list[Command]) -> list[CommandResult]:
        return [self._run_one(c) for c in commands]
