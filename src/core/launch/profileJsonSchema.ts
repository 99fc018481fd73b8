/**
 * schemas/launch-profile.schema.json from the profile's zod schema (profileSchema.ts), for `npm run gen:schemas`
 * and the unit test that holds the committed file to it. Its own module so the extension and CLI bundles do not
 * carry zod's JSON Schema generator.
 */
import { z } from 'zod';
import { profileFileSchema } from './profileSchema';

/**
 * What zod writes that the editor needs not: the Number.MAX_SAFE_INTEGER bound of an int without a bound of its
 * own, and the `\/` of a regex literal's source (the same pattern as `/`).
 */
function tidy(s: Record<string, unknown>): void {
  if (s.maximum === Number.MAX_SAFE_INTEGER) delete s.maximum;
  if (s.minimum === Number.MIN_SAFE_INTEGER) delete s.minimum;
  if (typeof s.pattern === 'string') s.pattern = s.pattern.replace(/\\\//g, '/');
}

/** schemas/launch-profile.schema.json as `npm run gen:schemas` writes it (draft-07, for VS Code's jsonValidation). */
export function launchProfileJsonSchema(): Record<string, unknown> {
  const { $schema, ...rest } = z.toJSONSchema(profileFileSchema, {
    target: 'draft-7',
    io: 'input',
    override: (ctx) => tidy(ctx.jsonSchema as Record<string, unknown>),
  }) as Record<string, unknown>;
  return { $schema, $id: 'https://gpu-sessions.invalid/schemas/launch-profile.schema.json', ...rest };
}
