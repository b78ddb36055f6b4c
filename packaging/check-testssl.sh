#!/bin/sh
# testssl.sh (Debian's `testssl.sh`, the command `testssl`) against weft's
# default TLS listener: a TLS group with only a certificate and a key, as
# docs/OPERATIONS.md shows it, on a fresh self-signed certificate. Run are
# the protocols (-p), the cipher categories (-s) and every vulnerability
# check (-U). Left out: server defaults (-S: the certificate's trust chain,
# which a self-signed test certificate always fails), headers and client
# simulations (about the deployment, not the server, and the slow part),
# and forward secrecy (-f: half as much time again, and it marks nothing
# NOT ok while any suite is forward-secret; the ROBOT check of -U names
# RSA key transport if a suite without forward secrecy is offered).
#
# Fails on any line testssl.sh marks "NOT ok" or "VULNERABLE" (its
# "potentially VULNERABLE" too: LUCKY13 with CBC suites) except a
# certificate-trust one, on an offered obsolete CBC cipher (OpenSSL's own
# default list has them; weft's has none), on TLS 1.2 or AEAD suites not
# offered, and on a run that did not finish (the "Done" line). Bounded by
# WEFT_TESTSSL_TIMEOUT seconds (default 300; about 10 s of CPU time, wall
# time more on a loaded machine: testssl.sh forks a few thousand processes).
# Everything it starts is stopped and its scratch directory removed on any
# exit.
#
#   WEFT_BIN=build/server/weft packaging/check-testssl.sh
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
WEFT_BIN=${WEFT_BIN:-$root/build/server/weft}
limit=${WEFT_TESTSSL_TIMEOUT:-300}

say() { echo "check-testssl: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

if ! command -v testssl >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get install -y -qq --no-install-recommends testssl.sh >/dev/null || fail "cannot install testssl.sh"
fi
[ -x "$WEFT_BIN" ] || fail "no weft binary at $WEFT_BIN (set WEFT_BIN)"

d=$(mktemp -d /tmp/weft-testssl.XXXXXX)
weft_pid=""
cleanup() {
  if [ -n "$weft_pid" ]; then
    kill "$weft_pid" 2>/dev/null || true
    i=0; while kill -0 "$weft_pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    kill -9 "$weft_pid" 2>/dev/null || true
  fi
  rm -rf "$d"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
start=$(date +%s)

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
  -keyout "$d/key.pem" -out "$d/cert.pem" >/dev/null 2>&1 || fail "openssl: the self-signed certificate"
# No route: testssl.sh's HTTP requests (BREACH asks for /) get weft's own 404.
cat >"$d/weft.conf" <<EOF
listen = ( { address = "127.0.0.1:0"; tls = { certificate = "$d/cert.pem"; key = "$d/key.pem"; }; } );
admin = false;
threads = 1;
routes = ();
EOF
"$WEFT_BIN" -t -c "$d/weft.conf" >"$d/check.log" 2>&1 || fail "weft -t: $(cat "$d/check.log")"
"$WEFT_BIN" -c "$d/weft.conf" >"$d/weft.log" 2>&1 &
weft_pid=$!
i=0
until grep -q "weft .* serving" "$d/weft.log"; do
  kill -0 "$weft_pid" 2>/dev/null || fail "weft exited: $(cat "$d/weft.log")"
  [ $i -lt 300 ] || fail "weft not serving within 30 s: $(cat "$d/weft.log")"
  sleep 0.1; i=$((i + 1))
done
port=$(sed -n 's|.*listening on https://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$d/weft.log" | head -1)
[ -n "$port" ] || fail "no 'listening on https://' line: $(cat "$d/weft.log")"

say "testssl -p -s -U against weft's default TLS listener on 127.0.0.1:$port"
rc=0
timeout "$limit" testssl --quiet --color 0 --warnings off --nodns none -p -s -U "127.0.0.1:$port" \
  >"$d/testssl.txt" 2>&1 || rc=$?
[ "$rc" -ne 124 ] || { cat "$d/testssl.txt" >&2; fail "testssl.sh did not finish within $limit s"; }
grep -q '^ *Done ' "$d/testssl.txt" || { cat "$d/testssl.txt" >&2; fail "testssl.sh did not finish (status $rc)"; }

# What a self-signed certificate cannot pass: none of -p -s -U asks, but a
# future testssl.sh that does must not fail the server for the test's certificate.
bad=$(grep -E 'NOT ok|VULNERABLE' "$d/testssl.txt" | grep -viE 'self[- ]signed|chain of trust|trust' || true)
cbc=$(grep -E '^ *Obsolete(d)? CBC ciphers' "$d/testssl.txt" | grep -v 'not offered' || true)
aead=$(grep -E '^ *Strong encryption \(AEAD ciphers\)' "$d/testssl.txt" | grep 'offered (OK)' || true)
tls12=$(grep -E '^ *TLS 1\.2 +offered' "$d/testssl.txt" || true)
if [ -n "$bad" ] || [ -n "$cbc" ] || [ -z "$aead" ] || [ -z "$tls12" ]; then
  cat "$d/testssl.txt" >&2
  [ -z "$bad" ] || say "marked NOT ok / VULNERABLE:
$bad"
  [ -z "$cbc" ] || say "obsolete CBC ciphers offered: $cbc"
  [ -n "$aead" ] || say "no AEAD cipher offered"
  [ -n "$tls12" ] || say "TLS 1.2 not offered"
  fail "testssl.sh found weak spots in weft's default TLS settings"
fi
say "ok: no NOT ok or VULNERABLE line, no CBC cipher, TLS 1.2 and AEAD offered, in $(( $(date +%s) - start )) s"
