import type { SimulationResult } from '../results.js';

/** The most points a report chart draws per series; longer runs are averaged into wider steps. */
const MAX_POINTS = 1_200;

/** What the report's page script reads: compact series, already averaged to at most {@link MAX_POINTS}. */
export interface ReportData {
  /** Seconds from the start at each point. */
  t: number[];
  stepSeconds: number;
  dependencies: {
    name: string;
    unhealthy: { from: number; until: number; state: string }[];
    /** Only for a dependency that answers 429 above a rate. */
    rateLimit?: { perSecond: number; retryAfterSeconds: number };
  }[];
  strategies: {
    label: string;
    /** Per dependency, per second averaged over the step. */
    first: Record<string, number[]>;
    retries: Record<string, number[]>;
    /** Attempts refused before calling, per dependency (a breaker, a budget asked again, a park). */
    refused: Record<string, number[]>;
    /** Queue operations the strategy caused (fetches, re-delays, parks, releases, pauses), per dependency. */
    queueOps: Record<string, number[]>;
    /** Per dependency; empty arrays for a strategy without a budget. */
    allowance: Record<string, number[]>;
    spent: Record<string, number[]>;
    deadLettered: Record<string, number>;
    /** Per dependency with a `rateLimit` (only in a run that has one): calls it answered 429, per second. */
    rateLimited?: Record<string, number[]>;
    /** Per dependency with a `rateLimit`: successful calls per second, read against its rate. */
    successes?: Record<string, number[]>;
    /** Jobs completed per second until the drain (only in a run with rate limits or limits). */
    throughputPerSecond?: number;
  }[];
}

/** Averages `values` over windows of `step` (a rate stays a rate). */
function averaged(values: readonly number[], step: number, points: number): number[] {
  const out = new Array<number>(points).fill(0);
  for (let p = 0; p < points; p++) {
    let sum = 0;
    let n = 0;
    for (let i = p * step; i < Math.min(values.length, (p + 1) * step); i++, n++) sum += values[i] as number;
    out[p] = n === 0 ? 0 : Math.round((sum / n) * 100) / 100;
  }
  return out;
}

/** A gauge keeps the last value of each step rather than the mean, so it reads like the budget's state. */
function sampled(values: readonly number[], step: number, points: number): number[] {
  return Array.from(
    { length: points },
    (_, p) => values[Math.min(values.length - 1, (p + 1) * step - 1)] ?? 0,
  );
}

/** The report's data for a simulation. */
export function reportData(result: SimulationResult): ReportData {
  const step = Math.max(1, Math.ceil(result.seconds / MAX_POINTS));
  const points = Math.ceil(result.seconds / step);
  const perDependency = (pick: (name: string) => number[], fn: typeof averaged) =>
    Object.fromEntries(result.dependencies.map((d) => [d.name, fn(pick(d.name), step, points)]));
  const limited = result.dependencies.filter((d) => d.rateLimit !== undefined);
  const perLimited = (pick: (name: string) => number[]) =>
    Object.fromEntries(limited.map((d) => [d.name, averaged(pick(d.name), step, points)]));
  return {
    t: Array.from({ length: points }, (_, p) => p * step),
    stepSeconds: step,
    dependencies: result.dependencies.map((d) => ({
      name: d.name,
      unhealthy: d.unhealthy.map((u) => ({
        from: u.fromMs / 1_000,
        until: u.untilMs / 1_000,
        state: u.state,
      })),
      ...(d.rateLimit === undefined ? {} : { rateLimit: { ...d.rateLimit } }),
    })),
    strategies: result.strategies.map((s) => ({
      label: s.label,
      first: perDependency((n) => s.timeline[n]?.first ?? [], averaged),
      retries: perDependency((n) => s.timeline[n]?.retries ?? [], averaged),
      refused: perDependency((n) => s.timeline[n]?.refused ?? [], averaged),
      queueOps: perDependency((n) => s.timeline[n]?.queueOps ?? [], averaged),
      allowance: perDependency((n) => s.timeline[n]?.allowance ?? [], sampled),
      spent: perDependency((n) => s.timeline[n]?.spent ?? [], sampled),
      deadLettered: s.deadLettered,
      ...(limited.length === 0
        ? {}
        : {
            rateLimited: perLimited((n) => s.timeline[n]?.rateLimited ?? []),
            successes: perLimited((n) => s.timeline[n]?.successes ?? []),
          }),
      ...(s.throughputPerSecond === undefined ? {} : { throughputPerSecond: s.throughputPerSecond }),
    })),
  };
}
