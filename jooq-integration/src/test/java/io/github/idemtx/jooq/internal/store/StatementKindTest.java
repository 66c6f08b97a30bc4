package io.github.idemtx.jooq.internal.store;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class StatementKindTest {

    @Test
    void eachKindReadsBackFromItsTagAndNoTagIsMistakenForAnother() {
        for (StatementKind kind : StatementKind.values()) {
            assertThat(StatementKind.of(kind.tag() + "select 1")).isEqualTo(kind);
            assertThat(kind.tag()).startsWith("/* idemtx:").endsWith(" */ ");
        }
        assertThat(StatementKind.of(StatementKind.RECORD.tag() + "insert")).isEqualTo(StatementKind.RECORD);
        assertThat(StatementKind.of(StatementKind.RECORD_AND_COMMIT.tag() + "insert"))
                .isEqualTo(StatementKind.RECORD_AND_COMMIT);
    }

    @Test
    void statementsThatAreNotTheLibrarysHaveNoKind() {
        assertThat(StatementKind.of(null)).isNull();
        assertThat(StatementKind.of("")).isNull();
        assertThat(StatementKind.of("select pg_try_advisory_xact_lock(1)")).isNull();
        assertThat(StatementKind.of("/* idemtx:unknown */ select 1")).isNull();
        assertThat(StatementKind.of(" /* idemtx:claim */ select 1")).isNull();
    }
}
