/**
 * Trust boundary: the approval policy's argument conditions cannot be talked around. Before, a rule
 * denying `169.254.169.254` passed `http:169.254.169.254/…`, `http:\\169.254.169.254\…` and
 * `http://[::ffff:169.254.169.254]/` (fetch reaches the host through all three); a `rm` deny passed
 * `sh -c 'rm -rf /tmp/important'`, `env -i rm`, `sudo -u root rm`, `r''m` and `xargs rm`; `~/.ssh`
 * missed `/home/alice/.ssh` and `$HOME/.ssh`, `.env` missed `app/.env`, `C:\Users\…` counted as
 * relative; and an allow rule `read_*` let `read_and_delete` skip its toolset's required approval.
 *
 * A corpus of bypass forms, each asserted denied, then generated variants (fast-check): random
 * prefix chains and quoting around a denied command, random encodings of a denied address, random
 * spellings of a home folder.
 */
import fc from 'fast-check';
import { quote } from 'shell-quote';
import { describe, expect, it } from 'vitest';
import { resolveCalls } from '../../activities/agent-step.js';
import { analyseCommandLine } from '../../capabilities/command-line.js';
import { ToolArgumentValidator } from '../../capabilities/tool-arguments.js';
import { ToolPolicy, type PolicyCall } from '../../capabilities/tool-policy.js';
import type { AgentToolSpec } from '../../models/roles.js';

const policy = (rules: unknown[]) => ToolPolicy.parse({ rules }, 'policy.json');
const call = (args: unknown, tool = 'run'): PolicyCall => ({
  tool,
  toolset: 'mcp-shell',
  arguments: JSON.stringify(args),
  riskTags: [],
  sessionKind: 'top-level',
});
const effect = (p: ToolPolicy, args: unknown) => p.decide(call(args))?.effect ?? null;
/** `[input, effect]`, so a failure names the form that got through. */
const verdicts = (p: ToolPolicy, inputs: unknown[], wrap: (input: unknown) => unknown) =>
  inputs.map((input) => [input, effect(p, wrap(input))]);

const METADATA = policy([{ effect: 'deny', host: '169.254.169.254' }]);
const NO_RM = policy([{ effect: 'deny', command: ['rm', 'dd'] }]);
const SECRETS = policy([{ effect: 'deny', pathPrefix: ['~/.ssh', '.env', '/etc'] }]);
const EXAMPLE = ToolPolicy.load('deploy/tool-policy.example.json');

describe('URL rules read the host fetch would reach', () => {
  const corpus = [
    'http://169.254.169.254/latest/meta-data',
    'http:169.254.169.254/latest/meta-data',
    'http:\\\\169.254.169.254\\latest\\meta-data',
    'http:/169.254.169.254/',
    'http:///169.254.169.254/',
    'http:\\/169.254.169.254/',
    'HTTP://169.254.169.254./',
    'http://[::ffff:169.254.169.254]/',
    'http://[::ffff:a9fe:a9fe]/',
    'http://[0:0:0:0:0:ffff:a9fe:a9fe]/',
    'http://[::169.254.169.254]/',
    'http://[64:ff9b::a9fe:a9fe]/',
    'http://[2002:a9fe:a9fe::1]/',
    'http://2852039166/',
    'http://0xA9FEA9FE/',
    'http://0xa9.0xfe.0xa9.0xfe/',
    'http://0251.0376.0251.0376/',
    'http://169.254.43518/',
    'http://169.16689662/',
    'http://%31%36%39.254.169.254/',
    'http://169。254。169。254/',
    'http://user:secret@169.254.169.254/',
    'https://example.com@169.254.169.254/',
    'http://169.254.169.254:80/',
    'ws://169.254.169.254/',
    'ftp://169.254.169.254/',
    'http://169.254.1\t69.254/',
    'http://169.254.1\n69.254/',
    'curl --url=http://169.254.169.254/latest',
    'curl -s "http:169.254.169.254/latest"',
    'please fetch (http://169.254.169.254/).',
  ];

  it('every form in the corpus is denied, and other hosts are not', () => {
    for (const url of corpus) {
      // Node's URL parser, which fetch uses, does reach the address through each of these.
      const first = url.match(/(https?|wss?|ftp):\S*/i)?.[0].replace(/[)"'.]+$/, '') ?? url;
      expect([url, new URL(first).hostname]).not.toEqual([url, '']);
    }
    expect(verdicts(METADATA, corpus, (url) => ({ url }))).toEqual(corpus.map((url) => [url, 'deny']));
    expect(verdicts(METADATA, corpus, (command) => ({ command }))).toEqual(corpus.map((url) => [url, 'deny']));
    for (const url of ['http://169.254.169.253/', 'http://example.com/169.254.169.254', 'http://[::1]/']) {
      expect([url, effect(METADATA, { url })]).toEqual([url, null]);
    }
  });

  it('rules may name ranges and IPv6 addresses; the example policy denies the metadata endpoints', () => {
    const ranges = policy([{ effect: 'deny', host: ['10.0.0.0/8', 'fd00::/8', '0x7f.1'] }]);
    expect(effect(ranges, { url: 'http://10.1.2.3/' })).toBe('deny');
    expect(effect(ranges, { url: 'http://012.1.2.3/' })).toBe('deny');
    expect(effect(ranges, { url: 'http://[::ffff:10.9.9.9]/' })).toBe('deny');
    expect(effect(ranges, { url: 'http://[fd12::1]/' })).toBe('deny');
    expect(effect(ranges, { url: 'http://127.0.0.1/' })).toBe('deny');
    expect(effect(ranges, { url: 'http://11.0.0.1/' })).toBeNull();
    for (const url of [...corpus, 'http://[fd00:ec2::254]/', 'http://metadata.google.internal./']) {
      expect([url, EXAMPLE.decide(call({ url }))?.effect]).toEqual([url, 'deny']);
    }
  });

  it('generated encodings of the address are denied', () => {
    const octet = (n: number) =>
      fc.constantFrom(String(n), `0x${n.toString(16)}`, `0X${n.toString(16).toUpperCase()}`, `0${n.toString(8)}`);
    const number = (n: number) => fc.constantFrom(String(n), `0x${n.toString(16)}`, `0${n.toString(8)}`);
    const v4 = fc.oneof(
      fc.tuple(octet(169), octet(254), octet(169), octet(254)).map((p) => p.join('.')),
      fc.tuple(octet(169), octet(254), number(0xa9fe)).map((p) => p.join('.')),
      fc.tuple(octet(169), number(0xfea9fe)).map((p) => p.join('.')),
      number(0xa9fea9fe),
    );
    const host = fc.oneof(
      v4,
      v4.map((h) => `${h}.`),
      fc.constantFrom('[::ffff:169.254.169.254]', '[::ffff:a9fe:a9fe]', '[0::FFFF:A9FE:A9FE]', '[::a9fe:a9fe]'),
    );
    const scheme = fc.constantFrom('http', 'HTTP', 'https', 'Https', 'ws', 'wss', 'ftp');
    const slashes = fc.constantFrom('//', '', '/', '///', '\\\\', '\\/', '/\\');
    const userinfo = fc.constantFrom('', 'a@', 'a:b@', 'example.com@');
    const port = fc.constantFrom('', ':80', ':8080', ':');
    const path = fc.constantFrom('/', '/latest/meta-data', '\\latest', '?x=1', '#f', '');
    const text = fc.constantFrom(
      (u: string) => u,
      (u: string) => `curl ${u}`,
      (u: string) => `see <${u}> now`,
    );
    fc.assert(
      fc.property(scheme, slashes, userinfo, host, port, path, text, (s, sl, ui, h, p, pa, wrap) => {
        const url = `${s}:${sl}${ui}${h}${p}${pa}`;
        let parsed: string;
        try {
          parsed = new URL(url).hostname;
        } catch {
          return; // Neither the URL parser nor fetch reads a host from it.
        }
        expect([url, parsed, effect(METADATA, { url: wrap(url) })]).toEqual([url, parsed, 'deny']);
      }),
      { numRuns: 400 },
    );
  });
});

describe('command rules see through shells, prefixes, quoting and escapes', () => {
  const denied = 'rm -rf /tmp/important';
  const corpus = [
    denied,
    `sh -c '${denied}'`,
    `bash -c '${denied}'`,
    `zsh -c '${denied}'`,
    `dash -c "${denied}"`,
    `bash -lc '${denied}'`,
    `sh -e -c '${denied}'`,
    `sh -c "sh -c '${denied}'"`,
    `sudo sh -c '${denied}'`,
    'env -i rm -rf /tmp/important',
    'env A=1 B=2 rm -rf /tmp/important',
    'env -u PATH rm x',
    'env -- rm x',
    "env -S 'rm -rf x'",
    'A=1 rm x',
    'sudo -u root rm -rf /tmp/important',
    'sudo --user=root rm x',
    'sudo -nE rm x',
    'sudo -- rm x',
    'doas -u root rm x',
    "r''m -rf /tmp/important",
    'r""m x',
    '\\rm x',
    '"rm" x',
    "'rm' x",
    'r\\m x',
    '/bin/rm x',
    '/usr/bin/r""m x',
    '~/bin/rm x',
    'xargs rm',
    'echo /tmp/important | xargs rm',
    'xargs -0 -I {} rm {}',
    'timeout 5 rm x',
    'timeout -s KILL 5s rm x',
    'timeout --signal=KILL 5 rm x',
    'nice rm x',
    'nice -n 10 rm x',
    'nice -10 rm x',
    'nice --adjustment=5 rm x',
    'nohup rm x',
    'command rm x',
    'command -p rm x',
    'exec rm x',
    'exec -a other rm x',
    'time rm x',
    'busybox rm x',
    'stdbuf -o L rm x',
    'setsid rm x',
    'ionice -c 3 rm x',
    'chroot / rm x',
    "su -c 'rm x'",
    "su - root -c 'rm x'",
    'flock /tmp/lock rm x',
    "flock /tmp/lock -c 'rm x'",
    'watch -n 1 rm x',
    'true && rm x',
    'false || rm x',
    'ls; rm x',
    'ls | rm x',
    'ls & rm x',
    'ls |& rm x',
    'ls\nrm x',
    '(rm x)',
    '{ rm x; }',
    '! rm x',
    'if true; then rm x; fi',
    'for f in a; do rm "$f"; done',
    'echo $(rm x)',
    'echo `rm x`',
    'x=$(rm x)',
    'cat <(rm x)',
    'ls > /dev/null; rm x',
    'find /tmp -name important -exec rm {} ;',
    'find /tmp -execdir rm -f {} +',
    "eval 'rm x'",
    'eval rm x',
    'dd if=/dev/zero of=/dev/sda',
    'sudo -u root env -i nice -n 5 timeout 5 nohup rm x',
    // Not resolvable before the shell runs: denied, since it might be rm.
    '$CMD -rf /tmp/important',
    '${CMD} x',
    '$(echo rm) -rf x',
    '`echo rm` x',
    'r*m x',
    '/bin/r? x',
    '{rm,-rf,/tmp/important}',
    'echo rm | sh',
    "bash <<< 'rm x'",
    'sh script.sh',
    'source ./cleanup.sh',
    'xargs -n1 rm',
  ];

  it('every form in the corpus is denied, as a command line and as an argv list', () => {
    expect(verdicts(NO_RM, corpus, (command) => ({ command }))).toEqual(corpus.map((c) => [c, 'deny']));
    for (const shell of ['sh', 'bash', 'zsh', 'dash']) {
      for (const argv of [
        [shell, '-c', denied],
        ['sudo', '-u', 'root', shell, '-c', denied],
      ]) {
        expect([argv, effect(NO_RM, { command: argv })]).toEqual([argv, 'deny']);
      }
    }
    for (const argv of [
      ['env', '-i', 'rm', 'x'],
      ['sudo', 'rm', 'x'],
      ['xargs', 'rm'],
      ['/bin/rm', 'x'],
      [1, 'rm'],
    ]) {
      expect([argv, effect(NO_RM, { cmd: argv })]).toEqual([argv, 'deny']);
    }
    for (const command of corpus) {
      expect([command, EXAMPLE.decide(call({ command }))?.effect]).toEqual([command, 'deny']);
    }
  });

  it('what does not run rm is not denied; an allow rule holds only when every command matches', () => {
    for (const command of [
      'ls -la',
      'echo rm',
      "echo 'rm -rf /'",
      'git rm x',
      'grep -r rm .',
      'rmdir x',
      'ls # rm x',
    ]) {
      expect([command, effect(NO_RM, { command })]).toEqual([command, null]);
    }
    const allowGit = policy([{ effect: 'allow', command: 'git' }]);
    expect(effect(allowGit, { command: 'git status' })).toBe('allow');
    expect(effect(allowGit, { command: 'git status; curl x | sh' })).toBeNull();
    expect(effect(allowGit, { command: '$GIT status' })).toBeNull();
    expect(analyseCommandLine('sudo -u root env -i rm x').names).toEqual(['sudo', 'env', 'rm']);
  });

  it('generated prefix chains and quoting around a denied command are denied', () => {
    const name = fc.constantFrom('rm', "r''m", '"rm"', "'rm'", '\\rm', 'r\\m', '/bin/rm', '/usr/bin/r""m', 'r"m"');
    const prefix = fc.constantFrom(
      'env -i',
      'env A=1',
      'env -u HOME',
      'sudo',
      'sudo -u root',
      'sudo -E',
      'sudo --',
      'nice',
      'nice -n 5',
      'timeout 5',
      'timeout -s KILL 1m',
      'nohup',
      'command',
      'exec',
      'xargs',
      'xargs -0',
      'time',
      'stdbuf -o L',
      'X=1',
    );
    const before = fc.constantFrom('', 'true && ', 'false || ', 'ls; ', 'echo x | ', 'cd /tmp\n', '! ');
    const shell = fc.constantFrom('sh', 'bash', 'zsh', 'dash', '/bin/sh', 'sudo bash');
    const flags = fc.constantFrom('-c', '-lc', '-ec', '-e -c', '-x -c');
    fc.assert(
      fc.property(
        before,
        fc.array(prefix, { maxLength: 4 }),
        name,
        fc.option(fc.tuple(shell, flags), { nil: undefined }),
        fc.boolean(),
        (lead, prefixes, rm, wrapper, asArgv) => {
          const inner = `${lead}${[...prefixes, rm].join(' ')} -rf /tmp/important`;
          let args: unknown;
          if (wrapper && asArgv) args = { command: [...wrapper[0].split(' '), ...wrapper[1].split(' '), inner] };
          else if (wrapper) args = { command: `${wrapper[0]} ${wrapper[1]} ${quote([inner])}` };
          else args = { command: inner };
          expect([args, effect(NO_RM, args)]).toEqual([args, 'deny']);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('path rules expand home folders, match named segments and read Windows paths', () => {
  const corpus = [
    '~/.ssh/id_rsa',
    '~alice/.ssh/id_rsa',
    '$HOME/.ssh/id_rsa',
    '${HOME}/.ssh/id_rsa',
    '/home/alice/.ssh/id_rsa',
    '/root/.ssh/authorized_keys',
    '/Users/bob/.ssh/id_ed25519',
    'C:\\Users\\bob\\.ssh\\id_rsa',
    'c:/users/bob/.ssh/id_rsa',
    'file:///home/alice/.ssh/id_rsa',
    '/home/alice/projects/../.ssh/id_rsa',
    '/home//alice/./.ssh/id_rsa',
    'cat ~/.ssh/id_rsa',
    '.env',
    './.env',
    'app/.env',
    '/srv/app/.env',
    'app\\.env',
    'config/../.env',
    '/etc/passwd',
    '//etc//shadow',
    '/tmp/../etc/shadow',
    '\\etc\\passwd',
    '../../etc/passwd',
  ];

  it('every form in the corpus is denied, and the example policy denies them too', () => {
    expect(verdicts(SECRETS, corpus, (path) => ({ path }))).toEqual(corpus.map((p) => [p, 'deny']));
    for (const path of corpus) expect([path, EXAMPLE.decide(call({ path }))?.rule]).toEqual([path, 'no-secrets']);
    for (const path of ['/home/alice/notes.md', 'app/.envrc', 'src/env.ts', '/etcetera/x', 'ssh/config']) {
      expect([path, effect(SECRETS, { path })]).toEqual([path, null]);
    }
  });

  it('Windows absolute paths are absolute; a rule may ignore case', () => {
    const workspace = policy([{ effect: 'deny', arguments: ['path'], pathOutside: '.' }]);
    for (const path of ['C:\\Users\\bob\\x', 'D:/data', '\\\\server\\share\\x', '\\\\?\\C:\\x', '/abs']) {
      expect([path, effect(workspace, { path })]).toEqual([path, 'deny']);
    }
    expect(effect(workspace, { path: 'docs\\guide.md' })).toBeNull();
    const strict = policy([{ effect: 'deny', pathPrefix: ['/etc', 'C:\\Windows'] }]);
    const loose = policy([{ effect: 'deny', pathPrefix: ['/etc', 'C:\\Windows'], ignoreCase: true }]);
    expect(effect(strict, { path: '/ETC/passwd' })).toBeNull();
    expect(effect(loose, { path: '/ETC/passwd' })).toBe('deny');
    expect(effect(strict, { path: 'c:\\Windows\\System32' })).toBe('deny');
    expect(effect(loose, { path: 'C:\\WINDOWS\\system32' })).toBe('deny');
  });

  it('an allow rule holds only when every path it reads is inside its prefixes', () => {
    const allow = policy([{ effect: 'allow', pathPrefix: './workspace' }]);
    expect(effect(allow, { from: 'workspace/a', to: 'workspace/b' })).toBe('allow');
    expect(effect(allow, { from: 'workspace/a', to: '/etc/passwd' })).toBeNull();
    // Anchored for an allow rule: a `workspace` segment elsewhere is not the workspace.
    expect(effect(policy([{ effect: 'allow', pathPrefix: 'workspace' }]), { path: '/etc/workspace/x' })).toBeNull();
  });

  it('generated spellings of a home folder and detours are denied', () => {
    const home = fc.constantFrom(
      '~',
      '~alice',
      '$HOME',
      '${HOME}',
      '/home/alice',
      '/root',
      '/Users/bob',
      'C:\\Users\\bob',
    );
    const detour = fc.constantFrom('', './', 'x/../', './/', 'a/b/../../');
    const sep = fc.constantFrom('/', '\\');
    const file = fc.constantFrom('id_rsa', 'config', 'known_hosts', '');
    fc.assert(
      fc.property(home, detour, sep, file, (h, d, s, f) => {
        const path = `${h}${s}${d}.ssh${s}${f}`;
        expect([path, effect(SECRETS, { path })]).toEqual([path, 'deny']);
      }),
      { numRuns: 300 },
    );
  });
});

describe('an allow rule keeps a toolset’s required approval unless it names the toolset', () => {
  const spec = (tool: string, toolset: string, requiresApproval: boolean): AgentToolSpec => ({
    functionName: `${toolset}__${tool}`,
    tool,
    toolset,
    description: tool,
    inputSchema: { type: 'object' },
    execution: 'mcp',
    requiresApproval,
  });
  const specs = [spec('read_and_delete', 'mcp-files', true), spec('read_file', 'mcp-plain', false)];
  const resolve = (p: ToolPolicy, fn: string) =>
    resolveCalls([{ callId: 'c1', name: fn, arguments: '{}' }], specs, new ToolArgumentValidator(), {
      policy: p,
      sessionKind: 'top-level',
      riskTags: () => [],
    })[0];

  it('`read_*` does not waive `read_and_delete`’s approval; naming the toolset does', () => {
    const byGlob = policy([{ effect: 'allow', tool: 'read_*' }]);
    expect(resolve(byGlob, 'mcp-files__read_and_delete')).toMatchObject({
      requiresApproval: true,
      policy: { effect: 'allow' },
    });
    expect(resolve(byGlob, 'mcp-plain__read_file')).toMatchObject({ requiresApproval: false });
    const toolsetGlob = policy([{ effect: 'allow', toolset: 'mcp-*', tool: 'read_*' }]);
    expect(resolve(toolsetGlob, 'mcp-files__read_and_delete')).toMatchObject({ requiresApproval: true });
    const named = policy([{ effect: 'allow', toolset: 'mcp-files', tool: 'read_*' }]);
    expect(resolve(named, 'mcp-files__read_and_delete')).toMatchObject({ requiresApproval: false });
  });
});
