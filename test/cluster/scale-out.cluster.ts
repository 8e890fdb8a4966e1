/**
 * Scale-out on a self-hosted cluster (temporal-server on PostgreSQL, SQL visibility) with three
 * worker processes sharing one PostgreSQL memory store: task control across workers, routing to a
 * sub-session found through PostgreSQL visibility, and a worker killed with SIGKILL mid-run whose
 * Sessions finish on the others with every input processed exactly once.
 */
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { PostgresMemoryStore } from '../../capabilities/memory-store-postgres.js';
import { decisionsQuery, goalsQuery, messageSignal } from '../../contract/api.js';
import type { MessageInput } from '../../contract/messages.js';
import { MODEL, message, uniqueId, waitFor } from '../support/harness.js';
import { ScriptedModelServer } from '../support/model-server.js';
import { scriptRoles, type RoleScript } from '../support/scripted-roles.js';
import type { WorkerProcess } from '../support/spawn-worker.js';
import { ledger, startClusterWorkers, workflowTaskWorkers } from '../support/cluster-workers.js';

const WORKERS = 3;
const taskQueue = uniqueId('cluster');
// Short model and agent timeouts: an activity lost with a killed worker is retried once its start-to-close
// timeout passes (the turn does not heartbeat), so seconds here instead of the default 120 s agent timeout.
const settings = { modelTimeoutMs: 4_000, modelAttempts: 3, agentTimeoutMs: 5_000 };

let server: ScriptedModelServer;
let script: RoleScript;
let connection: Connection;
let client: Client;
let workers: WorkerProcess[] = [];
const figures: Record<string, unknown>[] = [];

beforeAll(async () => {
  server = await ScriptedModelServer.start();
  script = scriptRoles(server);
  connection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection, namespace: inject('temporalNamespace') });
  workers = await startClusterWorkers(WORKERS, { taskQueue, models: server });
});

afterAll(async () => {
  for (const worker of workers) await worker.kill();
  await connection?.close();
  await server?.close();
  for (const row of figures) console.log(`[cluster figures] ${JSON.stringify(row)}`);
});

async function startSession(prefix: string): Promise<WorkflowHandle> {
  const sessionId = uniqueId(prefix);
  return client.workflow.start('session', {
    workflowId: `session:${sessionId}`,
    taskQueue,
    args: [{ sessionId, settings }],
  });
}

/** Scripts a Session's task and its follow-ups as `continue`, and returns the messages in order. */
function scriptTask(name: string, followUps: number): MessageInput[] {
  const goal = `Write the ${name} weekly support report with charts`;
  script.terms.set(goal, ['weekly report', 'charts', name]);
  script.selection.set(goal, { skills: ['support-ticket-report'], toolsets: ['charts'] });
  const rest = Array.from({ length: followUps }, (_, i) => message(`${name}: refine section ${i + 1}`));
  for (const m of rest) script.relevance.set(m.text, [0.9, 0.9]);
  return [message(goal), ...rest];
}

async function allDecided(sent: Map<WorkflowHandle, MessageInput[]>, timeoutMs: number): Promise<void> {
  for (const [handle, messages] of sent) {
    await waitFor(
      () => handle.query(decisionsQuery),
      (d) => d.length >= messages.length,
      timeoutMs,
    );
  }
}

describe('task control across three workers', () => {
  it('runs many Sessions on all workers, each input once, with memories from the shared store', async () => {
    const started = Date.now();
    const store = await PostgresMemoryStore.open(inject('clusterMemoryUrl'));
    const memory = await store.add({ text: 'Support reports always list the zephyrine escalations', scope: 'global' });
    await store.close();
    const sent = new Map<WorkflowHandle, MessageInput[]>();
    for (let i = 0; i < 12; i++) {
      const messages = scriptTask(`team${i}`, 3);
      // The orchestrator loads the recalled memory; whichever worker runs the agent turn reads its text.
      const goal = messages[0]!.text;
      script.terms.set(goal, ['weekly report', 'charts', 'zephyrine']);
      script.selection.set(goal, { skills: ['support-ticket-report'], toolsets: ['charts'], memories: [memory.id] });
      const handle = await startSession('scale');
      sent.set(handle, messages);
    }
    for (const [handle, messages] of sent) for (const m of messages) await handle.signal(messageSignal, m);
    await allDecided(sent, 120_000);

    const result = await ledger(sent);
    expect(result).toMatchObject({ lost: 0, duplicated: 0, gapped: 0 });
    expect(result.decisions).toBe(result.inputs);
    for (const [handle, messages] of sent) {
      const decisions = await handle.query(decisionsQuery);
      expect(decisions.map((d) => d.messageId)).toEqual(messages.map((m) => m.messageId));
      expect(decisions.map((d) => d.decision)).toEqual(['initialize', 'continue', 'continue', 'continue']);
    }
    // Every agent turn saw the memory text, read from PostgreSQL by whichever worker ran it, as
    // quoted data in the message after the system message (never in the system text).
    const agentTurns = server.requests(MODEL.agent);
    expect(agentTurns.length).toBeGreaterThanOrEqual(result.inputs);
    for (const turn of agentTurns) {
      expect(turn.messages[0]?.content).not.toContain('zephyrine escalations');
      expect(turn.messages[1]).toMatchObject({ role: 'user' });
      expect(turn.messages[1]?.content).toContain('"text": "Support reports always list the zephyrine escalations"');
    }

    const byWorker = new Map<number, number>();
    for (const handle of sent.keys()) {
      for (const pid of new Set(await workflowTaskWorkers(handle))) byWorker.set(pid, (byWorker.get(pid) ?? 0) + 1);
    }
    expect([...byWorker.keys()].every((pid) => workers.some((w) => w.child.pid === pid))).toBe(true);
    expect(byWorker.size).toBeGreaterThanOrEqual(2);
    figures.push({
      scenario: 'task control',
      ...result,
      workers: WORKERS,
      sessionsPerWorker: Object.fromEntries(byWorker),
      seconds: Math.round((Date.now() - started) / 100) / 10,
    });
  });
});

describe('routing to a sub-session', () => {
  it('creates the sub-session on whichever worker, and PostgreSQL visibility and the Web UI find it by parent', async () => {
    const guide = 'Research ComfyUI and deliver a Markdown guide for the cluster team';
    const weather = "Also check tomorrow's weather in Hangzhou";
    script.terms.set(guide, ['comfyui', 'research', 'markdown', 'guide']);
    script.selection.set(guide, { skills: ['technical-research', 'markdown-guide'], toolsets: ['web-search'] });
    script.relevance.set(`${weather}|${guide}`, [0.05, 0.04]);
    script.terms.set(weather, ['weather', 'forecast', 'tomorrow']);
    script.selection.set(weather, { skills: [], toolsets: [] });
    const parent = await startSession('routing');
    const parentId = parent.workflowId.replace('session:', '');
    await parent.signal(messageSignal, message(guide));
    const request = message(weather);
    await parent.signal(messageSignal, request);
    const [, routed] = await waitFor(
      () => parent.query(decisionsQuery),
      (d) => d.length === 2,
    );
    expect(routed).toMatchObject({ decision: 'out-of-scope', route: { via: 'new-sub' } });
    const childId = routed!.route!.to!;
    const child = client.workflow.getHandle(`session:${childId}`);
    const [initialized] = await waitFor(
      () => child.query(decisionsQuery),
      (d) => d.length === 1,
    );
    expect(initialized).toMatchObject({ seq: 1, messageId: request.messageId, decision: 'initialize' });
    expect((await child.query(goalsQuery)).session?.text).toBe(weather);

    // Custom search attributes through PostgreSQL visibility, as the Web UI filters them.
    const query = `SessionParent = '${parentId}'`;
    const listed = await waitFor(
      async () => {
        const ids: string[] = [];
        for await (const execution of client.workflow.list({ query })) ids.push(execution.workflowId);
        return ids;
      },
      (ids) => ids.length > 0,
    );
    expect(listed).toEqual([child.workflowId]);
    const ui = await fetch(
      `${inject('clusterUiUrl')}/api/v1/namespaces/${inject('temporalNamespace')}/workflows?query=${encodeURIComponent(query)}`,
    );
    expect(ui.status).toBe(200);
    const body = (await ui.json()) as { executions?: Array<{ execution?: { workflowId?: string } }> };
    expect(body.executions?.map((e) => e.execution?.workflowId)).toEqual([child.workflowId]);
  });
});

describe('a worker killed with SIGKILL mid-run', () => {
  it('moves its Sessions to the other workers and processes every input exactly once', async () => {
    const started = Date.now();
    const sent = new Map<WorkflowHandle, MessageInput[]>();
    for (let i = 0; i < 9; i++) {
      const messages = scriptTask(`fault${i}`, 4);
      // Slow agent turns, so the killed worker dies holding some.
      for (const m of messages) script.reply.set(m.text, { delayMs: 500, then: { content: `Done: ${m.text}` } });
      sent.set(await startSession('fault'), messages);
    }
    const sendInput = async (index: number) => {
      for (const [handle, messages] of sent) await handle.signal(messageSignal, messages[index]!);
    };
    await sendInput(0);
    await sendInput(1);
    for (const handle of sent.keys()) {
      await waitFor(
        () => handle.query(decisionsQuery),
        (d) => d.length === 2,
        60_000,
      );
    }

    // The victim: the worker that ran the latest workflow task of the most Sessions (they stick to it).
    const lastWorker = new Map<WorkflowHandle, number | undefined>();
    for (const handle of sent.keys()) lastWorker.set(handle, (await workflowTaskWorkers(handle)).at(-1));
    const counts = new Map<number, number>();
    for (const pid of lastWorker.values()) if (pid !== undefined) counts.set(pid, (counts.get(pid) ?? 0) + 1);
    const victimPid = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]![0];
    const victim = workers.find((w) => w.child.pid === victimPid)!;
    const moved = [...sent.keys()].filter((h) => lastWorker.get(h) === victimPid);

    // Kill it while third inputs are in flight: once an agent turn for one of its Sessions has started.
    const agentBefore = server.requests(MODEL.agent).length;
    await sendInput(2);
    const victimThirds = new Set(moved.map((h) => sent.get(h)![2]!.text));
    await waitFor(
      () => Promise.resolve(server.requests(MODEL.agent).slice(agentBefore)),
      // The newest user message is the input an agent request is for; earlier ones are transcript.
      (reqs) =>
        reqs.some((r) => victimThirds.has([...r.messages].reverse().find((m) => m.role === 'user')?.content ?? '')),
      60_000,
    );
    await victim.kill();
    await sendInput(3);
    await sendInput(4);
    await allDecided(sent, 180_000);

    const result = await ledger(sent);
    expect(result).toMatchObject({ lost: 0, duplicated: 0, gapped: 0 });
    expect(result.decisions).toBe(result.inputs);
    const survivors = workers.filter((w) => w !== victim).map((w) => w.child.pid);
    for (const handle of moved) {
      const pids = await workflowTaskWorkers(handle);
      expect(survivors).toContain(pids.at(-1));
    }
    figures.push({
      scenario: 'kill -9',
      ...result,
      workersKilled: 1,
      sessionsMoved: moved.length,
      agentCallsRetried: server.requests(MODEL.agent).length - agentBefore - (result.inputs - 2 * sent.size),
      seconds: Math.round((Date.now() - started) / 100) / 10,
    });
  });
});
