package io.github.idemtx.ledger;

import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.jooq.IdempotentTransaction;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The ledger's settings, from {@code --name=value} flags or {@code LEDGER_*} environment variables
 * (flags win):
 *
 * <ul>
 *   <li>{@code LEDGER_DB_URL}, {@code LEDGER_DB_USER}, {@code LEDGER_DB_PASSWORD} ({@code --db-url},
 *       ...): the PostgreSQL, a JDBC URL; unset, 127.0.0.1:5432. The user is {@code postgres} unless
 *       {@code LEDGER_DB_USER} or the URL's {@code user} parameter names another. The example's
 *       launcher ({@code LocalLedger} in {@code example-ledger-storm}) also takes
 *       {@code embedded[:version]} / {@code testcontainers[:image]}, and unset starts an embedded
 *       PostgreSQL when nothing at 127.0.0.1:5432 lets {@code postgres} in (docs/database.md).
 *   <li>{@code LEDGER_SCHEMA} ({@code --schema}): where the ledger's and the claims' tables go;
 *       default {@code ledger}.
 *   <li>{@code LEDGER_PORT} ({@code --port}): default 8080; 0 picks a free port.
 *   <li>{@code LEDGER_TOKENS} ({@code --tokens}): {@code token=tenant,token=tenant}; unset, two demo
 *       tenants get random tokens, printed at start.
 *   <li>{@code LEDGER_POOL_SIZE} ({@code --pool-size}): connections, default 24.
 *   <li>{@code LEDGER_CLAIM_MODE} ({@code --claim-mode}): unset, the library's default
 *       ({@link io.github.idemtx.jooq.IdempotentTransaction#DEFAULT_CLAIM_MODE}, claim first: the API's
 *       prompt 409 for a retry of a request still running, even while the first request waits on an
 *       account's lock); {@code WORK_FIRST} or {@code ADAPTIVE} to compare the opt-in orders (the storm
 *       runs each); see {@link ClaimMode}.
 *   <li>{@code LEDGER_BANK_URL} ({@code --bank-url}): the bank payouts go to (see {@code BankServer});
 *       unset, {@code POST /payouts} answers 503. {@code LEDGER_BANK_NAME} ({@code --bank-name}, default
 *       {@code bank}): the name the books give that bank (its clearing and paid_out accounts).
 *       {@code LEDGER_PAYOUT_LOOKUPS_MS} ({@code --payout-lookups-ms}, default {@code 1000,2000,4000}):
 *       the delays, in milliseconds, of the bank lookups of a payout whose outcome is unknown before
 *       it needs reconciliation (the library's default is 1, 2, 4 minutes; the demo's is seconds).
 *       {@code LEDGER_BANK_MODE} ({@code --bank-mode}): {@code keyed} (default: the bank deduplicates
 *       by key and answers lookups) or {@code statement} (it does neither: payouts are settled by its
 *       camt.053 statements, {@link StatementBank}); then {@code LEDGER_STATEMENT_LAG_MS} (default
 *       5000: how long after a send the bank has booked it) and {@code LEDGER_STATEMENT_POLL_MS}
 *       (default 1000: how often its statement is fetched).
 *   <li>{@code LEDGER_AMQP_URL} ({@code --amqp-url}): a RabbitMQ, {@code amqp://user:password@host:port};
 *       set, the ledger also applies the transfer intents of a queue ({@link TransferQueue}); then
 *       {@code LEDGER_QUEUE} ({@code --queue}, default {@code ledger.transfers}: the queue, and its
 *       {@code .replies} and {@code .dlq}), {@code LEDGER_QUEUE_CONSUMERS} (default 4),
 *       {@code LEDGER_QUEUE_PREFETCH} (default 16), {@code LEDGER_QUEUE_DELIVERY_LIMIT} (deliveries of
 *       a message that keeps failing before it is dead-lettered, default 5),
 *       {@code LEDGER_QUEUE_LOCK_TIMEOUT_MS} (how long a queued transfer waits for an account's row
 *       lock before the attempt fails and is tried again, default 5000) and
 *       {@code LEDGER_KEY_SECRET} (64 or more hexadecimal digits: the secret of the keys derived for
 *       intents that carry no id; unset, a demo secret, with a warning at start).
 *   <li>{@code LEDGER_ADMIN_PORT} ({@code --admin-port}): the operators' port ({@link LedgerAdmin}:
 *       claims to see and settle), on 127.0.0.1 only; 0 picks a free port; unset, none is served.
 *       {@code LEDGER_ADMIN_TOKEN} ({@code --admin-token}): the bearer token every request to its JSON
 *       routes ({@code /admin/...}) must carry, at least 16 characters; unset (null here), the ledger
 *       makes a random one and prints it at start.
 *   <li>{@code LEDGER_EVENTS_EXCHANGE} ({@code --events-exchange}; needs {@code LEDGER_AMQP_URL}): a
 *       RabbitMQ topic exchange (declared durable at start) that every applied transfer and deposit is
 *       announced on, through the library's outbox: the event commits with the transfer and its claim,
 *       and a relay publishes it at least once, with publisher confirms, under a message id derived
 *       from the claim (routing key {@code transfer.applied} or {@code deposit.applied}); unset (null
 *       here), none. {@code LEDGER_EVENTS_LEASE_MS} ({@code --events-lease-ms}, default 60000, the
 *       library's): how long the relay holds a batch it leased; an event whose send or mark a lost
 *       connection interrupted is sent again (same message id) once it passes.
 *       {@code LEDGER_EVENTS_POLL_MS} ({@code --events-poll-ms}, default 200, a demo's latency; the
 *       library's is 1000): the relay's pause between polls that found less than a batch, so also
 *       between two events of one account (one per ordering key per poll).
 * </ul>
 */
public record LedgerConfig(
        String dbUrl,
        String dbUser,
        String dbPassword,
        String schema,
        int port,
        Map<String, String> tokens,
        boolean demoTokens,
        int poolSize,
        String bankUrl,
        String bankName,
        java.util.List<java.time.Duration> payoutLookups,
        ClaimMode claimMode,
        Queue queue,
        Integer adminPort,
        String adminToken,
        String eventsExchange,
        java.time.Duration eventsLease,
        java.time.Duration eventsPoll,
        StatementBank statementBank) {

    /**
     * {@code LEDGER_BANK_MODE=statement}: the bank takes no key and answers no lookup
     * ({@code BankServer --mode=statement}); payouts are settled by its camt.053 statements,
     * fetched every {@code poll}, a payout missing from them {@code lag} after its send being sent
     * again (docs/destinations.md).
     */
    public record StatementBank(java.time.Duration lag, java.time.Duration poll) {}

    /**
     * The transfer queue's settings; see the class comment. {@code haltEvery} is a fault for
     * {@code storm --queue} ({@code --queue-fault-halt-every}, never an environment variable): the
     * process halts, as a SIGKILL would stop it, at its {@code haltEvery}-th transfer committed
     * before the message was acknowledged; 0, never.
     */
    public record Queue(
            String amqpUrl,
            String name,
            int consumers,
            int prefetch,
            int deliveryLimit,
            int lockTimeoutMillis,
            byte[] keySecret,
            boolean demoSecret,
            int haltEvery) {

        /** The dead-letter queue's header that says why a message is there. */
        public static final String REASON_HEADER = "x-ledger-reason";
        /** The exit status of a {@code haltEvery} halt after the commit, before the answer was published. */
        public static final int HALT_BEFORE_ANSWER = 86;
        /** The exit status of a {@code haltEvery} halt after the answer, before the acknowledgement. */
        public static final int HALT_BEFORE_ACK = 87;

        @Override
        public String toString() {
            // never the secret nor the broker's password
            return "Queue[" + name + " at " + amqpUrl.replaceAll("//[^@/]*@", "//") + ", consumers=" + consumers
                    + ", prefetch=" + prefetch + ", deliveryLimit=" + deliveryLimit + ", lockTimeoutMillis="
                    + lockTimeoutMillis
                    + (demoSecret ? ", demo key secret" : "") + (haltEvery > 0 ? ", haltEvery=" + haltEvery : "")
                    + "]";
        }
    }

    /** The secret of derived keys when {@code LEDGER_KEY_SECRET} is unset: public, so for demos only. */
    static final String DEMO_KEY_SECRET = "6c6564676572206578616d706c652064656d6f206b657920736563726574202121";

    /** The database settings' names, for messages. */
    public static final String DB_URL_SETTING = "LEDGER_DB_URL (--db-url)";

    public static final String DB_USER_SETTING = "LEDGER_DB_USER (--db-user)";
    public static final String DB_PASSWORD_SETTING = "LEDGER_DB_PASSWORD (--db-password)";

    public LedgerConfig {
        tokens = Map.copyOf(tokens);
        io.github.idemtx.db.IdempotencySchema.requireSchemaName(schema);
    }

    /** The settings {@code args} ({@code --name=value}) and {@code env} ({@code LEDGER_*}) give; flags win. */
    public static LedgerConfig from(String[] args, Map<String, String> env) {
        Map<String, String> flags = Flags.parse("arguments", args);
        String url = setting(flags, env, "db-url", "LEDGER_DB_URL", null);
        String user = setting(flags, env, "db-user", "LEDGER_DB_USER", null);
        if (user == null && url != null && !url.matches("(?i).*[?&]user=.*")) {
            user = LedgerServer.DEFAULT_DB_USER; // not pgjdbc's default, the OS user: as docs/ledger-example.md says
        }
        String password = setting(flags, env, "db-password", "LEDGER_DB_PASSWORD", null);
        String schema = setting(flags, env, "schema", "LEDGER_SCHEMA", "ledger");
        int port = intSetting(flags, env, "port", "LEDGER_PORT", 8080, 0, 65535);
        int poolSize = intSetting(flags, env, "pool-size", "LEDGER_POOL_SIZE", 24, 1, 500);
        String tokenSpec = setting(flags, env, "tokens", "LEDGER_TOKENS", null);
        String bankUrl = setting(flags, env, "bank-url", "LEDGER_BANK_URL", null);
        String bankName = setting(flags, env, "bank-name", "LEDGER_BANK_NAME", "bank");
        java.util.List<java.time.Duration> payoutLookups =
                lookups(setting(flags, env, "payout-lookups-ms", "LEDGER_PAYOUT_LOOKUPS_MS", "1000,2000,4000"));
        if (!bankName.matches("[A-Za-z0-9_.-]{1,100}")) {
            throw new IllegalArgumentException("LEDGER_BANK_NAME (--bank-name) must be 1 to 100 letters, digits,"
                    + " '.', '_' or '-', was '" + bankName + "'");
        }
        String mode =
                setting(flags, env, "claim-mode", "LEDGER_CLAIM_MODE", IdempotentTransaction.DEFAULT_CLAIM_MODE.name());
        ClaimMode claimMode;
        try {
            claimMode = ClaimMode.valueOf(
                    mode.trim().toUpperCase(java.util.Locale.ROOT).replace('-', '_'));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "LEDGER_CLAIM_MODE (--claim-mode) must be CLAIM_FIRST, WORK_FIRST or ADAPTIVE, was '" + mode + "'");
        }
        Queue queue = queue(flags, env);
        String admin = setting(flags, env, "admin-port", "LEDGER_ADMIN_PORT", null);
        Integer adminPort =
                admin == null ? null : intSetting(flags, env, "admin-port", "LEDGER_ADMIN_PORT", 0, 0, 65535);
        String adminToken = setting(flags, env, "admin-token", "LEDGER_ADMIN_TOKEN", null);
        if (adminToken != null && (adminToken.length() < 16 || !adminToken.matches("[\\x21-\\x7e]+"))) {
            throw new IllegalArgumentException("LEDGER_ADMIN_TOKEN (--admin-token) must be at least 16 printable"
                    + " characters without spaces (its value is not shown)");
        }
        if (bankUrl != null && !bankUrl.matches("https?://[^\\s/]+(:[0-9]+)?/?")) {
            throw new IllegalArgumentException(
                    "LEDGER_BANK_URL (--bank-url) must be like http://127.0.0.1:8090, was '" + bankUrl + "'");
        }
        Map<String, String> tokens = new LinkedHashMap<>();
        boolean demo = tokenSpec == null;
        if (demo) {
            tokens.put(randomToken(), "demo-tenant-a");
            tokens.put(randomToken(), "demo-tenant-b");
        } else {
            for (String pair : tokenSpec.split(",")) {
                int eq = pair.indexOf('=');
                if (eq <= 0 || eq == pair.length() - 1) {
                    throw new IllegalArgumentException("LEDGER_TOKENS holds token=tenant pairs separated by commas;"
                            + " one pair is malformed (token values are not shown)");
                }
                tokens.put(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim());
            }
        }
        return new LedgerConfig(
                url,
                user,
                password,
                schema,
                port,
                tokens,
                demo,
                poolSize,
                bankUrl == null ? null : bankUrl.replaceAll("/$", ""),
                bankName,
                payoutLookups,
                claimMode,
                queue,
                adminPort,
                adminToken,
                eventsExchange(flags, env, queue),
                java.time.Duration.ofMillis(
                        intSetting(flags, env, "events-lease-ms", "LEDGER_EVENTS_LEASE_MS", 60_000, 1_000, 3_600_000)),
                java.time.Duration.ofMillis(
                        intSetting(flags, env, "events-poll-ms", "LEDGER_EVENTS_POLL_MS", 200, 10, 60_000)),
                statementBank(flags, env));
    }

    private static StatementBank statementBank(Map<String, String> flags, Map<String, String> env) {
        String mode =
                setting(flags, env, "bank-mode", "LEDGER_BANK_MODE", "keyed").trim();
        return switch (mode) {
            case "keyed" -> null;
            case "statement" ->
                new StatementBank(
                        java.time.Duration.ofMillis(intSetting(
                                flags, env, "statement-lag-ms", "LEDGER_STATEMENT_LAG_MS", 5_000, 1, 864_000_000)),
                        java.time.Duration.ofMillis(intSetting(
                                flags, env, "statement-poll-ms", "LEDGER_STATEMENT_POLL_MS", 1_000, 10, 3_600_000)));
            default ->
                throw new IllegalArgumentException(
                        "LEDGER_BANK_MODE (--bank-mode) must be keyed or statement, was '" + mode + "'");
        };
    }

    /** The events exchange, or null; it needs the broker of {@code LEDGER_AMQP_URL}. */
    private static String eventsExchange(Map<String, String> flags, Map<String, String> env, Queue queue) {
        String exchange = setting(flags, env, "events-exchange", "LEDGER_EVENTS_EXCHANGE", null);
        if (exchange == null) {
            return null;
        }
        if (queue == null) {
            throw new IllegalArgumentException(
                    "LEDGER_EVENTS_EXCHANGE (--events-exchange) needs LEDGER_AMQP_URL" + " (--amqp-url)");
        }
        if (!exchange.matches("[A-Za-z0-9_.-]{1,200}")) {
            throw new IllegalArgumentException("LEDGER_EVENTS_EXCHANGE (--events-exchange) must be 1 to 200 letters,"
                    + " digits, '.', '_' or '-', was '" + exchange + "'");
        }
        return exchange;
    }

    /** {@code 1000,2000,4000}: 1 to 10 delays of 1 ms to 1 hour each. */
    private static java.util.List<java.time.Duration> lookups(String spec) {
        java.util.List<java.time.Duration> out = new java.util.ArrayList<>();
        for (String part : spec.split(",")) {
            long ms;
            try {
                ms = Long.parseLong(part.trim());
            } catch (NumberFormatException e) {
                ms = -1;
            }
            if (ms < 1 || ms > 3_600_000) {
                throw new IllegalArgumentException("LEDGER_PAYOUT_LOOKUPS_MS (--payout-lookups-ms) holds delays in"
                        + " milliseconds (1 to 3600000) separated by commas, was '" + spec + "'");
            }
            out.add(java.time.Duration.ofMillis(ms));
        }
        if (out.size() > 10) {
            throw new IllegalArgumentException(
                    "LEDGER_PAYOUT_LOOKUPS_MS (--payout-lookups-ms) holds at most 10 delays, was '" + spec + "'");
        }
        return java.util.List.copyOf(out);
    }

    /** The queue's settings, or null when {@code LEDGER_AMQP_URL} is unset (and then no other queue setting may be). */
    private static Queue queue(Map<String, String> flags, Map<String, String> env) {
        String url = setting(flags, env, "amqp-url", "LEDGER_AMQP_URL", null);
        if (url == null) {
            for (String flag : new String[] {
                "queue",
                "queue-consumers",
                "queue-prefetch",
                "queue-delivery-limit",
                "queue-lock-timeout-ms",
                "queue-fault-halt-every"
            }) {
                if (flags.containsKey(flag)) {
                    throw new IllegalArgumentException("--" + flag + " needs LEDGER_AMQP_URL (--amqp-url)");
                }
            }
            return null;
        }
        if (!url.matches("amqps?://\\S+")) {
            throw new IllegalArgumentException(
                    "LEDGER_AMQP_URL (--amqp-url) must be like amqp://guest:guest@127.0.0.1:5672, was '"
                            + url.replaceAll("//[^@/]*@", "//") + "'");
        }
        String name = setting(flags, env, "queue", "LEDGER_QUEUE", "ledger.transfers");
        if (!name.matches("[A-Za-z0-9_.-]{1,200}")) {
            throw new IllegalArgumentException(
                    "LEDGER_QUEUE (--queue) must be 1 to 200 letters, digits, '.', '_' or '-', was '" + name + "'");
        }
        String secret = setting(flags, env, "key-secret", "LEDGER_KEY_SECRET", null);
        byte[] keySecret;
        if (secret == null) {
            keySecret = HexFormat.of().parseHex(DEMO_KEY_SECRET);
        } else if (!secret.trim().matches("([0-9a-fA-F]{2}){32,}")) {
            throw new IllegalArgumentException(
                    "LEDGER_KEY_SECRET must be 64 or more hexadecimal digits (32 random bytes or more);"
                            + " the value is not shown");
        } else {
            keySecret = HexFormat.of().parseHex(secret.trim());
        }
        return new Queue(
                url,
                name,
                intSetting(flags, env, "queue-consumers", "LEDGER_QUEUE_CONSUMERS", 4, 1, 64),
                intSetting(flags, env, "queue-prefetch", "LEDGER_QUEUE_PREFETCH", 16, 1, 1000),
                intSetting(flags, env, "queue-delivery-limit", "LEDGER_QUEUE_DELIVERY_LIMIT", 5, 1, 100),
                intSetting(flags, env, "queue-lock-timeout-ms", "LEDGER_QUEUE_LOCK_TIMEOUT_MS", 5000, 1, 600_000),
                keySecret,
                secret == null,
                Flags.intFlag(flags, "queue-fault-halt-every", 0, 0, 1_000_000));
    }

    /** The same settings on another database (one resolved by whoever starts the ledger). */
    public LedgerConfig withDatabase(String url, String user, String password) {
        return new LedgerConfig(
                url,
                user,
                password,
                schema,
                port,
                tokens,
                demoTokens,
                poolSize,
                bankUrl,
                bankName,
                payoutLookups,
                claimMode,
                queue,
                adminPort,
                adminToken,
                eventsExchange,
                eventsLease,
                eventsPoll,
                statementBank);
    }

    @Override
    public String toString() {
        // never the password nor the tokens
        return "LedgerConfig[db=" + dbUrl + ", user=" + dbUser + ", schema=" + schema + ", port=" + port + ", tenants="
                + tokens.values() + ", poolSize=" + poolSize + ", claimMode=" + claimMode
                + (queue == null ? "" : ", queue=" + queue) + (adminPort == null ? "" : ", adminPort=" + adminPort)
                + (eventsExchange == null ? "" : ", eventsExchange=" + eventsExchange) + "]";
    }

    private static String setting(
            Map<String, String> flags, Map<String, String> env, String flag, String var, String fallback) {
        String value = flags.containsKey(flag) ? flags.get(flag) : env.get(var);
        return value == null || value.isBlank() ? fallback : value;
    }

    private static int intSetting(
            Map<String, String> flags,
            Map<String, String> env,
            String flag,
            String var,
            int fallback,
            int min,
            int max) {
        String value = setting(flags, env, flag, var, null);
        if (value == null) {
            return fallback;
        }
        try {
            int n = Integer.parseInt(value.trim());
            if (n < min || n > max) {
                throw new IllegalArgumentException(var + " must be between " + min + " and " + max + ", was " + n);
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(var + " must be a whole number, was '" + value + "'");
        }
    }

    static String randomToken() {
        byte[] bytes = new byte[16];
        new SecureRandom().nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }
}
