"""The registry of remediation adapters: adapter name -> the module object that handles it.

The core adapters (kernel network settings, firewall, block devices) are listed here; each
storage kind (advisor.storage_kinds) brings its own, found through the storage-kind registry (which
never imports this module). ``register_adapter`` adds one at run time.
"""

from __future__ import annotations

import importlib

from advisor.adapters.base import Adapter, HostProbeFacts, same_value  # noqa: F401

CORE_ADAPTER_MODULES = ("advisor.adapters.firewall", "advisor.adapters.sysctl", "advisor.adapters.block",
                        "advisor.adapters.nic", "advisor.adapters.cpufreq")

#: adapters registered at run time (a plug-in outside the storage-kind registry, or a test)
_EXTRA: dict[str, Adapter] = {}
#: the registry built once: (storage-kind registry version, run-time registrations) -> adapters
_CACHE: dict[tuple[int, tuple[tuple[str, int], ...]], dict[str, Adapter]] = {}


def register_adapter(adapter: Adapter) -> Adapter:
    if not adapter.name or not adapter.role:
        raise ValueError("an adapter needs a name and a role")
    old = adapters().get(adapter.name)
    if old is not None and type(old) is not type(adapter):
        raise ValueError(f"adapter {adapter.name!r} registered twice")
    _EXTRA[adapter.name] = adapter
    return adapter


def unregister_adapter(name: str) -> None:
    _EXTRA.pop(name, None)


def adapters() -> dict[str, Adapter]:
    """Every adapter, in the order their roles run: the core ones, then the registered storage
    kinds' (advisor.storage_kinds), then those registered at run time.

    Built once and cached until a storage kind or an adapter is registered or removed (the caller
    gets its own copy of the mapping; the adapters are shared)."""
    from advisor.storage_kinds import registry_version

    key = (registry_version(), tuple((name, id(a)) for name, a in _EXTRA.items()))
    found = _CACHE.get(key)
    if found is None:
        _CACHE.clear()
        found = _CACHE[key] = _build_adapters()
    return dict(found)


def _build_adapters() -> dict[str, Adapter]:
    from advisor.storage_kinds import storage_kinds

    modules = list(CORE_ADAPTER_MODULES) + [m for k in storage_kinds().values()
                                            for m in ([k.adapter_module] if k.adapter_module else []) + list(k.extra_adapter_modules)]
    out: dict[str, Adapter] = {}
    for m in modules:
        a = importlib.import_module(m).ADAPTER
        out.setdefault(a.name, a)
    for name, a in _EXTRA.items():
        out.setdefault(name, a)
    return out


def get_adapter(name: str) -> Adapter | None:
    return adapters().get(name)
