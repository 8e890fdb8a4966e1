/**
 * The MCP fixture server (mcp-fixture-server.ts) as a stdio entry of an MCP config: its tools are
 * listed in a control file the test writes, and `add` needs approval. Shared by the tests that drive
 * the agent loop through it.
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const FIXTURE = resolve('test/support/mcp-fixture-server.ts');

/**
 * Writes the control file into `dir` and returns the `mcpServers.fixture` entry that runs the server,
 * with `env` added to its environment (e.g. MCP_FIXTURE_JOURNAL).
 */
export function fixtureMcpEntry(
  dir: string,
  tools: string[] = ['echo', 'add', 'sleep', 'fail'],
  env: Record<string, string> = {},
) {
  const control = join(dir, 'tools.json');
  writeFileSync(
    control,
    JSON.stringify({ tools: tools.map((name) => ({ name, description: `The fixture's ${name} tool.` })) }),
  );
  return {
    command: process.execPath,
    args: ['--import', 'tsx', FIXTURE],
    env: { MCP_FIXTURE_CONTROL: control, ...env },
    description: 'Fixture tools: echo text, add numbers (needs approval), sleep, fail.',
    tags: ['fixture', 'echo', 'add', 'sleep', 'fail'],
    approvalRequired: ['add'],
    timeoutMs: 60_000,
  };
}
