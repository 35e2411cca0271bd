"""SshTransport against a real OpenSSH server started on 127.0.0.1 (tests/support/sshd.py)."""

from __future__ import annotations

import os
import pwd
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

from advisor.site.model import Host, Site
from advisor.transport.base import (
    AuthenticationFailed,
    Command,
    HostKeyRefused,
    HostUnreachable,
)
from advisor.transport.factory import transport_for
from advisor.transport.local import LocalTransport
from advisor.transport.ssh import SshTransport
from tests.support.sshd import free_port, generate_key, public_key_text, running_sshd
from tests.support.sshd import hermetic_options


def ssh_keygen_fingerprint(private_key: Path) -> str:
    out = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", str(private_key) + ".pub"], capture_output=True, text=True, check=True
    ).stdout
    return out.split()[1]


def run1(t: SshTransport, script: str, **kw):
    return t.run_batch([Command(key="c", script=script, **kw)])[0]


# ---- host keys


def test_known_key_accepted(sshd, opts):
    with SshTransport(sshd.host(), opts) as t:
        r = run1(t, "echo hello; id -u")
    assert r.rc == 0 and r.stdout == f"hello\n{os.geteuid()}\n" and not r.timed_out
    assert sshd.accepted_logins() == 1


def test_unknown_key_refused(sshd, opts):
    kh = sshd.dir / "empty_known_hosts"
    kh.write_text("")
    with pytest.raises(HostKeyRefused) as ei:
        SshTransport(sshd.host(name="gpfs01", known_hosts=kh), opts).connect()
    msg = str(ei.value)
    assert "\n" not in msg
    assert msg.startswith(f"gpfs01 (127.0.0.1:{sshd.port}): host key refused: unknown key ED25519 ")
    assert ssh_keygen_fingerprint(sshd.host_key_path) in msg
    assert f"--trust-new-hosts to record it in {kh}" in msg
    assert kh.read_text() == ""  # nothing recorded without the option
    assert sshd.accepted_logins() == 0


def test_wrong_key_refused_even_with_trust_new_hosts(sshd, opts, tmp_path):
    other = generate_key(tmp_path / "other_host_key")
    kh = tmp_path / "known_hosts"
    kh.write_text(f"# site hosts\n{sshd.host_pattern} {public_key_text(other)}\n")
    before = kh.read_text()
    for trust in (False, True):
        o = opts.model_copy(update={"trust_new_hosts": trust})
        with pytest.raises(HostKeyRefused) as ei:
            SshTransport(sshd.host(name="gpfs01", known_hosts=kh), o).connect()
        msg = str(ei.value)
        assert "CHANGED (possible man-in-the-middle attack)" in msg
        assert ssh_keygen_fingerprint(sshd.host_key_path) in msg  # what the host offers
        assert ssh_keygen_fingerprint(other) in msg  # what we knew
        assert f"{kh}:2" in msg and "ssh-keygen -R" in msg
    assert kh.read_text() == before
    assert sshd.accepted_logins() == 0


def test_known_key_of_another_type_only_is_refused(sshd, opts, tmp_path):
    rsa = generate_key(tmp_path / "rsa_host_key", "rsa")
    kh = tmp_path / "known_hosts"
    kh.write_text(f"{sshd.host_pattern} {public_key_text(rsa)}\n")
    with pytest.raises(HostKeyRefused, match="has only a RSA key"):
        SshTransport(sshd.host(known_hosts=kh), opts.model_copy(update={"trust_new_hosts": True})).connect()


def test_hashed_known_hosts_entry(sshd, opts, tmp_path):
    kh = tmp_path / "known_hosts"
    kh.write_text(sshd.known_hosts_line())
    subprocess.run(["ssh-keygen", "-H", "-f", str(kh)], check=True, capture_output=True)
    assert kh.read_text().startswith("|1|")
    with SshTransport(sshd.host(known_hosts=kh), opts) as t:
        assert run1(t, "echo ok").stdout == "ok\n"


def test_trust_new_hosts_records_key_then_plain_connect_passes(sshd, opts, tmp_path):
    kh = tmp_path / "fresh" / "known_hosts"  # neither dir nor file exist yet
    host = sshd.host(known_hosts=kh)
    with SshTransport(host, opts.model_copy(update={"trust_new_hosts": True})) as t:
        assert run1(t, "echo first").stdout == "first\n"
    line = kh.read_text()
    assert line == f"[127.0.0.1]:{sshd.port} {sshd.host_public_key}\n"
    assert oct(kh.stat().st_mode & 0o777) == "0o600"
    # OpenSSH's own tool finds it
    found = subprocess.run(
        ["ssh-keygen", "-F", f"[127.0.0.1]:{sshd.port}", "-f", str(kh)], capture_output=True, text=True
    )
    assert found.returncode == 0
    with SshTransport(host, opts) as t:  # no trust option: the recorded key is now known
        assert run1(t, "echo second").stdout == "second\n"
    assert kh.read_text() == line  # recorded once


def test_default_known_hosts_path_from_options(sshd, tmp_path):
    default = tmp_path / "default_kh"
    default.write_text(sshd.known_hosts_line())
    o = hermetic_options(tmp_path, known_hosts_path=default)
    with SshTransport(sshd.host(known_hosts=None), o) as t:
        assert run1(t, "echo ok").rc == 0
    o2 = hermetic_options(tmp_path, known_hosts_path=tmp_path / "missing_kh")
    with pytest.raises(HostKeyRefused, match="missing_kh"):
        SshTransport(sshd.host(known_hosts=None), o2).connect()


# ---- reachability and authentication


def test_unreachable_port_fails_fast(opts):
    port = free_port()
    t0 = time.monotonic()
    with pytest.raises(HostUnreachable) as ei:
        SshTransport(Host(name="gpfs01", address="127.0.0.1", port=port, user="root"), opts).connect()
    assert time.monotonic() - t0 < 2
    assert str(ei.value) == f"gpfs01 (127.0.0.1:{port}): connection refused (no sshd listening on port {port}?)"


def test_silent_server_times_out_at_connect_timeout(tmp_path):
    """A port that accepts TCP but never speaks SSH: HostUnreachable after connect_timeout."""
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        port = srv.getsockname()[1]
        o = hermetic_options(tmp_path, connect_timeout=0.7)
        t0 = time.monotonic()
        with pytest.raises(HostUnreachable, match="SSH handshake failed"):
            SshTransport(Host(name="dead", address="127.0.0.1", port=port, user="root"), o).connect()
        assert time.monotonic() - t0 < 3


def test_wrong_client_key_is_authentication_failed(sshd, opts, tmp_path):
    wrong = generate_key(tmp_path / "id_wrong")
    with pytest.raises(AuthenticationFailed) as ei:
        SshTransport(sshd.host(name="gpfs01", key=wrong), opts).connect()
    msg = str(ei.value)
    assert msg.startswith(f"gpfs01 (127.0.0.1:{sshd.port}): authentication failed for user {sshd.user}: tried {wrong}")
    assert "\n" not in msg


def test_missing_key_file_is_authentication_failed(sshd, opts, tmp_path):
    with pytest.raises(AuthenticationFailed, match="key file .*nope not found"):
        SshTransport(sshd.host(key=tmp_path / "nope"), opts).connect()


def test_rsa_and_ecdsa_client_keys(sshd, opts, tmp_path):
    for kind in ("rsa", "ecdsa"):
        k = generate_key(tmp_path / f"id_{kind}", kind)
        sshd.authorize(k)
        with SshTransport(sshd.host(key=k), opts) as t:
            assert run1(t, "echo ok").stdout == "ok\n"


def test_identity_from_ssh_config(sshd, tmp_path):
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        f"Host lab-node\n    HostName 127.0.0.1\n    Port {sshd.port}\n    User {sshd.user}\n"
        f"    IdentityFile {sshd.client_key_path}\n    UserKnownHostsFile {sshd.known_hosts_path}\n"
    )
    o = hermetic_options(tmp_path, ssh_config_path=cfg)
    with SshTransport(Host(name="node1", address="lab-node"), o) as t:
        assert run1(t, "echo $SSH_CONNECTION").stdout.split()[3] == str(sshd.port)


# ---- running batches


def test_command_timeout_honoured_rest_of_batch_runs(sshd, opts):
    cmds = [
        Command(key="before", script="echo before"),
        Command(key="sleeper", script="echo started; sleep 30; echo never", timeout=1),
        Command(key="after", script="echo after"),
    ]
    t0 = time.monotonic()
    with SshTransport(sshd.host(), opts) as t:
        before, sleeper, after = t.run_batch(cmds)
    elapsed = time.monotonic() - t0
    assert elapsed < 4, elapsed
    assert sleeper.timed_out and sleeper.rc is None
    assert sleeper.stdout == "started\n" and "timed out after 1s" in sleeper.stderr
    assert 0.9 <= sleeper.duration_s < 3.5
    assert (before.rc, before.stdout, after.rc, after.stdout) == (0, "before\n", 0, "after\n")
    assert not before.timed_out and not after.timed_out


def test_command_timeout_option_overrides(sshd, tmp_path):
    o = hermetic_options(tmp_path, command_timeout=0.5)
    with SshTransport(sshd.host(), o) as t:
        r = run1(t, "sleep 10", timeout=60)
    assert r.timed_out and r.duration_s < 3


def test_batch_timeout_bounds_the_whole_session(sshd, tmp_path):
    o = hermetic_options(tmp_path, batch_timeout=1.0)
    t0 = time.monotonic()
    with SshTransport(sshd.host(), o) as t:
        first, slow = t.run_batch([Command(key="a", script="echo a"), Command(key="b", script="sleep 3", timeout=20)])
    assert time.monotonic() - t0 < 3
    assert first.rc == 0 and first.stdout == "a\n"
    assert slow.timed_out and slow.rc is None and "batch timed out after 1s" in slow.stderr


def test_batch_of_ten_uses_one_connection_and_one_session(sshd, opts):
    # each command prints the pid of its parent's parent (sh <- timeout <- the wrapper)
    script = "awk '/^PPid:/{print $2}' /proc/$PPID/status; echo \"$SSH_CONNECTION\""
    with SshTransport(sshd.host(), opts) as t:
        results = t.run_batch([Command(key=f"c{i}", script=script) for i in range(10)])
    assert [r.rc for r in results] == [0] * 10
    assert len({r.stdout for r in results}) == 1, [r.stdout for r in results]
    log = sshd.log()
    assert log.count("Accepted publickey") == 1
    assert len(re.findall(r"Starting session: command", log)) == 1


def test_batch_is_faster_than_a_session_per_command(sshd, opts, record_property):
    cmds = [Command(key=f"c{i}", script="cat /proc/loadavg") for i in range(10)]
    t0 = time.monotonic()
    with SshTransport(sshd.host(), opts) as t:
        assert [r.rc for r in t.run_batch(cmds)] == [0] * 10
    batched = time.monotonic() - t0
    t0 = time.monotonic()
    for c in cmds:  # the naive way: one connection and session per command
        with SshTransport(sshd.host(), opts) as t:
            assert t.run_batch([c])[0].rc == 0
    separate = time.monotonic() - t0
    record_property("batch_10_one_session_s", round(batched, 3))
    record_property("batch_10_separate_sessions_s", round(separate, 3))
    print(f"10 commands: one connection+session {batched:.3f}s, 10 connections+sessions {separate:.3f}s")
    assert batched < separate


def test_arbitrary_bytes_and_framing_lookalikes_survive(sshd, opts):
    every_byte = "".join(f"\\{b:03o}" for b in range(256))
    cmds = [
        Command(key="bytes", script=f"printf '{every_byte}'"),
        Command(key="frames", script="printf '@@SA x Z 0\\n@@SA x DONE\\nno newline at end'; printf 'e\\r\\n' >&2"),
        Command(key="quotes", script="x=1\ncat <<'EOF'\n$x 'single' \"double\" `backtick` \\\nEOF\necho \"$x\""),
        Command(key="stdin", script="read line; echo \"[${line:-}]\"; cat; echo end"),
        Command(key="big", script="i=0; while [ $i -lt 2000 ]; do printf '%0999d\\n' $i; i=$((i+1)); done"),
        Command(key="empty", script="true"),
        Command(key="utf8", script="printf 'caf\\303\\251 \\342\\234\\223\\n'"),
        Command(key="rc", script="exit 3"),
    ]
    with SshTransport(sshd.host(), opts) as t:
        r = {x.key: x for x in t.run_batch(cmds)}
    assert r["bytes"].stdout == bytes(range(256)).decode("utf-8", "replace")
    assert r["frames"].stdout == "@@SA x Z 0\n@@SA x DONE\nno newline at end" and r["frames"].stderr == "e\r\n"
    assert r["quotes"].stdout == "$x 'single' \"double\" `backtick` \\\n1\n"
    assert r["stdin"].stdout == "[]\nend\n"  # stdin is /dev/null: a command cannot eat the wrapper
    assert r["big"].stdout.count("\n") == 2000 and len(r["big"].stdout) == 2000 * 1000
    assert (r["empty"].rc, r["empty"].stdout, r["empty"].stderr) == (0, "", "")
    assert r["utf8"].stdout == "café ✓\n"
    assert r["rc"].rc == 3


def test_user_input_is_never_interpreted_by_the_login_shell(sshd, opts, tmp_path):
    marker = tmp_path / "pwned"
    key = f"x'; touch {marker}; echo '"
    with SshTransport(sshd.host(), opts) as t:
        r = t.run_batch([Command(key=key, script="echo safe")])[0]
    assert r.key == key and r.stdout == "safe\n" and not marker.exists()


def test_noisy_login_shell_output_is_ignored(tmp_path, monkeypatch):
    """Whatever the login prints before the wrapper starts (motd-like rc output, even a fake
    frame without the batch's random token) is ignored."""
    import advisor.transport.ssh as ssh_mod

    seen = []
    orig = ssh_mod.BatchParser.results
    monkeypatch.setattr(ssh_mod.BatchParser, "results", lambda self, *a, **k: seen.append(self.noise) or orig(self, *a, **k))
    force = "echo welcome to the login shell; echo \"@@SA fake BEGIN\"; echo noise >&2; eval \"$SSH_ORIGINAL_COMMAND\""
    with running_sshd(extra_config=f"ForceCommand {force}") as s:
        with SshTransport(s.host(), hermetic_options(tmp_path)) as t:
            assert run1(t, "echo clean").stdout == "clean\n"
    assert seen == [[b"welcome to the login shell", b"@@SA fake BEGIN"]]


def test_empty_batch_and_reuse_after_close(sshd, opts):
    t = SshTransport(sshd.host(), opts)
    assert t.run_batch([]) == []
    assert sshd.accepted_logins() == 0  # nothing to run: no connection
    assert run1(t, "echo 1").stdout == "1\n"
    assert run1(t, "echo 2").stdout == "2\n"  # same connection
    assert sshd.accepted_logins() == 1
    t.close()
    assert not t.connected
    assert run1(t, "echo 3").stdout == "3\n"  # reconnects
    t.close()
    assert sshd.accepted_logins() == 2


def test_transport_for_picks_ssh_or_local(sshd, opts):
    host = sshd.host()
    site = Site(name="s", hosts=[host])
    t = transport_for(host, site, opts)
    assert isinstance(t, SshTransport) and not t.is_local and sshd.accepted_logins() == 0
    with t:
        assert t.run("echo via-factory").stdout == "via-factory\n"
    local = transport_for(host, Site(name="l", transport="local", hosts=[host]), opts)
    assert isinstance(local, LocalTransport) and local.is_local


# ---- ProxyJump


def _jump_config(tmp_path: Path, jump, target, kh: Path) -> Path:
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        f"Host target-via-jump\n    HostName 127.0.0.1\n    Port {target.port}\n    User {target.user}\n"
        f"    IdentityFile {target.client_key_path}\n    ProxyJump bastion\n    UserKnownHostsFile {kh}\n\n"
        f"Host bastion\n    HostName 127.0.0.1\n    Port {jump.port}\n    User {jump.user}\n"
        f"    IdentityFile {jump.client_key_path}\n    UserKnownHostsFile {kh}\n"
    )
    return cfg


def test_proxyjump_through_a_second_sshd(tmp_path):
    with running_sshd(log_level="DEBUG1") as jump, running_sshd() as target:
        kh = tmp_path / "known_hosts"
        kh.write_text(jump.known_hosts_line() + target.known_hosts_line())
        o = hermetic_options(tmp_path, ssh_config_path=_jump_config(tmp_path, jump, target, kh))
        with SshTransport(Host(name="gpfs01", address="target-via-jump"), o) as t:
            results = t.run_batch([Command(key=f"c{i}", script=f"echo {i}") for i in range(3)])
        assert [r.stdout for r in results] == ["0\n", "1\n", "2\n"]
        assert jump.accepted_logins() == 1 and target.accepted_logins() == 1
        # the target connection was forwarded by the jump sshd (direct-tcpip channel)
        assert re.search(rf"server_request_direct_tcpip: .*target 127\.0\.0\.1 port {target.port}\b", jump.log()), jump.log()[-2000:]


def test_proxyjump_unknown_jump_key_refused_naming_the_jump(tmp_path):
    with running_sshd() as jump, running_sshd() as target:
        kh = tmp_path / "known_hosts"
        kh.write_text(target.known_hosts_line())  # jump host's key missing
        o = hermetic_options(tmp_path, ssh_config_path=_jump_config(tmp_path, jump, target, kh))
        with pytest.raises(HostKeyRefused) as ei:
            SshTransport(Host(name="gpfs01", address="target-via-jump"), o).connect()
        msg = str(ei.value)
        assert msg.startswith(
            f"gpfs01 (127.0.0.1:{target.port} via 127.0.0.1:{jump.port}): jump host bastion (127.0.0.1:{jump.port}): "
            "host key refused: unknown key"
        )
        assert target.log().count("Connection from") == 1  # only the fixture's readiness probe


def test_proxyjump_forwarding_refused_is_unreachable(tmp_path):
    with running_sshd(extra_config="AllowTcpForwarding no") as jump, running_sshd() as target:
        kh = tmp_path / "known_hosts"
        kh.write_text(jump.known_hosts_line() + target.known_hosts_line())
        o = hermetic_options(tmp_path, ssh_config_path=_jump_config(tmp_path, jump, target, kh))
        with pytest.raises(HostUnreachable, match="bastion .* could not open a connection to it"):
            SshTransport(Host(name="gpfs01", address="target-via-jump"), o).connect()


# ---- sudo as a non-root login user


def _unprivileged_login_user() -> pwd.struct_passwd | None:
    for p in pwd.getpwall():
        if p.pw_uid >= 1000 and p.pw_uid != 65534 and p.pw_shell.endswith(("/bash", "/sh", "/dash", "/zsh")):
            if os.path.isdir(p.pw_dir):
                return p
    return None


FAKE_SUDO = """#!/bin/sh
# stand-in for sudo(8) in tests: with a 'nopasswd' file next to it, it runs `sudo -n -- CMD...`
# as given (without changing user); else it answers as `sudo -n` does for a user without NOPASSWD
if [ "$1" != -n ] || [ "$2" != -- ]; then echo "fake sudo: unexpected arguments: $*" >&2; exit 2; fi
shift 2
if [ -e "$(dirname "$0")/nopasswd" ]; then SUDO_USER=fake; export SUDO_USER; exec "$@"; fi
echo "sudo: a password is required" >&2
exit 1
"""


@pytest.fixture
def unprivileged_sshd():
    """(sshd running as an unprivileged user, that user, a bin dir first on the session PATH)."""
    user = _unprivileged_login_user()
    if user is None:
        pytest.skip("no unprivileged local user with a login shell")
    import shutil
    import tempfile

    bindir = Path(tempfile.mkdtemp(prefix="storadvise-fakebin-"))
    try:
        os.chmod(bindir, 0o755)
        with running_sshd(run_as=user.pw_name, extra_config=f"SetEnv PATH={bindir}:/usr/bin:/bin") as s:
            yield s, user, bindir
    finally:
        shutil.rmtree(bindir, ignore_errors=True)


@pytest.mark.root  # runs sshd as another user
def test_sudo_over_ssh_as_unprivileged_user(unprivileged_sshd, tmp_path):
    """Logged in as a non-root user: sudo commands go through `sudo -n`, plain ones do not; a
    missing sudo and a sudo that wants a password fail fast, with a clear first line of stderr."""
    s, user, bindir = unprivileged_sshd
    opts = hermetic_options(tmp_path)
    batch = [
        Command(key="plain", script="echo $(id -u) ${SUDO_USER:-direct}"),
        Command(key="priv", script="echo $(id -u) ${SUDO_USER:-direct}", sudo=True),
    ]
    direct = f"{user.pw_uid} direct\n"

    def run(host_sudo=None):
        with SshTransport(s.host(sudo=host_sudo), opts) as t:
            return t.run_batch(batch)

    # no sudo on the host (only the system dirs, which have none here, and the empty bin dir)
    if not any(Path(d, "sudo").exists() for d in ("/usr/bin", "/bin")):
        plain, priv = run()
        assert plain.rc == 0 and plain.stdout == direct
        assert priv.rc == 127 and priv.stderr.startswith("sudo is not installed on sshd-test; "), priv.stderr

    (bindir / "sudo").write_text(FAKE_SUDO)
    os.chmod(bindir / "sudo", 0o755)
    t0 = time.monotonic()
    plain, priv = run()
    assert time.monotonic() - t0 < 5
    assert plain.stdout == direct
    assert priv.rc == 1 and priv.stderr.splitlines() == [
        f"sudo requires a password for {user.pw_name} on sshd-test (sudo -n refused); "
        "allow it NOPASSWD (narrowly: 'storadvise sudoers' with the probe helper) or set 'sudo: false' for the host",
        "sudo: a password is required",
    ]

    (bindir / "nopasswd").write_text("")
    plain, priv = run()
    assert (plain.stdout, priv.rc, priv.stdout) == (direct, 0, f"{user.pw_uid} fake\n")
    plain, priv = run(host_sudo=False)  # never
    assert (plain.stdout, priv.stdout) == (direct, direct)
    plain, priv = run(host_sudo=True)  # every command
    assert (plain.stdout, priv.stdout) == (f"{user.pw_uid} fake\n", f"{user.pw_uid} fake\n")


@pytest.mark.root  # logs in as root
def test_root_login_never_uses_sudo(sshd, opts):
    if os.geteuid() != 0:
        pytest.skip("the test sshd logs in as the current user")
    with SshTransport(sshd.host(sudo=True), opts) as t:
        r = t.run_batch([Command(key="p", script="echo $(id -u) ${SUDO_USER:-direct}", sudo=True)])[0]
    assert r.stdout == "0 direct\n"


def test_login_that_refuses_to_run_commands_is_one_line_error(tmp_path):
    from advisor.transport.base import TransportError

    force = "echo This account is currently not available.; exit 1"
    with running_sshd(extra_config=f"ForceCommand {force}") as s:
        with pytest.raises(TransportError) as ei:
            SshTransport(s.host(name="w1"), hermetic_options(tmp_path)).run("true")
    assert str(ei.value) == (
        f"w1 (127.0.0.1:{s.port}): the remote shell did not run the batch (exit status 1): "
        "This account is currently not available."
    )


def test_large_scripts_and_outputs_in_one_batch(sshd, opts):
    """Several MB each way through one session: the sender does not deadlock with the reader."""
    filler = ("# " + "x" * 97 + "\n") * 30000  # 3 MB of script
    cmds = [
        Command(key=f"k{i}", script=filler + f"head -c 1500000 /dev/zero | tr '\\0' '{i}'") for i in range(2)
    ]
    with SshTransport(sshd.host(), opts) as t:
        r0, r1 = t.run_batch(cmds)
    assert r0.stdout == "0" * 1500000 and r1.stdout == "1" * 1500000


def test_proxyjump_uses_the_site_key_and_known_hosts_for_the_jump(tmp_path):
    """Site file gives key + known_hosts; the ssh config only says 'ProxyJump bastion'."""
    with running_sshd() as jump, running_sshd() as target:
        jump.authorize(target.client_key_path)  # one site key for both
        kh = tmp_path / "site_known_hosts"
        kh.write_text(jump.known_hosts_line() + target.known_hosts_line())
        cfg = tmp_path / "ssh_config"
        cfg.write_text(f"Host gpfs01-int\n    HostName 127.0.0.1\n    ProxyJump {jump.user}@127.0.0.1:{jump.port}\n")
        o = hermetic_options(tmp_path, ssh_config_path=cfg)
        host = target.host(name="gpfs01", address="gpfs01-int", known_hosts=kh)
        with SshTransport(host, o) as t:
            assert t.run("echo ok").stdout == "ok\n"
        assert jump.accepted_logins() == 1 and target.accepted_logins() == 1


def test_bad_ssh_config_fails_at_connect_naming_the_host(tmp_path):
    cfg = tmp_path / "ssh_config"
    # an indirect loop (ssh -G itself refuses a host that jumps through itself)
    cfg.write_text("Host loop\n    ProxyJump other\nHost other\n    ProxyJump loop\n")
    t = SshTransport(Host(name="gpfs01", address="loop"), hermetic_options(tmp_path, ssh_config_path=cfg))
    from advisor.transport.base import TransportError

    with pytest.raises(TransportError, match=r"^gpfs01: jump host (loop|other): ProxyJump chain too long"):
        t.run("true")


def test_dns_failure_is_unreachable(monkeypatch, opts):
    """Name resolution failing (simulated: no network lookups from the tests)."""

    def fail(*a, **k):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr("advisor.transport.ssh.socket.create_connection", fail)
    with pytest.raises(HostUnreachable) as ei:
        SshTransport(Host(name="gpfs09", address="gpfs09.site.example", user="root"), opts).connect()
    assert str(ei.value) == "gpfs09 (gpfs09.site.example:22): cannot resolve 'gpfs09.site.example': Name or service not known"
