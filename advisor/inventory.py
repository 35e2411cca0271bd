"""Sites from Ansible inventories (INI or YAML) plus a role map (group -> role).

A site file may hold ``inventory: {path: hosts.ini, role_map: {gpfs_servers: storage}}``
instead of ``hosts``; ``storadvise scan --inventory FILE --role-map GROUP=ROLE`` does the same
from the command line. Connection variables read: ansible_host, ansible_port, ansible_user,
ansible_ssh_private_key_file; groups (with ``:children``) become host groups.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from advisor.errors import SiteFileError
from advisor.site import ROLE_NAMES, Host, Site
from advisor.yaml_lines import LocatedYaml


class InventoryHost(BaseModel):
    name: str
    vars: dict[str, Any] = Field(default_factory=dict)
    groups: set[str] = Field(default_factory=set)


def parse_ini_inventory(text: str, path: str = "<inventory>") -> dict[str, InventoryHost]:
    hosts: dict[str, InventoryHost] = {}
    children: dict[str, set[str]] = {}
    group_vars: dict[str, dict[str, str]] = {}
    section, kind = "ungrouped", "hosts"
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        m = re.match(r"^\[([^\]:]+)(?::(\w+))?\]$", line)
        if m:
            section, kind = m.group(1), m.group(2) or "hosts"
            if kind not in ("hosts", "vars", "children"):
                raise SiteFileError(path, f"unknown section kind ':{kind}'", line=lineno)
            continue
        try:
            tokens = shlex.split(line, comments=True)
        except ValueError as exc:
            raise SiteFileError(path, f"cannot split line: {exc}", line=lineno) from None
        if kind == "children":
            children.setdefault(section, set()).add(tokens[0])
        elif kind == "vars":
            key, sep, value = line.partition("=")
            if not sep:
                raise SiteFileError(path, "expected key=value in a :vars section", line=lineno)
            group_vars.setdefault(section, {})[key.strip()] = value.strip()
        else:
            name = tokens[0]
            if "[" in name:
                raise SiteFileError(path, f"host ranges like {name!r} are not supported; list the hosts", line=lineno)
            h = hosts.setdefault(name, InventoryHost(name=name))
            h.groups.add(section)
            for tok in tokens[1:]:
                key, sep, value = tok.partition("=")
                if not sep:
                    raise SiteFileError(path, f"expected key=value after the host name, got {tok!r}", line=lineno)
                h.vars[key] = value
    _expand_children(hosts, children)
    for group, gv in group_vars.items():
        for h in hosts.values():
            if group in h.groups or group == "all":
                for k, v in gv.items():
                    h.vars.setdefault(k, v)
    return hosts


def _expand_children(hosts: dict[str, InventoryHost], children: dict[str, set[str]]) -> None:
    changed = True
    while changed:
        changed = False
        for parent, kids in children.items():
            for h in hosts.values():
                if h.groups & kids and parent not in h.groups:
                    h.groups.add(parent)
                    changed = True


def parse_yaml_inventory(data: Any, path: str = "<inventory>") -> dict[str, InventoryHost]:
    hosts: dict[str, InventoryHost] = {}
    if not isinstance(data, dict):
        raise SiteFileError(path, "a YAML inventory is a mapping of groups (e.g. 'all:')")

    def walk(group: str, body: Any, inherited: dict[str, Any], parents: tuple[str, ...]) -> None:
        if body is None:
            return
        if not isinstance(body, dict):
            raise SiteFileError(path, f"group {group!r} must be a mapping")
        gvars = {**inherited, **(body.get("vars") or {})}
        for name, hv in (body.get("hosts") or {}).items():
            h = hosts.setdefault(str(name), InventoryHost(name=str(name)))
            h.groups |= {group, *parents}
            for k, v in gvars.items():
                h.vars.setdefault(k, v)
            h.vars.update(hv or {})
        for child, cbody in (body.get("children") or {}).items():
            walk(str(child), cbody, gvars, parents + (group,))

    for group, body in data.items():
        walk(str(group), body, {}, ())
    return hosts


def load_inventory(path: str | Path) -> dict[str, InventoryHost]:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise SiteFileError(str(p), f"cannot read inventory: {exc.strerror or exc}") from None
    if p.suffix in (".yml", ".yaml"):
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise SiteFileError(str(p), "invalid YAML inventory", line=mark.line + 1 if mark else None) from None
        return parse_yaml_inventory(data, str(p))
    return parse_ini_inventory(text, str(p))


def parse_role_map(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        group, sep, role = item.partition("=")
        if not sep or not group or role not in ROLE_NAMES:
            raise SiteFileError("--role-map", f"expected GROUP=ROLE with ROLE one of {', '.join(ROLE_NAMES)}, got {item!r}")
        out[group] = role
    return out


def site_from_inventory(path: str | Path, role_map: dict[str, str], name: str | None = None,
                        extra: dict[str, Any] | None = None) -> Site:
    inv = load_inventory(path)
    if not inv:
        raise SiteFileError(str(path), "inventory lists no hosts")
    hosts = []
    for h in inv.values():
        v = h.vars
        roles = sorted({role_map[g] for g in h.groups if g in role_map})
        try:
            hosts.append(Host(
                name=h.name,
                address=v.get("ansible_host"),
                port=int(v.get("ansible_port", 22)),
                user=v.get("ansible_user"),
                key=v.get("ansible_ssh_private_key_file"),
                roles=roles,
                groups=sorted(g for g in h.groups if g not in ("all", "ungrouped")),
            ))
        except (ValidationError, ValueError) as exc:
            raise SiteFileError(str(path), f"host {h.name}: {str(exc).splitlines()[0]}") from None
    data = {"name": name or Path(path).stem, **(extra or {})}
    try:
        site = Site.model_validate({**data, "hosts": []})
    except ValidationError as exc:
        raise SiteFileError(str(path), str(exc.errors()[0]["msg"])) from None
    site.hosts = hosts
    return site


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
    return rest
