import { SessionClient } from './client/index.js';
import { GatewayEventFeed } from './client/sse-feed.js';
import { earlySubscription } from './cli/turn-stream.js';
import { Connection, Client } from '@temporalio/client';
const sessionId = process.argv[2]!;
const feed = new GatewayEventFeed('http://127.0.0.1:17344', process.env.HARNESS_GATEWAY_TOKEN!);
const early = earlySubscription({ subscribe: (id, cb, after) => feed.subscribe(id, (e) => { console.log('FEED', JSON.stringify(e).slice(0, 120)); cb(e); }, after) }, sessionId);
const connection = await Connection.connect({ address: '127.0.0.1:17333' });
const client = new SessionClient(new Client({ connection }));
const recorded = await client.submit(sessionId, { text: 'Write a Markdown guide to installing ComfyUI' }, {});
console.log('recorded', recorded.seq);
const stop = AbortSignal.timeout(8000);
try {
  for await (const ev of client.events(sessionId, { feed: early, after: `${recorded.seq - 1}.${Number.MAX_SAFE_INTEGER}`, signal: stop })) console.log('EV', ev.id, ev.kind);
} catch (e) { console.log('ERR', String(e)); }
process.exit(0);
