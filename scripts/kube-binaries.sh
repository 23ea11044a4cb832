#!/usr/bin/env bash
# Build (or reuse) etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kubectl
# from upstream Go modules into ~/.cache/ksched/kube/<version>/ (Go >= 1.26 needed).
#   scripts/kube-binaries.sh [--version v1.36.3] [--force]
# Prints the directory; KSCHED_KUBE_ASSETS=<dir> makes the tests use ready binaries instead.
set -euo pipefail
cd "$(dirname "$0")/.."
exec python -m ksched.testing.controlplane build "$@"
