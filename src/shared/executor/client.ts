// Belay's side of the executor (contract.ts): starts the transport, whose stdin and stdout are the
// channel, and speaks wire.ts over it. Every command, connection and listener is one id on the
// channel; output is handed on as UTF-8 text (split characters kept whole) and its window given
// back once handed on, so the executor never has more than a window per command in flight.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import { Duplex } from 'node:stream';
import type { Readable, Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { ChildEnd, RunningChild } from '../process.ts';
import type { Executor, ExecutorCommand, ExecutorTransport } from './contract.ts';
import {
  ACCEPTED_BASE,
  DATA_CHUNK,
  decodeExit,
  encodeFrame,
  encodeSpawn,
  FrameDecoder,
  FrameType,
  MAX_ID,
  oneLine,
  PROTOCOL_VERSION,
  u16,
  u32,
  WINDOW_INITIAL,
  type Frame,
} from './wire.ts';

export interface ExecutorOptions {
  /** How long the executor may take to say it is ready (default 30 s: a cold `podman exec`). */
  readyTimeoutMs?: number;
  /**
   * How long `close` waits for the kill-all and the executor's end before it kills the transport
   * (default 10 s): an executor stopped by a command (SIGSTOP) answers nothing.
   */
  closeTimeoutMs?: number;
}

/** A listener inside the environment; `port` is the one bound (useful with port 0). */
export interface ExecutorListener {
  readonly port: number;
  close(): Promise<void>;
}

/** How a command ended, as `ended` gives it: the process layer's, and whether its own timeout ended it. */
export interface ExecutorEnd extends ChildEnd {
  /** Set when `timeoutMs` passed and the executor killed the tree (`signal` is then SIGKILL). */
  timedOut?: true;
}

/** The executor as this client gives it: the contract, and the port a listener got. */
export interface ChannelExecutor extends Executor {
  listen(port: number, onConnection: (stream: Duplex) => void): Promise<ExecutorListener>;
  /** The executor's own process id inside its environment. */
  readonly pid: number;
}

const signalNames = new Map<number, NodeJS.Signals>(
  Object.entries(osConstants.signals).map(([name, number]) => [number, name as NodeJS.Signals]),
);

/** A spawn failure line from the executor as an Error, its errno name (the line's last `(E…)`) as `code`. */
function spawnError(line: string): Error {
  const error: NodeJS.ErrnoException = new Error(line);
  const code = /\((E[A-Z0-9]+)\)$/.exec(line)?.[1];
  if (code) error.code = code;
  return error;
}

/**
 * Starts the executor through `transport` and resolves once it said it is ready; rejects with one
 * line when it cannot start (the transport's first line of stderr, or how it ended).
 */
export function startExecutor(transport: ExecutorTransport, options: ExecutorOptions = {}): Promise<ChannelExecutor> {
  return new Promise((resolve, reject) => {
    const [program, ...args] = transport.argv;
    let child: ChildProcessByStdio<Writable, Readable, Readable>;
    try {
      // Its own process group: a Ctrl+C in Belay's terminal reaches Belay, which decides. When
      // Belay dies, the channel ends and the executor kills everything it started.
      child = spawn(program, args, { cwd: transport.cwd, env: transport.env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    } catch (error) {
      reject(new Error(`${program}: ${(error as Error).message.split('\n', 1)[0]}`));
      return;
    }
    const client = new Client(child, program, options.closeTimeoutMs ?? 10_000);
    const timer = setTimeout(() => {
      client.abandon(`${program}: the executor did not say it was ready within ${options.readyTimeoutMs ?? 30_000} ms`);
    }, options.readyTimeoutMs ?? 30_000);
    timer.unref();
    client.ready.then(
      () => {
        clearTimeout(timer);
        resolve(client);
      },
      (error: Error) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

interface CommandState {
  command: ExecutorCommand;
  pid: number | undefined;
  out: StringDecoder;
  err: StringDecoder;
  /** Stdin bytes not yet sent (the executor's window is full). */
  input: Buffer[];
  inputWindow: number;
  inputEnd: boolean;
  inputEofSent: boolean;
  resolve(end: ChildEnd): void;
}

class Client implements ChannelExecutor {
  pid = 0;
  readonly ready: Promise<void>;
  readonly closed: Promise<{ reason: string }>;
  private resolveReady!: () => void;
  private rejectReady!: (error: Error) => void;
  private resolveClosed!: (value: { reason: string }) => void;
  private isClosed = false;
  private closeReason: string | undefined;
  private readonly decoder = new FrameDecoder();
  private nextId = 1;
  private readonly commands = new Map<number, CommandState>();
  private readonly streams = new Map<number, ChannelStream>();
  private readonly connects = new Map<number, { stream: ChannelStream; resolve(stream: Duplex): void; reject(error: Error): void }>();
  private readonly listens = new Map<number, { resolve(listener: ExecutorListener): void; reject(error: Error): void; onConnection(stream: Duplex): void }>();
  private readonly listeners = new Map<number, (stream: Duplex) => void>();
  private readonly killAlls = new Map<number, () => void>();
  private stderrTail = '';
  private readonly grants = new Map<number, number>();
  private closing: Promise<void> | undefined;

  private readonly child: ChildProcessByStdio<Writable, Readable, Readable>;
  private readonly program: string;

  private readonly closeTimeoutMs: number;

  constructor(child: ChildProcessByStdio<Writable, Readable, Readable>, program: string, closeTimeoutMs: number) {
    this.child = child;
    this.program = program;
    this.closeTimeoutMs = closeTimeoutMs;
    this.ready = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
    child.stdin.on('error', () => undefined);
    child.stdout.on('data', (bytes: Buffer) => this.receive(bytes));
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      this.stderrTail = (this.stderrTail + text).slice(-4096);
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      const reason = error.code === 'ENOENT' ? 'not found' : error.code === 'EACCES' ? 'not executable' : error.message.split('\n', 1)[0]!;
      this.end(`${program}: ${reason}${error.code && !reason.includes(error.code) ? ` (${error.code})` : ''}`);
    });
    child.on('close', (code, signal) => {
      const said = this.stderrTail.trim().split('\n').filter(Boolean).pop();
      this.end(this.closeReason ?? (said ? `${program}: ${said}` : `${program}: the executor ended (${signal ? `killed by ${signal}` : `exit code ${code}`})`));
    });
  }

  /** Gives up on the executor: one that never got ready, or whose channel can no longer answer. */
  abandon(reason: string): void {
    this.closeReason = reason;
    this.child.kill('SIGKILL');
    this.end(reason);
  }

  private id(): number {
    if (this.nextId > MAX_ID) throw new Error('the executor ran out of ids');
    return this.nextId++;
  }

  send(type: number, id: number, payload?: Uint8Array): void {
    if (this.isClosed) return;
    this.child.stdin.write(encodeFrame(type, id, payload));
  }

  private receive(bytes: Buffer): void {
    let frames: Frame[];
    try {
      frames = this.decoder.push(bytes);
    } catch (error) {
      this.closeReason = `${this.program}: the executor sent ${(error as Error).message}`;
      this.child.kill('SIGKILL');
      return;
    }
    // What the frames of one read cause goes out in one write: windows given back are summed per id.
    this.child.stdin.cork();
    try {
      for (const frame of frames) this.handle(frame);
    } finally {
      for (const [id, bytes] of this.grants) this.send(FrameType.window, id, u32(bytes));
      this.grants.clear();
      this.child.stdin.uncork();
    }
  }

  /** Gives `bytes` of window back to the executor for `id` (sent at the end of the current read). */
  grant(id: number, bytes: number): void {
    this.grants.set(id, (this.grants.get(id) ?? 0) + bytes);
  }

  private handle({ type, id, payload }: Frame): void {
    switch (type) {
      case FrameType.ready: {
        const version = payload.length >= 8 ? payload.readUInt32BE(0) : 0;
        if (version !== PROTOCOL_VERSION) {
          this.abandon(`${this.program}: the executor speaks protocol ${version}, Belay ${PROTOCOL_VERSION}`);
          return;
        }
        this.pid = payload.readUInt32BE(4);
        this.resolveReady();
        return;
      }
      case FrameType.spawned: {
        const command = this.commands.get(id);
        if (command && payload.length === 4) command.pid = payload.readUInt32BE(0);
        return;
      }
      case FrameType.stdout:
      case FrameType.stderr: {
        const command = this.commands.get(id);
        if (!command) return;
        if (type === FrameType.stdout) {
          const text = command.out.write(payload);
          if (text) command.command.onStdout?.(text);
        } else {
          const text = command.err.write(payload);
          if (text) command.command.onStderr?.(text);
        }
        this.grant(id, payload.length);
        return;
      }
      case FrameType.exit:
      case FrameType.spawnFailed: {
        const command = this.commands.get(id);
        if (!command) return;
        this.commands.delete(id);
        const tailOut = command.out.end();
        if (tailOut) command.command.onStdout?.(tailOut);
        const tailErr = command.err.end();
        if (tailErr) command.command.onStderr?.(tailErr);
        if (type === FrameType.spawnFailed) {
          command.resolve({ exitCode: null, signal: null, spawnError: spawnError(oneLine(payload)) });
        } else {
          const report = decodeExit(payload);
          const end: ExecutorEnd = { exitCode: report.exitCode, signal: report.signalNumber === null ? null : (signalNames.get(report.signalNumber) ?? 'SIGKILL') };
          if (report.timedOut) end.timedOut = true;
          command.resolve(end);
        }
        return;
      }
      case FrameType.window: {
        if (payload.length !== 4) return;
        const credit = payload.readUInt32BE(0);
        const command = this.commands.get(id);
        if (command) {
          command.inputWindow += credit;
          this.pumpInput(id, command);
          return;
        }
        this.streams.get(id)?.credit(credit);
        return;
      }
      case FrameType.connected: {
        const pending = takePending(this.connects, id);
        if (!pending) return;
        this.streams.set(id, pending.stream);
        pending.resolve(pending.stream);
        return;
      }
      case FrameType.connectFailed:
        takePending(this.connects, id)?.reject(new Error(oneLine(payload)));
        return;
      case FrameType.listening: {
        const pending = takePending(this.listens, id);
        if (!pending) return;
        this.listeners.set(id, pending.onConnection);
        const port = payload.length === 2 ? payload.readUInt16BE(0) : 0;
        pending.resolve({
          port,
          close: async () => {
            if (this.listeners.delete(id)) this.send(FrameType.unlisten, id);
          },
        });
        return;
      }
      case FrameType.listenFailed:
        takePending(this.listens, id)?.reject(new Error(oneLine(payload)));
        return;
      case FrameType.accepted: {
        const onConnection = payload.length === 4 ? this.listeners.get(payload.readUInt32BE(0)) : undefined;
        if (id < ACCEPTED_BASE) return;
        if (!onConnection) {
          // The listener was closed meanwhile: the connection is refused.
          this.send(FrameType.close, id);
          return;
        }
        const stream = new ChannelStream(this, id);
        this.streams.set(id, stream);
        onConnection(stream);
        return;
      }
      case FrameType.data:
        this.streams.get(id)?.receive(payload);
        return;
      case FrameType.eof:
        this.streams.get(id)?.receiveEof();
        return;
      case FrameType.close: {
        const stream = this.streams.get(id);
        this.streams.delete(id);
        stream?.receiveClose(oneLine(payload));
        return;
      }
      case FrameType.killAllDone: {
        const done = this.killAlls.get(id);
        this.killAlls.delete(id);
        done?.();
        return;
      }
      case FrameType.error:
        this.closeReason = `${this.program}: ${oneLine(payload)}`;
        return;
      default:
        this.closeReason = `${this.program}: the executor sent a frame of unknown type ${type}`;
        this.child.kill('SIGKILL');
    }
  }

  private pumpInput(id: number, command: CommandState): void {
    while (command.input.length > 0 && command.inputWindow > 0) {
      const head = command.input[0]!;
      const n = Math.min(head.length, command.inputWindow, DATA_CHUNK);
      this.send(FrameType.stdin, id, head.subarray(0, n));
      command.inputWindow -= n;
      if (n === head.length) command.input.shift();
      else command.input[0] = head.subarray(n);
    }
    if (command.input.length === 0 && command.inputEnd && !command.inputEofSent) {
      command.inputEofSent = true;
      this.send(FrameType.stdinEof, id);
    }
  }

  dropStream(id: number): void {
    if (this.streams.delete(id)) this.send(FrameType.close, id);
  }

  spawn(command: ExecutorCommand): RunningChild {
    let resolveEnd!: (end: ChildEnd) => void;
    const ended = new Promise<ChildEnd>((resolve) => (resolveEnd = resolve));
    const pipe = (command.stdin ?? 'pipe') === 'pipe';
    let payload: Buffer;
    try {
      payload = encodeSpawn({ argv: command.argv, cwd: command.cwd, env: command.env, stdinPipe: pipe, timeoutMs: command.timeoutMs ?? 0, maxFileBytes: command.maxFileBytes ?? 0 });
    } catch (error) {
      resolveEnd({ exitCode: null, signal: null, spawnError: new Error(`${command.argv[0]}: ${(error as Error).message}`) });
      return { pid: undefined, write: () => undefined, endInput: () => undefined, kill: () => undefined, ended };
    }
    if (this.isClosed) {
      resolveEnd({ exitCode: null, signal: null, spawnError: new Error(`${command.argv[0]}: not started: ${this.closeReason ?? 'the executor has ended'}`) });
      return { pid: undefined, write: () => undefined, endInput: () => undefined, kill: () => undefined, ended };
    }
    const id = this.id();
    const state: CommandState = {
      command,
      pid: undefined,
      out: new StringDecoder('utf8'),
      err: new StringDecoder('utf8'),
      input: [],
      inputWindow: WINDOW_INITIAL,
      inputEnd: !pipe,
      inputEofSent: !pipe,
      resolve: resolveEnd,
    };
    this.commands.set(id, state);
    this.send(FrameType.spawn, id, payload);
    let done = false;
    void ended.then(() => (done = true));
    return {
      get pid() {
        return state.pid;
      },
      write: (text) => {
        if (state.inputEnd || done || text.length === 0) return;
        state.input.push(Buffer.from(text, 'utf8'));
        this.pumpInput(id, state);
      },
      endInput: () => {
        if (state.inputEnd) return;
        state.inputEnd = true;
        if (!done) this.pumpInput(id, state);
      },
      kill: () => {
        if (!done) this.send(FrameType.kill, id);
      },
      ended,
    };
  }

  connect(port: number): Promise<Duplex> {
    if (!Number.isInteger(port) || port < 1 || port > 65535) return Promise.reject(new Error(`connect: ${port} is not a port (1 to 65535)`));
    if (this.isClosed) return Promise.reject(new Error(`connect to 127.0.0.1:${port}: ${this.closeReason ?? 'the executor has ended'}`));
    const id = this.id();
    return new Promise((resolve, reject) => {
      this.connects.set(id, { stream: new ChannelStream(this, id), resolve, reject });
      this.send(FrameType.connect, id, u16(port));
    });
  }

  listen(port: number, onConnection: (stream: Duplex) => void): Promise<ExecutorListener> {
    if (!Number.isInteger(port) || port < 0 || port > 65535) return Promise.reject(new Error(`listen: ${port} is not a port (0 to 65535)`));
    if (this.isClosed) return Promise.reject(new Error(`listen on 127.0.0.1:${port}: ${this.closeReason ?? 'the executor has ended'}`));
    const id = this.id();
    return new Promise((resolve, reject) => {
      this.listens.set(id, { resolve, reject, onConnection });
      this.send(FrameType.listen, id, u16(port));
    });
  }

  killAll(): Promise<void> {
    if (this.isClosed) return Promise.resolve();
    const id = this.id();
    return new Promise((resolve) => {
      this.killAlls.set(id, resolve);
      this.send(FrameType.killAll, id);
    });
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      let timer: NodeJS.Timeout | undefined;
      const stalled = new Promise<'stalled'>((resolve) => (timer = setTimeout(() => resolve('stalled'), this.closeTimeoutMs)));
      const ended = (async () => {
        await this.killAll();
        this.closeReason ??= `${this.program}: closed`;
        this.child.stdin.end();
        await this.closed;
        return 'ended' as const;
      })();
      if ((await Promise.race([ended, stalled])) === 'stalled') {
        this.closeReason = `${this.program}: closed (the executor did not answer within ${this.closeTimeoutMs} ms and was killed)`;
        this.child.kill('SIGKILL');
        await this.closed;
      }
      clearTimeout(timer);
    })();
    return this.closing;
  }

  /** The channel is gone: everything waiting on it ends now. */
  private end(reason: string): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.rejectReady(new Error(reason));
    // The executor is gone and took every process it started with it.
    for (const command of this.commands.values()) {
      const tailOut = command.out.end();
      if (tailOut) command.command.onStdout?.(tailOut);
      const tailErr = command.err.end();
      if (tailErr) command.command.onStderr?.(tailErr);
      command.resolve({ exitCode: null, signal: 'SIGKILL' });
    }
    this.commands.clear();
    for (const pending of this.connects.values()) pending.reject(new Error(reason));
    this.connects.clear();
    for (const pending of this.listens.values()) pending.reject(new Error(reason));
    this.listens.clear();
    this.listeners.clear();
    // Closed on purpose: open connections just end; the executor lost: they fail with why.
    for (const stream of this.streams.values()) {
      if (this.closing) stream.endQuietly();
      else stream.receiveClose(reason);
    }
    this.streams.clear();
    for (const done of this.killAlls.values()) done();
    this.killAlls.clear();
    this.child.stdin.destroy();
    this.resolveClosed({ reason });
  }
}

/** One connection over the channel, as a Duplex with backpressure both ways. */
class ChannelStream extends Duplex {
  /** Bytes the executor still takes before it gives window back. */
  private window = WINDOW_INITIAL;
  private waiting: { chunk: Buffer; callback: (error?: Error | null) => void } | undefined;
  /** Bytes received and buffered here, given back when read. */
  private owed = 0;
  private gone = false;

  private readonly client: Client;
  private readonly id: number;

  constructor(client: Client, id: number) {
    super({ allowHalfOpen: true });
    this.client = client;
    this.id = id;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.waiting = { chunk, callback };
    this.flush();
  }

  private flush(): void {
    const waiting = this.waiting;
    if (!waiting) return;
    if (this.gone) {
      this.waiting = undefined;
      waiting.callback(new Error('the connection is closed'));
      return;
    }
    while (waiting.chunk.length > 0 && this.window > 0) {
      const n = Math.min(waiting.chunk.length, this.window, DATA_CHUNK);
      this.client.send(FrameType.data, this.id, waiting.chunk.subarray(0, n));
      this.window -= n;
      waiting.chunk = waiting.chunk.subarray(n);
    }
    if (waiting.chunk.length === 0) {
      this.waiting = undefined;
      waiting.callback();
    }
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (!this.gone) this.client.send(FrameType.eof, this.id);
    callback();
  }

  override _read(): void {
    if (this.owed > 0 && !this.gone) {
      this.client.send(FrameType.window, this.id, u32(this.owed));
      this.owed = 0;
    }
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.gone) {
      this.gone = true;
      this.client.dropStream(this.id);
    }
    callback(error);
  }

  credit(bytes: number): void {
    this.window += bytes;
    this.flush();
  }

  receive(bytes: Buffer): void {
    if (this.push(bytes)) this.client.grant(this.id, bytes.length);
    else this.owed += bytes.length;
  }

  receiveEof(): void {
    this.push(null);
  }

  /** The executor was closed on purpose: the connection is destroyed without an error. */
  endQuietly(): void {
    if (this.gone) return;
    this.gone = true;
    this.destroy();
  }

  /** The executor closed the connection (`reason` empty: both directions ended cleanly). */
  receiveClose(reason: string): void {
    if (this.gone) return;
    this.gone = true;
    if (reason) {
      this.destroy(new Error(reason));
      return;
    }
    this.push(null);
    this.flush();
  }
}

/** Takes the request waiting under `id` out of its table (a frame for an unknown id is ignored). */
function takePending<T>(table: Map<number, T>, id: number): T | undefined {
  const pending = table.get(id);
  if (pending !== undefined) table.delete(id);
  return pending;
}
