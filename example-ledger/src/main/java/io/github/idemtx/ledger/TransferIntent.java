package io.github.idemtx.ledger;

import com.fasterxml.jackson.databind.JsonNode;
import io.github.idemtx.core.Fingerprint;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.http.InvalidJsonException;
import io.github.idemtx.http.RequestFingerprint;
import io.github.idemtx.keys.DerivedKeys;
import io.github.idemtx.keys.FieldNormalizer;
import java.math.BigDecimal;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * A transfer intent as a message carries it, decoded, with its key and fingerprint:
 *
 * <pre>{@code
 * {"tenant": "acme", "from": "<account>", "to": "<account>", "amount": "10.00",
 *  "reference": "invoice 42", "createdAt": "2026-12-02T10:15:30Z"}
 * }</pre>
 *
 * ({@code reference} optional). The key is the producer's intent id, the AMQP {@code message_id},
 * or, where the producer set none, derived from the intent's own fields: tenant, from, to, amount,
 * reference and the 15-minute bucket of {@code createdAt} ({@link DerivedKeys}). Never anything of
 * the delivery: a redelivery, a re-publish and a consumer's restart all give the same key. The
 * fingerprint is the SHA-256 of the decoded intent's fields (so member order, whitespace and other
 * spellings of the same instant do not matter), and the same id sent with another intent is a
 * {@code FingerprintMismatch}.
 */
record TransferIntent(
        String tenant,
        Scope scope,
        IdempotencyKey key,
        Fingerprint fingerprint,
        UUID from,
        UUID to,
        BigDecimal amount,
        Instant createdAt) {

    /** The derivation's action name: a key derived for a transfer never equals one for another kind of intent. */
    static final String ACTION = "ledger.transfer";

    private static final Set<String> FIELDS = Set.of("tenant", "from", "to", "amount", "reference", "createdAt");
    private static final Pattern MONEY = Pattern.compile("[0-9]{1,15}\\.[0-9]{2}");

    /** A message that is no transfer intent: it goes to the dead-letter queue with {@link #getMessage()}, nothing written. */
    static final class Undecodable extends Exception {
        private static final long serialVersionUID = 1L;

        Undecodable(String reason) {
            super(reason, null, false, false);
        }
    }

    /** The keys derived for intents without an id, with {@code secret}. */
    static DerivedKeys derivedKeys(byte[] secret) {
        return DerivedKeys.builder()
                .secret(secret)
                .action(ACTION)
                .field("from", FieldNormalizer.CREDITOR_KEY)
                .field("to", FieldNormalizer.CREDITOR_KEY)
                .field("amount", FieldNormalizer.AMOUNT)
                .field("reference", FieldNormalizer.FREE_TEXT)
                .build();
    }

    /**
     * Decodes a message.
     *
     * @param messageId the producer's intent id, or null
     * @throws Undecodable naming what is wrong: not a JSON object, a field missing, of the wrong type,
     *     unknown or malformed, an id that is no valid key
     */
    static TransferIntent decode(String messageId, byte[] body, DerivedKeys keys) throws Undecodable {
        try {
            RequestFingerprint.canonicalJson(body); // JSON within the limits on depth and numbers, else refused
        } catch (InvalidJsonException e) {
            throw new Undecodable("the body is not JSON: " + e.getMessage());
        }
        JsonNode json;
        try {
            json = LedgerJson.parse(body);
        } catch (
                RuntimeException
                        e) { // JSON the canonicaliser took but Jackson's own limits refuse (a huge number or name)
            throw new Undecodable("the body is JSON the ledger cannot read: " + rootMessage(e));
        }
        if (!json.isObject()) {
            throw new Undecodable("the body must be a JSON object");
        }
        Set<String> unknown = new TreeSet<>();
        for (Iterator<String> names = json.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (!FIELDS.contains(name)) {
                unknown.add(name);
            }
        }
        if (!unknown.isEmpty()) {
            throw new Undecodable("unknown field(s) " + unknown + "; a transfer intent has " + new TreeSet<>(FIELDS));
        }
        String tenant = text(json, "tenant");
        Scope scope;
        try {
            scope = Scope.of(tenant);
        } catch (IllegalArgumentException e) {
            throw new Undecodable("tenant: " + e.getMessage());
        }
        UUID from = account(json, "from");
        UUID to = account(json, "to");
        String amountText = text(json, "amount");
        if (!MONEY.matcher(amountText).matches() || new BigDecimal(amountText).signum() <= 0) {
            throw new Undecodable("amount must be a positive amount with exactly two decimals, like \"10.00\"");
        }
        BigDecimal amount = new BigDecimal(amountText);
        String reference = null;
        if (json.has("reference")) {
            reference = text(json, "reference");
            if (reference.length() > 200) {
                throw new Undecodable("reference must be at most 200 characters");
            }
        }
        Instant createdAt;
        try {
            createdAt = Instant.parse(text(json, "createdAt"));
        } catch (DateTimeParseException e) {
            throw new Undecodable("createdAt must be an ISO-8601 instant, like \"2026-12-02T10:15:30Z\"");
        }
        IdempotencyKey key;
        if (messageId != null) {
            try {
                key = IdempotencyKey.of(messageId);
            } catch (IllegalArgumentException e) {
                throw new Undecodable("message_id is not a valid idempotency key: " + e.getMessage());
            }
        } else {
            Map<String, Object> payload = new HashMap<>();
            payload.put("from", from.toString());
            payload.put("to", to.toString());
            payload.put("amount", amountText);
            payload.put("reference", reference == null ? "" : reference);
            try {
                key = keys.derive(scope, payload, createdAt);
            } catch (RuntimeException e) { // a field its normaliser refuses, e.g. text with an unpaired surrogate
                throw new Undecodable("the intent has no message_id and its key cannot be derived from its fields: "
                        + rootMessage(e));
            }
        }
        // the decoded intent, not the body's bytes: another spelling of the same instant or amount is the same intent
        String decoded = String.join(
                "\n",
                tenant,
                from.toString(),
                to.toString(),
                amount.toPlainString(),
                reference == null ? "" : reference,
                createdAt.toString());
        return new TransferIntent(
                tenant, scope, key, Fingerprint.sha256(ACTION + "\n" + decoded), from, to, amount, createdAt);
    }

    /** The innermost cause's message (the parser's own words), cut to a line a header can carry. */
    private static String rootMessage(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String message = String.valueOf(root.getMessage()).lines().findFirst().orElse("");
        return message.length() > 300 ? message.substring(0, 300) + "..." : message;
    }

    private static String text(JsonNode json, String field) throws Undecodable {
        JsonNode value = json.get(field);
        if (value == null || !value.isTextual()) {
            throw new Undecodable(field + " must be a JSON string");
        }
        return value.asText();
    }

    private static UUID account(JsonNode json, String field) throws Undecodable {
        String value = text(json, field);
        return LedgerJson.uuid(value)
                .orElseThrow(() -> new Undecodable(field + " must be an account id (a UUID), was '" + value + "'"));
    }
}
