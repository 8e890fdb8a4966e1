/**
 * `harness approve | reject | command | notify`: the control signals. None of them is a task input;
 * they never reach the relevance path.
 */
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { COMMAND_NAMES, type CommandName } from '../client/index.js';
import type { CommandContext } from './context.js';
import { clip } from '../contract/text.js';
import { NotFoundError, UsageError } from './run.js';

interface CommandOptions {
  sessionGoal?: string;
  phaseGoal?: string;
  commandId?: string;
  budget?: string;
}

export function addControlCommands(program: Command, { line, withClient }: CommandContext): void {
  for (const approved of [true, false]) {
    const verb = approved ? 'approve' : 'reject';
    const command = program
      .command(verb)
      .description(
        `${verb} a tool call waiting for approval, as your configured signer name (approve update; never a task input); exits 2 with the reason when the Session refuses it`,
      )
      .argument('<session>', 'session id')
      .argument('<approvalId>', "the waiting call's approval id, <seq>:<step>:<callId> (see `harness inspect`)")
      .option('--note <text>', 'note for the agent, recorded with the call');
    if (approved) {
      command.option(
        '--arguments <json>',
        "run the call with these arguments (a JSON object) instead of the model's; the worker checks them against the tool's schema and the approval policy, and the record keeps both",
      );
    }
    command.action(
      async (sessionId: string, approvalId: string, opts: { note?: string; arguments?: string }, cmd: Command) => {
        const edit = opts.arguments === undefined ? undefined : editedArguments(opts.arguments);
        await withClient(cmd, async (client) => {
          // Answer only the call on screen: its arguments' hash goes with the approval, so the
          // answer cannot apply to a call the user did not see.
          const waiting = (await client.snapshot(sessionId)).pendingApprovals;
          const call = waiting.find((p) => p.approvalId === approvalId);
          if (!call) {
            const now = waiting.map((p) => `${p.approvalId} ${p.tool}`).join(', ') || 'none';
            throw new NotFoundError(
              `no call waits for approval ${approvalId} in session ${sessionId} (waiting: ${now})`,
            );
          }
          // The approver is configuration, not a per-call flag: HARNESS_SIGNER_NAME (inside the
          // signature with a control key), else HARNESS_APPROVER or the login name, as a claim.
          const fallback = client.signerName === undefined ? configuredApprover() : undefined;
          const signer = fallback === undefined ? client : client.as(fallback);
          const answer = {
            argumentsHash: call.argumentsHash,
            ...(opts.note !== undefined ? { note: opts.note } : {}),
            ...(edit !== undefined ? { arguments: edit } : {}),
          };
          // Sent by update: a refused answer throws ApprovalRefusedError (exit 2) and nothing is printed as done.
          if (approved) await signer.approve(sessionId, approvalId, answer);
          else await signer.reject(sessionId, approvalId, answer);
          const ran = edit === undefined ? '' : ` with edited arguments ${clip(edit, 120)}`;
          line(
            `${approved ? 'approved' : 'rejected'} ${call.tool}(${clip(call.arguments, 120)})${ran} — approval ${approvalId} in session ${sessionId}`,
          );
        });
      },
    );
  }

  program
    .command('command')
    .description(`send a deterministic command: ${COMMAND_NAMES.join(', ')}`)
    .argument('<session>', 'session id')
    .argument('<name>', COMMAND_NAMES.join(' | '))
    .option('--session-goal <text>', 'set-goals: new session goal')
    .option('--phase-goal <text>', 'set-goals: new phase goal (opens a new phase)')
    .option(
      '--budget <json>',
      'set-budget: limits to change as JSON, e.g. \'{"turnTokens": 20000, "sessionCostUsd": null}\' (null removes one)',
    )
    .option('--command-id <id>', 'command id (default: generated); reuse it when retrying')
    .action(async (sessionId: string, name: string, opts: CommandOptions, cmd: Command) => {
      if (!isCommandName(name)) {
        throw new UsageError(`unknown command ${JSON.stringify(name)} (one of: ${COMMAND_NAMES.join(', ')})`);
      }
      const goals = {
        ...(opts.sessionGoal !== undefined ? { session: opts.sessionGoal } : {}),
        ...(opts.phaseGoal !== undefined ? { phase: opts.phaseGoal } : {}),
      };
      if (name !== 'set-goals' && Object.keys(goals).length > 0) {
        throw new UsageError('--session-goal and --phase-goal only go with set-goals');
      }
      if ((name === 'set-budget') !== (opts.budget !== undefined)) {
        throw new UsageError('set-budget needs --budget, and --budget goes only with set-budget');
      }
      let budget: Record<string, unknown> | undefined;
      if (opts.budget !== undefined) {
        try {
          budget = JSON.parse(opts.budget) as Record<string, unknown>;
        } catch (err) {
          throw new UsageError(`--budget is not JSON: ${(err as Error).message}`);
        }
      }
      await withClient(cmd, async (client) => {
        const commandId = await client.command(sessionId, {
          name,
          ...(name === 'set-goals' ? { args: goals } : {}),
          ...(budget !== undefined ? { args: budget } : {}),
          ...(opts.commandId !== undefined ? { commandId: opts.commandId } : {}),
        });
        line(`command ${name} (${commandId}) sent to session ${sessionId}`);
      });
    });

  program
    .command('notify')
    .description('deliver a system notification (never a task input)')
    .argument('<session>', 'session id')
    .argument('<kind>', 'notification kind, e.g. deploy')
    .argument('<text>', 'notification text')
    .option('--notification-id <id>', 'notification id (default: generated)')
    .action(async (sessionId: string, kind: string, text: string, opts: { notificationId?: string }, cmd: Command) => {
      await withClient(cmd, async (client) => {
        const id = await client.notify(sessionId, {
          kind,
          text,
          ...(opts.notificationId !== undefined ? { notificationId: opts.notificationId } : {}),
        });
        line(`notification ${id} delivered to session ${sessionId}`);
      });
    });
}

function isCommandName(name: string): name is CommandName {
  return (COMMAND_NAMES as readonly string[]).includes(name);
}

/** `--arguments` as given, once it is known to be a JSON object (the worker checks it against the tool's schema). */
function editedArguments(text: string): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--arguments is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UsageError('--arguments must be a JSON object');
  }
  return text;
}

/** The approver a person at this terminal is recorded as when HARNESS_SIGNER_NAME is not set. */
function configuredApprover(): string | undefined {
  if (process.env.HARNESS_APPROVER) return process.env.HARNESS_APPROVER;
  try {
    return userInfo().username || undefined;
  } catch {
    return undefined;
  }
}
