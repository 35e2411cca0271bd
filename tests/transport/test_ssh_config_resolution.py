"""Resolution of site hosts against an ssh config file (read by OpenSSH's ``ssh -G``), and
known_hosts matching (no network)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import paramiko
import pytest

from advisor.site.model import Host
from advisor.transport.base import TransportError
from advisor.transport.ssh import append_known_host, fingerprint, read_known_hosts
from advisor.transport.ssh_config import SshConfig, load_ssh_config, parse_jump_spec, resolve_endpoint, resolve_host

CONFIG = """
Host gpfs*
    HostName %h.storage.example
    User admin
    Port 2222
    IdentityFile ~/.ssh/site_key
    ProxyJump bastion

Host bastion
    HostName 192.0.2.10
    User jumper
    Port 2200

Host chain
    ProxyJump first,jumper@second:2201

Host loop
    ProxyJump loop

Host *
    UserKnownHostsFile /srv/kh/known_hosts
"""


@pytest.fixture
def config(tmp_path: Path) -> SshConfig:
    p = tmp_path / "config"
    p.write_text(CONFIG)
    return load_ssh_config(p)


def test_config_fills_what_the_site_leaves_out(config):
    ep = resolve_host(Host(name="gpfs01"), config)
    assert (ep.hostname, ep.port, ep.user) == ("gpfs01.storage.example", 2222, "admin")
    assert ep.identity_files == [Path("~/.ssh/site_key").expanduser()]
    assert ep.known_hosts_files == [Path("/srv/kh/known_hosts")]
    assert [(j.hostname, j.port, j.user) for j in ep.jumps] == [("192.0.2.10", 2200, "jumper")]
    assert ep.known_hosts_name == "[gpfs01.storage.example]:2222"
    assert "via" not in ep.where


def test_site_settings_win_over_config(config, tmp_path):
    key = tmp_path / "k"
    ep = resolve_host(Host(name="gpfs01", port=22, user="root", key=key), config)
    assert (ep.port, ep.user) == (22, "root")
    assert ep.identity_files[0] == key  # site key first, config IdentityFile after
    assert ep.known_hosts_name == "gpfs01.storage.example"


def test_address_is_what_config_is_looked_up_by(config):
    ep = resolve_host(Host(name="node1", address="gpfs07"), config)
    assert ep.hostname == "gpfs07.storage.example"
    assert ep.label == "node1"


def test_no_config_means_plain_defaults():
    ep = resolve_host(Host(name="n1", address="198.18.0.11"), None, default_user="probe")
    assert (ep.hostname, ep.port, ep.user, ep.jumps) == ("198.18.0.11", 22, "probe", [])


def test_jump_chain_in_order(config):
    ep = resolve_host(Host(name="chain"), config)
    assert [(j.hostname, j.port, j.user) for j in ep.jumps][1] == ("second", 2201, "jumper")
    assert ep.jumps[0].hostname == "first"


def test_jump_loop_is_an_error(config):
    with pytest.raises(TransportError, match="too long|loop"):  # ssh -G itself refuses a direct loop
        resolve_host(Host(name="loop"), config)


@pytest.mark.parametrize(
    "spec, want",
    [
        ("bastion", (None, "bastion", None)),
        ("u@bastion:2200", ("u", "bastion", 2200)),
        ("ssh://u@bastion:2200", ("u", "bastion", 2200)),
        ("[2001:db8::1]:2222", (None, "2001:db8::1", 2222)),
        ("u@2001:db8::1", ("u", "2001:db8::1", None)),
    ],
)
def test_parse_jump_spec(spec, want):
    assert parse_jump_spec(spec) == want


def test_bad_jump_port():
    with pytest.raises(TransportError, match="not a number"):
        parse_jump_spec("bastion:ssh")


def test_unparsable_config_is_one_line(tmp_path):
    p = tmp_path / "config"
    p.write_text("Host x\n  ProxyCommand\n")
    with pytest.raises(TransportError) as ei:
        load_ssh_config(p)
    assert "\n" not in str(ei.value) and str(p) in str(ei.value)


def test_include_and_match_mean_what_they_mean_to_ssh(tmp_path):
    """Our own parser knew neither; ssh -G does (issue 14, item 4)."""
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "workers.conf").write_text("Host wn*\n    User grid\n    Port 2022\n")
    p = tmp_path / "config"
    p.write_text(f"Include {tmp_path}/conf.d/*.conf\n\n"
                 "Match originalhost se* user probe\n    HostName %h.door.example\n    ProxyJump bastion\n\n"
                 "Host bastion\n    HostName 192.0.2.10\n")
    config = load_ssh_config(p)
    wn = resolve_host(Host(name="wn0042"), config)
    assert (wn.user, wn.port, wn.hostname, wn.jumps) == ("grid", 2022, "wn0042", [])
    se = resolve_host(Host(name="se01", user="probe"), config)
    assert se.user == "probe"  # the site's user wins; the Match on the *local* user did not fire
    local = os.environ.get("USER") or "root"
    p.write_text(p.read_text().replace("user probe", f"localuser {local}"))
    se = resolve_host(Host(name="se01"), load_ssh_config(p))
    assert se.hostname == "se01.door.example" and [j.hostname for j in se.jumps] == ["192.0.2.10"]


def test_hostile_host_name_is_not_an_ssh_option(tmp_path):
    p = tmp_path / "config"
    p.write_text("Host *\n    User x\n")
    # the site model refuses such an address; a ProxyJump spec in a config reaches ssh -G as a target
    with pytest.raises(TransportError):
        resolve_endpoint("h1", "-oProxyCommand=touch /tmp/pwned", config=load_ssh_config(p))
    assert not Path("/tmp/pwned").exists()


def test_missing_config_is_none(tmp_path):
    assert load_ssh_config(tmp_path / "nope") is None
    assert load_ssh_config(None) is None


# ---- known_hosts


def _blob(seed: int) -> bytes:
    return b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + bytes([seed]) * 32


def test_known_hosts_plain_port_hashed_wildcard_and_negation(tmp_path):
    kh = tmp_path / "known_hosts"
    b64 = lambda s: base64.b64encode(_blob(s)).decode()  # noqa: E731
    hashed = paramiko.HostKeys.hash_host("[10.0.0.5]:2222")
    kh.write_text(
        "# comment\n\n"
        f"gpfs01,198.18.0.11 ssh-ed25519 {b64(1)}\n"
        f"[198.18.0.11]:2222 ssh-ed25519 {b64(2)} comment here\n"
        f"{hashed} ssh-ed25519 {b64(3)}\n"
        f"*.example.org,!bad.example.org ssh-ed25519 {b64(4)}\n"
        f"@cert-authority *.example.org ssh-ed25519 {b64(5)}\n"
        "garbage line\n"
        f"broken ssh-ed25519 !!!notbase64\n"
    )
    assert [k.line for k in read_known_hosts(kh, "198.18.0.11")] == [3]
    assert [k.blob for k in read_known_hosts(kh, "[198.18.0.11]:2222")] == [_blob(2)]
    assert [k.blob for k in read_known_hosts(kh, "[10.0.0.5]:2222")] == [_blob(3)]
    assert read_known_hosts(kh, "10.0.0.5") == []
    assert [k.blob for k in read_known_hosts(kh, "Node.Example.org")] == [_blob(4)]
    assert read_known_hosts(kh, "bad.example.org") == []
    # '[' and ']' are literal, not a character class
    assert read_known_hosts(kh, "1") == []


def test_append_known_host_creates_private_file_and_fixes_missing_newline(tmp_path):
    kh = tmp_path / "sub" / "known_hosts"
    append_known_host(kh, "[127.0.0.1]:2022", "ssh-ed25519", _blob(7))
    assert oct(kh.stat().st_mode & 0o777) == "0o600"
    assert oct(kh.parent.stat().st_mode & 0o777) == "0o700"
    with open(kh, "a") as f:
        f.write("other ssh-ed25519 " + base64.b64encode(_blob(8)).decode())  # no newline
    append_known_host(kh, "third", "ssh-ed25519", _blob(9))
    lines = kh.read_text().splitlines()
    assert len(lines) == 3 and lines[2].startswith("third ")
    assert read_known_hosts(kh, "[127.0.0.1]:2022")[0].blob == _blob(7)


def test_fingerprint_matches_openssh_format():
    fp = fingerprint(_blob(1))
    assert fp.startswith("SHA256:") and not fp.endswith("=") and len(fp) == 7 + 43
