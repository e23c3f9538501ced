import { pathToFileURL } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';

/**
 * An HTML report opened offline in `browser`, once its charts say they are drawn (`body[data-ready]`), with
 * the console errors and page errors it has raised so far and raises later.
 *
 * @example
 * const { page, errors, context } = await openReport(browser, '/tmp/report.html');
 */
export async function openReport(
  browser: Browser,
  path: string,
  onPage: (page: Page) => void = () => {},
): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, offline: true });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(error.message));
  onPage(page);
  await page.goto(pathToFileURL(path).href);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 20_000 });
  return { context, page, errors };
}

/**
 * Per canvas matching `selector`: how many pixels are drawn (neither transparent nor white) and how many
 * of those are coloured (series and legend marks; titles, axes and labels are grey).
 *
 * @example
 * for (const { coloured } of await inkedCanvases(page, '#limited canvas')) expect(coloured).toBeGreaterThan(1_000);
 */
export function inkedCanvases(
  page: Page,
  selector: string,
): Promise<Array<{ count: number; coloured: number }>> {
  return page.$$eval(selector, (canvases) =>
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
}
