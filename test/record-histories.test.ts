/**
 * Records the histories that test/replay.test.ts replays. Runs only with RECORD_HISTORIES=1:
 *   RECORD_HISTORIES=1 npx vitest run test/record-histories.test.ts
 * Re-record when a scenario is added, never to paper over a replay failure: a replay failure means
 * a control-flow change that needs `patched()`.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, inject, it } from 'vitest';
import { snapshotQuery } from '../workflows/api.js';
import { scriptedModels, send, startSession, startWorker, waitFor, type TestWorker } from './support/harness.js';
import { ScriptedModelServer, faults } from './support/model-server.js';
import { scriptRoles } from './support/scripted-roles.js';

/** The history in the JSON form `temporal workflow show --output json` writes and the replayer reads. */
function exportHistory(workflowId: string, runId: string): string {
  return execFileSync(
    inject('temporalCliPath'),
    ['workflow', 'show', '--address', inject('temporalAddress'), '-w', workflowId, '-r', runId, '--output', 'json'],
    { encoding: 'utf8' },
  );
}

const enabled = process.env.RECORD_HISTORIES === '1';
let server: ScriptedModelServer;
let w: TestWorker;

describe.runIf(enabled)('record replay histories', () => {
  beforeAll(async () => {
    server = await ScriptedModelServer.start();
    w = await startWorker({ models: scriptedModels(server) });
  });
  afterAll(async () => {
    await w?.stop();
    await server?.close();
  });

  it('records the article session with a continue-as-new and every failure boundary', async () => {
    const script = scriptRoles(server);
    const GUIDE = 'Research ComfyUI and deliver a Markdown guide';
    const WORD = 'Convert the Markdown we just created to Word';
    script.terms.set(GUIDE, ['comfyui', 'research', 'markdown', 'guide']);
    script.selection.set(GUIDE, { skills: ['technical-research', 'markdown-guide'], toolsets: ['web-search'] });
    script.relevance.set('Continue', [0.92, 0.95]);
    script.relevance.set(WORD, [0.12, 0.9]);
    script.selection.set(WORD, {
      skills: ['markdown-guide', 'markdown-to-docx', 'invented'],
      toolsets: ['doc-convert'],
    });
    script.summary.set(GUIDE, faults.malformed());
    script.relevance.set("Also check tomorrow's weather", [0.05, 0.04]);
    script.relevance.set('hmm', [faults.serverError()]);
    script.relevance.set('what about the other one?', [0.5, 0.5]);

    const handle = await startSession(w, {
      settings: { continueAsNewAfter: 4, modelAttempts: 2, modelTimeoutMs: 2_000 },
    });
    const firstRunId = (await handle.describe()).runId;
    for (const text of [GUIDE, 'Continue', WORD, "Also check tomorrow's weather", 'hmm', 'what about the other one?']) {
      await send(handle, text);
    }
    await waitFor(
      () => handle.query(snapshotQuery),
      (s) => s.seq.lastBound === 6 && s.stage === 'Idle',
      60_000,
    );
    const lastRunId = (await handle.describe()).runId;
    // The file name carries the workflow id: the Session checks that it matches its sessionId.
    const base = `test/histories/${process.env.RECORD_NAME ?? 'article-session'}.${handle.workflowId.replace('session:', '')}`;
    writeFileSync(`${base}.run1.json`, exportHistory(handle.workflowId, firstRunId));
    writeFileSync(`${base}.run2.json`, exportHistory(handle.workflowId, lastRunId));
  });
});
