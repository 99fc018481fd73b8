import assert from 'node:assert/strict';
import { parseHostFacts } from '../../../src/core/node/hostFacts';

describe('host facts (node/hostFacts, shared by the probe and the snapshot)', () => {
  const sections = (m: Record<string, string>) => (k: string) => m[k];
  it('reads x86 and ARM (Grace) CPU lines, memory in KiB and a rounded uptime', () => {
    const x86 = parseHostFacts(
      sections({
        hostname: '\nb200-node-7\n',
        os: 'NAME="Ubuntu"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\n',
        kernel: 'Linux 5.15.0-105-generic x86_64',
        uptime: '86399.62 171234.00',
        cpu: 'model name\t: AMD EPYC 9554 64-Core Processor\n224\n',
        mem: 'MemTotal:       2113516544 kB\nMemAvailable:   1900000000 kB\nSwapTotal:             0 kB\n',
      }),
    );
    assert.deepEqual(x86, {
      hostname: 'b200-node-7',
      os: 'Ubuntu 22.04.4 LTS',
      kernel: 'Linux 5.15.0-105-generic x86_64',
      uptimeS: 86400,
      cpuModel: 'AMD EPYC 9554 64-Core Processor',
      cpuCores: 224,
      memTotalKiB: 2113516544,
      memAvailableKiB: 1900000000,
      swapTotalKiB: 0,
    });
    const arm = parseHostFacts(sections({ cpu: 'Model\t\t: Neoverse-V2\n72\n', mem: 'HugeMemTotal: 5 kB\n' }));
    assert.equal(arm.cpuModel, 'Neoverse-V2');
    assert.equal(arm.cpuCores, 72);
    assert.equal(arm.memTotalKiB, null, 'only a line that starts with MemTotal counts');
    assert.equal(arm.uptimeS, null);
    assert.equal(arm.hostname, null);
  });
});
