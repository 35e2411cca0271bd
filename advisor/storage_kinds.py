"""The storage-kind plug-in registry (docs/architecture.md, "Adding a storage system").

A storage system is one probe module, one rule pack and one Ansible role with its remediation
adapter. ``STORAGE_KINDS`` below is the one place that names them; nothing else in the collector,
the rule engine, the planner, the lab or the site model knows a storage system by name.

``storage_systems: [gpfs, san, xrootd]`` in a site file names the site's entries (``storage_kind``
stays readable as the first); a site that gives no ``profiles`` gets the first entry's
``default_profile``. Given, the list gates what runs, as sos's ``packages=`` gates a plugin: the
probe modules and rule packs of the kinds it does not name are not run and not loaded (the generic
ones, network, firewall, block, host..., always are; ``storage_gate``). A site that names only
``storage_kind`` runs every kind's probes, as before. Entries without modules (``nfs``, ``other``) are known kinds whose
plug-in is not written yet: their sites get the generic rules. ``eos`` has probes and rules but no
role (its findings are fixed by hand; its remediations name the exact commands).

A site's own storage system lives outside this tree: a Python distribution whose entry point in the
group ``storadvise.storage_kinds`` names a ``StorageKind`` (or a list of them). The installed plug-ins
are loaded on the registry's first use, once; a broken one stops the command with one line naming
the entry point and its distribution (advisor.util.errors.PluginError).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, eq=False)
class StorageKind:
    name: str
    description: str = ""
    #: the module holding the kind's probes (``Probe`` subclasses with a ``name``)
    probe_module: str | None = None
    #: the rule pack: a file name under the shipped rules/ directory, or a path
    rule_pack: str | None = None
    #: the Ansible role: a name under the shipped playbooks/roles/, or a path to a role directory
    role: str | None = None
    #: the module holding the remediation adapter (``ADAPTER``, an advisor.adapters.Adapter)
    adapter_module: str | None = None
    #: the profile a site of this kind gets when its site file names none
    default_profile: str = "generic"
    #: per-host settings a site file may give at host level, name -> what it holds (``address``:
    #: an IP address or DNS name; ``addresses``: a list of them; ``text``: not checked). Kept in
    #: the host's ``vars``; the probes read them from ``ProbeContext.vars``, the adapter from the
    #: planner's host settings; the site model refuses a value that is not what it says
    host_settings: dict[str, str] = field(default_factory=dict)
    #: the title of the role's play in apply-tuning.yml, when the kind's adapter gives none
    #: (``Adapter.play_title``, advisor.apply.playbooks_gen)
    play_title: str = ""
    #: the module whose ``EMULATION`` (advisor.lab.emulation.LabEmulation) emulates the system in the lab
    lab_emulation: str | None = None
    #: further remediation adapters of the kind (each ``ADAPTER`` with its own shipped role), after ``adapter_module``
    extra_adapter_modules: tuple[str, ...] = ()
    #: further probe modules and rule packs of the kind (gated with it by a site's ``storage_systems``)
    extra_probe_modules: tuple[str, ...] = ()
    extra_rule_packs: tuple[str, ...] = ()
    #: other names a site file may use for the kind (``xcache`` for ``xrootd``)
    aliases: tuple[str, ...] = ()
    #: the ports its data moves on (``1191``, ``"6800-7300"``): production flows on them are sampled
    #: (probes/flows.py, advisor.flows.ports) besides the site's ``flow_ports``
    flow_ports: tuple[str, ...] = ()

    @property
    def probe_modules(self) -> tuple[str, ...]:
        return ((self.probe_module,) if self.probe_module else ()) + self.extra_probe_modules

    @property
    def rule_packs(self) -> tuple[str, ...]:
        return ((self.rule_pack,) if self.rule_pack else ()) + self.extra_rule_packs

    @property
    def role_name(self) -> str | None:
        return Path(self.role).name if self.role else None


_BUILTIN = (
    StorageKind("gpfs", "IBM Storage Scale (GPFS): mmlsconfig/mmdiag, mmchconfig",
                probe_module="probes.gpfs", rule_pack="gpfs.yml", role="gpfs_tuning",
                adapter_module="advisor.adapters.gpfs", default_profile="gpfs-site", host_settings={"gpfs_node": "address"},
                flow_ports=("1191",),
                lab_emulation="advisor.lab.emulators.gpfs_lab"),
    StorageKind("san", "SAN logical drives behind the storage servers (DS/SANtricity SMcli)",
                probe_module="probes.san", rule_pack="san.yml", role="san_cache",
                adapter_module="advisor.adapters.san", host_settings={"san_controllers": "addresses"},
                lab_emulation="advisor.lab.emulators.san_lab"),
    StorageKind("xrootd", "XRootD servers and XCache proxies",
                probe_module="probes.xcache", rule_pack="xcache.yml", role="xcache", aliases=("xcache",),
                flow_ports=("1094", "1095"),
                extra_probe_modules=("probes.xcache_live", "probes.xrootd_server"), extra_rule_packs=("xrootd.yml",),
                adapter_module="advisor.adapters.xcache",
                lab_emulation="advisor.lab.xcache_lab",
                # XRootD data servers and redirectors: xrootd.server / xrootd.process probes, rules/xrootd.yml
                extra_adapter_modules=("advisor.adapters.xrootd",)),
    StorageKind("dcache", "dCache: domains, services, Java memory and SRM TCP buffers from dcache.conf and the layout "
                "file; pool mover limits from the pools' setup files",
                probe_module="probes.dcache", rule_pack="dcache.yml", role="dcache_tuning",
                adapter_module="advisor.adapters.dcache", default_profile="dcache-site",
                extra_probe_modules=("probes.dcache_status",),
                host_settings={"dcache_restart_domains": "text"},
                # doors (xrootd, GridFTP, WebDAV, dcap) and the pools' movers
                flow_ports=("1094", "2811", "2880", "22125", "20000-25000"),
                lab_emulation="advisor.lab.emulators.dcache_lab"),
    StorageKind("eos", "EOS: eos fs ls and eos space status on the MGM (file system boot, configstatus, drain; "
                "balancer)", probe_module="probes.eos", rule_pack="eos.yml", default_profile="eos-site",
                flow_ports=("1094", "1095", "1096"),
                lab_emulation="advisor.lab.emulators.eos_lab"),
    StorageKind("ceph", "Ceph / CephFS: ceph osd perf and ceph health detail on storage hosts, ceph.conf client "
                "options on workers (kernel vs FUSE mounts: the mounts probe)",
                probe_module="probes.ceph", rule_pack="ceph.yml", role="ceph_client",
                adapter_module="advisor.adapters.ceph_client", default_profile="ceph-site", aliases=("cephfs",),
                extra_probe_modules=("probes.ceph_conf",),
                flow_ports=("3300", "6789", "6800-7300"),  # monitors, OSDs and MDSs
                lab_emulation="advisor.lab.emulators.ceph_lab"),
    StorageKind("lustre", "Lustre clients: lctl get_param of osc/mdc/llite devices",
                probe_module="probes.lustre", rule_pack="lustre.yml", role="lustre_tuning",
                adapter_module="advisor.adapters.lustre", flow_ports=("988",),  # LNet over TCP
                lab_emulation="advisor.lab.emulators.lustre_lab"),
    StorageKind("beegfs", "BeeGFS clients: beegfs-client.conf",
                probe_module="probes.beegfs", rule_pack="beegfs.yml", role="beegfs_client",
                adapter_module="advisor.adapters.beegfs_client", default_profile="beegfs-site",
                flow_ports=("8003", "8004", "8005", "8008"),  # storage, client, metadata, management
                lab_emulation="advisor.lab.emulators.beegfs_lab"),
    StorageKind("nfs", flow_ports=("2049",)),
    StorageKind("hdfs", "HDFS: balancer concurrency and bandwidth (hdfs getconf)",
                probe_module="probes.hdfs", rule_pack="hdfs.yml", role="hdfs_balancer",
                adapter_module="advisor.adapters.hdfs_balancer", default_profile="hdfs-site",
                host_settings={"hdfs_site_xml": "text"},
                flow_ports=("8020", "9866", "9867"),  # namenode RPC, datanode transfer and IPC
                lab_emulation="advisor.lab.emulators.hdfs_lab"),
    StorageKind("other"),
)

_REGISTRY: dict[str, StorageKind] = {k.name: k for k in _BUILTIN}
#: bumped on every registration or removal (what is built from the registry is rebuilt then)
_VERSION = [0]

#: the entry-point group of out-of-tree storage kinds (a distribution's ``[project.entry-points]``)
ENTRY_POINT_GROUP = "storadvise.storage_kinds"
#: [loaded?, the error of a broken plug-in (raised again on every use of the registry)]
_PLUGINS: list = [False, None]


def _registry() -> dict[str, StorageKind]:
    """The registry, with the installed plug-ins loaded (on the first call)."""
    if not _PLUGINS[0]:
        _PLUGINS[0] = True  # first: a plug-in that uses the registry while it loads sees the shipped kinds
        try:
            _load_plugins()
        except Exception as exc:
            _PLUGINS[1] = exc
    if _PLUGINS[1] is not None:
        raise _PLUGINS[1]
    return _REGISTRY


def _load_plugins() -> None:
    from importlib.metadata import entry_points

    from advisor.util.errors import PluginError

    taken = {n: "a shipped kind" for k in _BUILTIN for n in (k.name, *k.aliases)}
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        dist = ep.dist.name if ep.dist is not None else "an unknown distribution"
        where = f"storage-kind plug-in {ep.name!r} ({ep.value}) of distribution {dist!r}"
        try:
            loaded = ep.load()
        except (Exception, SystemExit) as exc:  # a plug-in's import may even exit: one line, no traceback
            line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise PluginError(f"{where}: cannot be loaded: {type(exc).__name__}: {line}") from None
        kinds = list(loaded) if isinstance(loaded, (list, tuple)) else [loaded]
        for kind in kinds:
            if not isinstance(kind, StorageKind):
                raise PluginError(f"{where}: is a {type(kind).__name__}, not an advisor.storage_kinds.StorageKind")
            for n in (kind.name, *kind.aliases):
                if n in taken:
                    raise PluginError(f"{where}: the name {n!r} is taken by {taken[n]}")
            problem = _missing_part(kind)
            if problem:
                raise PluginError(f"{where}: kind {kind.name!r}: {problem}")
            if _REGISTRY.get(kind.name) is not kind:  # (a plug-in module may register its kind itself)
                register_storage_kind(kind)
            taken.update({n: f"plug-in {ep.name!r} of {dist!r}" for n in (kind.name, *kind.aliases)})


def _missing_part(kind: StorageKind) -> str | None:
    """What a plug-in's kind names that is not there (a module that cannot be found, a path that is
    not a file or directory), checked without importing the modules themselves."""
    from importlib.util import find_spec

    modules = {"probe_module": kind.probe_modules, "adapter_module": (kind.adapter_module, *kind.extra_adapter_modules),
               "lab_emulation": (kind.lab_emulation,)}
    for what, names in modules.items():
        for m in (n for n in names if n):
            try:
                found = find_spec(m) is not None
            except Exception:  # noqa: BLE001  (a parent package that fails to import)
                found = False
            if not found:
                return f"{what} {m!r} is not an importable module"
    for pack in kind.rule_packs:
        if Path(pack).is_absolute() and not Path(pack).is_file():
            return f"rule_pack {pack!r} is not a file"
    if kind.role and Path(kind.role).is_absolute() and not Path(kind.role).is_dir():
        return f"role {kind.role!r} is not a directory"
    return None


def registry_version() -> int:
    _registry()
    return _VERSION[0]


def storage_kinds() -> dict[str, StorageKind]:
    return dict(_registry())


def get_storage_kind(name: str) -> StorageKind | None:
    """The kind of that name or alias."""
    registry = _registry()
    kind = registry.get(name)
    if kind is None:
        kind = next((k for k in registry.values() if name in k.aliases), None)
    return kind


class StorageGate:
    """What a site's ``storage_systems`` lets run: the probe modules and rule packs of the kinds it
    does not name are shut out; everything else (the generic probes and packs) runs."""

    def __init__(self, systems: list[str] | tuple[str, ...] = ()):
        chosen = {k.name for k in (get_storage_kind(s) for s in systems) if k}
        others = [k for k in _registry().values() if systems and k.name not in chosen]
        self.systems = tuple(systems)
        self.closed_probe_modules = frozenset(m for k in others for m in k.probe_modules)
        self.closed_rule_packs = frozenset(Path(p).name for k in others for p in k.rule_packs)

    def probe_runs(self, probe: object) -> bool:
        return type(probe).__module__ not in self.closed_probe_modules

    def pack_loads(self, path: Path) -> bool:
        return path.name not in self.closed_rule_packs


def storage_gate(systems: list[str] | tuple[str, ...] | None) -> StorageGate:
    """The gate of a site's ``storage_systems`` (empty or None: everything runs)."""
    return StorageGate(tuple(systems or ()))


def register_storage_kind(kind: StorageKind) -> StorageKind:
    """Add a storage kind (a plug-in, or a test): its adapter, rule pack and role are found through
    this registry; the probes' discovery (probes.all_probes) reads its probe modules from here."""
    _registry()
    _REGISTRY[kind.name] = kind
    _VERSION[0] += 1
    return kind


def unregister_storage_kind(name: str) -> None:
    _registry().pop(name, None)
    _VERSION[0] += 1


def host_setting_names() -> set[str]:
    return {s for k in _registry().values() for s in k.host_settings}


def host_setting_kinds() -> dict[str, str]:
    return {name: what for k in _registry().values() for name, what in k.host_settings.items()}


def probe_modules() -> list[str]:
    return [m for k in _registry().values() for m in k.probe_modules]


def rule_packs() -> list[str]:
    return [p for k in _registry().values() for p in k.rule_packs]
