// sql/session/session-vars: statement_timeout as the session reads it before every statement (parsed once per value,
// so it must follow every SET / RESET).
import { describe, expect, it } from 'vitest';
import { SessionVars } from '../../sql/session/session-vars.js';

describe('SessionVars.statementTimeoutMs', () => {
  it('follows SET and RESET, units included', () => {
    const v = new SessionVars();
    expect(v.statementTimeoutMs()).toBe(0);
    const cases: [string, number][] = [['10s', 10_000], ['2min', 120_000], ['250', 250], ['250ms', 250], ['1h', 3_600_000], ['0', 0], ['10s', 10_000]];
    for (const [text, ms] of cases) {
      v.set('statement_timeout', text);
      expect(v.statementTimeoutMs()).toBe(ms);
      expect(v.statementTimeoutMs()).toBe(ms);
    }
    v.reset('statement_timeout');
    expect(v.statementTimeoutMs()).toBe(0);
    v.set('STATEMENT_TIMEOUT', '5s');
    expect(v.statementTimeoutMs()).toBe(5_000);
    expect(() => v.set('statement_timeout', 'soon')).toThrow();
    expect(v.statementTimeoutMs()).toBe(5_000);
  });
});
