"""A transport that runs scripts as processes of this machine, optionally inside a network namespace."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from advisor.transport.base import Command, CommandResult, Transport


class SubprocessTransport(Transport):
    """Runs scripts with ``sh -c`` on this machine, or inside ``ip netns exec NS``.

    Real processes, real iperf3: the stand-in for LocalTransport until it lands. A timeout
    kills the script's whole process group.
    """

    is_local = True

    def __init__(self, netns: str | None = None):
        self.netns = netns
        self.calls = 0

    def run_batch(self, commands: list[Command]) -> list[CommandResult]:
        out = []
        for c in commands:
            self.calls += 1
            argv = ["sh", "-c", c.script]
            if self.netns:
                argv = ["ip", "netns", "exec", self.netns] + argv
            t0 = time.monotonic()
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
            try:
                so, se = p.communicate(timeout=c.timeout)
                out.append(CommandResult(key=c.key, rc=p.returncode, stdout=so, stderr=se,
                                         duration_s=time.monotonic() - t0))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                so, se = p.communicate()
                out.append(CommandResult(key=c.key, rc=None, stdout=so, stderr=se,
                                         duration_s=time.monotonic() - t0, timed_out=True))
        return out
