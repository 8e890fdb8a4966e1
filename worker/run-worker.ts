/**
 * Runs a Session worker until SIGINT/SIGTERM, logging where it polls and which model serves each role.
 */
import type { HarnessConfig } from './config.js';
import { createSessionWorker } from './create-worker.js';

export async function runWorker(config: HarnessConfig, log: (line: string) => void): Promise<void> {
  const built = await createSessionWorker(config, { log });
  const size = built.catalog.size();
  log(`catalog: ${size.skills} skills, ${size.toolsets} toolsets from ${config.catalogDir}`);
  for (const problem of built.catalogProblems) log(`catalog problem: ${problem.file}: ${problem.message}`);
  for (const status of built.mcp?.status() ?? []) {
    log(`mcp ${status.name} (${status.id}): ${status.state}, ${status.tools} tools`);
  }
  log(`memories: ${await built.memories.count()} in ${built.memories.location}`);
  for (const [role, model] of Object.entries(built.models.describe())) log(`model ${role}: ${model}`);
  log(
    `worker polling task queue "${config.temporal.taskQueue}" on ${config.temporal.address} (namespace ${config.temporal.namespace})`,
  );
  // Worker.run installs its own SIGINT/SIGTERM handling and drains in-flight tasks before returning.
  try {
    await built.worker.run();
  } finally {
    await built.close();
  }
}
