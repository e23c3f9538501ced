import {
  type Attributes,
  type Context,
  context,
  type Link,
  type ProxyTracerProvider,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import { describeError } from '../common/error-text.js';
import type { BreakerVerdict, BudgetVerdict, Decision } from '../policy/types.js';
import type {
  AttemptOutcome,
  AttemptStart,
  AttemptTrace,
  JobInstrumentation,
} from '../runtime/instrumentation.js';
import { keptStackRedacted } from '../runtime/redaction.js';
import { ATTR, type DecisionAttribute, type LinkAttribute } from './attributes.js';
import { formatTraceparent, parseTraceparent } from './traceparent.js';

/**
 * The instrumentation scope of every stormguard span and metric.
 *
 * @example
 * span.instrumentationScope.name === INSTRUMENTATION_NAME; // a span stormguard made
 */
export const INSTRUMENTATION_NAME = 'stormguard';

/**
 * Options of {@link openTelemetryTracing}; every one has a default.
 *
 * @example
 * openTelemetryTracing({ tracerProvider: provider, messagingSystem: 'bullmq' });
 */
export interface OpenTelemetryTracingOptions {
  /** Where spans go. Default: the global tracer provider, looked up at every attempt (register it any time). */
  tracerProvider?: TracerProvider;
  /** The `messaging.system` attribute. Default `bullmq`; `''` leaves it out. */
  messagingSystem?: string;
  /**
   * What a failed attempt or call records of its error (the exception event and the span status), called
   * with a copy of the error's name, message and stack. Traces leave the process, so a fleet that redacts
   * its dead letters redacts here too: the same rule for `lastError` serves both. Return the error to
   * record; a hook that throws records the error's class alone, never the raw text. Default: as it is.
   *
   * @example
   * openTelemetryTracing({ redactError: (e) => ({ name: e.name, message: e.message.replace(/\d{12,19}/g, '[card]') }) });
   */
  redactError?: (error: ErrorText) => ErrorText;
}

/**
 * An error as a trace records it: its class, message and (when there is one) stack.
 *
 * @example
 * const text: ErrorText = { name: 'HttpError', message: '503 Service Unavailable' };
 */
export interface ErrorText {
  name: string;
  message: string;
  stack?: string;
}

/**
 * Traces every attempt with OpenTelemetry: one `stormguard.attempt` span per attempt (the processor's work
 * and stormguard's decision about it), a child of the span that is current when the attempt starts (BullMQ's
 * `process` span when the worker has `bullmq-otel` telemetry), and one span per `ctx.call`, named after its
 * dependency. A retried job's later attempts link to its earlier ones, and a replayed job to the attempts of
 * the job it was replayed from. While no tracer provider is registered no span is made and nothing is kept.
 *
 * @example
 * import { BullMQOtel } from 'bullmq-otel';
 * import { createWorker } from 'stormguard/bullmq';
 * import { openTelemetryTracing } from 'stormguard/opentelemetry';
 *
 * const worker = createWorker('index', processor, {
 *   connection, policy: 'idempotent-internal', deadLetters,
 *   instrumentation: openTelemetryTracing(),
 *   workerOptions: { telemetry: new BullMQOtel({ tracerName: 'index-worker' }) },
 * });
 */
export function openTelemetryTracing(options: OpenTelemetryTracingOptions = {}): JobInstrumentation {
  const system = options.messagingSystem ?? 'bullmq';
  const tracerOf = (): Tracer | undefined => {
    const provider = options.tracerProvider ?? trace.getTracerProvider();
    // The API's own provider delegates to the registered one, and has none until the SDK registers:
    // then there is nothing to trace and nothing to do.
    const proxy = provider as Partial<ProxyTracerProvider>;
    if (typeof proxy.getDelegateTracer === 'function') return proxy.getDelegateTracer(INSTRUMENTATION_NAME);
    return provider.getTracer(INSTRUMENTATION_NAME);
  };
  return {
    ...(options.redactError ? { redactError: options.redactError } : {}),
    isActive: () => tracerOf() !== undefined,
    startAttempt(start) {
      const tracer = tracerOf();
      return tracer && new OpenTelemetryAttempt(tracer, start, system, errorText(options.redactError));
    },
  };
}

/** One attempt's span, and the spans of its calls. */
class OpenTelemetryAttempt implements AttemptTrace {
  readonly #tracer: Tracer;
  readonly #span: Span;
  readonly #context: Context;
  readonly #recording: boolean;
  readonly #errorText: (error: unknown) => ErrorText;
  #decision: DecisionAttribute | undefined;

  constructor(tracer: Tracer, start: AttemptStart, system: string, text: (error: unknown) => ErrorText) {
    this.#tracer = tracer;
    this.#errorText = text;
    const parent = context.active();
    const attributes: Attributes = {
      [ATTR.messagingDestination]: start.queue,
      [ATTR.messagingMessageId]: start.jobId,
      [ATTR.task]: start.task,
      [ATTR.dependency]: start.dependency,
      [ATTR.attempt]: start.attempt,
    };
    if (system) attributes[ATTR.messagingSystem] = system;
    if (start.replays > 0) attributes[ATTR.replays] = start.replays;
    if (start.replayedFrom !== undefined) attributes[ATTR.replayedFrom] = start.replayedFrom;
    const links = [
      ...linksTo(start.earlierAttempts, 'earlier-attempt'),
      ...linksTo(start.replayedAttempts, 'replayed-from'),
    ];
    this.#span = tracer.startSpan(
      'stormguard.attempt',
      { kind: SpanKind.INTERNAL, attributes, links },
      parent,
    );
    this.#context = trace.setSpan(parent, this.#span);
    this.#recording = this.#span.isRecording();
  }

  get carrier(): string | undefined {
    return formatTraceparent(this.#span.spanContext());
  }

  run<T>(fn: () => Promise<T>): Promise<T> {
    return context.with(this.#context, fn);
  }

  call<T>(dependency: string, fn: () => Promise<T>): Promise<T> {
    // The caller's own span when it opened one inside the processor; this attempt's otherwise (also when no
    // context manager carries the context across awaits).
    const active = context.active();
    const parent = trace.getSpan(active) ? active : this.#context;
    return this.#tracer.startActiveSpan(
      dependency,
      { kind: SpanKind.INTERNAL, attributes: { [ATTR.dependency]: dependency } },
      parent,
      async (span) => {
        try {
          return await fn();
        } catch (error) {
          failed(span, this.#errorText(error));
          throw error;
        } finally {
          span.end();
        }
      },
    );
  }

  budgetAnswered(_dependency: string, verdict: BudgetVerdict): void {
    if (!this.#recording) return;
    const span = this.#span;
    span.setAttribute(ATTR.budgetGranted, verdict.granted);
    // A RetryBudget answers its whole snapshot at that moment; another gate may answer only the verdict.
    const snapshot = verdict as BudgetVerdict & { allowance?: unknown; spent?: unknown; denied?: unknown };
    if (typeof snapshot.allowance === 'number') span.setAttribute(ATTR.budgetAllowance, snapshot.allowance);
    if (typeof snapshot.spent === 'number') span.setAttribute(ATTR.budgetSpent, snapshot.spent);
    if (typeof snapshot.denied === 'number') span.setAttribute(ATTR.budgetDenied, snapshot.denied);
    const { degraded } = verdict as { degraded?: unknown };
    if (typeof degraded === 'boolean') span.setAttribute(ATTR.degraded, degraded);
  }

  breakerAnswered(_dependency: string, verdict: BreakerVerdict): void {
    if (this.#recording) this.#span.setAttribute(ATTR.breakerState, verdict.state);
  }

  decided(decision: Decision, dependency: string, error: unknown): void {
    this.#decision =
      decision.action === 'retry' ? (decision.chargesAttempt ? 'retry' : 'defer') : decision.action;
    if (!this.#recording) return;
    const span = this.#span;
    const { classification } = decision;
    const attributes: Attributes = {
      [ATTR.dependency]: dependency,
      [ATTR.decision]: this.#decision,
      [ATTR.classificationReason]: classification.reason,
      [ATTR.retryable]: classification.retryable,
    };
    if (classification.family !== undefined) attributes[ATTR.classificationFamily] = classification.family;
    if (decision.action === 'retry') {
      attributes[ATTR.retryDelayMs] = decision.delayMs;
      attributes[ATTR.retryCause] = decision.cause;
      attributes[ATTR.retryNumber] = decision.retry;
    } else attributes[ATTR.deadLetterReason] = decision.reason;
    span.setAttributes(attributes);
    failed(span, this.#errorText(error), `${this.#decision}: ${classification.reason}`);
  }

  end(outcome: AttemptOutcome): void {
    const span = this.#span;
    if (this.#recording) {
      if (outcome.type === 'completed') span.setAttribute(ATTR.decision, 'completed');
      else if (outcome.type === 'pass-through') span.setAttribute(ATTR.decision, 'pass-through');
      else if (outcome.type === 'dead-lettered')
        span.setAttributes({ [ATTR.decision]: 'dead-letter', [ATTR.deadLetterRecordId]: outcome.recordId });
      else if (outcome.type === 'bookkeeping') {
        span.setAttribute(ATTR.decision, 'bookkeeping-retry');
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: `bookkeeping refused: ${this.#errorText(outcome.error).message}`,
        });
      }
    }
    span.end();
  }
}

/** An error's text as the trace records it: described, then through the redaction hook when there is one. */
function errorText(redact: ((error: ErrorText) => ErrorText) | undefined): (error: unknown) => ErrorText {
  if (!redact) return describeError;
  return (error) => {
    const described = describeError(error);
    try {
      const answer = redact({ ...described });
      // A hook that redacts the message alone leaves the raw text in the stack's first line: rewritten.
      if (answer && typeof answer.name === 'string' && typeof answer.message === 'string')
        return keptStackRedacted(described, answer);
    } catch {
      // Fall through: a hook that fails must not let the raw text out.
    }
    return { name: described.name, message: `${described.name} (redaction failed)` };
  };
}

/** Marks a span failed with the error's class as `error.type`, and the error as an exception event. */
function failed(span: Span, described: ErrorText, message?: string): void {
  if (!span.isRecording()) return;
  span.setAttribute(ATTR.errorType, described.name);
  span.recordException(
    described.stack === undefined
      ? { name: described.name, message: described.message }
      : { name: described.name, message: described.message, stack: described.stack },
  );
  span.setStatus({ code: SpanStatusCode.ERROR, message: message ?? described.message });
}

function linksTo(carriers: readonly string[], kind: LinkAttribute): Link[] {
  const links: Link[] = [];
  for (const carrier of carriers) {
    const linked = parseTraceparent(carrier);
    if (linked) links.push({ context: linked, attributes: { [ATTR.link]: kind } });
  }
  return links;
}
