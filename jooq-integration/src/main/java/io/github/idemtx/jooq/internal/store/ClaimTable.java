package io.github.idemtx.jooq.internal.store;

import static io.github.idemtx.jooq.internal.schema.tables.IdempotencyClaim.IDEMPOTENCY_CLAIM;
import static io.github.idemtx.jooq.internal.schema.tables.IdempotencyClaimAction.IDEMPOTENCY_CLAIM_ACTION;
import static io.github.idemtx.jooq.internal.schema.tables.IdempotencyOutbox.IDEMPOTENCY_OUTBOX;
import static io.github.idemtx.jooq.internal.schema.tables.IdempotencyStatement.IDEMPOTENCY_STATEMENT;
import static io.github.idemtx.jooq.internal.schema.tables.IdempotencyStatementLine.IDEMPOTENCY_STATEMENT_LINE;

import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.SQLDialect;
import org.jooq.conf.MappedSchema;
import org.jooq.conf.RenderMapping;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;

/**
 * The claim table of one schema, as every statement of the store layer names it: the one way
 * statements are written. A statement is SQL text whose names are placeholders, rendered here by
 * jOOQ from the classes generated from the migrations: {@code {claims}} (the table), {@code {actions}}
 * (the operators' actions), {@code {outbox}} (the outbox's messages),
 * {@code {await}} (V2's wait function), each column by its name ({@code {idem_key}},
 * {@code {lease_until}}, ...) and each {@link ClaimState} by its name ({@code {IN_FLIGHT}}), so that
 * a column or state is named in one place and a placeholder that names nothing fails when the
 * statements are built, not when one runs. Immutable and thread-safe.
 */
public final class ClaimTable {

    /**
     * The assignments that leave none of an external effect's columns on a row (one that another
     * call takes over, or a refusal recorded before any remote call): a placeholder list, for a
     * template's SET clause.
     */
    public static final String NO_EFFECT =
            "{request} = null, {fence} = null, {lease_until} = null, {lookups} = null, {next_lookup_at} = null,"
                    + " {reference} = null, {sent_at} = null, {sends} = null";

    private static final Pattern PLACEHOLDER = Pattern.compile("\\{([A-Za-z_]+)}");

    private final String schema;
    private final String claims;
    private final Map<String, String> names = new HashMap<>();

    /** @param schema the schema holding the claim table */
    public ClaimTable(String schema) {
        this.schema = schema;
        DSLContext render = DSL.using(
                SQLDialect.POSTGRES,
                new Settings()
                        .withRenderMapping(new RenderMapping()
                                .withSchemata(new MappedSchema().withInput("").withOutput(schema))));
        claims = render.render(IDEMPOTENCY_CLAIM);
        names.put("claims", claims);
        names.put("await", render.render(DSL.name(schema, "idempotency_await")));
        for (Field<?> column : IDEMPOTENCY_CLAIM.fields()) {
            names.put(column.getName(), render.render(DSL.name(column.getName())));
        }
        // the operators' actions (V5): the table, and its columns the claim table has not named already
        names.put("actions", render.render(IDEMPOTENCY_CLAIM_ACTION));
        for (Field<?> column : IDEMPOTENCY_CLAIM_ACTION.fields()) {
            names.putIfAbsent(column.getName(), render.render(DSL.name(column.getName())));
        }
        // the outbox (V7): the table, and its columns not named already
        names.put("outbox", render.render(IDEMPOTENCY_OUTBOX));
        for (Field<?> column : IDEMPOTENCY_OUTBOX.fields()) {
            names.putIfAbsent(column.getName(), render.render(DSL.name(column.getName())));
        }
        // statements and their lines (V8), for effects settled by statement
        names.put("statements", render.render(IDEMPOTENCY_STATEMENT));
        for (Field<?> column : IDEMPOTENCY_STATEMENT.fields()) {
            names.putIfAbsent(column.getName(), render.render(DSL.name(column.getName())));
        }
        names.put("statement_lines", render.render(IDEMPOTENCY_STATEMENT_LINE));
        for (Field<?> column : IDEMPOTENCY_STATEMENT_LINE.fields()) {
            names.putIfAbsent(column.getName(), render.render(DSL.name(column.getName())));
        }
        for (ClaimState state : ClaimState.values()) {
            names.put(state.name(), Short.toString(state.code()));
        }
    }

    /** {@return the schema holding the claim table} */
    public String schema() {
        return schema;
    }

    /** {@return the claim table's name as the statements render it, qualified by the schema} */
    public String claims() {
        return claims;
    }

    /**
     * {@return the statement of {@code kind}: its tag, then {@code template} with every placeholder
     * replaced}
     *
     * @throws IllegalArgumentException if a placeholder names no column, state or object of the table
     */
    public String sql(StatementKind kind, String template) {
        Matcher m = PLACEHOLDER.matcher(template.strip().replaceAll("\\s+", " "));
        StringBuilder out = new StringBuilder(kind.tag());
        while (m.find()) {
            String name = names.get(m.group(1));
            if (name == null) {
                throw new IllegalArgumentException("the statement " + kind + " names {" + m.group(1)
                        + "}, which is no column, state or object of the claim table");
            }
            m.appendReplacement(out, Matcher.quoteReplacement(name));
        }
        return m.appendTail(out).toString();
    }
}
