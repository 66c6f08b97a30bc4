package io.github.idemtx.jooq;

import io.github.idemtx.db.ClaimPartitions;
import org.jspecify.annotations.Nullable;

/** The builders' check that the schema named last is the one the partitions' claim table is in. */
final class PartitionsSchema {

    private PartitionsSchema() {}

    /**
     * Throws when {@code partitions} (null: none given) keep their claim table in another schema
     * than {@code schema}, the builder's: {@code schema(...)} was called after {@code partitions(...)}.
     */
    static void requireSame(@Nullable ClaimPartitions partitions, String schema) {
        if (partitions != null && !partitions.schema().equals(schema)) {
            throw new IllegalStateException("the schema was set to " + schema + " after the partitions, whose claim"
                    + " table is in " + partitions.schema() + ": name one schema");
        }
    }
}
