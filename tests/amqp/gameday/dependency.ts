/**
 * The game day's downstream systems, over HTTP, in the test's own process: `ledger` (always up; a call
 * that is answered records a side effect) and `search` (goes down: answers 503 while `down`). The server
 * counts what reaches it by message key, independently of stormguard: side effects, successes, and the
 * calls to `search` while it is down that repeat a key it saw before (the retries that reached it).
 *
 * A side effect is recorded when the answer is sent, as a transactional system commits: a request whose
 * caller died before the answer records nothing. `holdNextFrom(pid)` keeps the next ledger request of one
 * process unanswered, so the test can kill that process in the middle of a message.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What reached the dependency, as plain JSON. */
export interface DependencyCounts {
  /** Ledger side effects recorded, by key. */
  ledger: Record<string, number>;
  /** Search calls answered 200, by key. */
  searchSuccesses: Record<string, number>;
  /** Every call that reached search while it was down. */
  callsWhileDown: number;
  /** Calls to search while down for a key search had seen before: the retries that reached it. */
  retriesWhileDown: number;
  /** Search successes answered before the outage began. */
  successesBeforeDown: number;
}

export class GameDayDependency {
  readonly #server: Server;
  #down = false;
  #wentDown = false;
  readonly #ledger = new Map<string, number>();
  readonly #searchSuccesses = new Map<string, number>();
  readonly #seenBySearch = new Set<string>();
  #callsWhileDown = 0;
  #retriesWhileDown = 0;
  #successesBeforeDown = 0;
  #holdPid: string | undefined;
  #onHeld: ((key: string) => void) | undefined;
  readonly #held: ServerResponse[] = [];

  constructor() {
    this.#server = createServer((request, response) => this.#serve(request, response));
    this.#server.keepAliveTimeout = 60_000;
  }

  /** Starts listening on a free port of 127.0.0.1; resolves with the base URL. */
  async listen(): Promise<string> {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** Search answers 503 from now on (`true`), or 200 again (`false`). */
  setDown(down: boolean): void {
    if (down && !this.#wentDown) {
      this.#wentDown = true;
      this.#successesBeforeDown = sum(this.#searchSuccesses);
    }
    this.#down = down;
  }

  /** Resolves with the key of the next ledger request from process `pid`, which is left unanswered. */
  holdNextFrom(pid: number): Promise<string> {
    this.#holdPid = String(pid);
    return new Promise((resolve) => {
      this.#onHeld = resolve;
    });
  }

  counts(): DependencyCounts {
    return {
      ledger: Object.fromEntries(this.#ledger),
      searchSuccesses: Object.fromEntries(this.#searchSuccesses),
      callsWhileDown: this.#callsWhileDown,
      retriesWhileDown: this.#retriesWhileDown,
      successesBeforeDown: this.#wentDown ? this.#successesBeforeDown : sum(this.#searchSuccesses),
    };
  }

  /** Keys search answered 200 for. */
  searched(): number {
    return this.#searchSuccesses.size;
  }

  async close(): Promise<void> {
    for (const response of this.#held.splice(0)) response.destroy();
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  #serve(request: IncomingMessage, response: ServerResponse): void {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const key = url.searchParams.get('key') ?? '';
    const pid = url.searchParams.get('pid') ?? '';
    if (url.pathname === '/ledger') {
      if (this.#holdPid !== undefined && pid === this.#holdPid) {
        this.#holdPid = undefined;
        this.#held.push(response);
        this.#onHeld?.(key);
        return;
      }
      // Committed with the answer: a caller gone by now records nothing.
      if (request.socket.destroyed) return;
      this.#ledger.set(key, (this.#ledger.get(key) ?? 0) + 1);
      response.end('ok');
      return;
    }
    if (url.pathname === '/search') {
      const seen = this.#seenBySearch.has(key);
      this.#seenBySearch.add(key);
      if (this.#down) {
        this.#callsWhileDown++;
        if (seen) this.#retriesWhileDown++;
        response.statusCode = 503;
        response.end('down');
        return;
      }
      this.#searchSuccesses.set(key, (this.#searchSuccesses.get(key) ?? 0) + 1);
      response.end('ok');
      return;
    }
    response.statusCode = 404;
    response.end();
  }
}

function sum(counts: Map<string, number>): number {
  let total = 0;
  for (const n of counts.values()) total += n;
  return total;
}
