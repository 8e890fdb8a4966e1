/**
 * The capacity benchmark's worker: a process of its own, so that its CPU time, RSS and workflow-thread
 * heap are the worker's alone. Configured through the environment like `npm run worker`, it loads
 * the bench bundle (the Session and the baseline) from HARNESS_WORKFLOW_BUNDLE and builds the worker
 * with createSessionWorker, so it sizes its sticky cache exactly as `npm start` does.
 *
 * Over the IPC channel it sends `ready` (with its sticky cache), one `turn` per Session turn that
 * finished (the `turn.finished` event, as a gateway receives it: the bench times inputs by it and
 * sends no query), and answers `heap` with the workflow thread's used heap after a full collection
 * and the process's RSS (and, when asked, writes a heap snapshot of the thread to a file).
 */
import { DefaultLogger, Runtime, makeTelemetryFilterString } from '@temporalio/worker';
import { InProcessEventFeed } from '../client/event-feeds.js';
import { workflowThreadHeaps } from '../worker/capacity.js';
import { loadConfig } from '../worker/config.js';
import { createSessionWorker } from '../worker/create-worker.js';

export type CapacityWorkerMessage =
  | { type: 'ready'; cacheSize: number; heapLimitBytes: number; line: string }
  | { type: 'turn'; sessionId: string; seq: number; outcome: string }
  | { type: 'heap'; usedBytes: number; totalBytes: number; rssBytes: number };

const send = (message: CapacityWorkerMessage) => process.send?.(message);

// Errors only: the table is the output. (Under load core warns of slow workflow tasks; the figures show it.)
Runtime.install({
  logger: new DefaultLogger('ERROR'),
  telemetryOptions: { logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'ERROR' }) } },
});
const events = new InProcessEventFeed();
events.subscribeAll((sessionId, event) => {
  if ('kind' in event && event.kind === 'turn.finished') {
    send({ type: 'turn', sessionId, seq: event.seq, outcome: event.outcome });
  }
});
const built = await createSessionWorker(loadConfig(), { events });
process.on('message', (message: { type: string; snapshotPath?: string }) => {
  if (message.type !== 'heap') return;
  const snapshot = message.snapshotPath ? { snapshotPath: message.snapshotPath } : {};
  void workflowThreadHeaps({ collect: true, ...snapshot }).then((heaps) => {
    send({
      type: 'heap',
      usedBytes: heaps.reduce((sum, h) => sum + h.usedBytes, 0),
      totalBytes: heaps.reduce((sum, h) => sum + h.totalBytes, 0),
      rssBytes: process.memoryUsage.rss(),
    });
  });
});
const running = built.worker.run();
send({
  type: 'ready',
  cacheSize: built.stickyCache.size,
  heapLimitBytes: built.stickyCache.heapLimitBytes,
  line: built.stickyCache.line,
});
// The IPC channel closes when the bench ends without stopping this process: drain as on SIGTERM.
process.on('disconnect', () => {
  if (built.worker.getState() === 'RUNNING') built.worker.shutdown();
});
try {
  await running;
} finally {
  await built.close();
  // The open IPC channel would keep the process alive.
  if (process.connected) process.disconnect();
}
