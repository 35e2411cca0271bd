#!/usr/bin/env bash
# Installs what storadvise needs on a Debian machine (as root): the system tools the probes,
# the lab and the tests use, and the project with its test extras in ./.venv.
set -euo pipefail
cd "$(dirname "$0")"

APT_PACKAGES=(python3 python3-venv python3-pip openssh-server openssh-client iperf3 nftables iptables
              ethtool iproute2 procps kmod sudo util-linux coreutils iputils-ping
              xrootd-server xrootd-server-plugins xrootd-client
              smartmontools  # smartctl --json for the disk.smart probe
              chromium prometheus)  # the HTML report's browser test; promtool for the metrics file
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install.sh: missing system packages (${missing[*]}); run as root or install them" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test]'
echo "storadvise installed: $(.venv/bin/storadvise --version)"
