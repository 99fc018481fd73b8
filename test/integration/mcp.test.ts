/**
 * `gpu-sessions mcp` driven by the MCP SDK's own client over stdio (StdioClientTransport) against the
 * simulated node behind a real sshd: tools listed, probe_node returns GPUs and servers, tail_log and
 * parse_log are bounded, salvage_node without confirm is refused and with it returns the verdict and the
 * report path, salvage_status reads it back, watch_node returns within its duration, and a secret planted
 * on the node appears in no result.
 */
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { SimNode, startSimNode } from '../helpers/simnode';
import { planted } from '../helpers/planted';

const CLI = path.resolve(__dirname, '..', '..', '..', 'dist', 'cli.js');
const SECRET = planted('hf_', 'PlantedMcpSecretValue0123456789abcd');

describe('gpu-sessions mcp over stdio (SDK client)', function () {
  this.timeout(180_000);
  let sim: SimNode;
  let client: Client;
  let dest: string;
  const texts: string[] = [];

  type ToolResult = { isError?: boolean; structuredContent?: Record<string, unknown>; content: Array<{ type: string; text?: string }> };
  async function call(name: string, args: Record<string, unknown>): Promise<ToolResult> {
    const r = (await client.callTool({ name, arguments: args }, undefined, { timeout: 150_000 })) as ToolResult;
    for (const c of r.content) if (c.text) texts.push(c.text);
    texts.push(JSON.stringify(r.structuredContent ?? {}));
    return r;
  }

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({ user: 'gsmcp', gpuCount: 2 });
    // A secret where an agent would read it: a log line and a shell profile on the node.
    appendFileSync(path.join(sim.home, '.bashrc'), `export HF_TOKEN=${SECRET}\n`);
    dest = mkdtempSync(path.join(os.tmpdir(), 'gs-mcp-'));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, '--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile, 'mcp', '--mcp-dest', dest],
      stderr: 'ignore',
    });
    client = new Client({ name: 'gpu-sessions-test', version: '1.0.0' });
    await client.connect(transport);
  });
  after(async () => {
    await client?.close().catch(() => undefined);
    await sim?.stop();
    if (dest) rmSync(dest, { recursive: true, force: true });
  });

  it('lists its tools with input schemas', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    assert.deepEqual(names, [
      'data_quality',
      'end_rental',
      'guard_start',
      'guard_status',
      'guard_stop',
      'list_nodes',
      'parse_log',
      'probe_node',
      'release_node',
      'restore_plan',
      'restore_run',
      'salvage_node',
      'salvage_plan',
      'salvage_status',
      'tail_log',
      'watch_node',
    ]);
    const salvage = tools.find((t) => t.name === 'salvage_node')!;
    assert.ok((salvage.inputSchema.required ?? []).includes('confirm'), JSON.stringify(salvage.inputSchema));
    const release = tools.find((t) => t.name === 'release_node')!;
    assert.ok((release.inputSchema.required ?? []).includes('confirm'), JSON.stringify(release.inputSchema));
    const end = tools.find((t) => t.name === 'end_rental')!;
    assert.ok((end.inputSchema.required ?? []).includes('confirm'), JSON.stringify(end.inputSchema));
  });

  it('list_nodes and probe_node return the node, its GPUs and servers', async () => {
    const l = await call('list_nodes', {});
    assert.ok((l.structuredContent!.nodes as Array<{ name: string }>).some((n) => n.name === 'simnode'));
    const p = await call('probe_node', { node: 'simnode' });
    assert.ok(!p.isError, JSON.stringify(p.content));
    const probe = p.structuredContent as { gpus: unknown[]; servers: Array<{ port: number }> };
    assert.equal(probe.gpus.length, 2);
    assert.equal(probe.servers.filter((s) => sim.layout.ports.includes(s.port)).length, 2);
  });

  it('rejects inputs that do not match the schema', async () => {
    const r = (await client.callTool({ name: 'tail_log', arguments: { node: 'simnode', path: '/x', lines: 1_000_000 } })) as ToolResult;
    assert.equal(r.isError, true, JSON.stringify(r));
  });

  it('tail_log is bounded and parse_log summarizes; the planted secret is redacted', async () => {
    // A log no process writes: a server's own log is written at the server's file offset (`>` redirect, as on a
    // real node), so a line appended to it by the test is overwritten by the server's next line.
    const notes = path.join(path.dirname(sim.layout.logFiles[0]), 'notes.log');
    writeFileSync(
      notes,
      Array.from({ length: 50 }, (_, i) => (i === 45 ? `[2026-12-01 10:00:00] export HF_TOKEN=${SECRET}` : `line ${i}`)).join('\n') + '\n',
    );
    const t = await call('tail_log', { node: 'simnode', path: notes, lines: 30 });
    assert.ok(!t.isError, JSON.stringify(t.content));
    const lines = t.structuredContent!.lines as string[];
    assert.equal(lines.length, 30, `${lines.length} lines`);
    assert.equal(lines[0], 'line 20');
    assert.ok(
      lines.some((l) => l.includes('HF_TOKEN=')),
      'the planted line is there, redacted',
    );
    const pl = await call('parse_log', { node: 'simnode', path: sim.layout.logFiles[0], lines: 200 });
    assert.ok(!pl.isError, JSON.stringify(pl.content));
    const s = pl.structuredContent!.summary as { ready: boolean; ranks: unknown[] };
    assert.equal(s.ready, true);
    const fromText = await call('parse_log', {
      text: '[2026-01-01 00:00:00] Decode batch, #running-req: 3, #token: 10, gen throughput (token/s): 123.45, #queue-req: 0',
    });
    assert.equal((fromText.structuredContent!.statLines as number) >= 1, true, JSON.stringify(fromText.structuredContent));
  });

  it('salvage_plan says what would be saved and left; salvage_node needs confirm: true', async () => {
    const plan = await call('salvage_plan', { node: 'simnode' });
    assert.ok(!plan.isError, JSON.stringify(plan.content));
    assert.ok((plan.structuredContent!.save as unknown[]).length > 0);
    const refused = await call('salvage_node', { node: 'simnode', dest, confirm: false });
    assert.equal(refused.isError, true);
    assert.match(JSON.stringify(refused.content), /confirm: true/);
    assert.ok(!existsSync(path.join(dest, 'simnode')), 'nothing was downloaded');
    const noRelease = await call('release_node', { node: 'simnode', dest, confirm: false });
    assert.equal(noRelease.isError, true);
    assert.match(JSON.stringify(noRelease.content), /confirm: true/);
    const dry = await call('release_node', { node: 'simnode', dest, confirm: false, dryRun: true });
    assert.ok(!dry.isError, JSON.stringify(dry.content));
    assert.deepEqual(dry.structuredContent!.gateways, [], 'no gateway routes to the node');
    assert.ok(!existsSync(path.join(dest, 'simnode')), 'the dry run downloaded nothing');
    const done = await call('salvage_node', { node: 'simnode', dest, confirm: true });
    assert.ok(!done.isError, JSON.stringify(done.content));
    const v = done.structuredContent as { verdict: string; reasons: string[]; report: string };
    assert.ok(v.verdict === 'safe' || v.verdict === 'unsafe', String(v.verdict));
    assert.ok(Array.isArray(v.reasons));
    assert.ok(existsSync(v.report), v.report);
    const st = await call('salvage_status', { node: 'simnode', dest });
    assert.equal((st.structuredContent as { verdict: string }).verdict, v.verdict);
  });

  it('watch_node returns its samples and transitions within the duration', async () => {
    const t0 = Date.now();
    const w = await call('watch_node', { node: 'simnode', durationS: 6, intervalS: 2 });
    assert.ok(!w.isError, JSON.stringify(w.content));
    assert.ok(Date.now() - t0 < 30_000);
    assert.ok((w.structuredContent!.samples as number) >= 1, JSON.stringify(w.structuredContent).slice(0, 500));
    assert.ok(Array.isArray(w.structuredContent!.transitions));
  });

  it('data_quality judges the output files on the node (the same JSON as data --json)', async () => {
    const r = await call('data_quality', { node: 'simnode', paths: [path.join(sim.home, 'completions')], sample: 100 });
    assert.ok(!r.isError, JSON.stringify(r.content));
    const v = r.structuredContent as {
      node: string;
      verdict: string;
      files: Array<{ path: string; format: string; rows: number; verdict: string }>;
    };
    assert.equal(v.node, 'simnode');
    assert.equal(v.files.length, 5);
    assert.deepEqual(
      v.files.map((f) => [path.basename(f.path), f.format, f.rows, f.verdict]),
      [0, 1, 2, 3, 4].map((i) => [`batch_00000${i}.jsonl`, 'flat', 20, 'ok']),
    );
    assert.equal(v.verdict, 'ok');
  });

  it('every tool that writes or reads a run folder obeys --mcp-dest; data_quality follows tail_log’s path policy (issue 39)', async () => {
    const outside = mkdtempSync(path.join(os.tmpdir(), 'gs-mcp-outside-'));
    try {
      // M1: release_node's salvage is refused outside --mcp-dest before anything is stopped or removed.
      const rel = await call('release_node', { node: 'simnode', dest: path.join(outside, 'release'), confirm: true, drainTimeoutS: 5 });
      assert.ok(rel.isError, JSON.stringify(rel.structuredContent));
      assert.match(rel.content[0].text ?? '', /outside the folders this server may write to/);
      assert.equal(existsSync(path.join(outside, 'release')), false);
      const probe = await call('probe_node', { node: 'simnode' });
      assert.equal((probe.structuredContent!.servers as unknown[]).length, 2, 'the servers still run');
      // M3: a restore plan of a run folder outside --mcp-dest is refused.
      const plan = await call('restore_plan', { run: outside, node: 'simnode' });
      assert.ok(plan.isError);
      assert.match(plan.content[0].text ?? '', /outside the folders this server may write to/);
      // M2: data_quality on a file outside the work's folders is refused, as tail_log refuses it.
      const secretFile = path.join(outside, 'session.jsonl');
      writeFileSync(secretFile, JSON.stringify({ response: 's3cr3t-session-value-1' }) + '\n', { mode: 0o644 });
      const dq = await call('data_quality', { node: 'simnode', paths: [secretFile] });
      assert.ok(dq.isError, JSON.stringify(dq.structuredContent));
      assert.match(dq.content[0].text ?? '', /data_quality refuses/);
      assert.ok(!texts.join('\n').includes('s3cr3t-session-value-1'));
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('no result contains the planted secret', () => {
    assert.ok(texts.length > 10);
    for (const t of texts) assert.ok(!t.includes(SECRET), `secret in a result: ${t.slice(0, 200)}`);
  });
});
