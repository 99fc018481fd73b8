import assert from 'node:assert/strict';
import { renderSalvageReport } from '../../../../src/core/salvage/report/report';
import { itemOf, manifestOf } from '../../../helpers/salvageManifest';

describe('SALVAGE.md (report)', () => {
  it('a safe run says so and lists its items', () => {
    const md = renderSalvageReport(manifestOf([itemOf('/root/out/a.jsonl')]));
    assert.match(md, /^# Salvage of gpu-1\n\n## ✅ Safe to shut down/);
    assert.ok(md.includes('a.jsonl'));
  });

  it('an unsafe run names each reason, and node text cannot become markup', () => {
    const md = renderSalvageReport(
      manifestOf([itemOf('/root/out/a.jsonl', { status: 'failed' })], {
        node: 'gpu <b>1</b>',
        verdict: 'unsafe',
        reasons: ['failed-items', 'still-running'],
        reasonDetails: [
          { code: 'failed-items', message: '1 selected item(s) failed to download or verify' },
          { code: 'still-running', message: '1 SGLang server(s) still running [click](http://x)' },
        ],
      }),
    );
    assert.match(md, /## ❌ Not safe to shut down — items failed, still running/);
    assert.match(md, /- \*\*failed-items\*\*: 1 selected item\(s\) failed/);
    assert.ok(!md.includes('<b>'), 'HTML in the node name is escaped');
    assert.ok(!md.includes('[click](http://x)'), 'a link in node text is escaped');
  });
});
