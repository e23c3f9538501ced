import type { JobRef } from '../../runtime/contracts.js';
import type { SettleJob } from '../../runtime/settle.js';
import type { Scenario } from '../scenario/schema.js';
import type { EngineJobClass } from './context.js';
import type { JobTable } from './job-table.js';

/**
 * A simulated job as `settle` sees it. `settle` reads only `starts` on a retry; the rest (identity, name,
 * the error) only when it files a dead letter, so those are computed then and the hot path allocates nothing.
 * One instance serves the whole run: {@link SimulatedJob.of} points it at the job being settled.
 *
 * @example
 * const facts = new SimulatedJob(scenario, classes, dependencyNames, jobs);
 * const { state, action } = settle(before, decision, t, facts.of(job, d));
 */
export class SimulatedJob implements SettleJob {
  #job = 0;
  #dependency = 0;
  readonly opts: Record<string, unknown> = {};
  readonly data: unknown = undefined;
  readonly replays = 0;

  constructor(
    private readonly scenario: Scenario,
    private readonly classes: readonly EngineJobClass[],
    private readonly dependencyNames: readonly string[],
    private readonly jobs: JobTable,
  ) {}

  of(job: number, dependency: number): this {
    this.#job = job;
    this.#dependency = dependency;
    return this;
  }

  get starts(): number {
    return this.jobs.attempts[this.#job] as number;
  }

  get ref(): JobRef {
    return {
      queue: this.scenario.name,
      jobId: String(this.#job),
      createdAt: this.jobs.createdAt[this.#job] as number,
    };
  }

  get name(): string {
    return Object.keys(this.scenario.jobClasses)[this.jobs.jobClass[this.#job] as number] ?? '';
  }

  get dependency(): string {
    return this.dependencyNames[this.#dependency] as string;
  }

  get lastError(): SettleJob['lastError'] {
    return { name: 'Error', message: `${this.dependency} failed` };
  }

  get idempotencyKey(): string | undefined {
    return (this.classes[this.jobs.jobClass[this.#job] as number] as EngineJobClass).idempotencyKey
      ? String(this.#job)
      : undefined;
  }
}
