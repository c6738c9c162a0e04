// SPDX-License-Identifier: MIT
// A stand-in for the engy provider API, for the validator tests: serves
// GET /api/subnet/v1/epoch/latest as a payload signed with @scure/sr25519
// by the master key (mini secret MASTER_SEED, hex), in the shape
// specs/settlement.md §4 fixes, and checks the validators' signed heartbeats
// (POST /api/subnet/v1/validator/heartbeat) with @scure/sr25519 as well.
//
// What it serves comes from a JSON file re-read on every request:
//   {"mode": "good", "netuid": 53, "epoch": 5, "weights": [["5...", 1]]}
// modes: good, version, netuid, malformed (result_json not a string),
// digest, signature (signed by another key), badweights (a signed
// result_json with a weight over 65535), big (Content-Length over 1 MiB),
// chunked (over 1 MiB without a length), down (503), hang (never answers).
// Each heartbeat is appended to HEARTBEATS as {"ok":bool,...}.
//
// usage: node epoch_provider.mjs PEERS_NODE_MODULES CONFIG HEARTBEATS
// prints "port N" once listening on 127.0.0.1.
// Oracle: this file is an independent provider: payloads signed with
// @scure/sr25519 from specs/settlement.md §4.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [peers, configPath, beatsPath] = process.argv.slice(2);
const imp = (p) => import(pathToFileURL(path.join(peers, p)).href);
let sr;
let uc;
try {
	sr = await imp('@scure/sr25519/index.js');
	uc = await imp('@polkadot/util-crypto/index.js');
} catch (e) {
	// A skip (77), or a failure under the test command in CI (lib.sh's
	// skip_or_fail).
	const must = process.env.ENGY_REQUIRE_PEERS === '1';
	console.log(`${must ? 'FAIL' : 'SKIP'}: ${e.message}`);
	process.exit(must ? 1 : 77);
}
await uc.cryptoWaitReady();

const unhex = (h) => new Uint8Array(Buffer.from(h, 'hex'));
const hex = (u) => Buffer.from(u).toString('hex');
const sha256 = (s) => createHash('sha256').update(s).digest('hex');
const master = sr.secretFromSeed(unhex(process.env.MASTER_SEED));
const other = sr.secretFromSeed(new Uint8Array(32).fill(9));
const masterSs58 = uc.encodeAddress(sr.getPublicKey(master), 42);

function payload(cfg) {
	const netuid = cfg.netuid ?? 53;
	const epoch = cfg.epoch ?? 1;
	let weights = cfg.weights ?? [];
	if (cfg.mode === 'badweights')
		weights = [[weights[0]?.[0] ?? 'x', 65536]];
	const resultJson = JSON.stringify({ epoch_index: epoch, netuid, weights });
	let digest = sha256(resultJson);
	const key = cfg.mode === 'signature' ? other : master;
	const msg = `engy-sn53:epoch:v1:${netuid}:${epoch}:${digest}`;
	const signature = hex(sr.sign(key, new TextEncoder().encode(msg)));
	if (cfg.mode === 'digest')
		digest = sha256(resultJson + ' ');
	const p = {
		v: cfg.mode === 'version' ? 2 : 1,
		netuid: cfg.mode === 'netuid' ? netuid + 1 : netuid,
		epoch_index: epoch,
		digest,
		result_json: cfg.mode === 'malformed' ? JSON.parse(resultJson) : resultJson,
		signature,
		weights,
		signed_hotkey: masterSs58,
	};
	return JSON.stringify(p);
}

function heartbeat(req, body, res) {
	const hk = req.headers['x-validator-hotkey'];
	const ts = req.headers['x-validator-ts'];
	const sig = req.headers['x-validator-sig'];
	let ok = false;
	let why = '';
	try {
		const cfg = JSON.parse(fs.readFileSync(configPath, 'utf8'));
		const msg = `engy-sn53:api:v1:${cfg.netuid ?? 53}:POST:${req.url}:${ts}:${sha256(body)}`;
		ok = sr.verify(new TextEncoder().encode(msg), unhex(sig), uc.decodeAddress(hk));
		if (!ok)
			why = 'signature';
		const skew = Math.abs(Date.now() / 1000 - Number(ts));
		if (ok && !(skew < 300)) {
			ok = false;
			why = 'timestamp';
		}
	} catch (e) {
		why = e.message;
	}
	let parsed = null;
	try {
		parsed = JSON.parse(body);
	} catch {
		ok = false;
		why = 'body';
	}
	fs.appendFileSync(beatsPath, JSON.stringify({ ok, why, hotkey: hk, body: parsed }) + '\n');
	res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
	res.end(JSON.stringify({ ok }));
}

const server = http.createServer((req, res) => {
	let body = '';
	req.on('data', (c) => { body += c; });
	req.on('end', () => {
		if (req.method === 'POST' && req.url === '/api/subnet/v1/validator/heartbeat')
			return heartbeat(req, body, res);
		if (req.url !== '/api/subnet/v1/epoch/latest') {
			res.writeHead(404);
			return res.end();
		}
		const cfg = JSON.parse(fs.readFileSync(configPath, 'utf8'));
		switch (cfg.mode) {
		case 'down':
			res.writeHead(503);
			return res.end('maintenance');
		case 'hang':
			return;	/* never answers */
		case 'big':
			res.writeHead(200, { 'content-length': String(2 << 20) });
			return res.end('x'.repeat(2 << 20));
		case 'chunked': {
			res.writeHead(200, { 'content-type': 'application/json' });
			const chunk = ' '.repeat(64 << 10);
			for (let i = 0; i < 24; i++)
				res.write(chunk);
			return res.end(payload({ ...cfg, mode: 'good' }));
		}
		default: {
			const text = payload(cfg);
			res.writeHead(200, { 'content-type': 'application/json',
					     'content-length': Buffer.byteLength(text) });
			return res.end(text);
		}
		}
	});
});
server.listen(0, '127.0.0.1', () => {
	console.log(`port ${server.address().port} master ${masterSs58}`);
});
