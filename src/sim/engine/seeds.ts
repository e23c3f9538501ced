import { seededRandom } from '../../common/random.js';

/** Streams of randomness for one run, the same for every strategy so they see the same arrivals. */
export interface RunSeeds {
  behaviour: number;
  policy: number;
  arrivals: readonly number[];
}

/**
 * Derives the run's independent random streams from the scenario seed: the dependencies' behaviour, the
 * policy's jitter, and one stream per arrival source.
 *
 * @example
 * const seeds = deriveSeeds(scenario.seed, scenario.arrivals.length);
 */
export function deriveSeeds(seed: number, arrivalSources: number): RunSeeds {
  const random = seededRandom(seed);
  const next = () => Math.floor(random() * 2 ** 31);
  const behaviour = next();
  const policy = next();
  return { behaviour, policy, arrivals: Array.from({ length: arrivalSources }, next) };
}
