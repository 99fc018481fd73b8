/**
 * Shell steps on a simulated node, as a user types them: run a command (it must succeed), a server's pid and its
 * own command line (shell-quoted, to start it again the way a user would), and starting a server detached into its
 * per-GPU log (appended).
 */
import assert from 'node:assert/strict';
import type { SimNode } from './simnode';

export interface SimShell {
  ssh(cmd: string): string;
  pidOf(port: number): number;
  argvOf(port: number): string;
  /** `setsid nohup ARGV >> ~/logs/sglang_gpuN.log` with the GPU pinned and optional environment assignments. */
  startInLog(gpu: number, argv: string, env?: string): void;
}

export function simShell(sim: () => SimNode): SimShell {
  const ssh = (cmd: string): string => {
    const r = sim().sshd.ssh(cmd);
    assert.equal(r.status, 0, `${cmd}: ${r.stderr}`);
    return r.stdout.trim();
  };
  const pidOf = (port: number) => Number(ssh(`cut -d' ' -f1 ~/.sim/run/server_${port}.pid`));
  return {
    ssh,
    pidOf,
    argvOf: (port) => ssh(`xargs -0 printf '%q ' < /proc/${pidOf(port)}/cmdline`),
    startInLog(gpu, argv, env = '') {
      // ssh may end 255 as the session closes under the detached server: its output says it ran
      const r = sim().sshd.ssh(
        `cd ~ && CUDA_VISIBLE_DEVICES=${gpu} ${env} setsid nohup ${argv} >> ~/logs/sglang_gpu${gpu}.log 2>&1 < /dev/null & echo started`,
      );
      assert.match(r.stdout, /started/, r.stderr);
    },
  };
}
