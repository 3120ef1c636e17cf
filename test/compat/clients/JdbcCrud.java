// test/compat/clients/JdbcCrud.java — PgJDBC (Debian libpostgresql-jdbc-java) on Cairn:
// DDL, prepared-statement CRUD (server-side prepare after 5 executions), batch
// insert, a join, DatabaseMetaData table lookup, a committed and a rolled-back
// transaction. Usage (single-file source launch, Java 17):
//   java -cp /usr/share/java/postgresql.jar JdbcCrud.java <postgres-url>
import java.math.BigDecimal;
import java.net.URI;
import java.sql.*;

public class JdbcCrud {
  static void check(boolean ok, String what) {
    if (!ok) throw new AssertionError(what);
  }

  public static void main(String[] args) throws Exception {
    URI u = new URI(args[0]);
    String jdbc = "jdbc:postgresql://" + u.getHost() + ":" + u.getPort() + u.getPath() + "?sslmode=disable&prepareThreshold=5";
    try (Connection c = DriverManager.getConnection(jdbc, u.getUserInfo(), "")) {
      try (Statement s = c.createStatement()) {
        s.execute("CREATE TABLE jd_accounts (id INT PRIMARY KEY, owner TEXT NOT NULL, balance NUMERIC(12,2) NOT NULL)");
        s.execute("CREATE TABLE jd_owners (name TEXT PRIMARY KEY, city TEXT)");
      }
      try (PreparedStatement p = c.prepareStatement("INSERT INTO jd_accounts VALUES (?, ?, ?)")) {
        for (int i = 1; i <= 10; i++) {
          p.setInt(1, i);
          p.setString(2, i % 2 == 0 ? "alice" : "bob");
          p.setBigDecimal(3, new BigDecimal("100.00"));
          p.addBatch();
        }
        int[] n = p.executeBatch();
        check(n.length == 10, "batch of 10");
      }
      try (Statement s = c.createStatement()) {
        s.executeUpdate("INSERT INTO jd_owners VALUES ('alice', 'Lisbon'), ('bob', 'Porto')");
      }
      try (PreparedStatement p = c.prepareStatement("SELECT balance FROM jd_accounts WHERE id = ?")) {
        for (int i = 1; i <= 10; i++) {
          p.setInt(1, i);
          try (ResultSet r = p.executeQuery()) {
            check(r.next() && r.getBigDecimal(1).compareTo(new BigDecimal("100")) == 0, "balance of " + i);
          }
        }
      }
      try (PreparedStatement p = c.prepareStatement("UPDATE jd_accounts SET balance = balance + ? WHERE id = ?")) {
        p.setBigDecimal(1, new BigDecimal("5.50"));
        p.setInt(2, 3);
        check(p.executeUpdate() == 1, "update one row");
      }
      try (Statement s = c.createStatement()) {
        check(s.executeUpdate("DELETE FROM jd_accounts WHERE id = 10") == 1, "delete one row");
        try (ResultSet r = s.executeQuery("SELECT o.city, count(*), sum(a.balance) FROM jd_accounts a JOIN jd_owners o ON o.name = a.owner GROUP BY o.city ORDER BY o.city")) {
          check(r.next() && r.getString(1).equals("Lisbon") && r.getInt(2) == 4 && r.getBigDecimal(3).compareTo(new BigDecimal("400")) == 0, "Lisbon row");
          check(r.next() && r.getString(1).equals("Porto") && r.getInt(2) == 5 && r.getBigDecimal(3).compareTo(new BigDecimal("505.5")) == 0, "Porto row");
          check(!r.next(), "two rows");
        }
      }
      try (ResultSet r = c.getMetaData().getTables(null, "public", "jd_%", new String[] {"TABLE"})) {
        int n = 0;
        while (r.next()) n++;
        check(n == 2, "DatabaseMetaData.getTables finds both tables, got " + n);
      }
      // Transfer in a transaction; then one rolled back.
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        s.executeUpdate("UPDATE jd_accounts SET balance = balance - 30 WHERE id = 1");
        s.executeUpdate("UPDATE jd_accounts SET balance = balance + 30 WHERE id = 2");
      }
      c.commit();
      try (Statement s = c.createStatement()) {
        s.executeUpdate("DELETE FROM jd_accounts");
      }
      c.rollback();
      c.setAutoCommit(true);
      try (Statement s = c.createStatement(); ResultSet r = s.executeQuery("SELECT count(*), sum(balance) FROM jd_accounts")) {
        check(r.next() && r.getInt(1) == 9 && r.getBigDecimal(2).compareTo(new BigDecimal("905.50")) == 0, "totals after transactions");
      }
    }
    System.out.println("jdbc: ok");
  }
}
