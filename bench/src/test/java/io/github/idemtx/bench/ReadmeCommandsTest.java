package io.github.idemtx.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The bench's commands in its README parse: every {@code -Dexec.args="..."} of the bench's main and
 * the flags of every {@code bench/scripts/runs.sh} line name strategies, goals and flags that exist,
 * so a renamed strategy cannot leave a command behind that fails.
 */
class ReadmeCommandsTest {

    private static final Pattern EXEC_ARGS = Pattern.compile("-Dexec\\.args=\"([^\"]*)\"");
    private static final Pattern RUNS = Pattern.compile("bench/scripts/runs\\.sh \\d+ \\S+ ([^`\\n]*)");

    @Test
    void everyCommandOfTheReadmeParses() throws IOException {
        List<String> commands = new ArrayList<>();
        for (String line : Files.readAllLines(readme())) {
            if (line.contains("-Ppartitioning")) {
                continue; // another main, with flags of its own
            }
            Matcher m = EXEC_ARGS.matcher(line);
            while (m.find()) {
                commands.add(m.group(1));
            }
            Matcher r = RUNS.matcher(line);
            if (r.find()) {
                commands.add(r.group(1).replace("\\", " "));
            }
        }
        assertThat(commands).hasSizeGreaterThanOrEqualTo(5);
        for (String args : commands) {
            String[] split = args.trim().split("\\s+");
            assertThatCode(() -> {
                        try {
                            Options.parse(split);
                        } catch (Options.HelpRequested help) {
                            // --help
                        }
                    })
                    .as(args)
                    .doesNotThrowAnyException();
        }
    }

    private static Path readme() {
        Path here = Path.of("README.md");
        return Files.exists(here.resolveSibling("src")) && Files.exists(here) ? here : Path.of("bench", "README.md");
    }
}
