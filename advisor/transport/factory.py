"""The choice of transport for a host (``SshOptions`` lives in ``ssh_options.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.transport.ssh_options import SshOptions

__all__ = ["SshOptions", "transport_for"]

if TYPE_CHECKING:  # pragma: no cover
    from advisor.site.model import Host, Site
    from advisor.transport.base import Transport


def transport_for(host: "Host", site: "Site | None" = None, options: SshOptions | None = None) -> "Transport":
    """The transport for ``host``: local for a ``transport: local`` site, else SSH.

    SSH transports connect lazily (at the first ``run_batch`` or an explicit ``connect()``), so
    building one never touches the network.
    """
    if site is not None and site.transport == "local":
        from advisor.transport.local import LocalTransport

        return LocalTransport(sudo=host.sudo, command_timeout=options.command_timeout if options else None)
    from advisor.transport.ssh import SshTransport

    return SshTransport(host, options or SshOptions())
