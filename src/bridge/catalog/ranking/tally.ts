// What one query gathers per tool while it is scored, in arrays sized to the catalog and
// reused from query to query: a query touches only the tools its words reach, and clears only
// those.
export class Tally {
  /** BM25F score. */
  readonly score: Float64Array;
  /** The query words (weighted by rarity) the tool answers: coverage. */
  readonly matched: Float64Array;
  /** The query words other tools of its server answer. */
  readonly smooth: Float64Array;
  /** Per query word: the best value and coverage credit of its forms in each tool. */
  readonly best: Float64Array;
  readonly bestCredit: Float64Array;
  /** The last query word that credited each tool. */
  readonly stamp: Int32Array;
  private readonly mark: Uint32Array;
  private generation = 0;
  /** The tools scored or covered this query, in the order first reached. */
  touched: number[] = [];
  /** The tools smoothed this query. */
  smoothed: number[] = [];
  /** The weight of the whole query, what coverage is a share of. */
  totalWeight = 0;
  /** The weight of the query's words no tool has in any form, values left out (match.ts). */
  foreignWeight = 0;
  /** stem -> best weight of any query word's form: what names are matched against. */
  queryForms = new Map<string, number>();
  /** The same for the query's verb alone. */
  leadingForms = new Map<string, number>();

  constructor(n: number) {
    this.score = new Float64Array(n);
    this.matched = new Float64Array(n);
    this.smooth = new Float64Array(n);
    this.best = new Float64Array(n);
    this.bestCredit = new Float64Array(n);
    this.stamp = new Int32Array(n).fill(-1);
    this.mark = new Uint32Array(n);
  }

  /** Starts a query. */
  begin(): this {
    this.touched = [];
    this.smoothed = [];
    this.totalWeight = 0;
    this.foreignWeight = 0;
    this.queryForms = new Map();
    this.leadingForms = new Map();
    return this;
  }

  /** Adds `value` to a tool's score and `full` of a query word's weight to its coverage. */
  credit(doc: number, value: number, wordWeight: number, full: number): void {
    if (this.score[doc] === 0 && this.matched[doc] === 0) this.touched.push(doc);
    this.score[doc]! += value;
    this.matched[doc]! += full * wordWeight;
  }

  /** Marks `docs` with a new mark, returning a test of it. */
  marked(docs: readonly number[]): (doc: number) => boolean {
    if (this.generation === 0xffffffff) {
      this.mark.fill(0);
      this.generation = 0;
    }
    const generation = ++this.generation;
    for (const doc of docs) this.mark[doc] = generation;
    return (doc) => this.mark[doc] === generation;
  }

  /** Ends a query: what it touched is cleared for the next. */
  end(): void {
    for (const doc of this.touched) {
      this.score[doc] = 0;
      this.matched[doc] = 0;
    }
    for (const doc of this.smoothed) this.smooth[doc] = 0;
    for (const doc of this.touched) this.stamp[doc] = -1;
    for (const doc of this.smoothed) this.stamp[doc] = -1;
  }
}
