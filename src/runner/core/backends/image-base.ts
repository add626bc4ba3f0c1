// The base image tasks, demos and tests build on where no registry can be reached:
// localhost/belay-base:bookworm, a Debian root file system made by mmdebstrap from Debian
// packages and imported into the engine. Two caches make later builds cheap: the image itself
// (labelled with its recipe's hash) and the root file system's tar in a cache folder, so a
// machine whose engine storage was wiped imports it again in seconds instead of minutes.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runBounded } from '../../../shared/process.ts';
import { failureText, findProgram, type Engine } from './engine.ts';

/** The base image's tag when BELAY_BASE_TAG does not name another. */
export const DEFAULT_BASE_TAG = 'bookworm';

/**
 * The base image's name: localhost/belay-base with the tag BELAY_BASE_TAG names (default
 * bookworm). Another tag lets a changed recipe be built and tried beside the image every other
 * Belay on the machine uses, without moving theirs.
 */
export function baseImageName(env: NodeJS.ProcessEnv = process.env): string {
  const tag = env.BELAY_BASE_TAG?.trim() || DEFAULT_BASE_TAG;
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(tag)) {
    throw new Error(`BELAY_BASE_TAG=${JSON.stringify(tag.slice(0, 60))}: not an image tag (letters, digits, '_', '.', '-'; at most 128)`);
  }
  return `localhost/belay-base:${tag}`;
}

/** Why BELAY_BASE_TAG was not used (a tag no image may have): building the base image says so. */
const BASE_TAG_ERROR: string | undefined = (() => {
  try {
    baseImageName();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
})();
/** The base image; the default name when BELAY_BASE_TAG is not a tag (loading Belay never fails for it). */
export const BASE_IMAGE = BASE_TAG_ERROR === undefined ? baseImageName() : `localhost/belay-base:${DEFAULT_BASE_TAG}`;
/**
 * What the base holds: a shell and the tools agents and tests assume; libstdc++ lets a host's
 * Node run inside; git for the agents of repository tasks (they commit and diff); procps (ps,
 * pkill), which Claude Code calls; pip to install an agent's requirements.txt.
 */
export const BASE_PACKAGES = ['bash', 'coreutils', 'python3', 'libstdc++6', 'git', 'procps', 'python3-pip'] as const;
export const DEFAULT_MIRROR = 'http://deb.debian.org/debian';
const SUITE = 'bookworm';
/** The label that holds the recipe's hash on the image. */
export const RECIPE_LABEL = 'belay.base.recipe';

/** Slims the root file system: no manuals, translations or documentation beyond the licences. */
const DPKG_OPTIONS = [
  'path-exclude=/usr/share/man/*',
  'path-exclude=/usr/share/locale/*',
  'path-include=/usr/share/locale/locale.alias',
  'path-exclude=/usr/share/doc/*',
  'path-include=/usr/share/doc/*/copyright',
];

/** The image's settings, applied on import (an imported tar has none). */
const IMAGE_CHANGES = [
  'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  'ENV LANG=C.UTF-8',
  'WORKDIR /app',
  'CMD ["/bin/bash"]',
];

export interface BaseRecipe {
  suite: string;
  mirror: string;
  packages: readonly string[];
}

/** The mmdebstrap command line that makes the root file system as a tar at `output`. */
export function mmdebstrapArgs(recipe: BaseRecipe, output: string): string[] {
  return [
    '--variant=minbase',
    `--include=${recipe.packages.join(',')}`,
    '--aptopt=Acquire::Languages "none"',
    ...DPKG_OPTIONS.map((option) => `--dpkgopt=${option}`),
    '--customize-hook=mkdir -p "$1/app"',
    recipe.suite,
    output,
    recipe.mirror,
  ];
}

/** A short hash of everything that decides the image's content (and of how Belay makes it). */
export function recipeHash(recipe: BaseRecipe): string {
  const text = JSON.stringify({ v: 1, ...recipe, args: mmdebstrapArgs(recipe, 'OUT'), changes: IMAGE_CHANGES });
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/** Where the root file system tars are kept between builds: $XDG_CACHE_HOME/belay, else ~/.cache/belay. */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'belay');
}

export interface BuildBaseOptions {
  engine: Engine;
  /** The image's name (default BASE_IMAGE). */
  image?: string;
  /** Holds the root file system's tar between builds. */
  cacheDir: string;
  mirror?: string;
  /** Rebuild from Debian packages even when the image or the cached tar is there. */
  force?: boolean;
  /** mmdebstrap's and the engine's output, as it comes. */
  onOutput?: (chunk: string) => void;
  /** Says what is being done, one line at a time. */
  onStep?: (line: string) => void;
  signal?: AbortSignal;
  /** The mmdebstrap program (default: found on PATH). */
  mmdebstrap?: string;
  /** Longest time mmdebstrap may take (default 30 min). */
  timeoutMs?: number;
}

export interface BuildBaseResult {
  image: string;
  recipe: string;
  /** 'image': it was there already; 'rootfs': imported from the cached tar; 'packages': made from Debian packages. */
  source: 'image' | 'rootfs' | 'packages';
  seconds: number;
  rootfs: string;
}

/** The recipe hash the image carries, or undefined when there is no such image. */
async function imageRecipe(engine: Engine, image: string, signal?: AbortSignal): Promise<string | undefined> {
  if (!(await engine.imageExists(image, signal))) return undefined;
  const out = await engine.check(['image', 'inspect', '--format', `{{index .Config.Labels "${RECIPE_LABEL}"}}`, image], { timeoutMs: 60_000, ...(signal ? { signal } : {}) });
  return out.trim();
}

/** Builds (or finds) the base image; see the module comment for the caches. */
export async function buildBaseImage(options: BuildBaseOptions): Promise<BuildBaseResult> {
  if (BASE_TAG_ERROR !== undefined && options.image === undefined) throw new Error(BASE_TAG_ERROR);
  const started = performance.now();
  const { engine, signal } = options;
  const image = options.image ?? BASE_IMAGE;
  const recipe: BaseRecipe = { suite: SUITE, mirror: options.mirror ?? DEFAULT_MIRROR, packages: BASE_PACKAGES };
  const hash = recipeHash(recipe);
  const rootfs = path.join(options.cacheDir, `belay-base-${SUITE}-${hash}.tar`);
  const done = (source: BuildBaseResult['source']): BuildBaseResult => ({ image, recipe: hash, source, seconds: (performance.now() - started) / 1000, rootfs });
  const step = (line: string) => options.onStep?.(line);

  if (!options.force && (await imageRecipe(engine, image, signal)) === hash) return done('image');
  let source: BuildBaseResult['source'] = 'rootfs';
  if (options.force || !existsSync(rootfs)) {
    source = 'packages';
    await makeRootfs(recipe, rootfs, options, step);
  } else step(`importing the cached root file system ${rootfs}`);
  const changes = [...IMAGE_CHANGES, `LABEL ${RECIPE_LABEL}=${hash}`].flatMap((change) => ['--change', change]);
  await engine.check(['import', ...changes, '--message', `belay image build-base (${recipe.packages.join(' ')})`, rootfs, image], {
    timeoutMs: 10 * 60_000,
    ...(options.onOutput ? { onOutput: options.onOutput } : {}),
    ...(signal ? { signal } : {}),
  });
  return done(source);
}

async function makeRootfs(recipe: BaseRecipe, rootfs: string, options: BuildBaseOptions, step: (line: string) => void): Promise<void> {
  const program = options.mmdebstrap ?? findProgram('mmdebstrap', process.env.PATH);
  if (!program) throw new Error('mmdebstrap not found: it makes the base image from Debian packages (Debian/Ubuntu: apt-get install mmdebstrap)');
  await fs.mkdir(options.cacheDir, { recursive: true });
  // Written aside and renamed: an interrupted build never leaves a tar that looks complete
  // (the name ends in .tar: mmdebstrap chooses its output format by the extension).
  const partial = `${rootfs.slice(0, -4)}.${randomBytes(4).toString('hex')}.partial.tar`;
  const timeoutMs = options.timeoutMs ?? 30 * 60_000;
  step(`making a Debian ${recipe.suite} root file system (${recipe.packages.join(', ')}) from ${recipe.mirror} with mmdebstrap; the first build takes a few minutes`);
  try {
    const result = await runBounded({
      argv: [program, ...mmdebstrapArgs(recipe, partial)],
      cwd: options.cacheDir,
      env: { ...process.env, LC_ALL: 'C.UTF-8' },
      timeoutMs,
      maxOutputChars: 32_000,
      keepTailChars: 32_000,
      ...(options.onOutput ? { onStdout: options.onOutput, onStderr: options.onOutput } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (result.exitCode !== 0) throw new Error(`mmdebstrap failed: ${failureText(result, timeoutMs)}`);
    await fs.rename(partial, rootfs);
  } finally {
    await fs.rm(partial, { force: true });
  }
}
