"""The roles' pure module_utils (playbooks/module_utils), imported by the product too.

A module_utils file shipped with the playbooks is the one place some knowledge lives (how two
values compare by meaning, how a zone file translates to nft): the roles import it as
``ansible.module_utils.<name>``, the product through ``module_utils(name)``. Only modules without
``ansible.module_utils`` imports of their own are loaded this way.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from types import ModuleType

from advisor.util.resources import playbooks_dir


_loading = threading.RLock()
_loaded: dict[str, ModuleType] = {}


def module_utils(name: str) -> ModuleType:
    """The shipped ``playbooks/module_utils/<name>.py``, loaded once.

    Collection threads ask for a module at once: the first loads it under the lock, and a module is
    handed out only once its code has run (``sys.modules`` has it earlier, as any import does, so
    another thread must not take it from there half defined)."""
    if name in _loaded:
        return _loaded[name]
    with _loading:
        if name not in _loaded:
            _loaded[name] = _load(f"storadvise_module_utils.{name}", name)
        return _loaded[name]


def _load(key: str, name: str) -> ModuleType:
    path = playbooks_dir() / "module_utils" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(key, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"shipped module_utils {name!r} not found at {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[key] = mod
    spec.loader.exec_module(mod)
    return mod


canonical = module_utils("storadvise_canonical")
