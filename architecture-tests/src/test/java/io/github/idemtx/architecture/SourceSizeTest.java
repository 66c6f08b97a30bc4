package io.github.idemtx.architecture;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * No room over 400 lines: every main source file of a library module holds at most {@link #LIMIT}
 * lines of code (comments and blank lines not counted), so that a new maintainer can read any one of
 * them whole (docs/contributing.md, "The checks in the build").
 */
class SourceSizeTest {

    static final int LIMIT = 400;

    /** The library modules: the published modules with code, the ones whose API {@link PublicApi} lists. */
    static final List<String> LIBRARY_MODULES =
            PublicApi.MODULES.stream().map(PublicApi::directory).toList();

    @Test
    void noLibrarySourceFileIsOverTheLimit() throws IOException {
        Path root = Repository.root();
        List<String> over = new ArrayList<>();
        int files = 0;
        for (String module : LIBRARY_MODULES) {
            Path sources = root.resolve(module).resolve("src/main/java");
            assertThat(sources).as("%s's main sources", module).isDirectory();
            try (Stream<Path> walk = Files.walk(sources)) {
                for (Path file :
                        walk.filter(f -> f.toString().endsWith(".java")).toList()) {
                    files++;
                    int lines = codeLines(Files.readAllLines(file));
                    if (lines > LIMIT) {
                        over.add(root.relativize(file) + ": " + lines);
                    }
                }
            }
        }
        assertThat(files).as("source files read").isGreaterThan(100);
        assertThat(over)
                .as("main source files over %d code lines: split them along what they do", LIMIT)
                .isEmpty();
    }

    @Test
    void commentsAndBlankLinesAreNotCounted() {
        assertThat(codeLines(List.of(
                        "/**", " * Javadoc.", " */", "class A {", "", "    // a comment", "    int x; // kept", "}")))
                .isEqualTo(3);
    }

    /** Lines that are neither blank nor only a comment (a line starting //, /*, or *). */
    static int codeLines(List<String> lines) {
        int n = 0;
        for (String line : lines) {
            String s = line.strip();
            if (!s.isEmpty() && !s.startsWith("//") && !s.startsWith("/*") && !s.startsWith("*")) {
                n++;
            }
        }
        return n;
    }
}
