package io.github.idemtx.db;

import io.github.idemtx.core.IdempotencyKey;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.time.format.ResolverStyle;
import java.util.Locale;

/**
 * The day a key of the claim table partitioned by key day begins with: its UTC day, {@code yyyyMMdd},
 * which also names and bounds the day's partition.
 */
final class KeyDay {

    /** How many characters of a key name its day. */
    static final int LENGTH = 8;

    private static final DateTimeFormatter FORMAT =
            DateTimeFormatter.ofPattern("uuuuMMdd", Locale.ROOT).withResolverStyle(ResolverStyle.STRICT);

    private KeyDay() {}

    /** {@return {@code day} as keys and partition names carry it, {@code yyyyMMdd}} */
    static String format(LocalDate day) {
        return FORMAT.format(day);
    }

    /** {@return the UTC day {@code instant} falls in} */
    static LocalDate utc(Instant instant) {
        return instant.atOffset(ZoneOffset.UTC).toLocalDate();
    }

    /** {@return the day {@code text} names, {@code yyyyMMdd}} @throws DateTimeParseException if none */
    static LocalDate parse(String text) {
        return LocalDate.parse(text, FORMAT);
    }

    /** {@return the day {@code key} begins with} @throws IllegalArgumentException if it begins with none */
    static LocalDate of(IdempotencyKey key) {
        String value = key.value();
        if (value.length() < LENGTH) {
            throw notADay(value);
        }
        try {
            return parse(value.substring(0, LENGTH));
        } catch (DateTimeParseException e) {
            throw notADay(value);
        }
    }

    private static IllegalArgumentException notADay(String value) {
        return new IllegalArgumentException("key '" + abbreviate(value) + "' does not begin with the day of its intent"
                + " (yyyyMMdd, UTC), which the claim table partitioned by day needs to know where it belongs:"
                + " build it with ClaimPartitions.key(intentCreated, rest)");
    }

    /** {@return {@code value}, cut after 40 characters for a message} */
    static String abbreviate(String value) {
        return value.length() <= 40 ? value : value.substring(0, 40) + "...";
    }
}
