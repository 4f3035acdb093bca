#!/usr/bin/env bash
# Makes sure the etcd server binary is installed for the etcd membership
# tests and prints, on stdout, the shell line that makes them required:
#
#   eval "$(bash cluster/membership/ci-etcd.sh)"   # exports FOREMAN_TEST_ETCD=require
#
# Each test starts its own etcd (package etcdmembers/etcdtest: free loopback
# ports, data in a temporary directory, killed by PID), so there is no
# shared server to start or stop here. Debian's etcd-server is installed
# with apt-get when no etcd is on PATH (root needed for that). Everything
# else goes to stderr.
set -euo pipefail

log() { echo "ci-etcd: $*" >&2; }

if ! command -v etcd >/dev/null 2>&1; then
	[ "$(id -u)" = 0 ] || { log "etcd is not installed and installing it needs root: apt-get install etcd-server"; exit 1; }
	log "installing etcd-server with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq etcd-server >&2
	# Debian starts the packaged service on its default ports; the tests use
	# their own servers, so it is not needed.
	if command -v systemctl >/dev/null 2>&1; then systemctl disable --now etcd >&2 2>/dev/null || true; fi
fi
log "$(etcd --version 2>/dev/null | head -n 1)"
echo "export FOREMAN_TEST_ETCD=require"
