// The ranker's weights: of each field in BM25F, of a query word's other forms, and of each
// signal the BM25F score is reranked by (ranking.ts), with their defaults.

export interface RankWeights {
  /** BM25F field weights. */
  name: number;
  title: number;
  lead: number;
  body: number;
  params: number;
  paramDocs: number;
  server: number;
  /** BM25 saturation and length normalisation. */
  k1: number;
  b: number;
  /** Weight of a query word's other forms, relative to the word itself. */
  prefix: number;
  fuzzy: number;
  related: number;
  /** score × coverage^coverage: tools answering more of the query win. */
  coverage: number;
  /** The field-weighted frequency at which a word counts fully towards coverage. */
  coverageField: number;
  /** score × (1 + nameCoverage × share of the tool's name the query names). */
  nameCoverage: number;
  /** score × (1 + surface × share of the name's words the query has exactly as written). */
  surface: number;
  /** score × (1 + action) when a query word (or a related word) is the tool's action. */
  action: number;
  /** score × (1 + leadAction) more when that word is the one the query starts with (its verb). */
  leadAction: number;
  /** score × (1 + question) for a tool that reads (get, list, search...) when the query is a question. */
  question: number;
  /** Weight of a verb's related words in a question ("what does issue 12 say" does not send). */
  questionVerb: number;
  /** score × (1 + phrase × share of the query's word pairs found side by side). */
  phrase: number;
  /** Share of coverage a tool gets for a query word it lacks but another tool of its server has. */
  serverSmoothing: number;
  /** score × serverHint for tools of a server the query names. */
  serverHint: number;
  /**
   * score × destructive for a tool that deletes (its annotation, its action or its description's first word) when the query does not
   * ask to delete nor names its action: small enough to put it below every other tool that matches (with one server, "remember that
   * Alice works at Acme" matched memory's delete_relations better than add_observations at 0.1).
   */
  destructive: number;
  /**
   * How much a key word of the query (query.ts keyWords) that no tool has in any form counts
   * against every hit's score, as a share of a word of the rarest kind: its verb ("SNOOZE my
   * alarm"), the head of what it acts on ("set the THERMOSTAT"), a name before that head ("my
   * GMAIL inbox"). Other words no tool has are left out: most are values.
   */
  foreignVerb: number;
  foreignHead: number;
  foreignName: number;
  /**
   * How much a well-known service the request names that no configured server mentions
   * (services.ts: "copy the backups to Google Drive") counts against every hit's score, as a share
   * of a word of the rarest kind, per service: a hit may do a part of the request, not the whole;
   * one that answers much of the rest stays over the threshold ("find Spotify's offices in Stockholm").
   */
  unservedService: number;
  /** score × (1 + intentHint) for a read-only tool on a read query or a destructive one on a delete query (annotations). */
  intentHint: number;
}

export const DEFAULT_WEIGHTS: Readonly<RankWeights> = {
  name: 3,
  title: 2.5,
  lead: 1.5,
  body: 0.6,
  params: 0.25,
  paramDocs: 0.3,
  server: 0.5,
  k1: 1.2,
  b: 0.6,
  prefix: 0.6,
  fuzzy: 0.4,
  related: 0.85,
  coverage: 2,
  coverageField: 1.2,
  nameCoverage: 0.6,
  surface: 0.3,
  action: 0.15,
  leadAction: 0.3,
  question: 0.3,
  questionVerb: 0.5,
  phrase: 0.4,
  serverSmoothing: 0.25,
  serverHint: 3,
  destructive: 0.001,
  intentHint: 0.1,
  foreignVerb: 4,
  foreignHead: 0.5,
  foreignName: 12,
  unservedService: 5,
};
