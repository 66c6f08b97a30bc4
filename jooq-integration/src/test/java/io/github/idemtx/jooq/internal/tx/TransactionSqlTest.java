package io.github.idemtx.jooq.internal.tx;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The lexer behind the guard, without a database: which statements end the transaction, and what
 * hides a semicolon (and the verb after it) from the split. ProtocolGuardTest sends the forms that
 * matter to the server through the guard.
 */
class TransactionSqlTest {

    static Stream<Arguments> endingStatements() {
        return Stream.of(
                Arguments.of("commit", "commit"),
                Arguments.of("COMMIT", "commit"),
                Arguments.of("Commit Work", "commit"),
                Arguments.of("commit transaction", "commit"),
                Arguments.of("commit and chain", "commit"),
                Arguments.of("commit;", "commit"),
                Arguments.of("commit prepared 'x'", "commit"),
                Arguments.of("end", "end"),
                Arguments.of("END TRANSACTION", "end"),
                Arguments.of("abort", "abort"),
                Arguments.of("Abort Work", "abort"),
                Arguments.of("rollback", "rollback"),
                Arguments.of("ROLLBACK", "rollback"),
                Arguments.of("rollback;", "rollback"),
                Arguments.of("rollback work", "rollback"),
                Arguments.of("ROLLBACK TRANSACTION", "rollback"),
                Arguments.of("rollback and no chain", "rollback"),
                Arguments.of("rollback work and chain", "rollback"),
                Arguments.of("prepare transaction 'x'", "prepare transaction"),
                Arguments.of("PREPARE TRANSACTION 'x'", "prepare transaction"),
                Arguments.of("prepare /* c */ transaction 'x'", "prepare transaction"));
    }

    @ParameterizedTest
    @MethodSource("endingStatements")
    void aStatementThatEndsTheTransactionIsNamedByItsVerbInLowerCase(String sql, String verb) {
        assertThat(TransactionSql.endingVerb(sql)).isEqualTo(verb);
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "  \t\r\n commit",
                "-- a comment\ncommit",
                "-- a comment\r\ncommit",
                "--\rcommit",
                "/* a comment */commit",
                "/**/commit",
                "/* outer /* inner */ still outer */ commit",
                "/* a */ -- b\n /* c */ commit",
                "(commit)",
                "( (commit"
            })
    void whiteSpaceCommentsAndParenthesesBeforeTheVerbAreSkipped(String sql) {
        assertThat(TransactionSql.endingVerb(sql)).isEqualTo("commit");
    }

    static Stream<Arguments> multiStatementStrings() {
        return Stream.of(
                Arguments.of("select 1; commit", "commit"),
                Arguments.of("select 1;commit", "commit"),
                Arguments.of(";commit", "commit"),
                Arguments.of(";; rollback", "rollback"),
                Arguments.of("insert into t values (1); update t set a = 2; rollback", "rollback"),
                Arguments.of("commit; select 1", "commit"),
                Arguments.of("select 1; abort; commit", "abort"),
                Arguments.of("select 1; rollback to a; end", "end"),
                Arguments.of("select 1; -- a comment\n commit", "commit"),
                Arguments.of("select 1; --x\rcommit", "commit"),
                Arguments.of("select 1; /* c */ end", "end"),
                Arguments.of("select 1;\n\tPREPARE TRANSACTION 'x'", "prepare transaction"));
    }

    @ParameterizedTest
    @MethodSource("multiStatementStrings")
    void everyStatementOfAMultiStatementStringIsRead(String sql, String verb) {
        assertThat(TransactionSql.endingVerb(sql)).isEqualTo(verb);
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "",
                "   ",
                "-- commit",
                "/* commit */",
                "/* commit",
                "/* outer /* commit */",
                "-commit",
                "/commit",
                "-",
                "/",
                "select 1",
                "select 'commit'",
                "insert into t values (1)",
                "begin",
                "BEGIN WORK",
                "start transaction",
                "start transaction isolation level serializable",
                "savepoint a",
                "release savepoint a",
                "release a",
                "set transaction isolation level serializable",
                "set local lock_timeout = 0",
                "prepare p as select 1",
                "execute p",
                "explain select 1",
                "analyze t",
                "create table commit_log (id int)",
                "call end_of_day()",
                "reset all",
                "rollback to a",
                "rollback to savepoint a",
                "ROLLBACK TO SAVEPOINT a",
                "rollback work to savepoint a",
                "ROLLBACK WORK TO SAVEPOINT a",
                "rollback transaction to a",
                "rollback /* c */ to a",
                "rollback prepared 'x'",
                "rollback work prepared 'x'"
            })
    void otherStatementsPass(String sql) {
        assertThat(TransactionSql.endingVerb(sql)).isNull();
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "committed",
                "commits",
                "ended",
                "endless",
                "aborted",
                "rollbacks",
                "beginning",
                "prepared transaction 'x'",
                "prepare transactional",
                "update t set committed = true",
                "select 1 as beginning"
            })
    void aWordThatMerelyStartsWithAVerbIsNotIt(String sql) {
        assertThat(TransactionSql.endingVerb(sql)).isNull();
    }

    @Test
    void noSqlEndsNothing() {
        assertThat(TransactionSql.endingVerb(null)).isNull();
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                // string literals and quoted identifiers
                "insert into t values ('x; commit')",
                "select 'it''s; commit'",
                "select 'a;' || ';commit'",
                "select 'unterminated; commit",
                "select \"a; commit\" from t",
                "select \"a\"\";commit\" from t",
                "select \"unterminated; commit",
                // comments
                "select 1 -- ; commit",
                "select 1 /* ; commit */",
                "select 1 /* /* */ ; commit */",
                "select 1 /* unterminated ; commit",
                // escape strings: a backslash escapes the quote after it
                "select E'\\'; commit'",
                "select e'\\'; commit'",
                "select E'it''s; commit'",
                "select E'unterminated; commit",
                "E'\\'; commit'",
                " E'\\'; commit'",
                "insert into t values (E'it\\'s; commit')",
                // dollar quotes
                "select $$; commit$$",
                "$$; commit$$",
                "select $f$; commit$f$",
                "select $a_b$; commit $a_b$",
                "select $t1$; commit $t1$",
                "select $a$ $b$; commit $a$",
                "select $$; commit",
                "select $f$; commit",
                "do $f$ begin perform 1; end $f$",
                // a string that ends in the middle of what it scans
                "select 1; select $",
                "select 1; select $ab",
                "select 1; select 2 -",
                "select 1; select 4 /",
                "select 1; select E'x'",
                "select 1; select E'\\",
                // nothing after the last semicolon
                "select 1;",
                "select 1; ",
                "select 1; -- done"
            })
    void aSemicolonInsideQuotesCommentsOrDollarQuotesDoesNotSplit(String sql) {
        assertThat(TransactionSql.endingVerb(sql)).isNull();
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "'a;b'; commit",
                "select 'x'; commit",
                "select 'it''s'; commit",
                "select \"x\"; commit",
                "select E'x'; commit",
                "select e'x'; commit",
                "select E''; commit",
                "select E'\\\\'; commit",
                "select E'\\'x'; commit",
                // a name ending in e before a plain string: no escape string, the backslash escapes nothing
                "select code'\\'; commit",
                "xe'\\'; commit",
                // $ inside a name, or a parameter, opens no dollar quote
                "select 1 as a$b$; commit; --$b$",
                "select a_$t$; commit; --$t$",
                "select a1$t$; commit; --$t$",
                "select a$$t$; commit",
                "select $1; commit",
                "select $1$; commit",
                "select $$x$$; commit",
                "select $f$x$f$; commit",
                "select $$it's$$; commit",
                "select $f$ 'a $f$; commit",
                "select 1 - 1; commit",
                "-1; commit",
                "select 4 / 2; commit",
                "select 1 -- x\n; commit",
                "select 1 -- x\r; commit",
                "select 1 /* x */; commit",
                "select 1 /* a /* b */ c */; commit",
                "select E'\\' '; commit; --'"
            })
    void aQuoteACommentOrADollarQuoteEndsWhereTheServerEndsIt(String sql) {
        assertThat(TransactionSql.endingVerb(sql)).isEqualTo("commit");
    }
}
