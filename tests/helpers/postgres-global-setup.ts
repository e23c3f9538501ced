import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { stopCluster } from './postgres-server.js';

/**
 * Vitest global setup: gives the run one folder for its PostgreSQL servers and, at the end, stops and
 * removes every server started in it. Starts nothing itself: the first test file that needs PostgreSQL
 * starts the shared server (`tests/helpers/postgres-bed.ts`), so runs without PostgreSQL tests pay nothing.
 */
export default function setup(project: TestProject): () => Promise<void> {
  const runDir = mkdtempSync(join(tmpdir(), 'stormguard-postgres-run-'));
  chmodSync(runDir, 0o755); // the server runs as `postgres` and must reach its folder inside
  project.provide('stormguardPostgresRun', runDir);
  return async () => {
    const servers = readdirSync(runDir, { withFileTypes: true }).filter((entry) => entry.isDirectory());
    await Promise.all(
      servers.map((entry) => stopCluster(join(runDir, entry.name, 'data')).catch(() => undefined)),
    );
    rmSync(runDir, { recursive: true, force: true });
  };
}
