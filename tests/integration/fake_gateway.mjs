// SPDX-License-Identifier: MIT
// A gateway for engy's miner role, written independently from
// specs/protocol.md on the npm `ws` package: it serves the websocket legs at
// /gw and /gw/<i>, `GET /gw/meta` over plain http on the same port, admits
// every hello, drives a scenario (serve, cancel, ping, reconnect, deny,
// unknown and malformed frames, a restart), and checks EVERY frame the miner
// sends against specs/protocol.md §2-3: hello and heartbeat fields, chunk
// and response shapes, the commitment, nothing after a response or a
// cancel.  With the scripted backend test-lm it also predicts every output
// token and the rendered prompt's bytes.
//
// usage: node fake_gateway.mjs PEERS_DIR SCENARIO OUT_DIR
//   SCENARIO: main | single | subset | proof | sglang | fold | nohidden |
//             tools | bench; toolserve: the sglang stand-in of `tools`
// Prints "listening port=N" first, then "ok - ..." per check; exits 1 at
// the first failure.  Environment (what the miner was started with):
//   GW_META        /meta answer: a worker count, or 404
//   EXP_KEY, EXP_MODEL, EXP_CKPT (model_root is recomputed from it),
//   EXP_TOTAL, EXP_LEGS, EXP_SHARE, EXP_SERVE_URLS, EXP_WORKER_NAME,
//   EXP_MAX_INPUT, EXP_MAX_OUTPUT, EXP_MAX_TOKENS, EXP_DBS, EXP_TESTLM=1,
//   EXP_FOLD=1 (output token 0 is folded into the prompt)
// Oracle: this file is the independent gateway, written from
// specs/protocol.md on the npm ws package.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [peers, scenario, outDir] = process.argv.slice(2);
if (!outDir) {
	console.error('usage: node fake_gateway.mjs PEERS_DIR SCENARIO OUT_DIR');
	process.exit(2);
}
// toolserve: a scripted sglang /generate for the tool-call scenario.
if (scenario === 'toolserve')
	toolServe();
const { WebSocketServer } = await import(
	pathToFileURL(join(peers, 'ws', 'wrapper.mjs')).href);
const env = process.env;

// An sglang stand-in that answers a prompt asking about the weather with a
// Qwen3.6 tool call (after a short reasoning), as byte ids (the tests'
// byte-level tokenizer), EOS 256, hidden rows of width 128, and a prompt
// prefix of 5 tokens reported cached.  Non-streaming JSON only.
function toolServe() {
	const text = 'Let me look.\n</think>\n\n<tool_call>\n<function=get_weather>\n' +
		'<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n' +
		'</function>\n</tool_call>';
	const reply = (res, code, obj) => {
		const b = JSON.stringify(obj);
		res.writeHead(code, { 'Content-Type': 'application/json' }).end(b);
	};
	const srv = http.createServer((req, res) => {
		let body = '';
		req.on('data', (c) => { body += c; });
		req.on('end', () => {
			if (req.url === '/get_model_info')
				return reply(res, 200, { model_path: '/nowhere', is_generation: true });
			if (req.url === '/v1/models')
				return reply(res, 200, { data: [{ id: 'tool-model', max_model_len: 4096 }] });
			if (req.url === '/abort_request')
				return reply(res, 200, {});
			const j = JSON.parse(body);
			const prompt = Buffer.from(j.input_ids.filter((i) => i < 256)).toString();
			console.log(`generate rid=${j.rid} n_input=${j.input_ids.length} ` +
				`hidden=${j.return_hidden_states} text=${'text' in j} tools=${prompt.includes('<tools>')}`);
			const out = [...Buffer.from(prompt.includes('weather') ? text : 'Hi.'), 256];
			const n = Math.min(out.length, j.sampling_params.max_new_tokens);
			const ids = out.slice(0, n), n_in = j.input_ids.length;
			const row = (k) => Array.from({ length: 128 }, (_, i) => ((k * 31 + i * 7) % 97) / 8 - 6);
			const hs = [[row(n_in - 1)], ...ids.slice(1).map((_, k) => row(n_in + k))];
			reply(res, 200, { text: '', output_ids: ids, meta_info: {
				id: j.rid, prompt_tokens: n_in, completion_tokens: n, cached_tokens: 5,
				finish_reason: n === out.length ? { type: 'stop', matched: 256 }
					: { type: 'length', length: n },
				output_token_logprobs: ids.map((id) => [-0.5, id, null]),
				hidden_states: hs } });
		});
	});
	srv.listen(0, '127.0.0.1', () => console.log(`listening port=${srv.address().port}`));
}
if (scenario === 'toolserve')
	await new Promise(() => {});
const TESTLM = env.EXP_TESTLM === '1';
const DBS = Number(env.EXP_DBS || 32);

function fail(what) {
	console.log(`FAIL: ${what}`);
	process.exit(1);
}
function ok(what) {
	console.log(`ok - ${what}`);
}
function check(cond, what) {
	if (!cond)
		fail(what);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const isInt = (v) => Number.isInteger(v) && v >= 0;
const isStr = (v) => typeof v === 'string';
const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const keysOnly = (o, allowed) => Object.keys(o).every((k) => allowed.includes(k));

// ---- what the miner must say about itself (specs/protocol.md §2-3) ----
function modelRoot(dir) {
	const h = createHash('sha256');
	h.update(readFileSync(join(dir, 'config.json')));
	for (const f of readdirSync(dir).filter((n) => n.endsWith('.safetensors')).sort()) {
		h.update(f);
		h.update(String(statSync(join(dir, f)).size));
	}
	return h.digest('hex');
}
const expRoot = modelRoot(env.EXP_CKPT);
const defName = 'ins-' + createHash('sha256')
	.update(`${hostname()}|${env.EXP_MODEL}|${env.EXP_SERVE_URLS || ''}`)
	.digest('hex').slice(0, 12);
const expName = env.EXP_WORKER_NAME || defName;
let workerId = null;
let helloCap = null;

function checkCapacity(cap, share, where) {
	check(isObj(cap), `${where}: capacity is an object`);
	check(cap.max_inflight === share, `${where}: capacity.max_inflight ${cap.max_inflight} != ${share}`);
	check(cap.max_inflight_total === Number(env.EXP_TOTAL),
		`${where}: max_inflight_total ${cap.max_inflight_total} != ${env.EXP_TOTAL}`);
	check(cap.max_input_tokens === Number(env.EXP_MAX_INPUT || 229376), `${where}: max_input_tokens`);
	check(cap.max_output_tokens === Number(env.EXP_MAX_OUTPUT || 32768), `${where}: max_output_tokens`);
	check(typeof cap.max_request_s === 'number' && cap.max_request_s > 0, `${where}: max_request_s`);
}

function checkHello(m, conn) {
	const want = ['type', 'miner_key', 'model', 'model_root', 'hw', 'versions',
		'capacity', 'worker_name', 'instance_id', 'worker_id'];
	// constraints (specs/protocol.md §2) is optional: a list of known names
	check(keysOnly(m, [...want, 'constraints']) && want.every((k) => k in m),
		`hello keys: ${Object.keys(m)}`);
	check(!('constraints' in m) || (Array.isArray(m.constraints) && m.constraints.length > 0 &&
		m.constraints.every((c) => c === 'json_schema' || c === 'tool_call' || c === 'top_logprobs')),
		`hello.constraints: ${JSON.stringify(m.constraints)}`);
	check(m.miner_key === env.EXP_KEY, 'hello.miner_key is the key');
	check(m.model === env.EXP_MODEL, `hello.model ${m.model}`);
	check(m.model_root === expRoot, `hello.model_root ${m.model_root} != ${expRoot}`);
	check(m.worker_name === expName, `hello.worker_name ${m.worker_name} != ${expName}`);
	check(m.instance_id === defName, `hello.instance_id ${m.instance_id} != ${defName}`);
	check(/^[0-9a-f]{32}$/.test(m.worker_id), 'hello.worker_id is 32 hex');
	if (workerId === null)
		workerId = m.worker_id;
	check(m.worker_id === workerId, 'worker_id is the same on every leg and re-dial');
	const hw = m.hw;
	check(isObj(hw) && hw.host === hostname(), 'hello.hw.host');
	check(isInt(hw.cpus) && hw.cpus > 0, 'hello.hw.cpus');
	check(typeof hw.ram_gb === 'number' && hw.ram_gb > 0, 'hello.hw.ram_gb');
	check(isStr(hw.gpu) && isInt(hw.gpu_count) && typeof hw.gpu_mem_gb === 'number' &&
	      isStr(hw.gpus), 'hello.hw gpu fields');
	check(isObj(m.versions) && Object.values(m.versions).every(isStr), 'hello.versions');
	checkCapacity(m.capacity, Number(env.EXP_SHARE), 'hello');
	helloCap = m.capacity;
}

// ---- legs and frames ----
const conns = [];		// every connection ever opened
const inbox = [];		// frames not yet taken by a waiter
const waiters = [];
const reqs = new Map();		// corr_id -> request state
let metaHits = 0;
let ncorr = 0;

function deliver(conn, m) {
	const f = { conn, m };
	for (let i = 0; i < waiters.length; i++) {
		if (waiters[i].pred(f)) {
			const w = waiters.splice(i, 1)[0];
			w.resolve(f);
			return;
		}
	}
	inbox.push(f);
}

function next(pred, ms, what) {
	const i = inbox.findIndex(pred);
	if (i >= 0)
		return Promise.resolve(inbox.splice(i, 1)[0]);
	return new Promise((resolve) => {
		const w = { pred, resolve };
		waiters.push(w);
		setTimeout(() => {
			const k = waiters.indexOf(w);
			if (k >= 0)
				fail(`timeout (${ms} ms) waiting for ${what}`);
		}, ms);
	});
}

function checkChunk(m, r) {
	check(keysOnly(m, ['type', 'corr_id', 'delta']), `chunk keys: ${Object.keys(m)}`);
	check(r.stream, `chunk for ${m.corr_id}, which did not ask to stream`);
	check(isObj(m.delta) && keysOnly(m.delta, ['content', 'reasoning_content']),
		'chunk.delta holds content (or reasoning_content) only');
	check(isStr(m.delta.content) && m.delta.content.length > 0,
		'chunk.delta.content is non-empty text');
	r.chunks.push(m.delta.content);
}

function checkResponse(m, r) {
	check(isStr(m.request_id) && m.request_id.length > 0, 'response.request_id');
	if (r.requestId)
		check(m.request_id === r.requestId, `request_id ${m.request_id} != engy_request_id`);
	if ('error' in m) {
		check(keysOnly(m, ['type', 'corr_id', 'request_id', 'commitment', 'output', 'error']),
			`error response keys: ${Object.keys(m)}`);
		check(m.commitment === null, 'error response: commitment null');
		check(isObj(m.output) && Object.keys(m.output).length === 0, 'error response: output {}');
		check(isStr(m.error) && m.error.length > 0, 'error response: error text');
		return;
	}
	check(keysOnly(m, ['type', 'corr_id', 'request_id', 'commitment', 'output']),
		`response keys: ${Object.keys(m)}`);
	const c = m.commitment, o = m.output;
	check(isObj(c) && c.model_root === expRoot, 'commitment.model_root');
	check(Array.isArray(c.output_token_ids) && c.output_token_ids.every(isInt),
		'commitment.output_token_ids');
	const t = c.toploc;
	check(isObj(t), 'commitment.toploc');
	check(Array.isArray(t.prompt_ids) && t.prompt_ids.length > 0 && t.prompt_ids.every(isInt),
		'toploc.prompt_ids');
	check(t.n_tokens === c.output_token_ids.length, 'toploc.n_tokens = output ids');
	check(t.skip_prefill === true && t.decode_batching_size === DBS && isInt(t.topk),
		'toploc parameters');
	check(Array.isArray(t.proofs) && t.proofs.length === Math.ceil(t.n_tokens / DBS),
		`one proof per ${DBS} tokens (${t.proofs.length} for ${t.n_tokens})`);
	for (const p of t.proofs)
		check(isStr(p) && Buffer.from(p, 'base64').length === 2 + 2 * t.topk &&
		      Buffer.from(p, 'base64').toString('base64') === p, 'proof is canonical base64 of 2+2k bytes');
	check(isObj(o) && keysOnly(o, ['choices', 'usage']), 'output keys');
	check(Array.isArray(o.choices) && o.choices.length === 1, 'one choice');
	const ch = o.choices[0];
	check(ch.index === 0 && ['stop', 'length', 'tool_calls'].includes(ch.finish_reason),
		`choice index and finish_reason ${ch.finish_reason}`);
	const msg = ch.message;
	check(isObj(msg) && msg.role === 'assistant' && isStr(msg.content), 'message role and content');
	check(keysOnly(msg, ['role', 'content', 'reasoning_content', 'tool_calls']), 'message keys');
	const u = o.usage;
	check(isInt(u.prompt_tokens) && isInt(u.completion_tokens) &&
	      u.total_tokens === u.prompt_tokens + u.completion_tokens, 'usage sums');
	// A full cache hit folds output token 0 into prompt_ids (§3, §4).
	const fold = env.EXP_FOLD === '1' ? 1 : 0;
	check(u.completion_tokens === c.output_token_ids.length + fold, 'usage.completion_tokens');
	check(u.prompt_tokens === t.prompt_ids.length - fold, 'usage.prompt_tokens');
	check(!('prompt_tokens_details' in u) || u.prompt_tokens_details.cached_tokens > 0,
		'prompt_tokens_details only when cached > 0');
	if (r.stream && !('error' in m))
		check(r.chunks.join('') === msg.content,
			`${r.corr}: streamed chunks add up to the content (${JSON.stringify(r.chunks)} vs ${JSON.stringify(msg.content)})`);
	if (TESTLM)
		checkTestLm(m, r);
}

// test-lm: token k = 33 + (S + 7k) mod 94, S = sum of prompt ids mod 94.
function checkTestLm(m, r) {
	const c = m.commitment, ids = c.output_token_ids, p = c.toploc.prompt_ids;
	const S = p.reduce((a, b) => a + b, 0) % 94;
	// sampling (temperature > 0, OpenAI's default 1) shifts by 13 * seed
	const sh = r.temperature > 0 ? (r.seed ?? 1) * 13 % 94 : 0;
	ids.forEach((t, k) => check(t === 33 + (S + 7 * k + sh) % 94, `output id ${k} is test-lm's`));
	const ch = m.output.choices[0];
	let text = String.fromCharCode(...ids);
	if (r.stopAt !== undefined)
		text = text.slice(0, r.stopAt);	/* a stop string ends the text */
	else if (ch.finish_reason === 'stop')
		text = text.slice(0, -1);	/* the matched stop is not text */
	const think = r.thinking;
	check((think ? ch.message.reasoning_content : ch.message.content) === text,
		`${think ? 'reasoning' : 'content'} is the decoded output`);
	if (think)
		check(ch.message.content === '', 'all reasoning: content is empty');
	else
		check(!('reasoning_content' in ch.message), 'no reasoning without thinking');
	if (r.prompt)
		check(Buffer.from(p).toString('utf8') === r.prompt,
			`prompt_ids are the rendered chat: ${JSON.stringify(Buffer.from(p).toString('utf8'))}`);
	if (r.maxTokens && ch.finish_reason === 'length')
		check(ids.length === r.maxTokens, `${ids.length} tokens, max ${r.maxTokens}`);
}

function onFrame(conn, data, binary) {
	check(!binary, 'every frame is a text message');
	let m;
	try {
		m = JSON.parse(data.toString('utf8'));
	} catch {
		fail(`not JSON: ${data.toString('utf8').slice(0, 200)}`);
	}
	check(isObj(m) && isStr(m.type), 'a JSON object with a type');
	switch (m.type) {
	case 'hello':
		check(!conn.hello, 'one hello per connection');
		check(conn.frames === 0, 'hello is the first frame');
		checkHello(m, conn);
		conn.hello = m;
		break;
	case 'heartbeat':
		check(conn.hello, 'heartbeat after hello');
		check(keysOnly(m, ['type', 'inflight', 'idle_seconds', 'capacity']) &&
		      isInt(m.inflight) && typeof m.idle_seconds === 'number' && m.idle_seconds >= 0,
		'heartbeat fields');
		check(JSON.stringify(m.capacity) === JSON.stringify(conn.hello.capacity),
			'heartbeat capacity is the hello capacity');
		break;
	case 'chunk':
	case 'response': {
		const r = reqs.get(m.corr_id);
		check(r, `${m.type} for unknown corr_id ${m.corr_id}`);
		check(r.conn === conn, `${m.type} on the leg the serve came on`);
		check(!r.cancelled, `${m.type} for ${m.corr_id} after its cancel`);
		check(!r.done, `${m.type} for ${m.corr_id} after its response`);
		if (r.cancelling) {
			// sent before the miner read the cancel (cancel() below): on
			// its way, not an answer anyone waits for
			if (m.type === 'response')
				r.done = true;
			conn.frames++;
			return;
		}
		if (m.type === 'chunk') {
			checkChunk(m, r);
		} else {
			checkResponse(m, r);
			r.done = true;
			r.ms = Date.now() - r.t0;
			if (r.syncFor) {
				// the miner has handled the cancel sent before this
				r.syncFor.cancelled = true;
				r.syncFor.cancelling = false;
				conn.frames++;
				return;
			}
		}
		break;
	}
	case 'cancelled': {
		// the slot of a cancelled corr_id is free (once per corr_id)
		check(conn.hello && keysOnly(m, ['type', 'corr_id']) && typeof m.corr_id === 'string',
			'cancelled fields');
		const r = reqs.get(m.corr_id);
		if (r) {
			check(r.conn === conn, `cancelled for ${m.corr_id} on the leg the serve came on`);
			check(!r.acked, `a second cancelled for ${m.corr_id}`);
			r.acked = true;
		}
		nAcked++;
		conn.frames++;
		return;
	}
	default:
		fail(`unknown frame type from the miner: ${m.type}`);
	}
	conn.frames++;
	deliver(conn, m);
}

// ---- the server ----
let server, wss, port = 0;
const metaAnswer = env.GW_META || '1';

function listen() {
	return new Promise((resolve) => {
		wss = new WebSocketServer({ noServer: true });
		server = http.createServer((req, res) => {
			if (req.method === 'GET' && req.url === '/gw/meta') {
				metaHits++;
				if (metaAnswer === '404') {
					res.writeHead(404).end('no meta here');
				} else {
					res.writeHead(200, { 'Content-Type': 'application/json' })
						.end(JSON.stringify({ workers: Number(metaAnswer) }));
				}
				return;
			}
			res.writeHead(404).end();
		});
		server.on('upgrade', (req, sock, head) => {
			const mt = /^\/gw(?:\/(\d+))?$/.exec(req.url);
			if (!mt) {
				sock.destroy();
				return;
			}
			wss.handleUpgrade(req, sock, head, (ws) => {
				const conn = { ws, path: req.url, worker: mt[1] === undefined ? -1 : Number(mt[1]),
					hello: null, frames: 0, closed: null };
				conns.push(conn);
				ws.on('message', (d, bin) => onFrame(conn, d, bin));
				ws.on('close', (code, reason) => {
					conn.closed = { code, reason: reason.toString() };
					deliver(conn, { type: '_close' });
				});
			});
		});
		server.listen(port, '127.0.0.1', () => {
			port = server.address().port;
			resolve();
		});
	});
}

async function stopServer() {
	for (const c of conns)
		if (!c.closed)
			c.ws.terminate();
	await new Promise((r) => server.close(r));
	wss.close();
}

const send = (conn, obj) => conn.ws.send(typeof obj === 'string' ? obj : JSON.stringify(obj));

// Legs that said hello since @since (index into conns).
async function hellos(n, since, ms) {
	const got = [];
	while (got.length < n) {
		const f = await next((x) => x.m.type === 'hello' && conns.indexOf(x.conn) >= since,
			ms, `${n} hellos (have ${got.length})`);
		send(f.conn, { type: 'admit' });
		got.push(f.conn);
	}
	return got;
}

const user = (text) => [{ role: 'user', content: text }];
const renderOff = (text) =>
	`<|im_start|>user\n${text}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n`;
const renderOn = (text) => `<|im_start|>user\n${text}<|im_end|>\n<|im_start|>assistant\n<think>\n`;

// Send a serve frame; @o: { stream, thinking, maxTokens, extra, corr }.
function serve(conn, text, o = {}) {
	const corr = o.corr || `c-${++ncorr}`;
	const request = { messages: o.messages || user(text), ...(o.extra || {}) };
	if (!o.thinking)
		request.chat_template_kwargs = { enable_thinking: false };
	if (o.maxTokens)
		request.max_tokens = o.maxTokens;
	const r = { corr, conn, stream: !!o.stream, chunks: [], done: false, cancelled: false,
		thinking: !!o.thinking, maxTokens: o.expectMax || o.maxTokens,
		prompt: o.messages ? null : (o.thinking ? renderOn(text) : renderOff(text)),
		requestId: request.engy_request_id,
		temperature: request.temperature ?? 1, seed: request.seed, t0: Date.now() };
	reqs.set(corr, r);
	send(conn, { type: 'serve', corr_id: corr, request, stream: !!o.stream });
	return r;
}

// A cancel crosses frames the miner already sent for @r: those may still
// come, until the answer to a serve sent right after the cancel (a bad one,
// answered at once with an error).  The miner handles a leg's frames in
// order, so from that answer on, any frame for @r is a fault.
let nsync = 0, nAcked = 0;
function cancel(r) {
	if (!r.done)
		r.cancelling = true;
	else
		r.cancelled = true;
	send(r.conn, { type: 'cancel', corr_id: r.corr });
	const corr = `sync-${++nsync}`;
	reqs.set(corr, { corr, conn: r.conn, stream: false, chunks: [], done: false,
		cancelled: false, syncFor: r, t0: Date.now() });
	send(r.conn, { type: 'serve', corr_id: corr, request: 'sync after a cancel' });
}

// Every cancel sent so far has been handled by the miner.
async function cancelsHandled(ms = 20000) {
	const t = Date.now();
	while ([...reqs.values()].some((r) => r.cancelling)) {
		check(Date.now() - t < ms, `cancels not handled after ${ms} ms`);
		await sleep(20);
	}
}

// Ping @conn until its heartbeat says nothing is in flight.
async function idle(conn, what, ms = 30000) {
	const t = Date.now();
	for (;;) {
		drainHeartbeats();
		send(conn, { type: 'ping' });
		const hb = await heartbeatOn(conn);
		if (hb.inflight === 0)
			return;
		check(Date.now() - t < ms, `${what}: ${hb.inflight} in flight after ${ms} ms`);
		await sleep(100);
	}
}

// The response to @r; its chunks (checked as they came) leave the inbox.
// @ms only bounds a miner that never answers: a loaded machine (ASan, a
// busy CI host) may take many seconds for a long generation.
async function response(r, ms = 60000) {
	const f = await next((x) => x.m.type === 'response' && x.m.corr_id === r.corr, ms,
		`response to ${r.corr}`);
	for (let i = inbox.length - 1; i >= 0; i--)
		if (inbox[i].m.corr_id === r.corr)
			inbox.splice(i, 1);
	return f.m;
}

async function heartbeatOn(conn, ms = 15000) {
	return (await next((f) => f.conn === conn && f.m.type === 'heartbeat', ms,
		`heartbeat on ${conn.path}`)).m;
}

// Only heartbeats (or closes) arrive on @conns for @ms: nothing else.
async function quiet(ms) {
	await sleep(ms);
	const extra = inbox.filter((f) => f.m.type !== 'heartbeat' && f.m.type !== '_close');
	check(extra.length === 0, `unexpected frames: ${extra.map((f) => f.m.type)}`);
}

// Drop the inbox's frames that @pred picks.
function dropFrames(pred) {
	for (let i = inbox.length - 1; i >= 0; i--)
		if (pred(inbox[i].m))
			inbox.splice(i, 1);
}

// Frames of @r waiting in the inbox (chunks sent before its cancel).
function forget(r) { dropFrames((m) => m.corr_id === r.corr); }
function drainHeartbeats() { dropFrames((m) => m.type === 'heartbeat'); }

function save(name, obj) {
	writeFileSync(join(outDir, name), JSON.stringify(obj));
}

await listen();
console.log(`listening port=${port}`);

const share = Number(env.EXP_SHARE), nlegs = Number(env.EXP_LEGS);

if (scenario === 'single') {
	const [c] = await hellos(1, 0, 20000);
	check(c.path === '/gw' && conns.length === 1, `one leg at /gw (got ${c.path})`);
	check(metaHits === 1, `GET /gw/meta asked once (${metaHits})`);
	ok('a /meta that fails plans one leg at GW itself with the whole capacity');
	const r = serve(c, 'Say hi.', { maxTokens: 5 });
	const m = await response(r);
	check(!('error' in m), `served: ${m.error}`);
	ok('a request completes on the single leg');
	// SIGTERM with a request in flight: it still completes; new ones
	// are refused meanwhile
	// 600 tokens, 6 s at test-lm: still generating when the late one
	// comes (the script waits for the miner's shutdown_begin line first)
	const a = serve(c, 'A long one.', { maxTokens: 600, stream: true });
	await next((f) => f.m.type === 'chunk' && f.m.corr_id === a.corr, 60000, 'a first chunk');
	console.log('term-now');
	// The script sends SIGTERM when it sees term-now, then touches termed.
	for (let i = 0; i < 3000 && !existsSync(join(outDir, 'termed')); i++)
		await sleep(20);
	check(existsSync(join(outDir, 'termed')), 'the miner got SIGTERM');
	const b = serve(c, 'Too late.', { maxTokens: 5 });
	const mb = await response(b);
	check(/shutting down/.test(mb.error || ''), `after SIGTERM: ${mb.error}`);
	const ma = await response(a);
	check(!('error' in ma) && ma.commitment.output_token_ids.length === 600,
		`in flight at SIGTERM: ${ma.error}`);
	ok('SIGTERM: the request in flight completes, a new one is refused');
	process.exit(0);
}

if (scenario === 'subset') {
	const legs = await hellos(nlegs, 0, 20000);
	const ws = legs.map((c) => c.worker).sort();
	check(new Set(ws).size === nlegs && ws.every((w) => w >= 0 && w < 4),
		`legs on distinct workers of 4: ${ws}`);
	check(metaHits === 0, 'ENGY_GW_WORKERS overrides /meta (not asked)');
	ok(`MAX_INFLIGHT below the worker count: ${nlegs} legs at 1 on workers ${ws}`);
	process.exit(0);
}

if (scenario === 'proof') {
	const [c] = await hellos(1, 0, 60000);
	const n = Number(env.EXP_MAX_TOKENS || 70);
	const a = serve(c, 'Tell me a story.', { maxTokens: n, extra: { temperature: 0 } });
	const b = serve(c, 'And another one.', { maxTokens: n, stream: true,
		extra: { temperature: 0 } });
	const ma = await response(a, 120000), mb = await response(b, 120000);
	check(!('error' in ma) && !('error' in mb), `served: ${ma.error || mb.error}`);
	save('resp-1.json', ma);
	save('resp-2.json', mb);
	ok(`two requests (one streamed, ${b.chunks.length} chunks) answered with commitments`);
	process.exit(0);
}

if (scenario === 'bench') {
	const [c] = await hellos(1, 0, 60000);
	const n = Number(env.BENCH_N || 8), t = Number(env.BENCH_TOKENS || 64);
	for (let i = 0; i < n; i++) {
		const r = serve(c, `Request ${i}: write about engines, pistons and valves.`,
			{ maxTokens: t, stream: i % 2 === 1, extra: { temperature: 0 } });
		const m = await response(r, 300000);
		check(!('error' in m), `bench request ${i}: ${m.error}`);
	}
	ok(`${n} requests of up to ${t} tokens`);
	process.exit(0);
}

if (scenario === 'fold' || scenario === 'nohidden') {
	const [c] = await hellos(1, 0, 20000);
	const r = serve(c, 'Cached.', { maxTokens: 40, stream: true });
	const m = await response(r);
	if (scenario === 'nohidden') {
		check(/--enable-return-hidden-states/.test(m.error || '') && /curl/.test(m.error),
			`no hidden states: ${m.error}`);
		ok('a serve without hidden states: an error response saying how to check it');
	} else {
		check(!('error' in m), `fold: ${m.error}`);
		check(m.commitment.toploc.n_tokens === 39, `39 rows proved (${m.commitment.toploc.n_tokens})`);
		ok('a full cache hit: output token 0 folded into prompt_ids, the rest proved');
	}
	process.exit(0);
}

if (scenario === 'tools') {
	const [c] = await hellos(1, 0, 20000);
	const tools = [{ type: 'function', function: { name: 'get_weather',
		description: 'Weather forecast', parameters: { type: 'object',
			properties: { city: { type: 'string' }, days: { type: 'integer' } },
			required: ['city'] } } }];
	for (const stream of [false, true]) {
		const r = serve(c, 'What is the weather in Paris for 3 days?', { thinking: true, stream,
			extra: { tools, tool_choice: 'auto' } });
		const m = await response(r);
		check(!('error' in m), `tools: ${m.error}`);
		const ch = m.output.choices[0], msg = ch.message;
		check(ch.finish_reason === 'tool_calls', `finish_reason ${ch.finish_reason}`);
		check(msg.content === '' && msg.reasoning_content === 'Let me look.',
			`content ${JSON.stringify(msg.content)} reasoning ${JSON.stringify(msg.reasoning_content)}`);
		check(Array.isArray(msg.tool_calls) && msg.tool_calls.length === 1, 'one tool call');
		const tc = msg.tool_calls[0];
		check(tc.type === 'function' && /^call_[0-9a-f]{24}$/.test(tc.id) &&
		      tc.function.name === 'get_weather', `tool call ${JSON.stringify(tc)}`);
		check(JSON.stringify(JSON.parse(tc.function.arguments)) === '{"city":"Paris","days":3}',
			`arguments typed by the schema: ${tc.function.arguments}`);
		check(m.output.usage.prompt_tokens_details?.cached_tokens === 5, 'cached_tokens passed on');
		check(Buffer.from(m.commitment.toploc.prompt_ids).toString().includes('<tools>'),
			'the prompt renders the tools');
		check(!stream || r.chunks.length === 0, 'no chunk: reasoning and calls ride the response');
	}
	ok('a tool call end to end: parsed, typed by the schema, finish_reason tool_calls, ' +
	   'reasoning apart, cached_tokens passed on');
	process.exit(0);
}

if (scenario === 'sglang') {
	const [c] = await hellos(1, 0, 20000);
	let r = serve(c, 'Over HTTP.', { maxTokens: 30 });
	let m = await response(r);
	check(!('error' in m), `served: ${m.error}`);
	// engy's serve repeats the hidden rows so far in each event (as
	// sglang does): tokens go out as their rows come, in several chunks
	r = serve(c, 'Streamed over HTTP.', { maxTokens: 30, stream: true });
	m = await response(r);
	check(!('error' in m) && r.chunks.length >= 3, `streamed: ${m.error} ${r.chunks.length} chunks`);
	console.log(`  sglang: ${r.chunks.length} chunks streamed through engy's serve`);
	ok('backend-sglang on engy\'s serve: plain and streamed requests, test-lm output, proofs');
	// 400 tokens take 4 s at the serve: the cancel comes at the first
	// chunk, when the serve is generating, well before the end
	r = serve(c, 'Abort me.', { maxTokens: 400, stream: true, corr: 'c-abort' });
	await next((f) => f.m.type === 'chunk' && f.m.corr_id === r.corr, 60000, 'c-abort\'s first chunk');
	cancel(r);
	await cancelsHandled();
	forget(r);	// chunks sent before the cancel; one after it fails above
	await quiet(500);
	ok('cancel mid-stream through backend-sglang: nothing more is sent');
	console.log('kill-serve');
	for (let i = 0; i < 100 && !existsSync(join(outDir, 'serve-killed')); i++)
		await sleep(50);
	check(existsSync(join(outDir, 'serve-killed')), 'the serve was stopped');
	r = serve(c, 'Anyone home?', { maxTokens: 5 });
	m = await response(r, 60000);
	check(/backend error/.test(m.error || ''), `serve down: ${m.error}`);
	drainHeartbeats();
	send(c, { type: 'ping' });
	await heartbeatOn(c);
	ok('serve down: an error response, and the leg stays up');
	process.exit(0);
}

// ---- main: two gateway workers, every frame both ways ----
check(scenario === 'main', `unknown scenario ${scenario}`);
let [l0, l1] = await hellos(2, 0, 20000);
if (l0.worker > l1.worker)
	[l0, l1] = [l1, l0];
check(l0.path === '/gw/0' && l1.path === '/gw/1' && metaHits === 1,
	`legs at /gw/0 and /gw/1 from /meta (${l0.path}, ${l1.path}, meta ${metaHits})`);
check(l0.hello.capacity.max_inflight === share && l1.hello.capacity.max_inflight === share,
	'each leg declares its share');
ok(`/meta of 2 workers: two legs, hello on each with max_inflight ${share} of ${env.EXP_TOTAL}`);

// non-streaming, engy_request_id echoed, prompt bytes, test-lm's tokens
let r = serve(l0, 'Say hi.', { maxTokens: 10, extra: { engy_request_id: 'rq-engy-1' } });
let m = await response(r);
check(!('error' in m) && m.output.choices[0].finish_reason === 'length', `completion: ${m.error}`);
save('resp-1.json', m);
ok('non-streaming: commitment, rendered prompt, test-lm output, finish length, request_id echoed');

// streaming, coalesced
r = serve(l1, 'Count for me.', { maxTokens: 25, stream: true });
m = await response(r);
check(!('error' in m), `stream: ${m.error}`);
// test-lm takes at least 250 ms for 25 tokens; chunks go out at most every
// stream_flush_s (50 ms) plus the last one, in the time between the serve
// and its response (longer on a loaded machine, so more chunks may fit).
check(r.chunks.length >= 2 && r.chunks.length <= 2 + Math.floor(r.ms / 50),
	`25 tokens over ${r.chunks.length} coalesced chunks in ${r.ms} ms`);
check(!/^[0-9a-f]{32}$/.test(r.corr) && /^[0-9a-f]{32}$/.test(m.request_id),
	'a fresh request_id without engy_request_id');
save('resp-2.json', m);
ok(`streaming on the other leg: ${r.chunks.length} chunks add up to the content`);

// thinking on: everything is reasoning, content empty, nothing streamed
r = serve(l0, 'Think first.', { maxTokens: 8, thinking: true, stream: true });
m = await response(r);
check(!('error' in m) && r.chunks.length === 0, `thinking stream: ${r.chunks.length} chunks`);
ok('thinking: reasoning_content holds the output, content empty, reasoning not streamed');

// default and capped max_tokens, stop string
r = serve(l0, 'No limit given.', { expectMax: Number(env.EXP_MAX_TOKENS) });
m = await response(r);
check(m.commitment.output_token_ids.length === Number(env.EXP_MAX_TOKENS),
	`MAX_TOKENS default: ${m.commitment.output_token_ids.length}`);
r = serve(l0, 'Too many.', { maxTokens: 100000, expectMax: Number(env.EXP_MAX_OUTPUT) });
m = await response(r);
check(m.commitment.output_token_ids.length === Number(env.EXP_MAX_OUTPUT),
	`capped at MAX_OUTPUT_TOKENS: ${m.commitment.output_token_ids.length}`);
ok('max_tokens: MAX_TOKENS when absent, capped at MAX_OUTPUT_TOKENS');
{
	const first = serve(l0, 'Stop early.', { maxTokens: 10 });
	const fm = await response(first);
	const stopCh = String.fromCharCode(fm.commitment.output_token_ids[5]);
	for (const stream of [false, true]) {
		r = serve(l0, 'Stop early.', { maxTokens: 10, stream, extra: { stop: [stopCh] } });
		m = await response(r);
		check(m.output.choices[0].finish_reason === 'stop' &&
		      m.commitment.output_token_ids.length === 6, 'stop string ends at its token');
	}
	ok('a one-token stop string: finish_reason stop, the stop in neither content nor chunks');
	// a stop string of three tokens: the text ends before it; the ids
	// generated until the backend stopped stay in the commitment
	const ids = fm.commitment.output_token_ids;
	const stopStr = String.fromCharCode(...ids.slice(3, 6));
	for (const stream of [false, true]) {
		r = serve(l0, 'Stop early.', { maxTokens: 10, stream, extra: { stop: ['zz\u00e9', stopStr] } });
		r.stopAt = 3;
		m = await response(r);
		check(m.output.choices[0].finish_reason === 'stop', `stop string: ${m.output.choices[0].finish_reason}`);
		check(m.commitment.output_token_ids.length >= 6, 'the ids up to the stop are committed');
	}
	ok('a stop string of several tokens: the text ends before it, finish_reason stop, streamed too');
}

// ping -> heartbeat; periodic heartbeats; unknown and malformed frames.
// A request cancelled at a stop string counts until its backend work has
// ended, which a loaded machine may take a while to report: wait for the
// legs to go idle first, then one ping must say so.
await idle(l0, 'after the stop strings');
await idle(l1, 'after the stop strings');
drainHeartbeats();
send(l1, { type: 'ping' });
let hb = await heartbeatOn(l1);
check(hb.inflight === 0, 'idle heartbeat');
ok('ping is answered with a heartbeat (inflight, idle_seconds, capacity)');
drainHeartbeats();
// ENGY_HEARTBEAT_S=1 (the default is 30 s): within 10 s, however loaded
await heartbeatOn(l0, 10000);
await heartbeatOn(l1, 10000);
ok('heartbeats every heartbeat_s on each leg, unasked');
send(l0, { type: 'future_frame', x: 1 });
send(l0, 'this is not JSON');
l0.ws.send(Buffer.from([1, 2, 3]));
send(l0, { type: 'serve', request: { messages: user('no corr_id') } });
send(l0, { type: 'cancel', corr_id: 'never-served' });
drainHeartbeats();
send(l0, { type: 'ping' });
await heartbeatOn(l0);
await quiet(200);
check(!l0.closed, 'the leg stays open');
ok('unknown types, non-JSON, binary, serve without corr_id, unknown cancel: ignored, leg open');
for (const [what, frame] of [
	['request not an object', { request: 'hello' }],
	['stream not a boolean', { request: { messages: user('x') }, stream: 'yes' }],
	['messages missing', { request: { model: 'x' } }],
	['n of 2', { request: { messages: user('x'), n: 2 } }],
	['bad role', { request: { messages: [{ role: 'wizard', content: 'x' }] } }],
	['too long', { request: { messages: user('y'.repeat(Number(env.EXP_MAX_INPUT) + 10)) } }],
]) {
	const corr = `bad-${++ncorr}`;
	const rr = { corr, conn: l0, stream: false, chunks: [], done: false, cancelled: false };
	reqs.set(corr, rr);
	send(l0, { type: 'serve', corr_id: corr, ...frame });
	const em = await response(rr);
	check('error' in em, `${what}: an error response`);
	if (what === 'too long')
		check(/max_input_tokens/.test(em.error), `too long: ${em.error}`);
}
ok('bad serve frames and requests get error responses (commitment null), never a dead leg');

// backend failures: at generate, and mid-stream after chunks went out
r = serve(l1, null, { messages: [{ role: 'system', content: 'FAIL' }, ...user('x')] });
m = await response(r);
check(/backend error/.test(m.error || ''), `generate failure: ${m.error}`);
r = serve(l1, null, { stream: true, maxTokens: 100,
	messages: [{ role: 'system', content: 'MID(' }, ...user('x')] });
m = await response(r);
check(/backend error/.test(m.error || '') && r.chunks.length > 0,
	`mid-stream failure: ${m.error} after ${r.chunks.length} chunks`);
ok('backend errors (at start, mid-stream) become error responses');

// cancel before the work starts: serve and cancel in one write
l0.ws._socket.cork();
r = serve(l0, 'Never mind.', { maxTokens: 50, stream: true, corr: 'c-early' });
cancel(r);
process.nextTick(() => l0.ws._socket.uncork());
await cancelsHandled();
await quiet(600);
ok('cancel before the work started: nothing is sent for it');

// cancel mid-stream: after the first chunk
r = serve(l1, 'Go on and on.', { maxTokens: 200, stream: true });
await next((f) => f.m.type === 'chunk' && f.m.corr_id === r.corr, 60000, 'a first chunk');
cancel(r);
await cancelsHandled();
await quiet(600);
ok('cancel mid-stream: no frame after the cancel');

// capacity: one more than max_inflight_total at once
{
	const total = Number(env.EXP_TOTAL), rs = [];
	for (let i = 0; i < total; i++)
		rs.push(serve(i % 2 ? l1 : l0, `busy ${i}`, { maxTokens: 200 }));
	// frames of one leg are handled in order: after a heartbeat on each
	// leg, every request sent before it is in flight
	drainHeartbeats();
	send(l0, { type: 'ping' });
	send(l1, { type: 'ping' });
	await heartbeatOn(l1);
	await heartbeatOn(l0);
	send(l0, { type: 'ping' });
	hb = await heartbeatOn(l0);
	check(hb.inflight === total, `heartbeat says ${hb.inflight} in flight`);
	const extra = serve(l0, 'one too many', { maxTokens: 5 });
	const em = await response(extra);
	check(/capacity/.test(em.error || ''), `over capacity: ${em.error}`);
	for (const x of rs)
		cancel(x);
	await cancelsHandled();
	await quiet(500);
	// the slots come free as the backend and the pool let go of the work
	await idle(l0, 'after the cancels');
	ok(`max_inflight_total ${total}: the next is refused with an error response; cancels free the slots`);
}

// deny, then admit again
send(l1, { type: 'deny', reason: 'key revoked (test)' });
await sleep(100);
send(l1, { type: 'admit' });
console.log('denied');

// reconnect: the leg closes and re-dials with a new hello
{
	const before = conns.length;
	send(l0, { type: 'reconnect' });
	await next((f) => f.conn === l0 && f.m.type === '_close', 60000, 'the leg to close');
	check(l0.closed.code === 1000, `reconnect closes with 1000 (${l0.closed.code})`);
	[l0] = await hellos(1, before, 20000);
	check(l0.path === '/gw/0', `re-dialed the same worker: ${l0.path}`);
	r = serve(l0, 'Still there?', { maxTokens: 4 });
	m = await response(r);
	check(!('error' in m), 'served after the reconnect');
	ok('reconnect: the leg closes (1000), re-dials, says hello again (same worker_id)');
}

// a request whose leg dies is dropped; then the whole gateway restarts
r = serve(l1, 'Lost leg.', { maxTokens: 200, stream: true });
await next((f) => f.m.type === 'chunk' && f.m.corr_id === r.corr, 60000, 'a first chunk');
r.cancelled = true;		// from here any frame for it is an error
{
	const before = conns.length;
	await stopServer();
	await sleep(300);
	await listen();
	const legs = await hellos(2, before, 20000);
	check(legs.map((c) => c.path).sort().join() === '/gw/0,/gw/1', 'both legs re-dialed');
	[l0, l1] = legs[0].worker === 0 ? legs : [legs[1], legs[0]];
	r = serve(l1, 'After the restart.', { maxTokens: 6, stream: true });
	m = await response(r);
	check(!('error' in m), 'served after the restart');
	await idle(l1, 'the orphaned request was not dropped');
	ok('gateway restart: both legs re-dial and say hello; the orphaned request ends silently');
}
await quiet(300);
console.log(`cancelled acks=${nAcked}`);
console.log(`done frames=${conns.reduce((a, c) => a + c.frames, 0)}`);
process.exit(0);
