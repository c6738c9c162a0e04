// SPDX-License-Identifier: MIT
// Client libraries as buyers of structured outputs and forced tool calls
// from `engyd -c gateway.conf`: model "tiny" is served by an engy miner on
// backend-ref with a generated checkpoint of random weights, so its text
// is noise and only constrained decoding can make it match a schema.
// Every schema here is bounded (strings with maxLength, arrays with
// maxItems, enums), so each output completes well within max_tokens.
// Outputs are checked with zod (the schemas' own library) or with the
// small validator below, written from the JSON Schema specification (not
// from engy's code).
//
// usage: node gateway_constrain.mjs PEERS_DIR BASE_URL KEY
//   prints "ok - ..." per check and "done checks=N"; exits 1 at the first
//   failure.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [peers, base, key] = process.argv.slice(2);
if (!key) {
	console.error('usage: node gateway_constrain.mjs PEERS_DIR BASE_URL KEY');
	process.exit(2);
}
const load = async (pkg, file) =>
	import(pathToFileURL(join(peers, pkg, file || 'index.mjs')).href);
const { default: OpenAI } = await load('openai');
const { default: Anthropic } = await load('@anthropic-ai/sdk');
const { z } = await load('zod', 'index.js');
const ai = await load('ai', 'dist/index.mjs');
const { createOpenAICompatible } = await load('@ai-sdk/openai-compatible', 'dist/index.mjs');
const { createAnthropic } = await load('@ai-sdk/anthropic', 'dist/index.mjs');
const { ChatOpenAI } = await load('@langchain/openai', 'dist/index.js');
const { ChatAnthropic } = await load('@langchain/anthropic', 'dist/index.js');

let checks = 0;
const ok = (what) => {
	checks++;
	console.log(`ok - ${what}`);
};

// ---- an independent validator for the schemas used here ----
function valid(s, v, root = s) {
	if (s.$ref) {
		const name = s.$ref.replace(/^#\/\$defs\//, '');
		return valid(root.$defs[name], v, root);
	}
	if ('const' in s) return JSON.stringify(s.const) === JSON.stringify(v);
	if (s.enum) return s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v));
	if (s.anyOf) return s.anyOf.some((b) => valid(b, v, root));
	const types = s.type === undefined ? null : [].concat(s.type);
	const is = (t) => {
		switch (t) {
		case 'null': return v === null;
		case 'boolean': return typeof v === 'boolean';
		case 'integer': return Number.isInteger(v);
		case 'number': return typeof v === 'number';
		case 'string':
			return typeof v === 'string' && [...v].length <= (s.maxLength ?? Infinity) &&
				[...v].length >= (s.minLength ?? 0);
		case 'array':
			return Array.isArray(v) && v.length <= (s.maxItems ?? Infinity) &&
				v.length >= (s.minItems ?? 0) && v.every((x) => !s.items || valid(s.items, x, root));
		case 'object':
			if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
			for (const r of s.required || []) if (!(r in v)) return false;
			for (const [k, x] of Object.entries(v)) {
				if (!s.properties) continue;
				if (!(k in s.properties)) return false;
				if (!valid(s.properties[k], x, root)) return false;
			}
			return true;
		}
		return false;
	};
	return types ? types.some(is) : true;
}
function check(schema, text, what) {
	let v;
	try {
		v = JSON.parse(text);
	} catch (e) {
		assert.fail(`${what}: not JSON: ${JSON.stringify(text)}`);
	}
	assert.ok(valid(schema, v), `${what}: ${text} does not match ${JSON.stringify(schema)}`);
	return v;
}

const person = {
	type: 'object',
	properties: {
		name: { type: 'string', maxLength: 10 },
		age: { type: 'integer', minimum: 0 },
		role: { enum: ['admin', 'user', 'guest'] },
		tags: { type: 'array', items: { type: 'string', maxLength: 4 }, maxItems: 3 },
		nick: { anyOf: [{ type: 'string', maxLength: 5 }, { type: 'null' }] },
	},
	required: ['name', 'age', 'role', 'tags', 'nick'],
	additionalProperties: false,
};
const weatherParams = {
	type: 'object',
	properties: { city: { type: 'string', maxLength: 12 }, celsius: { type: 'boolean' } },
	required: ['city', 'celsius'],
	additionalProperties: false,
};
const timeParams = {
	type: 'object',
	properties: { zone: { enum: ['UTC', 'CET'] } },
	required: ['zone'],
	additionalProperties: false,
};
const user = [{ role: 'user', content: 'Describe someone as JSON.' }];
const MAX = 300;

// ---- openai@6 ----
const oai = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, maxRetries: 0 });
{
	const r = await oai.chat.completions.create({
		model: 'tiny', max_tokens: MAX, messages: user,
		response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: person } },
	});
	assert.equal(r.choices[0].finish_reason, 'stop');
	check(person, r.choices[0].message.content, 'openai json_schema');
	ok('openai@6 response_format json_schema (strict): the content parses and matches');
}
{
	const s = await oai.chat.completions.create({
		model: 'tiny', max_tokens: MAX, messages: user, stream: true,
		response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: person } },
	});
	let text = '';
	for await (const c of s) text += c.choices[0]?.delta?.content || '';
	check(person, text, 'openai json_schema streamed');
	ok('openai@6 json_schema streamed: the deltas join into matching JSON');
}
{
	const r = await oai.chat.completions.create({
		model: 'tiny', max_tokens: MAX, messages: user, response_format: { type: 'json_object' },
	});
	// Any object: the random model's strings would run on, but the
	// budget closes the object before max_tokens.
	const text = r.choices[0].message.content;
	assert.equal(r.choices[0].finish_reason, 'stop', text);
	const v = JSON.parse(text);
	assert.ok(v && typeof v === 'object' && !Array.isArray(v));
	ok('openai@6 json_object: a JSON object, closed before max_tokens (finish_reason stop)');
}
const oaiTools = [
	{ type: 'function', function: { name: 'get_weather', parameters: weatherParams } },
	{ type: 'function', function: { name: 'get_time', parameters: timeParams } },
];
for (const [choice, what] of [['required', 'required'],
	[{ type: 'function', function: { name: 'get_time' } }, 'named get_time']]) {
	const r = await oai.chat.completions.create({
		model: 'tiny', max_tokens: MAX, messages: [{ role: 'user', content: 'Weather?' }],
		tools: oaiTools, tool_choice: choice,
	});
	const m = r.choices[0].message;
	assert.equal(r.choices[0].finish_reason, 'tool_calls', what);
	assert.ok(m.tool_calls?.length >= 1, `${what}: no tool call`);
	for (const c of m.tool_calls) {
		const t = oaiTools.find((x) => x.function.name === c.function.name);
		assert.ok(t, `${what}: unknown tool ${c.function.name}`);
		if (typeof choice === 'object') assert.equal(c.function.name, 'get_time');
		check(t.function.parameters, c.function.arguments, `openai tool_choice ${what}`);
	}
	ok(`openai@6 tool_choice ${what}: a tool call whose arguments match the tool's schema`);
}

// ---- @anthropic-ai/sdk ----
const anth = new Anthropic({ apiKey: key, baseURL: base, maxRetries: 0 });
{
	const r = await anth.messages.create({
		model: 'tiny', max_tokens: MAX, messages: user,
		output_config: { format: { type: 'json_schema', schema: person } },
	});
	assert.equal(r.content[0].type, 'text');
	check(person, r.content[0].text, 'anthropic output_config.format');
	ok('@anthropic-ai/sdk output_config.format json_schema: the text parses and matches');
}
const anthTools = [
	{ name: 'get_weather', input_schema: weatherParams },
	{ name: 'get_time', input_schema: timeParams },
];
for (const [choice, what] of [[{ type: 'any' }, 'any'], [{ type: 'tool', name: 'get_weather' }, 'tool get_weather']]) {
	const r = await anth.messages.create({
		model: 'tiny', max_tokens: MAX, messages: [{ role: 'user', content: 'Weather?' }],
		tools: anthTools, tool_choice: choice,
	});
	assert.equal(r.stop_reason, 'tool_use', what);
	const uses = r.content.filter((b) => b.type === 'tool_use');
	assert.ok(uses.length >= 1, `${what}: no tool_use`);
	for (const u of uses) {
		const t = anthTools.find((x) => x.name === u.name);
		assert.ok(t, `${what}: unknown tool ${u.name}`);
		if (choice.name) assert.equal(u.name, choice.name);
		assert.ok(valid(t.input_schema, u.input), `${what}: ${JSON.stringify(u.input)}`);
	}
	ok(`@anthropic-ai/sdk tool_choice ${what}: tool_use input matches the tool's schema`);
}

// ---- the Vercel AI SDK 6 ----
const Person = z.object({
	name: z.string().max(10),
	age: z.number().int().nonnegative(),
	role: z.enum(['admin', 'user', 'guest']),
	tags: z.array(z.string().max(4)).max(3),
});
const compat = createOpenAICompatible({
	name: 'engy', baseURL: `${base}/v1`, apiKey: key, supportsStructuredOutputs: true,
});
const aanth = createAnthropic({ baseURL: `${base}/v1`, apiKey: key });
for (const [label, model] of [['openai-compatible', compat('tiny')], ['anthropic', aanth('tiny')]]) {
	const g = await ai.generateObject({
		model, schema: Person, prompt: 'Describe someone.', maxOutputTokens: MAX, maxRetries: 0,
	});
	Person.parse(g.object);
	ok(`AI SDK generateObject (${label}): the object parses with zod`);
	let streamErr;
	const s = ai.streamObject({
		model, schema: Person, prompt: 'Describe someone.', maxOutputTokens: MAX, maxRetries: 0,
		onError: ({ error }) => { streamErr = error; },
	});
	let obj, parts = 0;
	try {
		for await (const p of s.partialObjectStream) parts += p ? 1 : 0;
		obj = await s.object;
	} catch (e) {
		assert.fail(`${label} streamObject: ${e?.name}: ${e?.message} ${e?.text ?? ''} ` +
			`${e?.finishReason ?? ''} ${streamErr ?? ''}`);
	}
	Person.parse(obj);
	assert.ok(parts >= 1, `${label} streamObject: no partial object`);
	ok(`AI SDK streamObject (${label}): ${parts} partial objects, the final one parses with zod`);
	const weather = ai.tool({
		description: 'weather', inputSchema: z.object({ city: z.string().max(12), celsius: z.boolean() }),
	});
	const t = await ai.generateText({
		model, prompt: 'Weather?', tools: { weather }, toolChoice: 'required',
		maxOutputTokens: MAX, maxRetries: 0,
	});
	assert.ok(t.toolCalls.length >= 1, `${label}: no tool call`);
	for (const c of t.toolCalls) {
		assert.equal(c.toolName, 'weather');
		weather.inputSchema.parse(c.input);
	}
	ok(`AI SDK generateText toolChoice required (${label}): a valid call, no ToolChoiceViolationError`);
}

// An unbounded schema (plain strings, unbounded arrays): closed within
// a small max_tokens all the same.
{
	const Free = z.object({ title: z.string(), words: z.array(z.string()) });
	const g = await ai.generateObject({
		model: compat('tiny'), schema: Free, prompt: 'Describe someone.', maxOutputTokens: 60,
		maxRetries: 0,
	});
	Free.parse(g.object);
	ok('AI SDK generateObject, unbounded strings and arrays, maxOutputTokens 60: closed in time, parses with zod');
}

// ---- LangChain ----
for (const [label, llm] of [
	['ChatOpenAI', new ChatOpenAI({
		model: 'tiny', apiKey: key, configuration: { baseURL: `${base}/v1` }, maxTokens: MAX, maxRetries: 0,
	})],
	['ChatAnthropic', new ChatAnthropic({
		model: 'tiny', apiKey: key, anthropicApiUrl: base, maxTokens: MAX, maxRetries: 0,
	})],
]) {
	const out = await llm.withStructuredOutput(Person).invoke('Describe someone.');
	Person.parse(out);
	ok(`LangChain ${label}.withStructuredOutput: the object parses with zod`);
}

console.log(`done checks=${checks}`);
