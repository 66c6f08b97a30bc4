package io.github.idemtx.keys;

import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.keys.internal.CaseFold;
import io.github.idemtx.keys.internal.DerivedHmac;
import io.github.idemtx.keys.internal.DerivedMaterial;
import io.github.idemtx.keys.internal.DerivedText;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import javax.crypto.spec.SecretKeySpec;
import org.jspecify.annotations.Nullable;

/**
 * Derives an idempotency key from the intent itself, for a caller that stores nothing before the
 * call: every attempt at the same intent, by any process, computes the same key, and a different
 * intent a different one.
 *
 * <p>The intent is a payload (a map from field name to value), the tenant it belongs to, and the
 * instant the intent was created. Each field the payload may hold is either <em>normalised</em>
 * with a {@link FieldNormalizer}, and then enters the key, or explicitly <em>ignored</em>. A payload
 * with any other field is refused, naming all such fields, and so is one that lacks a normalised
 * field (ignored fields may be absent): a field is never silently dropped, and a key never
 * silently changes meaning.
 *
 * <p>The creation instant is cut into buckets of {@link #bucketSize()} (default 15 minutes): the
 * same payload created again in a later bucket is a new intent. The instant must be the intent's
 * own, carried with it across retries (a timestamp in the request, the time the user pressed the
 * button), never the time of an attempt; nothing here reads the clock.
 *
 * <p><b>The derivation</b>, exactly; Python computes the same bytes and key with
 * <pre>{@code
 * bucket   = created_at_epoch_second // bucket_seconds        # floor division
 * fields   = {name: normalise(value) for each normalised field}
 * material = json.dumps([tenant, action, fields, bucket], sort_keys=True,
 *                       separators=(",", ":"), ensure_ascii=False).encode("utf-8")
 * key      = hmac.new(secret, material, hashlib.sha256).hexdigest()[:key_length]
 * }</pre>
 * Object members are sorted by Unicode code point, as Python sorts ({@link String#compareTo} would
 * differ for supplementary characters); only the quotation mark, the backslash and C0 controls are
 * escaped. The normalisers' Python equivalents are given on each {@link FieldNormalizer}. The
 * reference implementation and its test vectors are {@code make_vectors.py} and
 * {@code vectors.json} in the core module's test resources.
 *
 * <p>Immutable and thread-safe. The secret is copied, never returned, and shown by no
 * {@code toString}; no exception message holds the secret or a payload value (field names are
 * given).
 *
 * <pre>{@code
 * DerivedKeys pix = DerivedKeys.builder()
 *         .secret(secretFromVault)                         // at least 32 random bytes
 *         .action("pix.payment")
 *         .field("amount", FieldNormalizer.AMOUNT)
 *         .field("currency", FieldNormalizer.CURRENCY)
 *         .field("creditor", FieldNormalizer.CREDITOR_KEY)
 *         .field("description", FieldNormalizer.FREE_TEXT)
 *         .ignore("traceId")
 *         .keyLength(40)                                   // Open Finance Brasil's x-idempotency-key limit
 *         .build();
 * IdempotencyKey key = pix.derive(tenant, payload, intentCreatedAt);
 * }</pre>
 */
public final class DerivedKeys {

    /** Default {@link #bucketSize()}: 900 seconds. */
    public static final Duration DEFAULT_BUCKET_SIZE = Duration.ofMinutes(15);
    /** Smallest {@link #bucketSize()}: 1 second. */
    public static final Duration MIN_BUCKET_SIZE = Duration.ofSeconds(1);
    /** Largest {@link #bucketSize()}: one year of 365 days. */
    public static final Duration MAX_BUCKET_SIZE = Duration.ofDays(365);

    /** The shortest secret accepted: 32 bytes. */
    public static final int MIN_SECRET_BYTES = DerivedHmac.MIN_SECRET_BYTES;

    /** Default {@link #keyLength()}: the whole HMAC-SHA256, 64 hexadecimal digits. */
    public static final int DEFAULT_KEY_LENGTH = 64;
    /** Shortest {@link #keyLength()}: 16 hexadecimal digits (64 bits). */
    public static final int MIN_KEY_LENGTH = 16;
    /** Longest {@link #keyLength()}: 64 hexadecimal digits. */
    public static final int MAX_KEY_LENGTH = 64;

    private final SecretKeySpec secret;
    private final String action;
    private final Map<String, FieldNormalizer> fields;
    private final List<String> names;
    private final List<FieldNormalizer> normalizers;
    private final Set<String> ignored;
    private final Duration bucketSize;
    private final long bucketSeconds;
    private final int keyLength;

    private DerivedKeys(Builder b, byte[] secret, String action) {
        this.secret = DerivedHmac.key(secret);
        this.action = action;
        this.names = DerivedText.sorted(b.fields.keySet());
        List<FieldNormalizer> normalizers = new ArrayList<>(names.size());
        Map<String, FieldNormalizer> fields = new LinkedHashMap<>();
        for (String name : names) {
            normalizers.add(b.fields.get(name));
            fields.put(name, b.fields.get(name));
        }
        this.normalizers = List.copyOf(normalizers);
        this.fields = Collections.unmodifiableMap(fields);
        this.ignored = Collections.unmodifiableSet(new LinkedHashSet<>(DerivedText.sorted(b.ignored)));
        this.bucketSize = b.bucketSize;
        this.bucketSeconds = b.bucketSize.toSeconds();
        this.keyLength = b.keyLength;
    }

    /** {@return a builder with the default bucket size and key length, and no secret, action or field yet} */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * The key of the intent made of {@code payload}, created at {@code createdAt}, in
     * {@code tenant}: {@link #deriveHex} as an {@link IdempotencyKey}.
     *
     * @param tenant the namespace of the key, normally the authenticated tenant
     * @param payload the intent's fields; values as each field's {@link FieldNormalizer} accepts
     * @param createdAt when the intent was created; the same on every attempt
     * @return the key
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException as {@link #deriveHex} says
     */
    public IdempotencyKey derive(Scope tenant, Map<String, ? extends @Nullable Object> payload, Instant createdAt) {
        return new IdempotencyKey(deriveHex(tenant, payload, createdAt));
    }

    /**
     * The key of the intent made of {@code payload}, created at {@code createdAt}, in
     * {@code tenant}: the first {@link #keyLength()} lowercase hexadecimal digits of
     * HMAC-SHA256 over the material described {@linkplain DerivedKeys above}.
     *
     * <p>The order of the payload's entries does not matter; only normalised fields enter the
     * key, so ignored fields may hold anything. The payload is read once and not kept.
     *
     * @param tenant the namespace of the key, normally the authenticated tenant
     * @param payload the intent's fields; values as each field's {@link FieldNormalizer} accepts
     * @param createdAt when the intent was created; the same on every attempt
     * @return {@link #keyLength()} lowercase hexadecimal digits
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if the payload holds a field that is neither normalised
     *     nor ignored, lacks a normalised field (the message names all such fields), has a null
     *     field name, or holds a null or unacceptable value for a normalised field (the message
     *     names the field, never the value)
     */
    public String deriveHex(Scope tenant, Map<String, ? extends @Nullable Object> payload, Instant createdAt) {
        return DerivedHmac.hex(secret, material(tenant, payload, createdAt), keyLength);
    }

    /** The bytes that are MACed: {@code [tenant, action, {normalised fields}, bucket]} as compact JSON in UTF-8. */
    byte[] material(Scope tenant, Map<String, ? extends @Nullable Object> payload, Instant createdAt) {
        Objects.requireNonNull(tenant, "tenant must not be null");
        Objects.requireNonNull(payload, "payload must not be null");
        Objects.requireNonNull(createdAt, "createdAt must not be null");
        Map<String, @Nullable Object> values = snapshot(payload);
        List<String> normalised = new ArrayList<>(names.size());
        for (int i = 0; i < names.size(); i++) {
            String name = names.get(i);
            Object value = values.get(name);
            if (value == null) {
                throw new IllegalArgumentException("payload field '" + name + "' must not be null");
            }
            normalised.add(normalizers.get(i).normalize(name, value));
        }
        return DerivedMaterial.derived(tenant.value(), action, names, normalised, bucketOf(createdAt));
    }

    /** The index of the bucket {@code createdAt} falls in: its epoch second divided by the bucket size, rounded down. */
    long bucketOf(Instant createdAt) {
        return Math.floorDiv(createdAt.getEpochSecond(), bucketSeconds);
    }

    private Map<String, @Nullable Object> snapshot(Map<String, ? extends @Nullable Object> payload) {
        Map<String, @Nullable Object> values = new HashMap<>();
        Set<String> unclassified = new TreeSet<>(DerivedText.CODE_POINT_ORDER);
        for (Map.Entry<String, ? extends @Nullable Object> entry : payload.entrySet()) {
            Object name = entry.getKey();
            if (name == null) {
                throw new IllegalArgumentException("payload must not have a null field name");
            }
            if (!(name instanceof String field)) {
                throw new IllegalArgumentException("payload field names must be strings, found a "
                        + name.getClass().getName());
            }
            if (fields.containsKey(field)) {
                values.put(field, entry.getValue());
            } else if (!ignored.contains(field)) {
                unclassified.add(field);
            }
        }
        List<String> missing = new ArrayList<>();
        for (String name : names) {
            if (!values.containsKey(name)) {
                missing.add(name);
            }
        }
        if (!unclassified.isEmpty() || !missing.isEmpty()) {
            StringBuilder message =
                    new StringBuilder("payload of action '").append(action).append("'");
            if (!unclassified.isEmpty()) {
                message.append(" has unclassified fields ")
                        .append(unclassified)
                        .append(" (name each with field(...) or ignore(...))");
            }
            if (!unclassified.isEmpty() && !missing.isEmpty()) {
                message.append(" and");
            }
            if (!missing.isEmpty()) {
                message.append(" lacks normalised fields ").append(missing);
            }
            throw new IllegalArgumentException(message.toString());
        }
        return values;
    }

    /** {@return the action these keys are for} It is part of every key, so that two actions never share one. */
    public String action() {
        return action;
    }

    /** {@return the normalised fields and their normalisers, in code-point order of their names; unmodifiable} */
    public Map<String, FieldNormalizer> fields() {
        return fields;
    }

    /** {@return the ignored fields, in code-point order; unmodifiable} */
    public Set<String> ignoredFields() {
        return ignored;
    }

    /** {@return the length of a time bucket, in whole seconds} */
    public Duration bucketSize() {
        return bucketSize;
    }

    /** {@return how many hexadecimal digits of the HMAC a key keeps, from {@value #MIN_KEY_LENGTH} to {@value #MAX_KEY_LENGTH}} */
    public int keyLength() {
        return keyLength;
    }

    /** The settings, without the secret. */
    @Override
    public String toString() {
        return "DerivedKeys[action=" + action + ", fields=" + fields + ", ignored=" + ignored + ", bucketSize="
                + bucketSize + ", keyLength=" + keyLength + ", secret=(hidden)]";
    }

    /**
     * Builds {@link DerivedKeys}. Not thread-safe; each setter validates at once, with a message
     * naming the setting. {@link #secret}, {@link #action} and at least one {@link #field} are
     * required.
     */
    public static final class Builder {
        private byte @Nullable [] secret;
        private @Nullable String action;
        private final Map<String, FieldNormalizer> fields = new LinkedHashMap<>();
        private final Set<String> ignored = new LinkedHashSet<>();
        private Duration bucketSize = DEFAULT_BUCKET_SIZE;
        private int keyLength = DEFAULT_KEY_LENGTH;

        private Builder() {}

        /**
         * The HMAC secret: at least {@value #MIN_SECRET_BYTES} random bytes, kept out of source
         * code; copied. Every process deriving keys for the same intents needs the same secret;
         * changing it changes every key.
         *
         * @param secret the secret; copied
         * @return this builder
         * @throws NullPointerException if {@code secret} is null
         * @throws IllegalArgumentException if it is shorter than {@value #MIN_SECRET_BYTES} bytes
         */
        public Builder secret(byte[] secret) {
            DerivedHmac.key(secret);
            this.secret = secret.clone();
            return this;
        }

        /**
         * What the keys are for, such as {@code "pix.payment"}: part of every key, so that two
         * kinds of intent with equal fields never share a key. Not blank, without control
         * characters or unpaired surrogates.
         *
         * @param action what the keys are for
         * @return this builder
         * @throws NullPointerException if {@code action} is null
         * @throws IllegalArgumentException if it is blank or holds a control character or an
         *     unpaired surrogate
         */
        public Builder action(String action) {
            Objects.requireNonNull(action, "action must not be null");
            if (action.isBlank()) {
                throw new IllegalArgumentException("action must not be blank");
            }
            if (DerivedText.hasControl(action)) {
                throw new IllegalArgumentException("action must not contain control characters");
            }
            if (!DerivedText.isWellFormed(action)) {
                throw new IllegalArgumentException("action must not contain an unpaired surrogate");
            }
            this.action = action;
            return this;
        }

        /**
         * Makes {@code name} a normalised field: the payload must hold it, and its value,
         * normalised by {@code normalizer}, enters the key.
         *
         * @param name the field's name in the payload
         * @param normalizer how its value is normalised
         * @return this builder
         * @throws NullPointerException if an argument is null
         * @throws IllegalArgumentException if the name is blank or holds an unpaired surrogate, or
         *     the field is already normalised or ignored
         * @throws IllegalStateException if {@code normalizer} needs ICU4J
         *     ({@link FieldNormalizer#FREE_TEXT}, {@link FieldNormalizer#CREDITOR_KEY}) and
         *     {@code com.ibm.icu:icu4j} is not on the class path
         */
        public Builder field(String name, FieldNormalizer normalizer) {
            checkName(name);
            Objects.requireNonNull(normalizer, "normalizer of field '" + name + "' must not be null");
            checkUnclassified(name);
            if (normalizer.needsCaseFolding()) {
                CaseFold.requireAvailable("field '" + name + "': " + normalizer);
            }
            fields.put(name, normalizer);
            return this;
        }

        /**
         * Makes each of {@code names} an ignored field: the payload may hold it or not, and it
         * never enters the key. All names are checked before any is added.
         *
         * @param names the fields' names in the payload
         * @return this builder
         * @throws NullPointerException if {@code names} or one of them is null
         * @throws IllegalArgumentException if a name is blank or holds an unpaired surrogate, is
         *     given twice, or is already normalised or ignored
         */
        public Builder ignore(String... names) {
            Objects.requireNonNull(names, "names must not be null");
            Set<String> adding = new LinkedHashSet<>();
            for (String name : names) {
                checkName(name);
                checkUnclassified(name);
                if (!adding.add(name)) {
                    throw new IllegalArgumentException("field '" + name + "' is named twice");
                }
            }
            ignored.addAll(adding);
            return this;
        }

        /**
         * See {@link DerivedKeys#bucketSize()}.
         *
         * @param bucketSize from {@link #MIN_BUCKET_SIZE} to {@link #MAX_BUCKET_SIZE}, in whole seconds
         * @return this builder
         * @throws NullPointerException if {@code bucketSize} is null
         * @throws IllegalArgumentException if it is out of range or not whole seconds
         */
        public Builder bucketSize(Duration bucketSize) {
            Objects.requireNonNull(bucketSize, "bucketSize must not be null");
            if (bucketSize.compareTo(MIN_BUCKET_SIZE) < 0 || bucketSize.compareTo(MAX_BUCKET_SIZE) > 0) {
                throw new IllegalArgumentException("bucketSize must be between " + MIN_BUCKET_SIZE + " and "
                        + MAX_BUCKET_SIZE + ", was " + bucketSize);
            }
            if (bucketSize.toNanosPart() != 0) {
                throw new IllegalArgumentException("bucketSize must be whole seconds, was " + bucketSize);
            }
            this.bucketSize = bucketSize;
            return this;
        }

        /**
         * See {@link DerivedKeys#keyLength()}; from {@value #MIN_KEY_LENGTH} to
         * {@value #MAX_KEY_LENGTH} hexadecimal digits (Open Finance Brasil allows at most 40 in
         * {@code x-idempotency-key}). A shorter key is a prefix of the longer one.
         *
         * @param keyLength how many hexadecimal digits a key keeps
         * @return this builder
         * @throws IllegalArgumentException if it is out of range
         */
        public Builder keyLength(int keyLength) {
            if (keyLength < MIN_KEY_LENGTH || keyLength > MAX_KEY_LENGTH) {
                throw new IllegalArgumentException("keyLength must be between " + MIN_KEY_LENGTH + " and "
                        + MAX_KEY_LENGTH + " hexadecimal digits, was " + keyLength);
            }
            this.keyLength = keyLength;
            return this;
        }

        /**
         * {@return the keys} The builder can be used again afterwards.
         *
         * @throws IllegalStateException if the secret or the action is not set, or no field is normalised
         */
        public DerivedKeys build() {
            byte[] secret = this.secret;
            String action = this.action;
            if (secret == null) {
                throw new IllegalStateException("secret must be set");
            }
            if (action == null) {
                throw new IllegalStateException("action must be set");
            }
            if (fields.isEmpty()) {
                throw new IllegalStateException("at least one field must be normalised");
            }
            return new DerivedKeys(this, secret, action);
        }

        private static void checkName(String name) {
            Objects.requireNonNull(name, "field name must not be null");
            if (name.isBlank()) {
                throw new IllegalArgumentException("field name must not be blank");
            }
            if (!DerivedText.isWellFormed(name)) {
                throw new IllegalArgumentException("field name must not contain an unpaired surrogate");
            }
        }

        private void checkUnclassified(String name) {
            FieldNormalizer existing = fields.get(name);
            if (existing != null) {
                throw new IllegalArgumentException("field '" + name + "' is already normalised as " + existing);
            }
            if (ignored.contains(name)) {
                throw new IllegalArgumentException("field '" + name + "' is already ignored");
            }
        }
    }
}
