/**
 * The simulated node home's scripts that take parameters (venv activate, launch, generation: its text is
 * homeFiles/generate_completions.py with the ports and model filled in); the others (stop, tokenize, S3) are files
 * in homeFiles/ copied as they are.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { shq } from '../core/util/quote';

// ------------------------------------------------------------------------------------ scripts

export function activateScript(): string {
  return `# This file must be used with "source venv/bin/activate" (or ". venv/bin/activate"); POSIX sh.
# Simulated venv: the sglang package is the GPU-free simulator under venv/lib/sglang-sim.
if [ -n "\${VIRTUAL_ENV:-}" ] && [ "\${VIRTUAL_ENV}" != "$HOME/venv" ]; then
    echo "warning: replacing the active virtualenv \${VIRTUAL_ENV}" >&2
fi
VIRTUAL_ENV="$HOME/venv"
export VIRTUAL_ENV
PATH="$HOME/venv/bin:$HOME/bin:$PATH"
export PATH
PYTHONPATH="$HOME/venv/lib/sglang-sim\${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH
if [ -f "$HOME/.sim/env.sh" ]; then
    . "$HOME/.sim/env.sh"
fi
`;
}

export function launchScript(a: {
  title: string;
  modelArg: string;
  gpuCount: number;
  basePort: number;
  python: string;
  flags: string[];
  workspace: string | null;
}): string {
  const flagLines = a.flags.map((f) => `    ${f} \\\n`).join('');
  const cdWorkspace = a.workspace ? `  if [ "$i" -eq 0 ]; then cd ${shq(a.workspace)} || exit 1; fi\n` : '';
  // POSIX sh body (the demo runs it with /bin/sh); setsid + nohup + </dev/null so the servers
  // outlive the SSH session that ran this script and the session can close at once.
  return `#!/bin/bash
# ${a.title}: one independent SGLang server per GPU (data parallel by hand).
# GPU i -> port ${a.basePort}+i, log logs/sglang_gpu$i.log.
. "$HOME/venv/bin/activate"

MODEL=${a.modelArg}
NUM_GPUS=${a.gpuCount}
BASE_PORT=${a.basePort}
mkdir -p "$HOME/logs"
cd "$HOME" || exit 1

i=0
while [ "$i" -lt "$NUM_GPUS" ]; do
  PORT=$((BASE_PORT + i))
  cd "$HOME"
${cdWorkspace}  CUDA_VISIBLE_DEVICES=$i setsid nohup ${shq(a.python)} -m sglang.launch_server \\
${flagLines}    > "$HOME/logs/sglang_gpu$i.log" 2>&1 < /dev/null &
  echo "GPU $i -> port $PORT (pid $!) log: logs/sglang_gpu$i.log"
  i=$((i + 1))
done
echo "Launched $NUM_GPUS servers; each log says 'The server is fired up and ready to roll!' when ready."
`;
}

/** The parameter lines of homeFiles/generate_completions.py (a comment, the servers, the model), replaced whole. */
const GENERATE_PARAMS = /^# the writer of the demo node's home[^\n]*\nSERVERS = [^\n]*\nMODEL = [^\n]*\n/m;

/** The generation client (homeFiles/generate_completions.py) for this node's servers and served model. */
export function generateScript(assets: string, basePort: number, gpuCount: number, model: string): string {
  const template = readFileSync(path.join(assets, 'homeFiles', 'generate_completions.py'), 'utf8');
  if (!GENERATE_PARAMS.test(template)) throw new Error('homeFiles/generate_completions.py: its parameter lines are missing');
  const params = `SERVERS = ["http://127.0.0.1:%d" % p for p in range(${basePort}, ${basePort + gpuCount})]\nMODEL = ${JSON.stringify(model)}\n`;
  return template
    .replace(GENERATE_PARAMS, () => params)
    .replaceAll('{{GPU_COUNT}}', String(gpuCount))
    .replaceAll('{{FIRST_PORT}}', String(basePort))
    .replaceAll('{{LAST_PORT}}', String(basePort + gpuCount - 1));
}
