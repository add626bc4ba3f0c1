// `belay image build-base`: builds the base image of the container backend from Debian packages.
import { parseCommandLine, splitAction } from '../shared/args.ts';
import { errorMessage } from '../shared/errors.ts';
import { UsageError, type CliIO } from './io.ts';
import { folderToMake } from './paths.ts';
import { detectEngine, engineChoice, EngineUnavailableError } from '../runner/core/backends/engine.ts';
import { BASE_IMAGE, BASE_PACKAGES, buildBaseImage, defaultCacheDir, DEFAULT_MIRROR } from '../runner/core/backends/image-base.ts';

/** Printed by `belay image --help` (and when no action is given). */
export const usage = `Usage: belay image build-base [--engine podman|docker] [--cache DIR] [--mirror URL] [--force]

Builds ${BASE_IMAGE}, the image the container backend's tasks, the demo tasks and the
tests build on where no registry can be reached: a Debian root file system made by mmdebstrap
from Debian packages (${BASE_PACKAGES.join(', ')}), imported into the engine.
The first build takes a few minutes; later ones find the image (or the cached root file system)
and take seconds. Tasks whose Dockerfile starts FROM an image of a registry do not need it.

Options:
  --engine podman|docker  the engine to build with (default: podman, else docker)
  --cache DIR             keeps the root file system's tar (default ${defaultCacheDir().replace(/^\/root|^\/home\/[^/]+/, '~')})
  --mirror URL            the Debian mirror (default ${DEFAULT_MIRROR})
  --force                 make it again from the packages, whatever is cached
  -h, --help              show this help

Needs mmdebstrap (Debian/Ubuntu: apt-get install mmdebstrap) unless the cache holds the tar.
Exit status: 0 when the image is there, 1 when it could not be built, 2 for usage errors.
`;

export async function run(args: string[], io: CliIO): Promise<number> {
  const { action, rest } = splitAction(args, ['build-base']);
  if (action === undefined) {
    io.stdout.write(usage);
    return 2;
  }
  const { values } = parseCommandLine(
    rest,
    { engine: { type: 'string' }, cache: { type: 'string' }, mirror: { type: 'string' }, force: { type: 'boolean' } },
    { positionals: false },
  );
  let choice;
  try {
    choice = engineChoice(values.engine);
  } catch (error) {
    throw new UsageError(`--engine: ${errorMessage(error)}`);
  }
  // Checked before the engine is looked for: a bad path is a usage mistake, found at once.
  const cacheDir = folderToMake(values.cache ?? defaultCacheDir(io.env), '--cache', io.cwd);
  let engine;
  try {
    engine = await detectEngine({ ...(choice ? { engine: choice } : {}), env: io.env });
  } catch (error) {
    if (!(error instanceof EngineUnavailableError)) throw error;
    io.stderr.write(`belay image: ${error.message}\nInstall podman (Debian/Ubuntu: apt-get install podman runc) or start docker.\n`);
    return 1;
  }
  io.stderr.write(`belay image: ${BASE_IMAGE} with ${engine.label}\n`);
  const result = await buildBaseImage({
    engine,
    cacheDir,
    ...(values.mirror !== undefined ? { mirror: values.mirror } : {}),
    force: values.force === true,
    onStep: (line) => io.stderr.write(`belay image: ${line}\n`),
    onOutput: (chunk) => io.stderr.write(chunk),
  });
  const how = { image: 'already built with this recipe', rootfs: `imported from the cached ${result.rootfs}`, packages: `made from Debian packages, root file system cached in ${result.rootfs}` }[result.source];
  io.stdout.write(`${result.image}: ${how} (${result.seconds.toFixed(1)} s)\n`);
  return 0;
}
