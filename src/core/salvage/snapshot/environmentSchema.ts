/**
 * The environment snapshot (`environment.json` in a run folder) as it is read back (end-rental compares its servers
 * and boot time with the node's). EnvSnapshot (snapshotTypes.ts) is what a salvage writes; this schema is what a
 * reader accepts, checked against it at compile time. Fields a reader does not use are kept as they are.
 */
import { z } from 'zod';
import { type Reads, parseDocument } from '../../util/document';
import type { EnvSnapshot } from './snapshotTypes';

const strOrNull = z.string().nullable();
const numOrNull = z.number().nullable();

export const environmentSchema = z.object({
  takenAt: z.string().optional(),
  node: z.string().optional(),
  hostname: strOrNull.optional(),
  uptimeS: numOrNull.optional(),
  servers: z
    .array(
      z.object({
        pid: z.number(),
        port: z.number(),
        host: z.string().optional(),
        argv: z.array(z.string()).optional(),
        env: z.record(z.string(), z.string()).optional(),
        cwd: strOrNull.optional(),
        python: strOrNull.optional(),
        exe: strOrNull.optional(),
        alive: z.boolean().optional(),
      }),
    )
    .optional(),
  pipFreeze: z.array(z.string()).optional(),
  keyPackages: z.record(z.string(), strOrNull).optional(),
  errors: z.array(z.string()).optional(),
});

/** Every snapshot a salvage writes is one this schema reads (checked at compile time). */
type EnvironmentDocument = Reads<typeof environmentSchema, EnvSnapshot>;

/** `text` (the contents of `file`) as an environment snapshot, or a GpuSessionsError naming the file and the field. */
export function parseEnvironment(text: string, file: string): EnvironmentDocument {
  return parseDocument(environmentSchema, text, file) as unknown as EnvironmentDocument;
}
