#!/usr/bin/env bash
# Tokens a model-backed review sends, against the naive "whole diff to every
# profile" approach, and a re-review after a one-line push as a fraction of
# the first (target <= 10%). No network: a counting client answers.
#   bash bench/tokens.sh [-files 40 -lines 200]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
go run ./bench/tokens "$@"
