package io.github.idemtx.core;

import static io.github.idemtx.core.IdempotencyPolicy.DEFAULT_DUPLICATE_WAIT;
import static io.github.idemtx.core.IdempotencyPolicy.DEFAULT_INITIAL_BACKOFF;
import static io.github.idemtx.core.IdempotencyPolicy.DEFAULT_MAX_ATTEMPTS;
import static io.github.idemtx.core.IdempotencyPolicy.DEFAULT_MAX_BACKOFF;
import static io.github.idemtx.core.IdempotencyPolicy.DEFAULT_MAX_RESULT_BYTES;
import static io.github.idemtx.core.IdempotencyPolicy.DEFAULT_RETRY_AFTER;
import static io.github.idemtx.core.IdempotencyPolicy.DEFAULT_TTL;
import static io.github.idemtx.core.IdempotencyPolicy.LARGEST_RESULT_BYTES;
import static io.github.idemtx.core.IdempotencyPolicy.LONGEST_BACKOFF;
import static io.github.idemtx.core.IdempotencyPolicy.LONGEST_DUPLICATE_WAIT;
import static io.github.idemtx.core.IdempotencyPolicy.LONGEST_RETRY_AFTER;
import static io.github.idemtx.core.IdempotencyPolicy.LONGEST_TTL;
import static io.github.idemtx.core.IdempotencyPolicy.MOST_ATTEMPTS;
import static io.github.idemtx.core.IdempotencyPolicy.SHORTEST_DUPLICATE_WAIT;
import static io.github.idemtx.core.IdempotencyPolicy.SHORTEST_TTL;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.time.Duration;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class IdempotencyPolicyTest {

    static class InsufficientFundsException extends RuntimeException {
        InsufficientFundsException(String message) {
            super(message);
        }
    }

    static final class OverdraftLimitException extends InsufficientFundsException {
        OverdraftLimitException(String message) {
            super(message);
        }
    }

    // ---------------------------------------------------------------- defaults

    @Test
    void defaultsEqualTheDocumentedConstants() {
        IdempotencyPolicy defaults = IdempotencyPolicy.defaults();

        assertThat(defaults.ttl()).isEqualTo(DEFAULT_TTL).isEqualTo(Duration.ofHours(24));
        assertThat(defaults.duplicateWait()).isEqualTo(DEFAULT_DUPLICATE_WAIT).isEqualTo(Duration.ofSeconds(5));
        assertThat(defaults.retryAfter()).isEqualTo(DEFAULT_RETRY_AFTER).isEqualTo(Duration.ofSeconds(1));
        assertThat(defaults.maxAttempts()).isEqualTo(DEFAULT_MAX_ATTEMPTS).isEqualTo(5);
        assertThat(defaults.initialBackoff()).isEqualTo(DEFAULT_INITIAL_BACKOFF).isEqualTo(Duration.ofMillis(5));
        assertThat(defaults.maxBackoff()).isEqualTo(DEFAULT_MAX_BACKOFF).isEqualTo(Duration.ofMillis(500));
        assertThat(defaults.maxResultBytes())
                .isEqualTo(DEFAULT_MAX_RESULT_BYTES)
                .isEqualTo(1024 * 1024);
    }

    @Test
    void builderStartsFromTheDefaults() {
        IdempotencyPolicy built = IdempotencyPolicy.builder().build();

        assertSameSettings(built, IdempotencyPolicy.defaults());
    }

    @Test
    void defaultsTreatOnlyRejectionsAsDeterministic() {
        IdempotencyPolicy defaults = IdempotencyPolicy.defaults();

        assertThat(defaults.classify(new IllegalStateException("boom"))).isEmpty();
        assertThat(defaults.classify(new IOException("io"))).isEmpty();
        assertThat(defaults.classify(new Rejection("code", "message"))).contains(Failure.of("code", "message"));
    }

    // ---------------------------------------------------------------- null settings

    static Stream<Arguments> nullSettings() {
        return Stream.of(
                Arguments.of("ttl", (Consumer<IdempotencyPolicy.Builder>) b -> b.ttl(null)),
                Arguments.of("duplicateWait", (Consumer<IdempotencyPolicy.Builder>) b -> b.duplicateWait(null)),
                Arguments.of("retryAfter", (Consumer<IdempotencyPolicy.Builder>) b -> b.retryAfter(null)),
                Arguments.of("initialBackoff", (Consumer<IdempotencyPolicy.Builder>)
                        b -> b.backoff(null, Duration.ofSeconds(1))),
                Arguments.of(
                        "maxBackoff", (Consumer<IdempotencyPolicy.Builder>) b -> b.backoff(Duration.ofMillis(1), null)),
                Arguments.of("type", (Consumer<IdempotencyPolicy.Builder>) b -> b.deterministicFailure(null)),
                Arguments.of(
                        "type", (Consumer<IdempotencyPolicy.Builder>) b -> b.deterministicFailure(null, Failure::of)),
                Arguments.of("mapper", (Consumer<IdempotencyPolicy.Builder>)
                        b -> b.deterministicFailure(IOException.class, null)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("nullSettings")
    void everySetterRejectsNullNamingTheSetting(String setting, Consumer<IdempotencyPolicy.Builder> setter) {
        IdempotencyPolicy.Builder builder = IdempotencyPolicy.builder();

        assertThatNullPointerException()
                .isThrownBy(() -> setter.accept(builder))
                .withMessageContaining(setting);
    }

    // ---------------------------------------------------------------- limits

    static Stream<Arguments> outOfRangeSettings() {
        Duration nano = Duration.ofNanos(1);
        return Stream.of(
                outOfRange("ttl", b -> b.ttl(SHORTEST_TTL.minus(nano)), SHORTEST_TTL, LONGEST_TTL),
                outOfRange("ttl", b -> b.ttl(LONGEST_TTL.plus(nano)), SHORTEST_TTL, LONGEST_TTL),
                outOfRange("ttl", b -> b.ttl(Duration.ZERO), SHORTEST_TTL, LONGEST_TTL),
                outOfRange("ttl", b -> b.ttl(Duration.ofSeconds(-1)), SHORTEST_TTL, LONGEST_TTL),
                outOfRange(
                        "duplicateWait",
                        b -> b.duplicateWait(Duration.ZERO),
                        SHORTEST_DUPLICATE_WAIT,
                        LONGEST_DUPLICATE_WAIT),
                outOfRange(
                        "duplicateWait",
                        b -> b.duplicateWait(Duration.ofMillis(-1)),
                        SHORTEST_DUPLICATE_WAIT,
                        LONGEST_DUPLICATE_WAIT),
                outOfRange(
                        "duplicateWait",
                        b -> b.duplicateWait(LONGEST_DUPLICATE_WAIT.plusMillis(1)),
                        SHORTEST_DUPLICATE_WAIT,
                        LONGEST_DUPLICATE_WAIT),
                outOfRange(
                        "retryAfter", b -> b.retryAfter(Duration.ZERO.minus(nano)), Duration.ZERO, LONGEST_RETRY_AFTER),
                outOfRange(
                        "retryAfter",
                        b -> b.retryAfter(LONGEST_RETRY_AFTER.plus(nano)),
                        Duration.ZERO,
                        LONGEST_RETRY_AFTER),
                outOfRange(
                        "initialBackoff",
                        b -> b.backoff(Duration.ofMillis(-1), Duration.ofMillis(10)),
                        Duration.ZERO,
                        LONGEST_BACKOFF),
                outOfRange(
                        "initialBackoff",
                        b -> b.backoff(LONGEST_BACKOFF.plus(nano), LONGEST_BACKOFF),
                        Duration.ZERO,
                        LONGEST_BACKOFF),
                outOfRange(
                        "maxBackoff",
                        b -> b.backoff(Duration.ZERO, Duration.ofMillis(-1)),
                        Duration.ZERO,
                        LONGEST_BACKOFF),
                outOfRange(
                        "maxBackoff",
                        b -> b.backoff(Duration.ZERO, LONGEST_BACKOFF.plus(nano)),
                        Duration.ZERO,
                        LONGEST_BACKOFF),
                outOfRange("maxAttempts", b -> b.maxAttempts(0), 1, MOST_ATTEMPTS),
                outOfRange("maxAttempts", b -> b.maxAttempts(-1), 1, MOST_ATTEMPTS),
                outOfRange("maxAttempts", b -> b.maxAttempts(Integer.MIN_VALUE), 1, MOST_ATTEMPTS),
                outOfRange("maxAttempts", b -> b.maxAttempts(101), 1, MOST_ATTEMPTS),
                outOfRange("maxResultBytes", b -> b.maxResultBytes(-1), 0, LARGEST_RESULT_BYTES),
                outOfRange("maxResultBytes", b -> b.maxResultBytes(LARGEST_RESULT_BYTES + 1), 0, LARGEST_RESULT_BYTES),
                outOfRange("maxResultBytes", b -> b.maxResultBytes(Integer.MAX_VALUE), 0, LARGEST_RESULT_BYTES));
    }

    private static Arguments outOfRange(
            String setting, Consumer<IdempotencyPolicy.Builder> setter, Object min, Object max) {
        return Arguments.of(setting, setter, String.valueOf(min), String.valueOf(max));
    }

    @ParameterizedTest(name = "{0} [{index}]")
    @MethodSource("outOfRangeSettings")
    void rejectsValueOutsideItsLimitsNamingSettingAndBothLimits(
            String setting, Consumer<IdempotencyPolicy.Builder> setter, String min, String max) {
        IdempotencyPolicy.Builder builder = IdempotencyPolicy.builder();

        assertThatIllegalArgumentException()
                .isThrownBy(() -> setter.accept(builder))
                .withMessageContaining(setting)
                .withMessageContaining(min)
                .withMessageContaining(max);
    }

    @Test
    void acceptsEveryLimitItself() {
        IdempotencyPolicy lowest = IdempotencyPolicy.builder()
                .ttl(SHORTEST_TTL)
                .duplicateWait(SHORTEST_DUPLICATE_WAIT)
                .retryAfter(Duration.ZERO)
                .maxAttempts(1)
                .backoff(Duration.ZERO, Duration.ZERO)
                .maxResultBytes(0)
                .build();
        IdempotencyPolicy highest = IdempotencyPolicy.builder()
                .ttl(LONGEST_TTL)
                .duplicateWait(LONGEST_DUPLICATE_WAIT)
                .retryAfter(LONGEST_RETRY_AFTER)
                .maxAttempts(MOST_ATTEMPTS)
                .backoff(LONGEST_BACKOFF, LONGEST_BACKOFF)
                .maxResultBytes(LARGEST_RESULT_BYTES)
                .build();

        assertThat(lowest.ttl()).isEqualTo(Duration.ofSeconds(1));
        assertThat(lowest.duplicateWait()).isEqualTo(Duration.ofMillis(1));
        assertThat(lowest.retryAfter()).isZero();
        assertThat(lowest.maxAttempts()).isEqualTo(1);
        assertThat(lowest.initialBackoff()).isZero();
        assertThat(lowest.maxBackoff()).isZero();
        assertThat(lowest.maxResultBytes()).isZero();

        assertThat(highest.ttl()).isEqualTo(Duration.ofDays(3650));
        assertThat(highest.duplicateWait()).isEqualTo(Duration.ofMinutes(10));
        assertThat(highest.retryAfter()).isEqualTo(Duration.ofHours(1));
        assertThat(highest.maxAttempts()).isEqualTo(100);
        assertThat(highest.initialBackoff()).isEqualTo(Duration.ofMinutes(1));
        assertThat(highest.maxBackoff()).isEqualTo(Duration.ofMinutes(1));
        assertThat(highest.maxResultBytes()).isEqualTo(64 * 1024 * 1024);
    }

    @Test
    void maxAttemptsAccepts1And100AndRejects0And101() {
        assertThat(IdempotencyPolicy.builder().maxAttempts(1).build().maxAttempts())
                .isEqualTo(1);
        assertThat(IdempotencyPolicy.builder().maxAttempts(100).build().maxAttempts())
                .isEqualTo(100);
        assertThatIllegalArgumentException()
                .isThrownBy(() -> IdempotencyPolicy.builder().maxAttempts(0));
        assertThatIllegalArgumentException()
                .isThrownBy(() -> IdempotencyPolicy.builder().maxAttempts(101));
    }

    @Test
    void maxResultBytesRejectsMinusOneAndOneOverTheMaximum() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> IdempotencyPolicy.builder().maxResultBytes(-1))
                .withMessageContaining("was -1");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> IdempotencyPolicy.builder().maxResultBytes(LARGEST_RESULT_BYTES + 1))
                .withMessageContaining("was " + (LARGEST_RESULT_BYTES + 1));
    }

    @Test
    void duplicateWaitRejectsSubMillisecondPrecision() {
        IdempotencyPolicy.Builder builder = IdempotencyPolicy.builder();

        assertThatIllegalArgumentException()
                .isThrownBy(() -> builder.duplicateWait(Duration.ofMillis(2).plusNanos(1)))
                .withMessageContaining("duplicateWait")
                .withMessageContaining("milliseconds");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> builder.duplicateWait(Duration.ofNanos(1_500_000)))
                .withMessageContaining("duplicateWait");
        assertThat(builder.build().duplicateWait()).isEqualTo(DEFAULT_DUPLICATE_WAIT);
    }

    @Test
    void duplicateWaitAcceptsWholeMilliseconds() {
        assertThat(IdempotencyPolicy.builder()
                        .duplicateWait(Duration.ofMillis(1500))
                        .build()
                        .duplicateWait())
                .isEqualTo(Duration.ofMillis(1500));
    }

    @Test
    void backoffRejectsInitialGreaterThanMax() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> IdempotencyPolicy.builder().backoff(Duration.ofMillis(100), Duration.ofMillis(50)))
                .withMessageContaining("initialBackoff")
                .withMessageContaining("maxBackoff");
    }

    @Test
    void backoffAcceptsInitialEqualToMax() {
        IdempotencyPolicy policy = IdempotencyPolicy.builder()
                .backoff(Duration.ofMillis(50), Duration.ofMillis(50))
                .build();

        assertThat(policy.initialBackoff()).isEqualTo(Duration.ofMillis(50));
        assertThat(policy.maxBackoff()).isEqualTo(Duration.ofMillis(50));
    }

    @Test
    void rejectedSetterLeavesThePreviousSettingsInPlace() {
        IdempotencyPolicy.Builder builder = IdempotencyPolicy.builder()
                .ttl(Duration.ofHours(1))
                .backoff(Duration.ofMillis(10), Duration.ofMillis(20));

        assertThatIllegalArgumentException().isThrownBy(() -> builder.ttl(Duration.ZERO));
        assertThatIllegalArgumentException()
                .isThrownBy(() -> builder.backoff(Duration.ofMillis(30), Duration.ofMillis(20)));
        assertThatIllegalArgumentException()
                .isThrownBy(() -> builder.backoff(Duration.ofMillis(1), LONGEST_BACKOFF.plusMillis(1)));
        IdempotencyPolicy policy = builder.build();

        assertThat(policy.ttl()).isEqualTo(Duration.ofHours(1));
        assertThat(policy.initialBackoff()).isEqualTo(Duration.ofMillis(10));
        assertThat(policy.maxBackoff()).isEqualTo(Duration.ofMillis(20));
    }

    // ---------------------------------------------------------------- toBuilder

    @Test
    void toBuilderKeepsEverySetting() {
        IdempotencyPolicy original = IdempotencyPolicy.builder()
                .ttl(Duration.ofHours(2))
                .duplicateWait(Duration.ofMillis(750))
                .retryAfter(Duration.ofSeconds(3))
                .maxAttempts(7)
                .backoff(Duration.ofMillis(20), Duration.ofSeconds(2))
                .maxResultBytes(4096)
                .deterministicFailure(InsufficientFundsException.class)
                .build();

        IdempotencyPolicy copy = original.toBuilder().build();

        assertSameSettings(copy, original);
        assertThat(copy.classify(new InsufficientFundsException("low")))
                .contains(Failure.of("InsufficientFundsException", "low"));
    }

    @Test
    void changingACopiedBuilderLeavesTheOriginalPolicyAlone() {
        IdempotencyPolicy original =
                IdempotencyPolicy.builder().ttl(Duration.ofHours(2)).build();

        IdempotencyPolicy changed = original.toBuilder()
                .ttl(Duration.ofHours(3))
                .deterministicFailure(InsufficientFundsException.class)
                .build();

        assertThat(changed.ttl()).isEqualTo(Duration.ofHours(3));
        assertThat(original.ttl()).isEqualTo(Duration.ofHours(2));
        assertThat(original.classify(new InsufficientFundsException("low"))).isEmpty();
        assertThat(changed.classify(new InsufficientFundsException("low"))).isPresent();
    }

    @Test
    void builtPolicyIsUnaffectedByLaterBuilderChanges() {
        IdempotencyPolicy.Builder builder =
                IdempotencyPolicy.builder().ttl(Duration.ofHours(1)).maxAttempts(3);
        IdempotencyPolicy policy = builder.build();

        builder.ttl(Duration.ofHours(5))
                .maxAttempts(9)
                .backoff(Duration.ofSeconds(1), Duration.ofSeconds(2))
                .deterministicFailure(InsufficientFundsException.class);

        assertThat(policy.ttl()).isEqualTo(Duration.ofHours(1));
        assertThat(policy.maxAttempts()).isEqualTo(3);
        assertThat(policy.initialBackoff()).isEqualTo(DEFAULT_INITIAL_BACKOFF);
        assertThat(policy.classify(new InsufficientFundsException("low"))).isEmpty();
        assertThat(builder.build().classify(new InsufficientFundsException("low")))
                .isPresent();
    }

    // ---------------------------------------------------------------- classify

    @Test
    void classifyMapsARejectionToItsFailureWithoutAnyRegisteredType() {
        Failure failure = Failure.of("insufficient_funds", "balance 3 < 5");

        assertThat(IdempotencyPolicy.defaults().classify(new Rejection(failure)))
                .containsSame(failure);
    }

    @Test
    void classifyMapsARejectionSubclassToItsFailure() {
        Rejection rejection = new Rejection("limit", "over limit") {};

        assertThat(IdempotencyPolicy.defaults().classify(rejection)).contains(Failure.of("limit", "over limit"));
    }

    @Test
    void classifyPrefersTheRejectionsOwnFailureOverARegisteredSupertype() {
        IdempotencyPolicy policy = IdempotencyPolicy.builder()
                .deterministicFailure(RuntimeException.class, e -> Failure.of("generic", "any runtime exception"))
                .build();

        assertThat(policy.classify(new Rejection("insufficient_funds", "low")))
                .contains(Failure.of("insufficient_funds", "low"));
    }

    @Test
    void classifyMapsARegisteredTypeWithTheDefaultMapping() {
        IdempotencyPolicy policy = IdempotencyPolicy.builder()
                .deterministicFailure(InsufficientFundsException.class)
                .build();

        assertThat(policy.classify(new InsufficientFundsException("balance 3 < 5")))
                .contains(Failure.of("InsufficientFundsException", "balance 3 < 5"));
    }

    @Test
    void classifyMapsSubclassesOfARegisteredTypeUnderTheirOwnName() {
        IdempotencyPolicy policy = IdempotencyPolicy.builder()
                .deterministicFailure(InsufficientFundsException.class)
                .build();

        assertThat(policy.classify(new OverdraftLimitException("limit 100")))
                .contains(Failure.of("OverdraftLimitException", "limit 100"));
    }

    @Test
    void classifyHandlesRegisteredCheckedExceptionsAndTheirSubclasses() {
        IdempotencyPolicy policy = IdempotencyPolicy.builder()
                .deterministicFailure(IOException.class)
                .build();

        assertThat(policy.classify(new FileNotFoundException("/missing")))
                .contains(Failure.of("FileNotFoundException", "/missing"));
    }

    @Test
    void classifyUsesACustomMapper() {
        IdempotencyPolicy policy = IdempotencyPolicy.builder()
                .deterministicFailure(
                        InsufficientFundsException.class,
                        e -> Failure.of("insufficient_funds", "mapped: " + e.getMessage()))
                .build();

        assertThat(policy.classify(new InsufficientFundsException("low")))
                .contains(Failure.of("insufficient_funds", "mapped: low"));
        assertThat(policy.classify(new OverdraftLimitException("over")))
                .contains(Failure.of("insufficient_funds", "mapped: over"));
    }

    @Test
    void classifyGivesEmptyForAnUnregisteredException() {
        IdempotencyPolicy policy = IdempotencyPolicy.builder()
                .deterministicFailure(OverdraftLimitException.class)
                .build();

        assertThat(policy.classify(new IllegalStateException("boom"))).isEmpty();
        assertThat(policy.classify(new InsufficientFundsException("supertype is not registered")))
                .isEmpty();
        assertThat(policy.classify(new Error("error"))).isEmpty();
    }

    @Test
    void classifyTriesTypesInRegistrationOrder() {
        IdempotencyPolicy broadFirst = IdempotencyPolicy.builder()
                .deterministicFailure(RuntimeException.class, e -> Failure.of("first", ""))
                .deterministicFailure(InsufficientFundsException.class, e -> Failure.of("second", ""))
                .build();
        IdempotencyPolicy narrowFirst = IdempotencyPolicy.builder()
                .deterministicFailure(InsufficientFundsException.class, e -> Failure.of("first", ""))
                .deterministicFailure(RuntimeException.class, e -> Failure.of("second", ""))
                .build();

        InsufficientFundsException exception = new InsufficientFundsException("low");

        assertThat(broadFirst.classify(exception)).contains(Failure.of("first", ""));
        assertThat(narrowFirst.classify(exception)).contains(Failure.of("first", ""));
        assertThat(narrowFirst.classify(new IllegalStateException())).contains(Failure.of("second", ""));
    }

    @Test
    void classifyThrowsNullPointerExceptionNamingTheTypeWhenAMapperReturnsNull() {
        IdempotencyPolicy policy = IdempotencyPolicy.builder()
                .deterministicFailure(InsufficientFundsException.class, e -> null)
                .build();

        assertThatNullPointerException()
                .isThrownBy(() -> policy.classify(new InsufficientFundsException("low")))
                .withMessageContaining(InsufficientFundsException.class.getName());
    }

    @Test
    void classifyRejectsNull() {
        assertThatNullPointerException()
                .isThrownBy(() -> IdempotencyPolicy.defaults().classify(null));
    }

    @Test
    void toStringShowsTheSettings() {
        IdempotencyPolicy policy = IdempotencyPolicy.builder()
                .maxAttempts(7)
                .deterministicFailure(InsufficientFundsException.class)
                .build();

        assertThat(policy.toString())
                .contains("maxAttempts=7", "ttl=PT24H", InsufficientFundsException.class.getName());
    }

    private static void assertSameSettings(IdempotencyPolicy actual, IdempotencyPolicy expected) {
        assertThat(actual.ttl()).isEqualTo(expected.ttl());
        assertThat(actual.duplicateWait()).isEqualTo(expected.duplicateWait());
        assertThat(actual.retryAfter()).isEqualTo(expected.retryAfter());
        assertThat(actual.maxAttempts()).isEqualTo(expected.maxAttempts());
        assertThat(actual.initialBackoff()).isEqualTo(expected.initialBackoff());
        assertThat(actual.maxBackoff()).isEqualTo(expected.maxBackoff());
        assertThat(actual.maxResultBytes()).isEqualTo(expected.maxResultBytes());
    }
}
