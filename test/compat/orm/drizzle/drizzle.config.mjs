// test/compat/orm/drizzle/drizzle.config.mjs — drizzle-kit push configuration; the URL comes from CAIRN_URL.
export default {
  dialect: 'postgresql',
  schema: './test/compat/orm/drizzle/schema.mjs',
  dbCredentials: { url: process.env.CAIRN_URL },
  strict: false,
  verbose: false,
};
