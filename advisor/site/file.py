"""Reading a site: a site file (a host list or an ``inventory:`` section), an Ansible inventory
given on the command line, or the local host. ``advisor/site/model.py`` holds the models only, so the
site model and the inventory reader do not import each other."""

from __future__ import annotations

import sys
from pathlib import Path

from advisor.util.errors import SiteFileError, UsageError
from advisor.site.inventory import parse_role_map, site_from_inventory, site_from_inventory_section, skipped_hosts_line
from advisor.site.model import LOCAL_SITE, Site, local_site
from advisor.site.lookup import find_site_file
from advisor.util.yaml_lines import load_located_yaml


def load_site(name_or_path: str) -> Site:
    """Load and validate a site by name or path; errors name file, line and field.

    ``local`` with no site file of that name is this machine (``advisor.site.model.local_site``)."""
    if name_or_path == LOCAL_SITE:
        try:
            path = find_site_file(name_or_path)
        except SiteFileError:
            return local_site()
    else:
        path = find_site_file(name_or_path)
    doc = load_located_yaml(path, "site file")
    data = doc.data
    if not isinstance(data, dict):
        raise SiteFileError(str(path), "a site file is a YAML mapping with 'name' and 'hosts'", line=1)
    if "inventory" in data:
        site = site_from_inventory_section(doc)
        _name_skipped(site, str(path))
    else:
        site = doc.validate(Site)
    site.source = str(path)
    return site.apply_defaults()


def resolve_site(site: str | None, inventory: Path | None = None, role_map: list[str] | tuple[str, ...] = ()) -> Site:
    """The site to scan: a site file by name/path, an Ansible inventory, or the local host."""
    if inventory is not None:
        if site is not None:
            raise UsageError("give either --site or --inventory, not both")
        s = site_from_inventory(inventory, parse_role_map(list(role_map)))
        s.source = str(inventory)
        _name_skipped(s, str(inventory))
        return s.apply_defaults()
    if role_map:
        raise UsageError("--role-map goes with --inventory")
    if site is None:
        return local_site()
    return load_site(site)


def required_site(site: str | None, inventory: Path | None, role_map: list[str] | tuple[str, ...] = ()) -> Site:
    """The site of a command that needs one (plan, verify, audit): a site file, or an Ansible inventory
    with its role map (``--inventory``/``--role-map``, as ``scan`` takes them)."""
    if site is None and inventory is None:
        raise UsageError("give --site NAME (or --inventory FILE with --role-map GROUP=ROLE)")
    return resolve_site(site, inventory, role_map)


def _name_skipped(site: Site, source: str) -> None:
    """Name on stderr the inventory hosts no role mapping covers: they are left out, never scanned with no role."""
    line = skipped_hosts_line(site)
    if line:
        print(f"storadvise: {source}: {line}", file=sys.stderr)
