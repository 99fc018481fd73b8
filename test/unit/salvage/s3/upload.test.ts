import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import type { ExecResult } from '../../../../src/core/ssh/transport';
import { buildMd5Script, buildPutScript, curlConfig, md5Operation, putOperation } from '../../../../src/core/salvage/s3/upload';

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

  const res = (code: number, stdout: string, stderr = '') =>
    ({ code, stdout: Buffer.from(stdout), stderr: Buffer.from(stderr) }) as unknown as ExecResult;
  const MD5 = '5d41402abc4b2a76b9719d911017c592';

  it("the PUT parser: curl -D - (and the Python uploader) headers, the ETag checked against the node's MD5", () => {
    const op = putOperation('/d/f', URL, null);
    const curlOut = `GS-MD5 ${MD5}\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nETag: "${MD5}"\r\nContent-Length: 0\r\n\r\n`;
    assert.deepEqual(op.parse(res(0, curlOut)), { etag: MD5 });
    const pyOut = `GS-MD5 ${MD5}\nHTTP/1.1 200 OK\netag: "${MD5}"\nx-amz-request-id: 1\n`;
    assert.deepEqual(op.parse(res(0, pyOut)), { etag: MD5 });
    assert.throws(() => op.parse(res(0, pyOut.replace(`etag: "${MD5}"`, 'etag: "0000"'))), /does not match the MD5/);
    assert.throws(() => op.parse(res(22, `GS-MD5 ${MD5}\nHTTP/1.1 403 Forbidden\n`, 'curl: (22) 403')), /HTTP 403.*403/);
    assert.throws(() => op.parse(res(4, '', 'neither curl nor python3 is installed on the node')), /exit 4.*neither curl nor python3/);
  });

  it('the MD5 parser: the hex of GS-MD5, null when the node could not read the range', () => {
    const op = md5Operation('/d/f', { offset: 0, length: 5 });
    assert.equal(op.parse(res(0, `GS-MD5 ${MD5}\n`)), MD5);
    assert.equal(op.parse(res(3, '')), null);
    assert.equal(op.parse(res(0, 'GS-MD5 not-hex\n')), null);
  });
});
