package io.github.idemtx.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import java.io.IOException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class FailureTest {

    static final class InsufficientFundsException extends RuntimeException {
        InsufficientFundsException(String message) {
            super(message);
        }
    }

    @Test
    void keepsCodeAndMessage() {
        Failure failure = Failure.of("insufficient_funds", "balance 3 < 5");

        assertThat(failure.code()).isEqualTo("insufficient_funds");
        assertThat(failure.message()).isEqualTo("balance 3 < 5");
        assertThat(failure).isEqualTo(new Failure("insufficient_funds", "balance 3 < 5"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "\t"})
    void rejectsBlankCode(String blank) {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Failure.of(blank, "message"))
                .withMessageContaining("code");
    }

    @Test
    void rejectsNullCode() {
        assertThatNullPointerException()
                .isThrownBy(() -> Failure.of(null, "message"))
                .withMessageContaining("code");
    }

    @Test
    void accepts200CharacterCode() {
        assertThat(Failure.of("c".repeat(200), "").code()).hasSize(200);
    }

    @Test
    void rejectsCodeLongerThan200Characters() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Failure.of("c".repeat(201), ""))
                .withMessageContaining("code")
                .withMessageContaining("200")
                .withMessageContaining("201");
    }

    @Test
    void acceptsEmptyMessage() {
        assertThat(Failure.of("code", "").message()).isEmpty();
    }

    @Test
    void accepts4000CharacterMessage() {
        assertThat(Failure.of("code", "m".repeat(4000)).message()).hasSize(4000);
    }

    @Test
    void rejectsMessageLongerThan4000Characters() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> Failure.of("code", "m".repeat(4001)))
                .withMessageContaining("message")
                .withMessageContaining("4000")
                .withMessageContaining("4001");
    }

    @Test
    void rejectsNullMessage() {
        assertThatNullPointerException()
                .isThrownBy(() -> Failure.of("code", null))
                .withMessageContaining("message");
    }

    @Test
    void ofThrowableUsesSimpleClassNameAndMessage() {
        Failure failure = Failure.of(new InsufficientFundsException("balance 3 < 5"));

        assertThat(failure).isEqualTo(Failure.of("InsufficientFundsException", "balance 3 < 5"));
    }

    @Test
    void ofThrowableWorksForCheckedExceptions() {
        assertThat(Failure.of(new IOException("disk full"))).isEqualTo(Failure.of("IOException", "disk full"));
    }

    @Test
    void ofThrowableUsesEmptyMessageWhenTheExceptionHasNone() {
        Failure failure = Failure.of(new IllegalStateException());

        assertThat(failure.code()).isEqualTo("IllegalStateException");
        assertThat(failure.message()).isEmpty();
    }

    @Test
    void ofThrowableKeepsA4000CharacterMessageWhole() {
        String message = "x".repeat(4000);

        assertThat(Failure.of(new IllegalStateException(message)).message()).isEqualTo(message);
    }

    @Test
    void ofThrowableTruncatesMessagesLongerThan4000Characters() {
        String message = "a".repeat(3999) + "bcdef";

        Failure failure = Failure.of(new IllegalStateException(message));

        assertThat(failure.message()).hasSize(Failure.MAX_MESSAGE_LENGTH).isEqualTo("a".repeat(3999) + "b");
    }

    @Test
    void ofThrowableGivesAnonymousSubclassANonEmptyCode() {
        RuntimeException anonymous = new RuntimeException("boom") {};
        assertThat(anonymous.getClass().getSimpleName()).isEmpty();

        Failure failure = Failure.of(anonymous);

        assertThat(failure.code()).isNotBlank().isEqualTo(anonymous.getClass().getName());
        assertThat(failure.message()).isEqualTo("boom");
    }

    @Test
    void ofThrowableRejectsNull() {
        assertThatNullPointerException().isThrownBy(() -> Failure.of((Throwable) null));
    }

    @Test
    void truncatesALongMessageWithoutSplittingASurrogatePair() {
        String message = "x".repeat(Failure.MAX_MESSAGE_LENGTH - 1) + "\uD83D\uDE00tail";

        Failure failure = Failure.of(new IllegalStateException(message));

        assertThat(failure.message()).hasSize(Failure.MAX_MESSAGE_LENGTH - 1);
        assertThat(Character.isHighSurrogate(
                        failure.message().charAt(failure.message().length() - 1)))
                .isFalse();
    }

    @Test
    void cutsAnOverlongClassNameToTheCodeLimitInsteadOfFailing() {
        class AnExceptionWhoseNameIsLongerThanAnyCodeMayBeAndKeepsGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoing
                extends RuntimeException {}

        Failure failure = Failure.of(
                new AnExceptionWhoseNameIsLongerThanAnyCodeMayBeAndKeepsGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoingAndGoing());

        assertThat(failure.code()).hasSize(Failure.MAX_CODE_LENGTH).startsWith("AnExceptionWhoseName");
    }
}
