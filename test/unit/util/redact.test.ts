import assert from 'node:assert/strict';
import {
  BlockRedactor,
  REDACTED,
  isSecretName,
  mayRedact,
  redactArgv,
  redactEnv,
  redactText,
  redactValue,
  scrubKnownSecrets,
} from '../../../src/core/util/redact';
import { planted } from '../../helpers/planted';

// Realistic-looking but fake secret values.
const HF = planted('hf_', 'abcdefghijklmnopqrstuvwxyzABCDEF0123');
const AKID = planted('AKIA', 'IOSFODNN7EXAMPLE');
const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const STS = 'IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQDexample0123456789abcdef';
const OPENAI = planted('sk-proj-', 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-xyz');
const OPENAI_OLD = planted('sk-', 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789ABCDEFGH');
const GHP = planted('ghp_', 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789');
const GHS = planted('ghs_', 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789');
const GH_PAT = planted('github_pat_', '11ABCDEFG0abcdefghijklmn_opqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789');
const WANDB = '0123456789abcdef0123456789abcdef01234567';

function assertGone(out: string, ...secrets: string[]): void {
  for (const s of secrets) assert.ok(!out.includes(s), `secret still present: ${s}\n${out}`);
}

/** Redacting twice changes nothing. */
function r(text: string): string {
  const once = redactText(text);
  assert.equal(redactText(once), once, `not idempotent on ${JSON.stringify(text)}`);
  return once;
}

describe('redact', () => {
  describe('isSecretName', () => {
    it('names the well-known secret variables', () => {
      for (const n of [
        'AWS_ACCESS_KEY_ID',
        'AWS_SECRET_ACCESS_KEY',
        'AWS_SESSION_TOKEN',
        'HF_TOKEN',
        'HUGGING_FACE_HUB_TOKEN',
        'WANDB_API_KEY',
        'OPENAI_API_KEY',
        'GITHUB_TOKEN',
        'GH_TOKEN',
        'DB_PASSWORD',
        'SMTP_PASSWD',
        'REDIS_PASS',
        'GOOGLE_CREDENTIALS',
        'BASIC_AUTH',
        '--api-key',
        '--admin-api-key',
        '--hf-token',
        '--ssl-keyfile-password',
        'apiKey',
        'hfToken',
        'x-api-key',
        'Authorization',
        'Cookie',
      ]) {
        assert.equal(isSecretName(n), true, n);
      }
    });

    // The rule: split on _ - . : and camelCase; a part must BE a secret word (KEY, TOKEN, SECRET, ...).
    // TOKENS, TOKENIZER, KEYBOARD, AUTHOR are different words; TOKEN_ID / EOS_TOKEN / KEY_VALUE / AUTH_URL /
    // *_PATH are ML or config terms, not secrets.
    it('leaves look-alikes alone: --max-tokens is not a secret', () => {
      for (const n of [
        'KEYBOARD_LAYOUT',
        '--max-tokens',
        'max_total_tokens',
        '--max-total-tokens',
        'speculative_num_draft_tokens',
        '--tokenizer-path',
        'skip_tokenizer_init',
        'eos_token_id',
        'pad_token',
        'bos_token',
        'sglang:token_usage',
        'num_key_value_heads',
        'OS_AUTH_URL',
        'SSH_AUTH_SOCK',
        'HF_TOKEN_PATH',
        'AUTHOR',
        'PWD',
        'OLDPWD',
        'CUDA_VISIBLE_DEVICES',
        '--ssl-keyfile',
        'PASS_THROUGH',
        'BYPASS',
      ]) {
        assert.equal(isSecretName(n), false, n);
      }
    });
  });

  describe('redactEnv / redactArgv', () => {
    it('redacts secret-named variables and secret values in other variables', () => {
      const env = redactEnv({
        HF_TOKEN: HF,
        AWS_SECRET_ACCESS_KEY: AWS_SECRET,
        AWS_ACCESS_KEY_ID: AKID,
        WANDB_API_KEY: WANDB,
        KEYBOARD_LAYOUT: 'us',
        PIP_INDEX_URL: 'https://builder:pa55w0rd-xyz@pypi.example.com/simple',
        EMPTY_TOKEN: '',
        PATH: '/usr/bin:/bin',
        NOTES: `token is ${GHP}`,
      });
      assert.equal(env.HF_TOKEN, REDACTED);
      assert.equal(env.AWS_SECRET_ACCESS_KEY, REDACTED);
      assert.equal(env.AWS_ACCESS_KEY_ID, REDACTED);
      assert.equal(env.WANDB_API_KEY, REDACTED);
      assert.equal(env.KEYBOARD_LAYOUT, 'us');
      assert.equal(env.PIP_INDEX_URL, `https://builder:${REDACTED}@pypi.example.com/simple`);
      assert.equal(env.EMPTY_TOKEN, '');
      assert.equal(env.PATH, '/usr/bin:/bin');
      assert.equal(env.NOTES, `token is ghp_${REDACTED}`);
    });

    it('redacts secret flags in both forms and keeps everything else', () => {
      const argv = [
        'python3',
        '-m',
        'sglang.launch_server',
        '--model-path',
        '/models/Qwen3.6-27B',
        '--api-key',
        'my-local-key-123',
        '--admin-api-key=adm1n-key-456',
        '--hf-token',
        HF,
        '--max-tokens',
        '512',
        '--max-total-tokens',
        '100000',
        '--tokenizer-path',
        '/models/tok',
        '--trust-remote-code',
        '--enable-metrics',
        'HF_TOKEN=' + HF,
        `--download-url=https://u:p4ssw0rd99@host/x`,
      ];
      const out = redactArgv(argv);
      assert.deepEqual(out, [
        'python3',
        '-m',
        'sglang.launch_server',
        '--model-path',
        '/models/Qwen3.6-27B',
        '--api-key',
        REDACTED,
        `--admin-api-key=${REDACTED}`,
        '--hf-token',
        REDACTED,
        '--max-tokens',
        '512',
        '--max-total-tokens',
        '100000',
        '--tokenizer-path',
        '/models/tok',
        '--trust-remote-code',
        '--enable-metrics',
        `HF_TOKEN=${REDACTED}`,
        `--download-url=https://u:${REDACTED}@host/x`,
      ]);
      // A boolean flag with a secret-sounding name does not swallow the next flag.
      assert.deepEqual(redactArgv(['--disable-auth', '--port', '30000']), ['--disable-auth', '--port', '30000']);
      assert.deepEqual(redactArgv(out), out, 'idempotent');
    });
  });

  describe('redactText', () => {
    it('AWS: access key ids, secret keys, session tokens (credentials file and env lines)', () => {
      const text = [
        '[default]',
        `aws_access_key_id = ${AKID}`,
        `aws_secret_access_key = ${AWS_SECRET}`,
        `aws_session_token = ${STS}`,
        `export AWS_SECRET_ACCESS_KEY=${AWS_SECRET}`,
        `the key ${AKID} was rotated; ASIAY34FZKBOKMUTVV7A too`,
        `token in prose ${STS}`,
      ].join('\n');
      const out = r(text);
      assertGone(out, AKID, AWS_SECRET, STS, 'ASIAY34FZKBOKMUTVV7A');
      assert.match(out, /aws_secret_access_key = <redacted>/);
      assert.match(out, /export AWS_SECRET_ACCESS_KEY=<redacted>/);
      assert.match(out, /the key AKIA<redacted> was rotated; ASIA<redacted> too/);
      assert.match(out, /^\[default\]$/m);
    });

    it('Hugging Face, OpenAI, GitHub tokens anywhere', () => {
      const text = `login with ${HF}; openai ${OPENAI} and ${OPENAI_OLD}; gh ${GHP} ${GHS} ${GH_PAT}\ngit clone https://${GHP}@github.com/org/repo`;
      const out = r(text);
      assertGone(out, HF, OPENAI, OPENAI_OLD, GHP, GHS, GH_PAT);
      assert.match(out, /login with hf_<redacted>/);
      assert.match(out, /openai sk-<redacted> and sk-<redacted>/);
      assert.match(out, /gh ghp_<redacted> ghs_<redacted> github_pat_<redacted>/);
      assert.match(out, /https:\/\/ghp_<redacted>@github\.com/);
    });

    it('W&B keys: after WANDB_API_KEY, in netrc, in `wandb login`', () => {
      const netrc = `machine api.wandb.ai\n  login user\n  password ${WANDB}\n`;
      const oneLine = `machine api.wandb.ai login user password ${WANDB}`;
      for (const t of [
        `WANDB_API_KEY=${WANDB}`,
        `export WANDB_API_KEY="${WANDB}"`,
        netrc,
        oneLine,
        `wandb login ${WANDB}`,
        `wandb login --relogin ${WANDB}`,
      ]) {
        const out = r(t);
        assertGone(out, WANDB);
        assert.ok(out.includes(REDACTED), out);
      }
      // A bare 40-hex string is a git commit, not a key.
      const sha = 'commit 3306a83e0a1b2c3d4e5f60718293a4b5c6d7e8f9';
      assert.equal(r(sha), sha);
    });

    it('NAME=value, export NAME=value, NAME: value lines; JSON members; Python reprs', () => {
      const text = [
        `HF_TOKEN=${HF} python3 -m sglang.launch_server --port 30000`,
        'export GITHUB_TOKEN=plainvalue123',
        'DB_PASSWORD="my pass word"',
        'api_key: abcdef123456',
        '  client_secret: zzzzzzzzzz',
        '{"api_key": "k-123456789", "model_path": "/m", "max_total_num_tokens": 5000, "eos_token": "<|im_end|>"}',
        "server_args=ServerArgs(model_path='/m', api_key='supersecretkey', hf_token=None, eos_token_id=2)",
        'curl "http://h/x?token=querytoken99&page=2"',
        'export GH_TOKEN=$GITHUB_TOKEN',
        'Cookie: session=abcdef',
      ].join('\n');
      const out = r(text);
      assertGone(
        out,
        HF,
        'plainvalue123',
        'my pass word',
        'abcdef123456',
        'zzzzzzzzzz',
        'k-123456789',
        'supersecretkey',
        'querytoken99',
        'session=abcdef',
      );
      assert.match(out, /^HF_TOKEN=<redacted> python3 -m sglang\.launch_server --port 30000$/m);
      assert.match(out, /^export GITHUB_TOKEN=<redacted>$/m);
      assert.match(out, /^DB_PASSWORD="<redacted>"$/m);
      assert.match(out, /^api_key: <redacted>$/m);
      assert.match(out, /"model_path": "\/m", "max_total_num_tokens": 5000, "eos_token": "<\|im_end\|>"/);
      assert.match(out, /api_key='<redacted>', hf_token=None, eos_token_id=2\)/);
      assert.match(out, /\?token=<redacted>&page=2/);
      assert.match(out, /^export GH_TOKEN=\$GITHUB_TOKEN$/m, 'a shell reference is not a secret');
    });

    it('URLs with user:password@, Authorization headers, Bearer tokens', () => {
      const text = [
        'pip install --index-url https://builder:s3cr3t-Pass@pypi.example.com/simple foo',
        'git remote: https://x-access-token:tok_abcdefgh12345@github.com/o/r.git',
        'postgres://app:pgpass1234@db:5432/x',
        'curl -H "Authorization: Bearer abc.def.ghi-jkl" http://127.0.0.1:30000/v1/models',
        'Authorization: Basic dXNlcjpwYXNzd29yZA==',
        'headers = {"Authorization": "Bearer tokentoken99"}',
        'proxy with Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig',
      ].join('\n');
      const out = r(text);
      assertGone(
        out,
        's3cr3t-Pass',
        'tok_abcdefgh12345',
        'pgpass1234',
        'abc.def.ghi-jkl',
        'dXNlcjpwYXNzd29yZA==',
        'tokentoken99',
        'eyJhbGciOiJIUzI1NiJ9',
      );
      assert.match(out, /https:\/\/builder:<redacted>@pypi\.example\.com\/simple/);
      assert.match(out, /Authorization: Bearer <redacted>" http:\/\/127\.0\.0\.1:30000\/v1\/models/);
      assert.match(out, /Authorization: Basic <redacted>/);
    });

    it('PEM private key blocks (also a block cut off before its END)', () => {
      const key = 'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW';
      const text = `before\n-----BEGIN OPENSSH PRIVATE KEY-----\n${key}\n${key}\n-----END OPENSSH PRIVATE KEY-----\nafter\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA${key}`;
      const out = r(text);
      assertGone(out, key);
      assert.equal(out.split('\n')[0], 'before');
      assert.match(out, /-----BEGIN OPENSSH PRIVATE KEY-----\n<redacted>\n-----END OPENSSH PRIVATE KEY-----\nafter/);
      assert.match(out, /-----BEGIN RSA PRIVATE KEY-----\n<redacted>\n$/);
      // Public material stays.
      const cert = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----';
      assert.equal(r(cert), cert);
    });

    it('leaves ordinary text alone (false positives)', () => {
      const text = [
        'KEYBOARD_LAYOUT=us',
        'python3 -m sglang.launch_server --max-tokens 512 --max-total-tokens 100000 --tokenizer-path /m --port 30000',
        '[2026-04-05 20:02:51] Decode batch, #running-req: 46, #token: 34901, token usage: 0.19, cuda graph: True, gen throughput (token/s): 1447.08, #queue-req: 0, ',
        'sglang:token_usage{model_name="qwen3.6-27b",engine_type="unified",tp_rank="0",pp_rank="0"} 0.19',
        '"num_key_value_heads": 8, "pad_token_id": 151643',
        'SSH_AUTH_SOCK=/tmp/ssh-XXXX/agent.123',
        'OS_AUTH_URL=https://keystone.example.com/v3',
        'Bearer tokens are short',
        'Product Name                                          : NVIDIA B200',
        'ghp_short and sk-short and hf_short',
        'https://huggingface.co/Qwen/Qwen3.6-27B',
      ].join('\n');
      assert.equal(r(text), text);
    });

    it('is idempotent on everything above mixed together', () => {
      // (In a URL a password cannot hold a raw '/': it would end the authority; it is percent-encoded.)
      const text = [
        `HF_TOKEN=${HF}`,
        `Authorization: Bearer ${OPENAI}`,
        `https://u:${encodeURIComponent(AWS_SECRET)}@h/`,
        `{"token": "${GHP}"}`,
        `password ${WANDB}`,
      ].join('\n');
      const once = redactText(text);
      assert.equal(redactText(once), once);
      assertGone(once, HF, OPENAI, encodeURIComponent(AWS_SECRET), GHP, WANDB);
    });

    it('redacts 5 MB of text in well under a second', function () {
      this.timeout(10_000);
      const lines = [
        '[2026-04-05 20:02:51] Decode batch, #running-req: 46, #token: 34901, token usage: 0.19, gen throughput (token/s): 1447.08, #queue-req: 0, ',
        '[2026-04-05 20:02:51] INFO:     127.0.0.1:40052 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        `export HF_TOKEN=${HF}`,
        'key=value other=thing url=https://user:pw123@host/x?token=abc&x=1',
        '{"api_key": "abc", "model_path": "/m", "eos_token_id": 2}',
        `${AKID} ${OPENAI_OLD} -rw-r--r-- 1 root root 123 --api-key x`,
      ];
      let text = '';
      for (let i = 0; text.length < 5 * 1024 * 1024; i++) text += lines[i % lines.length] + '\n';
      const t0 = Date.now();
      const out = redactText(text);
      const ms = Date.now() - t0;
      assert.ok(ms < 8000, `took ${ms} ms`);
      assertGone(out, HF, AKID, OPENAI_OLD);
      // Pathological inputs stay linear too.
      for (const adv of [
        'a.'.repeat(2_500_000),
        '-'.repeat(5_000_000),
        'a='.repeat(2_500_000),
        'x://'.repeat(1_250_000),
        '-----BEGIN RSA PRIVATE KEY-----'.repeat(150_000),
      ]) {
        const t1 = Date.now();
        redactText(adv);
        assert.ok(Date.now() - t1 < 5000, `pathological input took ${Date.now() - t1} ms`);
      }
    });
  });

  describe('redactValue / scrubKnownSecrets', () => {
    it('redacts JSON-like values by key and by content, keeping null "no secret" values', () => {
      const info = {
        model_path: '/m',
        api_key: 'k-123456',
        hf_token: null,
        nested: { admin_api_key: 'adm-999999', list: [`x ${HF}`] },
        max_total_num_tokens: 5,
      };
      assert.deepEqual(redactValue(info), {
        model_path: '/m',
        api_key: REDACTED,
        hf_token: null,
        nested: { admin_api_key: REDACTED, list: [`x hf_${REDACTED}`] },
        max_total_num_tokens: 5,
      });
    });

    it('scrubs repeats of known secret values wherever they are', () => {
      const v = { a: 'plain mysecretvalue here', b: ['mysecretvalue'], c: { 'k-mysecretvalue': 1 }, n: 3 };
      assert.deepEqual(scrubKnownSecrets(v, ['mysecretvalue', 'abc']), {
        a: `plain ${REDACTED} here`,
        b: [REDACTED],
        c: { [`k-${REDACTED}`]: 1 },
        n: 3,
      });
    });
  });

  describe('BlockRedactor.text: the jump to lines that may need the rules changes nothing (issue 31)', () => {
    const words = [
      'key',
      'apiKey',
      'token',
      'secret',
      'secrets',
      'password',
      'passwd',
      'pass',
      'passphrase',
      'credentials',
      'creds',
      'auth',
    ];
    const more = ['authorization', 'cookie', 'pat', 'PAT', 'Pat', 'gitPat', 'PATToken', 'patX', 'pat2', 'xPAT', 'github_pat', 'GITHUB_PAT'];
    const forms = (w: string) => [
      w,
      w.toUpperCase(),
      w[0].toUpperCase() + w.slice(1),
      `MY_${w.toUpperCase()}`,
      `my${w[0].toUpperCase()}${w.slice(1)}`,
    ];
    const templates = (n: string) => [
      `${n}=hunter2hunter2`,
      `export ${n}="s3cr3tvalue99"`,
      `  "${n}": "s3cr3tvalue99",`,
      `${n}: s3cr3tvalue99`,
      `--${n} s3cr3tvalue99`,
      `python3 run.py --${n}=s3cr3tvalue99 --port 30000`,
      `cfg(${n}='s3cr3tvalue99')`,
    ];
    const corpus: string[] = [];
    for (const w of [...words, ...more]) for (const f of forms(w)) corpus.push(...templates(f));
    corpus.push(
      `HF_TOKEN=${HF}`,
      `token ${HF} in a log`,
      `aws_access_key_id = ${AKID}`,
      `x ${STS}`,
      `OPENAI ${OPENAI} and ${OPENAI_OLD}`,
      `git ${GHP} ${GHS} ${GH_PAT}`,
      `wandb login ${WANDB}`,
      'Authorization: Bearer abcdefghijkl.mnop',
      'curl -H "authorization: token abc123456"',
      'https://user:pa55word@example.com/x',
      'machine example.com login me password hunter2',
      '-----BEGIN OPENSSH PRIVATE KEY-----',
      'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW',
      'QyNTUxOQAAACDZl1n0wW6m0r8rWJ2y0YcZ1p5YbN7H0c9Zx0y6bWl9bQAAAJg=',
      '-----END OPENSSH PRIVATE KEY-----',
      '-----BEGIN RSA PRIVATE KEY-----',
      'Proc-Type: 4,ENCRYPTED',
      'PuTTY-User-Key-File-3: ssh-ed25519',
      'Private-Lines: 1',
      'AAAAIGxvbmdlcg==',
      '    "remotePath": "/home/u/work/data/f1.bin",',
      '    "localPath": "files/home/u/work/data/f1.bin",',
      '    "sha256": "0b8efa5a3bf104413a725c6ff0459a6be12b84116c1bf25d6b7b2a2c1e4f1a7d",',
      '    "secrets": [],',
      '    "secretsFound": 2,',
      'PATH=/usr/bin:/bin',
      'Pathological case: path/to/x',
      '',
      '  ',
      'plain text with nothing in it',
      'é ü 😀 İstanbul',
    );
    it('a line the rules change holds what mayRedact looks for', () => {
      const re = mayRedact();
      let changed = 0;
      for (const l of corpus) {
        re.lastIndex = 0;
        const hit = re.test(l);
        if (redactText(l) !== l) {
          changed++;
          assert.ok(hit, `redactText changes a line mayRedact passes over: ${l}`);
        }
      }
      assert.ok(changed > 300, `only ${changed} corpus lines are redacted: the corpus tests nothing`);
    });
    it('a chunk of lines comes out as the lines one by one, key blocks across lines included', () => {
      let seed = 31;
      const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
      for (let k = 0; k < 400; k++) {
        const lines = Array.from({ length: 1 + Math.floor(rnd() * 40) }, () => corpus[Math.floor(rnd() * corpus.length)]);
        if (rnd() < 0.3) lines.push('');
        const chunk = lines.join('\n');
        const one = new BlockRedactor();
        const want = chunk
          .split('\n')
          .map((l) => one.line(l))
          .join('\n');
        const b = new BlockRedactor();
        assert.equal(b.text(chunk), want, chunk);
        assert.equal(b.inside, one.inside);
      }
    });
  });
});
