/** gpuSessions.showLog: the GPU Sessions output channel. */
import type { Command } from './command';

export const showLog: Command = {
  id: 'gpuSessions.showLog',
  run: (s) => s.showLog(),
};
