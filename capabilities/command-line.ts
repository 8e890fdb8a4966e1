/**
 * The commands a shell command line would run, as the approval policy's `command` condition reads
 * them. Words come from shell-quote (quotes, escapes, operators, comments), so `r''m`, `\rm` and
 * `"rm"` are all `rm`. Each simple command's name is kept, and the analysis looks through what runs
 * another command: shells given `-c` (a string, or an argv list), `eval`, `env`, `sudo`, `nice`,
 * `timeout`, `xargs`, `nohup`, `command`, `exec`, `find -exec` and the like, with their options.
 *
 * A word that cannot be known before the shell runs (a variable, a command substitution, a glob in a
 * command's place, a script file a shell reads) makes the line `unresolved`: the policy then treats a
 * deny or approve rule naming any command as matching, and no allow rule as matching.
 */
import { parse, type ParseEntry } from 'shell-quote';

/** What a command line runs, as far as it can be known. */
export interface CommandAnalysis {
  /** Every command name (without its folder), wrappers too: `sudo rm x` gives `sudo` and `rm`. */
  names: string[];
  /** Some command's name cannot be known without running the line. */
  unresolved: boolean;
}

/** How deeply shells within shells are followed before the line counts as unresolved. */
const MAX_NESTING = 8;
/** Lines longer than this are not parsed: they count as unresolved. */
const MAX_LINE = 64 * 1024;

/** Redirections: the word after one is a file, not a command. */
const REDIRECTIONS = new Set(['<', '>', '>>', '>&', '<&', '<<', '<<<', '>|', '&>', '&>>', '<>']);

/** Shells that run a command string after `-c` (and a script file otherwise). */
const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'mksh', 'ash', 'yash', 'fish', 'csh', 'tcsh', 'rbash']);

/**
 * Commands that run the command named after their options. `withValue` lists options that take the
 * next word as their value (`sudo -u root`); `flags` those that take none. Long options written
 * `--name=value` carry their value. An option in neither list makes the line unresolved: it might
 * take a value, and reading the wrong word as the command would miss it.
 */
interface Wrapper {
  withValue: readonly string[];
  flags: readonly string[];
  /** Positional words before the command (`timeout 5 rm`: the duration). */
  positional?: number;
  /** Bare `NAME=value` words before the command are assignments (`env A=1 rm`). */
  assignments?: boolean;
  /** An option whose value is itself a command line (`env -S 'rm -rf x'`, `su -c 'rm x'`). */
  commandLine?: readonly string[];
  /** A word this short and numeric is an option (`nice -5 rm`). */
  numericOption?: boolean;
}

const WRAPPERS: Record<string, Wrapper> = {
  env: {
    withValue: ['-u', '--unset', '-C', '--chdir', '-P', '--default-signal', '--ignore-signal', '--block-signal'],
    flags: ['-i', '-', '--ignore-environment', '-0', '--null', '-v', '--debug'],
    assignments: true,
    commandLine: ['-S', '--split-string'],
  },
  sudo: {
    withValue: [
      '-u',
      '--user',
      '-g',
      '--group',
      '-h',
      '--host',
      '-p',
      '--prompt',
      '-C',
      '--close-from',
      '-D',
      '--chdir',
    ],
    flags: ['-A', '-b', '-E', '-H', '-n', '-P', '-S', '-i', '-s', '-k', '-K', '-B', '--preserve-env', '--login'],
    assignments: true,
  },
  doas: { withValue: ['-u', '-C'], flags: ['-n', '-s', '-L'] },
  nice: { withValue: ['-n', '--adjustment'], flags: [], numericOption: true },
  ionice: { withValue: ['-c', '--class', '-n', '--classdata', '-p', '-P', '-u'], flags: ['-t', '--ignore'] },
  timeout: {
    withValue: ['-s', '--signal', '-k', '--kill-after'],
    flags: ['--foreground', '--preserve-status', '-v', '--verbose', '-f'],
    positional: 1,
  },
  nohup: { withValue: [], flags: [] },
  setsid: { withValue: [], flags: ['-c', '--ctty', '-f', '--fork', '-w', '--wait'] },
  command: { withValue: [], flags: ['-p', '-v', '-V'] },
  exec: { withValue: ['-a'], flags: ['-c', '-l'] },
  builtin: { withValue: [], flags: [] },
  time: { withValue: ['-f', '--format', '-o', '--output'], flags: ['-p', '-a', '--append', '-v', '--verbose'] },
  stdbuf: { withValue: ['-i', '--input', '-o', '--output', '-e', '--error'], flags: [] },
  chrt: { withValue: [], flags: ['-a', '-b', '-d', '-f', '-i', '-o', '-r', '-R', '-v'], positional: 1 },
  taskset: { withValue: [], flags: ['-a', '--all-tasks', '-c', '--cpu-list'], positional: 1 },
  chroot: { withValue: ['--userspec', '--groups'], flags: ['--skip-chdir'], positional: 1 },
  xargs: {
    withValue: [
      '-a',
      '--arg-file',
      '-d',
      '--delimiter',
      '-E',
      '-I',
      '-L',
      '--max-lines',
      '-n',
      '--max-args',
      '-P',
      '--max-procs',
      '-s',
      '--max-chars',
      '--process-slot-var',
    ],
    flags: [
      '-0',
      '--null',
      '-e',
      '-i',
      '-l',
      '-o',
      '--open-tty',
      '-p',
      '--interactive',
      '-r',
      '--no-run-if-empty',
      '-t',
      '--verbose',
      '-x',
      '--exit',
      '--show-limits',
    ],
  },
  busybox: { withValue: [], flags: [] },
  flock: {
    withValue: ['-w', '--timeout', '-E', '--conflict-exit-code'],
    flags: ['-s', '--shared', '-x', '-e', '--exclusive', '-n', '--nonblock', '-o', '--close', '-u', '--unlock'],
    positional: 1,
    commandLine: ['-c', '--command'],
  },
  su: {
    withValue: ['-s', '--shell', '-g', '--group', '-G', '--supp-group', '-w', '--whitelist-environment'],
    flags: ['-', '-l', '--login', '-m', '-p', '--preserve-environment', '-P', '--pty'],
    positional: 1,
    commandLine: ['-c', '--command', '--session-command'],
  },
  runuser: {
    withValue: ['-u', '--user', '-s', '--shell', '-g', '--group', '-G', '--supp-group'],
    flags: ['-', '-l', '--login', '-m', '-p', '--preserve-environment'],
    commandLine: ['-c', '--command', '--session-command'],
  },
  watch: {
    withValue: ['-n', '--interval', '-d', '--differences', '-q', '--equexit'],
    flags: [
      '-b',
      '--beep',
      '-c',
      '--color',
      '-e',
      '--errexit',
      '-g',
      '--chgexit',
      '-t',
      '--no-title',
      '-x',
      '--exec',
      '-p',
      '--precise',
    ],
  },
  strace: {
    withValue: ['-o', '-e', '-p', '-u', '-s', '-E', '-a', '-I', '-O', '-S', '-X', '-P'],
    flags: [
      '-f',
      '-ff',
      '-c',
      '-C',
      '-q',
      '-qq',
      '-t',
      '-tt',
      '-ttt',
      '-T',
      '-v',
      '-V',
      '-x',
      '-xx',
      '-y',
      '-yy',
      '-r',
      '-i',
      '-k',
      '-w',
      '-z',
      '-Z',
      '-n',
      '-d',
      '-D',
    ],
  },
};

/** Reserved words that may come before a command (`if rm x; then …`, `{ rm x; }`, `! rm x`). */
const KEYWORDS = new Set(['{', '}', '!', 'if', 'then', 'else', 'elif', 'fi', 'do', 'done', 'while', 'until', 'coproc']);

/** Where a variable or command substitution was, in shell-quote's output. */
const UNKNOWN = Symbol('unknown word');
type Word = string | typeof UNKNOWN;

/** The commands `line` runs; see the module comment. */
export function analyseCommandLine(line: string): CommandAnalysis {
  const result: CommandAnalysis = { names: [], unresolved: false };
  analyseLine(line, 0, result);
  return result;
}

/** The commands an argv list runs (`["sh", "-c", "rm x"]`): its words are already split. */
export function analyseArgv(argv: readonly string[]): CommandAnalysis {
  const result: CommandAnalysis = { names: [], unresolved: false };
  simpleCommand([...argv], 0, result);
  return result;
}

function analyseLine(line: string, depth: number, out: CommandAnalysis): void {
  if (depth > MAX_NESTING || line.length > MAX_LINE) {
    out.unresolved = true;
    return;
  }
  // shell-quote reads a newline as a space; a shell ends a command there. Reading each line alone
  // as well sees both ways (the names only add up: a deny rule matches more, an allow rule less).
  if (line.includes('\n')) for (const part of line.split('\n')) analyseLine(part, depth, out);
  // Backquoted command substitutions: shell-quote keeps them as text.
  if (line.includes('`')) {
    const inner = [...line.matchAll(/`([^`]*)`/g)];
    for (const match of inner) analyseLine(match[1] ?? '', depth + 1, out);
    if ((line.match(/`/g) ?? []).length % 2 !== 0) out.unresolved = true;
  }
  let entries: Array<ParseEntry | { variable: string }>;
  try {
    entries = parse(line, (name: string) => ({ variable: name }));
  } catch {
    out.unresolved = true;
    return;
  }
  let words: Word[] = [];
  let redirectTarget = false;
  const flush = () => {
    if (words.length > 0) simpleCommand(words, depth, out);
    words = [];
  };
  for (const entry of entries) {
    if (typeof entry === 'string') {
      if (redirectTarget) redirectTarget = false;
      // A word holding a backquote is (part of) a command substitution, read above.
      else words.push(entry.includes('`') ? UNKNOWN : entry);
      continue;
    }
    if ('comment' in entry) continue;
    if ('pattern' in entry) {
      if (redirectTarget) redirectTarget = false;
      else words.push(words.length === 0 ? UNKNOWN : entry.pattern);
      continue;
    }
    if ('variable' in entry) {
      // A variable (`$X`) or, when the name is empty, the `$` of `$(`: its value is not known.
      if (redirectTarget) redirectTarget = false;
      else words.push(UNKNOWN);
      continue;
    }
    if (REDIRECTIONS.has(entry.op)) {
      redirectTarget = true;
      continue;
    }
    // Any other operator (`;`, `&&`, `|`, `(`, `<(`, …) ends the command; an unknown one too: the
    // word after it is then read as a command, which only adds names.
    redirectTarget = false;
    flush();
  }
  flush();
}

function simpleCommand(words: Word[], depth: number, out: CommandAnalysis): void {
  if (depth > MAX_NESTING) {
    out.unresolved = true;
    return;
  }
  let i = 0;
  while (i < words.length && (isAssignment(words[i]) || KEYWORDS.has(words[i] as string))) i++;
  const word = words[i];
  if (word === undefined) return;
  // A brace expansion in a command's place (`{rm,-rf,/x}`) becomes words only the shell knows.
  if (word === UNKNOWN || word === '' || /\{.*(,|\.\.).*\}/.test(word)) {
    out.unresolved = true;
    return;
  }
  const name = word.split(/[\\/]/).pop() || word;
  out.names.push(name);
  const rest = words.slice(i + 1);
  if (SHELLS.has(name)) return shell(rest, depth, out);
  if (name === 'eval') return analyseJoined(rest, depth, out);
  if (name === 'source' || name === '.') {
    // Runs a file the policy cannot read.
    out.unresolved = true;
    return;
  }
  if (name === 'find') return findExec(rest, depth, out);
  const wrapper = WRAPPERS[name];
  if (wrapper) return wrapped(name, wrapper, rest, depth, out);
}

function isAssignment(word: Word | undefined): boolean {
  return typeof word === 'string' && /^[A-Za-z_][A-Za-z0-9_]*=/.test(word);
}

/** `sh -c 'line'` reads the line; a shell given a script file (or stdin) runs what the policy cannot see. */
function shell(args: Word[], depth: number, out: CommandAnalysis): void {
  let command = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === UNKNOWN || arg === undefined) {
      out.unresolved = true;
      return;
    }
    if (arg === '--' || arg === '-') {
      i++;
      const next = args[i];
      if (command && typeof next === 'string') return analyseLine(next, depth + 1, out);
      out.unresolved = true;
      return;
    }
    if (/^[-+]/.test(arg)) {
      // `-c`, and flags combined with it (`-lc`, `-ec`); `-o opt` / `+O opt` take a value.
      if (/^-[A-Za-z]*c[A-Za-z]*$/.test(arg)) command = true;
      if (/^[-+][oO]$/.test(arg)) i++;
      continue;
    }
    if (command) return analyseLine(arg, depth + 1, out);
    // A script file: its commands are not in the arguments.
    out.unresolved = true;
    return;
  }
  // An interactive shell, or one reading commands from its standard input (`… | sh`).
  out.unresolved = true;
}

function analyseJoined(args: Word[], depth: number, out: CommandAnalysis): void {
  if (args.some((a) => a === UNKNOWN)) out.unresolved = true;
  analyseLine(args.filter((a): a is string => a !== UNKNOWN).join(' '), depth + 1, out);
}

/** `find … -exec rm {} ;` runs `rm`; so do `-execdir`, `-ok` and `-okdir`. */
function findExec(args: Word[], depth: number, out: CommandAnalysis): void {
  for (let i = 0; i < args.length; i++) {
    if (typeof args[i] === 'string' && /^-(exec|execdir|ok|okdir)$/.test(args[i] as string)) {
      let end = i + 1;
      while (end < args.length && args[end] !== ';' && args[end] !== '+') end++;
      simpleCommand(args.slice(i + 1, end), depth + 1, out);
      i = end;
    }
  }
}

function wrapped(name: string, wrapper: Wrapper, args: Word[], depth: number, out: CommandAnalysis): void {
  let positional = wrapper.positional ?? 0;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === UNKNOWN || arg === undefined) {
      out.unresolved = true;
      return;
    }
    if (arg === '--') {
      i++;
      while (positional > 0 && i < args.length) {
        positional--;
        i++;
      }
      return simpleCommand(args.slice(i), depth + 1, out);
    }
    if (arg === '-' && wrapper.flags.includes('-')) continue;
    if (arg.startsWith('-') && arg.length > 1) {
      const [option, inline] = arg.startsWith('--') ? splitLong(arg) : [arg, undefined];
      if (wrapper.commandLine?.includes(option)) {
        const value = inline ?? args[++i];
        if (typeof value !== 'string') out.unresolved = true;
        else analyseLine(value, depth + 1, out);
        if (name === 'su' || name === 'runuser' || name === 'flock') return;
        continue;
      }
      if (wrapper.withValue.includes(option)) {
        if (inline === undefined) i++;
        continue;
      }
      if (wrapper.flags.includes(option)) continue;
      if (wrapper.numericOption && /^-\d+$/.test(arg)) continue;
      // Short options run together (`sudo -nE`): each must be a known flag.
      if (!arg.startsWith('--') && [...arg.slice(1)].every((c) => wrapper.flags.includes(`-${c}`))) continue;
      // An option this table does not know might take a value: which word is the command is not known.
      out.unresolved = true;
      return;
    }
    if (wrapper.assignments && isAssignment(arg)) continue;
    if (positional > 0) {
      positional--;
      continue;
    }
    return simpleCommand(args.slice(i), depth + 1, out);
  }
  // Nothing after the options: `xargs` alone runs `echo`, `sudo -i` a login shell, `env` prints.
  if (name === 'sudo' || name === 'doas' || name === 'su' || name === 'runuser') out.unresolved = true;
}

function splitLong(arg: string): [string, string | undefined] {
  const eq = arg.indexOf('=');
  return eq < 0 ? [arg, undefined] : [arg.slice(0, eq), arg.slice(eq + 1)];
}
