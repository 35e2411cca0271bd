"""The firewall probe's output captured in a namespace (tests/fixtures/firewall/capture.sh), in the script's
format: a section per tool, its stdout, then ``@@exit 0``."""

from __future__ import annotations

from tests.support.paths import FIXTURES

FW = FIXTURES / "firewall"
IPT_NFT = (FW / "iptables-save-nft-backend.txt").read_text()
IP6T_NFT = (FW / "ip6tables-save-nft-backend.txt").read_text()
IPT_LEGACY = (FW / "iptables-save-legacy-backend.txt").read_text()
NFT_JSON = (FW / "nft-j-list-ruleset.json").read_text()


def probe_output(**tools: str) -> str:
    """The script's output format: a section per tool, its stdout, then ``@@exit 0``."""
    return "".join(f"@@section {name.replace('_', '-')}\n{text.rstrip()}\n@@exit 0\n" for name, text in tools.items())


FULL = probe_output(iptables_save=IPT_NFT, ip6tables_save=IP6T_NFT, nft=NFT_JSON)
