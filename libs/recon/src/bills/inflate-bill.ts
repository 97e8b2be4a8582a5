import type { Transform } from 'node:stream';
import { createGunzip, createInflateRaw } from 'node:zlib';
import { BillRefusedError } from '../bill-line';

/** SPEC 6, bills: what a compressed bill may grow to once inflated; past it the bill is refused. */
export const BILL_INFLATED_MAX_BYTES = 64 * 1024 * 1024;

/**
 * Inflates as a stream, counting what comes out: past `cap` the inflater is stopped and the bill
 * refused, so a bomb (a few hundred KB that would grow to gigabytes) never holds more than the cap.
 */
export function inflateCapped(inflater: Transform, input: Buffer, what: string, cap = BILL_INFLATED_MAX_BYTES): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const fail = (err: BillRefusedError): void => {
      if (done) return;
      done = true;
      inflater.destroy();
      reject(err);
    };
    inflater.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > cap) return fail(new BillRefusedError(`${what} inflates past ${cap / 1024 / 1024} MiB: refused`));
      chunks.push(chunk);
    });
    inflater.on('error', () => fail(new BillRefusedError(`${what} does not inflate: truncated or corrupt`)));
    inflater.on('end', () => {
      if (done) return;
      done = true;
      resolve(Buffer.concat(chunks, size));
    });
    inflater.end(input);
  });
}

/** A gzip (one member or several, as concatenated gzips inflate), under the cap. */
export function gunzipCapped(raw: Buffer, what: string, cap = BILL_INFLATED_MAX_BYTES): Promise<Buffer> {
  return inflateCapped(createGunzip(), raw, what, cap);
}

/** One file of a zip as its central directory names it: its name's raw bytes (alipay's are GBK, unflagged) and where its data is. */
export interface ZipEntry {
  nameBytes: Buffer;
  /** General purpose flags: bit 11 says the name is UTF-8. */
  flags: number;
  method: number;
  compressedSize: number;
  localHeaderOffset: number;
}

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

/**
 * The entries of a zip's central directory (APPNOTE 4.3.12, 4.3.16), without inflating anything.
 * A zip64 or otherwise unreadable directory is refused: a day's bill is far below 4 GiB.
 */
export function zipEntries(raw: Buffer, what: string): ZipEntry[] {
  const unreadable = (): BillRefusedError => new BillRefusedError(`${what} is not a readable zip: truncated or corrupt`);
  // The end record sits in the last 22 bytes plus a comment of at most 64 KiB.
  let end = -1;
  for (let i = raw.length - 22; i >= Math.max(0, raw.length - 22 - 0xffff); i--) {
    if (raw.readUInt32LE(i) === EOCD) {
      end = i;
      break;
    }
  }
  if (end < 0) throw unreadable();
  const count = raw.readUInt16LE(end + 10);
  const size = raw.readUInt32LE(end + 12);
  let at = raw.readUInt32LE(end + 16);
  if (count === 0xffff || size === 0xffffffff || at === 0xffffffff || at + size > end) throw unreadable();
  const entries: ZipEntry[] = [];
  for (let n = 0; n < count; n++) {
    if (at + 46 > end || raw.readUInt32LE(at) !== CENTRAL) throw unreadable();
    const nameLength = raw.readUInt16LE(at + 28);
    const entry: ZipEntry = {
      flags: raw.readUInt16LE(at + 8),
      method: raw.readUInt16LE(at + 10),
      compressedSize: raw.readUInt32LE(at + 20),
      localHeaderOffset: raw.readUInt32LE(at + 42),
      nameBytes: raw.subarray(at + 46, at + 46 + nameLength),
    };
    if (entry.compressedSize === 0xffffffff || entry.localHeaderOffset === 0xffffffff) throw unreadable();
    entries.push(entry);
    at += 46 + nameLength + raw.readUInt16LE(at + 30) + raw.readUInt16LE(at + 32);
  }
  return entries;
}

/** One entry's bytes, inflated as a stream under the cap (stored or deflated, the two methods bills use). */
export function inflateZipEntry(raw: Buffer, entry: ZipEntry, what: string, cap = BILL_INFLATED_MAX_BYTES): Promise<Buffer> {
  const at = entry.localHeaderOffset;
  if (at + 30 > raw.length || raw.readUInt32LE(at) !== LOCAL) throw new BillRefusedError(`${what} is not a readable zip: truncated or corrupt`);
  const start = at + 30 + raw.readUInt16LE(at + 26) + raw.readUInt16LE(at + 28);
  const data = raw.subarray(start, start + entry.compressedSize);
  if (start + entry.compressedSize > raw.length) throw new BillRefusedError(`${what} is not a readable zip: truncated`);
  if (entry.method === 0) {
    if (data.length > cap) throw new BillRefusedError(`${what} is larger than ${cap / 1024 / 1024} MiB: refused`);
    return Promise.resolve(Buffer.from(data));
  }
  if (entry.method !== 8) throw new BillRefusedError(`${what} uses a zip compression method (${entry.method}) bills do not use`);
  return inflateCapped(createInflateRaw(), data, what, cap);
}
