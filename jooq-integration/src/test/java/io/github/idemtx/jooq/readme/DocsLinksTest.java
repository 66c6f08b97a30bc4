package io.github.idemtx.jooq.readme;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every relative link in README.md and the Markdown under docs/ (and the modules' docs/ and
 * README.md) leads to a file that exists and, with a {@code #fragment}, to a heading of that file,
 * as GitHub renders it: pages moved or renamed leave no dead links behind.
 */
class DocsLinksTest {

    private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");
    private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.*?)\\s*#*\\s*$");

    @Test
    void everyRelativeLinkResolves() throws IOException {
        Path root = RepositoryRoot.find();
        List<String> broken = new ArrayList<>();
        int checked = 0;
        for (Path page : pages(root)) {
            String text = withoutCodeBlocks(Files.readString(page));
            Matcher m = LINK.matcher(text);
            while (m.find()) {
                String target = m.group(1);
                if (target.matches("^[a-zA-Z][a-zA-Z0-9+.-]*:.*")) {
                    continue; // https:, mailto:
                }
                checked++;
                int hash = target.indexOf('#');
                String file = hash < 0 ? target : target.substring(0, hash);
                Path dest =
                        file.isEmpty() ? page : page.getParent().resolve(file).normalize();
                if (!Files.exists(dest)) {
                    broken.add(root.relativize(page) + ": " + target + " (no such file)");
                } else if (hash >= 0
                        && dest.toString().endsWith(".md")
                        && !anchors(dest).contains(target.substring(hash + 1))) {
                    broken.add(root.relativize(page) + ": " + target + " (no such heading)");
                }
            }
        }
        assertThat(checked).as("links found").isPositive();
        assertThat(broken).as("relative links that lead nowhere").isEmpty();
    }

    private static List<Path> pages(Path root) throws IOException {
        List<Path> pages = new ArrayList<>();
        pages.add(root.resolve("README.md"));
        try (Stream<Path> top = Files.list(root)) {
            for (Path dir : top.filter(Files::isDirectory).toList()) {
                addMarkdown(dir.resolve("docs"), pages);
                if (Files.isRegularFile(dir.resolve("README.md"))) {
                    pages.add(dir.resolve("README.md"));
                }
            }
        }
        addMarkdown(root.resolve("docs"), pages);
        return pages;
    }

    private static void addMarkdown(Path dir, List<Path> pages) throws IOException {
        if (Files.isDirectory(dir)) {
            try (Stream<Path> files = Files.list(dir)) {
                files.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
            }
        }
    }

    /** The fragments GitHub gives the headings of {@code page}. */
    private static Set<String> anchors(Path page) throws IOException {
        Set<String> anchors = new HashSet<>();
        Map<String, Integer> seen = new HashMap<>();
        for (String line : withoutCodeBlocks(Files.readString(page)).split("\n")) {
            Matcher m = HEADING.matcher(line);
            if (m.matches()) {
                String slug = m.group(1)
                        .toLowerCase(Locale.ROOT)
                        .replaceAll("[^\\p{L}\\p{N}_\\- ]", "")
                        .replace(' ', '-');
                int n = seen.merge(slug, 1, Integer::sum) - 1;
                anchors.add(n == 0 ? slug : slug + "-" + n);
            }
        }
        return anchors;
    }

    private static String withoutCodeBlocks(String markdown) {
        return markdown.replace("\r\n", "\n").replaceAll("(?ms)^```.*?^```[^\n]*$", "");
    }
}
