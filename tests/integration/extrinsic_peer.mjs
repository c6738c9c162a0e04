// SPDX-License-Identifier: MIT
// engy's signed set_weights extrinsics against @polkadot/types 16 and
// @scure/sr25519 2.3, for the current mainnet extension layout (13
// identifiers, CheckMetadataHash mode 0) and the 2023 runtime's 8: the
// call (a SCALE tuple encoded by @polkadot/types), the signing payload
// (ExtrinsicPayload), the bytes signed (blake2b-256 over 256 bytes), the
// signature with a fixed nonce rng, the whole extrinsic (an
// ExtrinsicSignatureV4 with the signature added) and its hash.  Cases are
// deterministic: immortal and mortal eras of every size class, long and
// empty vectors, large nonces, tips and version keys.
//
// usage: node extrinsic_peer.mjs CHAIN_TOOL PEERS_NODE_MODULES
// Oracle: this file is the independent peer (@polkadot/types,
// @scure/sr25519).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [tool, peers] = process.argv.slice(2);
const imp = (p) => import(pathToFileURL(path.join(peers, p)).href);
let types, util, uc, scure;
try {
	types = await imp('@polkadot/types/index.js');
	util = await imp('@polkadot/util/index.js');
	uc = await imp('@polkadot/util-crypto/index.js');
	scure = await imp('@scure/sr25519/index.js');
} catch (e) {
	// A skip (77), or a failure under the test command in CI (lib.sh's
	// skip_or_fail).
	const must = process.env.ENGY_REQUIRE_PEERS === '1';
	console.log(`${must ? 'FAIL' : 'SKIP'}: ${e.message}`);
	process.exit(must ? 1 : 77);
}
await uc.cryptoWaitReady();

const MAINNET = ['CheckNonZeroSender', 'CheckSpecVersion', 'CheckTxVersion', 'CheckGenesis',
	'CheckMortality', 'CheckNonce', 'CheckWeight', 'ChargeTransactionPayment',
	'SudoTransactionExtension', 'CheckShieldedTxValidity', 'SubtensorTransactionExtension',
	'DrandPriority', 'CheckMetadataHash'];
const OLD = MAINNET.slice(0, 8);

let state = 0x2545f4914f6cdd1dn;
const M64 = (1n << 64n) - 1n;
function rnd64() {
	state ^= state >> 12n;
	state ^= (state << 25n) & M64;
	state ^= state >> 27n;
	return (state * 0x2545f4914f6cdd1dn) & M64;
}
const rint = (n) => Number(rnd64() % BigInt(n));
const rbytes = (n) => Uint8Array.from({ length: n }, () => rint(256));
const hex = (u) => Buffer.from(u).toString('hex');

let passed = 0;
let failed = 0;
function check(cond, what) {
	if (cond) {
		passed++;
		return;
	}
	failed++;
	if (failed <= 20)
		console.error(`FAIL ${what}`);
}

const periods = [0, 4, 16, 64, 128, 1024, 4096, 32768, 65536];
const quiet = console.warn;
console.warn = () => {};
for (let c = 0; c < 60; c++) {
	const ids = c % 5 === 4 ? OLD : MAINNET;
	const registry = new types.TypeRegistry();
	registry.setSignedExtensions(ids);
	const n = c === 0 ? 0 : c % 7 === 0 ? 120 + rint(60) : rint(40);
	const uids = Array.from({ length: n }, (_, i) => i * 3 + rint(3));
	const weights = Array.from({ length: n }, () => rint(65536));
	const netuid = rint(65536);
	const versionKey = c % 3 ? rnd64() : 0n;
	const pallet = rint(256);
	const call = rint(256);
	const mini = rbytes(32);
	const rng = rbytes(32);
	const genesis = rbytes(32);
	const eraHash = rbytes(32);
	const period = periods[c % periods.length];
	const eraBlock = rint(c % 2 ? 4294967295 : 20000000);
	const nonce = c % 4 === 3 ? 4294967295 - rint(9) : rint(100000);
	const tip = c % 6 === 5 ? rnd64() : BigInt(rint(3));
	const spec = rint(1000);
	const tx = rint(5);

	const r = spawnSync(tool, ['extrinsic', `mini=${hex(mini)}`, `rng=${hex(rng)}`,
		`spec=${spec}`, `tx=${tx}`, `genesis=${hex(genesis)}`, `era_period=${period}`,
		`era_block=${eraBlock}`, `era_hash=${hex(eraHash)}`, `nonce=${nonce}`, `tip=${tip}`,
		`pallet=${pallet}`, `call=${call}`, `netuid=${netuid}`, `uids=${uids.join(',')}`,
		`weights=${weights.join(',')}`, `version_key=${versionKey}`, `ids=${ids.join(',')}`],
	{ encoding: 'utf8' });
	if (r.status !== 0) {
		check(false, `case ${c}: chain_tool: ${r.stderr}`);
		continue;
	}
	const got = Object.fromEntries(r.stdout.trim().split('\n').map((l) => l.split(' ')));

	const method = registry.createType('(u8, u8, u16, Vec<u16>, Vec<u16>, u64)',
		[pallet, call, netuid, uids, weights, versionKey]).toU8a();
	check(got.call === hex(method), `case ${c}: call ${got.call} != ${hex(method)}`);
	const era = period === 0 ? registry.createType('ExtrinsicEra', '0x00')
		: registry.createType('ExtrinsicEra', { current: eraBlock, period });
	const pv = {
		method: util.u8aToHex(method), era: era.toHex(), nonce, tip,
		specVersion: spec, transactionVersion: tx, genesisHash: util.u8aToHex(genesis),
		blockHash: util.u8aToHex(period === 0 ? genesis : eraHash), mode: 0, metadataHash: null,
	};
	const payload = registry.createType('ExtrinsicPayload', pv, { version: 4 }).toU8a({ method: true });
	check(got.payload === hex(payload), `case ${c} (${ids.length} ids, period ${period}): payload\n  C  ${got.payload}\n  js ${hex(payload)}`);
	const signed = payload.length > 256 ? uc.blake2AsU8a(payload, 256) : payload;
	check(got.signed === hex(signed), `case ${c}: bytes signed (payload ${payload.length} bytes)`);
	const sk = scure.secretFromSeed(mini);
	const sig = scure.sign(sk, signed, rng);
	check(got.signature === hex(sig), `case ${c}: signature`);
	check(scure.verify(signed, util.hexToU8a('0x' + got.signature), scure.getPublicKey(sk)),
	      `case ${c}: signature does not verify`);
	const es = registry.createType('ExtrinsicSignatureV4');
	es.addSignature(util.u8aToHex(scure.getPublicKey(sk)),
			registry.createType('MultiSignature', { Sr25519: sig }).toU8a(), pv);
	const ext = util.compactAddLength(util.u8aConcat(new Uint8Array([0x84]), es.toU8a(), method));
	check(got.extrinsic === hex(ext), `case ${c}: extrinsic\n  C  ${got.extrinsic}\n  js ${hex(ext)}`);
	check(got.hash === hex(uc.blake2AsU8a(ext, 256)), `case ${c}: transaction hash`);
}
console.warn = quiet;
console.log(`extrinsic_peer: ${passed} checks passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
