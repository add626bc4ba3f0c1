// Real Python wheels made by the tests: a wheel is a zip holding the package's files and its
// .dist-info (METADATA, WHEEL, RECORD with each file's hash). Written here with no Python and no
// zip library: a zip of stored (uncompressed) entries is a few headers around the bytes.
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { crc32 } from 'node:zlib';

/** A zip file of `files` (name → content), stored without compression. */
export function zipBytes(files: Record<string, string | Buffer>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of Object.entries(files)) {
    const data = typeof content === 'string' ? Buffer.from(content) : content;
    const nameBytes = Buffer.from(name);
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6); // names are UTF-8
    local.writeUInt16LE(0, 8); // stored
    local.writeUInt32LE(0, 10); // time and date: 1980-00-00
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    local.writeUInt16LE(0, 28);
    locals.push(local, nameBytes, data);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4); // made on Unix
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(0, 10);
    central.writeUInt32LE(0, 12);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE((0o100644 << 16) >>> 0, 38); // a regular file, rw-r--r--
    central.writeUInt32LE(offset, 42);
    centrals.push(central, nameBytes);
    offset += 30 + nameBytes.length + data.length;
  }
  const centralBytes = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(files).length, 8);
  end.writeUInt16LE(Object.keys(files).length, 10);
  end.writeUInt32LE(centralBytes.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, centralBytes, end]);
}

/**
 * Writes `<dir>/<name>-<version>-py3-none-any.whl`: a pure-Python package `name` whose module
 * files are `modules` (path inside the package → source), depending on `requires`.
 */
export function writeWheel(dir: string, name: string, version: string, modules: Record<string, string>, requires: string[] = []): string {
  const info = `${name}-${version}.dist-info`;
  const files: Record<string, string> = {};
  for (const [file, source] of Object.entries(modules)) files[`${name}/${file}`] = source;
  files[`${info}/METADATA`] = `Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n${requires.map((r) => `Requires-Dist: ${r}\n`).join('')}`;
  files[`${info}/WHEEL`] = 'Wheel-Version: 1.0\nGenerator: belay-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n';
  const hash = (text: string) => `sha256=${createHash('sha256').update(text).digest('base64url')}`;
  files[`${info}/RECORD`] = Object.entries(files).map(([file, text]) => `${file},${hash(text)},${Buffer.byteLength(text)}\n`).join('') + `${info}/RECORD,,\n`;
  const wheel = path.join(dir, `${name}-${version}-py3-none-any.whl`);
  writeFileSync(wheel, zipBytes(files));
  return wheel;
}
