import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import {
  classifySmiFailure,
  parseComputeApps,
  parseGpuQuery,
  parseLostGpus,
  parseSmiBanner,
  smiNumber,
} from '../../../src/core/node/nvidiaSmi';

const fixture = (n: string) => readFileSync(path.join(__dirname, '..', '..', '..', '..', 'test', 'fixtures', 'nvidia-smi', n), 'utf8');

describe('nvidia-smi parsers', () => {
  it('parses --query-gpu csv,noheader,nounits lines with [N/A] values kept as unknown', () => {
    const text = [
      '0, NVIDIA B200, GPU-9a1c2f3e-0000-1111-2222-333344445555, 183359, 161234, 97, 61, 912.45',
      '1, NVIDIA H200, GPU-aaaa, 143771, 0, 0, 30, [N/A]',
      '2, NVIDIA RTX PRO 6000 Blackwell Server Edition, GPU-bbbb, 97887, [Not Supported], [N/A], [N/A], [Unknown Error]',
      '',
    ].join('\n');
    const g = parseGpuQuery(text);
    assert.equal(g.length, 3);
    assert.deepEqual(g[0], {
      index: 0,
      name: 'NVIDIA B200',
      uuid: 'GPU-9a1c2f3e-0000-1111-2222-333344445555',
      memoryTotalMiB: 183359,
      memoryUsedMiB: 161234,
      utilizationPct: 97,
      temperatureC: 61,
      powerW: 912.45,
    });
    assert.equal(g[1].powerW, null);
    assert.equal(g[2].name, 'NVIDIA RTX PRO 6000 Blackwell Server Edition');
    assert.equal(g[2].memoryUsedMiB, null);
    assert.equal(g[2].utilizationPct, null);
    assert.equal(g[2].memoryTotalMiB, 97887);
  });

  it('keeps a GPU name containing a comma intact', () => {
    const g = parseGpuQuery('3, Weird GPU, Rev 2, GPU-cc, 1000, 10, 5, 40, 100.00');
    assert.equal(g[0].name, 'Weird GPU, Rev 2');
    assert.equal(g[0].uuid, 'GPU-cc');
    assert.equal(g[0].powerW, 100);
  });

  it('ignores headers and garbage lines', () => {
    assert.deepEqual(parseGpuQuery('index, name, uuid\nfoo\n\n'), []);
  });

  it('reads driver and CUDA versions from every banner generation', () => {
    const b610 = parseSmiBanner(fixture('banner-610-b200.txt'));
    assert.equal(b610.driverVersion, '610.43.02');
    assert.equal(b610.cudaVersion, '13.3');
    const b550 = parseSmiBanner(fixture('banner-550-idle.txt'));
    assert.equal(b550.driverVersion, '550.40.07');
    assert.equal(b550.cudaVersion, '12.4');
    assert.equal(b550.processes.length, 0);
    const b450 = parseSmiBanner(fixture('banner-450.txt'));
    assert.equal(b450.driverVersion, '450.57');
    assert.equal(b450.cudaVersion, '11.0');
    const b418 = parseSmiBanner(fixture('banner-418-old-process-table.txt'));
    assert.equal(b418.driverVersion, '418.67');
    assert.equal(b418.cudaVersion, '10.1');
    const ref = parseSmiBanner('| NVIDIA-SMI 550.144.03             Driver Version: 550.144.03     CUDA Version: 12.4     |');
    assert.equal(ref.driverVersion, '550.144.03');
    assert.equal(ref.cudaVersion, '12.4');
    const q = parseSmiBanner(
      '==============NVSMI LOG==============\nDriver Version                            : 450.66\nCUDA Version                              : 11.0\n',
    );
    assert.equal(q.driverVersion, '450.66');
    assert.equal(q.cudaVersion, '11.0');
  });

  it('reads the process table with and without GI/CI columns', () => {
    const b610 = parseSmiBanner(fixture('banner-610-b200.txt'));
    assert.deepEqual(b610.processes, [
      { gpuIndex: 0, pid: 2345678, processName: 'sglang::scheduler_TP0', usedMemoryMiB: 161234 },
      { gpuIndex: 1, pid: 2345690, processName: 'python3', usedMemoryMiB: 160998 },
    ]);
    const b450 = parseSmiBanner(fixture('banner-450.txt'));
    assert.deepEqual(b450.processes, [{ gpuIndex: 0, pid: 1523, processName: '/usr/lib/xorg/Xorg', usedMemoryMiB: 4 }]);
    const b418 = parseSmiBanner(fixture('banner-418-old-process-table.txt'));
    assert.deepEqual(b418.processes, [{ gpuIndex: 0, pid: 24512, processName: 'python', usedMemoryMiB: 15631 }]);
  });

  it('parses compute apps csv with units; header only means none', () => {
    assert.deepEqual(parseComputeApps('pid, process_name, used_gpu_memory [MiB]\n'), []);
    const apps = parseComputeApps(
      'pid, process_name, used_gpu_memory [MiB]\n1234, python3, 161234 MiB\n[N/A], sglang::scheduler_DP0_TP0, [N/A]\n',
    );
    assert.deepEqual(apps[0], { pid: 1234, processName: 'python3', usedMemoryMiB: 161234, gpuIndex: null });
    assert.equal(apps[1].pid, null);
    assert.equal(apps[1].usedMemoryMiB, null);
  });

  it('classifies a missing nvidia-smi, a missing driver and no devices as states', () => {
    assert.equal(classifySmiFailure(127, 'sh: 1: nvidia-smi: not found').state, 'no-nvidia-smi');
    assert.equal(
      classifySmiFailure(
        9,
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.",
      ).state,
      'no-driver',
    );
    assert.equal(classifySmiFailure(6, 'No devices were found').state, 'no-gpu');
    assert.equal(classifySmiFailure(2, 'Field "cuda_version" is not a valid field to query.').state, 'error');
  });

  it('smiNumber handles units and unknowns', () => {
    assert.equal(smiNumber('612.45 W'), 612.45);
    assert.equal(smiNumber('87 %'), 87);
    assert.equal(smiNumber('[N/A]'), null);
    assert.equal(smiNumber('N/A'), null);
    assert.equal(smiNumber(''), null);
  });

  it('reads GPUs from the banner table as a fallback (every generation)', () => {
    const b = parseSmiBanner(fixture('banner-610-b200.txt')).gpus;
    assert.deepEqual(b[0], {
      index: 0,
      name: 'NVIDIA B200',
      uuid: null,
      memoryTotalMiB: 183359,
      memoryUsedMiB: 0,
      utilizationPct: 0,
      temperatureC: 26,
      powerW: 139,
    });
    assert.equal(b.length, 2);
    const old = parseSmiBanner(fixture('banner-418-old-process-table.txt')).gpus;
    assert.deepEqual(old[0], {
      index: 0,
      name: 'Tesla V100-SXM2...',
      uuid: null,
      memoryTotalMiB: 16130,
      memoryUsedMiB: 15641,
      utilizationPct: 87,
      temperatureC: 44,
      powerW: 55,
    });
    const g550 = parseSmiBanner(fixture('banner-550-idle.txt')).gpus;
    assert.equal(g550[0].name, 'NVIDIA GeForce RTX 4070');
    assert.equal(g550[0].memoryTotalMiB, 12282);
    assert.equal(g550[0].temperatureC, 36);
  });
});

describe('lost GPUs', () => {
  it('keeps the healthy GPUs and infers the lost index from the gap', () => {
    const text =
      '0, NVIDIA B200, GPU-a, 183359, 1, 0, 30, 100.00\nUnable to determine the device handle for GPU00000000:43:00.0: Unknown Error\n2, NVIDIA B200, GPU-c, 183359, 1, 0, 30, 100.00\n';
    const lost = parseLostGpus(text, [0, 2]);
    assert.deepEqual(lost, [
      { index: 1, busId: '00000000:43:00.0', message: 'Unable to determine the device handle for GPU00000000:43:00.0: Unknown Error' },
    ]);
  });

  it("reads a 2026 driver's line with the 4-digit PCI domain (cihlab/fics-cluster-guide#53)", () => {
    const line = 'Unable to determine the device handle for GPU0000:20:00.0: Unknown Error';
    assert.deepEqual(parseLostGpus(`0, NVIDIA H200, GPU-a, 143771, 1, 0, 30, 100.00\n${line}\n`, [0]), [
      { index: 1, busId: '0000:20:00.0', message: line },
    ]);
  });
});
