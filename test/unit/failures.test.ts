/**
 * The failure kinds as classes (contract/failures.ts): each one crosses Temporal as an
 * ApplicationFailure of its wire type, through the SDK's own failure converter, and comes back as the
 * same class; the client names a Session's refusal by that class, never by its message.
 */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, DefaultFailureConverter, RetryState } from '@temporalio/common';
import { defaultPayloadConverter } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { ApprovalRefusedError, InputRefusedError, translateError } from '../../client/errors.js';
import {
  ApprovalRefusedFailure,
  FAILURE,
  FAILURE_CLASSES,
  HarnessFailure,
  InvalidMessageFailure,
  InvalidRequestFailure,
  ModelRateLimitedFailure,
  ModelTimeoutFailure,
  RETRYABLE_FAILURES,
  failureFromApplication,
  harnessFailureOf,
  type FailureType,
} from '../../contract/failures.js';

const converter = new DefaultFailureConverter();

/** What a receiver sees: the error encoded to the wire's Failure proto and decoded again. */
function overTheWire(err: Error): Error {
  return converter.failureToError(converter.errorToFailure(err, defaultPayloadConverter), defaultPayloadConverter);
}

const KINDS = Object.values(FAILURE) as FailureType[];

describe('failure classes', () => {
  it('has one class per kind whose type is the wire name', () => {
    expect(Object.keys(FAILURE_CLASSES).sort()).toEqual(Object.keys(FAILURE).sort());
    for (const kind of KINDS) {
      const failure = new FAILURE_CLASSES[kind]('boom');
      expect(failure).toBeInstanceOf(HarnessFailure);
      expect(failure.type).toBe(kind);
      expect(failure.name).toBe(`${kind}Failure`);
    }
  });

  it('keeps the wire names of the public contract unchanged', () => {
    // docs/contract.md names these; clients and retry policies match on them.
    expect(FAILURE.InvalidMessage).toBe('InvalidMessage');
    expect(FAILURE.ApprovalRefused).toBe('ApprovalRefused');
    expect(FAILURE.InvalidRequest).toBe('InvalidRequest');
    expect(FAILURE.McpServerUnavailable).toBe('McpServerUnavailable');
  });

  it('is non-retryable by default except for the transient kinds, and the raiser may override', () => {
    expect(new InvalidMessageFailure('x').nonRetryable).toBe(true);
    expect(new ModelTimeoutFailure('x').nonRetryable).toBe(false);
    expect(new ModelTimeoutFailure('x', { nonRetryable: true }).nonRetryable).toBe(true);
    for (const kind of KINDS) {
      expect(new FAILURE_CLASSES[kind]('x').nonRetryable).toBe(!RETRYABLE_FAILURES.has(kind));
    }
  });
});

describe('to and from ApplicationFailure', () => {
  it('raises every kind as an ApplicationFailure of its type, retryability and message', () => {
    for (const kind of KINDS) {
      const failure = new FAILURE_CLASSES[kind](`${kind} happened`).toApplicationFailure();
      expect(failure).toBeInstanceOf(ApplicationFailure);
      expect(failure.type).toBe(kind);
      expect(failure.message).toBe(`${kind} happened`);
      expect(failure.nonRetryable).toBe(!RETRYABLE_FAILURES.has(kind));
    }
  });

  it('turns every kind back into its class after the SDK encoded and decoded it', () => {
    for (const kind of KINDS) {
      const received = overTheWire(new FAILURE_CLASSES[kind]('why', { details: [{ n: 1 }] }).toApplicationFailure());
      const failure = harnessFailureOf(received);
      expect(failure).toBeInstanceOf(FAILURE_CLASSES[kind]);
      expect(failure?.type).toBe(kind);
      expect(failure?.message).toBe('why');
      expect(failure?.nonRetryable).toBe(!RETRYABLE_FAILURES.has(kind));
      expect(failure?.details).toEqual([{ n: 1 }]);
      expect(failure?.cause).toBe(received);
    }
  });

  it('puts a rate limit’s next retry delay on the wire, where the server reads it', () => {
    const encoded = converter.errorToFailure(
      new ModelRateLimitedFailure('slow down', { nextRetryDelay: '7s' }).toApplicationFailure(),
      defaultPayloadConverter,
    );
    expect(Number(encoded.applicationFailureInfo?.nextRetryDelay?.seconds)).toBe(7);
    expect(encoded.applicationFailureInfo?.type).toBe('ModelRateLimited');
  });

  it('reads a failure written the workflow way (ApplicationFailure.nonRetryable with the FAILURE constant)', () => {
    const received = overTheWire(ApplicationFailure.nonRetryable('bad id', FAILURE.InvalidRequest));
    expect(harnessFailureOf(received)).toBeInstanceOf(InvalidRequestFailure);
  });

  it('finds the failure under an activity failure, as a workflow or client receives it', () => {
    const inner = new ModelTimeoutFailure('model timed out').toApplicationFailure();
    const activity = new ActivityFailure(
      'activity failed',
      'agentStep',
      '1',
      RetryState.MAXIMUM_ATTEMPTS_REACHED,
      'w',
      inner,
    );
    const failure = harnessFailureOf(overTheWire(activity));
    expect(failure).toBeInstanceOf(ModelTimeoutFailure);
    expect(failure?.message).toBe('model timed out');
  });

  it('answers undefined for a type that is not ours, whatever its message says', () => {
    const foreign = ApplicationFailure.nonRetryable('invalid events request: after', 'SomethingElse');
    expect(failureFromApplication(foreign)).toBeUndefined();
    expect(harnessFailureOf(overTheWire(foreign))).toBeUndefined();
    expect(harnessFailureOf(new Error('InvalidRequest'))).toBeUndefined();
    expect(harnessFailureOf('InvalidRequest')).toBeUndefined();
  });
});

describe('the client names a refusal by its class', () => {
  const ctx = { address: 'localhost:7233', sessionId: 's-1' };

  it('turns an InvalidMessage update failure into InputRefusedError carrying the class', () => {
    const received = overTheWire(new InvalidMessageFailure('queue full').toApplicationFailure());
    const error = translateError(new WorkflowUpdateFailedError('update failed', received), ctx);
    expect(error).toBeInstanceOf(InputRefusedError);
    expect((error as InputRefusedError).failure).toBeInstanceOf(InvalidMessageFailure);
    expect((error as Error).message).toBe('session s-1 refused the input: queue full');
  });

  it('turns an ApprovalRefused update failure into ApprovalRefusedError carrying the class', () => {
    const received = overTheWire(ApplicationFailure.nonRetryable('no such call', FAILURE.ApprovalRefused));
    const error = translateError(new WorkflowUpdateFailedError('update failed', received), ctx);
    expect(error).toBeInstanceOf(ApprovalRefusedError);
    expect((error as ApprovalRefusedError).failure).toBeInstanceOf(ApprovalRefusedFailure);
    expect((error as ApprovalRefusedError).reason).toBe('no such call');
  });

  it('leaves an update failure of a foreign type as it was, even when its message reads like ours', () => {
    const received = overTheWire(ApplicationFailure.nonRetryable('refused the approval', 'Other'));
    const update = new WorkflowUpdateFailedError('update failed', received);
    expect(translateError(update, ctx)).toBe(update);
  });
});
