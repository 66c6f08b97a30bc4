package io.github.idemtx.ledger.storm;

import io.github.idemtx.db.testing.LocalPostgres;
import java.util.Map;

/**
 * The database of a storm that runs ledgers as child processes ({@code --payouts}, {@code --queue}):
 * {@code --db-url}, {@code --db-user}, {@code --db-password}, else the {@code LEDGER_DB_*}
 * environment; resolved as the ledger's is ({@link LocalPostgres}: the URL, else 127.0.0.1:5432,
 * else an embedded server that lives as long as the run) and handed to the children by URL.
 */
record StormDatabase(String url, String user, String password) {

    /** The flags' database, the environment's where a flag is missing (any may be null: resolved later). */
    static StormDatabase fromFlags(Map<String, String> flags) {
        return new StormDatabase(
                flags.getOrDefault("db-url", System.getenv("LEDGER_DB_URL")),
                flags.getOrDefault("db-user", System.getenv("LEDGER_DB_USER")),
                flags.getOrDefault("db-password", System.getenv("LEDGER_DB_PASSWORD")));
    }

    /** What a storm does with its resolved database. */
    @FunctionalInterface
    interface Run<T> {
        T on(StormDatabase resolved) throws Exception;
    }

    /** Resolves this database (starting one if need be), says which on {@code progress}, and runs {@code run} on it. */
    <T> T resolve(java.io.PrintStream progress, Run<T> run) throws Exception {
        try (LocalPostgres db = LocalPostgres.resolve(url, user, password, LocalLedger.SETTINGS)) {
            progress.println("storm database: " + db.describe());
            return run.on(new StormDatabase(
                    db.url(), db.user() == null ? System.getProperty("user.name") : db.user(), db.password()));
        }
    }

    /** The storm's own connections to it, named {@code application}. */
    SideDatabase side(String application) {
        return new SideDatabase(url, user, password, application);
    }
}
