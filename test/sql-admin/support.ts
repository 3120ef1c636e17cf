/** Shared by the range-statement tests: a SHOW RANGES / SCATTER row as pg returns it, and its bounds. */

export interface RangeRow {
  start_key: string;
  end_key: string;
  range_id: string;
  replicas: string;
  lease_holder: string | null;
}

/** Start/end keys without the table prefix, e.g. [['…', '/1/250'], ['/1/250', '…']]. */
export const bounds = (rows: readonly RangeRow[]): string[][] => rows.map((r) => [r.start_key.replace(/^\/Table\/\d+/, ''), r.end_key.replace(/^\/Table\/\d+/, '')]);
