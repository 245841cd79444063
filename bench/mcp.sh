#!/usr/bin/env bash
# Benchmark `diffpal mcp` the way an agent host drives it, with the MCP Go
# SDK client (bench/mcp/main.go):
#
#   bash bench/mcp.sh                         # defaults: 200 flows, 1000 ratio samples, 10000 sessions
#   bash bench/mcp.sh -flows 50 -sessions 2000 -settle 5s   # quicker
#   bash bench/mcp.sh -skip memory            # transports only (about a minute)
#
# Arguments are passed to bench/mcp/main.go (go run ./bench/mcp -h lists
# them). It builds bench/.out/diffpal, then:
#   (a) spawns `diffpal mcp` (stdio) and (b) `diffpal mcp --http 127.0.0.1:0
#       --token-env ...` (bearer token), and on each runs complete
#       review-bound flows (calls/s, p50/p99 per tool) and compares a
#       start_qa_orchestration round trip with an MCP ping on the same
#       connection;
#   (c) spawns `diffpal mcp --max-sessions 10000`, starts 10,000 review-bound
#       sessions and reports VmRSS growth per session after ~2 minutes idle
#       (the Go runtime's forced GC), plus the live heap from gctrace, start
#       p50 for the first and last 1000 sessions, and list_qa_orchestrations
#       with every session retained (the default page of 100, and a walk of
#       every page of 1000).
# Loopback only; every loop is bounded and the servers are stopped at the
# end. The Markdown result goes to stdout and bench/.out/mcp-bench.md;
# progress goes to stderr. A full run takes about 6 minutes on 2 cores.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=bench/.out
command -v go >/dev/null 2>&1 || {
	echo "mcp.sh: go is not on PATH (this repository needs Go; see go.mod)" >&2
	exit 2
}
mkdir -p "$OUT"
[[ -f $OUT/.gitignore ]] || printf '*\n' >"$OUT/.gitignore"
echo "building $OUT/diffpal and $OUT/mcpbench" >&2
# The benchmark build adds one tool, bench_echo (internal/mcpserver/echo_bench.go),
# the floor the qa tools are compared with; shipped builds do not have it.
go build -tags diffpal_bench_echo -o "$OUT/diffpal" ./cmd/diffpal
go build -o "$OUT/mcpbench" ./bench/mcp

report=$OUT/mcp-bench.md
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$OUT/mcpbench" -bin "$OUT/diffpal" "$@" >"$tmp"
{
	echo "<!-- bash bench/mcp.sh $* ; diffpal $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo '+dirty') -->"
	grep -v '^<!-- go run' "$tmp"
} | tee "$report"
echo "wrote $report" >&2
