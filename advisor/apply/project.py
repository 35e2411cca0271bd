"""Write a plan as a self-contained Ansible project directory.

DIR/
  ansible.cfg            inventory, roles_path, module_utils; host key checking on
  inventory.yml          the affected hosts with their connection settings, one group per role,
                         one group per change set shared by several hosts (storadvise_changeset_<n>)
  groups.json            host -> those groups: plan_groups.yml (imported first by both playbooks)
                         adds the hosts of a site's own inventory (AWX) to them
  group_vars/<group>.yml the role variables a change set's hosts share (advisor.apply.changesets)
  host_vars/<host>.yml   the role variables only that host has
  apply-tuning.yml       generated for the roles the plan uses (advisor/apply/playbooks_gen.py)
  rollback.yml
  roles/  module_utils/  the roles the plan uses (and apply_summary), the module_utils they import
                         (advisor/apply/project_files.py): a plan of four sysctls carries network_tuning
  PLAN.md  plan.json     what will change: host, setting, old -> new, rule ids

``cd DIR && ansible-playbook apply-tuning.yml`` is the whole apply step.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import msgspec

from advisor.util.ansible_data import dump_data, vars_as_data
from advisor.apply.changesets import VarsLayout, split_vars
from advisor.apply.plan_markdown import plan_markdown
from advisor.apply.planner import Plan
from advisor.apply.playbooks_gen import generated
from advisor.apply.project_files import copy_roles, roles_in_use
from advisor.util.atomic_files import write_atomic
from advisor.util.errors import StoradviseError
from advisor.util.path_component import path_component
from advisor.util.resources import playbooks_dir
from advisor.site.secret_vars import redact_vars
from advisor.site.model import Host, Site

PROJECT_MARK = "plan.json"
#: what every plan directory holds of the shipped playbooks/ (what a plan was made of before: removed
#: when a plan directory is written again); the roles and module_utils are those the plan uses
SHIPPED = ["apply-tuning.yml", "rollback.yml", "plan_groups.yml", "roles", "module_utils"]
#: host -> the plan's groups it is in (plan_groups.yml adds a site inventory's hosts to them)
GROUPS_FILE = "groups.json"
#: the group of every planned host in the plan's own inventory.yml (plan_groups.yml: nothing to add)
PLAN_GROUP = "storadvise_plan"

ANSIBLE_CFG = """\
# Written by storadvise plan. Everything this project needs is in this directory.
[defaults]
inventory = inventory.yml
roles_path = roles
module_utils = module_utils
host_key_checking = True
interpreter_python = auto_silent
retry_files_enabled = False
forks = 16
gathering = explicit

[ssh_connection]
pipelining = True
# no connection multiplexing: a command sent through a live master connection (Ansible's default
# ControlPersist=60s) is never checked against known_hosts again, so a host whose key changed
# within the minute after a run would be accepted; every run verifies every host's key
ssh_args = -C -o ControlMaster=no -o ControlPath=none
"""


def group_name(role: str) -> str:
    return f"storadvise_{role}"


def connection_vars(host: Host, local: bool = False) -> dict[str, Any]:
    """How Ansible reaches the host: SSH with the site's key and known_hosts, or (``local``: a site
    whose hosts are this machine, ``--site local``) no connection at all."""
    if local:
        # the Python storadvise runs on has ansible-core (a dependency): modules run there, no discovery
        return {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                **({"ansible_become": True} if host.sudo else {})}
    v: dict[str, Any] = {"ansible_host": host.connect_address, "ansible_port": host.port}
    if host.user:
        v["ansible_user"] = host.user
    if host.key:
        v["ansible_ssh_private_key_file"] = str(host.key)
    opts = ["-o StrictHostKeyChecking=yes"]
    if host.known_hosts:
        # Ansible splits ssh_common_args with shlex, then ssh splits the option's value at blanks
        # unless double-quoted: both quotings keep a path with blanks (or " -o ProxyCommand=...")
        # one known_hosts file (the site model refuses '"' and control characters in it)
        opts.insert(0, "-o " + shlex.quote(f'UserKnownHostsFile="{host.known_hosts}"'))
    v["ansible_ssh_common_args"] = " ".join(opts)
    if host.sudo:
        v["ansible_become"] = True
    return v


def _write_private(path: Path, text: str | bytes) -> None:
    """Write a file only its owner can read (inventory and host vars may hold become passwords)."""
    write_atomic(path, text, mode=0o600)


def _prepare_dir(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise StoradviseError(f"{out}: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not (out / PROJECT_MARK).exists():
        raise StoradviseError(f"{out}: directory is not empty and holds no storadvise plan; choose a new one (nothing was overwritten)")
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name in SHIPPED + ["host_vars", "group_vars", "inventory.yml", "ansible.cfg", "PLAN.md", GROUPS_FILE,
                               PROJECT_MARK]:
            p = out / name
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            elif p.exists() or p.is_symlink():
                p.unlink()
    except OSError as exc:
        raise StoradviseError(f"{out}: cannot prepare the plan directory: {exc.strerror or exc}") from None


def write_project(plan: Plan, site: Site, out: Path) -> dict[str, Any]:
    """Write the project; returns the plan summary (as plan.json)."""
    out = Path(out)
    _prepare_dir(out)
    src = playbooks_dir()
    roles = roles_in_use(plan)
    try:
        shutil.copy2(src / "plan_groups.yml", out / "plan_groups.yml")
        copy_roles(out, roles)
        for name, text in generated(roles=roles).items():  # the plays of the roles in use, plug-ins included
            (out / name).write_text(text)
        (out / "ansible.cfg").write_text(ANSIBLE_CFG)
        hosts = {h.name: h for h in site.hosts}
        groups: dict[str, dict[str, Any]] = {}
        all_hosts: dict[str, Any] = {}
        for name in plan.hosts:
            h = hosts[name]
            all_hosts[name] = vars_as_data({**h.vars, **connection_vars(h, local=site.transport == "local")},
                                           f"host {name}")
            for role in plan.roles_of(name):
                groups.setdefault(group_name(role), {"hosts": {}})["hosts"][name] = None
        layout = split_vars({name: plan.flat_vars(name) for name in plan.hosts},
                            {name: set(all_hosts[name]) for name in plan.hosts})
        for cs in layout.changesets:
            groups[cs.name] = {"hosts": dict.fromkeys(cs.hosts)}
        membership: dict[str, list[str]] = {name: [] for name in plan.hosts}
        for group, members in groups.items():
            for name in members["hosts"]:
                membership[name].append(group)
        _write_private(out / GROUPS_FILE, json.dumps(membership, indent=1, sort_keys=True) + "\n")
        groups[PLAN_GROUP] = {"hosts": dict.fromkeys(plan.hosts)}
        inventory = {"all": {"hosts": all_hosts, "children": groups}}
        _write_private(out / "inventory.yml",
            "# Written by storadvise plan for site " + site.name + ": the hosts the plan changes.\n"
            "# Every string is !unsafe: values from hosts and site files are data, never templates.\n" + dump_data(inventory))
        _write_vars(out, site.name, layout)
        summary = redact_vars(plan.as_dict())
        summary["changesets"] = [{"group": cs.name, "hosts": cs.hosts, "vars": list(cs.vars)}
                                 for cs in layout.changesets]
        # msgspec: json's indenting encoder is pure Python (seconds for the 10,000 hosts of a plan)
        _write_private(out / PROJECT_MARK, msgspec.json.format(msgspec.json.encode(summary, enc_hook=str), indent=2)
                       + b"\n")
        write_atomic(out / "PLAN.md", plan_markdown(plan, out))
    except OSError as exc:
        raise StoradviseError(f"{out}: cannot write the plan: {exc.strerror or exc}") from None
    except UnicodeEncodeError as exc:
        raise StoradviseError(f"{out}: cannot write the plan: text not encodable as UTF-8 at {exc.start}") from None
    return summary


def _write_vars(out: Path, site: str, layout: VarsLayout) -> None:
    """group_vars/<changeset>.yml once per change set, host_vars/<host>.yml only for what differs."""
    (out / "group_vars").mkdir()
    for cs in layout.changesets:
        _write_private(out / "group_vars" / f"{cs.name}.yml",
            f"# storadvise plan (site {site}): the variables {len(cs.hosts)} hosts share; see PLAN.md for "
            "old -> new and why.\n" + dump_data(vars_as_data(cs.vars, f"plan for {cs.name}")))
    (out / "host_vars").mkdir()
    for name, variables in sorted(layout.host_vars.items()):
        _write_private(out / "host_vars" / f"{path_component(name, 'host name')}.yml",
            f"# storadvise plan for {name} (site {site}): what only this host gets; see PLAN.md for old -> new "
            "and why.\n" + dump_data(vars_as_data(variables, f"plan for {name}")))
