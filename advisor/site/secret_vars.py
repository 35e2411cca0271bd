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

#: the one list of what makes a variable name a secret's (matched anywhere in the name, any case);
#: every writer (capture manifest, collect vars file, plan.json, reports) redacts by it. Ansible's
#: own (ansible_password, ansible_become_pass(word), ansible_ssh_pass, ansible_*_passphrase,
#: ansible_ssh_private_key_file is a path, not a key) and what sites add.
SECRET_NAME_PATTERNS: tuple[str, ...] = (
    r"password", r"passwd", r"passphrase",
    r"(?:^|_)pass(?:$|_)",              # become_pass, ssh_pass, db_pass_old; not bypass or passive
    r"(?:^|_)pw(?:$|_)",                # db_pw, pw
    r"secret", r"token", r"credential", r"vault", r"api_?key",
    r"private_?key(?!_?file$|_?path$)",  # a key's text; *_private_key_file names a file
)
_SECRET_NAME = re.compile("|".join(f"(?:{p})" for p in SECRET_NAME_PATTERNS), re.I)


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
