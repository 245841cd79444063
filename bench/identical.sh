#!/usr/bin/env bash
# Do two diffpal binaries review alike? For a speed change that must not
# change any result: both binaries review the same ranges and their
# artifacts are compared byte for byte — findings.json, diffpal.sarif,
# summary.md and the exit code, and qa-session.json and report.html with
# the session id, timestamps and durations normalised.
#
#   bash bench/identical.sh OLD NEW
#   BASELINE_REV=6b05ecc bash bench/identical.sh      # OLD built from git archive, NEW from the tree
#
# Ranges (each skipped when absent):
#   - the generated changes of bench/review.sh (bench/.out/repo-*; run it
#     first to make them);
#   - HEAD~1..HEAD and HEAD~5..HEAD of every clone in REAL_DIR (default
#     /tmp/realcode, the clones of bench/realcode/repos.tsv);
#   - the recall suites' scratch repositories (bench/.out/recall/*/repo,
#     made by bench/recall.sh), by default and with every opt-in rule.
# One line per range ("same …" or "DIFF …: what differs"); exit 1 when any
# differs. Outputs go to bench/.out/identical.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=bench/.out/identical
REAL_DIR=${REAL_DIR:-/tmp/realcode}
mkdir -p "$OUT"
[[ -f bench/.out/.gitignore ]] || printf '*\n' >bench/.out/.gitignore

if [[ -n ${BASELINE_REV:-} && $# -eq 0 ]]; then
	rm -rf "$OUT/src" && mkdir -p "$OUT/src"
	git archive "$BASELINE_REV" | tar -x -C "$OUT/src"
	(cd "$OUT/src" && go build -o ../old ./cmd/diffpal)
	go build -o "$OUT/new" ./cmd/diffpal
	set -- "$OUT/old" "$OUT/new"
fi
if [[ $# -ne 2 ]]; then
	echo "usage: bash bench/identical.sh OLD NEW  (or BASELINE_REV=REV with no arguments)" >&2
	exit 2
fi
OLD=$(realpath "$1")
NEW=$(realpath "$2")
printf 'version: v1\nrules:\n  enable: ["*"]\n' >"$OUT/all-rules.yaml"

norm() {
	sed -E 's/qar-[0-9a-f]{32}/qar-X/g; s/"(created_at|updated_at|expires_at|started_at|finished_at|generated_at)": *"[^"]*"/"\1":"T"/g; s/"seconds": *[0-9.e-]+/"seconds":0/g; s/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z/T/g' "$1"
}

fail=0
check() { # label repo base head [extra review args...]
	local label=$1 repo=$2 base=$3 head=$4
	shift 4
	local a=$OUT/a b=$OUT/b ea=0 eb=0 bad=""
	rm -rf "$a" "$b"
	"$OLD" review -C "$repo" --base "$base" --head "$head" "$@" --out-dir "$PWD/$a" --color never >/dev/null 2>&1 || ea=$?
	"$NEW" review -C "$repo" --base "$base" --head "$head" "$@" --out-dir "$PWD/$b" --color never >/dev/null 2>&1 || eb=$?
	[[ $ea == "$eb" ]] || bad="exit $ea/$eb"
	for f in findings.json diffpal.sarif summary.md; do
		cmp -s "$a/$f" "$b/$f" || bad="$bad $f"
	done
	for f in qa-session.json report.html; do
		if [[ -f $a/$f || -f $b/$f ]]; then
			cmp -s <(norm "$a/$f") <(norm "$b/$f") || bad="$bad $f"
		fi
	done
	local n
	n=$(grep -c '"stable_id"' "$a/findings.json" 2>/dev/null || true)
	if [[ -n $bad ]]; then
		echo "DIFF $label:$bad"
		fail=1
	else
		echo "same $label (${n:-0} findings, exit $ea)"
	fi
}

for r in bench/.out/repo-*; do
	[[ -d $r/.git ]] || continue
	check "$(basename "$r")" "$r" "$(git -C "$r" rev-parse main)" "$(git -C "$r" rev-parse change)"
done
for d in "$REAL_DIR"/*/; do
	[[ -d $d/.git ]] || continue
	h=$(git -C "$d" rev-parse HEAD)
	for k in 1 5; do
		b=$(git -C "$d" rev-parse "HEAD~$k" 2>/dev/null) || continue
		check "$(basename "$d")~$k" "$d" "$b" "$h"
	done
done
for r in bench/.out/recall/*/repo; do
	[[ -d $r/.git ]] || continue
	b=$(git -C "$r" rev-list --max-parents=0 HEAD | tail -n 1)
	h=$(git -C "$r" rev-parse HEAD)
	s=$(basename "$(dirname "$r")")
	check "recall/$s" "$r" "$b" "$h"
	check "recall/$s (all rules)" "$r" "$b" "$h" --config "$PWD/$OUT/all-rules.yaml"
done
exit $fail
