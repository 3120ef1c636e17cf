// test/compat/orm/drizzle/schema.mjs — the Drizzle schema pushed by drizzle-kit and used by ../drizzle.mjs.
import { index, integer, numeric, pgTable, text, uniqueIndex, varchar } from 'drizzle-orm/pg-core';

export const dzCustomers = pgTable('dz_customers', {
  id: integer('id').primaryKey(),
  name: varchar('name', { length: 80 }).notNull(),
  city: text('city'),
}, (t) => [uniqueIndex('dz_customers_name_idx').on(t.name)]);

export const dzInvoices = pgTable('dz_invoices', {
  id: integer('id').primaryKey(),
  customerId: integer('customer_id').notNull(),
  amount: numeric('amount', { precision: 10, scale: 2 }).notNull(),
}, (t) => [index('dz_invoices_customer_idx').on(t.customerId)]);
