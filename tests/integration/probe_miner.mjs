// SPDX-License-Identifier: MIT
// A scripted miner for the gateway's onboarding, breaker and tee tests,
// written from specs/protocol.md §2-3 on the npm `ws` package: one leg to the
// gateway, a hello, heartbeats, and every `serve` answered (streamed
// chunks, then the response with a commitment) the way the current mode
// says.  The mode is re-read from MODE_FILE on every serve, so a test
// can turn a good miner bad while it runs.
//
// usage: node probe_miner.mjs PEERS_DIR URL OUT_FILE
// environment:
//   PM_KEY, PM_MODEL, PM_NAME (worker_name), PM_ROOT (model_root hex)
//   PM_MODE        good | error | flaky | slow | slowtpot | hang | norooted
//   PM_MODE_FILE   a file holding the mode (overrides PM_MODE when present)
//   PM_DELAY_MS    time to the first chunk when good (5)
//   PM_SLOW_MS     time to the first chunk when slow (600)
//   PM_TPOT_MS     gap between chunks when slowtpot (150)
//   PM_TOKENS      completion tokens of an answer (4)
//   PM_MARK_IDS    comma-separated ids put first in prompt_ids (a marker
//                  the zero-retention checks look for)
//   PM_PAD_BYTES   a "pad" string of this many bytes in every commitment
//                  (a miner bloating the proof tee; 0)
//   PM_OPEN        how a `gemm_open` is answered (specs/protocol.md §2):
//                  echo (an opening {"echo": the challenge, "request_id"}),
//                  silent, twice (echo twice), foreign (first an opening
//                  for a corr_id never asked, then echo), huge (an opening
//                  of PM_OPEN_BYTES bytes), error (error "not_held"),
//                  ctrl (an error with control characters and quotes),
//                  neither (no opening, no error), close (the leg closes)
//   PM_OPEN_FILE   a file holding that mode (overrides PM_OPEN when present)
//   PM_COMMITMENT_FILE  a file whose JSON is sent as every commitment as it
//                  is (a replay of another miner's)
// Writes one line per event to OUT_FILE: "admitted", "denied REASON",
// "serve CORR KIND MODE set=S" (KIND buyer when the prompt holds BUYER-,
// else probe; S 1 when it holds PROBE-SET-), "cancel CORR", "gemm_open
// CORR REQUEST_ID MODE" (then "gemm_cells CORR layers=L cells=C" when the
// challenge has a cells list: its distinct layers and its cells),
// "closed CODE".  Exits on close.
// Oracle: this file is a scripted miner written from specs/protocol.md on
// the npm ws package (no engy code).
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [peers, url, outFile] = process.argv.slice(2);
if (!outFile) {
	console.error('usage: node probe_miner.mjs PEERS_DIR URL OUT_FILE');
	process.exit(2);
}
const { WebSocket } = await import(pathToFileURL(join(peers, 'ws', 'wrapper.mjs')).href);
const env = process.env;
const num = (v, d) => (v === undefined || v === '' ? d : Number(v));
const out = (line) => appendFileSync(outFile, line + '\n');
const key = env.PM_KEY, model = env.PM_MODEL || 'test-model';
const name = env.PM_NAME || 'pm-0';
const root = env.PM_ROOT || 'ab'.repeat(32);
const tokens = num(env.PM_TOKENS, 4);
const markIds = (env.PM_MARK_IDS || '').split(',').filter((s) => s).map(Number);
const pending = new Map();	// corr_id -> timers
let served = 0;

function mode() {
	const f = env.PM_MODE_FILE;
	if (f && existsSync(f))
		return readFileSync(f, 'utf8').trim();
	return env.PM_MODE || 'good';
}

const ws = new WebSocket(url);
const send = (o) => ws.send(JSON.stringify(o));
const cap = { max_inflight: 8, max_inflight_total: 8, max_input_tokens: 4096,
	max_output_tokens: 512, max_request_s: 60 };

ws.on('open', () => {
	send({ type: 'hello', miner_key: key, model, model_root: root,
		hw: { host: 'probe-miner', cpus: 1, ram_gb: 1, gpu: 'none', gpu_count: 0,
			gpu_mem_gb: 0, gpus: 'none', parallelism: 'none' },
		versions: {}, capacity: cap, worker_name: name, instance_id: name,
		worker_id: Math.random().toString(16).slice(2).padEnd(32, '0') });
	setInterval(() => send({ type: 'heartbeat', inflight: pending.size,
		idle_seconds: 0, capacity: cap }), 2000).unref();
});

function later(corr, ms, fn) {
	const t = setTimeout(() => {
		const list = pending.get(corr);
		if (list)
			list.splice(list.indexOf(t), 1);
		fn();
	}, ms);
	if (!pending.has(corr))
		pending.set(corr, []);
	pending.get(corr).push(t);
}

function answer(corr, req, m) {
	const n = Math.max(1, Math.min(tokens, req.max_tokens || tokens));
	const ids = Array.from({ length: n }, (_, i) => 1000 + i);
	const promptText = JSON.stringify(req.messages || []);
	const promptIds = [...markIds, ...Array.from({ length: 8 }, (_, i) => 10 + i)];
	const commitment = { model_root: m === 'norooted' ? 'cd'.repeat(32) : root,
		output_token_ids: ids,
		toploc: { proofs: ['AAAAAAAAAAA='], topk: 128, decode_batching_size: 32,
			skip_prefill: true, n_tokens: n, prompt_ids: promptIds } };
	if (env.PM_COMMITMENT_FILE)
		Object.assign(commitment, JSON.parse(readFileSync(env.PM_COMMITMENT_FILE, 'utf8')));
	if (num(env.PM_PAD_BYTES, 0) > 0)
		commitment.pad = 'x'.repeat(num(env.PM_PAD_BYTES, 0));
	const text = Array.from({ length: n }, (_, i) => `w${i}`).join(' ');
	send({ type: 'response', corr_id: corr, request_id: req.engy_request_id || corr,
		commitment, output: {
			choices: [{ index: 0, finish_reason: n >= (req.max_tokens || 1e9) ? 'length' : 'stop',
				message: { role: 'assistant', content: text } }],
			usage: { prompt_tokens: Math.max(1, Math.ceil(promptText.length / 4)),
				completion_tokens: n,
				total_tokens: Math.max(1, Math.ceil(promptText.length / 4)) + n } } });
	pending.delete(corr);
}

function serve(f) {
	const corr = f.corr_id, req = f.request || {};
	const m = mode();
	const text = JSON.stringify(req.messages || []);
	const kind = text.includes('BUYER-') ? 'buyer' : 'probe';
	served++;
	out(`serve ${corr} ${kind} ${m} set=${text.includes('PROBE-SET-') ? 1 : 0}`);
	const n = Math.max(1, Math.min(tokens, req.max_tokens || tokens));
	switch (m) {
	case 'hang':
		return;
	case 'error':
		later(corr, num(env.PM_DELAY_MS, 5), () => {
			send({ type: 'response', corr_id: corr, commitment: null, output: {},
				error: 'scripted failure' });
			pending.delete(corr);
		});
		return;
	case 'flaky':
		if (served % 3 === 0) {
			later(corr, 1, () => {
				send({ type: 'response', corr_id: corr, commitment: null, output: {},
					error: 'scripted flake' });
				pending.delete(corr);
			});
			return;
		}
		break;
	default:
		break;
	}
	const first = m === 'slow' ? num(env.PM_SLOW_MS, 600) : num(env.PM_DELAY_MS, 5);
	const gap = m === 'slowtpot' ? num(env.PM_TPOT_MS, 150) : 1;
	later(corr, first, () => {
		send({ type: 'chunk', corr_id: corr, delta: { content: 'w0' } });
		later(corr, gap * (n - 1) + 1, () => answer(corr, req, m));
	});
}

function openMode() {
	const f = env.PM_OPEN_FILE;
	if (f && existsSync(f))
		return readFileSync(f, 'utf8').trim();
	return env.PM_OPEN || 'echo';
}

function gemmOpen(f) {
	const m = openMode();
	out(`gemm_open ${f.corr_id} ${f.request_id} ${m}`);
	const cells = f.challenge && f.challenge.cells;
	if (Array.isArray(cells))
		out(`gemm_cells ${f.corr_id} layers=${new Set(cells.map((c) => Array.isArray(c) ? c[0] : null)).size} cells=${cells.length}`);
	const echo = { type: 'gemm_opening', corr_id: f.corr_id,
		opening: { echo: f.challenge, request_id: f.request_id } };
	switch (m) {
	case 'silent':
		return;
	case 'twice':
		send(echo);
		send({ ...echo, opening: { second: true } });
		return;
	case 'foreign':
		send({ ...echo, corr_id: 'gemm-forged-1', opening: { forged: true } });
		send(echo);
		return;
	case 'huge':
		send({ ...echo, opening: { pad: 'x'.repeat(num(env.PM_OPEN_BYTES, 2 << 20)) } });
		return;
	case 'error':
		send({ type: 'gemm_opening', corr_id: f.corr_id, error: 'not_held' });
		return;
	case 'ctrl':
		send({ type: 'gemm_opening', corr_id: f.corr_id, error: 'a\u0001"b\\c\nd' });
		return;
	case 'neither':
		send({ type: 'gemm_opening', corr_id: f.corr_id });
		return;
	case 'close':
		ws.close(1000, 'scripted');
		return;
	default:
		send(echo);
	}
}

ws.on('message', (data) => {
	let f;
	try {
		f = JSON.parse(data.toString());
	} catch {
		return;
	}
	switch (f.type) {
	case 'admit':
		out('admitted');
		break;
	case 'deny':
		out(`denied ${f.reason}`);
		break;
	case 'serve':
		serve(f);
		break;
	case 'cancel':
		out(`cancel ${f.corr_id}`);
		for (const t of pending.get(f.corr_id) || [])
			clearTimeout(t);
		pending.delete(f.corr_id);
		break;
	case 'ping':
		send({ type: 'heartbeat', inflight: pending.size, idle_seconds: 0, capacity: cap });
		break;
	case 'reconnect':
		ws.close(1000, 'reconnect');
		break;
	case 'gemm_open':
		gemmOpen(f);
		break;
	default:
		break;
	}
});
ws.on('close', (code) => {
	out(`closed ${code}`);
	process.exit(0);
});
ws.on('error', (e) => {
	out(`error ${e.message}`);
	process.exit(1);
});
