"""playbooks/collect.yml against a real sshd in a network namespace the test creates (its own
interfaces and mounts, so other tests on the machine do not change what it sees), with real
ansible-playbook: its capture
holds the same files, byte for byte, as `storadvise collect` writes for the same host; only what
differs by nature may differ (named below)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.ns_host import requirements_missing

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

pytestmark = [
    pytest.mark.skipif(bool(requirements_missing()), reason=str(requirements_missing())),
    pytest.mark.usefixtures("ansible_playbook"),
]

#: sections of probe outputs that are live readings and differ between any two collections by
#: nature: kernel counters, the clock, free memory. In them, the same lines must name the same
#: things (device, meminfo field); the values may differ.
LIVE_SECTIONS = {"block.diskstats": {"uptime1", "uptime2", "diskstats1", "diskstats2"}, "host": {"meminfo"},
                 "block.ioerrors": {"log-lines"},  # the kernel log's length: it grows meanwhile
                 "xrootd.process": {"fds"},
                 # production flows: the clock, the NICs' counters and the connections, read twice
                 "network.flows": {"uptime1", "uptime2", "netdev1", "netdev2", "ss1", "ss2"}}  # a running xrootd's open-descriptor count ("fds PID"): it opens and closes files
#: manifest fields that are timestamps
TIMESTAMPS = {"collected_at"}


def _sections(text: bytes) -> list[tuple[bytes, list[bytes]]]:
    out: list[tuple[bytes, list[bytes]]] = [(b"", [])]
    for line in text.split(b"\n"):
        if line.startswith(b"@@section "):
            out.append((line[len(b"@@section "):], []))
        else:
            out[-1][1].append(line)
    return out


def _names(section: bytes, line: bytes) -> list[bytes] | int:
    """What a live line is about: a disk (major, minor, name), a meminfo field; uptime, a count: its shape."""
    if section.startswith(b"diskstats"):
        return line.split()[:3]
    if section.startswith(b"uptime") or section == b"log-lines" or section.startswith(b"fds "):
        return len(line.split())
    if section in (b"ss1", b"ss2"):  # a connection's line, or its TCP information (the values move)
        return [b"info" if line[:1] in (b" ", b"\t") else b"socket"]
    return line.split()[:1]


def _others(line: bytes) -> bool:
    """A mount another test's namespace host makes and removes while this one runs (xdist workers share
    the machine): a network namespace's nsfs under /run/netns, an empty file bound over /root/.bashrc."""
    fields = line.split()
    return len(fields) > 2 and (fields[2] == b"nsfs" or fields[1] == b"/root/.bashrc")


def _same_output(probe: str, a: bytes, b: bytes) -> None:
    live = LIVE_SECTIONS.get(probe, set())
    if probe == "mounts":
        a, b = (b"\n".join(ln for ln in x.split(b"\n") if not _others(ln)) for x in (a, b))
    sa, sb = _sections(a), _sections(b)
    assert [n for n, _ in sa] == [n for n, _ in sb], probe
    for (name, la), (_, lb) in zip(sa, sb):
        if probe == "disk.smart" and name.startswith(b"device "):
            # smartctl's JSON states when it ran: local_time (a timestamp)
            ja, jb = (json.loads(b"\n".join(x)) for x in (la, lb))
            ja.pop("local_time", None), jb.pop("local_time", None)
            assert ja == jb, (probe, name)
        elif name.decode() in live or name.decode().split(" ")[0] in live:
            assert [_names(name, ln) for ln in la] == [_names(name, ln) for ln in lb], (probe, name)
        else:
            assert la == lb, (probe, name)


class _UnsafeLoader(yaml.SafeLoader):
    """Reads the vars file's ``!unsafe`` strings as plain strings."""


_UnsafeLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def _object(capture: Path, oid: str) -> bytes:
    return (capture / "objects" / oid[:2] / oid[2:]).read_bytes()


def _window(text: bytes) -> float:
    secs = dict(_sections(text))
    return float(secs[b"uptime2"][0].split()[0]) - float(secs[b"uptime1"][0].split()[0])


@pytest.mark.parametrize("transfer", ["raw", "script"])
def test_collect_playbook_writes_the_same_capture_as_storadvise_collect(tmp_path, transfer, ns_hosts):
    """Both ways of getting the script to the host: in the command line (``raw``, what a script that
    fits in one gets) and copied by the ``script`` module (a script too long for one command line)."""
    host, cleanup = ns_hosts("co01", {}, own_sysfs=True)
    try:
        _compare(host, tmp_path, transfer)
    finally:
        cleanup()


def _compare(host, tmp_path: Path, transfer: str) -> None:
    site = host.site_file(tmp_path / "site.yml", ["storage", "worker"])
    builtin, viaansible = tmp_path / "builtin", tmp_path / "ansible"
    sa = str(BIN / "storadvise")
    host.controller([sa, "collect", "--site", str(site), "--out", str(builtin), "--sample-seconds", "1"])
    vars_file = tmp_path / "collect-vars.yml"
    host.controller([sa, "collect", "--site", str(site), "--ansible-vars", str(vars_file), "--sample-seconds", "1"])
    if transfer == "script":  # a script too long for one command line (Linux: 128 KiB for one argument)
        script = tmp_path / "collect-vars.batch.sh"
        script.write_text(script.read_text() + "".join(f"# a long site's script: line {i} {'x' * 120}\n" for i in range(1100)))
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {host.name: {
        "ansible_host": "127.0.0.1", "ansible_user": "root", "ansible_ssh_private_key_file": str(host.key),
        "ansible_ssh_common_args": f"-o UserKnownHostsFile={host.known_hosts} -o StrictHostKeyChecking=yes",
        # no Python on the host: a task that needed one would fail
        "ansible_python_interpreter": "/nonexistent/python3"}}}}))
    ctl_tmp = tmp_path / "controller-tmp"
    ctl_tmp.mkdir()
    played = host.controller([str(BIN / "ansible-playbook"), "-v", "-i", str(inventory),
                              str(REPO / "playbooks" / "collect.yml"), "-e", f"storadvise_collect_vars={vars_file}",
                              "-e", f"storadvise_collect_dir={viaansible}"], env_extra={"TMPDIR": str(ctl_tmp)})
    assert "failed=0" in played.stdout and "unreachable=0" in played.stdout
    # one task on the host, whose action chose how the script travels; its output was saved on the
    # controller, not carried in the task's result
    assert played.stdout.count("TASK [collect_batch : Run the host's probe batch]") == 1
    assert "skipping: [co01]" not in played.stdout
    assert f'"transfer": "{"command line" if transfer == "raw" else "copied"}"' in played.stdout
    assert '"saved": "' in played.stdout and "@@SA " not in played.stdout
    # what every host's task loads: a host is only the number of its batch
    collect = yaml.load(vars_file.read_text(), Loader=_UnsafeLoader)["storadvise_collect"]
    assert collect["hosts"] == {host.name: {"batch": 0}}
    assert list(ctl_tmp.iterdir()) == []  # nothing left on the controller but the capture

    # every file but the content-addressed objects (named by their content's hash: a live reading
    # names a different object) is at the same path; the objects are compared through the index
    files_a = sorted(p.relative_to(builtin) for p in builtin.rglob("*") if p.is_file() and "objects" not in p.parts)
    files_b = sorted(p.relative_to(viaansible) for p in viaansible.rglob("*") if p.is_file() and "objects" not in p.parts)
    assert files_a == files_b
    for rel in files_a:
        a, b = (builtin / rel).read_bytes(), (viaansible / rel).read_bytes()
        if rel.name == "manifest.json":
            ma, mb = json.loads(a), json.loads(b)
            for k in TIMESTAMPS:
                ma.pop(k), mb.pop(k)
            assert ma == mb
        elif rel.name == "outputs.json":
            oa, ob = json.loads(a)["outputs"], json.loads(b)["outputs"]
            assert sorted(oa) == sorted(ob) and len(oa) >= 10
            for key in oa:
                ra, rb = dict(oa[key]), dict(ob[key])
                ra.pop("duration_s"), rb.pop("duration_s")  # how long the command ran
                for field in ("script", "stderr", "stdout"):
                    ta, tb = _object(builtin, ra.pop(field)), _object(viaansible, rb.pop(field))
                    if field == "stdout":
                        _same_output(key, ta, tb)
                    else:
                        assert ta == tb, (key, field)
                assert ra == rb, key
        else:
            assert a == b, rel
    # the disk-sample window: --sample-seconds 1 in both, on the host's own clock
    for capture in (builtin, viaansible):
        assert 0.9 <= _window(_object(capture, json.loads(
            (capture / "hosts/co01/outputs.json").read_text())["outputs"]["block.diskstats"]["stdout"])) < 3.0

    # the capture reads back: scan --from analyses the playbook's capture
    r = host.controller([sa, "scan", "--from", str(viaansible), "--json"], check=False)
    assert r.returncode in (0, 2), r.stderr
    assert '"co01"' in r.stdout


def test_the_batch_play_asks_ssh_to_leave_out_sntrup_after_the_sites_own_args_and_names_unreached_hosts(tmp_path):
    """collect_batch drops sntrup761x25519 from ssh's key exchanges (the costly one on the
    controller), placed after the ssh extra arguments the site gives, whichever way it gives them
    (ANSIBLE_SSH_EXTRA_ARGS, an inventory's ansible_ssh_extra_args, ansible.cfg). Hosts that refuse
    the connection are recorded unreachable in the capture with ssh's reason, saved by the action;
    a host of the inventory that the collection does not hold is never contacted."""
    sa = str(BIN / "storadvise")
    site = tmp_path / "site.yml"
    site.write_text(yaml.safe_dump({"name": "kex", "profiles": ["generic"], "hosts": [
        {"name": n, "address": "127.0.0.1", "port": 1, "roles": ["worker"]} for n in ("plain", "own")]}))
    vars_file = tmp_path / "cv.yml"
    import subprocess

    cp = subprocess.run([sa, "collect", "--site", str(site), "--ansible-vars", str(vars_file)], capture_output=True,
                        text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    inventory = tmp_path / "inventory.yml"
    common = {"ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_user": "nobody"}
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {
        "plain": common, "own": {**common, "ansible_ssh_extra_args": "-o ConnectionAttempts=1"},
        "elsewhere": common}}}))
    capture = tmp_path / "capture"
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp_path), "ANSIBLE_HOME": str(tmp_path / "ah"),
           "ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_SSH_EXTRA_ARGS": "-o ServerAliveInterval=7"}
    played = subprocess.run([str(BIN / "ansible-playbook"), "-vvv", "-i", str(inventory),
                             str(REPO / "playbooks" / "collect.yml"), "-e", f"storadvise_collect_vars={vars_file}",
                             "-e", f"storadvise_collect_dir={capture}"], capture_output=True, text=True, timeout=300,
                            env=env, cwd=tmp_path)
    lines = [ln for ln in played.stdout.splitlines() if "SSH: EXEC" in ln]
    plain = [ln for ln in lines if "ServerAliveInterval=7" in ln]
    own = [ln for ln in lines if "ConnectionAttempts=1" in ln]
    assert plain and own, played.stdout[-3000:] + played.stderr[-2000:]
    drop = "-o KexAlgorithms=-sntrup761x25519-sha512@openssh.com,sntrup761x25519-sha512"
    assert all(ln.index("ServerAliveInterval=7") < ln.index(drop) for ln in plain)
    # the inventory's own beats the environment, as in any play; the key exchange still comes after it
    assert all("ServerAliveInterval=7" not in ln and ln.index("ConnectionAttempts=1") < ln.index(drop) for ln in own)
    assert "elsewhere" not in played.stdout
    # ansible.cfg's [ssh_connection] ssh_extra_args is kept the same way
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text("[ssh_connection]\nssh_extra_args = -o ServerAliveCountMax=5\n")
    env_cfg = {k: v for k, v in env.items() if k != "ANSIBLE_SSH_EXTRA_ARGS"} | {"ANSIBLE_CONFIG": str(cfg)}
    again = subprocess.run([str(BIN / "ansible-playbook"), "-vvv", "-i", str(inventory), "--limit", "plain",
                            str(REPO / "playbooks" / "collect.yml"), "-e", f"storadvise_collect_vars={vars_file}",
                            "-e", f"storadvise_collect_dir={tmp_path / 'capture2'}"], capture_output=True, text=True,
                           timeout=300, env=env_cfg, cwd=tmp_path)
    assert any("ServerAliveCountMax=5" in ln and drop in ln for ln in again.stdout.splitlines() if "SSH: EXEC" in ln)
    # every host was unreachable, so Ansible ran no later play (as for any playbook): the results the
    # action saved, ssh's reason included, are what `collect --from-ansible` writes the capture from
    saved = {n: json.loads((capture / ".ansible" / f"{n}.json").read_text()) for n in ("plain", "own")}
    assert all(s["unreachable"] is True and "Connection refused" in s["msg"] for s in saved.values())
    cp = subprocess.run([sa, "collect", "--from-ansible", str(capture), "--ansible-vars", str(vars_file)],
                        capture_output=True, text=True, timeout=120)
    assert cp.returncode == 3, cp.stderr
    manifest = json.loads((capture / "manifest.json").read_text())
    assert set(manifest["hosts"]) == {"plain", "own"}
    for name in ("plain", "own"):
        assert manifest["hosts"][name]["reachable"] is False
        assert manifest["hosts"][name]["errors"][0].startswith(f"{name}: unreachable through Ansible: ")
        assert "Connection refused" in manifest["hosts"][name]["errors"][0]


def test_the_batch_action_saves_only_under_a_host_name_that_is_one_safe_file_name(tmp_path):
    """The role run from a plain playbook with a save directory: a host whose name is not one safe path
    component (the capture layout's rule, host_component) fails before anything is run or written."""
    import subprocess

    script = tmp_path / "cv.batch.sh"
    script.write_text("echo never run\n")
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {".hidden": {"ansible_connection": "local"}}}}))
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([{"hosts": "all", "gather_facts": False, "roles": [
        {"role": "collect_batch", "collect_batch_script": str(script), "collect_batch_save_dir": str(tmp_path / "saved")}]}]))
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp_path), "ANSIBLE_HOME": str(tmp_path / "ah"),
           "ANSIBLE_ROLES_PATH": str(REPO / "playbooks" / "roles")}
    cp = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inventory), str(play)], capture_output=True,
                        text=True, timeout=300, env=env, cwd=tmp_path)
    assert cp.returncode != 0
    assert "storadvise_batch: host name '.hidden': not usable as a file name" in cp.stdout, cp.stdout[-2000:]
    assert not (tmp_path / "saved").exists()
