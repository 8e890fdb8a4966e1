/**
 * Replays committed histories against today's workflow code. A failure here means a control-flow
 * change that must go behind `patched()` (or a new workflow type), not a re-recording.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';

// A replay logs each replay worker's life cycle; only problems matter here.
Runtime.install({ logger: new DefaultLogger('WARN') });

const dir = 'test/histories';
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));

describe('replay of committed histories', () => {
  it('has histories to replay', () => {
    expect(files.length).toBeGreaterThan(0);
  });

  // Files are named <scenario>.<sessionId>.<run>.json; the Session checks its id against its sessionId.
  it.each(files)('%s replays deterministically', async (file) => {
    const sessionId = file.split('.')[1];
    const history = historyFromJSON(JSON.parse(readFileSync(`${dir}/${file}`, 'utf8')));
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') } },
      history,
      `session:${sessionId}`,
    );
  });
});
