"""Storage-system faults of generated scenarios (advisor/lab/generate.py): each builder adds its lab section
(the kind's emulation, advisor/lab/emulators/*_lab.py) to the scenario data and the findings it must
produce to ``expect``. Findings whose rule has no remediation role are ``by_hand`` (``fixable: False``):
the plan lists them under "Not automated" and they still fail after verify."""

from __future__ import annotations

import random
from typing import Any

#: ceph.conf [client] options a CephFS fault turns the wrong way, with the rule that finds it
CEPH_CLIENT_FAULTS = {"client_oc": ("false", "CEPH-CLIENT-OBJECT-CACHE"),
                      "client_debug_force_sync_read": ("true", "CEPH-CLIENT-FORCE-SYNC-READ")}
#: beegfs-client.conf settings a BeeGFS fault turns the wrong way
BEEGFS_FAULTS = {"tuneFileCacheType": ("none", "BEEGFS-FILE-CACHE"),
                 "connMaxInternodeNum": ("4", "BEEGFS-CONN-MAX-INTERNODE")}
#: hdfs-site.xml properties above the rule pack's limits
HDFS_FAULTS = {"dfs.datanode.balance.max.concurrent.moves": ("200", "HDFS-BALANCER-CONCURRENT-MOVES"),
               "dfs.balancer.dispatcherThreads": ("400", "HDFS-BALANCER-DISPATCHER-THREADS")}
#: EOS default-space variables that fail a rule
EOS_SPACE_FAULTS = {"balancer": ("off", "EOS-SPACE-BALANCER"), "balancer.node.ntx": ("40", "EOS-SPACE-BALANCER-NTX")}


def _cephfs(rng: random.Random, data: dict[str, Any], storage: list, workers: list, sg: str, wg: str,
            expect: list[dict[str, Any]]) -> None:
    osds = rng.randint(3, 12)
    slow = rng.randrange(osds)
    ms = rng.choice([180, 250, 600])
    spec: dict[str, Any] = {"storage": [sg], "clients": [wg], "osds": osds, "slow_osds": {slow: ms}}
    for h in storage:
        expect.append({"rule": "CEPH-OSD-SLOW", "host": h["name"], "subject": str(slow), "fixable": False,
                       "by_hand": True, "fault": f"osd.{slow} at {ms} ms"})
    if rng.random() < 0.5:
        spec["slow_ops"] = [slow]
        for h in storage:
            for rule in ("CEPH-SLOW-OPS", "CEPH-HEALTH"):
                expect.append({"rule": rule, "host": h["name"], "fixable": False, "by_hand": True,
                               "fault": f"HEALTH_WARN: osd.{slow} has slow ops"})
    for h in workers:
        expect.append({"rule": "MOUNT-CEPH-FUSE", "host": h["name"], "subject": "/mnt/cephfs", "fixable": False,
                       "by_hand": True, "fault": "CephFS mounted through ceph-fuse"})
    if rng.random() < 0.7:
        opt = rng.choice(sorted(CEPH_CLIENT_FAULTS))
        value, rule = CEPH_CLIENT_FAULTS[opt]
        spec["client_options"] = {opt: value}
        for h in workers:
            expect.append({"rule": rule, "host": h["name"], "fault": f"{opt} = {value} in ceph.conf [client]"})
    data["ceph"] = spec


def _beegfs(rng: random.Random, data: dict[str, Any], storage: list, workers: list, sg: str, wg: str,
            expect: list[dict[str, Any]]) -> None:
    keys = rng.sample(sorted(BEEGFS_FAULTS), rng.randint(1, len(BEEGFS_FAULTS)))
    data["beegfs"] = {"clients": [wg], "mgmtd": storage[0]["name"], "settings": {k: BEEGFS_FAULTS[k][0] for k in keys}}
    for h in workers:
        for k in keys:
            expect.append({"rule": BEEGFS_FAULTS[k][1], "host": h["name"],
                           "fault": f"{k} = {BEEGFS_FAULTS[k][0]} in beegfs-client.conf"})


def _hdfs(rng: random.Random, data: dict[str, Any], storage: list, workers: list, sg: str, wg: str,
          expect: list[dict[str, Any]]) -> None:
    keys = rng.sample(sorted(HDFS_FAULTS), rng.randint(1, len(HDFS_FAULTS)))
    data["hdfs"] = {"hosts": [sg], "properties": {k: HDFS_FAULTS[k][0] for k in keys}}
    for h in storage:
        for k in keys:
            expect.append({"rule": HDFS_FAULTS[k][1], "host": h["name"],
                           "fault": f"{k} = {HDFS_FAULTS[k][0]} in hdfs-site.xml"})


def _eos(rng: random.Random, data: dict[str, Any], storage: list, workers: list, sg: str, wg: str,
         expect: list[dict[str, Any]]) -> None:
    mgm = storage[0]["name"]
    per_fst = rng.randint(1, 3)
    fid = rng.randint(1, per_fst * len(storage))
    bad_fs = rng.choice([({"configstatus": "ro"}, "EOS-FS-CONFIGSTATUS"),
                         ({"boot": "opserror", "active": "offline"}, "EOS-FS-ONLINE")])
    keys = rng.sample(sorted(EOS_SPACE_FAULTS), rng.randint(0, len(EOS_SPACE_FAULTS)))
    data["eos"] = {"mgm": mgm, "fsts": [sg], "filesystems_per_fst": per_fst, "filesystems": {fid: bad_fs[0]},
                   "space": {k: EOS_SPACE_FAULTS[k][0] for k in keys}}
    expect.append({"rule": bad_fs[1], "host": mgm, "subject": str(fid), "fixable": False, "by_hand": True,
                   "fault": f"EOS file system {fid}: {bad_fs[0]}"})
    for k in keys:
        expect.append({"rule": EOS_SPACE_FAULTS[k][1], "host": mgm, "fixable": False, "by_hand": True,
                       "fault": f"EOS space default: {k} = {EOS_SPACE_FAULTS[k][0]}"})


#: fault kind -> its builder
STORAGE_FAULTS = {"cephfs": _cephfs, "beegfs": _beegfs, "hdfs": _hdfs, "eos": _eos}
#: fault kind -> the site's storage_kind when it is the site's storage system
STORAGE_KIND_OF = {"cephfs": "ceph", "beegfs": "beegfs", "hdfs": "hdfs", "eos": "eos"}
