// A task's environment as an image: found in the task (environment/Dockerfile, the older
// layout's Dockerfile or the main service of its docker-compose.yaml), built once per content
// of its build context (the tag carries the context's hash, so an unchanged task is found
// again), the build log kept with the run, and a failing build named by its Dockerfile line.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, promises as fs, writeSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as z from 'zod';
import { errorMessage } from '../../../shared/errors.ts';
import { waitForLock } from '../../../shared/pidLock.ts';
import { BoundedText } from '../../../shared/process.ts';
import { failureText, type Engine } from './engine.ts';
import { BASE_IMAGE } from './image-base.ts';

/** Where a task's image comes from. */
export type ImageSource =
  /** Built from a Dockerfile in a context folder. */
  | { kind: 'dockerfile'; dockerfile: string; context: string; /** The file that named it (the compose file, or the Dockerfile). */ origin: string }
  /** An image named by the compose file, used as it is. */
  | { kind: 'image'; image: string; origin: string }
  /** No Docker files: the base image, seeded with the task's environment folder. */
  | { kind: 'base' };

const ComposeBuildSchema = z.union([z.string(), z.looseObject({ context: z.string().optional(), dockerfile: z.string().optional() })]);
const ComposeSchema = z.looseObject({
  services: z.record(z.string(), z.looseObject({ build: ComposeBuildSchema.optional(), image: z.string().optional(), container_name: z.string().optional() }).nullable()),
});

/**
 * The service a harness runs the agent in: Terminal-Bench names it `client` (its container is
 * `${T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME}`); otherwise the first that builds, else the first.
 */
export function mainService(services: Record<string, { build?: unknown; container_name?: string | undefined } | null>): string | undefined {
  const names = Object.keys(services);
  return (
    names.find((n) => n === 'client') ??
    names.find((n) => /CLIENT/.test(services[n]?.container_name ?? '')) ??
    names.find((n) => services[n]?.build !== undefined) ??
    names[0]
  );
}

/** Finds how the task's image is made; a compose file that says nothing usable is an error naming it. */
export async function imageSource(taskDir: string, layout: 'current' | 'legacy' | 'repo'): Promise<ImageSource> {
  if (layout !== 'legacy') {
    const dockerfile = path.join(taskDir, 'environment', 'Dockerfile');
    return existsSync(dockerfile) ? { kind: 'dockerfile', dockerfile, context: path.dirname(dockerfile), origin: dockerfile } : { kind: 'base' };
  }
  for (const name of ['docker-compose.yaml', 'docker-compose.yml']) {
    const file = path.join(taskDir, name);
    if (existsSync(file)) return composeSource(file);
  }
  const dockerfile = path.join(taskDir, 'Dockerfile');
  return existsSync(dockerfile) ? { kind: 'dockerfile', dockerfile, context: taskDir, origin: dockerfile } : { kind: 'base' };
}

/**
 * The task's own image: the prebuilt `[environment] docker_image` when the engine holds it (as
 * Harbor uses it, without building); else what the task's Docker files build, with a notice that
 * the named image was not there; with no Docker files, the named image (whose absence `taskImage`
 * reports in one line: Belay never pulls).
 */
export async function taskImageSource(
  engine: Pick<Engine, 'name' | 'imageExists'>,
  task: { dir: string; layout: 'current' | 'legacy' | 'repo'; environment: { dockerImage?: string } },
  onNotice?: (message: string) => void,
  signal?: AbortSignal,
): Promise<ImageSource> {
  const built = await imageSource(task.dir, task.layout);
  const named = task.environment.dockerImage;
  if (named === undefined) return built;
  const origin = path.join(task.dir, 'task.toml');
  if (await engine.imageExists(named, signal)) return { kind: 'image', image: named, origin };
  if (built.kind === 'dockerfile') {
    onNotice?.(`the task names the image ${named}, which ${engine.name} does not hold (Belay does not pull images): building ${path.relative(task.dir, built.origin)} instead`);
    return built;
  }
  return { kind: 'image', image: named, origin };
}

async function composeSource(file: string): Promise<ImageSource> {
  const { parseTaskYaml } = await import('../tasks/taskFormats.ts');
  let raw: unknown;
  try {
    raw = parseTaskYaml(await fs.readFile(file, 'utf8'));
  } catch (error) {
    throw new Error(`${file}: ${errorMessage(error)}`);
  }
  const parsed = ComposeSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`${file}: field '${parsed.error.issues[0]!.path.join('.')}': ${parsed.error.issues[0]!.message}`);
  const name = mainService(parsed.data.services);
  const service = name !== undefined ? parsed.data.services[name] : undefined;
  if (!service) throw new Error(`${file}: no service to run the agent in`);
  const dir = path.dirname(file);
  if (service.build !== undefined) {
    const build = typeof service.build === 'string' ? { context: service.build } : service.build;
    const context = path.resolve(dir, build.context ?? '.');
    const dockerfile = path.resolve(context, build.dockerfile ?? 'Dockerfile');
    if (!isInside(dir, context) || !isInside(dir, dockerfile)) throw new Error(`${file}: service '${name}' builds from outside the task folder`);
    return { kind: 'dockerfile', dockerfile, context, origin: file };
  }
  if (service.image && !service.image.includes('${')) return { kind: 'image', image: service.image, origin: file };
  throw new Error(`${file}: service '${name}' has neither a build nor an image Belay can use`);
}

function isInside(dir: string, target: string): boolean {
  const relative = path.relative(dir, target);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** A hash of everything in the build context (names, kinds, executable bits, contents) and of the Dockerfile. */
export async function contextHash(context: string, dockerfile: string): Promise<string> {
  const hash = createHash('sha256');
  hash.update(`belay-context-v1\0${path.relative(context, dockerfile)}\0`);
  hash.update(await fs.readFile(dockerfile));
  const walk = async (dir: string): Promise<void> => {
    const entries = (await fs.readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      const rel = path.relative(context, full);
      if (entry.isSymbolicLink()) hash.update(`L\0${rel}\0${await fs.readlink(full)}\0`);
      else if (entry.isDirectory()) {
        hash.update(`D\0${rel}\0`);
        await walk(full);
      } else if (entry.isFile()) {
        const stat = await fs.stat(full);
        hash.update(`F\0${rel}\0${stat.mode & 0o111 ? 'x' : '-'}\0${stat.size}\0`);
        hash.update(await fs.readFile(full));
      }
    }
  };
  await walk(context);
  return hash.digest('hex').slice(0, 16);
}

/** The image name of a task's build: its name made safe, the context's hash as the tag. */
export function taskImageName(taskName: string, hash: string): string {
  const slug = taskName.toLowerCase().replace(/[^a-z0-9._-]+/g, '-').replace(/^[^a-z0-9]+/, '').slice(0, 60) || 'task';
  return `localhost/belay-task-${slug}:${hash}`;
}

export interface DockerfileInstruction {
  /** 1-based line where the instruction starts. */
  line: number;
  keyword: string;
  /** The instruction's text, continuation lines joined. */
  text: string;
}

/** The instructions of a Dockerfile with the line each starts on (comments, continuations and heredocs understood). */
export function dockerfileInstructions(text: string): DockerfileInstruction[] {
  const lines = text.split(/\r?\n/);
  let escape = '\\';
  const directive = /^#\s*escape\s*=\s*([\\`])\s*$/i;
  for (const line of lines) {
    const m = directive.exec(line);
    if (m) escape = m[1]!;
    else if (!/^#\s*\w+\s*=/.test(line)) break;
  }
  const instructions: DockerfileInstruction[] = [];
  let current: DockerfileInstruction | undefined;
  let heredoc: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (heredoc !== undefined) {
      if (line.trim() === heredoc) heredoc = undefined;
      continue;
    }
    const trimmed = line.trim();
    if (current === undefined) {
      if (trimmed === '' || trimmed.startsWith('#')) continue;
      current = { line: i + 1, keyword: trimmed.split(/\s+/, 1)[0]!.toUpperCase(), text: '' };
    } else if (trimmed.startsWith('#')) continue;
    const continues = trimmed.endsWith(escape);
    current.text += (current.text ? ' ' : '') + (continues ? trimmed.slice(0, -1).trim() : trimmed);
    if (!continues) {
      const doc = /<<-?["']?([A-Za-z_][\w]*)["']?/.exec(current.text);
      if (doc && ['RUN', 'COPY', 'ADD'].includes(current.keyword)) heredoc = doc[1];
      instructions.push(current);
      current = undefined;
    }
  }
  if (current) instructions.push(current);
  return instructions;
}

/**
 * The instruction a failed build stopped at, read from the engine's log: podman/buildah print
 * `[stage/stages] STEP n/m: …`, docker's classic builder `Step n/m : …`, BuildKit `Dockerfile:LINE`.
 */
export function failedInstruction(log: string, dockerfileText: string): DockerfileInstruction | undefined {
  const instructions = dockerfileInstructions(dockerfileText);
  const buildkit = [...log.matchAll(/Dockerfile:(\d+)\b/g)].at(-1);
  if (buildkit) {
    const line = Number(buildkit[1]);
    return instructions.findLast((instruction) => instruction.line <= line);
  }
  const steps = [...log.matchAll(/^(?:\[(\d+)\/\d+\]\s+)?STEP (\d+)\/\d+:|^Step (\d+)\/\d+ :/gim)];
  const last = steps.at(-1);
  if (!last) return undefined;
  if (last[3] !== undefined) return instructions[Number(last[3]) - 1];
  // buildah numbers the steps of each stage from 1 (its FROM); stages are counted from 1 too.
  const stage = Number(last[1] ?? '1');
  const step = Number(last[2]);
  const starts = instructions.map((instruction, index) => (instruction.keyword === 'FROM' ? index : -1)).filter((index) => index >= 0);
  const start = starts[stage - 1] ?? 0;
  return instructions[start + step - 1];
}

/** A file log capped on disk: the first `limit` bytes, then a marker, then the last ones. */
export class CappedLog {
  private readonly fd: number;
  private written = 0;
  private readonly tail: BoundedText;
  private readonly limit: number;

  constructor(file: string, limit: number) {
    this.fd = openSync(file, 'w');
    this.limit = limit;
    this.tail = new BoundedText(0, Math.floor(limit / 4));
  }

  write(chunk: string): void {
    const room = this.limit - this.written;
    if (room > 0) {
      const part = chunk.slice(0, room);
      writeSync(this.fd, part);
      this.written += part.length;
      chunk = chunk.slice(room);
    }
    if (chunk.length > 0) this.tail.append(chunk);
  }

  close(): void {
    if (this.tail.length > 0) writeSync(this.fd, this.tail.text(`\n[… ${this.tail.length - Math.min(this.tail.length, Math.floor(this.limit / 4))} characters of the log omitted …]`));
    closeSync(this.fd);
  }
}

/** How much a build context of a verifier's image (a task's tests/) may hold: it is read whole, hashed and sent to the engine. */
export const VERIFIER_CONTEXT_BOUNDS = { maxBytes: 256 * 1024 * 1024, maxEntries: 20_000 };

/**
 * Refuses, in one line naming the path, a build context that is or holds a link (one out of the
 * folder would send the host's files to the build), anything but files and folders, or more
 * than the bounds; nothing is read but names and sizes.
 */
export async function checkBuildContext(context: string, dockerfile: string, bounds: { maxBytes: number; maxEntries: number }, name: (file: string) => string): Promise<void> {
  for (const top of [context, dockerfile]) {
    const stat = await fs.lstat(top).catch(() => undefined);
    if (stat === undefined) throw new Error(`${name(top)}: not there`);
    if (stat.isSymbolicLink()) throw new Error(`${name(top)}: a symlink: a build context and its Dockerfile must be the task's own files, not links`);
  }
  let bytes = 0;
  let entries = 0;
  const stack = [context];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (++entries > bounds.maxEntries) throw new Error(`${name(context)}: more than ${bounds.maxEntries} entries in the build context: refused`);
      if (entry.isSymbolicLink()) throw new Error(`${name(full)}: a symlink in the build context: refused (its files must be the task's own)`);
      if (entry.isDirectory()) stack.push(full);
      else if (entry.isFile()) {
        bytes += (await fs.lstat(full)).size;
        if (bytes > bounds.maxBytes) throw new Error(`${name(context)}: more than ${bounds.maxBytes} bytes in the build context: refused`);
      } else throw new Error(`${name(full)}: neither a file nor a folder in the build context: refused`);
    }
  }
}

export interface TaskImageOptions {
  engine: Engine;
  taskName: string;
  source: Exclude<ImageSource, { kind: 'base' }>;
  /** Receives the build's output (capped). */
  logFile: string;
  logLimitChars?: number;
  timeoutMs: number;
  /** Progress worth a line, e.g. "building …". */
  onNotice?: (message: string) => void;
  signal?: AbortSignal;
  /** The task folder, to name files relative to it in messages. */
  taskDir: string;
  /** When given, the build context is checked first (`checkBuildContext`): a verifier's tests/ is. */
  contextBounds?: { maxBytes: number; maxEntries: number };
}

export interface TaskImage {
  image: string;
  /** Found in the engine's storage with this context's hash: nothing was built. */
  cached: boolean;
}

/** Builds (or finds) the task's image; a failure is an Error naming the Dockerfile line. */
export async function taskImage(options: TaskImageOptions): Promise<TaskImage> {
  const { engine, source, signal } = options;
  const name = (file: string) => path.relative(options.taskDir, file) || file;
  if (source.kind === 'image') {
    if (await engine.imageExists(source.image, signal)) return { image: source.image, cached: true };
    throw new Error(`${name(source.origin)}: the image ${source.image} is not in ${engine.name}'s storage, and Belay does not pull images: pull it first (${engine.name} pull ${source.image})`);
  }
  if (options.contextBounds) await checkBuildContext(source.context, source.dockerfile, options.contextBounds, name);
  const dockerfileText = await fs.readFile(source.dockerfile, 'utf8');
  const image = taskImageName(options.taskName, await contextHash(source.context, source.dockerfile));
  if (await engine.imageExists(image, signal)) return foundBuilt(image, options.logFile);
  // Attempts of one task (a job's, or another process's) build its image once: the others wait here.
  const lock = await waitForLock(path.join(os.tmpdir(), `belay-build-${createHash('sha256').update(image).digest('hex').slice(0, 16)}.lock`), signal);
  try {
    if (await engine.imageExists(image, signal)) return foundBuilt(image, options.logFile);
    return await buildImage(options, source, image, dockerfileText);
  } finally {
    await lock.release();
  }
}

async function foundBuilt(image: string, logFile: string): Promise<TaskImage> {
  await fs.writeFile(logFile, `${image}: built before from the same build context; nothing to build\n`);
  return { image, cached: true };
}

async function buildImage(options: TaskImageOptions, source: Extract<ImageSource, { kind: 'dockerfile' }>, image: string, dockerfileText: string): Promise<TaskImage> {
  const { engine, signal } = options;
  const name = (file: string) => path.relative(options.taskDir, file) || file;
  const from = dockerfileInstructions(dockerfileText).find((instruction) => instruction.keyword === 'FROM');
  if (from && from.text.split(/\s+/).includes(BASE_IMAGE) && !(await engine.imageExists(BASE_IMAGE, signal))) {
    throw new Error(`${name(source.dockerfile)}:${from.line}: ${BASE_IMAGE} is not built yet: run 'belay image build-base' once (it makes the image from Debian packages)`);
  }
  options.onNotice?.(`building the task's image ${image} from ${name(source.dockerfile)} with ${engine.name}`);
  const log = new CappedLog(options.logFile, options.logLimitChars ?? 2_000_000);
  let result;
  try {
    result = await engine.run(
      ['build', ...engine.isolationFlags(), '--file', source.dockerfile, '--tag', image, '--label', `belay.task=${options.taskName}`, source.context],
      { timeoutMs: options.timeoutMs, maxOutputChars: 200_000, onOutput: (chunk) => log.write(chunk), ...(signal ? { signal } : {}) },
    );
  } finally {
    log.close();
  }
  if (result.exitCode === 0) return { image, cached: false };
  if (result.timedOut) throw new Error(`${name(source.dockerfile)}: the image build did not finish within ${Math.round(options.timeoutMs / 1000)} s (build log: ${options.logFile})`);
  if (result.aborted) throw new Error('the image build was stopped');
  const output = `${result.stdout.text('…')}\n${result.stderr.text('…')}`;
  const failed = failedInstruction(output, dockerfileText);
  const said = buildFailureSummary(failureText(result, options.timeoutMs));
  const where = failed ? `${name(source.dockerfile)}:${failed.line}: ${failed.text.length > 120 ? `${failed.text.slice(0, 119)}…` : failed.text}` : name(source.dockerfile);
  throw new Error(`${where}: the image build failed: ${said} (build log: ${options.logFile})`);
}

/**
 * The last lines of a failed build's output, in the same words for both engines: docker's
 * legacy builder's notices dropped, and its "returned a non-zero code: N" said as podman says it
 * ("exit status N").
 */
export function buildFailureSummary(output: string): string {
  const lines = output
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !/DEPRECATED: The legacy builder|Install the buildx component|docs\.docker\.com\/go\/buildx|BuildKit is currently disabled/.test(line))
    .map((line) => line.replace(/returned a non-zero code: (\d+)$/, 'returned a non-zero code: $1 (exit status $1)'));
  return lines.slice(-3).join(' ');
}
