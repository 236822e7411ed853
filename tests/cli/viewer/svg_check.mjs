// Open a `vkprof report --svg` picture in headless Chromium, fully offline,
// and check its text as the browser lays it out (issue 25): every <text>
// lies inside the picture, and no two <text> boxes overlap (a legend entry
// over another, a name over a number). Writes a screenshot and exits nonzero
// on any failure.
//
// usage: node svg_check.mjs REPORT.svg OUT.png
//   env: CHROMIUM         browser binary (default /usr/bin/chromium)
//        PLAYWRIGHT_CORE  path to the playwright-core package (default: resolve)
import fs from 'node:fs';
import { createRequire } from 'node:module';

const [svgPath, outPng] = process.argv.slice(2);
if (!svgPath || !outPng) {
  console.error('usage: node svg_check.mjs REPORT.svg OUT.png');
  process.exit(2);
}
const require = createRequire(import.meta.url);
const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');
const svg = fs.readFileSync(svgPath, 'utf8');

// Served from memory on a fake origin; every other request is refused (the
// picture must need nothing from outside).
const ORIGIN = 'http://vkprof-svg.invalid';
const problems = [];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu'],
});
try {
  const page = await browser.newPage({ viewport: { width: 2400, height: 2400 } });
  await page.route('**/*', (route) => {
    if (route.request().url() === `${ORIGIN}/report.svg`) {
      return route.fulfill({ status: 200, contentType: 'image/svg+xml', body: svg });
    }
    problems.push(`the picture asked for ${route.request().url()}`);
    return route.abort();
  });
  await page.goto(`${ORIGIN}/report.svg`);
  const got = await page.evaluate(() => {
    const root = document.documentElement;
    const r = root.getBoundingClientRect();
    const texts = [...document.querySelectorAll('text')].map((t) => {
      const b = t.getBoundingClientRect();
      return { s: t.textContent, x0: b.left, y0: b.top, x1: b.right, y1: b.bottom };
    }).filter((b) => b.x1 > b.x0 && b.y1 > b.y0 && b.s.trim() !== '');
    return { tag: root.tagName, box: { x0: r.left, y0: r.top, x1: r.right, y1: r.bottom }, texts };
  });
  if (got.tag.toLowerCase() !== 'svg') problems.push(`the document is <${got.tag}>, not <svg>`);
  const eps = 0.5;
  for (const t of got.texts) {
    if (t.x0 < got.box.x0 - eps || t.y0 < got.box.y0 - eps || t.x1 > got.box.x1 + eps ||
        t.y1 > got.box.y1 + eps) {
      problems.push(`"${t.s}" at [${t.x0.toFixed(1)}, ${t.y0.toFixed(1)}, ${t.x1.toFixed(1)}, ` +
        `${t.y1.toFixed(1)}] is outside the picture [${got.box.x0}, ${got.box.y0}, ` +
        `${got.box.x1}, ${got.box.y1}]`);
    }
  }
  let overlaps = 0;
  for (let i = 0; i < got.texts.length; i++) {
    for (let k = i + 1; k < got.texts.length; k++) {
      const a = got.texts[i], b = got.texts[k];
      const w = Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0);
      const h = Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0);
      if (w > 1 && h > 1) {
        if (overlaps++ < 10) problems.push(`"${a.s}" and "${b.s}" overlap by ${w.toFixed(1)} x ${h.toFixed(1)} px`);
      }
    }
  }
  if (overlaps > 10) problems.push(`... ${overlaps} overlapping pairs in all`);
  // the screenshot is for a person to look at; the checks above are the test
  try {
    await page.setViewportSize({
      width: Math.max(1, Math.ceil(got.box.x1)), height: Math.max(1, Math.ceil(got.box.y1)),
    });
    await page.screenshot({ path: outPng, timeout: 120000 });
  } catch (e) {
    console.error(`no screenshot: ${e.message.split('\n')[0]}`);
  }
  console.log(`${svgPath}: ${got.texts.length} text elements, picture ` +
    `${(got.box.x1 - got.box.x0).toFixed(0)} x ${(got.box.y1 - got.box.y0).toFixed(0)} px, ` +
    `${overlaps} overlapping pairs; screenshot ${outPng}`);
} finally {
  await browser.close();
}
for (const p of problems) console.error(`FAIL: ${p}`);
process.exit(problems.length ? 1 : 0);
