// SPDX-License-Identifier: MIT
// The provider's pages and the gateway's status page in headless Chromium
// (Debian's, driven by playwright-core; no browser download): each page
// loads with no console error and no failed request, its tables hold the
// rows the JSON API says, its SVG charts have a non-zero box, and a
// hostile miner label is text.  A screenshot of each page goes to OUT.
// argv: provider gateway tee_token epoch honest labelled out hostile_label
// (labelled: a miner whose label was set to hostile_label)
// Oracle: headless Chromium (Debian's, via playwright-core) renders the
// pages; console errors and CSP violations come from the browser.
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
const require = createRequire(process.env.ENGY_PEERS + '/');
const { chromium } = require('playwright-core');

const [prov, gw, token, epoch, honest, labelled, out, hostile] = process.argv.slice(2);
const fail = (m) => { console.error('FAIL: ' + m); process.exit(1); };
const okl = (m) => console.log('browser: ' + m);
const getJson = async (u) => (await fetch(u)).json();
const payload = await getJson(`${prov}/api/subnet/v1/epoch/${epoch}`);
const result = JSON.parse(payload.result_json);
const agg = await getJson(`${prov}/api/subnet/v1/epoch/${epoch}/aggregates`);
const workers = await (await fetch(`${gw}/internal/v1/workers`,
	{ headers: { authorization: `Bearer ${token}` } })).json();

const browser = await chromium.launch({ executablePath: process.env.ENGY_CHROMIUM || '/usr/bin/chromium',
	args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'] });
let dialogs = 0;
async function open(url, name, headers) {
	const ctx = await browser.newContext({ extraHTTPHeaders: headers || {}, javaScriptEnabled: true });
	const page = await ctx.newPage();
	const errors = [];
	page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
	page.on('pageerror', (e) => errors.push(String(e)));
	page.on('requestfailed', (r) => errors.push('request failed: ' + r.url()));
	page.on('dialog', async (d) => { dialogs++; await d.dismiss(); });
	const resp = await page.goto(url, { waitUntil: 'load' });
	if (!resp || resp.status() !== 200) fail(`${name}: status ${resp && resp.status()}`);
	if (errors.length) fail(`${name}: console errors: ${errors.join(' | ')}`);
	await page.screenshot({ path: `${out}/${name}.png`, fullPage: true });
	return { page, ctx, errors };
}
async function svgsRender(page, sel, name, min) {
	const boxes = await page.$$eval(sel, (els) => els.map((e) => {
		const r = e.getBoundingClientRect();
		const bars = e.querySelectorAll('rect');
		return { w: r.width, h: r.height, bars: bars.length,
			 barw: Array.from(bars).map((b) => b.getBoundingClientRect().width) };
	}));
	if (boxes.length < min) fail(`${name}: ${boxes.length} ${sel} charts, want ${min}`);
	for (const b of boxes)
		if (!(b.w > 0 && b.h > 0 && b.bars > 0 && b.barw.every((x) => x > 0)))
			fail(`${name}: a chart has no box: ${JSON.stringify(b)}`);
	return boxes;
}

// /epochs/{E}: the weight table is the signed vector; the chart renders
{
	const { page, ctx } = await open(`${prov}/epochs/${epoch}`, 'epoch', null);
	const rows = await page.$$eval('table.weights tbody tr', (trs) => trs.map((tr) =>
		Array.from(tr.cells).map((c) => c.textContent.trim())));
	const want = result.weights.map(([hk, w]) => [hk, String(w)]);
	const got = rows.map((r) => [r[0], r[2]]);
	if (JSON.stringify(got) !== JSON.stringify(want))
		fail(`epoch ${epoch} weights: page ${JSON.stringify(got)}, API ${JSON.stringify(want)}`);
	const digest = await page.textContent('code.digest');
	if (digest !== payload.digest) fail(`digest ${digest} != ${payload.digest}`);
	const sig = await page.textContent('td.sig');
	if (sig !== 'valid') fail(`signature check: ${sig}`);
	const bars = await svgsRender(page, 'svg.weights', 'epoch', 1);
	if (bars[0].bars !== result.weights.length) fail(`chart bars ${bars[0].bars}`);
	const rrows = await page.$$eval('table.rows tbody tr', (trs) => trs.map((tr) =>
		Array.from(tr.cells).map((c) => c.textContent.trim())));
	if (rrows.length !== result.rows.length) fail(`rows: ${rrows.length} vs ${result.rows.length}`);
	result.rows.forEach((r, i) => {
		const g = rrows[i];
		if (g[1] !== r.hotkey || g[3] !== r.model || g[4] !== String(r.counted) ||
		    g[5] !== String(r.tokens) || g[6] !== String(r.score) || g[7] !== r.gate_reason)
			fail(`row ${i}: page ${JSON.stringify(g)}, result ${JSON.stringify(r)}`);
	});
	okl(`/epochs/${epoch}: ${want.length} weights, ${rrows.length} rows, digest and signature as the API's; chart rendered`);
	await ctx.close();
}
// /epochs: the list holds epoch E with the same weights, and an open epoch
{
	const { page, ctx } = await open(`${prov}/epochs`, 'epochs', null);
	const ids = await page.$$eval('section.epoch', (s) => s.map((e) => e.id));
	if (!ids.includes('e' + epoch)) fail(`/epochs lacks epoch ${epoch}: ${ids}`);
	const open_ = await page.textContent('table.inflight td.status');
	if (open_ !== 'open') fail(`in-flight status ${open_}`);
	await svgsRender(page, 'svg.weights', 'epochs', ids.length);
	okl(`/epochs: ${ids.length} closed epochs, each with its chart; the epoch in flight is open`);
	await ctx.close();
}
// /miners: one row per aggregates row; numbers as the aggregates and result
{
	// epoch E by name: a later epoch may close (empty) while this runs
	const { page, ctx } = await open(`${prov}/miners?epoch=${epoch}`, 'miners', null);
	const latest = payload, lres = result, lagg = agg;
	const rows = await page.$$eval('table.miners tbody tr', (trs) => trs.map((tr) => ({
		label: tr.querySelector('td.label').textContent,
		hotkey: tr.cells[1].textContent, model: tr.cells[3].textContent,
		counted: tr.querySelector('td.counted').textContent,
		tokens: tr.querySelector('td.tokens').textContent,
		gate: tr.querySelector('td.gate').textContent,
		score: tr.querySelector('td.score').textContent,
		weight: tr.querySelector('td.weight').textContent,
		scripts: tr.querySelectorAll('script').length })));
	if (rows.length !== lagg.rows.length) fail(`/miners rows ${rows.length} vs ${lagg.rows.length}`);
	for (const a of lagg.rows) {
		const g = rows.find((r) => r.hotkey === a.hotkey && r.model === a.model);
		const r = lres.rows.find((x) => x.hotkey === a.hotkey && x.model === a.model);
		const w = (lres.weights.find(([hk]) => hk === a.hotkey) || [0, 0])[1];
		if (!g || g.counted !== String(a.counted) || g.tokens !== String(a.tokens) ||
		    g.gate !== r.gate_reason || g.score !== String(r.score) || g.weight !== String(w))
			fail(`/miners row ${a.hotkey}: ${JSON.stringify(g)} vs ${JSON.stringify(a)} ${JSON.stringify(r)} w=${w}`);
	}
	const c = rows.find((r) => r.hotkey === labelled);
	if (!c) fail('/miners has no row for the labelled miner');
	if (c.label !== hostile) fail(`the hostile label shows as ${JSON.stringify(c.label)}`);
	if (rows.some((r) => r.scripts)) fail('a script element in a row');
	if (dialogs) fail('a dialog opened');
	if (!rows.find((r) => r.hotkey === honest)) fail('/miners has no row for the honest miner');
	await svgsRender(page, 'svg.spark', 'miners', rows.length);
	okl(`/miners: ${rows.length} rows as epoch ${latest.epoch_index}'s aggregates and result; the hostile label is text; sparklines rendered`);
	await ctx.close();
}
// the gateway's status page: a row per worker, the states as /workers
{
	const { page, ctx } = await open(`${gw}/internal/v1/status`, 'gateway-status',
		{ authorization: `Bearer ${token}` });
	const rows = await page.$$eval('table.workers tbody tr', (trs) => trs.map((tr) => ({
		id: tr.cells[0].textContent, name: tr.cells[1].textContent,
		miner: tr.cells[2].textContent, state: tr.cells[4].textContent })));
	if (rows.length !== workers.workers.length) fail(`status rows ${rows.length} vs ${workers.workers.length}`);
	for (const w of workers.workers) {
		const g = rows.find((r) => r.id === String(w.id));
		if (!g || g.miner !== w.miner || g.name !== w.name || g.state !== w.state)
			fail(`worker ${w.id}: ${JSON.stringify(g)} vs ${JSON.stringify(w)}`);
	}
	const refresh = await page.$eval('meta[http-equiv="refresh"]', (m) => m.content);
	if (!(+refresh > 0)) fail(`refresh ${refresh}`);
	const spend = await page.$$eval('table.spend tbody tr', (trs) => trs.length);
	if (spend < 1) fail('no spend row');
	okl(`gateway status: ${rows.length} workers as /internal/v1/workers, ${spend} spend row(s), refreshes every ${refresh} s`);
	await ctx.close();
}
await browser.close();
writeFileSync(`${out}/browser.ok`, 'ok\n');
