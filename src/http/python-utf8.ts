/**
 * Strict UTF-8 decoding that fails in Python's words. Placement decodes a
 * request body with bytes.decode("utf-8") (oslo's jsonutils.loads) and puts
 * str(UnicodeDecodeError) in its 400: "'utf-8' codec can't decode byte 0xff
 * in position 0: invalid start byte". TextDecoder refuses exactly the bytes
 * CPython refuses (overlong forms, surrogates, code points past U+10FFFF);
 * describeInvalidUtf8 says where and why as CPython's decoder does. Positions
 * count bytes.
 */

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The bytes as text, or undefined when they are not UTF-8. A BOM is kept: Python's json refuses it. */
export function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return decoder.decode(bytes);
  } catch {
    return undefined;
  }
}

const isContinuation = (byte: number | undefined) => byte !== undefined && byte >= 0x80 && byte <= 0xbf;

interface BadSequence {
  start: number;
  /** One past the last byte CPython blames. */
  end: number;
  reason: "invalid start byte" | "invalid continuation byte" | "unexpected end of data";
}

/**
 * The first sequence CPython's decoder stops at. A lead byte's second byte
 * must also keep the code point in range (E0 A0.., ED ..9F, F0 90.., F4 ..8F),
 * else that byte is the bad continuation; a sequence cut short by the end of
 * the body is blamed whole, unless a byte before the end is already wrong.
 */
function firstBadSequence(bytes: Uint8Array): BadSequence | undefined {
  const n = bytes.length;
  let i = 0;
  const badContinuation = (length: number): BadSequence => ({ start: i, end: i + length, reason: "invalid continuation byte" });
  while (i < n) {
    const lead = bytes[i];
    if (lead < 0x80) {
      i++;
      continue;
    }
    const size = lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
    if (size === 0) return { start: i, end: i + 1, reason: "invalid start byte" };
    const second = bytes[i + 1];
    const secondInRange =
      isContinuation(second) &&
      !(lead === 0xe0 && second! < 0xa0) &&
      !(lead === 0xed && second! >= 0xa0) &&
      !(lead === 0xf0 && second! < 0x90) &&
      !(lead === 0xf4 && second! >= 0x90);
    for (let k = 1; k < size; k++) {
      if (i + k >= n) return { start: i, end: n, reason: "unexpected end of data" };
      if (k === 1 ? !secondInRange : !isContinuation(bytes[i + k])) return badContinuation(k);
    }
    i += size;
  }
  return undefined;
}

/** str(UnicodeDecodeError) for bytes TextDecoder refused. */
export function describeInvalidUtf8(bytes: Uint8Array): string {
  const bad = firstBadSequence(bytes);
  if (!bad) return "'utf-8' codec can't decode the body";
  const where =
    bad.end - bad.start === 1
      ? `byte 0x${bytes[bad.start].toString(16).padStart(2, "0")} in position ${bad.start}`
      : `bytes in position ${bad.start}-${bad.end - 1}`;
  return `'utf-8' codec can't decode ${where}: ${bad.reason}`;
}
