// SPDX-License-Identifier: MIT
// A scripted miner peer for the gateway tests, on the npm `ws` package and
// written from specs/protocol.md alone: it dials GW, says hello, and answers
// every `serve` the way its MODE says.  Well-behaved modes stand in for a
// miner whose output the test must know exactly (tool calls, reasoning,
// cached tokens); the others misbehave.
//
// usage: node bad_miner.mjs PEERS_DIR GW_URL MODE
//   good     chunks then a response (a tool call when the request has
//            tools, with reasoning and cached tokens)
//   slow     good, one chunk every CHUNK_MS (default 400)
//   garbage  answers a serve with a text frame that is not JSON
//   binary   answers a serve with a binary frame
//   wrongid  answers with a chunk and a response for another corr_id
//   silent   never answers a serve
//   dropmid  two chunks, then the connection drops (no close frame)
//   errresp  an error response
//   mute     no heartbeats, no answer to ping (for the stale check)
//   emptyfirst  empty chunks at once ({"content":""} and {}), then after
//            DELAY_MS (default 300) the answer of `good`
//   emptyonly   an empty chunk every CHUNK_MS, never a token
//   poison   good, but an error response to a request whose last message
//            contains "poison"
//   held     says "held corr=…", sends nothing until the file RELEASE_FILE
//            exists, then "released corr=…" and the answer of `good`
// Environment: MINER_KEY, MODEL, WORKER_NAME, MAX_INFLIGHT (leg share,
// default 8), MAX_TOTAL (max_inflight_total, default MAX_INFLIGHT; "none"
// leaves it out), CHUNKS (default 3), CHUNK_MS (default 5), MARKER (text
// in the completion; MARKER_KB=N: N KiB of x instead), MODEL_ROOT,
// REDIAL=1 (dial again after a close).
// Prints one line per event: "admit", "deny reason=…", "serve corr=…
// stream=… tools=N max_tokens=N", "cancel corr=…", "ping", "reconnect",
// "closed code=…", "done corr=…".  Never exits on its own unless the
// connection is refused.
// Oracle: this file is an oracle, not engy: written from specs/protocol.md
// alone on the npm ws package.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [peers, url, mode] = process.argv.slice(2);
if (!mode) {
	console.error('usage: node bad_miner.mjs PEERS_DIR GW_URL MODE');
	process.exit(2);
}
const { default: WebSocket } = await import(pathToFileURL(join(peers, 'ws', 'wrapper.mjs')).href);
const env = process.env;
const share = Number(env.MAX_INFLIGHT || 8);
const capacity = {
	max_inflight: share,
	max_input_tokens: 100000,
	max_output_tokens: 4096,
	max_request_s: 600,
};
if (env.MAX_TOTAL !== 'none')
	capacity.max_inflight_total = Number(env.MAX_TOTAL || share);
const chunks = Number(env.CHUNKS || 3);
const chunkMs = Number(env.CHUNK_MS || (mode === 'slow' ? 400 : 5));
const marker = env.MARKER || (env.MARKER_KB ? 'x'.repeat(Number(env.MARKER_KB) * 1024) : 'scripted');
const say = (s) => console.log(s);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function hello() {
	return {
		type: 'hello', miner_key: env.MINER_KEY, model: env.MODEL || 'scripted',
		model_root: env.MODEL_ROOT || 'ab'.repeat(32),
		hw: { host: 'peer', cpus: 1, ram_gb: 1, gpu: '', gpu_count: 0, gpu_mem_gb: 0, gpus: '' },
		versions: { peer: 'bad_miner' }, capacity,
		worker_name: env.WORKER_NAME || `peer-${mode}`,
		instance_id: env.WORKER_NAME || `peer-${mode}`,
		worker_id: env.WORKER_ID || Math.random().toString(16).slice(2).padEnd(32, '0'),
		...(env.CONSTRAINTS ? { constraints: env.CONSTRAINTS.split(',') } : {}),
	};
}

// A script's "top": {"n": N, "bad": B}: each piece is one token with
// logprob -0.5 and N alternatives, -1, -2, …; B spoils them: "positive"
// (the first is +0.5), "null" (its logprob is null), "unsorted" (the
// first two swapped), "bigid" (the first's id is 100000).
function top_logprobs(pieces, t) {
	const content = pieces.map((p) => {
		const top = Array.from({ length: t.n }, (_, i) => ({ token: `a${i}`, logprob: -(i + 1), bytes: [97], id: i }));
		if (t.bad === 'positive')
			top[0].logprob = 0.5;
		if (t.bad === 'null')
			top[0].logprob = null;
		if (t.bad === 'unsorted')
			[top[0], top[1]] = [top[1], top[0]];
		if (t.bad === 'bigid')
			top[0].id = 100000;
		return { token: p, logprob: -0.5, bytes: [...Buffer.from(p)], top_logprobs: top };
	});
	return { content, refusal: null };
}

// A request whose last message is "script:JSON" gets that output:
// {"pieces":["text", …], "finish":"stop", "tokens":N, "top":{…}} (the
// pieces as content chunks, N completion tokens; default one per piece;
// top: logprobs with alternatives, see top_logprobs()).
function scripted(req) {
	const msgs = Array.isArray(req.messages) ? req.messages : [];
	const last = msgs.length ? msgs[msgs.length - 1].content : null;
	if (typeof last !== 'string' || !last.startsWith('script:'))
		return null;
	const s = JSON.parse(last.slice(7));
	return {
		pieces: s.pieces.map((p) => ({ content: p })),
		message: { role: 'assistant', content: s.pieces.join('') },
		finish: s.finish || 'stop',
		usage: { prompt_tokens: 11, completion_tokens: s.tokens || s.pieces.length, cached: 0 },
		...(s.top ? { logprobs: top_logprobs(s.pieces, s.top) } : {}),
	};
}

// The scripted output: text in chunks, or a tool call with reasoning.
function output(req) {
	const tools = Array.isArray(req.tools) && req.tools.length > 0;
	const script = scripted(req);
	if (script)
		return script;
	if (tools)
		return {
			pieces: [{ reasoning_content: 'Let me look.' }],
			message: { role: 'assistant', content: '', reasoning_content: 'Let me look.',
				tool_calls: [{ id: 'call_peer1', type: 'function',
					function: { name: 'get_weather', arguments: '{"city":"Paris","days":3}' } }] },
			finish: 'tool_calls', usage: { prompt_tokens: 20, completion_tokens: 12, cached: 5 },
		};
	const words = Array.from({ length: chunks }, (_, i) => (i === 0 ? `${marker}` : ` w${i}`));
	const n = Math.min(chunks, req.max_tokens || chunks);
	return {
		pieces: words.slice(0, n).map((w) => ({ content: w })),
		message: { role: 'assistant', content: words.slice(0, n).join('') },
		finish: n < chunks ? 'length' : 'stop',
		usage: { prompt_tokens: 11, completion_tokens: n, cached: 0 },
	};
}

let ws = null;
const open = new Map();		// corr_id -> { cancelled }

function send(o) {
	if (ws && ws.readyState === WebSocket.OPEN)
		ws.send(typeof o === 'string' ? o : JSON.stringify(o));
}

async function serve(f) {
	const req = f.request || {};
	const st = { cancelled: false };
	open.set(f.corr_id, st);
	say(`serve corr=${f.corr_id} stream=${f.stream} tools=${(req.tools || []).length} ` +
	    `max_tokens=${req.max_tokens} request_id=${req.engy_request_id}`);
	if (mode === 'silent' || mode === 'mute')
		return;
	if (mode === 'emptyonly') {
		while (!st.cancelled && ws.readyState === WebSocket.OPEN) {
			send({ type: 'chunk', corr_id: f.corr_id, delta: { content: '' } });
			send({ type: 'chunk', corr_id: f.corr_id, delta: {} });
			await sleep(chunkMs);
		}
		return;
	}
	if (mode === 'held') {
		const { existsSync } = await import('node:fs');
		say(`held corr=${f.corr_id}`);
		while (!existsSync(env.RELEASE_FILE) && !st.cancelled)
			await sleep(20);
		say(`released corr=${f.corr_id}`);
	}
	if (mode === 'emptyfirst') {
		send({ type: 'chunk', corr_id: f.corr_id, delta: { content: '' } });
		send({ type: 'chunk', corr_id: f.corr_id, delta: { reasoning_content: '' } });
		send({ type: 'chunk', corr_id: f.corr_id, delta: {} });
		say(`empties sent corr=${f.corr_id}`);
		await sleep(Number(env.DELAY_MS || 300));
	}
	if (mode === 'garbage')
		return send('this is not a frame {');
	if (mode === 'binary')
		return ws.send(Buffer.from([1, 2, 3]));
	const corr = mode === 'wrongid' ? `${f.corr_id}-x` : f.corr_id;
	const out = output(req);
	const msgs = Array.isArray(req.messages) ? req.messages : [];
	const last = msgs.length ? JSON.stringify(msgs[msgs.length - 1].content) : '';
	if (mode === 'errresp' || (mode === 'poison' && last.includes('poison')))
		return send({ type: 'response', corr_id: corr, request_id: req.engy_request_id,
			commitment: null, output: {}, error: 'serve failed: scripted' });
	let i = 0;
	for (const delta of out.pieces) {
		await sleep(chunkMs);
		if (st.cancelled)
			return;
		if (f.stream)
			send({ type: 'chunk', corr_id: corr, delta });
		if (mode === 'dropmid' && ++i === 2) {
			say('dropping');
			ws.terminate();
			return;
		}
	}
	if (mode === 'dropmid') {
		await sleep(chunkMs);
		say('dropping');
		ws.terminate();
		return;
	}
	await sleep(chunkMs);
	if (st.cancelled)
		return;
	const u = out.usage;
	const usage = { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens,
		total_tokens: u.prompt_tokens + u.completion_tokens };
	if (u.cached)
		usage.prompt_tokens_details = { cached_tokens: u.cached };
	send({ type: 'response', corr_id: corr, request_id: req.engy_request_id,
		commitment: { model_root: 'ab'.repeat(32), output_token_ids: [1, 2, 3],
			toploc: { proofs: [], topk: 128, decode_batching_size: 32,
				skip_prefill: true, n_tokens: u.completion_tokens, prompt_ids: [4, 5] } },
		output: { choices: [{ index: 0, finish_reason: out.finish, message: out.message,
			...(out.logprobs ? { logprobs: out.logprobs } : {}) }], usage } });
	open.delete(f.corr_id);
	say(`done corr=${f.corr_id}`);
}

function dial() {
	ws = new WebSocket(url);
	ws.on('open', () => {
		say('open');
		send(hello());
	});
	ws.on('message', (data, binary) => {
		if (binary)
			return;
		let f;
		try {
			f = JSON.parse(data.toString());
		} catch {
			say('bad frame from the gateway');
			return;
		}
		switch (f.type) {
		case 'admit': say('admit'); break;
		case 'deny': say(`deny reason=${f.reason}`); break;
		case 'serve': serve(f); break;
		case 'cancel': {
			const st = open.get(f.corr_id);
			if (st)
				st.cancelled = true;
			say(`cancel corr=${f.corr_id}`);
			break;
		}
		case 'ping':
			say('ping');
			if (mode !== 'mute')
				send({ type: 'heartbeat', inflight: open.size, idle_seconds: 0, capacity });
			break;
		case 'reconnect':
			say('reconnect');
			ws.close(1000, 'reconnect');
			break;
		default: say(`unknown frame type=${f.type}`);
		}
	});
	ws.on('close', (code) => {
		say(`closed code=${code}`);
		if (env.REDIAL === '1')
			setTimeout(dial, 200);
	});
	ws.on('error', (e) => {
		say(`error ${e.code || e.message}`);
		if (env.REDIAL !== '1' && e.code === 'ECONNREFUSED')
			process.exit(1);
	});
}
dial();
process.on('SIGTERM', () => process.exit(0));
