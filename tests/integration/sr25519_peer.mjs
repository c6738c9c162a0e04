// SPDX-License-Identifier: MIT
// engy's sr25519, Merlin, SS58, BIP-39, hotkey files and signed epochs
// against independent JavaScript implementations: @scure/sr25519 2.3 and
// @polkadot/util-crypto 14 (which signs through its own @scure/sr25519
// 0.2).  C answers come from tests/integration/sr25519_tool (one request
// per line) and from engyctl itself.
//
// usage: node sr25519_peer.mjs SR25519_TOOL ENGYCTL PEERS_NODE_MODULES TMPDIR
// Oracle: this file is the independent peer (@scure/sr25519,
// @polkadot/util-crypto).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [tool, engyctl, peers, tmp] = process.argv.slice(2);
const imp = (p) => import(pathToFileURL(path.join(peers, p)).href);
const scure = await imp('@scure/sr25519/index.js');
const uc = await imp('@polkadot/util-crypto/index.js');
await uc.cryptoWaitReady();
const { Merlin } = scure.__tests;

let passed = 0;
let failed = 0;
const counts = {};
function check(section, cond, what) {
	counts[section] = (counts[section] || 0) + 1;
	if (cond) {
		passed++;
		return;
	}
	failed++;
	if (failed <= 25)
		console.error(`FAIL [${section}] ${what}`);
}

// Deterministic bytes (xorshift64*), so a failure reproduces.
let state = 0x9e3779b97f4a7c15n;
const M64 = (1n << 64n) - 1n;
function rbytes(n) {
	const out = new Uint8Array(n);
	for (let i = 0; i < n; i++) {
		state ^= state >> 12n;
		state ^= (state << 25n) & M64;
		state ^= state >> 27n;
		out[i] = Number(((state * 0x2545f4914f6cdd1dn) & M64) >> 56n);
	}
	return out;
}
const rint = (n) => (rbytes(4).reduce((a, b) => a * 256 + b, 0)) % n;
const hex = (u) => Buffer.from(u).toString('hex');
const unhex = (h) => new Uint8Array(Buffer.from(h, 'hex'));
const hx = (u) => (u.length ? hex(u) : '-');
const utf8 = (s) => new TextEncoder().encode(s);
const eq = (a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;
const safe = (f) => {
	try {
		return f();
	} catch {
		return false;
	}
};

// One run of the C driver for a list of request lines.
function ask(lines) {
	const r = spawnSync(tool, [], { input: lines.join('\n') + '\n', maxBuffer: 1 << 28 });
	if (r.status !== 0)
		throw new Error(`sr25519_tool exited ${r.status}: ${r.stderr}`);
	const out = r.stdout.toString().split('\n');
	out.pop();
	if (out.length !== lines.length)
		throw new Error(`sr25519_tool answered ${out.length} of ${lines.length} lines`);
	return out;
}

function run(args, expectStatus) {
	const r = spawnSync(engyctl, args, { encoding: 'utf8' });
	if (expectStatus !== undefined && r.status !== expectStatus)
		throw new Error(`engyctl ${args.join(' ')}: exit ${r.status}, wanted ${expectStatus}: ${r.stderr}`);
	return r;
}

const N = 2n ** 252n + 27742317777372353535851937790883648493n;
const leToBig = (u) => u.reduceRight((a, b) => (a << 8n) | BigInt(b), 0n);
const bigToLe = (x, n) => Uint8Array.from({ length: n }, (_, i) => Number((x >> BigInt(8 * i)) & 0xffn));
// schnorrkel's SecretKey::to_bytes() from polkadot-js's ed25519 form.
const rawFromEd = (ed) => new Uint8Array([...bigToLe(leToBig(ed.subarray(0, 32)) >> 3n, 32), ...ed.subarray(32)]);

const dev = unhex('fac7959dbfe72f052e5a0c3c8d6530f202b02fd8f9f5ca3580ec8deb7797479e');
const seeds = [dev, new Uint8Array(32), new Uint8Array(32).fill(255)];
for (let i = 0; i < 61; i++)
	seeds.push(rbytes(32));

// --- keys: C derivation = both peers' --------------------------------------
{
	const ans = ask(seeds.map((s) => `pair ${hex(s)}`));
	seeds.forEach((s, i) => {
		const [pub, ss58, raw, ed] = ans[i].split(' ');
		const pair = uc.sr25519PairFromSeed(s);
		const sk = scure.secretFromSeed(s);
		check('keys', pub === hex(pair.publicKey), `seed ${hex(s)}: pub ${pub}`);
		check('keys', pub === hex(scure.getPublicKey(sk)), `seed ${hex(s)}: scure pub`);
		check('keys', ss58 === uc.encodeAddress(pair.publicKey, 42), `seed ${hex(s)}: ss58 ${ss58}`);
		check('keys', ed === hex(sk) && ed === hex(pair.secretKey), `seed ${hex(s)}: ed25519-form secret`);
		check('keys', raw === hex(rawFromEd(sk)), `seed ${hex(s)}: schnorrkel-form secret`);
	});
}

// --- uniform expansion: C = schnorrkel's formula on the peer's Merlin -------
{
	const us = seeds.slice(1, 21);
	const ans = ask(us.map((s) => `pairu ${hex(s)}`));
	us.forEach((s, i) => {
		const [pub, secret] = ans[i].split(' ');
		const t = new Merlin('ExpandSecretKeys');
		t.appendMessage('mini', s);
		const k = leToBig(t.challengeBytes('sk', 64)) % N;
		const nonce = t.challengeBytes('no', 32);
		check('uniform', secret === hex(bigToLe(k, 32)) + hex(nonce), `seed ${hex(s)}: secret`);
		const ed = new Uint8Array([...bigToLe((k << 3n) & ((1n << 256n) - 1n), 32), ...nonce]);
		check('uniform', pub === hex(scure.getPublicKey(ed)), `seed ${hex(s)}: pub`);
	});
}

// --- signatures ------------------------------------------------------------
const lengths = [0, 1, 2, 31, 32, 33, 64, 165, 166, 167, 255, 256, 257, 332, 1000, 5000, 70000];
const cases = [];
for (let i = 0; i < 200; i++) {
	const len = i < lengths.length ? lengths[i] : rint(i % 16 === 0 ? 3000 : 400);
	cases.push({ seed: seeds[i % seeds.length], msg: rbytes(len), rng: rbytes(32) });
}
{
	// C with a fixed nonce-rng = @scure/sr25519 byte for byte, from the seed
	// and from the peer's own secret key bytes.
	const lines = [];
	for (const c of cases) {
		c.sk = scure.secretFromSeed(c.seed);
		c.pub = scure.getPublicKey(c.sk);
		lines.push(`sign ${hex(c.seed)} ${hx(c.msg)} ${hex(c.rng)}`);
		lines.push(`signsk ${hex(c.sk)} ${hx(c.msg)} ${hex(c.rng)}`);
	}
	const ans = ask(lines);
	cases.forEach((c, i) => {
		const want = hex(scure.sign(c.sk, c.msg, c.rng));
		c.csig = ans[2 * i];
		check('sign=scure', c.csig === want, `len ${c.msg.length}: C ${c.csig} scure ${want}`);
		check('sign=scure', ans[2 * i + 1] === want, `len ${c.msg.length}: from secret bytes`);
		const sig = unhex(c.csig);
		check('C->peer', uc.sr25519Verify(c.msg, sig, c.pub) === true, `polkadot rejects C sig, len ${c.msg.length}`);
		check('C->peer', safe(() => scure.verify(c.msg, sig, c.pub)) === true, `scure rejects C sig, len ${c.msg.length}`);
		// Tampered: one message bit, one signature byte.
		if (c.msg.length) {
			const m = Uint8Array.from(c.msg);
			m[rint(m.length)] ^= 1 << rint(8);
			check('tamper', safe(() => uc.sr25519Verify(m, sig, c.pub)) === false, `polkadot accepts a tampered message`);
		}
		const s2 = Uint8Array.from(sig);
		s2[rint(64)] ^= 1 << rint(8);
		check('tamper', safe(() => scure.verify(c.msg, s2, c.pub)) === false, `scure accepts a tampered signature`);
	});
	// signatureVerify takes the SS58 address, as an operator would.
	for (const c of cases.slice(0, 40)) {
		const r = uc.signatureVerify(c.msg, unhex(c.csig), uc.encodeAddress(c.pub, 42));
		check('C->peer', r.isValid && r.crypto === 'sr25519', `signatureVerify, len ${c.msg.length}`);
	}
}
{
	// Peer signatures (their own random nonces) verify in C; tampered ones do not.
	const lines = [];
	const want = [];
	for (const c of cases) {
		const pair = uc.sr25519PairFromSeed(c.seed);
		const psig = uc.sr25519Sign(c.msg, pair);
		const ssig = scure.sign(c.sk, c.msg);
		lines.push(`verify ${hex(c.pub)} ${hx(c.msg)} ${hex(psig)}`);
		want.push(true);
		lines.push(`verify ${hex(c.pub)} ${hx(c.msg)} ${hex(ssig)}`);
		want.push(true);
		if (c.msg.length) {
			const m = Uint8Array.from(c.msg);
			m[rint(m.length)] ^= 1 << rint(8);
			lines.push(`verify ${hex(c.pub)} ${hx(m)} ${hex(psig)}`);
			want.push(false);
		}
		const s2 = Uint8Array.from(ssig);
		s2[rint(64)] ^= 1 << rint(8);
		lines.push(`verify ${hex(c.pub)} ${hx(c.msg)} ${hex(s2)}`);
		want.push(false);
		// Someone else's key.
		lines.push(`verify ${hex(scure.getPublicKey(scure.secretFromSeed(rbytes(32))))} ${hx(c.msg)} ${hex(ssig)}`);
		want.push(false);
	}
	const ans = ask(lines);
	ans.forEach((a, i) => {
		const sect = want[i] ? 'peer->C' : 'tamper';
		check(sect, (a === '0') === want[i], `${lines[i].slice(0, 90)}...: C answered ${a}`);
	});
}

// --- SS58 ------------------------------------------------------------------
{
	const prefixes = [0, 1, 2, 5, 42, 63, 64, 65, 255, 256, 1000, 4096, 12345, 16383];
	const items = [];
	for (const p of prefixes)
		for (let i = 0; i < 5; i++)
			items.push({ p, pub: i === 0 ? new Uint8Array(32) : rbytes(32) });
	const ans = ask(items.map((t) => `ss58 ${hex(t.pub)} ${t.p}`));
	const back = ask(ans.map((a) => `unss58 ${a}`));
	items.forEach((t, i) => {
		check('ss58', ans[i] === uc.encodeAddress(t.pub, t.p), `prefix ${t.p}: ${ans[i]}`);
		check('ss58', back[i] === `${t.p} ${hex(t.pub)}`, `decode ${ans[i]}: ${back[i]}`);
		check('ss58', eq(safe(() => uc.decodeAddress(ans[i])) || [], t.pub), `polkadot decodes ${ans[i]}`);
	});
	// One character changed: both refuse (checksum, alphabet or length).
	const alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0OIl';
	const bad = [];
	for (let i = 0; i < 60; i++) {
		const a = uc.encodeAddress(rbytes(32), 42);
		const at = 1 + rint(a.length - 1);
		let c;
		do
			c = alphabet[rint(alphabet.length)];
		while (c === a[at]);
		bad.push(a.slice(0, at) + c + a.slice(at + 1));
	}
	bad.push('', '5', uc.encodeAddress(rbytes(32), 42).slice(0, -1));
	const bans = ask(bad.map((a) => `unss58 ${a || '-'}`));
	bad.forEach((a, i) => {
		check('ss58-bad', bans[i].startsWith('ERR'), `C accepts ${a}`);
		check('ss58-bad', safe(() => uc.decodeAddress(a)) === false, `polkadot accepts ${a}`);
	});
}

// --- Merlin transcripts, crossing the STROBE rate both ways ------------------
{
	const sizes = [0, 1, 31, 165, 166, 167, 332, 500, 3000];
	const label = () => Array.from(rbytes(rint(20)), (b) => String.fromCharCode(33 + (b % 94))).join('');
	const lines = [];
	const wants = [];
	for (let i = 0; i < 60; i++) {
		const proto = label();
		const t = new Merlin(proto);
		let line = `merlin ${hx(utf8(proto))}`;
		let want = '';
		const ops = 1 + rint(6);
		for (let j = 0; j < ops; j++) {
			const l = label();
			if (rint(2)) {
				const m = rbytes(sizes[rint(sizes.length)]);
				t.appendMessage(l, m);
				line += ` a ${hx(utf8(l))} ${hx(m)}`;
			} else {
				const n = [1, 32, 64, 166, 167, 400][rint(6)];
				want += hex(t.challengeBytes(l, n));
				line += ` c ${hx(utf8(l))} ${n}`;
			}
		}
		lines.push(line);
		wants.push(want || '-');
	}
	ask(lines).forEach((a, i) => check('merlin', a === wants[i], `${lines[i].slice(0, 80)}: ${a.slice(0, 40)}`));
}

// --- BIP-39 -> mini secret ---------------------------------------------------
{
	const phrases = [];
	for (let i = 0; i < 25; i++)
		phrases.push(uc.mnemonicGenerate([12, 15, 18, 21, 24][i % 5]));
	const ans = ask(phrases.map((p) => `mini ${p}`));
	phrases.forEach((p, i) => check('bip39', ans[i] === hex(uc.mnemonicToMiniSecret(p)), `${p}: ${ans[i]}`));
	const bad = phrases.slice(0, 10).map((p) => {
		const w = p.split(' ');
		[w[0], w[1]] = [w[1], w[0]];
		return w.join(' ');
	}).filter((p) => !uc.mnemonicValidate(p));
	ask(bad.map((p) => `mini ${p}`)).forEach((a, i) => check('bip39', a.startsWith('ERR'), `C accepts ${bad[i]}`));
}

// --- hotkey files both ways ---------------------------------------------------
const showKey = (file) => {
	const r = run(['keys', 'show', file], 0);
	const ss58 = /^ss58Address: (\S+)$/m.exec(r.stdout);
	const pub = /^publicKey: 0x([0-9a-f]{64})$/m.exec(r.stdout);
	return { ss58: ss58 && ss58[1], pub: pub && pub[1], out: r.stdout };
};
{
	// Files laid out as btwallet writes them, from the peer's derivation.
	for (let i = 0; i < 6; i++) {
		const phrase = uc.mnemonicGenerate(i % 2 ? 24 : 12);
		const seed = uc.mnemonicToMiniSecret(phrase);
		const pair = uc.sr25519PairFromSeed(seed);
		const fields = {
			accountId: '0x' + hex(pair.publicKey),
			publicKey: '0x' + hex(pair.publicKey),
			privateKey: '0x' + hex(rawFromEd(pair.secretKey)),
			secretPhrase: phrase,
			secretSeed: '0x' + hex(seed),
			ss58Address: uc.encodeAddress(pair.publicKey, 42),
		};
		const keys = Object.keys(fields).sort(() => rint(3) - 1);
		const obj = Object.fromEntries(keys.map((k) => [k, fields[k]]));
		if (i === 5) {
			// Only the polkadot-js secret form and the public key.
			for (const k of Object.keys(obj))
				delete obj[k];
			obj.privateKey = '0x' + hex(pair.secretKey);
			obj.publicKey = fields.publicKey;
		}
		const f = path.join(tmp, `peer_hotkey_${i}`);
		fs.writeFileSync(f, JSON.stringify(obj), { mode: 0o600 });
		const got = showKey(f);
		check('hotkey', got.ss58 === fields.ss58Address, `keys show ${f}: ${got.out}`);
		check('hotkey', got.pub === hex(pair.publicKey), `keys show ${f}: ${got.out}`);
		check('hotkey', got.out.includes(i === 5 ? 'secret: privateKey' : 'secret: secretPhrase'), `keys show ${f}: source`);
	}
	// engyctl's files, read with the peers.
	for (let i = 0; i < 6; i++) {
		const seed = rbytes(32);
		const f = path.join(tmp, `engy_hotkey_${i}`);
		const args = ['keys', 'new', '--out', f];
		if (i < 5)
			args.push('--seed-hex', hex(seed));
		const r = run(args, 0);
		const j = JSON.parse(fs.readFileSync(f, 'utf8'));
		const s = i < 5 ? seed : unhex(j.secretSeed.slice(2));
		const pair = uc.sr25519PairFromSeed(s);
		check('hotkey', (fs.statSync(f).mode & 0o777) === 0o600, `${f}: mode`);
		check('hotkey', j.secretSeed === '0x' + hex(s), `${f}: secretSeed`);
		check('hotkey', j.publicKey === '0x' + hex(pair.publicKey) && j.accountId === j.publicKey, `${f}: publicKey`);
		check('hotkey', j.ss58Address === uc.encodeAddress(pair.publicKey, 42), `${f}: ss58Address`);
		check('hotkey', j.privateKey === '0x' + hex(rawFromEd(pair.secretKey)), `${f}: privateKey`);
		check('hotkey', r.stdout.includes(`ss58Address: ${j.ss58Address}`), `keys new printed ${r.stdout}`);
		check('hotkey', !r.stdout.includes(hex(s)) && !r.stderr.includes(hex(s)), `keys new printed the seed`);
	}
}

// --- the signed epoch, end to end ---------------------------------------------
{
	const seed = rbytes(32);
	const hk = path.join(tmp, 'master');
	run(['keys', 'new', '--out', hk, '--seed-hex', hex(seed)], 0);
	const sk = scure.secretFromSeed(seed);
	const pub = scure.getPublicKey(sk);
	const addr = uc.encodeAddress(pub, 42);
	for (let i = 0; i < 5; i++) {
		const epoch = [0, 1, 105, 9007199254740991, 123456][i];
		const netuid = i % 3 ? 53 : 7;
		const weights = Array.from({ length: rint(5) }, () => [uc.encodeAddress(rbytes(32), 42), rint(65536)]);
		// Non-ASCII and spacing: the signature is over the file's exact bytes.
		const rj = `{"epoch_index": ${epoch},"netuid":${netuid},"weights":${JSON.stringify(weights)},"note":"é ✓ ${i}"}`;
		const f = path.join(tmp, `rj_${i}.json`);
		fs.writeFileSync(f, rj);
		const digest = createHash('sha256').update(fs.readFileSync(f)).digest('hex');
		const msg = `engy-sn53:epoch:v1:${netuid}:${epoch}:${digest}`;
		const base = ['--netuid', String(netuid), '--epoch', String(epoch)];

		const sig = run(['epoch', 'sign', '--hotkey', hk, ...base, f], 0).stdout.trim();
		check('epoch', /^[0-9a-f]{128}$/.test(sig), `epoch sign printed ${sig}`);
		check('epoch', uc.signatureVerify(msg, unhex(sig), addr).isValid, `polkadot rejects the epoch signature over ${msg}`);
		check('epoch', scure.verify(utf8(msg), unhex(sig), pub), `scure rejects the epoch signature`);
		const other = `engy-sn53:epoch:v1:${netuid}:${epoch + 1}:${digest}`;
		check('epoch', uc.signatureVerify(other, unhex(sig), addr).isValid === false, `signature also valid for ${other}`);

		const psig = hex(scure.sign(sk, utf8(msg)));
		check('epoch', run(['epoch', 'verify', '--ss58', addr, ...base, '--sig', psig, f]).status === 0, `C rejects the peer's epoch signature`);
		check('epoch', run(['epoch', 'verify', '--ss58', addr, '--netuid', String(netuid), '--epoch', String(epoch - 1 < 0 ? 1 : epoch - 1), '--sig', psig, f]).status === 1, `C accepts another epoch`);
		const g = path.join(tmp, `rj_${i}_edited.json`);
		fs.writeFileSync(g, rj.replace('✓', '✗'));
		check('epoch', run(['epoch', 'verify', '--ss58', addr, ...base, '--sig', psig, g]).status === 1, `C accepts an edited result_json`);

		// The published payload, both ways.
		const p = JSON.parse(run(['epoch', 'sign', '--hotkey', hk, ...base, '--payload', f], 0).stdout);
		check('payload', p.v === 1 && p.netuid === netuid && p.epoch_index === epoch, `payload header ${JSON.stringify(p).slice(0, 80)}`);
		check('payload', p.result_json === rj && p.digest === digest, `payload result_json/digest`);
		check('payload', uc.signatureVerify(msg, unhex(p.signature), addr).isValid, `payload signature`);
		check('payload', p.signed_hotkey === addr && JSON.stringify(p.weights) === JSON.stringify(weights), `payload display fields`);
		const mine = { v: 1, netuid, epoch_index: epoch, digest, result_json: rj, signature: psig, weights: [], signed_hotkey: 'x' };
		const pf = path.join(tmp, `payload_${i}.json`);
		fs.writeFileSync(pf, JSON.stringify(mine));
		const ok = run(['epoch', 'verify', '--ss58', addr, '--netuid', String(netuid), '--payload', pf]);
		check('payload', ok.status === 0 && ok.stdout.includes(digest), `C rejects the peer's payload: ${ok.stderr}`);
		for (const [field, value, reason] of [['digest', digest.replace(/^./, (c) => (c === '0' ? '1' : '0')), 'digest'],
			['signature', hex(scure.sign(scure.secretFromSeed(rbytes(32)), utf8(msg))), 'signature'],
			['v', 2, 'version']]) {
			fs.writeFileSync(pf, JSON.stringify({ ...mine, [field]: value }));
			const r = run(['epoch', 'verify', '--ss58', addr, '--netuid', String(netuid), '--payload', pf]);
			check('payload', r.status === 1 && r.stderr.includes(`(${reason})`), `bad ${field}: ${r.status} ${r.stderr}`);
		}
	}
}

for (const [k, v] of Object.entries(counts))
	console.log(`  ${k}: ${v} checks`);
console.log(`sr25519 peer: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
