// SPDX-License-Identifier: MIT
// engy's BLS12-381 arithmetic (blst, through tlock_tool) against
// @noble/curves over random inputs: a*G1 and b*G2 compressed, e(a*G1, b*G2)
// in arkworks' serialization (the bytes the timelock hashes), and the
// quicknet hash-to-G1 of random rounds.  Expected values: @noble/curves.
//   node tlock_noble.mjs TLOCK_TOOL PEERS N
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [tool, peers, nArg] = process.argv.slice(2);
const N = Number(nArg);
const { bls12_381 } = await import(pathToFileURL(path.join(peers, '@noble/curves/bls12-381.js')).href);
const r = bls12_381.fields.Fr.ORDER;
const hex = (u8) => Buffer.from(u8).toString('hex');
const le48 = (x) => Buffer.from(x.toString(16).padStart(96, '0'), 'hex').reverse().toString('hex');
const gtHex = (f) => [f.c0, f.c1].flatMap((f6) => [f6.c0, f6.c1, f6.c2])
  .flatMap((f2) => [f2.c0, f2.c1]).map(le48).join('');

const child = spawn(tool, [], { stdio: ['pipe', 'pipe', 'inherit'] });
const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
async function ask(line) {
  child.stdin.write(line + '\n');
  const { value } = await lines.next();
  return value;
}

let pairs = 0, rounds = 0;
for (let i = 0; i < N; i++) {
  const a = randomBytes(32), b = randomBytes(32);
  const ai = BigInt('0x' + hex(a)) % r, bi = BigInt('0x' + hex(b)) % r;
  if (ai === 0n || bi === 0n) continue;
  const [p, q, gt] = (await ask(`pair ${hex(a)} ${hex(b)}`)).split(' ');
  const P = bls12_381.G1.Point.BASE.multiply(ai), Q = bls12_381.G2.Point.BASE.multiply(bi);
  if (p !== hex(P.toBytes(true))) throw new Error(`a*G1 differs for a=${hex(a)}`);
  if (q !== hex(Q.toBytes(true))) throw new Error(`b*G2 differs for b=${hex(b)}`);
  // Pairings are the slow part of the peer: every 16th input.
  if (i % 16 === 0) {
    if (gt !== gtHex(bls12_381.pairing(P, Q))) throw new Error(`e(aG1, bG2) differs for a=${hex(a)} b=${hex(b)}`);
    pairs++;
  }
  const round = BigInt('0x' + hex(randomBytes(6)));
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(round);
  
  const m = createHash('sha256').update(msg).digest();
  const H = bls12_381.G1.hashToCurve(m, { DST: 'BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_' });
  if ((await ask(`h2c ${round}`)) !== hex(H.toBytes(true))) throw new Error(`H(round ${round}) differs`);
  rounds++;
}
child.stdin.end();
console.log(`ok - ${N} scalar multiples in G1 and G2, ${pairs} pairings, ${rounds} round hashes agree with @noble/curves`);
