package io.github.idemtx.spring;

import io.github.idemtx.core.IdempotencyPolicy;
import io.github.idemtx.core.ResultCodec;
import io.github.idemtx.jooq.IdempotentTransaction;
import java.util.List;
import java.util.Objects;
import org.jooq.DSLContext;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.BeanFactory;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.json.JsonMapper;

/**
 * Makes {@link IdempotentTransaction}s bound to the application's {@code DSLContext}, with the policy
 * and schema from the {@code idemtx.*} properties; inject it and keep one instance per result type
 * (they are thread-safe). {@code run} joins the Spring transaction open on the calling thread
 * ({@code @Transactional}, {@code TransactionTemplate}) and owns one when none is.
 *
 * <pre>{@code
 * IdempotentTransaction<Payment> payments = transactions.json(Payment.class);
 * }</pre>
 */
public final class IdempotentTransactions {

    private final DSLContext dsl;
    private final IdempotencyPolicy policy;
    private final String schema;
    private final @Nullable BeanFactory beans;
    private final List<IdempotentTransactionCustomizer> customizers;

    /**
     * A factory without customizers.
     *
     * @param dsl the application's {@code DSLContext}
     * @param policy the policy of every instance made here
     * @param schema the claim table's schema
     * @param beans where {@link #json} finds the application's Jackson 3 {@code JsonMapper} (looked up
     *     on use, so an application without Jackson 3 can use the rest); null, or no such bean: a plain one
     * @throws NullPointerException if {@code dsl}, {@code policy} or {@code schema} is null
     */
    public IdempotentTransactions(
            DSLContext dsl, IdempotencyPolicy policy, String schema, @Nullable BeanFactory beans) {
        this(dsl, policy, schema, beans, List.of());
    }

    /**
     * A factory whose builders {@code customizers} adjust.
     *
     * @param dsl the application's {@code DSLContext}
     * @param policy the policy of every instance made here
     * @param schema the claim table's schema
     * @param beans where {@link #json} finds the application's Jackson 3 {@code JsonMapper}; may be null
     * @param customizers applied, in this order, to every builder made here; copied
     * @throws NullPointerException if an argument other than {@code beans} is null, or a customizer is
     */
    public IdempotentTransactions(
            DSLContext dsl,
            IdempotencyPolicy policy,
            String schema,
            @Nullable BeanFactory beans,
            List<IdempotentTransactionCustomizer> customizers) {
        this.dsl = Objects.requireNonNull(dsl, "dsl must not be null");
        this.policy = Objects.requireNonNull(policy, "policy must not be null");
        this.schema = Objects.requireNonNull(schema, "schema must not be null");
        this.beans = beans;
        this.customizers = List.copyOf(customizers);
    }

    /**
     * {@return an instance whose results are stored by {@code codec}}
     *
     * @param <T> the type of the work's result
     * @param codec how results are stored
     * @throws NullPointerException if {@code codec} is null
     */
    public <T> IdempotentTransaction<T> create(ResultCodec<T> codec) {
        return builder(codec).build();
    }

    /**
     * A builder preset with the application's DSLContext, policy and schema and the customizers'
     * settings, for a stated transaction mode or detector.
     *
     * @param <T> the type of the work's result
     * @param codec how results are stored
     * @return the builder; each call makes a new one
     * @throws NullPointerException if {@code codec} is null
     */
    public <T> IdempotentTransaction.Builder<T> builder(ResultCodec<T> codec) {
        IdempotentTransaction.Builder<T> builder =
                IdempotentTransaction.builder(dsl, codec).policy(policy).schema(schema);
        customizers.forEach(c -> c.customize(builder));
        return builder;
    }

    /**
     * {@return an instance whose results are stored as JSON through the application's Jackson 3
     * {@code JsonMapper}}
     *
     * @param <T> the type of the work's result
     * @param type the result's class
     * @throws NullPointerException if {@code type} is null
     */
    public <T> IdempotentTransaction<T> json(Class<T> type) {
        return create(JsonMapperCodec.of(mapper(), type));
    }

    /**
     * {@return an instance whose results, of a generic type, are stored as JSON through the
     * application's {@code JsonMapper}}
     *
     * @param <T> the type of the work's result
     * @param type the result's type, e.g. {@code new TypeReference<List<Payment>>() {}}
     * @throws NullPointerException if {@code type} is null
     */
    public <T> IdempotentTransaction<T> json(TypeReference<T> type) {
        return create(JsonMapperCodec.of(mapper(), type));
    }

    /** {@return an instance whose results are strings, stored as UTF-8} */
    public IdempotentTransaction<String> strings() {
        return create(ResultCodec.utf8());
    }

    /** {@return the policy every instance made here applies} */
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
