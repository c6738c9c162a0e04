// SPDX-License-Identifier: MIT
// Independent websocket peer for transport-ws: the npm `ws` package.
//
// usage: node ws_peer.mjs PEERS_DIR server [--tls CERT KEY]
//   an echo server on 127.0.0.1 (any path); a text "close:CODE:REASON"
//   makes it close with CODE; prints "listening port=N", then "open ...",
//   "ping", "close code=C reason=R" lines.
// usage: node ws_peer.mjs PEERS_DIR client URL [--ca CA_FILE]
//   a battery against an engy echo server (tests/ws_driver serve, started
//   with ping_interval_s=1 and max_message_bytes=2097152); prints one
//   "ok - ..." line per check and exits 1 at the first failure.
// Oracle: this file is the independent peer (the npm ws package).
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [peers, mode, ...rest] = process.argv.slice(2);
if (!mode) {
	console.error('usage: node ws_peer.mjs PEERS_DIR server|client ...');
	process.exit(2);
}
const { WebSocket, WebSocketServer } = await import(
	pathToFileURL(join(peers, 'ws', 'wrapper.mjs')).href);

function fail(what) {
	console.log(`FAIL: ${what}`);
	process.exit(1);
}

function ok(what) {
	console.log(`ok - ${what}`);
}

function withTimeout(p, ms, what) {
	return Promise.race([p, new Promise((_, reject) =>
		setTimeout(() => reject(new Error(`timeout: ${what}`)), ms))]);
}

// Events as promises, queued so none is missed between awaits.
function track(ws) {
	const q = { message: [], pong: [], ping: [], close: [] };
	const waiters = { message: [], pong: [], ping: [], close: [] };
	const push = (kind, v) => {
		if (waiters[kind].length)
			waiters[kind].shift()(v);
		else
			q[kind].push(v);
	};
	ws.on('message', (data, isBinary) => push('message', { data, isBinary }));
	ws.on('pong', (data) => push('pong', data));
	ws.on('ping', (data) => push('ping', data));
	ws.on('close', (code, reason) => push('close', { code, reason: reason.toString() }));
	return (kind, ms = 3000) => withTimeout(new Promise((resolve) => {
		if (q[kind].length)
			resolve(q[kind].shift());
		else
			waiters[kind].push(resolve);
	}), ms, kind);
}

function connect(url, opts) {
	return new Promise((resolve, reject) => {
		const ws = new WebSocket(url, opts);
		const next = track(ws);
		ws.once('open', () => resolve({ ws, next }));
		ws.once('unexpected-response', (req, res) => {
			reject(Object.assign(new Error('unexpected response'), { status: res.statusCode }));
			req.destroy();
		});
		ws.once('error', reject);
	});
}

async function client(url, opts) {
	const tlsOpts = opts.ca ? { ca: opts.ca } : {};
	let { ws, next } = await connect(url, tlsOpts);
	const echo = async (data, binary, what) => {
		ws.send(data, { binary });
		const m = await next('message');
		if (m.isBinary !== binary || !Buffer.from(data).equals(m.data))
			fail(`${what}: echo differs`);
		ok(what);
	};
	await echo('hello', false, 'text echo');
	await echo('κόσμε 🚀', false, 'UTF-8 text echo');
	await echo(Buffer.from(Array.from({ length: 256 }, (_, i) => i)), true, 'binary echo');
	const big = Buffer.alloc(1 << 20);
	for (let i = 0; i < big.length; i++)
		big[i] = (i * 13) & 0xff;
	await echo(big, true, '1 MiB binary echo');

	// Fragments with a ping between them: the pong comes, then one message.
	ws.send('frag', { fin: false });
	ws.ping('p1');
	ws.send('men', { fin: false });
	ws.send('ted', { fin: true });
	const pong = await next('pong');
	if (pong.toString() !== 'p1')
		fail('pong payload');
	const m = await next('message');
	if (m.isBinary || m.data.toString() !== 'fragmented')
		fail(`fragmented message came back as ${m.data.toString()}`);
	ok('fragmented text with an interleaved ping');

	// engy's keepalive: a ping within ping_interval_s (1 s).
	await next('ping', 2500);
	ok('engy server pings');

	// The server closes with a code and reason.
	ws.send('close:4002:server-bye');
	let c = await next('close');
	if (c.code !== 4002 || c.reason !== 'server-bye')
		fail(`server close came as ${c.code} ${c.reason}`);
	ok('server-initiated close 4002');

	// The client closes: engy echoes the code.
	({ ws, next } = await connect(url, tlsOpts));
	ws.close(4000, 'bye');
	c = await next('close');
	if (c.code !== 4000)
		fail(`client close answered with ${c.code}`);
	ok('client-initiated close 4000 echoed');

	// Text that is not UTF-8: 1007.
	({ ws, next } = await connect(url, tlsOpts));
	ws.send(Buffer.from([0x68, 0xff]), { binary: false });
	c = await next('close');
	if (c.code !== 1007)
		fail(`invalid UTF-8 closed with ${c.code}`);
	ok('invalid UTF-8 text closes with 1007');

	// Over max_message_bytes (2 MiB): 1009.
	({ ws, next } = await connect(url, tlsOpts));
	ws.send(Buffer.alloc(3 << 20), { binary: true });
	c = await next('close');
	if (c.code !== 1009)
		fail(`oversized message closed with ${c.code}`);
	ok('message over max_message_bytes closes with 1009');

	// A path with no route: 404.
	try {
		await connect(url.replace(/\/echo$/, '/nope'), tlsOpts);
		fail('unknown path accepted');
	} catch (e) {
		if (e.status !== 404)
			fail(`unknown path: ${e.status ?? e.message}`);
	}
	ok('unknown path refused with 404');

	// A plain GET: 426 naming the version.
	const plain = url.replace(/^ws/, 'http');
	const res = await new Promise((resolve, reject) => {
		(plain.startsWith('https') ? https : http)
			.get(plain, tlsOpts, resolve).on('error', reject);
	});
	if (res.statusCode !== 426 || res.headers['sec-websocket-version'] !== '13')
		fail(`plain GET got ${res.statusCode}`);
	res.resume();
	ok('plain GET refused with 426');
}

function server(tls) {
	const srv = tls ? https.createServer({ cert: readFileSync(tls[0]), key: readFileSync(tls[1]) })
		: http.createServer();
	const wss = new WebSocketServer({ server: srv });
	wss.on('connection', (ws, req) => {
		console.log(`open path=${req.url.split('?')[0]} x-key=${req.headers['x-key'] ? 'yes' : 'no'}`);
		ws.on('ping', () => console.log('ping'));
		ws.on('message', (data, isBinary) => {
			const s = isBinary ? '' : data.toString();
			if (s.startsWith('close:')) {
				const [, code, reason] = s.split(':');
				ws.close(Number(code), reason);
				return;
			}
			ws.send(data, { binary: isBinary });
		});
		ws.on('close', (code, reason) => console.log(`close code=${code} reason=${reason}`));
	});
	srv.listen(0, '127.0.0.1', () => console.log(`listening port=${srv.address().port}`));
	process.on('SIGTERM', () => process.exit(0));
}

if (mode === 'server') {
	const i = rest.indexOf('--tls');
	server(i >= 0 ? [rest[i + 1], rest[i + 2]] : null);
} else if (mode === 'client') {
	const i = rest.indexOf('--ca');
	try {
		await client(rest[0], { ca: i >= 0 ? readFileSync(rest[i + 1]) : null });
	} catch (e) {
		fail(e.message);
	}
	process.exit(0);
} else {
	console.error(`unknown mode ${mode}`);
	process.exit(2);
}
