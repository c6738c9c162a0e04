// SPDX-License-Identifier: MIT
// The chain side of chopsticks_chain.sh, through chopsticks' own RPC:
//
//   setup URL NETUID VALIDATOR NOPERMIT N
//       a subnet on the offline runtime with dev_setStorage (chopsticks
//       encodes the values with the runtime's metadata): uids 0 and 3 are
//       the two validator hotkeys given (3 without a validator permit),
//       1 and 2 are A and B, then N more; prints "A ss58", "B ss58",
//       "C ss58" (unregistered) and "X ss58" per extra uid.
//   newblocks URL COUNT       build COUNT empty blocks (dev_newBlock)
//   weights URL NETUID UID    read Weights(netuid, uid) and
//       LastUpdate(netuid)[uid] at the best block, with keys built here
//       from @polkadot/util-crypto's twox128; prints "weights u:v,...",
//       "last_update N" and "block N".
//
// usage: node chopsticks_setup.mjs PEERS_NODE_MODULES COMMAND ARGS...
// Oracle: this file drives the independent chain (chopsticks' own RPC and
// the runtime's metadata).
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [peers, cmd, url, ...args] = process.argv.slice(2);
const imp = (p) => import(pathToFileURL(path.join(peers, p)).href);
const uc = await imp('@polkadot/util-crypto/index.js');
const sr = await imp('@scure/sr25519/index.js');
await uc.cryptoWaitReady();

let id = 0;
async function rpc(method, params) {
	const res = await fetch(url, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
	});
	const j = await res.json();
	if (j.error)
		throw new Error(`${method}: ${JSON.stringify(j.error)}`);
	return j.result;
}

const hex = (u) => Buffer.from(u).toString('hex');
const le16 = (n) => hex(new Uint8Array([n & 255, n >> 8]));
const addr = (seed) => uc.encodeAddress(sr.getPublicKey(sr.secretFromSeed(new Uint8Array(32).fill(seed))), 42);
const prefix = (item) => hex(uc.xxhashAsU8a('SubtensorModule', 128)) + hex(uc.xxhashAsU8a(item, 128));

async function setup() {
	const [netuid, v, noperm, extra] = [Number(args[0]), args[1], args[2], Number(args[3])];
	const hot = [v, addr(11), addr(12), noperm];
	for (let i = 0; i < extra; i++)
		hot.push(addr(100 + i));
	const n = hot.length;
	const permit = hot.map((_, i) => i !== 3);
	await rpc('dev_setStorage', [{
		SubtensorModule: {
			TotalNetworks: 1,
			NetworksAdded: [[[netuid], true]],
			SubnetworkN: [[[netuid], n]],
			Tempo: [[[netuid], 360]],
			MaxAllowedUids: [[[netuid], 4096]],
			MinAllowedWeights: [[[netuid], 1]],
			MaxWeightsLimit: [[[netuid], 65535]],
			WeightsSetRateLimit: [[[netuid], 3]],
			ValidatorPermit: [[[netuid], permit]],
			LastUpdate: [[[netuid], hot.map(() => 1)]],
			Keys: hot.map((h, i) => [[netuid, i], h]),
			Uids: hot.map((h, i) => [[netuid, h], i === 0 ? '0x0000' : i]),
			IsNetworkMember: hot.map((h) => [[h, netuid], true]),
		},
	}]);
	console.log(`A ${hot[1]}`);
	console.log(`B ${hot[2]}`);
	console.log(`C ${addr(13)}`);
	for (let i = 4; i < n; i++)
		console.log(`X ${hot[i]}`);
}

async function weights() {
	const [netuid, uid] = [Number(args[0]), Number(args[1])];
	const head = await rpc('chain_getHeader', []);
	const at = await rpc('chain_getBlockHash', []);
	const w = await rpc('state_getStorage', ['0x' + prefix('Weights') + le16(netuid) + le16(uid), at]);
	const lu = await rpc('state_getStorage', ['0x' + prefix('LastUpdate') + le16(netuid), at]);
	const rows = [];
	if (w) {
		const b = Buffer.from(w.slice(2), 'hex');
		const [len, off] = compact(b, 0);
		for (let i = 0; i < len; i++)
			rows.push(`${b.readUInt16LE(off + 4 * i)}:${b.readUInt16LE(off + 4 * i + 2)}`);
	}
	let last = 'none';
	if (lu) {
		const b = Buffer.from(lu.slice(2), 'hex');
		const [len, off] = compact(b, 0);
		if (uid < len)
			last = b.readBigUInt64LE(off + 8 * uid).toString();
	}
	console.log(`weights ${rows.join(',')}`);
	console.log(`last_update ${last}`);
	console.log(`block ${parseInt(head.number, 16)}`);
}

function compact(b, o) {
	const m = b[o] & 3;
	if (m === 0)
		return [b[o] >> 2, o + 1];
	if (m === 1)
		return [b.readUInt16LE(o) >> 2, o + 2];
	return [b.readUInt32LE(o) >>> 2, o + 4];
}

if (cmd === 'setup')
	await setup();
else if (cmd === 'newblocks')
	await rpc('dev_newBlock', [{ count: Number(args[0]) }]);
else if (cmd === 'weights')
	await weights();
else {
	console.error(`unknown command ${cmd}`);
	process.exit(2);
}
