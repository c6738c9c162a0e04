// SPDX-License-Identifier: MIT
// Client libraries as buyers of `engyd -c gateway.conf` on the OpenAI
// Responses API, legacy completions and stop sequences
// (gateway_responses.sh): npm openai 6, the Vercel AI SDK 6 (the default
// openai(model) is the Responses API; @ai-sdk/openai-compatible is chat
// completions), LangChain ChatOpenAI (chat completions and
// useResponsesApi), @anthropic-ai/sdk and LangChain ChatAnthropic.
// Model "tiny" is an engy miner on backend-ref (noise text, real counts);
// model "scripted" a scripted peer: a last message "script:JSON" names
// its output pieces, a request with tools gets the get_weather call with
// the reasoning "Let me look.", anything else "scripted w1 w2".
//
// usage: node gateway_responses.mjs PEERS_DIR BASE_URL KEY
//   prints "ok - ..." per check and "done checks=N"; exits 1 at the first
//   failure.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const [peers, base, key] = process.argv.slice(2);
if (!key) {
	console.error('usage: node gateway_responses.mjs PEERS_DIR BASE_URL KEY');
	process.exit(2);
}
const req = createRequire(`${peers}/`);
const load = (p) => import(pathToFileURL(req.resolve(p)).href);
const { default: OpenAI } = await load('openai');
const { default: Anthropic } = await load('@anthropic-ai/sdk');
const { generateText, streamText, tool, jsonSchema, stepCountIs } = await load('ai');
const { createOpenAI } = await load('@ai-sdk/openai');
const { createOpenAICompatible } = await load('@ai-sdk/openai-compatible');
const { ChatOpenAI } = await load('@langchain/openai');
const { ChatAnthropic } = await load('@langchain/anthropic');

let checks = 0;
const ok = (what) => {
	checks++;
	console.log(`ok - ${what}`);
};
const script = (pieces, extra = {}) => `script:${JSON.stringify({ pieces, ...extra })}`;
const opts = { maxRetries: 0, timeout: 30000 };
const oai = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, ...opts });
const ant = new Anthropic({ apiKey: key, baseURL: base, ...opts });
const weatherTool = { type: 'function', name: 'get_weather', description: 'Weather',
	parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } },
		required: ['city'] } };

// ---------------------------------------------------------------- openai 6
{
	const r = await oai.responses.create({ model: 'scripted', instructions: 'Be brief.',
		input: script(['Hel', 'lo']) });
	assert.equal(r.object, 'response');
	assert.equal(r.status, 'completed');
	assert.equal(r.output_text, 'Hello');
	assert.equal(r.usage.input_tokens, 11);
	assert.equal(r.usage.output_tokens, 2);
	assert.match(r.id, /^resp_[0-9a-f]{24}$/);
	ok('openai: responses.create plain (output_text, usage)');
}
{
	const stream = await oai.responses.create({ model: 'scripted', input: script(['a', 'b', 'c']),
		stream: true });
	const types = [];
	let text = '', done = null;
	for await (const e of stream) {
		types.push(e.type);
		if (e.type === 'response.output_text.delta')
			text += e.delta;
		if (e.type === 'response.completed')
			done = e.response;
	}
	assert.equal(text, 'abc');
	assert.deepEqual(types, ['response.created', 'response.in_progress', 'response.output_item.added',
		'response.content_part.added', 'response.output_text.delta', 'response.output_text.delta',
		'response.output_text.delta', 'response.output_text.done', 'response.content_part.done',
		'response.output_item.done', 'response.completed']);
	assert.equal(done.output[0].content[0].text, 'abc');
	assert.equal(done.usage.output_tokens, 3);
	ok('openai: responses.create stream (event order, deltas, completed with usage)');
}
{
	const first = await oai.responses.create({ model: 'scripted', input: 'Weather in Paris?',
		tools: [weatherTool], tool_choice: 'auto' });
	const call = first.output.find((i) => i.type === 'function_call');
	const rs = first.output.find((i) => i.type === 'reasoning');
	assert.equal(call.name, 'get_weather');
	assert.deepEqual(JSON.parse(call.arguments), { city: 'Paris', days: 3 });
	assert.equal(call.call_id, 'call_peer1');
	assert.equal(rs.summary[0].text, 'Let me look.');
	// The agent loop's second turn: the items back, the call's output.
	const second = await oai.responses.create({ model: 'scripted', store: false,
		input: [{ role: 'user', content: 'Weather in Paris?' }, ...first.output,
			{ type: 'function_call_output', call_id: call.call_id, output: 'sunny' }] });
	assert.equal(second.output_text, 'scripted w1 w2');
	ok('openai: responses.create with tools (reasoning item, function_call), then function_call_output');
}
{
	const stream = oai.responses.stream({ model: 'scripted', input: 'Weather?', tools: [weatherTool] });
	let args = '';
	stream.on('response.function_call_arguments.delta', (e) => { args += e.delta; });
	const fin = await stream.finalResponse();
	assert.deepEqual(JSON.parse(args), { city: 'Paris', days: 3 });
	assert.equal(fin.output.filter((i) => i.type === 'function_call').length, 1);
	ok('openai: responses.stream with a tool (arguments deltas, finalResponse)');
}
{
	const r = await oai.responses.create({ model: 'tiny', input: 'Say hi', max_output_tokens: 8 });
	assert.ok(['completed', 'incomplete'].includes(r.status));
	assert.ok(r.usage.output_tokens >= 1 && r.usage.output_tokens <= 8);
	assert.ok(r.usage.input_tokens > 0);
	if (r.status === 'incomplete')
		assert.equal(r.incomplete_details.reason, 'max_output_tokens');
	const s = await oai.responses.create({ model: 'tiny', input: 'Say hi', max_output_tokens: 4,
		stream: true });
	let last = null;
	for await (const e of s)
		last = e;
	assert.ok(['response.completed', 'response.incomplete'].includes(last.type));
	assert.ok(last.response.usage.output_tokens <= 4);
	ok(`openai: responses.create on an engy miner, plain (${r.status}) and streamed (${last.type})`);
}
await assert.rejects(oai.responses.create({ model: 'scripted', input: 'hi', previous_response_id: 'resp_x' }),
	(e) => e instanceof OpenAI.BadRequestError && /zero data retention/.test(e.message));
ok('openai: previous_response_id is a BadRequestError saying zero data retention');
{
	const c = await oai.completions.create({ model: 'tiny', prompt: 'Once', max_tokens: 5 });
	assert.equal(c.object, 'text_completion');
	assert.equal(typeof c.choices[0].text, 'string');
	assert.ok(c.usage.completion_tokens >= 1 && c.usage.completion_tokens <= 5);
	const s = await oai.completions.create({ model: 'scripted', prompt: script(['x', 'y', 'z']),
		stream: true, stream_options: { include_usage: true } });
	let text = '', finish = null, usage = null;
	for await (const ch of s) {
		if (ch.choices[0]) {
			text += ch.choices[0].text;
			finish = ch.choices[0].finish_reason || finish;
		}
		if (ch.usage)
			usage = ch.usage;
	}
	assert.equal(text, 'xyz');
	assert.equal(finish, 'stop');
	assert.equal(usage.completion_tokens, 3);
	ok('openai: completions.create plain (engy miner) and streamed with usage');
}
{
	const s = await oai.chat.completions.create({ model: 'scripted', stream: true, stop: ['}'],
		messages: [{ role: 'user', content: script(['{"a":', '1}', ' more']) }] });
	let text = '';
	for await (const ch of s)
		text += ch.choices[0]?.delta?.content || '';
	assert.equal(text, '{"a":1');
	ok('openai: a one-character stop "}" inside a chunk ends the stream before it');
}

// One-character stops on an engy miner: greedy decoding gives the same
// text each time, so each stop must cut it before the character's first
// place, wherever it sits inside a token; the miner stops generating
// there (fewer tokens) and names the string it matched.
{
	const body = { model: 'tiny', temperature: 0, max_tokens: 40,
		messages: [{ role: 'user', content: 'Tell me a long story' }] };
	const full = await oai.chat.completions.create(body);
	const text = full.choices[0].message.content;
	const chars = [...new Set([...text.slice(1)].filter((c) => /^[!-~\n]$/.test(c)))].slice(0, 8);
	assert.ok(chars.length >= 3, `too few characters in ${JSON.stringify(text)}`);
	// (Anthropic's template turns thinking off: a prompt of its own)
	const abody = { model: 'tiny', max_tokens: 40, temperature: 0, messages: body.messages };
	const atext = (await ant.messages.create(abody)).content[0].text;
	let fewer = 0, anth = 0;
	for (const c of chars) {
		const r = await oai.chat.completions.create({ ...body, stop: [c] });
		// (the miner's answer parser trims the text's ends)
		const want = text.slice(0, text.indexOf(c)).trimEnd();
		assert.equal(r.choices[0].message.content.trimEnd(), want, `stop ${JSON.stringify(c)}`);
		assert.equal(r.choices[0].finish_reason, 'stop');
		if (r.usage.completion_tokens < full.usage.completion_tokens)
			fewer++;
		if (!atext.includes(c))
			continue;
		const m = await ant.messages.create({ ...abody, stop_sequences: [c] });
		assert.equal(m.content[0].text.trimEnd(), atext.slice(0, atext.indexOf(c)).trimEnd());
		assert.equal(m.stop_reason, 'stop_sequence');
		assert.equal(m.stop_sequence, c);
		anth++;
	}
	assert.equal(fewer, chars.length, 'the miner generated past a stop');
	assert.ok(anth >= 1, `no stop character in the Anthropic text ${JSON.stringify(atext)}`);
	ok(`engy miner: ${chars.length} one-character stops cut the greedy text before their first place, ` +
		`the miner stopping there; ${anth} on Anthropic with stop_sequence named`);
}

// logprobs from an engy miner: one per output token of the text, each a
// log-probability (<= 0); streamed, in a chunk before the finish.  Sampled
// with a seed: unseeded, the tiny model's eight tokens may all be
// reasoning or a call, leaving no text to carry logprobs.
{
	const c = await oai.chat.completions.create({ model: 'tiny', logprobs: true, max_tokens: 8,
		seed: 7, messages: [{ role: 'user', content: 'Say hi' }] });
	const lp = c.choices[0].logprobs.content;
	assert.ok(lp.length >= 1 && lp.length <= c.usage.completion_tokens, `${lp.length} entries`);
	for (const e of lp) {
		assert.ok(Number.isFinite(e.logprob) && e.logprob <= 0, `logprob ${e.logprob}`);
		assert.equal(typeof e.token, 'string');
		assert.deepEqual(e.top_logprobs, []);
	}
	const s = await oai.chat.completions.create({ model: 'tiny', logprobs: true, max_tokens: 8,
		seed: 7, stream: true, messages: [{ role: 'user', content: 'Say hi' }] });
	let n = 0;
	for await (const ch of s)
		n += ch.choices[0]?.logprobs?.content?.length || 0;
	assert.ok(n >= 1, 'no streamed logprobs');
	const rr = await oai.responses.create({ model: 'tiny', input: 'Say hi', max_output_tokens: 8,
		temperature: 0, include: ['message.output_text.logprobs'] });
	const rlp = rr.output.find((i) => i.type === 'message').content[0].logprobs;
	assert.ok(rlp.length >= 1 && rlp.every((e) => e.logprob <= 0), 'responses logprobs');
	ok(`openai: logprobs from an engy miner (${lp.length} tokens plain, ${n} streamed, ${rlp.length} on responses.create with include)`);
}

// top_logprobs from an engy miner (backend-ref computes the alternatives
// as the log-softmax of the logits that chose each token): exactly N per
// token, sorted descending, each <= 0, the sampled token consistent with
// them (greedy: it is the first, with the same logprob; sampled: it is
// one of them with the same logprob, or below the last).  The scripted
// peer serves no alternatives: a request for them is a 400 saying so.
{
	const alts = (e, want, what) => {
		assert.equal(e.top_logprobs.length, want, `${what}: ${e.top_logprobs.length} alternatives`);
		e.top_logprobs.forEach((a, i) => {
			assert.equal(typeof a.token, 'string');
			assert.ok(Number.isFinite(a.logprob) && a.logprob <= 0, `${what}: logprob ${a.logprob}`);
			assert.ok(Array.isArray(a.bytes), `${what}: bytes`);
			if (i)
				assert.ok(a.logprob <= e.top_logprobs[i - 1].logprob, `${what}: not sorted`);
		});
		const same = e.top_logprobs.find((a) => a.token === e.token && a.logprob === e.logprob);
		assert.ok(same || e.logprob <= e.top_logprobs[want - 1].logprob,
			`${what}: sampled ${JSON.stringify(e)} not consistent with its alternatives`);
	};
	const msgs = [{ role: 'user', content: 'Say hi' }];
	const g = await oai.chat.completions.create({ model: 'tiny', logprobs: true, top_logprobs: 3,
		temperature: 0, max_tokens: 8, messages: msgs });
	const glp = g.choices[0].logprobs.content;
	assert.ok(glp.length >= 1);
	for (const e of glp) {
		alts(e, 3, 'greedy');
		assert.equal(e.top_logprobs[0].token, e.token, 'greedy: the sampled token is not the first');
		assert.equal(e.top_logprobs[0].logprob, e.logprob);
	}
	const t = await oai.chat.completions.create({ model: 'tiny', logprobs: true, top_logprobs: 3,
		temperature: 1, seed: 7, max_tokens: 8, messages: msgs });
	for (const e of t.choices[0].logprobs.content)
		alts(e, 3, 'sampled');
	const s = await oai.chat.completions.create({ model: 'tiny', logprobs: true, top_logprobs: 3,
		temperature: 0, max_tokens: 8, stream: true, messages: msgs });
	const slp = [];
	for await (const ch of s)
		slp.push(...(ch.choices[0]?.logprobs?.content || []));
	assert.equal(slp.length, glp.length, 'streamed logprobs');
	slp.forEach((e, i) => {
		alts(e, 3, 'streamed');
		assert.deepEqual(e.top_logprobs, glp[i].top_logprobs, 'streamed greedy != plain greedy');
	});
	const c = await oai.completions.create({ model: 'tiny', prompt: 'Say hi', logprobs: 3,
		temperature: 0, max_tokens: 8 });
	const clp = c.choices[0].logprobs;
	assert.ok(clp.tokens.length >= 1 && clp.tokens.length === clp.token_logprobs.length &&
		clp.tokens.length === clp.top_logprobs.length && clp.tokens.length === clp.text_offset.length,
		`legacy logprobs ${JSON.stringify(clp)}`);
	clp.top_logprobs.forEach((d, i) => {
		// (alternatives whose texts are the same, as lone bytes of a
		// UTF-8 sequence are, share one key of the dict: the likeliest)
		const v = Object.values(d);
		assert.ok(v.length >= 1 && v.length <= 3, `legacy alternatives ${JSON.stringify(d)}`);
		assert.ok(v.every((x) => Number.isFinite(x) && x <= 0));
		assert.ok(clp.token_logprobs[i] <= 0);
		assert.equal(d[clp.tokens[i]], clp.token_logprobs[i], 'legacy greedy: sampled not among');
		assert.equal(Math.max(...v), clp.token_logprobs[i]);
	});
	const rr = await oai.responses.create({ model: 'tiny', input: 'Say hi', max_output_tokens: 8,
		temperature: 0, top_logprobs: 3, include: ['message.output_text.logprobs'] });
	const rlp = rr.output.find((i) => i.type === 'message').content[0].logprobs;
	assert.ok(rlp.length >= 1);
	for (const e of rlp)
		alts(e, 3, 'responses');
	// the same checkpoint through backend-sglang and engy's serve: the
	// same greedy tokens and alternatives, plain and streamed
	const gs = await oai.chat.completions.create({ model: 'tiny-sgl', logprobs: true, top_logprobs: 3,
		temperature: 0, max_tokens: 8, messages: msgs });
	assert.equal(gs.choices[0].message.content, g.choices[0].message.content);
	assert.deepEqual(gs.choices[0].logprobs.content, glp, 'backend-sglang: other alternatives');
	const ss = await oai.chat.completions.create({ model: 'tiny-sgl', logprobs: true, top_logprobs: 3,
		temperature: 0, max_tokens: 8, stream: true, messages: msgs });
	const sslp = [];
	for await (const ch of ss)
		sslp.push(...(ch.choices[0]?.logprobs?.content || []));
	assert.deepEqual(sslp, glp, 'backend-sglang streamed: other alternatives');
	await assert.rejects(oai.chat.completions.create({ model: 'scripted', logprobs: true, top_logprobs: 3,
		messages: [{ role: 'user', content: 'x' }] }), (e) => e instanceof OpenAI.BadRequestError &&
		/top_logprobs: no worker serving this model returns alternatives/.test(e.message));
	await assert.rejects(oai.chat.completions.create({ model: 'tiny', top_logprobs: 3,
		messages: [{ role: 'user', content: 'x' }] }), (e) => e instanceof OpenAI.BadRequestError &&
		/logprobs must be set to true/.test(e.message));
	ok(`openai: top_logprobs 3 from an engy miner: chat greedy (${glp.length} tokens) and sampled, ` +
		`streamed (${slp.length}), legacy completions logprobs: 3, responses.create with include; ` +
		'the same through backend-sglang and engy\'s serve (plain and streamed); ' +
		'a model whose workers serve no alternatives is a 400 saying so');
}

// ---------------------------------------------------------------- the AI SDK 6
{
	const provider = createOpenAI({ apiKey: key, baseURL: `${base}/v1` });
	const g = await generateText({ model: provider('scripted'), prompt: script(['Hi', ' there']) });
	assert.equal(g.text, 'Hi there');
	assert.equal(g.finishReason, 'stop');
	assert.equal(g.usage.outputTokens, 2);
	const s = streamText({ model: provider('scripted'), prompt: script(['a', 'b']) });
	let t = '';
	for await (const d of s.textStream)
		t += d;
	assert.equal(t, 'ab');
	assert.equal(await s.finishReason, 'stop');
	ok('AI SDK: openai(model) (Responses) generateText and streamText');
	let ran = 0;
	const tg = await generateText({ model: provider('scripted'), prompt: 'Weather in Paris?',
		providerOptions: { openai: { store: false } }, stopWhen: stepCountIs(2),
		tools: { get_weather: tool({ description: 'Weather',
			inputSchema: jsonSchema({ type: 'object', properties: { city: { type: 'string' },
				days: { type: 'integer' } }, required: ['city'] }),
			execute: async ({ city }) => { ran++; return `sunny in ${city}`; } }) } });
	assert.equal(tg.steps.length, 2);
	assert.equal(tg.steps[0].toolCalls[0].toolName, 'get_weather');
	assert.deepEqual(tg.steps[0].toolCalls[0].input, { city: 'Paris', days: 3 });
	assert.equal(tg.steps[0].toolResults[0].output, 'sunny in Paris');
	assert.equal(ran, 2);
	const ts = streamText({ model: provider('scripted'), prompt: 'Weather?',
		tools: { get_weather: tool({ inputSchema: jsonSchema({ type: 'object',
			properties: { city: { type: 'string' } } }) }) } });
	const calls = await ts.toolCalls;
	assert.equal(calls[0].toolName, 'get_weather');
	assert.equal(await ts.finishReason, 'tool-calls');
	ok('AI SDK: openai(model) with tools: a two-step agent loop (generateText) and streamText tool calls');
	await assert.rejects(generateText({ model: provider('scripted'), prompt: 'x',
		providerOptions: { openai: { store: true } } }), /zero data retention/);
	ok('AI SDK: store: true is refused with its reason');
}
{
	const compat = createOpenAICompatible({ name: 'engy', apiKey: key, baseURL: `${base}/v1` });
	const g = await generateText({ model: compat('scripted'), prompt: script(['line one', '.\nline two']),
		stopSequences: ['\n'] });
	assert.equal(g.text, 'line one.');
	assert.equal(g.finishReason, 'stop');
	ok('AI SDK openai-compatible: stopSequences ["\\n"] inside a chunk');
}

// ---------------------------------------------------------------- LangChain
{
	const chat = new ChatOpenAI({ model: 'scripted', apiKey: key, configuration: { baseURL: `${base}/v1` },
		maxRetries: 0 });
	const m = await chat.invoke(script(['Lang', 'Chain']));
	assert.equal(m.content, 'LangChain');
	const rchat = new ChatOpenAI({ model: 'scripted', apiKey: key, useResponsesApi: true,
		configuration: { baseURL: `${base}/v1` }, maxRetries: 0 });
	const rm = await rchat.invoke(script(['Res', 'ponses']));
	const text = typeof rm.content === 'string' ? rm.content : rm.content.map((p) => p.text || '').join('');
	assert.equal(text, 'Responses');
	assert.equal(rm.usage_metadata.output_tokens, 2);
	let st = '';
	for await (const c of await rchat.stream(script(['s', 't'])))
		st += typeof c.content === 'string' ? c.content : c.content.map((p) => p.text || '').join('');
	assert.equal(st, 'st');
	const bound = rchat.bindTools([{ type: 'function', function: { name: 'get_weather',
		description: 'Weather', parameters: weatherTool.parameters } }]);
	const tm = await bound.invoke('Weather?');
	assert.equal(tm.tool_calls[0].name, 'get_weather');
	assert.deepEqual(tm.tool_calls[0].args, { city: 'Paris', days: 3 });
	ok('LangChain ChatOpenAI: chat completions, and useResponsesApi invoke, stream, bindTools');
}
{
	const m = await ant.messages.create({ model: 'scripted', max_tokens: 50, stop_sequences: ['\n'],
		messages: [{ role: 'user', content: script(['first.\nsecond']) }] });
	assert.equal(m.content[0].text, 'first.');
	assert.equal(m.stop_reason, 'stop_sequence');
	assert.equal(m.stop_sequence, '\n');
	const s = ant.messages.stream({ model: 'scripted', max_tokens: 50, stop_sequences: ['}'],
		messages: [{ role: 'user', content: script(['{"k":', '2', '}', 'after']) }] });
	let t = '';
	s.on('text', (d) => { t += d; });
	const fin = await s.finalMessage();
	assert.equal(t, '{"k":2');
	assert.equal(fin.stop_reason, 'stop_sequence');
	assert.equal(fin.stop_sequence, '}');
	ok('@anthropic-ai/sdk: stop_sequences "\\n" inside a chunk and "}" streamed: stop_reason stop_sequence');
}
{
	const chat = new ChatAnthropic({ model: 'scripted', apiKey: key, anthropicApiUrl: base, maxRetries: 0 });
	const m = await chat.invoke(script(['{"x":1}', ' and more']), { stop: ['}'] });
	assert.equal(m.content, '{"x":1');
	assert.equal(m.response_metadata.stop_reason, 'stop_sequence');
	ok('LangChain ChatAnthropic: stop ["}"] → stop_reason stop_sequence');
}
console.log(`done checks=${checks}`);
