/** A launch profile that must validate: the test fails on any validation error. */
import assert from 'node:assert/strict';
import { LaunchProfile, validateProfile } from '../../src/core/launch/profile';

export function valid(x: unknown): LaunchProfile {
  const r = validateProfile(x);
  assert.deepEqual(r.errors, []);
  return r.profile!;
}
