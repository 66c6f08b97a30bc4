package io.github.idemtx.spring.amqp;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.spring.DocsFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * docs/message-consumers.md shows regions of the example's source verbatim: a change to either that
 * the other does not follow fails here. A region is marked in the source by the comment lines
 * {@code // [docs/message-consumers.md: NAME]} and {@code // [docs/message-consumers.md: end NAME]},
 * and in the page by {@code <!-- NAME: start -->} and {@code <!-- NAME: end -->} around one java code
 * block holding the region's lines, less the class body's indentation.
 */
class MessageConsumersPageTest {

    static final String PAGE = "docs/message-consumers.md";
    static final String SOURCES = "spring-boot-autoconfigure/src/test/java/io/github/idemtx/spring/amqp/";

    @Test
    void thePageShowsTheListenerVerbatim() throws IOException {
        assertShown("listener", "TransferListener.java");
    }

    @Test
    void thePageShowsTheDoorVerbatim() throws IOException {
        assertShown("door", "TransferListener.java");
    }

    @Test
    void thePageShowsTheQueuesVerbatim() throws IOException {
        assertShown("queues", "TransfersApplication.java");
    }

    private static void assertShown(String region, String file) throws IOException {
        Path root = repositoryRoot();
        String page = normalized(Files.readString(root.resolve(PAGE)));
        String start = "<!-- " + region + ": start -->";
        String end = "<!-- " + region + ": end -->";
        int from = page.indexOf(start);
        int to = page.indexOf(end);
        assertThat(from).as("%s has the marker %s", PAGE, start).isNotNegative();
        assertThat(to).as("%s has the marker %s after %s", PAGE, end, start).isGreaterThan(from);
        String shown = page.substring(from + start.length(), to);

        assertThat(shown)
                .as(
                        "%s shows the region '%s' of %s verbatim, as one java code block between its markers:"
                                + " copy the region there after changing it",
                        PAGE, region, file)
                .isEqualTo(
                        "\n```java\n" + region(Files.readString(root.resolve(SOURCES + file)), region, file) + "```\n");
    }

    /** The lines between the region's markers, without trailing blank lines, less 4 spaces of indentation. */
    private static String region(String source, String region, String file) {
        String open = "// [" + PAGE + ": " + region + "]";
        String close = "// [" + PAGE + ": end " + region + "]";
        List<String> lines = normalized(source).lines().toList();
        int from = -1;
        int to = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).trim().equals(open)) {
                from = i;
            } else if (lines.get(i).trim().equals(close)) {
                to = i;
            }
        }
        assertThat(from).as("%s has the marker %s", file, open).isNotNegative();
        assertThat(to).as("%s has the marker %s after %s", file, close, open).isGreaterThan(from);
        List<String> kept = new ArrayList<>(lines.subList(from + 1, to));
        while (!kept.isEmpty() && kept.get(kept.size() - 1).isBlank()) {
            kept.remove(kept.size() - 1);
        }
        StringBuilder out = new StringBuilder();
        for (String line : kept) {
            out.append(line.startsWith("    ") ? line.substring(4) : line.strip())
                    .append('\n');
        }
        return out.toString();
    }

    static Path repositoryRoot() {
        return DocsFiles.repositoryRoot(PAGE, SOURCES);
    }

    private static String normalized(String text) {
        return DocsFiles.normalized(text);
    }
}
