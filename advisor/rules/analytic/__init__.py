"""Analytic rules: Python functions registered with ``@analytic_rule(id)`` (advisor.rules.context).

Importing this package registers every shipped analytic rule (the engine and ``rules lint`` do);
the rules' metadata lives in ``rules/*.yml`` entries with ``kind: python``. A new module here is
added to the list below.
"""

from advisor.rules.analytic import (  # noqa: F401  (imported for their registrations)
    disk_health,
    diskio,
    efficiency,
    firewall,
    flows,
    mesh,
    network,
    nic,
    storage,
)
