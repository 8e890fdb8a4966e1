/**
 * How the client library names a failed call (client/errors.ts): a deadline that passes is a
 * SessionTimeoutError whichever way the transport reports it.
 */
import { ServiceError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { SessionTimeoutError, translateError } from '../../client/errors.js';

/** A gRPC status error as @temporalio/client receives it, wrapped the way its query call wraps it. */
function grpcFailure(code: number, details: string): ServiceError {
  const status = Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
  return new ServiceError('Failed to query Workflow', { cause: status });
}

const ctx = { address: 'localhost:7233', sessionId: 's-1', waitingFor: 'a worker answering the query' };

describe('translateError', () => {
  it('reads DEADLINE_EXCEEDED as a timeout', () => {
    expect(translateError(grpcFailure(4, 'Deadline exceeded'), ctx)).toBeInstanceOf(SessionTimeoutError);
  });

  it('reads CANCELLED at the deadline as a timeout: the server may reset the stream before the client sees the deadline', () => {
    const error = translateError(grpcFailure(1, 'Call cancelled'), { ...ctx, deadline: Date.now() - 5 });
    expect(error).toBeInstanceOf(SessionTimeoutError);
    expect((error as SessionTimeoutError).exitCode).toBe(5);
    expect((error as Error).message).toContain('session s-1');
  });

  it('leaves a CANCELLED call well before its deadline, or without one, as it was', () => {
    const early = grpcFailure(1, 'Call cancelled');
    expect(translateError(early, { ...ctx, deadline: Date.now() + 10_000 })).toBe(early);
    expect(translateError(early, ctx)).toBe(early);
  });
});
