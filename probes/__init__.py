"""Probes: one module per subsystem, each a command plus a pure parser.

``all_probes()`` discovers every ``Probe`` subclass with a ``name`` in this package's modules.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from functools import lru_cache

from probes.probe import Probe, ProbeContext, ProbeParseError  # noqa: F401


@lru_cache(maxsize=1)
def all_probes() -> dict[str, Probe]:
    found: dict[str, Probe] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_") or info.name == "probe":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
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
