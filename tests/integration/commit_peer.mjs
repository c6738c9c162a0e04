// SPDX-License-Identifier: MIT
// The CRv3 commit extrinsic's call, built by engy's metadata parser
// (chain_tool commit) against the runtime metadata v14 of subtensor spec
// 219 (mainnet) and 224 (testnet) that @bitgo/sdk-coin-tao 1.16.4 ships,
// decoded and re-encoded by @polkadot/types against the same metadata:
// byte for byte.  The committed bytes are a real timelock ciphertext of
// engy's payload (tlock_tool), which opens with drand quicknet's published
// pulse to exactly the uids, weights and version key given, as
// @polkadot/types decodes the runtime's CRv3 payload struct.
// The call is then signed into an extrinsic the way chain-subtensor's
// commit path does it (chain_tool extrinsic call_hex=, the runtime's own
// signed extensions from the metadata), decoded and re-encoded by
// @polkadot/types against the same metadata, its signature verified by
// @scure/sr25519.
// Expected values: @polkadot/types, the bitgo metadata, the drand pulse.
//   node commit_peer.mjs CHAIN_TOOL TLOCK_TOOL RESOURCES PEERS QUICKNET_TXT TMPDIR
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [chainTool, tlockTool, resources, peers, quicknet, tmp] = process.argv.slice(2);
const require = createRequire(path.join(peers, 'x.js'));
const { TypeRegistry, Metadata } = require('@polkadot/types');
const scure = await import(pathToFileURL(path.join(peers, '@scure/sr25519/index.js')).href);
let nOk = 0;
const ok = (what) => console.log(`ok ${++nOk} - ${what}`);
const assert = (c, what) => { if (!c) throw new Error(what); };

const pulses = readFileSync(quicknet, 'utf8').split('\n').filter((l) => l.startsWith('round '))
  .map((l) => l.split(' ')).map(([, r, s]) => [Number(r), s]);
const pk = readFileSync(quicknet, 'utf8').split('\n').find((l) => l.startsWith('pk ')).split(' ')[1];
const tlock = (lines) => spawnSync(tlockTool, { input: lines.join('\n') + '\n', encoding: 'utf8' })
  .stdout.trim().split('\n');
const tool = (...args) => {
  const r = spawnSync(chainTool, args, { encoding: 'utf8' });
  return Object.fromEntries(r.stdout.trim().split('\n').map((l) => [l.split(' ')[0], l.slice(l.indexOf(' ') + 1)]));
};

for (const [net, spec] of [['mainnet', 219], ['testnet', 224]]) {
  const src = readFileSync(path.join(resources, `${net}.js`), 'utf8');
  const hex = src.match(/metadata: '(0x[0-9a-f]+)'/)[1];
  assert(Number(src.match(/specVersion: '?(\d+)/)[1]) === spec, `${net}: spec ${spec}`);
  const file = path.join(tmp, `${net}.meta`);
  writeFileSync(file, hex);
  const registry = new TypeRegistry();
  const md = new Metadata(registry, hex);
  registry.setMetadata(md);
  const pallet = md.asLatest.pallets.find((p) => p.name.toString() === 'SubtensorModule');
  const variant = registry.lookup.getSiType(pallet.calls.unwrap().type).def.asVariant.variants
    .find((v) => v.name.toString() === 'commit_crv3_weights');
  const index = [pallet.index.toNumber(), variant.index.toNumber()];

  const [round, sig] = pulses[0];
  const uids = [0, 1, 17, 255, 4095], weights = [65535, 0, 12, 40000, 7];
  const version_key = 2003n;
  for (const netuid of [53, 0, 65535]) {
    const payload = tool('payload', 'version=3', `hotkey=${'ab'.repeat(32)}`, `uids=${uids}`,
      `weights=${weights}`, `version_key=${version_key}`).payload;
    const [ct] = tlock([`encrypt ${pk} ${round} ${payload}`]);
    assert(/^[0-9a-f]+$/.test(ct), `tlock_tool: ${ct}`);
    const out = tool('commit', file, 'version=0', `netuid=${netuid}`, `round=${round}`, `commit=${ct}`);
    assert(out.name === 'commit_crv3_weights', `${net}: ${JSON.stringify(out)}`);
    const call = registry.createType('Call', '0x' + out.call);
    assert(call.section === 'subtensorModule' && call.method === 'commitCrv3Weights', `${net}: ${call.section}.${call.method}`);
    assert(call.callIndex[0] === index[0] && call.callIndex[1] === index[1], `${net}: call index ${call.callIndex}`);
    assert(call.args[0].toNumber() === netuid, 'netuid');
    assert(call.args[1].toHex() === '0x' + ct, 'commit bytes');
    assert(call.args[2].toString() === String(round), 'reveal_round');
    const again = registry.findMetaCall(call.callIndex)(netuid, '0x' + ct, round);
    assert(again.toHex() === '0x' + out.call, `${net}: @polkadot/types encodes ${again.toHex().slice(0, 40)}...`);
    // What the runtime does at the reveal: open with the pulse, decode
    // its CRv3 payload struct.
    const [plain] = tlock([`decrypt ${sig} ${call.args[1].toHex().slice(2)}`]);
    const p = registry.createType('(Vec<u16>, Vec<u16>, u64)', '0x' + plain);
    assert(JSON.stringify(p[0].toJSON()) === JSON.stringify(uids), 'uids');
    assert(JSON.stringify(p[1].toJSON()) === JSON.stringify(weights), 'weights');
    assert(p[2].toBigInt() === version_key, 'version_key');
    assert(p.toHex() === '0x' + plain, 'payload bytes');
  }
  ok(`${net} (spec ${spec}): commit_crv3_weights ${index} built by engy, decoded and re-encoded byte for byte by @polkadot/types; its commit opens to the payload`);

  // The signed commit extrinsic: the call wrapped as chain-subtensor wraps
  // it, with this runtime's signed extensions read from its metadata.
  {
    const x = md.asLatest.extrinsic;
    const ids = (x.signedExtensions ?? x.transactionExtensions).map((e) => e.identifier.toString());
    const payload = tool('payload', 'version=3', `hotkey=${'ab'.repeat(32)}`, 'uids=1,2',
      'weights=43690,21845', 'version_key=0').payload;
    const [ct] = tlock([`encrypt ${pk} ${round} ${payload}`]);
    const c = tool('commit', file, 'version=0', 'netuid=53', `round=${round}`, `commit=${ct}`);
    const mini = '11'.repeat(32), genesis = '33'.repeat(32), eraHash = '44'.repeat(32);
    const r = spawnSync(chainTool, ['extrinsic', `mini=${mini}`, `rng=${'22'.repeat(32)}`,
      `spec=${spec}`, 'tx=1', `genesis=${genesis}`, 'era_period=64', 'era_block=4000000',
      `era_hash=${eraHash}`, 'nonce=7', 'tip=0', 'pallet=0', 'call=0', 'netuid=0', 'uids=',
      'weights=', 'version_key=0', 'ids=', `meta=${file}`, `call_hex=${c.call}`], { encoding: 'utf8' });
    assert(r.status === 0, `${net}: chain_tool extrinsic: ${r.stderr}`);
    const got = Object.fromEntries(r.stdout.trim().split('\n').map((l) => l.split(' ')));
    assert(got.call === c.call, `${net}: the call signed is the commit call`);
    const ext = registry.createType('Extrinsic', '0x' + got.extrinsic);
    assert(ext.isSigned, `${net}: not signed`);
    assert(ext.method.section === 'subtensorModule' && ext.method.method === 'commitCrv3Weights',
      `${net}: ${ext.method.section}.${ext.method.method}`);
    assert(ext.method.toHex() === '0x' + c.call, `${net}: method bytes`);
    assert(ext.method.args[1].toHex() === '0x' + ct, `${net}: the commit bytes`);
    assert(Buffer.from(ext.signer.toU8a()).toString('hex').endsWith(got.public), `${net}: signer`);
    assert(ext.nonce.toNumber() === 7 && ext.tip.toNumber() === 0, `${net}: nonce, tip`);
    assert(ext.era.asMortalEra.period.toNumber() === 64, `${net}: era`);
    assert(ext.toHex() === '0x' + got.extrinsic, `${net}: @polkadot/types re-encodes the extrinsic`);
    const pl = registry.createType('ExtrinsicPayload', {
      method: '0x' + c.call, era: ext.era, nonce: 7, tip: 0, specVersion: spec,
      transactionVersion: 1, genesisHash: '0x' + genesis, blockHash: '0x' + eraHash,
      mode: 0, metadataHash: null,
    }, { version: 4 }).toU8a({ method: true });
    assert(Buffer.from(pl).toString('hex') === got.payload, `${net}: the signing payload`);
    const signed = Buffer.from(got.signed, 'hex');
    assert(scure.verify(signed, Buffer.from(got.signature, 'hex'), Buffer.from(got.public, 'hex')),
      `${net}: the signature does not verify`);
    ok(`${net}: the signed commit extrinsic (${ids.length} signed extensions from the metadata) decodes and re-encodes byte for byte; its signature verifies`);
  }

  // Bad input: the version this runtime does not have, an unknown version.
  let out = tool('commit', file, 'version=4', 'netuid=1', 'round=5', 'commit=00');
  assert(/no SubtensorModule.commit_timelocked_weights/.test(out.error || ''), JSON.stringify(out));
  out = tool('commit', file, 'version=9', 'netuid=1', 'round=5', 'commit=00');
  assert(/version 9; engy speaks 3 and 4: nothing submitted/.test(out.error || ''), JSON.stringify(out));
  ok(`${net}: version 4 (absent here) and version 9 refused with the reason`);
}

// The CRv4 payload: the runtime's struct (hotkey, uids, values, version_key).
const hk = 'cd'.repeat(32);
const p4 = tool('payload', 'version=4', `hotkey=${hk}`, 'uids=3,9', 'weights=1,65535', 'version_key=7').payload;
const registry = new TypeRegistry();
const s = registry.createType('(Vec<u8>, Vec<u16>, Vec<u16>, u64)', '0x' + p4);
assert(s[0].toHex() === '0x' + hk && JSON.stringify(s[1].toJSON()) === '[3,9]' &&
  JSON.stringify(s[2].toJSON()) === '[1,65535]' && s[3].toNumber() === 7 && s.toHex() === '0x' + p4, 'v4 payload');
const bad = tool('payload', 'version=5', `hotkey=${hk}`, 'uids=1', 'weights=1', 'version_key=1');
assert(/version 5 is not one engy speaks/.test(bad.error || ''), JSON.stringify(bad));
ok('CRv4 payload is (hotkey Vec<u8>, uids Vec<u16>, values Vec<u16>, version_key u64); version 5 refused');
console.log(`${nOk} passed, 0 failed`);
