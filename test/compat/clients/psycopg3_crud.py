# test/compat/clients/psycopg3_crud.py — psycopg 3 (Debian python3-psycopg) on Cairn:
# CRUD with server-side parameters, a join, a transaction block that commits,
# one that rolls back on an exception.
# Usage: /usr/bin/python3 psycopg3_crud.py <postgres-url>; exits non-zero on failure.
import sys

import psycopg

with psycopg.connect(sys.argv[1], autocommit=True) as conn:
    conn.execute("CREATE TABLE py3_users (id INT PRIMARY KEY, email TEXT NOT NULL, active BOOL DEFAULT true)")
    conn.execute("CREATE TABLE py3_logins (id INT PRIMARY KEY, user_id INT NOT NULL, at TIMESTAMPTZ)")
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO py3_users (id, email) VALUES (%s, %s)", [(1, "a@x.io"), (2, "b@x.io")])
        cur.execute("INSERT INTO py3_logins VALUES (%s, %s, now()), (%s, %s, now())", (10, 1, 11, 1))
        cur.execute("UPDATE py3_users SET active = %s WHERE id = %s", (False, 2))
        assert cur.rowcount == 1
        cur.execute("SELECT u.email, count(l.id) FROM py3_users u LEFT JOIN py3_logins l ON l.user_id = u.id GROUP BY u.email ORDER BY u.email")
        assert cur.fetchall() == [("a@x.io", 2), ("b@x.io", 0)]
    with conn.transaction():
        conn.execute("INSERT INTO py3_users (id, email) VALUES (3, 'c@x.io')")
        conn.execute("DELETE FROM py3_logins WHERE id = 11")
    try:
        with conn.transaction():
            conn.execute("INSERT INTO py3_users (id, email) VALUES (4, 'ghost@x.io')")
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    row = conn.execute("SELECT count(*) FROM py3_users").fetchone()
    assert row == (3,), row
    row = conn.execute("SELECT count(*) FROM py3_logins").fetchone()
    assert row == (1,), row
    row = conn.execute("SELECT active FROM py3_users WHERE id = %s", (2,)).fetchone()
    assert row == (False,), row
    print("psycopg3: ok")
