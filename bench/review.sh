#!/usr/bin/env bash
# Speed of `diffpal review` on a large change, side by side in one run with
# its floor (`git diff` of the same range) and with gitleaks scanning the
# same range.
#
#   bash bench/review.sh                  # 2000 files, 200000 added lines
#   FILES=4000 LINES=400000 bash bench/review.sh
#   BASELINE_REV=646a6ef bash bench/review.sh   # also time diffpal built at that commit
#   SMALL_RUNS=20 bash bench/review.sh    # the two small changes, 20 runs each (0: skip)
#   GROWTH="1000 10000 100000 400000" bash bench/review.sh   # review time at these sizes
#   PACKED=1 bash bench/review.sh         # also on a packed copy of the repository
#
# After the table it prints the review's phase breakdown (DIFFPAL_PHASES=1,
# median of RUNS runs; phases marked concurrent overlap the others), the
# wall time of a 10-line change and of a seven-language small change over
# SMALL_RUNS runs each (default 20, process start included) and, with
# GROWTH set, the review's time and peak RSS at
# each size of change (files = lines / 100).
#
# genrepo writes loose objects, one directory per file: git reads each
# object from a file of its own, which slows git diff (and the review's git
# processes) more than a real, packed clone would. (A repository of more
# than ~6,700 objects, such as GROWTH's 400,000-line one, is packed by
# git's automatic gc as genrepo commits.) PACKED=1 also times git diff and
# the review on a copy repacked with `git repack -ad`, where the floor is
# about twice as fast and the ratio correspondingly worse.
#
# It builds diffpal, installs gitleaks (pinned) into bench/.out with
# `go install`, generates the repository with bench/genrepo (deterministic),
# runs each tool RUNS times (default 3; the tools' runs alternate) and
# prints median wall seconds, peak RSS and the ratios. Targets: review <=
# 2x git diff, faster than gitleaks, peak RSS <= 500 MB.
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

# alternate NAME... -> t_NAME and m_NAME (median seconds, max RSS MB) for
# each tool NAME, whose command is the array CMD_NAME. The tools' runs
# alternate (run 1 of each, then run 2 of each, ...), so that a load that
# comes and goes on a shared machine weighs on all of them alike rather
# than on whichever ran while it lasted. Wall times come from bash's
# $EPOCHREALTIME around each run, to the millisecond (GNU time's %e has
# hundredths, too coarse for a 0.15 s floor: one hundredth moved the
# ratio by 0.15); GNU time gives the peak RSS.
alternate() {
	local -A times=() rss=()
	local i t tf t0 t1 k
	for ((i = 0; i < RUNS; i++)); do
		for t in "$@"; do
			local -n cmd="CMD_$t"
			tf=$(mktemp)
			t0=$EPOCHREALTIME
			/usr/bin/time -f '%M' -o "$tf" "${cmd[@]}" >/dev/null 2>&1 || {
				local code=$?
				# diffpal --gate exits 10 when something blocks (gitleaks runs with --exit-code 0).
				if [[ $code -ne 10 ]]; then
					echo "$t failed with exit $code" >&2
					exit 1
				fi
			}
			t1=$EPOCHREALTIME
			read -r k < <(tail -n 1 "$tf")
			rm -f "$tf"
			times[$t]+="$(((${t1/./} - ${t0/./}) / 1000))"$'\n'
			((k > ${rss[$t]:-0})) && rss[$t]=$k
			unset -n cmd
		done
	done
	for t in "$@"; do
		printf -v "t_$t" '%s' "$(printf '%s' "${times[$t]}" | sort -n | awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)] / 1000}')"
		printf -v "m_$t" '%s' "$((${rss[$t]} / 1024))"
	done
}

echo "measuring ($RUNS runs each, alternated) on $CHANGED files, $ADDED added lines" >&2
CMD_git=(git -C "$REPO" diff --no-ext-diff --no-textconv "$BASE" "$HEAD")
CMD_dp=("$OUT/diffpal" review -C "$REPO" --base "$BASE" --head "$HEAD" --out-dir "$PWD/$OUT/review-out" --color never)
CMD_base=("$OUT/diffpal-baseline" review -C "$REPO" --base "$BASE" --head "$HEAD" --out-dir "$PWD/$OUT/review-out-baseline" --color never)
CMD_gl=("$OUT/gitleaks" git --no-banner --exit-code 0 --log-opts="$BASE..$HEAD" --report-format json --report-path "$OUT/gitleaks-report.json" "$REPO")
if [[ -n ${BASELINE_REV:-} ]]; then
	alternate git dp base gl
else
	alternate git dp gl
fi
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
fi
if [[ -n ${PACKED:-} ]]; then
	PACK=$REPO-packed
	if [[ ! -d $PACK/.git ]]; then
		rm -rf "$PACK" && cp -r "$REPO" "$PACK" && git -C "$PACK" repack -adq
	fi
	CMD_pgit=(git -C "$PACK" diff --no-ext-diff --no-textconv "$BASE" "$HEAD")
	CMD_pdp=("$OUT/diffpal" review -C "$PACK" --base "$BASE" --head "$HEAD" --out-dir "$PWD/$OUT/review-out-packed" --color never)
	alternate pgit pdp
	echo "| same change, packed repository | git diff (floor) | $t_pgit | $m_pgit | 1.00 | |"
	echo "| | diffpal review | $t_pdp | $m_pdp | $(ratio "$t_pdp" "$t_pgit") | |"
fi
if [[ -n ${BASELINE_REV:-} ]]; then
	echo
	echo "diffpal review now vs at $BASELINE_REV: $(ratio "$t_dp" "$t_base")x the time"
fi

# Phase breakdown of the review (the same change), median per phase.
echo
echo "phases of diffpal review (median of $RUNS runs, seconds; DIFFPAL_PHASES=1):"
for ((i = 0; i < RUNS; i++)); do
	DIFFPAL_PHASES=1 "$OUT/diffpal" review -C "$REPO" --base "$BASE" --head "$HEAD" --out-dir "$PWD/$OUT/review-out" --color never 2>&1 >/dev/null |
		sed -n 's/^diffpal: phase //p' || true
done | awk '{ s = $NF; $NF = ""; sub(/ $/, ""); if (!($0 in n)) order[++k] = $0; v[$0, ++n[$0]] = s }
	END { for (i = 1; i <= k; i++) { p = order[i]; m = n[p]; for (a = 1; a <= m; a++) x[a] = v[p, a]
		for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++) if (x[b] < x[a]) { t = x[a]; x[a] = x[b]; x[b] = t }
		med = x[int((m + 1) / 2)]; if (med >= 0.0005) printf "  %-40s %.3f\n", p, med } }'

# Small changes: start-up dominates. The 10-line change (Go and Python)
# is the issue's; the seven-language one (a file each of Go, Python,
# TypeScript, Ruby, Java, shell and YAML, 169 added lines, with code
# the syntax-aware rules flag in the Go, Python, TypeScript and Ruby
# files: genrepo -syntax-issues)
# is there for what a small change costs in every grammar (tree-sitter
# took up to ~80 ms to compile one query before the query snapshot).
SMALL_RUNS=${SMALL_RUNS:-20}
if ((SMALL_RUNS > 0)); then
	# small REPO BIN... -> one "median, min" line per binary; the
	# binaries' runs alternate, so a load that comes and goes is shared.
	# Times come from bash's $EPOCHREALTIME (no date process around each
	# run).
	small() {
		local repo=$1
		shift
		local -a bins=("$@")
		local -A ts=()
		local sb sh
		sb=$(git -C "$repo" rev-parse main)
		sh=$(git -C "$repo" rev-parse change)
		for ((i = 0; i < SMALL_RUNS; i++)); do
			for b in "${!bins[@]}"; do
				local t0 t1
				t0=$EPOCHREALTIME
				"${bins[$b]}" review -C "$repo" --base "$sb" --head "$sh" --out-dir "$PWD/$OUT/review-out-small" --color never >/dev/null 2>&1 || true
				t1=$EPOCHREALTIME
				ts[$b]+="${t0/./} ${t1/./}"$'\n'
			done
		done
		for b in "${!bins[@]}"; do
			printf '%s' "${ts[$b]}" | awk 'NF == 2 {print ($2 - $1) / 1000}' | sort -n |
				awk '{a[NR]=$1} END {printf "median %.1f ms, min %.1f ms\n", a[int((NR+1)/2)], a[1]}'
		done
	}
	for spec in "2 10-line" "7 seven-language -syntax-issues"; do
		read -r nf name flags <<<"$spec"
		SMALL=$OUT/repo-$nf-10${flags:+-syntax}
		[[ -d $SMALL/.git ]] || go run ./bench/genrepo -o "$SMALL" -files "$nf" -lines 10 $flags >/dev/null
		echo
		echo "$name change ($(git -C "$SMALL" diff --numstat main change | awk '{a+=$1} END {print a}') added lines in $nf files), $SMALL_RUNS runs, wall incl. process start:"
		if [[ -n ${BASELINE_REV:-} ]]; then
			{ read -r new; read -r old; } < <(small "$SMALL" "$OUT/diffpal" "$OUT/diffpal-baseline")
			echo "  diffpal review: $new"
			echo "  diffpal at $BASELINE_REV: $old (runs alternated with the above)"
		else
			echo "  diffpal review: $(small "$SMALL" "$OUT/diffpal")"
		fi
	done
fi

# Growth with the size of the change.
if [[ -n ${GROWTH:-} ]]; then
	echo
	echo "| added lines (asked) | files | git diff s | diffpal review s | peak RSS MB | vs git diff | review s per 1k lines |"
	echo "|---:|---:|---:|---:|---:|---:|---:|"
	for n in $GROWTH; do
		f=$((n / 100 > 0 ? n / 100 : 1))
		G=$OUT/repo-$f-$n
		[[ -d $G/.git ]] || go run ./bench/genrepo -o "$G" -files "$f" -lines "$n" >/dev/null
		gb=$(git -C "$G" rev-parse main)
		gh=$(git -C "$G" rev-parse change)
		CMD_ggit=(git -C "$G" diff --no-ext-diff --no-textconv "$gb" "$gh")
		CMD_gdp=("$OUT/diffpal" review -C "$G" --base "$gb" --head "$gh" --out-dir "$PWD/$OUT/review-out-growth" --color never)
		alternate ggit gdp
		tg=$t_ggit td=$t_gdp md=$m_gdp
		echo "| $n | $f | $tg | $td | $md | $(ratio "$td" "$tg") | $(awk -v t="$td" -v n="$n" 'BEGIN { printf "%.4f", t / n * 1000 }') |"
	done
fi
