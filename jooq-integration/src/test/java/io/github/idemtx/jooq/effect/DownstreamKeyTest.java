package io.github.idemtx.jooq.effect;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.support.Db;
import java.time.Instant;
import java.time.OffsetDateTime;
import org.junit.jupiter.api.Test;

/** The downstream key, as the library derives it and as a verifier can derive it in SQL from the claim row. */
@DatabaseTest
class DownstreamKeyTest {

    @Test
    void theSqlFormulaAndTheLibraryAgreeAndTheKeyChangesWithTheClaim() {
        Scope scope = Scope.of("tenant-ä");
        IdempotencyKey key = IdempotencyKey.of("k-1");
        OffsetDateTime created = Db.DSL_CONTEXT
                .resultQuery("select timestamptz '2026-12-01 10:11:12.345678+00'")
                .fetchOne(0, OffsetDateTime.class);
        String sql = Db.DSL_CONTEXT.fetchValue(org.jooq.impl.DSL.field(
                "'payout:' || rtrim(translate(encode(sha256("
                        + "convert_to({0}, 'UTF8') || '\\x00'::bytea || convert_to({1}, 'UTF8') || '\\x00'::bytea"
                        + " || convert_to(((extract(epoch from {2}::timestamptz) * 1000000)::bigint)::text, 'UTF8')), 'base64'), '+/', '-_'), '=')",
                String.class,
                org.jooq.impl.DSL.val(scope.value()),
                org.jooq.impl.DSL.val(key.value()),
                org.jooq.impl.DSL.val(created)));
        Instant at = created.toInstant();
        assertThat(ExternalEffect.downstreamKey("payout", scope, key, at))
                .isEqualTo(sql)
                .startsWith("payout:")
                .hasSize(7 + 43);
        assertThat(ExternalEffect.downstreamKey("payout", scope, key, at.plusNanos(1_000)))
                .as("another claim of the same key")
                .isNotEqualTo(sql);
    }
}
