import type { Instruments } from './instruments.js';
import type { LabelBounds } from './labels.js';
import type { ScrapeCoordinator } from './scrape.js';

/** What every observer shares: the instruments, the label guard, the scrape pass and its time bound. */
export interface ObserverContext {
  readonly instruments: Instruments;
  readonly bounds: LabelBounds;
  readonly scrape: ScrapeCoordinator;
  /** How long one scrape-time read may take before its figures are left out. */
  readonly readTimeoutMs: number;
  /** Told about scrape-time reads that failed (the scrape itself still answers). */
  readonly onError: (error: unknown) => void;
}
