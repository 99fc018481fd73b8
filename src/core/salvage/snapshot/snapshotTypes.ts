/**
 * The environment snapshot: its shape and bounds, and the Python packages it names.
 */
import { GpuState } from '../../node/nvidiaSmi';
import { DiskInfo } from '../../node/probe';

export interface SmiQGpu {
  /** PCI bus id, the `GPU 00000000:1B:00.0` heading of `nvidia-smi -q`. */
  busId: string;
  name: string | null;
  uuid: string | null;
  serial: string | null;
  vbios: string | null;
  architecture: string | null;
  persistenceMode: string | null;
  memoryTotalMiB: number | null;
  memoryUsedMiB: number | null;
}

export interface SnapshotServer {
  pid: number;
  port: number;
  host: string;
  /** Full argv from /proc/PID/cmdline, redacted. */
  argv: string[];
  /** From /proc/PID/environ, redacted. */
  env: Record<string, string>;
  cwd: string | null;
  /** The interpreter that runs it (venv-aware: argv[0] resolved on the process's PATH, else /proc/PID/exe). */
  python: string | null;
  /** readlink /proc/PID/exe. */
  exe: string | null;
  /** The process existed when the snapshot was taken. */
  alive: boolean;
}

export interface EnvSnapshot {
  takenAt: string;
  node: string;
  ssh: {
    host?: string;
    port?: number;
    user?: string;
    hostKeyFingerprint?: string;
    hostKeyType?: string;
    proxyJump?: string;
    transport?: string;
  };
  hostname: string | null;
  os: string | null;
  kernel: string | null;
  uptimeS: number | null;
  cpu: { model: string | null; cores: number | null; sockets: number | null; threadsPerCore: number | null; numaNodes: number | null };
  memory: { totalKiB: number | null; availableKiB: number | null; swapTotalKiB: number | null };
  disks: DiskInfo[];
  gpus: {
    /** `nvidia-smi -q`, raw (redacted). */
    smiQ: string;
    /** `nvidia-smi topo -m`, raw without terminal colour codes. */
    topology: string;
    driverVersion: string | null;
    cudaVersion: string | null;
    gpuState: GpuState;
    gpuMessage: string | null;
    /** Parsed from `nvidia-smi -q`. */
    devices: SmiQGpu[];
    /** `nvcc --version` release line, when a CUDA toolkit is on PATH. */
    nvcc: string | null;
  };
  python: { version: string | null; executable: string | null; prefix: string | null };
  pipFreeze: string[];
  /** Where pipFreeze came from: `pip freeze`, or importlib.metadata when pip is missing. */
  pipFreezeSource: 'pip' | 'importlib.metadata' | null;
  /** sglang, sgl-kernel, torch, torch.cuda, flashinfer, transformers, vllm, triton, flash-attn, xgrammar, nvidia-* CUDA libraries. */
  keyPackages: Record<string, string | null>;
  servers: SnapshotServer[];
  /** Per port: /server_info (or /get_server_info), redacted. */
  serverInfo: Record<string, unknown>;
  /** Per port: raw /metrics text, redacted. */
  metrics: Record<string, string>;
  errors: string[];
}

export type SnapshotCore = Omit<EnvSnapshot, 'ssh' | 'serverInfo' | 'metrics'>;

/** Size limits of the sections (bytes). */
export const SNAPSHOT_LIMITS = {
  smiQ: 4 * 1024 * 1024,
  topology: 256 * 1024,
  pipFreeze: 1024 * 1024,
  pyInfo: 2 * 1024 * 1024,
  cmdline: 64 * 1024,
  environ: 256 * 1024,
  small: 64 * 1024,
} as const;

export const KEY_PACKAGES = [
  'sglang',
  'sgl-kernel',
  'torch',
  'torch.cuda',
  'flashinfer',
  'transformers',
  'vllm',
  'triton',
  'flash-attn',
  'xgrammar',
];

/**
 * Run by the node's Python: version, executable, prefix, every installed distribution (the pip freeze
 * fallback) and the key packages' versions — from distribution metadata, else from the package's source
 * (`__version__ = "..."`), else (light packages only) by importing it. Prints one JSON line.
 */
