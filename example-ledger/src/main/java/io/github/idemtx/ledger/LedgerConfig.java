package io.github.idemtx.ledger;

import io.github.idemtx.jooq.ClaimMode;
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
 *       ...): the PostgreSQL, a JDBC URL; unset, 127.0.0.1:5432 as {@code postgres}. The example's
 *       launcher ({@code LocalLedger} in {@code example-ledger-storm}) also takes
 *       {@code embedded[:version]} / {@code testcontainers[:image]}, and unset starts an embedded
 *       PostgreSQL when nothing at 127.0.0.1:5432 lets {@code postgres} in (docs/database.md).
 *   <li>{@code LEDGER_SCHEMA} ({@code --schema}): where the ledger's and the claims' tables go;
 *       default {@code ledger}.
 *   <li>{@code LEDGER_PORT} ({@code --port}): default 8080; 0 picks a free port.
 *   <li>{@code LEDGER_TOKENS} ({@code --tokens}): {@code token=tenant,token=tenant}; unset, two demo
 *       tenants get random tokens, printed at start.
 *   <li>{@code LEDGER_POOL_SIZE} ({@code --pool-size}): connections, default 24.
 *   <li>{@code LEDGER_CLAIM_MODE} ({@code --claim-mode}): {@code READ_FIRST} (the library's default) or
 *       {@code WORK_FIRST}; see {@link ClaimMode}.
 *   <li>{@code LEDGER_BANK_URL} ({@code --bank-url}): the bank payouts go to (see {@code BankServer});
 *       unset, {@code POST /payouts} answers 503.
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
        ClaimMode claimMode) {

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
        String password = setting(flags, env, "db-password", "LEDGER_DB_PASSWORD", null);
        String schema = setting(flags, env, "schema", "LEDGER_SCHEMA", "ledger");
        int port = intSetting(flags, env, "port", "LEDGER_PORT", 8080, 0, 65535);
        int poolSize = intSetting(flags, env, "pool-size", "LEDGER_POOL_SIZE", 24, 1, 500);
        String tokenSpec = setting(flags, env, "tokens", "LEDGER_TOKENS", null);
        String bankUrl = setting(flags, env, "bank-url", "LEDGER_BANK_URL", null);
        String mode = setting(
                flags,
                env,
                "claim-mode",
                "LEDGER_CLAIM_MODE",
                io.github.idemtx.jooq.IdempotentTransaction.DEFAULT_CLAIM_MODE.name());
        ClaimMode claimMode;
        try {
            claimMode = ClaimMode.valueOf(
                    mode.trim().toUpperCase(java.util.Locale.ROOT).replace('-', '_'));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "LEDGER_CLAIM_MODE (--claim-mode) must be READ_FIRST or WORK_FIRST, was '" + mode + "'");
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
                claimMode);
    }

    /** The same settings on another database (one resolved by whoever starts the ledger). */
    public LedgerConfig withDatabase(String url, String user, String password) {
        return new LedgerConfig(url, user, password, schema, port, tokens, demoTokens, poolSize, bankUrl, claimMode);
    }

    @Override
    public String toString() {
        // never the password nor the tokens
        return "LedgerConfig[db=" + dbUrl + ", user=" + dbUser + ", schema=" + schema + ", port=" + port + ", tenants="
                + tokens.values() + ", poolSize=" + poolSize + ", claimMode=" + claimMode + "]";
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

    private static String randomToken() {
        byte[] bytes = new byte[16];
        new SecureRandom().nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }
}
