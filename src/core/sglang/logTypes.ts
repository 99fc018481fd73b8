/**
 * Shared shapes of the SGLang log parser: line kinds, stat records, classified lines.
 */
import { FailureClass, FailureDetail } from './failureSignatures';

export type LineKind = 'decode' | 'prefill' | 'ready' | 'error' | 'traceback' | 'access' | 'startup' | 'other';

export interface StatRecord {
  kind: 'decode' | 'prefill';
  /** Timestamp exactly as printed inside SGLang's brackets ("2025-05-31 18:31:21", "04:40:55",
   *  "2025-05-31 18:31:21.123"); null when the line has none. */
  time: string | null;
  /** Rank tags, lowercase keys: dp, pp, attn_cp, moe_dp, tp, ep (any other `NAMEn` tag is kept the same way,
   *  and the 2024 "[gpu=N]" form gives `gpu`). {} for a single-GPU server. */
  ranks: Record<string, number>;
  /** rankLabel(ranks), e.g. "DP0 TP0"; "" or absent without ranks. Filled by the parser (cached, cheap). */
  rank?: string;
  /** decode: `gen throughput (token/s)`. */
  genThroughput: number | null;
  /** prefill: `input throughput (token/s)`. */
  inputThroughput: number | null;
  /** `#running-req` (early 2024: `#running_req`). */
  runningReqs: number | null;
  /** `#queue-req` (early 2024 prefill: `#remaining_req`). */
  queueReqs: number | null;
  /** `token usage`; for hybrid-memory and HiSparse models (which print no plain `token usage`) the maximum
   *  over their pools (`full token usage`, `swa token usage`, `mamba usage`, `gpu token usage`; not the host pool), as SGLang
   *  computes its pressure. A fraction 0..1 as printed. */
  tokenUsage: number | null;
  /** Speculative decoding `accept len` (includes the bonus token, >= 1). */
  acceptLen: number | null;
  /** Speculative decoding `accept rate` (fraction as printed). */
  acceptRate: number | null;
  /** `cuda graph` / `npu graph` / `cpu graph` (any `<x> graph: True|False`); null when absent. */
  cudaGraph: boolean | null;
  /** `#token` (hybrid models: `#full token`). */
  numTokens: number | null;
  /** prefill `#new-seq` (early 2024: `#seq`). */
  newSeq: number | null;
  /** prefill `#new-token` (early 2024: `#new_token`). */
  newTokens: number | null;
  /** `#cached-token` (early 2024: `#cached_token`). */
  cachedTokens: number | null;
  /** 2024 prefill `cache hit rate` (early 2024: `tree_cache_hit_rate`). NOTE: the printed PERCENT number
   *  ("cache hit rate: 55.00%" → 55), not a fraction. */
  cacheHitRate: number | null;
  /** Every other key, verbatim (e.g. "#swa token", "swa token usage", "mamba usage", "#pending-token",
   *  "fwd occupancy", "#prealloc-req", "pre-allocated usage", "est. decode TFLOPS/s (per GPU)").
   *  Values typed: numbers → number; "True"/"False" → boolean; a value ending in "%" → the printed percent
   *  number ("fwd occupancy: 87.50%" → 87.5); anything else (e.g. "nan%", "nan") → the verbatim string.
   *  A known key whose value is not a finite number is null above and kept verbatim here. */
  extra: Record<string, string | number | boolean>;
}

export interface ClassifiedLine {
  kind: LineKind;
  stat?: StatRecord;
  /** For 'error' lines: the failure class, or null for an error that is none of them (e.g. a request's
   *  ValueError). For stat lines: 'kv-pressure' when the line shows retractions or a pool at 1.00. */
  errorClass?: FailureClass | null;
  /** For 'error' lines of a class: the detail (fatal, soft watchdog, exit code). */
  failure?: FailureDetail;
  /** The line without ANSI codes and without outer wrappers / SGLang's "[timestamp ranks] " header. */
  message: string;
}
