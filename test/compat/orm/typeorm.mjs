// test/compat/orm/typeorm.mjs — TypeORM on Cairn (issue 7 part 3): synchronize
// creates the schema from EntitySchemas (reading information_schema /
// pg_catalog first; a second synchronize finds nothing to change), repository
// CRUD, a many-to-one relation with its FOREIGN KEY (loaded and filtered
// through TypeORM's own joins), a join through the query builder, and
// transactions (one committed, one rolled back).
// Usage: node test/compat/orm/typeorm.mjs <postgres-url>; exits non-zero on failure.
import assert from 'node:assert/strict';
import 'reflect-metadata';
import { DataSource, EntitySchema } from 'typeorm';

const url = process.argv[2];
assert.ok(url, 'usage: typeorm.mjs <url>');

const User = new EntitySchema({
  name: 'ToUser',
  tableName: 'to_users',
  columns: {
    id: { type: 'int', primary: true },
    email: { type: 'varchar', length: 120 },
    active: { type: 'boolean', default: true },
  },
});
const Order = new EntitySchema({
  name: 'ToOrder',
  tableName: 'to_orders',
  columns: {
    id: { type: 'int', primary: true },
    userId: { type: 'int', name: 'user_id' },
    total: { type: 'numeric', precision: 10, scale: 2 },
  },
  relations: { user: { type: 'many-to-one', target: 'ToUser', joinColumn: { name: 'user_id' } } },
});

// Column types, defaults, a unique column, a named UNIQUE constraint and indexes that
// synchronize must read back exactly as it wrote them.
const Post = new EntitySchema({
  name: 'ToPost',
  tableName: 'to_posts',
  columns: {
    id: { type: 'int', primary: true },
    title: { type: 'varchar', length: 200, default: 'untitled' },
    slug: { type: 'varchar', length: 100, unique: true },
    body: { type: 'text', nullable: true },
    views: { type: 'integer', default: 0 },
    score: { type: 'double precision', default: 1.5 },
    published: { type: 'boolean', default: false },
    createdAt: { type: 'timestamptz', createDate: true },
    tags: { type: 'jsonb', nullable: true },
    big: { type: 'bigint', default: 5 },
  },
  indices: [{ name: 'IDX_to_posts_title', columns: ['title'] }, { name: 'IDX_to_posts_views_pub', columns: ['views', 'published'] }],
  uniques: [{ name: 'UQ_to_posts_title_views', columns: ['title', 'views'] }],
});

const ds = new DataSource({ type: 'postgres', url, entities: [User, Order, Post], synchronize: true, logging: false, poolSize: 2 });
try {
  await ds.initialize();
  // A second synchronize finds nothing to change.
  const pending = await ds.driver.createSchemaBuilder().log();
  assert.deepEqual(pending.upQueries.map((q) => q.query), []);

  await ds.getRepository('ToPost').save({ id: 1, slug: 'first', tags: { a: [1, 2] } });
  const post = await ds.getRepository('ToPost').findOneBy({ slug: 'first' });
  assert.deepEqual([post?.title, post?.views, post?.score, post?.published, post?.big, post?.tags], ['untitled', 0, 1.5, false, '5', { a: [1, 2] }]);
  assert.ok(post?.createdAt instanceof Date);

  const users = ds.getRepository('ToUser');
  const orders = ds.getRepository('ToOrder');
  await users.save([{ id: 1, email: 'a@example.com' }, { id: 2, email: 'b@example.com', active: false }]);
  await orders.save([{ id: 10, userId: 1, total: '19.99' }, { id: 11, userId: 2, total: '5.00' }, { id: 12, userId: 1, total: '1.00' }]);
  await users.update({ id: 2 }, { active: true });
  await orders.delete({ id: 12 });
  const u2 = await users.findOneBy({ id: 2 });
  assert.equal(u2?.active, true);
  assert.equal(await orders.count(), 2);

  const joined = await ds.createQueryBuilder().select(['u.email AS email', 'o.total AS total']).from('to_orders', 'o').innerJoin('to_users', 'u', 'u.id = o.user_id').orderBy('o.id').getRawMany();
  assert.deepEqual(joined, [{ email: 'a@example.com', total: '19.99' }, { email: 'b@example.com', total: '5.00' }]);

  // The relation loaded through a LEFT JOIN that TypeORM builds itself.
  const withUser = await orders.find({ relations: { user: true }, order: { id: 'ASC' } });
  assert.deepEqual(withUser.map((o) => [o.id, o.user?.email]), [[10, 'a@example.com'], [11, 'b@example.com']]);
  const byUser = await orders.find({ where: { user: { email: 'a@example.com' } }, relations: { user: true } });
  assert.deepEqual(byUser.map((o) => o.id), [10]);

  // The relation's FOREIGN KEY holds: an order of a missing user is 23503.
  await assert.rejects(orders.insert({ id: 99, userId: 42, total: '1.00' }), (e) => e.driverError?.code === '23503');

  await ds.transaction(async (m) => {
    await m.getRepository('ToUser').save({ id: 3, email: 'c@example.com' });
    await m.getRepository('ToOrder').save({ id: 13, userId: 3, total: '7.50' });
  });
  await assert.rejects(
    ds.transaction(async (m) => {
      await m.getRepository('ToUser').save({ id: 4, email: 'ghost@example.com' });
      throw new Error('roll back');
    }),
    /roll back/,
  );
  assert.equal(await users.count(), 3);
  console.log('typeorm: ok');
} finally {
  if (ds.isInitialized) await ds.destroy();
}
