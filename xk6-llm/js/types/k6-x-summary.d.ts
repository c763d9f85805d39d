// Type declarations of llmchaos's `k6/x/summary` module, which is also what
// an import of the k6-summary jslib's URL resolves to (llmchaos runs
// offline: the jslib is built in). The core k6 modules (`k6`, `k6/data`,
// `k6/metrics`) have their declarations in the `@types/k6` package.

declare module 'k6/x/summary' {
  /** Options of textSummary. */
  export interface TextSummaryOptions {
    /** The prefix of every line (default one space). */
    indent?: string;
    /** Colour the check and threshold marks (default false). */
    enableColors?: boolean;
    /** Replace the data's options.summaryTrendStats, e.g. ['avg', 'p(95)']. */
    summaryTrendStats?: string[];
    /** Replace the data's options.summaryTimeUnit: 's', 'ms' or 'us'. */
    summaryTimeUnit?: string;
  }

  /** Options of jUnit. */
  export interface JUnitOptions {
    /** The test suite's name (default "k6 thresholds"). */
    name?: string;
    /** The test cases' class name (default "Unnamed folder"). */
    classname?: string;
  }

  /** The end-of-test summary of handleSummary's data, as text. */
  export function textSummary(data: object, options?: TextSummaryOptions): string;
  /** handleSummary's thresholds as JUnit XML, one test case per threshold. */
  export function jUnit(data: object, options?: JUnitOptions): string;
  /** One value of a metric (`data.metrics.NAME`) as text: a rate in %, a duration in timeUnit ('s', 'ms', 'us'; chosen when absent). */
  export function humanizeValue(value: number, metric: object, timeUnit?: string): string;
}

declare module 'https://jslib.k6.io/k6-summary/*' {
  export { textSummary, jUnit, humanizeValue, TextSummaryOptions, JUnitOptions } from 'k6/x/summary';
}
