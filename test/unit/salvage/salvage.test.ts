import assert from 'node:assert/strict';
import { stepOf } from '../../../src/core/flows/salvage';
import { classifySalvage } from '../../../src/core/salvage/plan/listing';

describe('salvage building blocks', () => {
  it('classifies what salvage considers and maps kinds to checklist steps', () => {
    assert.equal(classifySalvage('/root/completions/batch_000001.jsonl'), 'data');
    assert.equal(classifySalvage('/dev/shm/model/model-00001-of-00011.safetensors'), 'model');
    assert.equal(classifySalvage('/root/launch_tuned.sh'), 'launch-script');
    assert.equal(classifySalvage('/root/.bash_history'), 'other');
    assert.equal(classifySalvage('/workspace/Makefile'), 'other');
    assert.equal(stepOf('launch-script'), 'scripts');
    assert.equal(stepOf('progress'), 'logs');
    assert.equal(stepOf('patch'), 'configs');
    assert.equal(stepOf('data'), 'data');
  });
});
