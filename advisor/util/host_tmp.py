"""The one kind of directory storadvise writes into on a host (docs/privileges.md).

Every script storadvise runs on a host (the probe batch, the mesh's iperf3 server, client and
TCP sampling, the active efficiency test's data server) makes its files in a directory of its own,
``mktemp -d`` of this one template (mode 0700), and removes it when it is done. Nothing else is
written on a host. tests/core/test_host_tmp.py holds every script of the product to it.
"""

from __future__ import annotations

#: the template, for the docs and the dry run
TEMPLATE = "${TMPDIR:-/tmp}/storadvise.XXXXXXXXXX"
#: the command that makes one (POSIX sh)
MKTEMP = f'mktemp -d "{TEMPLATE}"'


def remove(directory: str) -> str:
    """``rm -rf`` of a directory a host named back (its start script printed it): only a directory of
    the template's name is removed, whatever the host said."""
    import shlex

    q = shlex.quote(directory)
    return f"case {q} in */storadvise.?*) case {q} in *..*) ;; *) rm -rf {q};; esac;; esac\n"
