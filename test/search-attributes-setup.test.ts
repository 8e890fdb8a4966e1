/**
 * Registering the Session's search attributes through the operator API: what `npm start` does on
 * a database whose namespace predates them, and what a real cluster needs once.
 */
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { ensureSearchAttributes } from '../worker/search-attributes-setup.js';
import { uniqueId, waitFor } from './support/harness.js';

let connection: Connection;

beforeAll(async () => {
  connection = await Connection.connect({ address: inject('temporalAddress') });
});

afterAll(async () => {
  await connection?.close();
});

it('adds the missing search attributes to a namespace once, and nothing the second time', async () => {
  const namespace = uniqueId('ns');
  await connection.workflowService.registerNamespace({
    namespace,
    workflowExecutionRetentionPeriod: msToTs('1 day'),
  });
  // A new namespace becomes visible to the operator API a moment after registration.
  const added = await waitFor(
    () => ensureSearchAttributes(connection, namespace).catch(() => null),
    (result) => result !== null,
  );
  expect(added?.sort()).toEqual(['SessionGoal', 'SessionParent', 'SessionStage', 'SessionStatus']);
  const listed = await connection.operatorService.listSearchAttributes({ namespace });
  expect(Object.keys(listed.customAttributes ?? {})).toEqual(
    expect.arrayContaining(['SessionGoal', 'SessionParent', 'SessionStage', 'SessionStatus']),
  );
  expect(await ensureSearchAttributes(connection, namespace)).toEqual([]);
});
