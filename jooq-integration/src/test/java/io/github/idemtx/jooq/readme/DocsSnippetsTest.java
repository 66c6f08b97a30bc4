package io.github.idemtx.jooq.readme;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every {@code ```java} block in README.md and docs/*.md (but docs/spring-boot.md, whose examples
 * the Spring module's own tests keep) is either compiled by the build or visibly a fragment, so no
 * page shows code that silently stopped compiling:
 *
 * <ul>
 *   <li><b>compiled</b>: the block stands alone between {@code <!-- NAME: start -->} and
 *       {@code <!-- NAME: end -->} and equals, character for character, either the whole source
 *       file {@code NAME} (a name ending in {@code .java}: the one file so named under a module's
 *       {@code src/test/java}), or the region {@code NAME} of a source file, the lines between
 *       {@code // [PAGE: NAME]} and {@code // [PAGE: end NAME]} ({@code PAGE} the page's path from
 *       the repository's root, e.g. {@code docs/message-consumers.md}), less trailing blank lines
 *       and 4 spaces of indentation;
 *   <li><b>a fragment</b>: its first line starts with {@code // fragment:}, saying what is left out.
 * </ul>
 */
class DocsSnippetsTest {

    static final String FRAGMENT = "// fragment:";

    private static final Pattern START = Pattern.compile("^<!-- (\\S+): start -->$");

    @Test
    void everyJavaBlockIsCompiledFromItsSourceOrMarkedAsAFragment() throws IOException {
        Check check = check(RepositoryRoot.find());

        assertThat(check.problems())
                .as("java blocks in the docs that could drift from the code")
                .isEmpty();
        assertThat(check.compiled()).as("java blocks compiled from sources").isGreaterThanOrEqualTo(3);
        assertThat(check.fragments()).as("java blocks marked as fragments").isPositive();
    }

    @Test
    void theCheckRefusesAnUnmarkedBlockAndOneThatDriftedFromItsSource(@TempDir Path root) throws IOException {
        Path sources = Files.createDirectories(root.resolve("m/src/test/java/x"));
        Files.writeString(
                sources.resolve("Shown.java"),
                "class Shown {\n    // [docs/a.md: part]\n    int x = 1;\n" + "    // [docs/a.md: end part]\n}\n");
        Files.createDirectories(root.resolve("docs"));
        Files.writeString(
                root.resolve("README.md"), "# r\n\n```java\n// fragment: x is defined elsewhere\nx++;\n```\n");
        Files.writeString(
                root.resolve("docs/a.md"),
                "# a\n\n<!-- part: start -->\n```java\nint x = 1;\n```\n" + "<!-- part: end -->\n");
        assertThat(check(root).problems())
                .as("a fragment and a faithful copy pass")
                .isEmpty();

        Files.writeString(
                root.resolve("docs/a.md"),
                "# a\n\n<!-- part: start -->\n```java\nint x = 2;\n```\n"
                        + "<!-- part: end -->\n\n```java\nint y;\n```\n");
        assertThat(check(root).problems())
                .satisfiesExactly(
                        drifted -> assertThat(drifted).startsWith("docs/a.md:4: the block 'part' differs"),
                        unmarked -> assertThat(unmarked).startsWith("docs/a.md:9: neither compiled"));
    }

    /** What the check found: each problem, and how many blocks were compiled or fragments. */
    record Check(List<String> problems, int compiled, int fragments) {}

    static Check check(Path root) throws IOException {
        List<Path> sources = sources(root);
        List<String> problems = new ArrayList<>();
        int compiled = 0;
        int fragments = 0;
        for (Path page : pages(root)) {
            String name = root.relativize(page).toString().replace('\\', '/');
            List<String> lines = normalized(Files.readString(page)).lines().toList();
            for (int i = 0; i < lines.size(); i++) {
                if (!lines.get(i).strip().equals("```java")) {
                    continue;
                }
                int open = i;
                int close = open + 1;
                while (close < lines.size() && !lines.get(close).strip().equals("```")) {
                    close++;
                }
                String where = name + ":" + (open + 1);
                if (close == lines.size()) {
                    problems.add(where + ": a java block that never closes");
                    break;
                }
                List<String> block = lines.subList(open + 1, close);
                i = close;
                if (!block.isEmpty() && block.get(0).strip().startsWith(FRAGMENT)) {
                    fragments++;
                    continue;
                }
                Optional<String> marker = marker(lines, open);
                if (marker.isEmpty()) {
                    problems.add(where + ": neither compiled (no <!-- NAME: start --> marker right before it) nor"
                            + " marked as a fragment (a first line '" + FRAGMENT + " ...')");
                    continue;
                }
                String region = marker.get();
                String end = "<!-- " + region + ": end -->";
                if (close + 1 >= lines.size() || !lines.get(close + 1).strip().equals(end)) {
                    problems.add(where + ": the block after <!-- " + region + ": start --> is not followed by " + end);
                    continue;
                }
                String expected;
                try {
                    expected = source(root, sources, name, region);
                } catch (IllegalStateException e) {
                    problems.add(where + ": " + e.getMessage());
                    continue;
                }
                String shown = String.join("\n", block) + "\n";
                if (!shown.equals(expected)) {
                    problems.add(where + ": the block '" + region + "' differs from its source: copy the source's text"
                            + " there after changing it\n--- shown\n" + shown + "--- source\n" + expected);
                    continue;
                }
                compiled++;
            }
        }
        return new Check(problems, compiled, fragments);
    }

    /** The region name of the {@code <!-- NAME: start -->} line right before line {@code open}, if any. */
    private static Optional<String> marker(List<String> lines, int open) {
        if (open == 0) {
            return Optional.empty();
        }
        Matcher m = START.matcher(lines.get(open - 1).strip());
        return m.matches() ? Optional.of(m.group(1)) : Optional.empty();
    }

    /** The text a compiled block must equal. */
    private static String source(Path root, List<Path> sources, String page, String region) throws IOException {
        if (region.endsWith(".java")) {
            List<Path> named = sources.stream()
                    .filter(p -> p.getFileName().toString().equals(region)
                            && p.toString().replace('\\', '/').contains("/src/test/java/"))
                    .toList();
            if (named.size() != 1) {
                throw new IllegalStateException(
                        "no single file " + region + " under a module's src/test/java, found " + named);
            }
            return normalized(Files.readString(named.get(0)));
        }
        String open = "// [" + page + ": " + region + "]";
        String close = "// [" + page + ": end " + region + "]";
        List<String> found = new ArrayList<>();
        String text = null;
        for (Path source : sources) {
            String content = Files.readString(source);
            if (!content.contains(open)) {
                continue;
            }
            found.add(root.relativize(source).toString());
            text = region(normalized(content), open, close, source);
        }
        if (found.size() != 1 || text == null) {
            throw new IllegalStateException(
                    "the marker '" + open + "' must be in exactly one source file, found in " + found);
        }
        return text;
    }

    /** The lines between the markers, without trailing blank lines, less 4 spaces of indentation. */
    private static String region(String source, String open, String close, Path file) {
        List<String> lines = source.lines().toList();
        int from = -1;
        int to = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).strip().equals(open)) {
                from = i;
            } else if (lines.get(i).strip().equals(close)) {
                to = i;
            }
        }
        if (from < 0 || to <= from) {
            throw new IllegalStateException(file + " has '" + open + "' but not '" + close + "' after it");
        }
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

    /** README.md and docs/*.md, but docs/spring-boot.md. */
    private static List<Path> pages(Path root) throws IOException {
        List<Path> pages = new ArrayList<>();
        pages.add(root.resolve("README.md"));
        try (Stream<Path> docs = Files.list(root.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md"))
                    .filter(p -> !p.getFileName().toString().equals("spring-boot.md"))
                    .sorted()
                    .forEach(pages::add);
        }
        return pages;
    }

    /** Every Java source under a module's src/main/java or src/test/java. */
    private static List<Path> sources(Path root) throws IOException {
        List<Path> sources = new ArrayList<>();
        try (Stream<Path> modules = Files.list(root)) {
            for (Path module : modules.filter(Files::isDirectory).toList()) {
                for (String dir : List.of("src/main/java", "src/test/java")) {
                    Path base = module.resolve(dir);
                    if (!Files.isDirectory(base)) {
                        continue;
                    }
                    try (Stream<Path> files = Files.walk(base)) {
                        files.filter(p -> p.toString().endsWith(".java"))
                                .sorted()
                                .forEach(sources::add);
                    } catch (UncheckedIOException e) {
                        throw e.getCause();
                    }
                }
            }
        }
        return sources;
    }

    private static String normalized(String text) {
        String unix = text.replace("\r\n", "\n");
        return unix.endsWith("\n") ? unix : unix + "\n";
    }
}
