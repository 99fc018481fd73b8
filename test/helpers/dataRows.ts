/**
 * Generation output with planted defects, in each record shape the data guard reads: rows of good, empty,
 * thinking-only, same-answer (`OK.`), looping and cut-at-length answers at the rates a test asks for, and
 * broken lines. Seeded, so a test's file is the same on every run.
 */
export type RecordShape = 'openai-chat' | 'openai-text' | 'sglang-generate' | 'chat-messages' | 'flat';

export interface Planted {
  /** Shares of rows (0..1). thinkingOnly rows are empty too. */
  empty?: number;
  thinkingOnly?: number;
  top?: number;
  repetitive?: number;
  truncated?: number;
  /** Share of lines that are not JSON (cut rows). */
  broken?: number;
}

export function prng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

const WORDS =
  'the a model answer proof because therefore we compute sum value each prime function returns list graph node edge cost time space first then finally result check case'.split(
    ' ',
  );

function goodAnswer(i: number, r: () => number, words: number): string {
  const w: string[] = [`Answer ${i}:`];
  for (let k = 0; k < words; k++) w.push(WORDS[Math.floor(r() * WORDS.length)]);
  return w.join(' ') + '.';
}

function loopAnswer(i: number): string {
  const unit = 'I will now check the result again to be sure that it is right';
  return `Answer ${i}: ` + Array.from({ length: 8 }, () => unit).join(' ');
}

type Kind = 'good' | 'empty' | 'thinkingOnly' | 'top' | 'repetitive';

/** One row in the shape, as a JSON line (no newline). */
export function row(shape: RecordShape, i: number, kind: Kind, truncated: boolean, r: () => number, words = 30): string {
  const thinking = kind === 'thinkingOnly' || (kind !== 'empty' && r() < 0.5);
  const think = thinking ? `Let me think about prompt ${i} carefully.` : '';
  const answer = kind === 'good' ? goodAnswer(i, r, words) : kind === 'top' ? 'OK.' : kind === 'repetitive' ? loopAnswer(i) : '';
  const finish = truncated ? 'length' : 'stop';
  const tokens = 50 + Math.floor(r() * 400);
  const prompt = `Prompt number ${i}: explain something.`;
  switch (shape) {
    case 'openai-chat':
      return JSON.stringify({
        id: `chatcmpl-${i}`,
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: answer, reasoning_content: think || null }, finish_reason: finish }],
        usage: { prompt_tokens: 20, completion_tokens: tokens, total_tokens: 20 + tokens },
      });
    case 'openai-text':
      return JSON.stringify({
        id: `cmpl-${i}`,
        object: 'text_completion',
        choices: [{ index: 0, text: think ? `<think>${think}</think>\n\n${answer}` : answer, finish_reason: finish }],
        usage: { prompt_tokens: 20, completion_tokens: tokens },
      });
    case 'sglang-generate':
      return JSON.stringify({
        text: think ? `${think}</think>\n\n${answer}` : answer,
        meta_info: {
          id: `r${i}`,
          finish_reason: truncated ? { type: 'length', length: tokens } : { type: 'stop', matched: 151645 },
          completion_tokens: tokens,
        },
      });
    case 'chat-messages':
      return JSON.stringify({
        messages: [
          { role: 'system', content: 'You are helpful.' },
          { role: 'user', content: prompt },
          { role: 'assistant', content: think ? `<think>\n${think}\n</think>\n\n${answer}` : answer },
        ],
        finish_reason: finish,
      });
    case 'flat':
      return JSON.stringify({ index: i, prompt, reasoning: think, completion: answer, output_tokens: tokens, finish_reason: finish });
  }
}

/** `n` lines (each with its newline) with the planted rates; the kinds drawn from a seeded generator. */
export function plantedLines(shape: RecordShape, n: number, p: Planted, seed = 7, start = 0): string[] {
  const r = prng(seed);
  const out: string[] = [];
  const e = p.empty ?? 0;
  const th = p.thinkingOnly ?? 0;
  const top = p.top ?? 0;
  const rep = p.repetitive ?? 0;
  for (let k = 0; k < n; k++) {
    const i = start + k;
    if (p.broken && r() < p.broken) {
      out.push(row(shape, i, 'good', false, r).slice(0, 25) + '\n');
      continue;
    }
    const x = r();
    const kind: Kind = x < th ? 'thinkingOnly' : x < e ? 'empty' : x < e + top ? 'top' : x < e + top + rep ? 'repetitive' : 'good';
    out.push(row(shape, i, kind, r() < (p.truncated ?? 0), r) + '\n');
  }
  return out;
}
