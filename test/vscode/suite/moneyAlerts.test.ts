/**
 * Money alerts inside the real extension host, on the demo node (issue 43, item 6), as the extension raises them
 * (its Alerts, through the API's `alerts.shown`):
 *  - the job's ETA (the demo's completions/progress.json: about 11 min left) runs past a rental end set with Set
 *    Rental Deadline… five minutes ahead: `job-overrun`, long before the deadline's lead time;
 *  - a rental end inside the lead time: `deadline-near`, offering Release Node;
 *  - a rental end already passed: `rental-ended` (before, nothing said it ended), offering Release Node;
 *  - the job reaching 100 % (sim-fault job-done): the job-done alert, offering Release Node.
 */
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { GpuSessionsApi } from '../../../src/extension/extension';
import { waitFor } from '../../e2e/harness';
import { DEMO, simFault, withDemoNode } from '../demoNode';

describe('money alerts on the demo node: job overrun, deadline near, rental ended, job done (issue 43 item 6)', function () {
  this.timeout(240_000);
  let api: GpuSessionsApi;
  let startedDemo = false;
  const conf = () => vscode.workspace.getConfiguration('gpuSessions');
  const fault = (...args: string[]) => simFault(api, ...args);
  /** The first alert for the demo node in state `to` shown after index `from` of `alerts.shown`. */
  const alertTo = (to: string, from: number, ms = 45_000) =>
    waitFor(
      `a "${to}" alert for ${DEMO}`,
      () => api.alerts.shown.slice(from).find((a) => a.transition.node === DEMO && a.transition.to === to),
      ms,
    ).catch((e: Error) => {
      const seen = api.alerts.shown.slice(from).map((a) => `${a.transition.to}: ${a.text} [${a.actions.join(', ')}]`);
      const prog = api.live.live(DEMO)?.progress;
      const log = api
        .logText()
        .split('\n')
        .filter((l) => l.includes(`${DEMO}: `) && l.includes(' → '))
        .slice(-8);
      throw new Error(
        `${e.message}; alerts shown since: ${seen.join(' | ') || 'none'}; progress read ${prog?.readAt ? new Date(prog.readAt).toISOString() : 'never'}: ` +
          `${JSON.stringify(prog?.progress && { status: prog.progress.status, percent: prog.progress.percent })}; transitions logged: ${log.join(' | ')}`,
      );
    });
  const setDeadline = (offsetS: number) =>
    vscode.commands.executeCommand('gpuSessions.setRentalDeadline', DEMO, new Date(Date.now() + offsetS * 1000).toISOString());

  before(async function () {
    ({ api, started: startedDemo } = await withDemoNode());
    await conf().update('deadlineWarningMinutes', 1, vscode.ConfigurationTarget.Global);
  });

  after(async function () {
    this.timeout(60_000);
    try {
      fault('job-running');
    } catch {
      /* the demo may be gone */
    }
    for (const key of ['rentalDeadlines', 'deadlineWarningMinutes'])
      await conf()
        .update(key, undefined, vscode.ConfigurationTarget.Global)
        .then(undefined, () => undefined);
    if (startedDemo) await vscode.commands.executeCommand('gpuSessions.stopDemoNode').then(undefined, () => undefined);
  });

  it('job-overrun: the rental ends in 5 min, the job needs longer; said once the ETA runs past the end, before the lead time', async () => {
    const from = api.alerts.shown.length;
    await setDeadline(300);
    const d = await waitFor('the deadline with the job ETA', () => api.tree.deadlineFor(DEMO)?.deadline.jobEta ?? undefined, 30_000);
    const deadline = api.tree.deadlineFor(DEMO)!.deadline;
    console.log(`      job ETA ${d} s, rental ends in ${deadline.secondsLeft} s: overrun ${deadline.jobOverrunS} s`);
    assert.ok((deadline.jobOverrunS ?? 0) > 0, 'the demo job runs past the 5 min rental (else this step proves nothing)');
    const a = await alertTo('job-overrun', from);
    console.log(`      alert: ${a.text} [${a.actions.join(', ')}]`);
    assert.match(a.text, /the job ends after the rental/);
    assert.match(a.text, /the rental ends in \d/);
    assert.ok(a.actions.includes('Salvage Node'), a.actions.join(', '));
    assert.ok(
      !api.alerts.shown.slice(from).some((x) => x.transition.node === DEMO && x.transition.to === 'deadline-near'),
      'no deadline-near 5 min ahead with a 1 min lead',
    );
  });

  it('deadline-near: the rental ends within the lead time; the alert offers Release Node', async () => {
    const from = api.alerts.shown.length;
    await setDeadline(40);
    const a = await alertTo('deadline-near', from);
    console.log(`      alert: ${a.text} [${a.actions.join(', ')}]`);
    assert.match(a.text, /rental ends soon/);
    assert.ok(a.actions.includes('Release Node'), `Release Node offered: ${a.actions.join(', ')}`);
    assert.ok(a.actions.includes('Salvage Node'), a.actions.join(', '));
  });

  it('rental-ended: a rental end that has passed is said, with Release Node', async () => {
    const from = api.alerts.shown.length;
    await setDeadline(-60);
    const a = await alertTo('rental-ended', from);
    console.log(`      alert: ${a.text} [${a.actions.join(', ')}]`);
    assert.match(a.text, /rental ended/);
    assert.ok(a.actions.includes('Release Node'), `Release Node offered: ${a.actions.join(', ')}`);
    assert.ok(
      !api.alerts.shown.slice(from).some((x) => x.transition.node === DEMO && x.transition.to === 'deadline-near'),
      'a passed end is not "ends soon"',
    );
  });

  it('job done: the job reaching 100 % raises the job-done alert, with Release Node', async () => {
    const from = api.alerts.shown.length;
    console.log(`      at ${new Date().toISOString()}: sim-fault job-done`);
    fault('job-done');
    const a = await alertTo('done', from, 60_000);
    console.log(`      alert: ${a.text} [${a.actions.join(', ')}]`);
    assert.equal(a.transition.subject, 'job');
    const job = api.live.live(DEMO)?.progress?.progress;
    assert.equal(job?.percent, 100, `the job at 100 %: ${JSON.stringify(job)}`);
    assert.match(a.text, /job finished/);
    assert.ok(a.actions.includes('Release Node'), `Release Node offered: ${a.actions.join(', ')}`);
    assert.ok(a.actions.includes('Salvage Node'), a.actions.join(', '));
  });
});
