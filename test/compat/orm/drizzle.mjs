// test/compat/orm/drizzle.mjs — Drizzle on Cairn (issue 7 part 3): `drizzle-kit push`
// creates the schema of drizzle/schema.mjs (introspecting pg_catalog /
// information_schema first), a second push finds nothing to change, then
// drizzle-orm CRUD, a join and transactions (one committed, one rolled back).
// Usage: node test/compat/orm/drizzle.mjs <postgres-url>; exits non-zero on failure.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { asc, eq, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { dzCustomers, dzInvoices } from './drizzle/schema.mjs';

const url = process.argv[2];
assert.ok(url, 'usage: drizzle.mjs <url>');

function push() {
  const r = spawnSync(process.execPath, ['node_modules/drizzle-kit/bin.cjs', 'push', '--force', '--config', 'test/compat/orm/drizzle/drizzle.config.mjs'], { env: { ...process.env, CAIRN_URL: url }, encoding: 'utf8' });
  const out = `${r.stdout}${r.stderr}`.replace(/\r/g, '\n');
  assert.equal(r.status, 0, `drizzle-kit push failed:\n${out}`);
  return out;
}

assert.match(push(), /Changes applied/);
// A second push introspects the tables it made (pg_attribute ⋈ information_schema.columns with
// identity_*, indexes through unnest / generate_subscripts over int2vector, pg_opclass,
// pg_stat_user_indexes): an answer that differs from PostgreSQL's shows up as a change here.
assert.match(push(), /No changes detected/);

const pool = new pg.Pool({ connectionString: url, max: 2 });
const db = drizzle(pool);
try {
  await db.insert(dzCustomers).values([{ id: 1, name: 'Acme', city: 'Oslo' }, { id: 2, name: 'Globex', city: null }]);
  await db.insert(dzInvoices).values([{ id: 100, customerId: 1, amount: '250.00' }, { id: 101, customerId: 2, amount: '99.95' }, { id: 102, customerId: 1, amount: '1.00' }]);
  await db.update(dzCustomers).set({ city: 'Springfield' }).where(eq(dzCustomers.id, 2));
  await db.delete(dzInvoices).where(eq(dzInvoices.id, 102));
  const joined = await db.select({ name: dzCustomers.name, city: dzCustomers.city, amount: dzInvoices.amount }).from(dzInvoices).innerJoin(dzCustomers, eq(dzCustomers.id, dzInvoices.customerId)).orderBy(asc(dzInvoices.id));
  assert.deepEqual(joined, [{ name: 'Acme', city: 'Oslo', amount: '250.00' }, { name: 'Globex', city: 'Springfield', amount: '99.95' }]);

  await db.transaction(async (tx) => {
    await tx.insert(dzCustomers).values({ id: 3, name: 'Initech' });
    await tx.insert(dzInvoices).values({ id: 103, customerId: 3, amount: '10.00' });
  });
  await assert.rejects(
    db.transaction(async (tx) => {
      await tx.insert(dzCustomers).values({ id: 4, name: 'Ghost' });
      throw new Error('roll back');
    }),
    /roll back/,
  );
  const [{ n }] = await db.select({ n: sql`count(*)`.mapWith(Number) }).from(dzCustomers);
  assert.equal(n, 3);
  console.log('drizzle: ok');
} finally {
  await pool.end();
}
