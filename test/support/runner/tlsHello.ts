// A TLS ClientHello naming a server, as a client's first bytes in a tunnel (no TLS library needed).
/** A minimal TLS 1.2 ClientHello with one extension, server_name. */
export function clientHello(name: string): Buffer {
  const host = Buffer.from(name, 'latin1');
  const serverName = Buffer.concat([u16(host.length + 3), Buffer.from([0]), u16(host.length), host]);
  const extension = Buffer.concat([u16(0), u16(serverName.length), serverName]);
  const body = Buffer.concat([Buffer.from([3, 3]), Buffer.alloc(32), Buffer.from([0]), u16(2), Buffer.from([0x13, 0x01]), Buffer.from([1, 0]), u16(extension.length), extension]);
  const handshake = Buffer.concat([Buffer.from([1, 0, body.length >> 8, body.length & 255]), body]);
  return Buffer.concat([Buffer.from([0x16, 3, 1]), u16(handshake.length), handshake]);
}

function u16(value: number): Buffer {
  const buffer = Buffer.alloc(2);
  buffer.writeUInt16BE(value);
  return buffer;
}
