package io.github.idemtx.jooq.internal.store;

import io.github.idemtx.core.Failure;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * How a recorded {@link Failure} is stored in the claim's result column: a version byte, the
 * code's UTF-8 length as an unsigned 16-bit number, the code, then the message, all UTF-8.
 */
public final class FailureEncoding {

    private static final byte VERSION = 1;

    private FailureEncoding() {}

    public static byte[] encode(Failure failure) {
        byte[] code = failure.code().getBytes(StandardCharsets.UTF_8);
        byte[] message = failure.message().getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(3 + code.length + message.length)
                .put(VERSION)
                .putShort((short) code.length)
                .put(code)
                .put(message)
                .array();
    }

    public static Failure decode(byte @Nullable [] stored) {
        if (stored == null || stored.length < 3 || stored[0] != VERSION) {
            throw new IllegalArgumentException("not a recorded failure");
        }
        ByteBuffer in = ByteBuffer.wrap(stored);
        in.get();
        int codeLength = Short.toUnsignedInt(in.getShort());
        if (codeLength > in.remaining()) {
            throw new IllegalArgumentException("recorded failure is truncated");
        }
        String code = new String(stored, 3, codeLength, StandardCharsets.UTF_8);
        String message = new String(stored, 3 + codeLength, stored.length - 3 - codeLength, StandardCharsets.UTF_8);
        return new Failure(code, message);
    }
}
