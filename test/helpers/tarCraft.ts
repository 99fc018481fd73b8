/** Hand-made tar headers for hostile-stream tests (what a wrapped `tar` on a node could send). */
export function tarHeader(o: { name: string; type: string; size: number | bigint; mtime?: number }): Buffer {
  const h = Buffer.alloc(512, 0);
  h.write(o.name.slice(0, 99), 0, 'utf8');
  h.write('0000644\0', 100, 'latin1');
  h.write('0001750\0', 108, 'latin1');
  h.write('0001750\0', 116, 'latin1');
  const size = BigInt(o.size);
  if (size < 8n ** 11n) h.write(size.toString(8).padStart(11, '0') + '\0', 124, 'latin1');
  else {
    // GNU base-256: high bit set, big-endian value in the remaining 11 bytes
    let v = size;
    for (let i = 135; i > 124; i--) {
      h[i] = Number(v & 0xffn);
      v >>= 8n;
    }
    h[124] = 0x80;
  }
  h.write((o.mtime ?? 1700000000).toString(8).padStart(11, '0') + '\0', 136, 'latin1');
  h.write(o.type, 156, 'latin1');
  h.write('ustar\0', 257, 'latin1');
  h.write('00', 263, 'latin1');
  h.fill(0x20, 148, 156);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'latin1');
  return h;
}

/** A pax 'x' record `"<len> key=value\n"` with its length field right. */
export function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = body.length + 1;
  while (String(len).length + body.length !== len) len = String(len).length + body.length;
  return `${len}${body}`;
}

export function pad512(b: Buffer): Buffer {
  const r = b.length % 512;
  return r ? Buffer.concat([b, Buffer.alloc(512 - r)]) : b;
}
