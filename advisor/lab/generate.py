"""Seeded random lab scenarios: sites of shapes nobody wrote by hand, for tests and for trying the loop.

``generate_scenario(seed)`` draws a site (3-8 hosts with storage, worker and sometimes door roles,
group names from several conventions, one or two switches) and faults from the catalogue the lab
can inject, and returns the scenario file's data with an ``expect:`` list: for every fault the
finding it must produce, on which host, and whether a plan can fix it there. The same seed always
gives the same scenario. ``storadvise lab generate --seed N`` writes it as YAML;
``storadvise lab up --scenario FILE`` builds it.

The catalogue (``fault_kinds()``):

==================  ==============================================================================
sysctl-runtime      a TCP sysctl wrong at runtime (sometimes persisted wrong too, as an old tuning
                    file leaves it)
sysctl-persisted    runtime right, the host's sysctl.d file wrong: lost at the next boot
sysctl-read-only    a TCP sysctl wrong and read-only on the host (container, site policy): no plan
                    can change it there
firewall            drops or a rate limit on the storage hosts for what another group sends
                    (nft or iptables)
buffers-delay       a delayed path between two groups and small receive/send buffer maxima on its
                    receivers/senders; a short mesh over that path (links at 500 Mb/s: the delay
                    forwarder's room on the lab's cores)
gpfs                GPFS settings below the baselines (emulated mmlsconfig/mmchconfig)
san                 SAN logical-drive cache settings (emulated SMcli)
waiver              one injected fault waived by the site
cephfs              a CephFS site (emulated ceph CLI): workers mount it through ceph-fuse (by hand: the
                    kernel fstab line), a slow OSD (by hand), sometimes slow ops / HEALTH_WARN (by hand),
                    sometimes a client option off in the workers' ceph.conf (the ceph_client role fixes it)
beegfs              BeeGFS clients on the workers with the file cache off or few connections per server
                    (the beegfs_client role fixes them)
hdfs                an HDFS balancer with too many concurrent moves / dispatcher threads on the storage
                    hosts (the hdfs_balancer role fixes them)
eos                 an EOS MGM with a read-only or unbooted file system, the balancer off or too many
                    balancer transfers (by hand: exact eos commands)
failing-disk        Caltech's failing disk: emulated disks on the storage hosts, one of them failing
                    (SMART counters, kernel I/O errors and/or an await far above its peers'); found,
                    never planned (replaced by hand). Drawn with its own seeded generator so the
                    other kinds' draws of a seed stay what they were before it joined the catalogue.
path-loss, policer  the path faults of the diagnosis (advisor/lab/generate_paths.py): a lossy sender with
                    SACK off, a packet-rate limit on a storage host; a short mesh measures them
cpu-load            a worker's CPUs kept busy by other jobs during those measurements: inconclusive
                    (``cpu``), never a cause (advisor/lab/generate_paths.py)
dcache              dCache pools on the storage hosts (and doors on the door hosts) below the dcache
                    pack's baselines: direct memory, mover limits, SRM TCP buffer (emulated files and
                    dcache command); drawn from its own generator, so older seeds keep their other faults
nic                 an emulated NIC on one or two hosts with one or two faults each (a 10G NIC at 1G, half
                    duplex, rising CRC errors, a short ring with drops, GRO or TSO off, every queue interrupt
                    on CPU 0) and sometimes the powersave governor on a storage host (advisor/lab/generate_nic.py;
                    its own generator)
==================  ==============================================================================

The storage-system kinds (cephfs, beegfs, hdfs, eos: each system's lab emulation declares its own,
``LabEmulation.generated_fault`` and ``generate_fault``) are drawn with a generator of their own too.
"""

from __future__ import annotations

import random
from typing import Any

import yaml

from advisor.lab.generate_nic import draw_nic_faults
from advisor.lab.generate_paths import PATH_FAULT_KINDS, draw_cpu_load, draw_path_faults, generated_mesh
from advisor.lab.emulation import generated_faults

#: the kinds drawn from the scenario's main generator, in draw order
_MAIN_KINDS = ("sysctl-runtime", "sysctl-persisted", "sysctl-read-only", "firewall", "buffers-delay", "gpfs",
               "san", "waiver")


def fault_kinds() -> tuple[str, ...]:
    """The catalogue: every fault kind ``lab generate`` may draw. The storage systems' kinds come from
    their lab emulations (``LabEmulation.generated_fault``) and are drawn with a random generator of
    their own (seed-derived), so adding one does not change the sites earlier seeds give."""
    return (_MAIN_KINDS + ("failing-disk", "dcache") + tuple(fault for fault, _, _ in generated_faults())
            + PATH_FAULT_KINDS + ("nic",))

#: what a failing disk shows (advisor/lab/emulators/disks.py) and the rules each sign fails
DISK_SIGNS = (("smart",), ("io_errors", "slow"), ("smart", "io_errors", "slow"))
DISK_FAILING_SHARE = 0.35
#: the sites' link rate when a path is delayed: what the lab's delay forwarder carries with room to spare
DELAYED_LINK_RATE = "500mbit"

#: per-namespace TCP sysctls, the value that is wrong, the default that is right, and the rule
TCP_SYSCTLS = {
    "net.ipv4.tcp_sack": (0, 1, "NET-TCP-SACK"),
    "net.ipv4.tcp_timestamps": (0, 1, "NET-TCP-TIMESTAMPS"),
    "net.ipv4.tcp_window_scaling": (0, 1, "NET-TCP-WINDOW-SCALING"),
}
STORAGE_GROUPS = ("servers", "nsd-servers", "pools", "disk-servers")
WORKER_GROUPS = ("workers", "wn", "batch", "compute")
DOOR_GROUPS = ("doors", "gridftp", "se")
#: GPFS attributes and values below the rule packs' baselines, with the rules they fail per role
GPFS_FAULTS = {
    "pagepool": ("256M", {"storage": "GPFS-PAGEPOOL-SERVER", "worker": "GPFS-PAGEPOOL-CLIENT"}),
    "prefetchThreads": (24, {"storage": "GPFS-PREFETCH-THREADS", "worker": "GPFS-PREFETCH-THREADS"}),
    "worker1Threads": (48, {"storage": "GPFS-WORKER1-THREADS", "worker": "GPFS-WORKER1-THREADS"}),
}
#: SAN logical-drive settings that fail a rule
SAN_FAULTS = {
    "prefetch": (False, "SAN-READ-PREFETCH"),
    "read_cache": (False, "SAN-READ-CACHE"),
    "modification_priority": ("highest", "SAN-MODIFICATION-PRIORITY"),
}
#: the receive/send buffer maximum on a delayed path (bytes): a 1 Gbit/s path at 10 ms needs ~1.2 MB
SMALL_BUFFER = "4096 65536 262144"


def _pick(rng: random.Random, seq, k: int = 1) -> list:
    return rng.sample(list(seq), k)


def generate_scenario(seed: int, name: str | None = None, min_hosts: int = 3, max_hosts: int = 8,
                      kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The scenario file's data for ``seed`` (see the module doc); ``kinds`` forces those faults in."""
    if not 3 <= min_hosts <= max_hosts <= 64:
        raise ValueError("hosts: 3 <= min_hosts <= max_hosts <= 64")
    rng = random.Random(seed)
    n = rng.randint(min_hosts, max_hosts)
    n_storage = rng.randint(1, max(1, min(3, n - 2)))
    n_door = 1 if n - n_storage >= 3 and rng.random() < 0.5 else 0
    n_worker = n - n_storage - n_door
    sg, wg, dg = rng.choice(STORAGE_GROUPS), rng.choice(WORKER_GROUPS), rng.choice(DOOR_GROUPS)
    width = 2
    hosts: list[dict[str, Any]] = []
    for i in range(n_storage):
        hosts.append({"name": f"st{i + 1:0{width}d}", "roles": ["storage"], "groups": [sg]})
    for i in range(n_door):
        hosts.append({"name": f"door{i + 1:0{width}d}", "roles": ["door"], "groups": [dg]})
    for i in range(n_worker):
        hosts.append({"name": f"wn{i + 1:0{width}d}", "roles": ["worker"], "groups": [wg]})
    storage = [h for h in hosts if "storage" in h["roles"]]
    workers = [h for h in hosts if "worker" in h["roles"]]
    two_switches = rng.random() < 0.5
    switches = [{"name": "core"}] + ([{"name": "edge", "uplink": "core"}] if two_switches else [])
    for h in hosts:
        h["switch"] = "edge" if two_switches and "worker" in h["roles"] else "core"

    chosen = set(kinds or ())
    for kind in _MAIN_KINDS:
        if kind not in chosen and rng.random() < 0.45:
            chosen.add(kind)
    if len(chosen - {"waiver", "failing-disk"}) < 2:  # at least two faults to find
        chosen |= set(_pick(rng, [k for k in _MAIN_KINDS if k not in chosen and k != "waiver"], 2))
    disk_rng = random.Random(f"failing-disk/{seed}")
    if disk_rng.random() < DISK_FAILING_SHARE:
        chosen.add("failing-disk")
    # dCache: its own seeded generator too (added after failing-disk: the other draws of a seed stay as they were)
    dcache_rng = random.Random(f"dcache-{seed}")
    if "dcache" in chosen or dcache_rng.random() < 0.45:
        chosen.add("dcache")
    # the shipped systems share one seed-derived generator, in their order; any other system has its own
    shared = random.Random(f"storage-kinds-{seed}")
    systems = generated_faults()
    system_rng = {kind: shared if e.generated_order is not None else random.Random(f"storage-kind-{kind}-{seed}")
                  for kind, e, _ in systems}
    for kind, _, _ in systems:
        if system_rng[kind].random() < 0.45:
            chosen.add(kind)

    expect: list[dict[str, Any]] = []
    injected: set[str] = set()
    data: dict[str, Any] = {
        "name": name or f"gen{seed}",
        "description": "",
        "link_rate": "1gbit",
        "switches": switches,
        "controller_switch": "core",
        "hosts": hosts,
    }
    used_keys: dict[str, set[str]] = {h["name"]: set() for h in hosts}

    def free_key(host: dict[str, Any]) -> str | None:
        free = [k for k in TCP_SYSCTLS if k not in used_keys[host["name"]]]
        if not free:
            return None
        key = rng.choice(free)
        used_keys[host["name"]].add(key)
        return key

    if "sysctl-runtime" in chosen:
        for h in _pick(rng, hosts, rng.randint(1, min(2, len(hosts)))):
            key = free_key(h)
            if key is None:
                continue
            bad, _good, rule = TCP_SYSCTLS[key]
            h.setdefault("sysctls", {})[key] = bad
            if rng.random() < 0.5:
                h["persist_sysctls"] = {"file": "60-old-tuning.conf", "comment": "an old tuning guide",
                                        "values": {**h.get("persist_sysctls", {}).get("values", {}), key: bad}}
            expect.append({"rule": rule, "host": h["name"], "fault": f"{key}={bad} at runtime"})
            injected.add("sysctl-runtime")
    if "sysctl-persisted" in chosen:
        h = rng.choice(hosts)
        key = free_key(h)
        if key is not None:
            bad, _good, _rule = TCP_SYSCTLS[key]
            pers = h.setdefault("persist_sysctls", {"file": "60-old-tuning.conf", "comment": "an old tuning guide",
                                                    "values": {}})
            pers.setdefault("values", {})[key] = bad
            expect.append({"rule": "NET-SYSCTL-NOT-PERSISTED", "host": h["name"], "subject": key,
                           "fault": f"{key}={bad} in /etc/sysctl.d/{pers['file']} only"})
            injected.add("sysctl-persisted")
    if "sysctl-read-only" in chosen:
        h = rng.choice(hosts)
        key = free_key(h)
        if key is not None:
            bad, _good, rule = TCP_SYSCTLS[key]
            h.setdefault("sysctls", {})[key] = bad
            h.setdefault("read_only_sysctls", []).append(key)
            expect.append({"rule": rule, "host": h["name"], "fixable": False,
                           "fault": f"{key}={bad}, read-only on the host"})
            injected.add("sysctl-read-only")
    # the runtime values of persisted-only keys must be right: the persisted file names them
    for h in hosts:
        pers = h.get("persist_sysctls")
        if pers is not None:
            for key in pers["values"]:
                if key not in h.get("sysctls", {}):
                    h.setdefault("sysctls", {})[key] = TCP_SYSCTLS[key][1]
    firewalls = []
    if "firewall" in chosen:
        senders = rng.choice([g for g in ([wg] + ([dg] if n_door else []) + ([sg] if n_storage > 1 else []))])
        backend = rng.choice(["nft", "iptables"])
        action = rng.choice(["drop", "limit"])
        fw: dict[str, Any] = {"from": [senders], "to": [sg], "action": action, "backend": backend}
        if action == "drop":
            fw["port"] = 1191  # the GPFS daemon port: the scan and the mesh still get through
        else:
            fw["rate"] = rng.choice([2000, 5000])
        firewalls.append(fw)
        sender_names = {h["name"] for h in hosts if senders in h["groups"]}
        for h in storage:
            if {x["name"] for x in hosts if senders in x["groups"]} - {h["name"]}:
                expect.append({"rule": "FW-STORAGE-NETWORK", "host": h["name"],
                               "fault": f"{backend} {action} of packets from {senders} ({', '.join(sorted(sender_names))})"})
                injected.add("firewall")
    if firewalls:
        data["firewalls"] = firewalls
    if "buffers-delay" in chosen:
        delay = rng.choice(["5ms", "10ms"])
        receive_side = rng.random() < 0.5
        key = "net.ipv4.tcp_rmem" if receive_side else "net.ipv4.tcp_wmem"
        limited = workers if receive_side else storage
        for h in limited:
            h.setdefault("sysctls", {})[key] = SMALL_BUFFER
            expect.append({"rule": "NET-TCP-BUFFER-MAX", "host": h["name"], "subject": key,
                           "fault": f"{key} max 256 KiB on a {delay} path"})
        data["paths"] = [{"from": [sg], "to": [wg], "delay": delay}]
        # the delay is a user-space forwarder on the lab's shared cores (docs/lab.md): at 1 Gb/s it
        # is the bottleneck itself (0.70-0.75 of the link measured after the buffers were fixed)
        data["link_rate"] = DELAYED_LINK_RATE
        data.setdefault("site", {})["mesh"] = generated_mesh([{"a": sg, "b": wg, "direction": "forward"}])
        injected.add("buffers-delay")
    if "gpfs" in chosen:
        attrs = _pick(rng, GPFS_FAULTS, rng.randint(1, len(GPFS_FAULTS)))
        data["gpfs"] = {"cluster_name": f"gpfs.{data['name']}.lab", "nodes": [sg, wg],
                        "node_classes": {"nsdNodes": [h["name"] for h in storage]},
                        "config": {a: GPFS_FAULTS[a][0] for a in attrs}}
        for h in storage + workers:
            role = h["roles"][0]
            for a in attrs:
                expect.append({"rule": GPFS_FAULTS[a][1][role], "host": h["name"],
                               "fault": f"GPFS {a} {GPFS_FAULTS[a][0]}"})
        injected.add("gpfs")
    if "san" in chosen:
        mgmt = rng.choice(storage)
        mgmt["roles"].append("san-controller")
        settings = _pick(rng, SAN_FAULTS, rng.randint(1, len(SAN_FAULTS)))
        data["san"] = {"host": mgmt["name"], "array_name": f"DS4700_{seed}", "controllers": ["ctl-a", "ctl-b"],
                       "logical_drives": [f"data[1:{rng.randint(1, 3)}]"],
                       "settings": {s: SAN_FAULTS[s][0] for s in settings}}
        for s in settings:
            expect.append({"rule": SAN_FAULTS[s][1], "host": mgmt["name"], "fault": f"SAN {s}={SAN_FAULTS[s][0]}"})
        injected.add("san")
    if "failing-disk" in chosen:
        protocol = disk_rng.choice(["ata", "nvme"])
        count = disk_rng.randint(3, 5)
        names = [f"nvme{i}n1" for i in range(count)] if protocol == "nvme" else [f"sd{chr(97 + i)}" for i in range(count)]
        h = disk_rng.choice(storage)
        disk = disk_rng.choice(names)
        signs = list(disk_rng.choice(DISK_SIGNS))
        data["disks"] = {"hosts": [sg], "protocol": protocol, "count": count,
                         "failing": [{"host": h["name"], "disk": disk, "signs": signs}]}
        what = ", ".join({"smart": "SMART failure counters", "io_errors": "kernel I/O errors",
                          "slow": "await far above its peers'"}[x] for x in signs)
        expect.append({"rule": "DISK-FAILING", "host": h["name"], "subject": disk, "fixable": False, "by_hand": True,
                       "fault": f"failing disk {disk}: {what}"})
        if "io_errors" in signs:
            expect.append({"rule": "DISK-IO-ERRORS", "host": h["name"], "fixable": False, "by_hand": True,
                           "fault": f"kernel I/O errors on {disk}"})
        if "slow" in signs:
            expect.append({"rule": "DISK-AWAIT-OUTLIER", "host": h["name"], "subject": disk, "fixable": False,
                           "by_hand": True, "fault": f"{disk} await far above its peers'"})
        injected.add("failing-disk")
    for kind, emulation, _ in systems:
        if kind in chosen:
            emulation.generate_fault(system_rng[kind], data, storage, workers, sg, wg, expect)
            injected.add(kind)
    site: dict[str, Any] = data.setdefault("site", {})
    site["storage_kind"] = "gpfs" if "gpfs" in chosen else rng.choice(["dcache", "xrootd", "eos", "other"])
    drawn = [storage_kind for k, _, storage_kind in systems if k in chosen]
    if drawn and "gpfs" not in chosen:
        site["storage_kind"] = drawn[0]
    site["profiles"] = ["generic"]
    site["description"] = f"generated site, seed {seed}"
    waivers = []
    if "waiver" in chosen:
        candidates = [e for e in expect if e.get("fixable", True)]
        if candidates:
            w = rng.choice(candidates)
            w["waived"] = True
            waivers.append({"rule": w["rule"], "hosts": w["host"], "approved_by": "generated site",
                            "justification": f"generated waiver for {w['fault']}"})
            injected.add("waiver")
    if waivers:
        site["waivers"] = waivers
    # after the waiver's draw: the waiver of a seed stays among the faults it had before dCache was added
    if "dcache" in chosen:
        _dcache_fault(dcache_rng, data, storage, [h for h in hosts if "door" in h["roles"]], sg, dg, expect)
        injected.add("dcache")
        if "gpfs" not in chosen:
            site["storage_kind"] = "dcache"
    # the path faults the diagnosis is about: their own generator, so every other draw of a seed stays
    injected |= set(draw_path_faults(seed, data, storage, workers, wg, expect))
    injected |= set(draw_cpu_load(seed, data, workers, expect))
    injected |= set(draw_nic_faults(seed, hosts, storage, expect, forced="nic" in (kinds or ())))
    data["description"] = (f"generated by 'storadvise lab generate --seed {seed}': "
                           f"faults {', '.join(k for k in fault_kinds() if k in injected)}")
    data["expect"] = expect
    return data


def _dcache_fault(rng: random.Random, data: dict[str, Any], storage: list[dict[str, Any]], doors: list[dict[str, Any]],
                  sg: str, dg: str, expect: list[dict[str, Any]]) -> None:
    """dCache pools on the storage hosts (doors on the door hosts, if any) below the dcache pack's baselines."""
    per_host = rng.randint(1, 3)
    movers = rng.choice([10, 20, 50])
    spec: dict[str, Any] = {"pools": [sg], "pools_per_host": per_host, "mover_max_active": movers}
    direct = rng.choice([None, "1g"])
    if direct:
        spec["pool_direct_memory"] = direct
    if doors:
        spec["doors"] = [dg]
        if rng.random() < 0.5:
            spec["srm_tcp_buffer"] = 2097152
    data["dcache"] = spec
    for h in storage:
        expect.append({"rule": "DCACHE-POOL-DIRECT-MEMORY", "host": h["name"], "subject": f"{h['name']}_poolsDomain",
                       "fault": f"pool domain direct memory {direct or 'unset (512m)'}"})
        for i in range(1, per_host + 1):
            expect.append({"rule": "DCACHE-POOL-MOVER-MAX-ACTIVE", "host": h["name"], "subject": f"{h['name']}_{i}",
                           "fault": f"mover set max active -queue=regular {movers}"})
    for h in doors:
        expect.append({"rule": "DCACHE-SRM-TCP-BUFFER", "host": h["name"], "subject": "doorsDomain",
                       "fault": f"srm.limits.transfer-tcp-buffer.size {spec.get('srm_tcp_buffer', 'unset (1048576)')}"})


def scenario_yaml(data: dict[str, Any]) -> str:
    head = f"# {data.get('description', '')}\n"
    return head + yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=110)


def fault_kinds_of(data: dict[str, Any]) -> set[str]:
    """The catalogue kinds a generated scenario holds (read back from its description)."""
    text = str(data.get("description", ""))
    listed = text.split("faults ", 1)[1] if "faults " in text else ""
    return {k.strip() for k in listed.split(",") if k.strip()}
