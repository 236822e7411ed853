// Open a vkprof Chrome-trace JSON in speedscope (the real web app from the
// speedscope npm package) inside headless Chromium, fully offline, and check
// that it imports: one speedscope profile per (pid, tid) track, no import
// error, no nesting complaints from speedscope's trace-event importer.
// Writes one screenshot per track and exits nonzero on any failure.
//
// usage: node speedscope_check.mjs TRACE.json OUT_PREFIX
//   env: SPEEDSCOPE_DIST  speedscope's dist/release folder (required)
//        CHROMIUM         browser binary (default /usr/bin/chromium)
//        PLAYWRIGHT_CORE  path to the playwright-core package (default: resolve)
//        EXPECT_TRACKS    minimum number of tracks (default 2: host + GPU)
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const [tracePath, outPrefix] = process.argv.slice(2);
if (!tracePath || !outPrefix) {
  console.error('usage: node speedscope_check.mjs TRACE.json OUT_PREFIX');
  process.exit(2);
}
const dist = process.env.SPEEDSCOPE_DIST;
if (!dist || !fs.existsSync(path.join(dist, 'index.html'))) {
  console.error('SPEEDSCOPE_DIST must point at speedscope/dist/release');
  process.exit(2);
}
const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');
const expectTracks = Number(process.env.EXPECT_TRACKS || 2);

// What the trace should contain, per (pid, tid): names and slice counts.
const problems = [];
let trace = { traceEvents: [] };
try { trace = JSON.parse(fs.readFileSync(tracePath, 'utf8')); }
catch (e) { problems.push(`trace is not valid JSON: ${e.message}`); }
const procName = new Map(), threadName = new Map(), slices = new Map();
for (const e of trace.traceEvents || []) {
  const k = `${e.pid}:${e.tid}`;
  if (e.ph === 'M' && e.name === 'process_name') procName.set(e.pid, e.args.name);
  if (e.ph === 'M' && e.name === 'thread_name') threadName.set(k, e.args.name);
  if (e.ph === 'X' || e.ph === 'B') slices.set(k, (slices.get(k) || 0) + 1);
}
const expected = [...slices.keys()].sort((a, b) => {
  const [ap, at] = a.split(':').map(Number), [bp, bt] = b.split(':').map(Number);
  return ap - bp || at - bt;
}).map(k => {
  const [pid, tid] = k.split(':');
  const p = procName.get(Number(pid)), t = threadName.get(k);
  // speedscope's own naming rule for a trace-event track
  const name = p != null && t != null ? `${p} (pid ${pid}), ${t} (tid ${tid})`
    : p != null ? `${p} (pid ${pid}, tid ${tid})`
    : t != null ? `${t} (pid ${pid}, tid ${tid})` : `pid ${pid}, tid ${tid}`;
  return { key: k, name, slices: slices.get(k) };
});

// Serve speedscope and the trace from memory on a fake origin; refuse
// every other request so the check proves the viewer works offline.
const ORIGIN = 'http://speedscope.invalid';
const mime = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css',
  '.json': 'application/json', '.wasm': 'application/wasm', '.png': 'image/png',
  '.ico': 'image/x-icon', '.woff2': 'font/woff2', '.txt': 'text/plain' };
const offsite = [];
const warnings = [];

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--use-angle=swiftshader',
    '--enable-unsafe-swiftshader', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
  await page.route('**/*', async route => {
    const url = new URL(route.request().url());
    if (url.origin !== ORIGIN) { offsite.push(url.href); return route.abort(); }
    const file = url.pathname === '/trace.json' ? tracePath
      : path.join(dist, url.pathname === '/' ? 'index.html' : path.normalize(url.pathname));
    if (!fs.existsSync(file)) return route.fulfill({ status: 404, body: 'not found' });
    return route.fulfill({ status: 200, body: fs.readFileSync(file),
      contentType: mime[path.extname(file)] || 'application/octet-stream' });
  });
  page.on('dialog', async d => { problems.push(`dialog: ${d.message()}`); await d.dismiss(); });
  page.on('pageerror', err => problems.push(`page error: ${err.message}`));
  page.on('console', msg => {
    const t = msg.text();
    if (msg.type() === 'error') problems.push(`console error: ${t}`);
    // the trace-event importer's complaints about slice nesting
    if (/Tried to end|still open at end|stack was empty/.test(t)) warnings.push(t);
  });

  const t0 = Date.now();
  await page.goto(`${ORIGIN}/#profileURL=${encodeURIComponent(ORIGIN + '/trace.json')}`);
  // loaded = the toolbar names a track; failed = error text or a dialog
  const nBefore = problems.length;
  let body = '';
  for (;;) {
    body = await page.evaluate(() => document.body.innerText);
    if (/\(pid \d+/.test(body) || /Something went wrong/.test(body)) break;
    if (problems.length > nBefore) break;
    if (Date.now() - t0 > 30000) { problems.push('timeout waiting for the import'); break; }
    await page.waitForTimeout(100);
  }
  const loadMs = Date.now() - t0;
  if (/Something went wrong/.test(body)) problems.push('speedscope shows "Something went wrong" (import error)');

  // Walk the tracks with speedscope's "n" key, screenshot each one.
  const seen = [];
  for (let i = 0; i < Math.max(expected.length, 1) && /\(pid \d+/.test(body); i++) {
    await page.waitForTimeout(400);
    body = await page.evaluate(() => document.body.innerText);
    const m = body.match(/^(.*\(pid \d+.*\))\s*\(?(\d+)\/(\d+)\)?/m) || body.match(/(.*\(pid \d+.*\))/);
    const title = m ? m[1].trim() : '(no title found)';
    seen.push({ title, toolbar: body.split('\n').slice(0, 6).join(' | ') });
    await page.screenshot({ path: `${outPrefix}-${i + 1}.png` });
    await page.keyboard.press('n');
  }

  // One overview image: the top of each track's flame chart, stacked.
  if (seen.length) {
    const imgs = seen.map((_, i) =>
      fs.readFileSync(`${outPrefix}-${i + 1}.png`).toString('base64'));
    const cut = Number(process.env.OVERVIEW_ROWS_PX || 240);
    const sheet = await browser.newPage({ viewport: { width: 1600, height: cut * imgs.length } });
    await sheet.setContent(`<body style="margin:0;background:#fff">${imgs.map(b =>
      `<div style="height:${cut}px;overflow:hidden;border-bottom:2px solid #444">` +
      `<img src="data:image/png;base64,${b}"></div>`).join('')}</body>`);
    await sheet.screenshot({ path: `${outPrefix}.png`, fullPage: true });
  }

  console.log(`speedscope import+render: ${loadMs} ms`);
  console.log('tracks in the trace (pid:tid, speedscope name, X slices):');
  for (const e of expected) console.log(`  ${e.key}  ${e.name}  ${e.slices}`);
  console.log('tracks speedscope displayed:');
  for (const s of seen) console.log(`  ${s.title}`);
  if (seen.length < expectTracks) problems.push(`only ${seen.length} tracks shown, expected >= ${expectTracks}`);
  for (const e of expected)
    if (!seen.some(s => s.title.includes(e.name))) problems.push(`track not shown: ${e.name}`);
  if (warnings.length) {
    console.log(`importer warnings (${warnings.length}):`);
    for (const w of warnings.slice(0, 20)) console.log(`  ${w}`);
    problems.push(`${warnings.length} importer warning(s) (slice nesting)`);
  }
  if (offsite.length) problems.push(`off-site requests attempted: ${offsite.slice(0, 5).join(', ')}`);
} finally {
  await browser.close();
}
if (problems.length) {
  console.log('FAIL');
  for (const p of problems) console.log(`  ${p}`);
  process.exit(1);
}
console.log('OK');
