"""Probes: one module per subsystem, each a command plus a pure parser.

``all_probes()`` discovers every ``Probe`` subclass with a ``name`` in this package's modules and in
the probe modules of the registered storage kinds (advisor.storage_kinds: installed plug-ins too).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from functools import lru_cache

from probes.probe import Probe, ProbeContext, ProbeParseError  # noqa: F401


#: probe modules outside this package (a storage-kind plug-in's), added by ``add_probe_module``
_EXTRA_MODULES: list[str] = []


def add_probe_module(module_name: str) -> None:
    """Make ``all_probes`` also discover the probes of ``module_name`` (a plug-in's module)."""
    if module_name not in _EXTRA_MODULES and not module_name.startswith(f"{__name__}."):
        _EXTRA_MODULES.append(module_name)
    all_probes.cache_clear()


def remove_probe_module(module_name: str) -> None:
    if module_name in _EXTRA_MODULES:
        _EXTRA_MODULES.remove(module_name)
    all_probes.cache_clear()


@lru_cache(maxsize=1)
def all_probes() -> dict[str, Probe]:
    found: dict[str, Probe] = {}
    names = [f"{__name__}.{info.name}" for info in pkgutil.iter_modules(__path__)
             if not info.name.startswith("_") and info.name != "probe"]
    from advisor.storage_kinds import probe_modules

    kinds = [m for m in probe_modules() if not m.startswith(f"{__name__}.")]
    for module_name in names + list(dict.fromkeys(_EXTRA_MODULES + kinds)):
        module = importlib.import_module(module_name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, Probe) and obj is not Probe and not inspect.isabstract(obj) and getattr(obj, "name", None):
                if obj.__module__ != module.__name__:
                    continue
                if obj.name in found:
                    raise RuntimeError(f"two probes named {obj.name!r}")
                found[obj.name] = obj()
    return dict(sorted(found.items()))


def get_probe(name: str) -> Probe:
    probes = all_probes()
    if name not in probes:
        from advisor.errors import UsageError

        raise UsageError(f"unknown probe {name!r} (known: {', '.join(probes) or 'none'})")
    return probes[name]
