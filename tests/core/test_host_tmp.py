"""Everything storadvise writes on a host is in directories of one template (advisor/util/host_tmp.py,
docs/privileges.md): the probe batch, the mesh's iperf3 server, client key and TCP sampling, and the active
efficiency test's data server. The stop scripts remove only a directory of that name, whatever the host said."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from advisor.util.host_tmp import MKTEMP, TEMPLATE, remove

REPO = Path(__file__).resolve().parents[2]


def test_every_mktemp_of_the_product_uses_the_one_template():
    uses = []
    for d in ("advisor", "probes", "playbooks"):
        for f in (REPO / d).rglob("*"):
            if f.suffix in (".py", ".sh", ".yml", ".j2") and f.is_file() and f.name != "host_tmp.py":
                for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                    if re.search(r"\bmktemp\b", line) and "mktemp -d" in line and '"${' in line:
                        uses.append(f"{f.relative_to(REPO)}:{n}: {line.strip()}")
    # no script spells a template of its own: each one takes MKTEMP
    assert uses == [], uses


def test_the_scripts_make_their_directory_from_the_template():
    from advisor.efficiency.active import server_start_script
    from advisor.mesh import iperf, sampling
    from advisor.mesh.iperf_auth import IperfAuth
    from advisor.transport.base import Command
    from advisor.transport.batch_framing import BatchScript

    auth = IperfAuth("u", "p", "private", "public")
    scripts = {
        "batch": BatchScript.build([Command(key="k", script="true")]).text,
        "iperf3 server": iperf.server_start_script(5201, 10, auth=auth),
        "sampling": sampling.wrap_client("iperf3 -c x", "10.0.0.1", 5201),
        "client key": auth.client_script("iperf3 -c x"),
        "efficiency server": server_start_script("tok", 10.0),
    }
    for name, text in scripts.items():
        assert text.count("mktemp -d \"") == text.count(MKTEMP) >= 1, (name, text)
    assert TEMPLATE in MKTEMP and TEMPLATE.endswith("/storadvise.XXXXXXXXXX")


def test_remove_touches_only_a_directory_of_the_template(tmp_path):
    mine = tmp_path / "storadvise.AbC123"
    other = tmp_path / "data"
    for d in (mine, other):
        d.mkdir()
        (d / "f").write_text("x")
    for named in (str(other), str(tmp_path), "/", f"{mine}/../data", str(tmp_path / "storadvise."), "-rf /x"):
        subprocess.run(["sh", "-c", remove(named)], check=True, timeout=10)
    assert other.is_dir() and mine.is_dir()
    subprocess.run(["sh", "-c", remove(str(mine))], check=True, timeout=10)
    assert not mine.exists() and other.is_dir()
