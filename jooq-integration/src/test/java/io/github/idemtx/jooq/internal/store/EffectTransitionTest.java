package io.github.idemtx.jooq.internal.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The effect's transitions and the protocol page list the same cases, in the same order. */
class EffectTransitionTest {

    private static final String PAGE = "docs/claim-protocol.md";

    @Test
    void theProtocolPageListsEveryTransitionInTheTypesOrder() throws IOException {
        List<String> cases = Arrays.stream(EffectTransition.class.getPermittedSubclasses())
                .map(Class::getSimpleName)
                .toList();
        String page = Files.readString(page());
        String table = page.substring(page.indexOf("### The lifecycle, transition by transition"));
        table = table.substring(
                table.indexOf("| transition |"), table.indexOf("\n\n", table.indexOf("| transition |")));
        Matcher row = Pattern.compile("(?m)^\\| `(\\w+)` \\|").matcher(table);
        List<String> listed = row.results().map(m -> m.group(1)).toList();
        assertThat(listed).containsExactlyElementsOf(cases);
        assertThat(cases).startsWith("Claim", "TakeOver").contains("ReleaseUnknown", "ReleaseToOperator");
    }

    /** The page, from the module's directory (surefire's) or the repository's. */
    private static Path page() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            for (Path candidate :
                    List.of(dir.resolve(PAGE), dir.resolve("jooq-integration").resolve(PAGE))) {
                if (Files.isRegularFile(candidate)) {
                    return candidate;
                }
            }
        }
        throw new IllegalStateException(PAGE + " not found above " + Path.of("").toAbsolutePath());
    }
}
