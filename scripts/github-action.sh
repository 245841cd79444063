#!/usr/bin/env bash
# The GitHub Action's steps (action.yml), one subcommand each:
#
#   github-action.sh cache-key   outputs dir= and key= for the built binary
#   github-action.sh build       builds diffpal from the action's source into $DIFFPAL_BIN
#   github-action.sh review      runs diffpal review (--publish github unless
#                                INPUT_PUBLISH is false), writes the outputs
#                                bundle=, blocking=, exit-code= to $GITHUB_OUTPUT,
#                                appends summary.md to $GITHUB_STEP_SUMMARY,
#                                prints annotations, and exits with review's code
#
# Inputs arrive as INPUT_* variables (never spliced into shell code).
# Tested by internal/cli/action_test.go with a fake event and the loopback
# GitHub of internal/publish/github/githubtest.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

truthy() {
  case "${1,,}" in 1 | true | yes | y | on) return 0 ;; esac
  return 1
}

out() { # name value: one line of $GITHUB_OUTPUT (values here never hold newlines)
  if [ -n "${GITHUB_OUTPUT:-}" ]; then printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"; fi
}

case "${1:-}" in
cache-key)
  sum=$(cd "$here" && find go.mod go.sum cmd internal findings hosts -type f | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)
  key="diffpal-${RUNNER_OS:-os}-${RUNNER_ARCH:-arch}-${ACTION_REF:-local}-$sum"
  key=${key//[^A-Za-z0-9._-]/_}
  out dir "${RUNNER_TEMP:-/tmp}/diffpal-action/$key"
  out key "$key"
  ;;
build)
  : "${DIFFPAL_BIN:?DIFFPAL_BIN is not set}"
  mkdir -p "$(dirname "$DIFFPAL_BIN")"
  (cd "$here" && CGO_ENABLED=1 go build -trimpath -o "$DIFFPAL_BIN" ./cmd/diffpal)
  ;;
review)
  bin=${DIFFPAL_BIN:-diffpal}
  outdir=${INPUT_OUT_DIR:-.artifacts/diffpal}
  args=(review --out-dir "$outdir" --block-on "${INPUT_BLOCK_ON:-high}")
  [ -n "${INPUT_BASE:-}" ] && args+=(--base "$INPUT_BASE")
  [ -n "${INPUT_HEAD:-}" ] && args+=(--head "$INPUT_HEAD")
  truthy "${INPUT_GATE:-false}" && args+=(--gate)
  if truthy "${INPUT_PUBLISH:-true}"; then
    args+=(--publish github --feedback "${INPUT_FEEDBACK:-review}")
    [ -n "${INPUT_REVIEW_CHANNEL:-}" ] && args+=(--review-channel "$INPUT_REVIEW_CHANNEL")
    truthy "${INPUT_CHECK_RUN:-false}" && args+=(--check-run)
  fi
  [ -n "${INPUT_PROVIDER:-}" ] && args+=(--provider "$INPUT_PROVIDER")
  [ -n "${INPUT_MODEL:-}" ] && args+=(--model "$INPUT_MODEL")
  [ -n "${INPUT_CONFIG:-}" ] && args+=(--config "$INPUT_CONFIG")
  if [ -n "${INPUT_EXTRA_ARGS:-}" ]; then
    set -f # split on whitespace, no globbing
    # shellcheck disable=SC2206
    extra=($INPUT_EXTRA_ARGS)
    set +f
    args+=("${extra[@]}")
  fi
  "$bin" "${args[@]}"
  rc=$?
  bundle="$outdir/findings.json"
  blocking=0
  if [ -f "$bundle" ]; then
    line=$("$bin" gate "$bundle" 2>&1 >/dev/null | grep '^gate: ' | head -1)
    blocking=$(printf '%s\n' "$line" | sed -n 's/.* blocking=\([0-9][0-9]*\).*/\1/p')
    blocking=${blocking:-0}
    "$bin" gate --annotations github "$bundle" 2>/dev/null
    if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$outdir/summary.md" ]; then
      cat "$outdir/summary.md" >>"$GITHUB_STEP_SUMMARY"
    fi
  fi
  out bundle "$bundle"
  out blocking "$blocking"
  out exit-code "$rc"
  case $rc in
  0) ;;
  10) echo "::error title=diffpal gate::$blocking blocking findings at or above ${INPUT_BLOCK_ON:-high}; see the job summary and the review on the pull request" ;;
  4) echo "::error title=diffpal publish::publishing the review on the pull request failed (the artifacts are written); see the log above" ;;
  *) echo "::error title=diffpal::diffpal review exited $rc" ;;
  esac
  exit "$rc"
  ;;
*)
  echo "usage: github-action.sh cache-key|build|review" >&2
  exit 2
  ;;
esac
