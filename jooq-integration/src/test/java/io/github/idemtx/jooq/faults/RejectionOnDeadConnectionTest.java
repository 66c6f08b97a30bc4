package io.github.idemtx.jooq.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.Backends;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.IdempotentTransaction;
import io.github.idemtx.jooq.support.Db;
import io.github.idemtx.jooq.support.Faults;
import org.jooq.SQLDialect;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;

/**
 * The work rejects the request (a deterministic failure) just as its connection dies, so the
 * failure cannot be recorded. Nothing is committed; the documented answers are {@code Rejected}
 * (recorded, replayed forever) or a connection error (a {@link DataAccessException}: retry with the
 * same key). A {@link Rejection} thrown out of {@code run} is neither: the caller takes it for the
 * final answer, yet the key is free and a retry may execute.
 */
@DatabaseTest
class RejectionOnDeadConnectionTest {

    private final Scope scope = Db.freshScope();
    private final IdempotencyKey key = Db.freshKey();
    private final Fingerprint fingerprint = Db.fingerprint("reject me");

    @Test
    void aRejectionThatCannotBeRecordedBecauseTheConnectionDiedSurfacesAsAConnectionError() {
        IdempotentTransaction<String> idem = Db.builder(
                        DSL.using(Faults.unpooled(Faults.applicationName("reject")), SQLDialect.POSTGRES),
                        ResultCodec.utf8())
                .schema(Db.SCHEMA)
                .build();
        RuntimeException thrown = null;
        try (Backends killer = new Backends(Db.DATABASE.connect())) {
            idem.run(scope, key, fingerprint, tx -> {
                Db.writeEffect(tx, scope, key, "about to be rejected");
                killer.kill(tx.connectionResult(Backends::pid)); // the connection dies here
                throw new Rejection("insufficient_funds", "the account holds too little");
            });
        } catch (RuntimeException e) {
            thrown = e;
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }

        assertThat(Db.claims(scope, key)).as("nothing was recorded").isZero();
        assertThat(Db.effects(scope, key)).isZero();
        assertThat(thrown)
                .as("what run() threw, having recorded nothing")
                .isNotNull()
                .isNotInstanceOf(Rejection.class)
                .isInstanceOf(DataAccessException.class)
                .matches(Faults::isConnectionError, "is a connection error");
        // the key is free: the retry decides afresh
        IdempotentTransaction<String> healthy =
                Db.builder(Db.dsl(), ResultCodec.utf8()).schema(Db.SCHEMA).build();
        assertThat(healthy.run(scope, key, fingerprint, tx -> "funds arrived meanwhile"))
                .isEqualTo(new Outcome.Executed<>("funds arrived meanwhile"));
    }
}
