/**
 * What ops see in the Temporal Web UI: a dev server with the UI enabled, a worker, a Session created
 * by the client with a message, then headless Chromium opens the Session's page and finds the static
 * summary and details, the current details the workflow publishes, and the search attributes.
 * The stack encrypts payloads (HARNESS_ENCRYPTION_KEYS) and the UI is pointed at our codec server,
 * so every payload text the UI shows was decoded by that server in the browser's request.
 * Screenshots go to test/.artifacts/.
 *
 * Needs Debian's chromium at /usr/bin/chromium (`apt-get install chromium`); skipped without it.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCodecServer, type RunningCodecServer } from '../client/codec-server.js';
import { codecFromEnv } from '../client/encryption.js';
import { SessionClient } from '../client/session-client.js';
import { MODEL, scriptedModels, uniqueId, userJson } from './support/harness.js';
import { ScriptedModelServer } from './support/model-server.js';
import { startOwnStack, type OwnStack } from './support/own-stack.js';
import { freePorts } from './support/ports.js';

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
const ARTIFACTS = join('test', '.artifacts');
const GOAL = 'Research ComfyUI and deliver a Markdown guide';

describe.skipIf(!hasChromium)(
  hasChromium
    ? 'the Temporal Web UI shows a Session to ops'
    : `the Temporal Web UI shows a Session to ops — SKIPPED: ${CHROMIUM} is not installed (apt-get install chromium)`,
  () => {
    let models: ScriptedModelServer;
    let stack: OwnStack;
    let client: SessionClient;
    let browser: BrowserContext;
    let page: Page;
    let uiUrl: string;
    let codecServer: RunningCodecServer;
    /** Decode requests that reached the codec server from the Web UI's origin. */
    let uiDecodes = 0;
    const sessionId = uniqueId('ui');
    const encryption = { HARNESS_ENCRYPTION_KEYS: `ui:${randomBytes(32).toString('base64')}` };

    beforeAll(async () => {
      models = await ScriptedModelServer.start();
      models.on(MODEL.extraction, { json: { terms: ['comfyui', 'markdown', 'guide'] } });
      models.on(MODEL.orchestration, (req) => {
        type Brief = Array<{ id: string }>;
        const { candidates } = userJson<{ candidates: { skills: Brief; toolsets: Brief } }>(req);
        const top = (list: Brief) => list.slice(0, 2).map((c) => c.id);
        return { json: { skills: top(candidates.skills), toolsets: top(candidates.toolsets), memories: [] } };
      });
      models.on(MODEL.agent, { content: 'Outline ready.' });

      const [codecPort] = (await freePorts(1)) as [number];
      const codecUrl = `http://127.0.0.1:${codecPort}`;
      stack = await startOwnStack({
        name: 'ui',
        models: scriptedModels(models),
        env: encryption,
        uiCodecEndpoint: codecUrl,
      });
      uiUrl = stack.server.uiUrl;
      const codec = codecFromEnv(encryption)!;
      codecServer = await startCodecServer({
        port: codecPort,
        allowedOrigins: [uiUrl],
        // The dev Web UI has no login, so it has no access token to send; loopback, Host and Origin
        // checks are what keep other callers out (docs/security.md, "Codec server").
        insecureNoToken: true,
        codec: {
          encode: (payloads) => codec.encode(payloads),
          decode: (payloads) => {
            uiDecodes++;
            return codec.decode(payloads);
          },
        },
      });
      client = await SessionClient.connect({
        address: stack.server.address,
        taskQueue: stack.taskQueue,
        env: encryption,
      });
      const submitted = await client.submit(sessionId, { text: GOAL, messageId: 'ui-1' }, { wait: true });
      expect(submitted.decision?.decision).toBe('initialize');

      mkdirSync(ARTIFACTS, { recursive: true });
      browser = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'harness-chromium-')), {
        executablePath: CHROMIUM,
        headless: true,
        viewport: { width: 1400, height: 1100 },
        args: [
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
      page = await browser.newPage();
    });

    afterAll(async () => {
      await browser?.close();
      await client?.close();
      await stack?.stop();
      await codecServer?.close();
      await models?.close();
    });

    it('opens the Session page and shows its summary, details and current details', async () => {
      await page.goto(`${uiUrl}/namespaces/default/workflows/session:${sessionId}`, { waitUntil: 'domcontentloaded' });
      await page.getByText(`session:${sessionId}`, { exact: true }).first().waitFor({ timeout: 30_000 });
      await page.getByText('User Metadata', { exact: true }).first().click();

      // The UI renders Markdown in sandboxed iframes: read every frame until the texts appear.
      const frames = await waitForFrameText(page, [
        `Session ${sessionId}: ${GOAL}`,
        'First message ui-1',
        'Stage: Idle',
        `Session goal: ${GOAL}`,
      ]);
      expect(frames).toContain(`Session ${sessionId}: ${GOAL}`);
      expect(frames).toMatch(/Stage: Idle · Status: active/);
      expect(frames).toContain('Loaded:');
      // Summary, details and current details are encrypted payloads: the browser had them decoded.
      expect(uiDecodes).toBeGreaterThan(0);
      await page.screenshot({ path: join(ARTIFACTS, 'web-ui-session-metadata.png'), fullPage: true });
    });

    it('shows the typed search attributes SessionStage and SessionStatus, and no goal text (encrypted stack)', async () => {
      await page.getByText('Search Attributes', { exact: true }).first().click();
      const panel = page.locator('main');
      await expect.poll(() => panel.innerText(), { timeout: 30_000 }).toContain('"SessionStage": "Idle"');
      const text = await panel.innerText();
      expect(text).toContain('"SessionStatus": "active"');
      // With encryption on, the client starts Sessions with goalSearchAttribute off: user text stays
      // out of visibility, where no payload codec reaches.
      expect(text).not.toContain('"SessionGoal"');
      expect(text).not.toContain(GOAL);
      await page.screenshot({ path: join(ARTIFACTS, 'web-ui-search-attributes.png'), fullPage: true });
    });

    it('lists the Session with its stage when filtering the workflow list by SessionStage', async () => {
      const query = encodeURIComponent(`WorkflowType = 'session' AND SessionStage = 'Idle'`);
      await page.goto(`${uiUrl}/namespaces/default/workflows?query=${query}`, { waitUntil: 'domcontentloaded' });
      await page.getByText(`session:${sessionId}`, { exact: true }).first().waitFor({ timeout: 30_000 });
      await page.screenshot({ path: join(ARTIFACTS, 'web-ui-workflow-list.png'), fullPage: true });
    });
  },
);

/** Concatenated text of the page and all its frames, once every `needles` entry is in it. */
async function waitForFrameText(page: Page, needles: string[]): Promise<string> {
  const deadline = Date.now() + 30_000;
  let text = '';
  for (;;) {
    const parts = await Promise.all(
      page.frames().map((frame) =>
        frame
          .locator('body')
          .innerText({ timeout: 1_000 })
          .catch(() => ''),
      ),
    );
    text = parts.join('\n').replace(/[ \t\u00a0]+/g, ' ');
    if (needles.every((n) => text.includes(n))) return text;
    if (Date.now() > deadline) throw new Error(`the UI never showed ${JSON.stringify(needles)}; it showed:\n${text}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
