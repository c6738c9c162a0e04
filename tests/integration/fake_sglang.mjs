// SPDX-License-Identifier: MIT
// A scripted sglang serve for backend-sglang's tests (node's http module,
// no dependencies).  Its "model" is autoregressive and deterministic, so a
// generation cut into several /generate calls must give the same tokens
// and hidden rows as one call:
//   h(seq)       = FNV-1a 32 over the ids
//   next token   = EOS (2) when the sequence length reaches stop_len,
//                  else 3 + h(seq) mod 997
//   row(seq)     = the state at the last position of seq (it made the
//                  next token): v[j] = ((h * (j + 7)) mod 1001 - 500) /
//                  2^(j mod 11 + 2), exact in float32
//   logprob      = -(h mod 1000) / 997
// Behaviour is picked by the request's rid, "m_<mode>[_<mode>...]-...":
//   slow (3 s before answering), garbage (200, not JSON), httpN (status N),
//   hsoff (sglang's refusal when hidden states are off), nohidden,
//   streamerr (an error event), cut (the stream stops mid-way),
//   cachedN (N prompt tokens cached: a shorter prefill block), fullhit
//   (an empty prefill block), trim (a one-row prefill block), incr
//   (incremental streaming: output_ids and logprobs as deltas), lastonly
//   (hidden states only in the final event), stopN (EOS at length N),
//   shortpf (a prefill block one row short), slowev (80 ms per event),
//   json (a JSON body even when a stream is asked for), topmany, topbig,
//   topunsorted (see tops()).  Continuation
// calls (rid "...-cN") report all but one prompt token as cached.  A
// request whose rid names no mode gets the serve's default modes.
// GET /_log returns what was asked: generate calls and aborted rids.
//
// Usage: node fake_sglang.mjs serve PORTFILE [HIDDEN] [DEFAULT_MODES]
//        node fake_sglang.mjs expect IDS MAX [OPTS]
//          OPTS: {"stop":N,"hidden":H,"fold":true,"prefill":true,"top":K}
//          prints {"ids":[..],"rowhash":"..","lphash":"..","finish":".."}
//          (fold: token 0's row left out; prefill: the rows of every
//          prompt position instead)
// Oracle: this file is an independent scripted serve whose model predicts
// every output (no engy code).
import http from 'node:http';

const EOS = 2;

function fnv(ids) {
  let h = 0x811c9dc5;
  for (const id of ids) {
    for (let k = 0; k < 4; k++) {
      h ^= (id >>> (8 * k)) & 255;
      h = Math.imul(h, 0x01000193) >>> 0;
    }
  }
  return h >>> 0;
}

function nextToken(seq, stopLen) {
  if (stopLen && seq.length + 1 >= stopLen) return EOS;
  return 3 + (fnv(seq) % 997);
}

function row(seq, hidden) {
  const h = fnv(seq);
  const v = [];
  for (let j = 0; j < hidden; j++)
    v.push(((Number((BigInt(h) * BigInt(j + 7)) % 1001n)) - 500) / 2 ** ((j % 11) + 2));
  return v;
}

function logprob(seq) {
  return -(fnv(seq) % 1000) / 997;
}

// top_logprobs_num K: the token itself with its logprob, then K-1 others
// (3 + (t - 3 + 7i) mod 997) each 1 less likely.  Modes spoil them:
// topmany (K+1 entries), topbig (an id of 5000), topunsorted.
function tops(t, lp, K, mo) {
  const l = [[lp, t, null]];
  for (let i = 1; i < K + (mo.topmany ? 1 : 0); i++)
    l.push([lp - i, 3 + ((t - 3 + 7 * i) % 997 + 997) % 997, null]);
  if (mo.topbig) l[l.length - 1][1] = 5000;
  if (mo.topunsorted && l.length > 1) [l[0], l[1]] = [l[1], l[0]];
  return l;
}

// FNV-1a 64 over each alternative's id (uint32 LE) and logprob (float32
// LE), as the C driver hashes what on_top_logprobs gave.
function hashTops(ids, lps, K) {
  let h = 0xcbf29ce484222325n;
  const buf = Buffer.alloc(8);
  ids.forEach((t, k) => {
    for (const [lp, id] of tops(t, lps[k], K, {})) {
      buf.writeUInt32LE(id, 0);
      buf.writeFloatLE(lp, 4);
      for (const b of buf) {
        h ^= BigInt(b);
        h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
      }
    }
  });
  return h.toString(16).padStart(16, '0');
}

// Greedy generation of up to max tokens after prompt.
function generate(prompt, max, stopLen, stopIds) {
  const seq = prompt.slice();
  const ids = [], rows = [], lps = [];
  let finish = { type: 'length', length: max };
  for (let k = 0; k < max; k++) {
    const t = nextToken(seq, stopLen);
    rows.push(seq.slice());       // the state that made t
    lps.push(logprob(seq));
    ids.push(t);
    seq.push(t);
    if (t === EOS || stopIds.includes(t)) {
      finish = { type: 'stop', matched: t };
      break;
    }
  }
  return { ids, rows, lps, finish };
}

// FNV-1a 64 over float32 little-endian bytes, as the C driver hashes.
function hashFloats(vals) {
  let h = 0xcbf29ce484222325n;
  const buf = Buffer.alloc(4);
  for (const v of vals) {
    buf.writeFloatLE(v, 0);
    for (const b of buf) {
      h ^= BigInt(b);
      h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
    }
  }
  return h.toString(16).padStart(16, '0');
}

function modes(rid, dflt) {
  const m = /^m_([a-z0-9_]+)-/.exec(rid || '');
  const out = {};
  const words = m ? m[1] : dflt;
  if (!words) return out;
  for (const w of words.split('_')) {
    const n = /^([a-z]+)(\d*)$/.exec(w);
    if (n) out[n[1]] = n[2] === '' ? true : Number(n[2]);
  }
  return out;
}

function serve(portFile, hidden, dflt) {
  const log = { generate: [], aborts: [] };
  const active = new Map();   // rid -> { aborted }
  const fs = import('node:fs');

  function reply(res, code, obj, type = 'application/json') {
    const body = typeof obj === 'string' ? obj : JSON.stringify(obj);
    res.writeHead(code, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  }

  function response(req, g, upto, final, mo, prev) {
    const n = req.input_ids.length;
    const cont = /-c\d+$/.test(req.rid || '');
    const cached = cont ? n - 1 : mo.fullhit ? n : mo.cached || 0;
    const meta = {
      id: req.rid,
      finish_reason: final ? g.finish : null,
      prompt_tokens: n,
      completion_tokens: upto,
      cached_tokens: cached,
      weight_version: 'default',
    };
    let ids = g.ids.slice(0, upto), lps = g.lps.slice(0, upto);
    if (mo.incr && prev !== undefined) {
      ids = ids.slice(prev);
      lps = lps.slice(prev);
    }
    if (req.return_logprob)
      meta.output_token_logprobs = lps.map((lp, i) => [lp, ids[i], null]);
    if (req.return_logprob && req.top_logprobs_num > 0)
      meta.output_top_logprobs = lps.map((lp, i) => tops(ids[i], lp, req.top_logprobs_num, mo));
    if (req.return_hidden_states && !mo.nohidden && (final || !mo.lastonly)) {
      // Element 0: the prefill block (uncached prompt positions, whose
      // last row made token 0); then one decode row per later token.
      const c = Math.min(cached, n);
      const first = mo.trim ? n - 1 : mo.shortpf ? Math.min(c + 1, n - 1) : c;
      const block = [];
      for (let p = first; p < n && upto > 0; p++) block.push(row(req.input_ids.slice(0, p + 1), hidden));
      const hs = upto > 0 ? [block] : [];
      for (let k = 1; k < upto; k++) hs.push(row(g.rows[k], hidden));
      meta.hidden_states = hs;
    }
    meta.e2e_latency = 0.01;
    return { text: 'x'.repeat(upto), output_ids: ids, meta_info: meta };
  }

  function onGenerate(req, res) {
    const mo = modes(req.rid, dflt);
    const sp = req.sampling_params || {};
    const max = sp.max_new_tokens ?? 128;
    log.generate.push({
      rid: req.rid, n_input: req.input_ids.length, max_new_tokens: max,
      stream: !!req.stream, hidden: !!req.return_hidden_states,
      logprob: !!req.return_logprob, logprob_start_len: req.logprob_start_len ?? null,
      temperature: sp.temperature, stop_token_ids: sp.stop_token_ids ?? null,
      sampling_seed: sp.sampling_seed ?? null, top: req.top_logprobs_num ?? null,
    });
    if (mo.http) return reply(res, mo.http, { error: { message: 'internal boom' } });
    if (mo.hsoff && req.return_hidden_states)
      return reply(res, 400, { error: { message: 'The server is not configured to return hidden states. Please set `--enable-return-hidden-states` to enable this feature.' } });
    if (mo.garbage) return reply(res, 200, '<html>not json</html>', 'text/html');
    const g = generate(req.input_ids, max, mo.stop || 0, sp.stop_token_ids || []);
    const st = { aborted: false };
    active.set(req.rid, st);
    const go = () => {
      if (!req.stream || mo.json) {
        active.delete(req.rid);
        return reply(res, 200, response(req, g, g.ids.length, true, mo));
      }
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      if (mo.streamerr) {
        res.write('data: ' + JSON.stringify({ error: { message: 'stream boom' } }) + '\n\n');
        res.end('data: [DONE]\n\n');
        return;
      }
      let k = 0, prev = 0;
      const step = () => {
        if (res.destroyed) { active.delete(req.rid); return; }
        if (st.aborted) {
          g.finish = { type: 'abort', message: 'Abort requested' };
          const ev = response(req, g, k, true, mo, prev);
          res.write('data: ' + JSON.stringify(ev) + '\n\n');
          res.end('data: [DONE]\n\n');
          active.delete(req.rid);
          return;
        }
        k++;
        const final = k >= g.ids.length;
        const ev = response(req, g, k, final, mo, prev);
        prev = k;
        res.write('data: ' + JSON.stringify(ev) + '\n\n');
        if (mo.cut && k === 2) { res.destroy(); active.delete(req.rid); return; }
        if (final) {
          res.end('data: [DONE]\n\n');
          active.delete(req.rid);
          return;
        }
        setTimeout(step, mo.slowev ? 80 : 2);
      };
      if (g.ids.length === 0) {
        res.end('data: [DONE]\n\n');
        return;
      }
      step();
    };
    if (mo.slow) setTimeout(go, 3000); else go();
  }

  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      const url = req.url.split('?')[0];
      if (req.method === 'GET' && url === '/_log') return reply(res, 200, log);
      if (req.method === 'GET' && url === '/get_model_info')
        return reply(res, 200, { model_path: '/models/Fake-Model-1B', tokenizer_path: '/models/Fake-Model-1B', is_generation: true, weight_version: 'default' });
      if (req.method === 'GET' && url === '/v1/models')
        return reply(res, 200, { object: 'list', data: [{ id: 'fake-served', object: 'model', owned_by: 'sglang', max_model_len: 4096 }] });
      let j;
      try { j = JSON.parse(body); } catch { return reply(res, 400, { error: { message: 'bad json' } }); }
      if (req.method === 'POST' && url === '/abort_request') {
        log.aborts.push(j.rid);
        for (const [rid, st] of active) if (rid.startsWith(j.rid)) st.aborted = true;
        return reply(res, 200, '', 'text/plain');
      }
      if (req.method === 'POST' && url === '/generate') return onGenerate(j, res);
      reply(res, 404, { detail: 'Not Found' });
    });
  });
  server.listen(0, '127.0.0.1', async () => {
    (await fs).writeFileSync(portFile, String(server.address().port));
  });
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'serve') {
  serve(args[0], Number(args[1] || 8), args[2] || '');
} else if (cmd === 'expect') {
  const ids = args[0].split(',').map(Number);
  const o = JSON.parse(args[2] || '{}');
  const hidden = o.hidden || 8;
  const g = generate(ids, Number(args[1]), o.stop || 0, []);
  const flat = [];
  if (o.prefill)
    for (let p = 0; p < ids.length; p++) flat.push(...row(ids.slice(0, p + 1), hidden));
  else
    for (const s of g.rows.slice(o.fold ? 1 : 0)) flat.push(...row(s, hidden));
  console.log(JSON.stringify({
    ids: g.ids, rowhash: hashFloats(flat), lphash: hashFloats(g.lps),
    finish: g.finish.type, matched: g.finish.matched ?? -1,
    ...(o.top ? { tophash: hashTops(g.ids, g.lps, o.top) } : {}),
  }));
} else if (cmd === 'expect-lm') {
  // engy's scripted backend test-lm (tests/plugins/test-lm.c), greedy:
  // S = sum mod 94, token k = 33 + (S + 7k) mod 94, logprob k = -0.0625 -
  // 0.125 (k mod 8), row k, j = 0.5 (n_input - 1 + k) + 0.25 j.
  const ids = args[0].split(',').map(Number);
  const n = Number(args[1]), hidden = Number(args[2] || 8);
  const s = ids.reduce((a, b) => a + b, 0) % 94;
  const out = [], flat = [], lps = [];
  for (let k = 0; k < n; k++) {
    out.push(33 + ((s + 7 * k) % 94));
    lps.push(-0.0625 - 0.125 * (k % 8));
    for (let j = 0; j < hidden; j++) flat.push(0.5 * (ids.length - 1 + k) + 0.25 * j);
  }
  console.log(JSON.stringify({ ids: out, rowhash: hashFloats(flat), lphash: hashFloats(lps), finish: 'length', matched: -1 }));
} else if (cmd === 'shell') {
  // the fields of the JSON on stdin as shell assignments R_<name>='...'
  let txt = '';
  process.stdin.on('data', (c) => { txt += c; });
  process.stdin.on('end', () => {
    const o = JSON.parse(txt);
    for (const [k, v] of Object.entries(o)) {
      const t = typeof v === 'object' ? JSON.stringify(v) : String(v);
      console.log(`R_${k}='${t.replace(/'/g, "'\\''")}'`);
    }
  });
} else if (cmd === 'get') {
  // print a field of the JSON on stdin: get a.b.0 (objects and lists as JSON)
  let txt = '';
  process.stdin.on('data', (c) => { txt += c; });
  process.stdin.on('end', () => {
    let v = JSON.parse(txt);
    for (const k of args[0].split('.')) v = v?.[k];
    console.log(typeof v === 'object' ? JSON.stringify(v) : String(v));
  });
} else {
  console.error('usage: fake_sglang.mjs serve PORTFILE [HIDDEN] [MODES] | expect IDS MAX [OPTS] | expect-lm IDS N [HIDDEN] | get PATH');
  process.exit(2);
}
