package io.github.idemtx.jooq;

import io.github.idemtx.core.Failure;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.jooq.internal.flow.effect.EffectFlow;
import io.github.idemtx.jooq.internal.store.AdminStatements;
import io.github.idemtx.jooq.internal.store.ClaimState;
import io.github.idemtx.jooq.internal.store.Digests;
import io.github.idemtx.jooq.internal.store.FailureEncoding;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * {@link ClaimAdmin}'s reading of a claim row as an operator sees it: the state's public name, the
 * request and result decoded by the codecs of the effect (or transaction) that wrote them where they
 * are known, and why not where they no longer decode. Immutable and thread-safe.
 */
final class ClaimViewDecoder {

    private final Map<String, ExternalEffect<?, ?>> effects;
    private final @Nullable ResultCodec<?> transactionResults;

    /**
     * @param effects the effects known by name; not copied (the admin's own immutable map)
     * @param transactionResults the codec of {@link IdempotentTransaction}'s results; null: shown as text
     */
    ClaimViewDecoder(Map<String, ExternalEffect<?, ?>> effects, @Nullable ResultCodec<?> transactionResults) {
        this.effects = effects;
        this.transactionResults = transactionResults;
    }

    ClaimView view(AdminStatements.Row row, List<AdminStatements.Action> history) {
        String effectName = row.effect();
        ExternalEffect<?, ?> effect = effectName == null ? null : effects.get(effectName);
        ClaimView.State state = state(row.state());
        boolean settled = state == ClaimView.State.COMPLETED || state == ClaimView.State.FAILED;
        List<String> problems = new ArrayList<>();
        Object request = null;
        if (effect != null && row.request() != null) {
            EffectFlow.DecodedRequest<?> decoded = effect.flow().decodeRequest(row.scope(), row.key(), row.request());
            request = decoded.request();
            if (decoded.problem() != null) {
                problems.add(decoded.problem());
            }
        }
        Object answer = null;
        Failure failure = null;
        String answerText = null;
        if (state == ClaimView.State.FAILED) {
            failure = FailureEncoding.decode(row.result());
        } else if (state == ClaimView.State.COMPLETED && row.result() != null) {
            answerText = text(row.result());
            ResultCodec<?> codec = transactionResults;
            try {
                if (effect != null) {
                    answer = effect.flow().decodeResult(row.scope(), row.key(), row.result());
                } else if (effectName == null && codec != null) {
                    answer = codec.decode(row.result());
                }
            } catch (Exception e) { // a codec's decode may throw checked exceptions too
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                problems.add("the stored result no longer decodes (" + oneLine(cause.toString()) + ")");
            }
        }
        return new ClaimView(
                row.scope(),
                row.key(),
                state,
                effectName == null ? "transaction" : "effect:" + effectName,
                HexFormat.of().formatHex(row.fingerprint()),
                row.createdAt(),
                row.completedAt(),
                row.expiresAt(),
                row.expired(),
                row.fence(),
                settled ? null : row.leaseUntil(),
                settled ? null : row.lookups(),
                row.nextLookupAt(),
                effectName == null
                        ? null
                        : row.reference() != null
                                ? row.reference() // what an effect settled by statement sent
                                : Digests.downstreamKey(
                                        effectName,
                                        row.scope().value(),
                                        row.key().value(),
                                        row.createdAt()),
                request,
                answer,
                answerText,
                failure,
                problems.isEmpty() ? null : String.join("; ", problems),
                actions(history));
    }

    static List<ClaimView.Action> actions(List<AdminStatements.Action> history) {
        List<ClaimView.Action> actions = new ArrayList<>(history.size());
        for (AdminStatements.Action a : history) {
            actions.add(new ClaimView.Action(a.at(), a.action(), a.operator(), a.reason()));
        }
        return List.copyOf(actions);
    }

    private static ClaimView.State state(ClaimState state) {
        return switch (state) {
            case RUNNING -> ClaimView.State.RUNNING;
            case SUCCEEDED -> ClaimView.State.COMPLETED;
            case FAILED -> ClaimView.State.FAILED;
            case IN_FLIGHT -> ClaimView.State.IN_FLIGHT;
            case NEEDS_RECONCILIATION -> ClaimView.State.NEEDS_RECONCILIATION;
            case SENT -> ClaimView.State.SENT;
        };
    }

    private static @Nullable String text(byte[] stored) {
        try {
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(stored))
                    .toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    /** {@code s} on one line, for a message that quotes an exception. */
    static String oneLine(String s) {
        return s.replaceAll("\\s*[\\r\\n]+\\s*", " ");
    }
}
