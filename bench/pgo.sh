#!/usr/bin/env bash
# Remakes cmd/diffpal/default.pgo, the CPU profile `go build` optimises
# diffpal with (profile-guided optimisation: hot calls inlined, hot
# interface calls devirtualised; go build picks default.pgo up from the
# main package's directory, `-pgo=off` turns it off). The profile is of
# the reviews bench/review.sh times: RUNS reviews of its generated change
# (2,000 files, 244k added lines; DIFFPAL_CPUPROFILE, docs/benchmarks.md)
# and of its 10-line change, merged.
#
#   bash bench/pgo.sh            # RUNS=10
#
# Run it after a change that moves where a review spends its time, and
# commit the profile with it: a stale profile still builds (the compiler
# ignores what no longer matches) but optimises the wrong calls.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=bench/.out
RUNS=${RUNS:-10}
mkdir -p "$OUT/pgo"
[[ -f $OUT/.gitignore ]] || printf '*\n' >"$OUT/.gitignore"
rm -f "$OUT"/pgo/*.pprof
# Profiled without PGO, as the code stands.
go build -pgo=off -o "$OUT/diffpal-nopgo" ./cmd/diffpal
profile() { # NAME REPO
	local repo=$2 base head i
	base=$(git -C "$repo" rev-parse main)
	head=$(git -C "$repo" rev-parse change)
	for ((i = 0; i < RUNS; i++)); do
		DIFFPAL_CPUPROFILE="$OUT/pgo/$1-$i.pprof" "$OUT/diffpal-nopgo" review -C "$repo" --base "$base" --head "$head" \
			--out-dir "$PWD/$OUT/pgo/out" --color never >/dev/null 2>&1 || [[ $? -eq 10 ]]
	done
}
REPO=$OUT/repo-2000-200000
[[ -d $REPO/.git ]] || go run ./bench/genrepo -o "$REPO" -files 2000 -lines 200000
SMALL=$OUT/repo-2-10
[[ -d $SMALL/.git ]] || go run ./bench/genrepo -o "$SMALL" -files 2 -lines 10
profile large "$REPO"
profile small "$SMALL"
go tool pprof -proto "$OUT"/pgo/*.pprof >cmd/diffpal/default.pgo.tmp 2>/dev/null
mv cmd/diffpal/default.pgo.tmp cmd/diffpal/default.pgo
echo "wrote cmd/diffpal/default.pgo ($(wc -c <cmd/diffpal/default.pgo) bytes) from $((2 * RUNS)) profiled reviews" >&2
