package io.github.idemtx.spring.autoconfigure;

import io.github.idemtx.jooq.outbox.OutboxRelay;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code idemtx.outbox.*} properties: the outbox relay and the outbox's health indicator. The
 * outbox table lives in {@code idemtx.schema}, beside the claim table. Every default is the library's own.
 */
@ConfigurationProperties(prefix = "idemtx.outbox")
public class IdempotencyOutboxProperties {

    private final Relay relay = new Relay();
    private final Health health = new Health();

    /** Every {@code idemtx.outbox.*} property at its default. */
    public IdempotencyOutboxProperties() {}

    /** {@return {@code idemtx.outbox.relay.*}} */
    public Relay getRelay() {
        return relay;
    }

    /** {@return {@code idemtx.outbox.health.*}} */
    public Health getHealth() {
        return health;
    }

    /** {@code idemtx.outbox.relay.*}: the relay that delivers the outbox's messages through the application's {@code OutboxTransport} bean. */
    public static class Relay {
        /** Whether the relay runs (with the context, given an OutboxTransport bean). */
        private boolean enabled = true;

        /** The name the relay leases messages under; by default relay- and a random UUID. */
        private String owner = "";

        /** The most messages leased per poll. */
        private int batchSize = OutboxRelay.DEFAULT_BATCH_SIZE;

        /** The pause after a poll that did not fill its batch. */
        private Duration pollInterval = OutboxRelay.DEFAULT_POLL_INTERVAL;

        /** How long a leased batch stays this relay's; longer than a batch's sends take. */
        private Duration lease = OutboxRelay.DEFAULT_LEASE;

        /** Attempts before a message is kept as failed for an operator. */
        private int maxAttempts = OutboxRelay.DEFAULT_MAX_ATTEMPTS;

        /** The backoff after a first failed attempt, doubled after each further one. */
        private Duration initialBackoff = OutboxRelay.DEFAULT_INITIAL_BACKOFF;

        /** The longest backoff. */
        private Duration maxBackoff = OutboxRelay.DEFAULT_MAX_BACKOFF;

        /** How long delivered and discarded messages are kept before they are purged. */
        private Duration retention = OutboxRelay.DEFAULT_RETENTION;

        /** How often the relay purges. */
        private Duration purgeInterval = OutboxRelay.DEFAULT_PURGE_INTERVAL;

        /** How long the context's shutdown waits for the message being sent. */
        private Duration shutdownTimeout = OutboxRelay.DEFAULT_SHUTDOWN_TIMEOUT;

        /** Every {@code idemtx.outbox.relay.*} property at its default. */
        public Relay() {}

        /** {@return {@code idemtx.outbox.relay.enabled}} */
        public boolean isEnabled() {
            return enabled;
        }

        /**
         * Sets {@code idemtx.outbox.relay.enabled}.
         *
         * @param enabled {@code idemtx.outbox.relay.enabled}
         */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** {@return {@code idemtx.outbox.relay.owner}; empty for a random one} */
        public String getOwner() {
            return owner;
        }

        /**
         * Sets {@code idemtx.outbox.relay.owner}.
         *
         * @param owner {@code idemtx.outbox.relay.owner}, 1 to 64 characters, or empty
         */
        public void setOwner(String owner) {
            this.owner = owner;
        }

        /** {@return {@code idemtx.outbox.relay.batch-size}} */
        public int getBatchSize() {
            return batchSize;
        }

        /**
         * Sets {@code idemtx.outbox.relay.batch-size}.
         *
         * @param batchSize {@code idemtx.outbox.relay.batch-size}, 1 to 1,000
         */
        public void setBatchSize(int batchSize) {
            this.batchSize = batchSize;
        }

        /** {@return {@code idemtx.outbox.relay.poll-interval}} */
        public Duration getPollInterval() {
            return pollInterval;
        }

        /**
         * Sets {@code idemtx.outbox.relay.poll-interval}.
         *
         * @param pollInterval {@code idemtx.outbox.relay.poll-interval}, positive
         */
        public void setPollInterval(Duration pollInterval) {
            this.pollInterval = pollInterval;
        }

        /** {@return {@code idemtx.outbox.relay.lease}} */
        public Duration getLease() {
            return lease;
        }

        /**
         * Sets {@code idemtx.outbox.relay.lease}.
         *
         * @param lease {@code idemtx.outbox.relay.lease}, at least 1 second
         */
        public void setLease(Duration lease) {
            this.lease = lease;
        }

        /** {@return {@code idemtx.outbox.relay.max-attempts}} */
        public int getMaxAttempts() {
            return maxAttempts;
        }

        /**
         * Sets {@code idemtx.outbox.relay.max-attempts}.
         *
         * @param maxAttempts {@code idemtx.outbox.relay.max-attempts}, 1 to 1,000
         */
        public void setMaxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
        }

        /** {@return {@code idemtx.outbox.relay.initial-backoff}} */
        public Duration getInitialBackoff() {
            return initialBackoff;
        }

        /**
         * Sets {@code idemtx.outbox.relay.initial-backoff}.
         *
         * @param initialBackoff {@code idemtx.outbox.relay.initial-backoff}, zero or more
         */
        public void setInitialBackoff(Duration initialBackoff) {
            this.initialBackoff = initialBackoff;
        }

        /** {@return {@code idemtx.outbox.relay.max-backoff}} */
        public Duration getMaxBackoff() {
            return maxBackoff;
        }

        /**
         * Sets {@code idemtx.outbox.relay.max-backoff}.
         *
         * @param maxBackoff {@code idemtx.outbox.relay.max-backoff}, zero or more
         */
        public void setMaxBackoff(Duration maxBackoff) {
            this.maxBackoff = maxBackoff;
        }

        /** {@return {@code idemtx.outbox.relay.retention}} */
        public Duration getRetention() {
            return retention;
        }

        /**
         * Sets {@code idemtx.outbox.relay.retention}.
         *
         * @param retention {@code idemtx.outbox.relay.retention}, zero or more
         */
        public void setRetention(Duration retention) {
            this.retention = retention;
        }

        /** {@return {@code idemtx.outbox.relay.purge-interval}} */
        public Duration getPurgeInterval() {
            return purgeInterval;
        }

        /**
         * Sets {@code idemtx.outbox.relay.purge-interval}.
         *
         * @param purgeInterval {@code idemtx.outbox.relay.purge-interval}, positive
         */
        public void setPurgeInterval(Duration purgeInterval) {
            this.purgeInterval = purgeInterval;
        }

        /** {@return {@code idemtx.outbox.relay.shutdown-timeout}} */
        public Duration getShutdownTimeout() {
            return shutdownTimeout;
        }

        /**
         * Sets {@code idemtx.outbox.relay.shutdown-timeout}.
         *
         * @param shutdownTimeout {@code idemtx.outbox.relay.shutdown-timeout}, zero or more
         */
        public void setShutdownTimeout(Duration shutdownTimeout) {
            this.shutdownTimeout = shutdownTimeout;
        }
    }

    /** {@code idemtx.outbox.health.*}: the {@code outbox} health indicator's thresholds. */
    public static class Health {
        /** Most failed messages (waiting for an operator) before the indicator reports exceeded-status. */
        private long maxFailed = 0;

        /** Longest the oldest pending message may wait before the indicator reports exceeded-status. */
        private Duration maxPendingAge = Duration.ofMinutes(5);

        /**
         * The status reported when a threshold is exceeded. WARNING by default, as for the idempotency
         * indicator: the overall health stays UP; set DOWN or OUT_OF_SERVICE to fail the health.
         */
        private String exceededStatus = "WARNING";

        /** Every {@code idemtx.outbox.health.*} property at its default. */
        public Health() {}

        /** {@return {@code idemtx.outbox.health.max-failed}} */
        public long getMaxFailed() {
            return maxFailed;
        }

        /**
         * Sets {@code idemtx.outbox.health.max-failed}.
         *
         * @param maxFailed {@code idemtx.outbox.health.max-failed}, zero or more
         */
        public void setMaxFailed(long maxFailed) {
            this.maxFailed = maxFailed;
        }

        /** {@return {@code idemtx.outbox.health.max-pending-age}} */
        public Duration getMaxPendingAge() {
            return maxPendingAge;
        }

        /**
         * Sets {@code idemtx.outbox.health.max-pending-age}.
         *
         * @param maxPendingAge {@code idemtx.outbox.health.max-pending-age}, positive
         */
        public void setMaxPendingAge(Duration maxPendingAge) {
            this.maxPendingAge = maxPendingAge;
        }

        /** {@return {@code idemtx.outbox.health.exceeded-status}} */
        public String getExceededStatus() {
            return exceededStatus;
        }

        /**
         * Sets {@code idemtx.outbox.health.exceeded-status}.
         *
         * @param exceededStatus {@code idemtx.outbox.health.exceeded-status}, a status code
         */
        public void setExceededStatus(String exceededStatus) {
            this.exceededStatus = exceededStatus;
        }
    }
}
