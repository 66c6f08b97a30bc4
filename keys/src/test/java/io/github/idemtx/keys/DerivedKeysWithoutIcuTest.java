package io.github.idemtx.keys;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.core.Scope;
import io.github.idemtx.keys.internal.CaseFold;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Loads the keys and core classes again in a class loader that sees them but not ICU4J (nor anything else
 * on the test class path), as in an application that does not add the optional dependency.
 */
class DerivedKeysWithoutIcuTest {

    private static URLClassLoader withoutIcu() {
        URL keys = DerivedKeys.class.getProtectionDomain().getCodeSource().getLocation();
        URL core = Scope.class.getProtectionDomain().getCodeSource().getLocation();
        return new URLClassLoader(new URL[] {keys, core}, ClassLoader.getPlatformClassLoader());
    }

    private static Object call(Object target, String name, Class<?>[] types, Object... args) throws Exception {
        Class<?> type = target instanceof Class<?> c ? c : target.getClass();
        Method method = type.getMethod(name, types);
        try {
            return method.invoke(target instanceof Class<?> ? null : target, args);
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            throw e;
        }
    }

    private static Object builder(ClassLoader loader) throws Exception {
        Object builder = call(loader.loadClass(DerivedKeys.class.getName()), "builder", new Class<?>[0]);
        call(builder, "secret", new Class<?>[] {byte[].class}, (Object) DerivedKeysTest.SECRET);
        return call(builder, "action", new Class<?>[] {String.class}, "pix.payment");
    }

    private static Object field(ClassLoader loader, Object builder, String name, String normalizer) throws Exception {
        Class<?> normalizers = loader.loadClass(FieldNormalizer.class.getName());
        return call(
                builder,
                "field",
                new Class<?>[] {String.class, normalizers},
                name,
                normalizers.getField(normalizer).get(null));
    }

    @Test
    void theIsolatedLoaderReallyLacksIcu() throws Exception {
        try (URLClassLoader loader = withoutIcu()) {
            assertThatThrownBy(() -> loader.loadClass("com.ibm.icu.lang.UCharacter"))
                    .isInstanceOf(ClassNotFoundException.class);
            Class<?> caseFold = loader.loadClass(CaseFold.class.getName());
            assertThat(caseFold.getClassLoader()).isSameAs(loader);
            assertThat(call(caseFold, "available", new Class<?>[0])).isEqualTo(false);
        }
    }

    @Test
    void freeTextAndCreditorKeyFieldsNeedIcu() throws Exception {
        try (URLClassLoader loader = withoutIcu()) {
            Object builder = builder(loader);

            assertThatThrownBy(() -> field(loader, builder, "description", "FREE_TEXT"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage(
                            "field 'description': FREE_TEXT needs ICU4J for Unicode case folding, and it is not on the"
                                    + " class path: add the dependency com.ibm.icu:icu4j");
            assertThatThrownBy(() -> field(loader, builder, "creditor", "CREDITOR_KEY"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("CREDITOR_KEY needs ICU4J")
                    .hasMessageEndingWith("add the dependency com.ibm.icu:icu4j");
        }
    }

    @Test
    void amountAndCurrencyWorkWithoutIcuAndGiveTheSameKey() throws Exception {
        Map<String, Object> payload = Map.of("amount", "10.005", "currency", " brl ");
        Instant created = DerivedKeysTest.CREATED;
        String expected = DerivedKeys.builder()
                .secret(DerivedKeysTest.SECRET)
                .action("pix.payment")
                .field("amount", FieldNormalizer.AMOUNT)
                .field("currency", FieldNormalizer.CURRENCY)
                .build()
                .deriveHex(DerivedKeysTest.TENANT, payload, created);

        try (URLClassLoader loader = withoutIcu()) {
            Object builder = builder(loader);
            field(loader, builder, "amount", "AMOUNT");
            field(loader, builder, "currency", "CURRENCY");
            Object keys = call(builder, "build", new Class<?>[0]);
            Class<?> scopes = loader.loadClass(Scope.class.getName());
            Object tenant = call(scopes, "of", new Class<?>[] {String.class}, DerivedKeysTest.TENANT.value());

            Object key = call(
                    keys, "deriveHex", new Class<?>[] {scopes, Map.class, Instant.class}, tenant, payload, created);

            assertThat(key).isEqualTo(expected);
            assertThat(keys.getClass().getClassLoader()).isSameAs(loader);
        }
    }
}
