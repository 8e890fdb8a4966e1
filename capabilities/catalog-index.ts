/**
 * The BM25+ index behind catalog recall: posting lists in typed arrays, scored into one reusable
 * accumulator, so a query costs a pass over the postings of its terms and nothing per catalog entry.
 *
 * It ranks exactly as the MiniSearch configuration it replaces did (BM25+ with k=1.2, b=0.7, d=0.5 per
 * field; field boosts; a query word of 5+ characters also matches the longer words it starts, weighted
 * 0.375·len/(len + 0.3·extra); one of 6+ characters also matches words one edit away, weighted
 * 0.45·len/(len + 1); field length = distinct terms; document frequency per field), which was 10-40×
 * slower at 10,000 entries because it builds a result object per matching entry and walks a radix tree
 * for fuzzy matches. Here prefix and one-edit expansions are map look-ups (a prefix map and a
 * deletion-neighbourhood map, kept up to date as terms are added), and entries can be added and
 * removed one at a time, so an MCP refresh re-indexes only the toolsets that changed. A change can be
 * staged first (tokenised and its postings written, but not searchable) and committed later with
 * others at once, so a search sees the index wholly before or wholly after a batch of changes.
 */
import { searchTerms } from './catalog-terms.js';

/** Searchable fields, in the order MiniSearch summed them, with their boosts. */
export const FIELDS = ['name', 'description', 'tags', 'tools', 'id'] as const;
const BOOST = [2, 1, 1.5, 1, 1.5];
const K1 = 1.2;
const B = 0.7;
const D = 0.5;
const PREFIX_WEIGHT = 0.375;
const FUZZY_WEIGHT = 0.45;
const PREFIX_MIN = 5;
const FUZZY_MIN = 6;

/** One term's occurrences in one field: document slots and term frequencies, grown by doubling. */
export class Postings {
  docs = new Int32Array(4);
  tfs = new Uint16Array(4);
  /** The field's length in each document, beside its tf: the scoring loop then reads memory in order. */
  lengths = new Uint16Array(4);
  n = 0;
  /**
   * Live documents holding the term in this field (removed and staged ones stay in, or are already
   * in, the arrays; the search skips slots that are not live).
   */
  df = 0;

  push(doc: number, tf: number, length: number): void {
    if (this.n === this.docs.length) {
      const docs = new Int32Array(this.n * 2);
      docs.set(this.docs);
      this.docs = docs;
      const tfs = new Uint16Array(this.n * 2);
      tfs.set(this.tfs);
      this.tfs = tfs;
      const lengths = new Uint16Array(this.n * 2);
      lengths.set(this.lengths);
      this.lengths = lengths;
    }
    this.docs[this.n] = doc;
    this.tfs[this.n] = Math.min(tf, 0xffff);
    this.lengths[this.n] = Math.min(length, 0xffff);
    this.n++;
  }
}

const ahead = (a: IndexHit, b: IndexHit) =>
  a.score > b.score || (a.score === b.score && a.key.localeCompare(b.key) < 0);

export interface IndexHit {
  key: string;
  kind: number;
  score: number;
}

function growFloat(array: Float64Array<ArrayBuffer>, size: number): Float64Array<ArrayBuffer> {
  if (size <= array.length) return array;
  const next = new Float64Array(Math.max(size, array.length * 2));
  next.set(array);
  return next;
}

function growBytes(array: Uint8Array<ArrayBuffer>, size: number): Uint8Array<ArrayBuffer> {
  if (size <= array.length) return array;
  const next = new Uint8Array(Math.max(size, array.length * 2));
  next.set(array);
  return next;
}

/** Whether a and b are exactly one insertion, deletion or substitution apart. */
function oneEditApart(a: string, b: string): boolean {
  if (a === b || Math.abs(a.length - b.length) > 1) return false;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  if (a.length === b.length) return a.slice(i + 1) === b.slice(i + 1);
  return a.length > b.length ? a.slice(i + 1) === b.slice(i) : a.slice(i) === b.slice(i + 1);
}

function deletions(term: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < term.length; i++) out.push(term.slice(0, i) + term.slice(i + 1));
  return out;
}

/**
 * Adds `term` to the sorted list under `key`. Sorted, so the order in which a query's expansions are
 * summed depends on the terms alone, not on the order documents were added: a score comes out the
 * same to the last bit whether the index was built at once or changed entry by entry.
 */
function addTo(map: Map<string, string[]>, key: string, term: string): void {
  const list = map.get(key);
  if (!list) {
    map.set(key, [term]);
    return;
  }
  let low = 0;
  let high = list.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((list[mid] as string) < term) low = mid + 1;
    else high = mid;
  }
  list.splice(low, 0, term);
}

/** A field's text: one string, or pieces (a toolset's tools) read as if joined by spaces. */
export type FieldText = string | readonly string[];

/** A document indexed off to the side, for `Bm25Index.commit` to make live. */
export interface StagedDoc {
  readonly key: string;
  readonly slot: number;
}

/** Documents of `FIELDS.length` text fields, each with a key and a small integer kind. */
export class Bm25Index {
  private readonly terms = new Map<string, Array<Postings | undefined>>();
  /** Every prefix of 5+ characters of a longer term -> those terms. */
  private readonly prefixes = new Map<string, string[]>();
  /** Every one-character deletion of a term of 5+ characters -> those terms. */
  private readonly neighbours = new Map<string, string[]>();
  private keys: Array<string | undefined> = [];
  /** Each document's postings, one per distinct term and field: what retiring it updates, with no tokenising. */
  private docPostings: Array<Postings[] | undefined> = [];
  private kinds = new Uint8Array(64);
  private alive = new Uint8Array(64);
  private fieldLength = FIELDS.map(() => new Float64Array(64));
  private readonly totalLength = new Float64Array(FIELDS.length);
  private readonly slotOf = new Map<string, number>();
  private acc = new Float64Array(64);
  private seen = new Uint32Array(64);
  private touched = new Int32Array(64);
  private epoch = 0;

  /** Live documents. */
  get size(): number {
    return this.slotOf.size;
  }

  /** Adds a document, replacing the one with the same key. */
  add(key: string, kind: number, fields: readonly FieldText[]): void {
    this.commit([], [this.stage(key, kind, fields)]);
  }

  /** Removes the document with this key; false if there is none. */
  remove(key: string): boolean {
    const had = this.slotOf.has(key);
    this.commit([key], []);
    return had;
  }

  /** `staging` run to its end at once. */
  stage(key: string, kind: number, fields: readonly FieldText[]): StagedDoc {
    const steps = this.staging(key, kind, fields);
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value;
    }
  }

  /**
   * Indexes a document off to the side: its terms are tokenised and its postings written, but no
   * search finds it (nor counts it in document frequencies or lengths) until `commit` is given it.
   * A generator that pauses after each piece of text it tokenises, so a caller can spread a large
   * document (a server listing thousands of tools) over several turns of the event loop; it returns
   * the staged document.
   */
  *staging(key: string, kind: number, fields: readonly FieldText[]): Generator<void, StagedDoc, void> {
    const counts = FIELDS.map(() => new Map<string, number>());
    for (let f = 0; f < FIELDS.length; f++) {
      const text = fields[f] ?? '';
      const into = counts[f] as Map<string, number>;
      for (const piece of typeof text === 'string' ? [text] : text) {
        for (const term of searchTerms(piece)) into.set(term, (into.get(term) ?? 0) + 1);
        yield;
      }
    }
    const slot = this.keys.length;
    const postings: Postings[] = [];
    this.keys.push(key);
    this.docPostings.push(postings);
    const capacity = slot + 1;
    this.kinds = growBytes(this.kinds, capacity);
    this.alive = growBytes(this.alive, capacity);
    this.fieldLength = this.fieldLength.map((lengths) => growFloat(lengths, capacity));
    this.kinds[slot] = kind;
    counts.forEach((terms, f) => {
      (this.fieldLength[f] as Float64Array)[slot] = terms.size;
      for (const [term, tf] of terms) {
        const p = this.postings(term, f);
        p.push(slot, tf, terms.size);
        postings.push(p);
      }
    });
    return { key, slot };
  }

  /**
   * Retires the live documents with the keys in `remove`, then makes each of `put` (from `staging`)
   * live in place of the one with its key, all at once: a step per posting of the documents
   * involved, no tokenising.
   */
  commit(remove: readonly string[], put: readonly StagedDoc[]): void {
    for (const key of remove) this.retire(key);
    for (const { key, slot } of put) {
      this.retire(key);
      this.slotOf.set(key, slot);
      this.alive[slot] = 1;
      for (const p of this.docPostings[slot] ?? []) p.df++;
      FIELDS.forEach((_, f) => {
        this.totalLength[f] = (this.totalLength[f] ?? 0) + ((this.fieldLength[f] as Float64Array)[slot] ?? 0);
      });
    }
  }

  private retire(key: string): void {
    const slot = this.slotOf.get(key);
    if (slot === undefined) return;
    this.slotOf.delete(key);
    this.alive[slot] = 0;
    for (const p of this.docPostings[slot] ?? []) p.df--;
    FIELDS.forEach((_, f) => {
      this.totalLength[f] = (this.totalLength[f] ?? 0) - ((this.fieldLength[f] as Float64Array)[slot] ?? 0);
    });
    this.docPostings[slot] = undefined;
    this.keys[slot] = undefined;
  }

  private postings(term: string, field: number): Postings {
    let byField = this.terms.get(term);
    if (!byField) {
      byField = FIELDS.map(() => undefined);
      this.terms.set(term, byField);
      for (let n = PREFIX_MIN; n < term.length; n++) addTo(this.prefixes, term.slice(0, n), term);
      if (term.length >= FUZZY_MIN - 1)
        for (const variant of new Set(deletions(term))) addTo(this.neighbours, variant, term);
    }
    return (byField[field] ??= new Postings());
  }

  /** The index terms a query term matches, each with its weight (exact 1, prefix and one-edit less). */
  private expand(term: string): Array<[string, number]> {
    const out: Array<[string, number]> = [[term, 1]];
    if (term.length >= PREFIX_MIN) {
      for (const longer of this.prefixes.get(term) ?? []) {
        const extra = longer.length - term.length;
        out.push([longer, (PREFIX_WEIGHT * longer.length) / (longer.length + 0.3 * extra)]);
      }
    }
    if (term.length >= FUZZY_MIN) {
      const found = new Set<string>();
      // One more character: the query is one of its deletions. Same length or one fewer: they share a deletion, or it is one.
      for (const t of this.neighbours.get(term) ?? []) found.add(t);
      for (const variant of deletions(term)) {
        if (this.terms.has(variant)) found.add(variant);
        for (const t of this.neighbours.get(variant) ?? []) found.add(t);
      }
      for (const t of found) {
        // A longer word that starts with the query is a prefix match and is weighted as one.
        if (t.startsWith(term) || !oneEditApart(term, t)) continue;
        out.push([t, (FUZZY_WEIGHT * t.length) / (t.length + 1)]);
      }
    }
    return out;
  }

  /**
   * The best `k` documents of each kind for `query`, scores summed over query terms, fields and
   * expansions, each list best first (ties by key) and cut where a score falls under `floor` times
   * the kind's best.
   */
  search(query: string, kinds: number, k: number, floor: number): IndexHit[][] {
    const n = this.slotOf.size;
    const slots = this.keys.length;
    if (this.acc.length < slots) {
      this.acc = new Float64Array(slots * 2);
      this.seen = new Uint32Array(slots * 2);
      this.touched = new Int32Array(slots * 2);
    }
    const { acc, seen, touched, alive } = this;
    const epoch = ++this.epoch;
    let count = 0;
    for (const queryTerm of searchTerms(query)) {
      for (const [term, weight] of this.expand(queryTerm)) {
        const byField = this.terms.get(term);
        if (!byField) continue;
        for (let f = 0; f < FIELDS.length; f++) {
          const p = byField[f];
          if (!p || p.df <= 0) continue;
          const idf = Math.log(1 + (n - p.df + 0.5) / (p.df + 0.5));
          const avg = (this.totalLength[f] ?? 0) / n;
          const scale = weight * (BOOST[f] ?? 1) * idf;
          const { docs, tfs, lengths } = p;
          for (let j = 0; j < p.n; j++) {
            const doc = docs[j] as number;
            if (alive[doc] === 0) continue;
            const tf = tfs[j] as number;
            const score = scale * (D + (tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * (lengths[j] as number)) / avg)));
            if (seen[doc] === epoch) {
              acc[doc] = (acc[doc] as number) + score;
            } else {
              seen[doc] = epoch;
              acc[doc] = score;
              touched[count++] = doc;
            }
          }
        }
      }
    }
    const best: IndexHit[][] = Array.from({ length: kinds }, () => []);
    for (let i = 0; i < count; i++) {
      const doc = touched[i] as number;
      const kind = this.kinds[doc] as number;
      const list = best[kind];
      const score = acc[doc] as number;
      // Most entries lose to the current k-th: compare the number before building a hit.
      if (!list || (list.length === k && score < (list[k - 1] as IndexHit).score)) continue;
      const hit = { key: this.keys[doc] as string, kind, score };
      if (list.length === k && !ahead(hit, list[k - 1] as IndexHit)) continue;
      let at = list.length;
      while (at > 0 && ahead(hit, list[at - 1] as IndexHit)) at--;
      list.splice(at, 0, hit);
      if (list.length > k) list.pop();
    }
    return best.map((list) => {
      const top = list[0]?.score ?? 0;
      return list.filter((hit) => hit.score >= top * floor);
    });
  }
}
