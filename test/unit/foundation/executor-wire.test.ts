// The executor's framing (src/shared/executor/wire.ts): what Belay and belay-exec cut the channel
// into, pure, without the program.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  decodeExit,
  decodeSpawn,
  encodeExit,
  encodeFrame,
  encodeSpawn,
  FrameDecoder,
  FrameType,
  HEADER_BYTES,
  MAX_PAYLOAD,
  oneLine,
} from '../../../src/shared/executor/wire.ts';

test('a frame is a big-endian length, a type, an id and the payload', () => {
  const frame = encodeFrame(FrameType.stdout, 0x01020304, Buffer.from('hi'));
  assert.deepEqual([...frame], [0, 0, 0, 7, 35, 1, 2, 3, 4, 0x68, 0x69]);
  assert.equal(HEADER_BYTES, 9);
  // Ids of the executor's own (accepted connections) use the top bit.
  assert.equal(encodeFrame(FrameType.data, 0x80000001).readUInt32BE(5), 0x80000001);
});

test('the decoder cuts frames however the bytes arrive, one at a time included', () => {
  const frames = Buffer.concat([
    encodeFrame(FrameType.ready, 0, Buffer.from([0, 0, 0, 1, 0, 0, 0, 9])),
    encodeFrame(FrameType.stdout, 7, Buffer.from('héllo')),
    encodeFrame(FrameType.eof, 8),
  ]);
  const whole = new FrameDecoder().push(frames);
  assert.deepEqual(
    whole.map((f) => [f.type, f.id, f.payload.toString('hex')]),
    [
      [32, 0, '0000000100000009'],
      [35, 7, Buffer.from('héllo').toString('hex')],
      [17, 8, ''],
    ],
  );
  const decoder = new FrameDecoder();
  const byByte = [...frames].flatMap((byte) => decoder.push(Buffer.from([byte])));
  assert.deepEqual(
    byByte.map((f) => [f.type, f.id, f.payload.toString('hex')]),
    whole.map((f) => [f.type, f.id, f.payload.toString('hex')]),
  );
  assert.equal(decoder.pending, 0);
});

test('a broken length is an error at once, not a wait for gigabytes', () => {
  const huge = Buffer.alloc(9);
  huge.writeUInt32BE(MAX_PAYLOAD + 6, 0);
  assert.throws(() => new FrameDecoder().push(huge), /a frame with a length of 4194310 \(must be 5 to 4194309\)/);
  const short = Buffer.from([0, 0, 0, 4, 1, 0, 0, 0]);
  assert.throws(() => new FrameDecoder().push(short), /length of 4/);
  assert.throws(() => encodeFrame(FrameType.data, 1, Buffer.alloc(MAX_PAYLOAD + 1)), /over the 4194304 a frame may carry/);
});

test('a spawn request round-trips: argv, cwd, env, stdin, timeout and a file size over 4 GiB', () => {
  const request = { argv: ['/bin/echo', 'a b', 'ünïcode', ''], cwd: '/work dir', env: { PATH: '/bin', EMPTY: '', WITH_EQ: 'a=b' }, stdinPipe: true, timeoutMs: 1500, maxFileBytes: 5 * 2 ** 32 + 7 };
  assert.deepEqual(decodeSpawn(encodeSpawn(request)), request);
  const plain = { argv: ['true'], cwd: '/', env: {}, stdinPipe: false, timeoutMs: 0, maxFileBytes: 0 };
  assert.deepEqual(decodeSpawn(encodeSpawn(plain)), plain);
});

test('what no process can be given is refused in one line before it is sent', () => {
  const base = { argv: ['x'], cwd: '/', env: {}, stdinPipe: false, timeoutMs: 0, maxFileBytes: 0 };
  assert.throws(() => encodeSpawn({ ...base, argv: [] }), /^Error: no program to run \(an empty argv\)$/);
  assert.throws(() => encodeSpawn({ ...base, argv: ['x', 'a\0b'] }), /argument 1 holds a NUL character/);
  assert.throws(() => encodeSpawn({ ...base, cwd: '/a\0' }), /the working folder holds a NUL character/);
  assert.throws(() => encodeSpawn({ ...base, env: { 'A=B': 'c' } }), /the environment variable name "A=B" is empty or holds '='/);
  assert.throws(() => encodeSpawn({ ...base, env: { '': 'c' } }), /name "" is empty/);
  assert.throws(() => encodeSpawn({ ...base, env: { BIG: 'x'.repeat(MAX_PAYLOAD) } }), /over the 4194304 one request may carry/);
  // Timeouts beyond what the wire holds are the most it holds, not a wrap-around to a short one.
  assert.equal(decodeSpawn(encodeSpawn({ ...base, timeoutMs: 2 ** 40 })).timeoutMs, 0xffffffff);
});

test('exit reports: a code, or a signal, and whether the timeout ended it', () => {
  assert.deepEqual(decodeExit(encodeExit({ exitCode: 3, signalNumber: null, timedOut: false })), { exitCode: 3, signalNumber: null, timedOut: false });
  assert.deepEqual(decodeExit(encodeExit({ exitCode: null, signalNumber: 9, timedOut: true })), { exitCode: null, signalNumber: 9, timedOut: true });
  assert.throws(() => decodeExit(Buffer.alloc(5)), /an exit report of 5 bytes/);
  assert.throws(() => decodeExit(Buffer.from([7, 0, 0, 0, 0, 0])), /of kind 7/);
});

test('lines from the other side are one line, control characters shown, long ones cut', () => {
  assert.equal(oneLine(Buffer.from('a\nb\r\nc\u001b[31m')), 'a b c?[31m');
  assert.equal(oneLine(Buffer.from('x'.repeat(600))).length, 501);
});
