#!/usr/bin/env bash
# Runs schemathesis (PyPI, pinned) against /openapi.json of a live fraud-api-test-server, with
# the bearer token configured so that auth is exercised too. Exit 0 when it finds no failure;
# 77 (ctest: skipped) only when schemathesis cannot be installed.
# Usage: schemathesis.sh PATH/TO/fraud-api-test-server [extra schemathesis args]
set -euo pipefail

server_bin=$1
here=$(cd "$(dirname "$0")" && pwd)
shift
version=4.32.5
venv=${FRAUD_CACHE_DIR:-$HOME/.cache/fraud-detector}/schemathesis-$version
if [ ! -x "$venv/bin/schemathesis" ]; then
  echo "schemathesis.sh: installing schemathesis==$version into $venv"
  rm -rf "$venv"
  if ! { python3 -m venv "$venv" && "$venv/bin/pip" install -q "schemathesis==$version"; }; then
    rm -rf "$venv"
    echo "SKIPPED: schemathesis==$version could not be installed from PyPI (see above)"
    exit 77
  fi
fi

work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

token=schemathesis-token
mkfifo "$work/stdin"
"$server_bin" --token "$token" <"$work/stdin" >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
exec 3>"$work/stdin"  # the server stops when this closes
for _ in $(seq 100); do
  grep -q '^port=' "$work/server.out" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.err"; exit 1; }
  sleep 0.1
done
port=$(sed -n 's/^port=//p' "$work/server.out")
[ -n "$port" ] || { echo "the test server did not start"; cat "$work/server.err"; exit 1; }

cd "$work"
"$venv/bin/schemathesis" --no-color --config-file "$here/schemathesis.toml" run "http://127.0.0.1:$port/openapi.json" \
  --checks all \
  --header "Authorization: Bearer $token" \
  --max-examples "${FRAUD_SCHEMATHESIS_EXAMPLES:-100}" \
  --seed 20261130 \
  --workers 2 \
  --request-timeout 10 \
  "$@"
