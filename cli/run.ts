/**
 * How a `harness` command runs and fails: every error becomes one line on stderr and an exit code
 * from the client's EXIT table, so scripts can branch on the code and people can read the line.
 * `main` runs the whole program through `runProgram`; `runEval` runs the eval subcommand through it.
 */
import { CommanderError, type Command } from 'commander';
import { EXIT, SessionClientError, type ExitCode } from '../client/index.js';

/** Anything with a `write`: process streams, or a test's capture. */
export interface Output {
  write(chunk: string): unknown;
}

/** Where a command writes; tests and embedders pass their own. */
export interface RunIO {
  stdout: Output;
  stderr: Output;
}

/** An error whose message is for the user as is: bad usage or input (exit 2). */
export class UsageError extends Error {
  override name = 'UsageError';
  readonly exitCode: ExitCode = EXIT.invalidInput;
}

/** Something the user named does not exist (exit 3, like an unknown Session). */
export class NotFoundError extends UsageError {
  override name = 'NotFoundError';
  override readonly exitCode = EXIT.sessionNotFound;
}

/** Errors of these (named) classes from lower layers are the user's input, not our bug. */
const INPUT_ERRORS = new Set(['ConfigError', 'MemoryInputError']);

/** Help that was asked for (`--help`, `help`) exits 0; help shown because a command was missing is usage. */
const HELP_CODES = new Set(['commander.helpDisplayed', 'commander.help', 'commander.version']);

/** Exit code and one-line message for any error a command can meet. */
export function describeError(err: unknown): { code: ExitCode; message: string } {
  const oneLine = (text: string) => text.replace(/\s*\n\s*/g, '; ').trim();
  if (err instanceof CommanderError) {
    if (HELP_CODES.has(err.code)) return { code: err.exitCode === 0 ? EXIT.ok : EXIT.invalidInput, message: '' };
    return { code: EXIT.invalidInput, message: oneLine(err.message.replace(/^error: /, '')) };
  }
  if (err instanceof SessionClientError || err instanceof UsageError) {
    return { code: err.exitCode, message: oneLine(err.message) };
  }
  if (err instanceof Error && INPUT_ERRORS.has(err.name)) {
    return { code: EXIT.invalidInput, message: oneLine(err.message) };
  }
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return { code: EXIT.unexpected, message: oneLine(message) };
}

/** Commands whose errors name them (`harness eval: ...`), because they report on files, not Sessions. */
const NAMED_IN_ERRORS = new WeakSet<Command>();

/** Marks `command` so its errors read `harness <name>: ...`. */
export function nameInErrors(command: Command): Command {
  NAMED_IN_ERRORS.add(command);
  return command;
}

/**
 * Parses `argv` (without `node` and the script) with `program` and runs the chosen action. Resolves
 * with the exit code and never calls process.exit, so it can run inside tests and other programs.
 */
export async function runProgram(program: Command, argv: string[], io: RunIO): Promise<number> {
  configureTree(program, io);
  let running = program;
  program.hook('preSubcommand', (_parent, sub) => {
    running = sub;
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    const { code, message } = describeError(err);
    const prefix = NAMED_IN_ERRORS.has(running) ? `harness ${running.name()}` : 'harness';
    if (message) io.stderr.write(`${prefix}: ${message}\n`);
    if (code === EXIT.unexpected && process.env.HARNESS_DEBUG && err instanceof Error && err.stack) {
      io.stderr.write(`${err.stack}\n`);
    }
    return code;
  }
}

/** The same output and error handling for every command, including ones built elsewhere and added. */
function configureTree(command: Command, io: RunIO): void {
  command
    .exitOverride()
    .showSuggestionAfterError(true)
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
      // Errors are printed once, by runProgram, in the one-line `harness: ` form.
      outputError: () => {},
    });
  for (const sub of command.commands) configureTree(sub, io);
}
