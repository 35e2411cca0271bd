"""Collection through Ansible: the same probe batches the built-in collector sends, run by
``playbooks/collect.yml``, written into the capture layout ``storadvise scan --from`` reads.

Two halves, both from the probe registry and the SSH transport's batch framing (never a copied
list of commands):

* ``batch_vars``: one wrapper script for all hosts (``SharedScript``: each distinct probe script
  once, and each host's batch chosen by ``--host NAME``), each distinct batch of commands once, and
  per host only the number of its batch; written by ``storadvise collect --ansible-vars FILE`` as
  three files (``write_vars_file``). The playbook's ``storadvise_batch`` action runs the script on
  each host (no Python on the hosts) and saves the output on the controller, and its
  ``storadvise_capture`` action writes the capture, through the shipped decoder and layout
  (playbooks/module_utils), with no storadvise installed.
* ``import_frames``: ``storadvise collect --from-ansible DIR``: the same capture from results saved
  as ``DIR/.ansible/<host>.json`` (a playbook of the site's own that registers the script task and
  saves the result), through the same decoder and layout.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from advisor.util.ansible_data import as_data, dump_data, load_data
from advisor.util.atomic_files import write_atomic
from advisor.collect.collector import now_iso, probe_context
from advisor.util.errors import StoradviseError
from advisor.model.facts import HostFacts
from advisor.util.path_component import path_component
from advisor.collect.probe_helper import HostCommands
from advisor.collect.probe_plan import probe_plan, root_probes
from advisor.site.secret_vars import redact_vars
from advisor.util.shipped_code import module_utils
from advisor.site.model import Site
from advisor.transport.base import MAX_OUTPUT_BYTES
from advisor.transport.batch_framing import SharedScript

#: 2: one shared script and batches by number (1: a wrapper per host; no longer read)
VARS_FORMAT = 2
_frames = module_utils("storadvise_batch_frames")
#: where ``--from-ansible`` finds each host's saved result inside the capture directory
FRAMES_DIR = _frames.SAVED_DIR
_layout = module_utils("storadvise_capture_layout")


def batch_vars(site: Site, hosts: list, sample_seconds: float, probes: list[str] | None = None,
               requested: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """The ``storadvise_collect`` variable (``requested``: the keys the loaded rules ask the probes
    to read, advisor.rules.probe_requests). Hosts whose commands are the same share one batch."""
    batches: list[tuple[list, bool | None]] = []
    seen: dict[str, int] = {}
    host_batch: dict[str, int] = {}
    for host in hosts:
        plan = probe_plan(site, host, probes)  # what runs where (advisor.collect.probe_plan), as the collector asks it
        host_commands = HostCommands(probe_context(site, host, False, sample_seconds, requested),
                                     root_probes(site, host, plan))
        commands = [host_commands.command(pp.probe) for pp in plan if pp.selected]
        ident = json.dumps([[c.model_dump() for c in commands], host.sudo], sort_keys=True)
        if ident not in seen:
            seen[ident] = len(batches)
            batches.append((commands, host.sudo))
        host_batch[host.name] = seen[ident]
    shared = SharedScript.build(batches, host_batch)
    return {
        "format": VARS_FORMAT,
        # the site as the manifest records it: secrets (a become password) never reach the vars file
        "site": redact_vars(json.loads(site.model_dump_json())),
        "token": shared.token,
        "max_output_bytes": MAX_OUTPUT_BYTES,
        "script": shared.text,
        "batches": [{"commands": [{"key": c.key, "script": c.script, "sudo": c.sudo} for c in b.commands],
                     "timeouts": b.timeouts} for b in shared.batches],
        "hosts": {name: {"batch": n} for name, n in host_batch.items()},
    }


def companion_paths(vars_path: Path) -> tuple[Path, Path]:
    """The script and the batches written beside the vars file ``NAME.yml``: ``NAME.batch.sh`` and
    ``NAME.batches.json``."""
    stem = vars_path.stem if vars_path.suffix in (".yml", ".yaml") else vars_path.name
    out = vars_path.with_name(f"{stem}.batch.sh"), vars_path.with_name(f"{stem}.batches.json")
    if vars_path in out:
        raise StoradviseError(f"{vars_path}: name the vars file NAME.yml (its script and batches go beside it)")
    return out


def write_vars_file(path: Path, data: dict[str, Any]) -> list[Path]:
    """Three files, so that no host's task loads more than it needs (Ansible copies a play's vars
    for every host and task: a 700 KB vars file cost 7 s of controller CPU at 32 hosts; the batch
    play of collect.yml now loads none of them per host):

    * ``path`` (YAML, every string ``!unsafe``): per host its batch number, and the names of the
      other two (the capture play loads it, on the controller);
    * ``NAME.batch.sh``: the shared script, run with ``--host NAME`` on each host;
    * ``NAME.batches.json``: what the ``storadvise_capture`` action decodes with (site, token, batches,
      hosts); the batch play reads its host names once, to choose its hosts.

    Host names, addresses and the site's vars: 0600 from the first byte, never a moment at 0644."""
    script_path, data_path = companion_paths(path)
    small = {"format": VARS_FORMAT, "script": script_path.name, "data": data_path.name, "hosts": data["hosts"]}
    write_atomic(data_path, json.dumps({k: v for k, v in data.items() if k != "script"}, indent=1) + "\n", mode=0o600)
    write_atomic(script_path, data["script"], mode=0o600)
    write_atomic(path, dump_data({"storadvise_collect": as_data(small)}), mode=0o600)
    return [path, script_path, data_path]


def read_vars_file(path: Path) -> dict[str, Any]:
    """The collect data (``batch_vars``'s shape) from the vars file and the JSON beside it."""
    try:
        small = load_data(path.read_text())["storadvise_collect"]
        if small.get("format") != VARS_FORMAT:
            raise ValueError(f"not format {VARS_FORMAT}: write it again with storadvise collect --ansible-vars")
        data_path = path.parent / path_component(small.get("data"), f"{path}: data file name")
        data = json.loads(data_path.read_text())
        if data.get("format") != VARS_FORMAT or not isinstance(data.get("hosts"), dict):
            raise ValueError(f"{data_path.name}: not format {VARS_FORMAT}")
        for name, spec in data["hosts"].items():
            path_component(name, f"{path}: host name")
            if not isinstance(spec, dict) or not 0 <= int(spec.get("batch", -1)) < len(data["batches"]):
                raise ValueError(f"host {name}: no batch")
        return data
    except StoradviseError:
        raise
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
        raise StoradviseError(f"{path}: not a storadvise collect vars file ({e})") from None


def import_frames(directory: Path, vars_path: Path) -> dict[str, HostFacts]:
    """Write the capture (outputs, manifest) from the results saved in ``directory/.ansible/``."""
    data = read_vars_file(vars_path)
    started = now_iso()
    frames = directory / FRAMES_DIR
    saved = _frames.read_saved(frames, data)
    written = _layout.write_batch_capture(directory, data, _frames.decode_collect(data, saved), started)
    shutil.rmtree(frames, ignore_errors=True)
    return {name: HostFacts(name=name, reachable=h["reachable"], errors=h["errors"]) for name, h in written.items()}
