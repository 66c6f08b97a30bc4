package io.github.idemtx.db;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * The claim table's definition as the catalog has it after the migrations: its columns (collations
 * and defaults included), constraints, indexes and triggers, so that it can be created again in
 * another layout without a copy of the migrations that could fall behind them.
 */
record TableDdl(List<String> columns, List<String> constraints, List<String> indexes, List<String> triggers) {

    /** Reads the definition of {@code table} (a qualified, quoted-where-needed name). */
    static TableDdl read(Connection c, String table) throws SQLException {
        List<String> columns = strings(
                c,
                "SELECT quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod)"
                        + " || CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation"
                        + "      THEN ' COLLATE ' || quote_ident(co.collname) ELSE '' END"
                        + " || CASE WHEN d.adbin IS NOT NULL THEN ' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid) ELSE '' END"
                        + " || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END"
                        + " FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid"
                        + " LEFT JOIN pg_collation co ON co.oid = a.attcollation"
                        + " LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
                        + " WHERE a.attrelid = to_regclass(?) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                table);
        // the primary key first, each by its name (the library recognises a unique violation by the
        // key's); not the constraint trigger's entry (contype t), which CREATE CONSTRAINT TRIGGER makes
        List<String> constraints = strings(
                c,
                "SELECT 'CONSTRAINT ' || quote_ident(conname) || ' ' || pg_get_constraintdef(oid)"
                        + " FROM pg_constraint WHERE conrelid = to_regclass(?) AND contype <> 't'"
                        + " ORDER BY contype <> 'p', conname",
                table);
        List<String> indexes = strings(
                c,
                "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i WHERE i.indrelid = to_regclass(?)"
                        + " AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)"
                        + " ORDER BY i.indexrelid",
                table);
        List<String> triggers = strings(
                c,
                "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = to_regclass(?) AND NOT tgisinternal"
                        + " ORDER BY tgname",
                table);
        return new TableDdl(columns, constraints, indexes, triggers);
    }

    /**
     * The statements that replace the (empty) {@code table} by one range-partitioned by
     * {@code idem_key}: the same columns, constraints (validated: the table is empty), indexes and
     * triggers, which PostgreSQL then creates on every partition.
     */
    List<String> partitionByKey(String table) {
        List<String> ddl = new ArrayList<>();
        ddl.add("DROP TABLE " + table);
        ddl.add("CREATE TABLE " + table + " (" + String.join(", ", columns) + ") PARTITION BY RANGE (idem_key)");
        for (String k : constraints) {
            ddl.add("ALTER TABLE " + table + " ADD " + k.replace(" NOT VALID", ""));
        }
        ddl.addAll(indexes);
        ddl.addAll(triggers);
        return ddl;
    }

    private static List<String> strings(Connection c, String sql, String table) throws SQLException {
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, table);
            try (ResultSet r = ps.executeQuery()) {
                while (r.next()) {
                    out.add(r.getString(1));
                }
            }
        }
        return out;
    }
}
