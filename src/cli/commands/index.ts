import type { Command } from 'commander';
import type { CliIO } from '../io.js';
import { register as registerBreaker } from './breaker.js';
import { register as registerBudget } from './budget.js';
import { register as registerDashboard } from './dashboard.js';
import { register as registerDlq } from './dlq.js';
import { register as registerFlow } from './flow.js';
import { register as registerLimits } from './limits.js';
import { register as registerLint } from './lint.js';
import { register as registerMetrics } from './metrics.js';
import { register as registerMigrate } from './migrate.js';
import { register as registerPlan } from './plan.js';
import { register as registerSchedule } from './schedule.js';
import { register as registerSimulate } from './simulate.js';

/**
 * Every CLI command, one file each. A command file exports `register(program, io)` and calls the same
 * library functions a user would.
 */
export function registerCommands(program: Command, io: CliIO): void {
  registerBreaker(program, io);
  registerBudget(program, io);
  registerDashboard(program, io);
  registerDlq(program, io);
  registerFlow(program, io);
  registerLimits(program, io);
  registerLint(program, io);
  registerMetrics(program, io);
  registerMigrate(program, io);
  registerPlan(program, io);
  registerSchedule(program, io);
  registerSimulate(program, io);
}
