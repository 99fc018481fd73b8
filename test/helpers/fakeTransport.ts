/**
 * A Transport whose exec answers from a function, recording every call (command and options): for the
 * runner and operation tests that need no shell. Streams and TCP are not used by those tests.
 */
import type { Duplex } from 'node:stream';
import type { ConnectionState, ExecOptions, ExecResult, ExecStream, StreamOptions, Transport } from '../../src/core/ssh/transport';

export interface ExecCall {
  command: string;
  opts: ExecOptions;
}

/** An ExecResult with the given stdout and defaults for the rest (exit 0, empty stderr, not truncated). */
export function execResult(stdout: string | Buffer, r: Partial<Omit<ExecResult, 'stdout'>> = {}): ExecResult {
  return { stdout: Buffer.from(stdout), stderr: Buffer.alloc(0), code: 0, truncated: false, ...r };
}

export class ExecFakeTransport implements Transport {
  readonly state: ConnectionState = 'connected';
  readonly calls: ExecCall[] = [];
  constructor(
    private readonly answer: (command: string, opts: ExecOptions) => ExecResult | Promise<ExecResult>,
    readonly label = 'fake-node',
  ) {}
  async exec(command: string, opts: ExecOptions = {}): Promise<ExecResult> {
    this.calls.push({ command, opts });
    return this.answer(command, opts);
  }
  async stream(_command: string, _opts?: StreamOptions): Promise<ExecStream> {
    throw new Error('ExecFakeTransport: stream is not used');
  }
  async connectTcp(): Promise<Duplex> {
    throw new Error('ExecFakeTransport: connectTcp is not used');
  }
  describe() {
    return { host: 'fake' };
  }
  onStateChange() {
    return () => undefined;
  }
  dispose(): void {}
}
