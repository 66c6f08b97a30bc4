package io.github.idemtx.spring.autoconfigure;

import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.db.IdempotencySchema;
import io.github.idemtx.jooq.ClaimMode;
import io.github.idemtx.jooq.IdempotentTransaction;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code idemtx.*} properties: the policy, the claim table's schema, its migration at start-up,
 * the scheduled purge, the recovery of external effects and the idempotency health indicator. Every default is the library's own.
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
     * In which order a call that owns its transaction claims the key and runs the work: CLAIM_FIRST
     * (the default: the key is claimed before the work runs, so a retry never runs the work and a
     * duplicate of a running call gets a prompt InProgress), WORK_FIRST (the work, then the claim row
     * with the COMMIT) or ADAPTIVE (work first while retries are rare, claim first while they are
     * not); the last two only for work that locks no rows a duplicate would wait on. READ_FIRST is the
     * deprecated name of CLAIM_FIRST. Calls inside a Spring transaction always claim first.
     */
    private ClaimMode claimMode = IdempotentTransaction.DEFAULT_CLAIM_MODE;

    private final Migration migration = new Migration();

    private final Purge purge = new Purge();

    private final Web web = new Web();

    private final Recovery recovery = new Recovery();

    private final Health health = new Health();

    /** Every property at its default; Spring Boot binds the {@code idemtx.*} values onto it. */
    public IdempotencyProperties() {}

    /**
     * {@return the policy these properties describe}
     *
     * @throws IllegalArgumentException naming the property, when a value is null or out of range
     */
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

        /** Every {@code idemtx.migration.*} property at its default. */
        public Migration() {}

        /** {@return {@code idemtx.migration.enabled}: whether the claim table is migrated at start-up} */
        public boolean isEnabled() {
            return enabled;
        }

        /**
         * Sets {@code idemtx.migration.enabled}; see {@link #isEnabled()}.
         *
         * @param enabled false to leave the claim table's schema to the application
         */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }

    /** Spring MVC support. */
    public static class Web {
        /** Largest body, in bytes, of a request with an Idempotency-Key (read once for its fingerprint); larger is answered 413. */
        private int maxBodyBytes = 1024 * 1024;

        private final ScopeSource scope = new ScopeSource();

        /** Every {@code idemtx.web.*} property at its default. */
        public Web() {}

        /** {@return the {@code idemtx.web.scope.*} properties} */
        public ScopeSource getScope() {
            return scope;
        }

        /** {@return {@code idemtx.web.max-body-bytes}: the largest body, in bytes, read for a fingerprint} */
        public int getMaxBodyBytes() {
            return maxBodyBytes;
        }

        /**
         * Sets {@code idemtx.web.max-body-bytes}; see {@link #getMaxBodyBytes()}.
         *
         * @param maxBodyBytes positive; checked when the filter is made
         */
        public void setMaxBodyBytes(int maxBodyBytes) {
            this.maxBodyBytes = maxBodyBytes;
        }
    }

    /**
     * Where the auto-configured {@code IdempotencyScopeResolver} takes a request's scope from (an
     * application's own resolver bean replaces it, and these properties with it).
     */
    public static class ScopeSource {
        /**
         * Name of the JWT claim that holds the scope, such as a tenant id (e.g. tenant_id); needs Spring
         * Security's JWT resource-server support. Unset: the authenticated principal's name, with Spring
         * Security on the class path.
         */
        private @Nullable String jwtClaim;

        /** Every {@code idemtx.web.scope.*} property at its default. */
        public ScopeSource() {}

        /** {@return {@code idemtx.web.scope.jwt-claim}: the JWT claim holding the scope, or null for none} */
        public @Nullable String getJwtClaim() {
            return jwtClaim;
        }

        /**
         * Sets {@code idemtx.web.scope.jwt-claim}; see {@link #getJwtClaim()}.
         *
         * @param jwtClaim a claim name, not blank; checked when the resolver is made
         */
        public void setJwtClaim(@Nullable String jwtClaim) {
            this.jwtClaim = jwtClaim;
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

        /** Every {@code idemtx.purge.*} property at its default. */
        public Purge() {}

        /** {@return {@code idemtx.purge.enabled}: whether expired claims are purged on a schedule} */
        public boolean isEnabled() {
            return enabled;
        }

        /**
         * Sets {@code idemtx.purge.enabled}; see {@link #isEnabled()}.
         *
         * @param enabled true to start the purge with the context
         */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** {@return {@code idemtx.purge.interval}: the pause between purges} */
        public Duration getInterval() {
            return interval;
        }

        /**
         * Sets {@code idemtx.purge.interval}; see {@link #getInterval()}.
         *
         * @param interval positive; checked when the purge is made
         */
        public void setInterval(Duration interval) {
            this.interval = interval;
        }

        /** {@return {@code idemtx.purge.limit}: the most rows one purge statement deletes} */
        public int getLimit() {
            return limit;
        }

        /**
         * Sets {@code idemtx.purge.limit}; see {@link #getLimit()}.
         *
         * @param limit from 1 to 100,000; checked when the purge is made
         */
        public void setLimit(int limit) {
            this.limit = limit;
        }
    }

    /** The scheduled recovery of the claims of every {@code ExternalEffect} bean. */
    public static class Recovery {
        /** Whether to recover the claims of the context's ExternalEffect beans on a schedule (only when there are any). */
        private boolean enabled = true;

        /** Pause between an effect's recovery passes (a pass that takes a whole batch runs again at once). */
        private Duration interval = Duration.ofSeconds(10);

        /** Most claims one recovery pass of an effect takes over. */
        private int batch = 100;

        /** Threads the effects' recovery passes share; passes of one effect never overlap. */
        private int workers = 2;

        /**
         * How long the context's shutdown waits for running recovery passes to settle the claim they
         * are on and hand the rest back; past it they are interrupted and their leases run out.
         */
        private Duration shutdownTimeout = Duration.ofSeconds(30);

        /** Every {@code idemtx.recovery.*} property at its default. */
        public Recovery() {}

        /** {@return {@code idemtx.recovery.enabled}: whether external effects are recovered on a schedule} */
        public boolean isEnabled() {
            return enabled;
        }

        /**
         * Sets {@code idemtx.recovery.enabled}; see {@link #isEnabled()}.
         *
         * @param enabled false to recover the effects' claims some other way
         */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** {@return {@code idemtx.recovery.interval}: the pause between an effect's passes} */
        public Duration getInterval() {
            return interval;
        }

        /**
         * Sets {@code idemtx.recovery.interval}; see {@link #getInterval()}.
         *
         * @param interval from 1 ms to 1 day; checked when the recovery is made
         */
        public void setInterval(Duration interval) {
            this.interval = interval;
        }

        /** {@return {@code idemtx.recovery.batch}: the most claims one pass takes over} */
        public int getBatch() {
            return batch;
        }

        /**
         * Sets {@code idemtx.recovery.batch}; see {@link #getBatch()}.
         *
         * @param batch from 1 to 10,000; checked when the recovery is made
         */
        public void setBatch(int batch) {
            this.batch = batch;
        }

        /** {@return {@code idemtx.recovery.workers}: the threads the passes share} */
        public int getWorkers() {
            return workers;
        }

        /**
         * Sets {@code idemtx.recovery.workers}; see {@link #getWorkers()}.
         *
         * @param workers from 1 to 64; checked when the recovery is made
         */
        public void setWorkers(int workers) {
            this.workers = workers;
        }

        /** {@return {@code idemtx.recovery.shutdown-timeout}: how long a stop waits for running passes} */
        public Duration getShutdownTimeout() {
            return shutdownTimeout;
        }

        /**
         * Sets {@code idemtx.recovery.shutdown-timeout}; see {@link #getShutdownTimeout()}.
         *
         * @param shutdownTimeout positive, at most 1 hour; checked when the recovery is made
         */
        public void setShutdownTimeout(Duration shutdownTimeout) {
            this.shutdownTimeout = shutdownTimeout;
        }
    }

    /** The idempotency health indicator's thresholds (with Spring Boot Actuator). */
    public static class Health {
        /** Most claims that may need reconciliation before the indicator reports exceeded-status. */
        private long maxNeedingReconciliation = 0;

        /** Longest an external effect's claim may be in flight before the indicator reports exceeded-status. */
        private Duration maxInFlightAge = Duration.ofMinutes(15);

        /**
         * The status reported when a threshold is exceeded. WARNING by default: a status the default
         * aggregation ignores, so the overall health stays UP and no platform restarts or drains the
         * instance for a backlog it cannot fix; set DOWN or OUT_OF_SERVICE to fail the health.
         */
        private String exceededStatus = "WARNING";

        /** Every {@code idemtx.health.*} property at its default. */
        public Health() {}

        /** {@return {@code idemtx.health.max-needing-reconciliation}: claims needing reconciliation tolerated} */
        public long getMaxNeedingReconciliation() {
            return maxNeedingReconciliation;
        }

        /**
         * Sets {@code idemtx.health.max-needing-reconciliation}; see {@link #getMaxNeedingReconciliation()}.
         *
         * @param maxNeedingReconciliation zero or more; checked when the indicator is made
         */
        public void setMaxNeedingReconciliation(long maxNeedingReconciliation) {
            this.maxNeedingReconciliation = maxNeedingReconciliation;
        }

        /** {@return {@code idemtx.health.max-in-flight-age}: the oldest in-flight claim tolerated} */
        public Duration getMaxInFlightAge() {
            return maxInFlightAge;
        }

        /**
         * Sets {@code idemtx.health.max-in-flight-age}; see {@link #getMaxInFlightAge()}.
         *
         * @param maxInFlightAge positive; checked when the indicator is made
         */
        public void setMaxInFlightAge(Duration maxInFlightAge) {
            this.maxInFlightAge = maxInFlightAge;
        }

        /** {@return {@code idemtx.health.exceeded-status}: the status reported past a threshold} */
        public String getExceededStatus() {
            return exceededStatus;
        }

        /**
         * Sets {@code idemtx.health.exceeded-status}; see {@link #getExceededStatus()}.
         *
         * @param exceededStatus a status code such as WARNING, DOWN or OUT_OF_SERVICE; checked when the
         *     indicator is made
         */
        public void setExceededStatus(String exceededStatus) {
            this.exceededStatus = exceededStatus;
        }
    }

    /** {@return {@code idemtx.schema}: the claim table's schema} */
    public String getSchema() {
        return schema;
    }

    /**
     * Sets {@code idemtx.schema}; see {@link #getSchema()}.
     *
     * @param schema a plain PostgreSQL identifier; checked when the beans are made
     */
    public void setSchema(String schema) {
        this.schema = schema;
    }

    /** {@return {@code idemtx.claim-mode}: in which order an owned call claims and works} */
    public ClaimMode getClaimMode() {
        return claimMode;
    }

    /**
     * Sets {@code idemtx.claim-mode}; see {@link #getClaimMode()}.
     *
     * @param claimMode {@code CLAIM_FIRST}, {@code WORK_FIRST} or {@code ADAPTIVE}
     */
    public void setClaimMode(ClaimMode claimMode) {
        this.claimMode = claimMode;
    }

    /** {@return {@code idemtx.ttl}: how long a completed key answers retries} */
    public Duration getTtl() {
        return ttl;
    }

    /**
     * Sets {@code idemtx.ttl}; see {@link #getTtl()}.
     *
     * @param ttl the value; checked when the policy is made ({@link IdempotencyProperties#toPolicy()})
     */
    public void setTtl(Duration ttl) {
        this.ttl = ttl;
    }

    /** {@return {@code idemtx.duplicate-wait}: how long a duplicate waits before InProgress} */
    public Duration getDuplicateWait() {
        return duplicateWait;
    }

    /**
     * Sets {@code idemtx.duplicate-wait}; see {@link #getDuplicateWait()}.
     *
     * @param duplicateWait the value; checked when the policy is made ({@link IdempotencyProperties#toPolicy()})
     */
    public void setDuplicateWait(Duration duplicateWait) {
        this.duplicateWait = duplicateWait;
    }

    /** {@return {@code idemtx.retry-after}: the Retry-After an InProgress answer suggests} */
    public Duration getRetryAfter() {
        return retryAfter;
    }

    /**
     * Sets {@code idemtx.retry-after}; see {@link #getRetryAfter()}.
     *
     * @param retryAfter the value; checked when the policy is made ({@link IdempotencyProperties#toPolicy()})
     */
    public void setRetryAfter(Duration retryAfter) {
        this.retryAfter = retryAfter;
    }

    /** {@return {@code idemtx.max-attempts}: attempts per call on serialization failures or deadlocks} */
    public int getMaxAttempts() {
        return maxAttempts;
    }

    /**
     * Sets {@code idemtx.max-attempts}; see {@link #getMaxAttempts()}.
     *
     * @param maxAttempts the value; checked when the policy is made ({@link IdempotencyProperties#toPolicy()})
     */
    public void setMaxAttempts(int maxAttempts) {
        this.maxAttempts = maxAttempts;
    }

    /** {@return {@code idemtx.initial-backoff}: the first pause between attempts} */
    public Duration getInitialBackoff() {
        return initialBackoff;
    }

    /**
     * Sets {@code idemtx.initial-backoff}; see {@link #getInitialBackoff()}.
     *
     * @param initialBackoff the value; checked when the policy is made ({@link IdempotencyProperties#toPolicy()})
     */
    public void setInitialBackoff(Duration initialBackoff) {
        this.initialBackoff = initialBackoff;
    }

    /** {@return {@code idemtx.max-backoff}: the longest pause between attempts} */
    public Duration getMaxBackoff() {
        return maxBackoff;
    }

    /**
     * Sets {@code idemtx.max-backoff}; see {@link #getMaxBackoff()}.
     *
     * @param maxBackoff the value; checked when the policy is made ({@link IdempotencyProperties#toPolicy()})
     */
    public void setMaxBackoff(Duration maxBackoff) {
        this.maxBackoff = maxBackoff;
    }

    /** {@return {@code idemtx.max-result-bytes}: the largest encoded result stored, in bytes} */
    public int getMaxResultBytes() {
        return maxResultBytes;
    }

    /**
     * Sets {@code idemtx.max-result-bytes}; see {@link #getMaxResultBytes()}.
     *
     * @param maxResultBytes the value; checked when the policy is made ({@link IdempotencyProperties#toPolicy()})
     */
    public void setMaxResultBytes(int maxResultBytes) {
        this.maxResultBytes = maxResultBytes;
    }

    /** {@return the {@code idemtx.migration.*} properties} */
    public Migration getMigration() {
        return migration;
    }

    /** {@return the {@code idemtx.purge.*} properties} */
    public Purge getPurge() {
        return purge;
    }

    /** {@return the {@code idemtx.web.*} properties} */
    public Web getWeb() {
        return web;
    }

    /** {@return the {@code idemtx.recovery.*} properties} */
    public Recovery getRecovery() {
        return recovery;
    }

    /** {@return the {@code idemtx.health.*} properties} */
    public Health getHealth() {
        return health;
    }
}
