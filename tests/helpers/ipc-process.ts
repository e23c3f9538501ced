/**
 * Fleet processes for tests and benchmarks: a TypeScript script run under tsx in its own Node process,
 * spoken to over Node's IPC channel. A fleet benchmark starts its processes once and sends them one run
 * after another, so process start-up and JIT warm-up stay out of the figures; the failover run starts
 * three worker processes and hears what each saw.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

/** A message: a `type` and what goes with it. */
export interface Message {
  type: string;
  [key: string]: unknown;
}

/** One running process. */
export class IpcProcess {
  readonly #child: ChildProcess;
  readonly #waiting = new Map<string, ((message: Message) => void)[]>();
  readonly #listeners = new Map<string, (message: Message) => void>();
  #stderr = '';
  #exited: Error | undefined;

  constructor(script: URL, args: string[]) {
    this.#child = fork(fileURLToPath(script), args, {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
    });
    this.#child.stderr?.on('data', (chunk: Buffer) => {
      this.#stderr = (this.#stderr + chunk.toString()).slice(-4_000);
    });
    this.#child.on('message', (message: Message) => {
      this.#listeners.get(message.type)?.(message);
      const queue = this.#waiting.get(message.type);
      const next = queue?.shift();
      if (next) next(message);
    });
    this.#child.once('exit', (code, signal) => {
      this.#exited = new Error(`process exited (${code ?? signal}): ${this.#stderr.trim()}`);
      for (const queue of this.#waiting.values()) queue.length = 0;
    });
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Calls `listener` for every message of `type` (progress reports), replacing an earlier one. */
  on(type: string, listener: (message: Message) => void): void {
    this.#listeners.set(type, listener);
  }

  send(message: Message): void {
    if (this.#exited) throw this.#exited;
    this.#child.send(message);
  }

  /** The next message of `type`; rejects after `timeoutMs` or if the process exits first. */
  next(type: string, timeoutMs = 120_000): Promise<Message> {
    if (this.#exited) return Promise.reject(this.#exited);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no "${type}" from process in ${timeoutMs}ms: ${this.#stderr.trim()}`)),
        timeoutMs,
      );
      const onExit = () => {
        clearTimeout(timer);
        reject(this.#exited);
      };
      this.#child.once('exit', onExit);
      const queue = this.#waiting.get(type) ?? [];
      this.#waiting.set(type, queue);
      queue.push((message) => {
        clearTimeout(timer);
        this.#child.off('exit', onExit);
        resolve(message);
      });
    });
  }

  /** Sends `message` and waits for the reply of type `reply`. */
  async request(message: Message, reply: string, timeoutMs?: number): Promise<Message> {
    const answer = this.next(reply, timeoutMs);
    this.send(message);
    return answer;
  }

  /** SIGKILL, and wait for the exit. */
  async kill(): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    const exited = once(this.#child, 'exit');
    this.#child.kill('SIGKILL');
    await exited;
  }

  /** Asks the process to end (`{ type: 'exit' }`), and kills it if it has not within `graceMs`. */
  async close(graceMs = 10_000): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    const exited = once(this.#child, 'exit');
    this.#child.send({ type: 'exit' });
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }
}

/** In a process: calls `handler` for each message from the parent; an error ends the process. */
export function serve(handler: (message: Message) => Promise<void> | void): void {
  process.on('message', (message: Message) => {
    Promise.resolve()
      .then(() => handler(message))
      .catch((error: unknown) => {
        process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
        process.exit(1);
      });
  });
}

/** In a process: sends `message` to the parent. */
export function reply(message: Message): void {
  process.send?.(message);
}

/** Wall-clock time in ms with sub-millisecond precision, comparable between processes. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}
