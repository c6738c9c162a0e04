#!/bin/sh
# transport-ws against an independent websocket implementation (the npm
# `ws` package, tests/integration/ws_peer.mjs), both directions, over ws://
# and wss:// with certificates made here by the openssl CLI: an engy client
# leg against a ws server, a ws client against the engy server, certificate
# verification (a CA file, the IP and name checks, an untrusted chain, a
# name mismatch, the insecure escape hatch), and no payload in any log.
# Oracle: independent: the npm ws package and certificates made by the
# openssl CLI.
. "$top_srcdir/tests/integration/lib.sh"

PEERS=${ENGY_PEERS:-$top_srcdir/tests/peers/node_modules}
if [ ! -d "$PEERS" ]; then
  skip_or_fail "no peer modules at $PEERS (run npm ci --prefix tests/peers)"
fi
[ -d "$PEERS/ws" ] || fail "no ws module in $PEERS (run npm ci --prefix tests/peers)"
command -v node >/dev/null || fail "node is required for the peer test"
command -v openssl >/dev/null || fail "the openssl CLI is required for the peer test"
DRIVER="$top_builddir/tests/ws_driver"
PEER="$top_srcdir/tests/integration/ws_peer.mjs"
EKEYREJECTED=129

# --- certificates: a CA, a server cert for localhost/127.0.0.1, and one
# for another name, both signed by the CA.
cert() { # name subjectAltName
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$T/$1.key" -out "$T/$1.csr" -subj "/CN=$1" 2>/dev/null \
    || fail "openssl req $1"
  printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
    "$2" >"$T/$1.ext"
  openssl x509 -req -in "$T/$1.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" \
    -CAcreateserial -out "$T/$1.pem" -days 2 -extfile "$T/$1.ext" 2>/dev/null \
    || fail "openssl x509 $1"
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -keyout "$T/ca.key" -out "$T/ca.pem" -days 2 -subj "/CN=engy test CA" \
  -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null || fail "openssl CA"
cert localhost "DNS:localhost,IP:127.0.0.1"
cert other "DNS:other.example"

# start_bg NAME cmd...: run in the background, wait for its port ($port).
start_bg() {
  name=$1; shift
  "$@" >"$T/$name.out" 2>"$T/$name.err" &
  PIDS="$PIDS $!"
  eval "PID_$name=$!"
  wait_for "$T/$name.out" "listening port=" 10 || fail "$name did not start: $(cat "$T/$name.err")"
  port=$(sed -n 's/^listening port=//p' "$T/$name.out")
}
stop_bg() {
  eval "kill \$PID_$1" 2>/dev/null || true
  eval "wait \$PID_$1" 2>/dev/null || true
}
no_secrets() { # file...
  if grep -l -e SECRET -e "hello again" -e "$(printf '\316\272')" "$@" >/dev/null 2>&1; then
    fail "a payload or secret reached the log: $(grep -l -e SECRET "$@")"
  fi
}

# --- 1. engy client leg -> npm ws server (ws://)
start_bg nodesrv node "$PEER" "$PEERS" server
"$DRIVER" dial "ws://127.0.0.1:$port/echo?key=QSECRET" -H X-Key=HSECRET \
  ping_interval_s=1 ping_timeout_s=5 --hold 3000 \
  >"$T/d1.out" 2>"$T/d1.log" || fail "engy leg vs ws server: $(cat "$T/d1.out")"
grep -q "echo ok n=5" "$T/d1.out" || fail "battery echoes"
ok "engy leg vs ws server: text, UTF-8, binary, 1 MiB and empty messages echo"
grep -q "closed code=4001 reason=bye" "$T/d1.out" || fail "close code"
grep -q "open opens=2" "$T/d1.out" || fail "no re-dial"
ok "engy leg learns the server's close 4001 and re-dials"
grep -q "x-key=yes" "$T/nodesrv.out" || fail "extra header lost"
grep -q "^ping$" "$T/nodesrv.out" || fail "no keepalive ping reached the ws server"
ok "engy leg sends its headers and keepalive pings"
wait_for "$T/nodesrv.out" "close code=1001" 5 || fail "leg close: $(cat "$T/nodesrv.out")"
ok "closing the leg closes with 1001"
no_secrets "$T/d1.log"
stop_bg nodesrv

# --- 2. npm ws client -> engy server (ws://)
start_bg engysrv "$DRIVER" serve listen=127.0.0.1:0 ping_interval_s=1 \
  ping_timeout_s=5 max_message_bytes=2097152
node "$PEER" "$PEERS" client "ws://127.0.0.1:$port/echo" >"$T/c2.out" \
  || fail "ws client vs engy server: $(cat "$T/c2.out")"
n=$(grep -c "^ok - " "$T/c2.out")
[ "$n" -eq 12 ] || fail "ws client ran $n checks: $(cat "$T/c2.out")"
ok "ws client vs engy server: $n checks (fragments, ping, closes, 1007, 1009, 404, 426)"
wait_for "$T/engysrv.out" "close code=4000 reason=bye" 5 || fail "server did not see 4000"
ok "engy server learns the client's close code and reason"
stop_bg engysrv
no_secrets "$T/engysrv.err"

# --- 3. wss: engy leg -> npm ws server with a CA-signed certificate
start_bg tlssrv node "$PEER" "$PEERS" server --tls "$T/localhost.pem" "$T/localhost.key"
"$DRIVER" dial "wss://localhost:$port/echo" "ca_file=$T/ca.pem" >"$T/d3.out" 2>"$T/d3.log" \
  || fail "wss by name: $(cat "$T/d3.out" "$T/d3.log")"
ok "wss:// by name, verified against ca_file"
"$DRIVER" dial "wss://127.0.0.1:$port/echo" "ca_file=$T/ca.pem" >"$T/d3b.out" 2>&1 \
  || fail "wss by IP: $(cat "$T/d3b.out")"
ok "wss:// by IP address, verified against the certificate's IP"
"$DRIVER" dial "wss://localhost:$port/echo" --expect-error >"$T/d3c.out" 2>"$T/d3c.log" \
  || fail "an untrusted chain was accepted: $(cat "$T/d3c.out")"
grep -q "dial_error err=-$EKEYREJECTED " "$T/d3c.out" || fail "untrusted: $(cat "$T/d3c.out")"
grep -q "event=ws_dial_failed.*issuer" "$T/d3c.log" || fail "no reason logged: $(cat "$T/d3c.log")"
ok "an untrusted certificate fails the dial (EKEYREJECTED, logged)"
stop_bg tlssrv

start_bg othersrv node "$PEER" "$PEERS" server --tls "$T/other.pem" "$T/other.key"
"$DRIVER" dial "wss://localhost:$port/echo" "ca_file=$T/ca.pem" --expect-error \
  >"$T/d4.out" 2>"$T/d4.log" || fail "a name mismatch was accepted"
grep -q "dial_error err=-$EKEYREJECTED " "$T/d4.out" || fail "mismatch: $(cat "$T/d4.out")"
grep -q "hostname mismatch" "$T/d4.log" || fail "mismatch not named: $(cat "$T/d4.log")"
ok "a certificate for another name fails the dial (hostname mismatch)"
"$DRIVER" dial "wss://localhost:$port/echo" insecure=true >"$T/d4b.out" 2>"$T/d4b.log" \
  || fail "insecure: $(cat "$T/d4b.out")"
grep -q "event=ws_tls_insecure" "$T/d4b.log" || fail "insecure not logged"
ok "insecure = true connects anyway and says so in the log"
stop_bg othersrv

# --- 4. wss: npm ws client -> engy server, engy leg -> engy server
start_bg engytls "$DRIVER" serve listen=127.0.0.1:0 ping_interval_s=1 \
  ping_timeout_s=5 max_message_bytes=2097152 \
  "tls_cert=$T/localhost.pem" "tls_key=$T/localhost.key"
node "$PEER" "$PEERS" client "wss://localhost:$port/echo" --ca "$T/ca.pem" >"$T/c5.out" \
  || fail "ws client vs engy wss server: $(cat "$T/c5.out")"
n=$(grep -c "^ok - " "$T/c5.out")
[ "$n" -eq 12 ] || fail "wss ws client ran $n checks: $(cat "$T/c5.out")"
ok "ws client vs engy wss:// server: $n checks"
"$DRIVER" dial "wss://localhost:$port/echo" "ca_file=$T/ca.pem" >"$T/d6.out" 2>&1 \
  || fail "engy vs engy over wss: $(cat "$T/d6.out")"
ok "engy leg vs engy server over wss://"
stop_bg engytls
grep -q "event=ws_listen addr=127.0.0.1:$port tls=yes" "$T/engytls.err" || fail "listen line"
no_secrets "$T/engytls.err" "$T/d3.log"

echo "$N_OK passed, 0 failed"
