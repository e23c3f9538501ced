/** Something read at scrape time; `refresh` sets its gauges and never rejects. */
export interface ScrapeSource {
  refresh(): Promise<void>;
}

/**
 * Runs every scrape-time read once per scrape, whichever sink asks: prom-client asks each gauge to
 * `collect()` as the registry is read, an OpenTelemetry meter calls one batch callback per collection. All
 * of them await the same pass, so one scrape costs one read of each store however many gauges show its
 * figures, and a second scrape arriving mid-pass shares it.
 */
export class ScrapeCoordinator {
  readonly #sources = new Set<ScrapeSource>();
  #inFlight: Promise<void> | undefined;

  constructor(private readonly gauges: () => readonly { reset(): void }[]) {}

  add(source: ScrapeSource): () => void {
    this.#sources.add(source);
    return () => void this.#sources.delete(source);
  }

  collect(): Promise<void> {
    if (!this.#inFlight) {
      // Values from the previous scrape go first: a dependency or queue that is gone must not linger.
      for (const gauge of this.gauges()) gauge.reset();
      const pass = Promise.all([...this.#sources].map((s) => s.refresh())).then(() => undefined);
      this.#inFlight = pass.finally(() => {
        this.#inFlight = undefined;
      });
    }
    return this.#inFlight;
  }
}
