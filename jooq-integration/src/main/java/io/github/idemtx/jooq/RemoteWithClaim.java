package io.github.idemtx.jooq;

import io.github.idemtx.core.Failure;
import java.time.Instant;
import org.jooq.DSLContext;
import org.jspecify.annotations.Nullable;

/**
 * An effect's {@link Remote} whose local writes are told their claim: each {@code tx} handed to
 * {@code before}, {@code after} and {@code refused} carries the claim's {@link ClaimContext}, as a
 * work's {@code tx} does, so that they can add outbox messages ({@link
 * io.github.idemtx.jooq.outbox.Outbox#add}) that commit with the claim's record. The call and the
 * lookup go to the remote as they are. Keeps {@link Remote.Holding} apart from a plain remote: the
 * claim's COMMIT goes with its insert only for the latter.
 */
class RemoteWithClaim<R, T> implements Remote<R, T> {

    final Remote<R, T> remote;

    RemoteWithClaim(Remote<R, T> remote) {
        this.remote = remote;
    }

    /** {@code remote} with its local writes told their claim; a holding remote stays one. */
    static <R, T> Remote<R, T> of(Remote<R, T> remote) {
        return remote instanceof Remote.Holding<R, T> holding ? new Holding<>(holding) : new RemoteWithClaim<>(remote);
    }

    @Override
    public Reply<T> call(Intent<R> intent, Instant deadline) throws Exception {
        Reply<T> reply = remote.call(intent, deadline);
        if (reply == null) {
            throw new IllegalStateException(remote.getClass().getName() + ".call returned null");
        }
        return reply;
    }

    @Override
    public Lookup<T> lookup(Intent<R> intent) throws Exception {
        Lookup<T> answer = remote.lookup(intent);
        return answer != null ? answer : Lookup.unknown(remote.getClass().getName() + ".lookup returned null");
    }

    @Override
    public void after(DSLContext tx, Intent<R> intent, @Nullable T result) throws Exception {
        ClaimContext.attach(tx, intent.scope(), intent.key());
        remote.after(tx, intent, result);
    }

    @Override
    public void refused(DSLContext tx, Intent<R> intent, Failure failure) throws Exception {
        ClaimContext.attach(tx, intent.scope(), intent.key());
        remote.refused(tx, intent, failure);
    }

    @Override
    public String toString() {
        return remote.toString();
    }

    /** A holding remote: {@code before} is told its claim too. */
    private static final class Holding<R, T> extends RemoteWithClaim<R, T> implements Remote.Holding<R, T> {
        private final Remote.Holding<R, T> holding;

        Holding(Remote.Holding<R, T> holding) {
            super(holding);
            this.holding = holding;
        }

        @Override
        public void before(DSLContext tx, Intent<R> intent) throws Exception {
            ClaimContext.attach(tx, intent.scope(), intent.key());
            holding.before(tx, intent);
        }
    }
}
