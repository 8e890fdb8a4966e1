/**
 * Runs a Session worker until SIGINT/SIGTERM, logging where it polls and which model serves each role.
 */
import { Runtime } from '@temporalio/worker';
import { ConfigError, type HarnessConfig } from './config.js';
import { createModels, createSessionWorker, type BuiltWorker } from './create-worker.js';
import { blockingChecks, checkLine, checkModels } from '../models/model-check.js';
import { OpenAIModels } from '../models/openai-models.js';
import { describeProfile } from '../models/provider-profiles.js';
import { ROLES } from '../models/roles.js';

/** The start-up model check refused the configuration; the message names what to change. */
export class ModelCheckError extends ConfigError {
  override name = 'ModelCheckError';
}

/**
 * Logs each role's provider profile and, unless `HARNESS_MODEL_CHECK=off` (or `--no-check`), sends
 * each configured role one request of its exact shape; throws ModelCheckError when an endpoint
 * refuses one. The local provider has nothing to check.
 */
export async function checkModelsAtStart(config: HarnessConfig, log: (line: string) => void): Promise<void> {
  const settings = config.models;
  if (settings.provider !== 'openai') return;
  for (const role of ROLES) {
    log(describeProfile(role, settings.profiles[role], settings.baseURL, settings.byRole[role]));
  }
  if (!settings.check) {
    log('model check: skipped (HARNESS_MODEL_CHECK=off or --no-check)');
    return;
  }
  const models = createModels(settings);
  if (!(models instanceof OpenAIModels)) return;
  const checks = await checkModels(models, settings.byRole);
  for (const check of checks) log(checkLine(check));
  const blocking = blockingChecks(checks);
  if (blocking.length > 0) {
    throw new ModelCheckError(
      `The model endpoint refused the harness's requests; the worker did not start:\n` +
        blocking.map((c) => `  ${c.role} (${c.model}, profile ${c.profile}): ${c.detail}`).join('\n') +
        `\n(Run \`harness doctor\` to check again; HARNESS_MODEL_CHECK=off or --no-check skips this check.)`,
    );
  }
}
import { installTelemetry } from './telemetry.js';

/**
 * Installs the process's telemetry (metrics endpoint, JSON logs) unless `installRuntime` is false
 * because the embedder installed the SDK runtime itself, then runs the worker.
 */
export async function runWorker(
  config: HarnessConfig,
  log: (line: string) => void,
  options: {
    installRuntime?: boolean;
    /** Started once the worker is built (npm start runs the HTTP gateway here); its stop runs after the worker's. */
    alongside?: (built: BuiltWorker) => Promise<() => Promise<void>>;
  } = {},
): Promise<void> {
  if (options.installRuntime !== false) {
    const { metricsUrl } = installTelemetry(config.telemetry);
    // In JSON mode our own lines go through the SDK logger too, so a log shipper sees one format.
    if (config.telemetry.logFormat === 'json')
      log = (line) => {
        Runtime.instance().logger.info(line);
      };
    if (metricsUrl) log(`metrics: ${metricsUrl}`);
  }
  await checkModelsAtStart(config, log);
  const built = await createSessionWorker(config, { log });
  const size = built.catalog.size();
  log(`catalog: ${size.skills} skills, ${size.toolsets} toolsets from ${config.catalogDir}`);
  for (const problem of built.catalogProblems) log(`catalog problem: ${problem.file}: ${problem.message}`);
  for (const status of built.mcp?.status() ?? []) {
    log(`mcp ${status.name} (${status.id}): ${status.state}, ${status.tools} tools`);
  }
  log(`memories: ${await built.memories.count()} in ${built.memories.location}`);
  log(
    built.toolPolicy
      ? `tool policy: ${built.toolPolicy.size} rules from ${config.toolPolicyPath}`
      : 'tool policy: none (toolsets decide which calls need approval)',
  );
  const remote = Object.values(config.remoteAgents.agents);
  if (remote.length > 0) log(`remote agents: ${remote.map((a) => `${a.name} (${a.url})`).join(', ')}`);
  if (built.tracing) log(`tracing: spans to ${built.tracing.url} as service ${config.telemetry.serviceName}`);
  for (const [role, model] of Object.entries(built.models.describe())) log(`model ${role}: ${model}`);
  log(
    built.models.understand && config.models.understanding === 'combined'
      ? 'understanding: combined (relevance and task terms in one model call)'
      : 'understanding: separate (relevance and task terms in two calls)',
  );
  log(
    `workflows: ${config.worker.workflowBundle ? `prebuilt bundle ${config.worker.workflowBundle}` : 'bundled at start'}`,
  );
  log(
    `worker polling task queue "${config.temporal.taskQueue}" on ${config.temporal.address} (namespace ${config.temporal.namespace}` +
      `${config.temporal.tls ? ', TLS' : ''}${config.encryptionKeys.length > 0 ? `, payloads encrypted with key "${config.encryptionKeys[0]?.id}"` : ''})`,
  );
  let stopAlongside: (() => Promise<void>) | undefined;
  // Worker.run installs its own SIGINT/SIGTERM handling and drains in-flight tasks before returning.
  try {
    stopAlongside = await options.alongside?.(built);
    await built.worker.run();
  } finally {
    await stopAlongside?.();
    await built.close();
  }
}
