package io.github.idemtx.http;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class StoredResponseTest {

    /** Every character RFC 9110 allows in a token (tchar), the ends of each range included. */
    private static final String EVERY_TCHAR =
            "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

    @Test
    void acceptsEveryStatusFrom100To599AndNothingOutside() {
        assertThat(StoredResponse.of(100, "text/plain", "").status()).isEqualTo(100);
        assertThat(StoredResponse.of(599, "text/plain", "").status()).isEqualTo(599);
        assertThatIllegalArgumentException()
                .isThrownBy(() -> StoredResponse.of(99, "text/plain", ""))
                .withMessage("status must be between 100 and 599, was 99");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> StoredResponse.of(600, "text/plain", ""))
                .withMessage("status must be between 100 and 599, was 600");
    }

    @Test
    void acceptsEveryTokenCharacterInAHeaderName() {
        assertThat(new StoredResponse.Header(EVERY_TCHAR, "v").name()).isEqualTo(EVERY_TCHAR);
        for (char c : EVERY_TCHAR.toCharArray()) {
            assertThat(new StoredResponse.Header(String.valueOf(c), "v").name()).hasSize(1);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "X-A b", "X:", "X/", "@", "[", "{", "\"", "é", "X\u007f", "a\u0000"})
    void refusesAHeaderNameThatIsNotAToken(String name) {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new StoredResponse.Header(name, "v"))
                .withMessage("header name must be an HTTP token, was '" + name + "'");
    }

    @ParameterizedTest
    @ValueSource(strings = {"\r", "\n", "\u0000", "\rx", "\nx", "\u0000x", "x\r", "a\r\nInjected: yes"})
    void refusesCrLfOrNulAnywhereInAHeaderValue(String value) {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new StoredResponse.Header("X-Note", value))
                .withMessage("header value of X-Note must not contain CR, LF or NUL");
    }

    @Test
    void comparesStatusHeadersAndBodyByValue() {
        StoredResponse r = response(201, "/a", "body");

        assertThat(r).isEqualTo(response(201, "/a", "body")).hasSameHashCodeAs(response(201, "/a", "body"));
        assertThat(r)
                .isNotEqualTo(response(202, "/a", "body"))
                .isNotEqualTo(response(201, "/b", "body"))
                .isNotEqualTo(response(201, "/a", "bodY"))
                .isNotEqualTo("201")
                .isNotEqualTo(null);
        assertThat(r.hashCode())
                .isNotEqualTo(response(202, "/a", "body").hashCode())
                .isNotEqualTo(response(201, "/b", "body").hashCode())
                .isNotEqualTo(response(201, "/a", "bodY").hashCode());
    }

    @Test
    void toStringGivesTheBodysSizeNotItsContent() {
        StoredResponse r = response(201, "/a", "secret");

        assertThat(r)
                .hasToString("StoredResponse[status=201, headers=[Header[name=Location, value=/a]], body=6 bytes]");
    }

    @Test
    void withHeaderReplacesAHeaderOfTheSameNameInAnyCase() {
        StoredResponse r = response(201, "/a", "").withHeader("ETag", "\"1\"").withHeader("location", "/b");

        assertThat(r.headers())
                .containsExactly(
                        new StoredResponse.Header("ETag", "\"1\""), new StoredResponse.Header("location", "/b"));
        assertThat(r.header("LOCATION")).contains("/b");
        assertThat(r.header("Retry-After")).isEmpty();
    }

    private static StoredResponse response(int status, String location, String body) {
        return new StoredResponse(
                status, List.of(new StoredResponse.Header("Location", location)), body.getBytes(UTF_8));
    }
}
