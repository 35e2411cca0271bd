# -*- coding: utf-8 -*-
# storadvise: the one sysctl key <-> /proc/sys path mapping.
# Licensed as storadvise itself.
"""A sysctl key's dotted form and its /proc/sys file, as sysctl.d(5) and procps sysctl(8) define them.

The one mapping of the project: the ``network.sysctl`` probe (probes/sysctl_conf.py loads this file)
and the ``storadvise_sysctl`` Ansible module both import it, so a key names the same file in both.

A key's separators are ``.``; a component may itself hold a dot written as ``/`` (an interface
``eth0.100``): ``net.ipv4.conf.eth0/100.rp_filter`` is ``/proc/sys/net/ipv4/conf/eth0.100/rp_filter``.
A key whose first separator is ``/`` is written the other way round (``net/ipv4/conf/eth0.100/rp_filter``)
and means the same key.
"""

from __future__ import annotations

import re

#: a sysctl key in either form (no blank, no shell or glob character)
SYSCTL_KEY_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:/@+-]*\Z")

_SWAP = str.maketrans("/.", "./")


def normalize_sysctl_key(key):
    """Dotted form of a key; a key whose first separator is ``/`` swaps ``/`` and ``.``."""
    key = key.strip()
    first_sep = re.search(r"[./]", key)
    if first_sep and first_sep.group(0) == "/":
        key = key.translate(_SWAP)
    return key


def sysctl_proc_path(key):
    """``net.ipv4.conf.eth0/100.rp_filter`` -> ``/proc/sys/net/ipv4/conf/eth0.100/rp_filter``."""
    return "/proc/sys/" + normalize_sysctl_key(key).translate(_SWAP)


def is_sysctl_key(key):
    """The text names a sysctl key (either form), never a path outside /proc/sys."""
    return isinstance(key, str) and bool(SYSCTL_KEY_RE.match(key)) and ".." not in key and "//" not in key


#: the parameter families storadvise tunes (rules ask for the network stack's, and a site rule may
#: ask for the VM's writeback and memory settings); nothing else is ever written (kernel.core_pattern
#: runs a command as root at every crash, kernel.modprobe at every module load, fs.* and dev.* are
#: not storage tuning)
TUNABLE_PREFIXES = ("net.", "vm.")
#: under those prefixes, the settings that weaken the kernel's own protections: never written
NOT_TUNABLE = frozenset(("net.core.bpf_jit_enable", "net.core.bpf_jit_harden", "net.core.bpf_jit_kallsyms",
                         "net.core.bpf_jit_limit", "vm.mmap_min_addr", "vm.mmap_rnd_bits", "vm.mmap_rnd_compat_bits",
                         "vm.unprivileged_userfaultfd", "vm.panic_on_oom", "vm.overcommit_memory"))


def tunable_problem(key):
    """Why storadvise never writes ``key`` (None: it may, when a rule asks for it)."""
    if not is_sysctl_key(key):
        return "not a kernel parameter name"
    dotted = normalize_sysctl_key(key)
    if not dotted.startswith(TUNABLE_PREFIXES):
        return "not a parameter storadvise tunes (%s only)" % ", ".join(p + "*" for p in TUNABLE_PREFIXES)
    if dotted in NOT_TUNABLE:
        return "a kernel protection, never tuned by storadvise"
    return None
