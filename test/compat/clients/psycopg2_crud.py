# test/compat/clients/psycopg2_crud.py — psycopg2 (Debian python3-psycopg2) on Cairn:
# CRUD with parameters, a join, a committed and a rolled-back transaction.
# Usage: /usr/bin/python3 psycopg2_crud.py <postgres-url>; exits non-zero on failure.
import sys
from decimal import Decimal

import psycopg2

conn = psycopg2.connect(sys.argv[1])
try:
    cur = conn.cursor()
    cur.execute("CREATE TABLE py2_items (id INT PRIMARY KEY, name TEXT NOT NULL, price NUMERIC(8,2))")
    cur.execute("CREATE TABLE py2_stock (item_id INT PRIMARY KEY, qty INT NOT NULL)")
    cur.executemany("INSERT INTO py2_items VALUES (%s, %s, %s)", [(1, "bolt", Decimal("0.25")), (2, "nut", Decimal("0.10")), (3, "gear", Decimal("4.00"))])
    cur.executemany("INSERT INTO py2_stock VALUES (%s, %s)", [(1, 100), (2, 250)])
    conn.commit()
    cur.execute("UPDATE py2_items SET price = %s WHERE id = %s", (Decimal("0.30"), 1))
    assert cur.rowcount == 1
    cur.execute("DELETE FROM py2_items WHERE id = %s", (3,))
    assert cur.rowcount == 1
    conn.commit()
    cur.execute("SELECT i.name, i.price, s.qty FROM py2_items i JOIN py2_stock s ON s.item_id = i.id ORDER BY i.id")
    rows = cur.fetchall()
    assert rows == [("bolt", Decimal("0.30"), 100), ("nut", Decimal("0.10"), 250)], rows
    # A transaction that commits, one that rolls back.
    cur.execute("UPDATE py2_stock SET qty = qty - 10 WHERE item_id = 1")
    cur.execute("INSERT INTO py2_items VALUES (4, 'washer', 0.05)")
    conn.commit()
    cur.execute("INSERT INTO py2_items VALUES (5, 'ghost', 1)")
    conn.rollback()
    cur.execute("SELECT count(*), sum(price) FROM py2_items")
    assert cur.fetchone() == (3, Decimal("0.45"))
    cur.execute("SELECT qty FROM py2_stock WHERE item_id = 1")
    assert cur.fetchone() == (90,)
    print("psycopg2: ok")
finally:
    conn.close()
