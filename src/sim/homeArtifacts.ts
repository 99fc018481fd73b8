/**
 * The model folder and the generation artifacts (completions, progress, batches, logs) of the simulated node home.
 */
import { HomeWriter, pad, prng, stamp } from './homeWriter';

// ------------------------------------------------------------------------------------ model + artifacts

export function writeModel(w: HomeWriter, rel: string): void {
  const config = {
    architectures: ['Qwen3ForCausalLM'],
    model_type: 'qwen3',
    hidden_size: 5120,
    intermediate_size: 17408,
    num_hidden_layers: 64,
    num_attention_heads: 40,
    num_key_value_heads: 8,
    head_dim: 128,
    max_position_embeddings: 262144,
    num_nextn_predict_layers: 1,
    rope_theta: 10000000,
    rms_norm_eps: 1e-6,
    vocab_size: 151936,
    bos_token_id: 151643,
    eos_token_id: 151645,
    tie_word_embeddings: false,
    torch_dtype: 'bfloat16',
    transformers_version: '4.57.1',
  };
  w.file(`${rel}/config.json`, JSON.stringify(config, null, 2) + '\n');
  w.file(
    `${rel}/generation_config.json`,
    JSON.stringify(
      { bos_token_id: 151643, eos_token_id: [151645, 151643], do_sample: true, temperature: 0.6, top_k: 20, top_p: 0.95 },
      null,
      2,
    ) + '\n',
  );
  w.file(
    `${rel}/tokenizer_config.json`,
    JSON.stringify(
      {
        tokenizer_class: 'Qwen2Tokenizer',
        model_max_length: 262144,
        eos_token: '<|im_end|>',
        pad_token: '<|endoftext|>',
        bos_token: null,
        add_bos_token: false,
        clean_up_tokenization_spaces: false,
        split_special_tokens: false,
      },
      null,
      2,
    ) + '\n',
  );
  // One 1 MiB placeholder shard (deterministic bytes); the real one would be ~5 GB.
  const rand = prng(27);
  const shard = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < shard.length; i += 4) shard.writeUInt32LE(Math.floor(rand() * 4294967296), i);
  w.file(`${rel}/model-00001-of-00011.safetensors`, shard);
  // What `huggingface-cli download --local-dir` leaves beside each file: commit, etag, timestamp.
  w.file(
    `${rel}/.cache/huggingface/download/model-00001-of-00011.safetensors.metadata`,
    'b968826d9c46dd6066d109eabc6255188de91218\n"5d3f2c9a0b7e41d8a6c1f0e9d8b7a6c5"\n1764633600.0\n',
  );
}

const TOPICS = [
  'Prove that the square root of 2 is irrational.',
  'Write a Python function that merges overlapping intervals.',
  'Explain the difference between TCP and UDP for a game server.',
  'How many trailing zeros does 100! have?',
  'Summarize the causes of the 1929 stock market crash.',
  'Implement an LRU cache in Rust.',
  'What is the expected number of coin flips to get two heads in a row?',
  'Translate "the early bird catches the worm" into French and explain the idiom.',
];

export function writeArtifacts(w: HomeWriter, ports: number[]): void {
  const t0 = Date.UTC(2026, 3, 4, 2, 14, 7); // the run started 2026-04-04 02:14:07
  const total = 913786;
  const progress = {
    completed: 902087,
    failed: 2199,
    total,
    output_tokens: 1640000000,
    elapsed_s: 62820,
    req_per_s: 14.36,
    status: 'running',
    uploaded_batches: 1805,
    uploaded_bytes: 7784628224,
    batch_size: 500,
    concurrency: 96,
    servers: ports.map((p) => `http://127.0.0.1:${p}`),
    s3_prefix: 's3://train-dflash-qwen36-27b/completions/',
    started_at: new Date(t0).toISOString().replace('.000', ''),
    updated_at: new Date(t0 + 62820_000).toISOString().replace('.000', ''),
  };
  w.file('completions/progress.json', JSON.stringify(progress, null, 2) + '\n');

  // .done_indices: a few thousand indices, in completion order, with two gaps (failed prompts).
  const gaps = new Set<number>([1733, ...Array.from({ length: 8 }, (_, k) => 2950 + k)]);
  const done: string[] = [];
  for (let i = 0; i < 4012; i++) if (!gaps.has(i)) done.push(String(i));
  w.file('completions/.done_indices', done.join('\n') + '\n');

  // A handful of small batch files (what the S3 prefix holds).
  const rand = prng(1805);
  for (let b = 0; b < 5; b++) {
    const rows: string[] = [];
    for (let r = 0; r < 20; r++) {
      const index = b * 20 + r;
      const topic = TOPICS[index % TOPICS.length];
      const tokens = 400 + Math.floor(rand() * 3600);
      rows.push(
        JSON.stringify({
          index,
          prompt: topic,
          reasoning: `Let me think about this step by step. ${topic} First I restate the problem, then check the edge cases.`,
          completion: `Here is a concise answer to: ${topic} (prompt ${index}, ${tokens} tokens of reasoning condensed)`,
          output_tokens: tokens,
          finish_reason: 'stop',
          server: `http://127.0.0.1:${ports[index % ports.length]}`,
        }),
      );
    }
    w.file(`completions/batch_${pad(b, 6)}.jsonl`, rows.join('\n') + '\n');
  }

  // logs/generate.log: the client's log over the 17.45 h run.
  const lines: string[] = [];
  const ms = (t: number) => `${stamp(t)},${pad(Math.floor(t % 1000), 3)}`;
  lines.push(`${ms(t0)} INFO Loaded ${total} prompts from /root/prompts.jsonl (resuming: 0 done, ${total} to go)`);
  lines.push(
    `${ms(t0 + 3)} INFO Servers: ${ports.map((p) => `:${p}`).join(' ')} | concurrency 96 | batch 500 | s3://train-dflash-qwen36-27b/completions/`,
  );
  const lrand = prng(62820);
  let batch = 0;
  for (let s = 300; s <= 62820; s += 300) {
    const t = t0 + s * 1000 + Math.floor(lrand() * 900);
    const completed = Math.min(902087, Math.round((902087 * s) / 62820));
    const failed = Math.round((2199 * s) / 62820);
    while ((batch + 1) * 500 <= completed) {
      const tb = t0 + Math.round(((batch + 1) * 500 * 62820) / 902087) * 1000;
      if (batch % 50 === 0 || batch >= 1800) {
        const file = `batch_${pad(batch, 6)}.jsonl`;
        const mb = (3.9 + lrand() * 0.6).toFixed(1);
        lines.push(`${ms(tb)} INFO uploaded ${file} (500 rows, ${mb} MB) -> s3://train-dflash-qwen36-27b/completions/${file}`);
      }
      batch++;
    }
    if (s % 7200 === 2100) {
      const port = ports[Math.floor(lrand() * ports.length)];
      lines.push(`${ms(t - 40_000)} WARNING request ${completed - 17} to :${port} failed: ReadTimeout (attempt 1/3), retrying`);
    }
    const rate = completed / s;
    const eta = Math.max(0, Math.round((total - completed) / Math.max(rate, 1e-9)));
    lines.push(
      `${ms(t)} INFO progress ${completed}/${total} (${((100 * completed) / total).toFixed(1)}%) | ${rate.toFixed(2)} req/s | ` +
        `${((1640000000 * s) / 62820 / 1e9).toFixed(2)}B tok | failed ${failed} | eta ${Math.floor(eta / 3600)}h${pad(Math.floor((eta % 3600) / 60), 2)}m`,
    );
  }
  lines.sort(); // every line starts with its timestamp: sorting puts them in time order
  w.file('logs/generate.log', lines.join('\n') + '\n');

  w.file(
    'nohup.out',
    'nohup: ignoring input\n' +
      `Loaded ${total} prompts; resuming from .done_indices\n` +
      `progress 902087/${total} (98.7%) | 14.36 req/s | 1.64B tok | failed 2199\n`,
  );

  w.file(
    'configs/dflash_qwen36.yaml',
    `# DFlash drafter for Qwen3.6-27B, trained on the thinking-mode completions generated on this node.
target_model: /root/models/Qwen3.6-27B
draft:
  num_layers: 1
  hidden_size: 5120
  block_size: 16
  share_embeddings: true
  share_lm_head: true
data:
  train: s3://train-dflash-qwen36-27b/tokenized/
  max_len: 32768
  loss_mask: assistant_only
  min_loss_tokens: 32   # drop the empty "thinking\\n\\nresponse\\nOK." samples
train:
  lr: 3.0e-4
  warmup_steps: 500
  epochs: 2
  micro_batch_tokens: 65536
  grad_accum: 4
  bf16: true
  seed: 42
eval:
  every_steps: 1000
  spec_decode_bench:
    speculative_algorithm: DFLASH
    speculative_num_draft_tokens: 16
`,
  );

  w.file(
    'patches/sglang-mtp-fix.patch',
    `diff --git a/python/sglang/srt/speculative/eagle_worker.py b/python/sglang/srt/speculative/eagle_worker.py
index 3f1c2ab..9d04e7c 100644
--- a/python/sglang/srt/speculative/eagle_worker.py
+++ b/python/sglang/srt/speculative/eagle_worker.py
@@ -212,7 +212,10 @@ class EAGLEWorker(TpModelWorker):
         # Share the embedding and lm_head with the target model (MTP / NEXTN drafts)
-        embed, head = self.target_worker.model_runner.model.get_embed_and_head()
-        self.draft_model_runner.model.set_embed_and_head(embed, head)
+        embed, head = self.target_worker.model_runner.model.get_embed_and_head()
+        if self.hot_token_id is not None:
+            head = head.clone()
+            head.data = head.data[self.hot_token_id]
+        self.draft_model_runner.model.set_embed_and_head(embed, head)
 
         # Init attention backend and cuda graphs
         self.draft_model_runner.server_args.disable_cuda_graph = (
             backup_disable_cuda_graph
`,
  );
}
