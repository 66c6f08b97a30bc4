package io.github.idemtx.spring.docs;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.spring.DocsFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * docs/spring-boot.md shows whole source files of this package verbatim, each as one java code block
 * between {@code <!-- NAME.java: start -->} and {@code <!-- NAME.java: end -->}: a change to either
 * that the other does not follow fails here. Every other java block of the page must say, visibly,
 * that it is a fragment, on the line before it ({@value #FRAGMENT}).
 */
class SpringBootPageTest {

    static final String PAGE = "docs/spring-boot.md";
    static final String SOURCES = "spring-boot-autoconfigure/src/test/java/io/github/idemtx/spring/docs/";

    /** The line before a java block that is not compiled: visible to the page's reader, not a comment. */
    static final String FRAGMENT = "*A fragment, not compiled:*";

    @Test
    void thePageShowsThePaymentControllerVerbatim() throws IOException {
        assertShown("payments/PaymentController.java");
    }

    @Test
    void thePageShowsThePaymentServiceVerbatim() throws IOException {
        assertShown("payments/PaymentService.java");
    }

    @Test
    void thePageShowsTheTenantScopeVerbatim() throws IOException {
        assertShown("scope/TenantScope.java");
    }

    @Test
    void thePageShowsTheChargeEffectVerbatim() throws IOException {
        assertShown("effects/ChargeEffect.java");
    }

    @Test
    void thePageShowsTheCheckoutServiceVerbatim() throws IOException {
        assertShown("effects/CheckoutService.java");
    }

    @Test
    void everyOtherJavaBlockIsMarkedAsAFragment() throws IOException {
        String page = normalized(Files.readString(repositoryRoot().resolve(PAGE)));
        Matcher block = Pattern.compile("(?m)^```java$").matcher(page);
        while (block.find()) {
            String before = page.substring(0, block.start()).stripTrailing();
            String previous = before.substring(before.lastIndexOf('\n') + 1);
            assertThat(previous.matches("<!-- .+\\.java: start -->") || previous.equals(FRAGMENT))
                    .as(
                            "the java block at offset %d of %s is a compiled file's (its start marker before it) or"
                                    + " says it is a fragment (%s on the line before it); it is preceded by: %s",
                            block.start(), PAGE, FRAGMENT, previous)
                    .isTrue();
        }
    }

    private static void assertShown(String file) throws IOException {
        Path root = repositoryRoot();
        String page = normalized(Files.readString(root.resolve(PAGE)));
        String name = file.substring(file.lastIndexOf('/') + 1);
        String start = "<!-- " + name + ": start -->";
        String end = "<!-- " + name + ": end -->";
        int from = page.indexOf(start);
        int to = page.indexOf(end);
        assertThat(from).as("%s has the marker %s", PAGE, start).isNotNegative();
        assertThat(to).as("%s has the marker %s after %s", PAGE, end, start).isGreaterThan(from);
        assertThat(page.substring(from + start.length(), to))
                .as(
                        "%s shows %s verbatim, as one java code block between its markers: copy the file there"
                                + " after changing it",
                        PAGE, SOURCES + file)
                .isEqualTo("\n```java\n" + normalized(Files.readString(root.resolve(SOURCES + file))) + "```\n");
    }

    static Path repositoryRoot() {
        return DocsFiles.repositoryRoot(PAGE, SOURCES);
    }

    private static String normalized(String text) {
        return DocsFiles.normalized(text);
    }
}
