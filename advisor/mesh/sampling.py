"""What each end of a mesh test samples from its kernel while the test runs (pure: builds sh text,
parses its output).

* the sender's TCP_INFO of the test connection: ``ss -tinoH state established`` filtered to the
  connection (``-o``: without it ss prints none of the negotiated options ``ts`` and ``sack``), every SAMPLE_INTERVAL_S while the test runs (advisor.mesh.tcp_info parses it);
* the NIC byte counters (/sys/class/net/IF/statistics/{tx,rx}_bytes) of the interface that
  carries the test, just before and just after: what the NIC moved beyond the test's own bytes
  is other traffic (a loopback interface is not a NIC: its counters are not read);
* that interface's error and drop counters (``ERROR_STATISTICS``, the kernel's names for every
  driver), just before and just after: a counter that rose during the test is the NIC's part in
  the loss the test saw (probes/nic_counters.py says which are errors and which drops);
* the machine's CPU time (first line of /proc/stat) before and after: the share of it that was
  busy, all cores together (on a shared machine: everyone's load, so recorded, not decisive);
* the host's CPU pressure (/proc/pressure/cpu, PSI ``some``, kernel >= 4.20) before and after:
  the share of the test during which some task of the host was ready to run with no CPU free
  (the kernel's network processing included, which no iperf3 schedstat shows);
* the iperf3 process's scheduler statistics (/proc/PID/schedstat: time on a CPU, time waiting
  on a run queue, in ns): the time iperf3 was ready to run but had no CPU is what CPU
  contention took from this test, whoever caused it.

The client samples around its own iperf3 command (``wrap_client``); the server end (the sender
of a --bidir test's reverse direction) starts its sampler with the one-shot server
(``server_start_fragment``) and reports with the stop script (``server_report_fragment``).
Each prints a section that starts with SECTION_MARK after everything else it prints.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from advisor.util.host_tmp import MKTEMP
from advisor.mesh.tcp_info import SAMPLE_MARK

SECTION_MARK = "@@storadvise-sampling"
#: seconds between two ``ss`` samples
SAMPLE_INTERVAL_S = 0.25

#: the statistics files read before and after each test (Documentation/ABI/testing/sysfs-class-net-statistics)
ERROR_STATISTICS = ("rx_crc_errors", "rx_frame_errors", "rx_length_errors", "rx_missed_errors", "rx_fifo_errors",
                    "rx_over_errors", "rx_errors", "rx_dropped", "tx_errors", "tx_carrier_errors", "tx_aborted_errors",
                    "tx_fifo_errors", "tx_dropped")

_NIC_FN = (
    'snic() { [ -n "$sif" ] && [ -r "/sys/class/net/$sif/statistics/tx_bytes" ] && '
    'printf "%s %s" "$(cat "/sys/class/net/$sif/statistics/tx_bytes")" "$(cat "/sys/class/net/$sif/statistics/rx_bytes")"; }\n'
    # the error and drop counters, name=value, by the shell's own read (no process per file)
    f'serr() {{ [ -n "$sif" ] || return 0; for f in {" ".join(ERROR_STATISTICS)}; do '
    'v=; read -r v 2>/dev/null <"/sys/class/net/$sif/statistics/$f" && printf " %s=%s" "$f" "$v"; done; }\n'
    # the host's CPU pressure (PSI, kernel >= 4.20): microseconds some task waited for a CPU
    "spsi() { sed -n 's/^some .*total=\\([0-9]*\\).*/\\1/p' /proc/pressure/cpu 2>/dev/null; }\n"
)


def _ss_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


#: prints the descendants of pid $1 (via /proc/PID/task/TID/children)
_KIDS_FN = 'kids() { for k in $(cat /proc/$1/task/*/children 2>/dev/null); do echo $k; kids $k; done; }\n'


def _loop(filter_expr: str, out: str, alive: str, root: str) -> str:
    """A background loop sampling ``ss`` into ``out`` while ``alive`` holds, and the schedstat of
    ``root`` and its descendants into ``out``.sched; its pid in $sp."""
    return (
        _KIDS_FN
        + f"( while {alive}; do echo {SAMPLE_MARK}; ss -tinoH state established {filter_expr} 2>/dev/null; "
        f"for k in {root} $(kids {root}); do read c </proc/$k/comm && read a b n </proc/$k/schedstat "
        f"&& echo \"sched $k $c $a $b $n\" >>{out}.sched; done 2>/dev/null; "
        f"sleep {SAMPLE_INTERVAL_S:g}; done ) >{out} 2>/dev/null </dev/null &\nsp=$!\n"
    )


def wrap_client(command: str, address: str, port: int) -> str:
    """``command`` (the iperf3 client) with the sender's sampling around it; the exit status is
    ``command``'s. The section is printed after the command's own output."""
    a = shlex.quote(address)
    filt = f"dst {shlex.quote(_ss_host(address))} dport = :{int(port)}"
    return (
        f'sd=$({MKTEMP} 2>/dev/null) || sd=""\n'
        f"sif=$(ip -o route get {a} 2>/dev/null | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p' | head -n 1)\n"
        '[ "$sif" = lo ] && sif=""\n'
        + _NIC_FN
        + 'n0=$(snic); e0=$(serr); c0=$(head -n 1 /proc/stat 2>/dev/null); q0=$(spsi)\n'
        + "{\n" + command + "\n} &\nip3=$!\n"
        + 'if [ -n "$sd" ]; then\n' + _loop(filt, '"$sd/ss"', '[ -d "$sd" ] && kill -0 $ip3 2>/dev/null', "$ip3")
        + "fi\n"
        + "wait $ip3; src=$?\n"
        + 'n1=$(snic); e1=$(serr); c1=$(head -n 1 /proc/stat 2>/dev/null); q1=$(spsi)\n'
        # the loop ends by itself once iperf3 has (never killed: its sleep would outlive it)
        + '[ -n "$sd" ] && wait $sp 2>/dev/null\n'
        + f'echo; echo {SECTION_MARK}; echo "nic ${{sif:--}} $n0 $n1"; echo "nicerr0$e0"; echo "nicerr1$e1"; '
        'echo "cpu0 $c0"; echo "cpu1 $c1"; echo "psi $q0 $q1"\n'
        + 'command -v ss >/dev/null 2>&1 || echo noss\n'
        + '[ -n "$sd" ] && { cat "$sd/ss.sched" "$sd/ss" 2>/dev/null; rm -rf "$sd"; }\n'
        + "(exit $src)"
    )


def server_start_fragment(bind: str | None, port: int) -> str:
    """Run in the server start script after ``pid`` (the server) and ``d`` (its directory) are set:
    counters now into $d, and the sampler of the server's sockets on ``port`` until it exits."""
    filt = f"sport = :{int(port)}" + (f" src {shlex.quote(_ss_host(bind))}" if bind else "")
    sif = (f"sif=$(ip -o addr show to {shlex.quote(bind)} 2>/dev/null | awk '{{print $2; exit}}')\n"
           if bind else 'sif=""\n')
    return (
        sif + '[ "$sif" = lo ] && sif=""\n' + _NIC_FN
        + 'echo "$sif $(snic)" >"$d/nic0"; serr >"$d/nicerr0"; head -n 1 /proc/stat >"$d/cpu0" 2>/dev/null; spsi >"$d/psi0"\n'
        + _loop(filt, '"$d/ss"', 'kill -0 $pid 2>/dev/null && [ -d "$d" ]', "$pid")
        + 'echo $sp >"$d/sampler"\n'
    )


def server_report_fragment(workdir: str) -> str:
    """Run by the stop script before it removes ``workdir``: the server end's section."""
    d = shlex.quote(workdir)
    return (
        f'sp=""\nif [ -f {d}/nic0 ]; then\n'
        f'read sp <{d}/sampler\nread sif n0a n0b <{d}/nic0\n'
        + _NIC_FN
        + f'n1=$(snic); c1=$(head -n 1 /proc/stat 2>/dev/null); q1=$(spsi)\n'
        f'echo {SECTION_MARK}; echo "nic ${{sif:--}} $n0a $n0b $n1"; echo "nicerr0$(cat {d}/nicerr0 2>/dev/null)"; '
        f'echo "nicerr1$(serr)"; echo "cpu0 $(cat {d}/cpu0 2>/dev/null)"; echo "cpu1 $c1"\n'
        f'echo "psi $(cat {d}/psi0 2>/dev/null) $q1"\n'
        f'cat {d}/ss.sched {d}/ss 2>/dev/null\n'
        'fi\n'
    )


#: run by the stop script after it removed the server's directory: the sampler (started by the
#: start script, not a child of this one) sees the directory gone and ends; wait for it (at most
#: 2 s) so that nothing of the test outlives the stop script
SERVER_SAMPLER_WAIT = (
    'if [ -n "$sp" ]; then i=0; while kill -0 "$sp" 2>/dev/null && [ $i -lt 40 ]; do sleep 0.05; i=$((i+1)); done; fi\n'
)


@dataclass
class EndSample:
    """One end's section: the interface and its counters, the CPU lines, the ss samples."""

    interface: str | None = None
    tx_before: int | None = None
    rx_before: int | None = None
    tx_after: int | None = None
    rx_after: int | None = None
    cpu_busy_frac: float | None = None
    #: seconds during which some task of the host waited for a CPU (PSI ``some``; None: no PSI)
    cpu_pressure_s: float | None = None
    #: iperf3's time on a CPU and waiting for one (run queue), seconds, from its last schedstat
    iperf3_run_s: float | None = None
    iperf3_wait_s: float | None = None
    ss_text: str = ""
    ss_missing: bool = False
    #: the interface's error and drop counters (ERROR_STATISTICS) before and after the test
    counters_before: dict[str, int] | None = None
    counters_after: dict[str, int] | None = None

    @property
    def nic_bytes(self) -> int | None:
        """Bytes the interface moved (both ways) between the two readings."""
        if None in (self.tx_before, self.rx_before, self.tx_after, self.rx_after):
            return None
        return max(0, self.tx_after - self.tx_before) + max(0, self.rx_after - self.rx_before)


def split_section(text: str) -> tuple[str, str | None]:
    """(the output before the section, the section without its mark or None)."""
    text = text or ""
    if text.startswith(SECTION_MARK + "\n") or text.strip() == SECTION_MARK:
        return "", text[len(SECTION_MARK):].lstrip("\n")
    before, sep, after = text.partition("\n" + SECTION_MARK + "\n")
    if not sep:
        return text, None
    return before, after


def _stat_busy(before: str, after: str) -> float | None:
    """Busy share of all CPU time between two ``cpu ...`` lines of /proc/stat (idle + iowait idle)."""
    try:
        a = [int(x) for x in before.split()[1:]]
        b = [int(x) for x in after.split()[1:]]
    except ValueError:
        return None
    if len(a) < 5 or len(a) != len(b):
        return None
    # user nice system idle iowait irq softirq steal guest guest_nice: guest time is already in user
    total = sum(y - x for x, y in zip(a[:8], b[:8]))
    idle = (b[3] - a[3]) + (b[4] - a[4])
    if total <= 0:
        return None
    return max(0.0, min(1.0, 1.0 - idle / total))


def parse_section(section: str | None) -> EndSample | None:
    """The EndSample of a section (None: the end printed none, e.g. an older script)."""
    if section is None:
        return None
    out = EndSample()
    head, sep, ss_text = section.partition(SAMPLE_MARK)
    out.ss_text = (SAMPLE_MARK + ss_text) if sep else ""
    cpu: dict[str, str] = {}
    sched: dict[str, tuple[int, int]] = {}
    for line in head.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "sched" and len(parts) >= 5 and parts[2] == "iperf3" and parts[3].isdigit() \
                and parts[4].isdigit():
            sched[parts[1]] = (int(parts[3]), int(parts[4]))  # cumulative: the last line of a pid holds its totals
            continue
        if parts[0] == "nic" and len(parts) >= 2:
            out.interface = None if parts[1] == "-" else parts[1]
            nums = [int(x) for x in parts[2:] if x.isdigit()]
            if len(nums) == 4 and out.interface:
                out.tx_before, out.rx_before, out.tx_after, out.rx_after = nums
        elif parts[0] in ("nicerr0", "nicerr1"):
            values = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
            counted = {k: int(v) for k, v in values.items() if k in ERROR_STATISTICS and v.isdigit() and len(v) <= 20}
            setattr(out, "counters_before" if parts[0] == "nicerr0" else "counters_after", counted)
        elif parts[0] in ("cpu0", "cpu1"):
            cpu[parts[0]] = " ".join(parts[1:])
        elif parts[0] == "psi" and len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            out.cpu_pressure_s = max(0, int(parts[2]) - int(parts[1])) / 1e6
        elif parts[0] == "noss":
            out.ss_missing = True
    if sched:
        out.iperf3_run_s = sum(a for a, _ in sched.values()) / 1e9
        out.iperf3_wait_s = sum(b for _, b in sched.values()) / 1e9
    if cpu.get("cpu0", "").startswith("cpu") and cpu.get("cpu1", "").startswith("cpu"):
        out.cpu_busy_frac = _stat_busy(cpu["cpu0"], cpu["cpu1"])
    return out
