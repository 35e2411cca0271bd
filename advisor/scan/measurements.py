"""Site-level measurements that run after the per-host probes: the iperf3 mesh and the active
CPU-efficiency test: the measure stage of the scan pipeline (advisor/scan/pipeline.py)."""

from __future__ import annotations

from typing import Any, Callable

from advisor.model.link_rate import host_link_rate_bps
from advisor.model.facts import FactSet
from advisor.site.model import Host, Site
from advisor.transport.base import Transport


def nic_speeds(factset: FactSet) -> dict[str, int]:
    """The fastest up NIC per host (bits/s), for mesh paths without a configured link rate."""
    speeds = {}
    for name, h in factset.hosts.items():
        rate = host_link_rate_bps(h, {}, h.facts("network.nic"))
        if rate:
            speeds[name] = rate
    return speeds


def run_site_measurements(site: Site, factory: Callable[[Host], Transport], factset: FactSet, *,
                          with_mesh: bool = True, with_efficiency: bool = True, quiet: bool = True,
                          console: Any = None, efficiency_settings: dict[str, Any] | None = None,
                          hosts: list[Host] | None = None) -> None:
    """Fill ``factset.mesh`` and ``factset.efficiency`` when the site asks for them.

    ``hosts``: the hosts the scan selected (``--hosts``); the mesh tests paths among them only.

    ``efficiency_settings`` (hosts, source, clients, mb, ...) override the site's ``efficiency:``
    section; given explicitly (``storadvise efficiency test``) the test runs even without one.
    """
    if with_mesh and site.mesh and site.mesh.pairs:
        from advisor.mesh.runner import run_mesh

        mesh_site = site
        if hosts is not None and len(hosts) < len(site.hosts):  # --hosts: paths among the selected hosts only
            mesh_site = site.model_copy(update={"hosts": list(hosts)})
        factset.mesh = run_mesh(mesh_site, factory, quiet=quiet, console=console, nic_speeds=nic_speeds(factset))
    if with_efficiency and (site.extensions.get("efficiency") or efficiency_settings):
        from advisor.efficiency.active import run_active
        from advisor.efficiency.active_plan import EfficiencyTestError, build_active_plan

        from advisor.report.progress import StepProgress

        if console is not None and not quiet:
            console.print("running the active CPU-efficiency test (one worker at a time) ...")
        settings = dict(efficiency_settings or {})
        progress = settings.pop("progress", None)
        try:
            plan = build_active_plan(site, settings)  # the site is read here, once: the run gets the plan
            with StepProgress("efficiency test", enabled=console is not None and not quiet, console=console) as bar:
                factset.efficiency = run_active(plan, factory, progress=progress, step_progress=bar.update)
        except EfficiencyTestError as exc:  # recorded, and the scan is incomplete
            factset.efficiency = {"mean": None, "hosts": {}, "error": str(exc), "failed": True}
