/**
 * sql/session/session-vars.ts — per-connection session variables (SET / SHOW / RESET).
 *
 * Known variables have a default and, for some, a validator; names are
 * case-insensitive. Unknown names are 42704 like PostgreSQL. Variables
 * PostgreSQL reports through ParameterStatus (application_name, TimeZone,
 * DateStyle, …) are reported again when SET changes them.
 *
 * TimeZone applies to timestamptz text output and text parameters (SQL
 * literals are typed when a statement is planned and read as UTC); other
 * DateStyle values are accepted and remembered, output stays ISO.
 */
import { SqlError } from '../parser/sql-error.js';
import { resolveTimeZone } from '../types/datetime.js';

interface VarDef {
  readonly defaultValue: string;
  /** Name reported in ParameterStatus (PostgreSQL's spelling), if reported. */
  readonly reportAs?: string;
  readonly check?: (v: string) => string;
}

function bool(v: string): string {
  const l = v.toLowerCase();
  if (['on', 'true', 'yes', '1'].includes(l)) return 'on';
  if (['off', 'false', 'no', '0'].includes(l)) return 'off';
  throw new SqlError('sql.invalid_parameter_value', '22023', `parameter requires a Boolean value`);
}

function isolation(v: string): string {
  const l = v.toLowerCase();
  if (!['serializable', 'repeatable read', 'read committed', 'read uncommitted'].includes(l)) {
    throw new SqlError('sql.invalid_parameter_value', '22023', `invalid value for parameter "default_transaction_isolation": "${v}"`);
  }
  return l;
}

/** A duration setting in ms ('500', '10s', '2min', '1h'). */
function timeoutMs(v: string): number {
  const m = /^\s*(\d+)\s*(ms|s|min|h)?\s*$/i.exec(v);
  if (m === null) throw new SqlError('sql.invalid_parameter_value', '22023', `invalid value for parameter "statement_timeout": "${v}"`);
  const n = Number(m[1]);
  const unit = (m[2] ?? 'ms').toLowerCase();
  return unit === 'ms' ? n : unit === 's' ? n * 1000 : unit === 'min' ? n * 60_000 : n * 3_600_000;
}

function timeout(v: string): string {
  timeoutMs(v);
  return v.trim();
}

function zone(v: string): string {
  resolveTimeZone(v); // 22023 for an unknown zone
  return v;
}

const VARS: ReadonlyMap<string, VarDef> = new Map<string, VarDef>([
  ['application_name', { defaultValue: '', reportAs: 'application_name' }],
  ['search_path', { defaultValue: '"$user", public' }],
  ['timezone', { defaultValue: 'UTC', reportAs: 'TimeZone', check: zone }],
  ['datestyle', { defaultValue: 'ISO, MDY', reportAs: 'DateStyle' }],
  ['intervalstyle', { defaultValue: 'postgres', reportAs: 'IntervalStyle' }],
  ['statement_timeout', { defaultValue: '0', check: timeout }],
  ['idle_in_transaction_session_timeout', { defaultValue: '0', check: timeout }],
  ['lock_timeout', { defaultValue: '0', check: timeout }],
  ['default_transaction_isolation', { defaultValue: 'serializable', check: isolation }],
  ['transaction_isolation', { defaultValue: 'serializable', check: isolation }],
  ['default_transaction_read_only', { defaultValue: 'off', check: bool }],
  ['transaction_read_only', { defaultValue: 'off', check: bool }],
  ['client_encoding', { defaultValue: 'UTF8', reportAs: 'client_encoding' }],
  ['server_encoding', { defaultValue: 'UTF8' }],
  ['standard_conforming_strings', { defaultValue: 'on', reportAs: 'standard_conforming_strings' }],
  ['extra_float_digits', { defaultValue: '1' }],
  // Per-query memory budget of the buffering operators (sql/exec/memory-budget.ts); past it: 53200.
  ['query_memory_budget', { defaultValue: '64MB' }],
  ['client_min_messages', { defaultValue: 'notice' }],
  ['server_version', { defaultValue: '15.0 Cairn' }],
  ['server_version_num', { defaultValue: '150000' }],
  ['integer_datetimes', { defaultValue: 'on' }],
  ['is_superuser', { defaultValue: 'off', reportAs: 'is_superuser' }],
  ['database', { defaultValue: 'defaultdb' }],
  ['max_identifier_length', { defaultValue: '63' }],
  ['bytea_output', { defaultValue: 'hex' }],
  ['row_security', { defaultValue: 'off', check: bool }],
  ['synchronous_commit', { defaultValue: 'on' }],
  ['node_id', { defaultValue: '1' }],
]);

export class SessionVars {
  private readonly values = new Map<string, string>();

  constructor(initial: ReadonlyMap<string, string> = new Map()) {
    for (const [k, v] of initial) {
      const name = k.toLowerCase();
      if (VARS.has(name)) this.values.set(name, v);
    }
  }

  get(name: string): string {
    const n = name.toLowerCase();
    const def = VARS.get(n);
    if (def === undefined) throw new SqlError('sql.undefined_object', '42704', `unrecognized configuration parameter "${name}"`);
    return this.values.get(n) ?? def.defaultValue;
  }

  /** Sets a variable; returns the ParameterStatus name to report, if any. */
  set(name: string, value: string): string | undefined {
    const n = name.toLowerCase();
    const def = VARS.get(n);
    if (def === undefined) throw new SqlError('sql.undefined_object', '42704', `unrecognized configuration parameter "${name}"`);
    if (n === 'server_version' || n === 'server_encoding' || n === 'server_version_num' || n === 'max_identifier_length' || n === 'integer_datetimes') {
      throw new SqlError('sql.cant_change_runtime_param', '55P02', `parameter "${name}" cannot be changed`);
    }
    this.values.set(n, def.check !== undefined ? def.check(value) : value);
    return def.reportAs;
  }

  /** Every variable with its current value, by name (SHOW ALL), shown with PostgreSQL's capitalisation. */
  all(): [string, string][] {
    return [...VARS.entries()].map(([n, def]): [string, string] => [def.reportAs ?? n, this.values.get(n) ?? def.defaultValue]).sort((a, b) => (a[0].toLowerCase() < b[0].toLowerCase() ? -1 : 1));
  }

  /** RESET ALL: back to the defaults; returns the ParameterStatus names whose values changed. */
  resetAll(): string[] {
    const changed: string[] = [];
    for (const [n, v] of this.values) {
      const def = VARS.get(n) as VarDef;
      if (def.reportAs !== undefined && v !== def.defaultValue) changed.push(def.reportAs);
    }
    this.values.clear();
    return changed;
  }

  reset(name: string): string | undefined {
    const n = name.toLowerCase();
    if (n === 'all') {
      this.values.clear();
      return undefined;
    }
    const def = VARS.get(n);
    if (def === undefined) throw new SqlError('sql.undefined_object', '42704', `unrecognized configuration parameter "${name}"`);
    this.values.delete(n);
    return def.reportAs;
  }

  /** statement_timeout in ms (0 = none), parsed once per value (every statement asks). */
  statementTimeoutMs(): number {
    const v = this.get('statement_timeout');
    if (v !== this.timeoutText) {
      this.timeoutMsValue = timeoutMs(v);
      this.timeoutText = v;
    }
    return this.timeoutMsValue;
  }

  private timeoutText: string | undefined;
  private timeoutMsValue = 0;
}
