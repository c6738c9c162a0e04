// SPDX-License-Identifier: MIT
// Raw websocket clients on node's `net` for the hostile gateway tests:
// what no well-behaved library sends.
//
// usage: node raw_ws.mjs PORT PATH MODE [N]
//   big     one connection: after the upgrade, the header of a 64 MiB
//           text message and its first MiB, never the rest (no hello)
//   idle N  N connections upgraded and silent (no hello)
// Prints "open I" once connection I is upgraded, "closed I code=C" when the
// server closes it (C from its close frame; 0: none), "eof I" when the
// socket ends.  Runs until its connections end or it is killed.
// Oracle: a raw websocket client written from RFC 6455 on node's net
// module (no engy code).
import net from 'node:net';
import crypto from 'node:crypto';

const [port, path, mode, nArg] = process.argv.slice(2);
const say = (s) => console.log(s);

function dial(i, after) {
	const s = net.connect(Number(port), '127.0.0.1');
	let head = true, buf = Buffer.alloc(0), closed = false;
	s.on('connect', () => {
		s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n` +
			`Connection: Upgrade\r\nSec-WebSocket-Key: ${crypto.randomBytes(16).toString('base64')}\r\n` +
			'Sec-WebSocket-Version: 13\r\n\r\n');
	});
	s.on('data', (d) => {
		buf = Buffer.concat([buf, d]);
		if (head) {
			const e = buf.indexOf('\r\n\r\n');
			if (e < 0)
				return;
			const status = buf.subarray(0, e).toString().split(' ')[1];
			buf = buf.subarray(e + 4);
			head = false;
			if (status !== '101') {
				say(`refused ${i} status=${status}`);
				s.destroy();
				return;
			}
			say(`open ${i}`);
			if (after)
				after(s);
		}
		while (buf.length >= 2) {	// server frames: unmasked
			let len = buf[1] & 0x7f, off = 2;
			if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4; }
			else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); off = 10; }
			if (buf.length < off + len)
				return;
			const op = buf[0] & 0x0f, p = buf.subarray(off, off + len);
			buf = buf.subarray(off + len);
			if (op === 8 && !closed) {
				closed = true;
				say(`closed ${i} code=${p.length >= 2 ? p.readUInt16BE(0) : 0}`);
				s.destroy();	// no close answer: the socket ends
			}
		}
	});
	s.on('error', () => {});
	s.on('close', () => {
		if (!closed)
			say(`eof ${i}`);
	});
	return s;
}

if (mode === 'big') {
	dial(0, (s) => {
		const h = Buffer.alloc(14);
		h[0] = 0x81;		// FIN, text
		h[1] = 0x80 | 127;	// masked, 64-bit length
		h.writeBigUInt64BE(64n << 20n, 2);
		// mask 0: the payload goes out as is
		s.write(h);
		s.write(Buffer.alloc(1 << 20, 0x20), () => say('sent 1 MiB'));
	});
} else if (mode === 'idle') {
	for (let i = 0; i < Number(nArg || 1); i++)
		dial(i);
} else {
	console.error('usage: node raw_ws.mjs PORT PATH big|idle [N]');
	process.exit(2);
}
process.on('SIGTERM', () => process.exit(0));
