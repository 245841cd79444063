#!/usr/bin/env bash
# Precision of `diffpal review` (built-in rule packs) on real public code.
#
# Reviews local clones of the repositories in bench/realcode/repos.tsv, each
# at its recorded commit: the range <commit>~200..<commit> and the 20 newest
# non-merge commits (that change files) one by one. Every finding is joined
# with the verdicts kept in bench/realcode/verdicts.tsv and precision is
# printed per rule. No code from those repositories is kept in this project:
# the clones live outside it (REAL_DIR) and the scratch worktrees under
# bench/.out/ (git-ignored).
#
#   REAL_DIR=/tmp/realcode bash bench/quality-real.sh [-v] [-u] [-n] [REPO...]
#     -v  list every finding with its verdict
#     -u  list only the unjudged findings (to write verdicts for)
#     -n  do not rebuild or re-review; reuse bench/.out/real/findings/*.tsv
#   REPO... limits the run to these manifest names.
#
# Clones: see docs/quality-real.md (git clone https://github.com/OWNER/NAME
# "$REAL_DIR/NAME"; the manifest's commit must be reachable in the clone).
# A repository whose clone is missing is skipped with a message.
#
# Outputs: bench/.out/real/findings/<repo>.tsv (repo, stable_id, rule_id,
# severity, path, line, title, run) and bench/.out/real/wt/<repo> (detached
# worktree at the recorded commit, to read findings against the code).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
REAL_DIR=${REAL_DIR:-/tmp/realcode}
MANIFEST=${MANIFEST:-$ROOT/bench/realcode/repos.tsv}
VERDICTS=${VERDICTS:-$ROOT/bench/realcode/verdicts.tsv}
OUT=${OUT:-$ROOT/bench/.out/real}
SINGLES=${SINGLES:-20}
RANGE=${RANGE:-200}
verbose=0 unjudged_only=0 reuse=0
while getopts vun opt; do
  case $opt in
    v) verbose=1 ;;
    u) unjudged_only=1 ;;
    n) reuse=1 ;;
    *) echo "usage: $0 [-v] [-u] [-n] [REPO...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
only=" $* "

command -v jq >/dev/null || { echo "quality-real: jq is required (scripts/deps.sh installs it)" >&2; exit 2; }
mkdir -p "$OUT/findings" "$OUT/wt" "$OUT/runs"

BIN=${BIN:-$ROOT/bench/.out/diffpal}  # set BIN (and OUT) to run beside another run
if [ "$reuse" = 0 ]; then
  go build -o "$BIN" ./cmd/diffpal
fi

# review REPO WT BASE HEAD RUNLABEL -> appends TSV rows to $OUT/findings/REPO.tsv.new
review() {
  local repo=$1 wt=$2 base=$3 head=$4 label=$5 dir
  dir=$OUT/runs/$repo/$label
  rm -rf "$dir"
  mkdir -p "$dir"
  if ! "$BIN" review -C "$wt" --base "$base" --head "$head" --no-merge-base \
      --out-dir "$dir" --config-source worktree --format json --color never \
      >"$dir/stdout" 2>"$dir/stderr"; then
    # exit 10 (blocked) is a normal outcome; anything else is reported
    if [ ! -s "$dir/findings.json" ]; then
      echo "  $repo $label: review failed: $(head -c 300 "$dir/stderr")" >&2
      return 0
    fi
  fi
  jq -r --arg repo "$repo" --arg run "$label" '.findings[] |
      [$repo, .stable_id, .rule_id, .severity, .path, (.start_line|tostring),
       (.title|gsub("[\t\n]";" ")), $run] | @tsv' "$dir/findings.json" \
    >>"$OUT/findings/$repo.tsv.new"
}

if [ "$reuse" = 0 ]; then
  while IFS=$'\t' read -r name commit upstream _; do
    case $name in ''|'#'*) continue ;; esac
    [ "$only" = "  " ] || case $only in *" $name "*) ;; *) continue ;; esac
    clone=$REAL_DIR/$name
    if [ ! -d "$clone/.git" ] && [ ! -f "$clone/HEAD" ]; then
      echo "skip $name: no clone at $clone (git clone https://github.com/$upstream $clone)" >&2
      rm -f "$OUT/findings/$name.tsv"
      continue
    fi
    if ! git -C "$clone" cat-file -e "$commit^{commit}" 2>/dev/null; then
      echo "skip $name: commit $commit not in $clone (git -C $clone fetch origin)" >&2
      rm -f "$OUT/findings/$name.tsv"
      continue
    fi
    wt=$OUT/wt/$name
    # a detached scratch worktree: the clone's branches and work tree are untouched
    if [ "$(git -C "$wt" rev-parse HEAD 2>/dev/null || true)" != "$commit" ]; then
      git -C "$clone" worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"
      git -C "$clone" worktree prune
      if ! git -C "$clone" worktree add --quiet --detach "$wt" "$commit" 2>"$OUT/wt/$name.err"; then
        # a clone from a partial mirror may lack some large blobs: check out all
        # but those paths (sparse), so that the review still runs
        git -C "$clone" worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"
        git -C "$clone" worktree prune
        missing=$(git -C "$clone" ls-tree -r "$commit" | awk '$2=="blob"{print $3" "$4}' |
          git -C "$clone" cat-file --batch-check='%(objectname) %(rest)' 2>/dev/null | awk '$2=="missing"{print $1}')
        git -C "$clone" ls-tree -r "$commit" | awk -v m="$missing" 'BEGIN{n=split(m,a," "); for(i=1;i<=n;i++) miss[a[i]]=1} ($3 in miss){print $4}' >"$OUT/wt/$name.missing"
        if [ ! -s "$OUT/wt/$name.missing" ] || ! git -C "$clone" worktree add --quiet --detach --no-checkout "$wt" "$commit"; then
          echo "skip $name: cannot check out $commit: $(head -c 200 "$OUT/wt/$name.err")" >&2
          rm -f "$OUT/findings/$name.tsv"; continue
        fi
        git -C "$wt" sparse-checkout set --no-cone '/*' $(sed 's|^|!/|' "$OUT/wt/$name.missing")
        git -C "$wt" checkout --quiet --detach "$commit"
        echo "  $name: $(wc -l <"$OUT/wt/$name.missing") blob(s) missing from the clone, not checked out" >&2
      fi
    fi
    echo "review $name @ ${commit:0:12}" >&2
    rm -f "$OUT/findings/$name.tsv.new"
    : >"$OUT/findings/$name.tsv.new"
    base=$(git -C "$wt" rev-parse --verify -q "$commit~$RANGE" || git -C "$wt" rev-list --max-parents=0 "$commit" | tail -1)
    review "$name" "$wt" "$base" "$commit" "range"
    n=0
    for c in $(git -C "$wt" rev-list --no-merges --max-count=400 "$commit"); do
      [ "$n" -lt "$SINGLES" ] || break
      git -C "$wt" rev-parse --verify -q "$c~1" >/dev/null || continue
      [ -n "$(git -C "$wt" diff-tree --no-commit-id --name-only -r "$c")" ] || continue
      review "$name" "$wt" "$c~1" "$c" "${c:0:12}"
      n=$((n + 1))
    done
    # one row per distinct finding (stable_id) per repository; runs joined
    awk -F'\t' 'BEGIN{OFS="\t"} {k=$2; if (!(k in row)) {order[++n]=k; row[k]=$0; runs[k]=$8} else if (index(","runs[k]",", ","$8",")==0) runs[k]=runs[k]","$8}
      END{for (i=1;i<=n;i++){k=order[i]; split(row[k],f,"\t"); f[8]=runs[k]; print f[1],f[2],f[3],f[4],f[5],f[6],f[7],f[8]}}' \
      "$OUT/findings/$name.tsv.new" >"$OUT/findings/$name.tsv"
    rm -f "$OUT/findings/$name.tsv.new"
  done <"$MANIFEST"
fi

# ---- join with verdicts and report ----
all=$OUT/all.tsv
: >"$all"
while IFS=$'\t' read -r name commit _; do
  case $name in ''|'#'*) continue ;; esac
  [ "$only" = "  " ] || case $only in *" $name "*) ;; *) continue ;; esac
  [ -f "$OUT/findings/$name.tsv" ] && cat "$OUT/findings/$name.tsv" >>"$all"
done <"$MANIFEST"

touch "$VERDICTS"
awk -F'\t' -v verbose="$verbose" -v unj="$unjudged_only" -v vfile="$VERDICTS" '
BEGIN {
  OFS="\t"
  while ((getline line < vfile) > 0) {
    if (line ~ /^#/ || line ~ /^repo\t/ || line == "") continue
    split(line, v, "\t")
    if (v[4] != "true" && v[4] != "false" && v[4] != "debatable") {
      printf "verdicts.tsv: bad verdict %s for %s %s\n", v[4], v[1], v[2] > "/dev/stderr"; continue
    }
    verdict[v[1] SUBSEP v[2]] = v[4]; reason[v[1] SUBSEP v[2]] = v[5]
  }
}
{
  repo=$1; sid=$2; rule=$3; sev=$4
  key = repo SUBSEP sid
  if (!(rule in F)) rules[++nr] = rule
  F[rule]++; FT++
  vd = (key in verdict) ? verdict[key] : ""
  if (vd == "") { U[rule]++; UT++ }
  else { J[rule]++; JT++; C[rule, vd]++; CT[vd]++
         if (vd == "false" && (sev == "high" || sev == "critical")) { FB[rule]++; FBT++ } }
  if (verbose || (unj && vd == ""))
    printf "%-10s %-16s %-9s %-34s %-8s %s:%s  %s  [%s]%s\n", (vd == "" ? "UNJUDGED" : vd), repo, substr(sid,1,8), rule, sev, $5, $6, $7, $8,
      (vd != "" && reason[key] != "" ? "  -- " reason[key] : "") > "/dev/stderr"
}
function pct(a, b) { return b > 0 ? sprintf("%5.1f%%", 100 * a / b) : "    -" }
END {
  # sort rules by findings desc, then name
  for (i = 1; i <= nr; i++) for (j = i + 1; j <= nr; j++)
    if (F[rules[j]] > F[rules[i]] || (F[rules[j]] == F[rules[i]] && rules[j] < rules[i])) { t = rules[i]; rules[i] = rules[j]; rules[j] = t }
  fmt = "%-40s %8s %6s %5s %5s %5s %7s %7s %8s\n"
  printf fmt, "rule", "findings", "judged", "true", "false", "debat", "strict", "lenient", "falseblk"
  for (i = 1; i <= nr; i++) {
    r = rules[i]
    printf fmt, r, F[r], J[r]+0, C[r,"true"]+0, C[r,"false"]+0, C[r,"debatable"]+0,
      pct(C[r,"true"], J[r]), pct(C[r,"true"] + C[r,"debatable"], J[r]), FB[r]+0
  }
  printf fmt, "OVERALL", FT+0, JT+0, CT["true"]+0, CT["false"]+0, CT["debatable"]+0,
    pct(CT["true"], JT), pct(CT["true"] + CT["debatable"], JT), FBT+0
  printf "unjudged findings: %d of %d; false findings that were blocking (high/critical): %d\n", UT+0, FT+0, FBT+0
  printf "strict = true/judged; lenient = (true+debatable)/judged\n"
}' "$all"

# per-repository counts
awk -F'\t' -v vfile="$VERDICTS" 'BEGIN{while((getline l<vfile)>0){split(l,v,"\t"); d[v[1] SUBSEP v[2]]=1}}
  {if(!($1 in n)) o[++k]=$1; n[$1]++; if(($1 SUBSEP $2) in d) j[$1]++}
  END{printf "per repository:"; for(i=1;i<=k;i++) printf " %s %d/%d", o[i], j[o[i]]+0, n[o[i]]; printf " (judged/findings)\n"}' "$all"
