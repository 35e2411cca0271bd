"""The registry of remediation adapters: adapter name -> the module object that handles it.

The core adapters (kernel network settings, firewall, block devices) are listed here; each
storage kind (advisor.storage_kinds) brings its own. ``register_adapter`` adds one at run time
(a plug-in, or a test).
"""

from __future__ import annotations

import importlib

from advisor.adapters.base import Adapter, HostProbeFacts, same_value  # noqa: F401

CORE_ADAPTER_MODULES = ("advisor.adapters.firewall", "advisor.adapters.sysctl", "advisor.adapters.block")

_REGISTRY: dict[str, Adapter] = {}
_LOADED = False


def register_adapter(adapter: Adapter) -> Adapter:
    if not adapter.name or not adapter.role:
        raise ValueError("an adapter needs a name and a role")
    old = _REGISTRY.get(adapter.name)
    if old is not None and type(old) is not type(adapter):
        raise ValueError(f"adapter {adapter.name!r} registered twice")
    _REGISTRY[adapter.name] = adapter
    return adapter


def unregister_adapter(name: str) -> None:
    _REGISTRY.pop(name, None)


def _load() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    from advisor.storage_kinds import storage_kinds

    modules = list(CORE_ADAPTER_MODULES) + [k.adapter_module for k in storage_kinds().values() if k.adapter_module]
    for m in modules:
        register_adapter(importlib.import_module(m).ADAPTER)


def adapters() -> dict[str, Adapter]:
    """Every registered adapter, in the order their roles run (core first, then storage kinds)."""
    _load()
    return dict(_REGISTRY)


def get_adapter(name: str) -> Adapter | None:
    return adapters().get(name)
