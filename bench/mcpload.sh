#!/usr/bin/env bash
# Load-test `diffpal mcp --http` replicas on a shared session store with the
# MCP Go SDK client (bench/mcpload/main.go):
#
#   bash bench/mcpload.sh                       # 20,000 calls per configuration, 8 clients per replica
#   bash bench/mcpload.sh -calls 5000           # quicker
#   bash bench/mcpload.sh -configs postgres-2   # one configuration
#
# Arguments are passed to bench/mcpload/main.go (go run ./bench/mcpload -h
# lists them). It builds bench/.out/diffpal, then for (a) one replica on
# SQLite, (b) one replica on PostgreSQL and (c) two replicas on one
# PostgreSQL database runs 8 concurrent clients per replica for a bounded
# run (calls/s, p50/p99 per tool and overall), reads every session back
# (0 lost, 0 double-applied) and races 1,000 starts against
# --max-sessions 100 (exactly 100 succeed; capacity never exceeded).
#
# PostgreSQL: a private throw-away cluster (initdb into a temporary
# directory, unix socket only, removed at the end; Debian's postgresql
# package, which scripts/deps.sh installs), or the server named by
# DIFFPAL_TEST_POSTGRES / -postgres URL. Loopback only; every loop is
# bounded and the servers are stopped at the end. The Markdown result goes
# to stdout and bench/.out/mcpload.md; progress to stderr. Exit 1 when a
# check fails.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=bench/.out
command -v go >/dev/null 2>&1 || {
	echo "mcpload.sh: go is not on PATH (this repository needs Go; see go.mod)" >&2
	exit 2
}
mkdir -p "$OUT"
[[ -f $OUT/.gitignore ]] || printf '*\n' >"$OUT/.gitignore"
echo "building $OUT/diffpal and $OUT/mcpload" >&2
go build -o "$OUT/diffpal" ./cmd/diffpal
go build -o "$OUT/mcpload" ./bench/mcpload

report=$OUT/mcpload.md
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
rc=0
"$OUT/mcpload" -bin "$OUT/diffpal" -out "" "$@" >"$tmp" || rc=$?
[[ -s $tmp ]] || exit "$rc"
{
	echo "<!-- bash bench/mcpload.sh $* ; diffpal $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo '+dirty') -->"
	grep -v '^<!-- go run' "$tmp"
} | tee "$report"
echo "wrote $report" >&2
exit "$rc"
