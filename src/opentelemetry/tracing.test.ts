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
  replayedFrom: [],
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
