// parse-prometheus-text-format ships no types. Shape of its output (prom2json-compatible):
// families with string values; histogram/summary families are flattened into buckets/quantiles.
declare module 'parse-prometheus-text-format' {
  export interface PromSample {
    value?: string;
    labels?: Record<string, string>;
    timestamp_ms?: string;
    count?: string;
    sum?: string;
    buckets?: Record<string, string>;
    quantiles?: Record<string, string>;
  }
  export interface PromFamily {
    name: string;
    help: string;
    type: string;
    metrics: PromSample[];
  }
  function parsePrometheusTextFormat(text: string): PromFamily[];
  export default parsePrometheusTextFormat;
}
