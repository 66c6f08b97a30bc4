package io.github.idemtx.ledger.storm;

import io.github.idemtx.db.testing.ConnectionCheck;
import io.github.idemtx.db.testing.LocalPostgres;
import io.github.idemtx.ledger.LedgerConfig;
import io.github.idemtx.ledger.LedgerServer;
import java.io.IOException;

/**
 * The ledger on a PostgreSQL found or started for you, as the README's commands promise with only
 * a JDK: the settings' URL ({@code embedded[:major]} and {@code testcontainers[:image]} too), else
 * 127.0.0.1:5432 as {@code postgres}, else an embedded PostgreSQL ({@link LocalPostgres},
 * docs/database.md). Closing it stops the ledger, then the database if it started one. The service
 * itself ({@link LedgerServer}) starts no database: it uses the one its settings name.
 */
public final class LocalLedger implements AutoCloseable {

    /** The ledger's database settings' names, for {@link LocalPostgres}' messages. */
    static final ConnectionCheck.Settings SETTINGS = new ConnectionCheck.Settings(
            LedgerConfig.DB_URL_SETTING, LedgerConfig.DB_USER_SETTING, LedgerConfig.DB_PASSWORD_SETTING);

    private final LedgerServer server;
    private final LocalPostgres database;

    private LocalLedger(LedgerServer server, LocalPostgres database) {
        this.server = server;
        this.database = database;
    }

    /** Starts the ledger with {@code config}, its schema emptied first if {@code fresh}, on the database resolved as above. */
    public static LocalLedger start(LedgerConfig config, boolean fresh) throws IOException {
        LocalPostgres db = LocalPostgres.resolve(config.dbUrl(), config.dbUser(), config.dbPassword(), SETTINGS);
        System.out.println("ledger database: " + db.describe());
        try {
            LedgerConfig resolved = config.withDatabase(db.url(), db.user(), db.password());
            return new LocalLedger(fresh ? LedgerServer.startFresh(resolved) : LedgerServer.start(resolved), db);
        } catch (RuntimeException | IOException e) {
            db.close();
            throw e;
        }
    }

    /** The service alone (port 8080 unless {@code --port} says otherwise), as {@link LedgerServer#main} but with the database found or started. */
    public static void main(String[] args) throws Exception {
        LedgerConfig config = LedgerConfig.from(args, System.getenv());
        LocalLedger ledger;
        try {
            ledger = start(config, false);
        } catch (LocalPostgres.NoDatabaseException e) {
            // a setting to change, not a crash: the reason alone, without a stack trace
            System.err.println("ledger: " + e.getMessage());
            System.exit(2);
            return;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(ledger::close, "ledger-shutdown"));
        LedgerServer.announce(ledger.server, config);
    }

    /** The running ledger. */
    public LedgerServer server() {
        return server;
    }

    @Override
    public void close() {
        server.close();
        database.close();
    }
}
