// test/compat/orm/knex.mjs — Knex on Cairn (issue 7 part 3): migrations create the
// schema (knex_migrations bookkeeping included), then CRUD, a join and a
// transaction (one committed, one rolled back), each result checked.
// Usage: node test/compat/orm/knex.mjs <postgres-url>; exits non-zero on failure.
import assert from 'node:assert/strict';
import knexFactory from 'knex';

const url = process.argv[2];
assert.ok(url, 'usage: knex.mjs <url>');
const knex = knexFactory({ client: 'pg', connection: url, pool: { min: 1, max: 2 } });

const migrations = {
  async getMigrations() {
    return ['001_init'];
  },
  getMigrationName(m) {
    return m;
  },
  async getMigration() {
    return {
      async up(k) {
        await k.schema.createTable('knex_authors', (t) => {
          t.integer('id').primary();
          t.string('name', 100).notNullable();
        });
        await k.schema.createTable('knex_books', (t) => {
          t.integer('id').primary();
          t.integer('author_id').notNullable();
          t.string('title').notNullable();
          t.decimal('price', 8, 2);
        });
      },
      async down(k) {
        await k.schema.dropTable('knex_books');
        await k.schema.dropTable('knex_authors');
      },
    };
  },
};

try {
  const [, applied] = await knex.migrate.latest({ migrationSource: migrations });
  assert.deepEqual(applied, ['001_init']);
  assert.equal(await knex.schema.hasTable('knex_books'), true);
  assert.equal(await knex.schema.hasColumn('knex_books', 'price'), true);
  // A second run applies nothing.
  const [, again] = await knex.migrate.latest({ migrationSource: migrations });
  assert.deepEqual(again, []);

  await knex('knex_authors').insert([{ id: 1, name: 'Ursula' }, { id: 2, name: 'Iain' }]);
  await knex('knex_books').insert([
    { id: 10, author_id: 1, title: 'The Dispossessed', price: '9.50' },
    { id: 11, author_id: 2, title: 'Excession', price: '12.00' },
    { id: 12, author_id: 1, title: 'Lathe of Heaven', price: '7.25' },
  ]);
  assert.equal(await knex('knex_books').where({ id: 11 }).update({ price: '11.00' }), 1);
  assert.equal(await knex('knex_books').where({ id: 12 }).del(), 1);
  const rows = await knex('knex_books').join('knex_authors', 'knex_authors.id', 'knex_books.author_id').select('knex_authors.name', 'knex_books.title', 'knex_books.price').orderBy('knex_books.id');
  assert.deepEqual(rows, [
    { name: 'Ursula', title: 'The Dispossessed', price: '9.50' },
    { name: 'Iain', title: 'Excession', price: '11.00' },
  ]);

  await knex.transaction(async (trx) => {
    await trx('knex_authors').insert({ id: 3, name: 'Octavia' });
    await trx('knex_books').insert({ id: 13, author_id: 3, title: 'Kindred', price: '8.00' });
  });
  await assert.rejects(
    knex.transaction(async (trx) => {
      await trx('knex_authors').insert({ id: 4, name: 'Ghost' });
      throw new Error('roll back');
    }),
    /roll back/,
  );
  const names = (await knex('knex_authors').orderBy('id').pluck('name'));
  assert.deepEqual(names, ['Ursula', 'Iain', 'Octavia']);
  console.log('knex: ok');
} finally {
  await knex.destroy();
}
