"""Which host and site variables are secrets, and how they are kept out of what we write.

A site file may carry what Ansible needs to log in or become root (``ansible_become_password``,
``ansible_password``, ``ansible_ssh_pass``, a vault password, an API token). Those values go only
where they are needed, the plan's ``inventory.yml`` (written 0600), and are replaced by
``REDACTED`` in everything else: the capture manifest, ``plan.json``, reports, logs.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "<redacted>"

#: variable names that hold secrets: Ansible's own (ansible_password, ansible_become_pass(word),
#: ansible_ssh_pass, ansible_sudo_pass, ansible_*_passphrase) and any *password*, *secret*, *token*,
#: *passphrase*, *api_key* or *private_key_pass* a site adds
_SECRET_NAME = re.compile(r"(?:^|_)pass(?:word|wd|phrase)?(?:$|_)|secret|token|api_?key|credential", re.I)


def is_secret_name(name: object) -> bool:
    return isinstance(name, str) and bool(_SECRET_NAME.search(name))


def redact_vars(variables: Any) -> Any:
    """A copy of ``variables`` with the value of every secret-named key (at any depth) replaced."""
    if isinstance(variables, dict):
        return {k: (REDACTED if is_secret_name(k) and v is not None else redact_vars(v)) for k, v in variables.items()}
    if isinstance(variables, list):
        return [redact_vars(v) for v in variables]
    return variables


def secret_values(variables: Any) -> list[str]:
    """Every secret value in ``variables`` (for scrubbing free text such as error messages)."""
    out: list[str] = []
    if isinstance(variables, dict):
        for k, v in variables.items():
            if is_secret_name(k) and isinstance(v, (str, int)) and not isinstance(v, bool) and str(v):
                out.append(str(v))
            else:
                out += secret_values(v)
    elif isinstance(variables, list):
        for v in variables:
            out += secret_values(v)
    return out
