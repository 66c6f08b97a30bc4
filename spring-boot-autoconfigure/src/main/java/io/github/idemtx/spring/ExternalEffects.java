package io.github.idemtx.spring;

import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.jooq.ExternalEffect;
import io.github.idemtx.jooq.Remote;
import java.util.List;
import java.util.Objects;
import org.jooq.DSLContext;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.BeanFactory;
import tools.jackson.databind.json.JsonMapper;

/**
 * Makes {@link ExternalEffect}s bound to the application's {@code DSLContext}, with the policy and
 * schema from the {@code idemtx.*} properties and the {@link ExternalEffectCustomizer}s' settings (the
 * Micrometer listener, when metrics are on). Declare each effect as a bean, so that the starter's
 * recovery scheduler ({@code idemtx.recovery.*}) recovers it and the idempotency endpoint sees it:
 *
 * <pre>{@code
 * @Bean
 * ExternalEffect<ChargeRequest, Charge> charge(ExternalEffects effects, PaymentProvider provider) {
 *     return effects.json("charge", ChargeRequest.class, Charge.class, provider);
 * }
 * }</pre>
 *
 * <p>Every effect owns its transactions: a call inside a Spring transaction ({@code @Transactional},
 * {@code TransactionTemplate}) is refused with {@link io.github.idemtx.core.TransactionOwnershipException}
 * before anything is claimed or sent, since the claim must commit before the remote call (Spring's
 * transaction detector, a {@code ServiceLoader} service of this module, tells the effect). Thread-safe.
 */
public final class ExternalEffects {

    private final DSLContext dsl;
    private final IdempotencyPolicy policy;
    private final String schema;
    private final @Nullable BeanFactory beans;
    private final List<ExternalEffectCustomizer> customizers;

    /**
     * A factory whose builders {@code customizers} adjust.
     *
     * @param dsl the application's {@code DSLContext}
     * @param policy the policy of every effect made here
     * @param schema the claim table's schema
     * @param beans where {@link #json} finds the application's Jackson 3 {@code JsonMapper} (looked up
     *     on use); null, or no such bean: a plain one
     * @param customizers applied, in this order, to every builder made here; copied
     * @throws NullPointerException if an argument other than {@code beans} is null, or a customizer is
     */
    public ExternalEffects(
            DSLContext dsl,
            IdempotencyPolicy policy,
            String schema,
            @Nullable BeanFactory beans,
            List<ExternalEffectCustomizer> customizers) {
        this.dsl = Objects.requireNonNull(dsl, "dsl must not be null");
        this.policy = Objects.requireNonNull(policy, "policy must not be null");
        this.schema = Objects.requireNonNull(schema, "schema must not be null");
        this.beans = beans;
        this.customizers = List.copyOf(customizers);
    }

    /**
     * A builder preset with the application's DSLContext, policy and schema and the customizers'
     * settings, for a lease, a lookup schedule or read-after-write of the effect's own.
     *
     * @param <R> the request type
     * @param <T> the result type
     * @param name the effect's name: lower-case letters, digits, {@code _ . -}, starting with a letter
     * @param requests how requests are stored with the in-flight claim
     * @param results how results are stored
     * @param remote the remote system and the local writes around it
     * @return the builder; each call makes a new one
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code name} is not a valid effect name
     */
    public <R, T> ExternalEffect.Builder<R, T> builder(
            String name, ResultCodec<R> requests, ResultCodec<T> results, Remote<R, T> remote) {
        ExternalEffect.Builder<R, T> builder = ExternalEffect.builder(dsl, name, requests, results, remote)
                .policy(policy)
                .schema(schema);
        customizers.forEach(c -> c.customize(builder));
        return builder;
    }

    /**
     * A builder as {@link #builder}, whose requests and results are stored as JSON through the
     * application's Jackson 3 {@code JsonMapper}.
     *
     * @param <R> the request type
     * @param <T> the result type
     * @param name the effect's name
     * @param requestType the request's class
     * @param resultType the result's class
     * @param remote the remote system and the local writes around it
     * @return the builder; each call makes a new one
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code name} is not a valid effect name
     */
    public <R, T> ExternalEffect.Builder<R, T> jsonBuilder(
            String name, Class<R> requestType, Class<T> resultType, Remote<R, T> remote) {
        Objects.requireNonNull(requestType, "requestType must not be null");
        Objects.requireNonNull(resultType, "resultType must not be null");
        JsonMapper mapper = mapper();
        return builder(name, JsonMapperCodec.of(mapper, requestType), JsonMapperCodec.of(mapper, resultType), remote);
    }

    /**
     * {@return an effect with the default lease and lookup schedule whose requests and results are
     * stored as JSON through the application's Jackson 3 {@code JsonMapper}}
     *
     * @param <R> the request type
     * @param <T> the result type
     * @param name the effect's name
     * @param requestType the request's class
     * @param resultType the result's class
     * @param remote the remote system and the local writes around it
     * @throws NullPointerException if an argument is null
     * @throws IllegalArgumentException if {@code name} is not a valid effect name
     */
    public <R, T> ExternalEffect<R, T> json(
            String name, Class<R> requestType, Class<T> resultType, Remote<R, T> remote) {
        return jsonBuilder(name, requestType, resultType, remote).build();
    }

    /** {@return the policy every effect made here applies} */
    public IdempotencyPolicy policy() {
        return policy;
    }

    /** {@return the schema of the claim table} */
    public String schema() {
        return schema;
    }

    private JsonMapper mapper() {
        JsonMapper mapper =
                beans == null ? null : beans.getBeanProvider(JsonMapper.class).getIfAvailable();
        return mapper != null ? mapper : JsonMapper.builder().build();
    }
}
