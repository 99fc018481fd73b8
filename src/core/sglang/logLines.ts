// SGLang server-log parsing: line classification, scheduler stat lines ("Decode batch" / "Prefill batch"),
// per-rank summaries and a bounded streaming line splitter.
//
// Format family (see shared/reference/sglang-and-nvidia-smi.md, "SGLang scheduler log lines"):
//   [optional wrappers] "[" timestamp {" " RANKTAG} "] " message
// where wrappers are ANSI colour codes, a log collector's own "[YYYY-MM-DD HH:MM:SS] ", Ray's
// "(ActorName pid=N) ", and message is e.g.
//   "Decode batch[ [iter]](.|,) key: value, key: value, ...[, ]"
// Everything is parsed by *key*, never by position. Also understood: the 2024 "[gpu=N] Decode batch." form,
// the early-2024 bare decode line "#running-req: ..., gen throughput (token/s): ..." and the early-2024
// "new fill batch. #seq: N. #cached_token: N. ..." prefill line.
//
// Performance notes: no regular expression here can backtrack super-linearly; every scan is an indexOf or a
// bounded loop, so any line is handled in linear time, and lines longer than HEAD_LIMIT (1 Mi chars) are judged
// on their head only (a 100 MB line of garbage returns in milliseconds). Non-stat lines are rejected by a cheap
// indexOf(' batch') / indexOf('gen throughput') prefilter. Known keys are matched in place (no slicing), and
// the rank-tag part of the header is cached, so a decode line costs about 1 µs.
//
// This module is the barrel of the parser's parts: logTypes (shapes), logHeader (wrappers, ANSI, header, ranks),
// statLine (stat line bodies), lineClassify (other lines), logSummary (per-rank summaries, JSON records),
// lineSplitter (bounded streaming splitter). None of them may import `vscode`.

export * from './logTypes';
export * from './logHeader';
export * from './statLine';
export * from './lineClassify';
export * from './logSummary';
export * from './lineSplitter';

// The failure classes live in failureSignatures.ts (one place); re-exported for the modules that import them here.
export { classifyFailure } from './failureSignatures';
export type { FailureClass } from './failureSignatures';
