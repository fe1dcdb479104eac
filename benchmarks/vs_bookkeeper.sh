#!/usr/bin/env bash
# The client x bookie matrix against Apache BookKeeper 4.17.4 (../shared/bk-oracle): see vs_bookkeeper.py.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ -x .venv/bin/python ] || { echo "run 'bash tests/run' (or 'source tests/bootstrap.sh') first: it makes .venv" >&2; exit 2; }
exec .venv/bin/python benchmarks/vs_bookkeeper.py "$@"
