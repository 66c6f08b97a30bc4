package io.github.idemtx.jooq.internal.store;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.IdempotencyException;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Outcome;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.core.ResultTooLargeException;
import io.github.idemtx.core.Scope;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Results and failures as the claim table stores them: through the codec, within the policy's size
 * limit, with errors that name the call. Shared by both front doors. Immutable and thread-safe.
 */
public final class StoredValues<T> {

    private final ResultCodec<T> codec;
    private final int maxBytes;

    public StoredValues(ResultCodec<T> codec, int maxBytes) {
        this.codec = codec;
        this.maxBytes = maxBytes;
    }

    /** The bytes to store for {@code value} (null for null); what it throws means nothing was committed. */
    public byte @Nullable [] encode(Scope scope, IdempotencyKey key, @Nullable T value) {
        if (value == null) {
            return null;
        }
        byte[] bytes;
        try {
            bytes = codec.encode(value);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IdempotencyException(
                    scope, key, "the codec could not encode the result; nothing was committed", e);
        }
        if (bytes == null) {
            throw new IdempotencyException(
                    scope, key, "the codec encoded the result as null; nothing was committed", null);
        }
        if (bytes.length > maxBytes) {
            throw new ResultTooLargeException(scope, key, bytes.length, maxBytes);
        }
        return bytes;
    }

    /** The value stored as {@code stored} (null for null). */
    public @Nullable T decode(Scope scope, IdempotencyKey key, byte @Nullable [] stored) {
        if (stored == null) {
            return null;
        }
        try {
            return codec.decode(stored);
        } catch (Exception e) {
            throw new IdempotencyException(scope, key, "the stored result could not be decoded with " + codec, e);
        }
    }

    /**
     * The answer a settled row gives a later call: its result replayed, or its failure as a replayed
     * rejection; null when the row holds no answer (the caller decides).
     */
    public @Nullable Outcome<T> settled(Scope scope, IdempotencyKey key, ClaimRow row) {
        return switch (row.state()) {
            // a settled row has its completion time (Replayed and Rejected would throw the same without it)
            case SUCCEEDED ->
                new Outcome.Replayed<>(
                        decode(scope, key, row.result()), Objects.requireNonNull(row.completedAt(), "completedAt"));
            case FAILED ->
                new Outcome.Rejected<>(
                        decodeFailure(scope, key, row.result()),
                        Objects.requireNonNull(row.completedAt(), "recordedAt"),
                        true);
            case RUNNING, IN_FLIGHT, NEEDS_RECONCILIATION, SENT -> null;
        };
    }

    /** The failure stored as {@code stored}. */
    public static Failure decodeFailure(Scope scope, IdempotencyKey key, byte @Nullable [] stored) {
        try {
            return FailureEncoding.decode(stored);
        } catch (RuntimeException e) {
            throw new IdempotencyException(scope, key, "the stored failure could not be decoded", e);
        }
    }

    @Override
    public String toString() {
        return codec.toString();
    }
}
