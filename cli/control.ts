/**
 * `harness approve | reject | command | notify`: the control signals. None of them is a task input;
 * they never reach the relevance path.
 */
import type { Command } from 'commander';
import { COMMAND_NAMES, type CommandName } from '../client/index.js';
import type { CommandContext } from './context.js';
import { UsageError } from './run.js';

interface CommandOptions {
  sessionGoal?: string;
  phaseGoal?: string;
  commandId?: string;
}

export function addControlCommands(program: Command, { line, withClient }: CommandContext): void {
  for (const approved of [true, false]) {
    const verb = approved ? 'approve' : 'reject';
    program
      .command(verb)
      .description(`${verb} a pending approval (approval signal; never a task input)`)
      .argument('<session>', 'session id')
      .argument('<approvalId>', 'approval id')
      .option('--note <text>', 'note for the agent')
      .action(async (sessionId: string, approvalId: string, opts: { note?: string }, cmd: Command) => {
        await withClient(cmd, async (client) => {
          if (approved) await client.approve(sessionId, approvalId, opts.note);
          else await client.reject(sessionId, approvalId, opts.note);
          line(`approval ${approvalId} ${approved ? 'approved' : 'rejected'} in session ${sessionId}`);
        });
      });
  }

  program
    .command('command')
    .description(`send a deterministic command: ${COMMAND_NAMES.join(', ')}`)
    .argument('<session>', 'session id')
    .argument('<name>', COMMAND_NAMES.join(' | '))
    .option('--session-goal <text>', 'set-goals: new session goal')
    .option('--phase-goal <text>', 'set-goals: new phase goal (opens a new phase)')
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
      await withClient(cmd, async (client) => {
        const commandId = await client.command(sessionId, {
          name,
          ...(name === 'set-goals' ? { args: goals } : {}),
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
