// The parts of autocannon's programmatic API the benchmarks use (it ships no types).
declare module 'autocannon' {
  export interface RequestParams {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
  }
  export interface Request extends RequestParams {
    setupRequest?: (req: RequestParams, context: Record<string, unknown>) => RequestParams;
  }
  export interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    connections?: number;
    amount?: number;
    duration?: number;
    overallRate?: number;
    timeout?: number;
    requests?: Request[];
  }
  export interface Histogram {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    p50: number;
    p90: number;
    p97_5: number;
    p99: number;
    p99_9: number;
  }
  export interface Result {
    latency: Histogram;
    requests: Histogram & { total: number; sent: number };
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    '2xx': number;
  }
  function autocannon(options: Options): Promise<Result>;
  export default autocannon;
}
