import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderReport } from '../../src/sim/report/html.js';
import { defaultScenario } from '../../src/sim/scenario/default.js';
import { simulate } from '../../src/sim/simulate.js';
import { launchChromium } from '../helpers/chromium.js';
import { inkedCanvases, openReport } from '../helpers/report-page.js';

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
    const requests: string[] = [];
    const { context, page, errors } = await openReport(browser, reportPath, (opened) =>
      opened.on('request', (request) => {
        if (!request.url().startsWith('file:')) requests.push(request.url());
      }),
    );

    // Each chart's canvas holds drawn pixels, and coloured ones among them.
    const inked = await inkedCanvases(page, 'canvas');
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
