package io.github.idemtx.bench;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.Scope;
import io.github.idemtx.jooq.IdempotentTransaction;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;

/**
 * What the strategies share: the pool, the jOOQ context the library runs on, the ledger, the
 * completed keys that {@code replay} replays, and the bench's own count of claim rows.
 */
final class BenchContext {

    /** Scopes (tenants) the keys are spread over; the preloaded rows use the same ones. */
    static final int SCOPES = 16;

    /** jOOQ settings shared by every strategy: no execute logging, nothing else changed. */
    static final Settings SETTINGS = new Settings().withExecuteLogging(false);

    final DataSource pool;
    final DSLContext dsl;
    final Ledger ledger;
    final Shared shared;
    /**
     * In the library's default mode ({@code CLAIM_FIRST}, built without a claim mode), serving
     * {@code claim}, {@code replay}, {@code mixed-claim-first} and the growth phase: the order keeps no
     * state between calls.
     */
    final IdempotentTransaction<Ledger.Receipt> idem;
    /** In {@code ClaimMode.WORK_FIRST}. */
    final IdempotentTransaction<Ledger.Receipt> idemWorkFirst;
    /** In {@code ClaimMode.ADAPTIVE}, serving {@code claim-adaptive} alone: an adaptive instance learns from its own calls. */
    final IdempotentTransaction<Ledger.Receipt> idemAdaptive;
    /** In {@code ADAPTIVE}, serving {@code replay-adaptive} alone. */
    final IdempotentTransaction<Ledger.Receipt> idemReplayAdaptive;
    /** In {@code ADAPTIVE}, serving the retry-share phase's {@code mixed-adaptive} alone. */
    final IdempotentTransaction<Ledger.Receipt> idemMixedAdaptive;
    /** The share of calls of the {@code mixed} strategies that retry a completed key, from 0 to 1. */
    volatile double retryShare;

    final IdempotentTransaction<Ledger.Receipt> burstIdem;
    final long ttlMillis;

    BenchContext(DataSource pool, Ledger ledger, Shared shared, IdempotencyPolicy burstPolicy) {
        this.pool = pool;
        this.ledger = ledger;
        this.shared = shared;
        this.dsl = DSL.using(pool, SQLDialect.POSTGRES, SETTINGS);
        this.idem = IdempotentTransaction.builder(dsl, Ledger.CODEC)
                .schema(ledger.schema())
                .build();
        this.idemWorkFirst = withMode(io.github.idemtx.jooq.ClaimMode.WORK_FIRST);
        this.idemAdaptive = withMode(io.github.idemtx.jooq.ClaimMode.ADAPTIVE);
        this.idemReplayAdaptive = withMode(io.github.idemtx.jooq.ClaimMode.ADAPTIVE);
        this.idemMixedAdaptive = withMode(io.github.idemtx.jooq.ClaimMode.ADAPTIVE);
        this.burstIdem = IdempotentTransaction.builder(dsl, Ledger.CODEC)
                .schema(ledger.schema())
                .policy(burstPolicy)
                .build();
        this.ttlMillis = idem.policy().ttl().toMillis();
    }

    private IdempotentTransaction<Ledger.Receipt> withMode(io.github.idemtx.jooq.ClaimMode mode) {
        return IdempotentTransaction.builder(dsl, Ledger.CODEC)
                .schema(ledger.schema())
                .claimMode(mode)
                .build();
    }

    String schema() {
        return ledger.schema();
    }

    static Scope scope(int n) {
        return Shared.SCOPE_OBJECTS[n];
    }

    static String scopeName(int n) {
        return "tenant-" + (n < 10 ? "0" : "") + n;
    }

    /** A fresh random key shaped like a version 4 UUID (what clients are told to send). */
    static IdempotencyKey freshKey(SplittableRandom random) {
        long hi = (random.nextLong() & ~0xF000L) | 0x4000L;
        long lo = (random.nextLong() & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L;
        return IdempotencyKey.of(new UUID(hi, lo).toString());
    }

    /** A key that completed, with what it was sent with, for {@code replay}. */
    record Completed(Scope scope, IdempotencyKey key, Ledger.TransferRequest request, Fingerprint fingerprint) {}

    /** State that outlives one pool: completed keys and the claim table's row counts. */
    static final class Shared {
        private static final Scope[] SCOPE_OBJECTS = new Scope[SCOPES];

        static {
            for (int i = 0; i < SCOPES; i++) {
                SCOPE_OBJECTS[i] = Scope.of(scopeName(i));
            }
        }

        private static final int CAPACITY = 100_000;
        private final AtomicReferenceArray<Completed> completed = new AtomicReferenceArray<>(CAPACITY);
        private final AtomicLong written = new AtomicLong();
        /** Rows in the claim table: every strategy that inserts one counts it here, the purge subtracts. */
        final AtomicLong claimRows = new AtomicLong();
        /** Of those, preloaded expired rows not yet purged. */
        final AtomicLong expiredRows = new AtomicLong();

        void completed(Completed c) {
            completed.set((int) (written.getAndIncrement() % CAPACITY), c);
            claimRows.incrementAndGet();
        }

        int completedCount() {
            return (int) Math.min(written.get(), CAPACITY);
        }

        Completed randomCompleted(SplittableRandom random) {
            int n = completedCount();
            if (n == 0) {
                throw new IllegalStateException("no completed keys to replay yet");
            }
            for (int tries = 0; tries < 100; tries++) {
                Completed c = completed.get(random.nextInt(n));
                if (c != null) {
                    return c; // null only for a slot whose writer is between its two steps
                }
            }
            throw new IllegalStateException("no completed key found to replay");
        }

        /** Forgets the completed keys (the claim table was emptied). */
        void clearCompleted() {
            for (int i = 0; i < CAPACITY; i++) {
                completed.set(i, null);
            }
            written.set(0);
        }
    }
}
