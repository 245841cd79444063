#!/usr/bin/env bash
# Recall and precision of `diffpal review` (built-in rule packs) on public
# vulnerable-code suites, per claimed subject (docs/quality-recall.md).
#
# For every suite of bench/recall/suites.tsv, the test files of the suite's
# rules that map to a claimed subject (bench/recall/subjects.tsv) are copied
# from a local clone, at the recorded commit, into a scratch git repository
# bench/.out/recall/<suite> (an empty base commit, a head commit adding them),
# `diffpal review` reviews base..head, and the findings (mapped to subjects by
# bench/recall/ours.tsv) are scored against the suite's annotations.
# No code from the suites is kept in this project: the clones live outside it
# and the scratch repositories under the git-ignored bench/.out/.
#
#   RECALL_DIR=/tmp/recall bash bench/recall.sh [-a] [-v] [-n] [SUITE...]
#     -a  audit mode: review with every opt-in rule enabled (a config file
#         with rules.enable: ["*"], passed as --config); outputs go to
#         bench/.out/recall-audit unless OUT is set
#     -v  also print every miss (FN) and false positive
#     -n  do not rebuild or re-review; rescore $OUT/*/findings.tsv
#   SUITE... limits the run to these suites.
#
# Clones: $RECALL_DIR/<name> (default /tmp/recall/<name>), or the suite's own
# variable: SEMGREP_RULES, GOSEC, GITLEAKS, BANDIT (a clone, bare or not, that
# contains the recorded commit). A missing clone skips the suite with a message.
#
# Outputs (bench/.out/recall/): misses.tsv (expected positives not found),
# fps.tsv (findings on negative examples), extra.tsv (unscored findings of a
# scored subject on unannotated lines), <suite>/items.tsv (expectations),
# <suite>/findings.tsv and the scratch repository <suite>/repo.
# The exit status is 0 unless the script itself fails: this is a measurement,
# not a gate.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
RECALL_DIR=${RECALL_DIR:-/tmp/recall}
MANIFEST=$ROOT/bench/recall/suites.tsv
SUBJECTS=$ROOT/bench/recall/subjects.tsv
OURS=$ROOT/bench/recall/ours.tsv
verbose=0 reuse=0 audit=0
while getopts avn opt; do
  case $opt in
    a) audit=1 ;;
    v) verbose=1 ;;
    n) reuse=1 ;;
    *) echo "usage: $0 [-a] [-v] [-n] [SUITE...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ "$audit" = 1 ]; then
  OUT=${OUT:-$ROOT/bench/.out/recall-audit}
else
  OUT=${OUT:-$ROOT/bench/.out/recall}
fi
only=" $* "

command -v jq >/dev/null || { echo "recall: jq is required (scripts/deps.sh installs it)" >&2; exit 2; }
mkdir -p "$OUT"
BIN=${BIN:-$ROOT/bench/.out/diffpal}  # set BIN (and OUT) to run beside another run
TOOL=$ROOT/bench/.out/recall-tool
if [ "$reuse" = 0 ]; then
  go build -o "$BIN" ./cmd/diffpal
fi
# the suite reader/scorer is a bench program, never part of the diffpal binary
go build -o "$TOOL" ./bench/recall/cmd/recall
grep -h '^  - id:' internal/rules/packs/*.yaml | awk '{print $3}' | sort -u >"$OUT/our-rules.txt"
# audit mode: an explicit --config (trusted, outside the scratch repository,
# so it is not part of the reviewed change) turning every opt-in rule on;
# everything else stays at its default, as in a repository without a config
cfg=()
if [ "$audit" = 1 ]; then
  printf 'version: v1\nrules:\n  enable: ["*"]\n' >"$OUT/audit-config.yaml"
  cfg=(--config "$OUT/audit-config.yaml")
  echo "recall: audit mode (every opt-in rule enabled: --config $OUT/audit-config.yaml)" >&2
fi

# git in the scratch repositories only: never this project's index
sgit() { env -u GIT_DIR -u GIT_WORK_TREE -u GIT_INDEX_FILE git -c user.name=recall -c user.email=recall@localhost \
  -c commit.gpgsign=false -c core.autocrlf=false -c init.defaultBranch=main "$@"; }

ran=""
while IFS=$'\t' read -r name commit upstream envvar _; do
  case $name in ''|'#'*) continue ;; esac
  [ "$only" = "  " ] || case $only in *" $name "*) ;; *) continue ;; esac
  dir=$OUT/$name
  if [ "$reuse" = 1 ]; then
    [ -s "$dir/items.tsv" ] && [ -f "$dir/findings.tsv" ] && ran="$ran $name" || echo "skip $name: no earlier run in $dir" >&2
    continue
  fi
  clone=${!envvar:-$RECALL_DIR/$name}
  if [ ! -d "$clone" ] || ! git -C "$clone" rev-parse --git-dir >/dev/null 2>&1; then
    echo "skip $name: no clone at $clone (set $envvar=/path/to/clone or RECALL_DIR; git clone https://github.com/$upstream $clone)" >&2
    continue
  fi
  if ! git -C "$clone" cat-file -e "$commit^{commit}" 2>/dev/null; then
    echo "skip $name: commit $commit not in $clone ($envvar; git -C $clone fetch origin)" >&2
    continue
  fi
  t0=$SECONDS
  # the suite at the recorded commit, exported (the clone is not touched)
  src=$dir/src
  if [ "$(cat "$dir/src.commit" 2>/dev/null || true)" != "$commit" ]; then
    rm -rf "$src" "$dir/src.commit"
    mkdir -p "$src"
    git -C "$clone" archive --format=tar "$commit" | tar -x -C "$src"
    echo "$commit" >"$dir/src.commit"
  fi
  repo=$dir/repo
  rm -rf "$repo"
  mkdir -p "$repo"
  sgit -C "$repo" init -q
  sgit -C "$repo" commit -q --allow-empty -m "recall: empty base"
  base=$(sgit -C "$repo" rev-parse HEAD)
  "$TOOL" prepare -suite "$name" -src "$src" -out "$repo" -subjects "$SUBJECTS" -ours "$OURS" >"$dir/items.tsv"
  sgit -C "$repo" add -A
  sgit -C "$repo" commit -q -m "recall: $name @ ${commit:0:12}"
  head=$(sgit -C "$repo" rev-parse HEAD)
  if ! "$BIN" review -C "$repo" --base "$base" --head "$head" --no-merge-base \
      --config-source worktree "${cfg[@]}" --format json --color never --repo "recall/$name" \
      >"$dir/stdout" 2>"$dir/stderr"; then
    # exit 10 (blocked) is a normal outcome; anything else is reported
    if [ ! -s "$repo/.artifacts/diffpal/findings.json" ]; then
      echo "  $name: review failed: $(head -c 300 "$dir/stderr")" >&2
      continue
    fi
  fi
  jq -r --arg suite "$name" '.findings[] |
      [$suite, .rule_id, .path, (.start_line|tostring), ((.end_line // .start_line)|tostring),
       ((.supporting_span.start_line // 0)|tostring), ((.supporting_span.end_line // 0)|tostring)] | @tsv' \
    "$repo/.artifacts/diffpal/findings.json" >"$dir/findings.tsv"
  echo "  $name @ ${commit:0:12}: $(wc -l <"$dir/findings.tsv") findings in $((SECONDS - t0))s" >&2
  ran="$ran $name"
done <"$MANIFEST"

if [ -z "$ran" ]; then
  echo "recall: no suite could be measured (see the messages above)" >&2
  exit 0
fi
: >"$OUT/items.tsv"
: >"$OUT/findings.tsv"
for name in $ran; do
  cat "$OUT/$name/items.tsv" >>"$OUT/items.tsv"
  cat "$OUT/$name/findings.tsv" >>"$OUT/findings.tsv"
done
# <scratch>/<suite>/<path> must be the file: point the scorer at the repos
scratch=$OUT/.repos
rm -rf "$scratch"
mkdir -p "$scratch"
for name in $ran; do ln -s "../$name/repo" "$scratch/$name"; done
vflag=()
[ "$verbose" = 1 ] && vflag=(-v)
[ "$audit" = 1 ] && echo "mode: audit (rules.enable: [\"*\"]: every opt-in rule runs)"
"$TOOL" score -items "$OUT/items.tsv" -findings "$OUT/findings.tsv" -ours "$OURS" \
  -rules "$OUT/our-rules.txt" -scratch "$scratch" -out "$OUT" "${vflag[@]}"
exit 0
