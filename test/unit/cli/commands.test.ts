/**
 * The command table (src/cli/commands/): the options main.ts parses are exactly the ones it always took, the
 * full help is every command's block in order, `CMD --help` and `help CMD` print that command's help with its
 * exit codes, and the MCP server registers one tool per file in the order it always listed them.
 */
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { allOptions, main } from '../../../src/cli/main';
import { COMMANDS } from '../../../src/cli/commands';
import { USAGE } from '../../../src/cli/usage';
import { buildMcpServer } from '../../../src/cli/mcp';
import type { CliCommand } from '../../../src/cli/command';

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(args, { out: (s) => (out += s), err: (s) => (err += s), isTTY: false });
  return { code, out, err };
}

// name:type[:multiple][short], as the single parseArgs table in main.ts had them before the split (and --from-guard
// of restore, issue 47)
const OLD_OPTIONS =
  'accept-new:boolean add-root:string:multiple data:string deadline-lead:string deadline:string dest:string download-guarded:boolean ' +
  'drain-timeout:string drain:boolean dry-run:boolean fill:boolean fleet:boolean follow:booleanf from-guard:string force:boolean grace:string guard:boolean ' +
  'help:booleanh identity:string:multiple idle:string include-dotfiles:string:multiple include-large:boolean interval:string json:boolean ' +
  'keep-secrets:boolean keep:boolean known-hosts:string launch:boolean leave:string:multiple lines:stringn map:string:multiple ' +
  'max-depth:string max-files:string mcp-dest:string:multiple no-data:boolean no-gitignore:boolean no-salvage:boolean out:string ' +
  'override:boolean part-size:string port:string price-per-hour:string profile:string prompt-field:string provider:string raw:boolean ' +
  'ready-timeout:string redact:boolean response-field:string resume-client:boolean roots:string s3-endpoint:string s3:string sample:string secret:string:multiple ' +
  'shutdown:boolean size-threshold:string ssh-config:string stats:boolean stop-client-on-bad-data:boolean stop-servers:boolean ' +
  'stop-writers:boolean stop:boolean summary:boolean terminate:boolean thresholds:string timeout:string to:string until:string ' +
  'upload-missing:boolean verbose:booleanv verify-timeout:string via:string:multiple watch:boolean when-done:string yes:booleany';

describe('cli command table', () => {
  it('parses exactly the options it always did, each with the same type, repeatability and short letter', () => {
    const now = Object.entries(allOptions())
      .map(([n, s]) => `${n}:${s.type}${s.multiple ? ':multiple' : ''}${s.short ?? ''}`)
      .sort();
    assert.deepEqual(now, OLD_OPTIONS.split(' ').sort());
  });

  it('refuses two commands declaring one option differently', () => {
    const a: CliCommand = { name: 'a', usage: '', options: { x: { type: 'string' } }, exitCodes: {}, run: async () => 0 };
    const b: CliCommand = { ...a, name: 'b', options: { x: { type: 'boolean' } } };
    assert.throws(() => allOptions([a, b]), /option --x of b differs/);
  });

  it('the full help is every command block in the table order, then NODE, the global options and the exit codes', async () => {
    let at = USAGE.indexOf('Usage:\n');
    assert.ok(at > 0);
    for (const c of COMMANDS) {
      const i = USAGE.indexOf(c.usage + '\n', at);
      assert.ok(i > at, `${c.name}'s block in order`);
      assert.ok(c.usage.startsWith(`  gpu-sessions ${c.name}`), c.name);
      at = i;
    }
    assert.match(USAGE, /\n\nGlobal options:\n/);
    assert.match(USAGE, /130 interrupted \(Ctrl-C\)\.$/);
    for (const a of [['--help'], ['-h'], ['help'], ['bogus', '--help']]) {
      const r = await run(a);
      assert.equal(r.code, 0, a.join(' '));
      assert.equal(r.out, USAGE + '\n');
    }
    const none = await run([]);
    assert.equal(none.code, 2);
    assert.equal(none.err, USAGE + '\n');
  });

  it('CMD --help and help CMD print that command alone with its exit codes; help of an unknown command is a usage error', async () => {
    for (const c of COMMANDS) {
      const r = await run([c.name, '--help']);
      assert.equal(r.code, 0, c.name);
      assert.ok(r.out.startsWith(`Usage:\n${c.usage}\n`), c.name);
      assert.match(r.out, /Global options:\n {2}--ssh-config FILE/);
      assert.match(r.out, /\nExit codes: 0 [^\n]*, 2 usage[^\n]*\.\n$/);
      for (const other of COMMANDS) if (other !== c) assert.ok(!r.out.includes(other.usage), `${c.name} shows ${other.name}`);
      assert.equal((await run(['help', c.name])).out, r.out);
    }
    assert.match((await run(['salvage', '--help'])).out, /, 5 salvage verdict unsafe,/);
    assert.match((await run(['restore', '--help'])).out, /, 9 conflicts left as they are \(--force\),/);
    const u = await run(['help', 'bogus']);
    assert.equal(u.code, 2);
    assert.match(u.err, /Unknown command "bogus"/);
  });
});

describe('mcp tool table', () => {
  it('registers the 16 tools, one per file, in the order the server always listed them', async () => {
    const server = buildMcpServer({
      nodeFor: () => {
        throw new Error('no nodes here');
      },
      pool: {} as never,
      probeJson: () => ({}),
      watch: async () => 0,
      version: 'test',
    });
    const [a, b] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 't', version: '0' });
    await Promise.all([server.connect(a), client.connect(b)]);
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(
        tools.map((t) => t.name),
        [
          'list_nodes',
          'probe_node',
          'data_quality',
          'tail_log',
          'parse_log',
          'salvage_plan',
          'salvage_node',
          'release_node',
          'salvage_status',
          'restore_plan',
          'restore_run',
          'guard_status',
          'guard_start',
          'guard_stop',
          'end_rental',
          'watch_node',
        ],
      );
      const r = await client.callTool({ name: 'probe_node', arguments: { node: 'x' } });
      assert.equal(r.isError, true);
      assert.match(JSON.stringify(r.structuredContent), /no nodes here/);
    } finally {
      await client.close();
    }
  });
});
