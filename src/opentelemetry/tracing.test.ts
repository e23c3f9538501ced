import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { keepTraceLinks, MAX_TRACE_LINKS } from '../runtime/instrumentation.js';
import { formatTraceparent, parseTraceparent } from './traceparent.js';
import { openTelemetryTracing } from './tracing.js';

const START = {
  queue: 'index',
  task: 'reindex',
  jobId: '42',
  dependency: 'search',
  attempt: 1,
  replays: 0,
  earlierAttempts: [],
  replayedAttempts: [],
};

describe('openTelemetryTracing', () => {
  it('makes no span and keeps nothing while no tracer provider is registered', () => {
    // This file registers no global provider: the API answers with its own, which has no delegate.
    expect(trace.getTracerProvider().getTracer('probe').startSpan('probe').isRecording()).toBe(false);
    expect(openTelemetryTracing().startAttempt(START)).toBeUndefined();
  });

  it('traces with a provider it is given, and carries the attempt as a traceparent', async () => {
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const attempt = openTelemetryTracing({ tracerProvider }).startAttempt(START);
    expect(attempt).toBeDefined();
    const carrier = attempt?.carrier ?? '';
    attempt?.end({ type: 'completed' });
    await tracerProvider.forceFlush();
    const [span] = exporter.getFinishedSpans();
    expect(span?.name).toBe('stormguard.attempt');
    expect(carrier).toBe(`00-${span?.spanContext().traceId}-${span?.spanContext().spanId}-01`);
    expect(span?.attributes['stormguard.decision']).toBe('completed');
  });
});

describe('traceparent', () => {
  it('reads what it writes, and nothing else', () => {
    const text = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const context = parseTraceparent(text);
    expect(context).toEqual({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: 1,
      isRemote: true,
    });
    expect(context && formatTraceparent(context)).toBe(text);
    expect(parseTraceparent('00-00000000000000000000000000000000-00f067aa0ba902b7-01')).toBeUndefined();
    expect(parseTraceparent('not a traceparent')).toBeUndefined();
  });
});

describe('keepTraceLinks', () => {
  it('keeps the first attempt and the latest ones, at most MAX_TRACE_LINKS', () => {
    expect(MAX_TRACE_LINKS).toBe(16);
    expect(keepTraceLinks(undefined, undefined)).toBeUndefined();
    expect(keepTraceLinks(['a'], undefined)).toEqual(['a']);
    let links: string[] | undefined;
    for (let i = 1; i <= 20; i++) links = keepTraceLinks(links, `t${i}`);
    expect(links).toEqual([
      't1',
      't6',
      't7',
      't8',
      't9',
      't10',
      't11',
      't12',
      't13',
      't14',
      't15',
      't16',
      't17',
      't18',
      't19',
      't20',
    ]);
  });
});

describe('an attempt span', () => {
  it("says which budget refused it, with the budget's figures at that moment", async () => {
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const attempt = openTelemetryTracing({ tracerProvider }).startAttempt({ ...START, attempt: 3 });
    const denied = { granted: false, windowMs: 60_000, allowance: 10, spent: 10, denied: 4, degraded: false };
    attempt?.breakerAnswered('search', { state: 'closed' });
    attempt?.budgetAnswered('search', denied);
    attempt?.decided(
      {
        action: 'dead-letter',
        reason: 'budget-exhausted',
        detail: 'budget for search exhausted',
        classification: { retryable: true, reason: 'http-503', family: 'http-5xx' },
      },
      'search',
      Object.assign(new Error('503 Service Unavailable'), { name: 'HttpError' }),
    );
    attempt?.end({ type: 'dead-lettered', recordId: '17' });
    await tracerProvider.forceFlush();
    const [span] = exporter.getFinishedSpans();
    expect(span?.attributes).toMatchObject({
      'stormguard.attempt': 3,
      'stormguard.decision': 'dead-letter',
      'stormguard.dead_letter.reason': 'budget-exhausted',
      'stormguard.dead_letter.record_id': '17',
      'stormguard.budget.granted': false,
      'stormguard.budget.allowance': 10,
      'stormguard.budget.spent': 10,
      'stormguard.budget.denied': 4,
      'stormguard.budget.degraded': false,
      'stormguard.breaker.state': 'closed',
      'stormguard.classification.reason': 'http-503',
      'stormguard.classification.family': 'http-5xx',
      'error.type': 'HttpError',
    });
    expect(span?.status).toEqual({ code: 2, message: 'dead-letter: http-503' });
    expect(span?.events.map((e) => e.name)).toEqual(['exception']);
  });
});

describe('redactError', () => {
  const card = Object.assign(new Error('charge of card 4111111111111111 refused'), { name: 'PaymentError' });

  async function tracedFailure(options: Parameters<typeof openTelemetryTracing>[0]) {
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const attempt = openTelemetryTracing({ ...options, tracerProvider }).startAttempt(START);
    await expect(
      attempt?.call('payments', async () => {
        throw card;
      }),
    ).rejects.toBe(card);
    attempt?.decided(
      {
        action: 'dead-letter',
        reason: 'permanent',
        detail: 'permanent',
        classification: { retryable: false, reason: 'permanent-error' },
      },
      'payments',
      card,
    );
    attempt?.end({ type: 'dead-lettered', recordId: '1' });
    await tracerProvider.forceFlush();
    return exporter.getFinishedSpans();
  }

  it('records what the hook returns on the attempt and on the call, never the raw text', async () => {
    const spans = await tracedFailure({
      redactError: (e) => ({ name: e.name, message: e.message.replace(/\d{12,19}/g, '[card]') }),
    });
    expect(spans.map((s) => s.name).sort()).toEqual(['payments', 'stormguard.attempt']);
    for (const span of spans) {
      const event = span.events.find((e) => e.name === 'exception');
      expect(event?.attributes?.['exception.message']).toBe('charge of card [card] refused');
      expect(event?.attributes?.['exception.stacktrace']).toBeUndefined();
      expect(span.attributes['error.type']).toBe('PaymentError');
      expect(JSON.stringify([span.events, span.status, span.attributes])).not.toContain('4111');
    }
  });

  it('records the class alone when the hook throws', async () => {
    const spans = await tracedFailure({
      redactError: () => {
        throw new Error('hook broke');
      },
    });
    for (const span of spans) {
      const event = span.events.find((e) => e.name === 'exception');
      expect(event?.attributes?.['exception.message']).toBe('PaymentError (redaction failed)');
      expect(JSON.stringify([span.events, span.status])).not.toContain('4111');
    }
  });

  it('records the error as it is without a hook', async () => {
    const spans = await tracedFailure({});
    const attempt = spans.find((s) => s.name === 'stormguard.attempt');
    const event = attempt?.events.find((e) => e.name === 'exception');
    expect(event?.attributes?.['exception.message']).toBe('charge of card 4111111111111111 refused');
    expect(event?.attributes?.['exception.stacktrace']).toContain('PaymentError');
  });
});
