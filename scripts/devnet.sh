#!/usr/bin/env bash
# engy's main job on one machine: a local devnet on 127.0.0.1 (gateway, an
# honest miner, an INT4-cheat miner and an auditor on the CPU reference
# model, buyer traffic through the OpenAI API, verdicts and epoch weights).
#
# The devnet needs the gateway, miner, reference-engine and auditor roles,
# which are being built; until they land this command builds engy, shows
# which plugins of each role exist, and says what is still missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x build-main/engyd/engyd ]; then
  echo "devnet: building engy first (scripts/test.sh installs dependencies)"
  ENGY_TEST_QUICK=1 ./scripts/test.sh >/dev/null
fi
plugins=$(mktemp -d)
trap 'rm -rf "$plugins"' EXIT
for so in build-main/plugins/*/.libs/*.so; do
  [ -f "$so" ] && ln -sf "$PWD/$so" "$plugins/"
done
ready=1
for conf in etc/gateway.conf etc/miner.conf etc/auditor.conf; do
  if out=$(ENGY_PLUGIN_DIR="$plugins" build-main/engyd/engyd -t -c "$conf" 2>&1); then
    echo "devnet: $conf ready"
  else
    ready=0
    echo "devnet: $conf not ready yet:"
    echo "$out" | grep "not found" | sed 's/^/  /'
  fi
done
if [ $ready = 0 ]; then
  echo "devnet: the local devnet arrives with the gateway, miner, reference-engine and auditor work; nothing was started."
  exit 0
fi
