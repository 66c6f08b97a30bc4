package io.github.idemtx.consumer;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.idemtx.jooq.readme.TransferService;
import java.math.BigDecimal;
import java.sql.DriverManager;
import java.util.UUID;

/**
 * The README's service, from the published artifacts: a transfer, its retry, and the key reused with
 * another request, each answered as the README says. Exits non-zero on any other answer.
 */
public final class Main {

    public static void main(String[] args) throws Exception {
        String url = args.length > 0 ? args[0] : "jdbc:postgresql://127.0.0.1:5432/postgres?user=postgres";
        String schema = "idemtx_consumer_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setMaximumPoolSize(2);
        config.setAutoCommit(false);
        try (HikariDataSource pool = new HikariDataSource(config)) {
            TransferService.migrate(pool, schema);
            TransferService service = new TransferService(pool, schema);
            String key = UUID.randomUUID().toString();
            String first = TransferService.respond(service.transfer("tenant", key, "alice", "bob", new BigDecimal("10.00")));
            String retry = TransferService.respond(service.transfer("tenant", key, "alice", "bob", new BigDecimal("10.00")));
            String other = TransferService.respond(service.transfer("tenant", key, "alice", "bob", new BigDecimal("99.00")));
            System.out.println("first: " + first);
            System.out.println("retry: " + retry);
            System.out.println("other: " + other);
            expect(first.startsWith("201 transfer ") && !first.contains("Replayed"), "a first call executes", first);
            expect(retry.equals(first + " (Idempotent-Replayed: true)"), "a retry replays the first answer", retry);
            expect(other.equals("422 key reused with another request"), "another request under the key is refused", other);
        } finally {
            try (var c = DriverManager.getConnection(url);
                    var s = c.createStatement()) {
                s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
            }
        }
        System.out.println("consumer: the README's example ran from the published artifacts");
    }

    private static void expect(boolean holds, String what, String got) {
        if (!holds) {
            throw new AssertionError("consumer: expected " + what + ", got: " + got);
        }
    }
}
