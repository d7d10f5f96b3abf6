// UTF-8 boundary helper of the STDOUT tail: a chunk read from the output file may end inside a
// multi-byte sequence; the tail sends only the complete prefix and re-reads the rest next time.

/**
 * Length of the longest prefix of `bytes[0, length)` that does not end inside a multi-byte UTF-8
 * sequence. Only the last 3 bytes are inspected: an incomplete trailing sequence (a lead byte
 * whose continuation bytes are not all there yet) is cut off; anything else, including invalid
 * bytes, is kept (it decodes to U+FFFD either way and holding it back would never help).
 */
export function completeUtf8Length(bytes: Uint8Array, length: number = bytes.length): number {
  // Walk back over at most 3 continuation bytes (10xxxxxx) to the lead byte of the last sequence.
  let i = length - 1;
  const stop = Math.max(0, length - 4);
  while (i >= stop && (bytes[i]! & 0xc0) === 0x80) i--;
  if (i < stop) return length; // 4+ continuation bytes in a row: invalid, keep
  const lead = bytes[i]!;
  const need = lead >= 0xf0 && lead <= 0xf7 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  if (lead < 0xc0 || lead > 0xf7) return length; // ASCII, stray continuation or invalid lead: keep
  return length - i >= need ? length : i;
}
