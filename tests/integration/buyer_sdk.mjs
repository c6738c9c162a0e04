// SPDX-License-Identifier: MIT
// The official SDKs (npm openai 6.x and @anthropic-ai/sdk) against the
// buyer API library, served by tests/buyer/api_server with scripted miner
// output (tests/buyer/scenarios.json).  Every expectation is computed from
// the miner frames the server replays.
//
// usage: node buyer_sdk.mjs PEERS_DIR PORT SCENARIOS.json
//   prints one "ok - ..." line per check, exits 1 at the first failure.
// Oracle: independent: the official SDKs parse; expectations computed here
// from the miner frames replayed.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [peers, port, scenariosFile] = process.argv.slice(2);
if (!scenariosFile) {
	console.error('usage: node buyer_sdk.mjs PEERS_DIR PORT SCENARIOS.json');
	process.exit(2);
}
const load = (pkg) => import(pathToFileURL(join(peers, pkg, 'index.mjs')).href);
const { default: OpenAI } = await load('openai');
const { default: Anthropic } = await load('@anthropic-ai/sdk');

const scenarios = JSON.parse(readFileSync(scenariosFile, 'utf8'));
const base = `http://127.0.0.1:${port}`;
const MODEL = 'engy-test';
let checks = 0;

function ok(what) {
	checks++;
	console.log(`ok - ${what}`);
}

// The miner's final output of a scenario.
function miner(name) {
	const frames = scenarios[name];
	const out = frames[frames.length - 1].output;
	return { msg: out.choices[0].message, finish: out.choices[0].finish_reason, usage: out.usage };
}

const sc = (name) => ({ headers: { 'x-engy-scenario': name } });
const user = [{ role: 'user', content: 'Hello?' }];

async function rejects(p, cls, what, check) {
	try {
		await p;
	} catch (e) {
		assert.ok(e instanceof cls, `${what}: got ${e?.constructor?.name}: ${e?.message}`);
		if (check)
			check(e);
		ok(what);
		return;
	}
	assert.fail(`${what}: no error`);
}

// ---------------------------------------------------------------- OpenAI
const oai = new OpenAI({ apiKey: 'sk-good', baseURL: `${base}/v1`, timeout: 10000 });

async function openaiTests() {
	const list = await oai.models.list();
	assert.equal(list.data.length, 1);
	assert.equal(list.data[0].id, MODEL);
	assert.equal(list.data[0].object, 'model');
	assert.equal(list.data[0].owned_by, 'engy');
	assert.equal((await oai.models.retrieve(MODEL)).id, MODEL);
	ok('openai: models.list and models.retrieve');
	await rejects(oai.models.retrieve('nope'), OpenAI.NotFoundError, 'openai: unknown model id is NotFoundError');

	// Non-streaming, with reasoning and cached tokens.
	let m = miner('hello');
	const { data, request_id } = await oai.chat.completions
		.create({ model: MODEL, messages: user }, sc('hello'))
		.withResponse();
	assert.equal(request_id, 'req_test');
	assert.equal(data.object, 'chat.completion');
	assert.equal(data.model, MODEL);
	assert.match(data.id, /^chatcmpl-[0-9a-f]{24}$/);
	assert.equal(data.choices.length, 1);
	assert.equal(data.choices[0].message.role, 'assistant');
	assert.equal(data.choices[0].message.content, m.msg.content);
	assert.equal(data.choices[0].message.reasoning_content, m.msg.reasoning_content);
	assert.equal(data.choices[0].finish_reason, 'stop');
	assert.deepEqual(data.usage, m.usage);
	ok('openai: create (content, reasoning_content, usage with cached_tokens, x-request-id)');

	// Streaming with include_usage.
	let chunks = [];
	const stream = await oai.chat.completions.create(
		{ model: MODEL, messages: user, stream: true, stream_options: { include_usage: true } },
		sc('hello'));
	for await (const c of stream)
		chunks.push(c);
	assert.equal(chunks[0].choices[0].delta.role, 'assistant');
	const ids = new Set(chunks.map((c) => c.id));
	assert.equal(ids.size, 1);
	const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
	const reasoning = chunks.map((c) => c.choices[0]?.delta?.reasoning_content ?? '').join('');
	assert.equal(text, m.msg.content);
	assert.equal(reasoning, m.msg.reasoning_content);
	const withUsage = chunks.filter((c) => c.usage);
	assert.equal(withUsage.length, 1);
	assert.equal(withUsage[0], chunks[chunks.length - 1]);
	assert.deepEqual(withUsage[0].choices, []);
	assert.deepEqual(withUsage[0].usage, m.usage);
	assert.equal(chunks[chunks.length - 2].choices[0].finish_reason, 'stop');
	assert.equal(chunks.filter((c) => c.choices[0]?.finish_reason).length, 1);
	ok(`openai: stream with include_usage (${chunks.length} chunks, role first, one usage chunk last)`);

	chunks = [];
	for await (const c of await oai.chat.completions.create(
		{ model: MODEL, messages: user, stream: true }, sc('unstreamed_reasoning')))
		chunks.push(c);
	m = miner('unstreamed_reasoning');
	assert.equal(chunks.filter((c) => c.usage).length, 0);
	assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), m.msg.content);
	assert.equal(chunks.map((c) => c.choices[0]?.delta?.reasoning_content ?? '').join(''),
		m.msg.reasoning_content);
	ok('openai: stream without include_usage has no usage; unstreamed text arrives at the end');

	// Tool calls, non-streaming.
	m = miner('tools');
	const tools = [
		{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object',
			properties: { city: { type: 'string' } } } } },
		{ type: 'function', function: { name: 'get_time', parameters: { type: 'object' } } },
	];
	const tc = await oai.chat.completions.create({ model: MODEL, messages: user, tools }, sc('tools'));
	assert.equal(tc.choices[0].finish_reason, 'tool_calls');
	assert.equal(tc.choices[0].message.content, m.msg.content);
	assert.deepEqual(tc.choices[0].message.tool_calls, m.msg.tool_calls);
	ok('openai: create with tool calls equal to the miner\'s');

	// Tool calls through the SDK's own accumulator.
	let frags = 0;
	const runner = oai.chat.completions.stream({ model: MODEL, messages: user, tools }, sc('tools'));
	runner.on('chunk', (c) => {
		for (const t of c.choices[0]?.delta?.tool_calls ?? [])
			if (t.index === 0 && !t.id && t.function?.arguments)
				frags++;
	});
	const fin = await runner.finalChatCompletion();
	assert.equal(fin.choices[0].finish_reason, 'tool_calls');
	assert.equal(fin.choices[0].message.content, m.msg.content);
	assert.deepEqual(fin.choices[0].message.tool_calls.map(({ id, type, function: f }) =>
		({ id, type, function: { name: f.name, arguments: f.arguments } })), m.msg.tool_calls);
	assert.ok(frags > 2, `arguments came in ${frags} fragments`);
	ok(`openai: .stream().finalChatCompletion() rebuilds the tool calls (${frags} argument fragments)`);

	// finish_reason length, empty content.
	const len = await oai.chat.completions.create({ model: MODEL, messages: user, max_tokens: 16 },
		sc('length'));
	assert.equal(len.choices[0].finish_reason, 'length');
	assert.equal(len.choices[0].message.content, '');
	ok('openai: finish_reason length');

	// What the miner gets.
	const echo = await oai.chat.completions.create({
		model: MODEL, max_completion_tokens: 300, temperature: 0.3, stop: 'END',
		reasoning_effort: 'none', user: 'someone', messages: [
			{ role: 'developer', content: 'Be brief.' }, ...user],
	}, sc('echo'));
	const sent = JSON.parse(echo.choices[0].message.content);
	assert.deepEqual(sent.body, {
		messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello?' }],
		max_tokens: 300, temperature: 0.3, stop: 'END',
		chat_template_kwargs: { enable_thinking: false },
	});
	const echo2 = await oai.chat.completions.create({ model: MODEL, messages: user }, sc('echo'));
	assert.equal(JSON.parse(echo2.choices[0].message.content).body.max_tokens, 1024);
	ok('openai: the miner body (developer as system, max_tokens, default cap, thinking off)');

	// Errors: each SDK type, retried or not as the headers say.
	const bad = new OpenAI({ apiKey: 'sk-wrong', baseURL: `${base}/v1` });
	await rejects(bad.chat.completions.create({ model: MODEL, messages: user }),
		OpenAI.AuthenticationError, 'openai: 401 is AuthenticationError', (e) => {
			assert.equal(e.status, 401);
			assert.equal(e.code, 'invalid_api_key');
		});
	const broke = new OpenAI({ apiKey: 'sk-broke', baseURL: `${base}/v1` });
	await rejects(broke.chat.completions.create({ model: MODEL, messages: user }, sc('broke')),
		OpenAI.APIError, 'openai: 402 is an APIError with status 402', (e) => {
			assert.equal(e.status, 402);
			assert.equal(e.constructor.name, 'APIError');
			assert.equal(e.type, 'insufficient_quota');
			assert.match(e.message, /insufficient credits/);
		});
	await rejects(oai.chat.completions.create({ model: MODEL }), OpenAI.BadRequestError,
		'openai: 400 is BadRequestError naming the field', (e) => {
			assert.equal(e.param, 'messages');
			assert.match(e.message, /messages: missing/);
		});
	await rejects(oai.chat.completions.create({ model: MODEL, messages: user, max_tokens: 5000 }),
		OpenAI.BadRequestError, 'openai: max_tokens above the model limit is 400', (e) => {
			assert.equal(e.param, 'max_tokens');
			assert.match(e.message, /above this model's limit of 4096/);
		});
	await rejects(oai.chat.completions.create({ model: 'nope', messages: user }),
		OpenAI.NotFoundError, 'openai: unknown model is NotFoundError');
	await rejects(oai.chat.completions.create({ model: MODEL, messages: [
		{ role: 'user', content: 'x'.repeat(70000) }] }), OpenAI.APIError,
	'openai: oversized body is 413', (e) => assert.equal(e.status, 413));
	await rejects(oai.chat.completions.create({ model: MODEL, messages: user }, sc('status:429')),
		OpenAI.RateLimitError, 'openai: 429 is RateLimitError (retried)');
	const quota = new OpenAI({ apiKey: 'sk-quota', baseURL: `${base}/v1` });
	await rejects(quota.chat.completions.create({ model: MODEL, messages: user }, sc('quota')),
		OpenAI.RateLimitError, 'openai: 429 with x-should-retry false');
	await rejects(oai.chat.completions.create({ model: MODEL, messages: user }, sc('status:503')),
		OpenAI.InternalServerError, 'openai: 503 is InternalServerError (retried)',
		(e) => assert.equal(e.status, 503));
	await rejects((async () => {
		let got = '';
		for await (const c of await oai.chat.completions.create(
			{ model: MODEL, messages: user, stream: true }, sc('midstream')))
			got += c.choices[0]?.delta?.content ?? '';
		assert.fail(`the stream ended without an error after "${got}"`);
	})(), OpenAI.APIError, 'openai: an error after streaming began throws mid-stream',
	(e) => assert.match(e.message, /the miner went away/));
}

// ------------------------------------------------------------- Anthropic
const anth = new Anthropic({ apiKey: 'sk-good', baseURL: base, timeout: 10000 });
const thinking = { type: 'enabled', budget_tokens: 1024 };

// What a Message says (the stream helper adds parsed_output and
// stop_details of its own).
const pick = ({ type, role, model, content, stop_reason, stop_sequence, usage }) =>
	({ type, role, model, content, stop_reason, stop_sequence, usage });

function anthUsage(u) {
	const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
	return { input_tokens: u.prompt_tokens - cached, output_tokens: u.completion_tokens,
		cache_creation_input_tokens: 0, cache_read_input_tokens: cached };
}

async function anthropicTests() {
	const page = await anth.models.list();
	assert.equal(page.data[0].id, MODEL);
	assert.equal(page.data[0].type, 'model');
	assert.equal(page.data[0].display_name, 'Engy Test');
	assert.equal(page.data[0].created_at, '2026-01-01T00:00:00Z');
	ok('anthropic: models.list');

	let m = miner('hello');
	const msg = await anth.messages.create({ model: MODEL, max_tokens: 2048, thinking, messages: user },
		sc('hello'));
	assert.equal(msg.type, 'message');
	assert.equal(msg.role, 'assistant');
	assert.match(msg.id, /^msg_[0-9a-f]{24}$/);
	assert.equal(msg.content.length, 2);
	assert.equal(msg.content[0].type, 'thinking');
	assert.equal(msg.content[0].thinking, m.msg.reasoning_content);
	assert.ok(msg.content[0].signature.length > 0);
	assert.deepEqual(msg.content[1], { type: 'text', text: m.msg.content });
	assert.equal(msg.stop_reason, 'end_turn');
	assert.equal(msg.stop_sequence, null);
	assert.deepEqual(msg.usage, anthUsage(m.usage));
	ok('anthropic: create with thinking (thinking + text blocks, usage excluding cache reads)');

	const plain = await anth.messages.create({ model: MODEL, max_tokens: 100, messages: user }, sc('hello'));
	assert.deepEqual(plain.content.map((b) => b.type), ['text']);
	ok('anthropic: no thinking block unless thinking is asked for');

	// The stream accumulates to the same Message.
	let texts = '', thoughts = '', sig = 0;
	const ms = anth.messages.stream({ model: MODEL, max_tokens: 2048, thinking, messages: user },
		sc('hello'));
	ms.on('text', (d) => { texts += d; });
	ms.on('thinking', (d) => { thoughts += d; });
	ms.on('signature', () => { sig++; });
	const fin = await ms.finalMessage();
	assert.deepEqual(pick(fin), pick(msg));
	assert.equal(texts, m.msg.content);
	assert.equal(thoughts, m.msg.reasoning_content);
	assert.equal(sig, 1);
	ok('anthropic: stream().finalMessage() equals the non-streamed Message');

	// Tools.
	m = miner('tools');
	const tools = [
		{ name: 'get_weather', description: 'Weather', input_schema: { type: 'object',
			properties: { city: { type: 'string' } } } },
		{ name: 'get_time', input_schema: { type: 'object' } },
	];
	const want = m.msg.tool_calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.function.name,
		input: JSON.parse(c.function.arguments) }));
	const tm = await anth.messages.create({ model: MODEL, max_tokens: 1000, tools, messages: user },
		sc('tools'));
	assert.equal(tm.stop_reason, 'tool_use');
	assert.deepEqual(tm.content, [{ type: 'text', text: m.msg.content }, ...want]);
	assert.deepEqual(tm.usage, anthUsage(m.usage));
	ok('anthropic: create with tool_use blocks equal to the miner\'s calls');

	let partial = 0;
	const ts = anth.messages.stream({ model: MODEL, max_tokens: 1000, tools, messages: user }, sc('tools'));
	ts.on('inputJson', () => { partial++; });
	const tfin = await ts.finalMessage();
	assert.deepEqual(tfin.content, tm.content);
	assert.equal(tfin.stop_reason, 'tool_use');
	assert.ok(partial > 2, `input_json_delta came in ${partial} fragments`);
	ok(`anthropic: streamed tool_use input rebuilt by the SDK (${partial} fragments)`);

	// The next turn goes back as OpenAI messages.
	const turn = await anth.messages.create({
		model: MODEL, max_tokens: 500, system: 'Be brief.', tools,
		tool_choice: { type: 'tool', name: 'get_time' }, stop_sequences: ['END'],
		messages: [...user, { role: 'assistant', content: tm.content }, { role: 'user', content: [
			{ type: 'tool_result', tool_use_id: want[0].id, content: '22C' },
			{ type: 'tool_result', tool_use_id: want[1].id, content: [{ type: 'text', text: '14:00' }] },
			{ type: 'text', text: 'Thanks' }] }],
	}, sc('echo'));
	const sent = JSON.parse(turn.content[0].text).body;
	assert.deepEqual(sent.messages[0], { role: 'system', content: 'Be brief.' });
	assert.deepEqual(sent.messages[2].tool_calls, m.msg.tool_calls.map((c) => ({ id: c.id, type: 'function',
		function: { name: c.function.name, arguments: JSON.stringify(JSON.parse(c.function.arguments)) } })));
	assert.deepEqual(sent.messages.slice(3).map((x) => [x.role, x.tool_call_id ?? null]),
		[['tool', want[0].id], ['tool', want[1].id], ['user', null]]);
	assert.deepEqual(sent.tool_choice, { function: { name: 'get_time' }, type: 'function' });
	assert.deepEqual(sent.stop, ['END']);
	assert.equal(sent.max_tokens, 500);
	assert.deepEqual(sent.chat_template_kwargs, { enable_thinking: false });
	ok('anthropic: tool_use/tool_result round trip reaches the miner as OpenAI messages');

	const count = await anth.messages.countTokens({ model: MODEL, messages: user });
	assert.equal(typeof count.input_tokens, 'number');
	ok('anthropic: messages.countTokens');

	// Auth both ways, version header, errors.
	const bearer = new Anthropic({ authToken: 'sk-good', apiKey: null, baseURL: base });
	const bm = await bearer.messages.create({ model: MODEL, max_tokens: 10, messages: user }, sc('length'));
	assert.equal(bm.stop_reason, 'max_tokens');
	ok('anthropic: Authorization Bearer (authToken) accepted; length is max_tokens');
	const raw = await fetch(`${base}/v1/messages`, { method: 'POST', headers: {
		'x-api-key': 'sk-good', 'content-type': 'application/json' },
	body: JSON.stringify({ model: MODEL, max_tokens: 5, messages: user }) });
	assert.equal(raw.status, 400);
	const rawBody = await raw.json();
	assert.equal(rawBody.type, 'error');
	assert.equal(rawBody.error.type, 'invalid_request_error');
	assert.match(rawBody.error.message, /anthropic-version/);
	ok('anthropic: a request without anthropic-version is refused');
	const bad = new Anthropic({ apiKey: 'sk-wrong', baseURL: base });
	await rejects(bad.messages.create({ model: MODEL, max_tokens: 5, messages: user }),
		Anthropic.AuthenticationError, 'anthropic: 401 is AuthenticationError',
		(e) => assert.equal(e.type, 'authentication_error'));
	const broke = new Anthropic({ apiKey: 'sk-broke', baseURL: base });
	await rejects(broke.messages.create({ model: MODEL, max_tokens: 5, messages: user }, sc('broke')),
		Anthropic.PaymentRequiredError, 'anthropic: 402 is PaymentRequiredError', (e) => {
			assert.equal(e.status, 402);
			assert.equal(e.type, 'billing_error');
			assert.equal(e.requestID, null);
		});
	await rejects(anth.messages.create({ model: MODEL, messages: user }), Anthropic.BadRequestError,
		'anthropic: missing max_tokens is BadRequestError', (e) => {
			assert.equal(e.type, 'invalid_request_error');
			assert.match(e.message, /max_tokens: missing/);
		});
	await rejects(anth.messages.create({ model: 'nope', max_tokens: 5, messages: user }),
		Anthropic.NotFoundError, 'anthropic: unknown model is NotFoundError',
		(e) => assert.equal(e.type, 'not_found_error'));
	await rejects(anth.messages.create({ model: MODEL, max_tokens: 5, messages: [
		{ role: 'user', content: 'x'.repeat(70000) }] }), Anthropic.ContentTooLargeError,
	'anthropic: oversized body is ContentTooLargeError',
	(e) => assert.equal(e.type, 'request_too_large'));
	await rejects(anth.messages.create({ model: MODEL, max_tokens: 5, messages: user }, sc('status:429')),
		Anthropic.RateLimitError, 'anthropic: 429 is RateLimitError (retried)');
	await rejects(anth.messages.create({ model: MODEL, max_tokens: 5, messages: user }, sc('status:503')),
		Anthropic.InternalServerError, 'anthropic: 503 is an InternalServerError (overloaded_error)',
		(e) => {
			assert.equal(e.status, 503);
			assert.equal(e.type, 'overloaded_error');
		});
	await rejects(anth.messages.stream({ model: MODEL, max_tokens: 50, messages: user }, sc('midstream'))
		.finalMessage(), Anthropic.APIError, 'anthropic: event: error after streaming began',
	(e) => {
		assert.equal(e.type, 'api_error');
		assert.match(e.message, /the miner went away/);
	});
}

try {
	await openaiTests();
	await anthropicTests();
} catch (e) {
	console.log(`FAIL: ${e.stack}`);
	process.exit(1);
}
console.log(`done checks=${checks}`);
