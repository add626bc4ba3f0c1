// The executor's wire format (native/executor.c says the same at its top): frames both ways over
// the one channel, each
//
//   u32 length   big-endian: the bytes that follow (1 + 4 + payload), payload at most 4 MiB
//   u8  type     FrameType
//   u32 id       big-endian: the command, stream, listener or kill-all request (0: none)
//   ...payload
//
// Belay picks the ids of what it asks for (1 .. 2^31-1, never reused); the executor picks the
// ids of connections accepted on a listener (2^31 and up). Whoever sends data (output, stdin,
// stream bytes) keeps at most the receiver's window in flight (WINDOW_INITIAL per command's
// output, per command's stdin and per stream direction) and gets it back through WINDOW frames
// as the receiver consumes. Pure: no I/O here.

export const FrameType = {
  // Belay -> executor
  spawn: 1,
  stdin: 2,
  stdinEof: 3,
  kill: 4,
  connect: 5,
  listen: 6,
  unlisten: 7,
  killAll: 8,
  // both ways
  data: 16,
  eof: 17,
  close: 18,
  window: 19,
  // executor -> Belay
  ready: 32,
  spawned: 33,
  spawnFailed: 34,
  stdout: 35,
  stderr: 36,
  exit: 37,
  connected: 38,
  connectFailed: 39,
  listening: 40,
  listenFailed: 41,
  accepted: 42,
  killAllDone: 43,
  error: 44,
} as const;
export type FrameType = (typeof FrameType)[keyof typeof FrameType];

export const PROTOCOL_VERSION = 1;
export const HEADER_BYTES = 9;
export const MAX_PAYLOAD = 4 * 1024 * 1024;
/** Bytes in flight per command's output, per command's stdin, per stream direction. */
export const WINDOW_INITIAL = 256 * 1024;
/** Data is sent in frames of at most this many bytes. */
export const DATA_CHUNK = 32 * 1024;
/** Ids at and above this are the executor's own (accepted connections). */
export const ACCEPTED_BASE = 0x80000000;
export const MAX_ID = 0x7fffffff;

export interface Frame {
  type: number;
  id: number;
  payload: Buffer;
}

export function encodeFrame(type: number, id: number, payload: Uint8Array = Buffer.alloc(0)): Buffer {
  if (payload.length > MAX_PAYLOAD) throw new RangeError(`a frame of ${payload.length} bytes is over the ${MAX_PAYLOAD} a frame may carry`);
  const frame = Buffer.allocUnsafe(HEADER_BYTES + payload.length);
  frame.writeUInt32BE(payload.length + 5, 0);
  frame.writeUInt8(type, 4);
  frame.writeUInt32BE(id >>> 0, 5);
  frame.set(payload, HEADER_BYTES);
  return frame;
}

export function u32(value: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(value >>> 0, 0);
  return b;
}

export function u16(value: number): Buffer {
  const b = Buffer.allocUnsafe(2);
  b.writeUInt16BE(value, 0);
  return b;
}

/**
 * Cuts a byte stream into frames. It holds at most one frame's bytes (a broken length is an
 * error, not a wait for 4 GiB); `push` returns the whole frames so far.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private held = 0;

  push(bytes: Buffer): Frame[] {
    if (bytes.length > 0) {
      this.chunks.push(bytes);
      this.held += bytes.length;
    }
    const frames: Frame[] = [];
    while (this.held >= 4) {
      const head = this.peek(4);
      const length = head.readUInt32BE(0);
      if (length < 5 || length - 5 > MAX_PAYLOAD) throw new Error(`a frame with a length of ${length} (must be 5 to ${MAX_PAYLOAD + 5})`);
      if (this.held < 4 + length) break;
      const frame = this.take(4 + length);
      frames.push({ type: frame.readUInt8(4), id: frame.readUInt32BE(5), payload: frame.subarray(HEADER_BYTES) });
    }
    return frames;
  }

  /** Bytes of an incomplete frame held. */
  get pending(): number {
    return this.held;
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length >= n) return this.chunks[0]!;
    const joined = Buffer.concat(this.chunks);
    this.chunks = [joined];
    return joined;
  }

  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const frame = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.held = rest.length;
    return frame;
  }
}

/** What a spawn frame carries. */
export interface SpawnRequest {
  argv: readonly string[];
  cwd: string;
  env: Record<string, string>;
  stdinPipe: boolean;
  /** 0: none; at most 2^32-1. */
  timeoutMs: number;
  /** 0: no limit. */
  maxFileBytes: number;
}

/**
 * The spawn payload: u32 flags (1: stdin is a pipe), u32 timeout ms, u32 and u32 the file size
 * limit (high, low), u32 argc, u32 envc, then strings (u32 length, UTF-8 bytes): cwd, argv,
 * env as NAME=value. Throws a one-line error for what no process could be given (a NUL, a '='
 * in a name, an empty argv, a request over one frame).
 */
export function encodeSpawn(request: SpawnRequest): Buffer {
  if (request.argv.length === 0) throw new Error('no program to run (an empty argv)');
  const strings: Buffer[] = [];
  const add = (what: string, text: string) => {
    if (text.includes('\0')) throw new Error(`${what} holds a NUL character`);
    const bytes = Buffer.from(text, 'utf8');
    strings.push(u32(bytes.length), bytes);
  };
  add('the working folder', request.cwd);
  request.argv.forEach((arg, i) => add(`argument ${i}`, arg));
  const env = Object.entries(request.env);
  for (const [name, value] of env) {
    if (name === '' || name.includes('=')) throw new Error(`the environment variable name ${JSON.stringify(name)} is empty or holds '='`);
    add(`the environment variable ${name}`, `${name}=${value}`);
  }
  const head = Buffer.alloc(24);
  head.writeUInt32BE(request.stdinPipe ? 1 : 0, 0);
  head.writeUInt32BE(Math.min(Math.max(0, Math.ceil(request.timeoutMs)), 0xffffffff), 4);
  const fsize = Math.max(0, Math.floor(request.maxFileBytes));
  head.writeUInt32BE(Math.floor(fsize / 2 ** 32) >>> 0, 8);
  head.writeUInt32BE(fsize % 2 ** 32 >>> 0, 12);
  head.writeUInt32BE(request.argv.length, 16);
  head.writeUInt32BE(env.length, 20);
  const payload = Buffer.concat([head, ...strings]);
  if (payload.length > MAX_PAYLOAD) throw new Error(`the command's arguments and environment take ${payload.length} bytes, over the ${MAX_PAYLOAD} one request may carry`);
  return payload;
}

/** The inverse of `encodeSpawn` (the tests' view of what the executor reads); throws on a malformed payload. */
export function decodeSpawn(payload: Buffer): SpawnRequest {
  if (payload.length < 24) throw new Error('a spawn payload shorter than its head');
  const flags = payload.readUInt32BE(0);
  const timeoutMs = payload.readUInt32BE(4);
  const maxFileBytes = payload.readUInt32BE(8) * 2 ** 32 + payload.readUInt32BE(12);
  const argc = payload.readUInt32BE(16);
  const envc = payload.readUInt32BE(20);
  let at = 24;
  const next = () => {
    if (at + 4 > payload.length) throw new Error('a spawn payload cut short');
    const n = payload.readUInt32BE(at);
    at += 4;
    if (at + n > payload.length) throw new Error('a spawn payload cut short');
    const text = payload.toString('utf8', at, at + n);
    at += n;
    return text;
  };
  const cwd = next();
  const argv = Array.from({ length: argc }, next);
  const env: Record<string, string> = {};
  for (let i = 0; i < envc; i++) {
    const entry = next();
    const eq = entry.indexOf('=');
    env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  if (at !== payload.length) throw new Error('a spawn payload with bytes after its strings');
  return { argv, cwd, env, stdinPipe: (flags & 1) === 1, timeoutMs, maxFileBytes };
}

/** How a command ended: its code, or the signal that ended it (the whole tree was killed then). */
export interface ExitReport {
  exitCode: number | null;
  signalNumber: number | null;
  timedOut: boolean;
}

/** The exit payload: u8 kind (0: code, 1: signal), i32 value, u8 timed out. */
export function decodeExit(payload: Buffer): ExitReport {
  if (payload.length !== 6) throw new Error(`an exit report of ${payload.length} bytes (6 expected)`);
  const kind = payload.readUInt8(0);
  const value = payload.readInt32BE(1);
  const timedOut = payload.readUInt8(5) === 1;
  if (kind === 0) return { exitCode: value, signalNumber: null, timedOut };
  if (kind === 1) return { exitCode: null, signalNumber: value, timedOut };
  throw new Error(`an exit report of kind ${kind}`);
}

export function encodeExit(report: ExitReport): Buffer {
  const b = Buffer.alloc(6);
  b.writeUInt8(report.exitCode === null ? 1 : 0, 0);
  b.writeInt32BE(report.exitCode ?? report.signalNumber ?? 9, 1);
  b.writeUInt8(report.timedOut ? 1 : 0, 5);
  return b;
}

/** A line from the other side (a failure, an error), at most `max` characters and one line. */
export function oneLine(payload: Buffer, max = 500): string {
  const text = payload.toString('utf8').replace(/[\r\n]+/g, ' ').replace(/[\u0000-\u001f\u007f]/g, '?');
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
