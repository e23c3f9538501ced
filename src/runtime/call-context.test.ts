import { describe, expect, it } from 'vitest';
import { PermanentError } from '../errors/permanent-error.js';
import { JobCallContext } from './call-context.js';

function context() {
  const successes: string[] = [];
  const ctx = new JobCallContext('search', 1, undefined, (dependency) => successes.push(dependency));
  return { ctx, successes };
}

describe('JobCallContext', () => {
  it('records a success per call, for the dependency called, and returns what the call returned', async () => {
    const { ctx, successes } = context();
    expect(await ctx.call('db', () => 41)).toBe(41);
    expect(await ctx.call('mail', async () => 'sent')).toBe('sent');
    expect(successes).toEqual(['db', 'mail']);
    expect(ctx.calls).toBe(2);
  });

  it('rethrows a failure untouched and remembers which dependency it belongs to', async () => {
    const { ctx, successes } = context();
    const failure = new Error('timed out');
    await expect(ctx.call('crm', () => Promise.reject(failure))).rejects.toBe(failure);
    expect(successes).toEqual([]);
    expect(ctx.dependencyOf(failure)).toBe('crm');
  });

  it('follows cause chains, and knows nothing of errors no call threw', async () => {
    const { ctx } = context();
    const failure = new Error('503');
    await ctx.call('mail', () => Promise.reject(failure)).catch(() => {});
    const wrapped = new Error('receipt failed', { cause: new Error('send failed', { cause: failure }) });
    expect(ctx.dependencyOf(wrapped)).toBe('mail');
    expect(ctx.dependencyOf(new Error('elsewhere'))).toBeUndefined();
    expect(ctx.dependencyOf('a string')).toBeUndefined();
  });

  it('treats a thrown non-error value by identity', async () => {
    const { ctx } = context();
    const thrown = { status: 503 };
    await ctx.call('search', () => Promise.reject(thrown)).catch(() => {});
    expect(ctx.dependencyOf(thrown)).toBe('search');
  });

  it('refuses a call without a dependency name as a permanent error (a bug no retry fixes)', async () => {
    const { ctx } = context();
    await expect(ctx.call('', () => 1)).rejects.toSatisfy((e) => e instanceof PermanentError);
    await expect(ctx.call(undefined as unknown as string, () => 1)).rejects.toThrow(/must be a string/);
    let ran = false;
    await expect(
      ctx.call('s'.repeat(201), () => {
        ran = true;
      }),
    ).rejects.toThrow(/200/);
    expect(ran).toBe(false);
  });

  it('goes through the breaker when it has one, telling it which errors count as failures', async () => {
    const seen: { dependency: string; isFailure?: (error: unknown) => boolean }[] = [];
    const breaker = {
      async execute<T>(
        dependency: string,
        fn: () => T | Promise<T>,
        options?: { isFailure?: (e: unknown) => boolean },
      ) {
        seen.push({ dependency, ...(options?.isFailure ? { isFailure: options.isFailure } : {}) });
        return fn();
      },
    };
    const isFailure = (error: unknown) => !(error instanceof PermanentError);
    const ctx = new JobCallContext('search', 1, undefined, () => {}, breaker as never, isFailure);
    expect(await ctx.call('search', () => 'ok')).toBe('ok');
    expect(seen).toEqual([{ dependency: 'search', isFailure }]);
  });
});
