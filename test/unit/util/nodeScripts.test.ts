/**
 * The scripts that run on a node are files under src/core: what the modules send is their text, unchanged (the
 * data reader after its configuration line and a blank line; gateway discovery inside the probe's heredoc).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { nodeScript } from '../../../src/core/util/nodeScripts';
import { dataScript } from '../../../src/core/data/operation';
import { gatewayProbeScript, gatewayPy } from '../../../src/core/gateway/discover';

const CORE = path.resolve(__dirname, '..', '..', '..', '..', 'src', 'core');
const text = (rel: string) => readFileSync(path.join(CORE, rel), 'utf8');

describe('node scripts (core/util/nodeScripts)', () => {
  it('reads each script as the file holds it', () => {
    for (const rel of ['data/data.py', 'gateway/gateways.py']) assert.equal(nodeScript(rel), text(rel));
    assert.equal(gatewayPy(), text('gateway/gateways.py'));
  });

  it('sends the data reader after its configuration line and a blank line', () => {
    const s = dataScript({}, 'GSNONCE');
    const first = s.indexOf('\n');
    assert.match(s.slice(0, first), /^CFG_B64 = "[A-Za-z0-9+/=]+"$/);
    assert.equal(s.slice(first + 1), `\n${text('data/data.py')}`);
  });

  it('sends gateway discovery whole inside the probe section (a blank line before and after)', () => {
    assert.ok(gatewayProbeScript().includes(`<<'GS_GATEWAY_PY' 2>/dev/null\n\n${text('gateway/gateways.py')}\nGS_GATEWAY_PY\n`));
  });

  it('names a missing script in its error', () => {
    assert.throws(() => nodeScript('data/none.py'), /src\/core\/data\/none\.py not found above/);
  });

  it('are valid Python (python3 compiles them)', () => {
    for (const rel of ['data/data.py', 'gateway/gateways.py']) {
      const r = spawnSync('python3', ['-c', 'import sys; compile(sys.stdin.read(), sys.argv[1], "exec")', rel], { input: text(rel) });
      assert.equal(r.status, 0, r.stderr.toString());
    }
  });
});
