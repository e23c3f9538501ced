import { isSpanContextValid, type SpanContext, TraceFlags } from '@opentelemetry/api';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * A span context as a W3C `traceparent` (`00-<trace id>-<span id>-<flags>`): how a job keeps the trace
 * contexts of its attempts in its attempt state and its dead-letter record (plain JSON, a few dozen bytes).
 * `undefined` for an invalid context.
 *
 * @example
 * formatTraceparent(span.spanContext()); // '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
 */
export function formatTraceparent(context: SpanContext): string | undefined {
  if (!isSpanContextValid(context)) return undefined;
  const flags = (context.traceFlags & 0xff).toString(16).padStart(2, '0');
  return `00-${context.traceId}-${context.spanId}-${flags}`;
}

/**
 * The span context a `traceparent` names, marked remote; `undefined` for anything else (a record written
 * by hand, another version), which is then simply not linked.
 *
 * @example
 * parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')?.spanId; // '00f067aa0ba902b7'
 */
export function parseTraceparent(text: string): SpanContext | undefined {
  const match = TRACEPARENT.exec(text);
  if (!match) return undefined;
  const [, traceId = '', spanId = '', flags = '00'] = match;
  const context: SpanContext = {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
  return isSpanContextValid(context) ? context : undefined;
}
