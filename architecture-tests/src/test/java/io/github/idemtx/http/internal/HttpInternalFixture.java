package io.github.idemtx.http.internal;

/**
 * Stands for a class of {@code io.github.idemtx.http.internal} in {@code ArchitectureRulesBiteTest}: the
 * rules go by package, and a fixture of its own keeps that test apart from the module's real classes.
 */
public final class HttpInternalFixture {
    public static String use() {
        return "internal";
    }
}
