import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Every vhost the tests create starts with this: stale ones (a run killed before its teardown) are removed. */
export const TEST_VHOST_PREFIX = 'stormguard-test-';

/** Written in the run's folder once its vhost exists. */
export const VHOST_READY_FILE = 'vhost-ready';

/**
 * Runs `rabbitmqctl` (root, about a second a call): the admin path, since the broker's management plugin
 * is off. A missing or stopped broker is an error that says how to start one.
 */
export async function rabbitmqctl(args: string[]): Promise<string> {
  try {
    const { stdout } = await run('rabbitmqctl', args, { timeout: 60_000 });
    return stdout;
  } catch (error) {
    throw new Error(
      `rabbitmqctl ${args.join(' ')} failed: ${(error as Error).message}. The RabbitMQ tests need a local broker on 127.0.0.1:5672 and rabbitmqctl on PATH (as root): apt-get install rabbitmq-server, then rabbitmq-server -detached && rabbitmqctl await_startup`,
    );
  }
}

/** Deletes the `stormguard-test-*` vhosts a killed run left, then creates `vhost` with every permission for guest. */
export async function createTestVhost(vhost: string): Promise<void> {
  const listed = await rabbitmqctl(['list_vhosts', '--quiet', '--no-table-headers']);
  for (const name of listed.split('\n').map((line) => line.trim())) {
    if (name.startsWith(TEST_VHOST_PREFIX) && name !== vhost && staleVhost(name))
      await rabbitmqctl(['delete_vhost', name]);
  }
  await rabbitmqctl(['add_vhost', vhost]);
  await rabbitmqctl(['set_permissions', '-p', vhost, 'guest', '.*', '.*', '.*']);
}

/** A test vhost whose run (its pid, in the name) is no longer alive. */
function staleVhost(name: string): boolean {
  const pid = Number(name.slice(TEST_VHOST_PREFIX.length).split('-')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}
