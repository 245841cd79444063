#!/usr/bin/env bash
# Benchmark the seed's jq gate against `diffpal gate` and `diffpal validate`
# on generated findings bundles.
#
#   bash bench/findings.sh                 # sizes 1000 100000 1000000
#   bash bench/findings.sh 1000 100000     # chosen sizes (number of findings)
#   BASELINE_REV=46e841f bash bench/findings.sh   # also time diffpal built at that commit
#
# For every size it generates (once; reused while the size, seed and
# generator are unchanged) two bundles in bench/.out/: a "pass" bundle where
# nothing blocks and a "block" bundle where every 997th finding blocks. The
# pass bundle is timed RUNS times per tool (default 5, 3 from 1M findings;
# override with BENCH_RUNS=N), reporting the median wall time and the
# maximum peak RSS from GNU time:
#
#   jq -e '[.findings[] | select(.blocking == true)] | length == 0' FILE
#   diffpal gate FILE
#   diffpal validate FILE
#
# jq -e exits 1 and diffpal gate exits 10 when something blocks; both count
# as success. Both bundles are also checked for parity: jq and the gate must
# agree on blocked/not blocked, or a PARITY FAIL line is printed and the
# script exits 1. The result is a Markdown table on stdout, also written to
# bench/.out/findings-bench.md. Progress goes to stderr.
#
# Missing jq or GNU time are installed by scripts/deps.sh. Go must be on PATH.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=bench/.out
SEED=${BENCH_SEED:-1}
BLOCK_EVERY=997
JQ_GATE='[.findings[] | select(.blocking == true)] | length == 0'

log() { printf '%s\n' "$*" >&2; }
die() {
	log "findings.sh: $*"
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

# ---- tools ----------------------------------------------------------------

bash scripts/deps.sh # jq and GNU time, installed when missing
command -v go >/dev/null 2>&1 || die "go is not on PATH (this repository needs Go; see go.mod)"

mkdir -p "$OUT"
# Bundles reach gigabytes: keep everything in bench/.out out of git.
[[ -f $OUT/.gitignore ]] || printf '*\n' >"$OUT/.gitignore"
log "building $OUT/diffpal and $OUT/gen"
go build -o "$OUT/diffpal" ./cmd/diffpal
go build -o "$OUT/gen" ./bench/gen
DIFFPAL=$OUT/diffpal
# An older diffpal, built from git archive of BASELINE_REV, is timed in the
# same runs (interleaved) so a change's effect is read on the same load.
if [[ -n ${BASELINE_REV:-} ]]; then
	rm -rf "$OUT/baseline-src" && mkdir -p "$OUT/baseline-src"
	git archive "$BASELINE_REV" | tar -x -C "$OUT/baseline-src"
	(cd "$OUT/baseline-src" && go build -o ../diffpal-baseline ./cmd/diffpal)
fi

# ---- bundles --------------------------------------------------------------

gen_hash=$(sha256sum "$OUT/gen" | cut -c1-16) # any change to what the generator builds from

# generate N VARIANT: prints the bundle's path, (re)generating it unless a
# bundle made with the same parameters is already there.
generate() {
	local n=$1 variant=$2 every=0
	if [[ $variant == block ]]; then
		every=$((n < BLOCK_EVERY ? n : BLOCK_EVERY))
	fi
	local file=$OUT/findings-$n-$variant.json
	local params="n=$n blocking_every=$every seed=$SEED gen=$gen_hash"
	if [[ -s $file && -f $file.params && $(<"$file.params") == "$params" ]]; then
		log "reusing $file ($params)"
	else
		log "generating $file ($params)"
		rm -f "$file.params"
		"$OUT/gen" -n "$n" -blocking-every "$every" -seed "$SEED" -o "$file" >&2
		printf '%s\n' "$params" >"$file.params"
	fi
	printf '%s\n' "$file"
}

# ---- measuring ------------------------------------------------------------

# measure CMD...: runs CMD once under GNU time; sets RC, SECS (wall seconds,
# nanosecond clock) and KB (peak RSS).
measure() {
	local tf
	tf=$(mktemp)
	local t0 t1
	t0=$(date +%s%N)
	set +e
	/usr/bin/time -f '%M' -o "$tf" "$@" >/dev/null 2>&1
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
fmt_s() { awk -v s="$1" 'BEGIN { if (s < 0.1) printf "%.3f", s; else if (s < 10) printf "%.2f", s; else printf "%.1f", s }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

# verdict TOOL RC: blocked / passed for a tool's exit code, or "error".
verdict() {
	case "$1:$2" in
	jq:0 | gate:0) echo passed ;;
	jq:1 | gate:10) echo blocked ;;
	*) echo error ;;
	esac
}

failed=0
parity() { # FILE JQ_RC GATE_RC EXPECTED
	local file=$1 jv gv
	jv=$(verdict jq "$2")
	gv=$(verdict gate "$3")
	if [[ $jv == error || $gv == error ]]; then
		echo "RUN FAIL: $file: jq -e exited $2, diffpal gate exited $3 (want 0/1 and 0/10)"
		failed=1
	elif [[ $jv != "$gv" ]]; then
		echo "PARITY FAIL: $file: jq -e says $jv (exit $2), diffpal gate says $gv (exit $3)"
		failed=1
	elif [[ $jv != "$4" ]]; then
		echo "PARITY FAIL: $file: both say $jv, but the bundle was generated to be $4"
		failed=1
	else
		log "parity ok: $file: both $jv (jq exit $2, gate exit $3)"
	fi
}

rows=() brows=()
for n in "${sizes[@]}"; do
	pass=$(generate "$n" pass)
	block=$(generate "$n" block)
	runs=${BENCH_RUNS:-$((n >= 1000000 ? 3 : 5))}
	bytes=$(stat -c %s "$pass")
	cat "$pass" >/dev/null # page cache: every tool reads from memory

	jq_s=() jq_kb=() gate_s=() gate_kb=() val_s=() val_kb=() bg_s=() bg_kb=() bv_s=() bv_kb=()
	jq_rc=0 gate_rc=0
	for ((r = 1; r <= runs; r++)); do
		measure jq -e "$JQ_GATE" "$pass"
		jq_rc=$RC jq_s+=("$SECS") jq_kb+=("$KB")
		measure "$DIFFPAL" gate "$pass"
		gate_rc=$RC gate_s+=("$SECS") gate_kb+=("$KB")
		measure "$DIFFPAL" validate "$pass"
		val_s+=("$SECS") val_kb+=("$KB")
		if [[ $RC -ne 0 ]]; then
			echo "RUN FAIL: $pass: diffpal validate exited $RC"
			"$DIFFPAL" validate "$pass" 2>&1 | head -n 5
			failed=1
		fi
		log "[$n] run $r/$runs: jq ${jq_s[-1]}s (exit $jq_rc) gate ${gate_s[-1]}s (exit $gate_rc) validate ${val_s[-1]}s (exit $RC)"
		if [[ -n ${BASELINE_REV:-} ]]; then
			measure "$OUT/diffpal-baseline" gate "$pass"
			bg_s+=("$SECS") bg_kb+=("$KB")
			measure "$OUT/diffpal-baseline" validate "$pass"
			bv_s+=("$SECS") bv_kb+=("$KB")
			log "[$n] run $r/$runs: baseline gate ${bg_s[-1]}s ${bg_kb[-1]} KB, validate ${bv_s[-1]}s ${bv_kb[-1]} KB"
		fi
	done
	parity "$pass" "$jq_rc" "$gate_rc" passed

	# The blocking bundle: one run of each, for parity only.
	cat "$block" >/dev/null
	measure jq -e "$JQ_GATE" "$block"
	b_jq=$RC
	measure "$DIFFPAL" gate "$block"
	parity "$block" "$b_jq" "$RC" blocked

	jq_m=$(median "${jq_s[@]}") gate_m=$(median "${gate_s[@]}") val_m=$(median "${val_s[@]}")
	rows+=("$(printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' \
		"$n" "$runs" "$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')" \
		"$(fmt_s "$jq_m")" "$(fmt_s "$gate_m")" "$(ratio "$gate_m" "$jq_m")" \
		"$(fmt_s "$val_m")" "$(ratio "$val_m" "$jq_m")" \
		"$(mb "$(maxof "${jq_kb[@]}")")" "$(mb "$(maxof "${gate_kb[@]}")")" "$(mb "$(maxof "${val_kb[@]}")")")")
	if [[ -n ${BASELINE_REV:-} ]]; then
		bg_m=$(median "${bg_s[@]}") bv_m=$(median "${bv_s[@]}")
		brows+=("$(printf '| %s | %s | %s | %s | %s | %s | %s | %s |' "$n" "$runs" \
			"$(fmt_s "$bg_m")" "$(ratio "$bg_m" "$jq_m")" "$(mb "$(maxof "${bg_kb[@]}")")" \
			"$(fmt_s "$bv_m")" "$(ratio "$bv_m" "$jq_m")" "$(mb "$(maxof "${bv_kb[@]}")")")")
	fi
done

# ---- report ---------------------------------------------------------------

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
report=$OUT/findings-bench.md
{
	echo "<!-- bash bench/findings.sh ${sizes[*]} -->"
	echo "Wall time is the median over the runs, on the bundle where nothing blocks (the whole file is read either way); peak RSS is the maximum over the runs."
	echo "$(date -u +%Y-%m-%d), $(nproc) CPUs${cpu:+ ($cpu)}, $(jq --version), $(go env GOVERSION), diffpal $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
	echo
	echo "| findings | runs | file MB | jq s | gate s | gate/jq | validate s | validate/jq | jq RSS MB | gate RSS MB | validate RSS MB |"
	echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	printf '%s\n' "${rows[@]}"
	if [[ -n ${BASELINE_REV:-} ]]; then
		echo
		echo "diffpal at $BASELINE_REV (baseline), same runs:"
		echo
		echo "| findings | runs | gate s | gate/jq | gate RSS MB | validate s | validate/jq | validate RSS MB |"
		echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
		printf '%s\n' "${brows[@]}"
	fi
} | tee "$report"
log "wrote $report"

if ((failed)); then
	echo "findings.sh: FAILED (see the FAIL lines above)"
	exit 1
fi
