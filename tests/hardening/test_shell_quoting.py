"""Site-given strings reach shells quoted: hostile values run nothing, locally and over SSH.

The active efficiency test's ``python`` setting went into ``exec {python} - ...`` unquoted, and the
plan's ``ansible_ssh_common_args`` carried the known_hosts path unquoted (a path holding
`` -o ProxyCommand=...`` became an ssh option). Each hostile value below would create a marker
file if it ran; none may.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.util.ansible_data import dump_data, vars_as_data
from advisor.apply.project import connection_vars
from advisor.efficiency.active import EfficiencyTestError, job_script, python_command, server_start_script
from advisor.transport.factory import SshOptions
from advisor.transport.ssh import SshTransport
from tests.support.sshd import sshd_available


def hostile(mark: Path) -> list[str]:
    return [f"a;touch {mark}", f"$(touch {mark})", f"`touch {mark}`", f"python3\ntouch {mark}",
            f"-oProxyCommand=touch {mark}", f"python3 && touch {mark}", f"python3 | touch {mark}"]


def test_python_setting_is_checked(tmp_path):
    for value in hostile(tmp_path / "m"):
        with pytest.raises(EfficiencyTestError, match="extensions.efficiency.python"):
            python_command(value)
    assert python_command(None) == "python3" and python_command("/opt/py/bin/python3.11") == "/opt/py/bin/python3.11"


def test_hostile_python_runs_nothing_locally(tmp_path):
    mark = tmp_path / "m"
    for value in hostile(mark):
        for script in (job_script(["job", "--help"], python=value),
                       server_start_script("tok", 1.0, bind="127.0.0.1", python=value)):
            subprocess.run(["sh", "-c", script], capture_output=True, timeout=30, env={"PATH": "/usr/bin:/bin",
                                                                                        "TMPDIR": str(tmp_path)})
            assert not mark.exists(), value


@pytest.mark.skipif(not sshd_available(), reason="needs /usr/sbin/sshd")
def test_hostile_python_runs_nothing_over_ssh(sshd, tmp_path):  # noqa: F811
    mark = tmp_path / "m"
    t = SshTransport(sshd.host(), SshOptions(ssh_config_path=None, use_agent=False, look_for_keys=False,
                                             system_known_hosts_path=None, connect_timeout=10))
    try:
        ok = t.run(job_script(["job", "--help"], python=sys.executable), timeout=30)
        assert ok.rc == 0, ok.stderr  # the same script with a real interpreter does run
        for value in hostile(mark):
            r = t.run(job_script(["job", "--help"], python=value), timeout=30)
            assert r.rc != 0 and not mark.exists(), value
    finally:
        t.close()


ANSIBLE = shutil.which("ansible", path=str(Path(sys.executable).parent)) or shutil.which("ansible")


@pytest.mark.skipif(not sshd_available() or not ANSIBLE, reason="needs sshd and ansible")
def test_known_hosts_path_is_one_ssh_option(sshd, tmp_path):  # noqa: F811
    mark = tmp_path / "pwned"  # ProxyCommand would run in ansible's working directory, tmp_path
    kh_dir = tmp_path / "with space"
    kh_dir.mkdir()
    kh = kh_dir / "kh -o ProxyCommand=touch pwned"
    kh.write_text(sshd.known_hosts_line())
    host = sshd.host(name="q1", known_hosts=kh)
    inv = tmp_path / "inventory.yml"
    inv.write_text(dump_data({"all": {"hosts": {"q1": vars_as_data(connection_vars(host), "q1")}}}))
    cp = subprocess.run([ANSIBLE, "-i", str(inv), "q1", "-m", "ansible.builtin.ping"], capture_output=True, text=True,
                        timeout=120, cwd=tmp_path,
                        env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path),
                             "ANSIBLE_HOME": str(tmp_path / "ah"), "ANSIBLE_HOST_KEY_CHECKING": "True",
                             "ANSIBLE_SSH_CONTROL_PATH_DIR": str(tmp_path / "cp"),
                             "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3" if Path("/usr/bin/python3").exists()
                             else sys.executable})
    assert not mark.exists()
    assert cp.returncode == 0 and '"ping": "pong"' in cp.stdout, cp.stdout + cp.stderr
