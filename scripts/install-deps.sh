#!/usr/bin/env bash
# Install what the full test suite needs, and only what is missing. Idempotent, no prompts:
# works as root with no stdin (CI=true). Run from anywhere; installs the repo in editable mode.
#
#   - mariadb-server, mariadb-client (MariaDB >= 10.3 has semi-sync replication built in, so no
#     plugin package is needed; Debian 12 ships 10.11)
#   - tshark (debconf preseeded: no setuid dumpcap question)
#   - a Java runtime for pyspark (openjdk-17-jre-headless, only when `java -version` fails)
#   - a C compiler and the Python headers (gcc, python3-dev) for the native kernel
#     (binlogscope._native._kernel), only when missing
#   - pip install -e '.[test,spark]' (every extra: the spark tests run too)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export DEBIAN_FRONTEND=noninteractive

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; fi
fi

installed() {  # package -> 0 when dpkg says it is installed
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

missing=()
command -v mariadbd >/dev/null 2>&1 || installed mariadb-server || missing+=(mariadb-server)
command -v mariadb >/dev/null 2>&1 || installed mariadb-client || missing+=(mariadb-client)
command -v tshark >/dev/null 2>&1 || missing+=(tshark)
command -v gcc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
if ! python3 -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(
        os.path.join(sysconfig.get_paths()["include"], "Python.h")))' 2>/dev/null; then
    missing+=(python3-dev)
fi
if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
    missing+=(python3-venv)   # Debian splits venv/ensurepip out of python3
fi
if ! java -version >/dev/null 2>&1; then
    missing+=(openjdk-17-jre-headless)
fi

if (( ${#missing[@]} )); then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "install-deps.sh: apt-get not found; install these by hand: ${missing[*]}" >&2
        exit 1
    fi
    echo "install-deps.sh: installing ${missing[*]}"
    if [[ " ${missing[*]} " == *" tshark "* ]]; then
        echo "wireshark-common wireshark-common/install-setuid boolean false" \
            | $SUDO debconf-set-selections
    fi
    $SUDO apt-get update -qq </dev/null
    # the mariadb-server package would start the system server: keep it from doing so
    policy_added=0
    if [[ " ${missing[*]} " == *" mariadb-server "* && ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
        $SUDO chmod +x /usr/sbin/policy-rc.d
        policy_added=1
    fi
    $SUDO apt-get install -y -qq --no-install-recommends \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
        "${missing[@]}" </dev/null
    if (( policy_added )); then $SUDO rm -f /usr/sbin/policy-rc.d; fi
else
    echo "install-deps.sh: system packages already present"
fi

# semi-sync must be built in (MariaDB >= 10.3); say so loudly if this server lacks it
if ! mariadbd --no-defaults --verbose --help 2>/dev/null \
        | grep -q -- '--rpl-semi-sync-master-enabled'; then
    echo "install-deps.sh: WARNING: this mariadbd has no built-in semi-sync" \
         "(MariaDB < 10.3?); scripts/mariadb.sh needs it" >&2
fi

cd "$REPO"
# the active venv, else .venv (created): never the system Python
. "$REPO/scripts/venv.sh"
python -m pip install --quiet --disable-pip-version-check -e '.[test,spark]' </dev/null
echo "install-deps.sh: done"
