// The verifier's own environment as a task (or one of its steps) describes it (Harbor 1.4's
// `[verifier.environment]`): its resources, its build timeout, and its image: a prebuilt one
// named by `docker_image`, else the one the tests folder's Dockerfile builds (context: that
// tests folder), else none (the task's own). Resolved step first, then the task (run/verifierEnvironment.ts).
import { existsSync, lstatSync } from 'node:fs';
import * as path from 'node:path';
import * as z from 'zod';

const seconds = z.number().positive();

/** An image name as engines take it: registry, path, tag or digest; no blanks, no option. */
export const ImageName = z
  .string()
  .min(1)
  .max(300)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._\-/:@]*$/, { message: 'not an image name (letters, digits and . _ - / : @, starting with a letter or digit)' });

/** `[verifier.environment]` (and `[steps.verifier.environment]`). */
export const VerifierEnvironmentTomlSchema = z.looseObject({
  cpus: z.number().positive().optional(),
  memory_mb: z.number().positive().optional(),
  storage_mb: z.number().positive().optional(),
  build_timeout_sec: seconds.optional(),
  /** A prebuilt image the engine must already hold (Belay never pulls). */
  docker_image: ImageName.optional(),
});
export type VerifierEnvironmentToml = z.infer<typeof VerifierEnvironmentTomlSchema>;

/** Where the verifier's image comes from (the same shapes as the task image's sources). */
export type VerifierImage =
  | { kind: 'image'; image: string; /** The file that named it. */ origin: string }
  | { kind: 'dockerfile'; dockerfile: string; context: string; origin: string };

export interface VerifierEnvironmentSpec {
  cpus: number | undefined;
  memoryMb: number | undefined;
  storageMb: number | undefined;
  buildTimeoutSec?: number;
  /** Absent: the task's own image (its environment/Dockerfile, or the base image). */
  image?: VerifierImage;
}

/**
 * The verifier environment a table describes, with the image of `testsDir`'s Dockerfile when the
 * table names none (`tomlFile` is named in messages about a `docker_image`).
 */
export function verifierSpec(table: VerifierEnvironmentToml | undefined, testsDir: string | undefined, tomlFile: string): VerifierEnvironmentSpec {
  const image = verifierImage(table, testsDir, tomlFile);
  return {
    cpus: table?.cpus,
    memoryMb: table?.memory_mb,
    storageMb: table?.storage_mb,
    ...(table?.build_timeout_sec !== undefined ? { buildTimeoutSec: table.build_timeout_sec } : {}),
    ...(image ? { image } : {}),
  };
}

/** `docker_image` first, then `<testsDir>/Dockerfile` (a link there counts too: the build refuses it in one line). */
export function verifierImage(table: VerifierEnvironmentToml | undefined, testsDir: string | undefined, tomlFile: string): VerifierImage | undefined {
  if (table?.docker_image !== undefined) return { kind: 'image', image: table.docker_image, origin: tomlFile };
  if (testsDir === undefined) return undefined;
  const dockerfile = path.join(testsDir, 'Dockerfile');
  return existsSync(dockerfile) || isLink(dockerfile) ? { kind: 'dockerfile', dockerfile, context: testsDir, origin: dockerfile } : undefined;
}

function isLink(file: string): boolean {
  try {
    return lstatSync(file).isSymbolicLink();
  } catch {
    return false;
  }
}
