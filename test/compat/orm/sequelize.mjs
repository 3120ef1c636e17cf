// test/compat/orm/sequelize.mjs — Sequelize on Cairn (issue 7 part 3): sync()
// creates the tables (introspecting information_schema / pg_catalog), CRUD
// through models, an association (hasMany / belongsTo) read with include (a
// join), and managed transactions (one committed, one rolled back).
// Usage: node test/compat/orm/sequelize.mjs <postgres-url>; exits non-zero on failure.
import assert from 'node:assert/strict';
import { DataTypes, Sequelize } from 'sequelize';

const url = process.argv[2];
assert.ok(url, 'usage: sequelize.mjs <url>');
const sequelize = new Sequelize(url, { dialect: 'postgres', logging: false, pool: { max: 2 }, timezone: 'UTC' });

const Author = sequelize.define('SqAuthor', {
  id: { type: DataTypes.INTEGER, primaryKey: true },
  name: { type: DataTypes.STRING(80), allowNull: false },
}, { tableName: 'sq_authors', timestamps: false });
const Post = sequelize.define('SqPost', {
  id: { type: DataTypes.INTEGER, primaryKey: true },
  title: { type: DataTypes.STRING, allowNull: false },
  views: { type: DataTypes.INTEGER, defaultValue: 0 },
}, { tableName: 'sq_posts', timestamps: false });
Author.hasMany(Post, { foreignKey: { name: 'authorId', field: 'author_id' }, constraints: process.env.SEQUELIZE_FK === '1' });
Post.belongsTo(Author, { foreignKey: { name: 'authorId', field: 'author_id' }, constraints: process.env.SEQUELIZE_FK === '1' });

try {
  await sequelize.authenticate();
  await sequelize.sync();
  await sequelize.sync({ alter: false }); // a second sync finds the tables

  await Author.bulkCreate([{ id: 1, name: 'Ada' }, { id: 2, name: 'Grace' }]);
  await Post.create({ id: 10, title: 'Notes', authorId: 1 });
  await Post.create({ id: 11, title: 'Compilers', authorId: 2, views: 5 });
  await Post.create({ id: 12, title: 'Draft', authorId: 1 });
  const [n] = await Post.update({ views: 7 }, { where: { id: 10 } });
  assert.equal(n, 1);
  assert.equal(await Post.destroy({ where: { id: 12 } }), 1);
  const found = await Post.findByPk(11);
  assert.equal(found?.title, 'Compilers');

  const authors = await Author.findAll({ include: Post, order: [['id', 'ASC']] });
  assert.deepEqual(authors.map((a) => [a.name, a.SqPosts.map((p) => [p.title, p.views])]), [['Ada', [['Notes', 7]]], ['Grace', [['Compilers', 5]]]]);
  const post = await Post.findOne({ where: { id: 10 }, include: Author });
  assert.equal(post?.SqAuthor?.name, 'Ada');

  await sequelize.transaction(async (t) => {
    await Author.create({ id: 3, name: 'Barbara' }, { transaction: t });
    await Post.create({ id: 13, title: 'CLU', authorId: 3 }, { transaction: t });
  });
  await assert.rejects(
    sequelize.transaction(async (t) => {
      await Author.create({ id: 4, name: 'Ghost' }, { transaction: t });
      throw new Error('roll back');
    }),
    /roll back/,
  );
  assert.equal(await Author.count(), 3);
  assert.equal(await Post.count({ where: { authorId: 3 } }), 1);
  console.log('sequelize: ok');
} finally {
  await sequelize.close();
}
