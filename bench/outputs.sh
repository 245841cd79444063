#!/usr/bin/env bash
# Benchmark the commands that turn a findings bundle into another file —
# `diffpal sarif`, `diffpal upgrade`, `diffpal render --format html` and
# `--format markdown` — on generated bundles: wall time, peak RSS, the size
# of the file written and peak RSS / output size (issue 16: ≤ 2×).
#
#   bash bench/outputs.sh                      # sizes 1000 100000 1000000
#   bash bench/outputs.sh 1000 100000          # chosen sizes (number of findings)
#   BASELINE_REV=HEAD bash bench/outputs.sh    # also measure diffpal built at that commit
#
# For every size it generates (once; reused while the size, seed and
# generator are unchanged) with bench/gen a v3 bundle (the "pass" bundle
# of bench/findings.sh) and, for upgrade, the same findings as an older
# bundle (gen -old: v2, no ids or stable ids, findings out of order). Each
# command runs RUNS times (default 3, 1 from 1M findings; BENCH_RUNS=N),
# reporting the median wall time and the maximum peak RSS (GNU time). With
# BASELINE_REV the diffpal built from `git archive BASELINE_REV` runs in the
# same loop, right after the new one, and the two outputs are compared
# byte for byte: a row whose files differ says so and the script exits 1.
#
# The first row is the floor: `diffpal version`, the executable alone
# (about 40 MB resident; see docs/benchmarks.md), which bounds RSS /
# output from below for small outputs.
#
# Results: a Markdown table on stdout, also written to OUT/outputs-bench.md
# (OUT is BENCH_OUT, default bench/.out). Missing GNU time is installed by
# scripts/deps.sh. Go must be on PATH; BASELINE_REV needs the git
# repository (BASELINE_GIT_DIR=/path/to/.git when running from a copy).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${BENCH_OUT:-bench/.out}
SEED=${BENCH_SEED:-1}

log() { printf '%s\n' "$*" >&2; }
die() {
	log "outputs.sh: $*"
	exit 2
}

sizes=("$@")
if ((${#sizes[@]} == 0)); then
	sizes=(1000 100000 1000000)
fi
for n in "${sizes[@]}"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || die "size must be a positive number of findings, got '$n'"
done
if [[ -n ${BENCH_RUNS:-} && ! ${BENCH_RUNS} =~ ^[1-9][0-9]*$ ]]; then
	die "BENCH_RUNS must be a positive integer, got '${BENCH_RUNS}'"
fi

bash scripts/deps.sh # GNU time, installed when missing
command -v go >/dev/null 2>&1 || die "go is not on PATH (this repository needs Go; see go.mod)"

mkdir -p "$OUT/outputs"
[[ -f $OUT/.gitignore ]] || printf '*\n' >"$OUT/.gitignore"
log "building $OUT/diffpal and $OUT/gen"
go build -o "$OUT/diffpal" ./cmd/diffpal
go build -o "$OUT/gen" ./bench/gen
tools=(new)
bin_new=$OUT/diffpal
if [[ -n ${BASELINE_REV:-} ]]; then
	rm -rf "$OUT/baseline-src" && mkdir -p "$OUT/baseline-src"
	git ${BASELINE_GIT_DIR:+--git-dir="$BASELINE_GIT_DIR"} archive "$BASELINE_REV" | tar -x -C "$OUT/baseline-src"
	(cd "$OUT/baseline-src" && go build -o "$PWD/../diffpal-baseline" ./cmd/diffpal)
	bin_base=$OUT/diffpal-baseline
	tools=(new base)
	base_label=$(git ${BASELINE_GIT_DIR:+--git-dir="$BASELINE_GIT_DIR"} rev-parse --short "$BASELINE_REV")
fi

gen_hash=$(sha256sum "$OUT/gen" | cut -c1-16)

# generate N VARIANT (pass | old): prints the bundle's path, (re)generating
# it unless one made with the same parameters is there.
generate() {
	local n=$1 variant=$2 flags=()
	[[ $variant == old ]] && flags=(-old)
	local file=$OUT/findings-$n-$variant.json
	local params="n=$n blocking_every=0 seed=$SEED gen=$gen_hash ${flags[*]}"
	params=${params% }
	if [[ -s $file && -f $file.params && $(<"$file.params") == "$params" ]]; then
		log "reusing $file ($params)"
	else
		log "generating $file ($params)"
		rm -f "$file.params"
		"$OUT/gen" -n "$n" -blocking-every 0 -seed "$SEED" "${flags[@]}" -o "$file" >&2
		printf '%s\n' "$params" >"$file.params"
	fi
	printf '%s\n' "$file"
}

# measure CMD...: runs CMD once under GNU time; sets RC, SECS and KB.
measure() {
	local tf t0 t1
	tf=$(mktemp)
	t0=$(date +%s%N)
	set +e
	/usr/bin/time -f '%M' -o "$tf" "$@" >/dev/null 2>"$OUT/outputs/stderr"
	RC=$?
	set -e
	t1=$(date +%s%N)
	SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')
	KB=$(tail -n 1 "$tf")
	rm -f "$tf"
	[[ $KB =~ ^[0-9]+$ ]] || KB=0
}

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
maxof() { printf '%s\n' "$@" | sort -g | tail -n 1; }
mb() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }
fmt_mb() { awk -v b="$1" 'BEGIN { m = b / 1048576; if (m < 10) printf "%.2f", m; else printf "%.0f", m }'; }
fmt_s() { awk -v s="$1" 'BEGIN { if (s < 0.1) printf "%.3f", s; else if (s < 10) printf "%.2f", s; else printf "%.1f", s }'; }
# ratio KB BYTES: peak RSS over output size.
ratio() { awk -v k="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", k * 1024 / b; else print "n/a" }'; }

# run_cmd TOOL CMD N IN DST: the command line of CMD for TOOL.
cmdline() {
	local bin=$1 cmd=$2 in=$3 dst=$4
	case $cmd in
	sarif) printf '%s\n' "$bin" sarif --input "$in" --out "$dst" ;;
	upgrade) printf '%s\n' "$bin" upgrade "$in" -o "$dst" ;;
	html) printf '%s\n' "$bin" render --format html --input "$in" --session "" --out "$dst" ;;
	markdown) printf '%s\n' "$bin" render --format markdown --input "$in" --session "" --out "$dst" ;;
	esac
}

results=()
status=0
header="| findings | command | input MB | output MB | runs |"
sep="|---:|---|---:|---:|---:|"
if [[ -n ${bin_base:-} ]]; then
	header+=" before s | after s | before RSS MB | after RSS MB | before RSS/out | after RSS/out | same bytes |"
	sep+="---:|---:|---:|---:|---:|---:|---|"
else
	header+=" s | RSS MB | RSS/out |"
	sep+="---:|---:|---:|"
fi

# The floor: the executable alone.
floor_row() {
	local t ks=() kb_new kb_base
	for t in "${tools[@]}"; do
		local bin=$bin_new
		[[ $t == base ]] && bin=$bin_base
		ks=()
		for _ in 1 2 3; do
			measure "$bin" version
			ks+=("$KB")
		done
		if [[ $t == new ]]; then kb_new=$(maxof "${ks[@]}"); else kb_base=$(maxof "${ks[@]}"); fi
	done
	if [[ -n ${bin_base:-} ]]; then
		results+=("| – | \`diffpal version\` (the executable alone) | – | – | 3 | | | $(mb "$kb_base") | $(mb "$kb_new") | | | |")
	else
		results+=("| – | \`diffpal version\` (the executable alone) | – | – | 3 | | $(mb "$kb_new") | |")
	fi
}
floor_row

for n in "${sizes[@]}"; do
	pass=$(generate "$n" pass)
	old=$(generate "$n" old)
	runs=${BENCH_RUNS:-$((n >= 1000000 ? 1 : 3))}
	for cmd in sarif upgrade html markdown; do
		in=$pass
		[[ $cmd == upgrade ]] && in=$old
		declare -A secs=() kbs=() size=()
		for t in "${tools[@]}"; do secs[$t]="" kbs[$t]=""; done
		for ((r = 1; r <= runs; r++)); do
			for t in "${tools[@]}"; do
				bin=$bin_new
				[[ $t == base ]] && bin=$bin_base
				dst=$OUT/outputs/$cmd-$t.out
				rm -f "$dst"
				mapfile -t argv < <(cmdline "$bin" "$cmd" "$in" "$dst")
				log "n=$n $cmd $t run $r: ${argv[*]}"
				measure "${argv[@]}"
				((RC == 0)) || {
					log "$t $cmd exited $RC: $(head -c 500 "$OUT/outputs/stderr")"
					status=1
				}
				secs[$t]+="$SECS "
				kbs[$t]+="$KB "
				size[$t]=$(stat -c %s "$dst" 2>/dev/null || echo 0)
			done
		done
		# shellcheck disable=SC2086
		s_new=$(median ${secs[new]}) k_new=$(maxof ${kbs[new]})
		row="| $n | \`$cmd\` | $(fmt_mb "$(stat -c %s "$in")") | $(fmt_mb "${size[new]}") | $runs |"
		if [[ -n ${bin_base:-} ]]; then
			# shellcheck disable=SC2086
			s_base=$(median ${secs[base]}) k_base=$(maxof ${kbs[base]})
			same=yes
			if ! cmp -s "$OUT/outputs/$cmd-new.out" "$OUT/outputs/$cmd-base.out"; then
				same="**NO**"
				status=1
				log "DIFFER: $cmd at n=$n"
			fi
			row+=" $(fmt_s "$s_base") | $(fmt_s "$s_new") | $(mb "$k_base") | $(mb "$k_new") | $(ratio "$k_base" "${size[base]}") | $(ratio "$k_new" "${size[new]}") | $same |"
		else
			row+=" $(fmt_s "$s_new") | $(mb "$k_new") | $(ratio "$k_new" "${size[new]}") |"
		fi
		results+=("$row")
		rm -f "$OUT"/outputs/*.out
		unset secs kbs size
	done
done

{
	if [[ -n ${bin_base:-} ]]; then
		printf 'before: diffpal at %s; after: this tree. Median wall seconds, maximum peak RSS (GNU time); RSS/out is peak RSS over the size of the file written.\n\n' "$base_label"
	else
		printf 'Median wall seconds, maximum peak RSS (GNU time); RSS/out is peak RSS over the size of the file written.\n\n'
	fi
	printf '%s\n%s\n' "$header" "$sep"
	printf '%s\n' "${results[@]}"
} | tee "$OUT/outputs-bench.md"
exit "$status"
