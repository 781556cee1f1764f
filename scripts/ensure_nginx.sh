#!/usr/bin/env bash
# Make sure Debian's nginx is installed for benchmarks/proxy.py, the C reverse proxy the guard's
# cost is measured against (the one place that installs it). As root it installs the package
# when it is missing, without letting the package start its own service (policy-rc.d says no,
# for the install only): the benchmark runs nginx itself, on a free loopback port, with a
# configuration of its own. Otherwise it prints the one command to run and fails.
set -euo pipefail

BINARY=/usr/sbin/nginx
if [ -x "$BINARY" ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "ensure_nginx: nginx is missing; run: sudo apt-get update && sudo apt-get install -y nginx" >&2
    exit 1
fi
echo "ensure_nginx: installing Debian's nginx (apt-get)"
policy=/usr/sbin/policy-rc.d
ours=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod +x "$policy"
    ours=1
fi
trap '[ "$ours" -eq 1 ] && rm -f "$policy"' EXIT
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null
test -x "$BINARY"
