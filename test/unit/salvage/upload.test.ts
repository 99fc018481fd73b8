import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { buildMd5Script, buildPutScript, curlConfig } from '../../../src/core/salvage/upload';

const URL = 'http://127.0.0.1:9000/b/k?x-id=UploadPart&partNumber=2&X-Amz-Credential=AKIA%2F&X-Amz-Signature=abc123';

/** The script without its here-documents: what argv could ever hold. */
function outsideHeredocs(script: string): string {
  return script.replace(/<<'(GSURL[0-9a-f]+)'\n[\s\S]*?\n\1\n/g, "<<'…'\n");
}

describe('node → S3 upload scripts (core/salvage/upload)', () => {
  for (const range of [null, { offset: 5 * 1048576, length: 5 * 1048576 }])
    it(`${range ? 'a part' : 'a whole file'}: valid sh, curl or python3, the URL only in here-documents`, () => {
      const s = buildPutScript("/data/it's here.bin", URL, range);
      execFileSync('sh', ['-n'], { input: s });
      assert.match(s, /command -v curl/);
      assert.match(s, /python3 -c '/);
      assert.equal(s.split(curlConfig(URL)).length - 1, 2, 'one here-document per uploader');
      const rest = outsideHeredocs(s);
      for (const bad of ['X-Amz-Signature', 'X-Amz-Credential', '127.0.0.1'])
        assert.ok(!rest.includes(bad), `${bad} outside a here-document`);
      if (range) assert.match(s, /n=5242880\n/);
      else assert.match(s, /n=\$\(wc -c < "\$f"\)/);
    });

  it('the hash-only script (a recorded part is checked before it is skipped) is valid sh and prints GS-MD5', () => {
    const s = buildMd5Script('/data/a b', { offset: 10, length: 20 });
    execFileSync('sh', ['-n'], { input: s });
    assert.match(s, /tail -c \+11 -- "\$f" \| head -c 20 \| md5sum/);
    assert.match(s, /GS-MD5/);
  });

  it('refuses a URL that could leave its quoted config value', () => {
    assert.throws(() => curlConfig('http://x/"\nurl = "http://evil'), /unexpected characters/);
    assert.throws(() => curlConfig('file:///etc/passwd'), /unexpected characters/);
  });
});
