/**
 * The workload tool's public surface: the YCSB load and run phases as library
 * calls (used by the CLI in src/cli/workload-command.ts and by bench/ycsb.ts),
 * the generators, and duration parsing. Speaks only SQL over the PostgreSQL
 * protocol (pg), so it measures Cairn and PostgreSQL alike.
 */
export { initYcsb, loadPlan, splitKeys, type YcsbInitOptions, type YcsbInitResult, type LoadPoint } from './ycsb/loader.js';
export { runYcsb, YcsbRunError, type YcsbRunOptions, type YcsbRunIo, type YcsbRunResult } from './ycsb/runner.js';
export {
  WORKLOADS,
  WORKLOAD_NAMES,
  OP_TYPES,
  WorkloadError,
  parseWorkloadName,
  parseDistribution,
  type WorkloadName,
  type OpType,
  type RequestDistribution,
  type WorkloadSpec,
} from './ycsb/workload-spec.js';
export { parseMethod, type QueryMethod } from './ycsb/ycsb-sql.js';
export type { Output } from './ycsb/sql-connection.js';
export type { OpTotals, SeriesPoint } from './ycsb/op-stats.js';
export { keyName, fnvhash64 } from './ycsb/fnv64.js';
export { parseDuration, formatDuration } from './duration.js';
