#!/usr/bin/env bash
# chromium.sh: install Debian's chromium for the browser test of kafka-ui
# (consumer/ui), which drives it headless through the DevTools protocol.
#
# Usage: scripts/chromium.sh install|path
#
#   install  apt-get install the chromium package when missing (non-interactive,
#            without recommends); waits for another apt/dpkg to finish first.
#   path     print the path of the chromium binary (exit 1 if none).
set -euo pipefail

die() { echo "chromium.sh: $*" >&2; exit 1; }

usage() {
	sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
}

binary() {
	local b
	for b in chromium chromium-browser; do
		if command -v "$b" >/dev/null 2>&1; then
			command -v "$b"
			return 0
		fi
	done
	return 1
}

apt_busy() {
	command -v fuser >/dev/null 2>&1 || return 1
	fuser /var/lib/dpkg/lock-frontend /var/lib/dpkg/lock >/dev/null 2>&1
}

do_install() {
	if binary >/dev/null; then
		echo "chromium: already installed ($(binary))"
		return 0
	fi
	local deadline=$((SECONDS + 900))
	while apt_busy; do
		[ $SECONDS -lt $deadline ] || die "apt/dpkg stayed busy for 15 minutes"
		echo "chromium: waiting for another apt/dpkg to finish" >&2
		sleep 5
		if binary >/dev/null; then
			echo "chromium: installed by the other apt run"
			return 0
		fi
	done
	[ "$(id -u)" -eq 0 ] || die "chromium is not installed and installing it needs root: sudo apt-get install chromium"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core; then
		apt-get update -q && apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core ||
			die "apt-get install chromium failed"
	fi
	binary >/dev/null || die "chromium still not installed after apt-get"
	echo "chromium: installed $(binary)"
}

[ $# -eq 1 ] || usage
case "$1" in
install) do_install ;;
path) binary || die "chromium is not installed (scripts/chromium.sh install)" ;;
*) usage ;;
esac
