#!/usr/bin/env bash
# Quality of `diffpal review` (built-in provider), three measurements side
# by side:
#   1. the labelled corpus in this repository (internal/rules/testdata/corpus) —
#      IN-SAMPLE: written together with the rules, so it guards against
#      regressions and says nothing about real code;
#   2. real public repositories (bench/quality-real.sh: findings read against
#      the code, verdicts kept in bench/realcode/verdicts.tsv) — strict precision;
#   3. public vulnerable-code suites (bench/recall.sh: semgrep-rules, gosec,
#      bandit, gitleaks' examples) — recall and precision by annotation.
# 2 and 3 need local clones (REAL_DIR, RECALL_DIR; see docs/quality-real.md and
# docs/quality-recall.md) and are skipped with a message when absent.
#
#   bash bench/quality.sh [-v] [-n]    -v: every miss/extra of the corpus; -n: reuse the last runs of 2 and 3
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=bench/.out/quality
mkdir -p "$OUT"
verbose=() reuse=()
for a in "$@"; do
  case $a in
    -v) verbose=(-v) ;;
    -n) reuse=(-n) ;;
    *) echo "usage: $0 [-v] [-n]" >&2; exit 2 ;;
  esac
done
REAL_DIR=${REAL_DIR:-/tmp/realcode}
RECALL_DIR=${RECALL_DIR:-/tmp/recall}
export REAL_DIR RECALL_DIR

echo "## 1. labelled corpus (in-sample)"
go run ./bench/quality "${verbose[@]}" | tee "$OUT/corpus.txt" || true
echo
echo "## 2. real repositories"
if [ -d "$REAL_DIR" ]; then
  bash bench/quality-real.sh "${reuse[@]}" | tee "$OUT/real.txt" || true
else
  echo "skipped: no clones in REAL_DIR=$REAL_DIR" | tee "$OUT/real.txt"
fi
echo
echo "## 3. vulnerable-code suites"
if [ -d "$RECALL_DIR" ]; then
  bash bench/recall.sh "${reuse[@]}" | tee "$OUT/recall.txt" || true
else
  echo "skipped: no clones in RECALL_DIR=$RECALL_DIR" | tee "$OUT/recall.txt"
fi

echo
echo "## side by side"
echo
echo "| measurement | kind | findings | true (TP) | false (FP) | missed (FN) | precision | recall |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
awk -F'|' '/\*\*all\*\*/ { gsub(/[ *]/, "", $0); split($0, f, "|");
  printf "| labelled corpus | in-sample | %d | %d | %d | %d | %s | %s |\n", f[3]+f[4], f[3], f[4], f[5], f[6], f[7] }' "$OUT/corpus.txt"
awk '$1 == "OVERALL" && NF >= 8 { printf "| real repositories | out-of-sample, read by hand | %d | %d | %d (+%d debatable) | – | %.3f (strict) | – |\n", $2, $4, $5, $6, ($3 > 0 ? $4 / $3 : 0) }' "$OUT/real.txt"
awk '$1 == "ALL" && $2 == "OVERALL" { printf "| vulnerable-code suites | out-of-sample, annotated | %d | %d | %d | %d | %s | %s |\n", $4 + $7, $4, $7, $5, $10, $9 }' "$OUT/recall.txt"
grep -h "false findings that were blocking\|^TARGET\|pooled over all expectations" "$OUT/real.txt" "$OUT/recall.txt" 2>/dev/null || true
echo "(the suites row pools every expectation, so gitleaks' own 6,000 secret examples dominate it: see the mean over subjects above)"
