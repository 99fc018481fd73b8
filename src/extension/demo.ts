/** The embedded demo node started from VS Code: its node entry and known_hosts file while it runs. */
import type { NodeSpec } from '../core/ssh/config';

export interface DemoHandle {
  node: NodeSpec;
  knownHostsFile: string;
  stop(): Promise<void>;
}

export class DemoNode {
  private handle: DemoHandle | undefined;

  get current(): DemoHandle | undefined {
    return this.handle;
  }

  set(handle: DemoHandle | undefined): void {
    this.handle = handle;
  }

  /** Whether `node` is the running demo node. */
  is(node: NodeSpec | undefined): boolean {
    return !!this.handle && node?.name === this.handle.node.name;
  }

  dispose(): void {
    void this.handle?.stop();
  }
}
