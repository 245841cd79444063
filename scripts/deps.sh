#!/usr/bin/env bash
# Installs the system tools diffpal's tests and benchmarks need (jq for the
# seed's consumer examples, GNU time for peak-memory figures, a C and C++
# compiler for the tree-sitter grammars diffpal is built with through cgo, Debian's
# chromium for the report.html browser test, Debian's postgresql for the
# PostgreSQL session store tests, which start a private throw-away cluster
# with its initdb and postgres binaries). Go modules
# come through `go` itself. Safe to run repeatedly: it installs only what is
# missing.
set -euo pipefail

#   scripts/deps.sh          # everything the tests and benchmarks need
#   scripts/deps.sh build    # only what building and running diffpal needs
need=()
if [ "${1:-}" != build ]; then
  command -v jq >/dev/null 2>&1 || need+=(jq)
  [ -x /usr/bin/time ] || need+=(time)
  # The browser test drives /usr/bin/chromium headless (never a downloaded
  # browser); only apt-get systems get it from here.
  if command -v apt-get >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then need+=(chromium); fi
  # The PostgreSQL store tests (internal/qa/store/postgres/pgtest) need
  # initdb and postgres under /usr/lib/postgresql/*/bin; Debian's package
  # only installs them (its own cluster is not used).
  if command -v apt-get >/dev/null 2>&1 && ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
    need+=(postgresql)
  fi
fi
command -v git >/dev/null 2>&1 || need+=(git)
command -v gcc >/dev/null 2>&1 || command -v cc >/dev/null 2>&1 || need+=(gcc)
# The YAML grammar's scanner is C++, linked with libstdc++ statically
# (internal/syntax/link.go): g++ brings the compiler and libstdc++.a.
command -v g++ >/dev/null 2>&1 || command -v c++ >/dev/null 2>&1 || need+=(g++)
[ ${#need[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "deps: need ${need[*]} but not root and no sudo; install them and re-run" >&2
    exit 1
  fi
fi
if command -v apt-get >/dev/null 2>&1; then
  echo "deps: installing ${need[*]}" >&2
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
elif command -v brew >/dev/null 2>&1; then
  brew install "${need[@]}"
else
  echo "deps: need ${need[*]}; no apt-get or brew here, install them by hand" >&2
  exit 1
fi
