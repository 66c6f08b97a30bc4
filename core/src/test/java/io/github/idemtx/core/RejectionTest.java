package io.github.idemtx.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import org.junit.jupiter.api.Test;

class RejectionTest {

    @Test
    void carriesTheFailureItWasGiven() {
        Failure failure = Failure.of("insufficient_funds", "balance 3 < 5");

        Rejection rejection = new Rejection(failure);

        assertThat(rejection.failure()).isSameAs(failure);
    }

    @Test
    void buildsTheFailureFromCodeAndMessage() {
        Rejection rejection = new Rejection("insufficient_funds", "balance 3 < 5");

        assertThat(rejection.failure()).isEqualTo(Failure.of("insufficient_funds", "balance 3 < 5"));
    }

    @Test
    void messageShowsCodeAndFailureMessage() {
        assertThat(new Rejection("insufficient_funds", "balance 3 < 5"))
                .isInstanceOf(RuntimeException.class)
                .hasMessage("insufficient_funds: balance 3 < 5")
                .hasNoCause();
    }

    @Test
    void rejectsNullFailure() {
        assertThatNullPointerException()
                .isThrownBy(() -> new Rejection((Failure) null))
                .withMessageContaining("failure");
    }

    @Test
    void validatesCodeAndMessageLikeFailure() {
        assertThatIllegalArgumentException().isThrownBy(() -> new Rejection(" ", "message"));
        assertThatNullPointerException().isThrownBy(() -> new Rejection("code", null));
    }
}
