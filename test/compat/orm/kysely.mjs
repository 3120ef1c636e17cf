// test/compat/orm/kysely.mjs — Kysely on Cairn (issue 7 part 3): schema builder,
// introspection (db.introspection.getTables reads pg_catalog), CRUD, a join and
// a transaction (one committed, one rolled back), each result checked.
// Usage: node test/compat/orm/kysely.mjs <postgres-url>; exits non-zero on failure.
import assert from 'node:assert/strict';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';

const url = process.argv[2];
assert.ok(url, 'usage: kysely.mjs <url>');
const db = new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 2 }) }) });

try {
  await db.schema.createTable('ky_person').addColumn('id', 'integer', (c) => c.primaryKey()).addColumn('first_name', 'varchar(50)', (c) => c.notNull()).addColumn('age', 'integer').execute();
  await db.schema.createTable('ky_pet').addColumn('id', 'integer', (c) => c.primaryKey()).addColumn('owner_id', 'integer', (c) => c.notNull()).addColumn('name', 'text', (c) => c.notNull()).addColumn('species', 'text').execute();

  const tables = await db.introspection.getTables();
  const person = tables.find((t) => t.name === 'ky_person');
  assert.ok(person, 'introspection lists ky_person');
  assert.equal(person.schema, 'public');
  assert.deepEqual(person.columns.map((c) => [c.name, c.dataType, c.isNullable]), [['id', 'int4', false], ['first_name', 'varchar', false], ['age', 'int4', true]]);

  await db.insertInto('ky_person').values([{ id: 1, first_name: 'Jennifer', age: 40 }, { id: 2, first_name: 'Arnold', age: 70 }]).execute();
  await db.insertInto('ky_pet').values([{ id: 1, owner_id: 1, name: 'Catto', species: 'cat' }, { id: 2, owner_id: 2, name: 'Doggo', species: 'dog' }, { id: 3, owner_id: 1, name: 'Hammo', species: 'hamster' }]).execute();
  const upd = await db.updateTable('ky_person').set({ age: 41 }).where('id', '=', 1).executeTakeFirst();
  assert.equal(upd.numUpdatedRows, 1n);
  const del = await db.deleteFrom('ky_pet').where('id', '=', 3).executeTakeFirst();
  assert.equal(del.numDeletedRows, 1n);
  const joined = await db.selectFrom('ky_pet').innerJoin('ky_person', 'ky_person.id', 'ky_pet.owner_id').select(['ky_person.first_name', 'ky_pet.name', 'ky_person.age']).orderBy('ky_pet.id').execute();
  assert.deepEqual(joined, [{ first_name: 'Jennifer', name: 'Catto', age: 41 }, { first_name: 'Arnold', name: 'Doggo', age: 70 }]);

  await db.transaction().execute(async (trx) => {
    await trx.insertInto('ky_person').values({ id: 3, first_name: 'Sylvester', age: 60 }).execute();
    await trx.insertInto('ky_pet').values({ id: 4, owner_id: 3, name: 'Tweety', species: 'bird' }).execute();
  });
  await assert.rejects(
    db.transaction().execute(async (trx) => {
      await trx.insertInto('ky_person').values({ id: 4, first_name: 'Ghost', age: 1 }).execute();
      throw new Error('roll back');
    }),
    /roll back/,
  );
  const count = await db.selectFrom('ky_person').select(sql`count(*)`.as('n')).executeTakeFirstOrThrow();
  assert.equal(String(count.n), '3');
  console.log('kysely: ok');
} finally {
  await db.destroy();
}
