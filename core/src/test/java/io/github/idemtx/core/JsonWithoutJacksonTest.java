package io.github.idemtx.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;

/** An application without Jackson 2 (a Spring Boot 4 one) gets a message naming the fix, not a NoClassDefFoundError. */
class JsonWithoutJacksonTest {

    @Test
    void resultCodecJsonWithoutJackson2SaysWhatToAdd() throws Exception {
        URL coreClasses =
                ResultCodec.class.getProtectionDomain().getCodeSource().getLocation();
        try (URLClassLoader withoutJackson =
                new URLClassLoader(new URL[] {coreClasses}, ClassLoader.getPlatformClassLoader())) {
            Class<?> codec = withoutJackson.loadClass(ResultCodec.class.getName());
            assertThat(codec.getClassLoader()).isSameAs(withoutJackson);
            Method json = codec.getMethod("json", Class.class);
            assertThatThrownBy(() -> {
                        try {
                            json.invoke(null, String.class);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                    })
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("Jackson 2")
                    .hasMessageContaining("JsonMapperCodec");
            // the rest of the contract works without it
            Object utf8 = codec.getMethod("utf8").invoke(null);
            assertThat(utf8).isNotNull();
        }
    }
}
