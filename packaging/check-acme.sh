#!/bin/sh
# ACME HTTP-01 against weft's static route, end to end on loopback: the
# docs/OPERATIONS.md Let's Encrypt recipe ("Let's Encrypt"), run as written
# with Let's Encrypt replaced by Debian's pebble (its test ACME server):
#
#   1. pebble on 127.0.0.1 with a fresh self-signed certificate for its API,
#      validating HTTP-01 for real (PEBBLE_VA_ALWAYS_VALID=0) against weft's
#      cleartext port (pebble's httpPort);
#   2. weft with the recipe's listeners and route: cleartext with the static
#      route /.well-known/acme-challenge on WEBROOT/.well-known/acme-challenge,
#      and TLS on the recipe's placeholder certificate;
#   3. the recipe's `certbot certonly --webroot -w WEBROOT -d DOMAIN
#      --deploy-hook ...`, plus what a private test run needs (pebble's
#      directory URL, its API certificate as REQUESTS_CA_BUNDLE, private
#      config/work/logs directories, no e-mail); the deploy hook installs the
#      certificate where weft's config points and reloads weft (`weft reload`
#      here, `systemctl reload weft` in the recipe);
#   4. openssl s_client: the TLS port now serves the issued certificate
#      (same fingerprint), and curl verifies it against pebble's root CA.
#
# Everything it starts is stopped and its scratch directory removed on any
# exit; every wait has a deadline, the whole run WEFT_ACME_TIMEOUT seconds
# (default 240). Needs pebble, certbot, openssl, curl, python3 (installed with
# apt-get if missing, as packaging/install-deps.sh test does).
#
#   WEFT_BIN=build/server/weft packaging/check-acme.sh
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
WEFT_BIN=${WEFT_BIN:-$root/build/server/weft}
limit=${WEFT_ACME_TIMEOUT:-240}
domain=localhost

say() { echo "check-acme: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

missing=""
for p in pebble:pebble certbot:certbot openssl:openssl curl:curl python3:python3; do
  command -v "${p%%:*}" >/dev/null 2>&1 || missing="$missing ${p#*:}"
done
if [ -n "$missing" ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null || fail "cannot install$missing"
fi
[ -x "$WEFT_BIN" ] || fail "no weft binary at $WEFT_BIN (set WEFT_BIN)"

d=$(mktemp -d /tmp/weft-acme.XXXXXX)
pebble_pid=""; weft_pid=""
cleanup() {
  for p in $weft_pid $pebble_pid; do kill "$p" 2>/dev/null || true; done
  for p in $weft_pid $pebble_pid; do
    i=0; while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    kill -9 "$p" 2>/dev/null || true
  done
  rm -rf "$d"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
start=$(date +%s)
left() { echo $((limit - ($(date +%s) - start))); }

# Free loopback ports below the kernel's ephemeral range: a port the kernel
# chose and this script released could be given to another job's listener
# or outgoing connection before pebble or weft binds it.
ports=$(python3 -c '
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
got = []
while len(got) < 5:
    p = random.randrange(10000, low)
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
    if p not in got:
        got.append(p)
print(" ".join(map(str, got)))')
set -- $ports
http_port=$1 tls_port=$2 acme_port=$3 mgmt_port=$4 pebble_tls_port=$5

# Waits until COMMAND succeeds, for at most SECONDS (and never past the run's limit).
wait_for() { # seconds what command...
  n=$1 what=$2; shift 2
  [ "$n" -le "$(left)" ] || n=$(left)
  deadline=$(($(date +%s) + n))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "$what: not within ${n} s"
    sleep 0.2
  done
}

# ---- 1. pebble
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$domain" \
  -addext "subjectAltName=DNS:$domain,IP:127.0.0.1" \
  -keyout "$d/pebble-key.pem" -out "$d/pebble-cert.pem" >/dev/null 2>&1 || fail "openssl: pebble's certificate"
cat >"$d/pebble.json" <<EOF
{ "pebble": { "listenAddress": "127.0.0.1:$acme_port", "managementListenAddress": "127.0.0.1:$mgmt_port",
  "certificate": "$d/pebble-cert.pem", "privateKey": "$d/pebble-key.pem",
  "httpPort": $http_port, "tlsPort": $pebble_tls_port, "ocspResponderURL": "",
  "externalAccountBindingRequired": false } }
EOF
PEBBLE_VA_ALWAYS_VALID=0 PEBBLE_VA_NOSLEEP=1 PEBBLE_WFE_NONCEREJECT=0 \
  pebble -config "$d/pebble.json" >"$d/pebble.log" 2>&1 &
pebble_pid=$!
wait_for 30 "pebble's directory" curl -sf --cacert "$d/pebble-cert.pem" "https://$domain:$acme_port/dir"

# ---- 2. weft: the recipe's config, with this run's ports and paths
webroot=$d/acme            # the recipe's /var/lib/weft/acme
tls=$d/tls                 # the recipe's /etc/weft/tls
mkdir -p "$webroot/.well-known/acme-challenge" "$tls"
# The recipe's placeholder, so that the TLS listener starts before the first certificate.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$domain" \
  -keyout "$tls/privkey.pem" -out "$tls/fullchain.pem" >/dev/null 2>&1 || fail "openssl: placeholder"
chmod 0600 "$tls/privkey.pem"
cat >"$d/weft.conf" <<EOF
listen = ( "127.0.0.1:$http_port",
           { address = "127.0.0.1:$tls_port";
             tls = { certificate = "$tls/fullchain.pem"; key = "$tls/privkey.pem"; }; } );
admin = false;
pid_file = "$d/weft.pid";
log = { access_log = "$d/access.log"; };
routes = (
  { path = "/.well-known/acme-challenge";
    static = { dir = "$webroot/.well-known/acme-challenge"; index = []; }; }
);
EOF
"$WEFT_BIN" -t -c "$d/weft.conf" >"$d/check.log" 2>&1 || fail "weft -t: $(cat "$d/check.log")"
"$WEFT_BIN" -c "$d/weft.conf" >"$d/weft.log" 2>&1 &
weft_pid=$!
wait_for 30 "weft's listeners" grep -q "weft .* serving" "$d/weft.log"
# The route serves what certbot will write, and nothing hidden.
echo probe >"$webroot/.well-known/acme-challenge/probe"
[ "$(curl -s "http://127.0.0.1:$http_port/.well-known/acme-challenge/probe")" = probe ] ||
  fail "the ACME route does not serve $webroot/.well-known/acme-challenge"
rm -f "$webroot/.well-known/acme-challenge/probe"

fingerprint() { openssl x509 -noout -fingerprint -sha256 "$@" 2>/dev/null | sed 's/.*=//'; }
served() {
  echo | openssl s_client -connect "127.0.0.1:$tls_port" -servername "$domain" 2>/dev/null |
    openssl x509 -noout -fingerprint -sha256 2>/dev/null | sed 's/.*=//'
}
before=$(served)
[ -n "$before" ] && [ "$before" = "$(fingerprint -in "$tls/fullchain.pem")" ] || fail "the TLS port does not serve the placeholder"

# ---- 3. certbot, as the recipe runs it (the deploy hook's reload is weft reload here)
hook="install -m 0644 \$RENEWED_LINEAGE/fullchain.pem $tls/fullchain.pem && install -m 0600 \$RENEWED_LINEAGE/privkey.pem $tls/privkey.pem && $WEFT_BIN reload -c $d/weft.conf"
say "certbot certonly --webroot -w $webroot -d $domain against pebble on :$acme_port (HTTP-01 to weft on :$http_port)"
if ! REQUESTS_CA_BUNDLE=$d/pebble-cert.pem timeout "$(left)" \
  certbot certonly --webroot -w "$webroot" -d "$domain" \
    --deploy-hook "$hook" \
    --server "https://$domain:$acme_port/dir" --non-interactive --agree-tos --register-unsafely-without-email \
    --config-dir "$d/le" --work-dir "$d/le-work" --logs-dir "$d/le-logs" >"$d/certbot.log" 2>&1; then
  cat "$d/certbot.log" >&2
  tail -20 "$d/pebble.log" >&2
  fail "certbot did not get a certificate"
fi
issued=$(fingerprint -in "$d/le/live/$domain/cert.pem")
[ -n "$issued" ] || fail "certbot wrote no certificate"
# pebble's validation fetched the token from weft (not only certbot's own self-check).
[ "$(grep -c 'GET /.well-known/acme-challenge/[A-Za-z0-9_-]* HTTP/1.1" 200' "$d/access.log")" -ge 1 ] ||
  fail "no challenge fetch answered 200 in weft's access log: $(cat "$d/access.log")"

# ---- 4. the reload serves the issued certificate, which chains to pebble's root
now_serving() { [ "$(served)" = "$issued" ]; }
wait_for 30 "the TLS port serving the issued certificate after the reload" now_serving
curl -sf --cacert "$d/pebble-cert.pem" "https://127.0.0.1:$mgmt_port/roots/0" >"$d/root.pem" || fail "pebble's root CA"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$d/root.pem" --resolve "$domain:$tls_port:127.0.0.1" \
  "https://$domain:$tls_port/.well-known/acme-challenge/none")
[ "$code" = 404 ] || fail "curl with pebble's root CA: $code (want a verified handshake and 404)"
say "ok: certificate $issued issued over HTTP-01 by weft's static route and served after weft reload, in $(( $(date +%s) - start )) s"
