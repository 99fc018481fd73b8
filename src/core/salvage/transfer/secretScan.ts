/**
 * Secrets in the user's files, by line and kind, never by value. Salvage copies the user's bytes exactly;
 * this scan says where the secrets are (manifest `secrets: [{line, kind}]`, SALVAGE.md) so the copy can be
 * handled with care. Detection is the one redaction rule (util/redact.ts): a line holds a secret when
 * redacting it changes it, so what is flagged is exactly what `--redact` would replace.
 */
import { redactText } from '../../util/redact';

export interface SecretHit {
  line: number;
  kind: string;
}

const KINDS: Array<[RegExp, string]> = [
  [/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/, 'private-key'],
  [/\bhf_[A-Za-z0-9]{10,}/, 'huggingface-token'],
  [/\b(AKIA|ASIA)[A-Z0-9]{12,}/, 'aws-access-key-id'],
  [/aws_secret_access_key|AWS_SECRET_ACCESS_KEY/i, 'aws-secret-access-key'],
  [/aws_session_token/i, 'aws-session-token'],
  [/\bsk-[A-Za-z0-9_-]{16,}/, 'openai-api-key'],
  [/\bgh[pousr]_[A-Za-z0-9]{16,}|github_pat_/, 'github-token'],
  [/wandb/i, 'wandb-api-key'],
  [/\bBearer\s+\S/i, 'bearer-token'],
  [/:\/\/[^/\s:@]+:[^/\s@]+@/, 'url-password'],
  [/\b(password|passwd)\b/i, 'password'],
];

function kindOf(line: string): string {
  for (const [re, k] of KINDS) if (re.test(line)) return k;
  return 'secret-variable';
}

/** Line numbers (1-based) and kinds of the secrets in a text; at most `max` hits. */
export function scanSecrets(text: string, max = 200): SecretHit[] {
  if (!text || redactText(text) === text) return [];
  const hits: SecretHit[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length && hits.length < max; i++) {
    const l = lines[i];
    if (/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(l)) {
      hits.push({ line: i + 1, kind: 'private-key' });
      continue;
    }
    if (l.length > 0 && redactText(l) !== l) hits.push({ line: i + 1, kind: kindOf(l) });
  }
  // A secret only recognisable across lines (a PEM block split oddly): report where the text starts.
  if (hits.length === 0) hits.push({ line: 1, kind: 'secret' });
  return hits;
}

/** Text worth scanning: no NUL byte in the first 8 KiB. */
export function looksLikeText(b: Buffer): boolean {
  return !b.subarray(0, 8192).includes(0);
}
