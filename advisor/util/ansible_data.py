"""Values written into an Ansible project as data only: every string tagged ``!unsafe``.

Ansible renders any string it reads from an inventory or a vars file as a Jinja2 template. The
strings a plan writes come from hosts (a firewall rule's text and comment, an XCache config path,
a sysctl value) and from site files (host vars, addresses): a host that prints
``{{ lookup('pipe', 'touch /tmp/x') }}`` would otherwise run a command on the controller as soon as
``ansible-playbook`` starts, and ``x{{ 7*7 }}`` would reach a module as ``x49``. ``!unsafe`` (see
the Ansible documentation, "Unsafe or raw strings") makes Ansible pass the string through
untemplated. Mapping keys are tagged too (Ansible templates keys of nested mappings); the top-level
keys are variable names, which are checked to be identifiers instead.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from advisor.util.errors import StoradviseError

_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class UnsafeText(str):
    """A string Ansible must never template."""


class AnsibleDataDumper(yaml.SafeDumper):
    """SafeDumper that writes ``UnsafeText`` as ``!unsafe '...'``."""


def _represent_unsafe(dumper: yaml.SafeDumper, data: UnsafeText) -> yaml.Node:
    return dumper.represent_scalar("!unsafe", str(data), style="'" if "\n" not in data else "|")


AnsibleDataDumper.add_representer(UnsafeText, _represent_unsafe)


class _FastAnsibleDataDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """The same, with libyaml's emitter where PyYAML has it (the same text, ~6x faster: an inventory
    of 10,000 hosts)."""


_FastAnsibleDataDumper.add_representer(UnsafeText, _represent_unsafe)


def as_data(value: Any) -> Any:
    """``value`` with every string (and mapping key) inside it made ``UnsafeText``."""
    if isinstance(value, str):
        return UnsafeText(value)
    if isinstance(value, dict):
        return {as_data(k) if isinstance(k, str) else k: as_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [as_data(v) for v in value]
    return value


def vars_as_data(variables: dict[str, Any], where: str) -> dict[str, Any]:
    """A vars mapping for inventory/host_vars: names checked, every value tagged."""
    out: dict[str, Any] = {}
    for name, value in variables.items():
        if not isinstance(name, str) or not _VAR_NAME.fullmatch(name):
            raise StoradviseError(f"{where}: variable name {str(name)[:60]!r} is not an identifier (letters, digits, '_')")
        out[name] = as_data(value)
    return out


def dump_data(data: Any) -> str:
    return "---\n" + yaml.dump(data, Dumper=_FastAnsibleDataDumper, sort_keys=False, default_flow_style=False, width=120,
                               allow_unicode=False)


class AnsibleDataLoader(yaml.SafeLoader):
    """SafeLoader that reads ``!unsafe`` scalars back as plain strings (for reading a plan)."""


AnsibleDataLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def load_data(text: str) -> Any:
    return yaml.load(text, Loader=AnsibleDataLoader)  # noqa: S506 (a SafeLoader subclass)
