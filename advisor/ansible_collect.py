"""Collection through Ansible: the same probe batch the built-in collector sends, run by
``playbooks/collect.yml``, written into the capture layout ``storadvise scan --from`` reads.

Two halves, both from the probe registry and the SSH transport's batch wrapper (never a copied
list of commands):

* ``batch_vars``: per host, the wrapper script (``BatchScript``) and the commands it carries,
  written by ``storadvise collect --ansible-vars FILE`` as Ansible data (every string ``!unsafe``).
* ``import_frames``: the playbook saves each host's framed stdout under ``DIR/.ansible/``;
  this decodes it with the transport's own ``BatchParser`` and writes the capture and manifest
  exactly as ``storadvise collect`` does.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from advisor.apply.ansible_data import as_data, dump_data, load_data
from advisor.atomic_files import write_atomic
from advisor.collector import now_iso, probe_context, probes_for, write_manifest
from advisor.errors import StoradviseError
from advisor.facts import HostFacts
from advisor.path_component import path_component
from advisor.probe_helper import HostCommands
from advisor.secret_vars import redact_vars
from advisor.site import Site
from advisor.transport.base import Command
from advisor.transport.capture_objects import CaptureObjects
from advisor.transport.captured import write_capture
from advisor.transport.ssh import BatchScript

VARS_FORMAT = 1
#: where the playbook saves each host's raw frames inside the capture directory
FRAMES_DIR = ".ansible"


def batch_vars(site: Site, hosts: list, sample_seconds: float, probes: list[str] | None = None,
               requested: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """The ``storadvise_collect`` variable: per host, its batch wrapper and commands (``requested``:
    the keys the loaded rules ask the probes to read, advisor.probe_requests)."""
    out: dict[str, Any] = {}
    for host in hosts:
        ctx = probe_context(site, host, False, sample_seconds, requested)
        host_commands = HostCommands(ctx)
        commands = [host_commands.command(p) for p in probes_for(host, probes, site.storage_systems)]
        script = BatchScript.build(commands, host.sudo)
        out[host.name] = {
            "token": script.token,
            "commands": [c.model_dump() for c in commands],
            "timeouts": script.timeouts,
            "sudo": script.sudo,
            "wrapper": script.text,
        }
    # the site as the manifest records it: secrets (a become password) never reach the vars file
    return {"format": VARS_FORMAT, "site": redact_vars(json.loads(site.model_dump_json())), "hosts": out}


def write_vars_file(path: Path, data: dict[str, Any]) -> None:
    # host names, addresses and the site's vars: 0600 from the first byte, never a moment at 0644
    write_atomic(path, dump_data({"storadvise_collect": as_data(data)}), mode=0o600)


def read_vars_file(path: Path) -> dict[str, Any]:
    try:
        data = load_data(path.read_text())["storadvise_collect"]
        if data.get("format") != VARS_FORMAT or not isinstance(data.get("hosts"), dict):
            raise ValueError(f"not format {VARS_FORMAT}")
        return data
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
        raise StoradviseError(f"{path}: not a storadvise collect vars file ({e})") from None


def _host_results(name: str, spec: dict[str, Any], frames_path: Path):
    commands = [Command(**c) for c in spec["commands"]]
    script = BatchScript(commands=commands, timeouts=[float(t) for t in spec["timeouts"]],
                         sudo=[bool(s) for s in spec["sudo"]], token=str(spec["token"]), text="")
    if not frames_path.is_file():
        return commands, None, f"{name}: no output from Ansible (unreachable or not in the play)"
    try:
        saved = json.loads(frames_path.read_text(encoding="utf-8", errors="surrogateescape"))
        stdout = str(saved.get("stdout", ""))
    except (ValueError, AttributeError) as e:
        return commands, None, f"{name}: saved Ansible output {frames_path} unreadable: {e}"
    parser = script.parser(name)
    parser.feed(stdout.encode("utf-8", "surrogateescape") + b"\n")  # Ansible strips the last newline
    if parser.fatal:
        return commands, None, f"{name}: the batch could not start: {parser.fatal}"
    if not parser.began:
        why = str(saved.get("msg") or saved.get("stderr") or "no output").strip().splitlines()
        return commands, None, f"{name}: the remote shell did not run the batch: {(why or ['no output'])[0][:200]}"
    if not parser.done:
        return commands, parser.results(f"storadvise: the session ended early (exit status {saved.get('rc')})"), None
    return commands, parser.results(), None


def import_frames(directory: Path, vars_path: Path) -> dict[str, HostFacts]:
    """Write the capture (outputs, manifest) from the frames the playbook saved in ``directory``."""
    data = read_vars_file(vars_path)
    started = now_iso()
    frames = directory / FRAMES_DIR
    site = Site.model_validate(data["site"])
    hosts: dict[str, HostFacts] = {}
    objects = CaptureObjects(directory)
    for name, spec in data["hosts"].items():
        path_component(name, f"{vars_path}: host name")
        hf = HostFacts(name=name)
        commands, results, error = _host_results(name, spec, frames / f"{name}.json")
        if error:
            hf.reachable = False
            hf.errors.append(error)
        else:
            write_capture(directory, name, commands, results, objects)
        hosts[name] = hf
    write_manifest(directory, site, started, hosts)
    shutil.rmtree(frames, ignore_errors=True)
    return hosts
