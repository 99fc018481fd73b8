/** A launch profile that must validate: the test fails on any validation error. */
import assert from 'node:assert/strict';
import { LaunchProfile, validateProfile } from '../../src/core/launch/profile';
import { profileFileSchema } from '../../src/core/launch/profileSchema';

/** validateProfile reads a null field as an absent one; the schema (and the editor) only knows absent. */
const hasNull = (x: unknown): boolean => x === null || (typeof x === 'object' && Object.values(x as Record<string, unknown>).some(hasNull));

/**
 * The profile validateProfile returns for `x`, which must have no error. Unless it holds a null, the zod schema that
 * the editor's JSON schema is generated from must accept it too, and so must the profile returned, as written back.
 */
export function valid(x: unknown): LaunchProfile {
  const r = validateProfile(x);
  assert.deepEqual(r.errors, []);
  if (!hasNull(x)) assert.deepEqual(profileFileSchema.safeParse(x).error?.issues, undefined, JSON.stringify(x));
  assert.deepEqual(profileFileSchema.safeParse(r.profile).error?.issues, undefined, JSON.stringify(r.profile));
  return r.profile!;
}
