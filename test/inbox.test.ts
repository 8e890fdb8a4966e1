/**
 * The approval inbox page (gateway/inbox.html) in a real browser (Debian's chromium; skipped without
 * it) against the real dev server, a worker with the MCP fixture tools and an approval policy, and the
 * gateway. A call shows from its `approval.waiting` event even while the inbox list lags behind it
 * (made deterministic in the browser, and in the gateway with its test-only visibility hook); a note
 * typed while a live refresh lands is kept and recorded; each call says why it waits, what the user
 * asked, what the agent said, and how long it has waited; Approve and Reject look different, Reject
 * asks for a note, the keyboard answers; answered calls stay listed with who answered, when, and the
 * verdict the Session recorded; the page names the authenticated principal.
 *
 * A screenshot of each state goes to test/.artifacts/inbox-*.png (gitignored) for review.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Locator, type Page, type Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ToolPolicy } from '../capabilities/tool-policy.js';
import type { McpCatalog } from '../capabilities/mcp-catalog.js';
import { SessionClient } from '../client/index.js';
import type { InboxEntry } from '../contract/queries.js';
import { startGateway, type Gateway } from '../gateway/server.js';
import { MODEL, scriptedModels, startWorker, uniqueId, waitFor, type TestWorker } from './support/harness.js';
import { connectedCatalog, fixtureMcpEntry } from './support/mcp-fixture.js';
import { readJournal } from './support/mcp-fixture-server.js';
import { ScriptedModelServer } from './support/model-server.js';
import { scriptRoles, type RoleScript } from './support/scripted-roles.js';

const TOKEN = 'inbox-test-token';
const PRINCIPAL = 'ops-alice';
const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join('test', '.artifacts');
const GOAL = 'Exercise the fixture tools: echo and add numbers';
/** The policy rule that makes `echo` wait; `add` waits because its toolset says so. */
const ECHO_RULE = {
  id: 'echo-reaches-customers',
  effect: 'approve',
  tool: 'echo',
  reason: 'echoed text reaches customers',
};

let dir: string;
let journal: string;
let server: ScriptedModelServer;
let script: RoleScript;
let mcp: McpCatalog;
let worker: TestWorker;
let client: SessionClient;
let gateway: Gateway;
let browser: BrowserContext;
/** Sessions the gateway's visibility list leaves out, as a lagging visibility store would. */
const lagging = new Set<string>();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'inbox-'));
  journal = join(dir, 'journal.log');
  const connected = await connectedCatalog({
    fixture: {
      ...fixtureMcpEntry(dir, ['echo', 'add'], { MCP_FIXTURE_JOURNAL: journal }),
      riskTags: ['fixture-data'],
      toolRiskTags: { add: ['ledger-write'] },
    },
  });
  mcp = connected.mcp;
  server = await ScriptedModelServer.start();
  script = scriptRoles(server);
  script.selection.set(GOAL, { skills: [], toolsets: ['mcp-fixture'] });
  worker = await startWorker({
    models: scriptedModels(server),
    catalog: connected.catalog,
    mcp,
    toolPolicy: ToolPolicy.parse({ rules: [ECHO_RULE] }, 'policy.json'),
  });
  client = await SessionClient.connect({ address: inject('temporalAddress'), taskQueue: worker.taskQueue });
  gateway = await startGateway({
    client,
    feed: worker.events,
    token: TOKEN,
    tokenPrincipal: PRINCIPAL,
    inboxTestHooks: { hideFromVisibility: (sessionId) => lagging.has(sessionId) },
  });
  mkdirSync(ARTIFACTS, { recursive: true });
  if (existsSync(CHROMIUM)) {
    browser = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'inbox-chromium-')), {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1280, height: 1000 },
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
  }
});

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await client?.close();
  await worker?.stop();
  await mcp?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const auth = { authorization: `Bearer ${TOKEN}` };

async function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

interface Waiting {
  sessionId: string;
  /** The user's message of the input whose call waits. */
  text: string;
}

/**
 * A Session (made through the gateway) whose input 2 waits for approval of one call; the agent wrote
 * `said` beside the call and replies `reply` after it. `before` runs before the input is sent.
 */
async function waitingCall(
  prefix: string,
  call: { name: 'add' | 'echo'; arguments: Record<string, unknown> },
  said: string,
  reply: string,
  before?: (sessionId: string) => void,
): Promise<Waiting> {
  const sessionId = uniqueId(prefix);
  await post(`/sessions/${sessionId}/messages`, { text: GOAL });
  await client.waitForDecision(sessionId, 1);
  server.enqueue(MODEL.agent, { content: said, toolCalls: [{ id: 'call_1', ...call }] }, { content: reply });
  const text = `please ${call.name} ${JSON.stringify(call.arguments)} (${sessionId})`;
  script.relevance.set(text, [0.9, 0.9]);
  before?.(sessionId);
  await post(`/sessions/${sessionId}/messages`, { text });
  expect((await client.waitForDecision(sessionId, 2))?.agent?.outcome).toBe('waiting-approval');
  return { sessionId, text };
}

/** The turn's record once the page's answer reached the Session (the click returns before the update does). */
const finished = (sessionId: string) =>
  waitFor(
    () => client.waitForDecision(sessionId, 2),
    (record) => record?.agent?.outcome !== 'waiting-approval',
    60_000,
  );

const ranFor = (sessionId: string) =>
  readJournal(journal).filter((l) => l.kind === 'ran' && l.key.startsWith(`${sessionId}:`));

async function openInbox(): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(`${gateway.url}/inbox?access_token=${TOKEN}`);
  await expect.poll(() => page.locator('#principal').textContent()).toBe(PRINCIPAL);
  return page;
}

const callRow = (page: Page, sessionId: string) => page.locator(`article.call[data-session-id="${sessionId}"]`);
const answeredRow = (page: Page, sessionId: string) =>
  page.locator(`tr.answered[data-answered-session-id="${sessionId}"]`);

/** Waits until the row's text has every one of `texts`. */
async function shows(row: Locator, texts: string[]): Promise<void> {
  const missing = async () => {
    const text = (await row.textContent()) ?? '';
    return texts.filter((t) => !text.includes(t));
  };
  await expect.poll(missing, { timeout: 30_000 }).toEqual([]);
}

/** The browser's globals the checks read (this project's TypeScript has no DOM types); functions passed
 * to `evaluate` run in the page, so each casts `globalThis` itself. */
type BrowserGlobals = {
  document: { activeElement: unknown };
  getComputedStyle: (element: unknown) => { backgroundColor: string };
  refresh: () => Promise<void>;
};
/** Whether the element has the keyboard focus. */
const focused = (locator: Locator) =>
  locator.evaluate((element) => element === (globalThis as unknown as BrowserGlobals).document.activeElement);
/** One read of the inbox list by the page, as a live change sets off. */
const liveRefresh = (page: Page) => page.evaluate(() => (globalThis as unknown as BrowserGlobals).refresh());

const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(ARTIFACTS, `inbox-${name}.png`), fullPage: true });

describe.skipIf(!existsSync(CHROMIUM))('the approval inbox page', () => {
  it('shows a call from its approval.waiting event while the inbox list lags, with why it waits, the user message, the agent reason and the age; approve with a note lands in "recently answered"', async () => {
    const page = await openInbox();
    // The page's list reads leave the lagging Session out (a visibility store that has not caught up).
    let lateSession = '';
    let listReads = 0;
    const lag = async (route: Route) => {
      const response = await route.fetch();
      const body = (await response.json()) as { waiting: InboxEntry[] };
      listReads++;
      await route.fulfill({
        response,
        json: { ...body, waiting: body.waiting.filter((e) => e.sessionId !== lateSession) },
      });
    };
    await page.route('**/approvals', lag);
    const said = 'I will add the two amounts to total the invoice.';
    const waiting = await waitingCall(
      'inbox-lag',
      { name: 'add', arguments: { a: 19, b: 23 } },
      said,
      'The sum is 42.',
      (id) => {
        lateSession = id;
        lagging.add(id);
      },
    );
    const { sessionId } = waiting;

    const row = callRow(page, sessionId);
    await row.waitFor({ timeout: 30_000 });
    // From the event: not in the list the page read, yet shown with everything a person decides on.
    await shows(row, [
      'add',
      '{"a":19,"b":23}',
      'toolset mcp-fixture requires approval',
      'fixture-data',
      'ledger-write',
      waiting.text,
      said,
      'waiting',
    ]);
    expect(await row.getAttribute('data-source')).toBe('event');
    // A list read after the event still lacks the call: the row stays.
    const reads = listReads;
    await liveRefresh(page);
    expect(listReads).toBeGreaterThan(reads);
    expect(await row.count()).toBe(1);
    expect(await row.getAttribute('data-source')).toBe('event');
    expect(await row.locator('.age').textContent()).toMatch(/^waiting \d+ s$/);
    await shot(page, 'waiting-from-event');

    // The gateway's own list, while visibility still leaves the Session out: it heard the event and
    // read the Session directly.
    const direct = (await (await fetch(`${gateway.url}/approvals`, { headers: auth })).json()) as {
      waiting: InboxEntry[];
      principal: string;
    };
    expect(direct.principal).toBe(PRINCIPAL);
    expect(direct.waiting.find((e) => e.sessionId === sessionId)).toMatchObject({
      tool: 'add',
      why: { source: 'toolset', toolset: 'mcp-fixture', rule: null, riskTags: ['fixture-data', 'ledger-write'] },
      userMessage: waiting.text,
      agentText: said,
    });

    // Once the list catches up the row is the list's (the goal comes with it), and a reload shows it too.
    await page.unrouteAll({ behavior: 'wait' });
    lateSession = '';
    await page.reload();
    await row.waitFor({ timeout: 30_000 });
    await expect.poll(() => row.getAttribute('data-source')).toBe('list');
    await shows(row, [GOAL]);
    lagging.delete(sessionId);

    // Approve and Reject are different buttons, and look different.
    const approve = row.getByRole('button', { name: 'Approve' });
    const reject = row.getByRole('button', { name: 'Reject' });
    const colour = (button: Locator) =>
      button.evaluate((b) => (globalThis as unknown as BrowserGlobals).getComputedStyle(b).backgroundColor);
    expect(await colour(approve)).not.toBe(await colour(reject));

    await row.locator('input[name="note"]').fill('checked the numbers');
    await approve.click();
    const done = await finished(sessionId);
    expect(done?.agent?.outcome).toBe('replied');
    expect(done?.agent?.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'add',
        status: 'ok',
        approval: expect.objectContaining({ approved: true, by: PRINCIPAL, note: 'checked the numbers' }),
      }),
    ]);
    expect(ranFor(sessionId)).toHaveLength(1);
    // The call leaves the waiting list and stays in "recently answered": verdict, who, when, note.
    await expect.poll(() => row.count()).toBe(0);
    const answered = answeredRow(page, sessionId);
    await answered.waitFor({ timeout: 30_000 });
    expect(await answered.locator('.verdict').textContent()).toBe('approved');
    expect(await answered.locator('.by').textContent()).toBe(PRINCIPAL);
    expect(await answered.locator('.note').textContent()).toBe('checked the numbers');
    expect(await answered.locator('.when').textContent()).toMatch(/ago$/);
    await expect
      .poll(() => page.locator('#status').textContent())
      .toContain(`Approved add in Session ${sessionId} as ${PRINCIPAL}`);
    await shot(page, 'answered');
    await page.close();
  });

  it('keeps a note typed while a live refresh lands and records it; Reject asks for a note; the keyboard approves', async () => {
    const page = await openInbox();
    const first = await waitingCall(
      'inbox-note',
      { name: 'add', arguments: { a: 2, b: 3 } },
      'Adding up the two.',
      'Not added.',
    );
    const rowA = callRow(page, first.sessionId);
    await rowA.waitFor({ timeout: 30_000 });
    const note = rowA.locator('input[name="note"]');
    await note.click();
    await page.keyboard.type('the totals are wrong, ');

    // Hold the page's next list read: the refresh that another Session's waiting call sets off lands
    // while the approver is still typing.
    let releaseRead!: () => void;
    const held = new Promise<void>((resolve) => (releaseRead = resolve));
    let readArrived!: () => void;
    const arrived = new Promise<void>((resolve) => (readArrived = resolve));
    const hold = async (route: Route) => {
      readArrived();
      await held;
      await route.continue();
    };
    await page.route('**/approvals', hold);
    const second = await waitingCall(
      'inbox-echo',
      { name: 'echo', arguments: { text: 'hello customers' } },
      'Echoing the greeting as asked.',
      'Echoed.',
    );
    const rowB = callRow(page, second.sessionId);
    await rowB.waitFor({ timeout: 30_000 });
    await arrived;
    await page.keyboard.type('see ticket 7');
    await shot(page, 'note-during-refresh');
    releaseRead();
    await page.unrouteAll({ behavior: 'wait' });
    // The refresh has landed (B comes from the list now): the note, its focus and the caret are intact.
    await expect.poll(() => rowB.getAttribute('data-source')).toBe('list');
    await page.keyboard.type(' (the second row)');
    const typed = 'the totals are wrong, see ticket 7 (the second row)';
    expect(await note.inputValue()).toBe(typed);
    expect(await focused(note)).toBe(true);
    // The second call waits because of a policy rule, and says which.
    await shows(rowB, [
      `policy rule ${ECHO_RULE.id}: ${ECHO_RULE.reason}`,
      'fixture-data',
      'Echoing the greeting as asked.',
    ]);

    // Reject asks first; Enter in the note confirms.
    await rowA.getByRole('button', { name: 'Reject' }).click();
    await expect.poll(() => rowA.getAttribute('class')).toContain('rejecting');
    await shot(page, 'reject-asks-note');
    await note.press('Enter');
    const rejected = await finished(first.sessionId);
    expect(rejected?.agent?.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'add',
        status: 'rejected',
        approval: expect.objectContaining({ approved: false, by: PRINCIPAL, note: typed }),
      }),
    ]);
    const answeredA = answeredRow(page, first.sessionId);
    await answeredA.waitFor({ timeout: 30_000 });
    expect(await answeredA.locator('.verdict').textContent()).toBe('rejected');
    expect(await answeredA.locator('.note').textContent()).toBe(typed);
    expect(ranFor(first.sessionId)).toHaveLength(0);

    // Keyboard, on the second call: `r` with no note only asks for one (nothing is sent), Esc cancels,
    // `a` then Enter approves.
    await rowB.focus();
    await page.keyboard.press('r');
    const noteB = rowB.locator('input[name="note"]');
    expect(await focused(noteB)).toBe(true);
    await page.keyboard.press('Enter');
    await expect.poll(() => rowB.locator('.prompt').textContent()).toContain('A rejection needs a note');
    expect((await client.snapshot(second.sessionId)).pendingApprovals).toHaveLength(1);
    await page.keyboard.press('Escape');
    await expect.poll(() => rowB.getAttribute('class')).not.toContain('rejecting');
    await page.keyboard.press('a');
    await expect.poll(() => rowB.locator('.prompt').textContent()).toContain('Press Enter to approve echo');
    await shot(page, 'approve-armed');
    await page.keyboard.press('Enter');
    const approved = await finished(second.sessionId);
    expect(approved?.agent?.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'echo',
        status: 'ok',
        approval: expect.objectContaining({ approved: true, by: PRINCIPAL }),
      }),
    ]);
    await expect.poll(() => rowB.count()).toBe(0);
    await answeredRow(page, second.sessionId).waitFor({ timeout: 30_000 });
    await shot(page, 'answered-both');
    await page.close();
  });

  it('approves with edited arguments: a schema violation is shown inline and the call keeps waiting; the edit then runs once, recorded beside the proposal', async () => {
    const { sessionId } = await waitingCall(
      'inbox-edit',
      { name: 'add', arguments: { a: 19, b: 23 } },
      'Adding.',
      'The approver changed the numbers; the sum it got is 50.',
    );
    const page = await openInbox();
    const row = callRow(page, sessionId);
    await row.waitFor({ timeout: 30_000 });
    await row.getByText('edit arguments').click();
    const editor = row.locator('textarea[name="arguments"]');
    // Prefilled with the model's proposal.
    expect(JSON.parse(await editor.inputValue())).toEqual({ a: 19, b: 23 });

    await editor.fill('{"a": "twenty", "b": 30}');
    await row.getByRole('button', { name: 'Approve' }).click();
    const error = row.locator('.error');
    await expect
      .poll(() => error.textContent(), { timeout: 30_000 })
      .toMatch(/edited arguments do not fit add's input schema: .*arguments\/a must be number/);
    await shot(page, 'edit-refused');
    // Refused, not applied: the call still waits, the refusal is recorded, nothing ran.
    const view = await client.snapshot(sessionId);
    expect(view.pendingApprovals.map((a) => a.tool)).toEqual(['add']);
    expect(view.recentRejections.at(-1)?.reason).toMatch(/do not fit add's input schema/);
    expect(ranFor(sessionId)).toHaveLength(0);
    // The draft survives the page's live refresh.
    await liveRefresh(page);
    expect(await editor.inputValue()).toBe('{"a": "twenty", "b": 30}');

    await editor.fill('{"a": 20, "b": 30}');
    await row.getByRole('button', { name: 'Approve' }).click();
    const done = await finished(sessionId);
    expect(done?.agent?.outcome).toBe('replied');
    expect(done?.agent?.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'add',
        status: 'ok',
        arguments: '{"a": 20, "b": 30}',
        originalArguments: '{"a":19,"b":23}',
        editedBy: PRINCIPAL,
        result: '50',
      }),
    ]);
    expect(ranFor(sessionId)).toHaveLength(1);
    const approved = (await client.eventsAfter(sessionId)).events.find((e) => e.kind === 'tool.approved');
    expect(approved).toMatchObject({
      arguments: '{"a": 20, "b": 30}',
      originalArguments: '{"a":19,"b":23}',
      by: PRINCIPAL,
    });
    await expect.poll(() => row.count()).toBe(0);
    const answered = answeredRow(page, sessionId);
    await answered.waitFor({ timeout: 30_000 });
    expect(await answered.locator('.verdict').textContent()).toBe('approved (edited)');
    await page.close();
  });
});
