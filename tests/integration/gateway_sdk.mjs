// SPDX-License-Identifier: MIT
// The official SDKs (npm openai 6.x, @anthropic-ai/sdk) as buyers of
// `engyd -c gateway.conf`: model "tiny" is served by two engy miners on
// backend-ref (a generated checkpoint: the text is noise, the shapes and
// counts are real), model "scripted" by a scripted miner peer
// (bad_miner.mjs good) whose output is known: tool calls, reasoning,
// cached tokens.
//
// usage: node gateway_sdk.mjs PEERS_DIR BASE_URL KEY BROKE_KEY MARKER
//   prints "ok - ..." per check and "route tag=T request=ID" per routed
//   request of the routing checks (the shell maps ids to workers through
//   the request log); exits 1 at the first failure.
// Oracle: independent: the official SDKs; expected outputs from the
// scripted miner's frames.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [peers, base, key, brokeKey, marker] = process.argv.slice(2);
if (!marker) {
	console.error('usage: node gateway_sdk.mjs PEERS_DIR BASE_URL KEY BROKE_KEY MARKER');
	process.exit(2);
}
const load = (pkg) => import(pathToFileURL(join(peers, pkg, 'index.mjs')).href);
const { default: OpenAI } = await load('openai');
const { default: Anthropic } = await load('@anthropic-ai/sdk');

let checks = 0;
const ok = (what) => {
	checks++;
	console.log(`ok - ${what}`);
};
async function rejects(p, cls, what, check) {
	try {
		await p;
	} catch (e) {
		assert.ok(e instanceof cls, `${what}: got ${e?.constructor?.name}: ${e?.status} ${e?.message}`);
		if (check)
			check(e);
		ok(what);
		return;
	}
	assert.fail(`${what}: no error`);
}

const opts = { maxRetries: 0, timeout: 30000 };
const oai = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, ...opts });
const ant = new Anthropic({ apiKey: key, baseURL: base, ...opts });
const user = (t) => [{ role: 'user', content: t }];
const weather = [{ type: 'function', function: { name: 'get_weather', description: 'Weather',
	parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } },
		required: ['city'] } } }];

// ---------------------------------------------------------------- OpenAI
{
	const ids = (await oai.models.list()).data.map((m) => m.id).sort();
	assert.deepEqual(ids, ['scripted', 'tiny']);
	const m = await oai.models.retrieve('tiny');
	assert.equal(m.id, 'tiny');
	ok('openai: models.list and models.retrieve');
}
{
	const { data, request_id } = await oai.chat.completions
		.create({ model: 'tiny', messages: user('Say hi'), max_tokens: 8 }).withResponse();
	assert.match(request_id, /^req_[0-9a-f]{24}$/);
	assert.equal(data.object, 'chat.completion');
	assert.equal(data.model, 'tiny');
	assert.equal(data.choices[0].message.role, 'assistant');
	assert.equal(typeof data.choices[0].message.content, 'string');
	assert.ok(['stop', 'length'].includes(data.choices[0].finish_reason));
	assert.ok(data.usage.prompt_tokens > 0, 'prompt_tokens');
	assert.ok(data.usage.completion_tokens >= 1 && data.usage.completion_tokens <= 8);
	assert.equal(data.usage.total_tokens, data.usage.prompt_tokens + data.usage.completion_tokens);
	assert.equal(data.usage.prompt_tokens_details.cached_tokens, 0);
	ok('openai: a plain completion from an engy miner (usage, finish_reason, x-request-id)');
}
{
	const stream = await oai.chat.completions.create({ model: 'tiny', messages: user('Stream it'),
		max_tokens: 8, stream: true, stream_options: { include_usage: true } });
	let text = '', usage = null, finish = null, roles = 0, n = 0;
	for await (const c of stream) {
		n++;
		if (c.usage) {
			usage = c.usage;
			assert.deepEqual(c.choices, []);
			continue;
		}
		const ch = c.choices[0];
		if (ch.delta.role)
			roles++;
		text += ch.delta.content || '';
		if (ch.finish_reason)
			finish = ch.finish_reason;
	}
	assert.equal(roles, 1);
	assert.ok(finish, 'finish_reason');
	assert.ok(usage && usage.completion_tokens >= 1 && usage.completion_tokens <= 8);
	assert.ok(n >= 3);
	// Greedy: sampled, the tiny model's six tokens may all be reasoning
	// or a call, and the SDK's content is then null.
	const fin = await oai.chat.completions.stream({ model: 'tiny', messages: user('Again'),
		max_tokens: 6, temperature: 0 }).finalChatCompletion();
	assert.equal(fin.choices[0].message.role, 'assistant');
	assert.equal(typeof fin.choices[0].message.content, 'string');
	ok(`openai: streamed from an engy miner with include_usage (${n} chunks), and .stream().finalChatCompletion()`);
}
{
	const r = await oai.chat.completions.create({ model: 'scripted', messages: user('Weather in Paris?'),
		tools: weather, max_tokens: 64 });
	const msg = r.choices[0].message;
	assert.equal(r.choices[0].finish_reason, 'tool_calls');
	assert.equal(msg.tool_calls.length, 1);
	assert.equal(msg.tool_calls[0].type, 'function');
	assert.equal(msg.tool_calls[0].function.name, 'get_weather');
	assert.deepEqual(JSON.parse(msg.tool_calls[0].function.arguments), { city: 'Paris', days: 3 });
	assert.equal(msg.reasoning_content, 'Let me look.');
	assert.equal(r.usage.prompt_tokens, 20);
	assert.equal(r.usage.completion_tokens, 12);
	assert.equal(r.usage.prompt_tokens_details.cached_tokens, 5);
	const fin = await oai.chat.completions.stream({ model: 'scripted', messages: user('Weather?'),
		tools: weather, max_tokens: 64, stream_options: { include_usage: true } }).finalChatCompletion();
	const tc = fin.choices[0].message.tool_calls;
	assert.equal(fin.choices[0].finish_reason, 'tool_calls');
	assert.equal(tc[0].function.name, 'get_weather');
	assert.deepEqual(JSON.parse(tc[0].function.arguments), { city: 'Paris', days: 3 });
	ok('openai: tool calls, reasoning_content and cached_tokens, plain and streamed');
}
{
	const stream = await oai.chat.completions.create({ model: 'scripted', messages: user('Talk'),
		max_tokens: 64, stream: true });
	let text = '', deltas = 0;
	for await (const c of stream) {
		if (c.choices[0]?.delta?.content) {
			deltas++;
			text += c.choices[0].delta.content;
		}
	}
	assert.equal(text, `${marker} w1 w2`);
	assert.equal(deltas, 3);
	ok('openai: every miner chunk is relayed as its own delta');
}
{
	const bad = new OpenAI({ apiKey: 'sk-engy-not-a-key', baseURL: `${base}/v1`, ...opts });
	await rejects(bad.chat.completions.create({ model: 'tiny', messages: user('x') }),
		OpenAI.AuthenticationError, 'openai: a bad key is AuthenticationError (401)');
	const broke = new OpenAI({ apiKey: brokeKey, baseURL: `${base}/v1`, ...opts });
	await rejects(broke.chat.completions.create({ model: 'tiny', messages: user('x'), max_tokens: 8 }),
		OpenAI.APIError, 'openai: no credit is a 402 APIError', (e) => {
			assert.equal(e.status, 402);
			assert.equal(e.code, 'insufficient_quota');
		});
	await rejects(oai.chat.completions.create({ model: 'nope', messages: user('x') }),
		OpenAI.NotFoundError, 'openai: an unknown model is NotFoundError (404)');
	await rejects(oai.chat.completions.create({ model: 'tiny', messages: user('x'), max_tokens: 100000 }),
		OpenAI.BadRequestError, 'openai: max_tokens over the model spec is BadRequestError (400)',
		(e) => assert.equal(e.param, 'max_tokens'));
	await rejects(oai.chat.completions.create({ model: 'tiny', messages: [] }),
		OpenAI.BadRequestError, 'openai: no messages is BadRequestError (400)');
	await rejects(oai.chat.completions.create({ model: 'tiny', messages: user('x'.repeat(5000)) }),
		OpenAI.BadRequestError, 'openai: a prompt over max_input_tokens is BadRequestError (400)',
		(e) => assert.match(e.message, /over the model's max_input_tokens 4096/));
}

// ------------------------------------------------------------- Anthropic
{
	// Greedy, so that the first block is text (sampled, it may be thinking).
	const m = await ant.messages.create({ model: 'tiny', max_tokens: 8, temperature: 0,
		messages: user('Hi') });
	assert.equal(m.type, 'message');
	assert.equal(m.role, 'assistant');
	assert.equal(m.content[0].type, 'text');
	assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason));
	assert.ok(m.usage.input_tokens > 0);
	assert.ok(m.usage.output_tokens >= 1 && m.usage.output_tokens <= 8);
	const s = await ant.messages.stream({ model: 'tiny', max_tokens: 8, temperature: 0,
		messages: user('Hi') }).finalMessage();
	assert.equal(s.content[0].type, 'text');
	assert.ok(s.usage.output_tokens >= 1);
	ok('anthropic: messages.create and messages.stream().finalMessage() from an engy miner');
}
{
	const tools = [{ name: 'get_weather', description: 'Weather', input_schema: { type: 'object',
		properties: { city: { type: 'string' }, days: { type: 'integer' } } } }];
	const req = { model: 'scripted', max_tokens: 2048, tools, thinking: { type: 'enabled', budget_tokens: 1024 },
		messages: user('Weather in Paris?') };
	for (const m of [await ant.messages.create(req), await ant.messages.stream(req).finalMessage()]) {
		assert.equal(m.stop_reason, 'tool_use');
		const th = m.content.find((b) => b.type === 'thinking');
		assert.equal(th.thinking, 'Let me look.');
		const tu = m.content.find((b) => b.type === 'tool_use');
		assert.equal(tu.name, 'get_weather');
		assert.deepEqual(tu.input, { city: 'Paris', days: 3 });
		assert.equal(m.usage.output_tokens, 12);
		assert.equal(m.usage.cache_read_input_tokens, 5);
		assert.equal(m.usage.input_tokens, 15);
	}
	ok('anthropic: tool_use and thinking blocks, cache reads apart from input_tokens, plain and streamed');
}
{
	const bad = new Anthropic({ apiKey: 'sk-engy-not-a-key', baseURL: base, ...opts });
	await rejects(bad.messages.create({ model: 'tiny', max_tokens: 8, messages: user('x') }),
		Anthropic.AuthenticationError, 'anthropic: a bad key is AuthenticationError (401)');
	const broke = new Anthropic({ apiKey: brokeKey, baseURL: base, ...opts });
	await rejects(broke.messages.create({ model: 'tiny', max_tokens: 8, messages: user('x') }),
		Anthropic.APIError, 'anthropic: no credit is a 402 billing_error', (e) => {
			assert.equal(e.status, 402);
			assert.equal(e.error?.error?.type, 'billing_error');
		});
	const c = await ant.messages.countTokens({ model: 'tiny', messages: user('Count me') });
	assert.ok(c.input_tokens > 0);
	ok('anthropic: count_tokens');
}

// --------------------------------------------------------------- routing
// Short prompts (under affinity_min_chars) go round-robin by free
// capacity; long ones keep their prefix on one worker.
for (let i = 0; i < 30; i++) {
	const { request_id } = await oai.chat.completions
		.create({ model: 'tiny', messages: user(`rr ${i}`), max_tokens: 2 }).withResponse();
	console.log(`route tag=rr request=${request_id}`);
}
const long = (seed) => `${seed} `.repeat(150);
for (const tag of ['aff1', 'aff2', 'aff3']) {
	for (let i = 0; i < 6; i++) {
		const { request_id } = await oai.chat.completions
			.create({ model: 'tiny', messages: user(`${long(tag)} question ${i}`), max_tokens: 2 })
			.withResponse();
		console.log(`route tag=${tag} request=${request_id}`);
	}
}
ok('routing traffic sent');
console.log(`done checks=${checks}`);
