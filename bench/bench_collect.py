"""Benchmark: collection of N lab hosts by the built-in SSH pool (`storadvise collect`) against
playbooks/collect.yml (`storadvise collect --ansible-vars` + ansible-playbook, whose
storadvise_capture module writes the capture) and against `ansible all -m setup` (Ansible's own fact
gathering, the peer a site knows), in the same run on the same lab: wall time, controller CPU
(user+sys of the controller's process trees), host-side CPU (the machine's busy time from
/proc/stat during the run, minus the controller's: the lab hosts' sshd, shells and probes run on
the same cores) and peak memory (the largest sum of the trees' resident sets, sampled every 50 ms),
printed with the ratios, and both captures checked to hold the same hosts, probes, scripts and exit
statuses (their outputs differ where the hosts' live values changed between the two collections).

    # root; brings up a lab of N small hosts ("c01".."cNN", worker role, one switch), `lab down` at the end
    .venv/bin/python bench/bench_collect.py --hosts 64 [--forks 32] [--parallel 32] [--ansible-bin DIR]

Heavy on a small machine: every lab host runs its own sshd; the probes run on the same cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import measure  # noqa: E402

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=64)
    ap.add_argument("--parallel", type=int, default=32, help="the built-in pool's --parallel")
    ap.add_argument("--forks", type=int, default=32, help="ansible-playbook -f")
    ap.add_argument("--sample-seconds", default="1")
    ap.add_argument("--ansible-bin", type=Path, default=BIN,
                    help="directory of the ansible-playbook to run (default: this venv's; e.g. a Python 3.12 venv "
                         "holding ansible-core >= 2.20)")
    args = ap.parse_args()
    from advisor.lab.control import lab_down, lab_up

    name = "bench-collect"
    work = Path(tempfile.mkdtemp(prefix="bench-collect-"))
    scen = work / "bench-collect.yml"
    scen.write_text(f"name: {name}\ndescription: bench/bench_collect.py, {args.hosts} small hosts\n"
                    f"hosts:\n  - name: c[01:{args.hosts:02d}]\n    roles: [worker]\n")
    t = time.monotonic()
    up = lab_up(str(scen), recreate=True)
    print(f"lab {name}: {args.hosts} hosts up in {time.monotonic() - t:.1f} s", flush=True)
    try:
        site = up.site_file
        inventory = Path(up.record.dir) / "inventory.ini"
        sa = str(BIN / "storadvise")
        builtin = measure([sa, "collect", "--site", site, "--out", str(work / "builtin"), "--json",
                           "--parallel", str(args.parallel), "--sample-seconds", args.sample_seconds])
        vars_file = work / "collect-vars.yml"
        gen = measure([sa, "collect", "--site", site, "--ansible-vars", str(vars_file),
                       "--sample-seconds", args.sample_seconds])
        env = {**os.environ, "ANSIBLE_HOME": str(work / "ansible-home"), "ANSIBLE_HOST_KEY_CHECKING": "True",
               "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}

        def cold(label: str) -> dict:
            """Each Ansible run starts with no ssh ControlPersist master (as a scheduled run does): its
            own control path directory, so neither run reuses the other's connections."""
            return {**env, "ANSIBLE_SSH_CONTROL_PATH_DIR": str(work / f"cp-{label}")}

        version = subprocess.run([str(args.ansible_bin / "ansible-playbook"), "--version"], capture_output=True,
                                 text=True).stdout.splitlines()[:1]
        print(f"ansible-playbook: {' '.join(version)} ({args.ansible_bin})", flush=True)
        play = measure([str(args.ansible_bin / "ansible-playbook"), "-f", str(args.forks), "-i", str(inventory),
                        str(REPO / "playbooks" / "collect.yml"), "-e", f"storadvise_collect_vars={vars_file}",
                        "-e", f"storadvise_collect_dir={work / 'ansible'}"], cold("collect"))
        ansible = {"wall_s": gen["wall_s"] + play["wall_s"], "cpu_s": gen["cpu_s"] + play["cpu_s"],
                   "hosts_cpu_s": play["hosts_cpu_s"], "peak_rss_mib": max(gen["peak_rss_mib"], play["peak_rss_mib"])}
        setup = measure([str(args.ansible_bin / "ansible"), "all", "-i", str(inventory), "-m", "setup", "-f",
                         str(args.forks), "-o"], cold("setup"))
        ok = sum(" | SUCCESS " in line for line in setup["stdout"].splitlines())
        print(f"machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
              f"{platform.system()} {platform.release()}; {args.hosts} lab hosts on the same machine")
        print(f"{'':16} {'wall s':>8} {'ctl CPU s':>10} {'host CPU s':>11} {'peak MiB':>9}")
        # collect.yml: the vars file written, then the playbook (a first run); the playbook alone is
        # what each further run costs (an AWX project keeps the vars file until the site changes)
        rows = (("built-in", builtin), ("collect.yml", ansible), ("  playbook only", play), (f"setup ({ok} ok)", setup))
        for label, m in rows:
            print(f"{label:16} {m['wall_s']:8.1f} {m['cpu_s']:10.1f} {m['hosts_cpu_s']:11.1f} {m['peak_rss_mib']:9.0f}")
        keys = ("wall_s", "cpu_s", "hosts_cpu_s", "peak_rss_mib")
        for label, a, b in (("collect.yml/built-in", ansible, builtin), ("playbook only/built-in", play, builtin),
                            ("collect.yml/setup", ansible, setup), ("built-in/setup", builtin, setup)):
            print(f"ratio {label}: " + ", ".join(f"{k} {a[k] / b[k]:.2f}x" for k in keys if b[k]))
        # the two collections ran one after the other on live hosts: counters, free memory and
        # clocks differ, so their objects do; what must agree is every host's index: the same
        # probes, exit statuses and scripts (byte-identity on fixed outputs: tests/collect/)
        index = {}
        for label in ("builtin", "ansible"):
            index[label] = {h.name: {k: (v["rc"], v["script"], v["timed_out"], v["truncated"])
                                     for k, v in json.loads((h / "outputs.json").read_text())["outputs"].items()}
                            for h in sorted((work / label / "hosts").iterdir())}
        same = index["builtin"] == index["ansible"] and len(index["builtin"]) == args.hosts
        outputs = sum(len(v) for v in index["builtin"].values())
        stdout_same = sum(
            json.loads((work / "builtin" / "hosts" / h / "outputs.json").read_text())["outputs"][k]["stdout"]
            == json.loads((work / "ansible" / "hosts" / h / "outputs.json").read_text())["outputs"][k]["stdout"]
            for h in index["builtin"] for k in index["builtin"][h]) if same else 0
        print(f"same hosts, probes, scripts and exit statuses in both captures: {same} ({len(index['builtin'])} hosts, "
              f"{outputs} outputs; {stdout_same} of them with the same stdout: the others hold live values)")
        return 0 if same else 1
    finally:
        lab_down(name)
        print(f"lab {name}: down", flush=True)


if __name__ == "__main__":
    sys.exit(main())
