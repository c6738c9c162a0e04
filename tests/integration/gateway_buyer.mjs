// SPDX-License-Identifier: MIT
// One kind of buyer request through an official SDK, N at once, for the
// gateway's fault, money and retention tests.  Prints one line per
// request, never its text:
//   result i=I status=S class=C chunks=N bytes=B finish=F prompt=P completion=C request=ID
// status is the HTTP status (200 for a stream that ended well; the error's
// status, or "inband" for an error event inside a started stream).
//
// usage: node gateway_buyer.mjs PEERS BASE KEY API MODEL STREAM [N] [ABORT_AFTER] [MAX_TOKENS] [PROMPT]
//   API openai|anthropic, STREAM 0|1, N parallel requests (default 1),
//   ABORT_AFTER: hang up after that many content chunks (0: never).
// Oracle: the official SDKs' own parsing and error classes; no engy code.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [peers, base, key, api, model, stream, n = '1', abortAfter = '0', maxTokens = '8',
	prompt = 'Hello from the buyer'] = process.argv.slice(2);
if (!model) {
	console.error('usage: node gateway_buyer.mjs PEERS BASE KEY API MODEL STREAM [N] [ABORT_AFTER] [MAX_TOKENS] [PROMPT]');
	process.exit(2);
}
const load = (pkg) => import(pathToFileURL(join(peers, pkg, 'index.mjs')).href);
const { default: OpenAI } = await load('openai');
const { default: Anthropic } = await load('@anthropic-ai/sdk');
const opts = { maxRetries: 0, timeout: 60000 };
const oai = new OpenAI({ apiKey: key, baseURL: `${base}/v1`, ...opts });
const ant = new Anthropic({ apiKey: key, baseURL: base, ...opts });
const messages = [{ role: 'user', content: prompt }];
const max = Number(maxTokens), abort = Number(abortAfter);

async function one(i) {
	const r = { i, status: 0, class: '-', chunks: 0, bytes: 0, finish: '-', prompt: 0, completion: 0, request: '-' };
	const ctl = new AbortController();
	let started = false;
	try {
		if (api === 'openai' && stream !== '1') {
			const { data, request_id } = await oai.chat.completions
				.create({ model, messages, max_tokens: max }).withResponse();
			Object.assign(r, { status: 200, finish: data.choices[0].finish_reason, request: request_id,
				bytes: Buffer.byteLength(data.choices[0].message.content || ''),
				prompt: data.usage.prompt_tokens, completion: data.usage.completion_tokens });
		} else if (api === 'openai') {
			const { data: s, request_id } = await oai.chat.completions.create({ model, messages,
				max_tokens: max, stream: true, stream_options: { include_usage: true } },
			{ signal: ctl.signal }).withResponse();
			r.request = request_id;
			started = true;
			for await (const c of s) {
				if (c.usage) {
					r.prompt = c.usage.prompt_tokens;
					r.completion = c.usage.completion_tokens;
				}
				const d = c.choices[0]?.delta?.content;
				if (d) {
					r.chunks++;
					r.bytes += Buffer.byteLength(d);
					if (abort && r.chunks >= abort) {
						ctl.abort();
						r.status = 'aborted';
						break;
					}
				}
				if (c.choices[0]?.finish_reason)
					r.finish = c.choices[0].finish_reason;
			}
			if (!r.status)
				r.status = 200;
		} else if (stream !== '1') {
			const { data, request_id } = await ant.messages
				.create({ model, messages, max_tokens: max }).withResponse();
			Object.assign(r, { status: 200, finish: data.stop_reason, request: request_id,
				bytes: Buffer.byteLength(data.content.map((b) => b.text || '').join('')),
				prompt: data.usage.input_tokens, completion: data.usage.output_tokens });
		} else {
			const s = ant.messages.stream({ model, messages, max_tokens: max }, { signal: ctl.signal });
			s.on('text', (t) => {
				started = true;
				r.chunks++;
				r.bytes += Buffer.byteLength(t);
				if (abort && r.chunks >= abort && r.status !== 'aborted') {
					r.status = 'aborted';
					s.abort();
				}
			});
			try {
				const m = await s.finalMessage();
				Object.assign(r, { status: 200, finish: m.stop_reason,
					prompt: m.usage.input_tokens, completion: m.usage.output_tokens });
			} finally {
				r.request = s.request_id || (await s.withResponse().catch(() => null))?.request_id || '-';
			}
		}
	} catch (e) {
		if (r.status !== 'aborted') {
			r.class = e?.constructor?.name || 'Error';
			r.status = e?.status ?? (started ? 'inband' : 'none');
		}
	}
	return r;
}

const results = await Promise.all(Array.from({ length: Number(n) }, (_, i) => one(i)));
for (const r of results)
	console.log(`result i=${r.i} status=${r.status} class=${r.class} chunks=${r.chunks} bytes=${r.bytes} ` +
		`finish=${r.finish} prompt=${r.prompt} completion=${r.completion} request=${r.request}`);
