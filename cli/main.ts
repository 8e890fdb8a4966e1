/**
 * `harness`: the command line for Sessions. One commander program; each command group lives in its
 * own file (sessions, control, memory, eval, dev). Exit codes come from the client's EXIT table and
 * errors go to stderr as one line prefixed `harness: `.
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { EXIT, describeExitCodes } from '../client/index.js';
import { isEntryPoint } from '../worker/entry-point.js';
import { addConnectionOptions, createContext, type CliIO } from './context.js';
import { addControlCommands } from './control.js';
import { addDevCommands } from './dev.js';
import { addDoctorCommand } from './doctor.js';
import { evalCommand } from './eval.js';
import { addMemoryCommands } from './memory.js';
import { runProgram } from './run.js';
import { addSessionCommands } from './sessions.js';

export type { CliIO } from './context.js';

/** The version in package.json, which `harness --version` prints. */
export const VERSION = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** The `harness` program, writing to `io`. */
export function buildProgram(io: CliIO): Command {
  const program = new Command('harness')
    .description('AI agent Sessions as durable Temporal workflows')
    .version(VERSION, '-V, --version', 'print the version')
    .addHelpText('after', `\nExit codes: ${describeExitCodes()}.\n`);
  addConnectionOptions(program);
  const context = createContext(io);
  addDevCommands(program, context);
  addDoctorCommand(program, context);
  addSessionCommands(program, context);
  addControlCommands(program, context);
  addMemoryCommands(program, context);
  program.addCommand(evalCommand(io));
  return program;
}

/** Runs `harness` on `argv` (without `node` and the script) and resolves with the exit code. */
export async function main(
  argv: string[],
  io: CliIO = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin },
): Promise<number> {
  // `harness list | head` closes the pipe early; that is not an error.
  if (io.stdout === process.stdout) process.stdout.on('error', quitOnBrokenPipe);
  return runProgram(buildProgram(io), argv, io);
}

function quitOnBrokenPipe(err: NodeJS.ErrnoException): void {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? EXIT.ok);
  throw err;
}

if (isEntryPoint(import.meta.url)) process.exitCode = await main(process.argv.slice(2));
