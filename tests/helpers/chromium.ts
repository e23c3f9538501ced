import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** The browser the tests drive: Debian's Chromium, or wherever STORMGUARD_CHROMIUM points. */
export const CHROMIUM = process.env.STORMGUARD_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Headless Chromium for a browser test. A missing browser is an error that names what needed it and how to
 * install it: what was never rendered is not known to work, so the test fails rather than skips.
 *
 * @example
 * const browser = await launchChromium('to check the HTML report');
 */
export async function launchChromium(purpose: string): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `Chromium is needed ${purpose}, and ${CHROMIUM} does not exist: install it (apt-get install chromium) or set STORMGUARD_CHROMIUM to its path`,
    );
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
