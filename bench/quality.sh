#!/usr/bin/env bash
# Precision and recall of `diffpal review` (built-in provider) on the
# labelled corpus: every case becomes a real git repository, the whole
# engine reviews it, and findings are scored against the planted issues.
#   bash bench/quality.sh [-v]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
go run ./bench/quality "$@"
