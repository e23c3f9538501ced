import type { IncomingMessage } from 'node:http';
import type { AuditWrite } from '../../audit/types.js';
import type { ConsoleBackend } from '../backend.js';
import type { OverviewFeed } from '../feed.js';
import type { ActionGuard } from '../http/security.js';

/** What every API route works with. */
export interface ConsoleContext {
  backend: ConsoleBackend;
  feed: OverviewFeed;
  guard: ActionGuard;
  /** Who made a request, for the audit log: "anonymous" when the app says nothing. */
  actorOf(req: IncomingMessage): string;
  now(): number;
  /** Records an action in the audit log, with its actor and time. */
  audit(req: IncomingMessage, entry: Omit<AuditWrite, 'by'>): Promise<void>;
}
