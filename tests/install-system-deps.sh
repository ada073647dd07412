#!/bin/sh
# System packages the test suite drives for real: tmux (the TUI in a terminal), the shells whose
# completion is tested and Prometheus (prometheus and promtool: the exporter's alert rules).
# Installs the missing ones from Debian when run as root (without their recommended packages, which
# the suite does not use); otherwise says which to install. Java 17 and Maven are expected on the
# machine (the harness checks them).
set -eu
missing=""
for tool in tmux bash zsh fish; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
# Debian's package "prometheus" brings both prometheus and promtool
{ command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; } || missing="$missing prometheus"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
    echo "tests need:$missing (install them with your package manager)" >&2
fi
