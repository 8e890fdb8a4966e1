/**
 * The published wire contract: docs/contract.md and docs/schemas/*.json are exactly what the
 * generator renders (and Prettier leaves them alone), every message defined in contract/api.ts is in
 * them, and the document's worked examples — the `temporal` CLI commands and the HTTP API requests —
 * work against a real server with the HTTP API enabled, in the order the document gives them. Real
 * query results pass the published JSON Schema files, checked by a JSON Schema validator (ajv) as a
 * backend in another language would check them.
 */
import { execFile } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import * as prettier from 'prettier';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CONTRACT_PATH, SCHEMAS_DIR, renderContract, renderSchemaFiles } from '../cli/contract.js';
import {
  contractExamples,
  renderCliExample,
  renderHttpExample,
  shellQuote,
  type HttpExample,
} from '../cli/contract-examples.js';
import { SPECS, definedMessages, schemaFileOf } from '../cli/contract-schemas.js';
import { SessionClient, workflowIdFor } from '../client/index.js';
import { SessionView } from '../contract/queries.js';
import { type DevServer } from '../dev/dev-server.js';
import { MODEL, scriptedModels, uniqueId, userJson } from './support/harness.js';
import { ScriptedModelServer } from './support/model-server.js';
import { startOwnStack, type OwnStack } from './support/own-stack.js';

const run = promisify(execFile);

/** A JSON Schema validator over the committed files, as a service in another language would use them. */
function schemaValidator(file: string) {
  const schema = JSON.parse(readFileSync(join(SCHEMAS_DIR, file), 'utf8')) as object;
  return new Ajv2020({ strict: false, allErrors: true }).compile(schema);
}

describe('docs/contract.md and docs/schemas/', () => {
  it('the document is what `npm run contract` renders (run it after changing a schema or a message)', async () => {
    expect(readFileSync(CONTRACT_PATH, 'utf8')).toBe(await renderContract());
  });

  it('the schema files are what `npm run contract` renders, and no others', async () => {
    const rendered = await renderSchemaFiles();
    expect(readdirSync(SCHEMAS_DIR).sort()).toEqual([...rendered.keys()].sort());
    for (const [file, text] of rendered) expect(readFileSync(join(SCHEMAS_DIR, file), 'utf8'), file).toBe(text);
  });

  it('are already formatted the way Prettier formats them, so `npm run lint` accepts the generated files', async () => {
    const text = await renderContract();
    const options = await prettier.resolveConfig(CONTRACT_PATH);
    expect(await prettier.format(text, { ...options, filepath: CONTRACT_PATH })).toBe(text);
  });

  it('documents every signal, query and update defined in contract/api.ts, and nothing else', () => {
    const defined = definedMessages()
      .map((m) => `${m.kind}:${m.name}`)
      .sort();
    expect(defined).toEqual(SPECS.map((s) => `${s.kind}:${s.name}`).sort());
    expect(defined.length).toBeGreaterThanOrEqual(12);
  });

  it('each payload schema file accepts its documented example and refuses what the workflow refuses', () => {
    for (const spec of SPECS) {
      if (spec.kind === 'query') continue;
      const validate = schemaValidator(schemaFileOf(spec.name, 'payload'));
      expect(validate(spec.example), `${spec.name}: ${JSON.stringify(validate.errors)}`).toBe(true);
      expect(validate({ ...(spec.example as object), unknownField: 1 }), spec.name).toBe(false);
    }
    const message = schemaValidator('message.json');
    expect(message({ messageId: 'm-1', text: '   ' })).toBe(false);
    expect(message({ messageId: 'm-1', text: 'x'.repeat(16_001) })).toBe(false);
    const command = schemaValidator('command.json');
    expect(command({ commandId: 'c-1', name: 'set-goals', args: {} })).toBe(false);
    expect(command({ commandId: 'c-1', name: 'reboot' })).toBe(false);
    expect(schemaValidator('start-argument.json')({ sessionId: 'not a session id' })).toBe(false);
  });
});

describe('the contract on a real server (temporal CLI and HTTP API)', () => {
  let models: ScriptedModelServer;
  let stack: OwnStack;
  let server: DevServer;
  let taskQueue: string;
  let httpPort: number;

  beforeAll(async () => {
    models = await ScriptedModelServer.start();
    scriptModels(models);
    stack = await startOwnStack({ name: 'contract', models: scriptedModels(models) });
    ({ server, taskQueue, httpPort } = stack);
  });

  afterAll(async () => {
    await stack?.stop();
    await models?.close();
  });

  it('runs every `temporal` CLI example in order, and the results match the published schemas', async () => {
    const sessionId = uniqueId('cli');
    const { cli } = contractExamples({ sessionId, taskQueue, namespace: 'default', httpBase: '' });
    const temporal = shellQuote(inject('temporalCliPath'));
    for (const example of cli) {
      // The shell runs the command exactly as the document prints it, with only the address added.
      const command = `${renderCliExample(example, temporal)} --address ${server.address}`;
      const output = await eventually(
        example.title,
        async () => {
          const { stdout, stderr } = await run('sh', ['-c', command]);
          return stdout + stderr;
        },
        example.expect,
      );
      expect(output).toContain(example.expect);
    }

    const client = await SessionClient.connect({ address: server.address, taskQueue });
    try {
      for (const spec of SPECS) {
        if (spec.kind !== 'query') continue;
        const result: unknown = await client.client.workflow.getHandle(workflowIdFor(sessionId)).query(spec.name);
        expect(spec.result.safeParse(result).error?.issues ?? []).toEqual([]);
        const validate = schemaValidator(schemaFileOf(spec.name, 'result'));
        expect(validate(result), `${spec.name}: ${JSON.stringify(validate.errors)}`).toBe(true);
      }
      const snapshot = await client.snapshot(sessionId);
      expect(Object.keys(snapshot).sort()).toEqual(Object.keys(SessionView.shape).sort());
      expect(snapshot.status).toBe('paused');
      expect(snapshot.counts.controlEvents).toBe(2);
      const [decision] = await client.decisions(sessionId, { limit: 1 });
      expect(decision?.decision).toBe('continue');
    } finally {
      await client.close();
    }
  });

  it('runs every HTTP API example in order against start-dev --http-port', async () => {
    const sessionId = uniqueId('http');
    const base = `http://127.0.0.1:${httpPort}`;
    const { http } = contractExamples({ sessionId, taskQueue, namespace: 'default', httpBase: base });
    const curl = await run('sh', ['-c', 'command -v curl']).then(
      () => true,
      () => false,
    );
    for (const example of http) {
      const output = await eventually(
        example.title,
        () => (curl ? viaCurl(example, base) : viaFetch(example, base)),
        example.expect,
      );
      expect(output).toContain(example.expect);
    }
    const client = await SessionClient.connect({ address: server.address, taskQueue });
    try {
      const view = await client.snapshot(sessionId);
      expect(view.goals.phase?.text).toBe('Write the installation chapter');
      expect(view.seq.lastBound).toBe(3);
      const description = await client.client.workflow.getHandle(workflowIdFor(sessionId)).describe();
      expect(await description.staticSummary()).toBe(
        `Session ${sessionId}: Research ComfyUI and deliver a Markdown guide`,
      );
    } finally {
      await client.close();
    }
  });

  it('answers an unknown Session with HTTP 404 and gRPC code 5, as documented', async () => {
    const response = await fetch(
      `http://127.0.0.1:${httpPort}/api/v1/namespaces/default/workflows/${workflowIdFor(uniqueId('nobody'))}/query/goals`,
      { method: 'POST', body: '{}' },
    );
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ code: 5, message: expect.stringContaining('workflow not found') });
  });
});

/** Relevance always high, terms from the goal, orchestration takes the two best candidates of each kind. */
function scriptModels(server: ScriptedModelServer): void {
  server.on(MODEL.relevance, { json: { phaseRelevance: 0.9, sessionRelevance: 0.85 } });
  server.on(MODEL.extraction, (req) => {
    const { phaseGoal } = userJson<{ phaseGoal: string }>(req);
    return {
      json: {
        terms: phaseGoal
          .toLowerCase()
          .split(/\W+/)
          .filter((t) => t.length > 3),
      },
    };
  });
  server.on(MODEL.orchestration, (req) => {
    type Brief = Array<{ id: string }>;
    const { candidates } = userJson<{ candidates: { skills: Brief; toolsets: Brief; memories: Brief } }>(req);
    const top = (list: Brief) => list.slice(0, 2).map((c) => c.id);
    return { json: { skills: top(candidates.skills), toolsets: top(candidates.toolsets), memories: [] } };
  });
  server.on(MODEL.compaction, { json: { summary: 'phase summary' } });
  server.on(MODEL.agent, { content: 'On it.' });
}

async function viaCurl(example: HttpExample, base: string): Promise<string> {
  const { stdout } = await run('sh', ['-c', renderHttpExample(example, base)]);
  return stdout;
}

async function viaFetch(example: HttpExample, base: string): Promise<string> {
  const response = await fetch(`${base}${example.path}`, {
    method: example.method,
    ...(example.body !== undefined
      ? { body: JSON.stringify(example.body), headers: { 'content-type': 'application/json' } }
      : {}),
  });
  return response.text();
}

/**
 * Runs `attempt` until its output contains `expected`: queries and visibility see the effect of the
 * commands before them only once the worker has processed those. Every example is safe to repeat
 * (signals and updates are de-duplicated by their ids).
 */
async function eventually(title: string, attempt: () => Promise<string>, expected: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  let last = '';
  for (;;) {
    try {
      last = await attempt();
      if (last.includes(expected)) return last;
    } catch (err) {
      last = String(err);
    }
    if (Date.now() > deadline)
      throw new Error(`"${title}" never printed ${JSON.stringify(expected)}; last output:\n${last}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
