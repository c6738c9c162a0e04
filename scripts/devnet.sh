#!/usr/bin/env bash
# engy's main job on one machine: a local devnet on 127.0.0.1.
#
#   ./scripts/devnet.sh          run until Ctrl-C (paste the printed curl)
#   ./scripts/devnet.sh --once   exit after printing the table
#
# Starts a gateway (etc/devnet/gateway.conf), two honest miners
# (miner-ref.conf, miner-ref2.conf: backend-ref on the canonical checkpoint
# on the splitk and warp32 kernel profiles, so their numbers are not the
# auditor's bits), an INT4-cheat miner (miner-int4.conf: the --quant int4
# copy, claiming the canonical root through the miner's model_root option)
# and an auditor
# (auditor.conf: TOPLOC, and the GEMM audit with verifier-gemm on the
# canonical checkpoint: every miner traces its answers, the auditor opens
# them); generates the models on first run; lets onboarding
# probe every miner (the auditor's verdicts on the probes qualify
# the honest ones and keep the cheat out of buyer traffic); sends buyer
# traffic through the OpenAI API; once the auditor has closed the epoch, starts
# the light validator (validator.conf) on chain-dev, the dev chain, which
# fetches the signed epoch from the auditor's provider API and sets the
# weights; and prints each miner's kernel profile, onboarding outcome, P99
# TOPLOC score, largest exponent mismatches and mantissa mean of a chunk,
# a column per scheme (toploc, gemm: the worst verdict and how many) and
# verdict (probes included; the INT4 cheat must be cheat in both schemes,
# the honest miners pass in both), the closed
# epoch's signed weights, the weights as they landed on the dev chain and
# a curl to chat with the gateway.  Progress goes to stderr, the table to
# stdout.  Everything lives under var/devnet/ (models and keys are kept
# across runs; the store, the chain, logs and configs are made fresh);
# nothing is left running.
#
# Environment: ENGY_DEVNET_STATE (var/devnet), ENGY_DEVNET_BUILD (the
# build dir: build-main, built by scripts/test.sh when missing),
# ENGY_DEVNET_EPOCH_S (30), ENGY_DEVNET_REQUESTS (12), ENGY_DEVNET_SIZE
# (tiny|small: the model), ENGY_PEERS (npm peers with openai; else curl),
# ENGY_DEVNET_THEN (a command run after the table while the network is up,
# with DEVNET_PROVIDER, DEVNET_GATEWAY, DEVNET_TEE_TOKEN, DEVNET_STATE,
# DEVNET_EPOCH and DEVNET_HONEST/DEVNET_HONEST2/DEVNET_CHEAT (hotkeys)
# set; its failure fails the devnet).
# Exit status: 0 done, 1 failed, 3 a role this tree lacks (not ready).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
ONCE=0
for a in "$@"; do
	case $a in
	--once) ONCE=1 ;;
	-h | --help) sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "devnet: unknown argument $a (--once, --help)" >&2; exit 2 ;;
	esac
done

STATE=${ENGY_DEVNET_STATE:-var/devnet}
BUILD=${ENGY_DEVNET_BUILD:-build-main}
EPOCH_S=${ENGY_DEVNET_EPOCH_S:-30}
NREQ=${ENGY_DEVNET_REQUESTS:-12}
SIZE=${ENGY_DEVNET_SIZE:-tiny}
SEED=3
MODEL=devnet-qwen3
mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)
case $BUILD in /*) ;; *) BUILD="$top/$BUILD" ;; esac
PEERS=${ENGY_PEERS:-$top/tests/peers/node_modules}

say() { printf 'devnet: %s\n' "$*" >&2; }
die() { printf 'devnet: FAILED: %s\n' "$*" >&2; exit 1; }

# --- build -------------------------------------------------------------------
if [ ! -x "$BUILD/engyd/engyd" ] || [ ! -x "$BUILD/tools/engyctl" ]; then
	[ "$BUILD" = "$top/build-main" ] || die "no engyd in $BUILD"
	say "building engy first: ENGY_BUILD_ONLY=1 scripts/test.sh (installs what is missing, builds)"
	ENGY_BUILD_ONLY=1 ./scripts/test.sh >&2 || die "scripts/test.sh (build)"
fi
ENGYD="$BUILD/engyd/engyd"
ENGYCTL="$BUILD/tools/engyctl"
command -v curl >/dev/null || die "curl is required"

# --- processes: every one by PID, stopped on any exit ---------------------------
PIDS=()
NAMES=()
stopping=0
stop_all() {
	[ $stopping = 0 ] || return 0
	stopping=1
	local i p n=0
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		kill -TERM "${PIDS[i]}" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do
		while kill -0 "$p" 2>/dev/null && [ $n -lt 300 ]; do sleep 0.05; n=$((n + 1)); done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	[ ${#PIDS[@]} = 0 ] || say "stopped ${NAMES[*]}"
}
trap 'stop_all' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# start NAME [VAR=VALUE ...]: engyd -c $RUN/NAME.conf, stderr to $LOGS/NAME.log
start() {
	local n=$1
	shift
	: > "$LOGS/$n.log"
	env "$@" ENGY_PLUGIN_DIR="$PLUG" "$ENGYD" -c "$RUN/$n.conf" 2>> "$LOGS/$n.log" &
	PIDS+=($!)
	NAMES+=("$n")
}
# wait_log NAME NEEDLE SECONDS
wait_log() {
	local i=0 pid=${PIDS[${#PIDS[@]} - 1]}
	while ! grep -q -- "$2" "$LOGS/$1.log" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le $(($3 * 10)) ] || die "$1: no '$2' after $3 s: $(tail -3 "$LOGS/$1.log")"
		sleep 0.1
	done
}

# --- state: models and keys kept, the rest made fresh -------------------------------
RUN="$STATE/run"
LOGS="$STATE/logs"
PLUG="$STATE/plugins"
rm -rf "$RUN" "$LOGS" "$PLUG" "$STATE/gateway" "$STATE/auditor" "$STATE/miner-honest" \
	"$STATE/miner-honest-2" "$STATE/miner-int4" "$STATE/validator" "$STATE/chain"
mkdir -p "$RUN" "$LOGS" "$PLUG" "$STATE/models" "$STATE/keys" "$STATE/gateway" \
	"$STATE/auditor" "$STATE/miner-honest" "$STATE/miner-honest-2" "$STATE/miner-int4" \
	"$STATE/validator" \
	"$STATE/chain" "$STATE/wallets/devnet/hotkeys"
for so in "$BUILD"/plugins/*/.libs/*.so; do
	[ -f "$so" ] && ln -sf "$so" "$PLUG/"
done

# configs: etc/devnet's, with this state dir and port 0 (the ports are read
# from the logs)
for c in gateway miner-ref miner-ref2 miner-int4 auditor validator; do
	[ -f "etc/devnet/$c.conf" ] || die "etc/devnet/$c.conf is missing"
	sed -e "s#\./var/devnet#$STATE#g" -e 's#127\.0\.0\.1:80[0-9][0-9]#127.0.0.1:0#g' \
		"etc/devnet/$c.conf" > "$RUN/$c.conf"
done
mv "$RUN/miner-ref.conf" "$RUN/honest.conf"
mv "$RUN/miner-ref2.conf" "$RUN/honest-2.conf"
mv "$RUN/miner-int4.conf" "$RUN/int4-cheat.conf"
# models, generated once
mk() {  # dir [--quant int4]
	[ -f "$STATE/models/$1/config.json" ] && return 0
	say "generating the $1 checkpoint (qwen3 $SIZE, seed $SEED${2:+ $2 $3})"
	rm -rf "$STATE/models/$1"
	"$ENGYCTL" mkmodel --arch qwen3 --size "$SIZE" --seed "$SEED" "${@:2}" \
		--out "$STATE/models/$1" --quiet || die "mkmodel $1"
}
if [ "$(cat "$STATE/models/made-with" 2>/dev/null)" != "qwen3 $SIZE $SEED" ]; then
	rm -rf "$STATE/models/canonical" "$STATE/models/int4"
fi
mk canonical
mk int4 --quant int4
echo "qwen3 $SIZE $SEED" > "$STATE/models/made-with"
# The canonical checkpoint's identity, as a miner computes it
# (specs/miner.md): sha256(config.json ‖ each *.safetensors, sorted:
# basename ‖ decimal size).
ROOT=$(
	cd "$STATE/models/canonical"
	{ cat config.json; for f in $(LC_ALL=C ls -- *.safetensors); do
		printf '%s%s' "$f" "$(stat -L -c %s "$f")"; done; } | sha256sum | cut -c1-64
)
# The canonical checkpoint's weight commitment (specs/model-commitment.md):
# the Merkle root the auditor checks its checkpoint against at start.  The
# tiny model's is pinned in etc/devnet/model-spec.json (model_root): the
# generated checkpoint must be that one; the small model has no published
# pin, so its generated root is pinned in the store (--spec-root).
SPEC_ROOT=$("$ENGYCTL" model-spec build "$STATE/models/canonical" | tr -d ' \t\n' |
	sed -n 's/.*"model_root":"\([0-9a-f]\{64\}\)".*/\1/p')
[ -n "$SPEC_ROOT" ] || die "engyctl model-spec build: no model_root"
PINNED=$(tr -d ' \t\n' < etc/devnet/model-spec.json | sed -n 's/.*"model_root":"\([0-9a-f]*\)".*/\1/p')
SPEC_FLAGS=""
if [ "$SIZE" = tiny ]; then
	[ "$SPEC_ROOT" = "$PINNED" ] ||
		die "the generated checkpoint's Merkle root $SPEC_ROOT is not the pinned $PINNED (etc/devnet/model-spec.json): remove $STATE/models and retry"
else
	SPEC_FLAGS="--spec-root $SPEC_ROOT"
fi
# verifier-gemm checks its checkpoint against this root at start; the
# INT4 cheat's traces claim it
sed -i "s#^\( *spec_root = \)\"[0-9a-f]*\"#\1\"$SPEC_ROOT\"#" "$RUN/auditor.conf"
grep -q "^ *spec_root = \"$SPEC_ROOT\"" "$RUN/auditor.conf" || die "no verifier-gemm spec_root in auditor.conf"
sed -i "s#^\( *gemm_spec_root = \)\"[0-9a-f]*\"#\1\"$SPEC_ROOT\"#" "$RUN/int4-cheat.conf"
grep -q "^ *gemm_spec_root = \"$SPEC_ROOT\"" "$RUN/int4-cheat.conf" || die "no gemm_spec_root in miner-int4.conf"
# keys, made once: the auditor's master hotkey, the two miners' hotkeys and
# the validator's (a wallet hotkey: wallets/devnet/hotkeys/validator)
VKEY="$STATE/wallets/devnet/hotkeys/validator"
for k in master honest honest-2 int4-cheat "$VKEY"; do
	case $k in /*) f=$k ;; *) f="$STATE/keys/$k" ;; esac
	[ -f "$f" ] || "$ENGYCTL" keys new --out "$f" > /dev/null || die "keys new $k"
done
ss58() { "$ENGYCTL" keys show "$1" | sed -n 's/^ss58Address: //p' | head -1; }
MASTER=$(ss58 "$STATE/keys/master")
H_HONEST=$(ss58 "$STATE/keys/honest")
H_HONEST2=$(ss58 "$STATE/keys/honest-2")
H_CHEAT=$(ss58 "$STATE/keys/int4-cheat")
H_VAL=$(ss58 "$VKEY")
[ -n "$MASTER" ] && [ -n "$H_HONEST" ] && [ -n "$H_HONEST2" ] && [ -n "$H_CHEAT" ] &&
	[ -n "$H_VAL" ] || die "keys show"
# the dev chain's subnet, uid = line: the owner (the auditor burns to the
# master hotkey), the validator, then the miners as the auditor names them
printf '%s  # owner\n%s  # validator\n%s  # honest\n%s  # int4-cheat\n%s  # honest-2\n' \
	"$MASTER" "$H_VAL" "$H_HONEST" "$H_CHEAT" "$H_HONEST2" > "$STATE/chain/hotkeys.txt"
UIDNAMES=(owner validator honest int4-cheat honest-2)
ready=1
for c in gateway honest honest-2 int4-cheat auditor validator; do
	if ! out=$(ENGY_PLUGIN_DIR="$PLUG" "$ENGYD" -t -c "$RUN/$c.conf" 2>&1); then
		ready=0
		say "etc/devnet/$c.conf is not ready in this tree:"
		echo "$out" | grep -v '^ *$' | head -5 | sed 's/^/  /' >&2
	fi
done
[ $ready = 1 ] || { say "nothing was started"; exit 3; }

CKPT_DTYPE=$(tr -d ' \t\n' < "$STATE/models/canonical/config.json" |
	sed -n 's/.*"torch_dtype":"\([a-z0-9]*\)".*/\1/p')
CKPT_DTYPE=${CKPT_DTYPE:-bf16}
[ "$CKPT_DTYPE" = bfloat16 ] && CKPT_DTYPE=bf16


# the store: the model (its devnet spec), a buyer with credit, the miners
rnd() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }
export ENGY_KEY_PEPPER="devnet-$(rnd)"
TEE_TOKEN="tee-$(rnd)"
A() { ENGY_PLUGIN_DIR="$PLUG" "$ENGYCTL" admin --state-dir "$STATE/gateway" "$@"; }
# shellcheck disable=SC2086 # SPEC_FLAGS is empty or one flag and its value
A models put "$MODEL" --spec etc/devnet/model-spec.json --root "$ROOT" --quant "$CKPT_DTYPE" \
	$SPEC_FLAGS > /dev/null || die "models put"
A accounts create devnet-buyer > /dev/null || die "accounts create"
A topup devnet-buyer 10 > /dev/null || die "topup"
KEY=$(A keys create devnet-buyer 2>/dev/null) || die "keys create"
MK_HONEST=$(A miners register "$H_HONEST" --label honest 2>/dev/null) || die "register honest"
MK_HONEST2=$(A miners register "$H_HONEST2" --label honest-2 2>/dev/null) || die "register honest-2"
MK_CHEAT=$(A miners register "$H_CHEAT" --label int4-cheat 2>/dev/null) || die "register cheat"
V=$(tr -d ' \t\n' < etc/devnet/model-spec.json | sed -n 's/.*"toploc_v":\([0-9]*\).*/\1/p')
say "store: model $MODEL (root ${ROOT:0:16}…, weights pinned to ${SPEC_ROOT:0:16}…, TOPLOC v=$V of 128, p=0.99), a buyer with \$10, three miners"

# --- the network ----------------------------------------------------------------
start gateway ENGY_TEE_TOKEN="$TEE_TOKEN"
wait_log gateway "event=ready" 30
HPORT=$(sed -n 's/.*inst=transport-http event=listen addr=127.0.0.1 port=\([0-9]*\).*/\1/p' \
	"$LOGS/gateway.log" | tail -1)
WSPORT=$(sed -n 's/.*event=ws_listen addr=127.0.0.1:\([0-9]*\).*/\1/p' "$LOGS/gateway.log" | tail -1)
[ -n "$HPORT" ] && [ -n "$WSPORT" ] || die "gateway ports: $(tail -5 "$LOGS/gateway.log")"
BASE="http://127.0.0.1:$HPORT"
say "gateway: buyers on $BASE, miners on ws://127.0.0.1:$WSPORT/gw"

start auditor ENGY_TEE_TOKEN="$TEE_TOKEN" ENGY_EPOCH_S="$EPOCH_S" \
	ENGY_AUDITOR_TEE_URL="$BASE/internal/v1/tee/sample" \
	ENGY_MASTER_HOTKEY_FILE="$STATE/keys/master"
wait_log auditor "event=ready" 30
APORT=$(sed -n 's/.*event=listen addr=127.0.0.1 port=\([0-9]*\).*/\1/p' "$LOGS/auditor.log" | head -1)
[ -n "$APORT" ] || die "auditor port: $(tail -5 "$LOGS/auditor.log")"
API="http://127.0.0.1:$APORT/api/subnet/v1"
say "auditor: ${EPOCH_S} s epochs, provider API on $API, master hotkey $MASTER"

start honest GW="ws://127.0.0.1:$WSPORT/gw" MINER_KEY="$MK_HONEST"
wait_log honest "event=admit" 60
start honest-2 GW="ws://127.0.0.1:$WSPORT/gw" MINER_KEY="$MK_HONEST2"
wait_log honest-2 "event=admit" 60
start int4-cheat GW="ws://127.0.0.1:$WSPORT/gw" MINER_KEY="$MK_CHEAT" ENGY_MODEL_ROOT="$ROOT"
wait_log int4-cheat "event=admit" 60
for n in honest honest-2; do
	grep -q "event=miner_prepared .*model_root=$ROOT " "$LOGS/$n.log" ||
		die "the $n miner's root is not $ROOT: $(grep miner_prepared "$LOGS/$n.log")"
done
# a miner's kernel profile, as its config names it (ref when it does not)
profile() {
	local p
	p=$(sed -n 's/^ *kernel_profile *= *"\([a-z0-9-]*\)".*/\1/p' "$RUN/$1.conf" | head -1)
	echo "${p:-ref}"
}
say "miners admitted: honest (canonical $CKPT_DTYPE, $(profile honest) kernels), honest-2 (canonical $CKPT_DTYPE, $(profile honest-2) kernels), int4-cheat (INT4 weights claiming the canonical root)"

# --- onboarding: probes before any buyer ---------------------------------------------
# etc/devnet/gateway.conf: a round of 4 probes per miner; the auditor pulls
# them from the tee and acks its TOPLOC verdicts.  The honest miners
# qualify (on their kernel profiles); the cheat's probe proofs fail, so it
# stays out of buyer traffic.
t_ob=$(date +%s)
wait_log gateway "event=worker_qualified .* miner=$H_HONEST " 300
wait_log gateway "event=worker_qualified .* miner=$H_HONEST2 " 300
wait_log gateway "event=onboard_failed .* miner=$H_CHEAT " 300
grep -q "event=worker_qualified .* miner=$H_CHEAT " "$LOGS/gateway.log" &&
	die "the INT4 cheat qualified: $(grep "miner=$H_CHEAT" "$LOGS/gateway.log" | grep onboard | tail -2)"
say "onboarding ($(($(date +%s) - t_ob)) s): honest and honest-2 qualified; int4-cheat failed its probes ($(grep "event=onboard_failed .* miner=$H_CHEAT " "$LOGS/gateway.log" | head -1 | sed 's/.* reason=//'))"

# --- buyer traffic, inside one epoch ---------------------------------------------------
# The requests and their verdicts must fall in the same epoch: start with
# at least half an epoch left.
now=$(date +%s)
E=$((now / EPOCH_S))
left=$(((E + 1) * EPOCH_S - now))
if [ $left -lt $((EPOCH_S / 2)) ]; then
	say "waiting ${left} s for a fresh epoch"
	sleep $((left + 1))
	E=$(($(date +%s) / EPOCH_S))
fi
say "epoch $E: $NREQ chat completions through the OpenAI API"
if [ -d "$PEERS/openai" ] && command -v node > /dev/null; then
	NODE_PATH="$PEERS" node - "$BASE/v1" "$KEY" "$MODEL" "$NREQ" > "$LOGS/buyer.out" 2>&1 <<'JS' ||
const OpenAI = require('openai').default ?? require('openai');
const [base, key, model, n] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base, apiKey: key, maxRetries: 0 });
const topics = ['the sea', 'a lamp', 'rain', 'chess', 'a bridge', 'bees', 'snow', 'clocks'];
(async () => {
	let okc = 0;
	for (let i = 0; i < +n; i++) {
		const r = await client.chat.completions.create({ model, max_tokens: 24,
			messages: [{ role: 'user', content: `Request ${i}: say something about ${topics[i % topics.length]}.` }] });
		if (r.choices[0].message && r.usage.completion_tokens > 0) okc++;
		process.stderr.write(`buyer: ${r.id} ${r.usage.prompt_tokens}+${r.usage.completion_tokens} tokens\n`);
	}
	console.log(`ok=${okc}`);
})().catch(e => { console.log(`error ${e.status ?? ''} ${e.message}`); process.exit(1); });
JS
		die "buyer traffic: $(tail -3 "$LOGS/buyer.out")"
	BUYER="openai SDK"
else
	okc=0
	for i in $(seq 0 $((NREQ - 1))); do
		# -w: each answer on a line of its own (curl adds no newline),
		# so the count below starts a line.
		curl -sf -w '\n' "$BASE/v1/chat/completions" -H "Authorization: Bearer $KEY" \
			-H 'Content-Type: application/json' \
			-d "{\"model\":\"$MODEL\",\"max_tokens\":24,\"messages\":[{\"role\":\"user\",\"content\":\"Request $i: say something.\"}]}" \
			>> "$LOGS/buyer.out" || die "buyer request $i failed"
		okc=$((okc + 1))
	done
	echo "ok=$okc" >> "$LOGS/buyer.out"
	BUYER="curl"
fi
grep -q "^ok=$NREQ\$" "$LOGS/buyer.out" || die "buyer traffic: $(tail -3 "$LOGS/buyer.out")"
# both honest miners serve: a prompt's prefix picks its worker
# (specs/gateway.md, "Routing"), so a miner no answer reached gets more
# requests, each with a new prefix (at most 40)
SENT=$NREQ
served() { A log tail -n 100000 | grep " worker=$1 status=200 " | grep -vc ' probe$' || true; }
for n in honest honest-2; do
	i=0
	while [ "$(served $n)" = 0 ]; do
		[ $i -lt 40 ] || die "$n: none of $SENT buyer requests reached it"
		curl -sf -o /dev/null "$BASE/v1/chat/completions" -H "Authorization: Bearer $KEY" \
			-H 'Content-Type: application/json' \
			-d "{\"model\":\"$MODEL\",\"max_tokens\":24,\"messages\":[{\"role\":\"user\",\"content\":\"$SENT more: say something.\"}]}" ||
			die "buyer request $SENT failed"
		SENT=$((SENT + 1))
		i=$((i + 1))
	done
done
say "$NREQ answers ($BUYER); the auditor pulls every commitment from the gateway's tee"
[ $SENT = $NREQ ] || say "$((SENT - NREQ)) more (curl), so that each honest miner served"

# every response audited (probes are audited too: buyer verdicts counted)
i=0
while [ "$(grep -c 'event=verdict .* probe=0 ' "$LOGS/auditor.log" || true)" -lt "$SENT" ]; do
	i=$((i + 1))
	[ $i -le 1200 ] || die "verdicts: $(grep -c 'event=verdict .* probe=0 ' "$LOGS/auditor.log" || true) of $SENT"
	sleep 0.1
done
late=$(( $(date +%s) / EPOCH_S ))
[ "$late" = "$E" ] || say "warning: the verdicts ran into epoch $late"
left=$(((E + 1) * EPOCH_S + 3 - $(date +%s)))
say "$SENT verdicts; epoch $E closes in ${left} s"
wait_log auditor "event=epoch_closed epoch=$E " $((left + 60))
curl -sf "$API/epoch/$E" > "$RUN/payload.json" || die "GET $API/epoch/$E"
"$ENGYCTL" epoch verify --ss58 "$MASTER" --netuid 53 --payload "$RUN/payload.json" > /dev/null 2>&1 &&
	VERIFIED="payload verifies" || VERIFIED="PAYLOAD DOES NOT VERIFY"

# --- the light validator: the signed epoch onto the dev chain --------------------------
CHAIN="$STATE/chain/weights.jsonl"
start validator ENGY_SN53_API="http://127.0.0.1:$APORT" ENGY_SN53_MASTER_HOTKEY="$MASTER" \
	ENGY_DEV_CHAIN_HOTKEYS="$STATE/chain/hotkeys.txt"
say "validator: $H_VAL on chain-dev (uids: owner 0, validator 1, honest 2, int4-cheat 3, honest-2 4), provider $API"
i=0
while ! grep -q 'outcome=submitted ' "$LOGS/validator.log"; do
	i=$((i + 1))
	[ $i -le 600 ] || die "validator: nothing submitted after 60 s: $(grep 'outcome=' "$LOGS/validator.log" | tail -2)"
	grep -q 'outcome=failed\|outcome=refused\|event=payload_rejected' "$LOGS/validator.log" &&
		die "validator: $(grep 'outcome=\|event=payload_rejected' "$LOGS/validator.log" | head -2)"
	kill -0 "${PIDS[${#PIDS[@]} - 1]}" 2>/dev/null || die "validator exited: $(tail -3 "$LOGS/validator.log")"
	sleep 0.1
done
grep -q "outcome=submitted epoch=$E source=payload " "$LOGS/validator.log" ||
	die "validator: not epoch $E's payload: $(grep 'outcome=submitted ' "$LOGS/validator.log" | head -1)"
# chain-dev's line: {"block":N,"netuid":53,"hotkey":"5…","uid":U,"ok":true,"uids":[…],"weights":[…]}
LANDED=$(grep -F "\"hotkey\":\"$H_VAL\"" "$CHAIN" 2>/dev/null | grep -F '"ok":true' | head -1)
[ -n "$LANDED" ] || die "no accepted set_weights in $CHAIN"
BLOCK=$(echo "$LANDED" | sed -n 's/.*"block":\([0-9]*\).*/\1/p')
CUIDS=($(echo "$LANDED" | sed -n 's/.*"uids":\[\([0-9,]*\)\].*/\1/p' | tr ',' ' '))
CWS=($(echo "$LANDED" | sed -n 's/.*"weights":\[\([0-9,]*\)\].*/\1/p' | tr ',' ' '))
[ ${#CUIDS[@]} = ${#CWS[@]} ] && [ ${#CUIDS[@]} -gt 0 ] || die "the chain's line: $LANDED"
CH_honest=0 CH_honest_2=0 CH_int4_cheat=0 OTHERS=""
for ((i = 0; i < ${#CUIDS[@]}; i++)); do
	n=${UIDNAMES[${CUIDS[i]}]:-uid${CUIDS[i]}}
	case $n in
	honest | honest-2 | int4-cheat) eval "CH_${n//-/_}=${CWS[i]}" ;;
	*) OTHERS="$OTHERS, $n (uid ${CUIDS[i]}) ${CWS[i]}" ;;
	esac
done

# --- the table -----------------------------------------------------------------------
A log tail -n 100000 > "$RUN/requests.txt"
weight_of() {  # hotkey -> its weight in the signed result_json (0 when absent)
	w=$(sed -n "s/.*\\\\\"weights\\\\\":\\[\\(.*\\)\\].*/\\1/p" "$RUN/payload.json" |
		grep -o "\\\\\"$1\\\\\",[0-9]*" | sed 's/.*,//' | head -1)
	echo "${w:-0}"
}
scheme_col() {  # verdict-lines scheme -> "cheat 3/5", "pass 5/5", "- 0"
	local all c p u
	all=$(grep -c " scheme=$2 " "$1" || true)
	c=$(grep " scheme=$2 " "$1" | grep -c " verdict=cheat " || true)
	p=$(grep " scheme=$2 " "$1" | grep -c " verdict=pass " || true)
	u=$((all - c - p))
	if [ "$all" = 0 ]; then
		echo "- 0"
	elif [ "$c" != 0 ]; then
		echo "cheat $c/$all"
	elif [ "$p" = 0 ]; then
		echo "unproven $u/$all"
	else
		echo "pass $p/$all"
	fi
}
row() {  # name hotkey checkpoint profile
	local req probes ob scores n nall r p99 cheats verd emax mmean tl gm
	req=$(grep " miner=$2 .* status=200 " "$RUN/requests.txt" | grep -vc ' probe$' || true)
	probes=$(grep " miner=$2 .* probe$" "$RUN/requests.txt" | grep -c ' status=200 ' || true)
	ob=$(grep -o "event=worker_qualified .* miner=$2 \|event=onboard_failed .* miner=$2 " \
		"$LOGS/gateway.log" | head -1 | sed 's/event=\([a-z_]*\) .*/\1/')
	case $ob in worker_qualified) ob=qualified ;; onboard_failed) ob=refused ;; *) ob=- ;; esac
	grep "event=verdict .* miner=$2 " "$LOGS/auditor.log" > "$RUN/v-all-$1" || true
	# one column per scheme: its verdicts' worst (cheat, else unproven
	# when no pass, else pass) and how many
	tl=$(scheme_col "$RUN/v-all-$1" toploc)
	gm=$(scheme_col "$RUN/v-all-$1" gemm)
	# the TOPLOC statistics are over its own rows
	grep " scheme=toploc " "$RUN/v-all-$1" > "$RUN/v-$1" || true
	n=$(wc -l < "$RUN/v-$1")
	nall=$(wc -l < "$RUN/v-all-$1")
	scores=$(sed -n 's/.* p99_score=\([0-9.]*\).*/\1/p' "$RUN/v-$1" | sort -n)
	r=$(((99 * n + 99) / 100))
	p99=$(echo "$scores" | sed -n "${r}p")
	[ -z "$p99" ] || p99=$(awk -v x="$p99" 'BEGIN { printf "%.3f", x }')
	# the largest chunk's exponent mismatches and mantissa mean over its verdicts
	emax=$(sed -n 's/.* exp_max=\([0-9]*\).*/\1/p' "$RUN/v-$1" | sort -n | tail -1)
	mmean=$(sed -n 's/.* mant_mean_max=\([0-9.]*\).*/\1/p' "$RUN/v-$1" | sort -n | tail -1)
	cheats=$(grep -c " verdict=cheat " "$RUN/v-all-$1" || true)
	# the cheat gate (specs/scoring.md): cheat verdicts over 1% of those rendered
	verd=pass
	[ $((cheats * 100)) -gt "$nall" ] && verd=cheat
	[ "$n" = 0 ] && verd=unaudited
	printf '%-14s %-11s %-11s %-11s %-9s %-8s %-17s %-8s %-10s %-12s %-12s %s\n' "$1" "$3" "$4" \
		"$ob/$probes" "$req" "$n" "${p99:--}" "${emax:--}" "${mmean:--}" "$tl" "$gm" "$verd"
	eval "VERDICT_${1//-/_}=$verd"
}
WH=$(weight_of "$H_HONEST")
WH2=$(weight_of "$H_HONEST2")
WC=$(weight_of "$H_CHEAT")
if [ "$CH_honest" = "$WH" ] && [ "$CH_honest_2" = "$WH2" ] && [ "$CH_int4_cheat" = "$WC" ] &&
	[ -z "$OTHERS" ]; then
	MATCH="matches the signed epoch"
else
	MATCH="DIFFERS FROM THE SIGNED EPOCH"
fi
{
	echo
	printf '%-14s %-11s %-11s %-11s %-9s %-8s %-17s %-8s %-10s %-12s %-12s %s\n' miner checkpoint \
		profile onboard/prb requests audited "p99 toploc score" "exp max" "mant mean" toploc gemm \
		verdict
	row honest "$H_HONEST" "$CKPT_DTYPE" "$(profile honest)"
	row honest-2 "$H_HONEST2" "$CKPT_DTYPE" "$(profile honest-2)"
	row int4-cheat "$H_CHEAT" int4 "$(profile int4-cheat)"
	echo "epoch $E weights: honest $WH, honest-2 $WH2, int4-cheat $WC   (signed by $MASTER; $VERIFIED)"
	echo "dev chain: set_weights by $H_VAL at block $BLOCK: honest (uid 2) $CH_honest, int4-cheat (uid 3) $CH_int4_cheat, honest-2 (uid 4) $CH_honest_2$OTHERS   ($MATCH)"
	echo "chat with the gateway:"
	echo "  curl -s $BASE/v1/chat/completions -H 'Authorization: Bearer $KEY' -H 'Content-Type: application/json' -d '{\"model\":\"$MODEL\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}'"
	echo "provider API: curl -s $API/epoch/latest"
	echo "pages: http://127.0.0.1:$APORT/epochs  http://127.0.0.1:$APORT/miners  (the provider's)"
	echo "  gateway status: curl -s $BASE/internal/v1/status -H 'Authorization: Bearer $TEE_TOKEN'"
} | tee "$RUN/table.txt"
# onboarding kept the cheat out: no buyer row of it, cheat verdicts on its probes
n=$(grep " miner=$H_CHEAT " "$RUN/requests.txt" | grep -vc ' probe$' || true)
[ "$n" = 0 ] || die "the INT4 cheat reached buyers: $n request-log rows"
grep -q "event=verdict .* miner=$H_CHEAT .* verdict=cheat " "$LOGS/auditor.log" ||
	die "no cheat verdict on the INT4 cheat's probes"
# each scheme on its own: the INT4 cheat caught by both, the honest miners
# pass both (specs/auditor.md, "GEMM audit")
for m in "int4-cheat $H_CHEAT cheat" "honest $H_HONEST pass" "honest-2 $H_HONEST2 pass"; do
	set -- $m
	for s in toploc gemm; do
		c=$(scheme_col "$RUN/v-all-$1" $s)
		[ "${c%% *}" = "$3" ] ||
			die "$1: $s verdicts are $c, not $3; the others (metadata only):
$(grep " scheme=$s " "$RUN/v-all-$1" | grep -v " verdict=$3 " | head -5)"
	done
done
[ "$VERIFIED" = "payload verifies" ] || die "the epoch payload does not verify"
[ "$MATCH" = "matches the signed epoch" ] || die "the dev chain's weights are not the signed epoch's"

if [ -n "${ENGY_DEVNET_THEN:-}" ]; then
	say "running ENGY_DEVNET_THEN"
	DEVNET_PROVIDER="http://127.0.0.1:$APORT" DEVNET_GATEWAY="$BASE" DEVNET_TEE_TOKEN="$TEE_TOKEN" \
		DEVNET_STATE="$STATE" DEVNET_EPOCH="$E" DEVNET_HONEST="$H_HONEST" \
		DEVNET_HONEST2="$H_HONEST2" DEVNET_CHEAT="$H_CHEAT" \
		sh -c "$ENGY_DEVNET_THEN" >&2 || die "ENGY_DEVNET_THEN failed"
fi
if [ $ONCE = 1 ]; then
	exit 0
fi
say "running: logs in $LOGS, the dev chain's set_weights in $CHAIN; Ctrl-C stops everything"
while :; do
	for p in "${PIDS[@]}"; do
		kill -0 "$p" 2>/dev/null || die "a devnet process exited: see $LOGS"
	done
	sleep 1
done
