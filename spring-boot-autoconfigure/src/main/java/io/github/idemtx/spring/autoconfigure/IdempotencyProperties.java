package io.github.idemtx.spring.autoconfigure;

import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.jooq.IdempotentTransaction;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code idemtx.*} properties: the policy, the claim table's schema, its migration at start-up
 * and the scheduled purge. Every default is the library's own.
 */
@ConfigurationProperties(prefix = "idemtx")
public class IdempotencyProperties {

    /** Schema of the claim table; the migrations create it there. */
    private String schema = IdempotencySchema.DEFAULT_SCHEMA;

    /** How long a completed key answers retries (its TTL, counted from the commit). */
    private Duration ttl = IdempotencyPolicy.DEFAULT_TTL;

    /** How long a call waits for a concurrent call with the same key before answering InProgress. */
    private Duration duplicateWait = IdempotencyPolicy.DEFAULT_DUPLICATE_WAIT;

    /** The Retry-After an InProgress answer suggests. */
    private Duration retryAfter = IdempotencyPolicy.DEFAULT_RETRY_AFTER;

    /** Attempts per call when serialization failures or deadlocks roll it back (owned transactions only). */
    private int maxAttempts = IdempotencyPolicy.DEFAULT_MAX_ATTEMPTS;

    /** First pause between attempts; doubles up to max-backoff, with jitter. */
    private Duration initialBackoff = IdempotencyPolicy.DEFAULT_INITIAL_BACKOFF;

    /** Longest pause between attempts. */
    private Duration maxBackoff = IdempotencyPolicy.DEFAULT_MAX_BACKOFF;

    /** Largest encoded result stored with a key, in bytes. */
    private int maxResultBytes = IdempotencyPolicy.DEFAULT_MAX_RESULT_BYTES;

    /**
     * In which order a call that owns its transaction claims the key and runs the work: READ_FIRST
     * (the key read and locked first) or WORK_FIRST (the work, then the claim row with the COMMIT).
     * Calls inside a Spring transaction always read first.
     */
    private ClaimMode claimMode = IdempotentTransaction.DEFAULT_CLAIM_MODE;

    private final Migration migration = new Migration();

    private final Purge purge = new Purge();

    private final Web web = new Web();

    /** The policy these properties describe; throws naming the property when a value is out of range. */
    public IdempotencyPolicy toPolicy() {
        IdempotencyPolicy.Builder b = IdempotencyPolicy.builder();
        apply("idemtx.ttl", () -> b.ttl(ttl));
        apply("idemtx.duplicate-wait", () -> b.duplicateWait(duplicateWait));
        apply("idemtx.retry-after", () -> b.retryAfter(retryAfter));
        apply("idemtx.max-attempts", () -> b.maxAttempts(maxAttempts));
        apply("idemtx.initial-backoff / idemtx.max-backoff", () -> b.backoff(initialBackoff, maxBackoff));
        apply("idemtx.max-result-bytes", () -> b.maxResultBytes(maxResultBytes));
        return b.build();
    }

    private static void apply(String property, Runnable setter) {
        try {
            setter.run();
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new IllegalArgumentException(property + ": " + e.getMessage(), e);
        }
    }

    /** Migration of the claim table at start-up. */
    public static class Migration {
        /**
         * Whether to apply the library's migrations at start-up (with their own history table,
         * idempotency_schema_history, beside the application's Flyway).
         */
        private boolean enabled = true;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }

    /** Spring MVC support. */
    public static class Web {
        /** Largest body, in bytes, of a request with an Idempotency-Key (read once for its fingerprint); larger is answered 413. */
        private int maxBodyBytes = 1024 * 1024;

        public int getMaxBodyBytes() {
            return maxBodyBytes;
        }

        public void setMaxBodyBytes(int maxBodyBytes) {
            this.maxBodyBytes = maxBodyBytes;
        }
    }

    /** The scheduled deletion of expired claims. */
    public static class Purge {
        /** Whether to delete expired claims periodically. */
        private boolean enabled = false;

        /** Pause between purges. */
        private Duration interval = Duration.ofMinutes(1);

        /** Most rows deleted per statement; a purge repeats while a statement deletes this many. */
        private int limit = 1000;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public Duration getInterval() {
            return interval;
        }

        public void setInterval(Duration interval) {
            this.interval = interval;
        }

        public int getLimit() {
            return limit;
        }

        public void setLimit(int limit) {
            this.limit = limit;
        }
    }

    public String getSchema() {
        return schema;
    }

    public void setSchema(String schema) {
        this.schema = schema;
    }

    public ClaimMode getClaimMode() {
        return claimMode;
    }

    public void setClaimMode(ClaimMode claimMode) {
        this.claimMode = claimMode;
    }

    public Duration getTtl() {
        return ttl;
    }

    public void setTtl(Duration ttl) {
        this.ttl = ttl;
    }

    public Duration getDuplicateWait() {
        return duplicateWait;
    }

    public void setDuplicateWait(Duration duplicateWait) {
        this.duplicateWait = duplicateWait;
    }

    public Duration getRetryAfter() {
        return retryAfter;
    }

    public void setRetryAfter(Duration retryAfter) {
        this.retryAfter = retryAfter;
    }

    public int getMaxAttempts() {
        return maxAttempts;
    }

    public void setMaxAttempts(int maxAttempts) {
        this.maxAttempts = maxAttempts;
    }

    public Duration getInitialBackoff() {
        return initialBackoff;
    }

    public void setInitialBackoff(Duration initialBackoff) {
        this.initialBackoff = initialBackoff;
    }

    public Duration getMaxBackoff() {
        return maxBackoff;
    }

    public void setMaxBackoff(Duration maxBackoff) {
        this.maxBackoff = maxBackoff;
    }

    public int getMaxResultBytes() {
        return maxResultBytes;
    }

    public void setMaxResultBytes(int maxResultBytes) {
        this.maxResultBytes = maxResultBytes;
    }

    public Migration getMigration() {
        return migration;
    }

    public Purge getPurge() {
        return purge;
    }

    public Web getWeb() {
        return web;
    }
}
