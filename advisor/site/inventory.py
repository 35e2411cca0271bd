"""Sites from Ansible inventories, read as Ansible reads them, plus a role map (group -> role).

A site file may hold ``inventory: {path: hosts.ini, role_map: {gpfs_servers: storage}}``
instead of ``hosts``; ``storadvise scan --inventory FILE --role-map GROUP=ROLE`` does the same
from the command line. The inventory is read by ``ansible-inventory -i PATH --list``: INI, YAML,
host ranges (``wn[001:200]``), ``group_vars/`` and ``host_vars/`` directories, dynamic inventory
scripts and plugins, exactly as the site's playbooks see them. Host variables read (host_vars,
group_vars and the inventory's own vars alike): ansible_host, ansible_port, ansible_user,
ansible_ssh_private_key_file; ansible_become (the probes run with sudo) with ansible_become_user and
ansible_become_method kept for the plan's inventory; ``link_rate`` (the NIC rate the host should reach,
as in a site file: 10gbit, 25G); ``rack`` (the mesh's representative strategy groups by it);
``storadvise_roles`` (a list, or comma-separated, of storadvise roles: a role from the inventory itself,
added to those of the role map). Groups (with their parents) become host groups. A host that neither
the role map nor ``storadvise_roles`` gives a role is named in ``Site.skipped_hosts`` and never scanned.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from advisor.util.errors import SiteFileError
from advisor.site.model import ROLE_NAMES, Host, Site
from advisor.util.yaml_lines import LocatedYaml

#: make a source Ansible cannot parse an error rather than a warning and an empty inventory
_STRICT_ENV = {
    "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
    "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "True",
    "ANSIBLE_NOCOLOR": "1",
    "ANSIBLE_DEPRECATION_WARNINGS": "False",
}
INVENTORY_TIMEOUT_S = 120.0


class InventoryHost(BaseModel):
    name: str
    vars: dict[str, Any] = Field(default_factory=dict)
    groups: set[str] = Field(default_factory=set)


def ansible_inventory_command() -> str:
    """``ansible-inventory`` beside this Python (the venv storadvise runs in), else on PATH."""
    beside = Path(sys.executable).parent / "ansible-inventory"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("ansible-inventory")
    if not found:
        raise SiteFileError("--inventory", "ansible-inventory not found (install ansible-core)")
    return found


def _failure_reason(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for marker in ("Failed to parse inventory:", "[ERROR]:"):
        for ln in lines:
            if marker in ln:
                return ln.split("[ERROR]:", 1)[-1].strip()
    return lines[-1] if lines else "no output"


def parse_inventory_list(data: Any, path: str = "<inventory>") -> dict[str, InventoryHost]:
    """Hosts of an ``ansible-inventory --list`` JSON document: each with its vars and every group
    it is in, directly or through ``children``."""
    if not isinstance(data, dict):
        raise SiteFileError(path, "ansible-inventory --list did not return a JSON object")
    meta = data.get("_meta") or {}
    hostvars = meta.get("hostvars") if isinstance(meta, dict) else None
    if not isinstance(hostvars, dict):
        hostvars = {}
    parents: dict[str, set[str]] = {}
    direct: dict[str, set[str]] = {}
    for group, body in data.items():
        if group == "_meta" or not isinstance(body, dict):
            continue
        for child in body.get("children") or []:
            parents.setdefault(str(child), set()).add(str(group))
        for name in body.get("hosts") or []:
            direct.setdefault(str(name), set()).add(str(group))
    ancestors: dict[str, set[str]] = {}

    def up(group: str, seen: frozenset[str] = frozenset()) -> set[str]:
        if group in ancestors:
            return ancestors[group]
        out = {group}
        for p in parents.get(group, ()):
            if p not in seen:  # Ansible refuses cycles; never loop on a hand-made document
                out |= up(p, seen | {group})
        ancestors[group] = out
        return out

    hosts: dict[str, InventoryHost] = {}
    for name in dict.fromkeys([*hostvars, *direct]):  # Ansible's order, each host once
        groups: set[str] = set()
        for g in direct.get(name, ()):
            groups |= up(g)
        hv = hostvars.get(name)
        hosts[name] = InventoryHost(name=name, vars=hv if isinstance(hv, dict) else {}, groups=groups)
    return hosts


def load_inventory(path: str | Path) -> dict[str, InventoryHost]:
    """The hosts of an inventory source as Ansible sees them (``ansible-inventory --list``)."""
    p = Path(path)
    if not p.exists():
        raise SiteFileError(str(p), "cannot read inventory: no such file or directory")
    env = {**os.environ, **_STRICT_ENV}
    try:
        proc = subprocess.run([ansible_inventory_command(), "-i", str(p), "--list"], capture_output=True,
                              text=True, env=env, timeout=INVENTORY_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise SiteFileError(str(p), f"ansible-inventory did not finish in {INVENTORY_TIMEOUT_S:.0f} s") from None
    except OSError as exc:
        raise SiteFileError(str(p), f"cannot run ansible-inventory: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        raise SiteFileError(str(p), f"ansible-inventory cannot read it: {_failure_reason(proc.stderr)}")
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise SiteFileError(str(p), f"ansible-inventory --list printed no JSON ({exc.msg})") from None
    return parse_inventory_list(data, str(p))


def parse_role_map(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        group, sep, role = item.partition("=")
        if not sep or not group or role not in ROLE_NAMES:
            raise SiteFileError("--role-map", f"expected GROUP=ROLE with ROLE one of {', '.join(ROLE_NAMES)}, got {item!r}")
        out[group] = role
    return out


#: site settings an inventory-only site gives as ``storadvise_<name>`` variables (group ``all``)
INVENTORY_SITE_SETTINGS = ("rules_dirs", "storage_systems")


def inventory_site_settings(inv: dict[str, InventoryHost], path: str | Path) -> dict[str, Any]:
    """``storadvise_rules_dirs`` and ``storadvise_storage_systems`` of the inventory's hosts, as site
    settings; hosts that disagree are refused (the setting is the site's: set it for group all)."""
    out: dict[str, Any] = {}
    for setting in INVENTORY_SITE_SETTINGS:
        var = f"storadvise_{setting}"
        seen = {h.name: h.vars[var] for h in inv.values() if var in h.vars}
        values = list(seen.values())
        if not values:
            continue
        if any(v != values[0] for v in values):
            a, b = [n for n in seen if seen[n] != values[0]][0], next(iter(seen))
            raise SiteFileError(str(path), f"{var} differs between hosts {b} and {a}: it is a site setting "
                                           "(set it for group all)")
        value = values[0]
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SiteFileError(str(path), f"{var}: expected a list of names, got {value!r}")
        for v in value:
            _text(v)  # an untemplated Jinja expression is refused
        out[setting] = value
    return out


#: become settings kept as host variables (the plan's inventory passes them on); a become password
#: is never copied out of the site's inventory
_BECOME_VARS = ("ansible_become_user", "ansible_become_method", "ansible_become_flags", "ansible_become_exe")


def _roles_of(h: InventoryHost, role_map: dict[str, str]) -> list[str]:
    roles = {role_map[g] for g in h.groups if g in role_map}
    own = h.vars.get("storadvise_roles")
    if own is not None:
        items = own.split(",") if isinstance(own, str) else own if isinstance(own, list) else None
        if items is None:
            raise ValueError(f"storadvise_roles: expected a list of roles, got {type(own).__name__}")
        for item in (str(x).strip() for x in items):
            if item and item not in ROLE_NAMES:
                raise ValueError(f"storadvise_roles: unknown role {item!r} (roles: {', '.join(ROLE_NAMES)})")
            if item:
                roles.add(item)
    return sorted(roles)


def _become(v: dict[str, Any]) -> bool | None:
    become = v.get("ansible_become")
    if become is None:
        return None
    if isinstance(become, str):
        if become.strip().lower() not in ("true", "yes", "on", "1", "false", "no", "off", "0"):
            raise ValueError(f"ansible_become: expected a boolean, got {become!r}")
        become = become.strip().lower() in ("true", "yes", "on", "1")
    method = v.get("ansible_become_method", "sudo")
    user = v.get("ansible_become_user", "root")
    if become and (method != "sudo" or user != "root"):
        raise ValueError(f"become {method!r} to {user!r}: the probes run with sudo to root only")
    return bool(become)


def site_from_inventory(path: str | Path, role_map: dict[str, str], name: str | None = None,
                        extra: dict[str, Any] | None = None) -> Site:
    inv = load_inventory(path)
    if not inv:
        raise SiteFileError(str(path), "inventory lists no hosts")
    try:
        settings = inventory_site_settings(inv, path)
    except ValueError as exc:
        raise SiteFileError(str(path), str(exc).splitlines()[0]) from None
    hosts, skipped = [], []
    for h in inv.values():
        v = h.vars
        try:
            host_vars = {k: v[k] for k in ("rack", *_BECOME_VARS) if v.get(k) is not None}
            host = Host(
                name=h.name,
                address=_text(v.get("ansible_host")),
                port=int(v.get("ansible_port", 22)),
                user=_text(v.get("ansible_user")),
                key=_text(v.get("ansible_ssh_private_key_file")),
                roles=_roles_of(h, role_map),
                groups=sorted(g for g in h.groups if g not in ("all", "ungrouped")),
                **({"link_rate": _text(v["link_rate"])} if v.get("link_rate") is not None else {}),
                **({"sudo": sudo} if (sudo := _become(v)) is not None else {}),
                vars={k: _text(x) if k == "rack" else x for k, x in host_vars.items()},
            )
        except (ValidationError, ValueError, TypeError) as exc:
            raise SiteFileError(str(path), f"host {h.name}: {_first_error(exc)}") from None
        (hosts if host.roles else skipped).append(host if host.roles else h.name)
    if not hosts:
        groups = sorted({g for h in inv.values() for g in h.groups} - {"all", "ungrouped"})
        raise SiteFileError(str(path), f"no host has a role: give --role-map GROUP=ROLE (groups: {', '.join(groups)})"
                                       " or storadvise_roles in the inventory")
    data = {"name": name or Path(path).stem, **settings, **(extra or {})}
    try:
        site = Site.model_validate({**data, "hosts": []})
    except ValidationError as exc:
        raise SiteFileError(str(path), str(exc.errors()[0]["msg"])) from None
    site.hosts = hosts
    site.skipped_hosts = skipped
    return site


def skipped_hosts_line(site: Site) -> str | None:
    """One line naming the inventory hosts no role mapping covers (None: there are none)."""
    if not site.skipped_hosts:
        return None
    names = ", ".join(site.skipped_hosts[:20]) + (f" and {len(site.skipped_hosts) - 20} more"
                                                  if len(site.skipped_hosts) > 20 else "")
    return (f"skipped {len(site.skipped_hosts)} inventory host(s) that no --role-map group or storadvise_roles "
            f"covers (not scanned): {names}")


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        e = exc.errors()[0]
        where = ".".join(str(x) for x in e.get("loc", ()))
        return f"{where}: {e['msg']}" if where else e["msg"]
    return str(exc).splitlines()[0]


def _text(value: Any) -> str | None:
    """A connection variable as text; Jinja left untemplated by ``--list`` is refused, not used."""
    if value is None:
        return None
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise ValueError(f"expected text, got {type(value).__name__} {value!r}")
    text = str(value)
    if "{{" in text or "{%" in text:
        raise ValueError(f"{text!r} is a template; storadvise reads inventories without templating")
    return text


class InventorySection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: Path
    role_map: dict[str, str] = Field(default_factory=dict)


def site_from_inventory_section(doc: LocatedYaml) -> Site:
    """A site file that names an inventory instead of listing hosts."""
    data = dict(doc.data)
    section = doc.validate(InventorySection, data.pop("inventory"))
    for group, role in section.role_map.items():
        if role not in ROLE_NAMES:
            raise SiteFileError(str(doc.path), f"unknown role {role!r} (roles: {', '.join(ROLE_NAMES)})",
                                line=doc.line_of(("inventory", "role_map", group)), field=f"inventory.role_map.{group}")
    if "hosts" in data:
        raise SiteFileError(str(doc.path), "give either 'hosts' or 'inventory', not both", line=doc.line_of(("hosts",)))
    inv_path = section.path if section.path.is_absolute() else doc.path.parent / section.path
    rest = doc.validate(Site, {**data, "hosts": []})
    site = site_from_inventory(inv_path, section.role_map, name=rest.name)
    rest.hosts = site.hosts
    for setting in INVENTORY_SITE_SETTINGS:  # the site file's own value wins over the inventory's
        if setting not in rest.model_fields_set and setting in site.model_fields_set:
            setattr(rest, setting, getattr(site, setting))
    rest.skipped_hosts = site.skipped_hosts
    return rest
