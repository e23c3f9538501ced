import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderReport } from '../../src/sim/report/html.js';
import { defaultScenario } from '../../src/sim/scenario/default.js';
import { simulate } from '../../src/sim/simulate.js';
import { launchChromium } from '../helpers/chromium.js';

const artifacts = fileURLToPath(new URL('../../artifacts/', import.meta.url));

// A missing browser fails the run: the report is only known to render if it was rendered.
describe('the HTML report renders in headless Chromium', () => {
  let browser: Browser;
  const reportPath = `${artifacts}sim-report.html`;

  beforeAll(async () => {
    mkdirSync(artifacts, { recursive: true });
    writeFileSync(reportPath, await renderReport(await simulate(defaultScenario())));
    browser = await launchChromium('to check the HTML report');
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
  });

  it('draws every chart, offline, without a console error, and keeps a screenshot', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, offline: true });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    page.on('pageerror', (error) => errors.push(error.message));
    const requests: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith('file:')) requests.push(request.url());
    });

    await page.goto(pathToFileURL(reportPath).href);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 20_000 });

    // Each chart's canvas holds drawn pixels: count the ones that are neither transparent nor white, and
    // the coloured ones among them (series and their legend marks; titles, axes and labels are grey).
    const inked = await page.$$eval('canvas', (canvases) =>
      canvases.map((canvas) => {
        const context = (
          canvas as unknown as {
            getContext(kind: '2d'): {
              getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray };
            } | null;
          }
        ).getContext('2d');
        if (!context || canvas.width === 0 || canvas.height === 0) return { count: 0, coloured: 0 };
        const { data } = context.getImageData(0, 0, canvas.width, canvas.height);
        let count = 0;
        let coloured = 0;
        for (let i = 0; i < data.length; i += 4) {
          const [r, g, b, a] = [data[i]!, data[i + 1]!, data[i + 2]!, data[i + 3]!];
          if (a > 0 && (r < 240 || g < 240 || b < 240)) count++;
          if (a > 128 && Math.max(r, g, b) - Math.min(r, g, b) > 80) coloured++;
        }
        return { count, coloured };
      }),
    );
    // Load on search, first attempts vs retries for each of 4 strategies, the budget, queue operations,
    // the dead letters.
    expect(inked.length).toBe(8);
    for (const { count, coloured } of inked) {
      expect(count).toBeGreaterThan(50_000);
      expect(coloured).toBeGreaterThan(1_000);
    }
    for (const id of ['load', 'split', 'budget', 'queue', 'dead'])
      expect(await page.locator(`#${id} canvas`).count(), id).toBeGreaterThan(0);
    const summary = await page.locator('#summary').textContent();
    expect(summary).toContain('ceiling + fleet budget');
    expect(summary).toMatch(/^queue operations\s+[\d,]+/m);
    expect(summary).toMatch(/^refused before calling\s+[\d,]+/m);
    expect(summary).toMatch(/^ {2}while down or degraded\s+[\d,]+/m);

    await page.screenshot({ path: `${artifacts}sim-report.png`, fullPage: true });
    expect(errors).toEqual([]);
    expect(requests).toEqual([]);
    await context.close();
  }, 60_000);
});
