#!/usr/bin/env bash
# Speed of `diffpal review` on a large change, side by side in one run with
# its floor (`git diff` of the same range) and with gitleaks scanning the
# same range.
#
#   bash bench/review.sh                  # 2000 files, 200000 added lines
#   FILES=4000 LINES=400000 bash bench/review.sh
#   BASELINE_REV=646a6ef bash bench/review.sh   # also time diffpal built at that commit
#
# It builds diffpal, installs gitleaks (pinned) into bench/.out with
# `go install`, generates the repository with bench/genrepo (deterministic),
# runs each tool RUNS times (default 3) and prints median wall seconds,
# peak RSS and the ratios. Targets: review <= 2x git diff, faster than
# gitleaks, peak RSS <= 500 MB.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/deps.sh
OUT=bench/.out
FILES=${FILES:-2000}
LINES=${LINES:-200000}
RUNS=${RUNS:-3}
GITLEAKS_VERSION=v8.30.1
mkdir -p "$OUT"
[[ -f $OUT/.gitignore ]] || printf '*\n' >"$OUT/.gitignore"

echo "building diffpal and installing gitleaks $GITLEAKS_VERSION" >&2
go build -o "$OUT/diffpal" ./cmd/diffpal
# (a go-installed gitleaks does not know its own version; ask the binary's build info)
if ! go version -m "$OUT/gitleaks" 2>/dev/null | grep -q "gitleaks/v8.*$GITLEAKS_VERSION"; then
	GOBIN="$PWD/$OUT" go install "github.com/zricethezav/gitleaks/v8@$GITLEAKS_VERSION"
fi
# An older diffpal, built from git archive of BASELINE_REV, is timed in the
# same run so a change's cost is a ratio on the same machine and load.
if [[ -n ${BASELINE_REV:-} ]]; then
	rm -rf "$OUT/baseline-src" && mkdir -p "$OUT/baseline-src"
	git archive "$BASELINE_REV" | tar -x -C "$OUT/baseline-src"
	(cd "$OUT/baseline-src" && go build -o ../diffpal-baseline ./cmd/diffpal)
fi
REPO=$OUT/repo-$FILES-$LINES
if [[ ! -d $REPO/.git ]]; then
	go run ./bench/genrepo -o "$REPO" -files "$FILES" -lines "$LINES"
fi
BASE=$(git -C "$REPO" rev-parse main)
HEAD=$(git -C "$REPO" rev-parse change)
ADDED=$(git -C "$REPO" diff --numstat "$BASE" "$HEAD" | awk '{a+=$1} END {print a}')
CHANGED=$(git -C "$REPO" diff --name-only "$BASE" "$HEAD" | wc -l)

# measure NAME CMD... -> "seconds rss_mb" (median seconds, max RSS)
measure() {
	local name=$1
	shift
	local times=() rss=0
	for ((i = 0; i < RUNS; i++)); do
		local tf
		tf=$(mktemp)
		/usr/bin/time -f '%e %M' -o "$tf" "$@" >/dev/null 2>&1 || {
			local code=$?
			# diffpal --gate exits 10 when something blocks (gitleaks runs with --exit-code 0).
			if [[ $code -ne 10 ]]; then
				echo "$name failed with exit $code" >&2
				exit 1
			fi
		}
		read -r s k < <(tail -n 1 "$tf")
		rm -f "$tf"
		times+=("$s")
		((k > rss)) && rss=$k
	done
	local med
	med=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
	echo "$med $((rss / 1024))"
}

echo "measuring ($RUNS runs each) on $CHANGED files, $ADDED added lines" >&2
read -r t_git m_git < <(measure "git diff" git -C "$REPO" diff --no-ext-diff --no-textconv "$BASE" "$HEAD")
read -r t_dp m_dp < <(measure "diffpal review" "$OUT/diffpal" review -C "$REPO" --base "$BASE" --head "$HEAD" --out-dir "$PWD/$OUT/review-out" --color never)
if [[ -n ${BASELINE_REV:-} ]]; then
	read -r t_base m_base < <(measure "diffpal baseline" "$OUT/diffpal-baseline" review -C "$REPO" --base "$BASE" --head "$HEAD" --out-dir "$PWD/$OUT/review-out-baseline" --color never)
fi
read -r t_gl m_gl < <(measure "gitleaks" "$OUT/gitleaks" git --no-banner --exit-code 0 --log-opts="$BASE..$HEAD" --report-format json --report-path "$OUT/gitleaks-report.json" "$REPO")
FINDINGS=$({ "$OUT/diffpal" gate --block-on low "$OUT/review-out/findings.json" 2>&1 || true; } | sed -n 's/.*findings=\([0-9]*\).*/\1/p')
LEAKS=$({ "$OUT/gitleaks" git --no-banner --log-opts="$BASE..$HEAD" --report-format json --report-path - "$REPO" 2>/dev/null || true; } | grep -c '"RuleID"' || true)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.2f", a / b }'; }
cat <<TABLE
| change | tool | seconds (median of $RUNS) | peak RSS MB | vs git diff | vs gitleaks |
|---|---|---:|---:|---:|---:|
| $CHANGED files, $ADDED added lines | git diff (floor) | $t_git | $m_git | 1.00 | |
| | diffpal review ($FINDINGS findings) | $t_dp | $m_dp | $(ratio "$t_dp" "$t_git") | $(ratio "$t_dp" "$t_gl") |
| | gitleaks $GITLEAKS_VERSION git ($LEAKS leaks) | $t_gl | $m_gl | $(ratio "$t_gl" "$t_git") | 1.00 |
TABLE
if [[ -n ${BASELINE_REV:-} ]]; then
	echo "| | diffpal at $BASELINE_REV (baseline) | $t_base | $m_base | $(ratio "$t_base" "$t_git") | $(ratio "$t_base" "$t_gl") |"
	echo
	echo "diffpal review now vs at $BASELINE_REV: $(ratio "$t_dp" "$t_base")x the time"
fi
