"""Probes: one module per subsystem, each a command plus a pure parser.

``all_probes()`` discovers every ``Probe`` subclass with a ``name`` in this package's modules and in
the probe modules of the registered storage kinds (advisor.storage_kinds: installed plug-ins too).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from probes.probe import Probe, ProbeContext, ProbeParseError  # noqa: F401


#: the probes found, under the storage-kind registry's version they were found for
_FOUND: dict[int, dict[str, Probe]] = {}


def all_probes() -> dict[str, Probe]:
    """Every probe: this package's modules, then the probe modules of the storage kinds registered
    elsewhere (advisor.storage_kinds: installed plug-ins, a test's kind). Found once per registry version."""
    from advisor.storage_kinds import probe_modules, registry_version

    version = registry_version()
    found = _FOUND.get(version)
    if found is None:
        _FOUND.clear()
        found = _FOUND[version] = _discover([m for m in probe_modules() if not m.startswith(f"{__name__}.")])
    return dict(found)


def _discover(extra_modules: list[str]) -> dict[str, Probe]:
    found: dict[str, Probe] = {}
    names = [f"{__name__}.{info.name}" for info in pkgutil.iter_modules(__path__)
             if not info.name.startswith("_") and info.name != "probe"]
    for module_name in names + list(dict.fromkeys(extra_modules)):
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
        from advisor.util.errors import UsageError

        raise UsageError(f"unknown probe {name!r} (known: {', '.join(probes) or 'none'})")
    return probes[name]
