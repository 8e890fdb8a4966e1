/**
 * A front end's view of a Session through the gateway `npm start` runs, with `@ag-ui/client`'s
 * HttpAgent (the AG-UI client chat front ends use): it sends the text given as the first message of
 * a new thread (a new Session) to POST /ag-ui and prints what the AG-UI event stream shows: tool
 * calls, the approval interrupt that ends the run, tool results and the agent's reply. With
 * `--approve`, an interrupted run is resumed with the answer {approved: true}, as an approve button would.
 *
 *   npx tsx examples/ag-ui-client/main.ts [--approve] "the task"
 *
 * The gateway: HARNESS_GATEWAY_URL, else http://127.0.0.1:$HARNESS_GATEWAY_PORT (default 7244); its
 * token: HARNESS_GATEWAY_TOKEN, else the one `npm start` keeps in .data/gateway-token.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { HttpAgent, type AgentSubscriber } from '@ag-ui/client';

const args = process.argv.slice(2);
const approve = args.includes('--approve');
const task = args.filter((a) => a !== '--approve').join(' ');
if (!task) {
  process.stderr.write('usage: main.ts [--approve] "the task"\n');
  process.exit(2);
}
const url = process.env.HARNESS_GATEWAY_URL ?? `http://127.0.0.1:${process.env.HARNESS_GATEWAY_PORT ?? 7244}`;
const token = process.env.HARNESS_GATEWAY_TOKEN ?? readFileSync('.data/gateway-token', 'utf8').trim();

// threadId is the Session id: a new one is a new Session.
const agent = new HttpAgent({
  url: `${url}/ag-ui`,
  headers: { authorization: `Bearer ${token}` },
  threadId: `ag-ui-${randomUUID().slice(0, 8)}`,
});
const print = (line: string): void => {
  process.stdout.write(`${line}\n`);
};

// What a chat front end would render, one line each.
const view: AgentSubscriber = {
  onToolCallEndEvent: ({ toolCallName, toolCallArgs }) =>
    print(`tool call: ${toolCallName}(${JSON.stringify(toolCallArgs)})`),
  onToolCallResultEvent: ({ event }) => print(`tool result: ${JSON.stringify(event.content)}`),
  onTextMessageEndEvent: ({ textMessageBuffer }) => print(`reply: ${textMessageBuffer}`),
  onCustomEvent: ({ event }) => {
    if (event.name === 'tool.approved') print(`approved by ${(event.value as { by: string }).by}`);
  },
  onRunFinishedEvent: (params) => {
    if (params.outcome === 'interrupt') for (const i of params.interrupts) print(`interrupt: ${i.message ?? i.reason}`);
  },
  onRunErrorEvent: ({ event }) => print(`error: ${event.message}`),
};

agent.addMessage({ id: randomUUID(), role: 'user', content: task });
await agent.runAgent({}, view);
// The run ended on an approval: the next run answers it (AG-UI's resume) and goes on with the turn.
while (approve && agent.pendingInterrupts.length > 0) {
  const resume = agent.pendingInterrupts.map((i) => ({
    interruptId: i.id,
    status: 'resolved' as const,
    payload: { approved: true },
  }));
  await agent.runAgent({ resume }, view);
}
